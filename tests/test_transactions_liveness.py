"""Liveness of the ``transactions`` spec under its declared fairness (issue 14): InitProducerId
eventually succeeds (KAFKA-9666 breaks it), and every open transaction is eventually closed.

Every verdict, state count and lasso below was measured by exploring the model.
"""

from __future__ import annotations

import json
import os

from kafkamc.checker.liveness import check_liveness, resolve_fairness
from kafkamc.cli.main import main
from kafkamc.spec.transactions import ClientState, Transactions, TxnState

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# KAFKA-9666's configuration: one partition, one transaction, no delayed requests, replicated
# transaction-log appends that may fail, two producer instances (the second fences the first).
KAFKA_9666 = dict(version="tv1", log_append="replicated", producers=2, partitions=1, max_transactions=1,
                  max_delayed=0)
DECLARED_WEAK = ("InitProducerId", "BumpEpoch", "FenceAbort", "WriteTxnMarkers", "CompleteTransaction",
                 "TimeoutTransaction", "DeliverDelayed")


def check(name, **kwargs):
    fairness = {k: kwargs.pop(k) for k in ("fair", "strong", "no_fairness") if k in kwargs}
    spec = Transactions(**kwargs)
    return check_liveness(spec, (), [Transactions.liveness_named(name)], resolve_fairness(Transactions, **fairness))


def labels(result) -> list[str]:
    return [step.action for step in result.trace.steps[1:]]


def test_declared_fairness_names_actions_and_leaves_failures_unfair():
    fairness = resolve_fairness(Transactions)
    assert set(fairness.weak) == set(DECLARED_WEAK)
    assert fairness.strong == ("AppendReplicated",)
    unfair = {"AppendFailed", "CoordinatorFailover", "BeginTransaction", "Produce", "RetryProduce", "EndTxn"}
    assert not unfair & (set(fairness.weak) | set(fairness.strong))
    assert [p.name for p in Transactions.liveness_properties()] == [
        "init-producer-id-succeeds", "open-transaction-closes",
    ]


def test_kafka_9666_failed_fences_exhaust_the_epoch_and_init_producer_id_starves():
    fixed = check("init-producer-id-succeeds", **KAFKA_9666)
    assert fixed.result == "ok" and fixed.distinct_states == 203
    r = check("init-producer-id-succeeds", failed_fence_keeps_epoch=False, **KAFKA_9666)
    assert r.result == "violation" and r.violated == "init-producer-id-succeeds"
    assert r.distinct_states == 327 and len(r.trace) == 13
    # The lasso ends stuttering: each retried InitProducerId bumped again after its fence's append
    # failed, until no fence is possible (max_epoch) and nothing fair is enabled.
    assert r.trace.loop_start == 12 and r.trace.loop_action is None
    fences = [a for a in labels(r) if a.startswith("InitProducerId(producer=2) -> CONCURRENT_TRANSACTIONS")]
    assert fences == [f"InitProducerId(producer=2) -> CONCURRENT_TRANSACTIONS, fence epoch {e}" for e in (1, 2, 3)]
    assert sum(a.startswith("AppendFailed(PrepareAbort") for a in labels(r)) == 3
    last = r.trace.steps[-1].state
    assert last.coordinator.state == TxnState.Ongoing and last.coordinator.producer_epoch == 3
    assert last.producers[1].state == ClientState.NotStarted


def test_init_producer_id_needs_fairness_and_a_strongly_fair_append():
    # No fairness: the behaviour may stop in the initial state.
    r = check("init-producer-id-succeeds", no_fairness=True, **KAFKA_9666)
    assert r.result == "violation" and len(r.trace) == 1 and r.trace.loop_action is None
    # Everything weakly fair, AppendReplicated too: an append may fail each time it is tried, a
    # cycle in which the new instance's InitProducerId is never continuously enabled.
    r = check("init-producer-id-succeeds", no_fairness=True, fair=[*DECLARED_WEAK, "AppendReplicated"], **KAFKA_9666)
    assert r.result == "violation" and len(r.trace) == 6 and r.trace.loop_start == 4
    assert labels(r)[-1].startswith("AppendFailed(PrepareCommit")
    assert r.trace.loop_action.startswith("EndTxn(producer=1, COMMIT")


def test_rotation_lets_every_instance_in_only_with_the_fix():
    rotation = dict(version="tv1", log_append="replicated", producers=3, partitions=1, max_delayed=0, max_epoch=2,
                    producer_ids=2)
    assert check("init-producer-id-succeeds", **rotation).result == "ok"
    r = check("init-producer-id-succeeds", failed_fence_keeps_epoch=False, **rotation)
    assert r.result == "violation" and len(r.trace) == 8 and r.trace.loop_action is None
    assert r.trace.steps[-1].state.producers[2].state == ClientState.NotStarted


def test_the_bound_on_producer_ids_counts_as_success_not_a_starved_instance():
    # tv2 bumps the epoch on every EndTxn, so with one producer id the epoch is spent by
    # transactions that succeed; the property excuses only that bound.
    assert check("init-producer-id-succeeds", version="tv2", producers=3, partitions=1, max_delayed=0).result == "ok"


def test_open_transactions_close_under_the_transaction_timeout():
    small = dict(producers=1, partitions=1, max_transactions=1)
    assert check("open-transaction-closes", version="tv2", **small).result == "ok"
    assert check("open-transaction-closes", version="tv1-verify", **small).result == "ok"
    # Without WF(TimeoutTransaction) a producer that stops after its first batch keeps the LSO down.
    r = check("open-transaction-closes", version="tv2", no_fairness=True,
              fair=[a for a in DECLARED_WEAK if a != "TimeoutTransaction"], strong=["AppendReplicated"], **small)
    assert r.result == "violation" and len(r.trace) == 4 and r.trace.loop_action is None
    # KAFKA-14402: before KIP-890 a delayed Produce opens a transaction no marker will close.
    r = check("open-transaction-closes", version="tv1", **small)
    assert r.result == "violation" and len(r.trace) == 10
    assert any(a.startswith("DeliverDelayed(Produce") for a in labels(r))
    assert check("open-transaction-closes", **KAFKA_9666).result == "ok"
    r = check("open-transaction-closes", failed_fence_keeps_epoch=False, **KAFKA_9666)
    assert r.result == "violation" and len(r.trace) == 12


def test_the_kafka_9666_lasso_replays(capsys, tmp_path):
    argv = ["check", "transactions", "-l", "init-producer-id-succeeds", "--out", str(tmp_path),
            "-p", "failed_fence_keeps_epoch=false"]
    for k, v in KAFKA_9666.items():
        argv += ["-p", f"{k}={v}"]
    assert main(argv) == 1
    capsys.readouterr()
    (itf,) = [f for f in os.listdir(tmp_path) if f.endswith(".itf.json")]
    assert json.loads((tmp_path / itf).read_text())["loop"] == 12
    assert main(["trace", "replay", str(tmp_path / itf)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "reproduced"


def test_root_config_transactions_liveness_verdicts(capsys):
    names = ["transactions-init-producer-id-*", "transactions-kafka-9666-*init-producer-id*",
             "transactions-*open-transaction*", "transactions-*transaction-*closes"]
    argv = ["gate", "--config", os.path.join(ROOT, "kafkamc.toml"), "--json"]
    for n in names:
        argv += ["--only", n]
    code = main(argv)
    doc = json.loads(capsys.readouterr().out)
    ran = {c["name"]: c["status"] for c in doc["checks"]}
    assert code == 0, ran
    assert len(ran) == 12 and set(ran.values()) == {"pass"}
    assert all(c["liveness"] for c in doc["checks"])
