r"""One partition's replication with a KRaft controller: AlterPartition, broker epochs, fetch.

The model follows Kafka 3.5 as Jack Vanlightly's TLA+ specification ``kafka_replication_v3_5``
(Vanlightly/kafka-tlaplus) describes it, and explores the same state space: with the same
constants and the ``view`` playing the cfg's VIEW, the same distinct states, states generated and
depth as TLC. The code is ours; the names are Kafka's.

- **KRaft controller** (KIP-500, KIP-631): broker registration with an incarnation id and a new
  broker epoch (BrokerRegistration), fencing and unfencing (heartbeats are abstracted into
  arbitrary ``FenceBroker``/``UnfenceBroker`` steps, at most ``fence_limit`` fences), leader
  election from the ISR, PartitionChangeRecords appended to the metadata log, which brokers
  replay in order (``ReceiveMetadataUpdate``; a broker may skip ahead to any record that matters
  to its replica).
- **AlterPartition** (KIP-497): the leader proposes an ISR to the controller asynchronously and
  meanwhile advances the high watermark over its *maximal* ISR, the union of the current and the
  proposed ISR, so that the ISR it commits over is never smaller than the controller's. The
  controller accepts a request only at the current partition epoch (compare-and-set) and from the
  leader's current broker epoch. ``maximal_isr=false`` drops the maximal-ISR rule (the leader
  uses the proposed ISR at once).
- **Broker epochs** (KIP-903): the leader sends, for every replica it adds to the ISR, the broker
  epoch that replica fetched with; the controller rejects a proposal naming a stale epoch
  (INELIGIBLE_REPLICA). ``broker_epoch_check=false`` is Kafka before KIP-903, where a replica
  that lost its disk and restarted can be added back to the ISR on the strength of a fetch sent
  before the restart.
- **Disk loss**: ``UncleanShutdown`` is a broker that stops and restarts with an empty log (and
  no broker epoch); ``CleanShutdown`` keeps the log. ``avoid_last_replica_standing`` (the TLA+
  model's AvoidLastReplicaStanding) leaves out the disk loss of the last ISR member, Kafka 3.5's
  known loss of committed data that KIP-966 addresses.
- **Eligible Leader Replicas** (KIP-966, ``elr``): the ISR may shrink to empty; while it is below
  min ISR, a replica that leaves it (fenced, or dropped by AlterPartition) joins the ELR and stays
  electable; the last-known ELR keeps the replicas an unclean recovery would need. Two rules of
  the KIP are flags of their own: ``unclean_shutdown_detection`` (a broker saves its broker epoch
  at a clean shutdown and registers with it; one that registers without it may have lost data
  and leaves the ISR and the ELR) and ``elr_hw_needs_min_isr`` (the high watermark advances only
  while the leader's ISR is at min ISR, since its maximal ISR need not contain the ELR).
- **Fetch** (KIP-595 style truncation, KIP-320): a follower fetches with its leader epoch, fetch
  offset and last fetched epoch; the leader answers with the next record, or the diverging epoch
  (``OffsetsForLeaderEpoch`` semantics) and the follower truncates, or an epoch error.
- **Reassignment** (KIP-455): adding and removing replicas, completed by an AlterPartition that
  brings every adding replica into the ISR.

What is abstracted, as in the TLA+ model: one partition, acks=all, offsets 1-based with an
exclusive log end offset and high watermark (an empty log has LEO 1), at most one AlterPartition
in flight per leader, no fetch sessions (a shutdown drops the broker's in-flight fetches), the
start-up sequence shortened (a registered broker is RUNNING at once), records written at most
once each (``values``). The limits (``*_limit``) bound the perturbations, never the healing
steps. The state also holds the auxiliary values of the TLA+ model (counters, the next broker
epoch and incarnation id, the floor offset of each leader's unacknowledged writes, the messages
already processed); like its VIEW, the ``view`` leaves them out of the fingerprint, so the first
state found of each view is the one explored.

Successors come out in the order of the TLA+ ``Next`` (per broker, its actions in order, then
reassignment), a choice among messages in a fixed order of their fields. Since the view leaves
auxiliary values out, which state of a view is explored first could in principle change the
counts; at the parity configuration they are the same with messages and actions in reverse order.

Counted as TLC counts: TLC computes a successor once per disjunct that holds in an enabling
condition (it splits ``\/`` in actions), so the successor of a leader that learns of a leader
epoch bump (``PartitionNeedsAction``: "is leader" and "sees an epoch bump"), of a resent
AlterPartition that is both in flight and processed (``__AvoidCycle``) and of a reassignment that
both adds and removes (``ValidReassignment``) is generated twice, as TLC's "states generated"
counts it.

Kafka 3.5 against KIP-966 (``elr``): the TLA+ model ``kafka_replication_kip_966`` is this spec
with ``elr=true`` and ``avoid_last_replica_standing=false`` (that model has no such limit; its
``DataLossShutdownLimit`` and ``NoDataLossShutdownLimit`` are ``unclean_shutdown_limit`` and
``clean_shutdown_limit``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import IntEnum
from itertools import combinations
from typing import Iterator

from kafkamc.errors import UsageError
from kafkamc.invariants.replication_kraft import (
    consistent_read,
    leader_candidate_completeness,
    leader_completeness,
    log_matching,
    metadata_log_matching,
    min_isr_recovery_quorum,
    no_committed_record_lost,
    replication_quorum_superset,
)
from kafkamc.spec.api import Param, Params, Spec, action

__all__ = [
    "ReplicationKraft", "KraftState", "KraftView", "BrokerStatus", "Role", "Kind", "Error", "Record",
    "MetadataRecord", "ControllerPartition", "Registration", "Broker", "FetchPartition", "Fetcher",
    "PartitionMetadata", "Follower", "AlterPartition", "PendingAlterPartition", "Message",
    "NO_LEADER", "NO_OFFSET",
]

NO_LEADER = 0  # NoLeader; brokers are 1..n, the controller is 0 as a message end
CONTROLLER = 0
NO_OFFSET = 0  # Nil for an offset (offsets are 1-based)
INT_MAX = 10000  # IntMax of the TLA+ model: no unacknowledged write of this leader


class BrokerStatus(IntEnum):
    """The broker's own status (OFFLINE_* are the model's names for a stopped broker)."""

    OFFLINE_CLEAN = 0
    OFFLINE_DIRTY = 1
    STARTING = 2
    RUNNING = 3


class Role(IntEnum):
    NONE = 0
    LEADER = 1
    FOLLOWER = 2


class Kind(IntEnum):
    REGISTER_BROKER_REQUEST = 0
    REGISTER_BROKER_RESPONSE = 1
    ALTER_PARTITION_REQUEST = 2
    ALTER_PARTITION_RESPONSE = 3
    FETCH_REQUEST = 4
    FETCH_RESPONSE = 5


class Error(IntEnum):
    NONE = 0
    INELIGIBLE_REPLICA = 1
    FENCED_LEADER_EPOCH = 2
    UNKNOWN_LEADER_EPOCH = 3
    NOT_LEADER_OR_FOLLOWER = 4


@dataclass(frozen=True, slots=True)
class Record:
    epoch: int
    offset: int
    value: int


@dataclass(frozen=True, slots=True)
class MetadataRecord:
    """A PartitionChangeRecord, as a full snapshot of the partition (the model's simplification)."""

    replicas: frozenset[int]
    isr: frozenset[int]
    elr: frozenset[int]  # KIP-966 eligible leader replicas (empty without elr)
    last_known_elr: frozenset[int]
    leader: int
    leader_epoch: int
    partition_epoch: int
    adding: frozenset[int]
    removing: frozenset[int]


@dataclass(frozen=True, slots=True)
class ControllerPartition:
    replicas: frozenset[int]
    isr: frozenset[int]
    elr: frozenset[int]  # KIP-966 eligible leader replicas (empty without elr)
    last_known_elr: frozenset[int]
    leader: int
    leader_epoch: int
    partition_epoch: int
    adding: frozenset[int]
    removing: frozenset[int]


@dataclass(frozen=True, slots=True)
class Registration:
    """The controller's BrokerRegistration of one broker."""

    fenced: bool
    broker_epoch: int
    incarnation_id: int


@dataclass(frozen=True, slots=True)
class Broker:
    status: BrokerStatus
    broker_epoch: int
    incarnation_id: int
    registered: bool


@dataclass(frozen=True, slots=True)
class FetchPartition:
    """The partition in one fetcher; ``fetch_offset == NO_OFFSET`` means the fetcher has none."""

    fetch_offset: int
    last_fetched_epoch: int
    delayed: bool


NO_PARTITION = FetchPartition(NO_OFFSET, 0, False)


@dataclass(frozen=True, slots=True)
class Fetcher:
    partition: FetchPartition
    pending_response: bool


@dataclass(frozen=True, slots=True)
class PartitionMetadata:
    """A replica's view of the partition; ``maximal_isr`` is the ISR it commits over (KIP-497)."""

    replicas: frozenset[int]
    isr: frozenset[int]
    maximal_isr: frozenset[int]
    leader: int
    leader_epoch: int
    partition_epoch: int


BLANK_METADATA = PartitionMetadata(frozenset(), frozenset(), frozenset(), NO_LEADER, 0, 0)


@dataclass(frozen=True, slots=True)
class Follower:
    """What a leader knows of a follower from its last fetch: its LEO and broker epoch."""

    leo: int  # NO_OFFSET: no fetch seen in this leadership
    broker_epoch: int


BLANK_FOLLOWER = Follower(NO_OFFSET, 0)


@dataclass(frozen=True, slots=True)
class AlterPartition:
    """An AlterPartition request (a response carries it back, to correlate)."""

    isr: frozenset[int]
    isr_and_epochs: tuple[tuple[int, int], ...]  # (broker, broker epoch); 0 = an unchanged member
    leader: int
    leader_epoch: int
    partition_epoch: int
    broker_epoch: int


NO_ALTER = AlterPartition(frozenset(), (), 0, 0, 0, 0)


@dataclass(frozen=True, slots=True)
class PendingAlterPartition:
    epoch: int  # the partition epoch the leader waits for; 0: none
    request: AlterPartition


NO_PENDING = PendingAlterPartition(0, NO_ALTER)


@dataclass(frozen=True, slots=True)
class Message:
    """Any request or response; fields a kind does not use stay at their zero value."""

    kind: Kind
    source: int
    dest: int
    error: Error = Error.NONE
    broker_epoch: int = 0
    incarnation_id: int = 0
    metadata_offset: int = 0
    replicas: frozenset[int] = frozenset()
    isr: frozenset[int] = frozenset()
    leader: int = 0
    leader_epoch: int = 0
    partition_epoch: int = 0
    alter: AlterPartition = NO_ALTER
    fetch_offset: int = 0
    last_fetched_epoch: int = 0
    hwm: int = 0
    diverging: tuple[int, ...] = ()  # (epoch, end offset) or () for none
    records: tuple[Record, ...] = ()


@dataclass(frozen=True, slots=True)
class KraftView:
    """The fingerprinted part of a state: the TLA+ model's VIEW (all but the auxiliary values)."""

    unfenced: frozenset[int]
    registrations: tuple[Registration, ...]
    partition: ControllerPartition
    metadata_log: tuple[MetadataRecord, ...]
    brokers: tuple[Broker, ...]
    fetchers: tuple[tuple[Fetcher, ...], ...]
    metadata_offset: tuple[int, ...]
    role: tuple[Role, ...]
    metadata: tuple[PartitionMetadata, ...]
    logs: tuple[tuple[Record, ...], ...]
    hwm: tuple[int, ...]
    leso: tuple[int, ...]
    followers: tuple[tuple[Follower, ...], ...]
    pending: tuple[PendingAlterPartition, ...]
    messages: frozenset[Message]
    sent: frozenset[int]
    acked: frozenset[int]
    nacked: frozenset[int]
    true_hwm: int
    consumed: tuple[Record, ...]


@dataclass(frozen=True, slots=True)
class KraftState:
    # controller
    unfenced: frozenset[int]
    registrations: tuple[Registration, ...]
    partition: ControllerPartition
    metadata_log: tuple[MetadataRecord, ...]
    # brokers (index b - 1)
    brokers: tuple[Broker, ...]
    fetchers: tuple[tuple[Fetcher, ...], ...]  # fetchers[b-1][leader-1]
    metadata_offset: tuple[int, ...]  # how much of the controller's metadata log the broker has
    # the partition's replica on each broker
    role: tuple[Role, ...]
    metadata: tuple[PartitionMetadata, ...]
    logs: tuple[tuple[Record, ...], ...]
    hwm: tuple[int, ...]
    leso: tuple[int, ...]  # leader epoch start offset; NO_OFFSET when not leader
    followers: tuple[tuple[Follower, ...], ...]
    pending: tuple[PendingAlterPartition, ...]
    # network
    messages: frozenset[Message]
    # ghost values the invariants read
    sent: frozenset[int]
    acked: frozenset[int]
    nacked: frozenset[int]
    true_hwm: int
    consumed: tuple[Record, ...]
    # auxiliary values, outside the view
    processed: frozenset[Message]
    next_broker_epoch: int
    next_incarnation: int
    clean_shutdowns: int
    unclean_shutdowns: int
    fences: int
    isr_shrinks: int
    reassignments: int
    floor_offset: tuple[int, ...]  # lowest offset of each leader's unacknowledged writes

    def leo(self, b: int) -> int:
        return len(self.logs[b - 1]) + 1


def _set(t: tuple, b: int, value) -> tuple:
    i = b - 1
    return t[:i] + (value,) + t[i + 1:]


def _set2(t: tuple, b: int, c: int, value) -> tuple:
    return _set(t, b, _set(t[b - 1], c, value))


def _order_key(value):
    """A total order on message values (sets as their sorted members), so that a choice among
    messages comes out in the same order on every run."""
    if isinstance(value, frozenset):
        return tuple(sorted(_order_key(v) for v in value))
    if isinstance(value, tuple):
        return tuple(_order_key(v) for v in value)
    if hasattr(value, "__dataclass_fields__"):
        return tuple(_order_key(getattr(value, name)) for name in value.__dataclass_fields__)
    return int(value)


def _message_order(m: Message):
    return _order_key(m)


# --------------------------------------------------------------------------------------------
# helpers of the TLA+ model, in Kafka's words


def _is_committed(b: int, maximal_isr, followers, offset: int) -> bool:
    for r in maximal_isr:
        if r == b:
            continue
        leo = followers[r - 1].leo
        if leo == NO_OFFSET or leo <= offset:
            return False
    return True


def _commit_offset(s: KraftState, b: int, maximal_isr, leo: int, followers) -> int:
    """The highest offset replicated to the whole maximal ISR (inclusive; 0 for none)."""
    if s.leo(b) == 1:
        return 0
    for offset in range(leo - 1, 0, -1):
        if _is_committed(b, maximal_isr, followers, offset):
            return offset
    return 0


def _log_entry(s: KraftState, b: int, offset: int) -> Record:
    log = s.logs[b - 1]
    if not 1 <= offset <= len(log):
        raise IndexError(f"offset {offset} is outside r{b}'s log of {len(log)} records")
    return log[offset - 1]


def _acks_for(s: KraftState, b: int, lower: int, higher: int) -> frozenset[int]:
    """The values sent, not yet answered, that this leader wrote at offsets lower..higher."""
    floor = s.floor_offset[b - 1]
    out = set()
    for v in s.sent:
        if v in s.acked or v in s.nacked:
            continue
        for offset in range(lower, higher + 1):
            if _log_entry(s, b, offset).value == v and offset >= floor:
                out.add(v)
                break
    return frozenset(out)


def _sub_seq(seq: tuple, m: int, n: int) -> tuple:
    if m > n:
        return ()
    if m < 1 or n > len(seq):
        raise IndexError(f"SubSeq({m}, {n}) of a sequence of {len(seq)}")
    return seq[m - 1:n]


@dataclass(slots=True)
class _Next:
    """The successor being built: a mutable copy of the fields a step may change."""

    s: KraftState
    changes: dict

    def get(self, name: str):
        return self.changes[name] if name in self.changes else getattr(self.s, name)

    def put(self, name: str, value) -> None:
        self.changes[name] = value

    def state(self) -> KraftState:
        return replace(self.s, **self.changes) if self.changes else self.s


def _hwm_invariant_vars(n: _Next, s: KraftState, b: int, old_hwm: int, new_hwm: int, positive: bool) -> None:
    """UpdateHwmInvariantVars: answer the producers and move the true high watermark."""
    if positive:
        n.put("acked", s.acked | _acks_for(s, b, old_hwm, new_hwm - 1))
    else:
        n.put("nacked", s.nacked | _acks_for(s, b, old_hwm, s.leo(b) - 1))
    if new_hwm > s.true_hwm:
        n.put("true_hwm", new_hwm)
        n.put("consumed", s.consumed + _sub_seq(s.logs[b - 1], s.true_hwm, new_hwm - 1))


def _maybe_advance_hwm(n: _Next, s: KraftState, b: int, old_hwm: int, new_hwm: int, positive: bool) -> None:
    if new_hwm > old_hwm:
        n.put("hwm", _set(n.get("hwm"), b, new_hwm))
        _hwm_invariant_vars(n, s, b, old_hwm, new_hwm, positive)


def _hwm_may_advance(p: Params, isr) -> bool:
    """KIP-966: with ELR the high watermark advances only while the leader's ISR is at min ISR
    (its maximal ISR need not cover the ELR below it)."""
    return not (p.elr and p.elr_hw_needs_min_isr) or len(isr) >= p.min_isr


def _update_hwm_on_change(p: Params, n: _Next, s: KraftState, b: int, md: PartitionMetadata) -> None:
    """MaybeUpdateHwmAndAckOnPartitionChange."""
    if not _hwm_may_advance(p, md.isr):
        return
    new_hwm = _commit_offset(s, b, md.maximal_isr, s.leo(b), s.followers[b - 1]) + 1
    _maybe_advance_hwm(n, s, b, s.hwm[b - 1], new_hwm, len(md.maximal_isr) >= p.min_isr)


def _fail_pending_writes(n: _Next, s: KraftState, b: int) -> None:
    n.put("nacked", s.nacked | _acks_for(s, b, s.hwm[b - 1], s.leo(b) - 1))


def _pending_alter_partition(s: KraftState, b: int) -> bool:
    return s.pending[b - 1].epoch > s.metadata[b - 1].partition_epoch


def _reassignment_in_progress(s: KraftState) -> bool:
    return bool(s.partition.adding) or bool(s.partition.removing)


def _apply_partition_change(p: Params, n: _Next, replicas, leader, isr, elr, leader_epoch, partition_epoch,
                            adding, removing) -> None:
    """ApplyPartitionChange: the controller's new partition state and its PartitionChangeRecord.

    With ELR (KIP-966) the last-known ELR remembers ELR members that left it while the ISR is
    below min ISR (the replicas an unclean recovery would need), and empties once it is not.
    """
    md = n.s.partition
    if not p.elr or len(isr) >= p.min_isr:
        last_known = frozenset()
    else:
        last_known = md.last_known_elr | (replicas & (md.elr - elr))
    n.put("partition", ControllerPartition(replicas, isr, elr, last_known, leader, leader_epoch, partition_epoch,
                                           adding, removing))
    n.put("metadata_log", n.s.metadata_log + (
        MetadataRecord(replicas, isr, elr, last_known, leader, leader_epoch, partition_epoch, adding, removing),))


def _updated_elr(p: Params, md: ControllerPartition, proposed_isr, replicas) -> frozenset[int]:
    """UpdateElr (KIP-966): with the ISR below min ISR, the ELR keeps its members and gains the
    replicas that just left the ISR; with the ISR at min ISR or above it is empty."""
    if not p.elr or len(proposed_isr) >= p.min_isr:
        return frozenset()
    return (md.elr & replicas) | ((md.isr & replicas) - proposed_isr)


def _partition_on_broker_change(p: Params, s: KraftState, new_isr, new_elr, new_unfenced) -> Iterator[tuple]:
    """MaybeUpdatePartitionOnBrokerChange: each way the controller may change the partition, as
    the arguments of the change to apply (None: no change). TLC takes the first CASE arm that holds."""
    md = s.partition
    leader = md.leader
    if p.elr:
        elr_candidates = sorted(new_elr & new_unfenced)
        no_leader_change = (leader == NO_LEADER and not new_isr and not elr_candidates) or leader in new_isr
    else:
        no_leader_change = ((leader == NO_LEADER and not (new_isr & new_unfenced))
                            or (leader in new_isr and leader in new_unfenced))
    if no_leader_change:
        if new_isr == md.isr and new_elr == md.elr:
            yield None
        else:
            yield (md.replicas, leader, new_isr, new_elr, md.leader_epoch, md.partition_epoch + 1)
        return
    bump = (md.leader_epoch + 1, md.partition_epoch + 1)
    if p.elr:
        if new_isr:
            for c in sorted(new_isr):
                yield (md.replicas, c, new_isr, new_elr) + bump
        elif elr_candidates:
            # Elect from the ELR: the new leader moves from the ELR into the ISR.
            for c in elr_candidates:
                yield (md.replicas, c, new_isr | {c}, new_elr - {c}) + bump
        else:
            yield (md.replicas, NO_LEADER, new_isr, new_elr) + bump
        return
    candidates = sorted(new_isr & new_unfenced)
    if candidates:
        for c in candidates:
            yield (md.replicas, c, new_isr, new_elr) + bump
    else:
        yield (md.replicas, NO_LEADER, new_isr, new_elr) + bump


def _handle_fenced(p: Params, s: KraftState, b: int) -> Iterator[tuple[frozenset, tuple | None]]:
    """HandleBrokerFenced: the broker leaves the ISR (Kafka 3.5 keeps a last member; with ELR the
    ISR may empty, its leavers going to the ELR) and any leadership."""
    md = s.partition
    if p.elr:
        new_isr = md.isr - {b}
    else:
        new_isr = md.isr if len(md.isr) == 1 else md.isr - {b}
    new_elr = _updated_elr(p, md, new_isr, md.replicas)
    new_unfenced = s.unfenced - {b}
    for change in _partition_on_broker_change(p, s, new_isr, new_elr, new_unfenced):
        yield new_unfenced, change


def _handle_unfenced(p: Params, s: KraftState, b: int) -> Iterator[tuple[frozenset, tuple | None]]:
    """HandleBrokerUnfenced: a partition with no leader may get one (from the ISR, or the ELR)."""
    new_unfenced = s.unfenced | {b}
    if s.partition.leader == NO_LEADER:
        for change in _partition_on_broker_change(p, s, s.partition.isr, s.partition.elr, new_unfenced):
            yield new_unfenced, change
    else:
        yield new_unfenced, None


def _handle_unclean_broker(p: Params, s: KraftState, b: int) -> Iterator[tuple[frozenset, tuple | None]]:
    """ProcessUncleanBroker (KIP-966): a broker that registers without the broker epoch it saved
    at a clean shutdown may have lost data: it leaves the ISR and the ELR, whatever min ISR says."""
    md = s.partition
    new_unfenced = s.unfenced | {b}
    for change in _partition_on_broker_change(p, s, md.isr - {b}, md.elr - {b}, new_unfenced):
        yield new_unfenced, change


def _apply(p: Params, n: _Next, unfenced: frozenset, change: tuple | None) -> None:
    n.put("unfenced", unfenced)
    if change is not None:
        md = n.s.partition
        _apply_partition_change(p, n, *change, md.adding, md.removing)


def _last_offset_for_epoch(s: KraftState, b: int, req_epoch: int, is_leader: bool) -> tuple[int, int]:
    """OffsetsForLeaderEpoch: (the largest epoch <= req_epoch in the log, the end offset of that
    epoch), or (req_epoch, LEO) when the log ends in req_epoch."""
    log = s.logs[b - 1]
    leader_epoch = s.metadata[b - 1].leader_epoch
    if not log or req_epoch == log[-1].epoch or (is_leader and leader_epoch == req_epoch):
        return req_epoch, s.leo(b)
    higher = [r for r in log if r.epoch > req_epoch]
    if higher:
        lowest = min(r.epoch for r in higher)
        higher_offset = min(r.offset for r in higher if r.epoch == lowest)
    elif is_leader and leader_epoch > req_epoch:
        higher_offset = s.leo(b)
    else:
        raise ValueError(f"r{b} has no epoch above {req_epoch} in its log (the TLA+ model's Nil)")
    floor = [r.epoch for r in log if r.epoch <= req_epoch]
    if floor:
        return max(floor), higher_offset
    return req_epoch, higher_offset


def _validate_alter_partition(p: Params, s: KraftState, b: int, req: AlterPartition) -> Error:
    reg = s.registrations[b - 1]
    if (b == s.partition.leader and req.broker_epoch == reg.broker_epoch
            and req.partition_epoch == s.partition.partition_epoch):
        for r, epoch in req.isr_and_epochs:
            rr = s.registrations[r - 1]
            if rr.fenced or not (epoch == 0 or rr.broker_epoch == epoch or not p.broker_epoch_check):
                return Error.INELIGIBLE_REPLICA
        return Error.NONE
    return Error.FENCED_LEADER_EPOCH


def _converged(s: KraftState, leader: int, follower: int) -> bool:
    f = s.followers[leader - 1][follower - 1]
    return (s.leo(leader) == s.leo(follower) and s.hwm[leader - 1] == s.hwm[follower - 1]
            and f.leo == s.leo(follower) and f.broker_epoch == s.brokers[follower - 1].broker_epoch)


def _drop_fetch_sessions(n: _Next, s: KraftState, b: int) -> None:
    dropped = frozenset(m for m in s.messages
                        if m.kind in (Kind.FETCH_REQUEST, Kind.FETCH_RESPONSE) and (m.dest == b or m.source == b))
    n.put("messages", s.messages - dropped)
    n.put("processed", s.processed | dropped)
    blank = Fetcher(NO_PARTITION, False)
    rows = []
    for b1 in range(1, len(s.brokers) + 1):
        row = s.fetchers[b1 - 1]
        if b1 == b:
            rows.append(tuple(blank for _ in row))
            continue
        f = row[b - 1]
        if f.pending_response:
            part = f.partition if f.partition == NO_PARTITION else replace(f.partition, delayed=True)
            row = _set(row, b, Fetcher(part, False))
        rows.append(row)
    n.put("fetchers", tuple(rows))


def _reply(n: _Next, s: KraftState, request: Message, response: Message) -> None:
    n.put("messages", (s.messages - {request}) | {response})
    n.put("processed", s.processed | {request})


def _discard(n: _Next, s: KraftState, m: Message) -> None:
    n.put("messages", s.messages - {m})
    n.put("processed", s.processed | {m})


def _messages(s: KraftState, kind: Kind) -> list[Message]:
    return sorted((m for m in s.messages if m.kind == kind), key=_message_order)


# --------------------------------------------------------------------------------------------
# the actions, per broker b, in the order of the TLA+ Next


def broker_start(p: Params, s: KraftState, b: int):
    br = s.brokers[b - 1]
    if br.status not in (BrokerStatus.OFFLINE_CLEAN, BrokerStatus.OFFLINE_DIRTY):
        return
    # With ELR (KIP-966) the broker registers with the broker epoch it saved on disk (0: none).
    saved = br.broker_epoch if p.elr else 0
    n = _Next(s, {})
    n.put("brokers", _set(s.brokers, b, Broker(BrokerStatus.STARTING, saved, s.next_incarnation, False)))
    n.put("role", _set(s.role, b, Role.NONE))
    n.put("messages", s.messages | {Message(Kind.REGISTER_BROKER_REQUEST, b, CONTROLLER, broker_epoch=saved,
                                            incarnation_id=s.next_incarnation)})
    n.put("next_incarnation", s.next_incarnation + 1)
    yield f"BrokerStart(r{b}, incarnation={s.next_incarnation})", n.state()


def receive_broker_registration_response(p: Params, s: KraftState, b: int):
    br = s.brokers[b - 1]
    if br.status != BrokerStatus.STARTING or br.registered:
        return
    for m in _messages(s, Kind.REGISTER_BROKER_RESPONSE):
        if m.dest != b or br.incarnation_id != m.incarnation_id:
            continue
        n = _Next(s, {})
        n.put("brokers", _set(s.brokers, b, Broker(BrokerStatus.RUNNING, m.broker_epoch, br.incarnation_id, True)))
        # Catch up with the metadata log up to (not including) the broker's own registration.
        n.put("metadata_offset", _set(s.metadata_offset, b, max(m.metadata_offset - 1, 0)))
        n.put("metadata", _set(s.metadata, b, BLANK_METADATA))
        _discard(n, s, m)
        yield f"ReceiveBrokerRegistrationResponse(r{b}, broker_epoch={m.broker_epoch})", n.state()


def _needs_action(s: KraftState, b: int, offset: int) -> int:
    """PartitionNeedsAction, as the number of its disjuncts that hold: TLC computes the successor
    once per true disjunct (a leader that sees a leader epoch bump counts twice), and counts each."""
    md = s.metadata[b - 1]
    rec = s.metadata_log[offset - 1]
    leader = s.role[b - 1] == Role.LEADER
    if b in md.replicas:
        return leader + (rec.leader_epoch > md.leader_epoch)
    return leader + (b in rec.replicas)


def receive_metadata_update(p: Params, s: KraftState, b: int):
    br = s.brokers[b - 1]
    if br.status in (BrokerStatus.OFFLINE_CLEAN, BrokerStatus.OFFLINE_DIRTY) or not br.registered:
        return
    for offset in range(s.metadata_offset[b - 1] + 1, len(s.metadata_log) + 1):
        times = _needs_action(s, b, offset)
        if not times:
            continue
        rec = s.metadata_log[offset - 1]
        cur = s.metadata[b - 1]
        new = PartitionMetadata(rec.replicas, rec.isr, rec.isr, rec.leader, rec.leader_epoch, rec.partition_epoch)
        n = _Next(s, {})
        n.put("metadata_offset", _set(s.metadata_offset, b, offset))
        label = f"ReceiveMetadataUpdate(r{b}, offset={offset})"
        if new.partition_epoch <= cur.partition_epoch:
            nxt = n.state()
            for _ in range(times):
                yield label, nxt
            continue
        n.put("metadata", _set(s.metadata, b, new if b in new.replicas else BLANK_METADATA))
        is_new_leader = s.role[b - 1] != Role.LEADER and rec.leader == b
        if b in cur.replicas and b not in new.replicas:
            _delete_partition(p, n, s, b, new)
        elif cur.leader == b and rec.leader == b:
            if cur.leader_epoch == new.leader_epoch:
                _remain_leader(p, n, s, b, new)
            else:
                _become_leader(p, n, s, b, new, is_new_leader)
        elif cur.leader != b and rec.leader == b:
            _become_leader(p, n, s, b, new, is_new_leader)
        elif b in new.replicas and rec.leader != NO_LEADER:
            if new.leader_epoch == cur.leader_epoch and cur.leader != b and new.leader != b:
                # RemainFollower: unreachable, since a follower acts only on a leader epoch bump (the
                # TLA+ model leaves aux_flo unspecified there, which TLC would report as an error).
                raise ValueError(f"r{b} would remain follower in leader epoch {cur.leader_epoch}")
            _become_follower(p, n, s, b, new)
        elif b in new.replicas:
            _wait_for_leader_change(p, n, s, b, new)
        else:
            continue
        nxt = n.state()
        for _ in range(times):
            yield label, nxt


def _renounce_leadership(p: Params, n: _Next, s: KraftState, b: int, new: PartitionMetadata) -> None:
    """EnsureLeadershipRenounced."""
    if s.hwm[b - 1] < s.leo(b) and (len(new.isr) < p.min_isr or b != new.leader):
        _fail_pending_writes(n, s, b)
    n.put("followers", _set(s.followers, b, tuple(BLANK_FOLLOWER for _ in s.brokers)))
    n.put("pending", _set(s.pending, b, NO_PENDING))
    n.put("floor_offset", _set(s.floor_offset, b, INT_MAX))


def _remove_from_fetchers(n: _Next, s: KraftState, b: int) -> None:
    n.put("fetchers", _set(s.fetchers, b, tuple(Fetcher(NO_PARTITION, f.pending_response) for f in s.fetchers[b - 1])))


def _remain_leader(p, n, s, b, new):
    _update_hwm_on_change(p, n, s, b, new)
    if new.partition_epoch >= s.pending[b - 1].epoch:
        n.put("pending", _set(s.pending, b, NO_PENDING))


def _become_leader(p, n, s, b, new, is_new_leader):
    n.put("role", _set(s.role, b, Role.LEADER))
    _update_hwm_on_change(p, n, s, b, new)
    n.put("leso", _set(s.leso, b, s.leo(b)))
    if is_new_leader:
        n.put("followers", _set(s.followers, b, tuple(BLANK_FOLLOWER for _ in s.brokers)))
    else:
        # Out-of-sync followers must prove themselves again in the new leader epoch.
        n.put("followers", _set(s.followers, b, tuple(
            f if r in new.isr else BLANK_FOLLOWER for r, f in enumerate(s.followers[b - 1], 1))))
    n.put("pending", _set(s.pending, b, NO_PENDING))
    _remove_from_fetchers(n, s, b)


def _become_follower(p, n, s, b, new):
    n.put("role", _set(s.role, b, Role.FOLLOWER))
    cur = s.metadata[b - 1]
    row = s.fetchers[b - 1]
    if new.leader_epoch > cur.leader_epoch or row[new.leader - 1].partition == NO_PARTITION:
        log = s.logs[b - 1]
        added = FetchPartition(s.leo(b), log[-1].epoch if log else 0, False)
        n.put("fetchers", _set(s.fetchers, b, tuple(
            Fetcher(added if peer == new.leader else NO_PARTITION, f.pending_response)
            for peer, f in enumerate(row, 1))))
    n.put("leso", _set(s.leso, b, NO_OFFSET))
    _renounce_leadership(p, n, s, b, new)


def _wait_for_leader_change(p, n, s, b, new):
    n.put("role", _set(s.role, b, Role.NONE))
    _remove_from_fetchers(n, s, b)
    n.put("leso", _set(s.leso, b, NO_OFFSET))
    _renounce_leadership(p, n, s, b, new)


def _delete_partition(p, n, s, b, new):
    n.put("role", _set(s.role, b, Role.NONE))
    _remove_from_fetchers(n, s, b)
    n.put("leso", _set(s.leso, b, NO_OFFSET))
    n.put("logs", _set(s.logs, b, ()))
    n.put("hwm", _set(s.hwm, b, 1))
    _renounce_leadership(p, n, s, b, new)


def _subsets(items) -> list[frozenset[int]]:
    items = sorted(items)
    return [frozenset(c) for k in range(len(items) + 1) for c in combinations(items, k)]


def send_alter_partition(p: Params, s: KraftState, b: int):
    if (s.brokers[b - 1].status != BrokerStatus.RUNNING or _pending_alter_partition(s, b)
            or s.role[b - 1] != Role.LEADER):
        return
    if s.isr_shrinks < p.isr_shrink_limit:
        choices = [t for t in _subsets(s.metadata[b - 1].isr) if b not in t]
    else:
        choices = [frozenset()]
    for timed_out in choices:
        yield from _send_alter_partition(p, s, b, timed_out)


def _send_alter_partition(p: Params, s: KraftState, b: int, timed_out: frozenset[int]):
    if b in timed_out:
        return
    md = s.metadata[b - 1]
    cur = md.isr
    followers = s.followers[b - 1]
    hwm, leso = s.hwm[b - 1], s.leso[b - 1]
    proposed = []
    for r in sorted(md.replicas):
        if r == b:
            proposed.append(r)
        elif r in cur:
            if r not in timed_out:
                proposed.append(r)
        else:
            leo = followers[r - 1].leo
            # Caught up: fetched in this leadership, up to the HW and the leader epoch start offset.
            if leo != NO_OFFSET and leo >= hwm and leo >= leso:
                proposed.append(r)
    proposed_isr = frozenset(proposed)
    if proposed_isr == cur:
        return
    epochs = tuple((r, s.brokers[b - 1].broker_epoch if r == b else 0 if r in cur else followers[r - 1].broker_epoch)
                   for r in sorted(proposed_isr))
    req = AlterPartition(proposed_isr, epochs, b, md.leader_epoch, md.partition_epoch, s.brokers[b - 1].broker_epoch)
    msg = Message(Kind.ALTER_PARTITION_REQUEST, b, CONTROLLER, alter=req)
    # __AvoidCycle: never resend a request the controller would reject again. Resending one it
    # would accept, TLC computes the successor once per set it is in (in flight, processed).
    times = (msg in s.messages) + (msg in s.processed)
    if times and _validate_alter_partition(p, s, b, req) != Error.NONE:
        return
    n = _Next(s, {})
    n.put("messages", s.messages | {msg})
    maximal = proposed_isr | cur if p.maximal_isr else proposed_isr
    n.put("metadata", _set(s.metadata, b, replace(md, maximal_isr=maximal)))
    n.put("pending", _set(s.pending, b, PendingAlterPartition(md.partition_epoch + 1, req)))
    if cur - proposed_isr:
        n.put("isr_shrinks", s.isr_shrinks + 1)
    nxt = n.state()
    for _ in range(max(times, 1)):
        yield f"SendAlterPartition(r{b}, isr={_fmt(proposed_isr)})", nxt


def _fmt(members) -> str:
    return "{" + ", ".join(f"r{r}" for r in sorted(members)) + "}"


def receive_alter_partition_response(p: Params, s: KraftState, b: int):
    if (s.brokers[b - 1].status != BrokerStatus.RUNNING or s.role[b - 1] != Role.LEADER
            or not _pending_alter_partition(s, b)):
        return
    md = s.metadata[b - 1]
    for m in _messages(s, Kind.ALTER_PARTITION_RESPONSE):
        if m.dest != b or s.pending[b - 1].request != m.alter:
            continue
        if m.error == Error.NONE and not (m.partition_epoch > md.partition_epoch and m.leader_epoch == md.leader_epoch):
            continue
        n = _Next(s, {})
        if m.error == Error.NONE:
            new = PartitionMetadata(m.replicas, m.isr, m.isr, m.leader, m.leader_epoch, m.partition_epoch)
            label = f"ReceiveAlterPartitionResponse(r{b}, isr={_fmt(m.isr)}, partition_epoch={m.partition_epoch})"
        else:
            new = replace(md, maximal_isr=md.isr)
            label = f"ReceiveAlterPartitionResponse(r{b}, {m.error.name})"
        n.put("metadata", _set(s.metadata, b, new))
        _update_hwm_on_change(p, n, s, b, new)
        n.put("pending", _set(s.pending, b, NO_PENDING))
        _discard(n, s, m)
        yield label, n.state()


def send_fetch(p: Params, s: KraftState, b: int):
    if s.brokers[b - 1].status != BrokerStatus.RUNNING:
        return
    for to in range(1, len(s.brokers) + 1):
        f = s.fetchers[b - 1][to - 1]
        if (to == b or f.partition == NO_PARTITION or f.pending_response or s.metadata[b - 1].leader != to
                or _converged(s, to, b)):
            continue
        n = _Next(s, {})
        n.put("messages", s.messages | {Message(
            Kind.FETCH_REQUEST, b, to, broker_epoch=s.brokers[b - 1].broker_epoch,
            leader_epoch=s.metadata[b - 1].leader_epoch, fetch_offset=f.partition.fetch_offset,
            last_fetched_epoch=f.partition.last_fetched_epoch)})
        n.put("fetchers", _set2(s.fetchers, b, to, Fetcher(replace(f.partition, delayed=False), True)))
        yield f"SendFetch(r{b}, leader=r{to}, offset={f.partition.fetch_offset})", n.state()


def receive_fetch(p: Params, s: KraftState, b: int):
    if s.brokers[b - 1].status != BrokerStatus.RUNNING:
        return
    md = s.metadata[b - 1]
    for m in _messages(s, Kind.FETCH_REQUEST):
        if m.dest != b:
            continue
        n = _Next(s, {})
        if s.role[b - 1] != Role.LEADER or md.leader_epoch != m.leader_epoch:
            error = (Error.UNKNOWN_LEADER_EPOCH if md.leader_epoch < m.leader_epoch else
                     Error.FENCED_LEADER_EPOCH if md.leader_epoch > m.leader_epoch else Error.NOT_LEADER_OR_FOLLOWER)
            _reply(n, s, m, Message(Kind.FETCH_RESPONSE, b, m.source, error=error, leader_epoch=md.leader_epoch,
                                    fetch_offset=m.fetch_offset, hwm=s.hwm[b - 1]))
            yield f"ReceiveFetch(r{b}, from=r{m.source}, {error.name})", n.state()
            continue
        last = _last_offset_for_epoch(s, b, m.last_fetched_epoch, True)
        if last[0] < m.last_fetched_epoch or last[1] < m.fetch_offset:
            _reply(n, s, m, Message(Kind.FETCH_RESPONSE, b, m.source, leader_epoch=md.leader_epoch,
                                    fetch_offset=m.fetch_offset, hwm=s.hwm[b - 1], diverging=last))
            yield f"ReceiveFetch(r{b}, from=r{m.source}, diverging={last})", n.state()
            continue
        followers = _set(s.followers[b - 1], m.source, Follower(m.fetch_offset, m.broker_epoch))
        old_hwm = s.hwm[b - 1]
        new_hwm = _commit_offset(s, b, md.maximal_isr, s.leo(b), followers) + 1
        if not _hwm_may_advance(p, md.isr):
            new_hwm = old_hwm
        _maybe_advance_hwm(n, s, b, old_hwm, new_hwm, True)
        n.put("followers", _set(s.followers, b, followers))
        records = (_log_entry(s, b, m.fetch_offset),) if m.fetch_offset < s.leo(b) else ()
        _reply(n, s, m, Message(Kind.FETCH_RESPONSE, b, m.source, leader_epoch=md.leader_epoch,
                                fetch_offset=m.fetch_offset, hwm=max(new_hwm, old_hwm), records=records))
        yield f"ReceiveFetch(r{b}, from=r{m.source}, offset={m.fetch_offset})", n.state()


def receive_fetch_response(p: Params, s: KraftState, b: int):
    if s.brokers[b - 1].status != BrokerStatus.RUNNING:
        return
    for m in _messages(s, Kind.FETCH_RESPONSE):
        if m.dest != b:
            continue
        f = s.fetchers[b - 1][m.source - 1]
        if not f.pending_response:
            continue
        n = _Next(s, {})
        if (f.partition == NO_PARTITION or f.partition.fetch_offset != m.fetch_offset
                or s.metadata[b - 1].leader_epoch != m.leader_epoch):
            n.put("fetchers", _set2(s.fetchers, b, m.source, Fetcher(f.partition, False)))
            label = f"ReceiveFetchResponse(r{b}, from=r{m.source}, stale)"
        elif m.error != Error.NONE:
            n.put("fetchers", _set2(s.fetchers, b, m.source, Fetcher(replace(f.partition, delayed=True), False)))
            label = f"ReceiveFetchResponse(r{b}, from=r{m.source}, {m.error.name})"
        elif m.diverging:
            truncate_to = _truncation_point(s, b, m.diverging)
            kept = tuple(_log_entry(s, b, o) for o in range(1, truncate_to)) if truncate_to > 1 else ()
            n.put("logs", _set(s.logs, b, kept))
            n.put("fetchers", _set2(s.fetchers, b, m.source, Fetcher(
                FetchPartition(len(kept) + 1, kept[-1].epoch if kept else 0, False), False)))
            label = f"ReceiveFetchResponse(r{b}, from=r{m.source}, truncate_to={len(kept) + 1})"
        else:
            log = s.logs[b - 1] + m.records
            new_leo = len(log) + 1
            lfe = m.records[-1].epoch if m.records else f.partition.last_fetched_epoch
            n.put("logs", _set(s.logs, b, log))
            if m.hwm <= new_leo:
                n.put("hwm", _set(s.hwm, b, m.hwm))
            n.put("fetchers", _set2(s.fetchers, b, m.source, Fetcher(FetchPartition(new_leo, lfe, False), False)))
            label = f"ReceiveFetchResponse(r{b}, from=r{m.source}, records={len(m.records)}, hwm={m.hwm})"
        _discard(n, s, m)
        yield label, n.state()


def _truncation_point(s: KraftState, b: int, diverging: tuple[int, ...]) -> int:
    epoch, end_offset = diverging
    local_epoch, local_offset = _last_offset_for_epoch(s, b, epoch, False)
    if local_epoch != epoch:
        return local_offset
    return local_offset if local_offset < end_offset else end_offset


def write_record(p: Params, s: KraftState, b: int):
    for v in range(1, p.values + 1):
        if (v in s.sent or s.brokers[b - 1].status != BrokerStatus.RUNNING or s.role[b - 1] != Role.LEADER
                or len(s.metadata[b - 1].maximal_isr) < p.min_isr):
            continue
        md = s.metadata[b - 1]
        leo = s.leo(b)
        n = _Next(s, {})
        old_hwm = s.hwm[b - 1]
        new_hwm = _commit_offset(s, b, md.maximal_isr, leo + 1, s.followers[b - 1]) + 1
        if not _hwm_may_advance(p, md.isr):
            new_hwm = old_hwm
        n.put("logs", _set(s.logs, b, s.logs[b - 1] + (Record(md.leader_epoch, leo, v),)))
        if new_hwm > old_hwm:
            n.put("hwm", _set(s.hwm, b, new_hwm))
            _hwm_invariant_vars(n, s, b, old_hwm, new_hwm, True)
        n.put("sent", s.sent | {v})
        if s.floor_offset[b - 1] == INT_MAX:
            n.put("floor_offset", _set(s.floor_offset, b, leo))
        yield f"WriteRecord(r{b}, value={v}, offset={leo})", n.state()


def _shutdown(p: Params, s: KraftState, b: int, unclean: bool):
    """UncleanShutdown (the disk is lost) or CleanShutdown; the controller fences the broker.

    With ELR (KIP-966) the broker writes its broker epoch to disk at a clean shutdown, and a
    shutdown may also be unclean without losing this partition's data (no epoch written); without
    ELR the broker always registers again with no epoch.
    """
    br = s.brokers[b - 1]
    if unclean:
        if s.unclean_shutdowns >= p.unclean_shutdown_limit:
            return
        isr = s.partition.isr
        if p.avoid_last_replica_standing and b in isr and len(isr) == 1:
            return
        saved_epochs = (0,)
    else:
        if s.clean_shutdowns >= p.clean_shutdown_limit:
            return
        saved_epochs = (0, br.broker_epoch) if p.elr else (0,)
    if br.status in (BrokerStatus.OFFLINE_CLEAN, BrokerStatus.OFFLINE_DIRTY):
        return
    for saved_epoch in saved_epochs:
        for unfenced, change in _handle_fenced(p, s, b):
            n = _Next(s, {})
            status = BrokerStatus.OFFLINE_DIRTY if unclean else BrokerStatus.OFFLINE_CLEAN
            n.put("brokers", _set(s.brokers, b, Broker(status, saved_epoch, 0, False)))
            _drop_fetch_sessions(n, s, b)
            n.put("role", _set(s.role, b, Role.NONE))
            if unclean:
                n.put("logs", _set(s.logs, b, ()))
                n.put("hwm", _set(s.hwm, b, 1))
                n.put("leso", _set(s.leso, b, NO_OFFSET))
                n.put("unclean_shutdowns", s.unclean_shutdowns + 1)
            else:
                n.put("clean_shutdowns", s.clean_shutdowns + 1)
            n.put("followers", _set(s.followers, b, tuple(BLANK_FOLLOWER for _ in s.brokers)))
            n.put("pending", _set(s.pending, b, NO_PENDING))
            if s.role[b - 1] == Role.LEADER and s.hwm[b - 1] < s.leo(b):
                _fail_pending_writes(n, s, b)
            _apply(p, n, unfenced, change)
            n.put("registrations", _set(s.registrations, b, replace(s.registrations[b - 1], fenced=True)))
            n.put("floor_offset", _set(s.floor_offset, b, INT_MAX))
            leader = n.get("partition").leader
            if unclean:
                label = f"UncleanShutdown(r{b}, disk lost, leader={_leader(leader)})"
            elif p.elr:
                how = f"epoch {saved_epoch} saved" if saved_epoch else "no epoch saved"
                label = f"CleanShutdown(r{b}, {how}, leader={_leader(leader)})"
            else:
                label = f"CleanShutdown(r{b}, leader={_leader(leader)})"
            yield label, n.state()


def _leader(leader: int) -> str:
    return "none" if leader == NO_LEADER else f"r{leader}"


def unclean_shutdown(p: Params, s: KraftState, b: int):
    yield from _shutdown(p, s, b, True)


def clean_shutdown(p: Params, s: KraftState, b: int):
    yield from _shutdown(p, s, b, False)


def receive_broker_registration(p: Params, s: KraftState, b: int):
    reg = s.registrations[b - 1]
    for m in _messages(s, Kind.REGISTER_BROKER_REQUEST):
        if m.source != b or not (reg.fenced or reg.incarnation_id == m.incarnation_id):
            continue
        epoch = s.next_broker_epoch + 1
        unclean = p.elr and p.unclean_shutdown_detection and m.broker_epoch == 0
        changes = _handle_unclean_broker(p, s, b) if unclean else _handle_unfenced(p, s, b)
        for unfenced, change in changes:
            n = _Next(s, {})
            _apply(p, n, unfenced, change)
            n.put("registrations", _set(s.registrations, b, Registration(False, epoch, m.incarnation_id)))
            _reply(n, s, m, Message(Kind.REGISTER_BROKER_RESPONSE, CONTROLLER, b, broker_epoch=epoch,
                                    incarnation_id=m.incarnation_id, metadata_offset=len(s.metadata_log)))
            n.put("next_broker_epoch", epoch)
            leader = n.get("partition").leader
            how = ", unclean" if unclean else ""
            yield f"ReceiveBrokerRegistration(r{b}, broker_epoch={epoch}{how}, leader={_leader(leader)})", n.state()


def receive_alter_partition(p: Params, s: KraftState, b: int):
    for m in _messages(s, Kind.ALTER_PARTITION_REQUEST):
        if m.source != b:
            continue
        req = m.alter
        md = s.partition
        error = _validate_alter_partition(p, s, b, req)
        if error != Error.NONE:
            n = _Next(s, {})
            _reply(n, s, m, Message(Kind.ALTER_PARTITION_RESPONSE, CONTROLLER, b, error=error, alter=req))
            yield f"ReceiveAlterPartition(r{b}, {error.name})", n.state()
            continue
        final_isr = req.isr - md.removing
        complete = (_reassignment_in_progress(s) and md.adding <= final_isr and len(final_isr) >= p.min_isr)
        if complete:
            final_replicas = md.replicas - md.removing
            new = (final_replicas, final_isr, _updated_elr(p, md, final_isr, final_replicas),
                   md.leader_epoch + 1, md.partition_epoch + 1, frozenset(), frozenset())
        else:
            new = (md.replicas, req.isr, _updated_elr(p, md, req.isr, md.replicas),
                   md.leader_epoch, md.partition_epoch + 1, md.adding, md.removing)
        replicas, isr, elr, leader_epoch, partition_epoch, adding, removing = new
        for leader in sorted(isr):
            if md.leader in isr and leader != md.leader:
                continue
            n = _Next(s, {})
            _apply_partition_change(p, n, replicas, leader, isr, elr, leader_epoch, partition_epoch, adding, removing)
            _reply(n, s, m, Message(Kind.ALTER_PARTITION_RESPONSE, CONTROLLER, b, replicas=replicas, isr=isr,
                                    leader=leader, leader_epoch=leader_epoch, partition_epoch=partition_epoch,
                                    alter=req))
            yield (f"ReceiveAlterPartition(r{b}, isr={_fmt(isr)}, leader=r{leader}, "
                   f"partition_epoch={partition_epoch})"), n.state()


def fence_broker(p: Params, s: KraftState, b: int):
    if s.fences >= p.fence_limit or s.registrations[b - 1].fenced:
        return
    for unfenced, change in _handle_fenced(p, s, b):
        n = _Next(s, {})
        _apply(p, n, unfenced, change)
        n.put("registrations", _set(s.registrations, b, replace(s.registrations[b - 1], fenced=True)))
        n.put("fences", s.fences + 1)
        yield f"FenceBroker(r{b}, leader={_leader(n.get('partition').leader)})", n.state()


def unfence_broker(p: Params, s: KraftState, b: int):
    if not s.registrations[b - 1].fenced or s.brokers[b - 1].status != BrokerStatus.RUNNING:
        return
    for unfenced, change in _handle_unfenced(p, s, b):
        n = _Next(s, {})
        _apply(p, n, unfenced, change)
        n.put("registrations", _set(s.registrations, b, replace(s.registrations[b - 1], fenced=False)))
        yield f"UnfenceBroker(r{b}, leader={_leader(n.get('partition').leader)})", n.state()


def reassign_partition(p: Params, s: KraftState):
    if s.reassignments >= p.reassignment_limit or _reassignment_in_progress(s):
        return
    md = s.partition
    everyone = range(1, len(s.brokers) + 1)
    for adding in _subsets(everyone):
        for removing in _subsets(everyone):
            if not adding and not removing:
                continue
            if len(md.replicas) + len(adding) - len(removing) < p.min_isr:
                continue
            if adding & md.replicas or not removing <= md.replicas:
                continue
            grown = md.replicas | adding
            final_replicas = grown - removing
            final_isr = md.isr - removing
            if adding <= final_isr and len(final_isr) >= p.min_isr and final_replicas:
                new = (final_replicas, final_isr, _updated_elr(p, md, final_isr, final_replicas),
                       md.leader_epoch + 1, md.partition_epoch + 1, frozenset(), frozenset())
            else:
                new = (grown, md.isr, md.elr, md.leader_epoch, md.partition_epoch + 1, adding, removing)
            replicas, isr, elr, leader_epoch, partition_epoch, add, remove = new
            # ValidReassignment's "adding or removing is not empty": TLC computes the successor
            # once per true disjunct.
            times = bool(adding) + bool(removing)
            for leader in sorted(isr):
                if md.leader in isr and leader != md.leader:
                    continue
                n = _Next(s, {})
                _apply_partition_change(p, n, replicas, leader, isr, elr, leader_epoch, partition_epoch, add, remove)
                n.put("reassignments", s.reassignments + 1)
                nxt = n.state()
                for _ in range(times):
                    yield (f"ReassignPartition(adding={_fmt(adding)}, removing={_fmt(removing)}, "
                           f"leader=r{leader})"), nxt


# The order of the TLA+ Next, which is the order in which TLC computes successors.
BROKER_ACTIONS = (
    broker_start,
    receive_broker_registration_response,
    receive_metadata_update,
    send_alter_partition,
    receive_alter_partition_response,
    send_fetch,
    receive_fetch,
    receive_fetch_response,
    write_record,
    unclean_shutdown,
    clean_shutdown,
    receive_broker_registration,
    receive_alter_partition,
    fence_broker,
    unfence_broker,
)


class ReplicationKraft(Spec):
    name = "replication-kraft"
    description = ("one partition's replication with a KRaft controller: AlterPartition (KIP-497), broker epochs "
                   "(KIP-903), disk loss, Eligible Leader Replicas (KIP-966); TLC parity with the public TLA+ model")
    parameters = (
        Param("brokers", 2, "BrokerCount: brokers 1..n (more than replication_factor allows reassignment)",
              min=1, max=4),
        Param("replication_factor", 2, "InitReplicationFactor: the initial replicas (brokers 1..n)", min=1, max=4),
        Param("init_isr_size", 2, "InitIsrSize: replicas in the initial ISR; the others start out of sync",
              min=1, max=4),
        Param("min_isr", 2, "MinISR: min.insync.replicas; writes need a maximal ISR this big", min=1, max=4),
        Param("values", 1, "Values: how many distinct records can ever be written", min=1, max=3),
        Param("clean_shutdown_limit", 0, "CleanShutdownLimit: clean shutdowns (log kept)", min=0, max=3),
        Param("unclean_shutdown_limit", 1, "UncleanShutdownLimit: unclean shutdowns that lose the disk",
              min=0, max=3),
        Param("fence_limit", 1, "FenceBrokerLimit: arbitrary fences by the controller (missed heartbeats)",
              min=0, max=3),
        Param("isr_shrink_limit", 0, "LeaderShrinkIsrLimit: AlterPartition requests that shrink the ISR "
              "(followers timing out)", min=0, max=3),
        Param("reassignment_limit", 0, "ReassignmentLimit: partition reassignments (KIP-455)", min=0, max=2),
        Param("avoid_last_replica_standing", True,
              "AvoidLastReplicaStanding: no unclean shutdown of the last ISR member (the known "
              "last-replica-standing loss, which KIP-966 addresses)"),
        Param("maximal_isr", True,
              "KIP-497: while an AlterPartition is in flight the leader commits over the maximal ISR "
              "(current + proposed); false uses the proposed ISR at once"),
        Param("elr", False,
              "KIP-966 Eligible Leader Replicas: the ISR may empty, replicas that leave it below min ISR "
              "stay electable in the ELR, the last-known ELR is kept; false is Kafka 3.5 (the TLA+ model "
              "kafka_replication_kip_966 with true, kafka_replication_v3_5 with false)"),
        Param("unclean_shutdown_detection", True,
              "KIP-966 (with elr): a broker saves its broker epoch at a clean shutdown and one that "
              "registers without it is removed from the ISR and the ELR; false trusts every restart"),
        Param("elr_hw_needs_min_isr", True,
              "KIP-966 (with elr): the high watermark advances only while the leader's ISR is at min ISR; "
              "false lets it advance over a smaller ISR"),
        Param("broker_epoch_check", True,
              "KIP-903: the controller checks the broker epoch AlterPartition names for each replica it "
              "adds to the ISR (the one it fetched with); false is Kafka before KIP-903"),
    )
    invariants = (
        leader_completeness,
        leader_candidate_completeness,
        replication_quorum_superset,
        log_matching,
        metadata_log_matching,
        consistent_read,
        no_committed_record_lost,
        min_isr_recovery_quorum,
    )
    entities = {"replica": ("brokers", "role", "metadata", "logs", "hwm", "leso", "followers", "pending",
                            "fetchers", "metadata_offset", "registrations", "floor_offset")}

    def validate_params(self, p: Params) -> None:
        if p.replication_factor > p.brokers:
            raise UsageError(f"replication_factor={p.replication_factor} exceeds brokers={p.brokers}; "
                             "allowed: replication_factor <= brokers")
        if not p.min_isr <= p.init_isr_size <= p.replication_factor:
            raise UsageError(f"min_isr={p.min_isr}, init_isr_size={p.init_isr_size}, replication_factor="
                             f"{p.replication_factor}; allowed: min_isr <= init_isr_size <= replication_factor")

    def init_states(p: Params):
        n = p.brokers
        everyone = range(1, n + 1)
        replicas = frozenset(range(1, p.replication_factor + 1))
        isr = frozenset(range(1, p.init_isr_size + 1))
        partition_epoch = 1 if p.init_isr_size == p.replication_factor else 2
        unfenced = frozenset(everyone) - (replicas - isr)
        none: frozenset[int] = frozenset()
        record = MetadataRecord(replicas, isr, none, none, 1, 1, partition_epoch, none, none)
        blank_fetcher = Fetcher(NO_PARTITION, False)

        def metadata(b: int) -> PartitionMetadata:
            if b not in replicas:
                return BLANK_METADATA
            if b in isr:
                return PartitionMetadata(replicas, isr, isr, 1, 1, partition_epoch)
            return PartitionMetadata(replicas, replicas, replicas, 1, 1, 1)

        yield KraftState(
            unfenced=unfenced,
            registrations=tuple(Registration(b not in unfenced, b, b) for b in everyone),
            partition=ControllerPartition(replicas, isr, none, none, 1, 1, partition_epoch, none, none),
            metadata_log=(record,),
            brokers=tuple(Broker(BrokerStatus.RUNNING, b, b, True) for b in everyone),
            fetchers=tuple(tuple(Fetcher(FetchPartition(1, 0, False), False) if b != 1 and c == 1 else blank_fetcher
                                 for c in everyone) for b in everyone),
            metadata_offset=tuple(1 if b in unfenced else 0 for b in everyone),
            role=tuple(Role.LEADER if b == 1 else Role.FOLLOWER if b in replicas else Role.NONE for b in everyone),
            metadata=tuple(metadata(b) for b in everyone),
            logs=tuple(() for _ in everyone),
            hwm=tuple(1 for _ in everyone),
            leso=tuple(1 if b == 1 else NO_OFFSET for b in everyone),
            followers=tuple(tuple(BLANK_FOLLOWER for _ in everyone) for _ in everyone),
            pending=tuple(NO_PENDING for _ in everyone),
            messages=frozenset(),
            sent=frozenset(), acked=frozenset(), nacked=frozenset(), true_hwm=1, consumed=(),
            processed=frozenset(),
            next_broker_epoch=n,
            next_incarnation=n + 1,
            clean_shutdowns=0, unclean_shutdowns=0, fences=0, isr_shrinks=0, reassignments=0,
            floor_offset=tuple(INT_MAX for _ in everyone),
        )

    @action
    def next(p: Params, s: KraftState):
        for b in range(1, p.brokers + 1):
            for act in BROKER_ACTIONS:
                yield from act(p, s, b)
        yield from reassign_partition(p, s)

    def view(p: Params, s: KraftState) -> KraftView:
        return KraftView(
            s.unfenced, s.registrations, s.partition, s.metadata_log, s.brokers, s.fetchers, s.metadata_offset,
            s.role, s.metadata, s.logs, s.hwm, s.leso, s.followers, s.pending, s.messages, s.sent, s.acked,
            s.nacked, s.true_hwm, s.consumed)
