"""The ``group`` spec: verdicts, shortest counterexamples and state counts, all measured by exploring."""

from __future__ import annotations

import pytest

from kafkamc.checker.local import explore
from kafkamc.errors import UsageError
from kafkamc.invariants import group as ginv
from kafkamc.invariants.api import Property
from kafkamc.spec.group import (
    VALID_PREVIOUS_STATES, ClientState, Group, GroupState, Member, assignments,
)
from kafkamc.spec.registry import load_spec_class

ALL = (
    "no-double-assignment", "no-double-ownership", "commit-from-current-generation",
    "static-instance-unique", "generation-monotonic", "valid-group-transitions",
)


def check(*names, **params):
    spec = Group(**params)
    props = None if not names else [Group.property_named(n) for n in names]
    return explore(spec, props)


def test_registry_and_defaults():
    assert load_spec_class("group") is Group
    assert tuple(p.name for p in Group.default_properties()) == ALL
    assert Group().p.as_dict() == {
        "consumers": 2, "partitions": 2, "max_generation": 3, "max_session_expiries": 1,
        "protocol": "eager", "static": 0, "static_rejoin": "replace", "commit_check": "generation",
        "cooperative_assignor": "safe", "sticky_claims": "generation-aware",
    }


def test_invariant_constants_match_the_spec_enums():
    assert ginv._FENCED == ClientState.FENCED and ginv._DEAD == GroupState.DEAD
    moves = {(int(a), int(b)) for b, froms in VALID_PREVIOUS_STATES.items() for a in froms}
    assert moves == set(ginv.VALID_MOVES)


@pytest.mark.parametrize("params, message", [
    ({"static": 3}, "exceeds consumers"),
    ({"static_rejoin": "reuse"}, "needs static members"),
    ({"cooperative_assignor": "unsafe"}, "needs protocol=cooperative"),
    ({"protocol": "sticky"}, "not allowed"),
])
def test_bad_parameters(params, message):
    with pytest.raises(UsageError, match=message):
        Group(**params)


def test_default_configuration_holds_every_invariant():
    r = check()
    assert (r.result, r.violated) == ("ok", None)
    assert r.invariants == ALL
    assert (r.distinct_states, r.states_generated, r.depth) == (15703, 45955, 22)


def test_cooperative_holds_every_invariant():
    r = check(protocol="cooperative")
    assert r.result == "ok"
    assert (r.distinct_states, r.depth) == (5849, 19)


@pytest.mark.parametrize("protocol, states, depth", [("eager", 1114, 18), ("cooperative", 554, 15)])
def test_static_member_replacement_holds(protocol, states, depth):
    # One instance id, two processes configured with it (the restart of KAFKA-8500).
    r = check(consumers=1, static=1, protocol=protocol)
    assert r.result == "ok"
    assert (r.distinct_states, r.depth) == (states, depth)


def _labels(r):
    return [step.action for step in r.trace.steps]


def test_commit_check_none_violates_commit_from_current_generation():
    r = check(commit_check="none")
    assert (r.result, r.violated) == ("violation", "commit-from-current-generation")
    assert len(r.trace.steps) == 7
    labels = _labels(r)
    assert labels[-2].startswith("SessionExpiry(m1)")  # the zombie's session expired ...
    assert labels[-1].startswith("OffsetCommit(c1, m1, generation=1)")  # ... and it still commits


def test_commit_check_none_breaks_nothing_else():
    others = [n for n in ALL if n != "commit-from-current-generation"]
    r = check(*others, commit_check="none", max_generation=2)
    assert r.result == "ok"
    assert r.distinct_states == 5401


def test_unsafe_cooperative_assignor_violates_no_double_ownership():
    r = check(protocol="cooperative", cooperative_assignor="unsafe")
    assert (r.result, r.violated) == ("violation", "no-double-ownership")
    assert len(r.trace.steps) == 10
    labels = _labels(r)
    # The leader's own SyncGroup response (revoking p2) is still in flight when the follower
    # already consumes p2.
    assert labels[-2] == "SyncGroup(c1) leader assigns m1:{p1}, m2:{p2}"
    assert labels[-1] == "SyncGroup(c2) -> {p2}"
    last = r.trace.steps[-1].state
    assert last.clients[0].state == ClientState.AWAITING_SYNC and last.clients[0].owned == {1, 2}


def test_unsafe_cooperative_assignor_keeps_coordinator_assignments_disjoint():
    others = [n for n in ALL if n != "no-double-ownership"]
    r = check(*others, protocol="cooperative", cooperative_assignor="unsafe")
    assert r.result == "ok"
    assert r.distinct_states == 6169


