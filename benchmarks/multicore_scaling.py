"""How the multicore engine would scale: the serial fraction, measured per level, and Amdahl's law.

    python benchmarks/multicore_scaling.py replication-kip320-3r [--workers 2] [--curve 1,2] [--cores 4,8,16]

Runs the configuration (a name of ``benchmarks/bench.py --list``) once with ``--workers`` worker
processes, in a fresh process, and prints per level the coordinator's CPU seconds (serial: every
worker waits for it, and before the fork it does all the work) and each worker's CPU seconds
(parallel). With S the coordinator's CPU over the whole run (setup, the levels before the fork and
the replay of a counterexample included) and P the workers' CPU, the serial fraction is
f = S / (S + P) (imports and building the spec are left out) and Amdahl's law predicts a speedup of 1 / (f + (1 - f) / n) on n cores. That is an
upper bound: a level ends when its slowest worker does, so the imbalance (the slowest worker's CPU
over the mean, per level, weighted by the level's work) is printed too.

``--curve`` also runs the configuration with each listed number of workers (1: the sequential
engine) and prints wall and CPU seconds: a real curve, as far as this machine's cores go. Wall
time on a shared machine measures the other users too; CPU seconds do not.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import CONFIGS  # noqa: E402  (a sibling script, not a package)

_CHILD = r"""
import json, resource, sys, time
from kafkamc.spec.registry import build_spec
from kafkamc.checker.multicore import explore_multicore
ref, params, workers = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3])
spec = build_spec(ref, params)
timings = []
wall, cpu = time.perf_counter(), time.process_time()
try:
    r = explore_multicore(spec, workers=workers, timings=timings)
except TypeError:  # an engine from before per-level timings: totals only
    timings = None
    r = explore_multicore(spec, workers=workers)
wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
me = resource.getrusage(resource.RUSAGE_SELF)
kids = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({
    "result": r.result, "violated": r.violated, "distinct": r.distinct_states,
    "generated": r.states_generated, "depth": r.depth, "wall": wall,
    "serial": cpu, "parallel": kids.ru_utime + kids.ru_stime,
    "rss_kb": me.ru_maxrss, "worker_rss_kb": kids.ru_maxrss,
    "levels": None if timings is None else [
        {"level": t.level, "wall": t.wall, "serial": t.serial, "parallel": list(t.parallel)} for t in timings],
}))
"""


def run(name: str, workers: int) -> dict:
    ref, params, _ = CONFIGS[name]
    done = subprocess.run([sys.executable, "-c", _CHILD, ref, json.dumps(params), str(workers)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{name}: failed: {done.stderr.strip().splitlines()[-1] if done.stderr else done.returncode}")
    return json.loads(done.stdout)


def amdahl(f: float, n: int) -> float:
    return 1.0 / (f + (1.0 - f) / n)


def _ints(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",")]
    except ValueError:
        values = []
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: allowed: positive integers separated by commas, such as 1,2")
    return values


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("config", help="a configuration of benchmarks/bench.py --list")
    ap.add_argument("--workers", type=int, default=2, help="worker processes of the measured run (default 2)")
    ap.add_argument("--curve", type=_ints, default=[], help="also run with these worker counts, e.g. 1,2")
    ap.add_argument("--cores", type=_ints, default=[4, 8, 16], help="predict the speedup on these core counts")
    ap.add_argument("--levels", action="store_true", help="print every level's timings")
    args = ap.parse_args(argv)
    if args.config not in CONFIGS:
        print(f"unknown configuration {args.config!r}; allowed: {', '.join(CONFIGS)}", file=sys.stderr)
        return 2
    if args.workers < 2:
        print(f"--workers {args.workers}: allowed: at least 2 (one worker is the sequential engine)", file=sys.stderr)
        return 2
    r = run(args.config, args.workers)
    print(f"# {args.config}: {r['result']}{':' + r['violated'] if r['violated'] else ''}, {r['distinct']:,} distinct, "
          f"{r['generated']:,} generated, depth {r['depth']}; load-average-1m={os.getloadavg()[0]:.2f}")
    print(f"# workers={args.workers}: wall {r['wall']:.2f} s; CPU seconds: coordinator (serial) {r['serial']:.2f}, "
          f"workers (parallel) {r['parallel']:.2f}; peak RSS: coordinator {r['rss_kb'] / 1024:.1f} MiB, "
          f"largest worker {r['worker_rss_kb'] / 1024:.1f} MiB")
    levels = r["levels"]
    if levels:
        work = sum(sum(lv["parallel"]) for lv in levels)
        slowest = sum(max(lv["parallel"], default=0.0) * len(lv["parallel"]) for lv in levels)
        if args.levels:
            print(f"{'level':>5} {'wall s':>8} {'serial s':>9} {'parallel s (per worker)':>30}")
            for lv in levels:
                per = " ".join(f"{c:.3f}" for c in lv["parallel"])
                print(f"{lv['level']:>5} {lv['wall']:>8.3f} {lv['serial']:>9.3f} {per:>30}")
        forked = [lv for lv in levels if lv["parallel"]]
        print(f"# levels: {len(levels)} ({len(forked)} with workers); in those, coordinator CPU "
              f"{sum(lv['serial'] for lv in forked):.3f} s, workers' CPU {work:.2f} s; "
              f"imbalance (slowest worker / mean) {slowest / work if work else 1.0:.3f}")
    total = r["serial"] + r["parallel"]
    f = r["serial"] / total if total else 1.0
    print(f"serial fraction f = {f:.4f} ({100 * f:.2f}%)")
    print("predicted speedup (Amdahl): " + ", ".join(f"{n} cores {amdahl(f, n):.2f}" for n in args.cores))
    for w in args.curve:
        c = run(args.config, w)
        print(f"curve: workers={w}: wall {c['wall']:.2f} s, CPU {c['serial'] + c['parallel']:.2f} s "
              f"(coordinator {c['serial']:.2f}, workers {c['parallel']:.2f}), {c['distinct']:,} distinct")
    return 0


if __name__ == "__main__":
    sys.exit(main())
