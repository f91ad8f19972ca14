"""``prove --infer``: mine candidate invariants from a bounded run, keep the largest inductive subset.

1. **Mine.** Candidates are small predicates over the state's shape, generated from templates:
   comparisons (``<=``, ``==``) between two int fields of one entity (an element of a tuple of
   records, like a broker), of an entity and the global state, of two global fields, and with 0;
   the same guarded by a bool or enum field of the entity (``all(b.epoch == 0 for b in s.brokers
   if not b.up)``). Each is Python source compiled to a function of ``(p, s)``, so the symbolic
   executor runs exactly what is printed. Those false on some state of a breadth-first run within
   the spec's own (small) parameters are dropped: they are not invariants.
2. **Houdini** (Flanagan and Leino): ``prove`` the conjunction of the targets and the surviving
   candidates; every query gives each member its own verdict relative to all the others, so every
   member with a counterexample (or an unknown) is dropped and the rest proved again, until a
   round drops nothing. That round is itself the proof that what remains is inductive; it is the
   largest inductive subset of the members (an inductive subset survives every round). A target
   that is dropped is not implied by any subset of the candidates.

The mining run only filters: a candidate that is wrong about an unreached state is dropped by the
prover, never assumed, so the result is as sound as ``prove`` itself.
"""

from __future__ import annotations

import dataclasses
import enum
import operator
import re
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

from kafkamc.invariants.api import Property
from kafkamc.prover.branchfree import branch_free
from kafkamc.prover.prove import DEFAULT_TIMEOUT, prove
from kafkamc.prover.result import PROVED, TYPE_OK, UNKNOWN, ProofResult
from kafkamc.spec.api import Spec

__all__ = ["Candidate", "InferResult", "mine", "infer", "python_source", "unknown_reason", "summary", "counts",
           "DEFAULT_MINE_STATES"]

DEFAULT_MINE_STATES = 20_000  # states of the mining run (a filter only: more states, fewer candidates)


@dataclass(frozen=True, slots=True)
class Candidate:
    name: str  # kebab-case
    expr: str  # a Python expression over p and s
    fn: Callable[..., bool] = field(compare=False)  # the expression as written (mining, the printed module)
    # The same expression with its forks replaced by combinators (``branchfree.py``): equal on
    # every concrete state, and one path for the symbolic executor; what ``prove`` runs.
    symbolic: Callable[..., Any] | None = field(default=None, compare=False)

    @property
    def prop(self) -> Property:
        return Property(self.name, f"inferred: {self.expr}", "invariant", self.symbolic or self.fn)


@dataclass(frozen=True, slots=True)
class InferResult:
    result: str  # PROVED (targets inductive with the inferred set) | CTI_FOUND | UNKNOWN
    targets: tuple[str, ...]
    generated: int  # candidates from the templates
    mined: int  # of those, true on every state of the mining run
    mine_states: int
    inferred: tuple[Candidate, ...]  # the candidates of the final inductive set
    dropped_targets: tuple[str, ...]
    rounds: int
    seconds: float
    last: ProofResult | None  # the final proof (or, if a target was dropped, the CTI relative to the set)
    round_sizes: tuple[int, ...] = ()


# -- the state's vocabulary ---------------------------------------------------------------------

def _scalar_kind(value: Any) -> str | None:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, enum.IntEnum):
        return "enum"
    if isinstance(value, int):
        return "int"
    return None


def _record_fields(value: Any, prefix: str, out: list[tuple[str, str, Any]],
                   entities: list[tuple[str, Any]]) -> None:
    """Scalar paths of a record (descending into nested records); tuples of records are entities."""
    for f in dataclasses.fields(value):
        v = getattr(value, f.name)
        path = f"{prefix}.{f.name}"
        kind = _scalar_kind(v)
        if kind is not None:
            out.append((path, kind, v))
        elif dataclasses.is_dataclass(v) and not isinstance(v, type):
            _record_fields(v, path, out, entities)
        elif isinstance(v, tuple) and entities is not None:
            entities.append((path, v))


