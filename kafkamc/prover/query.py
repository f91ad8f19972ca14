"""One query of ``prove``: does every successor under one action keep one invariant?

Run on a symbolic state of the spec's domain that satisfies every assumed invariant (and the
spec's constraint, as ``check`` expands only such states): the action is executed path by path, and
at each successor the solver looks for values where a target is false. The first such successor
in depth-first order is that pair's counterexample; its model is minimised (smallest sum of the
state's ints) so that the counterexample is small and the same on every run.
"""

from __future__ import annotations

import dataclasses
import dis
import time
from dataclasses import dataclass
from typing import Any, Callable

import z3

from kafkamc.checker.symbolic import (
    PLACEHOLDER, Budget, Explorer, PathLimit, SolverUnknown, SymInt, build, concretize, fixed, guarded, member,
    shapes,
)
from kafkamc.checker.symbolic.context import unsupported
from kafkamc.checker.symbolic.interrupt import interruptible_check
from kafkamc.checker.symbolic.values import fast_not, fast_or
from kafkamc.errors import SymbolicUnsupported, UsageError
from kafkamc.invariants.api import Property
from kafkamc.prover.result import CTI_FOUND, INIT, PROVED, TYPE_OK, UNKNOWN, QueryResult
from kafkamc.prover.skeleton import Skeletons
from kafkamc.spec.api import Params, Spec, format_label

__all__ = ["Job", "RawCti", "run_query", "symbolic_params"]

_MINIMIZE_MS = 10_000


@dataclass(frozen=True, slots=True)
class Job:
    """One action (or INIT) against every target: the action's paths are explored once and each
    successor is checked against each target, so each (action, target) pair is its own query and
    verdict, while the action's exploration is shared by its targets."""

    action: str  # an action name, or INIT
    targets: tuple[str, ...]  # property names and TYPE_OK


@dataclass(frozen=True, slots=True)
class RawCti:
    """What the solver found, made concrete in the worker (Z3 objects do not cross processes)."""

    action: str
    target: str
    pre: Any  # None for an initial state
    post: Any
    lifted_values: dict[str, int]


class _Found(BaseException):
    """Ends a query's exploration at its first counterexample."""


def symbolic_params(spec: Spec, lifted: tuple[str, ...]) -> tuple[Params, list[z3.BoolRef], dict[str, z3.ArithRef]]:
    """The parameters with each lifted one a Z3 int ``>= min``, and those facts."""
    values = spec.p.as_dict()
    facts: list[z3.BoolRef] = []
    terms: dict[str, z3.ArithRef] = {}
    for prm in spec.parameters:
        if prm.name in lifted:
            term = z3.Int(f"p.{prm.name}")
            terms[prm.name] = term
            values[prm.name] = SymInt(term)
            facts.append(term >= (prm.min if prm.min is not None else 0))
    return Params(values), facts, terms


def _uses_label(fn: Callable[..., Any]) -> bool:
    """Whether an action property reads its ``label`` argument (its third parameter)."""
    code = fn.__code__
    if code.co_argcount < 3:
        return False
    name = code.co_varnames[2]
    return any(ins.opname.startswith("LOAD_FAST") and ins.argval == name for ins in dis.get_instructions(code))


