"""Invariants of the ``transactions`` spec (Kafka exactly-once transactions, KIP-98 and KIP-890).

They read the data partitions' logs together with ghost fields the model keeps and Kafka does
not: each data batch remembers the client transaction it was sent in and the producer instance
that sent it, each marker the client transaction that opened the coordinator transaction it
ends and the highest epoch InitProducerId had returned when it was written. A data batch belongs
to the partition transaction that the next marker of its producer id closes: a partition keeps
producer state per producer id, and after a rotation (KIP-360) two ids share a log.
"""

from __future__ import annotations

from kafkamc.invariants.api import action_property, invariant
from kafkamc.invariants.temporal import leads_to, liveness

__all__ = [
    "atomicity", "client_commit_truth", "zombie_fencing", "no_hanging_transaction",
    "no_cross_transaction_leak", "read_committed_isolation", "valid_coordinator_transitions",
    "no_duplicate_append", "commit_by_own_end_txn", "init_producer_id_succeeds",
    "producer_awaits_epoch", "every_producer_has_epoch", "open_transaction_closes", "transaction_open",
    "no_transaction_open",
    "epochs_committed_before_use",
    "producers_initialised_before_sending",
    "transaction_batches_once",
    "producer_state_matches_log",
    "timed_out_batches_were_delayed",
    "coordinator_state_committed",
    "open_batches_in_coordinator_transaction",
    "markers_carry_the_decision",
]

# EntryKind and TxnState values of kafkamc.spec.transactions (IntEnums compare equal to ints;
# importing the spec module here would be circular).
_DATA, _COMMIT, _ABORT = 0, 1, 2
_EMPTY, _ONGOING, _PREPARE_COMMIT, _PREPARE_ABORT, _COMPLETE_COMMIT, _COMPLETE_ABORT = 0, 1, 2, 3, 4, 5
_NOT_STARTED = 0  # kafkamc.spec.transactions.ClientState.NotStarted
_READY, _FATAL_ERROR = 1, 6  # ClientState.Ready, ClientState.FatalError
_UNSENT, _TIMED_OUT = 0, 2  # kafkamc.spec.transactions.SendState.Unsent, TimedOut
_IN_TRANSACTION = 2  # ClientState.InTransaction


def _closing_markers(log):
    """For each offset, the marker entry of the same producer id that closes it (None for a data
    batch still open, and for a marker).

    A scan forward from each batch rather than a dict keyed by producer id, so that ``kafkamc
    prove`` can run it on a log of symbolic producer ids (a symbolic value is never hashed)."""
    out = []
    for k, entry in enumerate(log):
        marker = None
        if entry.kind == _DATA:
            for later in log[k + 1:]:
                if later.kind != _DATA and later.pid == entry.pid:
                    marker = later
                    break
        out.append(marker)
    return out


@invariant("atomicity", "no client transaction has a batch committed on one partition and one aborted on another")
def atomicity(p, s) -> bool:
    """KIP-98 atomic multi-partition writes: a transaction's batches share one outcome."""
    closed = [(entry.txn, marker.kind) for d in s.partitions
              for entry, marker in zip(d.log, _closing_markers(d.log)) if marker is not None]
    # Pairwise rather than a dict keyed by transaction, for ``kafkamc prove`` (see above).
    return not any((txn == other) & (kind != other_kind)
                   for k, (txn, kind) in enumerate(closed) for other, other_kind in closed[k + 1:])


@invariant("client-commit-truth", "if EndTxn(COMMIT) returned success, every batch acked in that transaction is committed")
def client_commit_truth(p, s) -> bool:
    """An acknowledged batch of a transaction whose commit succeeded is in the log and not aborted.

    Committed in safety form: its markers may still be on their way, but no ABORT closes it.
    KAFKA-6119 (fixed in 1.1) broke this: a timed-out transaction was aborted without an epoch
    bump, the producer carried on in a new coordinator transaction and its commit succeeded.
    """
    for txn, part in s.commits:
        log = s.partitions[part - 1].log
        found = False
        for entry, marker in zip(log, _closing_markers(log)):
            if entry.kind == _DATA and entry.txn == txn:
                found = True
                if marker is not None and marker.kind == _ABORT:
                    return False
        if not found:
            return False
    return True


