"""The controller's history flags (issue 15): each bug's verdict with its flag off, the fix's with it on."""

from __future__ import annotations

import pytest

from kafkamc.checker.local import explore
from kafkamc.spec.controller import Controller

from test_controller import DEFAULT_COUNTS, follow, labels_of


def check(invariants, *, symmetry=False, **params):
    props = [Controller.property_named(n) for n in invariants]
    return explore(Controller(**params), props, symmetry=symmetry)


def test_flags_at_their_defaults_are_todays_model():
    # The default exploration is DEFAULT_COUNTS with the flags spelled out, and the two-step
    # election never fires under the multi.
    res = explore(Controller(election="multi", broker_epoch=True), None)
    assert (res.distinct_states, res.states_generated, res.depth) == DEFAULT_COUNTS
    assert {c.action: c.enabled for c in res.coverage}["increment_epoch"] == 0


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
