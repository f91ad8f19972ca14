"""The ``transactions`` spec: verdicts of the KIP-890 variants, KAFKA-6119 and idempotence.

Every count, depth and trace length below was measured by exploring the model and is pinned so
that a change to the model's behaviour shows up here.
"""

from __future__ import annotations

import pytest

from kafkamc.checker.fingerprint import Fingerprinter
from kafkamc.checker.local import explore
from kafkamc.errors import UsageError
from kafkamc.invariants.transactions import (
    no_hanging_transaction,
    read_committed_isolation,
    valid_coordinator_transitions,
)
from kafkamc.spec.registry import load_spec_class
from kafkamc.spec.transactions import (
    Coordinator,
    DataPartition,
    Entry,
    EntryKind,
    ProducerEntry,
    Transactions,
    TransactionsState,
    TxnState,
)

ALL = (
    "atomicity", "client-commit-truth", "zombie-fencing", "no-hanging-transaction",
    "no-cross-transaction-leak", "read-committed-isolation", "no-duplicate-append",
    "commit-by-own-end-txn", "valid-coordinator-transitions",
)


def check(invariant: str | None = None, **params):
    spec = Transactions(**params)
    props = None if invariant is None else [Transactions.property_named(invariant)]
    return explore(spec, props)


def actions(result) -> list[str]:
    return [step.action for step in result.trace.steps[1:]]


def test_registered_with_all_properties_and_defaults():
    assert load_spec_class("transactions") is Transactions
    assert tuple(pr.name for pr in Transactions.default_properties()) == ALL
    assert Transactions.property_named("valid-coordinator-transitions").kind == "action"
    p = Transactions().p
    assert (p.producers, p.partitions, p.max_delayed, p.version) == (2, 2, 1, "tv2")
    assert (p.coordinator_failover, p.timeout_bumps_epoch, p.idempotence) == (False, True, True)


def test_rejects_unknown_version():
    with pytest.raises(UsageError, match="tv1-verify"):
        Transactions(version="tv3")


def test_states_take_the_fast_fingerprint_path():
    # No str and no None anywhere in the state type: fingerprints are plain hash() calls.
    assert Fingerprinter(TransactionsState).fast
    (init,) = Transactions().initial()
    Fingerprinter(TransactionsState).check(init)


def test_tv2_default_satisfies_every_property():
    r = check()
    assert r.result == "ok", (r.violated, r.trace and actions(r))
    assert set(r.invariants) == set(ALL)
    assert (r.distinct_states, r.states_generated, r.depth) == (53918, 132609, 23)


def test_tv1_delayed_produce_leaves_a_hanging_transaction():
    r = check("no-hanging-transaction", version="tv1")
    assert r.result == "violation" and r.violated == "no-hanging-transaction"
    assert len(r.trace.steps) == 8
    steps = actions(r)
    assert steps[3] == "Produce(producer=1, p1, epoch=0, seq=0, txn=1) -> delayed"
    assert steps[4].startswith("EndTxn(producer=1, ABORT, epoch=0")
    assert steps[-1] == "DeliverDelayed(Produce(producer=1, p1, epoch=0, seq=0, txn=1) -> acked)"


def test_tv1_delayed_produce_leaks_into_the_next_transaction():
    # A client before KAFKA-8805 (2.5) keeps its epoch after aborting on the timed-out batch.
    r = check("no-cross-transaction-leak", version="tv1", bump_after_abortable=False)
    assert r.violated == "no-cross-transaction-leak"
    assert len(r.trace.steps) == 12
    steps = actions(r)
    assert "BeginTransaction(producer=1, txn=2)" in steps
    assert steps[-2] == "DeliverDelayed(Produce(producer=1, p1, epoch=0, seq=0, txn=1) -> acked)"
    assert steps[-1] == "Produce(producer=1, p1, epoch=0, seq=1, txn=2) -> acked"


def test_tv1_verify_prevents_the_hanging_transaction_that_tv1_has():
    small = dict(producers=1, partitions=1)
    r = check("no-hanging-transaction", version="tv1", **small)
    assert r.violated == "no-hanging-transaction" and len(r.trace.steps) == 8
    r = check("no-hanging-transaction", version="tv1-verify", **small)
    assert r.result == "ok"
    assert (r.distinct_states, r.depth) == (1902, 18)
    r = check("no-hanging-transaction", version="tv1-verify", producers=2, partitions=1)
    assert r.result == "ok"
    assert (r.distinct_states, r.depth) == (10445, 21)


