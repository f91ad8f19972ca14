"""The controller's history flags (issue 15): each bug's verdict with its flag off, the fix's with it on."""

from __future__ import annotations

import pytest

from itertools import permutations

from kafkamc.checker.local import explore
from kafkamc.invariants.api import Property
from kafkamc.spec.controller import Controller, _rename
from kafkamc.spec.domain import contains

from test_controller import DEFAULT_COUNTS, follow, labels_of, reachable, step


def follow_from(spec, state, *labels):
    for want in labels:
        state = step(spec, state, want)
    return state


def check(invariants, *, symmetry=False, **params):
    props = [Controller.property_named(n) for n in invariants]
    return explore(Controller(**params), props, symmetry=symmetry)


def test_flags_at_their_defaults_are_todays_model():
    # The default exploration is DEFAULT_COUNTS with the flags spelled out, and the two-step
    # election never fires under the multi.
    res = explore(Controller(election="multi", broker_epoch=True, controlled_shutdown=False, leader_isr_write=False),
                  None)
    assert (res.distinct_states, res.states_generated, res.depth) == DEFAULT_COUNTS
    enabled = {c.action: c.enabled for c in res.coverage}
    for action in ("increment_epoch", "controlled_shutdown", "send_stop_replica", "leader_isr_change",
                   "isr_change_notification"):
        assert enabled[action] == 0, action


# -- election=two-step (Kafka < 2.1) vs the multi of KAFKA-6082 ---------------------------------

ZOMBIE_BUMP = ["CreateController(b1)", "SessionExpired(b1)", "IncrementControllerEpoch(b1, epoch=1)"]


@pytest.mark.parametrize("fencing", ["epoch", "zkversion"])
@pytest.mark.parametrize("symmetry", [False, True])
def test_two_step_election_lets_an_expired_broker_bump_the_epoch(fencing, symmetry):
    res = check(["controller-epoch-bumped-by-owner"], fencing=fencing, election="two-step", brokers=2,
                symmetry=symmetry)
    assert (res.result, res.violated) == ("violation", "controller-epoch-bumped-by-owner")
    steps = res.trace.steps
    assert len(steps) == 4
    if not symmetry:
        assert [st.action for st in steps[1:]] == ZOMBIE_BUMP
    last = steps[-1].state
    assert last.controller == 0 and last.controller_epoch == 1 and last.brokers[0].epoch == 1


@pytest.mark.parametrize("fencing", ["none", "epoch", "zkversion"])
def test_multi_election_bumps_only_with_the_znode(fencing):
    res = check(["controller-epoch-bumped-by-owner"], fencing=fencing, brokers=2)
    assert res.result == "ok", res.violated


def test_two_step_zombie_then_fences_out_the_registered_controller():
    spec = Controller(fencing="zkversion", election="two-step", brokers=2)
    s = follow(spec, *ZOMBIE_BUMP, "CreateController(b2)")
    # b2 owns /controller but the expired b1 holds the current epoch and zkVersion: KAFKA-6082's
    # CheckOp passes for b1, and b2 only acts after bumping past it.
    assert s.controller == 2 and s.brokers[1].epoch == 0
    assert s.brokers[0].epoch == s.controller_epoch and s.brokers[0].epoch_zk_version == s.controller_epoch_zk_version
    assert "IncrementControllerEpoch(b2, epoch=2)" in labels_of(spec, s)


def test_two_step_election_keeps_one_controller_per_epoch():
    # The bump is conditioned on the zkVersion read (incrementControllerEpoch), so two brokers
    # never hold one epoch: the pre-2.1 harm is the bump by a non-owner, not a shared epoch.
    res = check(["single-controller-per-epoch", "controller-epoch-monotonic"], fencing="epoch",
                election="two-step", brokers=2)
    assert res.result == "ok", res.violated


# -- broker_epoch (KIP-380) -----------------------------------------------------------------------

def test_without_broker_epoch_a_restarted_broker_can_receive_its_predecessors_request():
    res = check(["requests-reach-their-incarnation"], broker_epoch=False, crashes=1, brokers=2)
    assert (res.result, res.violated) == ("violation", "requests-reach-their-incarnation")
    actions = [st.action for st in res.trace.steps]
    assert len(actions) == 5
    assert actions[3:] == ["Crash(b1)", "Restart(b1)"]
    # ... and the new incarnation then applies it.
    spec = Controller(broker_epoch=False, crashes=1, brokers=2)
    handles = [lb for lb in labels_of(spec, res.trace.steps[-1].state) if lb.startswith("Handle")]
    assert handles and all("(earlier incarnation)" in lb for lb in handles)


def test_without_broker_epoch_requests_to_a_down_broker_wait():
    spec = Controller(broker_epoch=False, crashes=1, brokers=2)
    s = follow(spec, "Elect(b1, epoch=1)", "SendUpdateMetadata(b1 -> b2, controllerEpoch=1)", "Crash(b2)")
    assert len(s.in_flight) == 1 and s.in_flight[0].old_incarnation
    assert not any(lb.startswith("Handle") for lb in labels_of(spec, s))


