"""The KIP-848 consumer-group protocol (Kafka 4): the coordinator assigns, members reconcile.

Consumers send ``ConsumerGroupHeartbeat`` requests with their member id, member epoch,
subscription and, when it changed, the partitions they own. The group coordinator
(``GroupMetadataManager``) keeps the group epoch, a target assignment computed for that epoch
by a server-side assignor, and per member its current assignment and the member epoch it has
reached; each member converges on its share of the target through its own heartbeats
(``CurrentAssignmentBuilder``):

* a member whose target drops partitions it owns stays at its old epoch with those partitions
  pending revocation (``UNREVOKED_PARTITIONS``) until a heartbeat reports them gone;
* it then moves to the target epoch and receives the new partitions, but only those whose
  previous owner released them: a partition is released when no member holds it any more
  (its partition epoch is free). Others wait (``UNRELEASED_PARTITIONS``) and are handed out by a
  later heartbeat. This "not yet released" filter is what keeps two consumers from owning one
  partition; ``assign_unreleased`` drops it.

Client side (``MembershipManager``): UNSUBSCRIBED, JOINING, RECONCILING, ACKNOWLEDGING, STABLE,
FENCED, PREPARE_LEAVING, LEAVING. A new assignment is reconciled asynchronously (revocation
callbacks, offset commits), then acknowledged on the next heartbeat; FENCED_MEMBER_EPOCH and
UNKNOWN_MEMBER_ID make the consumer drop its partitions and rejoin with epoch 0; leaving sends
member epoch -1.

With ``assign_unreleased=false`` this is the same state machine as Jack Vanlightly's public TLA+
specification ``consumer_group_protocol_kip_848_v2`` (its constants are the parameters: Clients,
TopicCount, PartitionsPerTopic, MaxPerturbations): TLC and kafkamc explore the same distinct
states, generate the same number of successors and reach the same depth. The variables
correspond one to one, so everything TLC distinguishes is distinguished here too: the request
and response sets, the last discarded message, the id and connection counters and the
perturbation count. Perturbations (a consumer changing its subscription, leaving, crashing, or
its session expiring at the coordinator) are bounded by ``max_perturbations``; a dead member
(its consumer has rejoined under a new id) may always expire. Heartbeats are only sent while
the group has not converged, so a converged group is quiescent.

Where the TLA+ model (and so this spec) is simpler than Kafka's code, kept for parity: a free
partition has epoch 0 (Kafka: -1); a member leaves UNREVOKED_PARTITIONS when the owned set it
last reported equals its assigned set (Kafka: when the owned set holds none of the partitions
pending revocation); any member epoch mismatch fences (Kafka tolerates the previous epoch with
owned partitions it still has, for a lost response); the assignor may return any assignment that
gives every partition to one subscriber (no balance), and the target of a member covers only
what it subscribes to; one member per consumer process, no static members, no OffsetCommit.

Representation. Partitions are (topic, partition) pairs, 1-based. A value that may be Nil in the
TLA+ model is a tuple of zero or one element: ``()`` is Nil. Member ids are handed out from a
counter (the last one is ``last_member_id``), connections likewise.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import IntEnum
from functools import lru_cache
from itertools import combinations, product

from kafkamc.invariants.group_kip848 import (
    client_member_epoch_monotonic,
    free_partitions_unowned,
    legal_target_assignment,
    member_epoch_monotonic,
    no_double_ownership,
    stable_group_is_reconciled,
    valid_member_epoch,
)
from kafkamc.spec.api import Param, Params, Spec, action

__all__ = [
    "GroupKip848",
    "Kip848State",
    "GroupStatus",
    "MemberStatus",
    "ClientStatus",
    "Error",
    "Member",
    "Client",
    "Reconciliation",
    "Message",
    "converged",
    "partitions_of",
]

Partition = tuple[int, int]
Parts = frozenset[Partition]
NOTHING: Parts = frozenset()
NIL: tuple = ()

JOIN_GROUP_MEMBER_EPOCH = 0
LEAVE_GROUP_MEMBER_EPOCH = -1


class GroupStatus(IntEnum):
    """ConsumerGroup.ConsumerGroupState (DEAD is not modelled)."""

    EMPTY = 0
    ASSIGNING = 1
    RECONCILING = 2
    STABLE = 3


class MemberStatus(IntEnum):
    """The coordinator's view of a member's reconciliation (CurrentAssignmentBuilder)."""

    STABLE = 0
    UNREVOKED_PARTITIONS = 1
    UNRELEASED_PARTITIONS = 2


class ClientStatus(IntEnum):
    """The consumer's MemberState (FATAL is declared but never entered, as in the TLA+ model)."""

    UNSUBSCRIBED = 0
    JOINING = 1
    RECONCILING = 2
    ACKNOWLEDGING = 3
    STABLE = 4
    FENCED = 5
    PREPARE_LEAVING = 6
    LEAVING = 7
    FATAL = 8


