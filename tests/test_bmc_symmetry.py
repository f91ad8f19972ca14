"""bmc --symmetry: only paths whose first successor is one chosen renaming of it are asked; every
state of every later depth is still there up to renaming, and a shortest violation keeps its length."""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkamc import Param, Spec, action, invariant
from kafkamc.checker.local import explore
from kafkamc.checker.symbolic import Budget
from kafkamc.cli.main import main
from kafkamc.errors import UsageError
from kafkamc.prover.bmc import _Unrolling, bmc
from kafkamc.spec import domain as d
from kafkamc.spec.registry import build_spec

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_bmc import Pairs  # noqa: E402
from test_bmc_commute import _unrolled_states, _walks  # noqa: E402

HERE = __name__


@dataclass(frozen=True, slots=True)
class Twins:
    counts: tuple[int, int]
    marked: tuple[bool, bool]
    log: tuple[int, ...]  # which twin bumped: shapes change, and the ids are in the state
    ticks: int  # renaming leaves it alone: a first successor in an orbit of its own


@invariant("twins-apart", "the twins are never both marked with counts adding up to the limit")
def twins_apart(p, s) -> bool:
    return not (all(s.marked) and sum(s.counts) >= p.limit)


class TwinsSpec(Spec):
    """Two interchangeable replicas: renaming one into the other renames every successor."""

    name = "bmc-twins"
    parameters = (Param("bound", 2, "largest count", min=1, max=3),
                  Param("limit", 3, "the marked twins' counts must stay below it", min=1, max=7))
    invariants = (twins_apart,)

    def init_states(p):
        yield Twins((0, 0), (False, False), (), 0)

    def domain(p):
        return d.Record(Twins, counts=d.Tuple(d.Int(0, p.bound), 2), marked=d.Tuple(d.Bool(), 2),
                        log=d.Bag(d.Int(1, 2), 2, sorted=False), ticks=d.Int(0, 1))

    def symmetry(p, s):
        swapped = Twins(s.counts[::-1], s.marked[::-1], tuple(3 - i for i in s.log), s.ticks)
        return min(s, swapped, key=lambda t: (t.counts, t.marked, t.log))

    @action
    def tick(p, s):
        if s.ticks < 1:
            yield "Tick", Twins(s.counts, s.marked, s.log, 1)

    @action
    def bump(p, s):
        for i in (0, 1):
            if s.counts[i] < p.bound:
                counts = tuple(c + 1 if j == i else c for j, c in enumerate(s.counts))
                log = s.log + (i + 1,) if len(s.log) < 2 else s.log
                yield f"Bump({i + 1})", Twins(counts, s.marked, log, s.ticks)

    @action
    def mark(p, s):
        for i in (0, 1):
            if s.counts[i] >= 1 and not s.marked[i]:
                yield f"Mark({i + 1})", Twins(s.counts, tuple(m or j == i for j, m in enumerate(s.marked)), s.log,
                                              s.ticks)


def _orbits(spec, states):
    return {type(spec).symmetry(spec.p, s) for s in states}


@settings(max_examples=6, deadline=None)
@given(bound=st.integers(1, 3), depth=st.integers(1, 5))
def test_every_state_of_every_depth_is_there_up_to_renaming(bound, depth):
    spec = TwinsSpec(bound=bound, limit=7)
    un = _Unrolling(spec, tuple(spec.properties()), Budget(deadline=time.monotonic() + 600), None, depth,
                    symmetry=True)
    un.init()
    assert un._levels
    for k in range(depth + 1):
        got = _unrolled_states(un, k)
        assert got <= _walks(spec, k)
        assert _orbits(spec, got) == _orbits(spec, _walks(spec, k)), f"depth {k}"
        if k in (1, 2):  # not vacuous: one of the two first bumps is left out, and so on
            assert len(got) < len(_walks(spec, k))
        if k < depth:
            un.step(k)


@settings(max_examples=8, deadline=None)
@given(bound=st.integers(1, 3), limit=st.integers(1, 7))
def test_the_same_shortest_violation_length_with_and_without_symmetry(bound, limit):
    spec = TwinsSpec(bound=bound, limit=limit)
    props = list(spec.properties())
    bfs = explore(spec, props)
    plain, sym = bmc(spec, props, 8), bmc(spec, props, 8, symmetry=True)
    assert (sym.result, len(sym.trace or ())) == (plain.result, len(plain.trace or ()))
    if bfs.result == "violation":
        assert len(sym.trace) == len(bfs.trace)


