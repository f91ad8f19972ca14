"""Per-level timings of the local and the Spark engine on one named configuration.

    python benchmarks/spark_levels.py replication-737k [--master local[2]] [--partitions P]
    python benchmarks/spark_levels.py --spec replication -p replicas=3 [--engines spark]
    python benchmarks/spark_levels.py replication-737k --engines spark,spark-checkpoint

For each engine (each in a fresh subprocess, so peak memory is its own) it prints one line per
breadth-first level (seconds spent on the level, new states, successors generated), then depth,
distinct states, states generated, total seconds, states/s (generated per second, as the CLI
reports it) and peak resident memory: of the process for the local engine; of the Python driver,
the JVM (driver and executor in local mode) and the largest Python worker for the Spark engine.
Engine ``spark-checkpoint`` is Spark with ``--checkpoint`` (a fresh directory under the system's
temporary directory, removed afterwards): every level's blocks go through files. For Spark runs it
also prints the bytes of Spark's storage memory (the cached blocks, on every block manager) per
visited state, the frontiers the cached blocks hold left out.
The Spark total is given with and without the SparkContext start-up, and the fixed cost per
level is estimated as the intercept of a least-squares fit of level seconds against successors
generated in the level. The machine's load average is printed first and last: other processes
on the same cores change every number here.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

CONFIGS = {
    # The performance target: 737,794 distinct states, depth 26.
    "replication-737k": ("replication", ["model=tla", "truncation=kip320", "replicas=3"]),
    # The same model with two replicas: 5,973 states, 18 levels (a quick smoke run).
    "replication-small": ("replication", []),
    # A violating run: KIP-101 with three replicas, strong-isr fails at depth 11.
    "replication-kip101": ("replication", ["truncation=kip101", "replicas=3", "-i=strong-isr"]),
}


def _descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        parent = todo.pop()
        kids = []
        try:
            threads = os.listdir(f"/proc/{parent}/task")
        except OSError:
            threads = []
        for tid in threads:  # the JVM starts Python workers from threads other than its main one
            try:
                with open(f"/proc/{parent}/task/{tid}/children") as fh:
                    kids += [int(x) for x in fh.read().split()]
            except OSError:
                pass
        out.extend(kids)
        todo.extend(kids)
    return out


def _cpu_seconds(pid: int) -> float:
    """User plus system CPU seconds of a live process and of its reaped children."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def _status(pid: int) -> tuple[str, int]:
    """(command name, peak resident set in kB) of a live process."""
    name, peak = "?", 0
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("Name:"):
                    name = line.split()[1]
                elif line.startswith("VmHWM:"):
                    peak = int(line.split()[1])
    except OSError:
        pass
    return name, peak