@invariant("zombie-fencing", "once a newer producer instance got its epoch, nothing an older one sent is committed or accepted by the coordinator")
def zombie_fencing(p, s) -> bool:
    """KIP-98 zombie fencing: InitProducerId of a new instance fences every older one (a zombie).

    No COMMIT marker written after InitProducerId answered instance k closes a batch sent by an
    instance older than k, and the coordinator accepted no AddPartitionsToTxn/EndTxn (nor an
    implicit add, tv2) from an instance older than the newest initialised one. The claim is about
    instances, not epochs, so a variant that hands out the same epoch twice can break it.
    """
    if s.stale_accepted:
        return False
    for d in s.partitions:
        log = d.log
        if not log:
            continue
        for entry, marker in zip(log, _closing_markers(log)):
            if marker is not None and marker.kind == _COMMIT and entry.producer < marker.init_instance:
                return False
    return True


@invariant("no-hanging-transaction", "every transaction open on a partition is an Ongoing/Prepare* coordinator transaction of its epoch that includes the partition")
def no_hanging_transaction(p, s) -> bool:
    """KIP-890's hanging transaction (KAFKA-14402), in safety form.

    A transaction open on a partition must belong to the coordinator's transaction (its producer
    id, which rotates, KIP-360): Ongoing (the partition added, the epoch of the Ongoing record; a
    fence in progress or failed bumps only the in-memory epoch), or Prepare* with the partition's
    marker still to be written with an epoch the partition will accept. Otherwise nothing will
    ever write its marker and the LSO is stuck.
    """
    c = s.coordinator
    state = c.state
    epoch = c.producer_epoch
    for part, d in enumerate(s.partitions, start=1):
        for pid, pe in enumerate(d.producers, start=1):
            first = pe.txn_first_offset
            if first < 0:
                continue
            if pid != c.pid:
                return False
            epochs = {entry.epoch for entry in d.log[first:] if entry.pid == pid}
            if state == _ONGOING:
                # The epoch of the Ongoing record: a fence (pending, in flight or failed) has
                # bumped only the in-memory epoch.
                ok = part in c.partitions and epochs == {c.log_epoch}
            elif state == _PREPARE_COMMIT or state == _PREPARE_ABORT:
                # Its marker is still to be written, with an epoch the partition accepts: not below
                # the transaction's (tv2: above it, KIP-890 part 2). After failed fences that kept
                # bumping (KAFKA-9666) the marker's epoch may be several above.
                top = max(epochs)
                ok = part in c.pending_markers and (top < epoch if p.version == "tv2" else top <= epoch)
            else:
                ok = False
            if not ok:
                return False
    return True


@invariant("no-cross-transaction-leak", "a batch sent in one client transaction never becomes part of another")
def no_cross_transaction_leak(p, s) -> bool:
    """KIP-890 case 2: a delayed batch of an aborted transaction joins the next one.

    Every partition transaction (a run of batches up to the marker that closes it, or still open)
    holds batches of one client transaction only, and its marker ends that client transaction's
    coordinator transaction. This also catches a delayed marker of an earlier transaction closing
    a later one (KIP-890's delayed EndTxn marker).
    """
    for d in s.partitions:
        current = {}
        for entry in d.log:
            now = current.get(entry.pid, 0)
            if entry.kind == _DATA:
                if now == 0:
                    current[entry.pid] = entry.txn
                elif entry.txn != now:
                    return False
            else:
                if now != 0 and entry.txn != now:
                    return False
                current[entry.pid] = 0
    return True


@invariant("read-committed-isolation", "a read_committed consumer reads only batches whose commit the coordinator has durably decided, and never past the LSO")
def read_committed_isolation(p, s) -> bool:
    """KIP-98 read_committed: the fetch is bounded by the LSO and aborted ranges are filtered.

    The LSO is the first offset of the earliest open transaction of any producer id, at most the
    high watermark; the consumer drops the ranges of the aborted-transaction index. Every batch
    it then returns must be closed by a COMMIT marker that the coordinator sent after its
    PrepareCommit record was committed in the transaction log: a commit that a coordinator
    failover or a failed append can still undo must not be visible (markers_after_commit=false
    breaks this).
    """
    for d in s.partitions:
        log = d.log
        hw = len(log)
        lso = hw
        for pe in d.producers:
            if 0 <= pe.txn_first_offset < lso:
                lso = pe.txn_first_offset
        closing = _closing_markers(log)
        for k in range(lso):
            entry = log[k]
            if entry.kind != _DATA:
                continue
            marker = closing[k]
            if marker is None:
                return False  # an open transaction below the LSO
            if marker.kind == _ABORT:
                continue  # in the aborted-transaction index: filtered
            if not marker.decided:
                return False
    return True


