"""The replication spec: TLC parity with the TLA+ model, its known counterexamples, and the extensions."""

from __future__ import annotations

import pytest

from kafkamc.checker.local import explore
from kafkamc.errors import UsageError
from kafkamc.spec.replication import (
    Replication,
    kip101_truncation_offset,
    kip279_truncation_offset,
)


def check(invariant: str | None = None, **params):
    spec = Replication(**params)
    props = None if invariant is None else [Replication.property_named(invariant)]
    return explore(spec, props)


# -- Part 1: the reference model ----------------------------------------------------------------

# Distinct states, states generated and depth that TLC reports for the TLA+ modules with
# replicas=2, log_size=2, max_records=2, max_leader_epoch=2 (StrongIsr and WeakIsr hold).
TLC_PARITY = [
    ("kip279", 9_027, 23_425, 18),
    ("kip320", 5_973, 11_839, 18),
    ("kip320-first-try", 8_429, 19_387, 18),
]


@pytest.mark.parametrize(("truncation", "distinct", "generated", "depth"), TLC_PARITY)
def test_tlc_parity(truncation, distinct, generated, depth):
    res = check(truncation=truncation, model="tla", replicas=2, log_size=2, max_records=2, max_leader_epoch=2)
    assert res.result == "ok", res.violated
    assert (res.distinct_states, res.states_generated, res.depth) == (distinct, generated, depth)


# Shortest counterexamples to StrongIsr with three replicas, in states including the initial one.
# The counterexamples need one record only, so kip101 and kip279 run with a one-record log to keep
# the test fast; with log_size=2 and max_records=2 the lengths are the same (9, 11, 11).
STRONG_ISR_COUNTEREXAMPLES = [
    ("hw", {}, 9),
    ("kip101", {"log_size": 1, "max_records": 1}, 11),
    ("kip279", {"log_size": 1, "max_records": 1}, 11),
]


@pytest.mark.parametrize(("truncation", "sizes", "length"), STRONG_ISR_COUNTEREXAMPLES)
def test_strong_isr_counterexample_with_three_replicas(truncation, sizes, length):
    res = check("strong-isr", truncation=truncation, model="tla", replicas=3, **sizes)
    assert res.result == "violation"
    assert res.violated == "strong-isr"
    steps = res.trace.steps
    assert len(steps) == length
    assert steps[0].action is None
    # The last state breaks the invariant and no earlier one does.
    p = Replication(truncation=truncation, model="tla", replicas=3, **sizes).p
    strong = Replication.property_named("strong-isr").fn
    assert not strong(p, steps[-1].state)
    assert all(strong(p, st.state) for st in steps[:-1])
    # Committed data is missing on a quorum ISR member, which a follower truncation removed.
    labels = [st.action for st in steps[1:]]
    assert labels[-1].startswith("BecomeFollower(")
    assert any(lab.startswith("LeaderIncHighWatermark(") for lab in labels)


def test_kip279_is_safe_with_two_replicas_but_hw_and_kip101_are_not():
    assert check("strong-isr", truncation="kip279", model="tla").result == "ok"
    hw = check("strong-isr", truncation="hw", model="tla")
    kip101 = check("strong-isr", truncation="kip101", model="tla")
    assert (hw.result, len(hw.trace.steps)) == ("violation", 10)
    assert (kip101.result, len(kip101.trace.steps)) == ("violation", 12)


def test_leader_in_isr_lapses_from_the_start_in_the_tla_model():
    res = check("leader-in-isr", model="tla")
    assert res.result == "violation"
    assert len(res.trace.steps) == 1


def test_successors_are_deterministic():
    spec = Replication(truncation="kip279", replicas=3)
    frontier = spec.initial()
    for _ in range(6):
        nxt = []
        for s in frontier:
            first = [(a.name, label, t) for a, label, t in spec.successors(s)]
            again = [(a.name, label, t) for a, label, t in Replication(truncation="kip279", replicas=3).successors(s)]
            assert first == again
            nxt.extend(t for _, _, t in first)
        frontier = list(dict.fromkeys(nxt))[:200]


def test_truncation_offsets():
    a, b, c = (0, 0), (1, 0), (1, 1)
    # KIP-279: one past the largest offset where both logs hold the same record.
    assert kip279_truncation_offset((a, b), (a, c)) == 1
    assert kip279_truncation_offset((a, b), (a, b)) == 2
    assert kip279_truncation_offset((), (a,)) == 0
    assert kip279_truncation_offset((c,), (a,)) == 0
    # KIP-101: the leader's end offset for the epoch of the follower's last record.
    assert kip101_truncation_offset((a, c), (a, b), 0) == 1  # first offset of a larger epoch
    assert kip101_truncation_offset((a, b), (a,), 0) == 2  # same latest epoch: leader's end
    assert kip101_truncation_offset((), (a,), 1) == 1  # empty leader: fall back to the hw
    assert kip101_truncation_offset((a,), (), 0) == 0


def test_min_isr_cannot_exceed_replicas():
    with pytest.raises(UsageError, match="min_isr"):
        Replication(replicas=2, min_isr=3)


