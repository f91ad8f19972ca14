"""Invariants and action properties of the classic consumer group (spec ``group``).

States are ``kafkamc.spec.group.GroupModel``; partitions are frozensets of 1..partitions. The enum values are
repeated here as ints because the spec module imports this one (tests check they agree).
"""

from __future__ import annotations

from kafkamc.invariants.api import action_property, invariant
from kafkamc.invariants.temporal import leads_to, liveness

__all__ = [
    "no_double_assignment",
    "no_double_ownership",
    "static_instance_unique",
    "stable_group_owns_every_partition",
    "committed_offsets_never_move_backwards",
    "no_reprocessing_of_committed_records",
    "members_belong_to_consumers",
    "member_ids_unique",
    "eager_rejoin_owns_nothing",
    "consumers_hold_their_assignment",
    "generations_count_rebalances",
    "consumers_without_generation_own_nothing",
    "group_eventually_stable",
    "rebalance_in_progress",
    "group_settled",
]

_FENCED = 5  # ClientState.FENCED
_CLIENT_STABLE = 4  # ClientState.STABLE
_CLIENT_PREPARING = 1  # ClientState.PREPARING_REBALANCE
_STABLE = 3  # GroupState.STABLE
_PREPARING, _COMPLETING, _DEAD = 1, 2, 4  # GroupState.PREPARING_REBALANCE, COMPLETING_REBALANCE, DEAD


def _instance(p, k: int) -> int:
    if k <= p.static:
        return k
    if k > p.consumers:
        return k - p.consumers
    return 0


@invariant(
    "no-double-assignment",
    "within one generation the coordinator never assigns a partition to two members",
)
def no_double_assignment(p, s) -> bool:
    """G-NoDoubleOwnership as the coordinator stores it (broken by KAFKA-7026's stale claims)."""
    seen: set[int] = set()
    for m in s.members:
        if not seen.isdisjoint(m.assignment):
            return False
        seen.update(m.assignment)
    return True


@invariant(
    "no-double-ownership",
    "no two unfenced consumers of the current generation believe they own the same partition",
)
def no_double_ownership(p, s) -> bool:
    """G-NoDoubleOwnership as live clients believe it: a consumer counts when its member id is a
    member of the group and its generation is the group's (zombies of older generations and
    fenced static members are excluded: generation fencing is what protects against them)."""
    gen = s.generation
    ids = [m.member_id for m in s.members]
    seen: set[int] = set()
    for c in s.clients:
        if c.owned and c.generation == gen and c.state != _FENCED and c.member_id in ids:
            if not seen.isdisjoint(c.owned):
                return False
            seen.update(c.owned)
    return True


@invariant(
    "static-instance-unique",
    "at most one live consumer holds the member id registered for a group.instance.id",
)
def static_instance_unique(p, s) -> bool:
    """G-StaticInstanceUnique (KIP-345): the processes configured with an instance id that are not
    fenced and hold the member id the coordinator maps that instance to (KAFKA-8500)."""
    for m in s.members:
        if not m.instance:
            continue
        holders = 0
        for k, c in enumerate(s.clients, 1):
            if c.member_id == m.member_id and c.state != _FENCED and _instance(p, k) == m.instance:
                holders += 1
        if holders > 1:
            return False
    return True


def _owned_once_reconciled(s) -> set[int] | None:
    """The partitions the members' consumers own, or None while some member has no consumer in
    STABLE with the group's generation (its assignment is still on its way)."""
    owned: set[int] = set()
    for m in s.members:
        found = False
        for c in s.clients:
            if c.member_id == m.member_id and c.state == _CLIENT_STABLE and c.generation == s.generation:
                owned.update(c.owned)
                found = True
        if not found:
            return None
    return owned


@invariant(
    "stable-group-owns-every-partition",
    "once the group is Stable and every member's consumer has its assignment, every partition is consumed",
)
def stable_group_owns_every_partition(p, s) -> bool:
    """Settled means: the group is Stable and every member has a consumer in STABLE with the
    group's generation (so no follow-up rebalance is pending: a cooperative member that revoked
    is not STABLE, it rejoins). Then the consumers together own every partition of the topic.
    KAFKA-9801 breaks it: a static member replaced during CompletingRebalance gets nothing."""
    if s.group != _STABLE:
        return True
    owned = _owned_once_reconciled(s)
    return owned is None or len(owned) == p.partitions