def test_tv1_verify_still_leaks_across_transactions():
    r = check("no-cross-transaction-leak", version="tv1-verify", bump_after_abortable=False)
    assert r.violated == "no-cross-transaction-leak"
    assert len(r.trace.steps) == 12
    steps = actions(r)
    # Verification passes: the second transaction (same epoch under tv1) did add p1.
    assert steps[-3] == "AddPartitionsToTxn(producer=1, p1, epoch=0)"
    assert steps[-2] == "DeliverDelayed(Produce(producer=1, p1, epoch=0, seq=0, txn=1) -> acked)"


def test_tv1_verify_delayed_marker_aborts_a_later_committed_transaction():
    # KIP-890's delayed marker: part 1 does not stop it, so a successful commit loses a record.
    r = check("client-commit-truth", version="tv1-verify")
    assert r.violated == "client-commit-truth"
    assert len(r.trace.steps) == 13
    steps = actions(r)
    assert steps[5] == "WriteTxnMarkers(p1, ABORT, epoch=0, coordinator_epoch=1) -> delayed"
    assert steps[-2].startswith("EndTxn(producer=1, COMMIT, epoch=0, txn=2) -> OK")
    assert steps[-1] == "DeliverDelayed(WriteTxnMarkers(p1, ABORT, epoch=0, coordinator_epoch=1, txn=1))"


def test_tv1_zombie_batch_is_committed_after_the_fence():
    r = check("zombie-fencing", version="tv1")
    assert r.violated == "zombie-fencing"
    assert len(r.trace.steps) == 14
    steps = actions(r)
    assert "InitProducerId(producer=2) -> epoch 1" in steps
    assert steps[-2] == "DeliverDelayed(Produce(producer=1, p1, epoch=0, seq=0, txn=1) -> acked)"


def test_timeout_without_epoch_bump_loses_committed_data_kafka_6119():
    small = dict(version="tv1", producers=1, max_delayed=0)
    r = check("client-commit-truth", timeout_bumps_epoch=False, **small)
    assert r.violated == "client-commit-truth"
    assert len(r.trace.steps) == 10
    steps = actions(r)
    assert steps[3] == "Produce(producer=1, p1, epoch=0, seq=0, txn=1) -> acked"
    assert steps[4] == "TimeoutTransaction(abort, epoch=0)"
    assert steps[-2] == "AddPartitionsToTxn(producer=1, p2, epoch=0)"
    assert steps[-1] == "EndTxn(producer=1, COMMIT, epoch=0, txn=1) -> OK"
    r = check("client-commit-truth", timeout_bumps_epoch=True, **small)
    assert r.result == "ok"
    assert (r.distinct_states, r.depth) == (2238, 22)


def test_tv2_timeout_abort_bumps_the_epoch_even_without_kafka_6119():
    # Under TV2 every abort bumps the epoch, so the pre-1.1 timeout is harmless there.
    r = check("client-commit-truth", producers=1, max_delayed=0, timeout_bumps_epoch=False)
    assert r.result == "ok"
    assert (r.distinct_states, r.depth) == (529, 17)


def test_non_idempotent_retry_appends_a_duplicate():
    r = check("no-duplicate-append", idempotence=False)
    assert r.violated == "no-duplicate-append"
    assert len(r.trace.steps) == 6
    assert actions(r)[-2:] == [
        "RetryProduce(producer=1, p1, epoch=0, seq=0, txn=1) -> acked",
        "DeliverDelayed(Produce(producer=1, p1, epoch=0, seq=0, txn=1) -> acked)",
    ]


def test_tv2_with_coordinator_failover_satisfies_every_property():
    r = check(producers=1, partitions=1, coordinator_failover=True)
    assert r.result == "ok"
    assert (r.distinct_states, r.depth) == (3203, 18)
    labels = set()
    spec = Transactions(producers=1, partitions=1, coordinator_failover=True)
    for _, label, _ in spec.successors(spec.initial()[0]):
        labels.add(label)
    assert "CoordinatorFailover(coordinator_epoch=2)" in labels


