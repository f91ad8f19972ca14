"""``bmc``: symbolic bounded model checking with the spec's own functions run on Z3 terms.

The states at steps 0..K are K+1 copies of symbolic variables. A state's *shape* is its structure
with every int and bool leaf abstracted (tuple lengths, record types, concrete strings and other
non-numeric leaves kept): shapes are discovered from the initial states and from the successors of
each shape. For each shape, each action is executed once, symbolically, on a template state of
fresh variables; its successors (path condition, successor) form that shape's transition relation,
which every step reuses by substituting the step's variables. Likewise the invariants and the
spec's constraint become one formula per shape. So the number of symbolic paths grows with the
number of shapes, not with the depth: step k is the disjunction, over the shapes possible at k, of
their transition relations.

The search goes depth by depth (0, 1, ..., K) on one incremental solver: the first depth where a
state violating an invariant is reachable gives a shortest counterexample, as breadth-first
``check`` finds. The model's states are then found again concretely: the initial state among the
spec's initial states, each step among the concrete successors of the previous state, and the path
is replayed (``kafkamc trace replay`` reproduces it); any disagreement is a ``SoundnessError``.

When the spec declares a domain (``domain(p)``), the templates assume it (a symbolic index then has
finitely many values) and each depth first asks whether a reachable state leaves it: if one does,
that is an error, never an assumption.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from enum import IntEnum
from typing import Any, Sequence

import z3

from kafkamc.checker.symbolic import Budget, Explorer, PathLimit, SolverUnknown, SymBool, SymInt, concretize, guarded
from kafkamc.checker.symbolic.state import member
from kafkamc.checker.symbolic.values import as_arith, as_bool, fast_not
from kafkamc.counterexamples.trace import replay
from kafkamc.errors import SoundnessError, SymbolicUnsupported, UsageError
from kafkamc.invariants.api import Property
from kafkamc.result import INCOMPLETE, VIOLATION, CheckResult
from kafkamc.spec.api import Spec

__all__ = ["bmc", "DEFAULT_MAX_PATHS"]

DEFAULT_MAX_PATHS = 2_000_000


class BmcLimit(Exception):
    """The time or path limit was reached: the run is incomplete below the asked depth."""


# -- shapes ------------------------------------------------------------------------------------------


def _skeleton(v: Any) -> Any:
    """The structure of ``v`` with int and bool leaves abstracted (hashable)."""
    if isinstance(v, SymBool) or isinstance(v, bool):
        return ("B",)
    if isinstance(v, SymInt):
        return ("I", v.enum)
    if isinstance(v, IntEnum):
        return ("I", type(v))
    if isinstance(v, int):
        return ("I", None)
    if isinstance(v, tuple):
        return ("T", tuple(_skeleton(x) for x in v))
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        fields = [f for f in dataclasses.fields(v) if f.init]
        return ("R", type(v), tuple((f.name, _skeleton(getattr(v, f.name))) for f in fields))
    try:
        hash(v)
    except TypeError:
        raise SymbolicUnsupported(f"bmc: a state holds a {type(v).__name__} value, which has no shape "
                                  "(allowed: ints, bools, IntEnums, tuples, frozen dataclasses, hashable constants)"
                                  ) from None
    if isinstance(v, (frozenset, set)) and any(isinstance(x, (SymInt, SymBool)) for x in v):
        raise SymbolicUnsupported("bmc: a set of symbolic values in a state")
    return ("C", v)


def _template(skel: Any, name: str, facts: list[z3.BoolRef], leaves: list[z3.ExprRef]) -> Any:
    kind = skel[0]
    if kind == "B":
        b = z3.Bool(f"{name}")
        leaves.append(b)
        return SymBool(b)
    if kind == "I":
        i = z3.Int(f"{name}")
        leaves.append(i)
        if skel[1] is not None:
            facts.append(z3.Or([i == int(m) for m in skel[1]]))
        return SymInt(i, skel[1])
    if kind == "T":
        return tuple(_template(s, f"{name}[{k}]", facts, leaves) for k, s in enumerate(skel[1]))
    if kind == "R":
        return skel[1](**{f: _template(s, f"{name}.{f}", facts, leaves) for f, s in skel[2]})
    return skel[1]


def _leaf_terms(v: Any, out: list[z3.ExprRef]) -> None:
    """The leaves of ``v`` as Z3 terms, in ``_template``'s order."""
    if isinstance(v, (SymBool, bool)):
        out.append(as_bool(v))
    elif isinstance(v, (SymInt, int)):
        out.append(as_arith(v))
    elif isinstance(v, tuple):
        for x in v:
            _leaf_terms(x, out)
    elif dataclasses.is_dataclass(v) and not isinstance(v, type):
        for f in dataclasses.fields(v):
            if f.init:
                _leaf_terms(getattr(v, f.name), out)


