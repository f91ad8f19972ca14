"""Times of ``kafkamc bmc`` against breadth-first ``check`` on the same configurations.

    python benchmarks/bmc.py                 # every configuration below
    python benchmarks/bmc.py controller-none --timeout 600
    python benchmarks/bmc.py controller-none --engine bmc --solver lia   # the QF_LIA unrolling
    python benchmarks/bmc.py replication-kip279-r2 --engine bmc --every-order   # no partial-order reduction
    python benchmarks/bmc.py replication-kip279 --engine bmc --symmetry   # issue 17's 11 states (about 45 CPU min)

Each engine runs in a fresh process (so its peak memory is its own) and prints one line: result,
trace length, depth reached, CPU seconds, peak resident memory, and for bmc its shapes, symbolic
paths, distinct moves of its transition relation, CPU seconds spent making that relation, and
solver queries, for check its distinct states. Numbers depend on the load of the
machine: the CPU column is the honest one on a shared host.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

from kafkamc.checker.local import explore
from kafkamc.prover.bmc import SOLVERS, bmc
from kafkamc.spec.registry import build_spec

# name: (spec, parameters, invariant, bmc depth)
CONFIGS = {
    "controller-none": ("controller", ["fencing=none"], "no-stale-request-applied", 7),
    "controller-none-b2": ("controller", ["fencing=none", "brokers=2"], "no-stale-request-applied", 7),
    # Every bound at its maximum: check's states grow about tenfold, bmc's relation does not (bounds
    # are int ranges in it); brokers=4: both grow (docs/bmc.md, "What is not reproduced").
    "controller-none-max": ("controller", ["fencing=none", "elections=6", "expiries=4", "crashes=4", "requests=8",
                                           "leader_epochs=6"], "no-stale-request-applied", 7),
    "controller-none-b4": ("controller", ["fencing=none", "brokers=4"], "no-stale-request-applied", 7),
    # brokers=4 with every bound at its maximum: the candidate for a run check cannot finish in 10 min.
    "controller-none-b4-max": ("controller", ["fencing=none", "brokers=4", "elections=6", "expiries=4", "crashes=4",
                                              "requests=8", "leader_epochs=6"], "no-stale-request-applied", 7),
    # brokers=3 with every bound at its maximum, controlled shutdown, broker_epoch=false and the
    # two-step election (Kafka < 2.1): the violation is 9 steps deep (10 states), check explores
    # 2.7 million states for it, bmc's relation is 21 shapes (docs/bmc.md, "The relation on workers").
    "controller-none-large": ("controller", ["fencing=none", "elections=6", "expiries=4", "crashes=4", "requests=8",
                                             "leader_epochs=6", "controlled_shutdown=true", "broker_epoch=false",
                                             "election=two-step"], "no-stale-request-applied", 9),
    # The same at brokers=4: check does not finish in 10 minutes, bmc finds the 10-state violation
    # (831 s CPU; docs/bmc.md, "Looking for a configuration too large for check").
    "controller-none-large-b4": ("controller", ["fencing=none", "brokers=4", "elections=6", "expiries=4", "crashes=4",
                                                "requests=8", "leader_epochs=6", "controlled_shutdown=true",
                                                "broker_epoch=false", "election=two-step"],
                                 "no-stale-request-applied", 9),
    "controller-epoch-b2": ("controller", ["fencing=epoch", "brokers=2"], "zk-writes-fenced", 4),
    "transactions-tv1": ("transactions", ["version=tv1"], "no-hanging-transaction", 7),
    # The run of issue 17 as the CLI makes it (--depth 8; the violation is 7 steps): docs/bmc.md,
    # "What is not reproduced", has its per-shape CPU after the dead-locals, tested-and and sorted rewrites.
    "transactions-tv1-d8": ("transactions", ["version=tv1"], "no-hanging-transaction", 8),
    # Measured with the invariant's sets kept symbolic (formula_sets.py), the CLI with --workers 2 at
    # load 4 to 8: violation, 8 states (check: 8), 784.3 s CPU (relation 565.5 s on the workers, 49
    # shapes, 53,298 paths, 4,793 moves; feasible.py's cut of escapes about 145 s), 24 min 46 s wall.
    # After main's later branch-free actions and int() run per value: 8 states, 894.8 s CPU (relation
    # 746.4 s, 63,050 paths, 9,178 moves), 18 min 54 s wall at load 4 to 5.
    "group-raw": ("group", ["sticky_claims=raw"], "no-double-assignment", 13),
    "replication-kip279": ("replication", ["replicas=3", "truncation=kip279"], "strong-isr", 10),
    # The same rule at replicas=2: 108 shapes, the violation 11 steps deep (12 states; docs/bmc.md,
    # "What is not reproduced", has both runs).
    "replication-kip279-r2": ("replication", ["replicas=2", "truncation=kip279"], "strong-isr", 11),
}


def _one(name: str, engine: str, timeout: float, solver: str = "fd", reduce: bool = True,
         symmetry: bool = False) -> dict:
    ref, params, inv, depth = CONFIGS[name]
    spec = build_spec(ref, params)
    props = [spec.property_named(inv)]
    started = time.process_time()
    wall = time.perf_counter()
    if engine == "bmc":
        r = bmc(spec, props, depth, timeout=timeout, solver=solver, reduce=reduce, symmetry=symmetry)
        extra = {k: r.extra.get(k) for k in ("logic", "shapes", "paths", "transitions", "relation_cpu",
                                             "commuting_pairs", "commute_cpu", "solver_checks", "bmc_depth", "limit")}
    else:
        r = explore(spec, props)
        extra = {"distinct_states": r.distinct_states}
    return {"result": r.result, "states": len(r.trace) if r.trace is not None else None,
            "cpu": round(time.process_time() - started, 1), "wall": round(time.perf_counter() - wall, 1),
            "peak_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024), **extra}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", choices=[*CONFIGS, []], help="configurations (default: all)")
    ap.add_argument("--timeout", type=float, default=1800.0, help="bmc's time limit in seconds")
    ap.add_argument("--check-timeout", type=float, default=None,
                    help="stop check after this many seconds (reported incomplete)")
    ap.add_argument("--engine", choices=("bmc", "check", "both"), default="both")
    ap.add_argument("--solver", choices=SOLVERS, default="fd",
                    help="bmc's unrolling: fd (bit-blasted, the default) or lia (Z3's QF_LIA)")
    ap.add_argument("--every-order", action="store_true",
                    help="bmc keeps both orders of adjacent steps that commute (no partial-order reduction)")
    ap.add_argument("--symmetry", action="store_true", help="bmc asks the first depths one state per orbit")
    ap.add_argument("--one", nargs=2, metavar=("NAME", "ENGINE"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        print(json.dumps(_one(args.one[0], args.one[1], args.timeout, args.solver, not args.every_order,
                              args.symmetry)))
        return 0
    engines = ("check", "bmc") if args.engine == "both" else (args.engine,)
    for name in args.names or CONFIGS:
        for engine in engines:
            cmd = [sys.executable, __file__, "--one", name, engine, "--timeout", str(args.timeout),
                   "--solver", args.solver] + (["--every-order"] if args.every_order else []) + (
                       ["--symmetry"] if args.symmetry else [])
            started = time.perf_counter()
            try:
                out = subprocess.run(cmd, capture_output=True, text=True,
                                     timeout=args.check_timeout if engine == "check" else None)
            except subprocess.TimeoutExpired:
                print(f"{name:22} {engine:6} incomplete: stopped after {time.perf_counter() - started:.0f} s wall "
                      f"(--check-timeout)", flush=True)
                continue
            line = out.stdout.strip().splitlines()[-1] if out.stdout.strip() else out.stderr.strip()[-300:]
            print(f"{name:22} {engine:6} {line}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
