"""``bmc --encoding context``: the actions run per depth in the context of the unrolling.

The encoding of ``kafkamc bmc`` before the classical one (``bmc.py``), kept because it needs no
``domain(p)`` and, on some specs (``transactions``), answers where making the classical relation
over the whole domain costs more than exploring the reachable states' paths. A state's *shape* is
its structure with its int leaves abstracted (tuple lengths, record types, bools, enum members,
sets, strings and other constants kept). The unrolling, on one incremental solver, holds a copy of
each shape's ints per depth and which shape the depth's state has.

Step k -> k+1 is made by running each action once per shape of depth k on depth k's variables
*in the context of the unrolling*: a branch is followed only if some state reachable in exactly k
steps takes it, an index enumerates only the values such states give it, and an int with one value
in all of them is that concrete int. So the transitions are exactly those of the reachable states,
with no bound on a state's ints assumed. A successor holding a symbolic bool is split by its
values; a shape whose code needs concrete ints (a set of ids) runs once per reachable valuation of
them, if there are few. Each branch is a query on the whole unrolling, so the cost grows with the
depth (docs/bmc.md). Counterexamples are found again concretely and replayed (``witness.py``).
"""

from __future__ import annotations

import dataclasses
import time
from enum import IntEnum
from typing import Any, Iterator, Sequence

import z3

from kafkamc.checker.symbolic import Budget, Explorer, PathLimit, SolverUnknown, SymBool, SymInt, concretize, guarded
from kafkamc.checker.symbolic.interrupt import interruptible_check
from kafkamc.checker.symbolic.state import rebuilt
from kafkamc.checker.symbolic.values import as_arith, fast_and, fast_not, fast_or
from kafkamc.checker.watch import STOPS, is_stop, raise_pending_stop, stop_reason
from kafkamc.errors import KafkamcError, SoundnessError, SymbolicUnsupported
from kafkamc.invariants.api import Property
from kafkamc.prover import witness
from kafkamc.prover.relation import catching
from kafkamc.result import CheckResult
from kafkamc.spec.api import Spec

__all__ = ["bmc_in_context"]

# Most valuations of a shape's ints run one by one when the spec's code needs concrete ints.
_MAX_VALUATIONS = 256


# -- shapes ------------------------------------------------------------------------------------------


def _skeleton(v: Any) -> Any:
    """The structure of ``v`` with its int leaves abstracted (hashable). Bools and IntEnum members
    are kept: they steer the spec's branches, and a symbolic one would fork every path that reads
    it, so a successor holding a symbolic bool is split by its values first (``_split``)."""
    if isinstance(v, (bool, IntEnum)):
        return ("K", type(v), v)
    if isinstance(v, SymBool) or (isinstance(v, SymInt) and v.enum is not None):
        raise SoundnessError("bmc: a symbolic bool or enum left in a successor's shape")
    if isinstance(v, (SymInt, int)):
        return ("I",)
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


def _template(skel: Any, name: str, leaves: list[z3.ExprRef], fixed: dict[str, int] | None = None) -> Any:
    """A state of shape ``skel`` with a fresh variable per int leaf (appended to ``leaves``); a
    leaf in ``fixed`` (by name) is that concrete int instead."""
    kind = skel[0]
    if kind == "I":
        i = z3.Int(name)
        leaves.append(i)
        if fixed is not None and name in fixed:
            return fixed[name]
        return SymInt(i)
    if kind == "T":
        return tuple(_template(s, f"{name}[{k}]", leaves, fixed) for k, s in enumerate(skel[1]))
    if kind == "R":
        return skel[1](**{f: _template(s, f"{name}.{f}", leaves, fixed) for f, s in skel[2]})
    if kind == "K":
        return skel[2]
    return skel[1]