@dataclass(slots=True)
class _Shape:
    index: int
    skel: Any
    leaves: list[z3.ExprRef]  # the template's variables
    facts: z3.BoolRef  # enum ranges and the domain, over the template
    props: list[z3.BoolRef]  # each property's formula over the template, in order
    expand: z3.BoolRef  # the constraint (True without one)
    template: Any  # the symbolic state of fresh variables the formulas speak of
    succs: list[tuple[z3.BoolRef, int, list[z3.ExprRef]]] | None = None  # (condition, shape, leaves)
    step: tuple[z3.BoolRef, tuple[int, ...]] | None = None  # transition formula, target shapes


class _Unroller:
    def __init__(self, spec: Spec, props: Sequence[Property], budget: Budget) -> None:
        self.spec, self.props, self.budget = spec, tuple(props), budget
        cls = type(spec)
        self.dom = cls.domain(spec.p) if cls.domain is not None else None
        self.solver = z3.Solver()
        self.ex = Explorer(self.solver, None, budget, formatting_allowed=True)
        self.shapes: list[_Shape] = []
        self.by_skel: dict[Any, int] = {}

    def shape(self, skel: Any) -> int:
        known = self.by_skel.get(skel)
        if known is not None:
            return known
        index = len(self.shapes)
        facts: list[z3.BoolRef] = []
        leaves: list[z3.ExprRef] = []
        tmpl = _template(skel, f"x{index}", facts, leaves)
        if self.dom is not None:
            facts.append(member(self.dom, tmpl))
        solver, ex, p = self.solver, self.ex, self.spec.p
        solver.push()
        try:
            solver.add(facts)
            ex.model = ex.model_of(z3.BoolVal(True))
            if ex.model is None:
                # No state of this shape is in the domain: it is reported as leaving the domain.
                props, expand = [z3.BoolVal(True)] * len(self.props), z3.BoolVal(False)
            else:
                ex.rebase()
                with guarded():
                    props = [ex.formula(pr.fn, p, tmpl) for pr in self.props]
                    cons = type(self.spec).constraint
                    expand = ex.formula(cons, p, tmpl) if cons is not None else z3.BoolVal(True)
        finally:
            solver.pop()
        made = _Shape(index, skel, leaves, z3.And(facts) if facts else z3.BoolVal(True), props, expand, tmpl)
        self.shapes.append(made)
        self.by_skel[skel] = index
        return index

    def successors(self, index: int) -> list[tuple[z3.BoolRef, int, list[z3.ExprRef]]]:
        sh = self.shapes[index]
        if sh.succs is not None:
            return sh.succs
        tmpl = sh.template
        solver, ex, p = self.solver, self.ex, self.spec.p
        found: list[tuple[z3.BoolRef, Any]] = []
        solver.push()
        try:
            solver.add(sh.facts)
            ex.model = ex.model_of(z3.BoolVal(True))
            if ex.model is not None:
                ex.rebase()
                for act in type(self.spec).actions():
                    def body(act=act) -> None:
                        for _label, post in act.fn(p, tmpl):
                            if ex.fresh():
                                found.append((ex.path_condition(), post))
                    try:
                        with guarded():
                            for _ in ex.paths(body):
                                pass
                    except SymbolicUnsupported as exc:
                        raise SymbolicUnsupported(f"{act.name}: {exc}") from None
        finally:
            solver.pop()
        succs = []
        for pc, post in found:
            target = self.shape(_skeleton(post))
            terms: list[z3.ExprRef] = []
            _leaf_terms(post, terms)
            succs.append((pc, target, terms))
        sh.succs = succs
        return succs