@pytest.mark.parametrize("consumers", [1, 2])
def test_static_rejoin_reuse_violates_static_instance_unique(consumers):
    r = check(consumers=consumers, static=1, static_rejoin="reuse")
    assert (r.result, r.violated) == ("violation", "static-instance-unique")
    assert len(r.trace.steps) == 5
    assert _labels(r)[3].endswith("static member m1 reused")


def test_raw_sticky_claims_violate_no_double_assignment():
    r = check(sticky_claims="raw")
    assert (r.result, r.violated) == ("violation", "no-double-assignment")
    assert len(r.trace.steps) == 14
    assert _labels(r)[-1] == "SyncGroup(c2) leader assigns m1:{p1,p2}, m2:{p1,p2}"


def test_raw_sticky_claims_then_violate_no_double_ownership():
    r = check("no-double-ownership", sticky_claims="raw")
    assert (r.result, r.violated) == ("violation", "no-double-ownership")
    assert len(r.trace.steps) == 16


def test_action_properties_reject_what_kafka_forbids():
    spec = Group()
    s = spec.initial()[0]
    stable = type(s)(GroupState.STABLE, 2, 0, (), s.clients, 0, s.commit)
    empty = type(s)(GroupState.EMPTY, 2, 0, (), s.clients, 0, s.commit)
    older = type(s)(GroupState.STABLE, 1, 0, (), s.clients, 0, s.commit)
    assert not ginv.valid_group_transitions(spec.p, stable, "x", empty)
    preparing = type(s)(GroupState.PREPARING_REBALANCE, 2, 0, (), s.clients, 0, s.commit)
    assert ginv.valid_group_transitions(spec.p, empty, "x", preparing)
    assert ginv.valid_group_transitions(spec.p, stable, "x", stable)
    assert not ginv.generation_monotonic(spec.p, stable, "x", older)
    assert ginv.generation_monotonic(spec.p, older, "x", stable)


def _m(mid, claimed, gen):
    return Member(mid, 0, frozenset(claimed), gen, frozenset(), 0)


def _a(*sets):
    return tuple(frozenset(x) for x in sets)


def test_assignor_rules():
    eager = Group().p
    coop = Group(protocol="cooperative").p
    unsafe = Group(protocol="cooperative", cooperative_assignor="unsafe").p
    raw = Group(sticky_claims="raw").p
    # m1 owns both partitions, m2 is new: the balanced sticky target moves one partition.
    owner_and_new = (_m(1, {1, 2}, 1), _m(2, (), -1))
    assert assignments(eager, owner_and_new) == [_a({1}, {2}), _a({2}, {1})]
    assert assignments(unsafe, owner_and_new) == [_a({1}, {2}), _a({2}, {1})]
    # KIP-429: the moved partition is only revoked in this rebalance.
    assert assignments(coop, owner_and_new) == [_a({1}, ()), _a({2}, ())]
    # A stale claim (generation 1) against a newer one (generation 2): the newer wins (KIP-341) ...
    stale = (_m(1, {1}, 1), _m(2, {1, 2}, 2))
    assert assignments(eager, stale) == [_a({1}, {2}), _a({2}, {1})]
    # ... or both keep it (KAFKA-7026).
    assert assignments(raw, stale) == [_a({1}, {1, 2})]
    # Same generation on both claims: nobody owns it (KAFKA-12984), so the target is free.
    tie = (_m(1, {1}, 2), _m(2, {1, 2}, 2))
    assert assignments(coop, tie) == [_a({1}, {2})]


# -- reachability: the invariants are not vacuous --------------------------------------------------
# Each check explores until a state with the wanted shape is found (as the "violation" of its
# negation) and pins the length of the shortest path to it.

def reach(predicate, **params):
    prop = Property("reached", "the wanted state is never reached", "invariant",
                    lambda p, s: not predicate(p, s))
    r = explore(Group(**params), [prop])
    assert (r.result, r.violated) == ("violation", "reached")
    return r


@pytest.mark.parametrize("state, steps", [
    (GroupState.PREPARING_REBALANCE, 2),
    (GroupState.COMPLETING_REBALANCE, 3),
    (GroupState.STABLE, 4),
    (GroupState.EMPTY, 5),  # generation 2 completes after the only member left
    (GroupState.DEAD, 6),
])
def test_every_group_state_is_reachable(state, steps):
    r = reach(lambda p, s: s.group == state and s.generation > 0 if state == GroupState.EMPTY
              else s.group == state)
    assert len(r.trace.steps) == steps


