"""Proof times of ``kafkamc prove``: per configuration, wall and CPU seconds, action paths and solver time.

    python benchmarks/prove.py            # every configuration below
    python benchmarks/prove.py controller-b2-zkversion

Prints one line per configuration and, with ``--queries``, one line per action (paths, solver
seconds, wall seconds of its shared exploration). Numbers depend on the load of the machine: the
CPU column (the parent's and its workers') is the honest one on a shared host. ``--no-skeletons``
measures the prover without its skeleton fast path, ``--workers 1`` in one process.
"""

from __future__ import annotations

import argparse
import sys
import time

from kafkamc.prover import prove
from kafkamc.spec.registry import build_spec

CONTROLLER_DEFAULTS = ["single-controller-per-epoch", "controller-epoch-monotonic", "no-stale-request-applied",
                       "zk-writes-fenced"]
CONTROLLER_AUX = ["controller-epoch-zk-version-in-step", "controller-context-epoch-in-step",
                  "controller-epochs-not-ahead", "controller-znode-owner-is-current", "down-brokers-forget",
                  "bounded-events-counted", "requests-only-to-running-brokers",
                  "live-controller-owns-znode", "partition-epoch-in-step", "elections-need-session-loss"]
# What the root kafkamc.toml's proof check proves: the four fencing properties, two more claims
# about Kafka's controller, and the auxiliaries.
CONTROLLER_PROVED = CONTROLLER_DEFAULTS + ["controller-epoch-bumped-by-owner", "requests-reach-their-incarnation"] \
    + CONTROLLER_AUX

# The proofs of docs/prove.md "Beyond controller" (the root kafkamc.toml pins the first three).
GROUP_PROVED = ["no-double-assignment", "members-belong-to-consumers", "member-ids-unique"]
REPLICATION_PROVED = ["leader-in-isr", "leader-epochs-assigned", "current-leader-isr-in-zookeeper"]
TRANSACTIONS_PROVED = ["epochs-committed-before-use", "producers-initialised-before-sending",
                       "transaction-batches-once", "producer-state-matches-log", "timed-out-batches-were-delayed",
                       "coordinator-state-committed"]
TRANSACTIONS_SMALL = {"partitions": 1, "max_transactions": 1, "max_delayed": 0}

CONFIGS = {
    "controller-b2-zkversion": ("controller", {"brokers": 2}, CONTROLLER_PROVED),
    "controller-b3-zkversion": ("controller", {"brokers": 3}, CONTROLLER_PROVED),
    "controller-b2-epoch-zk-writes-fenced": ("controller", {"brokers": 2, "fencing": "epoch"},
                                             ["zk-writes-fenced"] + CONTROLLER_AUX),
    "group-no-double-assignment": ("group", {"consumers": 2, "partitions": 2, "records": 0}, GROUP_PROVED),
    "replication-leader-in-isr": ("replication", {"replicas": 2, "log_size": 1, "max_leader_epoch": 1,
                                                  "track_visible": False}, REPLICATION_PROVED),
    "transactions-epochs-1-producer": ("transactions", {"producers": 1, **TRANSACTIONS_SMALL}, TRANSACTIONS_PROVED),
    # Two instances (a zombie and its successor): each action loops over both, so its paths multiply.
    "transactions-epochs-2-producers": ("transactions", {"producers": 2, **TRANSACTIONS_SMALL},
                                        TRANSACTIONS_PROVED),
}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", choices=[*CONFIGS, []], help="configurations (default: all)")
    ap.add_argument("--queries", action="store_true", help="also print one line per action")
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds per action")
    ap.add_argument("--workers", type=int, default=None, help="worker processes (default: every core)")
    ap.add_argument("--no-skeletons", action="store_true",
                    help="compute every target on every successor (the prover before kafkamc/prover/skeleton.py)")
    args = ap.parse_args(argv)
    print(f"{'configuration':40} {'result':8} {'wall s':>8} {'CPU s':>8} {'paths':>9} {'solver s':>9}")
    for name in args.names or CONFIGS:
        ref, params, invariants = CONFIGS[name]
        spec = build_spec(ref, params)
        props = [spec.property_named(n) for n in invariants]
        started = time.perf_counter()
        result = prove(spec, props, timeout=args.timeout, workers=args.workers, skeletons=not args.no_skeletons)
        actions: dict[str, list] = {}
        for q in result.queries:
            actions.setdefault(q.action, []).append(q)
        # Paths and solver time once per action (its queries share one exploration), plus each
        # query's own part.
        paths = sum(min(q.paths for q in qs) for qs in actions.values())
        solver = sum(qs[0].shared_solver_seconds + sum(q.solver_seconds for q in qs) for qs in actions.values())
        print(f"{name:40} {result.result:8} {time.perf_counter() - started:8.1f} {result.cpu_seconds:8.1f} "
              f"{paths:9,} {solver:9.1f}", flush=True)
        if args.queries:
            for action, qs in actions.items():
                print(f"    {action:28} paths {min(q.paths for q in qs):7,}  solver "
                      f"{qs[0].shared_solver_seconds + sum(q.solver_seconds for q in qs):7.2f} s  "
                      f"wall {qs[0].seconds:7.1f} s  {sorted({q.verdict for q in qs})}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
