"""The replication-kraft spec: TLC parity with the v3_5 TLA+ model, and each flag's bug and fix."""

from __future__ import annotations

import dataclasses
import json

import pytest

from kafkamc.checker.local import explore
from kafkamc.checker.multicore import explore_multicore
from kafkamc.cli.main import main
from kafkamc.errors import UsageError
from kafkamc.spec.registry import build_spec, load_spec_class
from kafkamc.spec.replication_kraft import (
    Kind,
    Message,
    ReplicationKraft,
    Role,
    _needs_action,
    receive_metadata_update,
)

# The constants: BrokerCount=2, InitReplicationFactor=2, InitIsrSize=2, MinISR=2,
# FenceBrokerLimit=1, UncleanShutdownLimit=1, AvoidLastReplicaStanding=TRUE, and the shipped cfg
# otherwise (Values={A}, CleanShutdownLimit=0, LeaderShrinkIsrLimit=0, ReassignmentLimit=0).
PARITY = dict(brokers=2, replication_factor=2, init_isr_size=2, min_isr=2, fence_limit=1,
              unclean_shutdown_limit=1, avoid_last_replica_standing=True, values=1, clean_shutdown_limit=0,
              isr_shrink_limit=0, reassignment_limit=0)
# What TLC reports for kafka_replication_v3_5 with those constants and the cfg's VIEW.
TLC_DISTINCT, TLC_GENERATED, TLC_DEPTH = 33_794, 111_418, 36

# The invariants that show harm (replication-quorum-superset restates the maximal-ISR rule).
HARM = ["leader-completeness", "leader-candidate-completeness", "no-committed-record-lost",
        "consistent-read", "log-matching"]


def check(invariants=None, max_depth=None, **params):
    spec = ReplicationKraft(**params)
    props = None if invariants is None else [ReplicationKraft.property_named(n) for n in invariants]
    return explore(spec, props, max_depth=max_depth)


def test_the_defaults_are_the_parity_constants():
    assert {k: ReplicationKraft().p.as_dict()[k] for k in PARITY} == PARITY


def test_tlc_parity():
    r = check(**PARITY)
    assert r.result == "ok", r.violated
    assert (r.distinct_states, r.states_generated, r.depth) == (TLC_DISTINCT, TLC_GENERATED, TLC_DEPTH)


def test_bundled_and_every_invariant_checked_by_default():
    assert load_spec_class("replication-kraft") is ReplicationKraft
    names = [p.name for p in ReplicationKraft.default_properties()]
    assert names == ["leader-completeness", "leader-candidate-completeness", "replication-quorum-superset",
                     "log-matching", "metadata-log-matching", "consistent-read", "no-committed-record-lost",
                     "min-isr-recovery-quorum"]


def test_the_view_leaves_out_the_auxiliary_values():
    p = ReplicationKraft().p
    s = next(iter(ReplicationKraft.init_states(p)))
    aux = dataclasses.replace(s, processed=frozenset({Message(Kind.FETCH_REQUEST, 2, 1)}), next_broker_epoch=7,
                              next_incarnation=9, fences=1, unclean_shutdowns=1, floor_offset=(1, 1))
    assert aux != s and ReplicationKraft.view(p, aux) == ReplicationKraft.view(p, s)
    assert ReplicationKraft.view(p, dataclasses.replace(s, hwm=(2, 1))) != ReplicationKraft.view(p, s)


def test_a_leader_seeing_an_epoch_bump_is_generated_twice_as_tlc_does():
    """PartitionNeedsAction is a disjunction; TLC computes the successor once per true disjunct."""
    p = ReplicationKraft().p
    s = next(iter(ReplicationKraft.init_states(p)))
    # r1 leads; the controller re-elects it in a new leader epoch (r2 fenced: ISR stays {1}).
    rec = dataclasses.replace(s.metadata_log[0], isr=frozenset({1}), leader_epoch=2, partition_epoch=2)
    s2 = dataclasses.replace(s, metadata_log=s.metadata_log + (rec,))
    assert s2.role[0] == Role.LEADER and _needs_action(s2, 1, 2) == 2
    out = list(receive_metadata_update(p, s2, 1))
    assert len(out) == 2 and out[0] == out[1]
    # A follower seeing the bump: once.
    assert _needs_action(s2, 2, 2) == 1


def test_cross_parameter_checks():
    with pytest.raises(UsageError, match="replication_factor"):
        ReplicationKraft(brokers=2, replication_factor=3)
    with pytest.raises(UsageError, match="min_isr"):
        ReplicationKraft(min_isr=2, init_isr_size=1)


# -- each flag: the bug with it off, the fix with it on ---------------------------------------
# A fix is checked here to the depth at which its bug shows (fast); kafkamc.toml checks it in full.

