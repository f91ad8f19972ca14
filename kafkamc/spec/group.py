"""The classic consumer-group protocol: GroupCoordinator on the broker, ConsumerCoordinator in clients.

One group, one topic with ``partitions`` partitions, ``consumers`` consumer processes. The
coordinator side follows ``GroupCoordinator``/``GroupMetadata`` (states Empty, PreparingRebalance,
CompletingRebalance, Stable, Dead and GroupMetadata's valid previous states); the client side
follows ``AbstractCoordinator``/``ConsumerCoordinator`` (member id, generation, owned partitions).

Modelling choices (each an abstraction of time, never of a check Kafka makes):

* A request is handled by the coordinator in the same step the client sends it. A JoinGroup that
  must wait is parked (the member's ``waiter`` names the process); join completion answers every
  parked JoinGroup in that step. Only the leader's SyncGroup response is a separate step
  (``ReceiveSyncResponse``): the leader's SyncGroup is what moves the group to Stable, and its
  response may reach the leader after followers already fetched theirs. A follower's SyncGroup is
  sent once the group is Stable, which covers every order in which parked follower SyncGroups
  are answered.
* Timers are nondeterministic, each its own event: the rebalance timeout may complete a join at
  any time (removing dynamic members that did not rejoin); a session expires only for a member
  whose heartbeats stopped, because its consumer stalled (a long GC pause, at most
  ``max_session_expiries`` stalls; the consumer resumes once the coordinator removed it, unaware)
  or because no consumer holds its member id any more. The pending-sync timer of KAFKA-12890
  (2.8.1, 3.0) is separate: after CompletingRebalance began, members whose SyncGroup never
  arrived are removed and the group rebalances, although they may still heartbeat (KAFKA-10134
  let heartbeats through in CompletingRebalance). A follower's SyncGroup is applied once the
  group is Stable, so until then every follower counts as not yet synced.
  ``pending_sync_timeout=false`` is Kafka before that fix (2.7.0-2.8.0); ``sync_hangs`` lets a
  consumer that received its JoinGroup response never send SyncGroup while its heartbeat thread
  goes on, which then keeps the group in CompletingRebalance forever (KAFKA-12890; liveness
  property ``group-eventually-stable``, checked under the fairness declared on ``Group``).
* Committed offsets (``records`` per partition, ``__consumer_offsets``): a consumer processes the
  record at its position of a partition it owns, commits its positions with OffsetCommit
  (generation and member id checked, see ``commit_check``), and on receiving a partition starts
  at the committed offset (OffsetFetch on assignment); a partition it keeps keeps its position.
  ``done`` is a history variable: the highest offset ever committed per partition.
* KAFKA-9801 (``static_rejoin=replace-2.4``, Kafka 2.4-2.5): a static member replaced during
  CompletingRebalance gets the current generation without a rebalance, but the leader computed
  its assignment for the member ids of its JoinGroup response, so the new id is given nothing
  (the member is ``late``); when it replaced the leader, the new process syncs as a follower and
  the coordinator stores an empty assignment for everybody. 2.6 rebalances instead.
* The MEMBER_ID_REQUIRED round trip of KIP-394 (KAFKA-7824) is folded into the first JoinGroup:
  a new member gets its id in the JoinGroup response. Member ids are small ints; a fresh id is the smallest id
  that nothing in the state mentions, which is indistinguishable from a new UUID.
* Processes 1..consumers are the consumers; the first ``static`` of them carry group.instance.id
  1..static (KIP-345). For each static instance one more process, consumers+i, is configured with
  the same group.instance.id: the restarted instance while its predecessor is still paused, the
  situation of KAFKA-8500.
* The assignor is the sticky family (StickyAssignor KIP-54, CooperativeStickyAssignor KIP-429):
  among balanced assignments it picks, nondeterministically, any that keeps the most partitions
  with their claimed owners. Claims are the StickyAssignor user data (eager: the last assignment
  received, KIP-341 adds its generation) or the Subscription's ownedPartitions (cooperative,
  KIP-429; KIP-792 adds the generation).
* ``view`` numbers member ids by first mention, so states that differ only in the names of
  their member ids count once; ``symmetry`` (``--symmetry``) also permutes dynamic consumers and
  partitions.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from functools import lru_cache
from itertools import permutations, product

from kafkamc.errors import UsageError
from kafkamc.invariants.recoverability import group_can_stabilise
from kafkamc.invariants.group import (
    committed_offsets_never_move_backwards,
    consumers_hold_their_assignment,
    generations_count_rebalances,
    consumers_without_generation_own_nothing,
    eager_rejoin_owns_nothing,
    group_eventually_stable,
    member_ids_unique,
    members_belong_to_consumers,
    no_double_assignment,
    no_double_ownership,
    no_reprocessing_of_committed_records,
    stable_group_owns_every_partition,
    static_instance_unique,
)
from kafkamc.spec import domain as ty
from kafkamc.spec.api import Param, Params, Spec, action

__all__ = ["Group", "GroupState", "ClientState", "Member", "Client", "GroupModel"]


class GroupState(IntEnum):
    """GroupMetadata's states (CompletingRebalance was named AwaitingSync before Kafka 2.0)."""

    EMPTY = 0
    PREPARING_REBALANCE = 1
    COMPLETING_REBALANCE = 2
    STABLE = 3
    DEAD = 4


class ClientState(IntEnum):
    """AbstractCoordinator.MemberState, plus AWAITING_SYNC (the leader's SyncGroup response is in
    flight) and FENCED (FENCED_INSTANCE_ID is fatal for a static member, KIP-345)."""

    UNJOINED = 0
    PREPARING_REBALANCE = 1
    COMPLETING_REBALANCE = 2
    AWAITING_SYNC = 3
    STABLE = 4
    FENCED = 5


# GroupMetadata.validPreviousStates: target state -> the states it may be entered from. Not a
# property (it would restate the model's own transitions); tests check the model keeps to it.
VALID_PREVIOUS_STATES: dict[GroupState, frozenset[GroupState]] = {
    GroupState.DEAD: frozenset(GroupState),
    GroupState.COMPLETING_REBALANCE: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.STABLE: frozenset({GroupState.COMPLETING_REBALANCE}),
    GroupState.PREPARING_REBALANCE: frozenset(
        {GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY}
    ),
    GroupState.EMPTY: frozenset({GroupState.PREPARING_REBALANCE}),
}