@invariant("commit-by-own-end-txn", "a transaction commits only if its own client sent EndTxn(COMMIT) for it")
def commit_by_own_end_txn(p, s) -> bool:
    """KIP-890's delayed EndTxn: the coordinator decides to commit a transaction only on an
    EndTxn(COMMIT) that its own client sent in that transaction.

    Under tv1 an EndTxn(COMMIT) of transaction 1 that is delayed (the client retried and
    succeeded) can arrive while transaction 2 of the same epoch is Ongoing, and commits it
    although its client is still producing. KIP-890 part 2's per-transaction epoch rejects it.
    """
    c = s.coordinator
    if c.state == _PREPARE_COMMIT or c.state == _COMPLETE_COMMIT:
        return c.end_txn == c.txn
    return True


@invariant("no-duplicate-append", "no data batch is appended twice to a partition")
def no_duplicate_append(p, s) -> bool:
    """The idempotent producer (KIP-98): a retried batch carries the same sequence number and the
    partition appends it at most once; without enable.idempotence a retry can duplicate it."""
    for d in s.partitions:
        seen = set()
        for entry in d.log:
            if entry.kind == _DATA:
                key = (entry.txn, entry.producer)
                if key in seen:
                    return False
                seen.add(key)
    return True


@action_property("valid-coordinator-transitions", "every record the transaction log gains follows TransactionMetadata's table of valid previous states")
def valid_coordinator_transitions(p, s, label, t) -> bool:
    """TransactionMetadata.validPreviousStates (KIP-98), with TV2's extra PrepareAbort sources,
    checked on the committed transaction-log records (what a new coordinator would load).

    The in-memory PrepareEpochFence (KAFKA-6119) is never written. A coordinator failover loads
    the log, so only the records matter; a variant that writes a record the table forbids (an
    InitProducerId that drops an Ongoing transaction: Ongoing -> Empty) breaks this.
    """
    from kafkamc.spec.transactions import VALID_PREVIOUS, VALID_PREVIOUS_TV2

    a, b = s.coordinator, t.coordinator
    if a.log_state == b.log_state and a.log_epoch == b.log_epoch and a.pid == b.pid:
        if a.partitions == b.partitions or b.log_state != _ONGOING:
            return True
    table = VALID_PREVIOUS_TV2 if p.version == "tv2" else VALID_PREVIOUS
    return a.log_state in table[b.log_state]


@invariant("epochs-committed-before-use", "no producer instance, delayed request, log entry or partition producer state of the coordinator's producer id carries an epoch above its last committed transaction-log record's")
def epochs_committed_before_use(p, s) -> bool:
    """Producer-epoch fencing rests on this: the coordinator hands out an epoch (InitProducerId,
    a TV2 EndTxn) and writes markers with it only once the transaction-log record carrying it is
    committed; a bump held only in memory (a pending PrepareEpochFence, KAFKA-6119) reaches nobody.
    So every epoch a client, a batch or a marker uses is at most ``log_epoch``, and a coordinator
    that fails over and loads the log never meets an epoch above the one it loaded. An auxiliary
    invariant for ``kafkamc prove`` (docs/prove.md)."""
    c = s.coordinator
    pid = c.pid
    top = c.log_epoch
    # ``&`` rather than ``and``: "of this producer id and above" is one condition per holder, so
    # ``kafkamc prove`` turns each holder into one term instead of forking on its producer id.
    return (c.producer_epoch >= top
            and not any((pr.pid == pid) & (pr.epoch > top) for pr in s.producers)
            and not any((req.pid == pid) & (req.epoch > top) for req in s.network)
            and not any(d.producers[pid - 1].epoch > top for d in s.partitions)
            and not any((entry.pid == pid) & (entry.epoch > top) for d in s.partitions for entry in d.log))


