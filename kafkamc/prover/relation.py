"""The transition relation of ``bmc``: each action run ONCE per shape of the domain, symbolically,
on a state of that shape whose every leaf is a variable of the layout (``layout.py``).

A shape's state is built from the spec's declared domain (TypeOK) with the generic variables
(prefix ``x``); its domain facts (int bounds, enum ranges) are the solver's base, so a branch is
followed when some state of the domain takes it, and an index enumerates the values the domain
gives it. Each path becomes a *move*: its path condition over ``x``, the variables it assigns (a
successor's live variable whose term is not the pre-state's own variable, a site whose
alternative changes) and the condition for its successor to be in the domain. Nothing here
depends on a depth: the unrolling (``bmc.py``) substitutes each depth's copy of the vector.

Also per shape: each invariant and the constraint as a formula over ``x``, and the conditions
under which an invariant, the constraint or an action raised (a reachable state meeting one is
found again concretely and reported as ``check`` reports it).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import z3

from kafkamc.checker.symbolic import Budget, Explorer, SolverUnknown, SymBool, SymInt, guarded
from kafkamc.checker.symbolic.context import current
from kafkamc.checker.symbolic.state import rebuilt
from kafkamc.checker.symbolic.values import fast_and, fast_or, fast_simplify
from kafkamc.checker.watch import raise_pending_stop
from kafkamc.errors import KafkamcError, SymbolicUnsupported
from kafkamc.invariants.api import Property
from kafkamc.prover.formula_sets import with_symbolic_sets
from kafkamc.prover.history import HistoryRead, LeftOut, reads, restore, withhold
from kafkamc.prover.layout import Layout, Shape
from kafkamc.prover.merge import Guarded, successors
from kafkamc.prover.predicated import predicated
from kafkamc.spec.api import Spec

__all__ = ["Move", "ShapeRelation", "catching", "relate", "relate_shape"]

# Most states of a shape run one by one when an action's code needs concrete values.
_MAX_VALUATIONS = 256


@dataclass(frozen=True, slots=True)
class Move:
    """One path of one action from one shape: ``pc`` over ``x``, and what it assigns."""

    shape: int
    action: str
    pc: z3.BoolRef
    assigns: tuple[tuple[str, z3.ExprRef], ...]  # (layout key, term over x)


@dataclass(frozen=True, slots=True)
class ShapeRelation:
    """Everything ``bmc`` needs of one shape, over the generic variables ``x``."""

    shape: Shape
    facts: z3.BoolRef  # the domain facts of the shape's template
    props: tuple[z3.BoolRef, ...]  # each invariant, in the order asked
    expand: z3.BoolRef  # the constraint (True without one): only such states are expanded
    raised_check: z3.BoolRef  # an invariant or the constraint raised here
    raised_action: z3.BoolRef  # an action raised here (on an expanded state)
    escapes: z3.BoolRef  # an action's successor is outside the domain (on an expanded state)
    moves: tuple[Move, ...]
    paths: int  # symbolic paths explored (actions and formulas)
    cpu: float  # CPU seconds spent on this shape
    # The shapes of the successors its actions may yield in the domain, by index: the shape graph
    # through which ``relation_reach`` builds only the shapes reachable within the depth.
    targets: tuple[int, ...] = ()


def relate(spec: Spec, props: Sequence[Property], layout: Layout, budget: Budget,
           progress: Callable[[ShapeRelation, int], None] | None = None, *,
           branch_free: bool = True, only: Sequence[Shape] | None = None,
           left: LeftOut | None = None) -> list[ShapeRelation]:
    """The relation of every shape of ``layout`` (``only``: of those, in that order), in shape
    order; ``progress(relation, total)`` after each. ``branch_free``: the actions as
    ``predicated.py`` recompiles them (False: as written, forking at every condition; the same
    relation, tests compare the two)."""
    out = []
    for shape in layout.shapes if only is None else only:
        out.append(relate_shape(spec, props, layout, shape, budget, branch_free, left))
        if progress is not None:
            progress(out[-1], len(layout.shapes))
    return out


def relate_shape(spec: Spec, props: Sequence[Property], layout: Layout, shape: Shape, budget: Budget,
                 branch_free: bool = True, left: LeftOut | None = None) -> ShapeRelation:
    """The relation of one shape, made with its own solver: it depends on no other shape.
    ``left``: the history fields left out (``history.py``): they hold ``WITHHELD`` in the
    template, so that a function reading one stops the run, and their constant in each successor;
    the invariants and the constraint are read under the parameters as given, ``left.p``."""
    started = time.process_time()
    p = spec.p
    asked_p = p if left is None else left.p
    withheld = () if left is None else left.fields
    tmpl, facts_list = layout.template(shape, "x")
    constants = {f: getattr(tmpl, f) for f in withheld}
    if withheld:
        tmpl = withhold(tmpl, withheld)
    facts = fast_and(facts_list)
    solver = z3.Solver()
    solver.add(facts)
    before = budget.paths
    if solver.check() != z3.sat:  # a shape with no state (contradictory facts): no formula at all
        false = z3.BoolVal(False)
        return ShapeRelation(shape, false, tuple(false for _ in props), false, false, false, false, (), 0, 0.0)
    raised: list[z3.BoolRef] = []
    cons = type(spec).constraint
    # The sets they build stay symbolic (formula_sets.py): hashing a symbolic epoch ran the whole
    # formula once per value of it.
    read_before = reads()
    formulas = tuple(_predicate(asked_p, with_symbolic_sets(pr.fn), tmpl, solver, budget, {}, raised) for pr in props)
    expand = (_predicate(asked_p, with_symbolic_sets(cons), tmpl, solver, budget, {}, raised) if cons is not None
              else z3.BoolVal(True))
    if reads() != read_before:  # a read the spec's own ``except`` took: asked with the field after all
        raise HistoryRead("an invariant or the constraint reads a history field that bmc left out")
    found: list[tuple[str, z3.BoolRef, Any]] = []
    raised_act: list[z3.BoolRef] = []
    for act in type(spec).actions():
        try:
            read_before = reads()
            _explore(p, act, tmpl, solver, budget, {}, found, raised_act, branch_free)
            if reads() != read_before:  # the action's own ``except`` took the HistoryRead
                raise HistoryRead(act.name)
        except HistoryRead:
            raise SymbolicUnsupported(
                f"{act.name} reads the history field(s) {', '.join(withheld)}, which {type(spec).__name__}.history "
                "declares no action reads: the declaration does not hold") from None
        except SymbolicUnsupported as exc:
            raise SymbolicUnsupported(f"{act.name}: {exc}") from None
    pre_choice = dict(shape.choices)
    moves = []
    # Paths that leave the domain the same way (the same term) are one disjunct: feasible.py cuts
    # the escapes to their satisfiable disjuncts in rounds, and tv1's 790 per shape (most of them
    # satisfiable) ran its 128 rounds for nothing, about 3 s CPU a shape.
    escapes: dict[int, tuple[z3.BoolRef, list[z3.BoolRef]]] = {}
    targets: set[int] = set()
    for name, pc, post in found:
        if withheld:
            post = restore(post, withheld, constants)
        m = layout.match(post)
        inside = fast_simplify(m.inside)
        if not z3.is_true(inside):
            escapes.setdefault(inside.get_id(), (inside, []))[1].append(pc)
            if z3.is_false(inside):
                continue
        target = layout.shape_with(m.choices)
        # A structure no shape has is outside the domain (match says False); should one ever pass,
        # every shape counts as a target, so that pruning stays an over-approximation.
        targets.update([target.index] if target is not None else range(len(layout.shapes)))
        assigns = [(key, term) for key, term in m.terms.items() if not term.eq(layout.variables[key])]
        assigns.extend(("#" + site, z3.IntVal(k)) for site, k in m.choices.items() if pre_choice.get(site) != k)
        moves.append(Move(shape.index, name, pc, tuple(sorted(assigns, key=lambda a: a[0]))))
    return ShapeRelation(shape, facts, formulas, expand, fast_or(raised), fast_or(raised_act),
                         fast_or([fast_and([fast_or(pcs), z3.Not(inside)]) for inside, pcs in escapes.values()]),
                         _merged(moves), budget.paths - before,
                         round(time.process_time() - started, 2), tuple(sorted(targets)))


def _merged(moves: list[Move]) -> tuple[Move, ...]:
    """Moves that assign the same terms to the same variables, as one move whose condition is the
    disjunction of theirs (first-seen order): many paths differ only in a branch that left the
    successor the same, and each move costs the unrolling a selector per depth (the controller's
    1,902 paths at brokers=2 are 408 distinct moves)."""
    groups: dict[tuple[Any, ...], list[Move]] = {}
    for m in moves:
        groups.setdefault(tuple((k, t.get_id()) for k, t in m.assigns), []).append(m)
    return tuple(Move(ms[0].shape, "/".join(dict.fromkeys(m.action for m in ms)), fast_or([m.pc for m in ms]),
                      ms[0].assigns) for ms in groups.values())


def _explore(p: Any, act: Any, tmpl: Any, solver: z3.Solver, budget: Budget, fixed: dict[z3.ExprRef, Any],
             found: list[tuple[str, z3.BoolRef, Any]], raised: list[z3.BoolRef], branch_free: bool = True) -> None:
    """Every path of ``act`` on ``tmpl`` with the variables of ``fixed`` made those concrete values.

    Code that needs a concrete value (a hash: a set of pairs holding an offset) is refused on a
    symbolic one; the action then runs again once per value the domain gives the term it needed
    (its variables fixed, each valuation a conjunct of its paths, so the moves stay exact), up to
    ``_MAX_VALUATIONS`` per refusal; beyond that, or when the refusal names no term, it stands."""
    at = fast_and([v == _term(x) for v, x in fixed.items()])
    state = _fix(tmpl, fixed)
    solver.push()
    try:
        solver.add(at)
        ex = Explorer(solver, None, budget, formatting_allowed=True)
        ex.model = ex.model_of(z3.BoolVal(True))
        if ex.model is None:
            return
        ex.rebase()
        mark = (len(found), len(raised))

        fn = predicated(act.fn) if branch_free else act.fn

        def body() -> None:
            try:
                for item in successors(fn(p, state)):
                    if ex.fresh():
                        _label, post = item
                        extra = [item.cond] if isinstance(item, Guarded) else []
                        found.append((act.name, fast_and([at, ex.path_condition()] + extra), post))
            except KafkamcError:
                raise
            except Exception as exc:
                raise_pending_stop(exc)
                # A domain state raises here; whether a reachable one does is asked of the unrolling.
                if ex.fatal is not None:
                    raise ex.fatal from None
                raised.append(fast_and([at, ex.path_condition()]))

        try:
            with guarded():
                for _ in ex.paths(body):
                    pass
            # Where code under a guard raised (the path went on without the guard's states).
            raised.extend(fast_and([at, r]) for r in ex.raised)
            return
        except SymbolicUnsupported as exc:
            free = _free(exc, fixed)
            if not free:
                raise
            del found[mark[0]:], raised[mark[1]:]
            values = _valuations(solver, free, _MAX_VALUATIONS)
            if values is None:
                raise
    finally:
        solver.pop()
    for valuation in values:
        _explore(p, act, tmpl, solver, budget, {**fixed, **valuation}, found, raised, branch_free)


def _predicate(p: Any, fn: Any, tmpl: Any, solver: z3.Solver, budget: Budget, fixed: dict[z3.ExprRef, Any],
               raised: list[z3.BoolRef]) -> z3.BoolRef:
    """The formula of ``fn(p, tmpl)`` (an invariant, the constraint) with the variables of
    ``fixed`` made those values; where it needs a concrete value (``{c.log_epoch}``), the
    disjunction over the values the domain gives the term (each the formula of that value), as for
    an action (``_explore``)."""
    at = fast_and([v == _term(x) for v, x in fixed.items()])
    state = _fix(tmpl, fixed)
    solver.push()
    try:
        solver.add(at)
        model = solver.model() if solver.check() == z3.sat else None
        if model is None:
            return z3.BoolVal(False)
        mark = len(raised)
        ex = Explorer(solver, model, budget, formatting_allowed=False)
        try:
            with guarded():
                made = ex.formula(catching(fn, raised), p, state)
            raised[mark:] = [fast_and([at, r]) for r in raised[mark:]]
            return fast_and([at, made])
        except SymbolicUnsupported as exc:
            del raised[mark:]
            free = _free(exc, fixed)
            values = _valuations(solver, free, _MAX_VALUATIONS) if free else None
            if values is None:
                raise
    finally:
        solver.pop()
    return fast_or([_predicate(p, fn, tmpl, solver, budget, {**fixed, **v}, raised) for v in values])


def _free(exc: SymbolicUnsupported, fixed: dict[z3.ExprRef, Any]) -> list[z3.ExprRef]:
    """The state variables of the term a refusal needed concrete, less those already fixed."""
    term = getattr(exc, "term", None)
    if term is None:
        return []
    return [v for v in _constants(term) if not any(v.eq(f) for f in fixed)]


def _valuations(solver: z3.Solver, free: list[z3.ExprRef], most: int) -> list[dict[z3.ExprRef, Any]] | None:
    """Every valuation of ``free`` under the solver's assertions, or None when there are more than ``most``."""
    out: list[dict[z3.ExprRef, Any]] = []
    solver.push()
    try:
        while True:
            verdict = solver.check()
            if verdict == z3.unknown:
                raise SolverUnknown(solver.reason_unknown())
            if verdict == z3.unsat:
                return out
            model = solver.model()
            values = {v: model.eval(v, model_completion=True) for v in free}
            out.append({v: (z3.is_true(x) if z3.is_bool(x) else x.as_long()) for v, x in values.items()})
            if len(out) > most:
                return None
            solver.add(fast_or([v != x for v, x in values.items()]))
    finally:
        solver.pop()


