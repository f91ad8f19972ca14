"""The reachable state graph of a small model, and recoverability (``AG EF good``) checked on it.

``build_graph`` explores a spec breadth-first, as ``explore`` does, and keeps every state and
transition in a ``networkx.DiGraph``: nodes are keyed by state fingerprint and carry the state,
its breadth-first depth and the result of every invariant; edges carry the action label. The
graph is held in memory, so it is refused above ``GRAPH_LIMIT`` states unless the caller raises
the limit.

A recoverability property names a set of good states and claims that from every reachable state
some good state can still be reached (CTL ``AG EF good``). ``check_recoverability`` computes the
states that can reach a good state by reverse reachability from the good states; every other
reachable state is *stuck*, and the counterexample is the shortest trace (breadth-first, the
same tie-breaking as ``explore``) to a stuck state. What lies beyond a stuck state is either a
deadlock (a state with no successors) or states cycling among themselves, none of them good.

The words, used precisely here and in the docs:

- deadlock: a reachable state with no successors at all;
- stuttering step: a transition that leaves the state unchanged (a self-loop of the graph);
- livelock: an infinite path that never reaches a good state although every state on it could.
  A livelock does not violate ``AG EF good`` (every state on it can still recover); it is
  reported as information, since only a fairness assumption would rule it out.
"""

from __future__ import annotations

import json
import os
import time
from array import array
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import networkx as nx

from kafkamc.checker.watch import Stopped, stop_reason
from kafkamc.result import INCOMPLETE, OK, VIOLATION, CheckResult, LevelStats
from kafkamc.counterexamples.render import show_value, state_to_json
from kafkamc.counterexamples.checked import checked_replay
from kafkamc.errors import KafkamcError, SpecRaised, UsageError
from kafkamc.invariants.api import Property, fails
from kafkamc.spec.api import Spec, format_label
from kafkamc.safewrite import write_file

__all__ = [
    "GRAPH_LIMIT", "GraphTooLarge", "build_graph", "write_graph", "read_graph",
    "check_recoverability", "stuck_states", "livelock_states", "recoverability_notes", "mark_recoverability",
]

# States a graph may hold unless the caller raises it: networkx keeps a few hundred bytes per
# node and per edge, and the state objects are kept too.
GRAPH_LIMIT = 100_000

Progress = Callable[[LevelStats], None]


class GraphTooLarge(KafkamcError):
    """The reachable state graph has more states than the limit (exit 4, like an incomplete check)."""

    exit_code = 4

    def __init__(self, spec: str, limit: int, user_limit: bool) -> None:
        self.limit = limit
        how = "--max-states" if user_limit else f"the state graph limit of {limit:,} states"
        super().__init__(
            f"refused: spec {spec} has more than {limit:,} reachable states ({how}); the state graph is "
            f"built in memory only for small models. Make the model smaller with -p, or raise the limit "
            f"with --max-states N at the cost of memory."
        )


@dataclass
class _Built:
    graph: nx.DiGraph
    order: list[int]  # fingerprints in breadth-first discovery order
    parent: array
    sidx: array
    generated: int
    depth: int
    violated: str | None = None
    bad_index: int | None = None
    bad_step: int | None = None  # an action property: the successor index of the bad transition
    bad_target: int | None = None  # ... and the fingerprint of its target
    key: Any = None  # the fingerprint function
    reason: str | None = None
    seconds: float = 0.0
    unexpanded: set[int] = field(default_factory=set)


def _path(parent: array, sidx: array, idx: int) -> list[int]:
    path = []
    while idx >= 0:
        path.append(sidx[idx])
        idx = parent[idx]
    path.reverse()
    return path