def _vocabulary(states: Sequence[Any]) -> tuple[list[tuple[str, str, Any]], dict[str, list[tuple[str, str, Any]]],
                                                list[str]]:
    """Global scalars, per entity collection the scalars of one element (from any reached state
    where the collection is non-empty; enums list every value of their class), and the id sets
    (tuples of ints)."""
    glob: list[tuple[str, str, Any]] = []
    ents: list[tuple[str, Any]] = []
    _record_fields(states[0], "s", glob, ents)
    entity_fields: dict[str, list[tuple[str, str, Any]]] = {}
    sets: list[str] = []
    for path, _ in ents:
        for st in states:
            coll = operator.attrgetter(path[2:])(st)
            if coll and dataclasses.is_dataclass(coll[0]):
                elem: list[tuple[str, str, Any]] = []
                _record_fields(coll[0], "e", elem, None)  # type: ignore[arg-type]
                entity_fields[path] = elem
                break
            if coll and _scalar_kind(coll[0]) == "int":
                sets.append(path)
                break
    return glob, entity_fields, sets


def _enum_atoms(path: str, value: Any) -> list[str]:
    cls = type(value)
    return [f"{path} == {cls.__name__}.{m.name}" for m in cls]


def _int_atoms(left: list[str], right: list[str], same: bool) -> list[str]:
    atoms = []
    for i, a in enumerate(left):
        for j, b in enumerate(right):
            if a == b or (same and j <= i):
                continue
            if b == "0":
                atoms += [f"{a} >= 0", f"{a} <= 0", f"{a} == 0"]
            else:
                atoms += [f"{a} <= {b}", f"{b} <= {a}", f"{a} == {b}"]
    return atoms


def _templates(states: Sequence[Any]) -> tuple[list[str], dict[str, type]]:
    glob, entity_fields, sets = _vocabulary(states)
    names: dict[str, type] = {}
    for _, kind, v in glob + [x for fs in entity_fields.values() for x in fs]:
        if kind == "enum":
            names[type(v).__name__] = type(v)
    gints = [p for p, k, _ in glob if k == "int"]
    exprs = _int_atoms(gints, gints, True) + _int_atoms(gints, ["0"], False)
    for i, a in enumerate(sets):  # membership of an id in an id set, inclusion between id sets
        exprs += [f"{x} in {a}" for x in gints] + [f"{x} == 0 or {x} in {a}" for x in gints]
        exprs += [f"all(i in {b} for i in {a})" for j, b in enumerate(sets) if j != i]
    for path, fields in entity_fields.items():
        var = path.rsplit(".", 1)[1][0]
        if var in ("s", "p"):
            var = "e"
        rename = [(f.replace("e.", f"{var}.", 1), k, v) for f, k, v in fields]
        eints = [f for f, k, _ in rename if k == "int"]
        atoms = _int_atoms(eints, eints, True) + _int_atoms(eints, gints + ["0"], False)
        guards: list[tuple[str, str]] = []  # (guard, the field it reads)
        for f, k, v in rename:
            if k == "bool":
                guards += [(f, f), (f"not {f}", f)]
            elif k == "enum":
                guards += [(a, f) for a in _enum_atoms(f, v)]
        for atom in atoms:
            exprs.append(f"all({atom} for {var} in {path})")
        for g, gf in guards:
            for atom in atoms:
                exprs.append(f"all({atom} for {var} in {path} if {g})")
            for h, hf in guards:
                if hf != gf:
                    exprs.append(f"all({h} for {var} in {path} if {g})")
    exprs += _id_templates(states, glob, entity_fields)
    return exprs, names


def _values(states: Sequence[Any], path: str, elem_field: str | None = None) -> set[Any]:
    """Every value of the scalar ``path`` (``s.x.y``) on the states, or with ``elem_field`` every
    value of that field of every element of the collection ``path``."""
    get = operator.attrgetter(path[2:])
    if elem_field is None:
        return {get(st) for st in states}
    sub = operator.attrgetter(elem_field[2:])
    return {sub(e) for st in states for e in get(st)}


def _id_like(values: set[Any], n: int) -> bool:
    """Whether an int field's values look like the ids of n entities: within 0..n, every id reached."""
    return set(range(1, n + 1)) <= values <= set(range(n + 1))