def _leaves(v: Any) -> Iterator[Any]:
    """The leaves of ``v`` (what is not a tuple or a record), in ``_template``'s order."""
    if isinstance(v, tuple):
        for x in v:
            yield from _leaves(x)
    elif dataclasses.is_dataclass(v) and not isinstance(v, type):
        for f in dataclasses.fields(v):
            if f.init:
                yield from _leaves(getattr(v, f.name))
    else:
        yield v


def _leaf_terms(v: Any) -> list[z3.ExprRef]:
    """The int leaves of ``v`` as Z3 terms, in ``_template``'s order."""
    return [as_arith(x) for x in _leaves(v) if isinstance(x, (SymInt, int)) and not isinstance(x, (bool, IntEnum))]


def _fix_bools(v: Any, values: dict[int, bool]) -> Any:
    """``v`` with each symbolic bool replaced by ``values[id(it)]``."""
    return rebuilt(v, lambda x: values[id(x)] if isinstance(x, SymBool) else x)


def _split(solver: z3.Solver, pc: z3.BoolRef, post: Any) -> list[tuple[z3.BoolRef, Any]]:
    """The successor ``post`` (reached under ``pc``) once per feasible value of its symbolic bools,
    each with the condition of that value: every result has a concrete shape."""
    bools = [x for x in _leaves(post) if isinstance(x, SymBool)]
    if not bools:
        return [(pc, post)]
    out = []
    solver.push()
    try:
        solver.add(pc)
        while True:
            verdict = solver.check()
            if verdict == z3.unknown:
                raise SolverUnknown(solver.reason_unknown())
            if verdict == z3.unsat:
                break
            model = solver.model()
            values = [z3.is_true(model.eval(b.z, model_completion=True)) for b in bools]
            chosen = [b.z if v else z3.Not(b.z) for b, v in zip(bools, values)]
            out.append((fast_and([pc] + chosen), _fix_bools(post, {id(b): v for b, v in zip(bools, values)})))
            solver.add(z3.Not(z3.And(chosen)))
    finally:
        solver.pop()
    return out


class _Witnessed(Explorer):
    """The explorer, with the states the solver already produced in this context kept as
    witnesses: a branch that one of them takes is feasible without asking the solver again (each
    question is a bounded model checking query on the whole unrolling). A witness is a model of
    every assertion below the path, so it proves feasibility exactly; when none fits, the solver
    is asked as usual."""

    _POOL = 64  # witnesses kept per context (the latest)

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.pool: list[Any] = []

    def _check(self, *extra: z3.BoolRef) -> Any:
        cond = fast_and([self.path_condition(), *extra])
        for model in reversed(self.pool):
            if z3.is_true(model.eval(cond, model_completion=True)):
                return model
        model = super()._check(*extra)
        if model is not None:
            self.pool.append(model)
            del self.pool[:-self._POOL]
        return model


