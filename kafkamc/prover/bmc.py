"""``bmc``: symbolic bounded model checking, the classical encoding, with the spec's own functions.

The state vector is fixed by the spec's declared domain (``layout.py``): one named variable per
int, bool and enum leaf and per member of a set, and one *site* variable per shape choice (a bag's
length, a subset). The transition relation is made ONCE (``relation.py``): every action runs
symbolically on each shape of the domain over the generic variables ``x``, and each of its paths
is a *move* (path condition, the variables it assigns). The relation of a step is then

    path = i  ->  x has move i's shape, in the domain, expanded by the constraint,
                  move i's path condition holds, and y = move i's assignments
    y_v = x_v  unless the move assigns v          (the frame)

with one bool per move and step (exactly one picked). Unrolled with a fresh copy of the vector per
depth, the solver is asked at depths 0, 1, 2, ... whether a state violating an invariant is
reachable: the first depth where one is gives a shortest counterexample, of the breadth-first
length. "None within K steps" is a statement about every path of at most K steps. With a range
for every int at every depth (``ranges.py``) the question is bit-blasted (Z3's QF_FD, one
incremental SAT solver per run); otherwise it is QF_LIA, a fresh solver per question. Of two
adjacent steps that commute, one order is left out (``commute.py``), and with ``symmetry`` the
first depths are asked through one state per orbit (``_Unrolling._chosen_levels``): both keep the
states of every depth, up to renaming for the second, so every answer is the same.

Exactness: the domain bounds the relation's states, so at every depth the solver is also asked
whether a reachable expanded state has a successor outside the domain, or makes a spec function
raise; either is found again concretely and reported (exit 3), never dropped. The model's states
are found again concretely (each among the concrete successors of the previous one) and replayed,
so ``kafkamc trace replay`` reproduces the trace; any disagreement is a ``SoundnessError``.
"""

from __future__ import annotations

import time
from typing import Any, Sequence

import z3

from kafkamc.checker.resources import cpu_seconds
from kafkamc.checker.symbolic import Budget, PathLimit, SolverUnknown, concretize
from kafkamc.checker.symbolic.interrupt import interruptible_check
from kafkamc.checker.symbolic.values import fast_and, fast_not, fast_or, substituted
from kafkamc.checker.watch import STOPS, is_stop, raise_pending_stop, stop_reason
from kafkamc.errors import SoundnessError, SymbolicUnsupported, UsageError
from kafkamc.invariants.api import Property
from kafkamc.prover.bmc_context import bmc_in_context
from kafkamc.prover.commute import commuting
from kafkamc.prover.feasible import feasible
from kafkamc.prover.history import HistoryRead, LeftOut, found_again, left_out
from kafkamc.prover.layout import Layout
from kafkamc.prover.ranges import Ranges, ranges
from kafkamc.prover.relation import ShapeRelation
from kafkamc.prover.relation_reach import relate_within
from kafkamc.prover.witness import concrete_path, confirmed, incomplete, limit_reason, raised
from kafkamc.result import CheckResult
from kafkamc.spec.api import Spec
from kafkamc.spec.domain import contains

__all__ = ["bmc", "DEFAULT_MAX_PATHS", "ENCODINGS", "SOLVERS"]

DEFAULT_MAX_PATHS = 2_000_000
# --symmetry: most states of one level of the first depths chosen per orbit (each a disjunct).
_MAX_LEVEL = 64
ENCODINGS = ("classical", "context")
SOLVERS = ("fd", "lia")


