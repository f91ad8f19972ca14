"""Liveness under fairness on the reachable state graph, with lasso counterexamples.

The semantics are TLA+'s, as TLC checks them. A behaviour is an infinite sequence of states in
which every step is a transition of the spec or a *stuttering step* that leaves the state
unchanged. Stuttering is always allowed, so without fairness a behaviour may stop (stutter
forever) in any state; a state with no successors (a deadlock) can do nothing else. Fairness
rules such behaviours out, per action, with "taking A" meaning a transition of action A to a
different state (TLA+'s <<A>>_vars; a transition back to the same state is a stuttering step) and
"A enabled in s" meaning s has such a transition:

- weak fairness WF(A): if A is enabled continuously from some point on, A is taken infinitely often;
- strong fairness SF(A): if A is enabled infinitely often, A is taken infinitely often.

So a behaviour may stutter forever in state s exactly when no fair action is enabled in s.

A violation of a property is a fair behaviour in which the property fails, and such a behaviour
can always be chosen as a *lasso*: a finite prefix from an initial state and a cycle repeated
forever (a cycle of one state stuttering forever included). The four forms are checked by a
direct construction; in each, the negation is "reach a state from which the behaviour can stay in
a set S of states forever, fairly":

- ``eventually(P)``: S = not P, and the prefix too must stay in not P, from an initial state;
- ``leads_to(P, Q)``: S = not Q, entered at a reachable state satisfying P and not Q;
- ``always_eventually(P)``: S = not P, entered anywhere;
- ``eventually_always(P)``: S = every state, but the cycle must visit a not-P state.

Staying in S forever, fairly, means ending in a fair strongly connected component of the graph
restricted to S (or stuttering in an S state where no fair action is enabled). A component is fair
when a cycle through all of its states and transitions is: for WF(A), the component has an
A-transition or a state where A is disabled; for SF(A), it has an A-transition or A is disabled
in all its states. A component that fails SF(A) may still hold a fair sub-component without the
states where A is enabled; those states are removed and the components recomputed (the
Emerson-Lei refinement), until every component is fair or empty.

The counterexample's prefix is a shortest one (breadth-first, in successor-index order) to the
first state of a fair component or of a fair stuttering state; its cycle is built greedily inside
the component: from the entry state, the nearest transition or state that discharges each fairness
obligation in turn, then the shortest way back.

The graph is held in compact arrays (successor lists in one flat array), not in networkx, and the
components are found by an iterative Tarjan over them. States outside the spec's constraint are
not expanded: nothing is known of their future, so no counterexample ends in one (this verdict,
like TLC's, is about the constrained model).
"""

from __future__ import annotations

import time
from array import array
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Sequence

from kafkamc.checker.watch import stop_reason
from kafkamc.counterexamples.trace import Trace, TraceStep
from kafkamc.errors import EngineError, SpecRaised, UsageError
from kafkamc.invariants.api import Property
from kafkamc.invariants.temporal import Temporal, formula_of
from kafkamc.result import INCOMPLETE, OK, VIOLATION, CheckResult, LevelStats
from kafkamc.spec.api import Spec

__all__ = [
    "LIVENESS_LIMIT", "Fairness", "resolve_fairness", "LivenessGraph", "build_liveness_graph",
    "strongly_connected_components", "fair_components", "find_lasso", "Lasso", "check_liveness",
    "liveness_notes", "judge_lasso",
]

# States the in-memory graph may hold unless the caller raises it (--max-states): about 60 bytes
# per state and 20 per transition in the arrays, plus the fingerprint index.
LIVENESS_LIMIT = 2_000_000

Progress = Callable[[LevelStats], None]


# -- fairness ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Fairness:
    """The actions assumed weakly and strongly fair (an action in both is strongly fair)."""

    weak: tuple[str, ...] = ()
    strong: tuple[str, ...] = ()

    def describe(self) -> str:
        parts = [f"WF({a})" for a in self.weak] + [f"SF({a})" for a in self.strong]
        return ", ".join(parts) if parts else "none (a behaviour may stop in any state)"

    def as_json(self) -> dict[str, list[str]]:
        return {"weak": list(self.weak), "strong": list(self.strong)}


