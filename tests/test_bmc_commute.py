"""bmc's peephole partial-order reduction (``kafkamc/prover/commute.py``) leaves out paths, never
states: the states of the reduced unrolling at each depth are exactly those reachable in that many
steps, found by walking the spec's own successors."""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass

import pytest
import z3
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkamc import Param, Spec, action, invariant
from kafkamc.checker.symbolic import Budget
from kafkamc.prover.bmc import _Unrolling, bmc
from kafkamc.spec import domain as d
from kafkamc.spec.registry import build_spec

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_bmc import Pairs  # noqa: E402

HERE = __name__


@dataclass(frozen=True, slots=True)
class Sized:
    log: tuple[int, ...]
    size: int
    flag: bool
    x: int
    y: int


@invariant("commute-size-small", "size stays below the limit")
def commute_size_small(p, s) -> bool:
    return s.size < p.limit


class Sizes(Spec):
    """Moves whose effect or condition depends on the shape alone (the log's length), which no
    variable they read shows: swapping them with an append is not the same step in the other order."""

    name = "bmc-commute-sizes"
    parameters = (Param("limit", 9, "size must stay below it", min=1, max=9),)
    invariants = (commute_size_small,)

    def init_states(p):
        yield Sized((), 0, False, 0, 0)

    def domain(p):
        return d.Record(Sized, log=d.Bag(d.Int(0, 2), 3, sorted=False), size=d.Int(0, 3), flag=d.Bool(),
                        x=d.Int(0, 2), y=d.Int(0, 1))

    @action
    def record(p, s):
        if len(s.log) < 3:
            yield "Record", Sized(s.log + (s.x,), s.size, s.flag, s.x, s.y)

    @action
    def measure(p, s):  # writes a constant in each shape: another constant in the next shape
        yield "Measure", Sized(s.log, len(s.log), s.flag, s.x, s.y)

    @action
    def raise_flag(p, s):  # always enabled with two records, only when y is 1 with fewer
        if len(s.log) == 2 or s.y == 1:
            yield "RaiseFlag", Sized(s.log, s.size, True, s.x, s.y)

    @action
    def inc_x(p, s):
        if s.x < 2:
            yield "IncX", Sized(s.log, s.size, s.flag, s.x + 1, s.y)

    @action
    def inc_y(p, s):
        if s.y < 1:
            yield "IncY", Sized(s.log, s.size, s.flag, s.x, s.y + 1)


def _walks(spec, k):
    """The states at the end of a walk of exactly k steps (a state may also be nearer); a state
    outside the spec's constraint is reached but not expanded."""
    keep = type(spec).constraint
    level = set(spec.initial())
    for _ in range(k):
        level = {nxt for s in level if keep is None or keep(spec.p, s) for _a, _l, nxt in spec.successors(s)}
    return level


def _unrolled_states(un, k, most=2_000):
    """Every state the unrolling so far has at depth k (all-SAT over depth k's vector)."""
    lay = un.layout
    solver = z3.Solver()
    solver.add(un.unrolled)
    found = set()
    while solver.check() == z3.sat:
        state = un.states(solver.model(), k, un.spec)[-1]
        found.add(state)
        m = lay.match(state)
        solver.add(z3.Not(z3.And([lay.var("#" + s, f"s{k}") == c for s, c in m.choices.items()]
                                 + [lay.var(key, f"s{k}") == t for key, t in m.terms.items()] + [z3.BoolVal(True)])))
        assert len(found) <= most
    return found


def _assert_exact(spec, depth):
    props = tuple(spec.properties())
    un = _Unrolling(spec, props, Budget(deadline=time.monotonic() + 600), None, depth)
    assert un.commuting is not None
    un.init()
    for k in range(depth + 1):
        assert _unrolled_states(un, k) == _walks(spec, k), f"depth {k}"
        if k < depth:
            un.step(k)
    return un


@settings(max_examples=6, deadline=None)
@given(bound=st.integers(1, 3), depth=st.integers(2, 5))
def test_the_reduced_unrolling_has_every_state_of_every_depth_and_no_other(bound, depth):
    un = _assert_exact(Pairs(bound=bound, limit=30), depth)
    # Not vacuous: IncX and IncY commute, and Record after Toggle is the other order of Toggle after Record.
    assert un.commuting.pairs


@dataclass(frozen=True, slots=True)
class Logged:
    log: tuple[int, ...]
    x: int
    y: int


@invariant("commute-y-small", "y stays below 9")
def commute_y_small(p, s) -> bool:
    return s.y < 9