def test_broker_epoch_drops_requests_of_a_crashed_incarnation():
    res = check(["requests-reach-their-incarnation"], crashes=1, brokers=2)
    assert res.result == "ok", res.violated


# -- controller-context-agrees-with-zk (KAFKA-3083) ---------------------------------------------

@pytest.mark.parametrize("fencing", ["none", "epoch"])
def test_zombie_write_leaves_the_new_controller_with_a_stale_context(fencing):
    res = check(["controller-context-agrees-with-zk"], fencing=fencing)
    assert (res.result, res.violated) == ("violation", "controller-context-agrees-with-zk")
    steps = res.trace.steps
    assert [st.action for st in steps[1:4]] == ["Elect(b1, epoch=1)", "SessionExpired(b1)", "Elect(b2, epoch=2)"]
    assert steps[-1].action.startswith("ElectLeader(b1, ") and len(steps) == 5
    last = steps[-1].state
    assert last.brokers[1].context_leader_epoch == 0 < last.partition.leader_epoch


def test_zkversion_fencing_keeps_the_controller_context_in_step():
    res = check(["controller-context-agrees-with-zk"])
    assert res.result == "ok", res.violated
    assert (res.distinct_states, res.states_generated, res.depth) == DEFAULT_COUNTS


# -- controlled_shutdown and StopReplica, with and without the broker epoch (KIP-380) ------------

BOUNCE = ["Elect(b1, epoch=1)", "ControlledShutdown(b1, controller=b1)", "SendStopReplica(b1 -> b1, controllerEpoch=1)",
          "ShutDown(b1)", "Restart(b1)", "HandleStopReplica(b1 (earlier incarnation), controllerEpoch=1)"]


@pytest.mark.parametrize("symmetry", [False, True])
def test_without_broker_epoch_a_bounced_broker_applies_its_predecessors_stop_replica(symmetry):
    res = check(["replica-stopped-only-in-shutdown"], controlled_shutdown=True, broker_epoch=False, crashes=1,
                brokers=2, symmetry=symmetry)
    assert (res.result, res.violated) == ("violation", "replica-stopped-only-in-shutdown")
    steps = res.trace.steps
    assert len(steps) == 7
    if not symmetry:
        assert [st.action for st in steps[1:]] == BOUNCE
    b1 = steps[-1].state.brokers[0]
    assert b1.up and b1.stopped and not b1.shutting_down


def test_with_broker_epoch_only_a_broker_in_controlled_shutdown_stops_its_replica():
    res = check(["replica-stopped-only-in-shutdown"], controlled_shutdown=True, crashes=1, brokers=2)
    assert res.result == "ok", res.violated
    assert (res.distinct_states, res.depth) == (71_511, 13)
    fired = {c.action: c.distinct for c in res.coverage}
    assert fired["controlled_shutdown"] > 0 and fired["send_stop_replica"] > 0


def test_controlled_shutdown_moves_leadership_and_shrinks_the_isr():
    spec = Controller(controlled_shutdown=True, crashes=1, leader_epochs=2)
    s = follow(spec, "Elect(b1, epoch=1)", "ElectLeader(b1, leader=b2, leaderEpoch=1, isr=[1, 2, 3])")
    labels = [lb for lb in labels_of(spec, s) if lb.startswith("ControlledShutdown(b2")]
    assert labels == ["ControlledShutdown(b2, controller=b1): leader=b1, leaderEpoch=2, isr=[1, 3]",
                      "ControlledShutdown(b2, controller=b1): leader=b3, leaderEpoch=2, isr=[1, 3]"]
    t = step(spec, s, labels[1])
    assert (t.partition.leader, t.partition.isr, t.brokers[1].shutting_down) == (3, (1, 3), True)
    assert t.brokers[0].context_leader_epoch == 2
    # A follower leaves the ISR; StopReplica goes to it, never to the leader.
    t = step(spec, s, "ControlledShutdown(b3, controller=b1): leader=b2, leaderEpoch=2, isr=[1, 2]")
    assert "SendStopReplica(b1 -> b3, controllerEpoch=1)" in labels_of(spec, t)
    t = step(spec, s, "ControlledShutdown(b2, controller=b1): leader=b1, leaderEpoch=2, isr=[1, 3]")
    assert "SendStopReplica(b1 -> b2, controllerEpoch=1)" in labels_of(spec, t)
    # A leader epoch later LeaderAndIsr starts a stopped replica again.
    spec = Controller(controlled_shutdown=True, crashes=1, leader_epochs=2, brokers=2)
    s = follow(spec, "Elect(b1, epoch=1)", "ControlledShutdown(b2, controller=b1)",
               "SendStopReplica(b1 -> b2, controllerEpoch=1)", "HandleStopReplica(b2, controllerEpoch=1)")
    assert s.brokers[1].stopped
    s = follow_from(spec, s, "ElectLeader(b1, leader=b1, leaderEpoch=1, isr=[1, 2])",
                    "SendLeaderAndIsr(b1 -> b2, controllerEpoch=1, leaderEpoch=1)",
                    "HandleLeaderAndIsr(b2, controllerEpoch=1, leaderEpoch=1)")
    assert not s.brokers[1].stopped