class _Unrolling:
    """The generic step formulas (over ``x``, ``y`` and the move selector) and their copies per depth."""

    def __init__(self, spec: Spec, props: tuple[Property, ...], budget: Budget, shapes: Any,
                 depth: int, solver: str = "fd", workers: int = 1, left: LeftOut | None = None,
                 reduce: bool = True, symmetry: bool = False) -> None:
        self.spec, self.props, self.budget, self.depth = spec, props, budget, depth
        self.symmetry = symmetry
        self.withheld = () if left is None else left.fields
        self.logic = "QF_LIA"  # QF_FD once ``init`` has found a range for every int
        dom_of = type(spec).domain
        if dom_of is None:
            raise SymbolicUnsupported(f"bmc: {spec.name} declares no domain(p) (TypeOK), which fixes the "
                                      "variables of the encoding")
        self.layout = Layout(dom_of(spec.p))
        started = cpu_seconds()
        # Only the shapes within ``depth`` steps of an initial one (relation_reach.py).
        self.rels: list[ShapeRelation] = relate_within(spec, props, self.layout, budget, depth, shapes,
                                                       workers=workers, left=left)
        self.relation_cpu = round(cpu_seconds() - started, 1)
        self.moves = [m for rel in self.rels for m in rel.moves]
        # Adjacent steps in the order that another order always matches, left out (commute.py).
        self.commuting = commuting(self.layout, self.rels, budget.deadline, workers) if reduce and depth > 1 else None
        self.unrolled: list[z3.BoolRef] = []  # the initial states and the steps added so far
        self.wanted = solver
        self.ranges: Ranges | None = None
        self._solver: z3.Solver | None = None  # QF_FD: the one incremental solver
        self._added = 0  # how many of ``unrolled`` it has
        self._asked = 0
        self._generic()

    def _generic(self) -> None:
        lay = self.layout
        x = lay.variables
        y = {k: lay.var(k, "y") for k in lay.keys}
        n = len(self.moves)
        # One bool per move, exactly one true: a move whose path condition a state falsifies is
        # ruled out by propagation alone (a bit-vector index was measured far slower to refute).
        self.picks = [z3.Bool(f"x!move{i}") for i in range(n)]
        seen = [z3.Bool(f"x!seen{i}") for i in range(n)]  # some move up to i is picked
        parts: list[z3.BoolRef] = [fast_or(self.picks)]
        for i in range(n):
            parts.append(z3.Or(z3.Not(self.picks[i]), seen[i]))
            if i:
                parts.append(z3.Or(z3.Not(seen[i - 1]), seen[i]))
                parts.append(z3.Or(z3.Not(self.picks[i]), z3.Not(seen[i - 1])))
        self.aux = seen
        assigned: dict[str, list[int]] = {}
        i = 0
        bad, raised_check, raised_action, escapes = [], [], [], []
        bad_each: list[list[z3.BoolRef]] = [[] for _ in self.props]
        for rel in self.rels:
            here = fast_and([lay.selects(rel.shape, "x"), rel.facts])
            bad.append(fast_and([here, fast_not(fast_and(list(rel.props)))]))
            for j, f in enumerate(rel.props):
                bad_each[j].append(fast_and([here, fast_not(f)]))
            raised_check.append(fast_and([here, rel.raised_check]))
            raised_action.append(fast_and([here, rel.expand, rel.raised_action]))
            escapes.append(fast_and([here, rel.expand, feasible(fast_and([here, rel.expand]), rel.escapes, self.budget)]))
            enabled = fast_and([here, rel.expand])
            for m in rel.moves:
                parts.append(z3.Implies(self.picks[i], fast_and([enabled, m.pc] + [y[k] == t for k, t in m.assigns])))
                for k, _t in m.assigns:
                    assigned.setdefault(k, []).append(i)
                i += 1
        for k in lay.keys:
            who = assigned.get(k, [])
            if len(who) < n:
                parts.append(fast_or([y[k] == x[k]] + [self.picks[j] for j in who]))
        self.step_formula = fast_and(parts)
        # The pairs left out, over the previous step's picks and this one's: made once, renamed per step.
        self._before = [z3.Bool(f"x!before{i}") for i in range(n)]
        self._apart = None
        if self.commuting is not None and self.commuting.pairs:
            self._apart = fast_and([z3.Or(z3.Not(self._before[a]), z3.Not(self.picks[b])) for a, b in self.commuting.pairs])
        self.bad_formula = fast_or(bad)
        self.bad_each = [fast_or(b) for b in bad_each]
        self.raised_check = fast_or(raised_check)
        self.raised_action = fast_or(raised_action)
        self.escapes = fast_or(escapes)

    def at(self, formula: z3.BoolRef, k: int) -> z3.BoolRef:
        """``formula`` over x (and y, the move picks) said of depth k (k+1, step k)."""
        lay = self.layout
        pairs = [(v, lay.var(key, f"s{k}")) for key, v in lay.variables.items()]
        pairs += [(lay.var(key, "y"), lay.var(key, f"s{k + 1}")) for key in lay.keys]
        pairs += [(b, z3.Bool(f"s{k}!move{i}")) for i, b in enumerate(self.picks)]
        pairs += [(b, z3.Bool(f"s{k}!seen{i}")) for i, b in enumerate(self.aux)]
        return substituted(formula, pairs)

    def init(self) -> None:
        lay = self.layout
        options = []
        initial = []
        for state in self.spec.initial():
            m = lay.match(state)
            if not z3.is_true(z3.simplify(m.inside)):
                raise SymbolicUnsupported(f"bmc: an initial state of {self.spec.name} is outside its domain(p): {state!r}")
            initial.append(m.terms)
            options.append(self._state_at(state, 0))
        self.unrolled.append(fast_or(options))
        self._levels: list[z3.BoolRef] = []  # depth j+1's vector is one of these states
        if self.symmetry:
            self._levels = self._chosen_levels()
        if self.wanted == "fd":
            self.ranges = ranges(self.layout, self.moves, initial)
        if self.ranges is not None:
            self.logic = "QF_FD"
            self.unrolled.append(self.ranges.at(0, "s0"))

    def _chosen_levels(self) -> list[z3.BoolRef]:
        """The first depths' states, one chosen per orbit of the spec's symmetry hook.

        The hook is trusted, as check --symmetry trusts it: renaming a state renames its
        successors and whether it is expanded, whether an action raises on it and whether a
        successor leaves the domain, and no invariant asked tells two states the hook merges apart
        (a hook that also applies a view, as controller's does, is trusted to merge only states
        with the same futures and the same verdicts).

        Level 0 is the initial states; level j+1 is, for each orbit among the successors of level
        j's expanded states, the first such successor met (in the spec's order), so each is a
        successor of a state of level j and the initial states need not be closed under renaming.
        Any path of k steps has one through the levels that ends at a renaming of its last state
        (the chosen state of a depth may be a successor of another state of the level before,
        whose path through the levels exists by the same argument; after the levels the rest of
        the path is renamed), so a violation (or a raising action, a successor outside the domain)
        at depth k has one at depth k among the paths asked. Levels stop before one would hold
        more than ``_MAX_LEVEL`` states, at the depth asked, at a state outside the domain, or
        where the spec's code raised (the depth before reports either, as without the levels)."""
        sym, keep, p = type(self.spec).symmetry, type(self.spec).constraint, self.spec.p
        level = list(self.spec.initial())
        out: list[z3.BoolRef] = []
        while len(out) < self.depth:
            chosen: dict[Any, Any] = {}
            try:
                for state in level:
                    if keep is None or keep(p, state):
                        for _a, _l, nxt in self.spec.successors(state):
                            chosen.setdefault(sym(p, nxt), nxt)
            except Exception as exc:  # noqa: BLE001 - the unrolling's questions report it, exactly
                raise_pending_stop(exc)
                break
            level = list(chosen.values())
            if not level or len(level) > _MAX_LEVEL or not all(
                    z3.is_true(z3.simplify(self.layout.match(s).inside)) for s in level):
                break
            out.append(fast_or([self._state_at(s, len(out) + 1) for s in level]))
        return out

    def _state_at(self, state: Any, k: int) -> z3.BoolRef:
        """Depth k's vector is ``state`` (a state of the domain)."""
        lay = self.layout
        m = lay.match(state)
        return fast_and([lay.var("#" + s, f"s{k}") == c for s, c in m.choices.items()]
                        + [lay.var(key, f"s{k}") == t for key, t in m.terms.items()])

    def step(self, k: int) -> None:
        """Add step k (depth k to k+1) to the unrolling, with depth k+1's ranges under QF_FD."""
        self.unrolled.append(self.at(self.step_formula, k))
        if k < len(self._levels):
            self.unrolled.append(self._levels[k])
        # Not where a swap would change a state the levels choose (commute.py renames nothing).
        if k > len(self._levels) and self._apart is not None:
            self.unrolled.append(substituted(self._apart, [(b, z3.Bool(f"s{k - 1}!move{i}")) for i, b in enumerate(self._before)]
                                             + [(b, z3.Bool(f"s{k}!move{i}")) for i, b in enumerate(self.picks)]))
        if self.ranges is not None:
            self.unrolled.append(self.ranges.at(k + 1, f"s{k + 1}"))

    def ask(self, formula: z3.BoolRef) -> Any:
        """A model of the unrolling so far and ``formula``, or None.

        Under QF_FD one SAT solver for the whole run: the steps are added once, as the unrolling
        grows, and each question is asked under an assumption of its own, so what the solver
        learnt refuting depth k is kept for depth k+1 (on group's unrolling depth 7 took 18 s
        CPU against 41 s with a fresh QF_FD solver per depth; docs/bmc.md). Under QF_LIA a fresh
        solver per question: Z3's QF_LIA preprocessing runs only on a non-incremental solver, and
        on the controller's unrolling it answered 5 to 8 times faster than one incremental one."""
        if self.logic == "QF_FD":
            if self._solver is None:
                self._solver = z3.SolverFor("QF_FD")
            solver = self._solver
            solver.add(self.unrolled[self._added:])
            self._added = len(self.unrolled)
            self._asked += 1
            question = z3.Bool(f"bmc!ask{self._asked}")
            solver.add(z3.Implies(question, formula))
            assumptions = [question]
        else:
            solver = z3.SolverFor(self.logic)
            solver.add(self.unrolled)
            solver.add(formula)
            assumptions = []
        solver.set("timeout", self.budget.remaining_ms())
        started = time.perf_counter()
        try:
            # On a thread of its own, so that a stop (SIGTERM, Ctrl-C) ends even a check of many
            # minutes at once: the run is then incomplete at the depth finished (interrupt.py).
            verdict = interruptible_check(solver, *assumptions)
            self.budget.checks += 1
            if verdict == z3.unknown:
                raise SolverUnknown(solver.reason_unknown())
            return solver.model() if verdict == z3.sat else None
        finally:
            self.budget.solver_seconds += time.perf_counter() - started

    def states(self, model: Any, k: int, spec: Spec) -> list[Any]:
        """The model's states of depths 0 to k, as states of ``spec`` (found again there when
        history fields were left out)."""
        out = []
        for j in range(k + 1):
            shape = self.layout.shape_of(model, f"s{j}")
            tmpl, _facts = self.layout.template(shape, f"s{j}")
            out.append(concretize(tmpl, model))
        return found_again(spec, out, self.withheld)