def _build(
    spec: Spec,
    props: Sequence[Property],
    *,
    max_states: int,
    symmetry: bool,
    stop_at_violation: bool,
    progress: Progress | None = None,
) -> _Built:
    from kafkamc.checker.local import state_key_function

    invs = [(pr.name, pr.fn) for pr in props if pr.kind == "invariant"]
    aprops = [(pr.name, pr.fn) for pr in props if pr.kind == "action"]
    p = spec.p
    actions = [(a.name, a.fn) for a in spec.actions()]
    constraint = spec.constraint
    started = time.perf_counter()
    inits = spec.initial()
    key, fpr = state_key_function(spec, inits[0], symmetry)

    g = nx.DiGraph(spec=spec.name, params=json.dumps(p.as_dict(), sort_keys=True),
                   invariants=",".join(pr.name for pr in props))
    index: dict[int, int] = {}
    order: list[int] = []
    parent = array("q")
    sidx = array("l")
    built = _Built(g, order, parent, sidx, generated=len(inits), depth=1, key=key)

    def results(state: Any) -> dict[str, bool]:
        out = {}
        for name, fn in invs:
            try:
                r = fn(p, state)
            except Exception as exc:
                raise SpecRaised(f"invariant {name}", state, exc) from exc
            out[name] = r is True or not fails(r, f"invariant {name}", state)
        return out

    def add(k: int, state: Any, depth: int, par: int, si: int) -> bool:
        """Add a new node; False when the limit is reached (and nothing was added)."""
        if len(order) >= max_states:
            return False
        index[k] = len(order)
        order.append(k)
        parent.append(par)
        sidx.append(si)
        res = results(state)
        g.add_node(k, state=state, depth=depth, initial=par < 0, expanded=True, **res)
        if built.violated is None:
            for name, ok in res.items():
                if not ok:
                    built.violated, built.bad_index = name, len(order) - 1
                    break
        return True

    frontier: list[Any] = []
    for i, s in enumerate(inits):
        fpr.check(s)
        k = key(s)
        if k in index:
            continue
        if not add(k, s, 1, -1, i):
            built.reason = "max-states"
            built.seconds = time.perf_counter() - started
            return built
        frontier.append((k, s))
    if progress:
        progress(LevelStats(1, len(order), built.generated, len(frontier), time.perf_counter() - started))
    depth = 1
    try:
        while frontier and not (stop_at_violation and built.violated is not None):
            nxt: list[Any] = []
            for k, s in frontier:
                if constraint is not None and not constraint(p, s):
                    g.nodes[k]["expanded"] = False
                    built.unexpanded.add(k)
                    continue
                sid = index[k]
                i = 0
                try:
                    for aname, fn in actions:
                        for label, t in fn(p, s):
                            kt = key(t)
                            flabel = format_label(aname, label)
                            broken = []
                            for pname, pfn in aprops:
                                r = pfn(p, s, flabel, t)
                                if r is not True and fails(r, f"action property {pname} ({flabel})", s):
                                    broken.append(pname)
                            if broken and built.violated is None:
                                # Before the successor's invariants, in the order explore checks them.
                                # One assignment: a stop between two would leave a finding with
                                # no target, replayed as a spec that is not deterministic.
                                built.violated, built.bad_index, built.bad_step, built.bad_target = broken[0], sid, i, kt
                            if kt not in index:
                                if fpr.validating:
                                    fpr.check(t)
                                if not add(kt, t, depth + 1, sid, i):
                                    built.reason = "max-states"
                                    built.generated += i + 1
                                    built.depth = depth
                                    built.seconds = time.perf_counter() - started
                                    return built
                                nxt.append((kt, t))
                            if g.has_edge(k, kt):
                                edge = g.edges[k, kt]
                                if flabel not in edge["action"].split(" | "):
                                    edge["action"] += " | " + flabel
                                edge["transitions"] += 1
                            else:
                                g.add_edge(k, kt, action=flabel, index=i, transitions=1,
                                           violates=",".join(broken))
                            i += 1
                except (KafkamcError, KeyboardInterrupt):
                    raise
                except Exception as exc:
                    from kafkamc.checker.local import _classify

                    raise _classify(spec, s, exc, invs, aprops) from exc
                built.generated += i
            frontier = nxt
            if frontier:
                depth += 1
            built.depth = depth
            if progress:
                progress(LevelStats(depth, len(order), built.generated, len(frontier), time.perf_counter() - started))
    except KeyboardInterrupt as exc:
        built.reason = stop_reason(exc)
    built.seconds = time.perf_counter() - started
    return built