class Error(IntEnum):
    NONE = 0
    FENCED_MEMBER_EPOCH = 1
    UNKNOWN_MEMBER_ID = 2


_G_EMPTY, _G_ASSIGNING, _G_RECONCILING, _G_STABLE = GroupStatus
_M_STABLE, _M_UNREVOKED, _M_UNRELEASED = MemberStatus
(_UNSUBSCRIBED, _JOINING, _RECONCILING, _ACKNOWLEDGING, _STABLE, _FENCED, _PREPARE_LEAVING,
 _LEAVING, _FATAL) = ClientStatus

# The consumer's legal status changes: target -> the statuses it may be entered from.
_ENTERED_FROM: dict[ClientStatus, frozenset[ClientStatus]] = {
    _STABLE: frozenset({_JOINING, _ACKNOWLEDGING, _RECONCILING}),
    _RECONCILING: frozenset({_STABLE, _JOINING, _ACKNOWLEDGING}),
    _ACKNOWLEDGING: frozenset({_RECONCILING}),
    _FATAL: frozenset({_JOINING, _STABLE, _RECONCILING, _ACKNOWLEDGING, _PREPARE_LEAVING, _LEAVING,
                       _UNSUBSCRIBED}),
    _FENCED: frozenset({_JOINING, _STABLE, _RECONCILING, _ACKNOWLEDGING, _PREPARE_LEAVING, _LEAVING}),
    _JOINING: frozenset({_FENCED, _UNSUBSCRIBED}),
    _PREPARE_LEAVING: frozenset({_JOINING, _STABLE, _RECONCILING, _ACKNOWLEDGING, _UNSUBSCRIBED,
                                 _FENCED}),
    _LEAVING: frozenset({_PREPARE_LEAVING}),
    _UNSUBSCRIBED: frozenset({_FENCED, _LEAVING}),
}


def _transition(prev: ClientStatus, nxt: ClientStatus) -> ClientStatus:
    """The consumer's status change; an illegal one is a modelling error (TypeOK in the TLA+
    model), reported as the spec raising rather than silently entered."""
    if prev == nxt or prev in _ENTERED_FROM[nxt]:
        return nxt
    raise ValueError(f"illegal consumer status change {prev.name} -> {nxt.name}")


def _legal(prev: ClientStatus, nxt: ClientStatus) -> bool:
    return prev == nxt or prev in _ENTERED_FROM[nxt]


@dataclass(frozen=True, slots=True)
class Member:
    """ConsumerGroupMember at the coordinator."""

    member_id: int
    host: int  # the consumer process that joined with this id
    member_epoch: int
    target_epoch: int  # the target assignment epoch the member is reconciling towards
    subscribed: frozenset[int]  # topics
    state: MemberStatus
    assigned: Parts
    pending_revocation: Parts
    pending_assignment: Parts
    reported_owned: tuple[Parts, ...]  # the owned partitions last reported; () = never


@dataclass(frozen=True, slots=True)
class Client:
    """A consumer's membership manager and heartbeat state."""

    connection: int  # 0: none yet
    member_id: int  # 0: none
    member_epoch: int  # 0 joining, -1 leaving
    status: ClientStatus
    subscribed: frozenset[int]
    owned: Parts  # the partitions it consumes (its current assignment)
    target: Parts  # the last assignment the coordinator sent it
    last_sent: tuple[Parts, ...]  # owned partitions in the last heartbeat that carried them; () = Nil
    inflight: bool


@dataclass(frozen=True, slots=True)
class Reconciliation:
    """An asynchronous reconciliation in progress (revocation callbacks, commits, assignment)."""

    epoch_on_start: int
    assignment: Parts


REQUEST, RESPONSE = 0, 1