def _id_templates(states: Sequence[Any], glob: list[tuple[str, str, Any]],
                  entity_fields: dict[str, list[tuple[str, str, Any]]]) -> list[str]:
    """Templates about entities named by id. A tuple of records whose length is the same on every
    state is indexed by entity id from 1 (``s.brokers[b - 1]`` is broker b); an int field whose
    values all lie in 0..n (n entities) may name one (``s.controller``, ``b.active_controller``,
    ``r.dest``). Forms, each quantified as ``for i, b in enumerate(s.brokers, 1)``:

    - own-id guards: a fact of the entity the global id names (``all(b.up for i, b in ... if
      s.controller == i)``, Kafka's "the owner of /controller is up"), or of an entity that names
      itself (``if b.active_controller == i``), alone or with a bool or enum guard;
    - an element of another collection naming an entity (``all(s.brokers[r.dest - 1].up for r in
      s.in_flight)``);
    - counts: how many entities satisfy a guard, at most a global counter (``sum(1 for b in
      s.brokers if not b.up) <= s.crashes``), and a bag's length at most one.
    """
    gints = [p for p, k, _ in glob if k == "int"]
    out: list[str] = []
    indexed = {path: len(operator.attrgetter(path[2:])(states[0])) for path in entity_fields
               if len({len(operator.attrgetter(path[2:])(st)) for st in states}) == 1}
    for path, fields in entity_fields.items():
        bag = path not in indexed
        var = path.rsplit(".", 1)[1][0]
        var = "e" if var in ("s", "p", "i") else var
        rename = [(f.replace("e.", f"{var}.", 1), k, v) for f, k, v in fields]
        eints = [f for f, k, _ in rename if k == "int"]
        atoms: list[str] = []  # single facts of the element
        for f, k, v in rename:
            if k == "bool":
                atoms += [f, f"not {f}"]
            elif k == "enum":
                atoms += [a for m in type(v) for a in (f"{f} == {type(v).__name__}.{m.name}",
                                                      f"{f} != {type(v).__name__}.{m.name}")]
        if bag:
            out += [f"len({path}) <= {g}" for g in gints]
        else:
            n = indexed[path]
            loop = f"for i, {var} in enumerate({path}, 1)"
            own_global = [g for g in gints if _id_like(_values(states, g), n)]
            own_field = [f for f, k, _ in rename if k == "int"
                         and _id_like(_values(states, path, "e." + f.split(".", 1)[1]), n)]
            own = [f"{g} == i" for g in own_global] + [f"{f} == i" for f in own_field]
            facts = atoms + own + [f"{g} != i" for g in own_global] + [f"{f} != i" for f in own_field]
            facts += [f"{a} == {b}" for a in eints for b in gints]
            facts += [f"{a} != 0" for a in eints]
            for g in own:
                for h in facts:
                    if h != g:
                        out.append(f"all({h} {loop} if {g})")
                for a in atoms:
                    field_a = a.replace("not ", "").split(" ")[0]
                    for h in facts:
                        # A conclusion about the guard's own field follows from the guard or
                        # contradicts it: never a fact of the protocol.
                        if h != g and h.replace("not ", "").split(" ")[0] != field_a:
                            out.append(f"all({h} {loop} if {g} and {a})")
            for a in atoms:
                out += [f"sum(1 for {var} in {path} if {a}) <= {g}" for g in gints]
        # An element's id field names an entity of an indexed collection.
        for other, n in indexed.items():
            if other == path:
                continue
            ovar = other.rsplit(".", 1)[1][0]
            ofields = entity_fields[other]
            oatoms: list[str] = []
            for f, k, v in ofields:
                name = f.split(".", 1)[1]
                if k == "bool":
                    oatoms += [f"{{x}}.{name}", f"not {{x}}.{name}"]
                elif k == "enum":
                    oatoms += [f"{{x}}.{name} == {type(v).__name__}.{m.name}" for m in type(v)]
            for f in eints:
                vals = _values(states, path, "e." + f.split(".", 1)[1])
                if not vals or not vals <= set(range(n + 1)):
                    continue
                # The range check first: the index is then taken only where it is an entity's id
                # (an unbounded symbolic int, an epoch that happened to stay below n when
                # mined, cannot be enumerated), and the candidate says the field is an id.
                ref = f"{other}[{f} - 1]"
                guard = "" if 0 not in vals else f"{f} == 0 or "
                out += [f"all({guard}(1 <= {f} <= {n} and {a.format(x=ref)}) for {var} in {path})"
                        for a in oatoms if ovar]
    return out


