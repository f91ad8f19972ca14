"""The controller spec: verdicts of the three fencing variants, pinned state counts, single steps."""

from __future__ import annotations

from dataclasses import replace
from itertools import permutations

import pytest

from kafkamc.checker.local import explore
from kafkamc.errors import UsageError
from kafkamc.spec.controller import Controller, Kind, Session, _forget_others, _rename, canonical

ALL = ("no-stale-request-applied", "zk-writes-fenced", "controller-context-agrees-with-zk", "broker-view-agrees-with-zk",
       "replica-stopped-only-in-shutdown", "controller-epoch-bumped-by-owner")


def check(invariants=None, *, symmetry=False, **params):
    props = None if invariants is None else [Controller.property_named(n) for n in invariants]
    return explore(Controller(**params), props, symmetry=symmetry)


def follow(spec, *labels):
    """The state reached from the initial state along exactly these labels."""
    (state,) = spec.initial()
    for want in labels:
        nexts = [t for _, label, t in spec.successors(state) if label == want]
        assert len(nexts) == 1, (want, [label for _, label, _ in spec.successors(state)])
        state = nexts[0]
    return state


def labels_of(spec, state):
    return [label for _, label, _ in spec.successors(state)]


def step(spec, state, want):
    nexts = [t for _, label, t in spec.successors(state) if label == want]
    assert len(nexts) == 1, (want, labels_of(spec, state))
    return nexts[0]


FAILOVER = ("Elect(b1, epoch=1)", "SessionExpired(b1)", "Elect(b2, epoch=2)")


# -- parameters and properties ------------------------------------------------------------------

def test_defaults_and_default_invariants():
    spec = Controller()
    assert spec.p.as_dict() == {
        "fencing": "zkversion", "election": "multi", "broker_epoch": True, "controlled_shutdown": False,
        "leader_isr_write": False, "isr_write_recheck": True, "brokers": 3, "elections": 2, "expiries": 1,
        "crashes": 0, "leader_epochs": 1, "requests": 2, "in_flight": 2, "isr_changes": 1,
    }
    assert tuple(pr.name for pr in Controller.default_properties()) == ALL
    kinds = {pr.name: pr.kind for pr in Controller.properties()}
    assert kinds["controller-epoch-monotonic"] == "action"
    assert kinds["controller-epoch-bumped-by-owner"] == "action"
    assert all(kinds[n] == "invariant" for n in ALL if n != "controller-epoch-bumped-by-owner")


def test_bad_parameters_are_usage_errors():
    with pytest.raises(UsageError, match="none, epoch, zkversion"):
        Controller(fencing="zxid")
    with pytest.raises(UsageError, match="out of range"):
        Controller(brokers=1)


# -- verdicts -------------------------------------------------------------------------------------

# Measured by exploring the default parameters (brokers=3, elections=2, expiries=1, crashes=0,
# leader_epochs=1, requests=2): distinct states, states generated, depth.
DEFAULT_COUNTS = (36_974, 180_961, 10)
DEFAULT_COUNTS_SYMMETRY = (6_287, 30_896, 10)
NONE_TWO_BROKERS_SYMMETRY = 2_501


def test_zkversion_fencing_holds_all_four_exhaustively():
    res = check()
    assert res.result == "ok", res.violated
    assert set(res.invariants) == set(ALL)
    assert (res.distinct_states, res.states_generated, res.depth) == DEFAULT_COUNTS


def test_symmetry_keeps_the_verdict_and_shrinks_the_count():
    res = check(symmetry=True)
    assert res.result == "ok", res.violated
    assert (res.distinct_states, res.states_generated, res.depth) == DEFAULT_COUNTS_SYMMETRY
    assert res.distinct_states < DEFAULT_COUNTS[0]


# (fencing, property, shortest counterexample length in states, initial state included)
VIOLATIONS = [
    ("none", "no-stale-request-applied", 8),
    ("none", "zk-writes-fenced", 5),
    ("epoch", "zk-writes-fenced", 5),
]


