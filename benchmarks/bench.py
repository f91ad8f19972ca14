"""Measure the local engine on named configurations of the bundled specs.

    python benchmarks/bench.py --list
    python benchmarks/bench.py replication-kip320-3r [--workers 2] [--repeat 3]
    python benchmarks/bench.py replication-kip320-3r --checkpoint-every 0 [--resume-after LEVEL]
    python benchmarks/bench.py replication-kip320-3r-epoch3 --workers 1 --frontier-memory 256M

For each configuration, in a fresh process: distinct states, states generated, depth, wall
seconds, CPU seconds (user + system, workers included: the honest figure on a busy machine),
states generated per second, peak memory (RSS of the checking process and, separately, of its
largest worker), bytes of peak RSS per distinct state, and the bytes per distinct state of the
visited set itself (fingerprint table, parent and successor-index columns).

``--checkpoint-every MIN`` checkpoints the run into a temporary directory (0: every level) and
also prints how many checkpoints were written, the wall seconds spent writing them and the size
of the largest. ``--resume-after LEVEL`` stops the run after that level (its checkpoint is the
previous level's) and resumes it in the same process: the figures are then the resumed run's
(the counts are the whole run's, as always; CPU seconds count both runs), with the seconds and
CPU seconds the checkpoint took to verify and load.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

from kafkamc.checker.resources import parse_size

CONFIGS: dict[str, tuple[str, dict[str, object], str]] = {
    "controller-default": ("controller", {}, "the default controller check"),
    "controller-epoch": ("controller", {"fencing": "epoch"}, "Kafka < 2.1 fencing (violates zk-writes-fenced)"),
    "controller-large": ("controller", {"leader_epochs": 2, "crashes": 1}, "the minutes-long controller check"),
    "replication-kip279-2r": ("replication", {"model": "tla", "truncation": "kip279", "replicas": 2}, "TLC parity: 9,027 states"),
    "replication-kip320-2r": ("replication", {"model": "tla", "truncation": "kip320", "replicas": 2}, "TLC parity: 5,973 states"),
    "replication-kip320-first-try-2r": (
        "replication", {"model": "tla", "truncation": "kip320-first-try", "replicas": 2}, "TLC parity: 8,429 states"),
    "replication-kip320-3r": (
        "replication", {"model": "tla", "truncation": "kip320", "replicas": 3, "log_size": 2, "max_records": 2, "max_leader_epoch": 2},
        "TLC parity: 737,794 states, depth 26 (TLC: 30 s with 2 workers, 54 s with 1)"),
    "replication-kip279-3r": ("replication", {"truncation": "kip279", "replicas": 3}, "violates strong-isr"),
    "replication-kip320-3r-epoch3": (
        "replication", {"replicas": 3, "max_leader_epoch": 3, "truncation": "kip320"},
        "12,520,828 states, depth 31: issue 13's memory case (9,985,570 states before the spec gained Kafka's rules)"),
    "replication-kip320-3r-epoch4": (
        "replication", {"replicas": 3, "max_leader_epoch": 4, "truncation": "kip320"},
        "158,707,039 states, depth 36: issue 13 item 4's first run (66 min, 8 GiB)"),
    "replication-kip320-3r-epoch4-tla": (
        "replication", {"model": "tla", "truncation": "kip320", "replicas": 3, "max_leader_epoch": 4},
        "issue 13 item 4's run of over 100 million states (benchmarks/scale_run.py)"),
    "transactions-default": ("transactions", {}, "the default transactions check"),
    "group-default": ("group", {}, "the default group check"),
}

_CHILD = r"""
import json, resource, shutil, sys, tempfile, time
from kafkamc.spec.registry import build_spec
from kafkamc.checker.multicore import explore_multicore
ref, params, workers = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3])
frontier, every, resume_after = json.loads(sys.argv[4]), json.loads(sys.argv[5]), json.loads(sys.argv[6])
spec = build_spec(ref, params)
extra = {}
if every is None:
    r = explore_multicore(spec, workers=workers, frontier_memory=frontier)
else:
    from kafkamc.checker.checkpoint import Checkpointer
    from kafkamc.checker.manifest import read_manifest, spec_identity
    from kafkamc.checker.watch import Stopped

    def stop(stats):
        if not stats.within_level and stats.level == resume_after:
            raise Stopped("interrupted")

    where = tempfile.mkdtemp(prefix="kafkamc-bench-")
    try:
        with Checkpointer(where, spec_identity(spec, ref), {}, every * 60.0) as ckpt:
            r = explore_multicore(spec, workers=workers, frontier_memory=frontier, checkpoint=ckpt,
                                  progress=stop if resume_after else None)
            extra = {"saves": ckpt.saves, "save_s": ckpt.save_seconds, "largest": ckpt.largest}
        if resume_after:
            with Checkpointer(where, spec_identity(spec, ref), {}, every * 60.0, read_manifest(where)) as ckpt:
                cpu0 = time.process_time()
                state = ckpt.resume()
                extra["load_s"], extra["load_cpu"] = ckpt.load_seconds, time.process_time() - cpu0
                ckpt.resume = lambda: state
                r = explore_multicore(spec, workers=workers, frontier_memory=frontier, checkpoint=ckpt)
    finally:
        shutil.rmtree(where)