@invariant("producers-initialised-before-sending", "a producer instance past initTransactions() holds a producer id and epoch, and its next sequence number per partition is at most its transaction's number, one less while that transaction has sent nothing there")
def producers_initialised_before_sending(p, s) -> bool:
    """KIP-98: a transactional producer sends nothing before InitProducerId returned its producer id
    and epoch, and its sequence numbers count its batches to a partition since its epoch was
    bumped: at most one batch per partition and client transaction, and client transactions are
    numbered 1, 2, ... in the order they began (over all instances), so an instance in transaction
    ``t`` has sent at most ``t`` batches to a partition, ``t - 1`` if transaction ``t`` has not
    sent to it. An instance's transaction is one that began, and is no other instance's. An
    auxiliary invariant for ``kafkamc prove``."""
    begun = s.txns_begun
    producers = s.producers
    # Each client transaction is one instance's: two instances never hold the same number.
    if any((a.txn > 0) & (a.txn == b.txn) for k, a in enumerate(producers) for b in producers[k + 1:]):
        return False
    for pr in producers:
        if pr.state != _NOT_STARTED and (pr.pid < 1 or pr.epoch < 0):
            return False
        txn = pr.txn
        # A transaction, once begun, is numbered: only NotStarted, Ready and FatalError may be
        # outside one (transaction 0).
        if txn > begun or (txn < 1 and pr.state != _NOT_STARTED and pr.state != _READY
                           and pr.state != _FATAL_ERROR):
            return False
        # ``&`` and arithmetic on the comparison: one term per partition, no fork.
        if any((seq > txn) | ((sent == _UNSENT) & (seq > 0) & (seq >= txn))
               for seq, sent in zip(pr.next_seq, pr.sent)):
            return False
    return True


@invariant("transaction-batches-once", "a partition holds at most one batch of each client transaction, of a transaction that began, and none of the transaction an instance is in before it sends there")
def transaction_batches_once(p, s) -> bool:
    """The idempotent producer (KIP-98): a retried batch keeps its sequence number and is appended
    once, and each client transaction sends one batch per partition. Client transactions are
    numbered 1, 2, ... as they begin, so the batches of a partition carry distinct numbers up to
    the transactions begun. An auxiliary invariant for ``kafkamc prove``: with the markers closing
    one transaction each (``producer-state-matches-log``) it bounds a log's length."""
    begun = s.txns_begun
    for q, d in enumerate(s.partitions):
        log = d.log
        batches = [e for e in log if e.kind == _DATA]
        if any((e.txn < 1) | (e.txn > begun) for e in batches):
            return False
        if any(a.txn == b.txn for k, a in enumerate(batches) for b in batches[k + 1:]):
            return False
        for pr in s.producers:
            if pr.state == _IN_TRANSACTION and pr.sent[q] == _UNSENT:
                if any(e.txn == pr.txn for e in batches):
                    return False
    return True


@invariant("producer-state-matches-log", "a partition's open transaction of a producer id (currentTxnFirstOffset) starts at its first batch after its last marker, and every marker closes a transaction that was open")
def producer_state_matches_log(p, s) -> bool:
    """ProducerStateManager (KIP-98) rebuilds its state from the log: a producer id's open
    transaction begins at its first data batch after its last control marker, and a marker is
    appended only to close an open transaction (appendEndTxnMarker on a partition with none
    writes no marker in the model). So the entry of a producer id before one of its markers is
    one of its batches, its producer state has an open transaction exactly when its last entry is
    a batch, and the log holds no batch of it past its last marker that the state does not count.
    An auxiliary invariant for ``kafkamc prove``."""
    for d in s.partitions:
        log = d.log
        n = len(log)
        for pid, pe in enumerate(d.producers, start=1):
            first = pe.txn_first_offset
            last = -1  # the kind of the producer id's entry seen last, -1 before any
            start = -1  # the offset of its first batch after its last marker, -1 if none
            for k, e in enumerate(log):
                if e.pid == pid:
                    if e.kind != _DATA and last != _DATA:
                        return False  # a marker that closes nothing
                    if e.kind == _DATA and last != _DATA:
                        start = k
                    last = _DATA if e.kind == _DATA else _COMMIT
            if last == _DATA:
                if first != start:
                    return False
            elif first >= 0 or first < -1:
                return False
            if first >= n:
                return False
    return True


