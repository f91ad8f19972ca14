"""The replication spec: TLC parity with the TLA+ model, its known counterexamples, and the extensions."""

from __future__ import annotations

import pytest

from kafkamc.checker.local import explore
from kafkamc.errors import UsageError
from kafkamc.spec.replication import (
    Replication,
    diverging_truncation_offset,
    epoch_cache_truncation_offset,
    fetch_divergence,
    kip101_truncation_offset,
    kip279_truncation_offset,
)


def check(invariant: str | None = None, symmetry: bool = False, **params):
    spec = Replication(**params)
    props = None if invariant is None else [Replication.property_named(invariant)]
    return explore(spec, props, symmetry=symmetry)


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


# -- Part 3: Kafka's rules (the default) against the TLA+ model's, and KIP-320 unbundled (issue 15) --

def recover(name: str, **params):
    from kafkamc.checker.graph import check_recoverability

    spec = Replication(**params)
    return check_recoverability(spec, [], [Replication.recoverability_named(name)])


def test_model_tla_sets_the_defaults_of_the_kafka_rule_flags_only():
    kafka = Replication().p
    assert (kafka.model, kafka.keep_last_isr, kafka.leaderless_ok, kafka.restart_epoch, kafka.epoch_cache) == (
        "kafka", True, True, True, True)
    assert kafka.isr_join == "leso"
    tla = Replication(model="tla").p
    assert (tla.keep_last_isr, tla.leaderless_ok, tla.restart_epoch, tla.epoch_cache, tla.isr_join) == (
        False, False, False, False, "hw-epoch")
    # A flag given explicitly wins over model=tla.
    assert Replication(model="tla", keep_last_isr=True).p.keep_last_isr is True
    # The KIP-320 fences are Kip320.tla's too, so model=tla leaves them on.
    assert (tla.fetch_fencing, tla.truncation_fencing, tla.kafka_7164) == (True, True, True)
    # A spec rebuilt from its resolved parameters (worker processes, trace files) is the same.
    import pickle

    assert pickle.loads(pickle.dumps(Replication(model="tla"))).p == tla


def test_the_controller_never_empties_the_isr():
    # Without keep_last_isr the TLA+ controller removes the last member and no leader can follow.
    off = recover("partition-can-recover", keep_last_isr=False)
    assert (off.result, off.violated, len(off.trace.steps)) == ("violation", "partition-can-recover", 3)
    assert off.trace.steps[-1].action.startswith("ControllerShrinkIsr(")
    assert not off.trace.steps[-1].state.quorum_isr
    on = recover("partition-can-recover")
    assert on.result == "ok"
    # From the state before the last step, Kafka's controller keeps the sole member instead.
    spec = Replication()
    before = off.trace.steps[-2].state
    shrunk = [t for a, _, t in spec.successors(before) if a.name == "controller_shrink_isr"]
    assert shrunk and all(t.quorum_isr == before.quorum_isr for t in shrunk)


def test_leader_in_isr_holds_without_a_leader_in_kafka():
    assert check("leader-in-isr").result == "ok"
    off = check("leader-in-isr", leaderless_ok=False)
    assert (off.result, len(off.trace.steps)) == ("violation", 1)


def test_a_restarted_broker_takes_the_current_leader_epoch():
    off = recover("isr-can-recover", crash=True, max_crashes=1, restart_epoch=False)
    assert (off.result, len(off.trace.steps)) == ("violation", 7)
    labels = [st.action for st in off.trace.steps[1:]]
    assert any(lab.startswith("BrokerRestart(") for lab in labels)
    assert recover("isr-can-recover", crash=True, max_crashes=1).result == "ok"


def test_kip279_on_the_epoch_cache_loses_data_that_the_common_prefix_keeps():
    on = check("strong-isr", truncation="kip279")
    assert (on.result, len(on.trace.steps)) == ("violation", 12)
    # The follower truncated to its high watermark: the leader's cache lacked its latest epoch.
    last = on.trace.steps[-1]
    assert last.action.startswith("BecomeFollower(") and last.action.endswith("truncate_to=0)")
    assert check("strong-isr", truncation="kip279", epoch_cache=False).result == "ok"


def test_epoch_cache_truncation_offsets():
    a0, b1, c2, d0 = (0, 0), (1, 1), (2, 2), (3, 0)
    # KIP-101: the leader's end offset for its latest epoch; the start of its next larger epoch;
    # undefined (the follower's high watermark) past its latest or before its first epoch.
    assert epoch_cache_truncation_offset("kip101", (a0, d0), (a0,), 0) == 1
    assert epoch_cache_truncation_offset("kip101", (a0, d0), (a0, b1), 0) == 0
    assert epoch_cache_truncation_offset("kip101", (a0, c2), (a0, b1), 1) == 1
    assert epoch_cache_truncation_offset("kip101", (c2,), (a0,), 0) == 0
    assert epoch_cache_truncation_offset("kip101", (), (a0,), 1) == 1
    # KIP-279: a leader without the follower's epoch answers its largest smaller epoch; the
    # follower truncates to the end of that epoch in its own log.
    assert epoch_cache_truncation_offset("kip279", (a0, c2), (a0, b1), 0) == 1
    assert epoch_cache_truncation_offset("kip279", (a0, d0, c2), (a0, d0, b1), 0) == 2
    # The walk-back: the leader answers epoch 1, which the follower lacks; it truncates to the end
    # of its largest smaller epoch (0) and asks again.
    assert epoch_cache_truncation_offset("kip279", (a0, b1, (6, 3)), (a0, (5, 2)), 0) == 1
    # Undefined (the leader's latest epoch is older than the follower's): the high watermark,
    # unless the leader holds its current epoch (KAFKA-7415).
    assert epoch_cache_truncation_offset("kip279", (a0,), (a0, b1), 0) == 0
    assert epoch_cache_truncation_offset("kip279", (a0,), (a0, b1), 0, 2) == 1


