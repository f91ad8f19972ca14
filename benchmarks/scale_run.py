"""Run one large ``kafkamc check`` to completion and measure it as a whole: issue 13 item 4.

    python benchmarks/scale_run.py                      # the 100-million-state configuration
    python benchmarks/scale_run.py --config NAME        # another of benchmarks/bench.py --list
    python benchmarks/scale_run.py -- check replication -p replicas=2   # any kafkamc command

The command runs in a fresh process (``python -m kafkamc ... --json --progress``); every second
this script sums the resident set size (RSS) and the proportional set size (PSS: a page the
forked workers share with the coordinator counted once) of the coordinator and all its
descendants, from ``/proc``. It prints the distinct states, states generated, depth, verdict,
wall seconds, CPU seconds (user + system of the whole tree, from the kernel's accounting of
waited-for children), states per wall second, peak RSS and PSS of all processes together, the
peak of the largest one, and the load average before and after. The progress lines go to
``--log FILE`` (default: standard error).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

from bench import CONFIGS

__all__ = ["main", "SCALE_CONFIG", "SCALE_OPTIONS"]

# Issue 13 item 4: at least 100 million distinct states on 2 cores and 24 GiB, in under an hour
# and 6 GiB. KIP-320 replication of three replicas with four leader epochs.
SCALE_CONFIG = "replication-kip320-3r-epoch4"
SCALE_OPTIONS = ("--workers", "2", "--frontier-memory", "1G")


def _tree(root: int) -> list[int]:
    """``root`` and its descendants (children lists from /proc)."""
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        try:
            with open(f"/proc/{pid}/task/{pid}/children") as f:
                todo.extend(int(c) for c in f.read().split())
        except OSError:
            pass
    return out


def _memory(pid: int) -> tuple[int, int]:
    """(RSS, PSS) of one process in bytes; zeros once it is gone."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            fields = dict(line.split(":", 1) for line in f if ":" in line and not line.startswith(" "))
        kb = lambda name: int(fields.get(name, "0 kB").split()[0]) * 1024  # noqa: E731
        return kb("Rss"), kb("Pss")
    except (OSError, ValueError):
        return 0, 0


def run(argv: list[str], log: str | None) -> dict[str, object]:
    load0 = os.getloadavg()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    err = open(log, "w") if log else None
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "kafkamc", *argv, "--json", "--progress"],
                            stdout=subprocess.PIPE, stderr=err, text=True)
    peak_rss = peak_pss = peak_one = 0
    loads = [load0[0]]
    out_parts: list[str] = []
    import threading

    reader = threading.Thread(target=lambda: out_parts.append(proc.stdout.read()), daemon=True)  # type: ignore[union-attr]
    reader.start()
    while proc.poll() is None:
        mems = [_memory(p) for p in _tree(proc.pid)]
        peak_rss = max(peak_rss, sum(r for r, _ in mems))
        peak_pss = max(peak_pss, sum(p for _, p in mems))
        peak_one = max(peak_one, max((r for r, _ in mems), default=0))
        loads.append(os.getloadavg()[0])
        time.sleep(1.0)
    wall = time.perf_counter() - started
    reader.join()
    if err is not None:
        err.close()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    doc = json.loads(out_parts[0]) if out_parts and out_parts[0].strip() else {}
    return {
        "exit": proc.returncode, "result": doc.get("result"), "violated": doc.get("violated"),
        "reason": doc.get("reason"), "distinct": doc.get("distinct_states"), "generated": doc.get("states_generated"),
        "depth": doc.get("depth"), "wall": wall, "engine_seconds": doc.get("seconds"),
        "cpu": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
        "peak_rss": peak_rss, "peak_pss": peak_pss, "peak_largest": peak_one,
        "load_min": min(loads), "load_max": max(loads), "load_mean": sum(loads) / len(loads),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default=SCALE_CONFIG, help=f"a configuration of bench.py (default {SCALE_CONFIG})")
    ap.add_argument("--log", default=None, metavar="FILE", help="where the progress lines go (default: stderr)")
    ap.add_argument("command", nargs="*", help="after --: a kafkamc command line instead of --config")
    args = ap.parse_args(argv)
    if args.command:
        cmd = list(args.command)
    else:
        if args.config not in CONFIGS:
            print(f"unknown configuration {args.config!r}; allowed: {', '.join(CONFIGS)}", file=sys.stderr)
            return 2
        ref, params, _ = CONFIGS[args.config]
        cmd = ["check", ref, *[x for k, v in params.items() for x in ("-p", f"{k}={v}")], *SCALE_OPTIONS]
    print("# kafkamc " + " ".join(cmd), flush=True)
    r = run(cmd, args.log)
    gib = 2**30
    rate = (r["distinct"] or 0) / r["wall"] if r["wall"] else 0.0
    verdict = r["result"] if r["violated"] is None else f"{r['result']}:{r['violated']}"
    print(f"result {verdict} (exit {r['exit']}{', reason ' + str(r['reason']) if r['reason'] else ''})")
    print(f"distinct states {r['distinct'] or 0:,}, states generated {r['generated'] or 0:,}, depth {r['depth']}")
    print(f"wall {r['wall']:.1f} s, CPU {r['cpu']:.1f} s (user + system, all processes), "
          f"{rate:,.0f} distinct states/s, {(r['generated'] or 0) / r['wall']:,.0f} generated/s")
    print(f"peak memory of all processes: RSS {r['peak_rss'] / gib:.2f} GiB, PSS {r['peak_pss'] / gib:.2f} GiB; "
          f"largest process RSS {r['peak_largest'] / gib:.2f} GiB (sampled every second)")
    print(f"load average (1 min) during the run: {r['load_min']:.2f} to {r['load_max']:.2f}, mean {r['load_mean']:.2f}")
    return 0 if r["exit"] in (0, 1) else 1


if __name__ == "__main__":
    sys.exit(main())