class _Unroller:
    """The unrolling on one incremental solver: a copy of each shape's variables per depth, the
    shape of the state at each depth (``sel[k]``), and each depth's transition relation, made by
    running the actions on depth k's variables in the context of the unrolling itself."""

    def __init__(self, spec: Spec, props: Sequence[Property], budget: Budget) -> None:
        self.spec, self.props, self.budget = spec, tuple(props), budget
        self.solver = z3.Solver()
        self.ex = _Witnessed(self.solver, None, budget, formatting_allowed=True)
        self.skels: list[Any] = []
        self.by_skel: dict[Any, int] = {}
        # layers[k][shape] = (template, leaves): the state at depth k when sel[k] == shape
        self.layers: list[dict[int, tuple[Any, list[z3.ExprRef]]]] = []
        self.sel: list[z3.ArithRef] = []
        self.action_paths: dict[str, int] = {}  # paths explored per action, for the statistics
        self.transitions = 0  # (depth, shape, path) successors in the unrolling

    def shape(self, skel: Any) -> int:
        known = self.by_skel.get(skel)
        if known is None:
            known = len(self.skels)
            self.skels.append(skel)
            self.by_skel[skel] = known
        return known

    def add_layer(self, shapes: Sequence[int]) -> None:
        k = len(self.layers)
        layer = {}
        for shape in sorted(shapes):
            leaves: list[z3.ExprRef] = []
            layer[shape] = (_template(self.skels[shape], f"s{k}.{shape}", leaves), leaves)
        self.layers.append(layer)
        self.sel.append(z3.Int(f"shape{k}"))

    def solve(self, formula: z3.BoolRef) -> Any:
        """A model of the unrolling so far and ``formula``, or None."""
        solver = self.solver
        solver.set("timeout", self.budget.remaining_ms())
        solver.push()
        try:
            solver.add(formula)
            verdict = interruptible_check(solver)  # a stop ends even a long question (interrupt.py)
            if verdict == z3.unknown:
                raise SolverUnknown(solver.reason_unknown())
            return solver.model() if verdict == z3.sat else None
        finally:
            solver.pop()

    def within(self, k: int, shape: int, extra: z3.BoolRef | None = None) -> bool:
        """Push ``sel[k] == shape`` (and ``extra``) and make it the explorer's base; False (and
        nothing pushed) when no state reachable in k steps has that shape."""
        self.solver.push()
        self.solver.add(self.sel[k] == shape)
        if extra is not None:
            self.solver.add(extra)
        self.ex.pool = []
        self.ex.fatal = None  # a refusal in an earlier context is not this one's
        self.ex.model = self.ex.model_of(z3.BoolVal(True))
        if self.ex.model is None:
            self.solver.pop()
            return False
        self.ex.rebase()
        return True

    def specialize(self, k: int) -> None:
        """Depth k's templates with every int that has one value in all states of that shape
        reachable in k steps made that concrete int, so the spec's code does not fork on it.
        Found by elimination: a model proposes values, and a model differing from them in some
        leaves rules those leaves out, until no reachable state differs in the rest (unsat)."""
        layer = self.layers[k]
        for shape, (_tmpl, leaves) in list(layer.items()):
            model = self.solve(self.sel[k] == shape)
            if model is None or not leaves:
                continue
            values = {i: model.eval(leaf, model_completion=True) for i, leaf in enumerate(leaves)}
            while values:
                other = self.solve(z3.And(self.sel[k] == shape,
                                          fast_or([leaves[i] != v for i, v in values.items()])))
                if other is None:
                    break
                values = {i: v for i, v in values.items()
                          if z3.is_true(other.eval(leaves[i] == v, model_completion=True))}
            fixed = {str(leaves[i]): v.as_long() for i, v in values.items()}
            again: list[z3.ExprRef] = []
            layer[shape] = (_template(self.skels[shape], f"s{k}.{shape}", again, fixed), leaves)

    def formulas(self, k: int) -> dict[int, tuple[list[z3.BoolRef], z3.BoolRef, z3.BoolRef]]:
        """Per shape reachable at depth k: each property's formula, the constraint's, and where
        one of them raised, over depth k's variables."""
        out = {}
        p = self.spec.p
        cons = type(self.spec).constraint
        for shape, (tmpl, _leaves) in self.layers[k].items():
            if not self.within(k, shape):
                continue
            raised: list[z3.BoolRef] = []
            try:
                with guarded():
                    props = [self.ex.formula(catching(pr.fn, raised), p, tmpl) for pr in self.props]
                    expand = (self.ex.formula(catching(cons, raised), p, tmpl) if cons is not None
                              else z3.BoolVal(True))
            finally:
                self.solver.pop()
            out[shape] = (props, expand, fast_or(raised))
        return out

    def successors(self, k: int, shape: int, expand: z3.BoolRef) -> tuple[list[tuple[z3.BoolRef, Any]], list[z3.BoolRef]]:
        """Every action's paths on depth k's state of ``shape``, pruned by the unrolling: the
        paths of the states reachable in k steps that the constraint expands; and where one raised.

        Code that needs a concrete int (a set of ids, a dict key) is refused on symbolic ones; the
        shape is then run once per valuation of its ints among those states, if there are at most
        ``_MAX_VALUATIONS`` (each is exact: the valuation is a conjunct of its paths); otherwise,
        or when a valuation is refused too (a global read), the refusal stands."""
        tmpl, leaves = self.layers[k][shape]
        try:
            return self._explore(k, shape, expand, tmpl)
        except SymbolicUnsupported as refused:
            found: list[tuple[z3.BoolRef, Any]] = []
            raised: list[z3.BoolRef] = []
            for values in self._valuations(k, shape, expand, leaves, refused):
                at = fast_and([leaf == v for leaf, v in zip(leaves, values)])
                fixed = {str(leaf): v for leaf, v in zip(leaves, values)}
                concrete = _template(self.skels[shape], f"s{k}.{shape}", [], fixed)
                more, why = self._explore(k, shape, fast_and([expand, at]), concrete)
                found.extend((fast_and([at, pc]), post) for pc, post in more)
                raised.extend(fast_and([at, c]) for c in why)
            return found, raised

    def _valuations(self, k: int, shape: int, expand: z3.BoolRef, leaves: list[z3.ExprRef],
                    refused: SymbolicUnsupported) -> list[list[int]]:
        """Every valuation of ``leaves`` in the states of ``shape`` reachable in k steps that the
        constraint expands (at most ``_MAX_VALUATIONS``, else ``refused`` is raised)."""
        out: list[list[int]] = []
        block: list[z3.BoolRef] = []
        while True:
            model = self.solve(fast_and([self.sel[k] == shape, expand] + block))
            if model is None:
                return out
            values = [model.eval(leaf, model_completion=True).as_long() for leaf in leaves]
            out.append(values)
            if len(out) > _MAX_VALUATIONS or not leaves:
                if leaves:
                    raise refused
                return out
            block.append(fast_or([leaf != v for leaf, v in zip(leaves, values)]))

    def _explore(self, k: int, shape: int, expand: z3.BoolRef, tmpl: Any) -> tuple[list[tuple[z3.BoolRef, Any]], list[z3.BoolRef]]:
        ex, p = self.ex, self.spec.p
        found: list[tuple[z3.BoolRef, Any]] = []
        raised: list[z3.BoolRef] = []
        if not self.within(k, shape, expand):
            return found, raised
        try:
            for act in type(self.spec).actions():
                def body(act: Any = act) -> None:
                    try:
                        for _label, post in act.fn(p, tmpl):
                            if ex.fresh():
                                found.append((ex.path_condition(), post))
                    except KafkamcError:
                        raise
                    except Exception as exc:
                        raise_pending_stop(exc)
                        # The path is feasible in the unrolling: a reachable state raises here,
                        # which is found again concretely and reported as check reports it.
                        if ex.fatal is not None:
                            raise ex.fatal from None
                        raised.append(ex.path_condition())
                before = self.budget.paths
                try:
                    with guarded():
                        for _ in ex.paths(body):
                            pass
                except SymbolicUnsupported as exc:
                    raise SymbolicUnsupported(f"{act.name}: {exc}") from None
                finally:
                    self.action_paths[act.name] = self.action_paths.get(act.name, 0) + self.budget.paths - before
            split = [pair for pc, post in found for pair in _split(self.solver, pc, post)]
        finally:
            self.solver.pop()
        return split, raised

    def step(self, k: int, formulas: dict[int, tuple[list[z3.BoolRef], z3.BoolRef, z3.BoolRef]]) -> Any:
        """Add the transition k -> k+1 and the layer k+1; a model if an action raised on a
        reachable state (None otherwise)."""
        moves_of: dict[int, list[tuple[z3.BoolRef, int, list[z3.ExprRef]]]] = {}
        raised_at: list[z3.BoolRef] = []
        targets: set[int] = set()
        for shape, (_props, expand, _raised) in formulas.items():
            succs, raised = self.successors(k, shape, expand)
            if raised:
                raised_at.append(z3.And(self.sel[k] == shape, expand, fast_or(raised)))
            moves = []
            for pc, post in succs:
                target = self.shape(_skeleton(post))
                targets.add(target)
                moves.append((pc, target, _leaf_terms(post)))
            moves_of[shape] = moves
        if raised_at:
            model = self.solve(fast_or(raised_at))
            if model is not None:
                return model
        self.add_layer(sorted(targets))
        nxt = self.layers[k + 1]
        steps = []
        for shape, moves in moves_of.items():
            expand = formulas[shape][1]
            options = [fast_and([pc, self.sel[k + 1] == t] + [v == term for v, term in zip(nxt[t][1], terms)])
                       for pc, t, terms in moves]
            self.transitions += len(options)
            steps.append(fast_and([self.sel[k] == shape, expand, fast_or(options)]))
        self.solver.add(fast_or(steps))
        return None

    def states(self, model: Any, k: int) -> list[Any]:
        out = []
        for j in range(k + 1):
            shape = model.eval(self.sel[j], model_completion=True).as_long()
            out.append(concretize(self.layers[j][shape][0], model))
        return out