@invariant(
    "members-belong-to-consumers",
    "every member of the group is one consumer process's: the one whose JoinGroup is parked on it "
    "(and which waits for the response), else the one holding its member id; no process has two members "
    "and no other process holds its id",
)
def members_belong_to_consumers(p, s) -> bool:
    """A member is created only by a JoinGroup without a member id (addMemberAndRebalance parks it
    on the sending process) and a process drops its member id only when the member is gone
    (LeaveGroup, UNKNOWN_MEMBER_ID), so the coordinator never holds more members than there are
    consumer processes. An auxiliary invariant for ``kafkamc prove`` (docs/prove.md)."""
    owners: list[int] = []
    for m in s.members:
        k = m.waiter
        if k and s.clients[k - 1].state != _CLIENT_PREPARING:
            return False
        for j, c in enumerate(s.clients, 1):
            if c.member_id == m.member_id:
                if not k:
                    k = j
                elif j != k:
                    return False  # another process holds the id of a member parked on k
        if not k or k in owners:
            return False
        owners.append(k)
    return True


@invariant(
    "member-ids-unique",
    "the coordinator's members have distinct member ids (kept sorted), and no two consumer processes "
    "without a group.instance.id hold the same member id",
)
def member_ids_unique(p, s) -> bool:
    """Member ids are UUIDs handed out once (the model: the least id nothing mentions), so a member
    id names one member and one dynamic consumer. Static members are left out: before KAFKA-8500
    a restarted instance took over its predecessor's id. An auxiliary invariant for ``kafkamc prove``."""
    members = s.members
    for a, b in zip(members, members[1:]):
        if not a.member_id < b.member_id:
            return False
    held: list[int] = []
    for k, c in enumerate(s.clients, 1):
        if c.member_id and not _instance(p, k):
            if c.member_id in held:
                return False
            held.append(c.member_id)
    return True


@action_property(
    "committed-offsets-never-move-backwards",
    "the group's committed offset of a partition never decreases",
)
def committed_offsets_never_move_backwards(p, s, label, t) -> bool:
    """A consumer commits only positions it reached, and only one current member owns a partition
    (generation and member checks fence the rest), so a commit never rewinds another's progress."""
    return all(b >= a for a, b in zip(s.committed, t.committed))


@action_property(
    "no-reprocessing-of-committed-records",
    "no member of the group processes a record again once its processing was committed",
)
def no_reprocessing_of_committed_records(p, s, label, t) -> bool:
    """At-least-once, and no more: a record is processed twice by the group only if a rebalance
    came between its processing and the commit covering it (the duplicate window). ``done`` is
    the highest offset ever committed per partition. Processing is a step in which a consumer's
    position moves and nothing else about it changes; the claim covers consumers that are members
    of the group's current generation: a zombie whose session expired while it was stalled does
    process records again until it learns, which the classic protocol cannot prevent (KIP-447
    fences such zombies with transactions)."""
    ids = {m.member_id for m in s.members}
    for a, b in zip(s.clients, t.clients):
        if a.positions == b.positions or a.owned != b.owned or a.member_id != b.member_id:
            continue
        if a.generation != b.generation or a.state != b.state:
            continue
        if a.member_id not in ids or a.generation != s.generation or a.state == _FENCED:
            continue
        for q, pos in a.positions - b.positions:
            if pos < s.done[q - 1]:
                return False
    return True


def rebalance_in_progress(p, s) -> bool:
    """The group is in PreparingRebalance or CompletingRebalance."""
    return s.group == _PREPARING or s.group == _COMPLETING


def group_settled(p, s) -> bool:
    """Stable, every member's consumer is STABLE in the group's generation, and together they own
    every partition of the topic. Also counted as settled: the group was deleted on purpose
    (Dead), or a rebalance waits for a join completion beyond ``max_generation``, the model's
    bound (as in ``group-can-stabilise``). Nothing else is excused: CompletingRebalance never."""
    if s.group == _DEAD:
        return True
    if s.group == _PREPARING:
        return s.generation >= p.max_generation
    if s.group != _STABLE or not s.members:
        return False
    owned = _owned_once_reconciled(s)
    return owned is not None and len(owned) == p.partitions


@liveness(
    "group-eventually-stable",
    "once a rebalance begins, the group eventually reaches Stable with every partition owned by a member",
)
def group_eventually_stable():
    """PreparingRebalance or CompletingRebalance ~> settled (``group_settled``). Holds under the
    spec's fairness because a member whose SyncGroup never comes is removed by the pending-sync
    timer (KAFKA-12890's fix); with ``pending_sync_timeout=false`` its heartbeats keep it and the
    group stays in CompletingRebalance forever."""
    return leads_to(rebalance_in_progress, group_settled)