def resolve_fairness(
    cls: type[Spec], fair: Sequence[str] = (), strong: Sequence[str] = (), no_fairness: bool = False
) -> Fairness:
    """The spec's declared fairness, cleared by ``no_fairness``, plus ``fair`` (weak) and ``strong``.

    UsageError for a name that is not an action of the spec (declared or given).
    """
    names = [a.name for a in cls.actions()]

    def known(name: str, where: str) -> str:
        if name not in names:
            raise UsageError(f"{where} {name!r} is not an action of spec {cls.name}; allowed: {', '.join(names)}")
        return name

    weak = [] if no_fairness else [known(a, "weak_fairness names") for a in cls.weak_fairness]
    strng = [] if no_fairness else [known(a, "strong_fairness names") for a in cls.strong_fairness]
    weak += [known(a, "--fair") for a in fair]
    strng += [known(a, "--strong-fair") for a in strong]
    # Declaration order of the actions, so that the same assumption always reads the same.
    sset = set(strng)
    return Fairness(
        weak=tuple(a for a in names if a in set(weak) and a not in sset),
        strong=tuple(a for a in names if a in sset),
    )


# -- the graph ---------------------------------------------------------------------------------


@dataclass
class LivenessGraph:
    """The reachable state graph in flat arrays; node ids are breadth-first discovery order.

    The transitions of node u are ``dst[start[u]:start[u+1]]`` in successor-index order, with the
    successor index ``sidx`` and the action (index into ``actions``) ``act`` of each.
    """

    actions: tuple[str, ...]
    start: array
    dst: array
    sidx: array
    act: array
    init: dict[int, int]  # node -> index among the spec's initial states (first occurrence)
    init_order: list[int]  # initial nodes in order
    expanded: bytearray
    values: dict[Any, bytearray]  # predicate function -> its value per node
    generated: int = 0
    depth: int = 0
    reason: str | None = None
    seconds: float = 0.0
    keys: array = field(default_factory=lambda: array("q"))  # per node: its fingerprint

    @property
    def nodes(self) -> int:
        return len(self.expanded)

    def edges(self, u: int) -> range:
        return range(self.start[u], self.start[u + 1])


def _predicates(formulas: Sequence[Temporal]) -> list[Any]:
    out: list[Any] = []
    for f in formulas:
        for fn in (f.p, f.q):
            if fn is not None and fn not in out:
                out.append(fn)
    return out