def bmc(spec: Spec, invariants: Sequence[Property], depth: int, *, timeout: float = 3600.0,
        max_paths: int = DEFAULT_MAX_PATHS, progress: Any = None, encoding: str = "classical",
        shapes: Any = None, solver: str = "fd", workers: int = 1, slice_history: bool = True,
        reduce: bool = True, symmetry: bool = False) -> CheckResult:
    """A shortest violation of ``invariants`` within ``depth`` steps, or an incomplete result
    (reason ``max-depth``, or why it stopped earlier) saying none exists up to the depth reached.
    ``encoding``: "classical" (this module) or "context" (``bmc_context.py``, the earlier one).
    ``progress(k, unrolling)`` after each depth, ``shapes(relation, total)`` after each shape's
    relation is made; ``workers`` processes make the shapes' relations (the same relation).
    ``solver``: "fd" (bit-blasted, when every int has a range: ``ranges.py``) or "lia" (Z3's
    QF_LIA on the same formulas). ``slice_history``: leave out the history fields no invariant
    asked reads (``history.py``; the same answer, asked of fewer states). ``reduce``: leave out
    the adjacent steps whose other order always reaches the same state (``commute.py``; the same
    answer, asked of fewer paths). ``symmetry``: over the first depths, ask only paths through one
    chosen state per orbit of the spec's ``symmetry`` hook (trusted, as ``check --symmetry``
    trusts it; ``_Unrolling._chosen_levels``)."""
    props = tuple(invariants)
    if not props:
        raise UsageError("bmc needs at least one invariant (-i NAME)")
    for pr in props:
        if pr.kind != "invariant":
            raise UsageError(f"{pr.name} is a {pr.kind} property; bmc takes invariants (state properties) only")
    if depth < 0:
        raise UsageError(f"--depth {depth}: allowed: a non-negative integer")
    if encoding not in ENCODINGS:
        raise UsageError(f"--encoding {encoding}: allowed: {', '.join(ENCODINGS)}")
    if solver not in SOLVERS:
        raise UsageError(f"solver {solver}: allowed: {', '.join(SOLVERS)}")
    if symmetry and type(spec).symmetry is None:
        raise UsageError(f"--symmetry: spec {spec.name} declares no symmetry hook; allowed only for specs that do")
    if symmetry and encoding == "context":
        raise UsageError("--symmetry: allowed only with --encoding classical")
    if encoding == "context":
        return bmc_in_context(spec, props, depth, timeout=timeout, max_paths=max_paths)
    started = time.perf_counter()
    z3.set_param("smt.random_seed", 0)
    z3.set_param("sat.random_seed", 0)
    budget = Budget(deadline=time.monotonic() + timeout, max_paths=max_paths)
    un: _Unrolling | None = None
    reached = -1
    try:
        asked, left = left_out(spec, props) if slice_history else (spec, None)
        try:
            un = _Unrolling(asked, props, budget, shapes, depth, solver, workers, left, reduce, symmetry)
        except HistoryRead:  # an invariant or the constraint reads one on a state of the domain
            un = _Unrolling(spec, props, budget, shapes, depth, solver, workers, reduce=reduce, symmetry=symmetry)
        un.init()
        for k in range(depth + 1):
            bad = un.at(un.bad_formula, k)
            # Raising actions and successors outside the domain matter only for a step taken.
            errors = un.at(fast_or([un.raised_check] + ([un.raised_action, un.escapes] if k < depth else [])), k)
            model = un.ask(fast_or([bad, errors]))
            if model is not None:
                if not z3.is_true(model.eval(bad, model_completion=True)):
                    model = un.ask(bad) or model
                if z3.is_true(model.eval(bad, model_completion=True)):
                    if len(props) > 1:
                        # The first invariant, in the order asked, that a state of this depth breaks:
                        # the same name on every run, whichever model the solver gives first.
                        model = next(m for f in un.bad_each if (m := un.ask(un.at(f, k))) is not None)
                    return confirmed(spec, props, un.states(model, k, spec), started, depth, _stats(un, budget))
                _error(spec, props, un.states(model, k, spec), un, model, k)
            reached = k
            if progress is not None:
                progress(k, un)
            if k == depth:
                break
            un.step(k)
    except (SolverUnknown, PathLimit) as exc:
        why = "the time limit was reached" if time.monotonic() >= budget.deadline else f"solver: {exc}"
        return incomplete(spec, props, started, reached, limit_reason(exc, budget.deadline), why, _stats(un, budget))
    except STOPS as exc:
        if not is_stop(exc):
            raise
        return incomplete(spec, props, started, reached, stop_reason(exc), None, _stats(un, budget))
    return incomplete(spec, props, started, reached, "max-depth", None, _stats(un, budget))