@dataclass(frozen=True, slots=True)
class Message:
    """A ConsumerGroupHeartbeat request (kind 0, from ``client``) or response (kind 1, to it).

    ``partitions`` is the request's owned partitions or the response's assignment, () = absent.
    A request has error NONE; a response has no subscription."""

    kind: int
    member_id: int
    member_epoch: int
    subscribed: frozenset[int]
    partitions: tuple[Parts, ...]
    error: Error
    connection: int
    client: int


@dataclass(frozen=True, slots=True)
class Kip848State:
    members: tuple[Member, ...]  # sorted by member id
    group_epoch: int
    group_status: GroupStatus
    target_epoch: int
    target: tuple[tuple[int, Parts], ...]  # (member id, partitions) by member id; () before the first
    partition_epochs: tuple[int, ...]  # per partition (partitions_of order): owner's epoch, 0 free
    clients: tuple[Client, ...]  # consumer c is clients[c - 1]
    reconciliations: tuple[tuple[Reconciliation, ...], ...]  # per consumer; () = none
    leaving: tuple[tuple[Parts, ...], ...]  # per consumer: the leave in progress; () = none
    network: frozenset[Message]
    last_discarded: frozenset[Message]
    last_member_id: int
    last_connection: int
    perturbations: int


@lru_cache(maxsize=None)
def partitions_of(topics: int, per_topic: int) -> tuple[Partition, ...]:
    """Every partition of every topic, in a fixed order."""
    return tuple((t, i) for t in range(1, topics + 1) for i in range(1, per_topic + 1))


@lru_cache(maxsize=None)
def _topic_subsets(topics: int) -> tuple[frozenset[int], ...]:
    out = []
    for n in range(topics + 1):
        out.extend(frozenset(x) for x in combinations(range(1, topics + 1), n))
    return tuple(out)


def _show(parts) -> str:
    if not parts:
        return "{}"
    return "{" + ",".join(f"t{t}p{i}" for t, i in sorted(parts)) + "}"


def _show_nil(value: tuple) -> str:
    return _show(value[0]) if value else "Nil"


def _msg_key(m: Message):
    return (m.kind, m.client, m.connection, m.member_id, m.member_epoch, int(m.error),
            tuple(sorted(m.subscribed)), tuple(tuple(sorted(x)) for x in m.partitions))


def _messages(s: Kip848State, kind: int, c: int) -> list[Message]:
    return sorted((m for m in s.network if m.kind == kind and m.client == c), key=_msg_key)


def _set(t: tuple, i: int, v) -> tuple:
    return t[:i] + (v,) + t[i + 1:]


def _member(s: Kip848State, mid: int) -> Member | None:
    for m in s.members:
        if m.member_id == mid:
            return m
    return None


def _with_member(members: tuple[Member, ...], m: Member) -> tuple[Member, ...]:
    rest = [x for x in members if x.member_id != m.member_id]
    rest.append(m)
    return tuple(sorted(rest, key=lambda x: x.member_id))


def converged(p: Params, s: Kip848State) -> bool:
    """The group is Stable and every consumer and every member sits at the group epoch, STABLE."""
    if s.group_status != _G_STABLE:
        return False
    ge = s.group_epoch
    for c in s.clients:
        if c.status != _STABLE or c.member_epoch != ge:
            return False
        m = _member(s, c.member_id)
        if m is None or m.state != _M_STABLE or m.member_epoch != ge:
            return False
    return all(m.state == _M_STABLE and m.member_epoch == ge for m in s.members)


def _fresh_client() -> Client:
    """A consumer that starts (or restarts) subscribed and joining, as in the TLA+ model's Init."""
    return Client(0, 0, JOIN_GROUP_MEMBER_EPOCH, _JOINING, frozenset(), NOTHING, NOTHING, NIL, False)


def _group_status(members: tuple[Member, ...], group_epoch: int, target_epoch: int) -> GroupStatus:
    """ConsumerGroup's state: Empty, Assigning (the target lags the group epoch), Reconciling
    (some member has not reached the target) or Stable."""
    if not members:
        return _G_EMPTY
    if group_epoch > target_epoch:
        return _G_ASSIGNING
    for m in members:
        if m.state != _M_STABLE or m.target_epoch != target_epoch:
            return _G_RECONCILING
    return _G_STABLE


