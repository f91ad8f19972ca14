"""The ``group-kip848`` spec: TLC parity, the unreleased-partitions mutation, and the invariants."""

from __future__ import annotations

from dataclasses import replace

import pytest

from kafkamc.checker.local import explore
from kafkamc.invariants import group_kip848 as kinv
from kafkamc.invariants.api import Property
from kafkamc.spec.group_kip848 import (
    ClientStatus, GroupKip848, GroupStatus, Member, MemberStatus, _transition,
)
from kafkamc.spec.registry import load_spec_class

DEFAULTS = (
    "legal-target-assignment", "no-double-ownership", "valid-member-epoch",
    "stable-group-is-reconciled", "free-partitions-unowned",
)


def check(*names, **params):
    spec = GroupKip848(**params)
    props = None if not names else [GroupKip848.property_named(n) for n in names]
    return explore(spec, props)


def labels(r):
    return [step.action for step in r.trace.steps]


def test_registry_and_defaults():
    assert load_spec_class("group-kip848") is GroupKip848
    assert tuple(p.name for p in GroupKip848.default_properties()) == DEFAULTS
    assert GroupKip848().p.as_dict() == {
        "clients": 2, "topics": 2, "partitions_per_topic": 1, "max_perturbations": 0,
        "assign_unreleased": False,
    }


def test_invariant_constants_match_the_spec_enums():
    assert kinv._GROUP_STABLE == GroupStatus.STABLE and kinv._MEMBER_STABLE == MemberStatus.STABLE


def test_tlc_parity():
    # TLC on consumer_group_protocol_kip_848_v2.cfg with MaxPerturbations = 0 (Clients = {c1, c2},
    # TopicCount = 2, PartitionsPerTopic = 1): 7,673 distinct states, 17,983 generated, depth 26,
    # and none of its invariants violated.
    r = explore(GroupKip848(), GroupKip848.properties())  # action properties too
    assert (r.result, r.violated) == ("ok", None)
    assert (r.distinct_states, r.states_generated, r.depth) == (7673, 17983, 26)


def test_assign_unreleased_breaks_no_double_ownership():
    r = check(assign_unreleased=True)
    assert (r.result, r.violated) == ("violation", "no-double-ownership")
    assert len(r.trace.steps) == 9
    # c1 owns both partitions; the new member c2 is handed t2p1 before c1 revoked it.
    assert labels(r)[-3].startswith("HandleHeartbeat(c2, m0, epoch=0) -> m2 epoch=2 STABLE assignment={t2p1}")
    last = r.trace.steps[-1].state
    assert last.clients[0].owned == {(1, 1), (2, 1)} and last.clients[1].owned == {(2, 1)}


def test_assign_unreleased_keeps_targets_and_epochs_legal():
    # The assignor and the epoch rules are untouched: only ownership (and, once the previous
    # owner releases a partition someone already holds, the partition epochs) go wrong.
    r = check("legal-target-assignment", "stable-group-is-reconciled", "valid-member-epoch",
              assign_unreleased=True)
    assert (r.result, r.distinct_states) == ("ok", 22509)
    r = check("free-partitions-unowned", assign_unreleased=True)
    assert (r.violated, len(r.trace.steps)) == ("free-partitions-unowned", 11)


def reach(predicate, **params):
    prop = Property("reached", "the wanted state is never reached", "invariant",
                    lambda p, s: not predicate(p, s))
    r = explore(GroupKip848(**params), [prop])
    assert (r.result, r.violated) == ("violation", "reached")
    return r


def test_revocation_before_reassignment_is_exercised():
    # A member waits for a partition its previous owner has not released yet: the filter that
    # assign_unreleased drops is reached, so the verdict above is not vacuous.
    r = reach(lambda p, s: any(m.state == MemberStatus.UNRELEASED_PARTITIONS for m in s.members))
    assert len(r.trace.steps) == 5
    r = reach(lambda p, s: any(m.state == MemberStatus.UNREVOKED_PARTITIONS for m in s.members))
    assert len(r.trace.steps) == 8


def test_group_converges_with_both_consumers_owning_partitions():
    r = reach(lambda p, s: s.group_status == GroupStatus.STABLE and all(
        c.owned and c.status == ClientStatus.STABLE for c in s.clients))
    assert len(r.trace.steps) == 19
    # c1 revokes t2p1 and reports it gone before m2 is given it.
    steps = labels(r)
    revoked = steps.index("HandleHeartbeat(c1, m1, epoch=1) -> m1 epoch=2 STABLE assignment={t1p1}")
    assert revoked < steps.index("HandleHeartbeat(c2, m2, epoch=2) -> m2 epoch=2 STABLE assignment={t2p1}")


def test_invariants_reject_broken_states():
    spec = GroupKip848()
    s = spec.initial()[0]
    p = spec.p
    both = frozenset({(1, 1), (2, 1)})
    m1 = Member(1, 1, 1, 1, frozenset({1, 2}), MemberStatus.STABLE, both, frozenset(), frozenset(), ())
    m2 = replace(m1, member_id=2, host=2, assigned=frozenset({(2, 1)}))
    c1 = replace(s.clients[0], member_id=1, member_epoch=1, owned=both)
    c2 = replace(s.clients[1], member_id=2, member_epoch=1, owned=frozenset({(2, 1)}))
    two_owners = replace(s, members=(m1, m2), clients=(c1, c2))
    assert not kinv.no_double_ownership(p, two_owners)
    assert kinv.no_double_ownership(p, replace(two_owners, members=(m1,)))  # c2 is no member
    double = replace(s, target=((1, both), (2, frozenset({(2, 1)}))), target_epoch=1)
    assert not kinv.legal_target_assignment(p, double)
    assert not kinv.valid_member_epoch(p, replace(two_owners, target=((1, frozenset({(1, 1)})),
                                                                       (2, frozenset({(2, 1)}))),
                                                  target_epoch=1))
    stable = replace(s, group_status=GroupStatus.STABLE, group_epoch=1, members=(m1,),
                     target=((1, frozenset({(1, 1)})),), target_epoch=1)
    assert not kinv.stable_group_is_reconciled(p, stable)
    assert not kinv.free_partitions_unowned(p, replace(s, members=(m1,), partition_epochs=(0, 1)))
    lower = replace(two_owners, members=(replace(m1, member_epoch=0), m2))
    assert not kinv.member_epoch_monotonic(p, two_owners, "x", lower)
    assert not kinv.client_member_epoch_monotonic(
        p, replace(s, clients=(replace(c1, member_epoch=3), c2)), "x", two_owners)


def test_illegal_consumer_status_change_is_a_spec_error():
    with pytest.raises(ValueError, match="ACKNOWLEDGING -> LEAVING"):
        _transition(ClientStatus.ACKNOWLEDGING, ClientStatus.LEAVING)
    assert _transition(ClientStatus.STABLE, ClientStatus.STABLE) == ClientStatus.STABLE
