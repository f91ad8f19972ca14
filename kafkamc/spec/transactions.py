"""Exactly-once transactions: one transactional.id, its coordinator, data partitions and clients.

The model follows Kafka's TransactionCoordinator, TransactionMetadata (states and their table of
legal transitions), TransactionMarkerChannelManager and, on the data side, ProducerStateManager and
ProducerAppendInfo:

- KIP-98 (0.11): transactional.id, producer id and producer epoch, the coordinator and its
  transaction log, AddPartitionsToTxn, two-phase commit through COMMIT/ABORT control markers
  (WriteTxnMarkers), the last stable offset (LSO) and read_committed consumers.
- KAFKA-6119 (1.1): a timed-out transaction is aborted through PrepareEpochFence, i.e. with an
  epoch bump, so the timed-out producer is fenced. ``timeout_bumps_epoch=false`` is Kafka before it.
- KIP-890 part 1 (KAFKA-14402, KAFKA-14884, 3.6): ``version=tv1-verify``; before the first
  transactional append of a producer to a partition, the partition leader asks the coordinator
  (verifyOnly AddPartitionsToTxn) whether the partition is in the producer's ongoing transaction.
- KIP-890 part 2 (KAFKA-14562, KAFKA-14563, transaction.version 2): ``version=tv2``; every EndTxn
  bumps the producer epoch, markers carry the bumped epoch and a partition rejects a marker whose
  epoch is not above the producer epoch it has seen (except an idempotent re-send to a partition
  with no open transaction, KAFKA-19999); partitions are added implicitly by the partition leader
  on the first produce of a transaction.
- KIP-360 (2.5): producer-id rotation. ``max_epoch`` plays Short.MaxValue: from ``max_epoch - 1``
  on the epoch is exhausted and InitProducerId moves to a new producer id at epoch 0
  (prepareProducerIdRotation), within ``producer_ids``; a fence past ``max_epoch`` is impossible
  (Kafka throws). Client side (KAFKA-8805): ``bump_after_abortable`` (tv1, tv1-verify; tv2 bumps
  on every EndTxn anyway), after aborting on an abortable error the client bumps its epoch
  through InitProducerId(producer id, epoch), which restarts its sequence numbers; false is a
  client before 2.5, which stays out of sequence when its timed-out batch is then rejected.
- KAFKA-9666 (2.7): ``failed_fence_keeps_epoch``; a fence whose transaction-log append failed keeps
  its bumped epoch in memory (never returned to a client) and sets hasFailedEpochFence, so the
  next fence does not bump again. false is Kafka before it: every retried InitProducerId (or
  timeout) bumps again until the epoch is exhausted and the transaction can never be aborted.

The three fences of InitProducerId (KIP-98) can each be switched off as a mutation, to show that
each matters: ``init_bumps_epoch`` (the new instance gets a higher epoch than the zombie),
``init_aborts_ongoing`` (the zombie's ongoing transaction is aborted through PrepareEpochFence,
not dropped) and ``partition_rejects_old_epoch`` (ProducerAppendInfo rejects a batch below the
producer epoch the partition has seen, InvalidProducerEpochException).

What is modelled and what is abstracted
---------------------------------------
One transactional.id; its producer id changes only by rotation, and each data partition keeps a
ProducerStateEntry per producer id (after a rotation two ids share a log; a single replica per
partition is enough, replication is the ``replication`` spec, so the high watermark is the log end
offset). The coordinator keeps its in-memory TransactionMetadata and its last committed
transaction-log record (``log_state``, ``log_epoch``, what a new coordinator loads). In memory only
are a pending PrepareEpochFence (``fencing``) and the epoch a failed fence bumped.

``log_append=atomic`` (the default): a transition's record is appended, committed and answered in
one step. ``log_append=replicated`` (KIP-98, TransactionStateManager.appendTransactionToLog with
acks=all): a Prepare* record (EndTxn, a timeout or fence abort) is appended first and the
coordinator acts only when it is committed (``AppendReplicated``: answer the EndTxn, send the
markers); the append may fail (``append_failures``, NOT_ENOUGH_REPLICAS: the transition is dropped,
the client retries) and a failover may lose or keep it. Other records (Ongoing, Empty, Complete*)
stay one step: their failure changes nothing but the answer. ``markers_after_commit=false`` is a
coordinator that sends the markers as soon as the record is appended: a failed append or a
failover then turns a half-written commit into an abort.

Clients are the KafkaProducer's TransactionManager: ``producers`` instances share the
transactional.id; instance ``i+1`` starts only after instance ``i`` got an epoch (a restart, the
older one being the zombie). A client request and its response are one step (with replicated
appends EndTxn's response waits for the record). The network perturbation is a client or
coordinator request timeout: the request stays in flight (it may be delivered at any later time,
after later requests; its response then goes nowhere) and the client retries (a duplicate) or
gives up. At most ``max_delayed`` requests are ever delayed. Delayable are Produce, EndTxn and
WriteTxnMarkers, the cases of KIP-890's motivation.

Each client transaction sends at most one batch per partition. Records carry ghost fields (the
client transaction they were sent in, the producer instance), markers carry the client
transaction that opened the coordinator transaction, the newest instance InitProducerId had
answered when they were written and whether their Prepare* record was committed when they were
sent; the coordinator remembers which client transaction's EndTxn prepared it. The invariants
read these, Kafka does not.

A marker that finds no open transaction on its partition completes nothing; Kafka still appends
the control batch, the model only applies its producer-epoch and coordinator-epoch updates.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from enum import IntEnum

from kafkamc.errors import UsageError
from kafkamc.invariants.recoverability import lso_can_advance, producer_can_write
from kafkamc.invariants.transactions import (
    atomicity,
    client_commit_truth,
    commit_by_own_end_txn,
    coordinator_state_committed,
    epochs_committed_before_use,
    markers_carry_the_decision,
    open_batches_in_coordinator_transaction,
    init_producer_id_succeeds,
    producers_initialised_before_sending,
    producer_state_matches_log,
    open_transaction_closes,
    timed_out_batches_were_delayed,
    transaction_batches_once,
    no_cross_transaction_leak,
    no_duplicate_append,
    no_hanging_transaction,
    read_committed_isolation,
    valid_coordinator_transitions,
    zombie_fencing,
)
from kafkamc.spec import domain as ty
from kafkamc.spec.api import Param, Params, Spec, action

__all__ = [
    "Transactions", "TxnState", "ClientState", "SendState", "EntryKind", "RequestKind",
    "Entry", "Request", "Append", "Coordinator", "ProducerInstance", "ProducerEntry", "DataPartition",
    "TransactionsState", "VERSIONS", "LOG_APPENDS", "VALID_PREVIOUS", "VALID_PREVIOUS_TV2",
]

VERSIONS = ("tv1", "tv1-verify", "tv2")
LOG_APPENDS = ("atomic", "replicated")
_TV1, _TV1_VERIFY, _TV2 = range(3)


class TxnState(IntEnum):
    """TransactionState, with Kafka's ids (TransactionMetadata.scala, KIP-98)."""

    Empty = 0
    Ongoing = 1
    PrepareCommit = 2
    PrepareAbort = 3
    CompleteCommit = 4
    CompleteAbort = 5
    Dead = 6  # transactional.id expiration; not reachable here (no expiration in the model)
    PrepareEpochFence = 7  # never written: only a pending state of Ongoing (KAFKA-6119)