PROTOCOLS = ("eager", "cooperative")
STATIC_REJOIN = ("replace", "replace-2.4", "reuse")
COMMIT_CHECKS = ("generation", "none")
COOPERATIVE_ASSIGNORS = ("safe", "unsafe")
STICKY_CLAIMS = ("generation-aware", "raw")

_E = GroupState.EMPTY
_PR = GroupState.PREPARING_REBALANCE
_CR = GroupState.COMPLETING_REBALANCE
_ST = GroupState.STABLE
_DEAD = GroupState.DEAD

_UNJOINED = ClientState.UNJOINED
_C_PR = ClientState.PREPARING_REBALANCE
_C_CR = ClientState.COMPLETING_REBALANCE
_C_AS = ClientState.AWAITING_SYNC
_C_ST = ClientState.STABLE
_FENCED = ClientState.FENCED


@dataclass(frozen=True, slots=True)
class Member:
    """MemberMetadata at the coordinator. Partitions are numbered 1..partitions."""

    member_id: int
    instance: int  # group.instance.id, 0 for a dynamic member
    claimed: frozenset[int]  # owned partitions / sticky user data from the member's last JoinGroup
    claim_generation: int  # the generation those claims come from (-1: none)
    assignment: frozenset[int]  # what the leader's SyncGroup stored for this member, current generation
    waiter: int  # the process whose JoinGroup is parked on this member (0: not rejoined)
    synced: bool  # its SyncGroup arrived in this generation (else it is a pending-sync member)
    late: bool  # replaced its static predecessor in CompletingRebalance without a rebalance (KAFKA-9801)


@dataclass(frozen=True, slots=True)
class Client:
    """A consumer process: its ConsumerCoordinator and its sticky assignor's memory."""

    state: ClientState
    member_id: int  # 0: none (UNKNOWN_MEMBER_ID)
    generation: int  # -1: none (Generation.NO_GENERATION)
    owned: frozenset[int]  # partitions it believes it owns (consumes and commits)
    memo: frozenset[int]  # StickyAssignor's remembered assignment (eager user data), survives rejoins
    memo_generation: int
    pending: frozenset[int]  # AWAITING_SYNC: the assignment in the SyncGroup response in flight
    positions: frozenset[tuple[int, int]]  # (partition, next offset to process) per owned partition
    stalled: bool  # paused (a long GC pause): sends nothing, its heartbeats stop
    hung: bool  # its application thread stopped before SyncGroup; its heartbeat thread runs (KAFKA-12890)


@dataclass(frozen=True, slots=True)
class GroupModel:
    group: GroupState
    generation: int
    leader: int  # member id of the leader, 0: none
    members: tuple[Member, ...]  # sorted by member id
    clients: tuple[Client, ...]  # process k is clients[k - 1]
    stalls: int  # consumer stalls so far (bounded by max_session_expiries)
    committed: tuple[int, ...]  # __consumer_offsets: the committed offset of partition q at q - 1
    done: tuple[int, ...]  # history: the highest offset ever committed per partition


POSITIONS: frozenset[tuple[int, int]] = frozenset()


def instance_of(p: Params, k: int) -> int:
    """group.instance.id of process k (0: dynamic)."""
    if k <= p.static:
        return k
    if k > p.consumers:
        return k - p.consumers
    return 0


NOTHING: frozenset[int] = frozenset()


def bits(parts: frozenset[int]) -> str:
    """A partition set for labels, e.g. ``{p1,p2}``."""
    return "{" + ",".join(f"p{q}" for q in sorted(parts)) + "}"


def _set(t: tuple, i: int, v) -> tuple:
    return t[:i] + (v,) + t[i + 1:]


def _find(members: tuple[Member, ...], mid: int) -> int:
    for i, m in enumerate(members):
        if m.member_id == mid:
            return i
    return -1


def _static_member(members: tuple[Member, ...], inst: int) -> int:
    for i, m in enumerate(members):
        if m.instance == inst:
            return i
    return -1


def _fresh_id(s: GroupModel) -> int:
    # Compared one by one rather than through a set of ids, so that ``kafkamc prove`` can run it
    # on symbolic member ids (a set would hash them); the answer is the same.
    i = 1
    while any(m.member_id == i for m in s.members) or any(c.member_id == i for c in s.clients):
        i += 1
    return i


def _claims(p: Params, c: Client) -> tuple[int, int]:
    """What a JoinGroup reports: eager StickyAssignor user data (KIP-341: with its generation), or
    the cooperative Subscription's ownedPartitions (KIP-429) with the member's generation (KIP-792)."""
    if p.protocol == "eager":
        return c.memo, c.memo_generation
    return c.owned, c.generation


def _prepare(g: GroupState) -> GroupState:
    """maybePrepareRebalance: Stable, CompletingRebalance and Empty move to PreparingRebalance."""
    return _PR if g in (_ST, _CR, _E) else g


def _lost(c: Client, state: ClientState, member_id: int) -> Client:
    """resetGenerationOnResponseError: the generation is gone and so are the partitions
    (onPartitionsLost, KIP-429); KAFKA-13419 keeps the member id on ILLEGAL_GENERATION."""
    return Client(state, member_id, -1, NOTHING, c.memo, c.memo_generation, NOTHING, POSITIONS, c.stalled, c.hung)


def _fenced(c: Client) -> Client:
    return Client(_FENCED, c.member_id, c.generation, c.owned, c.memo, c.memo_generation, NOTHING,
                  c.positions, c.stalled, c.hung)


def _without(s: GroupModel, i: int) -> list[tuple[int, tuple[Member, ...]]]:
    """Remove members[i]; GroupMetadata.remove picks another leader from the remaining members in
    HashMap order, i.e. any of them: one (leader, members) pair per choice."""
    gone = s.members[i]
    rest = s.members[:i] + s.members[i + 1:]
    if s.leader != gone.member_id:
        return [(s.leader, rest)]
    if not rest:
        return [(0, rest)]
    return [(m.member_id, rest) for m in rest]


