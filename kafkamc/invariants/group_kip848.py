"""Invariants and action properties of the KIP-848 consumer group (spec ``group-kip848``).

States are ``kafkamc.spec.group_kip848.Kip848State``. The five default invariants are those the
TLA+ model ``consumer_group_protocol_kip_848_v2`` checks (its TypeOK is the spec's dataclass
types, and an illegal consumer status change makes the spec raise); the two action properties
are the model's (commented-out) epoch monotonicity properties. Enum values are repeated as ints
because the spec module imports this one (tests check they agree).
"""

from __future__ import annotations

from kafkamc.invariants.api import action_property, invariant

__all__ = [
    "legal_target_assignment",
    "no_double_ownership",
    "valid_member_epoch",
    "stable_group_is_reconciled",
    "free_partitions_unowned",
    "client_member_epoch_monotonic",
    "member_epoch_monotonic",
]

_GROUP_STABLE = 3  # GroupStatus.STABLE
_MEMBER_STABLE = 0  # MemberStatus.STABLE


def _partitions(p) -> list[tuple[int, int]]:
    return [(t, i) for t in range(1, p.topics + 1) for i in range(1, p.partitions_per_topic + 1)]


@invariant(
    "legal-target-assignment",
    "once computed, the target assignment gives every partition to exactly one member",
)
def legal_target_assignment(p, s) -> bool:
    """LegalTargetAssignment: the assignor leaves no partition out and assigns none twice."""
    if not s.target:
        return True
    for q in _partitions(p):
        if sum(1 for _, parts in s.target if q in parts) != 1:
            return False
    return True


@invariant(
    "no-double-ownership",
    "no two consumers that are members of the group both believe they own the same partition",
)
def no_double_ownership(p, s) -> bool:
    """NoDoubleClientAssignment, the protocol's main safety claim: a partition is consumed (and
    its offsets committed) by one member at a time."""
    ids = {m.member_id for m in s.members}
    seen: set = set()
    for c in s.clients:
        if c.member_id in ids:
            if not seen.isdisjoint(c.owned):
                return False
            seen.update(c.owned)
    return True


@invariant(
    "valid-member-epoch",
    "a consumer that reached the target epoch owns no partition the target gives to another member",
)
def valid_member_epoch(p, s) -> bool:
    """ValidMemberEpoch: reaching the target epoch means every partition moving away was revoked
    (and its offsets committed) first."""
    for c in s.clients:
        if c.member_epoch != s.target_epoch:
            continue
        for mid, parts in s.target:
            if mid != c.member_id and not parts.isdisjoint(c.owned):
                return False
    return True


@invariant(
    "stable-group-is-reconciled",
    "in a Stable group every member is STABLE at the group epoch and holds exactly its target",
)
def stable_group_is_reconciled(p, s) -> bool:
    """ValidStableGroupState: Stable means converged at the coordinator."""
    if s.group_status != _GROUP_STABLE:
        return True
    target = dict(s.target)
    for m in s.members:
        if (m.state != _MEMBER_STABLE or m.member_epoch != s.group_epoch or m.pending_revocation
                or m.assigned != target.get(m.member_id)):
            return False
    return True


@invariant(
    "free-partitions-unowned",
    "a partition the coordinator considers released is neither assigned to nor being revoked from any member",
)
def free_partitions_unowned(p, s) -> bool:
    """ValidPartitionEpoch: the partition epochs, which gate handing partitions out, agree with
    the members' assignments."""
    for q, epoch in zip(_partitions(p), s.partition_epochs):
        if epoch == 0:
            for m in s.members:
                if q in m.assigned or q in m.pending_revocation:
                    return False
    return True


@action_property(
    "client-member-epoch-monotonic",
    "a consumer's member epoch only decreases when it rejoins (0) or leaves (-1)",
)
def client_member_epoch_monotonic(p, s, label, t) -> bool:
    """ClientSideMemberEpochIsMonotonic."""
    for a, b in zip(s.clients, t.clients):
        if a != b and 0 < b.member_epoch < a.member_epoch:
            return False
    return True


@action_property(
    "member-epoch-monotonic",
    "the coordinator never lowers the member epoch of a member that stays in the group",
)
def member_epoch_monotonic(p, s, label, t) -> bool:
    """GcSideMemberEpochIsMonotonic, for the member ids the consumers hold."""
    before = {m.member_id: m for m in s.members}
    after = {m.member_id: m for m in t.members}
    for c in s.clients:
        a, b = before.get(c.member_id), after.get(c.member_id)
        if c.member_id > 0 and a is not None and b is not None and a != b and b.member_epoch < a.member_epoch:
            return False
    return True