def _kebab(expr: str) -> str:
    text = expr
    for op, word in (("<=", " le "), ("==", " eq "), ("!=", " ne "), (">=", " ge "), (" in ", " in-set ")):
        text = text.replace(op, word)
    text = re.sub(r"\ball\(|\bsum\(1\b|\bfor [\w, ]+ in (enumerate\()?|, 1\)|\bif\b|\bs\.|\b[a-z]\.", " ", text)
    words = re.findall(r"[A-Za-z0-9]+", text.replace("_", " "))
    name = "-".join(w.lower() for w in words)
    return name if name[:1].isalpha() else f"inv-{name}".rstrip("-")


# -- mining -------------------------------------------------------------------------------------

def _reached(spec: Spec, max_states: int) -> list[Any]:
    """Breadth-first states of ``spec`` with its own parameters (expanding only states that satisfy
    its constraint, as ``check`` does), at most ``max_states``."""
    constraint = type(spec).constraint
    seen: set[Any] = set()
    order: list[Any] = []
    queue: deque[Any] = deque()
    for st in spec.initial():
        if st not in seen:
            seen.add(st)
            order.append(st)
            queue.append(st)
    while queue and len(order) < max_states:
        st = queue.popleft()
        if constraint is not None and not constraint(spec.p, st):
            continue
        for _, _, nxt in spec.successors(st):
            if nxt not in seen and len(order) < max_states:
                seen.add(nxt)
                order.append(nxt)
                queue.append(nxt)
    return order


def _wider(spec: Spec) -> Spec | None:
    """The spec with every liftable bound one higher (within its maximum), or None if none can be:
    a second, cheap filter, since a candidate true only because a bound is small (no crash
    when ``crashes = 0``) would otherwise cost the prover a query to drop."""
    cls = type(spec)
    values = spec.p.as_dict()
    raised = False
    for prm in cls.parameters:
        if prm.lift and (prm.max is None or values[prm.name] < prm.max):
            values[prm.name] += 1
            raised = True
    return cls(**values) if raised else None


_GUARDED = re.compile(r"all\((.+?) (for [\w, ]+ in (?:enumerate\(\S+, 1\)|\S+)) if (.+)\)")


def _guard_met(expr: str, names: dict[str, type], runs: list[tuple[Any, list[Any]]], known: dict[str, bool]) -> bool:
    """Whether the guard of a guarded form (``all(h for b in s.brokers if g)``) held for some
    entity of some reached state: a guard never met makes the candidate true of every reached
    state and says nothing about any of them."""
    m = _GUARDED.fullmatch(expr)
    if m is None:
        return True
    witness = f"any({m.group(3)} {m.group(2)})"
    met = known.get(witness)
    if met is None:
        fn = eval(f"lambda p, s: {witness}", dict(names))  # noqa: S307 - from the templates
        met = known[witness] = any(fn(p, st) for p, sts in runs for st in sts)
    return met


def mine(spec: Spec, max_states: int = DEFAULT_MINE_STATES) -> tuple[list[Candidate], int, int]:
    """The candidates true on every state of two bounded runs, the spec's own parameters and every
    liftable bound one higher, at most ``max_states`` each: (candidates, generated, states)."""
    runs = [(spec.p, _reached(spec, max_states))]
    wider = _wider(spec)
    if wider is not None:
        runs.append((wider.p, _reached(wider, max_states)))
    states = [st for _, sts in runs for st in sts]
    exprs, names = _templates(states)
    guards: dict[str, bool] = {}
    kept: list[Candidate] = []
    used: set[str] = set()
    for expr in exprs:
        fn = eval(f"lambda p, s: {expr}", dict(names))  # noqa: S307 - generated from the templates above
        try:
            if not all(fn(p, st) for p, sts in runs for st in sts):
                continue
            if not _guard_met(expr, names, runs, guards):
                continue
        except Exception:  # a template that does not apply to this shape (e.g. a mixed tuple)
            continue
        name = _kebab(expr)
        base, n = name, 2
        while name in used:
            name, n = f"{base}-{n}", n + 1
        used.add(name)
        kept.append(Candidate(name, expr, fn, branch_free(expr, names)))
    return _pruned(kept), len(exprs), len(states)