def _partition_epochs(p: Params, s: Kip848State, old: Member | None, new_assigned: Parts,
                      new_revoking: Parts, new_epoch: int) -> tuple[int, ...]:
    """A member's partitions carry its epoch; those it no longer holds become free (0)."""
    out = []
    for q, e in zip(partitions_of(p.topics, p.partitions_per_topic), s.partition_epochs):
        if q in new_assigned or q in new_revoking:
            out.append(new_epoch)
        elif old is not None and (q in old.assigned or q in old.pending_revocation):
            out.append(0)
        else:
            out.append(e)
    return tuple(out)


def _released(p: Params, s: Kip848State, pending: Parts) -> Parts:
    """The pending partitions whose previous owner has released them (partition epoch free).
    ``assign_unreleased`` drops the filter: every pending partition counts as released."""
    if p.assign_unreleased:
        return pending
    order = partitions_of(p.topics, p.partitions_per_topic)
    return frozenset(q for q in pending if s.partition_epochs[order.index(q)] == 0)


def _next_state(revoking: Parts, unreleased: Parts) -> MemberStatus:
    if revoking:
        return _M_UNREVOKED
    if unreleased:
        return _M_UNRELEASED
    return _M_STABLE


def _to_target_epoch(p: Params, s: Kip848State, m: Member, epoch: int) -> Member:
    """Nothing (left) to revoke: the member reaches the target epoch and gets what was released."""
    freed = _released(p, s, m.pending_assignment)
    waiting = m.pending_assignment - freed
    return replace(m, state=_next_state(NOTHING, waiting), member_epoch=epoch, target_epoch=epoch,
                   assigned=m.assigned | freed, pending_revocation=NOTHING, pending_assignment=waiting)


def _new_target(p: Params, s: Kip848State, m: Member, epoch: int, target: Parts) -> Member:
    """A newer target assignment: keep what stays, revoke what goes, and take what is released."""
    held = m.assigned | m.pending_revocation
    kept = held & target
    revoking = held - kept
    pending = target - kept
    freed = _released(p, s, pending)
    if revoking:
        # The member stays at its epoch until it reports the revoked partitions gone.
        return replace(m, state=_next_state(revoking, pending - freed), target_epoch=epoch,
                       assigned=kept, pending_revocation=revoking, pending_assignment=pending)
    return replace(m, state=_next_state(NOTHING, pending - freed), member_epoch=epoch,
                   target_epoch=epoch, assigned=kept | freed, pending_revocation=NOTHING,
                   pending_assignment=pending - freed)


def _reconcile(p: Params, s: Kip848State, m: Member, epoch: int, target_of) -> Member:
    """CurrentAssignmentBuilder: one step of the member towards its share of the target."""
    if epoch != m.target_epoch:
        return _new_target(p, s, m, epoch, target_of())
    if m.state == _M_UNREVOKED:
        revoked = m.reported_owned and m.assigned == m.reported_owned[0]
        if not m.pending_revocation or revoked:
            return _to_target_epoch(p, s, m, epoch)
        return m
    if m.state == _M_UNRELEASED:
        if _released(p, s, m.pending_assignment):
            return _to_target_epoch(p, s, m, epoch)
        return m
    return m


def _target_assignments(p: Params, members: tuple[Member, ...]):
    """Every target assignment the assignor may compute: each partition to one member subscribed
    to its topic (none if some partition has no subscriber)."""
    parts = partitions_of(p.topics, p.partitions_per_topic)
    choices = [[m.member_id for m in members if q[0] in m.subscribed] for q in parts]
    for owners in product(*choices):
        yield tuple((m.member_id, frozenset(q for q, o in zip(parts, owners) if o == m.member_id))
                    for m in members)


def _reply(s: Kip848State, request: Message, response: Message):
    """The coordinator consumes the request and answers on the same connection, if it is still
    the consumer's (otherwise the answer is not sent)."""
    rest = s.network - {request}
    if response.connection == s.clients[response.client - 1].connection:
        rest = rest | {response}
    return rest, frozenset({request})


def _response(member_id: int, epoch: int, assignment: tuple, error: Error, request: Message) -> Message:
    return Message(RESPONSE, member_id, epoch, frozenset(), assignment, error, request.connection,
                   request.client)