def _coordinator(state: TxnState, fencing: bool = False, epoch: int = 0, parts=(1,), pending=(),
                 log_state: TxnState | None = None) -> Coordinator:
    log_state = state if log_state is None else log_state
    return Coordinator(state, fencing, False, 1, epoch, frozenset(parts), frozenset(pending), 1,
                       log_state, epoch - 1 if fencing else epoch, (), 1, 1)


def _state(c: Coordinator, partitions: tuple[DataPartition, ...] = ()) -> TransactionsState:
    return TransactionsState(c, (), partitions, (), 0, 1, 0, frozenset(), False)


def _partition(log, *entries) -> DataPartition:
    return DataPartition(tuple(log), tuple(ProducerEntry(*e) for e in entries))


def test_valid_coordinator_transitions_reads_the_committed_records():
    p1 = Transactions(version="tv1").p
    p2 = Transactions(version="tv2").p
    ongoing = _state(_coordinator(TxnState.Ongoing))
    empty = _state(_coordinator(TxnState.Empty, parts=()))
    empty_bumped = _state(_coordinator(TxnState.Empty, epoch=1, parts=()))
    fence = _state(_coordinator(TxnState.Ongoing, fencing=True, epoch=1))
    prepare_abort = _state(_coordinator(TxnState.PrepareAbort, epoch=1, pending=(1,)))
    prepare_commit = _state(_coordinator(TxnState.PrepareCommit))
    assert valid_coordinator_transitions(p1, ongoing, "x", prepare_commit)
    assert valid_coordinator_transitions(p1, ongoing, "x", fence)  # nothing written
    assert valid_coordinator_transitions(p1, fence, "x", prepare_abort)
    assert not valid_coordinator_transitions(p1, empty, "x", prepare_commit)
    assert not valid_coordinator_transitions(p1, prepare_commit, "x", ongoing)
    # InitProducerId that drops an Ongoing transaction writes Ongoing -> Empty.
    assert not valid_coordinator_transitions(p1, ongoing, "x", empty_bumped)
    # TV2 may abort from Empty (KIP-890 part 2); TV1 may not.
    assert not valid_coordinator_transitions(p1, empty, "x", prepare_abort)
    assert valid_coordinator_transitions(p2, empty, "x", prepare_abort)
    # Acting on a Prepare* record that is not committed changes no record.
    early = _state(_coordinator(TxnState.PrepareCommit, log_state=TxnState.Ongoing))
    assert valid_coordinator_transitions(p1, ongoing, "x", early)


def test_no_hanging_and_read_committed_reject_broken_states():
    p = Transactions(version="tv1").p
    batch = Entry(EntryKind.Data, 1, 0, 0, -1, 1, 1, 0, True)
    open_txn = _partition((batch,), (0, 0, 0, 1))
    assert no_hanging_transaction(p, _state(_coordinator(TxnState.Ongoing), (open_txn,)))
    assert not no_hanging_transaction(p, _state(_coordinator(TxnState.CompleteAbort, parts=()), (open_txn,)))
    assert not no_hanging_transaction(p, _state(_coordinator(TxnState.Ongoing, epoch=1), (open_txn,)))
    # A transaction of another producer id (after a rotation) is hanging whatever the coordinator does.
    other = _partition((Entry(EntryKind.Data, 2, 0, 0, -1, 1, 1, 0, True),), (-1, -1, -1, -1), (0, 0, 0, 1))
    assert not no_hanging_transaction(p, _state(_coordinator(TxnState.Ongoing), (other,)))
    assert read_committed_isolation(p, _state(_coordinator(TxnState.Ongoing), (open_txn,)))
    # An LSO that forgot the open transaction exposes an undecided batch.
    forgotten = _partition((batch,), (0, 0, -1, 1))
    assert not read_committed_isolation(p, _state(_coordinator(TxnState.Ongoing), (forgotten,)))
    # A COMMIT marker sent before its PrepareCommit record was committed.
    for decided in (True, False):
        marker = Entry(EntryKind.Commit, 1, 0, -1, 1, 1, 0, 1, decided)
        closed = _partition((batch, marker), (0, 0, -1, 1))
        assert read_committed_isolation(p, _state(_coordinator(TxnState.Ongoing), (closed,))) is decided