def _pruned(cands: list[Candidate]) -> list[Candidate]:
    """Drop a candidate implied syntactically by a kept one: ``a <= b`` when ``a == b`` is kept, and a
    guarded atom when the unguarded one is kept (fewer members make each Houdini round cheaper)."""
    exprs = {c.expr for c in cands}
    out = []
    for c in cands:
        m = re.fullmatch(r"(all\()?(.+?) <= (.+?)( for .*)?", c.expr)
        z = re.fullmatch(r"(all\()?(.+?) [<>]= 0( for .*)?", c.expr)
        if z and f"{z.group(1) or ''}{z.group(2)} == 0{z.group(3) or ''}" in exprs:
            continue
        if m:
            a, b = m.group(2), m.group(3)
            tail = m.group(4) or ""
            head = m.group(1) or ""
            if f"{head}{a} == {b}{tail}" in exprs or f"{head}{b} == {a}{tail}" in exprs:
                continue
        g = re.fullmatch(r"all\((.+) for (\w+) in (\S+) if .+\)", c.expr)
        if g and f"all({g.group(1)} for {g.group(2)} in {g.group(3)})" in exprs:
            continue
        # Own-id forms: a conclusion that holds under a weaker guard, or for every entity.
        e = re.fullmatch(r"all\((.+) for i, (\w+) in enumerate\((\S+), 1\) if (.+?)( and .+)?\)", c.expr)
        if e:
            head, var, coll, guard, more = e.groups()
            if more and f"all({head} for i, {var} in enumerate({coll}, 1) if {guard})" in exprs:
                continue
            if not re.search(r"\bi\b", head) and f"all({head} for {var} in {coll})" in exprs:
                continue
        out.append(c)
    return out


# -- Houdini ------------------------------------------------------------------------------------

def infer(
    spec: Spec,
    targets: Iterable[Property],
    *,
    lifted: Sequence[str] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    workers: int | None = None,
    max_states: int = DEFAULT_MINE_STATES,
    max_rounds: int = 50,
    progress: Callable[[str], None] | None = None,
    action_progress: Callable[[tuple[Any, ...]], None] | None = None,
) -> InferResult:
    """Mine candidates, then Houdini (see the module's docstring). ``progress`` gets a line per
    round; ``action_progress`` the queries of each action of each round as they complete (as
    ``prove``'s ``progress``)."""
    started = time.perf_counter()
    targets = tuple(targets)
    mining_spec = spec
    cands, generated, nstates = mine(mining_spec, max_states)
    say = progress or (lambda _m: None)
    say(f"mined {len(cands)} of {generated} candidates on {nstates} states")
    members: list[Property] = list(targets) + [c.prop for c in cands]
    by_name = {c.name: c for c in cands}
    target_names = {t.name for t in targets}
    dropped_targets: list[str] = []
    sizes: list[int] = []
    last: ProofResult | None = None
    rounds = 0
    clean = False
    while rounds < max_rounds and members:
        rounds += 1
        sizes.append(len(members))
        last = prove(spec, members, lifted=lifted, timeout=timeout, workers=workers, search=False,
                     counterexamples=False, progress=action_progress)
        failed = {q.invariant for q in last.queries if q.verdict != PROVED}
        if TYPE_OK in failed or any(q.verdict == UNKNOWN for q in last.queries):
            # The domain is left under the current set (dropping members only weakens it further),
            # or a limit left a query open: dropping on an unknown would throw away every member
            # of that action, so the run stops as unknown instead.
            # Nothing is known inductive then: no member is reported as inferred.
            say(f"round {rounds}: {len(members)} members, stopped: " + ("type-ok" if TYPE_OK in failed else "unknown"))
            return InferResult(UNKNOWN, tuple(t.name for t in targets), generated, len(cands), nstates,
                               (), tuple(dropped_targets),
                               rounds, round(time.perf_counter() - started, 3), last, tuple(sizes))
        say(f"round {rounds}: {len(members)} members, {len(failed)} not inductive "
            f"({last.seconds:.1f} s, {last.cpu_seconds:.1f} CPU s)"
            + (f": {', '.join(sorted(failed & target_names))} (targets)" if failed & target_names else ""))
        if not failed:
            clean = True
            break
        dropped_targets += [m.name for m in members if m.name in failed and m.name in target_names]
        members = [m for m in members if m.name not in failed]
    inferred = tuple(by_name[m.name] for m in members if m.name in by_name) if clean else ()
    if not clean and members:
        verdict = UNKNOWN  # the round limit: nothing is known inductive
    elif dropped_targets:
        # Show why: the targets against the inferred set, with a counterexample to induction.
        last = prove(spec, list(targets) + [c.prop for c in inferred], lifted=lifted, timeout=timeout,
                     workers=workers)
        verdict = last.result
    else:
        verdict = PROVED
    return InferResult(verdict, tuple(t.name for t in targets), generated, len(cands), nstates, inferred,
                       tuple(dropped_targets), rounds, round(time.perf_counter() - started, 3), last, tuple(sizes))


