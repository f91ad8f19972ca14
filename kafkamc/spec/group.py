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
* Timers are nondeterministic: the rebalance timeout may complete a join at any time (removing
  dynamic members that did not rejoin), and a session may expire at the coordinator at any time
  while the consumer does not notice (a long GC pause), at most ``max_session_expiries`` times.
  The pending-sync timer of KAFKA-12890 (a member that never sends SyncGroup is removed) is
  covered by the same session expiry; members still to sync are those whose consumer is in
  COMPLETING_REBALANCE.
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
    commit_from_current_generation,
    generation_monotonic,
    no_double_assignment,
    no_double_ownership,
    static_instance_unique,
    valid_group_transitions,
)
from kafkamc.spec.api import Param, Params, Spec, action

__all__ = ["Group", "GroupState", "ClientState", "Member", "Client", "Commit", "GroupModel"]


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


# GroupMetadata.validPreviousStates: target state -> the states it may be entered from.
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
STATIC_REJOIN = ("replace", "reuse")
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


@dataclass(frozen=True, slots=True)
class Commit:
    """History: the last offset commit the coordinator accepted, with what it knew then."""

    member_id: int  # 0: no commit accepted since the last join completion
    generation: int  # the generation the commit carried
    group_generation: int  # the group's generation when it was accepted
    known_member: bool  # the member id was a member of the group when it was accepted


@dataclass(frozen=True, slots=True)
class GroupModel:
    group: GroupState
    generation: int
    leader: int  # member id of the leader, 0: none
    members: tuple[Member, ...]  # sorted by member id
    clients: tuple[Client, ...]  # process k is clients[k - 1]
    expiries: int
    commit: Commit


NO_COMMIT = Commit(0, 0, 0, False)


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
    used = {m.member_id for m in s.members}
    used.update(c.member_id for c in s.clients)
    used.add(s.commit.member_id)
    i = 1
    while i in used:
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
    return Client(state, member_id, -1, NOTHING, c.memo, c.memo_generation, NOTHING)


def _fenced(c: Client) -> Client:
    return Client(_FENCED, c.member_id, c.generation, c.owned, c.memo, c.memo_generation, NOTHING)


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
                      s.expiries, s.commit)


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
            if g == _ST or p.static_rejoin == "replace":
                # KIP-345 replaceStaticMember; KAFKA-8500 (2.4) does it in every state.
                new_id = _fresh_id(s)
                fence = old.waiter if old.waiter != k else 0
                leader = new_id if s.leader == old.member_id else s.leader
                if g == _ST:
                    # No rebalance when the protocol is unchanged (KAFKA-10284 persists the new
                    # id); the new process gets the current generation, the leader skips the
                    # assignment (KIP-814).
                    m = Member(new_id, inst, claimed, claim_gen, old.assignment, 0)
                    nc = Client(_C_CR, new_id, s.generation, c.owned, c.memo, c.memo_generation, NOTHING)
                    ng = _ST
                else:
                    # KAFKA-9801 (2.6): in CompletingRebalance the replacement forces a rebalance.
                    m = Member(new_id, inst, claimed, claim_gen, old.assignment, k)
                    nc = Client(_C_PR, 0, c.generation, c.owned, c.memo, c.memo_generation, NOTHING)
                    ng = _PR
                members = tuple(sorted(_set(members, si, m), key=lambda x: x.member_id))
                clients = _set(clients, k - 1, nc)
                if fence:
                    clients = _set(clients, fence - 1, _fenced(clients[fence - 1]))
                yield (f"{label} -> static member m{old.member_id} replaced by m{new_id}",
                       GroupModel(ng, s.generation, leader, members, clients, s.expiries, s.commit))
                return
            # Before KAFKA-8500: outside Stable the rejoining instance takes over the old member
            # id (updateMemberAndRebalance); a parked JoinGroup of the old process is orphaned.
            m = Member(old.member_id, inst, claimed, claim_gen, old.assignment, k)
            nc = Client(_C_PR, 0, c.generation, c.owned, c.memo, c.memo_generation, NOTHING)
            yield (f"{label} -> static member m{old.member_id} reused",
                   GroupModel(_prepare(g), s.generation, s.leader, _set(members, si, m),
                              _set(clients, k - 1, nc), s.expiries, s.commit))
            return
        # A new member: addMemberAndRebalance. The first member of a leaderless group leads.
        new_id = _fresh_id(s)
        m = Member(new_id, inst, claimed, claim_gen, NOTHING, k)
        members = tuple(sorted(members + (m,), key=lambda x: x.member_id))
        nc = Client(_C_PR, 0, c.generation, c.owned, c.memo, c.memo_generation, NOTHING)
        yield (f"{label} -> new member m{new_id}",
               GroupModel(_prepare(g), s.generation, s.leader or new_id, members,
                          _set(clients, k - 1, nc), s.expiries, s.commit))
        return
    i, err = _validate(p, s, k, c, label)
    if err is not None:
        yield err
        return
    old = members[i]
    same = old.claimed == claimed and old.claim_generation == claim_gen
    if g != _PR and same and not (g == _ST and s.leader == old.member_id):
        # A follower with unchanged metadata gets the current generation back, no rebalance.
        nc = Client(_C_CR, c.member_id, s.generation, c.owned, c.memo, c.memo_generation, NOTHING)
        yield (f"{label} -> current generation {s.generation}", _client(s, k, nc))
        return
    # updateMemberAndRebalance: new metadata, or the leader rejoining, or a rebalance under way.
    m = Member(old.member_id, old.instance, claimed, claim_gen, old.assignment, k)
    nc = Client(_C_PR, c.member_id, c.generation, c.owned, c.memo, c.memo_generation, NOTHING)
    yield (f"{label} -> m{old.member_id} parked",
           GroupModel(_prepare(g), s.generation, s.leader, _set(members, i, m),
                      _set(clients, k - 1, nc), s.expiries, s.commit))