def test_max_crashes_needs_crashes():
    with pytest.raises(UsageError, match="max_crashes"):
        Replication(max_crashes=1)
    assert Replication(lossy_crash=True, max_crashes=1).p.max_crashes == 1


# -- Part 2: extensions ---------------------------------------------------------------------------

SMALL = dict(replicas=2, log_size=1, max_records=1, max_leader_epoch=2)


def test_acks_1_loses_an_acknowledged_record():
    res = check("no-acked-data-loss", acks="1", **SMALL)
    assert res.result == "violation"
    assert len(res.trace.steps) == 6
    assert res.trace.steps[-1].state.acked


@pytest.mark.parametrize("min_isr", [1, 2])
def test_acks_all_without_unclean_election_loses_nothing_across_crashes(min_isr):
    res = check("no-acked-data-loss", acks="all", min_isr=min_isr, crash=True, **SMALL)
    assert res.result == "ok"
    assert res.distinct_states > 5_000


def test_unclean_election_loses_an_acknowledged_record():
    res = check("no-acked-data-loss", acks="all", min_isr=1, unclean=True, **SMALL)
    assert res.result == "violation"
    assert len(res.trace.steps) == 10
    labels = [st.action for st in res.trace.steps[1:]]
    assert any(lab.startswith("ControllerUncleanElectLeader(") for lab in labels)
    assert any(lab.startswith("LeaderAck(") for lab in labels)


def test_unclean_election_diverges_committed_prefixes_but_clean_election_does_not():
    unclean = check("no-divergence", unclean=True, log_size=1)
    assert (unclean.result, len(unclean.trace.steps)) == ("violation", 11)
    assert check("no-divergence", crash=True, log_size=1).result == "ok"


def test_lossy_crash_diverges_committed_prefixes():
    # A lossy crash of an ISR member can drop a committed record; elected, it writes another at
    # the same offset, which no truncation rule prevents.
    sizes = dict(log_size=1)
    assert check("no-divergence", truncation="kip320", crash=True, **sizes).result == "ok"
    on = check("no-divergence", truncation="kip320", lossy_crash=True, **sizes)
    assert (on.result, len(on.trace.steps)) == ("violation", 14)
    labels = [st.action for st in on.trace.steps[1:]]
    assert any(lab.startswith("BrokerCrash(") and "log_end_offset=0" in lab for lab in labels)


def test_hw_truncation_diverges_without_any_crash():
    res = check("no-divergence", truncation="hw")
    assert (res.result, len(res.trace.steps)) == ("violation", 15)
    assert check("no-divergence", truncation="kip101").result == "ok"


def test_symmetry_reduces_states_and_keeps_verdicts():
    # Replica ids are interchangeable; with two replicas almost every orbit has two states.
    plain = check(truncation="kip279", model="tla")
    spec = Replication(truncation="kip279", model="tla")
    reduced = explore(spec, symmetry=True)
    assert (reduced.result, reduced.depth) == ("ok", plain.depth)
    assert reduced.distinct_states == 4_514 < plain.distinct_states
    hw = explore(Replication(truncation="hw", model="tla"), [Replication.property_named("strong-isr")], symmetry=True)
    assert (hw.result, len(hw.trace.steps)) == ("violation", 10)
    s = hw.trace.steps[-1].state
    assert Replication.symmetry(spec.p, Replication.symmetry(spec.p, s)) == Replication.symmetry(spec.p, s)


def test_one_lossy_crash_of_the_last_replica_standing_loses_an_acks_all_record():
    # min.insync.replicas=2 does not survive a single unclean shutdown of the last ISR member,
    # which ZooKeeper-era Kafka re-elects (the case KIP-966's eligible leader replicas address).
    res = check("no-acked-data-loss", acks="all", min_isr=2, lossy_crash=True, max_crashes=1, **SMALL)
    assert (res.result, len(res.trace.steps)) == ("violation", 13)
    labels = [st.action for st in res.trace.steps[1:]]
    assert sum(lab.startswith("BrokerCrash(") for lab in labels) == 1
    assert check("no-acked-data-loss", acks="all", min_isr=2, crash=True, max_crashes=1, **SMALL).result == "ok"


@pytest.mark.parametrize(
    ("truncation", "crash", "expected"),
    [
        ("hw", {}, ("violation", 14)),  # truncating to the hw keeps what the new leader lacks
        ("kip101", {}, ("ok", None)),
        ("kip101", {"lossy_crash": True}, ("violation", 14)),  # KIP-101 falls back to the hw
        ("kip279", {"lossy_crash": True}, ("ok", None)),  # the TLA+ common prefix closes that hole
        ("kip320", {"lossy_crash": True}, ("ok", None)),
    ],
)
def test_follower_matches_leader_separates_the_truncation_rules(truncation, crash, expected):
    res = check("follower-matches-leader", truncation=truncation, model="tla", log_size=1, **crash)
    assert (res.result, res.trace and len(res.trace.steps)) == expected