def _child(args: argparse.Namespace) -> None:
    """Run one engine in this process and print a JSON report on the last line."""
    sys.path.insert(0, os.getcwd())
    from kafkamc.spec.registry import build_spec, select_properties

    spec = build_spec(args.spec, args.param)
    props = select_properties(type(spec), args.invariant)
    levels: list[dict] = []
    last = [time.perf_counter()]

    def progress(stats):
        now = time.perf_counter()
        levels.append({"level": stats.level, "seconds": now - last[0], "distinct": stats.distinct_states,
                       "generated": stats.states_generated, "new": stats.frontier})
        last[0] = now
        print(f"  level {stats.level:3d}: {levels[-1]['seconds']:7.2f} s, {stats.frontier:>9,} new, "
              f"{stats.distinct_states:>10,} distinct, {stats.states_generated:>11,} generated",
              file=sys.stderr, flush=True)

    report: dict = {"engine": args.child}
    if args.child == "local":
        from kafkamc.checker.multicore import explore_multicore

        cpu0 = _cpu_seconds(os.getpid())
        kids0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        # The local engine as `kafkamc check` runs it: on --workers processes (default: every core).
        result = explore_multicore(spec, props, workers=args.workers, progress=progress)
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
        report["driver_peak_kb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        report["worker_peak_kb"] = kids.ru_maxrss
        report["cpu_seconds"] = (_cpu_seconds(os.getpid()) - cpu0 + kids.ru_utime + kids.ru_stime
                                 - kids0.ru_utime - kids0.ru_stime)
    else:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        from pyspark import SparkConf, SparkContext

        from kafkamc.checker.spark import explore_spark

        started = time.perf_counter()
        conf = (SparkConf(loadDefaults=False).setMaster(args.master).setAppName("kafkamc-benchmark")
                .set("spark.ui.enabled", "false").set("spark.ui.showConsoleProgress", "false")
                .set("spark.pyspark.python", sys.executable))
        if args.driver_memory:
            conf.set("spark.driver.memory", args.driver_memory)
        sc = SparkContext(conf=conf)
        sc.setLogLevel("ERROR")
        report["startup_seconds"] = time.perf_counter() - started
        last[0] = time.perf_counter()
        before = {pid: _cpu_seconds(pid) for pid in [os.getpid()] + _descendants(os.getpid())}
        cpu0 = sum(before.values())
        if args.child == "spark-checkpoint":
            import tempfile

            from kafkamc.checker.manifest import spec_identity
            from kafkamc.checker.spark_checkpoint import SparkCheckpointer

            options = {"properties": [pr.name for pr in props], "symmetry": False, "deadlock": False,
                       "max_depth": None, "max_states": None}
            with tempfile.TemporaryDirectory(prefix="kafkamc-bench-") as tmp, \
                    SparkCheckpointer(tmp, spec_identity(spec, args.spec), options, 0.0) as ckpt:
                result = explore_spark(spec, props, partitions=args.partitions, progress=progress, checkpoint=ckpt)
                report["checkpoint_bytes"] = max(lv.get("checkpoint_bytes", 0) for lv in result.extra["levels"])
        else:
            result = explore_spark(spec, props, partitions=args.partitions, progress=progress)
        # Python workers started during the run count from zero.
        after = {pid: _cpu_seconds(pid) for pid in [os.getpid()] + _descendants(os.getpid())}
        report["cpu_seconds"] = sum(after.values()) - cpu0
        report["jvm_cpu_seconds"] = sum(c - before.get(pid, 0.0) for pid, c in after.items() if _status(pid)[0] == "java")
        report["driver_peak_kb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        procs = [_status(pid) for pid in _descendants(os.getpid())]
        report["jvm_peak_kb"] = max((kb for name, kb in procs if name == "java"), default=0)
        report["python_worker_peak_kb"] = max(
            [kb for name, kb in procs if name.startswith("python")] + [result.extra["executor_python_peak_rss_kb"]])
        report["partitions"] = result.extra["partitions"]
        report["master"] = result.extra["master"]
        report["engine_levels"] = result.extra["levels"]
        report["ship_seconds"] = result.extra.get("ship_seconds", 0.0)
        report["first_job_seconds"] = result.extra.get("first_job_seconds", 0.0)
        sc.stop()
    report.update(result=result.result, violated=result.violated, distinct=result.distinct_states,
                  generated=result.states_generated, depth=result.depth, seconds=result.seconds, levels=levels,
                  trace=None if result.trace is None else len(result.trace))
    print(json.dumps(report))


def _storage_per_state(levels: list[dict], both_cached: bool) -> None:
    """Spark's storage memory per visited state, measured after each level's job: the level's
    input blocks are cached (visited set and frontier before the level) and, without
    --checkpoint, its output blocks too (with the level's new frontier); the frontiers are
    subtracted, what is left is the visited sets' cost."""
    rows = []
    prev_frontier = 0
    for lv in levels:
        used = lv.get("storage_used_bytes", -1)
        frontiers = prev_frontier + (lv["frontier_bytes"] if both_cached else 0)
        if used > 0 and lv["distinct"]:
            rows.append((lv["level"], used, frontiers, lv["distinct"], (used - frontiers) / lv["distinct"]))
        prev_frontier = lv["frontier_bytes"]
    if not rows:
        print("  storage memory: not measured")
        return
    last = rows[-1]
    # Early levels hold a few states and Spark's fixed overhead per block; from a tenth of the
    # visited set on, the bytes per state are the representation's.
    peak = max((r for r in rows if r[3] >= last[3] / 10), key=lambda r: r[4])
    print(f"  storage memory (cached blocks) per visited state, frontiers left out: {last[4]:.2f} B at the last level "
          f"({last[1]:,} B in use, {last[2]:,} B of it frontiers, {last[3]:,} visited); at most {peak[4]:.2f} B "
          f"(level {peak[0]}) from a tenth of the visited states on; in use at most "
          f"{max(r[1] for r in rows):,} B")


def _fixed_cost(levels: list[dict]) -> tuple[float, float]:
    """Intercept and slope of level seconds against successors generated in the level (level 2,
    which also pays for starting the Python workers, is left out)."""
    if len(levels) < 3:
        return float("nan"), float("nan")
    xs, ys, prev = [], [], levels[1]["generated"]
    for lv in levels[2:]:
        xs.append(lv["generated"] - prev)
        ys.append(lv["seconds"])
        prev = lv["generated"]
    if len(xs) < 3:
        return float("nan"), float("nan")
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    var = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / var if var else 0.0
    return my - slope * mx, slope


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("config", nargs="?", choices=sorted(CONFIGS), help="a named configuration")
    parser.add_argument("--spec", help="a spec instead of a named configuration")
    parser.add_argument("-p", "--param", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("-i", "--invariant", action="append", default=[])
    parser.add_argument("--engines", default="local,spark,local",
                        help="comma-separated runs (default local,spark,local: the local engine before and after, "
                             "since the load of other processes drifts)")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--partitions", type=int, default=None)
    parser.add_argument("--driver-memory", default=None, help="spark.driver.memory (the local-mode executor too)")
    parser.add_argument("--workers", type=int, default=len(os.sched_getaffinity(0)),
                        help="processes of the local engine (default: every core, as kafkamc check does)")
    parser.add_argument("--child", choices=("local", "spark", "spark-checkpoint"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.config:
        args.spec, extra = CONFIGS[args.config]
        args.param = [e for e in extra if not e.startswith("-i=")] + args.param
        args.invariant = [e[3:] for e in extra if e.startswith("-i=")] + args.invariant
    if not args.spec:
        parser.error("name a configuration or --spec")
    if args.child:
        _child(args)
        return

    print(f"{args.spec} {' '.join(args.param)} {' '.join('-i ' + i for i in args.invariant)}")
    print(f"load average before: {os.getloadavg()}, cores: {os.cpu_count()}")
    reports: dict[str, list[dict]] = {}
    for engine in args.engines.split(","):
        cmd = [sys.executable, os.path.abspath(__file__), "--spec", args.spec, "--child", engine,
               "--master", args.master, "--workers", str(args.workers)]
        for prm in args.param:
            cmd += ["-p", prm]
        for inv in args.invariant:
            cmd += ["-i", inv]
        if args.partitions:
            cmd += ["--partitions", str(args.partitions)]
        if args.driver_memory:
            cmd += ["--driver-memory", args.driver_memory]
        print(f"\n== engine {engine}", flush=True)
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
        if proc.returncode != 0:
            print(f"engine {engine} failed (exit {proc.returncode})")
            continue
        rep = json.loads(proc.stdout.strip().splitlines()[-1])
        reports.setdefault(engine, []).append(rep)
        rate = rep["generated"] / rep["seconds"] if rep["seconds"] else 0.0
        print(f"  {rep['result']}{' ' + rep['violated'] if rep['violated'] else ''}: depth {rep['depth']}, "
              f"{rep['distinct']:,} distinct, {rep['generated']:,} generated, {rep['seconds']:.1f} s, "
              f"{rate:,.0f} states/s; CPU {rep['cpu_seconds']:.1f} s; load average now {os.getloadavg()[0]:.1f}")
        if rep.get("checkpoint_bytes"):
            print(f"  largest checkpoint level on disk: {rep['checkpoint_bytes']:,} B")
        if engine == "local":
            print(f"  peak memory: {rep['driver_peak_kb'] / 1024:,.0f} MiB")
        else:
            explore_s = sum(lv["seconds"] for lv in rep["levels"][1:])
            fixed, slope = _fixed_cost(rep["levels"])
            small = [lv["seconds"] for lv in rep["levels"][2:] if lv["new"] < 200]
            print(f"  master {rep['master']}, P={rep['partitions']}; SparkContext start-up "
                  f"{rep['startup_seconds']:.1f} s (not in the total); levels 2..{rep['depth']} took {explore_s:.1f} s")
            print(f"  shipping the code {rep['ship_seconds']:.1f} s, first job (level 1's blocks, Python workers "
                  f"start) {rep['first_job_seconds']:.1f} s")
            print(f"  CPU: {rep['cpu_seconds']:.1f} s in all, of which the JVM "
                  f"{rep['jvm_cpu_seconds']:.1f} s")
            print(f"  fixed cost per level (fit): {fixed:.2f} s, marginal {slope * 1e6:.1f} us per successor;"
                  f" median of levels with < 200 new states: "
                  f"{statistics.median(small) if small else float('nan'):.2f} s")
            print("  per level: seconds = slowest expand task + slowest merge task + the rest (Spark)")
            for lv in rep["engine_levels"]:
                rest = lv["seconds"] - lv["expand_seconds"] - lv["merge_seconds"]
                print(f"    level {lv['level']:3d}: {lv['seconds']:6.2f} s = {lv['expand_seconds']:6.2f} + "
                      f"{lv['merge_seconds']:6.2f} + {rest:5.2f}  ({lv['new']:,} new, {lv['generated']:,} generated)")
            _storage_per_state(rep["engine_levels"], engine == "spark")
            print(f"  peak memory: driver (Python) {rep['driver_peak_kb'] / 1024:,.0f} MiB, JVM "
                  f"{rep['jvm_peak_kb'] / 1024:,.0f} MiB, largest Python worker "
                  f"{rep['python_worker_peak_kb'] / 1024:,.0f} MiB")
    spark_runs = [e for e in ("spark", "spark-checkpoint") if e in reports]
    if "local" in reports and spark_runs:
        a, b = reports["local"][0], reports[spark_runs[0]][0]
        same = all(a[k] == b[k] for k in ("result", "violated", "distinct", "generated", "depth", "trace"))
        local_s = statistics.fmean(r["seconds"] for r in reports["local"])
        local_cpu = statistics.fmean(r["cpu_seconds"] for r in reports["local"])
        print(f"\nsame verdict, counts, depth and trace length: {same}")
        print(f"spark/local wall time: {b['seconds'] / local_s:.2f}x (local: mean of {len(reports['local'])} runs, "
              f"{local_s:.1f} s); spark/local CPU time: {b['cpu_seconds'] / local_cpu:.2f}x")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