def build_liveness_graph(
    spec: Spec,
    formulas: Sequence[tuple[str, Temporal]],
    *,
    max_states: int,
    progress: Progress | None = None,
) -> LivenessGraph:
    """Explore ``spec`` breadth-first into a LivenessGraph, evaluating every predicate of
    ``formulas`` (name, formula) on every state; ``reason`` says why the graph is incomplete."""
    from kafkamc.checker.local import _culprit, gc_paused, state_key_function

    started = time.perf_counter()
    p = spec.p
    actions = [(a.name, a.fn) for a in spec.actions()]
    constraint = spec.constraint
    inits = spec.initial()
    key, fpr = state_key_function(spec, inits[0], False)
    preds = _predicates([f for _, f in formulas])
    owner = {}
    for name, f in formulas:
        for fn in (f.p, f.q):
            if fn is not None:
                owner.setdefault(fn, name)
    values = {fn: bytearray() for fn in preds}
    index: dict[int, int] = {}
    keys = array("q")
    start, dst, sidx, act = array("q"), array("q"), array("l"), array("h")
    expanded = bytearray()
    g = LivenessGraph(tuple(a for a, _ in actions), start, dst, sidx, act, {}, [], expanded, values,
                      generated=len(inits), depth=1, keys=keys)
    states: deque[Any] = deque()  # the states not yet expanded, in node order

    def add(k: int, s: Any) -> int:
        n = len(expanded)
        index[k] = n
        keys.append(k)
        expanded.append(0)
        for fn in preds:
            try:
                values[fn].append(1 if fn(p, s) else 0)
            except Exception as exc:
                raise SpecRaised(f"liveness property {owner[fn]}: predicate {getattr(fn, '__name__', fn)}",
                                 s, exc) from exc
        states.append(s)
        return n

    with gc_paused():
        for i, s in enumerate(inits):
            fpr.check(s)
            k = key(s)
            if k in index:
                continue
            if len(expanded) >= max_states:
                g.reason = "max-states"
                break
            n = add(k, s)
            g.init[n] = i
            g.init_order.append(n)
        level_end = len(expanded)
        u = 0
        try:
            while states and g.reason is None:
                s = states.popleft()
                start.append(len(dst))
                if constraint is not None and not constraint(p, s):
                    u += 1
                    continue
                expanded[u] = 1
                i = 0
                try:
                    for ai, (aname, fn) in enumerate(actions):
                        for _label, t in fn(p, s):
                            kt = key(t)
                            v = index.get(kt)
                            if v is None:
                                if fpr.validating:
                                    fpr.check(t)
                                if len(expanded) >= max_states:
                                    g.reason = "max-states"
                                    break
                                v = add(kt, t)
                            dst.append(v)
                            sidx.append(i)
                            act.append(ai)
                            i += 1
                        if g.reason is not None:
                            break
                except (SpecRaised, UsageError, KeyboardInterrupt):
                    raise
                except Exception as exc:
                    raise _culprit(spec, s, exc) from exc
                g.generated += i
                u += 1
                if u == level_end and states:
                    g.depth += 1
                    level_end = len(expanded)
                    if progress:
                        progress(LevelStats(g.depth, len(expanded), g.generated, len(states),
                                            time.perf_counter() - started))
        except KeyboardInterrupt as exc:
            g.reason = stop_reason(exc)
        while len(start) < len(expanded) + 1:
            start.append(len(dst))
    g.seconds = time.perf_counter() - started
    return g


def _enabled_masks(g: LivenessGraph, bits: dict[int, int]) -> list[int]:
    """Per node, the fair actions (as bits) with a transition to a different state."""
    out = [0] * g.nodes
    start, dst, act = g.start, g.dst, g.act
    for u in range(g.nodes):
        m = 0
        for e in range(start[u], start[u + 1]):
            b = bits.get(act[e])
            if b is not None and dst[e] != u:
                m |= b
        out[u] = m
    return out


# -- strongly connected components ------------------------------------------------------------


def strongly_connected_components(g: LivenessGraph, allowed: Callable[[int], bool] | bytearray,
                                  roots: Sequence[int] | None = None) -> list[list[int]]:
    """The SCCs of the subgraph induced by the allowed nodes (iterative Tarjan, no recursion).

    ``allowed`` is a bytearray (1 = allowed) or a set-like ``__contains__``; ``roots`` limits the
    search to what they reach (default: every node). Components come out in reverse topological
    order, each listing its nodes.
    """
    inside = allowed.__getitem__ if isinstance(allowed, (bytearray, bytes)) else allowed.__contains__
    start, dst = g.start, g.dst
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    on_stack: set[int] = set()
    stack: list[int] = []
    out: list[list[int]] = []
    counter = 0
    for root in (range(g.nodes) if roots is None else roots):
        if root in index or not inside(root):
            continue
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        work = [(root, start[root])]
        while work:
            u, e = work[-1]
            end = start[u + 1]
            pushed = False
            while e < end:
                v = dst[e]
                e += 1
                if not inside(v):
                    continue
                if v not in index:
                    work[-1] = (u, e)
                    index[v] = low[v] = counter
                    counter += 1
                    stack.append(v)
                    on_stack.add(v)
                    work.append((v, start[v]))
                    pushed = True
                    break
                if v in on_stack and index[v] < low[u]:
                    low[u] = index[v]
            if pushed:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                if low[u] < low[parent]:
                    low[parent] = low[u]
            if low[u] == index[u]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == u:
                        break
                out.append(comp)
    return out