_S = TxnState
# validPreviousStates of TransactionMetadata.scala.
VALID_PREVIOUS: dict[TxnState, frozenset[TxnState]] = {
    _S.Empty: frozenset({_S.Empty, _S.CompleteCommit, _S.CompleteAbort}),
    _S.Ongoing: frozenset({_S.Ongoing, _S.Empty, _S.CompleteCommit, _S.CompleteAbort}),
    _S.PrepareCommit: frozenset({_S.Ongoing}),
    _S.PrepareAbort: frozenset({_S.Ongoing, _S.PrepareEpochFence}),
    _S.CompleteCommit: frozenset({_S.PrepareCommit}),
    _S.CompleteAbort: frozenset({_S.PrepareAbort}),
    _S.Dead: frozenset({_S.Empty, _S.CompleteAbort, _S.CompleteCommit}),
    _S.PrepareEpochFence: frozenset({_S.Ongoing}),
}
# KIP-890 part 2: a TV2 client may abort when unsure whether its transaction started, so
# PrepareAbort is also legal from Empty, CompleteCommit and CompleteAbort.
VALID_PREVIOUS_TV2 = dict(VALID_PREVIOUS)
VALID_PREVIOUS_TV2[_S.PrepareAbort] = VALID_PREVIOUS[_S.PrepareAbort] | {
    _S.Empty, _S.CompleteCommit, _S.CompleteAbort,
}


class ClientState(IntEnum):
    """The producer client's TransactionManager state, reduced to what the protocol needs."""

    NotStarted = 0  # before InitProducerId returned an epoch
    Ready = 1
    InTransaction = 2
    AbortableError = 3  # a send failed: only abortTransaction() is possible
    Committing = 4  # EndTxn(COMMIT) sent and not answered (timed out, or its append in flight)
    Aborting = 5  # EndTxn(ABORT) sent and not answered
    FatalError = 6  # PRODUCER_FENCED or INVALID_TXN_STATE: the instance is dead
    BumpingEpoch = 7  # aborted after an abortable error: InitProducerId(pid, epoch) bumps (KIP-360)


class SendState(IntEnum):
    """What the client knows of its batch to one partition in the current transaction."""

    Unsent = 0
    Acked = 1
    TimedOut = 2  # in flight as far as the network goes; the client may retry or abort
    Failed = 3


class EntryKind(IntEnum):
    Data = 0
    Commit = 1
    Abort = 2


class RequestKind(IntEnum):
    Produce = 0
    EndTxn = 1
    WriteTxnMarkers = 2


class TxnResult(IntEnum):
    Commit = 1
    Abort = 2


@dataclass(frozen=True, slots=True)
class Entry:
    """A log entry: a transactional data batch or a control marker of one producer id.

    kind, pid, epoch: the batch's type, producer id and producer epoch. seq: a data batch's
    sequence number (-1 for a marker). coordinator_epoch: a marker's coordinator epoch (-1 for
    data). txn (ghost): the client transaction a data batch was sent in, or for a marker the client
    transaction that opened the coordinator transaction it ends. producer (ghost): the instance
    that sent a data batch (0 for a marker). init_instance (ghost): for a marker, the newest
    producer instance InitProducerId had answered when it was written (0 for data). decided
    (ghost): for a marker, its Prepare* record was committed in the transaction log when the
    coordinator sent it (always true for data).
    """

    kind: EntryKind
    pid: int
    epoch: int
    seq: int
    coordinator_epoch: int
    txn: int
    producer: int
    init_instance: int
    decided: bool


@dataclass(frozen=True, slots=True, order=True)
class Request:
    """A delayed request still in the network (its sender gave up waiting for the response).

    Produce: (producer, partition, pid, epoch, seq, txn). EndTxn: (producer, pid, epoch, result,
    txn). WriteTxnMarkers: (partition, pid, epoch, result, coordinator epoch, txn, decided).
    """

    kind: RequestKind
    producer: int
    partition: int
    pid: int
    epoch: int
    seq: int
    result: int
    coordinator_epoch: int
    txn: int
    decided: bool


@dataclass(frozen=True, slots=True)
class Append:
    """A Prepare* record appended to the transaction log and not yet replicated (log_append=replicated).

    state, epoch: the record's state and producer epoch. prior_epoch, prior_end_txn: the
    coordinator's in-memory epoch and end_txn before the append (restored if it fails after the
    coordinator acted early). client: the producer instance waiting for the EndTxn response (0:
    nobody, a delayed request or the coordinator's own abort). txn (ghost): the client transaction
    that sent the EndTxn (0 for the coordinator's own abort). fence: the append ends a
    PrepareEpochFence (InitProducerId or a timeout).
    """

    state: TxnState
    epoch: int
    prior_epoch: int
    prior_end_txn: int
    client: int
    txn: int
    fence: bool


@dataclass(frozen=True, slots=True)
class Coordinator:
    """TransactionMetadata of the transactional.id: in memory, and its last committed log record.

    state, pid, producer_epoch, partitions: the in-memory metadata the coordinator acts on.
    fencing: pendingState == PrepareEpochFence (in memory only; the epoch is already bumped).
    failed_fence: hasFailedEpochFence (KAFKA-9666): a fence's append failed, its bumped epoch
    stays in memory and the next fence does not bump again.
    pending_markers: partitions whose WriteTxnMarkers is not yet acknowledged (Prepare* only).
    coordinator_epoch: the leader epoch of the transaction-log partition.
    log_state, log_epoch: the state and epoch of the last committed transaction-log record (what
    a new coordinator loads); the producer id and partitions are always committed.
    appending: the Prepare* record in flight (at most one; log_append=replicated only).
    txn (ghost): the client transaction whose request moved the coordinator to Ongoing.
    end_txn (ghost): the client transaction whose EndTxn moved it to Prepare* (0: the coordinator's
    own abort, a timeout or a fence).
    """

    state: TxnState
    fencing: bool
    failed_fence: bool
    pid: int
    producer_epoch: int
    partitions: frozenset[int]
    pending_markers: frozenset[int]
    coordinator_epoch: int
    log_state: TxnState
    log_epoch: int
    appending: tuple[Append, ...]
    txn: int
    end_txn: int


@dataclass(frozen=True, slots=True)
class ProducerInstance:
    """One KafkaProducer instance with the transactional.id. Partitions are 1..P (index P-1)."""

    state: ClientState
    pid: int
    epoch: int
    txn: int
    added: frozenset[int]
    sent: tuple[SendState, ...]
    next_seq: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class ProducerEntry:
    """ProducerStateEntry of one producer id at a partition leader (ProducerStateManager).

    epoch, last_seq, coordinator_epoch: -1 for none. txn_first_offset: the first offset of the
    producer id's open transaction (currentTxnFirstOffset), -1 for none.
    """

    epoch: int
    last_seq: int
    txn_first_offset: int
    coordinator_epoch: int


_NO_ENTRY = ProducerEntry(-1, -1, -1, -1)


@dataclass(frozen=True, slots=True)
class DataPartition:
    """A data partition leader: its log and a ProducerStateEntry per producer id (index pid-1).

    Kafka keeps producer state per producer id: after a producer-id rotation (KIP-360) the new
    id starts at epoch 0 next to the old id's high epoch. HW = len(log); the LSO is the lowest
    first offset of an open transaction of any producer id, else the HW.
    """

    log: tuple[Entry, ...]
    producers: tuple[ProducerEntry, ...]


@dataclass(frozen=True, slots=True)
class TransactionsState:
    """The whole system.

    network: the delayed requests, sorted. delays: how many requests were ever delayed.
    txns_begun: client transactions begun so far (they are numbered 1.. in begin order).
    init_instance (ghost): the newest producer instance InitProducerId answered, 0 before; the
    older instances are zombies.
    commits (ghost): (txn, partition) of every acknowledged batch of a client transaction whose
    EndTxn(COMMIT) returned success.
    stale_accepted (ghost): the coordinator accepted a request from a zombie (an instance older
    than init_instance).
    """

    coordinator: Coordinator
    producers: tuple[ProducerInstance, ...]
    partitions: tuple[DataPartition, ...]
    network: tuple[Request, ...]
    delays: int
    txns_begun: int
    init_instance: int
    commits: frozenset[tuple[int, int]]
    stale_accepted: bool


# Outcomes of request handling.
_NONE, _FENCED, _CONCURRENT, _INVALID_STATE, _INVALID_MAPPING = range(5)
_ERROR_NAME = ("OK", "PRODUCER_FENCED", "CONCURRENT_TRANSACTIONS", "INVALID_TXN_STATE",
               "INVALID_PRODUCER_ID_MAPPING")
