"""Path enumeration by re-execution: every feasible path of a Python function on symbolic values.

A run of the function meets decisions (a ``__bool__`` fork, an ``__index__`` enumeration, a choice
of shape, an assumption). The first run takes the first feasible option of each; afterwards the
deepest decision with an option left is advanced and the function is run again from the start,
replaying the decisions before it (depth-first, in a fixed option order: True before False, values
ascending). Python generators cannot be copied, so re-execution is how a path is resumed.

The solver keeps one scope per decision of the current path, so a replayed prefix costs no solver
call and a new decision costs at most one: the model of the current path already shows one option
feasible, only the others are checked. Explorations nest (an invariant inside an action's path):
the inner one pushes its scopes above the outer's and pops them when done.
"""

from __future__ import annotations

import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import z3

from kafkamc.checker.symbolic.context import activate, unsupported
from kafkamc.checker.symbolic.values import (
    SymInt, as_bool, ast_id, bool_value, fast_and, fast_not, fast_or, fast_simplify,
)
from kafkamc.checker.watch import raise_pending_stop
from kafkamc.errors import KafkamcError, SymbolicUnsupported

__all__ = ["Explorer", "Budget", "PathLimit", "SolverUnknown", "truth"]


# BaseException: a spec's own ``except Exception`` must not swallow the end of a path.
class PathLimit(BaseException):
    """The path budget of a query is spent: the query is unknown, never proved."""


class SolverUnknown(BaseException):
    """Z3 answered unknown (its time limit): the query is unknown, never proved."""


class _Infeasible(BaseException):
    """An assumption contradicts the path so far: the path is dropped (it describes no state)."""


@dataclass(slots=True)
class Budget:
    """Shared by every exploration of one query: limits and the statistics reported per query."""

    deadline: float  # time.monotonic() after which the query is unknown
    max_paths: int = 200_000
    max_values: int = 64  # most values an ``__index__`` may enumerate
    paths: int = 0
    checks: int = 0
    solver_seconds: float = 0.0

    def remaining_ms(self) -> int:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise SolverUnknown("the query's time limit was reached")
        return max(1, int(min(left * 1000, 2**31 - 1)))  # Z3 takes an unsigned int of ms


@dataclass(slots=True)
class _Decision:
    key: Any  # the term decided on, to catch a function that is not deterministic
    key_id: int  # its Z3 id (-1 for a shape or an assumption): a condition decided again is looked up
    options: list[z3.BoolRef]
    values: list[Any]
    models: list[Any]
    chosen: int = 0


class _Key:
    """The key of a decision that is not a condition's outcome (a split, a dropped side): holds
    its term, so that the term's Z3 id is not reused while the path remembers it."""

    __slots__ = ("kind", "term", "depth")

    def __init__(self, kind: str, term: z3.ExprRef, depth: int) -> None:
        self.kind, self.term, self.depth = kind, term, depth

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, _Key) and self.kind == other.kind and self.depth == other.depth
                and self.term.eq(other.term))

    __hash__ = None  # type: ignore[assignment]


@dataclass(slots=True)
class _Run:
    trail: list[_Decision] = field(default_factory=list)
    forced: int = 0  # decisions replayed from the previous run
    pos: int = 0


def truth(value: Any) -> z3.BoolRef:
    """The Z3 truth of what a predicate returned (a bool, a SymBool, or anything truthy)."""
    b = as_bool(value)
    if b is not None:
        return b
    if isinstance(value, SymInt):
        return value.z != 0
    return z3.BoolVal(bool(value))