def build_graph(
    spec: Spec,
    properties: Sequence[Property] | None = None,
    *,
    max_states: int | None = None,
    symmetry: bool = False,
    progress: Progress | None = None,
) -> nx.DiGraph:
    """The reachable state graph of ``spec``; GraphTooLarge above ``max_states`` (default GRAPH_LIMIT).

    Nodes: fingerprint -> ``state``, ``depth`` (breadth-first level, initial states 1),
    ``initial``, ``expanded`` (False for a state outside the spec's constraint) and one boolean per
    invariant of ``properties`` (default: the spec's). Edges: ``action`` (the label; several labels
    joined by `` | `` when different transitions join the same two states), ``index`` (the
    successor index of the first), ``transitions`` and ``violates`` (action properties broken).
    Graph attributes: ``spec``, ``params`` (JSON), ``invariants``, ``deadlocks``,
    ``stuttering_steps``, ``depth``.
    """
    props = tuple(spec.default_properties() if properties is None else properties)
    limit = GRAPH_LIMIT if max_states is None else max_states
    built = _build(spec, props, max_states=limit, symmetry=symmetry, stop_at_violation=False, progress=progress)
    if built.reason == "max-states":
        raise GraphTooLarge(spec.name, limit, max_states is not None)
    if built.reason is not None:
        raise Stopped(built.reason)
    g = built.graph
    g.graph["deadlocks"] = sum(1 for n, d in g.out_degree() if d == 0 and g.nodes[n]["expanded"])
    g.graph["stuttering_steps"] = nx.number_of_selfloops(g)
    g.graph["depth"] = built.depth
    g.graph["states_generated"] = built.generated
    return g


# -- writing ---------------------------------------------------------------------------------


def _plain(g: nx.DiGraph) -> nx.DiGraph:
    """A copy whose attribute values are str, int, float or bool (what GraphML can hold)."""
    out = nx.DiGraph()
    out.graph.update({k: v for k, v in g.graph.items() if isinstance(v, (str, int, float, bool))})
    for n, data in g.nodes(data=True):
        attrs = {k: v for k, v in data.items() if k != "state"}
        if "state" in data:
            attrs["state"] = json.dumps(state_to_json(data["state"]), sort_keys=True)
            attrs["label"] = show_value(data["state"])
        out.add_node(str(n), **attrs)
    for u, v, data in g.edges(data=True):
        out.add_edge(str(u), str(v), **data)
    return out


