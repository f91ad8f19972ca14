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
    assert (r.distinct_states, r.states_generated, r.depth) == (55691, 136320, 23)


def test_tv1_delayed_produce_leaves_a_hanging_transaction():
    r = check("no-hanging-transaction", version="tv1")
    assert r.result == "violation" and r.violated == "no-hanging-transaction"
    assert len(r.trace.steps) == 8
    steps = actions(r)
    assert steps[3] == "Produce(producer=1, p1, epoch=0, seq=0, txn=1) -> delayed"
    assert steps[4].startswith("EndTxn(producer=1, ABORT, epoch=0")
    assert steps[-1] == "DeliverDelayed(Produce(producer=1, p1, epoch=0, seq=0, txn=1) -> acked)"


def test_tv1_delayed_produce_leaks_into_the_next_transaction():
    r = check("no-cross-transaction-leak", version="tv1")
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
    r = check("no-cross-transaction-leak", version="tv1-verify")
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


def _coordinator(state: TxnState, fencing: bool = False, epoch: int = 0, parts=(1,), pending=()) -> Coordinator:
    return Coordinator(state, fencing, epoch, frozenset(parts), frozenset(pending), 1, 1, 1)


def _state(c: Coordinator, partitions: tuple[DataPartition, ...] = ()) -> TransactionsState:
    return TransactionsState(c, (), partitions, (), 0, 1, 0, frozenset(), False)


def test_valid_coordinator_transitions_follows_kafkas_table():
    p1 = Transactions(version="tv1").p
    p2 = Transactions(version="tv2").p
    ongoing = _state(_coordinator(TxnState.Ongoing))
    empty = _state(_coordinator(TxnState.Empty))
    fence = _state(_coordinator(TxnState.Ongoing, fencing=True, epoch=1))
    prepare_abort = _state(_coordinator(TxnState.PrepareAbort, epoch=1, pending=(1,)))
    prepare_commit = _state(_coordinator(TxnState.PrepareCommit))
    assert valid_coordinator_transitions(p1, ongoing, "x", prepare_commit)
    assert valid_coordinator_transitions(p1, ongoing, "x", fence)
    assert valid_coordinator_transitions(p1, fence, "x", prepare_abort)
    assert not valid_coordinator_transitions(p1, empty, "x", prepare_commit)
    assert not valid_coordinator_transitions(p1, prepare_commit, "x", ongoing)
    # TV2 may abort from Empty (KIP-890 part 2); TV1 may not.
    assert not valid_coordinator_transitions(p1, empty, "x", prepare_abort)
    assert valid_coordinator_transitions(p2, empty, "x", prepare_abort)


def test_no_hanging_and_read_committed_reject_broken_states():
    p = Transactions(version="tv1").p
    batch = Entry(EntryKind.Data, 0, 0, -1, 1, 1, -1)
    open_txn = DataPartition((batch,), 0, 0, 0, 1)
    assert no_hanging_transaction(p, _state(_coordinator(TxnState.Ongoing), (open_txn,)))
    assert not no_hanging_transaction(p, _state(_coordinator(TxnState.CompleteAbort, parts=()), (open_txn,)))
    assert not no_hanging_transaction(p, _state(_coordinator(TxnState.Ongoing, epoch=1), (open_txn,)))
    assert read_committed_isolation(p, _state(_coordinator(TxnState.Ongoing), (open_txn,)))
    # An LSO that forgot the open transaction exposes an undecided batch.
    forgotten = DataPartition((batch,), 0, 0, -1, 1)
    assert not read_committed_isolation(p, _state(_coordinator(TxnState.Ongoing), (forgotten,)))


# -- the three fences of InitProducerId (KIP-98), each shown to matter ------------------------

def test_without_the_epoch_bump_a_zombie_is_accepted():
    r = check("zombie-fencing", init_bumps_epoch=False)
    assert r.violated == "zombie-fencing" and len(r.trace.steps) == 5
    steps = actions(r)
    assert steps[0] == "InitProducerId(producer=1) -> epoch 0"
    assert "InitProducerId(producer=2) -> epoch 0" in steps
    assert steps[-1] == "Produce(producer=1, p1, epoch=0, seq=0, txn=1) -> acked"


def test_without_aborting_the_ongoing_transaction_it_hangs():
    r = check("no-hanging-transaction", init_aborts_ongoing=False)
    assert r.violated == "no-hanging-transaction" and len(r.trace.steps) == 5
    assert actions(r)[-1] == "InitProducerId(producer=2) -> epoch 1"
    # The dropped transaction is also an invalid transition of the transaction log: Ongoing -> Empty.
    r = check("valid-coordinator-transitions", init_aborts_ongoing=False)
    assert r.violated == "valid-coordinator-transitions" and len(r.trace.steps) == 5


def test_without_the_partition_epoch_check_a_zombie_batch_is_committed():
    # tv2 needs no partition check (an old epoch is never "ongoing" and the implicit add is
    # fenced); tv1-verify skips verification when any transaction of the producer id is open.
    small = dict(version="tv1-verify", partitions=1)
    r = check("zombie-fencing", partition_rejects_old_epoch=False, **small)
    assert r.violated == "zombie-fencing" and len(r.trace.steps) == 15
    r = check("zombie-fencing", partition_rejects_old_epoch=True, **small)
    assert r.result == "ok" and r.distinct_states == 10445
    assert check(partition_rejects_old_epoch=False).distinct_states == check().distinct_states


def test_delayed_end_txn_commits_a_later_transaction_under_tv1():
    for version in ("tv1", "tv1-verify"):
        r = check("commit-by-own-end-txn", version=version)
        assert r.violated == "commit-by-own-end-txn" and len(r.trace.steps) == 11
        steps = actions(r)
        assert steps[3] == "EndTxn(producer=1, COMMIT, epoch=0, txn=1) -> delayed"
        assert steps[-1].startswith("DeliverDelayed(EndTxn(producer=1, COMMIT, epoch=0, txn=1) -> OK")