def _is_unknown(s: Kip848State, m: Message) -> bool:
    return m.member_id != 0 and _member(s, m.member_id) is None


def _should_fence(s: Kip848State, m: Message) -> bool:
    mem = _member(s, m.member_id)
    return mem is not None and m.member_epoch != LEAVE_GROUP_MEMBER_EPOCH and mem.member_epoch != m.member_epoch


def _is_leaving(s: Kip848State, m: Message) -> bool:
    mem = _member(s, m.member_id)
    return (mem is not None and mem.member_epoch != LEAVE_GROUP_MEMBER_EPOCH
            and m.member_epoch == LEAVE_GROUP_MEMBER_EPOCH)


def _fence(p: Params, s: Kip848State, mid: int):
    """The member is removed: the group epoch is bumped (a new target is due) and its partitions
    are free. Returns (members, group_epoch, group_status, partition_epochs)."""
    old = _member(s, mid)
    members = tuple(m for m in s.members if m.member_id != mid)
    epoch = s.group_epoch + 1
    return (members, epoch, _group_status(members, epoch, s.target_epoch),
            _partition_epochs(p, s, old, NOTHING, NOTHING, 0))


def _client(s: Kip848State, c: int, cl: Client, **changes) -> Kip848State:
    return replace(s, clients=_set(s.clients, c - 1, cl), **changes)


