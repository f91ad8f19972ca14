"""``bmc`` leaves a declared history field out of the encoding when no invariant asked reads it
(``kafkamc/prover/history.py``): the same verdict, depth and trace length as with it, the trace
found again on the spec as given; an invariant, constraint or action that reads the field is
found, never sliced past."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from functools import wraps

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkamc import Param, Spec, action, invariant
from kafkamc.checker.local import explore
from kafkamc.cli.main import main
from kafkamc.counterexamples.trace import replay
from kafkamc.errors import SoundnessError, SymbolicUnsupported
from kafkamc.prover.bmc import bmc
from kafkamc.prover.history import WITHHELD, HistoryRead, left_out
from kafkamc.spec import domain as d
from kafkamc.spec.registry import build_spec

HERE = __name__


@dataclass(frozen=True, slots=True)
class Meter:
    count: int
    lit: bool
    peak: int  # history: the largest count at which the light was switched

    @property
    def high(self) -> int:  # a read of the history that no scan of an invariant's source sees
        return self.peak


def _recording(fn):
    """The history of a step: ``peak`` after the action ran (writes nothing else, unless the
    ``bad_record`` parameter makes the declaration false)."""

    @wraps(fn)
    def step(p, s):
        out = []
        for label, n in fn(p, s):
            if p.track:
                peak = max(s.peak, n.count) if n.lit != s.lit else s.peak
                n = dataclasses.replace(n, peak=peak, count=n.count + (1 if p.bad_record and n.count == 1 else 0))
            out.append((label, n))
        return out

    return step


@invariant("hist-count-small", "the count stays below the limit (never reads the history)")
def hist_count_small(p, s) -> bool:
    return s.count < p.limit


@invariant("hist-peak-under-count", "the peak is at most the count (reads the history past the start)")
def hist_peak_under_count(p, s) -> bool:
    return s.count == 0 or s.high <= s.count


@invariant("hist-peak-kind", "the peak is recorded (a use of the history that raises nothing)")
def hist_peak_kind(p, s) -> bool:
    return s.count < p.limit or s.peak is not None


@invariant("hist-peak-guarded", "the peak stays below the limit, where it can be read")
def hist_peak_guarded(p, s) -> bool:
    try:
        return s.high < p.limit
    except Exception:  # the spec's own handler: a read it swallows is still a read
        return True


@invariant("hist-peak-small", "with recording, the peak stays below the limit (reads it at once)")
def hist_peak_small(p, s) -> bool:
    return not p.track or s.peak < p.limit


class Metered(Spec):
    """A counter and a light; ``peak`` records the count at the switches (a history variable)."""

    name = "bmc-metered"
    parameters = (Param("bound", 4, "largest count", min=1, max=8),
                  Param("limit", 3, "the count must stay below it", min=1, max=10),
                  Param("track", True, "record peak"),
                  Param("peeks", False, "an action reads peak (the declaration does not hold)"),
                  Param("bad_record", False, "recording also changes the count (the declaration does not hold)"))
    invariants = (hist_count_small, hist_peak_under_count, hist_peak_small, hist_peak_kind, hist_peak_guarded)
    history = {"peak": "track"}

    def init_states(p):
        yield Meter(0, False, 0)

    def domain(p):
        return d.Record(Meter, count=d.Int(0, p.bound + 1), lit=d.Bool(),
                        peak=d.Int(0, p.bound + 1) if p.track else d.Const(0))

    @action
    @_recording
    def inc(p, s):
        if s.count < p.bound:
            yield "Inc", Meter(s.count + 1, s.lit, s.peak)

    @action
    @_recording
    def switch(p, s):
        if not p.peeks or s.peak < 2:
            yield "Switch", Meter(s.count, not s.lit, s.peak)


def _same_answer(spec, props, depth):
    sliced = bmc(spec, props, depth)
    whole = bmc(spec, props, depth, slice_history=False)
    assert (sliced.result, sliced.reason, sliced.violated) == (whole.result, whole.reason, whole.violated)
    assert sliced.extra["bmc_depth"] == whole.extra["bmc_depth"]
    assert whole.extra["history_left_out"] == []
    if whole.trace is not None:
        assert len(sliced.trace) == len(whole.trace)
        # The trace is one of the spec as given: the history recorded, replayable.
        again = replay(spec, sliced.trace.path)
        assert [s.state for s in again.steps] == [s.state for s in sliced.trace.steps]
    return sliced


@settings(max_examples=12, deadline=None)
@given(bound=st.integers(1, 5), limit=st.integers(1, 6), depth=st.integers(0, 7))
def test_left_out_history_gives_the_same_answer_as_breadth_first_check(bound, limit, depth):
    spec = Metered(bound=bound, limit=limit)
    props = [spec.property_named("hist-count-small")]
    sliced = _same_answer(spec, props, depth)
    assert sliced.extra["history_left_out"] == ["peak"]
    bfs = explore(spec, props)
    if bfs.result == "violation" and len(bfs.trace) <= depth + 1:
        assert sliced.result == "violation" and len(sliced.trace) == len(bfs.trace)
    else:
        assert sliced.result == "incomplete" and sliced.trace is None


def test_an_invariant_that_reads_the_history_is_asked_with_it():
    # At once (under the parameter that records it): seen on the initial state.
    spec = Metered(bound=4, limit=3)
    assert left_out(spec, [spec.property_named("hist-peak-small")]) == (spec, None)
    result = _same_answer(spec, [spec.property_named("hist-peak-small")], 8)
    assert result.result == "violation" and result.extra["history_left_out"] == []
    assert len(result.trace) == len(explore(spec, [spec.property_named("hist-peak-small")]).trace)
    # Only past the initial state: seen while the relation is made, which is then made with it.
    props = [spec.property_named("hist-peak-under-count")]
    assert left_out(spec, props)[1] is not None
    result = _same_answer(spec, props, 6)
    assert result.result == "incomplete" and result.extra["history_left_out"] == []


@pytest.mark.parametrize("inv", ["hist-peak-kind", "hist-peak-guarded"])
def test_a_read_that_raises_nothing_or_is_swallowed_still_keeps_the_field(inv):
    spec = Metered(bound=4, limit=3)
    result = _same_answer(spec, [spec.property_named(inv)], 6)
    assert result.extra["history_left_out"] == []
    bfs = explore(spec, [spec.property_named(inv)])
    assert (result.result == "violation") == (bfs.result == "violation")


def test_the_withheld_value_survives_copies_and_pickling():
    import copy
    import pickle

    assert copy.copy(WITHHELD) is WITHHELD and copy.deepcopy(WITHHELD) is WITHHELD
    assert pickle.loads(pickle.dumps(WITHHELD)) is WITHHELD


def test_an_action_that_reads_the_history_stops_the_run_naming_it():
    spec = Metered(peeks=True)
    with pytest.raises(SymbolicUnsupported, match=r"switch reads the history field\(s\) peak.*Metered.history"):
        bmc(spec, [spec.property_named("hist-count-small")], 4)
    # As written the spec still checks with the field (its actions may read what they record).
    assert bmc(spec, [spec.property_named("hist-count-small")], 4, slice_history=False).result == "violation"


def test_a_recording_that_writes_another_field_is_a_disagreement_never_a_trace():
    spec = Metered(bad_record=True, limit=3)
    with pytest.raises(SoundnessError, match="Metered.history does not hold"):
        bmc(spec, [spec.property_named("hist-count-small")], 6)


def test_the_withheld_value_refuses_every_use():
    for use in (lambda v: v == (), lambda v: len(v), lambda v: bool(v), lambda v: v[0], lambda v: hash(v),
                lambda v: v + (1,), lambda v: 1 in v, lambda v: list(v), lambda v: v < 1, lambda v: v.count(1),
                lambda v: v // 2, lambda v: v % 2, lambda v: abs(v), lambda v: +v, lambda v: -v, lambda v: ~v,
                lambda v: f"{v}", lambda v: str(v), lambda v: 2 ** v, lambda v: round(v)):
        with pytest.raises(HistoryRead):
            use(WITHHELD)
    assert repr(WITHHELD) == "<history left out>"


def test_replication_leaves_the_visible_prefix_out_only_where_no_invariant_reads_it():
    spec = build_spec("replication", ["truncation=kip279"])
    off, left = left_out(spec, [spec.property_named("strong-isr")])
    assert left is not None and left.fields == ("visible",) and off.p.track_visible is False
    assert left_out(spec, [spec.property_named("visible-prefix-stable")]) == (spec, None)
    assert left_out(spec, [spec.property_named("strong-isr"), spec.property_named("visible-prefix-stable")])[1] is None


@pytest.mark.parametrize("truncation", ["hw", "kip279"])
def test_replication_states_are_the_same_without_the_visible_prefix(truncation):
    """What the declaration promises and the run does not check: recording the visible prefix
    changes no other field. Every state reachable with it, less it, is one reachable without."""
    params = [f"truncation={truncation}", "max_leader_epoch=1"]
    on, off = build_spec("replication", params), build_spec("replication", params + ["track_visible=false"])

    def reached(spec):
        seen = set(spec.initial())
        todo = list(seen)
        while todo:
            s = todo.pop()
            for _a, _l, t in spec.successors(s):
                if t not in seen:
                    seen.add(t)
                    todo.append(t)
        return seen

    with_it = {dataclasses.replace(s, visible=()) for s in reached(on)}
    assert any(s.visible for s in reached(on)) and with_it == reached(off)


def test_replication_hw_strong_isr_with_the_visible_prefix_left_out(capsys):
    """KIP-101's scenario (truncation to the high watermark loses a committed record): bmc finds
    check's 10-state violation with the visible prefix left out, as a trace of the spec as given."""
    args = ["bmc", "replication", "-p", "truncation=hw", "-p", "max_leader_epoch=1", "-i", "strong-isr",
            "--depth", "9", "--json"]
    assert main(args) == 1
    data = json.loads(capsys.readouterr().out)
    spec = build_spec("replication", ["truncation=hw", "max_leader_epoch=1"])
    assert data["result"] == "violation" and data["bmc"]["history_left_out"] == ["visible"]
    assert len(data["trace"]) == len(explore(spec, [spec.property_named("strong-isr")]).trace) == 10
    again = replay(spec, data["path"])
    assert len(again.steps) == 10