class Constrained(Spec):
    """A state with one record and y = 0 is not expanded (the constraint): from the initial state
    IncY then Append is taken, Append then IncY is not, so the swap must ask the constraint of the
    state between."""

    name = "bmc-commute-constrained"
    parameters = ()
    invariants = (commute_y_small,)

    def init_states(p):
        yield Logged((), 0, 0)

    def domain(p):
        return d.Record(Logged, log=d.Bag(d.Int(0, 1), 2, sorted=False), x=d.Int(0, 1), y=d.Int(0, 2))

    def constraint(p, s):
        return len(s.log) != 1 or s.y >= 1

    @action
    def append(p, s):  # its key sorts before IncY's: IncY then Append is the pair left out
        if len(s.log) < 2:
            yield "Append", Logged(s.log + (s.x,), s.x, s.y)

    @action
    def inc_y(p, s):
        if s.y < 2:
            yield "IncY", Logged(s.log, s.x, s.y + 1)


@pytest.mark.parametrize("depth", [2, 4])
def test_the_swap_asks_the_constraint_of_the_state_between(depth):
    _assert_exact(Constrained(), depth)


def test_a_pair_left_out_is_the_first_move_then_the_second():
    spec = Pairs(bound=3, limit=30)
    solvers = {}
    for reduce in (True, False):
        un = _Unrolling(spec, tuple(spec.properties()), Budget(deadline=time.monotonic() + 600), None, 3, reduce=reduce)
        un.init()
        for k in range(2):
            un.step(k)
        solvers[reduce] = z3.Solver()
        solvers[reduce].add(un.unrolled)
        if reduce:
            pairs = un.commuting.pairs

    def taken(reduce, first, second):
        return solvers[reduce].check(z3.Bool(f"s0!move{first}"), z3.Bool(f"s1!move{second}")) == z3.sat

    # The pairs the first two steps can take: each is a path of the full unrolling, none of the
    # reduced one (the other order is another pair of moves when the first changes the shape).
    possible = [(a, b) for a, b in pairs if taken(False, a, b)]
    assert possible
    for a, b in possible:
        assert not taken(True, a, b)


@pytest.mark.parametrize("depth", [3, 5])
def test_a_step_whose_effect_or_condition_the_shape_decides_is_not_swapped(depth):
    un = _assert_exact(Sizes(), depth)
    assert un.commuting.pairs


def test_controller_reduced_unrolling_is_exact_to_depth_four():
    spec = build_spec("controller", {"brokers": 2, "fencing": "none"})
    un = _assert_exact(spec, 4)
    assert un.commuting.pairs


def test_reduction_leaves_out_paths_the_full_unrolling_has():
    spec = Pairs(bound=3, limit=30)
    props = tuple(spec.properties())
    counts = []
    for reduce in (False, True):
        un = _Unrolling(spec, props, Budget(deadline=time.monotonic() + 600), None, 4, reduce=reduce)
        un.init()
        for k in range(4):
            un.step(k)
        solver = z3.Solver()
        solver.add(un.unrolled)
        picks = [z3.Bool(f"s{k}!move{i}") for k in range(4) for i in range(len(un.moves))]
        n = 0
        while solver.check() == z3.sat:
            model = solver.model()
            n += 1
            solver.add(z3.Or([p != model.eval(p, model_completion=True) for p in picks]))
        counts.append(n)
    full, reduced = counts
    assert reduced < full


@pytest.mark.parametrize("params, inv", [({}, "bmc-sum-small"), ({"limit": 3}, "bmc-sum-small"), ({}, "bmc-log-short")])
def test_reduced_and_full_unrollings_give_the_same_shortest_trace_length(params, inv):
    spec = Pairs(**params)
    props = [spec.property_named(inv)]
    full = bmc(spec, props, 9, reduce=False)
    reduced = bmc(spec, props, 9)
    assert (full.result, len(full.trace or ())) == (reduced.result, len(reduced.trace or ()))
    assert reduced.extra["commuting_pairs"] > 0 and full.extra["commuting_pairs"] == 0


def test_the_same_pairs_on_workers_as_in_process():
    from kafkamc.prover.commute import commuting

    spec = build_spec("controller", {"brokers": 2, "fencing": "none"})
    un = _Unrolling(spec, tuple(spec.properties()), Budget(deadline=time.monotonic() + 600), None, 4, reduce=False)
    serial = commuting(un.layout, un.rels)
    forked = commuting(un.layout, un.rels, workers=2)
    assert serial.pairs and (serial.pairs, serial.checked) == (forked.pairs, forked.checked)