# Outcomes of a produce at the partition.
_ACK, _DUPLICATE, _REJECT, _RETRIABLE = range(4)

_PREPARE = (_S.PrepareCommit, _S.PrepareAbort)
_COMPLETE = (_S.CompleteCommit, _S.CompleteAbort)
# Tables indexed by the enum's value (tuples, not dicts: ``kafkamc prove`` refuses to read a mutable
# global, and indexes a tuple with a symbolic state by enumerating its values).
_RESULT = (None, TxnResult.Commit, TxnResult.Abort)  # TxnResult(value) of a request's result field
_PREPARE_OF = (None, _S.PrepareCommit, _S.PrepareAbort)  # by TxnResult
_COMPLETE_OF = (None, _S.CompleteCommit, _S.CompleteAbort)  # by TxnResult
_MARKER_KIND = (None, EntryKind.Commit, EntryKind.Abort)  # by TxnResult
_RESULT_OF_PREPARE = (None, None, TxnResult.Commit, TxnResult.Abort)  # by TxnState PrepareCommit/PrepareAbort
_COMPLETE_OF_PREPARE = (None, None, _S.CompleteCommit, _S.CompleteAbort)  # by TxnState
_EMPTY: frozenset[int] = frozenset()
_NO_APPEND: tuple[Append, ...] = ()


def _variant(p: Params) -> int:
    return VERSIONS.index(p.version)


def _state(
    s: TransactionsState,
    coordinator: Coordinator | None = None,
    producers: tuple[ProducerInstance, ...] | None = None,
    partitions: tuple[DataPartition, ...] | None = None,
    network: tuple[Request, ...] | None = None,
    delays: int | None = None,
    txns_begun: int | None = None,
    init_instance: int | None = None,
    commits: frozenset[tuple[int, int]] | None = None,
    stale_accepted: bool | None = None,
) -> TransactionsState:
    return TransactionsState(
        s.coordinator if coordinator is None else coordinator,
        s.producers if producers is None else producers,
        s.partitions if partitions is None else partitions,
        s.network if network is None else network,
        s.delays if delays is None else delays,
        s.txns_begun if txns_begun is None else txns_begun,
        s.init_instance if init_instance is None else init_instance,
        s.commits if commits is None else commits,
        s.stale_accepted if stale_accepted is None else stale_accepted,
    )


def _put(t: tuple, i: int, v: object) -> tuple:
    return t[:i] + (v,) + t[i + 1:]


def _write(c: Coordinator, state: TxnState, epoch: int, partitions: frozenset[int],
           pending: frozenset[int], txn: int, end_txn: int | None = None,
           pid: int | None = None) -> Coordinator:
    """A transition whose record is appended and committed in one step (the coordinator answers
    only then): the in-memory metadata and the committed record agree afterwards."""
    return Coordinator(state, False, False, c.pid if pid is None else pid, epoch, partitions, pending,
                       c.coordinator_epoch, state, epoch, _NO_APPEND, txn,
                       c.end_txn if end_txn is None else end_txn)


def _busy(c: Coordinator) -> bool:
    """pendingTransitionInProgress: a fence or an append in flight; requests get CONCURRENT_TRANSACTIONS."""
    return c.fencing or bool(c.appending)


def _prepare(p: Params, c: Coordinator, state: TxnState, epoch: int, partitions: frozenset[int],
             end_txn: int, client: int, fence: bool) -> Coordinator:
    """Move to PrepareCommit/PrepareAbort: append the record, then act (send markers, answer).

    log_append=atomic: one step. replicated: the record is in flight; the coordinator acts when it
    is committed (AppendReplicated), or, with ``markers_after_commit=false``, at once.
    """
    if p.log_append == "atomic":
        return _write(c, state, epoch, partitions, partitions, c.txn, end_txn)
    a = (Append(state, epoch, c.producer_epoch, c.end_txn, client, end_txn, fence),)
    if p.markers_after_commit:
        return Coordinator(c.state, False, c.failed_fence, c.pid, c.producer_epoch, c.partitions, _EMPTY,
                           c.coordinator_epoch, c.log_state, c.log_epoch, a, c.txn, c.end_txn)
    return Coordinator(state, False, c.failed_fence, c.pid, epoch, partitions, partitions,
                       c.coordinator_epoch, c.log_state, c.log_epoch, a, c.txn, end_txn)


def _client(c: ProducerInstance, state: ClientState) -> ProducerInstance:
    return ProducerInstance(state, c.pid, c.epoch, c.txn, c.added, c.sent, c.next_seq)


# -- the coordinator ---------------------------------------------------------------------------

def _add_partitions(c: Coordinator, pid: int, epoch: int, part: int, txn: int) -> tuple[int, Coordinator]:
    """handleAddPartitionsToTransaction (KIP-98); with tv2 the partition leader sends it (KIP-890).

    From CompleteCommit/CompleteAbort with the same epoch it starts a new transaction: under tv1
    two transactions of one producer are indistinguishable by epoch, which KIP-890 is about.
    """
    if pid != c.pid:
        return _INVALID_MAPPING, c
    if epoch != c.producer_epoch:
        return _FENCED, c
    if _busy(c) or c.state in _PREPARE:
        return _CONCURRENT, c
    if c.state == _S.Ongoing:
        if part in c.partitions:
            return _NONE, c
        return _NONE, _write(c, _S.Ongoing, epoch, c.partitions | {part}, _EMPTY, c.txn)
    return _NONE, _write(c, _S.Ongoing, epoch, frozenset((part,)), _EMPTY, txn)


def _verify_partition(c: Coordinator, pid: int, epoch: int, part: int) -> int:
    """handleVerifyPartitionsInTransaction, KIP-890 part 1 (KAFKA-14402): a read-only check."""
    if pid != c.pid:
        return _INVALID_MAPPING
    if epoch != c.producer_epoch:
        return _FENCED
    if c.state in _PREPARE:
        return _CONCURRENT
    return _NONE if part in c.partitions else _INVALID_STATE


def _end_txn(p: Params, c: Coordinator, pid: int, epoch: int, result: TxnResult, txn: int,
             client: int) -> tuple[int, Coordinator | None]:
    """handleEndTransaction from a client: endTransactionWithTV1 or, for tv2, endTransaction.

    Returns (error, new coordinator); the new coordinator is None when the transition would take
    the epoch past ``max_epoch`` (outside the explored bound). With log_append=replicated a
    successful EndTxn from Ongoing returns the coordinator with its Prepare* record in flight.
    """
    st = c.state
    if pid != c.pid:
        return _INVALID_MAPPING, c
    if _variant(p) != _TV2:
        # TV1: strict epoch equality for client requests.
        if epoch != c.producer_epoch:
            return _FENCED, c
        if _busy(c):
            return _CONCURRENT, c
        if st == _S.Ongoing:
            return _NONE, _prepare(p, c, _PREPARE_OF[result], epoch, c.partitions, txn, client, False)
        if st in _COMPLETE:
            return (_NONE if st == _COMPLETE_OF[result] else _INVALID_STATE), c
        if st in _PREPARE:
            return (_CONCURRENT if st == _PREPARE_OF[result] else _INVALID_STATE), c
        return _INVALID_STATE, c
    # TV2 (KIP-890 part 2): a retry carries the epoch before the bump.
    retry = c.producer_epoch == epoch + 1
    if st in _PREPARE:
        valid = retry
    elif st in _COMPLETE:
        valid = retry or epoch == c.producer_epoch
    else:
        valid = epoch == c.producer_epoch
    if not valid:
        return _FENCED, c
    if _busy(c):
        return _CONCURRENT, c
    bumped = c.producer_epoch + 1
    if st == _S.Ongoing:
        if bumped > p.max_epoch:
            return _NONE, None
        return _NONE, _prepare(p, c, _PREPARE_OF[result], bumped, c.partitions, txn, client, False)
    if st in _PREPARE:
        return (_CONCURRENT if st == _PREPARE_OF[result] else _INVALID_STATE), c
    if result == TxnResult.Commit:
        return (_NONE if st == _S.CompleteCommit and retry else _INVALID_STATE), c
    if st == _S.CompleteAbort and retry:
        return _NONE, c
    if st == _S.CompleteCommit and retry:
        return _INVALID_STATE, c
    # Abort with the current epoch from Empty/Complete*: bump, no partitions, no markers.
    if bumped > p.max_epoch:
        return _NONE, None
    return _NONE, _prepare(p, c, _S.PrepareAbort, bumped, _EMPTY, txn, client, False)