def _leader_note(s: GroupModel, leader: int) -> str:
    if leader == s.leader:
        return ""
    return f" leader=m{leader}" if leader else " leader=none"


def _validate(p: Params, s: GroupModel, k: int, c: Client, label: str):
    """The checks every request with a member id gets (validateCurrentMember, KIP-345): a
    superseded instance is FENCED_INSTANCE_ID, an unknown member UNKNOWN_MEMBER_ID. Returns
    (member index, None) when the member is valid, else (-1, error successor)."""
    inst = instance_of(p, k)
    if inst:
        si = _static_member(s.members, inst)
        if si >= 0 and s.members[si].member_id != c.member_id:
            return -1, (f"{label} -> FENCED_INSTANCE_ID", _client(s, k, _fenced(c)))
    i = _find(s.members, c.member_id)
    if i < 0:
        return -1, (f"{label} -> UNKNOWN_MEMBER_ID", _client(s, k, _lost(c, _UNJOINED, 0)))
    return i, None


def _client(s: GroupModel, k: int, c: Client) -> GroupModel:
    return GroupModel(s.group, s.generation, s.leader, s.members, _set(s.clients, k - 1, c),
                      s.stalls, s.committed, s.done)


def _join(p: Params, s: GroupModel, k: int, c: Client, label: str):
    """The coordinator's handling of a JoinGroup from process k (GroupCoordinator.handleJoinGroup).

    Yields (label, state). ``c`` is the client as it is when it sends the request."""
    claimed, claim_gen = _claims(p, c)
    g = s.group
    members = s.members
    clients = s.clients
    inst = instance_of(p, k)
    if c.member_id == 0:
        si = _static_member(members, inst) if inst else -1
        if si >= 0:
            old = members[si]
            if g == _ST or p.static_rejoin != "reuse":
                # KIP-345 replaceStaticMember; KAFKA-8500 (2.4) does it in every state.
                new_id = _fresh_id(s)
                fence = old.waiter if old.waiter != k else 0
                leader = new_id if s.leader == old.member_id else s.leader
                if g == _ST or (g == _CR and p.static_rejoin == "replace-2.4"):
                    # No rebalance when the protocol is unchanged (KAFKA-10284 persists the new
                    # id); the new process gets the current generation, the leader skips the
                    # assignment (KIP-814). In 2.4-2.5 CompletingRebalance was handled the same
                    # way, but the leader's assignment is keyed by the member ids of its
                    # JoinGroup response, so the new id gets none (KAFKA-9801).
                    late = g == _CR
                    m = Member(new_id, inst, claimed, claim_gen, old.assignment, 0, not late, late)
                    nc = Client(_C_CR, new_id, s.generation, c.owned, c.memo, c.memo_generation, NOTHING,
                                c.positions, c.stalled, c.hung)
                    ng = g
                else:
                    # KAFKA-9801 (2.6): in CompletingRebalance the replacement forces a rebalance.
                    m = Member(new_id, inst, claimed, claim_gen, old.assignment, k, False, False)
                    nc = Client(_C_PR, 0, c.generation, c.owned, c.memo, c.memo_generation, NOTHING,
                                c.positions, c.stalled, c.hung)
                    ng = _PR
                members = tuple(sorted(_set(members, si, m), key=lambda x: x.member_id))
                clients = _set(clients, k - 1, nc)
                if fence:
                    clients = _set(clients, fence - 1, _fenced(clients[fence - 1]))
                yield (f"{label} -> static member m{old.member_id} replaced by m{new_id}",
                       GroupModel(ng, s.generation, leader, members, clients, s.stalls, s.committed, s.done))
                return
            # Before KAFKA-8500: outside Stable the rejoining instance takes over the old member
            # id (updateMemberAndRebalance); a parked JoinGroup of the old process is orphaned.
            m = Member(old.member_id, inst, claimed, claim_gen, old.assignment, k, False, old.late)
            nc = Client(_C_PR, 0, c.generation, c.owned, c.memo, c.memo_generation, NOTHING,
                        c.positions, c.stalled, c.hung)
            yield (f"{label} -> static member m{old.member_id} reused",
                   GroupModel(_prepare(g), s.generation, s.leader, _set(members, si, m),
                              _set(clients, k - 1, nc), s.stalls, s.committed, s.done))
            return
        # A new member: addMemberAndRebalance. The first member of a leaderless group leads.
        new_id = _fresh_id(s)
        m = Member(new_id, inst, claimed, claim_gen, NOTHING, k, False, False)
        members = tuple(sorted(members + (m,), key=lambda x: x.member_id))
        nc = Client(_C_PR, 0, c.generation, c.owned, c.memo, c.memo_generation, NOTHING,
                    c.positions, c.stalled, c.hung)
        yield (f"{label} -> new member m{new_id}",
               GroupModel(_prepare(g), s.generation, s.leader or new_id, members,
                          _set(clients, k - 1, nc), s.stalls, s.committed, s.done))
        return
    i, err = _validate(p, s, k, c, label)
    if err is not None:
        yield err
        return
    old = members[i]
    same = old.claimed == claimed and old.claim_generation == claim_gen
    if g != _PR and same and not (g == _ST and s.leader == old.member_id):
        # A follower with unchanged metadata gets the current generation back, no rebalance.
        nc = Client(_C_CR, c.member_id, s.generation, c.owned, c.memo, c.memo_generation, NOTHING,
                    c.positions, c.stalled, c.hung)
        yield (f"{label} -> current generation {s.generation}", _client(s, k, nc))
        return
    # updateMemberAndRebalance: new metadata, or the leader rejoining, or a rebalance under way.
    m = Member(old.member_id, old.instance, claimed, claim_gen, old.assignment, k, False, old.late)
    nc = Client(_C_PR, c.member_id, c.generation, c.owned, c.memo, c.memo_generation, NOTHING,
                c.positions, c.stalled, c.hung)
    yield (f"{label} -> m{old.member_id} parked",
           GroupModel(_prepare(g), s.generation, s.leader, _set(members, i, m),
                      _set(clients, k - 1, nc), s.stalls, s.committed, s.done))


