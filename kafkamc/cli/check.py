"""``kafkamc check``: exhaustive breadth-first search of a spec's reachable states."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from functools import partial
from pathlib import Path
from typing import Any

from kafkamc.checker.frontier import DEFAULT_FRONTIER_MEMORY
from kafkamc.checker.resources import default_memory_limit
from kafkamc.cli.args import NO_LIMIT, add_check_arguments, print_progress
from kafkamc.cli.output import check_counterexample_paths, write_counterexample
from kafkamc.cli.resume import (
    RESUMABLE, add_checkpoint_arguments, checkpoint_json, checkpointer, finished_result, prepare_resume,
    report_checkpoint,
)
from kafkamc.counterexamples.render import (
    coverage_warnings, render_coverage, render_summary, render_trace, result_to_json,
)
from kafkamc.errors import UsageError
from kafkamc.result import INCOMPLETE, OK, VIOLATION, CheckResult
from kafkamc.terminal import printable, printable_lines
from kafkamc.spec.registry import build_spec, select_properties

__all__ = ["register", "run_check", "spark_engine", "spark_missing", "EXIT_FOR_RESULT"]

EXIT_FOR_RESULT = {OK: 0, VIOLATION: 1, INCOMPLETE: 4}


def register(subparsers: Any) -> None:
    chk = subparsers.add_parser("check", help="exhaustively check a spec's invariants (breadth-first)")
    chk.add_argument("spec", nargs="?", default=None,
                     help="a bundled spec name (see 'kafkamc list') or module:Class (omitted with --resume DIR)")
    add_check_arguments(chk)
    add_checkpoint_arguments(chk)
    chk.set_defaults(run=_cmd_check)


SPARK_EXTRA = "pip install 'kafkamc[spark]'"


def spark_missing() -> str | None:
    """What the Spark engine lacks here: pyspark is an optional dependency (the ``spark`` extra;
    numpy is in the base install); None when it imports."""
    try:
        __import__("pyspark")
    except ImportError:
        return f"needs pyspark, which this installation lacks; install the spark extra: {SPARK_EXTRA}"
    return None


def spark_engine() -> Any:
    """The Spark engine's entry point, or UsageError saying what to install."""
    missing = spark_missing()
    if missing:
        raise UsageError(f"--engine spark {missing}")
    try:
        from kafkamc.checker.spark import explore_spark
    except ImportError as exc:
        raise UsageError(f"engine spark is not available: {exc}") from None
    return explore_spark


def run_check(args: argparse.Namespace, spec_ref: str) -> CheckResult:
    """Resolve the spec, parameters and properties from ``args`` and run the chosen engine."""
    spec = build_spec(spec_ref, args.param)
    if getattr(args, "liveness", None) or getattr(args, "fair", None) or getattr(args, "strong_fair", None) \
            or getattr(args, "no_fairness", False):
        from kafkamc.cli.liveness import run_liveness

        return run_liveness(args, spec)
    props = select_properties(type(spec), args.invariant)
    if getattr(args, "recoverability", None):
        names = args.recoverability
        recs = [type(spec).recoverability_named(n) for n in names]
        if args.engine != "local":
            raise UsageError("-r/--recoverability is checked on the state graph by the local engine only")
        for flag, given in (("--max-depth", args.max_depth), ("--deadlock", args.deadlock or None),
                            ("--workers", args.workers), ("--max-memory", getattr(args, "max_memory", None)),
                            *frontier_flags(args)):
            if given is not None:
                raise UsageError(f"{flag} does not apply with -r (the whole state graph is built); allowed with -r: "
                                 "-p, -i, --max-states, --symmetry, --json, --out, --html, --progress")
        try:
            from kafkamc.checker.graph import check_recoverability
        except ImportError:
            raise UsageError("-r: this installation cannot check recoverability properties") from None
        return check_recoverability(
            spec, props, recs, max_states=args.max_states, symmetry=args.symmetry,
            progress=print_progress if (args.progress or (sys.stderr.isatty() and not args.json)) else None,
        )
    show_progress = args.progress or (sys.stderr.isatty() and not args.json)
    progress = print_progress if show_progress else None
    engine: Any
    if args.engine == "spark":
        explore_spark = spark_engine()
        if args.workers is not None:
            raise UsageError("--workers applies only to --engine local; Spark uses --partitions")
        if getattr(args, "max_memory", None) is not None:
            raise UsageError("--max-memory applies only to --engine local; Spark's memory is bounded by its own "
                             "settings (spark.driver.memory, spark.executor.memory)")
        for flag, given in frontier_flags(args):
            if given is not None:
                raise UsageError(f"{flag} applies only to --engine local; Spark keeps the frontier on its executors")
        engine = partial(explore_spark, spec, props, master=args.master, partitions=args.partitions)
    else:
        if args.master is not None or args.partitions is not None:
            raise UsageError("--master and --partitions apply only to --engine spark")
        from kafkamc.checker.multicore import available_cores, explore_multicore

        # With several workers the budget is split evenly between them (multicore, shard).
        workers = args.workers if args.workers is not None else available_cores()
        budget, where = frontier_options(args)
        engine = partial(explore_multicore, spec, props, workers=workers, max_memory=memory_limit(args),
                         frontier_memory=budget, frontier_dir=where)
    engine = partial(engine, max_depth=args.max_depth, max_states=args.max_states, symmetry=args.symmetry,
                     deadlock=args.deadlock, progress=progress)
    if getattr(args, "checkpoint", None) is None:
        return engine()
    manifest = getattr(args, "resume_manifest", None)
    with checkpointer(args, spec, props, manifest) as ckpt:
        if manifest is not None and manifest.finished is not None:
            result = finished_result(spec, props, manifest, args.deadlock, args.symmetry)
        else:
            result = engine(checkpoint=ckpt)
            if result.reason not in RESUMABLE:
                ckpt.finish(result)
    return dataclasses.replace(result, extra={**result.extra, "checkpoint": ckpt})