def _leaks_placeholder(value: Any) -> bool:
    if isinstance(value, str):
        return PLACEHOLDER in value
    if isinstance(value, (tuple, list, frozenset)):
        return any(_leaks_placeholder(v) for v in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return any(_leaks_placeholder(getattr(value, f.name)) for f in dataclasses.fields(value))
    return False


def _int_vars(value: Any, out: list[z3.ArithRef]) -> None:
    if isinstance(value, SymInt):
        out.append(value.z)
    elif isinstance(value, tuple):
        for v in value:
            _int_vars(v, out)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            _int_vars(getattr(value, f.name), out)


def _minimized(solver: z3.Solver, negated: z3.BoolRef, model: Any, terms: list[z3.ArithRef]) -> Any:
    """The model with the least sum of ``terms`` (a deterministic, small counterexample)."""
    if not terms:
        return model
    opt = z3.Optimize()
    opt.set("timeout", _MINIMIZE_MS)
    opt.add(solver.assertions())
    opt.add(negated)
    opt.minimize(z3.Sum(terms))
    # Up to _MINIMIZE_MS: with --workers 1 in the main process, where a stop must not wait for it.
    return opt.model() if interruptible_check(opt) == z3.sat else model


# The formula of an assumed invariant on the pre-state of one shape is the same for every action:
# computed once per worker process (Z3 terms live in the process's one context) and reused.
# Its path count is added again on reuse, so that statistics do not depend on which worker ran what.
_PRE_FORMULAS: dict[tuple[Any, ...], tuple[z3.BoolRef, int]] = {}


def _pre_formula(ex: Explorer, fn: Callable[..., Any], p: Params, pre: Any, spec: Spec, lifted: tuple[str, ...],
                 shape: tuple[int, ...]) -> z3.BoolRef:
    key = (type(spec), tuple(sorted(spec.p.as_dict().items())), lifted, shape, fn)
    known = _PRE_FORMULAS.get(key)
    if known is not None:
        ex.budget.paths += known[1]
        return known[0]
    before = ex.budget.paths
    formula = ex.formula(fn, p, pre)
    _PRE_FORMULAS[key] = (formula, ex.budget.paths - before)
    return formula


def _explore(ex: Explorer, body: Callable[[], None]) -> None:
    with guarded():
        for _ in ex.paths(body):
            pass


def run_query(spec: Spec, job: Job, assumed: tuple[Property, ...], lifted: tuple[str, ...],
              timeout: float, max_paths: int, *, skeletons: bool = True, counterexamples: bool = True,
              ) -> tuple[tuple[QueryResult, ...], tuple[RawCti, ...]]:
    """The verdicts of ``job``'s targets, and a counterexample per target that has one.
    ``skeletons=False`` computes every target on every successor (no skeleton fast path): the
    same verdicts, slower; tests compare the two. ``counterexamples=False`` gives the verdicts
    only (no counterexample is made or minimised; Houdini needs no more)."""
    started = time.perf_counter()
    z3.set_param("smt.random_seed", 0)
    z3.set_param("sat.random_seed", 0)
    solver = z3.Solver()
    p, pfacts, pterms = symbolic_params(spec, lifted)
    solver.add(pfacts)
    if solver.check() != z3.sat:
        raise UsageError("the lifted parameters admit no value")
    budget = Budget(deadline=time.monotonic() + timeout, max_paths=max_paths)
    ex = Explorer(solver, solver.model(), budget, formatting_allowed=True)
    cls = type(spec)
    if cls.domain is None:
        raise UsageError(f"spec {spec.name} declares no domain(p) hook; prove needs the type of its states")
    dom = cls.domain(p)
    props = {pr.name: pr for pr in assumed}
    targets = [t for t in job.targets if job.action != INIT or t == TYPE_OK or props[t].kind == "invariant"]
    found: dict[str, RawCti | None] = {}  # None: broken, counterexample not asked for
    own = {t: [0, 0, 0.0] for t in targets}  # per target: nested paths, checks, solver seconds
    # Skeleton formulas are computed per query (not kept by the worker process), so that what a
    # query explores, and the paths it counts towards its limit, do not depend on what its worker
    # ran before.
    skel = Skeletons(p, pfacts, dom) if skeletons else None
    # Action properties that read their label are computed on the real step (a label is not
    # part of a skeleton).
    by_skeleton = {t for t in targets if t != TYPE_OK and (props[t].kind == "invariant" or not _uses_label(props[t].fn))}

    def holds_formula(target: str, pre: Any, label: Any, post: Any, action_name: str) -> z3.BoolRef:
        if target == TYPE_OK:
            return member(dom, post)
        prop = props[target]
        if prop.kind == "invariant":
            return ex.formula(prop.fn, p, post)
        shown = format_label(action_name, label)
        if PLACEHOLDER in shown and _uses_label(prop.fn):
            raise unsupported(f"action property {prop.name} reads a label made from symbolic values")
        return ex.formula(prop.fn, p, pre, shown, post)

    def _charge(target: str, before: tuple[int, int, float]) -> None:
        stats = own[target]
        stats[0] += budget.paths - before[0]
        stats[1] += budget.checks - before[1]
        stats[2] += budget.solver_seconds - before[2]

    def record(target: str, neg: z3.BoolRef, pre: Any, post: Any) -> None:
        """Ask whether ``target`` can break (``neg``, its exact negation on the successor) and
        record its counterexample (minimised) if it can."""
        before = (budget.paths, budget.checks, budget.solver_seconds)
        try:
            model = ex.model_of(neg)
            if model is None:
                return
            if not counterexamples:
                found[target] = None
                return
            terms: list[z3.ArithRef] = list(pterms.values())
            _int_vars(pre if pre is not None else post, terms)
            model = _minimized(solver, neg, model, terms)
            found[target] = RawCti(
                job.action, target, None if pre is None else concretize(pre, model), concretize(post, model),
                {n: model.eval(t, model_completion=True).as_long() for n, t in pterms.items()},
            )
        finally:
            _charge(target, before)

    def fast_path(pre: Any, label: Any, post: Any, action_name: str) -> bool:
        """Decide the successor on its skeleton: one solver call asks for a state where it leaves
        the domain or breaks a target; a model that keeps it in the domain names the targets it
        breaks (exactly: inside the domain the skeleton formulas are the targets'), which are
        recorded, and the rest are asked again, until nothing breaks. True when the successor
        is decided; False when it can leave the domain or has no skeleton: then each target is
        asked on the real successor, as without skeletons."""
        sk = skel.of(pre, post)
        if sk is None:
            return False
        while True:
            names = tuple(t for t in targets if t not in found and t != TYPE_OK)
            direct: dict[str, z3.BoolRef] = {}
            over_template: dict[str, z3.BoolRef] = {}
            for target in names:
                before = (budget.paths, budget.checks, budget.solver_seconds)
                try:
                    f = sk.formula(props[target].fn, props[target].kind, budget) if target in by_skeleton else None
                    if f is None:
                        direct[target] = fast_not(holds_formula(target, pre, label, post, action_name))
                    else:
                        over_template[target] = f
                finally:
                    _charge(target, before)
            negation = sk.negation(tuple(props[t].fn for t in over_template),
                                   lambda: [fast_not(f) for f in over_template.values()])
            model = ex.model_of(fast_or([negation] + list(direct.values())))
            if model is None:
                return True
            if not z3.is_true(model.eval(sk.instantiate(sk.in_domain), model_completion=True)):
                return False
            broken = {t: n for t, n in direct.items() if z3.is_true(model.eval(n, model_completion=True))}
            for t, f in over_template.items():
                neg = sk.instantiate(fast_not(f))
                if z3.is_true(model.eval(neg, model_completion=True)):
                    broken[t] = neg
            if not broken:
                return False  # cannot happen (the model satisfies a disjunct); the exact way decides
            for t in names:  # in the targets' order, as the exact way records them
                if t in broken:
                    if counterexamples:
                        record(t, fast_not(holds_formula(t, pre, label, post, action_name)), pre, post)
                    else:
                        found[t] = None  # the model is a witness: in the domain, the formulas are exact
            if len(found) == len(targets):
                raise _Found()

    def check(pre: Any, label: Any, post: Any, action_name: str) -> None:
        if ex.formatted and _leaks_placeholder(post):
            raise unsupported(f"a string made from a symbolic value stored in the state by {action_name}")
        if skel is not None and pre is not None and fast_path(pre, label, post, action_name):
            return
        negated: dict[str, z3.BoolRef] = {}
        for target in targets:
            if target in found:
                continue
            before = (budget.paths, budget.checks, budget.solver_seconds)
            try:
                negated[target] = fast_not(holds_formula(target, pre, label, post, action_name))
            finally:
                _charge(target, before)
        # One solver call for all targets (the usual answer is that none breaks); only when some
        # target can break is each asked on its own, in order.
        if ex.model_of(fast_or(list(negated.values()))) is None:
            return
        for target, neg in negated.items():
            record(target, neg, pre, post)
        if len(found) == len(targets):
            raise _Found()

    if job.action == INIT:
        def body() -> None:
            for state in cls.init_states(p):
                if ex.fresh():
                    check(None, None, state, INIT)

        runs: list[Callable[[], None]] = [lambda: _explore(ex, body)]
    else:
        act = next(a for a in cls.actions() if a.name == job.action)
        constraint = cls.constraint
        fns = [pr.fn for pr in assumed if pr.kind == "invariant"]

        def one_shape(shape: tuple[int, ...]) -> None:
            # The pre-state of one shape is built once; its facts and the assumed invariants are
            # asserted in a solver scope under which the action's paths are explored.
            facts: list[z3.BoolRef] = []
            pre = build(dom, "s", fixed(shape), facts)
            solver.push()
            try:
                solver.add(facts)
                ex.model = ex.model_of(z3.BoolVal(True))
                if ex.model is None:
                    return
                with guarded():
                    assumptions = [_pre_formula(ex, fn, p, pre, spec, lifted, shape) for fn in fns]
                    if constraint is not None:
                        assumptions.append(_pre_formula(ex, constraint, p, pre, spec, lifted, shape))
                solver.add(assumptions)
                ex.model = ex.model_of(z3.BoolVal(True))
                if ex.model is None:
                    return
                ex.rebase()

                def body() -> None:
                    for label, post in act.fn(p, pre):
                        if ex.fresh():
                            check(pre, label, post, act.name)

                _explore(ex, body)
            finally:
                solver.pop()

        runs = [lambda shape=shape: one_shape(shape) for shape in shapes(dom)]

    reason = None
    try:
        for run in runs:
            run()
    except _Found:
        pass
    except SolverUnknown as exc:
        reason = f"solver: {exc}"
    except PathLimit as exc:
        reason = str(exc)
    except SymbolicUnsupported as exc:
        raise SymbolicUnsupported(f"{job.action}: {exc}") from None
    seconds = round(time.perf_counter() - started, 3)
    nested = sum(st[0] for st in own.values())
    shared_paths = budget.paths - nested
    shared_solver = budget.solver_seconds - sum(st[2] for st in own.values())
    results = []
    for t in targets:
        verdict = CTI_FOUND if t in found else (UNKNOWN if reason is not None else PROVED)
        results.append(QueryResult(
            job.action, t, verdict, shared_paths + own[t][0], round(own[t][2], 3), round(shared_solver, 3), seconds,
            own[t][1], reason if verdict == UNKNOWN else None))
    return tuple(results), tuple(c for t in targets if (c := found.get(t)) is not None)