@dataclass(frozen=True, slots=True)
class _FairParts:
    bits: dict[int, int]  # action index -> bit
    weak: tuple[int, ...]  # bits
    strong: tuple[int, ...]
    enabled: list[int]

    @property
    def any_bits(self) -> int:
        m = 0
        for b in self.weak + self.strong:
            m |= b
        return m


def _fair_parts(g: LivenessGraph, fairness: Fairness) -> _FairParts:
    pos = {a: i for i, a in enumerate(g.actions)}
    bits: dict[int, int] = {}
    weak, strong = [], []
    for n, name in enumerate(fairness.weak + fairness.strong):
        b = 1 << n
        bits[pos[name]] = b
        (weak if n < len(fairness.weak) else strong).append(b)
    return _FairParts(bits, tuple(weak), tuple(strong), _enabled_masks(g, bits))


def _taken(g: LivenessGraph, comp: set[int], bits: dict[int, int]) -> int:
    """The fair actions (bits) with a transition between two different states of ``comp``."""
    m = 0
    start, dst, act = g.start, g.dst, g.act
    for u in comp:
        for e in range(start[u], start[u + 1]):
            v = dst[e]
            if v != u and v in comp:
                b = bits.get(act[e])
                if b is not None:
                    m |= b
    return m


def fair_components(g: LivenessGraph, allowed: bytearray, parts: _FairParts) -> Iterator[set[int]]:
    """The fair SCCs (of at least two states) of the subgraph induced by ``allowed``, refined by
    Emerson-Lei: a component failing SF(A) loses its A-enabled states and is split again."""
    work = [set(c) for c in strongly_connected_components(g, allowed) if len(c) > 1]
    enabled = parts.enabled
    while work:
        comp = work.pop()
        taken = _taken(g, comp, parts.bits)
        always = -1
        for u in comp:
            always &= enabled[u]
        if any(b & always and not b & taken for b in parts.weak):
            continue  # WF(A) fails, and fails for every part of the component too
        drop = 0
        for b in parts.strong:
            if not b & taken:
                drop |= b
        if drop:
            rest = {u for u in comp if not enabled[u] & drop}
            if len(rest) < len(comp):
                work.extend(set(c) for c in strongly_connected_components(g, rest, sorted(rest)) if len(c) > 1)
                continue
        yield comp


# -- the lasso ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Lasso:
    """Node ids and edge ids: ``prefix_edges`` lead from ``first`` to the loop's entry; ``cycle_edges``
    lead around and back to it (empty: the behaviour stutters in the entry state forever)."""

    first: int
    prefix_edges: tuple[int, ...]
    cycle_edges: tuple[int, ...]


def _stay_sets(g: LivenessGraph, formula: Temporal) -> tuple[bytearray, bytearray, bytearray | None, bool]:
    """(S: may stay, T: enters S here, M: the cycle must visit, from_initial_only)."""
    n = g.nodes
    pv = g.values[formula.p]
    ones = bytearray(b"\x01") * n
    if formula.form == "eventually":
        stay = bytearray(1 - x for x in pv)
        return stay, stay, None, True
    if formula.form == "leads_to":
        qv = g.values[formula.q]
        stay = bytearray(1 - x for x in qv)
        enter = bytearray(a & b for a, b in zip(pv, stay))
        return stay, enter, None, False
    if formula.form == "always_eventually":
        stay = bytearray(1 - x for x in pv)
        return stay, stay, None, False
    if formula.form == "eventually_always":
        return ones, ones, bytearray(1 - x for x in pv), False
    raise ValueError(f"unknown temporal form {formula.form!r}")