@invariant("timed-out-batches-were-delayed", "a client holds a timed-out batch only if some request was delayed")
def timed_out_batches_were_delayed(p, s) -> bool:
    """The model's bookkeeping: a batch becomes TimedOut only when its Produce is delayed, which
    ``delays`` counts (at most ``max_delayed``). An auxiliary invariant for ``kafkamc prove``."""
    return s.delays > 0 or not any(x == _TIMED_OUT for pr in s.producers for x in pr.sent)


@invariant("coordinator-state-committed", "with no transaction-log record in flight, the coordinator's in-memory state is its last committed record's, and so is its epoch unless a fence bumped it")
def coordinator_state_committed(p, s) -> bool:
    """TransactionStateManager.appendTransactionToLog (KIP-98): the coordinator changes its
    TransactionMetadata only in the callback of a committed append, so with no append in flight it
    acts on what the log holds. The one exception is PrepareEpochFence (KAFKA-6119): the bumped
    epoch is held in memory while the fence is pending, and after a failed fence: marked
    hasFailedEpochFence since KAFKA-9666, unmarked before it (``failed_fence_keeps_epoch=false``).
    An auxiliary invariant for ``kafkamc prove``."""
    c = s.coordinator
    # A fence (pending or failed) is of an Ongoing transaction, and only an append that can fail
    # (log_append=replicated) leaves a failed one.
    if (c.fencing or c.failed_fence) and c.log_state != _ONGOING:
        return False
    if c.failed_fence and p.log_append != "replicated":
        return False
    if c.appending:
        return True
    return c.state == c.log_state and (c.fencing or c.failed_fence or c.producer_epoch == c.log_epoch
                                       or not p.failed_fence_keeps_epoch)


# -- liveness under fairness (issue 14) ------------------------------------------------------------
# The fairness these are judged under is declared, with its reasons, on the spec class.


def producer_awaits_epoch(p, s) -> bool:
    """Some producer instance has not yet got a producer id and epoch from InitProducerId.

    Instances start in order (instance k+1 only after instance k got its epoch), so this is the
    first instance still NotStarted; the model answers InitProducerId in the step that sends it,
    and an instance answered CONCURRENT_TRANSACTIONS (the coordinator is fencing its zombie's
    transaction) stays NotStarted and retries.
    """
    return any(pr.state == _NOT_STARTED for pr in s.producers)


def every_producer_has_epoch(p, s) -> bool:
    """Every producer instance got its producer id and epoch, or the model's bound on producer ids
    is spent: the epoch is exhausted (>= ``max_epoch - 1``) with no transaction open at the
    coordinator and no id left to rotate to (Kafka has 2^63 ids; the model ``producer_ids``)."""
    if not producer_awaits_epoch(p, s):
        return True
    c = s.coordinator
    return (c.state in (_EMPTY, _COMPLETE_COMMIT, _COMPLETE_ABORT) and not c.fencing and not c.appending
            and c.producer_epoch >= p.max_epoch - 1 and c.pid >= p.producer_ids)


@liveness(
    "init-producer-id-succeeds",
    "a producer instance that calls initTransactions() eventually gets its producer id and epoch "
    "(InitProducerId succeeds), however its zombie's transaction is fenced",
)
def init_producer_id_succeeds():
    """KIP-98's InitProducerId, KAFKA-6119's PrepareEpochFence, KAFKA-9666 and KIP-360.

    When an older instance's transaction is Ongoing, InitProducerId first fences it (a bumped
    epoch, PrepareEpochFence, then an abort through the transaction log) and answers
    CONCURRENT_TRANSACTIONS; the client retries until the abort is complete. Before KAFKA-9666
    every fence whose log append failed left one more bumped epoch behind, so the retries could
    exhaust the epoch (Short.MaxValue, ``max_epoch``): no fence is then possible, the transaction
    is never aborted and InitProducerId never succeeds. Bound: a rotation that needs a producer id
    beyond ``producer_ids`` counts as success.
    """
    return leads_to(producer_awaits_epoch, every_producer_has_epoch)


