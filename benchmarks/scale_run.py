"""Run one large ``kafkamc check`` to completion and measure it as a whole: issue 13 item 4.

    python benchmarks/scale_run.py                      # the 100-million-state configuration
    python benchmarks/scale_run.py --config NAME        # another of benchmarks/bench.py --list
    python benchmarks/scale_run.py -- check replication -p replicas=2   # any kafkamc command

The command runs in a fresh process (``python -m kafkamc ... --json --progress``); every
``--interval`` seconds (default 0.1) this script sums the resident set size (RSS, from ``statm``:
microseconds) of the coordinator and all its descendants, from ``/proc``, and reads their
proportional set size (PSS: a page the forked workers share with the coordinator counted once;
``smaps_rollup``, about 10 ms a GiB) once a second and whenever the RSS sum comes within a tenth
of its peak (PSS <= RSS, so that cannot miss the PSS peak by more than that tenth). Each
process's own peak is its ``VmHWM`` (the kernel's high-water mark of its RSS, read at every
sample, so a spike between two samples is not missed). ``--samples FILE`` writes every sample
(seconds, RSS sum, each process's RSS) to find where a peak falls. It prints the distinct states, states generated, depth, verdict,
wall seconds, CPU seconds (user + system of the whole tree, from the kernel's accounting of
waited-for children), states per wall second, peak RSS and PSS of all processes together, each
process's peak (``VmHWM``), and the load average during the run. The progress lines go to
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
# and 6 GiB. KIP-320 replication of three replicas with four leader epochs, the TLA+ model's
# rules (model=tla: fewer states than Kafka's rules, 158.7 million, which took 66 minutes).
SCALE_CONFIG = "replication-kip320-3r-epoch4-tla"
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


def _rss_and_hwm(pid: int) -> tuple[int, int]:
    """(RSS, VmHWM: the peak RSS so far) of one process in bytes; zeros once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            fields = dict(line.split(":", 1) for line in f if line.startswith(("VmRSS", "VmHWM")))
        return int(fields["VmRSS"].split()[0]) * 1024, int(fields["VmHWM"].split()[0]) * 1024
    except (OSError, ValueError, KeyError):
        return 0, 0


def run(argv: list[str], log: str | None, interval: float = 0.1, samples: str | None = None) -> dict[str, object]:
    load0 = os.getloadavg()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    err = open(log, "w") if log else None
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "kafkamc", *argv, "--json", "--progress"],
                            stdout=subprocess.PIPE, stderr=err, text=True)
    peak_rss = peak_pss = peak_at = 0.0
    hwm: dict[int, int] = {}  # per process: its peak RSS (the kernel's VmHWM)
    at_peak: list[tuple[int, int]] = []  # (pid, RSS) of each process when the RSS sum peaked
    loads = [load0[0]]
    pss_at = 0.0
    out = open(samples, "w") if samples else None
    out_parts: list[str] = []
    import threading

    reader = threading.Thread(target=lambda: out_parts.append(proc.stdout.read()), daemon=True)  # type: ignore[union-attr]
    reader.start()
    while proc.poll() is None:
        now = time.perf_counter() - started
        pids = _tree(proc.pid)
        mems = [_rss_and_hwm(p) for p in pids]
        for p, (_, h) in zip(pids, mems):
            hwm[p] = max(hwm.get(p, 0), h)
        total = sum(r for r, _ in mems)
        if total > peak_rss:
            peak_rss, peak_at, at_peak = total, now, [(p, r) for p, (r, _) in zip(pids, mems)]
        if now - pss_at >= 1.0 or total >= 0.9 * peak_rss:
            peak_pss = max(peak_pss, sum(_memory(p)[1] for p in pids))
            pss_at = now
            loads.append(os.getloadavg()[0])
        if out is not None:
            out.write(f"{now:.2f} {total} " + " ".join(f"{p}:{r}" for p, (r, _) in zip(pids, mems)) + "\n")
        time.sleep(interval)
    wall = time.perf_counter() - started
    if out is not None:
        out.close()
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
        "peak_rss": peak_rss, "peak_pss": peak_pss, "peak_at": peak_at, "at_peak": at_peak,
        "hwm": hwm, "peak_largest": max(hwm.values(), default=0), "top": proc.pid,
        "load_min": min(loads), "load_max": max(loads), "load_mean": sum(loads) / len(loads),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default=SCALE_CONFIG, help=f"a configuration of bench.py (default {SCALE_CONFIG})")
    ap.add_argument("--log", default=None, metavar="FILE", help="where the progress lines go (default: stderr)")
    ap.add_argument("--interval", type=float, default=0.1, metavar="S", help="seconds between samples (default 0.1)")
    ap.add_argument("--samples", default=None, metavar="FILE", help="write every sample there")
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
    if args.interval <= 0:
        print(f"--interval {args.interval}: allowed: a number of seconds above 0", file=sys.stderr)
        return 2
    r = run(cmd, args.log, args.interval, args.samples)
    gib = 2**30
    rate = (r["distinct"] or 0) / r["wall"] if r["wall"] else 0.0
    verdict = r["result"] if r["violated"] is None else f"{r['result']}:{r['violated']}"
    print(f"result {verdict} (exit {r['exit']}{', reason ' + str(r['reason']) if r['reason'] else ''})")
    print(f"distinct states {r['distinct'] or 0:,}, states generated {r['generated'] or 0:,}, depth {r['depth']}")
    print(f"wall {r['wall']:.1f} s, CPU {r['cpu']:.1f} s (user + system, all processes), "
          f"{rate:,.0f} distinct states/s, {(r['generated'] or 0) / r['wall']:,.0f} generated/s")
    print(f"peak memory of all processes: RSS {r['peak_rss'] / gib:.2f} GiB at {r['peak_at']:.1f} s, "
          f"PSS {r['peak_pss'] / gib:.2f} GiB (sampled every {args.interval:g} s); "
          f"largest process peak (VmHWM) {r['peak_largest'] / gib:.2f} GiB")
    role = lambda pid: "coordinator" if pid == r["top"] else f"worker {pid}"  # noqa: E731
    mib = 2**20
    print("at the peak: " + ", ".join(f"{role(p)} {m / mib:,.0f} MiB" for p, m in r["at_peak"]))  # type: ignore[union-attr]
    print("each process's peak (VmHWM): " + ", ".join(f"{role(p)} {m / mib:,.0f} MiB"
                                                      for p, m in r["hwm"].items()))  # type: ignore[union-attr]
    print(f"load average (1 min) during the run: {r['load_min']:.2f} to {r['load_max']:.2f}, mean {r['load_mean']:.2f}")
    return 0 if r["exit"] in (0, 1) else 1


if __name__ == "__main__":
    sys.exit(main())