def frontier_flags(args: argparse.Namespace) -> tuple[tuple[str, Any], ...]:
    return (("--frontier-memory", getattr(args, "frontier_memory", None)),
            ("--frontier-dir", getattr(args, "frontier_dir", None)))


def frontier_options(args: argparse.Namespace) -> tuple[int | None, str | None]:
    """The frontier's memory budget (None: no limit) and the directory its files go under."""
    given = getattr(args, "frontier_memory", None)
    budget = DEFAULT_FRONTIER_MEMORY if given is None else None if given == NO_LIMIT else given
    where = getattr(args, "frontier_dir", None)
    if where is not None:
        path = Path(where)
        if path.exists() and not path.is_dir():
            raise UsageError(f"--frontier-dir {where}: not a directory; allowed: a directory, or a path to create one at")
        probe = path
        while not probe.exists():
            probe = probe.parent
        if not os.access(probe, os.W_OK | os.X_OK):
            raise UsageError(f"--frontier-dir {where}: {probe} is not writable; allowed: a directory you can write to")
    elif getattr(args, "out", None):
        where = args.out
    return budget, where


def memory_limit(args: argparse.Namespace) -> int | None:
    """Bytes the local engine may use: --max-memory, else 80% of the machine; None: no limit."""
    given = getattr(args, "max_memory", None)
    if given is None:
        return default_memory_limit()
    return None if given == NO_LIMIT else given


def _cmd_check(args: argparse.Namespace) -> int:
    args.resume_manifest = prepare_resume(args)
    check_counterexample_paths(args.out, args.html)
    result = run_check(args, args.spec)
    if ":" in args.spec:
        result = dataclasses.replace(result, extra={**result.extra, "spec_ref": args.spec})
    ckpt = result.extra.get("checkpoint")
    if ckpt is not None:
        report_checkpoint(result, ckpt)
    written, unwritten = _write(result, args)
    for line in coverage_warnings(result):
        print(f"kafkamc: {printable(line)}", file=sys.stderr)
    if args.json:
        doc = result_to_json(result)
        if result.extra.get("recoverability"):
            doc["recoverability"] = result.extra["recoverability"]
        if result.extra.get("checker") == "liveness":
            doc["liveness"] = result.extra["liveness"]
        if ckpt is not None:
            doc["checkpoint"] = checkpoint_json(ckpt)
        print(json.dumps(doc))
    else:
        print(printable_lines(render_summary(result)))
        table = render_coverage(result)
        if table:
            print(printable_lines(table))
        if result.extra.get("checker") == "liveness":
            from kafkamc.checker.liveness import liveness_notes

            for line in liveness_notes(result):
                print(printable(line))
        if result.extra.get("recoverability"):
            from kafkamc.checker.graph import recoverability_notes

            for line in recoverability_notes(result):
                print(line)
        if result.trace is not None:
            print()
            print(printable_lines(render_trace(result)))
        for path in written:
            print(printable(f"counterexample written to {path}"))
    if unwritten is not None:
        raise unwritten  # after the verdict, which a failed write must not cost
    return EXIT_FOR_RESULT[result.result]


def _write(result: CheckResult, args: argparse.Namespace) -> tuple[list[str], UsageError | None]:
    """The counterexample files, or the error that kept them from being written (the paths were
    checked before exploring, but a disk can fill up or a path change in the meantime)."""
    try:
        return write_counterexample(result, args.out, args.html), None
    except UsageError as exc:
        return [], exc