@pytest.mark.parametrize("symmetry", [False, True])
@pytest.mark.parametrize(("fencing", "prop", "length"), VIOLATIONS)
def test_violations_and_shortest_counterexamples(fencing, prop, length, symmetry):
    res = check([prop], fencing=fencing, symmetry=symmetry)
    assert (res.result, res.violated) == ("violation", prop)
    steps = res.trace.steps
    assert len(steps) == length
    assert steps[0].action is None
    spec = Controller(fencing=fencing)
    fn = Controller.property_named(prop).fn
    assert not fn(spec.p, steps[-1].state)
    assert all(fn(spec.p, st.state) for st in steps[:-1])


def test_epoch_fencing_counterexample_is_a_zombie_write_after_failover():
    res = check(["zk-writes-fenced"], fencing="epoch")
    steps = res.trace.steps
    assert [st.action for st in steps[1:4]] == list(FAILOVER)
    last = steps[-1]
    assert last.action.startswith("ElectLeader(b1, ")
    zombie = last.state.brokers[0]
    assert zombie.session == Session.EXPIRED and zombie.epoch == 1
    assert last.state.controller_epoch == 2 and last.state.partition.controller_epoch == 1


def test_none_fencing_counterexample_applies_an_older_epoch_after_a_newer_one():
    steps = check(["no-stale-request-applied"], fencing="none", symmetry=True).trace.steps
    last = steps[-1].action
    assert last.startswith("HandleUpdateMetadata(") or last.startswith("HandleLeaderAndIsr(")
    assert "controllerEpoch=1" in last
    assert any("controllerEpoch=2" in st.action for st in steps[1:-1] if st.action.startswith("Handle"))


def test_default_invariants_find_the_shorter_zk_violation_first_without_fencing():
    res = check(fencing="none")
    assert (res.result, res.violated, len(res.trace.steps)) == ("violation", "zk-writes-fenced", 5)


def test_epoch_fencing_rejects_every_stale_request():
    res = check(["no-stale-request-applied", "single-controller-per-epoch", "controller-epoch-monotonic"],
                fencing="epoch", symmetry=True)
    assert res.result == "ok", res.violated
    assert (res.distinct_states, res.depth) == (6_587, 10)


def test_without_fencing_epochs_still_never_decrease_and_controllers_stay_unique():
    res = check(["controller-epoch-monotonic", "single-controller-per-epoch"], fencing="none", brokers=2,
                symmetry=True)
    assert res.result == "ok", res.violated
    assert res.distinct_states == NONE_TWO_BROKERS_SYMMETRY


# -- single steps ---------------------------------------------------------------------------------

def test_zombie_write_after_failover_is_fenced_by_the_epoch_zk_version():
    spec = Controller()
    s = follow(spec, *FAILOVER)
    writes = [label for label in labels_of(spec, s) if label.startswith("ElectLeader(b1")]
    assert writes == ["ElectLeader(b1) fails: ControllerMovedException"]
    t = step(spec, s, writes[0])
    assert t.partition == s.partition
    zombie = t.brokers[0]
    assert (zombie.active_controller, zombie.epoch, zombie.epoch_zk_version) == (2, 0, 0)
    # The new controller's own write goes through.
    t = step(spec, s, "ElectLeader(b2, leader=b3, leaderEpoch=1, isr=[2, 3])")
    assert (t.partition.leader, t.partition.controller_epoch, t.partition.zk_version) == (3, 2, 1)
    assert not t.unfenced_write


def test_a_zombie_still_holding_the_current_epoch_may_write():
    spec = Controller()
    s = follow(spec, "Elect(b1, epoch=1)", "SessionExpired(b1)",
               "ElectLeader(b1, leader=b2, leaderEpoch=1, isr=[2, 3])")
    assert s.controller == 0 and s.partition.leader == 2 and not s.unfenced_write


def test_a_write_is_aborted_when_a_newer_controller_wrote_the_partition():
    spec = Controller(fencing="epoch")
    s = follow(spec, *FAILOVER, "ElectLeader(b2, leader=b3, leaderEpoch=1, isr=[2, 3])")
    assert not [label for label in labels_of(spec, s) if label.startswith("ElectLeader(b1")]