def _rejoin(p: Params, s: GroupModel, k: int, c: Client, label: str):
    """REBALANCE_IN_PROGRESS: onJoinPrepare, then JoinGroup with the known member id. Eager
    members revoke every partition first; cooperative members keep them (KIP-429)."""
    if p.protocol == "eager":
        c = Client(c.state, c.member_id, c.generation, NOTHING, c.memo, c.memo_generation, NOTHING,
                   POSITIONS, c.stalled, c.hung)
    yield from _join(p, s, k, c, f"{label} -> REBALANCE_IN_PROGRESS; JoinGroup(c{k})")


def _positions(s: GroupModel, c: Client, owned: frozenset[int]) -> frozenset[tuple[int, int]]:
    """Positions after taking ``owned``: a partition the consumer keeps keeps its position; a new
    one starts at the committed offset (OffsetFetch on assignment, before the first poll)."""
    kept = {q: pos for q, pos in c.positions if q in owned}
    return frozenset((q, kept[q] if q in kept else s.committed[q - 1]) for q in owned)


def _apply_assignment(p: Params, s: GroupModel, c: Client, assignment: frozenset[int]) -> Client:
    """onJoinComplete. Eager: the assignment replaces everything. Cooperative (KIP-429): partitions
    no longer assigned are revoked and the member rejoins at once (requestRejoin), which starts
    the second rebalance that hands them to their new owner. Positions: ``_positions``."""
    positions = _positions(s, c, assignment)
    if p.protocol == "eager":
        return Client(_C_ST, c.member_id, c.generation, assignment, assignment, c.generation, NOTHING,
                      positions, c.stalled, c.hung)
    revoked = c.owned - assignment
    state = _UNJOINED if revoked else _C_ST
    return Client(state, c.member_id, c.generation, assignment, NOTHING, -1, NOTHING, positions, c.stalled, c.hung)


def assignments(p: Params, members: tuple[Member, ...]) -> list[tuple[frozenset[int], ...]]:
    """Every assignment (a partition set per member, in ``members`` order) the leader may compute.

    1. Claims: with ``generation-aware`` claims (KIP-341 for the StickyAssignor, KIP-792 and
       KAFKA-12984 for the cooperative one) a partition claimed by several members belongs to the
       claim of the highest generation, and to nobody on a tie; ``raw`` claims (before 2.3,
       KAFKA-7026) keep every claimant as an owner.
    2. Target: any balanced assignment keeping the most partitions with an owner (stickiness).
    3. ``raw``: a partition claimed by several members stays in each claimant's assignment, the
       double assignment of KAFKA-7026.
    4. Cooperative and ``safe`` (KIP-429, CooperativeStickyAssignor.adjustAssignment): a partition
       whose target differs from its owner is only taken away in this generation; ``unsafe``
       hands it over in the same rebalance (what validateCooperativeAssignment rejects since).
    """
    n = len(members)
    parts = p.partitions
    raw = p.sticky_claims == "raw"
    owners: list[tuple[int, ...]] = []
    for q in range(parts):
        claim = [i for i, m in enumerate(members) if q + 1 in m.claimed]
        if raw or len(claim) <= 1:
            owners.append(tuple(claim))
        else:
            top = max(members[i].claim_generation for i in claim)
            best = [i for i in claim if members[i].claim_generation == top]
            owners.append(tuple(best) if len(best) == 1 else ())
    lo, hi = parts // n, -(-parts // n)
    best_score = -1
    targets: list[tuple[int, ...]] = []
    for f in product(range(n), repeat=parts):
        counts = [0] * n
        for i in f:
            counts[i] += 1
        if min(counts) < lo or max(counts) > hi:
            continue
        score = sum(1 for q, i in enumerate(f) if i in owners[q])
        if score > best_score:
            best_score, targets = score, [f]
        elif score == best_score:
            targets.append(f)
    hold_back = p.protocol == "cooperative" and p.cooperative_assignor == "safe"
    out: list[tuple[frozenset[int], ...]] = []
    for f in targets:
        a: list[set[int]] = [set() for _ in range(n)]
        for q, i in enumerate(f):
            if hold_back and owners[q] and i not in owners[q]:
                continue
            a[i].add(q + 1)
        if raw:
            for q in range(parts):
                if len(owners[q]) > 1:
                    for i in owners[q]:
                        a[i].add(q + 1)
        t = tuple(frozenset(x) for x in a)
        if t not in out:
            out.append(t)
    return out


@lru_cache(maxsize=None)
def _renamings(consumers: int, static: int, partitions: int):
    """(process order, partition map) pairs: new position j holds old process order[j] + 1."""
    fixed = list(range(consumers + static))
    dyn = list(range(static, consumers))
    out = []
    for perm in permutations(dyn):
        order = fixed[:]
        for j, i in zip(dyn, perm):
            order[j] = i
        for pp in permutations(range(1, partitions + 1)):
            out.append((tuple(order), (0,) + pp))
    return tuple(out)


@lru_cache(maxsize=None)
def _identity(processes: int, partitions: int):
    return tuple(range(processes)), tuple(range(partitions + 1))


def _renamed(s: GroupModel, order: tuple[int, ...], parts: tuple[int, ...]) -> GroupModel:
    where = [0] * len(order)
    for j, i in enumerate(order):
        where[i] = j + 1  # old process i + 1 is now process where[i]
    ids: dict[int, int] = {0: 0}

    def rid(x: int) -> int:
        y = ids.get(x)
        if y is None:
            y = ids[x] = len(ids)
        return y

    def ps(x: frozenset[int]) -> frozenset[int]:
        return frozenset(parts[q] for q in x) if x else x

    clients = []
    for i in order:
        c = s.clients[i]
        positions = frozenset((parts[q], pos) for q, pos in c.positions) if c.positions else c.positions
        clients.append(Client(c.state, rid(c.member_id), c.generation, ps(c.owned), ps(c.memo),
                              c.memo_generation, ps(c.pending), positions, c.stalled, c.hung))
    for m in sorted(s.members, key=lambda m: where[m.waiter - 1] if m.waiter else 0):
        rid(m.member_id)
    members = tuple(sorted(
        (Member(ids[m.member_id], m.instance, ps(m.claimed), m.claim_generation, ps(m.assignment),
                where[m.waiter - 1] if m.waiter else 0, m.synced, m.late) for m in s.members),
        key=lambda m: m.member_id,
    ))
    committed, done = s.committed, s.done
    if parts != tuple(range(len(parts))):
        committed, done = [0] * len(committed), [0] * len(done)
        for q in range(1, len(parts)):
            committed[parts[q] - 1] = s.committed[q - 1]
            done[parts[q] - 1] = s.done[q - 1]
        committed, done = tuple(committed), tuple(done)
    return GroupModel(s.group, s.generation, ids[s.leader] if s.leader else 0, members, tuple(clients),
                      s.stalls, committed, done)


