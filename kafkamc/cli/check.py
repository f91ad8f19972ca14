"""``kafkamc check``: exhaustive breadth-first search of a spec's reachable states."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from typing import Any

from kafkamc.checker.resources import default_memory_limit
from kafkamc.cli.args import NO_LIMIT, add_check_arguments, print_progress
from kafkamc.cli.output import write_counterexample
from kafkamc.counterexamples.render import render_summary, render_trace, result_to_json
from kafkamc.errors import UsageError
from kafkamc.result import INCOMPLETE, OK, VIOLATION, CheckResult
from kafkamc.spec.registry import build_spec, load_spec_class, select_properties

__all__ = ["register", "run_check", "EXIT_FOR_RESULT"]

EXIT_FOR_RESULT = {OK: 0, VIOLATION: 1, INCOMPLETE: 4}


def register(subparsers: Any) -> None:
    chk = subparsers.add_parser("check", help="exhaustively check a spec's invariants (breadth-first)")
    chk.add_argument("spec", help="a bundled spec name (see 'kafkamc list') or module:Class")
    add_check_arguments(chk)
    chk.set_defaults(run=_cmd_check)


def run_check(args: argparse.Namespace, spec_ref: str) -> CheckResult:
    """Resolve the spec, parameters and properties from ``args`` and run the chosen engine."""
    spec = build_spec(spec_ref, args.param)
    props = select_properties(type(spec), args.invariant)
    if getattr(args, "recoverability", None):
        names = args.recoverability
        recs = [type(spec).recoverability_named(n) for n in names]
        if args.engine != "local":
            raise UsageError("-r/--recoverability is checked on the state graph by the local engine only")
        for flag, given in (("--max-depth", args.max_depth), ("--deadlock", args.deadlock or None),
                            ("--workers", args.workers), ("--max-memory", getattr(args, "max_memory", None))):
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
    if args.engine == "spark":
        try:
            from kafkamc.checker.spark import explore_spark
        except ImportError as exc:
            raise UsageError(f"engine spark is not available: {exc}") from None
        if args.workers is not None:
            raise UsageError("--workers applies only to --engine local; Spark uses --partitions")
        if getattr(args, "max_memory", None) is not None:
            raise UsageError("--max-memory applies only to --engine local; Spark's memory is bounded by its own "
                             "settings (spark.driver.memory, spark.executor.memory)")
        return explore_spark(
            spec, props, master=args.master, partitions=args.partitions, max_depth=args.max_depth,
            max_states=args.max_states, symmetry=args.symmetry, deadlock=args.deadlock, progress=progress,
        )
    if args.master is not None or args.partitions is not None:
        raise UsageError("--master and --partitions apply only to --engine spark")
    from kafkamc.checker.multicore import available_cores, explore_multicore

    workers = args.workers if args.workers is not None else available_cores()
    return explore_multicore(
        spec, props, workers=workers, max_depth=args.max_depth, max_states=args.max_states,
        symmetry=args.symmetry, deadlock=args.deadlock, progress=progress, max_memory=memory_limit(args),
    )


def memory_limit(args: argparse.Namespace) -> int | None:
    """Bytes the local engine may use: --max-memory, else 80% of the machine; None: no limit."""
    given = getattr(args, "max_memory", None)
    if given is None:
        return default_memory_limit()
    return None if given == NO_LIMIT else given


def _cmd_check(args: argparse.Namespace) -> int:
    result = run_check(args, args.spec)
    if ":" in args.spec:
        result = dataclasses.replace(result, extra={**result.extra, "spec_ref": args.spec})
    written = write_counterexample(result, args.out, args.html)
    if args.json:
        doc = result_to_json(result)
        if result.extra.get("recoverability"):
            doc["recoverability"] = result.extra["recoverability"]
        print(json.dumps(doc))
    else:
        print(render_summary(result))
        if result.extra.get("recoverability"):
            from kafkamc.checker.graph import recoverability_notes

            for line in recoverability_notes(result):
                print(line)
        if result.trace is not None:
            print()
            print(render_trace(result.trace, entities=getattr(load_spec_class(args.spec), "entities", None)))
        for path in written:
            print(f"counterexample written to {path}")
    return EXIT_FOR_RESULT[result.result]