def test_last_replica_standing_loses_committed_data():
    """Kafka 3.5 (no ELR): the last ISR member loses its disk, restarts empty and is elected again."""
    r = check(avoid_last_replica_standing=False)
    assert r.result == "violation" and r.violated == "leader-completeness"
    assert len(r.trace) == 8
    assert [step.action.split("(")[0] for step in r.trace.steps[1:]] == [
        "WriteRecord", "FenceBroker", "ReceiveMetadataUpdate", "UncleanShutdown", "BrokerStart",
        "ReceiveBrokerRegistration", "ReceiveBrokerRegistrationResponse"]


def test_kip903_broker_epochs_in_alter_partition():
    """Without KIP-903 the controller adds a replica on the strength of a fetch sent before it lost its disk."""
    bug = check(broker_epoch_check=False, init_isr_size=1, min_isr=1)
    assert bug.result == "violation" and bug.violated == "leader-candidate-completeness" and len(bug.trace) == 13
    fix = check(broker_epoch_check=True, init_isr_size=1, min_isr=1, max_depth=13)
    assert fix.result == "incomplete" and fix.violated is None


def test_kip966_elr_without_unclean_shutdown_detection():
    """KIP-966 keeps a replica that left the ISR electable (ELR); one that lost its disk must leave it."""
    bug = check(elr=True, avoid_last_replica_standing=False, unclean_shutdown_detection=False)
    assert bug.result == "violation" and bug.violated == "leader-candidate-completeness" and len(bug.trace) == 11
    fix = check(elr=True, avoid_last_replica_standing=False, max_depth=11)
    assert fix.result == "incomplete" and fix.violated is None


def test_kip966_hw_advances_only_at_min_isr():
    """With ELR, committing over an ISR below min ISR leaves an ELR member without the record."""
    bug = check(elr=True, avoid_last_replica_standing=False, elr_hw_needs_min_isr=False)
    assert bug.result == "violation" and bug.violated == "leader-candidate-completeness" and len(bug.trace) == 4


def test_kip966_survives_the_last_replica_standing_case():
    """The v3.5 loss above needs the HW to advance over the last replica alone; KIP-966 forbids it."""
    r = check(elr=True, avoid_last_replica_standing=False, max_depth=8)
    assert r.result == "incomplete" and r.violated is None


def test_kip497_maximal_isr():
    """Without the maximal-ISR rule a leader commits over the ISR it proposes before the controller
    has accepted it; the follower it drops is still in the controller's ISR, without the record."""
    shrink = dict(isr_shrink_limit=1, min_isr=1, unclean_shutdown_limit=0)
    bug = check(HARM, maximal_isr=False, **shrink)
    assert bug.result == "violation" and bug.violated == "leader-candidate-completeness" and len(bug.trace) == 5
    assert [step.action.split("(")[0] for step in bug.trace.steps[1:]] == [
        "SendAlterPartition", "WriteRecord", "SendFetch", "ReceiveFetch"]
    fix = check(maximal_isr=True, **shrink)
    assert fix.result == "ok" and fix.distinct_states == 15_666
    # replication-quorum-superset states the rule itself: it fails as soon as the leader proposes.
    rule = check(["replication-quorum-superset"], maximal_isr=False, isr_shrink_limit=1, min_isr=1)
    assert rule.result == "violation" and len(rule.trace) == 2


def test_check_on_the_command_line(capsys):
    code = main(["check", "replication-kraft", "-p", "avoid_last_replica_standing=false", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 1 and doc["violated"] == "leader-completeness" and len(doc["trace"]) == 8
    assert doc["trace"][-1]["action"].startswith("ReceiveBrokerRegistrationResponse(r1")


def test_multicore_equals_single_process():
    """Which state of a view is explored first matters to the counts; two workers keep the order."""
    spec = build_spec("replication-kraft", ["elr=true", "avoid_last_replica_standing=false",
                                            "unclean_shutdown_detection=false"])
    a, b = explore(spec), explore_multicore(spec, workers=2, fork_threshold=50)
    assert (a.result, a.violated, a.distinct_states, a.states_generated, a.depth) == (
        b.result, b.violated, b.distinct_states, b.states_generated, b.depth)
    assert a.trace.path == b.trace.path


def test_parity_does_not_hang_on_the_order_of_messages_or_actions(monkeypatch):
    """The view drops the auxiliary values, so the first state of a view is the one explored; at
    the parity configuration the order of messages and of actions does not change the counts."""
    import kafkamc.spec.replication_kraft as module

    forward = module._message_order
    monkeypatch.setattr(module, "_message_order", lambda m: tuple(
        -x if isinstance(x, int) else x for x in forward(m)))
    monkeypatch.setattr(module, "BROKER_ACTIONS", tuple(reversed(module.BROKER_ACTIONS)))
    r = check(**PARITY)
    assert (r.result, r.distinct_states, r.states_generated, r.depth) == ("ok", TLC_DISTINCT, TLC_GENERATED, TLC_DEPTH)


def test_mirrored_enum_values_match_the_spec():
    from kafkamc.invariants import replication_kraft as inv
    from kafkamc.spec.replication_kraft import BrokerStatus

    assert (inv._RUNNING, inv._LEADER) == (BrokerStatus.RUNNING, Role.LEADER)