def find_lasso(g: LivenessGraph, formula: Temporal, fairness: Fairness) -> tuple[Lasso | None, dict[str, Any]]:
    """A fair lasso on which ``formula`` fails, or None; and counts for the report."""
    parts = _fair_parts(g, fairness)
    return _find_lasso(g, formula, parts)


def _find_lasso(g: LivenessGraph, formula: Temporal, parts: _FairParts) -> tuple[Lasso | None, dict[str, Any]]:
    stay, enter, must, from_initial = _stay_sets(g, formula)
    for u in range(g.nodes):
        if not g.expanded[u]:
            stay[u] = 0  # nothing is known beyond it
    fair_bits = parts.any_bits
    target: dict[int, Any] = {}  # node -> "stutter" or its fair component
    stutter = 0
    for u in range(g.nodes):
        if stay[u] and not parts.enabled[u] & fair_bits and (must is None or must[u]):
            target[u] = "stutter"
            stutter += 1
    comps = 0
    for comp in fair_components(g, stay, parts):
        if must is not None and not any(must[u] for u in comp):
            continue
        comps += 1
        for u in comp:
            target.setdefault(u, comp)
    info = {"fair_stuttering_states": stutter, "fair_components": comps}
    if not target:
        return None, info
    found = _prefix(g, stay, enter, from_initial, target)
    if found is None:
        return None, info
    first, prefix, entry = found
    tgt = target[entry]
    if tgt == "stutter":
        info["end"] = "stuttering"
        return Lasso(first, tuple(prefix), ()), info
    cycle = _cycle(g, tgt, entry, parts, must)
    info["end"] = "cycle"
    return Lasso(first, tuple(prefix), tuple(cycle)), info


def _prefix(g: LivenessGraph, stay: bytearray, enter: bytearray, from_initial: bool,
            target: dict[int, Any]) -> tuple[int, list[int], int] | None:
    """Breadth-first over (node, phase): phase 0 roams the graph; phase 1, entered at an ``enter``
    node, stays in ``stay``. The first phase-1 node that is a target ends the prefix: (the initial
    node, the edges, the entry node)."""
    start, dst = g.start, g.dst
    seen: dict[tuple[int, int], tuple[tuple[int, int] | None, int]] = {}
    queue: deque[tuple[int, int]] = deque()

    def push(node: tuple[int, int], via: tuple[int, int] | None, edge: int) -> bool:
        if node in seen:
            return False
        seen[node] = (via, edge)
        if node[1] == 1 and node[0] in target:
            return True
        queue.append(node)
        return False

    hit = None
    for u in g.init_order:
        if enter[u] and push((u, 1), None, -1):
            hit = (u, 1)
            break
        if not from_initial and push((u, 0), None, -1):
            hit = (u, 0)
            break
    while hit is None and queue:
        node = queue.popleft()
        u, phase = node
        for e in range(start[u], start[u + 1]):
            v = dst[e]
            if phase == 1:
                if stay[v] and push((v, 1), node, e):
                    hit = (v, 1)
                    break
                continue
            if enter[v] and push((v, 1), node, e):
                hit = (v, 1)
                break
            push((v, 0), node, e)
    if hit is None:
        return None
    edges: list[int] = []
    node = hit
    while True:
        via, e = seen[node]
        if via is None:
            break
        edges.append(e)
        node = via
    edges.reverse()
    return node[0], edges, hit[0]


def _walk(g: LivenessGraph, comp: set[int], frm: int, goal_node: Callable[[int], bool] | None,
          goal_edge: Callable[[int, int], bool] | None, allow_empty: bool = True) -> list[int]:
    """Shortest edges inside ``comp`` from ``frm`` to a node meeting ``goal_node`` or through an
    edge meeting ``goal_edge(u, e)``; self-loops are stuttering steps and never used."""
    if allow_empty and goal_node is not None and goal_node(frm):
        return []
    start, dst = g.start, g.dst
    back: dict[int, tuple[int, int]] = {frm: (-1, -1)}
    queue = deque([frm])
    while queue:
        u = queue.popleft()
        for e in range(start[u], start[u + 1]):
            v = dst[e]
            if v == u or v not in comp:
                continue
            if (goal_edge is not None and goal_edge(u, e)) or (goal_node is not None and goal_node(v)):
                edges = [e]
                while u != frm:
                    u, e = back[u]
                    edges.append(e)
                edges.reverse()
                return edges
            if v not in back:
                back[v] = (u, e)
                queue.append(v)
    raise AssertionError("a fair component is strongly connected; its goal must be reachable")