# -- leader_isr_write and isr_write_recheck (KAFKA-1382, KAFKA-2729) ----------------------------

LEADER_WRITE = ["Elect(b1, epoch=1)", "ElectLeader(b1, leader=b1, leaderEpoch=1, isr=[1, 2, 3])",
                "SendLeaderAndIsr(b1 -> b1, controllerEpoch=1, leaderEpoch=1, leader=b1, isr=[1, 2, 3], zkVersion=1)",
                "HandleLeaderAndIsr(b1, controllerEpoch=1, leaderEpoch=1, leader=b1, isr=[1, 2, 3], zkVersion=1)"]


def test_without_the_recheck_a_lost_response_leaves_the_leader_behind_zookeeper():
    res = check(["broker-view-agrees-with-zk"], leader_isr_write=True, isr_write_recheck=False)
    assert (res.result, res.violated) == ("violation", "broker-view-agrees-with-zk")
    steps = res.trace.steps
    assert [st.action for st in steps[1:5]] == LEADER_WRITE
    assert steps[-1].action.endswith(": connection loss, the retry fails with BADVERSION") and len(steps) == 6
    last = steps[-1].state
    assert last.partition.zk_version == 2 and last.brokers[0].zk_version == 1
    assert res.distinct_states == 3_751


def test_with_the_recheck_the_leader_takes_the_version_it_wrote():
    res = check(["broker-view-agrees-with-zk", "controller-context-agrees-with-zk"], leader_isr_write=True)
    assert res.result == "ok", res.violated
    assert (res.distinct_states, res.depth) == (57_275, 13)
    fired = {c.action: c.distinct for c in res.coverage}
    assert fired["leader_isr_change"] > 0 and fired["isr_change_notification"] > 0


def test_leader_isr_write_outcomes():
    spec = Controller(leader_isr_write=True, isr_write_recheck=False, isr_changes=2)
    s = follow(spec, *LEADER_WRITE)
    shrink = "LeaderShrinkIsr(b1, isr=[1, 3], zkVersion=1)"
    assert [lb for lb in labels_of(spec, s) if lb.startswith(shrink)] == [
        shrink, shrink + ": connection loss, the retry fails with BADVERSION"]
    lost = step(spec, s, shrink + ": connection loss, the retry fails with BADVERSION")
    # The stale cached zkVersion fails every later write ("Cached zkVersion not equal to that in
    # zookeeper, skip updating ISR"): no ISR change is enabled any more.
    assert not [lb for lb in labels_of(spec, lost) if lb.startswith("Leader")]
    spec = Controller(leader_isr_write=True, isr_changes=2)
    # The same state with the recheck: the re-read finds the leader's own write.
    assert labels_of(spec, lost).count(shrink + ": BADVERSION, the znode holds it already") == 1
    # The controller learns the new ISR from /isr_change_notification.
    t = step(spec, s, shrink)
    t = step(spec, t, "IsrChangeNotification(b1, isr=[1, 3], zkVersion=2)")
    assert (t.brokers[0].context_isr, t.brokers[0].context_zk_version) == ((1, 3), 2)


# -- the new fields: symmetry and the prover's domain -------------------------------------------

FLAGGED = dict(controlled_shutdown=True, leader_isr_write=True, broker_epoch=False, crashes=1, leader_epochs=2)


def test_symmetry_commutes_with_the_flagged_transitions():
    spec = Controller(**FLAGGED)
    states = reachable(spec, 20_000)[::150]
    # The sample reaches what the flags add: shutdowns, stopped replicas, requests of an earlier
    # incarnation, a broker's own ISR.
    assert all(any(has(s) for s in states) for has in (
        lambda s: any(b.shutting_down for b in s.brokers), lambda s: any(b.stopped for b in s.brokers),
        lambda s: any(r.old_incarnation for r in s.in_flight), lambda s: any(b.isr for b in s.brokers)))
    for s in states:
        rep = Controller.symmetry(spec.p, s)
        for order in permutations((1, 2, 3)):
            renamed = _rename(s, order)
            assert Controller.symmetry(spec.p, renamed) == rep
            assert sorted(_rename(t, order) for _, _, t in spec.successors(s)) == \
                sorted(t for _, _, t in spec.successors(renamed))


def test_flagged_reachable_states_are_in_the_domain():
    spec = Controller(brokers=2, **FLAGGED)
    dom = Controller.domain(spec.p)
    prop = Property("in-domain", "every reachable state is in the domain", "invariant",
                    lambda p, s: contains(dom, s))
    res = explore(spec, [prop], max_depth=8)
    assert res.violated is None and res.distinct_states > 5_000