class GroupKip848(Spec):
    """KIP-848: ConsumerGroupHeartbeat, server-side target assignment, incremental reconciliation."""

    name = "group-kip848"
    description = (
        "KIP-848 consumer groups: coordinator-side assignment, group/member epochs, reconciliation "
        "through heartbeats (TLC parity with Vanlightly's consumer_group_protocol_kip_848_v2)"
    )
    parameters = (
        Param("clients", 2, "consumer processes (the TLA+ constant Clients)", min=1, max=3),
        Param("topics", 2, "subscribable topics (TopicCount)", min=1, max=3),
        Param("partitions_per_topic", 1, "partitions of each topic (PartitionsPerTopic)", min=1, max=3),
        Param("max_perturbations", 0, "subscription changes, leaves, crashes and session expiries "
              "of live members (MaxPerturbations; the TLA+ model ships 1)", min=0, max=3),
        Param("assign_unreleased", False, "KIP-848 mutation: hand a member partitions their previous "
              "owner has not yet released (drops CurrentAssignmentBuilder's unreleased filter)"),
    )
    invariants = (
        legal_target_assignment,
        no_double_ownership,
        valid_member_epoch,
        stable_group_is_reconciled,
        free_partitions_unowned,
        client_member_epoch_monotonic,
        member_epoch_monotonic,
    )
    default_invariants = (
        "legal-target-assignment",
        "no-double-ownership",
        "valid-member-epoch",
        "stable-group-is-reconciled",
        "free-partitions-unowned",
    )
    entities = {"consumer": ("clients", "reconciliations", "leaving")}

    @staticmethod
    def init_states(p: Params):
        topics = frozenset(range(1, p.topics + 1))
        c = replace(_fresh_client(), subscribed=topics)
        n = len(partitions_of(p.topics, p.partitions_per_topic))
        yield Kip848State((), 0, _G_EMPTY, 0, (), (0,) * n, (c,) * p.clients, (NIL,) * p.clients,
                          (NIL,) * p.clients, frozenset(), frozenset(), 0, 0, 0)

    # -- consumers -----------------------------------------------------------------------------

    @action
    def send_heartbeat(p, s):
        """ConsumerGroupHeartbeat from a consumer with none in flight, while the group has not
        converged. It carries the owned partitions when they changed since last sent or differ
        from the last assignment received. A perturbation may change the subscription."""
        if converged(p, s):
            return
        for c, cs in enumerate(s.clients, 1):
            if cs.inflight:
                continue
            for topics in _topic_subsets(p.topics):
                if s.perturbations == p.max_perturbations:
                    if topics != cs.subscribed:
                        continue
                elif not topics:
                    continue
                conn = s.last_connection + 1 if cs.connection == 0 else cs.connection
                send_owned = cs.last_sent != (cs.owned,) or cs.owned != cs.target
                if cs.status == _UNSUBSCRIBED:
                    status = _JOINING
                elif cs.status == _ACKNOWLEDGING:
                    status = _STABLE if cs.target == cs.owned else _RECONCILING
                elif cs.status == _LEAVING:
                    status = _UNSUBSCRIBED
                else:
                    status = cs.status
                nc = replace(cs, status=status, subscribed=topics, connection=conn, inflight=True,
                             last_sent=(cs.owned,) if send_owned else cs.last_sent)
                if status == _UNSUBSCRIBED:
                    nc = replace(nc, member_id=0, member_epoch=0)
                owned = (cs.owned,) if send_owned else NIL
                msg = Message(REQUEST, cs.member_id, cs.member_epoch, topics, owned, Error.NONE, conn, c)
                label = (f"Heartbeat(c{c}, member=m{cs.member_id}, epoch={cs.member_epoch}, "
                         f"owned={_show_nil(owned)})")
                if topics != cs.subscribed:
                    label += f" subscribes to {sorted(topics)}"
                yield label, _client(
                    s, c, nc, network=s.network | {msg}, last_discarded=frozenset(),
                    last_connection=max(conn, s.last_connection),
                    perturbations=s.perturbations + (topics != cs.subscribed))

    @action
    def receive_error_response(p, s):
        """FENCED_MEMBER_EPOCH or UNKNOWN_MEMBER_ID: the consumer drops its partitions and its
        member id and rejoins (or, when leaving, ends unsubscribed)."""
        for c, cs in enumerate(s.clients, 1):
            for m in _messages(s, RESPONSE, c):
                if m.connection != cs.connection or m.error == Error.NONE:
                    continue
                if cs.status == _UNSUBSCRIBED:
                    nc = replace(cs, inflight=False)
                else:
                    fenced = _transition(cs.status, _FENCED)
                    after = _UNSUBSCRIBED if cs.status in (_PREPARE_LEAVING, _LEAVING) else _JOINING
                    nc = replace(cs, member_id=0, member_epoch=0, inflight=False, owned=NOTHING,
                                 target=NOTHING, last_sent=NIL, status=_transition(fenced, after))
                yield (f"HeartbeatResponse(c{c}) {m.error.name}",
                       _client(s, c, nc, network=s.network - {m}, last_discarded=frozenset({m})))

    @action
    def receive_success_response(p, s):
        """A successful heartbeat response: the consumer takes its member id and epoch, and
        reconciles a new assignment (or is stable when it owns what it was given)."""
        for c, cs in enumerate(s.clients, 1):
            for m in _messages(s, RESPONSE, c):
                if m.error != Error.NONE or m.connection != cs.connection:
                    continue
                c1 = replace(cs, member_id=m.member_id, member_epoch=m.member_epoch, inflight=False)
                recon = s.reconciliations[c - 1]
                if cs.status in (_UNSUBSCRIBED, _PREPARE_LEAVING, _LEAVING):
                    nc, recon2 = replace(cs, inflight=False), recon
                elif not m.partitions:
                    if c1.target == cs.owned:
                        nc, recon2 = replace(c1, status=_transition(cs.status, _STABLE)), recon
                    elif cs.status == _RECONCILING and not recon:
                        nc, recon2 = _start_reconciling(c1, recon)
                    else:
                        nc, recon2 = c1, recon
                elif _legal(cs.status, _RECONCILING):
                    if m.partitions[0] == cs.owned:
                        if cs.status in (_JOINING, _RECONCILING):
                            nc = replace(c1, status=_transition(cs.status, _STABLE))
                        else:
                            nc = c1
                        recon2 = recon
                    else:
                        nc, recon2 = _start_reconciling(replace(c1, target=m.partitions[0]), recon)
                else:
                    nc, recon2 = c1, recon
                yield (f"HeartbeatResponse(c{c}, member=m{m.member_id}, epoch={m.member_epoch}, "
                       f"assignment={_show_nil(m.partitions)})",
                       _client(s, c, nc, network=s.network - {m}, last_discarded=frozenset({m}),
                               reconciliations=_set(s.reconciliations, c - 1, recon2)))

    @action
    def complete_reconciliation(p, s):
        """The asynchronous reconciliation finishes: the consumer now owns the assignment it
        started with, and acknowledges it on its next heartbeat, unless its epoch moved meanwhile."""
        for c, cs in enumerate(s.clients, 1):
            recon = s.reconciliations[c - 1]
            if not recon:
                continue
            r = recon[0]
            if cs.status == _RECONCILING and r.epoch_on_start == cs.member_epoch:
                nc = replace(cs, status=_transition(cs.status, _ACKNOWLEDGING), owned=r.assignment)
                label = f"ReconciliationComplete(c{c}) owns {_show(r.assignment)}"
            else:
                nc = cs
                label = f"ReconciliationComplete(c{c}) stale, discarded"
            yield label, _client(s, c, nc, reconciliations=_set(s.reconciliations, c - 1, NIL))

    @action
    def start_leave_group(p, s):
        """A perturbation: the consumer unsubscribes and starts leaving (revocation in progress)."""
        if s.perturbations >= p.max_perturbations:
            return
        for c, cs in enumerate(s.clients, 1):
            if cs.member_epoch <= 0 or cs.status in (_UNSUBSCRIBED, _PREPARE_LEAVING, _LEAVING):
                continue
            nc = replace(cs, status=_transition(cs.status, _PREPARE_LEAVING))
            yield f"Unsubscribe(c{c})", _client(
                s, c, nc, leaving=_set(s.leaving, c - 1, (cs.owned,)), perturbations=s.perturbations + 1)

    @action
    def complete_leave_group(p, s):
        """The leave's revocation finishes: the consumer drops its partitions and will send its
        leave heartbeat (member epoch -1)."""
        for c, cs in enumerate(s.clients, 1):
            if not s.leaving[c - 1]:
                continue
            if cs.status == _PREPARE_LEAVING:
                nc = replace(cs, status=_transition(cs.status, _LEAVING),
                             member_epoch=LEAVE_GROUP_MEMBER_EPOCH, subscribed=frozenset(),
                             owned=NOTHING, target=NOTHING, last_sent=NIL)
            else:
                nc = cs
            yield f"LeavePrepared(c{c})", _client(s, c, nc, leaving=_set(s.leaving, c - 1, NIL))

    @action
    def client_crash(p, s):
        """A perturbation: the consumer process restarts, joining afresh with no partitions."""
        if s.perturbations >= p.max_perturbations:
            return
        topics = frozenset(range(1, p.topics + 1))
        for c, cs in enumerate(s.clients, 1):
            if cs.member_epoch <= 0:
                continue
            yield f"ConsumerRestart(c{c})", _client(
                s, c, replace(_fresh_client(), subscribed=topics),
                reconciliations=_set(s.reconciliations, c - 1, NIL),
                leaving=_set(s.leaving, c - 1, NIL), perturbations=s.perturbations + 1)

    # -- coordinator ---------------------------------------------------------------------------

    @action
    def handle_heartbeat(p, s):
        """GroupMetadataManager.consumerGroupHeartbeat for a joining (epoch 0) or current member:
        a new member or a changed subscription bumps the group epoch and the assignor computes a
        new target (any valid one); the member then takes one reconciliation step
        (CurrentAssignmentBuilder) and the partition epochs follow its assignment."""
        for c in range(1, p.clients + 1):
            for m in _messages(s, REQUEST, c):
                if _is_unknown(s, m) or _should_fence(s, m) or _is_leaving(s, m):
                    continue
                yield from _handle_heartbeat(p, s, c, m)

    @action
    def handle_leave_heartbeat(p, s):
        """A heartbeat with member epoch -1: the member leaves, the group epoch is bumped."""
        for c in range(1, p.clients + 1):
            for m in _messages(s, REQUEST, c):
                if not _is_leaving(s, m):
                    continue
                members, epoch, status, pe = _fence(p, s, m.member_id)
                network, last = _reply(s, m, _response(m.member_id, LEAVE_GROUP_MEMBER_EPOCH, NIL,
                                                       Error.NONE, m))
                yield (f"HandleLeave(c{c}, m{m.member_id})",
                       replace(s, members=members, group_epoch=epoch, group_status=status,
                               partition_epochs=pe, network=network, last_discarded=last))

    @action
    def handle_bad_heartbeat(p, s):
        """UNKNOWN_MEMBER_ID for an id the group does not know; FENCED_MEMBER_EPOCH (and the
        member's removal) for a member epoch that is not the member's current one."""
        for c in range(1, p.clients + 1):
            for m in _messages(s, REQUEST, c):
                if _is_unknown(s, m):
                    network, last = _reply(s, m, _response(0, 0, NIL, Error.UNKNOWN_MEMBER_ID, m))
                    yield (f"HandleHeartbeat(c{c}, m{m.member_id}) UNKNOWN_MEMBER_ID",
                           replace(s, network=network, last_discarded=last))
                elif _should_fence(s, m):
                    members, epoch, status, pe = _fence(p, s, m.member_id)
                    network, last = _reply(s, m, _response(0, 0, NIL, Error.FENCED_MEMBER_EPOCH, m))
                    yield (f"HandleHeartbeat(c{c}, m{m.member_id}, epoch={m.member_epoch}) "
                           "FENCED_MEMBER_EPOCH",
                           replace(s, members=members, group_epoch=epoch, group_status=status,
                                   partition_epochs=pe, network=network, last_discarded=last))

    @action
    def live_member_expired(p, s):
        """A perturbation: the session of a live consumer's member times out at the coordinator."""
        if s.perturbations >= p.max_perturbations:
            return
        for c in range(1, p.clients + 1):
            for mem in s.members:
                if mem.host != c:
                    continue
                members, epoch, status, pe = _fence(p, s, mem.member_id)
                yield (f"SessionExpired(m{mem.member_id} of c{c})",
                       replace(s, members=members, group_epoch=epoch, group_status=status,
                               partition_epochs=pe, perturbations=s.perturbations + 1))

    @action
    def dead_member_expired(p, s):
        """The session of a member whose consumer has since rejoined under another id times out."""
        for mem in s.members:
            cs = s.clients[mem.host - 1]
            if cs.member_id == mem.member_id or cs.member_id == 0 or cs.status == _JOINING:
                continue
            members, epoch, status, pe = _fence(p, s, mem.member_id)
            yield (f"SessionExpired(m{mem.member_id}, dead)",
                   replace(s, members=members, group_epoch=epoch, group_status=status,
                           partition_epochs=pe))