def _cycle(g: LivenessGraph, comp: set[int], entry: int, parts: _FairParts, must: bytearray | None) -> list[int]:
    """A cycle from ``entry`` inside the fair component ``comp`` that is fair and visits ``must``."""
    enabled, bits, act, dst = parts.enabled, parts.bits, g.act, g.dst
    taken_in_comp = _taken(g, comp, bits)
    path: list[int] = []
    cur = entry
    visited = {entry}
    taken = 0

    def follow(edges: list[int]) -> None:
        nonlocal cur, taken
        for e in edges:
            path.append(e)
            cur = dst[e]
            visited.add(cur)
            b = bits.get(act[e])
            if b is not None:
                taken |= b
    for b in parts.weak + parts.strong:
        is_weak = b in parts.weak
        if b & taken or (is_weak and any(not enabled[u] & b for u in visited)):
            continue
        if not is_weak and not b & taken_in_comp:
            continue  # SF(A) in a refined component: A is disabled in all of its states
        edge_goal = (lambda u, e, b=b: bits.get(act[e]) == b and dst[e] != u) if b & taken_in_comp else None
        node_goal = (lambda u, b=b: not enabled[u] & b) if is_weak else None
        follow(_walk(g, comp, cur, node_goal, edge_goal))
    if must is not None and not any(must[u] for u in visited):
        follow(_walk(g, comp, cur, lambda u: bool(must[u]), None))
    if not path or cur != entry:
        follow(_walk(g, comp, cur, lambda u: u == entry, None, allow_empty=False))
    return path


# -- the check ---------------------------------------------------------------------------------


def _concrete(spec: Spec, g: LivenessGraph, first: int, edges: Sequence[int]) -> tuple[list[TraceStep], list[int]]:
    """The states and successor-index path of ``edges`` from the initial node ``first``, replayed.

    A node stands for every state with its fingerprint (the spec's ``view``), and the graph keeps
    the successor indices of the first such state found; a state reached along another path may
    order its successors differently. So each step takes, among the successors of the state
    actually reached, the recorded index if it leads to the edge's node, else the first that does.
    """
    from kafkamc.checker.local import state_key_function
    from kafkamc.spec.api import format_label

    inits = spec.initial()
    state = inits[g.init[first]]
    key, _ = state_key_function(spec, state, False)
    steps = [TraceStep(None, state)]
    path = [g.init[first]]
    for e in edges:
        want = g.keys[g.dst[e]]
        pick = None
        try:
            for i, (act, label, t) in enumerate(spec.successors(state)):
                if key(t) == want and (pick is None or i == g.sidx[e]):
                    pick = (i, format_label(act.name, label), t)
                    if i == g.sidx[e]:
                        break
        except Exception as exc:
            raise SpecRaised("an action", state, exc) from exc
        if pick is None:
            raise EngineError(f"spec {spec.name}: two states with one view have different successors, so the "
                              f"view is not a sound abstraction (at {state!r})")
        path.append(pick[0])
        steps.append(TraceStep(pick[1], pick[2]))
        state = pick[2]
    return steps, path


def lasso_trace(spec: Spec, g: LivenessGraph, lasso: Lasso) -> Trace:
    """The Trace of a lasso: the prefix and the cycle without its closing transition, whose label
    is ``loop_action`` (None: the last state stutters forever)."""
    steps, path = _concrete(spec, g, lasso.first, lasso.prefix_edges + lasso.cycle_edges)
    if lasso.cycle_edges:
        return Trace(tuple(steps[:-1]), tuple(path[:-1]), loop_start=len(lasso.prefix_edges),
                     loop_action=steps[-1].action)
    return Trace(tuple(steps), tuple(path), loop_start=len(steps) - 1, loop_action=None)