def _term(value: Any) -> z3.ExprRef:
    return z3.BoolVal(value) if isinstance(value, bool) else z3.IntVal(value)


def _constants(term: z3.ExprRef) -> list[z3.ExprRef]:
    """The uninterpreted constants (state variables) of ``term``, in first-seen order."""
    out: list[z3.ExprRef] = []
    seen: set[int] = set()
    todo = [term]
    while todo:
        t = todo.pop()
        if t.get_id() in seen:
            continue
        seen.add(t.get_id())
        if z3.is_const(t) and t.decl().kind() == z3.Z3_OP_UNINTERPRETED:
            out.append(t)
        else:
            todo.extend(t.children())
    return sorted(out, key=lambda v: v.decl().name())


def _fix(value: Any, fixed: dict[z3.ExprRef, Any]) -> Any:
    """``value`` with each leaf whose variable is in ``fixed`` made that concrete value."""
    if not fixed:
        return value

    def leaf(x: Any) -> Any:
        if isinstance(x, (SymInt, SymBool)):
            for v, c in fixed.items():
                if x.z.eq(v):
                    return x.enum(c) if isinstance(x, SymInt) and x.enum is not None else c
        return x

    return rebuilt(value, leaf)


def catching(fn: Any, raised: list[z3.BoolRef]) -> Any:
    """``fn`` as a predicate whose exceptions on a symbolic state are recorded (the path's
    condition) instead of stopping the exploration; the unrolling (this module's and
    bmc_context's) asks whether a reachable state meets one."""

    def run(*args: Any) -> Any:
        try:
            return fn(*args)
        except KafkamcError:
            raise
        except Exception as exc:
            raise_pending_stop(exc)
            ex = current()
            if ex.fatal is not None:
                raise ex.fatal from None
            raised.append(ex.path_condition())
            return True

    return run