@pytest.mark.parametrize("fencing", ["none", "epoch", "zkversion"])
def test_stale_update_metadata(fencing):
    spec = Controller(fencing=fencing)
    s = follow(spec, *FAILOVER,
               "SendUpdateMetadata(b1 -> b3, controllerEpoch=1)",
               "SendUpdateMetadata(b2 -> b3, controllerEpoch=2)",
               "HandleUpdateMetadata(b3, controllerEpoch=2)")
    assert s.brokers[2].seen_controller_epoch == 2
    if fencing == "none":
        t = step(spec, s, "HandleUpdateMetadata(b3, controllerEpoch=1)")
        assert t.stale_applied
    else:
        assert "HandleUpdateMetadata(b3, controllerEpoch=1)" not in labels_of(spec, s)
        t = step(spec, s, "RejectUpdateMetadata(b3, controllerEpoch=1): STALE_CONTROLLER_EPOCH")
        assert not t.stale_applied
    assert t.brokers[2].seen_controller_epoch == 2 and t.in_flight == ()


def test_in_flight_bound():
    spec = Controller(requests=3, in_flight=1)
    s = follow(spec, "Elect(b1, epoch=1)", "SendUpdateMetadata(b1 -> b2, controllerEpoch=1)")
    assert not [lab for lab in labels_of(spec, s) if lab.startswith(("Send", "Duplicate"))]
    s = step(spec, s, "HandleUpdateMetadata(b2, controllerEpoch=1)")
    assert "SendUpdateMetadata(b1 -> b2, controllerEpoch=1)" in labels_of(spec, s)


def test_leader_and_isr_moves_the_leader_epoch_only_forward():
    spec = Controller(requests=3)
    s = follow(spec, "Elect(b1, epoch=1)", "ElectLeader(b1, leader=b2, leaderEpoch=1, isr=[1, 2, 3])",
               "SendLeaderAndIsr(b1 -> b2, controllerEpoch=1, leaderEpoch=1)",
               "Duplicate(LeaderAndIsr(b2, controllerEpoch=1, leaderEpoch=1))",
               "HandleLeaderAndIsr(b2, controllerEpoch=1, leaderEpoch=1)")
    assert s.brokers[1].leader_epoch == 1 and len(s.in_flight) == 1 and s.sent == 2
    t = step(spec, s, "HandleLeaderAndIsr(b2, controllerEpoch=1, leaderEpoch=1)")
    assert t.brokers[1] == s.brokers[1] and t.in_flight == ()


def test_expiry_removes_the_controller_znode_and_noticing_it_resigns():
    spec = Controller()
    s = follow(spec, "Elect(b1, epoch=1)", "SessionExpired(b1)")
    assert s.controller == 0 and s.controller_epoch == 1
    assert s.brokers[0].epoch == 1  # the zombie window: it still acts as controller
    assert "SessionExpired(b2)" not in labels_of(spec, s)  # expiries=1
    t = step(spec, s, "Expire(b1)")
    assert (t.brokers[0].session, t.brokers[0].active_controller, t.brokers[0].epoch) == (Session.LIVE, 0, 0)


def test_crash_loses_requests_and_memory_and_restart_starts_fresh():
    spec = Controller(crashes=1)
    s = follow(spec, "Elect(b1, epoch=1)",
               "SendUpdateMetadata(b1 -> b2, controllerEpoch=1)",
               "SendUpdateMetadata(b1 -> b3, controllerEpoch=1)",
               "HandleUpdateMetadata(b2, controllerEpoch=1)")
    t = step(spec, s, "Crash(b2)")
    assert not t.brokers[1].up and [r.dest for r in t.in_flight] == [3]
    u = step(spec, t, "Restart(b2)")
    assert u.brokers[1].up and u.brokers[1].seen_controller_epoch == 0
    mono = Controller.property_named("controller-epoch-monotonic").fn
    assert mono(spec.p, s, "Crash(b2)", t) and mono(spec.p, t, "Restart(b2)", u)
    t = step(spec, s, "Crash(b1)")
    assert t.controller == 0 and "Elect(b2, epoch=2)" in labels_of(spec, t)


