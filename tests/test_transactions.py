"""The ``transactions`` spec: verdicts of the KIP-890 variants, KAFKA-6119 and idempotence.

Every count, depth and trace length below was measured by exploring the model and is pinned so
that a change to the model's behaviour shows up here.
"""

from __future__ import annotations

import json
from collections import deque

import pytest

from kafkamc.cli import main
from kafkamc.checker.fingerprint import Fingerprinter
from kafkamc.checker.local import explore
from kafkamc.errors import UsageError
from kafkamc.invariants.transactions import (
    no_hanging_transaction,
    read_committed_isolation,
    valid_coordinator_transitions,
)
from kafkamc.spec import transactions as spec_module
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
    assert (r.distinct_states, r.depth) == (1928, 18)
    r = check("no-hanging-transaction", version="tv1-verify", producers=2, partitions=1)
    assert r.result == "ok"
    assert (r.distinct_states, r.depth) == (10779, 21)


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


# -- the transaction-log append: appended, replicated, then acted on (KIP-98) -----------------

def test_markers_before_commit_needs_replicated_appends():
    with pytest.raises(UsageError, match="log_append=replicated"):
        Transactions(markers_after_commit=False)


REPLICATED = dict(log_append="replicated", producers=1, max_delayed=0)


def test_markers_sent_before_the_prepare_record_is_committed_break_atomicity():
    r = check("atomicity", markers_after_commit=False, **REPLICATED)
    assert r.violated == "atomicity" and len(r.trace.steps) == 11
    steps = actions(r)
    assert steps[4] == "EndTxn(producer=1, COMMIT, epoch=0, txn=1) -> appending PrepareCommit"
    assert steps[5].startswith("WriteTxnMarkers(p1, COMMIT")
    assert steps[6] == "AppendFailed(PrepareCommit, epoch=1)"
    assert steps[-1].startswith("WriteTxnMarkers(p2, ABORT")
    # The same with a coordinator failover that loses the record instead of a failed append.
    r = check("atomicity", markers_after_commit=False, append_failures=False, coordinator_failover=True,
              **REPLICATED)
    assert r.violated == "atomicity" and len(r.trace.steps) == 11
    assert "CoordinatorFailover(coordinator_epoch=2)" in actions(r)
    # A read_committed consumer sees the commit before it is decided.
    r = check("read-committed-isolation", markers_after_commit=False, **REPLICATED)
    assert r.violated == "read-committed-isolation" and len(r.trace.steps) == 6


def test_markers_after_commit_satisfy_every_property_with_failures_and_failover():
    r = check(markers_after_commit=True, coordinator_failover=True, **REPLICATED)
    assert r.result == "ok" and set(r.invariants) == set(ALL)
    assert (r.distinct_states, r.depth) == (8955, 25)
    r = check(version="tv1", markers_after_commit=True, coordinator_failover=True, **REPLICATED)
    assert r.result == "ok" and r.distinct_states == 25022
    labels = {label for label, _ in _reachable(Transactions(coordinator_failover=True, **REPLICATED), 4000)}
    assert {"AppendReplicated(PrepareCommit, epoch=1)", "AppendFailed(PrepareCommit, epoch=1)",
            "CoordinatorFailover(coordinator_epoch=2, keeps PrepareCommit)"} <= labels


def _reachable(spec, limit):
    """(label, state) of every transition found by a breadth-first walk of at most ``limit`` states."""
    (init,) = spec.initial()
    seen = {init}
    queue = deque([init])
    out = []
    while queue and len(seen) < limit:
        state = queue.popleft()
        for _, label, nxt in spec.successors(state):
            out.append((label, nxt))
            if nxt not in seen:
                seen.add(nxt)
                queue.append(nxt)
    return out


# -- KAFKA-9666, producer-id rotation (KIP-360) and KAFKA-8805 --------------------------------

def _check_r(prop: str, **params) -> dict:
    argv = ["check", "transactions", "-i", "atomicity", "-r", prop, "--json"]
    for k, v in params.items():
        argv += ["-p", f"{k}={str(v).lower() if isinstance(v, bool) else v}"]
    code = main(argv)
    assert code in (0, 1)
    return code


KAFKA_9666 = dict(version="tv1", log_append="replicated", producers=2, partitions=1, max_transactions=1,
                  max_delayed=0)


def test_failed_fences_exhaust_the_epoch_before_kafka_9666(capsys):
    assert _check_r("lso-can-advance", failed_fence_keeps_epoch=False, **KAFKA_9666) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["violated"] == "lso-can-advance"
    steps = [step["action"] for step in doc["trace"]]
    assert len(steps) == 12
    # Each failed fence left its bumped epoch in memory and the next one bumped again, up to
    # max_epoch=3: no fence is possible any more and the Ongoing transaction is never aborted.
    assert steps[-6:] == ["TimeoutTransaction(fence epoch 2)", "FenceAbort(epoch=2)",
                          "AppendFailed(PrepareAbort, epoch=2)", "TimeoutTransaction(fence epoch 3)",
                          "FenceAbort(epoch=3)", "AppendFailed(PrepareAbort, epoch=3)"]
    assert _check_r("lso-can-advance", failed_fence_keeps_epoch=True, **KAFKA_9666) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["result"] == "ok" and doc["distinct_states"] == 203