def transaction_open(p, s) -> bool:
    """Some data partition has an open transaction: its LSO is below its high watermark."""
    return any(pe.txn_first_offset >= 0 for d in s.partitions for pe in d.producers)


def no_transaction_open(p, s) -> bool:
    """No data partition has an open transaction: every LSO equals its high watermark."""
    return not transaction_open(p, s)


@liveness(
    "open-transaction-closes",
    "every transaction open on a data partition is eventually closed by its marker, so the last stable offset "
    "eventually reaches the high watermark (even if the producer stops)",
)
def open_transaction_closes():
    """KIP-98's LSO under the coordinator's transaction timeout (transaction.timeout.ms).

    The liveness form of ``lso-can-advance``: not only can the LSO advance, under fairness it
    does, whatever the producer does, since a transaction that stays Ongoing is aborted by the
    coordinator. A hanging transaction (KAFKA-14402, tv1) and an epoch exhausted by failed fences
    (KAFKA-9666) break it. No bound is excused (the model's client transactions are bounded, so a
    correct version leaves no transaction open for ever).
    """
    return leads_to(transaction_open, no_transaction_open)


@invariant("open-batches-in-coordinator-transaction", "every batch of the coordinator's producer id still open on a partition is of the client transaction the coordinator holds, Ongoing with the partition added or Prepare* with its marker pending")
def open_batches_in_coordinator_transaction(p, s) -> bool:
    """KIP-98: a producer appends a transactional batch only to a partition its coordinator added to
    its Ongoing transaction (AddPartitionsToTxn, or the partition leader's implicit add under TV2),
    and the coordinator leaves the transaction only through Prepare*, whose markers close every
    added partition; so a batch of the coordinator's producer id still open (ProducerStateManager's
    currentTxnFirstOffset) is of the client transaction the coordinator holds, on a partition whose
    marker is still to come. False where a hanging transaction is possible (KAFKA-14402: TV1 with a
    delayed Produce). An auxiliary invariant for ``kafkamc prove``."""
    c = s.coordinator
    pid = c.pid
    state = c.state
    for q, d in enumerate(s.partitions, start=1):
        log = d.log
        for entry, marker in zip(log, _closing_markers(log)):
            if entry.kind != _DATA or marker is not None or entry.pid != pid:
                continue
            if entry.txn != c.txn or c.txn < 1:
                return False
            if state == _ONGOING:
                if q not in c.partitions:
                    return False
            elif state == _PREPARE_COMMIT or state == _PREPARE_ABORT:
                if q not in c.pending_markers:
                    return False
            else:
                return False
    return True


@invariant("markers-carry-the-decision", "while the coordinator holds a client transaction, no marker closes its batches while it is Ongoing, and every one that does once it is Prepare* carries the prepared result")
def markers_carry_the_decision(p, s) -> bool:
    """Two-phase commit (KIP-98): the coordinator writes markers only after its Prepare* record, each
    with the prepared result, and only to the transaction's partitions
    (TransactionMarkerChannelManager), so no batch of the transaction it
    holds is closed while it is Ongoing and every marker that closes one is of the decision. A TV2
    abort from Empty or Complete* (KIP-890 part 2) prepares no partition and writes no marker. With
    ``open-batches-in-coordinator-transaction`` this is what keeps ``atomicity`` when the next
    marker is written. An auxiliary invariant for ``kafkamc prove``."""
    c = s.coordinator
    state = c.state
    if state == _ONGOING:
        want = -1
    elif not c.pending_markers <= c.partitions:
        return False  # markers are sent to the transaction's partitions only
    elif not c.partitions:
        # A TV2 abort from Empty or Complete* (KIP-890 part 2) prepares no partition's marker.
        return True
    elif state == _PREPARE_COMMIT:
        want = _COMMIT
    elif state == _PREPARE_ABORT:
        want = _ABORT
    else:
        return True
    txn = c.txn
    for d in s.partitions:
        log = d.log
        for entry, marker in zip(log, _closing_markers(log)):
            if marker is not None and entry.txn == txn and marker.kind != want:
                return False
    return True
