"""The cost of a liveness check against a safety-only check of the same model.

    python benchmarks/liveness.py --list
    python benchmarks/liveness.py controller-default [--repeat 3]

For each configuration, two fresh processes: ``safety`` explores the model with the sequential
local engine and no property (``explore(spec, ())``: the bare cost of the search), ``liveness``
builds the state graph and checks the liveness property under the spec's fairness
(``check -l NAME``, no invariants). Each prints distinct states, states generated, wall and CPU
seconds, states generated per second and peak RSS (and bytes of it per distinct state); the last
column is the liveness run's cost relative to the safety run's.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

CONFIGS: dict[str, tuple[str, dict[str, object], str, str]] = {
    "controller-default": ("controller", {}, "controller-eventually-elected", "36,974 states"),
    "replication-kip320-2r": ("replication", {"truncation": "kip320"}, "follower-catches-up", "5,973 states"),
    "replication-kip279-2r": ("replication", {"truncation": "kip279"}, "follower-catches-up", "9,027 states"),
    "replication-kip320-3r": ("replication", {"truncation": "kip320", "replicas": 3}, "follower-catches-up",
                              "737,794 states (minutes)"),
}

_CHILD = r"""
import json, resource, sys, time
from kafkamc.spec.registry import build_spec
mode, ref, params, prop = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4]
spec = build_spec(ref, params)
cpu0 = time.process_time()
if mode == "safety":
    from kafkamc.checker.local import explore
    r = explore(spec, ())
else:
    from kafkamc.checker.liveness import check_liveness, resolve_fairness
    cls = type(spec)
    r = check_liveness(spec, (), [cls.liveness_named(prop)], resolve_fairness(cls))
me = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"result": r.result, "distinct": r.distinct_states, "generated": r.states_generated,
                  "seconds": r.seconds, "cpu": me.ru_utime + me.ru_stime, "rss_kb": me.ru_maxrss}))
"""


def run_one(mode: str, name: str) -> dict[str, object]:
    ref, params, prop, _ = CONFIGS[name]
    done = subprocess.run([sys.executable, "-c", _CHILD, mode, ref, json.dumps(params), prop],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{name} {mode}: failed: {done.stderr.strip().splitlines()[-1] if done.stderr else ''}")
    return json.loads(done.stdout)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("configs", nargs="*", help="configuration names (default: all but the largest)")
    ap.add_argument("--list", action="store_true", help="list the configurations")
    ap.add_argument("--repeat", type=int, default=1, help="runs per configuration and mode (best wall time)")
    args = ap.parse_args(argv)
    if args.list:
        for name, (ref, params, prop, note) in CONFIGS.items():
            print(f"{name:24} {ref} {params} -l {prop}  {note}")
        return 0
    names = args.configs or [n for n in CONFIGS if n != "replication-kip320-3r"]
    for name in names:
        if name not in CONFIGS:
            print(f"unknown configuration {name!r}; allowed: {', '.join(CONFIGS)}", file=sys.stderr)
            return 2
    try:
        load = os.getloadavg()[0]
    except OSError:
        load = float("nan")
    print(f"# load-average-1m={load:.2f} cores={os.cpu_count()}")
    print(f"{'configuration':24} {'mode':9} {'result':10} {'distinct':>9} {'generated':>10} {'wall s':>7} "
          f"{'cpu s':>7} {'gen/s':>8} {'peak MB':>8} {'B/state':>8} {'x safety (cpu, MB)':>19}")
    for name in names:
        base = None
        for mode in ("safety", "liveness"):
            runs = [run_one(mode, name) for _ in range(args.repeat)]
            best = min(runs, key=lambda r: r["seconds"])
            rate = best["generated"] / best["seconds"] if best["seconds"] else 0.0
            peak = best["rss_kb"] * 1024
            ratio = ""
            if base is None:
                base = best
            else:
                ratio = f"{best['cpu'] / max(base['cpu'], 1e-9):.1f}x, {best['rss_kb'] / max(base['rss_kb'], 1):.1f}x"
            print(f"{name:24} {mode:9} {best['result']:10} {best['distinct']:>9,} {best['generated']:>10,} "
                  f"{best['seconds']:>7.2f} {best['cpu']:>7.2f} {rate:>8,.0f} {peak / 2**20:>8.1f} "
                  f"{peak / max(best['distinct'], 1):>8.0f} {ratio:>19}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
