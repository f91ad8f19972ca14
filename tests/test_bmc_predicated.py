"""The branch-free recompilation of the actions (``kafkamc/prover/predicated.py``) that ``bmc``'s
relation runs: Python's own successors on every reached state, and the same relation as the
forking executor gives, compared by Z3."""

from __future__ import annotations

import os
import time
from collections import deque
from dataclasses import dataclass

import pytest
import z3

from kafkamc import Param, Spec, action, invariant
from kafkamc.checker.local import explore
from kafkamc.checker.symbolic import Budget, SymBool, SymInt
from kafkamc.checker.symbolic.values import fast_and, fast_or
from kafkamc.errors import SpecRaised
from kafkamc.prover.bmc import bmc
from kafkamc.prover.layout import Layout
from kafkamc.prover.predicated import LABEL, predicated
from kafkamc.prover.relation import relate
from kafkamc.spec import domain as d
from kafkamc.spec.registry import build_spec


# The forking relation of replication's larger shapes takes most of a minute on a loaded 2-core host.
_slow = pytest.mark.skipif(not os.environ.get("KAFKAMC_SLOW_TESTS"), reason="slow: set KAFKAMC_SLOW_TESTS=1")


@pytest.mark.parametrize("ref, params, most", [
    ("controller", ["fencing=none", "brokers=2"], 1500),
    ("controller", ["controlled_shutdown=true", "leader_isr_write=true", "crashes=1"], 800),
    ("group", ["sticky_claims=raw"], 1500),
    ("group", ["protocol=cooperative", "static=1", "static_rejoin=replace-2.4"], 800),
    ("replication", ["replicas=3", "truncation=kip279"], 800),
    ("replication", ["replicas=3", "truncation=kip101"], 600),
    ("replication", ["replicas=3", "truncation=kip320"], 600),
    ("replication", ["replicas=2", "truncation=kip279"], 600),
    ("replication", ["replicas=2", "truncation=kip101", "model=tla"], 600),
    ("replication", ["replicas=2", "truncation=kip320", "crash=true", "max_crashes=1"], 600),
    ("replication", ["acks=all", "min_isr=2", "crash=true", "max_crashes=1"], 800),
    ("transactions", ["version=tv1"], 1100),
    ("replication-kraft", [], 500),
    ("group-kip848", [], 500),
])
def test_recompiled_actions_give_pythons_successors_on_every_reached_state(ref, params, most):
    spec = build_spec(ref, params)
    assert any(predicated(a.fn) is not a.fn for a in type(spec).actions())  # something was recompiled
    n, seen = compared_on_reached(spec, most)
    assert n == min(most, seen)


def compared_on_reached(spec, most: int) -> tuple[int, int]:
    """Run the recompiled actions beside the originals on the first ``most`` states reached
    breadth-first; (states compared, states seen)."""
    acts = [(a, predicated(a.fn)) for a in type(spec).actions()]
    seen = set(spec.initial())
    todo = deque(seen)
    n = 0
    while todo and n < most:
        s = todo.popleft()
        n += 1
        for a, f in acts:
            want = list(a.fn(spec.p, s))
            got = list(f(spec.p, s))
            assert [nxt for _l, nxt in got] == [nxt for _l, nxt in want], (a.name, s)
            # An f-string label is left out of the relation; any other label is Python's.
            assert all(g == w or g == LABEL for (g, _), (w, _) in zip(got, want)), a.name
            for _l, nxt in want:
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
    return n, len(seen)


def _step(layout: Layout, rel) -> z3.BoolRef:
    """One shape's transitions as a formula over x and y (the frame included)."""
    y = {k: layout.var(k, "y") for k in layout.keys}
    parts = []
    for m in rel.moves:
        assigned = dict(m.assigns)
        parts.append(fast_and([m.pc] + [y[k] == assigned.get(k, layout.variables[k]) for k in layout.keys]))
    return fast_or(parts)