def test_controller_with_symmetry_finds_checks_eight_state_violation():
    spec = build_spec("controller", {"brokers": 2, "fencing": "none"})
    result = bmc(spec, [spec.property_named("no-stale-request-applied")], 7, symmetry=True)
    assert result.result == "violation" and len(result.trace) == 8 and result.extra["symmetry"] is True


def test_symmetry_needs_the_hook(capsys):
    spec = Pairs()
    with pytest.raises(UsageError, match="declares no symmetry hook"):
        bmc(spec, [spec.property_named("bmc-sum-small")], 3, symmetry=True)
    assert main(["bmc", "test_bmc:Pairs", "-i", "bmc-sum-small", "--depth", "2", "--symmetry"]) == 2
    assert "no symmetry hook" in capsys.readouterr().err


@dataclass(frozen=True, slots=True)
class Flags:
    up: tuple[bool, bool]
    ticks: int


@invariant("flags-not-both", "the two flags are never both up (when strict)")
def flags_not_both(p, s) -> bool:
    return not (all(s.up) and p.strict)


class FlagsSpec(Spec):
    """Two interchangeable flags and a clock; SetFlag yields replica 2 first, so the state a level
    keeps is not the order the commuting pairs prefer; with ``guard`` a state with both flags up
    and no tick is not expanded, and with ``fragile`` setting a flag raises once the clock reads 2."""

    name = "bmc-flags"
    parameters = (Param("strict", False, "the flags must never both be up"),
                  Param("guard", False, "the constraint"),
                  Param("fragile", False, "SetFlag raises at ticks 2"))
    invariants = (flags_not_both,)

    def init_states(p):
        yield Flags((False, False), 0)

    def domain(p):
        return d.Record(Flags, up=d.Tuple(d.Bool(), 2), ticks=d.Int(0, 2))

    def constraint(p, s):
        return not p.guard or not all(s.up) or s.ticks > 0

    def symmetry(p, s):
        return min(s, Flags(s.up[::-1], s.ticks), key=lambda f: (f.up, f.ticks))

    @action
    def set_flag(p, s):
        if p.fragile and s.ticks == 2 and not all(s.up):
            raise ValueError("the clock ran out")
        for i in (1, 0):
            if not s.up[i]:
                yield f"SetFlag({i + 1})", Flags(tuple(True if j == i else u for j, u in enumerate(s.up)), s.ticks)

    @action  # after SetFlag: a level meets the state the constraint leaves unexpanded first
    def tick(p, s):
        if s.ticks < 2:
            yield "Tick", Flags(s.up, s.ticks + 1)


def _assert_orbits(spec, depth):
    un = _Unrolling(spec, tuple(spec.properties()), Budget(deadline=time.monotonic() + 600), None, depth,
                    symmetry=True)
    un.init()
    for k in range(depth + 1):
        assert _orbits(spec, _unrolled_states(un, k)) == _orbits(spec, _walks(spec, k)), f"depth {k}"
        if k < depth:
            un.step(k)
    return un


@pytest.mark.parametrize("most", [1, 2, 64])
@pytest.mark.parametrize("guard", [False, True])
def test_levels_that_stop_early_and_a_constraint_keep_every_orbit(monkeypatch, most, guard):
    # Levels capped below the depth: the commuting pairs start where they stop, not before.
    monkeypatch.setattr("kafkamc.prover.bmc._MAX_LEVEL", most)
    un = _assert_orbits(FlagsSpec(guard=guard), 5)
    assert len(un._levels) < 5 if most < 64 else un._levels


def test_spec_code_that_raises_on_a_level_is_reported_as_without_symmetry():
    spec = FlagsSpec(fragile=True)
    props = list(spec.properties())
    outcomes = []
    for symmetry in (False, True):
        try:
            outcomes.append(bmc(spec, props, 5, symmetry=symmetry).result)
        except Exception as exc:  # noqa: BLE001 - both runs must end the same way
            outcomes.append(type(exc).__name__)
    assert outcomes[0] == outcomes[1] == "SpecRaised"
    strict = FlagsSpec(fragile=True, strict=True)
    runs = [bmc(strict, list(strict.properties()), 5, symmetry=s) for s in (False, True)]
    assert [(r.result, len(r.trace)) for r in runs] == [("violation", 3)] * 2