class Group(Spec):
    """The classic consumer group: JoinGroup/SyncGroup rebalances, generations, static members."""

    name = "group"
    description = (
        "classic consumer group: JoinGroup/SyncGroup, generations, eager and cooperative "
        "(KIP-429) rebalancing, static membership (KIP-345)"
    )
    parameters = (
        Param("consumers", 2, "consumer processes subscribed to the topic", min=1, max=4),
        Param("partitions", 2, "partitions of the subscribed topic", min=1, max=4),
        Param("max_generation", 3, "join completions stop at this generation", min=1, max=8, lift=True),
        Param("max_session_expiries", 1, "consumer stalls (long GC pauses) during which the "
              "coordinator may expire the member's session (zombie consumers)", min=0, max=4, lift=True),
        Param("records", 1, "records per partition that consumers process and commit "
              "(OffsetCommit/OffsetFetch; 0: offsets not modelled)", min=0, max=4),
        Param("protocol", "eager", "rebalance protocol: eager, or cooperative (KIP-429)",
              choices=PROTOCOLS),
        Param("static", 0, "consumers with a group.instance.id (KIP-345); each gets a second "
              "process with the same instance id", min=0, max=4),
        Param("static_rejoin", "replace", "rejoin of a known instance: replace the member id and, "
              "in CompletingRebalance, rebalance (2.6+, KAFKA-9801's fix); replace-2.4: replace "
              "without a rebalance in CompletingRebalance (2.4-2.5, KAFKA-9801); reuse the member "
              "id outside Stable (before 2.4, KAFKA-8500)", choices=STATIC_REJOIN),
        Param("commit_check", "generation", "OffsetCommit validation: generation and member id, "
              "or none", choices=COMMIT_CHECKS),
        Param("cooperative_assignor", "safe", "cooperative assignor: safe (revoke, then hand "
              "over in a second rebalance, KIP-429) or unsafe (move in one rebalance)",
              choices=COOPERATIVE_ASSIGNORS),
        Param("sticky_claims", "generation-aware", "previously owned partitions: "
              "generation-aware (KIP-341/KIP-792) or raw (before 2.3, KAFKA-7026)",
              choices=STICKY_CLAIMS),
        Param("pending_sync_timeout", True, "the coordinator removes members whose SyncGroup did "
              "not arrive within the rebalance timeout of CompletingRebalance although they "
              "heartbeat (2.8.1, 3.0+: KAFKA-12890's fix); false: 2.7.0-2.8.0, where heartbeats keep "
              "such a member and the group stays in CompletingRebalance forever (KAFKA-12890)"),
        Param("sync_hangs", False, "a consumer may never send SyncGroup after its JoinGroup "
              "response while its heartbeat thread keeps its session alive (the trigger of "
              "KAFKA-12890)"),
    )
    # clients[k - 1] is consumer process k: one swim lane per client in the viewer, c1 in traces.
    entities = {"client": ("clients",)}
    invariants = (
        no_double_assignment,
        no_double_ownership,
        static_instance_unique,
        stable_group_owns_every_partition,
        committed_offsets_never_move_backwards,
        no_reprocessing_of_committed_records,
        # Auxiliary invariants for ``kafkamc prove`` (not defaults; each holds under ``check`` too).
        members_belong_to_consumers,
        member_ids_unique,
        eager_rejoin_owns_nothing,
        consumers_hold_their_assignment,
        generations_count_rebalances,
        consumers_without_generation_own_nothing,
    )
    recoverability = (group_can_stabilise,)
    liveness = (group_eventually_stable,)
    # Fairness (check -l): what keeps running keeps running. A live consumer that must (re)join
    # sends JoinGroup (join_group), its heartbeat thread keeps heartbeating and so learns of a
    # rebalance or a lost generation (heartbeat), it sends its SyncGroup (sync_group) and the
    # network delivers the leader's SyncGroup response (receive_sync_response); a stalled or hung
    # consumer whose member the coordinator removed comes back (resume). The coordinator's timers
    # fire: the rebalance timeout completes a join (complete_join), an unheartbeated session
    # expires (session_expiry), the pending-sync timer removes members whose SyncGroup never came
    # (pending_sync_expiry). Not fair, nothing forces them: LeaveGroup, stalls and hangs before
    # SyncGroup, group deletion, and the application's processing and commits, which a rebalance
    # does not wait for.
    weak_fairness = ("join_group", "heartbeat", "sync_group", "receive_sync_response", "resume",
                     "complete_join", "session_expiry", "pending_sync_expiry")
    default_invariants = (
        "no-double-assignment",
        "no-double-ownership",
        "static-instance-unique",
        "stable-group-owns-every-partition",
        "committed-offsets-never-move-backwards",
        "no-reprocessing-of-committed-records",
    )

    def validate_params(self, p: Params) -> None:
        if p.static > p.consumers:
            raise UsageError(f"parameter static={p.static} exceeds consumers={p.consumers}; "
                             f"allowed: 0..{p.consumers}")
        if p.static_rejoin != "replace" and p.static == 0:
            raise UsageError(f"static_rejoin={p.static_rejoin} needs static members; allowed: static >= 1")
        if p.cooperative_assignor == "unsafe" and p.protocol != "cooperative":
            raise UsageError("cooperative_assignor=unsafe needs protocol=cooperative")

    @staticmethod
    def init_states(p: Params):
        nobody = Client(_UNJOINED, 0, -1, NOTHING, NOTHING, -1, NOTHING, POSITIONS, False, False)
        zero = (0,) * p.partitions
        yield GroupModel(_E, 0, 0, (), (nobody,) * (p.consumers + p.static), 0, zero, zero)

    @staticmethod
    def domain(p: Params):
        """TypeOK: member ids are at most one more than the ids a state can hold (a fresh id is the
        least unused one), generations up to ``max_generation``, partition sets are symbolic sets
        of 1..partitions, and positions pairs (partition, offset) with offsets up to ``records``."""
        procs = p.consumers + p.static
        member_id = ty.Int(0, 2 * procs + 1)
        generation = ty.Int(-1, p.max_generation)
        parts = ty.Set(range(1, p.partitions + 1))
        # With records=0 every offset is 0: a concrete 0 keeps positions, a set of pairs, hashable.
        offset = ty.Const(0) if p.records == 0 else ty.Int(0, p.records)
        return ty.Record(
            GroupModel,
            group=ty.Enum(GroupState),
            generation=ty.Int(0, p.max_generation),
            leader=member_id,
            members=ty.Bag(ty.Record(
                Member, member_id=ty.Int(1, 2 * procs + 1),
                instance=ty.Int(0, p.static) if p.static else ty.Const(0),
                claimed=parts, claim_generation=generation, assignment=parts, waiter=ty.Int(0, procs),
                synced=ty.Bool(),
                late=ty.Bool() if p.static_rejoin == "replace-2.4" else ty.Const(False)),
                procs, sorted=False),
            clients=ty.Tuple(ty.Record(
                Client, state=ty.Enum(ClientState), member_id=member_id, generation=generation, owned=parts,
                memo=parts, memo_generation=generation, pending=parts,
                positions=ty.Set((q, o) for q in range(1, p.partitions + 1) for o in range(p.records + 1)),
                stalled=ty.Bool(), hung=ty.Bool()), procs),
            stalls=ty.Int(0, p.max_session_expiries),
            committed=ty.Tuple(offset, p.partitions),
            done=ty.Tuple(offset, p.partitions),
        )

    @staticmethod
    def view(p: Params, s: GroupModel) -> GroupModel:
        """Member ids are names: states that differ only in how their ids are numbered are the
        same state (ids renamed in order of first mention, as in ``symmetry``). Traces keep the
        ids the run actually handed out."""
        order, parts = _identity(p.consumers + p.static, p.partitions)
        return _renamed(s, order, parts)

    @staticmethod
    def symmetry(p: Params, s: GroupModel) -> GroupModel:
        """Dynamic consumers, partitions and member ids are interchangeable (TLC's symmetry sets).

        Every invariant compares member ids only for equality, treats dynamic consumers alike and
        partitions alike; static processes keep their places (their instance ids differ). Member
        ids are renamed in order of first mention (clients, then parked joins, then the other
        members), which is a bijection because fresh ids are any unused ones; offsets, positions
        and ``done`` move with their partitions. The representative is the renaming with the
        least fingerprint.
        """
        best = s
        best_key = None
        for order, parts in _renamings(p.consumers, p.static, p.partitions):
            cand = _renamed(s, order, parts)
            key = hash(cand)
            if best_key is None or key < best_key:
                best, best_key = cand, key
        return best

    # -- consumers -----------------------------------------------------------------------------
    # A stalled consumer does nothing until it resumes; responses to requests it sent before the
    # stall (parked JoinGroups) still land in its state and are acted on after it resumes.

    @action
    def join_group(p, s):
        """JoinGroup from a consumer without a generation (first join, after UNKNOWN_MEMBER_ID or
        ILLEGAL_GENERATION, after LeaveGroup, or a cooperative member after revoking, KIP-429).
        Handling: GroupCoordinator.handleJoinGroup, static members per KIP-345 and KAFKA-8500."""
        if s.group == _DEAD:
            return
        for k, c in enumerate(s.clients, 1):
            if c.state == _UNJOINED and not c.stalled:
                yield from _join(p, s, k, c, f"JoinGroup(c{k})")

    @action
    def heartbeat(p, s):
        """Heartbeat(generation, member id) from the heartbeat thread (KIP-62): FENCED_INSTANCE_ID
        (KIP-345), UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, or REBALANCE_IN_PROGRESS in
        PreparingRebalance, on which the consumer rejoins. Sent in CompletingRebalance too
        (KAFKA-10134). NONE changes nothing: a live consumer's session never expires."""
        if s.group == _DEAD:
            return
        for k, c in enumerate(s.clients, 1):
            if (c.state != _C_ST and c.state != _C_CR) or c.stalled or c.hung:
                continue
            label = f"Heartbeat(c{k})"
            i, err = _validate(p, s, k, c, label)
            if err is not None:
                yield err
            elif c.generation != s.generation:
                yield f"{label} -> ILLEGAL_GENERATION", _client(s, k, _lost(c, _UNJOINED, c.member_id))
            elif s.group == _PR:
                yield from _rejoin(p, s, k, c, label)

    @action
    def sync_group(p, s):
        """SyncGroup(generation, member id). The leader's, in CompletingRebalance, carries the
        assignment it computed for the members of its JoinGroup response; storing it moves the
        group to Stable. A follower's returns the stored assignment once Stable
        (validateSyncGroup; KIP-345 fencing). Either takes the member off the pending-sync list."""
        if s.group == _DEAD:
            return
        for k, c in enumerate(s.clients, 1):
            if c.state != _C_CR or c.stalled or c.hung:
                continue
            label = f"SyncGroup(c{k})"
            i, err = _validate(p, s, k, c, label)
            if err is not None:
                yield err
                continue
            if c.generation != s.generation:
                yield f"{label} -> ILLEGAL_GENERATION", _client(s, k, _lost(c, _UNJOINED, c.member_id))
            elif s.group == _PR:
                yield from _rejoin(p, s, k, c, label)
            elif s.group == _ST:
                me = s.members[i]
                a = me.assignment
                members = _set(s.members, i, _synced(me, a)) if not me.synced else s.members
                nc = _apply_assignment(p, s, c, a)
                yield f"{label} -> {bits(a)}", GroupModel(
                    s.group, s.generation, s.leader, members, _set(s.clients, k - 1, nc), s.stalls,
                    s.committed, s.done)
            elif s.group == _CR and s.leader == c.member_id:
                if s.members[i].late:
                    # KAFKA-9801: the new process got the old leader id in its JoinGroup response,
                    # so it syncs as a follower: the coordinator stores an empty assignment map.
                    options = [tuple(NOTHING for _ in s.members)]
                else:
                    options = [tuple(NOTHING if m.late else x[j] for j, m in enumerate(s.members))
                               for x in assignments(p, s.members)]
                for a in options:
                    members = tuple(_synced(m, a[j]) if j == i else
                                    Member(m.member_id, m.instance, m.claimed, m.claim_generation, a[j],
                                           m.waiter, m.synced, m.late)
                                    for j, m in enumerate(s.members))
                    nc = Client(_C_AS, c.member_id, c.generation, c.owned, c.memo, c.memo_generation, a[i],
                                c.positions, c.stalled, c.hung)
                    shown = ", ".join(f"m{m.member_id}:{bits(a[j])}" for j, m in enumerate(s.members))
                    yield (f"{label} leader assigns {shown}",
                           GroupModel(_ST, s.generation, s.leader, members, _set(s.clients, k - 1, nc),
                                      s.stalls, s.committed, s.done))

    @action
    def receive_sync_response(p, s):
        """The leader's SyncGroup response arrives; onJoinComplete applies its assignment."""
        for k, c in enumerate(s.clients, 1):
            if c.state == _C_AS and not c.stalled:
                yield (f"SyncGroupResponse(c{k}) {bits(c.pending)}",
                       _client(s, k, _apply_assignment(p, s, c, c.pending)))

    @action
    def leave_group(p, s):
        """LeaveGroup of a dynamic member (poll timeout or unsubscribe, KIP-62); static members
        never send it (KIP-345). The consumer revokes everything and later rejoins as new."""
        if s.group == _DEAD:
            return
        for k, c in enumerate(s.clients, 1):
            if instance_of(p, k) or c.member_id == 0 or c.state in (_C_PR, _C_AS, _FENCED) or c.stalled or c.hung:
                continue
            nc = Client(_UNJOINED, 0, -1, NOTHING, c.memo, c.memo_generation, NOTHING, POSITIONS, False, False)
            i = _find(s.members, c.member_id)
            label = f"LeaveGroup(c{k}, m{c.member_id})"
            if i < 0:
                yield f"{label} -> UNKNOWN_MEMBER_ID", _client(s, k, nc)
                continue
            clients = _set(s.clients, k - 1, nc)
            for leader, rest in _without(s, i):
                yield (label + _leader_note(s, leader),
                       GroupModel(_prepare(s.group), s.generation, leader, rest, clients, s.stalls,
                                  s.committed, s.done))

    @action
    def process(p, s):
        """The consumer processes the record at its position of a partition it owns (poll, then
        the application's work) and moves past it. A consumer that is no longer a member (its
        session expired while it was stalled) still does until it learns so: zombie processing."""
        if p.records == 0:
            return
        for k, c in enumerate(s.clients, 1):
            if not c.positions or c.stalled or c.hung or c.state == _FENCED:
                continue
            for q, pos in sorted(c.positions):
                if pos < p.records:
                    positions = (c.positions - {(q, pos)}) | {(q, pos + 1)}
                    nc = Client(c.state, c.member_id, c.generation, c.owned, c.memo, c.memo_generation,
                                c.pending, positions, c.stalled, c.hung)
                    yield f"Process(c{k}, p{q}, offset={pos})", _client(s, k, nc)

    @action
    def offset_commit(p, s):
        """OffsetCommit(generation, member id) of the consumer's positions of the partitions it
        owns (commitSync). Accepted from a current member with the group's generation in Stable
        or PreparingRebalance, so previous owners commit while revoking (validateOffsetCommit:
        UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, REBALANCE_IN_PROGRESS in CompletingRebalance);
        commit_check=none accepts anything. Rejections change nothing here: the consumer learns
        the same from its next Heartbeat."""
        if s.group == _DEAD or p.records == 0:
            return
        for k, c in enumerate(s.clients, 1):
            if not c.positions or c.state == _FENCED or c.stalled or c.hung:
                continue
            i = _find(s.members, c.member_id)
            # A superseded static member's id is no longer a member, so i < 0 covers
            # FENCED_INSTANCE_ID as well as UNKNOWN_MEMBER_ID.
            if p.commit_check == "generation" and (
                i < 0 or c.generation != s.generation or s.group not in (_ST, _PR)
            ):
                continue
            committed = list(s.committed)
            done = list(s.done)
            for q, pos in c.positions:
                committed[q - 1] = pos
                done[q - 1] = max(done[q - 1], pos)
            committed_t = tuple(committed)
            if committed_t != s.committed:
                shown = ", ".join(f"p{q}@{pos}" for q, pos in sorted(c.positions))
                yield (f"OffsetCommit(c{k}, m{c.member_id}, generation={c.generation}) {shown}",
                       GroupModel(s.group, s.generation, s.leader, s.members, s.clients, s.stalls,
                                  committed_t, tuple(done)))

    @action
    def stall(p, s):
        """A consumer process pauses (a long GC pause, a frozen VM): its heartbeat thread stops
        too, so the coordinator may expire its session. At most ``max_session_expiries`` stalls."""
        if s.stalls >= p.max_session_expiries or s.group == _DEAD:
            return
        for k, c in enumerate(s.clients, 1):
            if not c.stalled and not c.hung and c.member_id and _find(s.members, c.member_id) >= 0:
                nc = Client(c.state, c.member_id, c.generation, c.owned, c.memo, c.memo_generation,
                            c.pending, c.positions, True, False)
                yield f"Stall(c{k})", GroupModel(s.group, s.generation, s.leader, s.members,
                                                 _set(s.clients, k - 1, nc), s.stalls + 1, s.committed,
                                                 s.done)

    @action
    def hang_before_sync(p, s):
        """KAFKA-12890's trigger (``sync_hangs``): a consumer that received its JoinGroup response
        never sends SyncGroup while its heartbeat thread (KIP-62) keeps heartbeating, which since
        KAFKA-10134 (2.7) it may in CompletingRebalance. The cause is on the client (the leader's
        application thread blocked in the assignor or a callback, a SyncGroup lost and not
        retried) and outside the model; its consumer sends nothing else either (no LeaveGroup on
        max.poll.interval.ms). It resumes, like a stall, once the coordinator removed its member."""
        if not p.sync_hangs or (s.group != _CR and s.group != _ST):
            return
        for k, c in enumerate(s.clients, 1):
            if c.state == _C_CR and not c.stalled and not c.hung and c.generation == s.generation:
                i = _find(s.members, c.member_id)
                if i >= 0 and not s.members[i].synced:
                    nc = Client(c.state, c.member_id, c.generation, c.owned, c.memo, c.memo_generation,
                                c.pending, c.positions, False, True)
                    yield f"HangBeforeSync(c{k}, m{c.member_id})", _client(s, k, nc)

    @action
    def resume(p, s):
        """The stalled (or hung) consumer resumes, unaware of what happened meanwhile. Only once
        the coordinator has removed its member: a stall that outlasts nothing is just a slow
        consumer, which every interleaving already covers."""
        for k, c in enumerate(s.clients, 1):
            if (c.stalled or c.hung) and _find(s.members, c.member_id) < 0:
                nc = Client(c.state, c.member_id, c.generation, c.owned, c.memo, c.memo_generation,
                            c.pending, c.positions, False, False)
                yield f"Resume(c{k})", _client(s, k, nc)

    # -- coordinator ---------------------------------------------------------------------------

    @action
    def complete_join(p, s):
        """onCompleteJoin: all members rejoined, or the rebalance timeout expired, which removes
        the dynamic members that did not rejoin (static ones stay, KIP-345). initNextGeneration:
        generation + 1, CompletingRebalance (Empty without members); a joined member leads if the
        leader did not rejoin (maybeElectNewJoinedLeader). Every parked JoinGroup is answered, and
        every member is pending sync (KAFKA-12890)."""
        if s.group != _PR or s.generation >= p.max_generation:
            return
        gen = s.generation + 1
        keep = tuple(m for m in s.members if m.waiter or m.instance)
        timeout = " (rebalance timeout)" if len(keep) < len(s.members) else ""
        if not keep:
            yield (f"CompleteJoin(generation={gen}) -> Empty{timeout}",
                   GroupModel(_E, gen, 0, (), s.clients, s.stalls, s.committed, s.done))
            return
        joined = [m.member_id for m in keep if m.waiter]
        if not joined:
            return  # no member rejoined: Kafka postpones the completion
        clients = list(s.clients)
        for m in keep:
            if m.waiter:
                c = clients[m.waiter - 1]
                clients[m.waiter - 1] = Client(_C_CR, m.member_id, gen, c.owned, c.memo, c.memo_generation,
                                               NOTHING, c.positions, c.stalled, c.hung)
        clients_t = tuple(clients)
        members = tuple(Member(m.member_id, m.instance, m.claimed, m.claim_generation, NOTHING, 0, False, False)
                        for m in keep)
        leaders = [s.leader] if s.leader in joined else joined
        for leader in leaders:
            yield (f"CompleteJoin(generation={gen}, leader=m{leader}){timeout}",
                   GroupModel(_CR, gen, leader, members, clients_t, s.stalls, s.committed, s.done))

    @action
    def session_expiry(p, s):
        """onExpireHeartbeat: the coordinator drops a member whose heartbeats stopped: its consumer
        is stalled, or no consumer holds its member id any more. A member with a parked JoinGroup
        is kept alive."""
        if s.group == _DEAD:
            return
        for i, m in enumerate(s.members):
            if m.waiter:
                continue
            if any(c.member_id == m.member_id and c.state != _FENCED and not c.stalled for c in s.clients):
                continue
            for leader, rest in _without(s, i):
                yield (f"SessionExpiry(m{m.member_id})" + _leader_note(s, leader),
                       GroupModel(_prepare(s.group), s.generation, leader, rest, s.clients,
                                  s.stalls, s.committed, s.done))

    @action
    def pending_sync_expiry(p, s):
        """KAFKA-12890 (2.8.1, 3.0): the rebalance timeout after CompletingRebalance began expires
        with members that never sent SyncGroup (though they may heartbeat); they are removed and
        the group rebalances. Heartbeats no longer keep such a member (KAFKA-10134 let them).
        ``pending_sync_timeout=false`` is 2.7.0-2.8.0, before the fix: only the session timeout
        watches CompletingRebalance, and heartbeats reset it, so a member whose SyncGroup never
        comes keeps the group in CompletingRebalance forever (KAFKA-12890)."""
        if not p.pending_sync_timeout or (s.group != _CR and s.group != _ST):
            return
        pending = [m for m in s.members if not m.synced and not m.waiter]
        if not pending:
            return
        rest = tuple(m for m in s.members if m.synced or m.waiter)
        gone = ", ".join(f"m{m.member_id}" for m in pending)
        if any(m.member_id == s.leader for m in rest) or not rest:
            leaders = [s.leader if rest else 0]
        else:
            leaders = [m.member_id for m in rest]
        for leader in leaders:
            yield (f"PendingSyncExpiry({gone})" + _leader_note(s, leader),
                   GroupModel(_PR, s.generation, leader, rest, s.clients, s.stalls, s.committed, s.done))

    @action
    def delete_group(p, s):
        """DeleteGroups (or offset expiry) of an Empty group that has had members: Dead is final
        (the group at generation 0 stands for one no consumer has created yet)."""
        if s.group == _E and s.generation > 0:
            yield "DeleteGroup -> Dead", GroupModel(_DEAD, s.generation, 0, (), s.clients, s.stalls,
                                                    s.committed, s.done)


def _synced(m: Member, assignment: frozenset[int]) -> Member:
    return Member(m.member_id, m.instance, m.claimed, m.claim_generation, assignment, m.waiter, True, m.late)
