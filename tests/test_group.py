"""The ``group`` spec: verdicts, shortest counterexamples and state counts, all measured by exploring."""

from __future__ import annotations

from dataclasses import replace

import pytest

from kafkamc.checker.local import explore
from kafkamc.errors import UsageError
from kafkamc.invariants import group as ginv
from kafkamc.invariants.api import Property
from kafkamc.spec.group import VALID_PREVIOUS_STATES, ClientState, Group, GroupState, Member, assignments
from kafkamc.spec.registry import load_spec_class

ALL = (
    "no-double-assignment", "no-double-ownership", "static-instance-unique",
    "stable-group-owns-every-partition", "committed-offsets-never-move-backwards",
    "no-reprocessing-of-committed-records",
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
        "records": 1, "protocol": "eager", "static": 0, "static_rejoin": "replace", "commit_check": "generation",
        "cooperative_assignor": "safe", "sticky_claims": "generation-aware",
        "pending_sync_timeout": True, "sync_hangs": False,
    }


def test_invariant_constants_match_the_spec_enums():
    assert ginv._FENCED == ClientState.FENCED and ginv._CLIENT_STABLE == ClientState.STABLE
    assert ginv._STABLE == GroupState.STABLE
    assert (ginv._PREPARING, ginv._COMPLETING, ginv._DEAD) == (
        GroupState.PREPARING_REBALANCE, GroupState.COMPLETING_REBALANCE, GroupState.DEAD)