def bmc_in_context(spec: Spec, props: tuple[Property, ...], depth: int, *, timeout: float,
                   max_paths: int, progress: Any = None) -> CheckResult:
    """``bmc`` with this encoding (the arguments already checked by ``bmc.bmc``)."""
    started = time.perf_counter()
    z3.set_param("smt.random_seed", 0)
    z3.set_param("sat.random_seed", 0)
    budget = Budget(deadline=time.monotonic() + timeout, max_paths=max_paths)
    un = _Unroller(spec, props, budget)
    reached = -1
    try:
        inits = spec.initial()
        shapes = [un.shape(_skeleton(state)) for state in inits]
        un.add_layer(sorted(set(shapes)))
        options = []
        for state, shape in zip(inits, shapes):
            terms = _leaf_terms(state)
            options.append(fast_and([un.sel[0] == shape] + [v == t for v, t in zip(un.layers[0][shape][1], terms)]))
        un.solver.add(fast_or(options))
        for k in range(depth + 1):
            un.specialize(k)
            formulas = un.formulas(k)
            raised = [z3.And(un.sel[k] == shape, r) for shape, (_p, _e, r) in formulas.items() if not z3.is_false(r)]
            if raised:
                model = un.solve(fast_or(raised))
                if model is not None:
                    witness.raised(spec, props, un.states(model, k), actions=False)
            bad = fast_or([z3.And(un.sel[k] == shape, fast_not(fast_and(ps)))
                           for shape, (ps, _e, _r) in formulas.items()])
            model = un.solve(bad)
            if model is not None:
                return witness.confirmed(spec, props, un.states(model, k), started, depth, _stats(un, budget))
            reached = k
            if progress is not None:
                progress(k, len(formulas), un)
            if k == depth:
                break
            model = un.step(k, formulas)
            if model is not None:
                witness.raised(spec, props, un.states(model, k), actions=True)
    except (SolverUnknown, PathLimit) as exc:
        why = "the time limit was reached" if time.monotonic() >= budget.deadline else f"solver: {exc}"
        return witness.incomplete(spec, props, started, reached, witness.limit_reason(exc, budget.deadline), why, _stats(un, budget))
    except STOPS as exc:
        if not is_stop(exc):
            raise
        return witness.incomplete(spec, props, started, reached, stop_reason(exc), None, _stats(un, budget))
    return witness.incomplete(spec, props, started, reached, "max-depth", None, _stats(un, budget))


def _stats(un: _Unroller | None, budget: Budget) -> dict[str, Any]:
    return {"checker": "bmc", "encoding": "context", "shapes": len(un.skels) if un is not None else 0,
            "transitions": un.transitions if un is not None else 0, "paths": budget.paths,
            "solver_checks": budget.checks}