def _start_reconciling(cs: Client, recon: tuple):
    """Begin reconciling the consumer's target, unless a reconciliation is already running."""
    if recon:
        return cs, recon
    nc = replace(cs, status=_transition(cs.status, _RECONCILING))
    return nc, (Reconciliation(nc.member_epoch, nc.target),)


def _handle_heartbeat(p: Params, s: Kip848State, c: int, m: Message):
    if m.member_id == 0:
        mid = s.last_member_id + 1
        old = None
        m0 = Member(mid, c, 0, 0, m.subscribed, _M_STABLE, NOTHING, NOTHING, NOTHING, NIL)
    else:
        mid = m.member_id
        old = _member(s, mid)
        m0 = replace(old, subscribed=m.subscribed,
                     reported_owned=old.reported_owned if not m.partitions else m.partitions)
    bump = old is None or old.subscribed != m0.subscribed
    epoch = s.group_epoch + 1 if bump else s.group_epoch
    if epoch > s.target_epoch:
        targets = [(epoch, t) for t in _target_assignments(p, _with_member(s.members, m0))]
    else:
        targets = [(s.target_epoch, s.target)]
    members_before = s.members
    for target_epoch, target in targets:
        if m0.state != _M_STABLE or m0.target_epoch != epoch:
            m1 = _reconcile(p, s, m0, epoch, lambda: dict(target)[mid])
        else:
            m1 = m0
        send = bool(m.partitions) or m.member_epoch == 0 or m1 != m0
        members = _with_member(members_before, m1)
        pe = _partition_epochs(p, s, old, m1.assigned, m1.pending_revocation, m1.member_epoch)
        assignment = (m1.assigned,) if send else NIL
        network, last = _reply(s, m, _response(m1.member_id, m1.member_epoch, assignment, Error.NONE, m))
        label = (f"HandleHeartbeat(c{c}, m{m.member_id}, epoch={m.member_epoch}) -> m{mid} "
                 f"epoch={m1.member_epoch} {m1.state.name} assignment={_show_nil(assignment)}")
        if target_epoch != s.target_epoch:
            label += " target " + ", ".join(f"m{x}:{_show(ps)}" for x, ps in target)
        yield label, replace(
            s, members=members, group_epoch=epoch, group_status=_group_status(members, epoch, epoch),
            target_epoch=target_epoch, target=target, partition_epochs=pe, network=network,
            last_discarded=last, last_member_id=mid if m.member_id == 0 else s.last_member_id)