@pytest.mark.parametrize("params, message", [
    ({"static": 3}, "exceeds consumers"),
    ({"static_rejoin": "reuse"}, "needs static members"),
    ({"static_rejoin": "replace-2.4"}, "needs static members"),
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
    assert (r.distinct_states, r.states_generated, r.depth) == (93029, 294595, 27)


def test_cooperative_holds_every_invariant():
    r = check(protocol="cooperative")
    assert r.result == "ok"
    assert (r.distinct_states, r.depth) == (48441, 23)


@pytest.mark.parametrize("protocol, states, depth", [("eager", 16106, 24), ("cooperative", 10671, 24)])
def test_static_member_replacement_holds(protocol, states, depth):
    # One instance id, two processes configured with it (the restart of KAFKA-8500), with
    # KAFKA-9801's fix: a replacement during CompletingRebalance starts a new rebalance.
    r = check(consumers=1, static=1, protocol=protocol)
    assert r.result == "ok"
    assert (r.distinct_states, r.depth) == (states, depth)


def _labels(r):
    return [step.action for step in r.trace.steps]


@pytest.mark.parametrize("consumers", [1, 2])
def test_kafka_9801_static_rejoin_in_completing_rebalance_leaves_partitions_unowned(consumers):
    # 2.4-2.5: the restarted instance replaces the member id while the group awaits the leader's
    # SyncGroup, without a rebalance; the leader's assignment is keyed by the old id, so the new
    # id gets nothing and the group settles with every partition unconsumed.
    r = check(consumers=consumers, static=1, static_rejoin="replace-2.4")
    assert (r.result, r.violated) == ("violation", "stable-group-owns-every-partition")
    assert len(r.trace.steps) == 6
    k = consumers + 1
    assert _labels(r)[3:] == [f"JoinGroup(c{k}) -> static member m1 replaced by m2",
                              f"SyncGroup(c{k}) leader assigns m2:{{}}", f"SyncGroupResponse(c{k}) {{}}"]


def test_commit_check_none_lets_a_zombie_commit_move_offsets_backwards():
    r = check("committed-offsets-never-move-backwards", commit_check="none")
    assert (r.result, r.violated) == ("violation", "committed-offsets-never-move-backwards")
    assert len(r.trace.steps) == 12
    labels = _labels(r)
    # c1 was removed by the rebalance timeout (it did not rejoin in time); its late commit is
    # accepted after c2 fetched the old offset, and c2's own commit then rewinds it.
    assert labels[7] == "CompleteJoin(generation=2, leader=m2) (rebalance timeout)"
    assert labels[-2] == "OffsetCommit(c1, m1, generation=1) p1@1, p2@0"
    assert labels[-1] == "OffsetCommit(c2, m2, generation=2) p1@0, p2@0"


def test_commit_check_none_makes_the_group_process_a_committed_record_again():
    r = check(commit_check="none")
    assert (r.result, r.violated) == ("violation", "no-reprocessing-of-committed-records")
    assert len(r.trace.steps) == 12
    assert _labels(r)[-2:] == ["OffsetCommit(c1, m1, generation=1) p1@1, p2@0",
                               "Process(c2, p1, offset=0)"]


def test_commit_check_none_breaks_no_ownership_claim_and_no_stable_group():
    others = [n for n in ALL if n not in ("committed-offsets-never-move-backwards",
                                          "no-reprocessing-of-committed-records")]
    r = check(*others, commit_check="none", max_generation=2)
    assert r.result == "ok"
    assert r.distinct_states == 22243


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
    r = check("no-double-assignment", protocol="cooperative", cooperative_assignor="unsafe",
              max_generation=2)
    assert r.result == "ok"
    assert r.distinct_states == 17765


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


def test_offset_properties_reject_what_a_user_would_call_wrong():
    spec = Group()
    p = spec.p
    s = spec.initial()[0]
    m1 = Member(1, 0, frozenset(), -1, frozenset({1, 2}), 0, True, False)
    owner = replace(s.clients[0], state=ClientState.STABLE, member_id=1, generation=1,
                    owned=frozenset({1, 2}), positions=frozenset({(1, 0), (2, 0)}))
    before = replace(s, group=GroupState.STABLE, generation=1, leader=1, members=(m1,),
                     clients=(owner, s.clients[1]), committed=(1, 0), done=(1, 0))
    processed = replace(before, clients=(replace(owner, positions=frozenset({(1, 1), (2, 0)})),
                                         s.clients[1]))
    # Record p1@0 was committed (done = 1): processing it again is a duplicate ...
    assert not ginv.no_reprocessing_of_committed_records(p, before, "x", processed)
    # ... but not when nothing covered it yet, or for a zombie that is no member any more.
    assert ginv.no_reprocessing_of_committed_records(
        p, replace(before, committed=(0, 0), done=(0, 0)), "x",
        replace(processed, committed=(0, 0), done=(0, 0)))
    assert ginv.no_reprocessing_of_committed_records(p, replace(before, members=()), "x",
                                                     replace(processed, members=()))
    rewound = replace(before, committed=(0, 0))
    assert not ginv.committed_offsets_never_move_backwards(p, before, "x", rewound)
    assert ginv.committed_offsets_never_move_backwards(p, rewound, "x", before)


def test_stable_group_owns_every_partition_only_once_settled():
    spec = Group()
    p = spec.p
    s = spec.initial()[0]
    m1 = Member(1, 0, frozenset(), -1, frozenset({1}), 0, True, False)
    c1 = replace(s.clients[0], state=ClientState.STABLE, member_id=1, generation=1,
                 owned=frozenset({1}), positions=frozenset({(1, 0)}))
    stable = replace(s, group=GroupState.STABLE, generation=1, leader=1, members=(m1,),
                     clients=(c1, s.clients[1]))
    assert not ginv.stable_group_owns_every_partition(p, stable)  # p2 is nobody's
    awaiting = replace(stable, clients=(replace(c1, state=ClientState.COMPLETING_REBALANCE), s.clients[1]))
    assert ginv.stable_group_owns_every_partition(p, awaiting)  # not settled yet
    both = replace(stable, clients=(replace(c1, owned=frozenset({1, 2})), s.clients[1]))
    assert ginv.stable_group_owns_every_partition(p, both)


def _m(mid, claimed, gen):
    return Member(mid, 0, frozenset(claimed), gen, frozenset(), 0, False, False)


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
    # Allowed (the generation is bumped only at join completion): the revoking owner's last
    # commit lands before the next owner fetches the offset.
    r = reach(lambda p, s: any(s.committed) and s.group == GroupState.PREPARING_REBALANCE)
    assert len(r.trace.steps) == 8
    assert r.trace.steps[-1].action.startswith("OffsetCommit")


def test_a_session_expires_only_after_its_consumer_stalled():
    r = reach(lambda p, s: any(c.stalled and c.member_id and all(m.member_id != c.member_id for m in s.members)
                               for c in s.clients))
    labels = _labels(r)
    assert labels[-2].startswith("Stall(c1)") and labels[-1].startswith("SessionExpiry(m1)")
    spec = Group()
    live = r.trace.steps[-3].state  # before the stall: nothing may expire
    assert not [x for x in Group.session_expiry(spec.p, live)]


def test_pending_sync_timer_removes_a_heartbeating_member_that_never_synced():
    # KAFKA-12890: the consumer is alive (not stalled) and in CompletingRebalance, yet it is
    # removed because its SyncGroup never arrived within the rebalance timeout.
    def removed(p, s):
        return any(c.state == ClientState.COMPLETING_REBALANCE and not c.stalled and c.member_id
                   and all(m.member_id != c.member_id for m in s.members) for c in s.clients)
    r = reach(removed)
    assert _labels(r)[-1].startswith("PendingSyncExpiry(m1)")
    assert len(r.trace.steps) == 4


def test_a_zombie_may_process_a_committed_record_again():
    # What the classic protocol cannot prevent (and no-reprocessing-of-committed-records does not
    # claim): a consumer removed from the group processes records a current member already
    # processed and committed, until it learns it was removed.
    def zombie_behind(p, s):
        ids = {m.member_id for m in s.members}
        return any(c.member_id not in ids and not c.stalled and c.state != ClientState.FENCED
                   and any(pos < s.done[q - 1] for q, pos in c.positions) for c in s.clients)
    r = reach(zombie_behind)
    assert len(r.trace.steps) == 11


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
    owner = replace(s.clients[0], state=ClientState.STABLE, member_id=1, generation=1,
                    owned=frozenset({1, 2}), positions=frozenset({(1, 0), (2, 0)}))
    a = replace(s, group=GroupState.STABLE, generation=1, leader=1,
                members=(Member(1, 0, frozenset(), -1, frozenset({1, 2}), 0, True, False),),
                clients=(owner, s.clients[1]))
    b = replace(a, leader=3, members=(replace(a.members[0], member_id=3),),
                clients=(replace(owner, member_id=3), s.clients[1]))
    assert a != b and Group.view(spec.p, a) == Group.view(spec.p, b) == a


@pytest.mark.parametrize("params, verdict, steps", [
    ({"max_generation": 2}, None, None),
    ({"commit_check": "none"}, "no-reprocessing-of-committed-records", 12),
    ({"protocol": "cooperative", "cooperative_assignor": "unsafe"}, "no-double-ownership", 10),
    ({"sticky_claims": "raw"}, "no-double-assignment", 14),
])
def test_symmetry_keeps_verdicts_and_shortest_traces(params, verdict, steps):
    r = explore(Group(**params), symmetry=True)
    assert r.violated == verdict
    assert (len(r.trace.steps) if r.trace else None) == steps
    if verdict is None:
        plain = check(**params)
        assert plain.result == "ok" and r.depth == plain.depth
        assert r.distinct_states < plain.distinct_states
        assert (r.distinct_states, r.depth) == (5323, 23)


def test_raw_claims_are_harmless_in_the_cooperative_model():
    # A cooperative consumer that loses its generation drops its partitions (onPartitionsLost)
    # before it rejoins, so no two members ever claim the same partition and the raw rule of
    # KAFKA-7026 never applies: the same states as with generation-aware claims.
    r = check(protocol="cooperative", sticky_claims="raw", max_generation=2)
    same = check(protocol="cooperative", max_generation=2)
    assert r.result == same.result == "ok"
    assert (r.distinct_states, r.states_generated, r.depth) == (
        same.distinct_states, same.states_generated, same.depth)


def test_group_state_changes_follow_group_metadata():
    # GroupMetadata.assertValidTransition, checked on every transition of a small configuration
    # (a test of the model against Kafka's table, not a property of the protocol).
    spec = Group(consumers=1, static=1, max_generation=2, records=0)
    seen = set(spec.initial())
    frontier = list(seen)
    moves = set()
    while frontier:
        nxt = []
        for s in frontier:
            for _, _, t in spec.successors(s):
                if t.group != s.group:
                    moves.add((s.group, t.group))
                if t not in seen:
                    seen.add(t)
                    nxt.append(t)
        frontier = nxt
    allowed = {(a, b) for b, froms in VALID_PREVIOUS_STATES.items() for a in froms}
    assert moves <= allowed
    assert (GroupState.COMPLETING_REBALANCE, GroupState.PREPARING_REBALANCE) in moves