def _step(un: _Unroller, index: int) -> tuple[z3.BoolRef, tuple[int, ...]]:
    """Shape ``index``'s transition relation as one formula over its template (the pre-state),
    ``_NEXT_SEL`` and each target shape's ``_next_vars`` (the post-state), built once: a step
    substitutes it in one call."""
    sh = un.shapes[index]
    if sh.step is not None:
        return sh.step
    moves = []
    targets: list[int] = []
    for pc, target, terms in un.successors(index):
        if target not in targets:
            targets.append(target)
        dst = _next_vars(un, target)
        moves.append(z3.And([pc, _NEXT_SEL == target] + [d == t for d, t in zip(dst, terms)]))
    sh.step = (z3.And(sh.facts, sh.expand, z3.Or(moves)), tuple(targets))
    return sh.step


_NEXT_SEL = z3.Int("next.shape")


def _next_vars(un: _Unroller, index: int) -> list[z3.ExprRef]:
    sh = un.shapes[index]
    return [z3.Const(f"next{index}.{i}", leaf.sort()) for i, leaf in enumerate(sh.leaves)]


def _subst(formula: z3.ExprRef, sh: _Shape, vars_: list[z3.ExprRef]) -> z3.ExprRef:
    if not sh.leaves:
        return formula
    return z3.substitute(formula, *zip(sh.leaves, vars_))


def bmc(spec: Spec, invariants: Sequence[Property], depth: int, *, timeout: float = 3600.0,
        max_paths: int = DEFAULT_MAX_PATHS) -> CheckResult:
    """A shortest violation of ``invariants`` within ``depth`` steps, or an incomplete result
    (reason ``max-depth``) saying none exists up to ``depth``."""
    props = tuple(invariants)
    if not props:
        raise UsageError("bmc needs at least one invariant (-i NAME)")
    for pr in props:
        if pr.kind != "invariant":
            raise UsageError(f"{pr.name} is a {pr.kind} property; bmc takes invariants (state properties) only")
    if depth < 0:
        raise UsageError(f"--depth {depth}: allowed: a non-negative integer")
    started = time.perf_counter()
    z3.set_param("smt.random_seed", 0)
    z3.set_param("sat.random_seed", 0)
    budget = Budget(deadline=time.monotonic() + timeout, max_paths=max_paths)
    un = _Unroller(spec, props, budget)
    main = z3.Solver()
    # vars_[k][shape] = that shape's variables at step k
    step_vars: list[dict[int, list[z3.ExprRef]]] = []
    sel: list[z3.ArithRef] = []

    def vars_at(k: int, index: int) -> list[z3.ExprRef]:
        got = step_vars[k].get(index)
        if got is None:
            sh = un.shapes[index]
            got = [z3.Const(f"s{k}.{index}.{i}", leaf.sort()) for i, leaf in enumerate(sh.leaves)]
            step_vars[k][index] = got
        return got

    def solve(formula: z3.BoolRef) -> Any:
        main.set("timeout", budget.remaining_ms())
        main.push()
        try:
            main.add(formula)
            verdict = main.check()
            return main.model() if verdict == z3.sat else (None if verdict == z3.unsat else verdict)
        finally:
            main.pop()

    reached = 0
    try:
        inits = spec.initial()
        step_vars.append({})
        sel.append(z3.Int("shape0"))
        options = []
        for state in inits:
            index = un.shape(_skeleton(state))
            terms: list[z3.ExprRef] = []
            _leaf_terms(state, terms)
            vs = vars_at(0, index)
            options.append(z3.And([sel[0] == index] + [v == t for v, t in zip(vs, terms)]))
        main.add(z3.Or(options))
        for k in range(depth + 1):
            present = sorted(step_vars[k])
            if un.dom is not None:
                outside = z3.Or([z3.And(sel[k] == i, z3.Not(_subst(un.shapes[i].facts, un.shapes[i], vars_at(k, i))))
                                 for i in present])
                model = solve(outside)
                if isinstance(model, z3.CheckSatResult):
                    raise SolverUnknown(main.reason_unknown())
                if model is not None:
                    state = _state(un, model, k, sel, vars_at)
                    raise SymbolicUnsupported(
                        f"bmc: a state reachable in {k} steps is outside spec {spec.name}'s domain(p): {state!r}")
            bad = z3.Or([z3.And(sel[k] == i, _subst(z3.And(un.shapes[i].facts, fast_not(z3.And(un.shapes[i].props))),
                                                    un.shapes[i], vars_at(k, i)))
                         for i in present])
            model = solve(bad)
            if isinstance(model, z3.CheckSatResult):
                raise SolverUnknown(main.reason_unknown())
            if model is not None:
                states = [_state(un, model, j, sel, vars_at) for j in range(k + 1)]
                return _confirmed(spec, props, states, started, depth, un)
            reached = k
            if k == depth:
                break
            # The step k -> k + 1: some shape's transition relation, from a state the constraint expands.
            step_vars.append({})
            sel.append(z3.Int(f"shape{k + 1}"))
            steps = []
            for i in present:
                sh = un.shapes[i]
                formula, targets = _step(un, i)
                pairs = list(zip(sh.leaves, vars_at(k, i))) + [(_NEXT_SEL, sel[k + 1])]
                for t in targets:
                    pairs.extend(zip(_next_vars(un, t), vars_at(k + 1, t)))
                steps.append(z3.And(sel[k] == i, z3.substitute(formula, *pairs)))
            main.add(z3.Or(steps))
    except (SolverUnknown, PathLimit) as exc:
        return _incomplete(spec, props, started, reached, f"{exc}", un)
    return _incomplete(spec, props, started, reached, None, un)