def _error(spec: Spec, props: tuple[Property, ...], states: list[Any], un: _Unrolling, model: Any, k: int) -> None:
    """A reachable state on which a spec function raised, or with a successor outside the domain:
    found again concretely and reported (exit 3), or a disagreement."""
    if z3.is_true(model.eval(un.at(un.escapes, k), model_completion=True)):
        concrete_path(spec, states)
        dom = type(spec).domain(spec.p)
        for act, _label, nxt in spec.successors(states[-1]):
            if not contains(dom, nxt):
                raise SymbolicUnsupported(
                    f"bmc: {act.name} leaves the domain(p) of {spec.name} on a state reachable in {k} steps "
                    f"(the encoding cannot represent its successor {nxt!r}); widen the domain")
        raise SoundnessError(f"bmc: the solver's successor outside the domain is not one concretely: {states[-1]!r}")
    raised(spec, props, states, actions=True)


def _stats(un: _Unrolling | None, budget: Budget) -> dict[str, Any]:
    return {"checker": "bmc", "encoding": "classical", "logic": un.logic if un is not None else None,
            "shapes": len(un.layout.shapes) if un is not None else 0,
            "shapes_built": len(un.rels) if un is not None else 0,
            "transitions": len(un.moves) if un is not None else 0, "paths": budget.paths,
            "history_left_out": list(un.withheld) if un is not None else [],
            "symmetry": un.symmetry if un is not None else False,
            "solver_checks": budget.checks, "relation_cpu": un.relation_cpu if un is not None else None,
            "commuting_pairs": len(un.commuting.pairs) if un is not None and un.commuting is not None else 0,
            "commute_cpu": un.commuting.cpu if un is not None and un.commuting is not None else None}