def python_source(result: InferResult) -> str:
    """The inferred invariants as a module the user can paste (each decorated with @invariant); the
    enums they name are imported from the modules that define them (the spec's), so that the
    module runs as printed."""
    enums: dict[str, type] = {}
    for c in result.inferred:
        for name in re.findall(r"\b([A-Z]\w*)\.[A-Z_]\w*\b", c.expr):
            enums[name] = c.fn.__globals__[name]  # the class the candidate was compiled with
    lines = ["from kafkamc import invariant"]
    modules: dict[str, list[str]] = {}
    for name in sorted(enums):
        modules.setdefault(enums[name].__module__, []).append(name)
    lines += [f"from {mod} import {', '.join(names)}" for mod, names in sorted(modules.items())]
    for c in result.inferred:
        fn = c.name.replace("-", "_")
        lines += ["", "", f"@invariant({c.name!r}, {('inferred: ' + c.expr)!r})",
                  f"def {fn}(p, s) -> bool:", f"    return {c.expr}"]
    return "\n".join(lines) + "\n"


def unknown_reason(result: InferResult) -> str:
    """Why a run ended unknown, in one line: which actions left the domain, or which queries a
    limit left open (a Houdini round has verdicts only, no counterexample to show)."""
    last = result.last
    if result.result != UNKNOWN or last is None:
        return ""
    left = sorted({q.action for q in last.queries if q.invariant == TYPE_OK and q.verdict != PROVED})
    if left:
        return (f"the domain is left (type-ok) by {', '.join(left)} from states satisfying all "
                f"{len(last.invariants)} members of round {result.rounds}: no subset of the candidates keeps it")
    if last.open_queries:
        pairs = ", ".join(f"{q.action}/{q.invariant}" for q in last.open_queries[:6])
        more = len(last.open_queries) - 6
        return (f"a query was open in round {result.rounds} (a time or path limit; see --timeout): {pairs}"
                + (f" and {more} more" if more > 0 else ""))
    return f"no inductive subset was found within {result.rounds} rounds"


def counts(result: InferResult) -> str:
    """The run in one line: candidates, mined, inferred, rounds."""
    return (f"{result.generated} candidates, {result.mined} true on {result.mine_states} states, "
            f"{len(result.inferred)} inductive; {result.rounds} rounds {list(result.round_sizes)}, "
            f"{result.seconds:.1f} s")


def summary(result: InferResult) -> dict[str, Any]:
    """The run as JSON (``prove --infer --json`` and the gate's report), without the final proof."""
    return {
        "result": result.result, "targets": list(result.targets),
        "candidates_generated": result.generated, "candidates_mined": result.mined,
        "mine_states": result.mine_states, "rounds": result.rounds, "round_sizes": list(result.round_sizes),
        "dropped_targets": list(result.dropped_targets),
        "inferred": [{"name": c.name, "expr": c.expr} for c in result.inferred], "seconds": result.seconds,
        **({"unknown": unknown_reason(result)} if result.result == UNKNOWN else {}),
    }