_CLIENT_COMPLETING, _CLIENT_AWAITING_SYNC = 2, 3  # ClientState.COMPLETING_REBALANCE, AWAITING_SYNC
_CLIENT_UNJOINED = 0  # ClientState.UNJOINED


@invariant(
    "eager-rejoin-owns-nothing",
    "with the eager protocol a consumer outside a group (UNJOINED) or waiting for its JoinGroup or SyncGroup "
    "response owns no partition",
)
def eager_rejoin_owns_nothing(p, s) -> bool:
    """ConsumerCoordinator.onJoinPrepare: an eager consumer revokes every partition before it sends
    JoinGroup, and takes partitions again only from the SyncGroup response (onJoinComplete); the
    cooperative protocol (KIP-429) keeps them. An eager consumer becomes UNJOINED only with nothing
    (it starts so, leaves, or loses its generation: onPartitionsLost). An auxiliary invariant for
    ``kafkamc prove``."""
    if p.protocol != "eager":
        return True
    return not any(((c.state == _CLIENT_UNJOINED) | (c.state == _CLIENT_PREPARING) | (c.state == _CLIENT_COMPLETING)
                    | (c.state == _CLIENT_AWAITING_SYNC)) & (c.owned != frozenset()) for c in s.clients)


@invariant(
    "consumers-hold-their-assignment",
    "a consumer of the group's generation whose member id is a member owns only partitions of its member's "
    "stored assignment (cooperative: once synced), a SyncGroup response in flight to it carries that assignment, "
    "and none is past SyncGroup while the group is CompletingRebalance",
)
def consumers_hold_their_assignment(p, s) -> bool:
    """The coordinator stores the leader's assignment per member and answers every SyncGroup of the
    generation with it (GroupCoordinator.doSyncGroup), so what a consumer of that generation takes
    (onJoinComplete) is its member's assignment. An auxiliary invariant for ``kafkamc prove``."""
    gen = s.generation
    eager = p.protocol == "eager"
    for c in s.clients:
        if c.generation != gen or c.state == _FENCED:
            continue
        if (c.state == _CLIENT_AWAITING_SYNC or c.state == _CLIENT_STABLE) and s.group == _COMPLETING:
            # Only the leader's SyncGroup, which stores the assignment and ends CompletingRebalance,
            # gets a response: no consumer of the generation is past SyncGroup before it.
            return False
        for m in s.members:
            if m.member_id == c.member_id:
                # An eager consumer owns nothing outside STABLE (onJoinPrepare revoked it all); a
                # cooperative one keeps its partitions while the join reassigns (KIP-429).
                if (c.state == _CLIENT_STABLE or eager) and not c.owned <= m.assignment:
                    return False
                if c.state == _CLIENT_AWAITING_SYNC and c.pending != m.assignment:
                    return False
    return True


@invariant(
    "generations-count-rebalances",
    "an Empty group has no members, a group with members has completed a rebalance (generation at least 1), and "
    "no consumer holds a generation the group has not reached",
)
def generations_count_rebalances(p, s) -> bool:
    """GroupCoordinator: a group becomes Empty only when its last member leaves (or the join
    completes with none), and a group gets members only through a JoinGroup whose completion bumps
    the generation (GroupMetadata.initNextGeneration), so generation 0 is a group that never
    completed a join. An auxiliary invariant for ``kafkamc prove``."""
    if s.group == 0 and s.members:
        return False
    # A consumer's generation is one the coordinator handed out in a JoinGroup response.
    if any(c.generation > s.generation for c in s.clients):
        return False
    return s.generation >= 1 or s.group == 0 or s.group == _PREPARING


@invariant(
    "consumers-without-generation-own-nothing",
    "a consumer that holds no generation (before its first JoinGroup response, or after it lost its generation) "
    "owns no partition and is not past its JoinGroup (COMPLETING_REBALANCE, AWAITING_SYNC, STABLE)",
)
def consumers_without_generation_own_nothing(p, s) -> bool:
    """A consumer takes partitions only from the SyncGroup response of a generation it holds
    (onJoinComplete), and resetGenerationOnResponseError drops the partitions with the generation
    (onPartitionsLost, KIP-429), so a consumer with no generation (-1) owns nothing; the JoinGroup
    response that moves it on carries the generation. An auxiliary invariant for ``kafkamc prove``."""
    return not any((c.generation < 0) & ((c.owned != frozenset()) | (c.state == _CLIENT_COMPLETING)
                                          | (c.state == _CLIENT_AWAITING_SYNC) | (c.state == _CLIENT_STABLE))
                   for c in s.clients)