KIP320_3R = dict(replicas=3, log_size=1, max_records=1)


def test_kip320_fetch_fencing_and_the_isr_join_rule():
    # Replica ids are interchangeable: symmetry keeps verdicts and shortest traces, and the time.
    fixed = check(symmetry=True, **KIP320_3R)
    assert fixed.result == "ok"
    no_fence = check("strong-isr", symmetry=True, fetch_fencing=False, **KIP320_3R)
    assert (no_fence.result, len(no_fence.trace.steps)) == ("violation", 13)
    join_hw = check("strong-isr", symmetry=True, isr_join="hw", **KIP320_3R)
    assert (join_hw.result, len(join_hw.trace.steps)) == ("violation", 12)
    assert any(st.action.startswith("LeaderExpandIsr(") for st in join_hw.trace.steps[1:])
    assert check(symmetry=True, isr_join="hw-epoch", **KIP320_3R).result == "ok"


def test_kip320_truncation_fencing():
    assert check("strong-isr").result == "ok"
    off = check("strong-isr", truncation_fencing=False)
    assert (off.result, len(off.trace.steps)) == ("violation", 12)


def test_kafka_7164_truncates_when_the_leader_stays():
    sizes = dict(replicas=3, log_size=1, max_records=2)
    off = check("strong-isr", symmetry=True, kafka_7164=False, **sizes)
    assert (off.result, len(off.trace.steps)) == ("violation", 15)
    # The follower skipped an epoch and followed the same leader again without truncating.
    follows = [st.action for st in off.trace.steps[1:] if st.action.startswith("BecomeFollower(")]
    assert any("truncate_to=1" in lab for lab in follows)
    assert check("strong-isr", symmetry=True, **sizes).result == "ok"


# -- Part 4: truncate on fetch (KAFKA-10487, KAFKA-10554) and KAFKA-14704 ---------------------------

def test_fetch_divergence_and_truncation_offsets():
    a0, b1, c2 = (0, 0), (1, 1), (2, 2)
    # The leader has the follower's last epoch up to the fetch offset: no divergence.
    assert fetch_divergence((a0, b1), 1, (a0,)) is None
    assert fetch_divergence((a0, b1), 1, ()) is None
    # The follower's last epoch ends earlier on the leader: (epoch, end offset there).
    assert fetch_divergence((a0, c2), 2, (a0, b1)) == (0, 1)
    # The leader's current epoch counts from its start offset (KAFKA-7415).
    assert fetch_divergence((a0,), 2, (a0, b1)) == (0, 1)
    assert diverging_truncation_offset((a0, b1), 0, (0, 1)) == 1
    # A follower without the answered epoch truncates to the end of its largest smaller one.
    assert diverging_truncation_offset((a0, (5, 2)), 0, (1, 2)) == 1
    assert diverging_truncation_offset((a0, b1), 2, (-1, -1)) == 2


def test_kafka_14704_a_follower_applies_the_hw_before_truncating():
    off = check("visible-prefix-stable", truncation="fetch", kafka_14704=False)
    assert (off.result, len(off.trace.steps)) == ("violation", 11)
    last = off.trace.steps[-1]
    assert "diverging, hw=" in last.action
    # The follower serves a record below its hw that the consumers' prefix does not have.
    s = last.state
    assert s.visible and any(log[:1] != s.visible[:1] and h for log, h in zip(s.logs, s.hw))
    fixed = check(None, truncation="fetch")
    assert fixed.result == "ok"
    for name in ("visible-prefix-stable", "no-divergence", "follower-matches-leader"):
        assert check(name, truncation="fetch").result == "ok", name


def test_visible_prefix_stable_separates_the_truncation_rules():
    hw = check("visible-prefix-stable", truncation="hw")
    assert (hw.result, len(hw.trace.steps)) == ("violation", 12)
    assert check("visible-prefix-stable").result == "ok"
    # Without the history variable (model=tla) the invariant checks the present only.
    assert Replication(model="tla").p.track_visible is False
    assert check("visible-prefix-stable", truncation="kip320", model="tla").result == "ok"


def test_tracking_what_consumers_read_adds_no_behaviour():
    # The history variable splits states but never enables or disables a step: the same verdicts
    # and the same shortest traces with and without it.
    for params in ({"truncation": "hw"}, {"truncation_fencing": False}):
        on = check("strong-isr", **params)
        off = check("strong-isr", track_visible=False, **params)
        assert (on.result, len(on.trace.steps)) == (off.result, len(off.trace.steps))
        assert [st.action for st in on.trace.steps] == [st.action for st in off.trace.steps]