class Explorer:
    """Enumerates the paths of functions run on symbolic values, over one Z3 solver."""

    def __init__(self, solver: z3.Solver, model: Any, budget: Budget, *, formatting_allowed: bool,
                 prune: bool = True) -> None:
        # prune=False (a predicate turned into a formula): a fork takes both outcomes without asking
        # the solver; an infeasible path only adds an unsatisfiable disjunct to the formula.
        self.prune = prune
        self.solver = solver
        self.budget = budget
        self.formatting_allowed = formatting_allowed
        self.formatted = False
        self.fatal: SymbolicUnsupported | None = None
        self._base_model = model
        self.model = model
        self._run = _Run()
        self._base_scopes = solver.num_scopes()
        # Guarded regions (``kafkamc/prover/merge.py``): code that runs under a condition without
        # forking on it; a decision inside one is an implication, a successor carries the guards.
        self.guards: list[z3.BoolRef] = []
        self.raised: list[z3.BoolRef] = []  # where code inside a guarded region raised

    # -- solver access ------------------------------------------------------------------------
    def _check(self, *extra: z3.BoolRef) -> Any:
        """A model of the path so far plus ``extra``, or None when there is none."""
        solver = self.solver
        budget = self.budget
        solver.set("timeout", budget.remaining_ms())
        started = time.perf_counter()
        solver.push()
        try:
            for e in extra:
                solver.add(e)
            verdict = solver.check()
            model = solver.model() if verdict == z3.sat else None
        finally:
            solver.pop()
            budget.checks += 1
            budget.solver_seconds += time.perf_counter() - started
        if verdict == z3.unknown:
            raise SolverUnknown(solver.reason_unknown())
        return model

    def model_of(self, cond: z3.BoolRef) -> Any:
        """A model of the current path where ``cond`` holds, or None: the query of a target."""
        return self._check(cond)

    # -- decisions ----------------------------------------------------------------------------
    def _replay(self, key: Any, key_id: int = -1) -> Any:
        run = self._run
        d = run.trail[run.pos]
        same = d.key_id == key_id if key_id >= 0 else (d.key is key or d.key == key)
        if not same:
            raise unsupported("a function that takes a different decision on re-execution (not deterministic)")
        run.pos += 1
        return d.values[d.chosen]

    def _take(self, d: _Decision) -> Any:
        run = self._run
        run.trail.append(d)
        run.pos += 1
        self.solver.push()
        self.solver.add(d.options[0])
        if d.models[0] is not None:
            self.model = d.models[0]
        return d.values[0]

    def _known(self, key_id: int) -> Any:
        """The outcome this path already took for the same condition (None if not decided yet)."""
        run = self._run
        for d in run.trail[:run.pos]:
            if d.key_id == key_id:
                return d.values[d.chosen]
        return None

    def decide(self, cond: z3.BoolRef) -> bool:
        """``bool()`` of a symbolic condition: True first, then False, each if feasible."""
        cond = fast_simplify(cond)
        constant = bool_value(cond)
        if constant is not None:
            return constant
        key_id = ast_id(cond)
        known = self._known(key_id)
        if known is not None:
            return known
        if self.guards:
            return self._decide_guarded(cond)
        run = self._run
        if run.pos < len(run.trail):
            return self._replay(cond, key_id)
        if not self.prune:
            return self._take(_Decision(cond, key_id, [cond, fast_not(cond)], [True, False], [None, None]))
        holds = z3.is_true(self.model.eval(cond, model_completion=True))
        negated = fast_not(cond)
        other = self._check(negated if holds else cond)
        if holds:
            options, values, models = [cond], [True], [self.model]
            if other is not None:
                options.append(negated); values.append(False); models.append(other)
        else:
            options, values, models = [negated], [False], [self.model]
            if other is not None:
                options.insert(0, cond); values.insert(0, True); models.insert(0, other)
        return self._take(_Decision(cond, key_id, options, values, models))

    def _guard(self) -> z3.BoolRef:
        return fast_and(self.guards)

    def _decide_guarded(self, cond: z3.BoolRef) -> bool:
        """``bool()`` inside a guarded region G: the options are G -> cond and G -> not cond, each
        taken when some state of the path meets G and it (a state outside G is unaffected)."""
        g = self._guard()
        yes, no = z3.Implies(g, cond), z3.Implies(g, fast_not(cond))
        key_id = ast_id(yes)
        known = self._known(key_id)
        if known is not None:
            return known
        run = self._run
        if run.pos < len(run.trail):
            return self._replay(yes, key_id)
        # self.model satisfies the path and the guards, so it shows one option feasible.
        holds = z3.is_true(self.model.eval(cond, model_completion=True))
        other = self._check(g, fast_not(cond) if holds else cond)
        if holds:
            options, values, models = [yes], [True], [self.model]
            if other is not None:
                options.append(no); values.append(False); models.append(other)
        else:
            options, values, models = [no], [False], [self.model]
            if other is not None:
                options.insert(0, yes); values.insert(0, True); models.insert(0, other)
        return self._take(_Decision(yes, key_id, options, values, models))

    # -- guarded regions ------------------------------------------------------------------------
    def split(self, cond: z3.BoolRef) -> tuple[Any, Any, Any]:
        """Which sides of ``cond`` some state of the path (and guards) takes: (True, ...) or
        (False, ...) when only one, ("both", model of cond, model of not cond) when both. Recorded
        as a decision of one option, so that re-execution gets the same answer."""
        cond = fast_simplify(cond)
        constant = bool_value(cond)
        if constant is not None:
            return constant, None, None
        if not self.prune:
            return self.decide(cond), None, None
        key = _Key("split", cond, len(self.guards))
        run = self._run
        if run.pos < len(run.trail):
            return self._replay(key)
        g = self._guard()
        holds = z3.is_true(self.model.eval(cond, model_completion=True))
        other = self._check(g, fast_not(cond) if holds else cond)
        if other is None:
            value: tuple[Any, Any, Any] = (holds, None, None)
        else:
            value = ("both", self.model, other) if holds else ("both", other, self.model)
        return self._take(_Decision(key, -1, [z3.BoolVal(True)], [value], [self.model]))

    def enter(self, cond: z3.BoolRef, model: Any) -> None:
        """Run what follows under ``cond`` (a side of a ``split``), ``model`` a state of it."""
        self.guards.append(cond)
        if self.fresh() and model is not None:
            self.model = model

    def leave(self) -> None:
        self.guards.pop()

    def drop(self, other_model: Any) -> None:
        """The code under the innermost guard raised: where, is recorded (``raised``); the path
        goes on without the guard's states (one option, guard false)."""
        side = self.guards.pop()
        if self.fresh():
            self.raised.append(fast_and(self.path_condition_of(self.guards + [side])))
        excluded = z3.Implies(self._guard(), fast_not(side))
        key = _Key("drop", excluded, 0)
        run = self._run
        if run.pos < len(run.trail):
            self._replay(key)
            return
        model = other_model
        if model is None or not z3.is_true(model.eval(excluded, model_completion=True)):
            model = self._check(excluded)
            if model is None:
                raise _Infeasible()  # every state of the path raised there: recorded, nothing left
        self._take(_Decision(key, -1, [excluded], [None], [model]))

    def region(self, sides: list[tuple[z3.BoolRef, Callable[[], Any]]]) -> list[tuple[z3.BoolRef, Any]]:
        """The items that generator functions yield, each under its condition, every path of
        each explored on its own (relative to this path and its guards): code whose only effect is
        what it yields forks there without multiplying the paths of what follows. Recorded as a
        decision of one option, so that re-execution gets the same items without exploring again."""
        key = _Key("region", fast_and([c for c, _fn in sides]), len(self.guards))
        run = self._run
        if run.pos < len(run.trail):
            return self._replay(key)
        out: list[tuple[z3.BoolRef, Any]] = []
        for cond, fn in sides:
            g = fast_and(self.guards + [cond])
            model = self.model if z3.is_true(self.model.eval(g, model_completion=True)) else self._check(g)
            if model is None:
                continue
            self.solver.push()
            self.solver.add(g)
            try:
                inner = Explorer(self.solver, model, self.budget, formatting_allowed=self.formatting_allowed)
                failed: list[z3.BoolRef] = []

                def body(fn: Callable[[], Any] = fn, inner: Explorer = inner, failed: list = failed) -> list[Any]:
                    # Each item under the path condition (and guards) where it was yielded, once.
                    items: list[Any] = []
                    try:
                        for item in fn():
                            if inner.fresh():
                                items.append((inner.path_condition(), item))
                    except KafkamcError:
                        raise
                    except Exception as exc:
                        raise_pending_stop(exc)
                        if inner.fatal is not None:
                            raise inner.fatal from None
                        failed.append(inner.path_condition())
                    return items

                for _pc, items in inner.paths(body):
                    out.extend((fast_and([g, pc]), item) for pc, item in items)
                if self.fresh():
                    self.raised.extend(fast_and([g, r]) for r in inner.raised + failed)
            finally:
                self.solver.pop()
        self._take(_Decision(key, -1, [z3.BoolVal(True)], [out], [self.model]))
        return out

    def path_condition_of(self, guards: list[z3.BoolRef]) -> list[z3.BoolRef]:
        return [d.options[d.chosen] for d in self._run.trail[:self._run.pos]] + guards

    def choose_value(self, term: z3.ArithRef) -> int:
        """``__index__`` of a symbolic int: every feasible value, ascending, up to the budget."""
        term = z3.simplify(term)
        if z3.is_int_value(term):
            return term.as_long()
        run = self._run
        term_id = ast_id(term)
        if run.pos < len(run.trail):
            return self._replay(term, term_id)
        found: dict[int, Any] = {}
        g = self._guard() if self.guards else None
        if self.prune:
            found[self.model.eval(term, model_completion=True).as_long()] = self.model
        else:  # the path may be infeasible and self.model not one of it
            m = self._check()
            if m is None:
                raise _Infeasible()
            found[m.eval(term, model_completion=True).as_long()] = m
        while True:
            m = self._check(*(term != v for v in found), *([g] if g is not None else []))
            if m is None:
                break
            found[m.eval(term, model_completion=True).as_long()] = m
            if len(found) > self.budget.max_values:
                raise unsupported(f"a symbolic int used as an index or size with more than "
                                  f"{self.budget.max_values} possible values")
        values = sorted(found)
        options = [term == v for v in values] if g is None else [z3.Implies(g, term == v) for v in values]
        return self._take(_Decision(term, term_id, options, values, [found[v] for v in values]))

    def values_of(self, term: z3.ArithRef, most: int) -> list[int] | None:
        """Every value ``term`` takes on some state of the current path (guards aside: a superset
        under them), ascending, without deciding anything; None when there are more than ``most``.
        An infeasible path (``prune=False``) has none. Recorded as a decision of one option: on
        re-execution the solver holds the rest of the previous path too, which may allow fewer."""
        term = z3.simplify(term)
        if z3.is_int_value(term):
            return [term.as_long()]
        key = _Key("values", term, most)
        run = self._run
        if run.pos < len(run.trail):
            return self._replay(key)
        found: list[int] = []
        while True:
            m = self._check(*(term != v for v in found))
            if m is None:
                break
            found.append(m.eval(term, model_completion=True).as_long())
            if len(found) > most:
                found = None
                break
        values = None if found is None else sorted(found)
        return self._take(_Decision(key, -1, [z3.BoolVal(True)], [values], [None]))

    def choose_index(self, n: int, what: str) -> int:
        """A concrete choice among ``n`` alternatives (a shape: a bag's length, a subset)."""
        run = self._run
        if run.pos < len(run.trail):
            return self._replay(what)
        if n <= 0:
            raise _Infeasible()
        true = z3.BoolVal(True)
        return self._take(_Decision(what, -1, [true] * n, list(range(n)), [self.model] * n))

    def assume(self, cond_of: Callable[[], z3.BoolRef], what: str) -> None:
        """Restrict the path to states where ``cond_of()`` holds; it is evaluated only on a new path
        (on a replayed prefix the solver already holds it)."""
        run = self._run
        if run.pos < len(run.trail):
            self._replay(what)
            return
        cond = cond_of()
        if not z3.is_true(self.model.eval(cond, model_completion=True)):
            model = self._check(cond)
            if model is None:
                raise _Infeasible()
        else:
            model = self.model
        self._take(_Decision(what, -1, [cond], [None], [model]))

    def rebase(self) -> None:
        """Make the solver's current scopes and ``self.model`` the base of the next ``paths``."""
        self._base_model = self.model
        self._base_scopes = self.solver.num_scopes()

    def fresh(self) -> bool:
        """Whether the run is past the replayed prefix: what happens now was not seen before."""
        return self._run.pos >= self._run.forced

    def path_condition(self) -> z3.BoolRef:
        return fast_and([d.options[d.chosen] for d in self._run.trail] + self.guards)

    # -- the depth-first enumeration -------------------------------------------------------------
    def paths(self, body: Callable[[], Any]) -> Iterator[tuple[z3.BoolRef, Any]]:
        """Run ``body`` once per feasible path; yields (path condition, returned value)."""
        solver = self.solver
        base = self._base_scopes
        budget = self.budget
        self._run = run = _Run()
        try:
            while True:
                run.pos = 0
                self.guards = []
                with activate(self):
                    try:
                        value = body()
                        done = True
                    except _Infeasible:
                        done = False
                    except (SolverUnknown, PathLimit, KafkamcError):
                        raise
                    except Exception as exc:
                        raise_pending_stop(exc)
                        if self.fatal is not None:
                            raise self.fatal from None
                        if self.prune or self._check() is not None:
                            raise _spec_error(exc) from exc
                        done = False  # raised on an infeasible path, which describes no state
                if self.fatal is not None:
                    raise self.fatal
                budget.paths += 1
                if budget.paths > budget.max_paths:
                    raise PathLimit(f"more than {budget.max_paths} paths")
                if done:
                    yield self.path_condition(), value
                # Backtrack to the deepest decision with an option left.
                trail = run.trail
                j = len(trail) - 1
                while j >= 0 and trail[j].chosen + 1 >= len(trail[j].options):
                    j -= 1
                if j < 0:
                    return
                solver.pop(solver.num_scopes() - (base + j))
                d = trail[j]
                d.chosen += 1
                del trail[j + 1:]
                solver.push()
                solver.add(d.options[d.chosen])
                if d.models[d.chosen] is not None:
                    self.model = d.models[d.chosen]
                run.forced = j + 1
        finally:
            if solver.num_scopes() > base:
                solver.pop(solver.num_scopes() - base)
            self.model = self._base_model

    def formula(self, fn: Callable[..., Any], *args: Any) -> z3.BoolRef:
        """The Z3 formula, over the current path's terms, of ``fn(*args)`` being true: the
        disjunction over its paths (explored nested, relative to the current path)."""
        inner = Explorer(self.solver, self.model, self.budget, formatting_allowed=False, prune=False)
        parts = [fast_and([pc, truth(value)]) for pc, value in inner.paths(lambda: fn(*args))]
        return fast_or(parts)


def _spec_error(exc: BaseException) -> SymbolicUnsupported:
    """A spec function raised on a symbolic state: name where (exit 3), never drop the path."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if "symbolic" not in f.filename.split("/")[-2:-1]]
    where = f"{frames[-1].name} (line {frames[-1].lineno})" if frames else "a spec function"
    return SymbolicUnsupported(
        f"cannot execute symbolically: {where} raised {type(exc).__name__}: {exc} on a symbolic state "
        "(a type error here usually means a symbolic value reached code that needs a concrete one)")