def check_liveness(
    spec: Spec,
    props: Sequence[Property],
    lives: Sequence[Property],
    fairness: Fairness,
    *,
    max_states: int | None = None,
    progress: Progress | None = None,
) -> CheckResult:
    """Check the invariants ``props`` (by the local engine, first) and then each liveness property
    of ``lives`` under ``fairness`` on the reachable state graph.

    The first liveness property with a fair lasso on which it fails is the violation. Reaching
    ``max_states`` (default: ``LIVENESS_LIMIT``) or an interrupt makes the result incomplete.
    """
    started = time.perf_counter()
    formulas = []
    for prop in lives:
        try:
            formulas.append((prop.name, formula_of(prop)))
        except TypeError as exc:
            raise UsageError(str(exc)) from None
        except Exception as exc:
            raise SpecRaised(f"liveness property {prop.name}", None, exc) from exc
    names = tuple(pr.name for pr in props) + tuple(lp.name for lp in lives)
    extra: dict[str, Any] = {"checker": "liveness", "fairness": fairness.as_json(), "liveness": {}}
    generated = 0
    if props:
        from kafkamc.checker.local import explore

        safety = explore(spec, props, max_states=max_states, progress=progress)
        if safety.result != OK:
            return safety
        generated = safety.states_generated
    limit = LIVENESS_LIMIT if max_states is None else max_states
    g = build_liveness_graph(spec, formulas, max_states=limit, progress=progress)
    extra["unexpanded"] = g.nodes - sum(g.expanded) if g.reason is None else None

    def result(kind: str, violated: str | None, trace: Trace | None, reason: str | None = None) -> CheckResult:
        return CheckResult(
            spec=spec.name, params=spec.p.as_dict(), engine="local", result=kind, invariants=names,
            violated=violated, distinct_states=g.nodes, states_generated=max(g.generated, generated),
            depth=g.depth, seconds=time.perf_counter() - started, trace=trace, reason=reason, extra=extra,
        )

    if g.reason is not None:
        reason = g.reason
        if reason == "max-states" and max_states is None:
            reason = "graph-size-limit"
            extra["graph_size_limit"] = LIVENESS_LIMIT
        return result(INCOMPLETE, None, None, reason)
    extra["transitions"] = len(g.dst)
    try:
        parts = _fair_parts(g, fairness)
        for name, formula in formulas:
            lasso, info = _find_lasso(g, formula, parts)
            info = {"formula": str(formula), **info}
            extra["liveness"][name] = info
            if lasso is not None:
                trace = lasso_trace(spec, g, lasso)
                info["prefix"] = len(lasso.prefix_edges)
                info["cycle"] = len(lasso.cycle_edges)
                return result(VIOLATION, name, trace)
    except KeyboardInterrupt as exc:
        # A stop during the search of the graph: never ok.
        return result(INCOMPLETE, None, None, stop_reason(exc))
    return result(OK, None, None)


def liveness_notes(result: CheckResult) -> list[str]:
    """Lines for the text output of ``check -l``: the fairness assumed and, per property checked,
    its formula and what the counterexample ends in."""
    extra = result.extra or {}
    if extra.get("checker") != "liveness":
        return []
    fair = extra.get("fairness") or {}
    lines = ["fairness: " + Fairness(tuple(fair.get("weak", ())), tuple(fair.get("strong", ()))).describe()]
    for name, info in (extra.get("liveness") or {}).items():
        line = f"{name}: {info['formula']}"
        if info.get("end") == "stuttering":
            line += (": fails on a behaviour that stops (stutters forever) in the last state, where no fair "
                     "action is enabled")
        elif info.get("end") == "cycle":
            line += f": fails on a fair cycle of {info['cycle']} transitions repeated forever"
        else:
            line += ": holds on every fair behaviour"
        lines.append(line)
    if extra.get("unexpanded"):
        lines.append(f"note: {extra['unexpanded']:,} states outside the constraint were not expanded; "
                     "no behaviour is judged beyond them")
    return lines