def _dot_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _dot_text(g: nx.DiGraph) -> str:
    """Graphviz DOT, written directly (pydot is not a dependency)."""
    invariants = [n for n in str(g.graph.get("invariants", "")).split(",") if n]
    lines = [f"digraph {_dot_string(str(g.graph.get('spec', 'kafkamc')))} {{"]
    for key in sorted(k for k, v in g.graph.items() if isinstance(v, (str, int, float, bool))):
        lines.append(f"  graph [{key}={_dot_string(str(g.graph[key]))}];")
    lines.append("  node [shape=box, fontname=monospace];")
    for n, data in g.nodes(data=True):
        attrs = {"label": show_value(data["state"]) if "state" in data else str(n)}
        for k, v in data.items():
            if k != "state":
                attrs[k] = json.dumps(state_to_json(v)) if not isinstance(v, (str, int, float, bool)) else v
        if any(data.get(name) is False for name in invariants):
            attrs["color"] = "red"
        elif any(v is True for k, v in data.items() if k.startswith("stuck:")):
            attrs["color"] = "orange"
        if data.get("initial"):
            attrs["peripheries"] = 2
        body = ", ".join(f"{_dot_id(k)}={_dot_string(_dot_value(v))}" for k, v in attrs.items())
        lines.append(f"  {_dot_string(str(n))} [{body}];")
    for u, v, data in g.edges(data=True):
        attrs = dict(data)
        attrs["label"] = data.get("action", "")
        body = ", ".join(f"{_dot_id(k)}={_dot_string(_dot_value(x))}" for k, x in attrs.items())
        lines.append(f"  {_dot_string(str(u))} -> {_dot_string(str(v))} [{body}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _dot_id(name: str) -> str:
    return name if name.replace("_", "a").isalnum() else _dot_string(name)


def _dot_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _node_link(g: nx.DiGraph) -> dict[str, Any]:
    try:
        return nx.node_link_data(g, edges="edges")
    except TypeError:  # networkx before 3.4 has no edges= and calls them links
        return nx.node_link_data(g)


def write_graph(g: nx.DiGraph, path: str) -> str:
    """Write ``g`` by the file's extension: ``.graphml``, ``.dot`` (or ``.gv``) or ``.json``."""
    ext = os.path.splitext(path)[1].lower()
    if ext not in (".graphml", ".dot", ".gv", ".json"):
        raise UsageError(
            f"--out {path!r}: unknown graph format {ext or '(none)'!r}; allowed: .graphml, .dot, .gv, .json"
        )
    if ext == ".graphml":
        plain = _plain(g)
        return write_file(path, lambda fh: nx.write_graphml(plain, fh))
    if ext in (".dot", ".gv"):
        return write_file(path, _dot_text(g))
    data = _node_link(g)
    for node in data["nodes"]:
        if "state" in node:
            node["label"] = show_value(node["state"])
            node["state"] = state_to_json(node["state"])
    return write_file(path, json.dumps(data, indent=1, default=str) + "\n")


def read_graph(path: str) -> nx.DiGraph:
    """Read back a graph written by ``write_graph`` as GraphML or JSON (node keys become strings
    in GraphML, stay ints in JSON); states come back as their JSON form."""
    ext = os.path.splitext(path)[1].lower()
    if ext == ".graphml":
        return nx.read_graphml(path)
    if ext == ".json":
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
        try:
            return nx.node_link_graph(data, edges="edges")
        except TypeError:
            return nx.node_link_graph(data)
    raise UsageError(f"{path!r}: can read back .graphml and .json graphs; allowed: .graphml, .json")


# -- recoverability --------------------------------------------------------------------------


def stuck_states(g: nx.DiGraph, good: set[Any], optimistic: set[Any] = frozenset()) -> set[Any]:
    """The nodes from which no node of ``good`` is reachable (reverse reachability).

    ``optimistic`` nodes (states outside the constraint, never expanded) are treated as able to
    reach a good state, since what lies beyond them was not explored.
    """
    can = set(good) | set(optimistic)
    stack = list(can)
    pred = g.pred
    while stack:
        n = stack.pop()
        for m in pred[n]:
            if m not in can:
                can.add(m)
                stack.append(m)
    return set(g.nodes) - can


def livelock_states(g: nx.DiGraph, good: set[Any], stuck: set[Any]) -> set[Any]:
    """States that can reach a good state but lie on a cycle of states that are not good.

    An infinite path through them never reaches a good state although each of its states could:
    a livelock. ``AG EF good`` allows it; a fairness assumption would rule it out.
    """
    rest = g.subgraph(n for n in g.nodes if n not in good and n not in stuck)
    out: set[Any] = set()
    for comp in nx.strongly_connected_components(rest):
        if len(comp) > 1:
            out |= comp
        else:
            (n,) = comp
            if rest.has_edge(n, n):
                out.add(n)
    return out


def _good_nodes(spec: Spec, g: nx.DiGraph, rec: Property) -> set[Any]:
    p = spec.p
    good = set()
    for n, data in g.nodes(data=True):
        try:
            if rec.fn(p, data["state"]):
                good.add(n)
        except Exception as exc:
            raise SpecRaised(f"recoverability property {rec.name}", data["state"], exc) from exc
    return good


def check_recoverability(
    spec: Spec,
    props: Sequence[Property] | None,
    recs: Sequence[Property],
    *,
    max_states: int | None = None,
    symmetry: bool = False,
    progress: Progress | None = None,
) -> CheckResult:
    """Check the invariants ``props`` on every reachable state and each recoverability property
    of ``recs`` (``AG EF good``) on the reachable state graph.

    A violated invariant or action property is reported as ``explore`` reports it (the first in
    breadth-first order, its level completed). Otherwise the first recoverability property with a
    reachable stuck state is the violation, with the shortest trace to a stuck state. Reaching
    ``max_states`` (default: ``GRAPH_LIMIT``) makes the result incomplete, never ok.
    """
    props = tuple(spec.default_properties() if props is None else props)
    for rec in recs:
        if rec.kind != "recoverability":
            raise UsageError(
                f"{rec.name} is an {rec.kind}, not a recoverability property (declare it with @recoverable)"
            )
    limit = GRAPH_LIMIT if max_states is None else max_states
    built = _build(spec, props, max_states=limit, symmetry=symmetry, stop_at_violation=True, progress=progress)
    g = built.graph
    names = tuple(pr.name for pr in props) + tuple(r.name for r in recs)
    extra: dict[str, Any] = {"checker": "state-graph", "recoverability": {}}

    def result(kind: str, violated: str | None, path: list[int] | None, reason: str | None = None,
               at: int = -1, target: int | None = None) -> CheckResult:
        trace = None
        if path is not None:
            trace = checked_replay(spec, path, violated, props + tuple(recs), key=built.key,
                                   expected=_recorded(built, at, target))
        return CheckResult(
            spec=spec.name, params=spec.p.as_dict(), engine="local", result=kind, invariants=names,
            violated=violated, distinct_states=g.number_of_nodes(), states_generated=built.generated,
            depth=max(built.depth, len(path) if path else 0), seconds=time.perf_counter() - started,
            trace=trace, reason=reason, symmetry=symmetry, extra=extra,
        )

    started = time.perf_counter() - built.seconds
    if built.violated is not None:
        path = _path(built.parent, built.sidx, built.bad_index)
        if built.bad_step is not None:
            path.append(built.bad_step)
        return result(VIOLATION, built.violated, path, at=built.bad_index, target=built.bad_target)
    if built.reason is not None:
        reason = built.reason
        if reason == "max-states" and max_states is None:
            reason = "graph-size-limit"
            extra["graph_size_limit"] = GRAPH_LIMIT
        return result(INCOMPLETE, None, None, reason)

    deadlocks = sum(1 for n, d in g.out_degree() if d == 0 and n not in built.unexpanded)
    extra["deadlocks"] = deadlocks
    extra["stuttering_steps"] = nx.number_of_selfloops(g)
    extra["unexpanded"] = len(built.unexpanded)
    position = {k: i for i, k in enumerate(built.order)}
    for rec in recs:
        good = _good_nodes(spec, g, rec)
        stuck = stuck_states(g, good, built.unexpanded)
        livelock = livelock_states(g, good, stuck)
        info: dict[str, Any] = {
            "good_states": len(good), "stuck_states": len(stuck), "livelock_states": len(livelock),
        }
        extra["recoverability"][rec.name] = info
        if stuck:
            first = min(stuck, key=position.__getitem__)
            path = _path(built.parent, built.sidx, position[first])
            # What the trace leads into: a deadlock, stuttering only, or cycles among stuck states.
            succ = set(g.successors(first))
            if not succ:
                info["end"] = "deadlock"
                info["explanation"] = (
                    f"{rec.name}: the last state is a deadlock (no successors) and is not good"
                )
            elif succ == {first}:
                info["end"] = "stuttering"
                info["explanation"] = (
                    f"{rec.name}: from the last state only stuttering steps (that leave it unchanged) are possible, "
                    "and it is not good"
                )
            else:
                beyond = nx.descendants(g, first)
                info["end"] = "stuck"
                info["explanation"] = (
                    f"{rec.name}: from the last state {len(beyond):,} state{'' if len(beyond) == 1 else 's'} "
                    "can be reached and none is good"
                )
            return result(VIOLATION, rec.name, path, at=position[first])
    return result(OK, None, None)


def _recorded(built: _Built, idx: int, target: int | None) -> Callable[[int, int], bool]:
    """For ``checked_replay``: the fingerprints the graph holds along the chain of parents of ``idx``."""
    chain = []
    while idx >= 0:
        chain.append(built.order[idx])
        idx = built.parent[idx]
    chain.reverse()
    return lambda j, fp: fp == chain[j] if j < len(chain) else fp == target


def mark_recoverability(spec: Spec, g: nx.DiGraph, recs: Sequence[Property]) -> dict[str, dict[str, int]]:
    """Add, for each recoverability property, the node attributes ``good:NAME`` and ``stuck:NAME``
    (so a drawing can show where recovery is impossible); returns the counts per property."""
    unexpanded = {n for n, d in g.nodes(data=True) if not d.get("expanded", True)}
    counts = {}
    for rec in recs:
        good = _good_nodes(spec, g, rec)
        stuck = stuck_states(g, good, unexpanded)
        livelock = livelock_states(g, good, stuck)
        for n in g.nodes:
            g.nodes[n][f"good:{rec.name}"] = n in good
            g.nodes[n][f"stuck:{rec.name}"] = n in stuck
        counts[rec.name] = {"good_states": len(good), "stuck_states": len(stuck), "livelock_states": len(livelock)}
    return counts


def recoverability_notes(result: CheckResult) -> list[str]:
    """Lines for the text output of ``check -r``: what lies beyond a stuck state, and per property
    the good, stuck and livelock state counts (``[]`` for a result without recoverability)."""
    recs = (result.extra or {}).get("recoverability") or {}
    lines = []
    for name, info in recs.items():
        if "explanation" in info:
            lines.append(info["explanation"])
        line = (f"{name}: good states {info['good_states']:,}, stuck states {info['stuck_states']:,} "
                f"(no good state reachable)")
        if info["livelock_states"]:
            line += (f", livelock states {info['livelock_states']:,} (an infinite path can avoid the good "
                     "states although each of its states could reach one; AG EF good allows it)")
        lines.append(line)
    return lines