def test_both_consumers_own_partitions():
    r = reach(lambda p, s: all(c.owned and c.state == ClientState.STABLE for c in s.clients))
    assert len(r.trace.steps) == 7


def test_previous_owner_commits_during_preparing_rebalance():
    # Allowed by design (the generation is bumped only at join completion) and not flagged.
    r = reach(lambda p, s: s.commit.member_id and s.group == GroupState.PREPARING_REBALANCE)
    assert len(r.trace.steps) == 7
    assert r.trace.steps[-1].action.startswith("OffsetCommit")
    assert ginv.commit_from_current_generation(Group().p, r.trace.steps[-1].state)


def test_replaced_static_member_parked_in_join_is_fenced_at_once():
    # KAFKA-8500: the replaced member's pending JoinGroup fails with FENCED_INSTANCE_ID.
    r = reach(lambda p, s: any(c.state == ClientState.FENCED for c in s.clients),
              consumers=1, static=1)
    assert _labels(r)[1:] == ["JoinGroup(c1) -> new member m1",
                              "JoinGroup(c2) -> static member m1 replaced by m2"]


def test_cooperative_member_revokes_then_rejoins():
    # KIP-429: a member of the current generation that revoked a partition and must rejoin; the
    # partition was assigned to nobody in that generation.
    def revoked(p, s):
        return any(c.state == ClientState.UNJOINED and c.member_id and c.generation == s.generation
                   for c in s.clients)
    r = reach(revoked, protocol="cooperative")
    assert len(r.trace.steps) == 10
    assert "m2:{}" in _labels(r)[-2]


def test_static_replacement_in_stable_needs_no_rebalance():
    # KIP-345: the restarted instance takes over the stored assignment in the same generation;
    # the process it replaced still believes it owns the partitions but is no member any more.
    r = reach(lambda p, s: s.clients[0].owned and s.clients[1].owned and s.generation == 1,
              consumers=1, static=1)
    assert len(r.trace.steps) == 7
    assert "JoinGroup(c2) -> static member m1 replaced by m2" in _labels(r)
    last = r.trace.steps[-1].state
    assert last.group == GroupState.STABLE and last.clients[0].member_id == 1
    assert ginv.no_double_ownership(Group(consumers=1, static=1).p, last)


# -- the view and the symmetry hook -----------------------------------------------------------------

def test_view_merges_states_that_differ_only_in_member_id_numbering():
    spec = Group()
    s = spec.initial()[0]
    a = s.__class__(GroupState.STABLE, 1, 1, (Member(1, 0, frozenset(), -1, frozenset({1, 2}), 0),),
                    (s.clients[0].__class__(ClientState.STABLE, 1, 1, frozenset({1, 2}), frozenset(),
                                            -1, frozenset()), s.clients[1]), 0, s.commit)
    b = s.__class__(a.group, a.generation, 3, (Member(3, 0, frozenset(), -1, frozenset({1, 2}), 0),),
                    (a.clients[0].__class__(ClientState.STABLE, 3, 1, frozenset({1, 2}), frozenset(),
                                            -1, frozenset()), s.clients[1]), 0, s.commit)
    assert a != b and Group.view(spec.p, a) == Group.view(spec.p, b) == a


@pytest.mark.parametrize("params, verdict, steps", [
    ({}, None, None),
    ({"commit_check": "none"}, "commit-from-current-generation", 7),
    ({"protocol": "cooperative", "cooperative_assignor": "unsafe"}, "no-double-ownership", 10),
    ({"sticky_claims": "raw"}, "no-double-assignment", 14),
])
def test_symmetry_keeps_verdicts_and_shortest_traces(params, verdict, steps):
    r = explore(Group(**params), symmetry=True)
    assert r.violated == verdict
    assert (len(r.trace.steps) if r.trace else None) == steps
    if verdict is None:
        assert (r.distinct_states, r.depth) == (4448, 22)


def test_raw_claims_are_harmless_in_the_cooperative_model():
    # A cooperative consumer that loses its generation drops its partitions (onPartitionsLost)
    # before it rejoins, so no two members ever claim the same partition and the raw rule of
    # KAFKA-7026 never applies: the same states as with generation-aware claims.
    r = check(protocol="cooperative", sticky_claims="raw")
    assert r.result == "ok"
    assert (r.distinct_states, r.depth) == (5849, 19)