# -- the data partition ----------------------------------------------------------------------

def _open_txn(d: DataPartition) -> bool:
    return any(e.txn_first_offset >= 0 for e in d.producers)


def _produce(p: Params, c: Coordinator, d: DataPartition, part: int, pid: int, epoch: int, seq: int,
             txn: int, who: int) -> tuple[int, Coordinator, DataPartition]:
    """A transactional Produce at the partition leader (ProducerAppendInfo.appendDataBatch).

    The producer-epoch check comes first (KAFKA-19690); a transaction that is not yet open on the
    partition is verified (tv1-verify, KIP-890 part 1) or added (tv2, KIP-890 part 2) at the
    coordinator, atomically with the append, which is what the VerificationGuard ensures. With
    ``idempotence`` the sequence number makes a retried batch a duplicate (KIP-98 idempotent
    producer); without it every delivered copy is appended. All checks read the state of the
    batch's own producer id.
    """
    pe = d.producers[pid - 1]
    if epoch < pe.epoch and p.partition_rejects_old_epoch:
        return _REJECT, c, d  # InvalidProducerEpochException (fence 3 of 3)
    variant = _variant(p)
    # UnifiedLog.hasOngoingTransaction: since KIP-890 part 2 only an open transaction of the same
    # epoch skips the coordinator; in 3.6 (tv1-verify) any open transaction of the producer id did.
    ongoing = pe.txn_first_offset >= 0 and (variant != _TV2 or pe.epoch == epoch)
    if not ongoing and variant != _TV1:
        if variant == _TV1_VERIFY:
            err = _verify_partition(c, pid, epoch, part)
        else:
            err, c = _add_partitions(c, pid, epoch, part, txn)
        if err == _CONCURRENT:
            return _RETRIABLE, c, d
        if err != _NONE:
            return _REJECT, c, d
    last_seq = pe.last_seq
    if p.idempotence:
        if epoch == pe.epoch:
            if seq <= last_seq:
                return _DUPLICATE, c, d
            if seq != last_seq + 1:
                return _REJECT, c, d  # OutOfOrderSequenceException
        elif seq != 0 and pe.epoch >= 0:
            return _REJECT, c, d
    log = d.log
    first = pe.txn_first_offset if pe.txn_first_offset >= 0 else len(log)
    entry = Entry(EntryKind.Data, pid, epoch, seq, -1, txn, who, 0, True)
    pe2 = ProducerEntry(epoch, seq, first, pe.coordinator_epoch)
    return _ACK, c, DataPartition(log + (entry,), _put(d.producers, pid - 1, pe2))


def _marker(p: Params, d: DataPartition, pid: int, result: TxnResult, epoch: int, coordinator_epoch: int,
            txn: int, init_instance: int, decided: bool) -> DataPartition | None:
    """ProducerAppendInfo.appendEndTxnMarker; None when the partition rejects the marker.

    TV1 rejects a lower epoch; TV2 (KIP-890 part 2) a not-higher one, except the re-send of a
    marker already written, to a partition with no open transaction (KAFKA-19999). A stale
    coordinator epoch is rejected (TransactionCoordinatorFencedException, KIP-98).
    """
    pe = d.producers[pid - 1]
    if _variant(p) == _TV2:
        if epoch < pe.epoch or (epoch == pe.epoch and pe.txn_first_offset >= 0):
            return None
    elif epoch < pe.epoch:
        return None
    if coordinator_epoch < pe.coordinator_epoch:
        return None
    last_seq = pe.last_seq if epoch == pe.epoch else -1
    pe2 = ProducerEntry(epoch, last_seq, -1, coordinator_epoch)
    producers = _put(d.producers, pid - 1, pe2)
    if pe.txn_first_offset < 0:
        return DataPartition(d.log, producers)
    entry = Entry(_MARKER_KIND[result], pid, epoch, -1, coordinator_epoch, txn, 0, init_instance, decided)
    return DataPartition(d.log + (entry,), producers)


def _with_delayed(s: TransactionsState, req: Request) -> tuple[Request, ...]:
    return tuple(sorted(s.network + (req,)))


def _send_outcomes(p: Params, s: TransactionsState, i: int, part: int, seq: int, verb: str):
    """Deliver a Produce of producer ``i`` now, or time it out (delay it); yields (label, state)."""
    pr = s.producers[i]
    idx = part - 1
    c, d = s.coordinator, s.partitions[idx]
    label = f"{verb}(producer={i + 1}, p{part}, epoch={pr.epoch}, seq={seq}, txn={pr.txn}) -> "
    out, c2, d2 = _produce(p, c, d, part, pr.pid, pr.epoch, seq, pr.txn, i + 1)
    if out != _RETRIABLE:
        if out == _REJECT:
            cl = ProducerInstance(ClientState.AbortableError, pr.pid, pr.epoch, pr.txn, pr.added,
                                  _put(pr.sent, idx, SendState.Failed), pr.next_seq)
            what = "rejected"
        else:
            cl = ProducerInstance(pr.state, pr.pid, pr.epoch, pr.txn, pr.added,
                                  _put(pr.sent, idx, SendState.Acked), pr.next_seq)
            what = "duplicate, acked" if out == _DUPLICATE else "acked"
        yield label + what, _state(
            s, coordinator=c2, producers=_put(s.producers, i, cl),
            partitions=_put(s.partitions, idx, d2),
            stale_accepted=s.stale_accepted or (c2 is not c and i + 1 < s.init_instance),
        )
    if s.delays < p.max_delayed:
        cl = ProducerInstance(pr.state, pr.pid, pr.epoch, pr.txn, pr.added,
                              _put(pr.sent, idx, SendState.TimedOut), pr.next_seq)
        req = Request(RequestKind.Produce, i + 1, part, pr.pid, pr.epoch, seq, 0, 0, pr.txn, True)
        yield label + "delayed", _state(
            s, producers=_put(s.producers, i, cl), network=_with_delayed(s, req), delays=s.delays + 1,
        )


def _answer_end_txn(p: Params, s: TransactionsState, i: int, result: TxnResult, epoch: int) -> TransactionsState:
    """EndTxn returned success to producer ``i``: it is Ready (tv2: with the bumped epoch).

    Before tv2, an abort after an abortable error (a batch failed or timed out) is followed by an
    epoch bump through InitProducerId with the current producer id and epoch (KIP-360, client
    side KAFKA-8805), which restarts the sequence numbers and fences the batches still in flight.
    """
    pr = s.producers[i]
    ready = ClientState.Ready
    if _variant(p) != _TV2:
        epoch = pr.epoch
        if (result == TxnResult.Abort and p.bump_after_abortable
                and any(x == SendState.TimedOut or x == SendState.Failed for x in pr.sent)):
            ready = ClientState.BumpingEpoch
    seqs = pr.next_seq if epoch == pr.epoch else (0,) * p.partitions
    cl = ProducerInstance(ready, pr.pid, epoch, pr.txn, pr.added, pr.sent, seqs)
    commits = s.commits
    if result == TxnResult.Commit:
        # The ghost transaction number as a concrete int (``kafkamc prove`` enumerates its values
        # instead of hashing a symbolic one into the set); the same number when concrete.
        txn = operator.index(pr.txn)
        commits = commits | {(txn, k + 1) for k, x in enumerate(pr.sent) if x == SendState.Acked}
    return _state(s, producers=_put(s.producers, i, cl), commits=commits)