def test_a_partition_keeps_state_per_producer_id_across_a_rotation():
    params = dict(version="tv2", producers=2, partitions=1, max_epoch=2, producer_ids=2)
    r = check(**params)
    assert r.result == "ok" and (r.distinct_states, r.depth) == (3883, 19)
    both = [s for _, s in _reachable(Transactions(**params), 4000)
            if {e.pid for e in s.partitions[0].log} == {1, 2}]
    assert both, "no reachable log holds batches of both producer ids"
    # The new id starts at epoch 0 next to the old id's exhausted epoch, in one partition.
    entries = both[0].partitions[0].producers
    assert entries[1].epoch == 0 and entries[0].epoch >= 1
    # With one producer id the exhausted epoch is a bound: InitProducerId is not enabled.
    r = check(**dict(params, producer_ids=1))
    assert r.result == "ok" and r.distinct_states < 3883


def test_without_the_epoch_bump_after_an_abortable_error_the_producer_is_stuck_kafka_8805(capsys):
    small = dict(version="tv1-verify", producers=1, partitions=1)
    assert _check_r("producer-can-write", bump_after_abortable=False, **small) == 1
    doc = json.loads(capsys.readouterr().out)
    steps = [step["action"] for step in doc["trace"]]
    assert doc["violated"] == "producer-can-write" and len(steps) == 8
    assert steps[4] == "Produce(producer=1, p1, epoch=0, seq=0, txn=1) -> delayed"
    assert steps[5] == "EndTxn(producer=1, ABORT, epoch=0, txn=1) -> OK"
    assert _check_r("producer-can-write", bump_after_abortable=True, **small) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["result"] == "ok" and doc["distinct_states"] == 1928


def test_every_flag_names_its_kip_or_jira():
    helps = {p.name: p.help for p in Transactions.parameters}
    for name, ref in (("init_bumps_epoch", "KIP-98"), ("init_aborts_ongoing", "KIP-98"),
                      ("partition_rejects_old_epoch", "KIP-98"), ("markers_after_commit", "KIP-98"),
                      ("failed_fence_keeps_epoch", "KAFKA-9666"), ("bump_after_abortable", "KAFKA-8805"),
                      ("max_epoch", "KIP-360"), ("timeout_bumps_epoch", "KAFKA-6119")):
        assert ref in helps[name], name
        assert name in spec_module.__doc__, name


def test_a_prepare_after_several_failed_fences_still_closes_the_transaction():
    # KAFKA-9666 before the fix: the PrepareAbort that finally replicates carries an epoch several
    # above the open transaction's; its marker is accepted, so nothing hangs (tv1 accepts a marker
    # not below the transaction's epoch, tv2 one above it).
    batch = Entry(EntryKind.Data, 1, 0, 0, -1, 1, 1, 0, True)
    open_txn = _partition((batch,), (0, 0, 0, 1))
    prepare = _state(_coordinator(TxnState.PrepareAbort, epoch=3, pending=(1,)), (open_txn,))
    for version in ("tv1", "tv2"):
        assert no_hanging_transaction(Transactions(version=version).p, prepare)
    marker_written = _state(_coordinator(TxnState.PrepareAbort, epoch=3, pending=()), (open_txn,))
    assert not no_hanging_transaction(Transactions().p, marker_written)
    same_epoch = _state(_coordinator(TxnState.PrepareAbort, epoch=0, pending=(1,)), (open_txn,))
    assert no_hanging_transaction(Transactions(version="tv1").p, same_epoch)
    assert not no_hanging_transaction(Transactions(version="tv2").p, same_epoch)


def test_kafka_9666_with_rotation_every_property(capsys):
    params = dict(version="tv1", log_append="replicated", producers=3, partitions=1, max_delayed=0,
                  max_epoch=2, producer_ids=2)
    argv = ["check", "transactions", "-r", "lso-can-advance", "--json"]
    for k, v in params.items():
        argv += ["-p", f"{k}={v}"]
    assert main(argv + ["-p", "failed_fence_keeps_epoch=false"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["violated"] == "lso-can-advance" and len(doc["trace"]) == 9
    assert main(argv + ["-p", "failed_fence_keeps_epoch=true"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["result"] == "ok" and doc["distinct_states"] == 7003
    labels = {label for label, _ in _reachable(Transactions(**params), 8000)}
    assert any("-> producer id 2, epoch 0" in label for label in labels)