def test_watch_updates_the_cached_controller_id():
    spec = Controller()
    s = follow(spec, "Elect(b2, epoch=1)", "ControllerChange(b3, controller=b2)")
    assert [b.active_controller for b in s.brokers] == [0, 2, 2]


def test_the_properties_catch_what_they_claim():
    spec = Controller()
    s = follow(spec, "Elect(b1, epoch=1)", "SessionExpired(b1)", "Elect(b2, epoch=2)")
    single = Controller.property_named("single-controller-per-epoch").fn
    mono = Controller.property_named("controller-epoch-monotonic").fn
    assert single(spec.p, s)
    assert mono(spec.p, s, "Elect(b2, epoch=2)", s)
    # Forged states: the zombie and the new controller with one epoch; /controller_epoch going back.
    b2 = s.brokers[1]
    same_epoch = replace(b2, active_controller=2, epoch=1, epoch_zk_version=1, context_leader_epoch=0)
    assert not single(spec.p, replace(s, brokers=(s.brokers[0], same_epoch, s.brokers[2])))
    assert not mono(spec.p, s, "forged", replace(s, controller_epoch=1))
    seen = replace(s.brokers[2], seen_controller_epoch=2)
    higher = replace(s, brokers=s.brokers[:2] + (seen,))
    assert not mono(spec.p, higher, "forged", s)


# -- view and symmetry ----------------------------------------------------------------------------

def reachable(spec, limit):
    (init,) = spec.initial()
    seen = {init}
    frontier = [init]
    while frontier and len(seen) < limit:
        nxt = []
        for s in frontier:
            for _, _, t in spec.successors(s):
                if t not in seen:
                    seen.add(t)
                    nxt.append(t)
        frontier = nxt
    return sorted(seen)


def test_the_symmetry_representative_is_the_same_for_every_renaming():
    spec = Controller(fencing="epoch", crashes=1)
    states = reachable(spec, 2_000)
    assert len(states) >= 2_000
    orders = list(permutations((1, 2, 3)))
    for s in states[::16]:
        rep = Controller.symmetry(spec.p, s)
        assert Controller.symmetry(spec.p, rep) == rep
        for order in orders:
            renamed = _rename(s, order)
            assert Controller.symmetry(spec.p, renamed) == rep
            # Renaming commutes with the transition relation.
            succ = sorted(_rename(t, order) for _, _, t in spec.successors(s))
            assert succ == sorted(t for _, _, t in spec.successors(renamed))


def test_symmetry_representative_is_a_renaming_of_the_view():
    spec = Controller()
    for s in reachable(spec, 500):
        rep = Controller.symmetry(spec.p, s)
        assert rep in {_rename(_forget_others(s), order) for order in permutations((1, 2, 3))}
        assert rep == canonical(rep)


class NoView(Controller):
    """The spec fingerprinted without its view: larger, with the same verdicts."""

    name = "controller-no-view"
    view = None

    def symmetry(p, s):
        return canonical(s)


def test_the_view_only_merges_states_and_keeps_verdicts():
    with_view = explore(Controller(brokers=2))
    without = explore(NoView(brokers=2))
    assert with_view.result == without.result == "ok"
    assert (with_view.distinct_states, without.distinct_states) == (4_787, 8_213)
    for fencing, prop in (("epoch", "zk-writes-fenced"), ("none", "no-stale-request-applied")):
        a = explore(Controller(brokers=2, fencing=fencing), [Controller.property_named(prop)])
        b = explore(NoView(brokers=2, fencing=fencing), [NoView.property_named(prop)])
        assert a.result == b.result == "violation"
        assert len(a.trace.steps) == len(b.trace.steps)


def test_request_kinds_in_traces():
    spec = Controller()
    s = follow(spec, "Elect(b1, epoch=1)", "SendUpdateMetadata(b1 -> b1, controllerEpoch=1)")
    assert [r.kind for r in s.in_flight] == [Kind.UPDATE_METADATA]
    assert not [lab for lab in labels_of(spec, s) if lab.startswith("SendLeaderAndIsr")]  # no leader yet