me = resource.getrusage(resource.RUSAGE_SELF)
kids = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({
    "result": r.result, "violated": r.violated, "distinct": r.distinct_states,
    "generated": r.states_generated, "depth": r.depth, "seconds": r.seconds,
    "cpu": me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime,
    "rss_kb": me.ru_maxrss, "worker_rss_kb": kids.ru_maxrss,
    "visited_bytes": r.extra.get("visited_bytes"), "on_disk": r.extra.get("frontier_levels_on_disk"), **extra,
}))
"""


def run_one(name: str, workers: int, frontier_memory: int | None = None, every: float | None = None,
            resume_after: int | None = None) -> dict[str, object]:
    ref, params, _ = CONFIGS[name]
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, ref, json.dumps(params), str(workers), json.dumps(frontier_memory),
         json.dumps(every), json.dumps(resume_after)],
        capture_output=True, text=True,
    )
    if done.returncode != 0:
        raise SystemExit(f"{name}: failed: {done.stderr.strip().splitlines()[-1] if done.stderr else done.returncode}")
    return json.loads(done.stdout)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("configs", nargs="*", help="configuration names (default: all but the largest)")
    ap.add_argument("--list", action="store_true", help="list the configurations")
    ap.add_argument("--workers", type=int, default=len(os.sched_getaffinity(0)), help="local engine processes")
    ap.add_argument("--repeat", type=int, default=1, help="runs per configuration (best wall time is shown)")
    ap.add_argument("--frontier-memory", type=parse_size, default=None, metavar="SIZE",
                    help="with --workers 1: the frontier's memory budget, the rest on disk (default: all in memory)")
    ap.add_argument("--checkpoint-every", type=float, default=None, metavar="MIN",
                    help="checkpoint into a temporary directory at most every MIN minutes (0: every level)")
    ap.add_argument("--resume-after", type=int, default=None, metavar="LEVEL",
                    help="with --checkpoint-every: stop after LEVEL, then resume (figures of the resumed run)")
    args = ap.parse_args(argv)
    if args.resume_after is not None and args.checkpoint_every is None:
        print("--resume-after needs --checkpoint-every", file=sys.stderr)
        return 2
    if args.list:
        for name, (ref, params, note) in CONFIGS.items():
            print(f"{name:34} {ref} {params}  {note}")
        return 0
    names = args.configs or [n for n in CONFIGS if n not in (
        "replication-kip320-3r", "controller-large", "replication-kip320-3r-epoch3", "replication-kip320-3r-epoch4",
        "replication-kip320-3r-epoch4-tla")]
    for name in names:
        if name not in CONFIGS:
            print(f"unknown configuration {name!r}; allowed: {', '.join(CONFIGS)}", file=sys.stderr)
            return 2
    try:
        load = os.getloadavg()[0]
    except OSError:
        load = float("nan")
    print(f"# workers={args.workers} load-average-1m={load:.2f} cores={os.cpu_count()}")
    header = (f"{'configuration':34} {'result':10} {'distinct':>10} {'generated':>11} {'depth':>5} "
              f"{'wall s':>8} {'cpu s':>8} {'gen/s':>9} {'peak MB':>8} {'worker MB':>9} {'B/state':>8} "
              f"{'visited B/state':>15}")
    print(header)
    for name in names:
        runs = [run_one(name, args.workers, args.frontier_memory, args.checkpoint_every, args.resume_after)
                for _ in range(args.repeat)]
        best = min(runs, key=lambda r: r["seconds"])
        rate = best["generated"] / best["seconds"] if best["seconds"] else 0.0
        peak = best["rss_kb"] * 1024
        verdict = best["result"] if best["violated"] is None else f"{best['result']}:{best['violated']}"
        print(
            f"{name:34} {verdict[:10]:10} {best['distinct']:>10,} {best['generated']:>11,} {best['depth']:>5} "
            f"{best['seconds']:>8.2f} {best['cpu']:>8.2f} {rate:>9,.0f} {peak / 2**20:>8.1f} "
            f"{best['worker_rss_kb'] / 1024:>9.1f} {peak / max(best['distinct'], 1):>8.0f} "
            f"{(best['visited_bytes'] or 0) / max(best['distinct'], 1):>15.1f}"
            + (f"  ({best['on_disk']} levels on disk)" if best.get("on_disk") else ""),
            flush=True,
        )
        if "saves" in best:
            loaded = (f", loaded and verified in {best['load_s']:.2f} s ({best['load_cpu']:.2f} s CPU)"
                      if "load_s" in best else "")
            print(f"  checkpoints: {best['saves']} written in {best['save_s']:.2f} s, largest "
                  f"{best['largest'] / 2**20:.1f} MiB{loaded}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