class Transactions(Spec):
    """Kafka exactly-once transactions (KIP-98) with the KIP-890 variants; see the module doc."""

    name = "transactions"
    description = (
        "transaction coordinator, 2PC markers, producer-epoch fencing and read_committed (KIP-98, KIP-890)"
    )
    parameters = (
        Param("producers", 2, "producer instances sharing the transactional.id (restarts/zombies)", min=1, max=3),
        Param("partitions", 2, "data partitions", min=1, max=3),
        Param("max_transactions", 2, "client transactions begun, over all instances", min=1, max=4),
        Param("max_epoch", 3, "highest producer epoch, Kafka's Short.MaxValue: from max_epoch-1 on the epoch "
              "is exhausted and InitProducerId rotates the producer id (KIP-360)", min=1, max=6, lift=True),
        Param("producer_ids", 1, "producer ids the coordinator may allocate (rotation at epoch exhaustion, KIP-360)",
              min=1, max=3),
        Param("max_delayed", 1, "requests (Produce, EndTxn, WriteTxnMarkers) that may be delayed", min=0, max=3),
        Param("coordinator_failover", False, "allow one transaction-coordinator failover"),
        Param("version", "tv2", "tv1 (KIP-98), tv1-verify (KIP-890 part 1), tv2 (KIP-890 part 2)",
              choices=VERSIONS),
        Param("log_append", "atomic", "atomic: a transaction-log append and its answer are one step; "
              "replicated: a Prepare* record is appended, then replicated or failed, then acted on (KIP-98)",
              choices=LOG_APPENDS),
        Param("append_failures", True, "log_append=replicated: an append may fail (NOT_ENOUGH_REPLICAS) and "
              "the transition is dropped (TransactionStateManager.appendTransactionToLog)"),
        Param("markers_after_commit", True, "log_append=replicated: markers wait until the Prepare* record is "
              "committed (KIP-98, TransactionStateManager.appendTransactionToLog; false: sent at once)"),
        Param("failed_fence_keeps_epoch", True, "a fence whose append failed is not bumped again "
              "(KAFKA-9666, hasFailedEpochFence; false: every attempt bumps until the epoch is exhausted)"),
        Param("bump_after_abortable", True, "tv1, tv1-verify: after aborting on an abortable error the client "
              "bumps its epoch through InitProducerId (KIP-360, KAFKA-8805, 2.5; false: older clients)"),
        Param("timeout_bumps_epoch", True, "a timeout abort fences the producer epoch (KAFKA-6119)"),
        Param("idempotence", True, "enable.idempotence: sequence numbers deduplicate retried batches"),
        # The three fences of InitProducerId (KIP-98); false is a mutation, each breaks a property.
        Param("init_bumps_epoch", True,
              "InitProducerId bumps the producer epoch (KIP-98 zombie fencing; false: a mutation)"),
        Param("init_aborts_ongoing", True,
              "InitProducerId aborts an ongoing transaction through PrepareEpochFence "
              "(KIP-98, KAFKA-6119; false: a mutation that drops it)"),
        Param("partition_rejects_old_epoch", True,
              "a partition leader rejects a batch below the producer epoch it has seen "
              "(KIP-98 ProducerAppendInfo, InvalidProducerEpochException; false: a mutation)"),
    )
    invariants = (
        atomicity,
        client_commit_truth,
        zombie_fencing,
        no_hanging_transaction,
        no_cross_transaction_leak,
        read_committed_isolation,
        no_duplicate_append,
        commit_by_own_end_txn,
        valid_coordinator_transitions,
        # Auxiliary invariants for ``kafkamc prove`` (not defaults; each holds under ``check`` too).
        epochs_committed_before_use,
        producers_initialised_before_sending,
        transaction_batches_once,
        producer_state_matches_log,
        timed_out_batches_were_delayed,
        coordinator_state_committed,
        open_batches_in_coordinator_transaction,
        markers_carry_the_decision,
    )
    # One swim lane per producer instance and per data partition in the trace viewer.
    entities = {"producer": ("producers",), "partition": ("partitions",)}
    recoverability = (lso_can_advance, producer_can_write)
    liveness = (init_producer_id_succeeds, open_transaction_closes)
    # Fairness (check -l). Weak: the coordinator finishes what it started: a pending fence is
    # aborted (FenceAbort), the marker channel delivers (WriteTxnMarkers), the transaction is
    # completed (CompleteTransaction), and a transaction that stays Ongoing is aborted by the
    # transaction timer (TimeoutTransaction: transaction.timeout.ms, which only has to fire when
    # the transaction stays Ongoing and the coordinator free for ever); the network delivers what
    # it holds (DeliverDelayed); a client retries InitProducerId after CONCURRENT_TRANSACTIONS and
    # its epoch-bumping InitProducerId (InitProducerId, BumpEpoch; the model answers in the step
    # that sends, so the first call and its retries are one action, and WF also means that each
    # modelled instance does start). Strong: an append retried for ever eventually commits
    # (AppendReplicated: the transaction log's ISR recovers; weak fairness would allow an append
    # that fails every time it is tried). Not fair, nothing forces them: append failures,
    # coordinator failovers, request timeouts (the "delayed" outcomes), and what the application
    # decides: begin, produce, retry a batch, commit or abort.
    weak_fairness = ("InitProducerId", "BumpEpoch", "FenceAbort", "WriteTxnMarkers", "CompleteTransaction",
                     "TimeoutTransaction", "DeliverDelayed")
    strong_fairness = ("AppendReplicated",)
    default_invariants = (
        "atomicity", "client-commit-truth", "zombie-fencing", "no-hanging-transaction",
        "no-cross-transaction-leak", "read-committed-isolation", "no-duplicate-append",
        "commit-by-own-end-txn", "valid-coordinator-transitions",
    )

    def validate_params(self, p: Params) -> None:
        if p.version not in VERSIONS:
            raise UsageError(f"parameter version={p.version!r} is not allowed; allowed: {', '.join(VERSIONS)}")
        if not p.markers_after_commit and p.log_append != "replicated":
            raise UsageError("parameter markers_after_commit=false needs log_append=replicated "
                             "(with atomic appends every record is committed before it is acted on)")

    @staticmethod
    def init_states(p: Params):
        n = p.partitions
        client = ProducerInstance(ClientState.NotStarted, 0, -1, 0, _EMPTY,
                                  (SendState.Unsent,) * n, (0,) * n)
        yield TransactionsState(
            Coordinator(_S.Empty, False, False, 1, -1, _EMPTY, _EMPTY, 1, _S.Empty, -1, _NO_APPEND, 0, 0),
            (client,) * p.producers,
            (DataPartition((), (_NO_ENTRY,) * p.producer_ids),) * n,
            (), 0, 0, 0, frozenset(), False,
        )

    @staticmethod
    def domain(p: Params):
        """TypeOK: epochs up to ``max_epoch`` (liftable: Short.MaxValue), ghost transaction numbers
        and sequence numbers up to ``max_transactions``, a partition log of at most two entries per
        client transaction (its batch and a marker), partition sets symbolic. The logs, the delayed
        requests and the producer ids are shapes, so those bounds stay concrete."""
        parts = ty.Set(range(1, p.partitions + 1))
        txns = p.max_transactions
        txn = ty.Int(0, txns)
        epoch = ty.Int(-1, p.max_epoch)
        coordinator_epoch = ty.Int(-1, 2)
        entry = ty.Record(
            Entry, kind=ty.Enum(EntryKind), pid=ty.Int(1, p.producer_ids), epoch=epoch, seq=ty.Int(-1, txns),
            coordinator_epoch=coordinator_epoch, txn=txn, producer=ty.Int(0, p.producers),
            init_instance=ty.Int(0, p.producers), decided=ty.Bool())
        producer_entry = ty.Record(
            ProducerEntry, epoch=epoch, last_seq=ty.Int(-1, txns), txn_first_offset=ty.Int(-1, 2 * txns - 1),
            coordinator_epoch=coordinator_epoch)
        request = ty.Record(
            Request, kind=ty.Enum(RequestKind), producer=ty.Int(0, p.producers), partition=ty.Int(0, p.partitions),
            pid=ty.Int(0, p.producer_ids), epoch=epoch, seq=ty.Int(0, txns), result=ty.Int(0, 2),
            coordinator_epoch=ty.Int(0, 2), txn=txn, decided=ty.Bool())
        append = ty.Record(
            Append, state=ty.Enum(TxnState), epoch=epoch, prior_epoch=epoch, prior_end_txn=txn,
            client=ty.Int(0, p.producers), txn=txn, fence=ty.Bool())
        return ty.Record(
            TransactionsState,
            coordinator=ty.Record(
                Coordinator, state=ty.Enum(TxnState), fencing=ty.Bool(), failed_fence=ty.Bool(),
                pid=ty.Int(1, p.producer_ids), producer_epoch=epoch, partitions=parts, pending_markers=parts,
                coordinator_epoch=ty.Int(1, 2), log_state=ty.Enum(TxnState), log_epoch=epoch,
                appending=ty.Bag(append, 1, sorted=False) if p.log_append == "replicated" else ty.Const(()),
                txn=txn, end_txn=txn),
            producers=ty.Tuple(ty.Record(
                ProducerInstance, state=ty.Enum(ClientState), pid=ty.Int(0, p.producer_ids), epoch=epoch, txn=txn,
                added=parts, sent=ty.Tuple(ty.Enum(SendState), p.partitions),
                next_seq=ty.Tuple(ty.Int(0, txns), p.partitions)), p.producers),
            partitions=ty.Tuple(ty.Record(
                DataPartition, log=ty.Bag(entry, 2 * txns, sorted=False),
                producers=ty.Tuple(producer_entry, p.producer_ids)), p.partitions),
            network=ty.Bag(request, p.max_delayed),
            delays=ty.Int(0, p.max_delayed),
            txns_begun=txn,
            init_instance=ty.Int(0, p.producers),
            commits=ty.Set((t, q) for t in range(1, txns + 1) for q in range(1, p.partitions + 1)),
            stale_accepted=ty.Bool(),
        )

    # -- clients ---------------------------------------------------------------------------------

    @action
    def InitProducerId(p: Params, s: TransactionsState):
        """InitProducerId (KIP-98): bump the epoch; an Ongoing transaction is first fenced.

        From Ongoing the coordinator enters PrepareEpochFence with a bumped epoch and answers
        CONCURRENT_TRANSACTIONS; the abort follows (FenceAbort) and the client retries. After a
        fence whose append failed the epoch is not bumped again (KAFKA-9666); a fence past
        ``max_epoch`` is impossible (Kafka throws at Short.MaxValue). From Empty/Complete* with an
        exhausted epoch (>= max_epoch-1) the coordinator rotates to a new producer id at epoch 0
        (prepareProducerIdRotation, KIP-360), within ``producer_ids``.
        """
        c = s.coordinator
        for i, pr in enumerate(s.producers):
            if pr.state != ClientState.NotStarted or (i > 0 and s.producers[i - 1].state == ClientState.NotStarted):
                continue
            if _busy(c) or c.state in _PREPARE:
                continue
            # Fence 1 of 3: the bump. Mutated, only the first InitProducerId assigns an epoch.
            bump = p.init_bumps_epoch or c.producer_epoch < 0
            if c.state == _S.Ongoing and p.init_aborts_ongoing:
                e = c.producer_epoch + 1 if bump and not c.failed_fence else c.producer_epoch
                if e > p.max_epoch:
                    continue
                fenced = Coordinator(c.state, True, c.failed_fence, c.pid, e, c.partitions, _EMPTY,
                                     c.coordinator_epoch, c.log_state, c.log_epoch, _NO_APPEND, c.txn, c.end_txn)
                yield f"InitProducerId(producer={i + 1}) -> CONCURRENT_TRANSACTIONS, fence epoch {e}", \
                    _state(s, coordinator=fenced)
                continue
            # Fence 2 of 3 mutated (init_aborts_ongoing=false): the ongoing transaction is dropped,
            # not aborted; no marker will ever close what it wrote.
            pid = c.pid
            if bump and c.producer_epoch >= p.max_epoch - 1:
                if c.pid >= p.producer_ids:
                    continue
                pid, e = c.pid + 1, 0
            else:
                e = c.producer_epoch + 1 if bump else c.producer_epoch
            c2 = _write(c, _S.Empty, e, _EMPTY, _EMPTY, c.txn, pid=pid)
            n = p.partitions
            cl = ProducerInstance(ClientState.Ready, pid, e, 0, _EMPTY, (SendState.Unsent,) * n, (0,) * n)
            what = f"producer id {pid}, epoch {e}" if pid != c.pid else f"epoch {e}"
            yield f"InitProducerId(producer={i + 1}) -> {what}", _state(
                s, coordinator=c2, producers=_put(s.producers, i, cl), init_instance=i + 1,
            )

    @action
    def BumpEpoch(p: Params, s: TransactionsState):
        """InitProducerId(transactional.id, producer id, epoch) after an aborted transaction with an
        abortable error (KIP-360, KAFKA-8805): the coordinator bumps the epoch (or rotates the
        producer id when it is exhausted) if the expected id and epoch are current, and fences the
        client otherwise (PRODUCER_FENCED)."""
        c = s.coordinator
        for i, pr in enumerate(s.producers):
            if pr.state != ClientState.BumpingEpoch or _busy(c) or c.state in _PREPARE:
                continue
            label = f"BumpEpoch(producer={i + 1}, epoch={pr.epoch})"
            if pr.pid != c.pid or pr.epoch != c.producer_epoch or c.state == _S.Ongoing:
                yield f"{label} -> PRODUCER_FENCED", _state(
                    s, producers=_put(s.producers, i, _client(pr, ClientState.FatalError)))
                continue
            pid, e = c.pid, c.producer_epoch + 1
            if c.producer_epoch >= p.max_epoch - 1:
                if c.pid >= p.producer_ids:
                    continue
                pid, e = c.pid + 1, 0
            c2 = _write(c, _S.Empty, e, _EMPTY, _EMPTY, c.txn, pid=pid)
            n = p.partitions
            cl = ProducerInstance(ClientState.Ready, pid, e, pr.txn, _EMPTY, (SendState.Unsent,) * n, (0,) * n)
            yield f"{label} -> producer id {pid}, epoch {e}", _state(
                s, coordinator=c2, producers=_put(s.producers, i, cl),
                stale_accepted=s.stale_accepted or i + 1 < s.init_instance,
            )

    @action
    def BeginTransaction(p: Params, s: TransactionsState):
        """beginTransaction(): local to the client; numbers the client transaction (ghost)."""
        if s.txns_begun >= p.max_transactions:
            return
        n = p.partitions
        t = s.txns_begun + 1
        for i, pr in enumerate(s.producers):
            if pr.state == ClientState.Ready:
                cl = ProducerInstance(ClientState.InTransaction, pr.pid, pr.epoch, t, _EMPTY,
                                      (SendState.Unsent,) * n, pr.next_seq)
                yield f"BeginTransaction(producer={i + 1}, txn={t})", _state(
                    s, producers=_put(s.producers, i, cl), txns_begun=t,
                )

    @action
    def AddPartitionsToTxn(p: Params, s: TransactionsState):
        """AddPartitionsToTxn from the client (KIP-98); tv2 has none (KIP-890 part 2, KAFKA-14563)."""
        if _variant(p) == _TV2:
            return
        c = s.coordinator
        for i, pr in enumerate(s.producers):
            if pr.state != ClientState.InTransaction:
                continue
            for part in range(1, p.partitions + 1):
                if part in pr.added:
                    continue
                err, c2 = _add_partitions(c, pr.pid, pr.epoch, part, pr.txn)
                if err == _CONCURRENT:
                    continue
                label = f"AddPartitionsToTxn(producer={i + 1}, p{part}, epoch={pr.epoch})"
                if err != _NONE:
                    yield f"{label} -> {_ERROR_NAME[err]}", \
                        _state(s, producers=_put(s.producers, i, _client(pr, ClientState.FatalError)))
                    continue
                cl = ProducerInstance(pr.state, pr.pid, pr.epoch, pr.txn, pr.added | {part}, pr.sent, pr.next_seq)
                yield label, _state(
                    s, coordinator=c2, producers=_put(s.producers, i, cl),
                    stale_accepted=s.stale_accepted or i + 1 < s.init_instance,
                )

    @action
    def Produce(p: Params, s: TransactionsState):
        """Send one transactional batch to a partition (tv1: only to an added partition)."""
        tv2 = _variant(p) == _TV2
        for i, pr in enumerate(s.producers):
            if pr.state != ClientState.InTransaction:
                continue
            for part in range(1, p.partitions + 1):
                idx = part - 1
                if pr.sent[idx] != SendState.Unsent or not (tv2 or part in pr.added):
                    continue
                seq = pr.next_seq[idx]
                s1 = _state(s, producers=_put(s.producers, i, ProducerInstance(
                    pr.state, pr.pid, pr.epoch, pr.txn, pr.added, pr.sent, _put(pr.next_seq, idx, seq + 1))))
                yield from _send_outcomes(p, s1, i, part, seq, "Produce")

    @action
    def RetryProduce(p: Params, s: TransactionsState):
        """Resend a timed-out batch, same sequence number (KIP-98 idempotent producer retries)."""
        for i, pr in enumerate(s.producers):
            if pr.state != ClientState.InTransaction:
                continue
            for part in range(1, p.partitions + 1):
                if pr.sent[part - 1] != SendState.TimedOut:
                    continue
                seq = pr.next_seq[part - 1] - 1
                yield from _send_outcomes(p, s, i, part, seq, "RetryProduce")

    @action
    def EndTxn(p: Params, s: TransactionsState):
        """commitTransaction()/abortTransaction(): EndTxn to the coordinator (KIP-98, KIP-890).

        Commit needs every batch of the transaction acknowledged (the client flushes first). A
        transaction with nothing to end (tv1: no partition added; tv2: nothing sent) ends in the
        client alone. Under tv2 a successful EndTxn returns the bumped epoch, and the client
        restarts its sequence numbers. With log_append=replicated the answer waits for the
        Prepare* record to be committed (AppendReplicated); the client waits in Committing/Aborting.
        """
        tv2 = _variant(p) == _TV2
        c = s.coordinator
        for i, pr in enumerate(s.producers):
            st = pr.state
            if st == ClientState.InTransaction:
                results = (TxnResult.Commit, TxnResult.Abort)
                if any(x == SendState.TimedOut or x == SendState.Failed for x in pr.sent):
                    results = (TxnResult.Abort,)
            elif st == ClientState.AbortableError or st == ClientState.Aborting:
                results = (TxnResult.Abort,)
            elif st == ClientState.Committing:
                results = (TxnResult.Commit,)
            else:
                continue
            started = any(x != SendState.Unsent for x in pr.sent) if tv2 else bool(pr.added)
            for result in results:
                word = "COMMIT" if result == TxnResult.Commit else "ABORT"
                if not started and st in (ClientState.InTransaction, ClientState.AbortableError):
                    yield f"EndTxn(producer={i + 1}, {word}) -> local, nothing to end", _state(
                        s, producers=_put(s.producers, i, _client(pr, ClientState.Ready)),
                    )
                    continue
                label = f"EndTxn(producer={i + 1}, {word}, epoch={pr.epoch}, txn={pr.txn})"
                nxt = ClientState.Committing if result == TxnResult.Commit else ClientState.Aborting
                err, c2 = _end_txn(p, c, pr.pid, pr.epoch, result, pr.txn, i + 1)
                if c2 is not None and err != _CONCURRENT:
                    stale = s.stale_accepted or i + 1 < s.init_instance
                    if err == _NONE and c2.appending and not c.appending:
                        yield f"{label} -> appending {c2.appending[0].state.name}", _state(
                            s, coordinator=c2, producers=_put(s.producers, i, _client(pr, nxt)),
                            stale_accepted=stale,
                        )
                    elif err == _NONE:
                        s2 = _answer_end_txn(p, s, i, result, c2.producer_epoch)
                        yield f"{label} -> OK", _state(s2, coordinator=c2, stale_accepted=stale)
                    else:
                        yield f"{label} -> {_ERROR_NAME[err]}", _state(
                            s, producers=_put(s.producers, i, _client(pr, ClientState.FatalError)),
                        )
                if s.delays < p.max_delayed:
                    req = Request(RequestKind.EndTxn, i + 1, 0, pr.pid, pr.epoch, 0, int(result), 0, pr.txn, True)
                    yield f"{label} -> delayed", _state(
                        s, producers=_put(s.producers, i, _client(pr, nxt)),
                        network=_with_delayed(s, req), delays=s.delays + 1,
                    )

    # -- the coordinator ---------------------------------------------------------------------------

    @action
    def FenceAbort(p: Params, s: TransactionsState):
        """PrepareEpochFence -> PrepareAbort: endTransaction(ABORT, isFromClient=false) (KAFKA-6119).

        The fenced epoch is written once; the second TV2 bump of KAFKA-19367 is not modelled.
        """
        c = s.coordinator
        if c.fencing:
            c2 = _prepare(p, c, _S.PrepareAbort, c.producer_epoch, c.partitions, 0, 0, True)
            yield f"FenceAbort(epoch={c.producer_epoch})", _state(s, coordinator=c2)

    @action
    def TimeoutTransaction(p: Params, s: TransactionsState):
        """abortTimedOutTransactions: abort an Ongoing transaction that timed out.

        Since KAFKA-6119 (1.1) through PrepareEpochFence, with an epoch bump that fences the
        producer (none after a failed fence, KAFKA-9666). Before it, tv1 wrote PrepareAbort with
        the same epoch; tv2 bumps on every abort anyway (KIP-890 part 2).
        """
        c = s.coordinator
        if c.state != _S.Ongoing or _busy(c):
            return
        if p.timeout_bumps_epoch:
            e = c.producer_epoch if c.failed_fence else c.producer_epoch + 1
            if e <= p.max_epoch:
                c2 = Coordinator(c.state, True, c.failed_fence, c.pid, e, c.partitions, _EMPTY,
                                 c.coordinator_epoch, c.log_state, c.log_epoch, _NO_APPEND, c.txn, c.end_txn)
                yield f"TimeoutTransaction(fence epoch {e})", _state(s, coordinator=c2)
            return
        e = c.producer_epoch + 1 if _variant(p) == _TV2 else c.producer_epoch
        if e <= p.max_epoch:
            c2 = _prepare(p, c, _S.PrepareAbort, e, c.partitions, 0, 0, False)
            yield f"TimeoutTransaction(abort, epoch={e})", _state(s, coordinator=c2)

    @action
    def AppendReplicated(p: Params, s: TransactionsState):
        """The Prepare* record in flight is committed (replicated to the ISR): the coordinator
        completes the transition, answers the waiting EndTxn and starts the markers
        (TransactionStateManager.appendTransactionToLog's callback, KIP-98)."""
        c = s.coordinator
        if not c.appending:
            return
        a = c.appending[0]
        c2 = Coordinator(a.state, False, False, c.pid, a.epoch, c.partitions,
                         c.pending_markers if not p.markers_after_commit else c.partitions,
                         c.coordinator_epoch, a.state, a.epoch, _NO_APPEND, c.txn, a.txn)
        s2 = s
        k = a.client - 1
        if k >= 0:
            pr = s.producers[k]
            result = _RESULT_OF_PREPARE[a.state]
            waiting = ClientState.Committing if result == TxnResult.Commit else ClientState.Aborting
            if pr.state == waiting and pr.txn == a.txn:
                s2 = _answer_end_txn(p, s, k, result, a.epoch)
        yield f"AppendReplicated({a.state.name}, epoch={a.epoch})", _state(s2, coordinator=c2)

    @action
    def AppendFailed(p: Params, s: TransactionsState):
        """The append of the Prepare* record fails (NOT_ENOUGH_REPLICAS, a timeout): the pending
        transition is dropped and the waiting client gets a retriable error and retries.

        A failed fence keeps its bumped epoch in memory (never returned to a client); since
        KAFKA-9666 it marks hasFailedEpochFence so that the next fence does not bump again. A
        coordinator that acted early (markers_after_commit=false) returns to the committed state,
        but the markers it sent stay written.
        """
        c = s.coordinator
        if not c.appending or not p.append_failures:
            return
        a = c.appending[0]
        failed = c.failed_fence or (a.fence and p.failed_fence_keeps_epoch)
        if p.markers_after_commit:
            c2 = Coordinator(c.state, False, failed, c.pid, c.producer_epoch, c.partitions, _EMPTY,
                             c.coordinator_epoch, c.log_state, c.log_epoch, _NO_APPEND, c.txn, c.end_txn)
        else:
            c2 = Coordinator(c.log_state, False, failed, c.pid, a.prior_epoch, c.partitions, _EMPTY,
                             c.coordinator_epoch, c.log_state, c.log_epoch, _NO_APPEND, c.txn, a.prior_end_txn)
        yield f"AppendFailed({a.state.name}, epoch={a.epoch})", _state(s, coordinator=c2)

    @action
    def WriteTxnMarkers(p: Params, s: TransactionsState):
        """The marker channel sends the prepared result to one partition (KIP-98).

        A rejected marker (fenced epoch or coordinator epoch) stops the coordinator's progress
        for that partition, as TransactionMarkerRequestCompletionHandler stops retrying it.
        """
        c = s.coordinator
        if c.state not in _PREPARE or not c.pending_markers:
            return
        result = _RESULT_OF_PREPARE[c.state]
        word = "COMMIT" if result == TxnResult.Commit else "ABORT"
        decided = c.log_state == c.state
        for part in sorted(c.pending_markers):
            idx = part - 1
            label = f"WriteTxnMarkers(p{part}, {word}, epoch={c.producer_epoch}, coordinator_epoch={c.coordinator_epoch})"
            d2 = _marker(p, s.partitions[idx], c.pid, result, c.producer_epoch, c.coordinator_epoch, c.txn,
                         s.init_instance, decided)
            if d2 is not None:
                c2 = Coordinator(c.state, c.fencing, c.failed_fence, c.pid, c.producer_epoch, c.partitions,
                                 c.pending_markers - {part}, c.coordinator_epoch, c.log_state, c.log_epoch,
                                 c.appending, c.txn, c.end_txn)
                yield label, _state(s, coordinator=c2, partitions=_put(s.partitions, idx, d2))
            if s.delays < p.max_delayed:
                req = Request(RequestKind.WriteTxnMarkers, 0, part, c.pid, c.producer_epoch, 0, int(result),
                              c.coordinator_epoch, c.txn, decided)
                yield f"{label} -> delayed", _state(s, network=_with_delayed(s, req), delays=s.delays + 1)

    @action
    def CompleteTransaction(p: Params, s: TransactionsState):
        """Every marker acknowledged: write CompleteCommit/CompleteAbort (prepareComplete).

        The Complete* record follows the Prepare* record in the log, so it waits for that one.
        """
        c = s.coordinator
        if c.state in _PREPARE and not c.pending_markers and not c.appending:
            c2 = _write(c, _COMPLETE_OF_PREPARE[c.state], c.producer_epoch, _EMPTY, _EMPTY, c.txn)
            yield f"CompleteTransaction({c2.state.name})", _state(s, coordinator=c2)

    @action
    def CoordinatorFailover(p: Params, s: TransactionsState):
        """A new leader of the transaction-log partition loads the log (onElection, KIP-98).

        Its coordinator epoch is the new leader epoch; it loads the last committed record, so a
        pending PrepareEpochFence and an epoch bumped by a failed fence are lost; Prepare*
        transactions have all their markers re-sent. A Prepare* record still in flight is either
        lost (it had not reached the new leader) or kept (it had, and is committed by it).
        """
        c = s.coordinator
        if not p.coordinator_failover or c.coordinator_epoch >= 2:
            return
        ce = c.coordinator_epoch + 1
        end_txn = c.appending[0].prior_end_txn if c.appending and not p.markers_after_commit else c.end_txn
        pending = c.partitions if c.log_state in _PREPARE else _EMPTY
        c2 = Coordinator(c.log_state, False, False, c.pid, c.log_epoch, c.partitions, pending, ce,
                         c.log_state, c.log_epoch, _NO_APPEND, c.txn, end_txn)
        yield f"CoordinatorFailover(coordinator_epoch={ce})", _state(s, coordinator=c2)
        if c.appending:
            a = c.appending[0]
            c3 = Coordinator(a.state, False, False, c.pid, a.epoch, c.partitions, c.partitions, ce,
                             a.state, a.epoch, _NO_APPEND, c.txn, a.txn)
            yield f"CoordinatorFailover(coordinator_epoch={ce}, keeps {a.state.name})", _state(s, coordinator=c3)

    # -- the network -----------------------------------------------------------------------------

    @action
    def DeliverDelayed(p: Params, s: TransactionsState):
        """A delayed request finally arrives; its response finds nobody waiting (KIP-890's cases)."""
        net = s.network
        for k, req in enumerate(net):
            if k > 0 and net[k - 1] == req:
                continue
            rest = net[:k] + net[k + 1:]
            kind = req.kind
            if kind == RequestKind.Produce:
                idx = req.partition - 1
                c = s.coordinator
                out, c2, d2 = _produce(p, c, s.partitions[idx], req.partition, req.pid, req.epoch, req.seq,
                                       req.txn, req.producer)
                what = ("acked", "duplicate", "rejected", "retriable error")[out]
                yield (f"DeliverDelayed(Produce(producer={req.producer}, p{req.partition}, epoch={req.epoch}, "
                       f"seq={req.seq}, txn={req.txn}) -> {what})"), _state(
                    s, coordinator=c2, partitions=_put(s.partitions, idx, d2), network=rest,
                    stale_accepted=s.stale_accepted or (c2 is not s.coordinator and req.producer < s.init_instance),
                )
            elif kind == RequestKind.EndTxn:
                result = _RESULT[req.result]
                word = "COMMIT" if result == TxnResult.Commit else "ABORT"
                err, c2 = _end_txn(p, s.coordinator, req.pid, req.epoch, result, req.txn, 0)
                if c2 is None:
                    continue
                yield (f"DeliverDelayed(EndTxn(producer={req.producer}, {word}, epoch={req.epoch}, "
                       f"txn={req.txn}) -> {_ERROR_NAME[err]})"), _state(
                    s, coordinator=c2, network=rest,
                    stale_accepted=s.stale_accepted or (err == _NONE and req.producer < s.init_instance),
                )
            else:
                result = _RESULT[req.result]
                word = "COMMIT" if result == TxnResult.Commit else "ABORT"
                idx = req.partition - 1
                d2 = _marker(p, s.partitions[idx], req.pid, result, req.epoch, req.coordinator_epoch, req.txn,
                             s.init_instance, req.decided)
                label = (f"DeliverDelayed(WriteTxnMarkers(p{req.partition}, {word}, epoch={req.epoch}, "
                         f"coordinator_epoch={req.coordinator_epoch}, txn={req.txn})")
                if d2 is None:
                    yield f"{label} -> rejected)", _state(s, network=rest)
                else:
                    yield f"{label})", _state(s, partitions=_put(s.partitions, idx, d2), network=rest)