def _rejoin(p: Params, s: GroupModel, k: int, c: Client, label: str):
    """REBALANCE_IN_PROGRESS: onJoinPrepare, then JoinGroup with the known member id. Eager
    members revoke every partition first; cooperative members keep them (KIP-429)."""
    if p.protocol == "eager":
        c = Client(c.state, c.member_id, c.generation, NOTHING, c.memo, c.memo_generation, NOTHING)
    yield from _join(p, s, k, c, f"{label} -> REBALANCE_IN_PROGRESS; JoinGroup(c{k})")


def _apply_assignment(p: Params, c: Client, assignment: frozenset[int]) -> Client:
    """onJoinComplete. Eager: the assignment replaces everything. Cooperative (KIP-429): partitions
    no longer assigned are revoked and the member rejoins at once (requestRejoin), which starts
    the second rebalance that hands them to their new owner."""
    if p.protocol == "eager":
        return Client(_C_ST, c.member_id, c.generation, assignment, assignment, c.generation, NOTHING)
    revoked = c.owned - assignment
    state = _UNJOINED if revoked else _C_ST
    return Client(state, c.member_id, c.generation, assignment, NOTHING, -1, NOTHING)


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
        clients.append(Client(c.state, rid(c.member_id), c.generation, ps(c.owned), ps(c.memo),
                              c.memo_generation, ps(c.pending)))
    for m in sorted(s.members, key=lambda m: where[m.waiter - 1] if m.waiter else 0):
        rid(m.member_id)
    members = tuple(sorted(
        (Member(ids[m.member_id], m.instance, ps(m.claimed), m.claim_generation, ps(m.assignment),
                where[m.waiter - 1] if m.waiter else 0) for m in s.members),
        key=lambda m: m.member_id,
    ))
    cm = s.commit
    commit = Commit(rid(cm.member_id), cm.generation, cm.group_generation, cm.known_member)
    return GroupModel(s.group, s.generation, ids[s.leader] if s.leader else 0, members, tuple(clients),
                      s.expiries, commit)


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
        Param("max_generation", 3, "join completions stop at this generation", min=1, max=8),
        Param("max_session_expiries", 1, "sessions the coordinator may expire (zombie consumers)",
              min=0, max=4),
        Param("protocol", "eager", "rebalance protocol: eager, or cooperative (KIP-429)",
              choices=PROTOCOLS),
        Param("static", 0, "consumers with a group.instance.id (KIP-345); each gets a second "
              "process with the same instance id", min=0, max=4),
        Param("static_rejoin", "replace", "rejoin of a known instance: replace the member id "
              "(KAFKA-8500, 2.4), or reuse it outside Stable (before 2.4)", choices=STATIC_REJOIN),
        Param("commit_check", "generation", "OffsetCommit validation: generation and member id, "
              "or none", choices=COMMIT_CHECKS),
        Param("cooperative_assignor", "safe", "cooperative assignor: safe (revoke, then hand "
              "over in a second rebalance, KIP-429) or unsafe (move in one rebalance)",
              choices=COOPERATIVE_ASSIGNORS),
        Param("sticky_claims", "generation-aware", "previously owned partitions: "
              "generation-aware (KIP-341/KIP-792) or raw (before 2.3, KAFKA-7026)",
              choices=STICKY_CLAIMS),
    )
    # clients[k - 1] is consumer process k: one swim lane per client in the viewer, c1 in traces.
    entities = {"client": ("clients",)}
    invariants = (
        no_double_assignment,
        no_double_ownership,
        commit_from_current_generation,
        static_instance_unique,
        generation_monotonic,
        valid_group_transitions,
    )
    recoverability = (group_can_stabilise,)
    default_invariants = (
        "no-double-assignment",
        "no-double-ownership",
        "commit-from-current-generation",
        "static-instance-unique",
        "generation-monotonic",
        "valid-group-transitions",
    )

    def validate_params(self, p: Params) -> None:
        if p.static > p.consumers:
            raise UsageError(f"parameter static={p.static} exceeds consumers={p.consumers}; "
                             f"allowed: 0..{p.consumers}")
        if p.static_rejoin == "reuse" and p.static == 0:
            raise UsageError("static_rejoin=reuse needs static members; allowed: static >= 1")
        if p.cooperative_assignor == "unsafe" and p.protocol != "cooperative":
            raise UsageError("cooperative_assignor=unsafe needs protocol=cooperative")

    @staticmethod
    def init_states(p: Params):
        nobody = Client(_UNJOINED, 0, -1, NOTHING, NOTHING, -1, NOTHING)
        yield GroupModel(_E, 0, 0, (), (nobody,) * (p.consumers + p.static), 0, NO_COMMIT)

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
        ids are renamed in order of first mention (clients, then parked joins, then the commit
        record), which is a bijection because fresh ids are any unused ones. The representative
        is the renaming with the least fingerprint.
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

    @action
    def join_group(p, s):
        """JoinGroup from a consumer without a generation (first join, after UNKNOWN_MEMBER_ID or
        ILLEGAL_GENERATION, after LeaveGroup, or a cooperative member after revoking, KIP-429).
        Handling: GroupCoordinator.handleJoinGroup, static members per KIP-345 and KAFKA-8500."""
        if s.group == _DEAD:
            return
        for k, c in enumerate(s.clients, 1):
            if c.state == _UNJOINED:
                yield from _join(p, s, k, c, f"JoinGroup(c{k})")

    @action
    def heartbeat(p, s):
        """Heartbeat(generation, member id): FENCED_INSTANCE_ID (KIP-345), UNKNOWN_MEMBER_ID,
        ILLEGAL_GENERATION, or REBALANCE_IN_PROGRESS in PreparingRebalance, on which the consumer
        rejoins. Sent in CompletingRebalance too (KAFKA-10134). NONE changes nothing."""
        if s.group == _DEAD:
            return
        for k, c in enumerate(s.clients, 1):
            if c.state != _C_ST and c.state != _C_CR:
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
        assignment it computed; storing it moves the group to Stable. A follower's returns the
        stored assignment once Stable (validateSyncGroup; KIP-345 fencing)."""
        if s.group == _DEAD:
            return
        for k, c in enumerate(s.clients, 1):
            if c.state != _C_CR:
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
                a = s.members[i].assignment
                yield f"{label} -> {bits(a)}", _client(s, k, _apply_assignment(p, c, a))
            elif s.group == _CR and s.leader == c.member_id:
                for a in assignments(p, s.members):
                    members = tuple(
                        Member(m.member_id, m.instance, m.claimed, m.claim_generation, a[j], m.waiter)
                        for j, m in enumerate(s.members)
                    )
                    nc = Client(_C_AS, c.member_id, c.generation, c.owned, c.memo, c.memo_generation, a[i])
                    shown = ", ".join(f"m{m.member_id}:{bits(a[j])}" for j, m in enumerate(s.members))
                    yield (f"{label} leader assigns {shown}",
                           GroupModel(_ST, s.generation, s.leader, members, _set(s.clients, k - 1, nc),
                                      s.expiries, s.commit))

    @action
    def receive_sync_response(p, s):
        """The leader's SyncGroup response arrives; onJoinComplete applies its assignment."""
        for k, c in enumerate(s.clients, 1):
            if c.state == _C_AS:
                yield (f"SyncGroupResponse(c{k}) {bits(c.pending)}",
                       _client(s, k, _apply_assignment(p, c, c.pending)))

    @action
    def leave_group(p, s):
        """LeaveGroup of a dynamic member (poll timeout or unsubscribe, KIP-62); static members
        never send it (KIP-345). The consumer revokes everything and later rejoins as new."""
        if s.group == _DEAD:
            return
        for k, c in enumerate(s.clients, 1):
            if instance_of(p, k) or c.member_id == 0 or c.state in (_C_PR, _C_AS, _FENCED):
                continue
            nc = Client(_UNJOINED, 0, -1, NOTHING, c.memo, c.memo_generation, NOTHING)
            i = _find(s.members, c.member_id)
            label = f"LeaveGroup(c{k}, m{c.member_id})"
            if i < 0:
                yield f"{label} -> UNKNOWN_MEMBER_ID", _client(s, k, nc)
                continue
            clients = _set(s.clients, k - 1, nc)
            for leader, rest in _without(s, i):
                yield (label + _leader_note(s, leader),
                       GroupModel(_prepare(s.group), s.generation, leader, rest, clients, s.expiries,
                                  s.commit))

    @action
    def offset_commit(p, s):
        """OffsetCommit(generation, member id) for the partitions a consumer owns. Accepted from a
        current member with the group's generation in Stable or PreparingRebalance (so previous
        owners commit while revoking); commit_check=none accepts anything. Rejections change
        nothing here: the consumer learns the same from its next Heartbeat."""
        if s.group == _DEAD:
            return
        for k, c in enumerate(s.clients, 1):
            if not c.owned or c.state == _FENCED:
                continue
            i = _find(s.members, c.member_id)
            # A superseded static member's id is no longer a member, so i < 0 covers
            # FENCED_INSTANCE_ID as well as UNKNOWN_MEMBER_ID.
            if p.commit_check == "generation" and (
                i < 0 or c.generation != s.generation or s.group not in (_ST, _PR)
            ):
                continue
            rec = Commit(c.member_id, c.generation, s.generation, i >= 0)
            if rec != s.commit:
                yield (f"OffsetCommit(c{k}, m{c.member_id}, generation={c.generation}) {bits(c.owned)}",
                       GroupModel(s.group, s.generation, s.leader, s.members, s.clients, s.expiries, rec))

    # -- coordinator ---------------------------------------------------------------------------

    @action
    def complete_join(p, s):
        """onCompleteJoin: all members rejoined, or the rebalance timeout expired, which removes
        the dynamic members that did not rejoin (static ones stay, KIP-345). initNextGeneration:
        generation + 1, CompletingRebalance (Empty without members); a joined member leads if the
        leader did not rejoin (maybeElectNewJoinedLeader). Every parked JoinGroup is answered."""
        if s.group != _PR or s.generation >= p.max_generation:
            return
        gen = s.generation + 1
        keep = tuple(m for m in s.members if m.waiter or m.instance)
        timeout = " (rebalance timeout)" if len(keep) < len(s.members) else ""
        if not keep:
            yield (f"CompleteJoin(generation={gen}) -> Empty{timeout}",
                   GroupModel(_E, gen, 0, (), s.clients, s.expiries, NO_COMMIT))
            return
        joined = [m.member_id for m in keep if m.waiter]
        if not joined:
            return  # no member rejoined: Kafka postpones the completion
        clients = list(s.clients)
        for m in keep:
            if m.waiter:
                c = clients[m.waiter - 1]
                clients[m.waiter - 1] = Client(_C_CR, m.member_id, gen, c.owned, c.memo, c.memo_generation, NOTHING)
        clients_t = tuple(clients)
        members = tuple(Member(m.member_id, m.instance, m.claimed, m.claim_generation, NOTHING, 0)
                        for m in keep)
        leaders = [s.leader] if s.leader in joined else joined
        for leader in leaders:
            yield (f"CompleteJoin(generation={gen}, leader=m{leader}){timeout}",
                   GroupModel(_CR, gen, leader, members, clients_t, s.expiries, NO_COMMIT))

    @action
    def session_expiry(p, s):
        """onExpireHeartbeat: the coordinator drops a member whose session timed out; the consumer
        (paused) does not know yet. A member with a parked JoinGroup is kept alive."""
        if s.expiries >= p.max_session_expiries or s.group == _DEAD:
            return
        for i, m in enumerate(s.members):
            if m.waiter:
                continue
            for leader, rest in _without(s, i):
                yield (f"SessionExpiry(m{m.member_id})" + _leader_note(s, leader),
                       GroupModel(_prepare(s.group), s.generation, leader, rest, s.clients,
                                  s.expiries + 1, s.commit))

    @action
    def delete_group(p, s):
        """DeleteGroups (or offset expiry) of an Empty group that has had members: Dead is final
        (the group at generation 0 stands for one no consumer has created yet)."""
        if s.group == _E and s.generation > 0:
            yield "DeleteGroup -> Dead", GroupModel(_DEAD, s.generation, 0, (), s.clients, s.expiries,
                                                    s.commit)