def _state(un: _Unroller, model: Any, k: int, sel: list[z3.ArithRef], vars_at: Any) -> Any:
    index = model.eval(sel[k], model_completion=True).as_long()
    sh = un.shapes[index]
    return concretize(sh.template, _Renamed(model, sh.leaves, vars_at(k, index)))


class _Renamed:
    """A model read through the template's variables: ``eval(x)`` is the model's value of step k's copy."""

    def __init__(self, model: Any, leaves: list[z3.ExprRef], copies: list[z3.ExprRef]) -> None:
        self.model = model
        self.pairs = list(zip(leaves, copies))

    def eval(self, term: z3.ExprRef, model_completion: bool = False) -> Any:
        return self.model.eval(z3.substitute(term, *self.pairs) if self.pairs else term,
                               model_completion=model_completion)


def _stats(un: _Unroller) -> dict[str, Any]:
    return {"checker": "bmc", "shapes": len(un.shapes), "paths": un.budget.paths,
            "solver_checks": un.budget.checks}


def _incomplete(spec: Spec, props: tuple[Property, ...], started: float, reached: int, why: str | None,
                un: _Unroller) -> CheckResult:
    extra = {**_stats(un), "bmc_depth": reached}
    if why is not None:
        extra["limit"] = why
    return CheckResult(
        spec=spec.name, params=spec.p.as_dict(), engine="bmc", result=INCOMPLETE,
        invariants=tuple(pr.name for pr in props), violated=None, distinct_states=0, states_generated=0,
        depth=reached + 1, seconds=round(time.perf_counter() - started, 3), reason="max-depth", extra=extra)


def _confirmed(spec: Spec, props: tuple[Property, ...], states: list[Any], started: float, depth: int,
               un: _Unroller) -> CheckResult:
    """Find the solver's states again concretely and replay them: never an unchecked trace."""
    inits = spec.initial()
    try:
        path = [inits.index(states[0])]
    except ValueError:
        raise SoundnessError(f"bmc: the solver's initial state is not an initial state of {spec.name}: "
                             f"{states[0]!r}") from None
    cons = type(spec).constraint
    for k, (pre, post) in enumerate(zip(states, states[1:]), start=1):
        if cons is not None and not cons(spec.p, pre):
            raise SoundnessError(f"bmc: step {k} leaves a state the constraint does not expand")
        succ = [nxt for _act, _label, nxt in spec.successors(pre)]
        if post not in succ:
            raise SoundnessError(f"bmc: the solver's state {k + 1} is not a successor of state {k}: {post!r}")
        path.append(succ.index(post))
    trace = replay(spec, path)
    if [st.state for st in trace.steps] != states:
        raise SoundnessError("bmc: the replayed trace differs from the solver's states")
    p = spec.p
    for k, st in enumerate(states[:-1], start=1):
        if not all(pr.fn(p, st) for pr in props):
            raise SoundnessError(f"bmc: state {k} already violates an invariant: the search was not shortest")
    violated = next((pr.name for pr in props if not pr.fn(p, states[-1])), None)
    if violated is None:
        raise SoundnessError("bmc: the solver's last state satisfies every invariant when replayed")
    return CheckResult(
        spec=spec.name, params=p.as_dict(), engine="bmc", result=VIOLATION,
        invariants=tuple(pr.name for pr in props), violated=violated, distinct_states=0, states_generated=0,
        depth=len(states), seconds=round(time.perf_counter() - started, 3), trace=trace,
        extra={**_stats(un), "bmc_depth": len(states) - 1, "bmc_bound": depth})