@pytest.mark.parametrize("ref, params, shapes", [
    ("controller", ["fencing=epoch", "brokers=2"], (0, 4, 8)),
    ("controller", ["fencing=none", "brokers=2", "crashes=1", "broker_epoch=false"], (0, 3, 7)),
    # Lists filled in branches, the wrapper writing each successor's visible prefix, truncated logs:
    # logs of lengths 0 to 2, one and two requests, a visible prefix extended or not.
    ("replication", ["replicas=2", "truncation=kip279"], (0, 17)),
    pytest.param("replication", ["replicas=2", "truncation=kip279"], (40, 64, 100), marks=_slow),
    pytest.param("replication", ["replicas=2", "truncation=kip320"], (64, 100), marks=_slow),
])
def test_the_branch_free_relation_is_the_forking_one(ref, params, shapes):
    spec = build_spec(ref, params)
    layout = Layout(type(spec).domain(spec.p))
    if shapes is not None:
        layout.shapes = [layout.shapes[i] for i in shapes]
    old, new = both_relations(spec, layout, list(spec.properties())[:1])
    assert sum(len(r.moves) for r in new) <= sum(len(r.moves) for r in old)


def both_relations(spec, layout: Layout, props) -> tuple[list, list]:
    """The forking and the branch-free relation of every shape of ``layout``, checked by Z3 to be
    the same transitions (where neither raised), the branch-free one with fewer paths."""
    budget = Budget(deadline=time.monotonic() + 600, max_paths=10**6)
    old = relate(spec, props, layout, budget, branch_free=False)
    new = relate(spec, props, layout, budget, branch_free=True)
    for a, b in zip(old, new):
        s = z3.Solver()
        s.add(a.facts, z3.Not(a.raised_action), z3.Not(b.raised_action), _step(layout, a) != _step(layout, b))
        assert s.check() == z3.unsat, a.shape
    assert sum(r.paths for r in new) < sum(r.paths for r in old)
    return old, new


@dataclass(frozen=True, slots=True)
class Cell:
    x: int
    pair: tuple[int, ...]


@invariant("bmc-pair-short", "the pair never reaches three items")
def pair_short(p, s) -> bool:
    return len(s.pair) < 3


class Branches(Spec):
    """Branches whose values cannot be joined (tuples of two lengths), a side that raises on
    states reached only with ``crash``, a loop of yields, and labels."""

    name = "bmc-branches"
    parameters = (Param("crash", False, "read past the pair once x reaches 3"),)
    invariants = (pair_short,)

    def init_states(p):
        yield Cell(0, ())

    def domain(p):
        return d.Record(Cell, x=d.Int(0, 4), pair=d.Bag(d.Int(0, 4), 3, sorted=False))

    @action
    def step(p, s):
        if s.x >= 4:
            return
        grown = s.pair + (s.x,) if s.x % 2 == 1 else s.pair
        extra = (s.pair + (0, 0))[3] if p.crash and s.x == 3 else 0
        for k in range(1, 3):
            if s.x + k <= 4 and extra == 0:
                yield f"Step(+{k}, {grown})", Cell(s.x + k, grown)


def test_unjoinable_values_fork_and_a_raising_side_is_reported_as_check_reports_it():
    spec = Branches()
    bfs = explore(spec, [spec.property_named("bmc-pair-short")])
    assert bfs.result == "ok"
    assert bmc(spec, list(spec.properties()), 6).result == "incomplete"
    crash = Branches(crash=True)
    with pytest.raises(SpecRaised, match="IndexError"):
        explore(crash, [crash.property_named("bmc-pair-short")])
    with pytest.raises(SpecRaised, match="action step raised IndexError"):
        bmc(crash, list(crash.properties()), 6)
    assert bmc(crash, list(crash.properties()), 1).result == "incomplete"  # x=3 needs 2 steps


def test_joined_values_are_terms():
    from kafkamc.prover.merge import merge

    c = z3.Bool("c")
    assert isinstance(merge(c, 1, 2), SymInt) and merge(c, 3, 3) == 3
    assert isinstance(merge(c, True, False), SymBool)
    joined = merge(c, (1, frozenset({1})), (2, frozenset({2})))
    assert isinstance(joined[0], SymInt) and {e for e in joined[1].elems} == {1, 2}
    assert merge(c, (), ()) == ()