# -- judging a lasso of concrete states (trace replay) -----------------------------------------


def judge_lasso(
    spec: Spec,
    formula: Temporal,
    fairness: Fairness,
    states: Sequence[Any],
    step_actions: Sequence[str],
    loop_start: int,
    closing_action: str | None,
) -> list[str]:
    """Why the lasso ``states`` (``step_actions[i]`` is the action name of the transition into
    ``states[i + 1]``; ``closing_action`` that of the transition from the last state back to
    ``states[loop_start]``, None for stuttering there) is not a fair counterexample to ``formula``;
    empty when it is one. The transitions themselves must have been checked by the caller."""
    p = spec.p
    problems: list[str] = []
    key = _key(spec)

    def holds(fn: Any, s: Any) -> bool:
        try:
            return bool(fn(p, s))
        except Exception as exc:
            raise SpecRaised(f"predicate {getattr(fn, '__name__', fn)}", s, exc) from exc

    n = len(states)
    cycle = list(range(loop_start, n))
    stutter = closing_action is None
    if stutter and loop_start != n - 1:
        problems.append("a lasso without a closing transition must stutter in its last state only")
        return problems
    # The transitions of the cycle, as (from, action) with a change of state.
    cyc_actions = set()
    for i in cycle:
        a = closing_action if i == n - 1 else step_actions[i]
        nxt = states[loop_start] if i == n - 1 else states[i + 1]
        if a is not None and key(nxt) != key(states[i]):
            cyc_actions.add(a)
    enabled = [_enabled_actions(spec, s, key) for s in (states[i] for i in cycle)]
    for a in fairness.weak:
        if a not in cyc_actions and all(a in en for en in enabled):
            problems.append(f"the cycle is not weakly fair to {a}: it is enabled in every state of the cycle "
                            "and never taken")
    for a in fairness.strong:
        if a not in cyc_actions and any(a in en for en in enabled):
            problems.append(f"the cycle is not strongly fair to {a}: it is enabled in a state of the cycle "
                            "and never taken")
    form, P, Q = formula.form, formula.p, formula.q
    if form == "eventually":
        good = [i for i, s in enumerate(states) if holds(P, s)]
        if good:
            problems.append(f"{P.__name__} holds at step {good[0] + 1}, so the behaviour does reach it")
    elif form == "leads_to":
        assert Q is not None
        # The behaviour after position i is states[i:] and then the cycle forever.
        if not any(holds(P, states[i]) and not any(holds(Q, states[j]) for j in range(min(i, loop_start), n))
                   for i in range(n)):
            problems.append(f"every {P.__name__} state of the behaviour is followed by a {Q.__name__} state")
    elif form == "always_eventually":
        if any(holds(P, states[i]) for i in cycle):
            problems.append(f"{P.__name__} holds in the cycle, so it holds infinitely often")
    elif form == "eventually_always":
        if all(holds(P, states[i]) for i in cycle):
            problems.append(f"{P.__name__} holds in every state of the cycle, so from some point on forever")
    return problems


def _key(spec: Spec) -> Callable[[Any], Any]:
    view = spec.view
    if view is None:
        return lambda s: s
    p = spec.p
    return lambda s: view(p, s)


def _enabled_actions(spec: Spec, s: Any, key: Callable[[Any], Any]) -> set[str]:
    out = set()
    ks = key(s)
    for a in spec.actions():
        try:
            for _label, t in a.fn(spec.p, s):
                if key(t) != ks:
                    out.add(a.name)
                    break
        except Exception as exc:
            raise SpecRaised(f"action {a.name}", s, exc) from exc
    return out
