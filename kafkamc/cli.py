"""The command line: ``main(argv) -> int`` is the whole CLI, testable without a subprocess.

Exit codes (a stable contract): 0 ok; 1 an invariant was violated; 2 bad invocation or input;
3 the spec raised during exploration (or the engine failed); 4 incomplete (a bound or Ctrl-C).
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import importlib.util
import json
import os
import sys
from typing import Any, Sequence

from kafkamc import __version__
from kafkamc.checker.result import INCOMPLETE, OK, VIOLATION, CheckResult, LevelStats
from kafkamc.counterexamples.render import render_summary, render_trace, result_to_json
from kafkamc.errors import KafkamcError, UsageError
from kafkamc.spec.registry import build_spec, bundled_names, load_spec_class, select_properties

__all__ = ["main", "main_entry", "EXIT_OK", "EXIT_VIOLATION", "EXIT_USAGE", "EXIT_SPEC_ERROR", "EXIT_INCOMPLETE"]

EXIT_OK, EXIT_VIOLATION, EXIT_USAGE, EXIT_SPEC_ERROR, EXIT_INCOMPLETE = 0, 1, 2, 3, 4
EXIT_FOR_RESULT = {OK: EXIT_OK, VIOLATION: EXIT_VIOLATION, INCOMPLETE: EXIT_INCOMPLETE}
ENGINES = ("local", "spark")
# Modules that add subcommands: each defines register(subparsers) and sets ``run`` on its parser.
SUBCOMMAND_MODULES = ("kafkamc.gate", "kafkamc.counterexamples.cli", "kafkamc.checker.explore_cli")


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line and an exception instead of a printed exit."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{message} (see '{self.prog} --help')")


def int_at_least(minimum: int) -> Any:
    """An argparse type: an integer >= ``minimum``, with the allowed range in the error."""
    allowed = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer; allowed: {allowed}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{value} is not allowed; allowed: {allowed}")
        return value

    parse.__name__ = "positive integer" if minimum == 1 else f"integer >= {minimum}"
    return parse


_positive = int_at_least(1)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="kafkamc", description="Model checker for Apache Kafka's coordination protocols.")
    parser.add_argument("--version", action="version", version=f"kafkamc {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    lst = sub.add_parser("list", help="list the bundled specs, their parameters and invariants")
    lst.add_argument("--json", action="store_true", help="print one JSON object")
    lst.set_defaults(run=_cmd_list)

    chk = sub.add_parser("check", help="exhaustively check a spec's invariants (breadth-first)")
    chk.add_argument("spec", help="a bundled spec name (see 'kafkamc list') or module:Class")
    add_check_arguments(chk)
    chk.set_defaults(run=_cmd_check)
    for module_name in SUBCOMMAND_MODULES:
        if importlib.util.find_spec(module_name) is not None:
            importlib.import_module(module_name).register(sub)
    return parser


def add_check_arguments(chk: argparse.ArgumentParser) -> None:
    """The options of ``check`` (shared with commands that run a check the same way)."""
    chk.add_argument("-p", "--param", action="append", default=[], metavar="NAME=VALUE",
                     help="set a spec parameter (repeatable)")
    chk.add_argument("-i", "--invariant", action="append", default=[], metavar="NAME",
                     help="check this invariant or action property (repeatable; 'all' for every one)")
    chk.add_argument("-r", "--recoverability", action="append", default=[], metavar="NAME",
                     help="check this recoverability property (AG EF good) on the state graph (repeatable)")
    chk.add_argument("--engine", default="local", choices=ENGINES, help="exploration engine (default: local)")
    chk.add_argument("--master", default=None, help="Spark master URL (engine spark; default local[*])")
    chk.add_argument("--partitions", type=_positive, default=None, help="Spark partitions P (engine spark)")
    chk.add_argument("--workers", type=_positive, default=None, metavar="N",
                     help="processes for the local engine (default: the cores available); results do not depend on it")
    chk.add_argument("--max-depth", type=_positive, default=None, metavar="N", help="explore at most N levels")
    chk.add_argument("--max-states", type=_positive, default=None, metavar="N", help="explore at most N states")
    chk.add_argument("--symmetry", action="store_true", help="reduce by the spec's symmetry representative")
    chk.add_argument("--deadlock", action="store_true", help="report a state with no successors as a violation")
    chk.add_argument("--json", action="store_true", help="print exactly one JSON object on stdout")
    chk.add_argument("--out", metavar="DIR", default=None,
                     help="write the counterexample to DIR (kafkamc JSON and ITF)")
    chk.add_argument("--html", nargs="?", const="", default=None, metavar="FILE",
                     help="on a violation, write the HTML trace viewer (default DIR or ./<spec>-<invariant>.html)")
    chk.add_argument("--progress", action="store_true", help="print a progress line per level on stderr")


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    try:
        args = build_parser().parse_args(args_list)
        return int(args.run(args))
    except KafkamcError as exc:
        prefix = "error" if exc.exit_code == EXIT_USAGE else "the spec or engine failed"
        print(f"kafkamc: {prefix}: {exc}", file=sys.stderr)
        return exc.exit_code
    except SystemExit as exc:  # --help and --version
        return exc.code if isinstance(exc.code, int) else 0


def main_entry() -> None:
    try:
        code = main()
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader went away (e.g. `| head`); not an error worth a traceback.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 1
    sys.exit(code)


# -- list ------------------------------------------------------------------------------------


def spec_catalogue() -> list[dict[str, Any]]:
    out = []
    for name in bundled_names():
        cls = load_spec_class(name)
        defaults = {p.name for p in cls.default_properties()}
        out.append({
            "name": cls.name,
            "description": cls.description,
            "parameters": [
                {"name": p.name, "type": p.type.__name__, "default": p.default, "help": p.help,
                 "allowed": list(p.choices) if p.choices is not None else None,
                 "min": p.min, "max": p.max}
                for p in cls.parameters
            ],
            "invariants": [
                {"name": pr.name, "kind": pr.kind, "description": pr.description, "default": pr.name in defaults}
                for pr in cls.properties()
            ],
            "recoverability": [
                {"name": pr.name, "description": pr.description} for pr in cls.recoverability_properties()
            ],
        })
    return out


def _cmd_list(args: argparse.Namespace) -> int:
    catalogue = spec_catalogue()
    if args.json:
        print(json.dumps({"schema": 1, "specs": catalogue}, indent=2))
        return EXIT_OK
    for spec in catalogue:
        print(f"{spec['name']}: {spec['description']}")
        print("  parameters:")
        for p in spec["parameters"]:
            allowed = "|".join(_show(a) for a in p["allowed"]) if p["allowed"] is not None else (
                f"{'' if p['min'] is None else p['min']}..{'' if p['max'] is None else p['max']}"
                if p["type"] == "int" else ("true/false" if p["type"] == "bool" else "any")
            )
            print(f"    {p['name']} ({p['type']}, default {_show(p['default'])}, allowed {allowed}): {p['help']}")
        print("  invariants (* = default):")
        for inv in spec["invariants"]:
            mark = "*" if inv["default"] else " "
            kind = " [action property]" if inv["kind"] == "action" else ""
            print(f"   {mark} {inv['name']}{kind}: {inv['description']}")
        if spec["recoverability"]:
            print("  recoverability (AG EF good; check with -r NAME):")
            for rec in spec["recoverability"]:
                print(f"     {rec['name']}: {rec['description']}")
    return EXIT_OK


def _show(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


# -- check -----------------------------------------------------------------------------------


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
                            ("--workers", args.workers)):
            if given is not None:
                raise UsageError(f"{flag} does not apply with -r (the whole state graph is built); allowed with -r: "
                                 "-p, -i, --max-states, --symmetry, --json, --out, --html, --progress")
        try:
            from kafkamc.checker.graph import check_recoverability
        except ImportError:
            raise UsageError("-r: this installation cannot check recoverability properties") from None
        return check_recoverability(
            spec, props, recs, max_states=args.max_states, symmetry=args.symmetry,
            progress=_print_progress if (args.progress or (sys.stderr.isatty() and not args.json)) else None,
        )
    show_progress = args.progress or (sys.stderr.isatty() and not args.json)
    progress = _print_progress if show_progress else None
    if args.engine == "spark":
        try:
            from kafkamc.checker.spark import explore_spark
        except ImportError as exc:
            raise UsageError(f"engine spark is not available: {exc}") from None
        if args.workers is not None:
            raise UsageError("--workers applies only to --engine local; Spark uses --partitions")
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
        symmetry=args.symmetry, deadlock=args.deadlock, progress=progress,
    )


def _print_progress(stats: LevelStats) -> None:
    rate = stats.states_generated / stats.seconds if stats.seconds > 0 else 0.0
    print(
        f"level {stats.level}: {stats.distinct_states:,} distinct, {stats.states_generated:,} generated, "
        f"frontier {stats.frontier:,}, {stats.seconds:.1f} s, {rate:,.0f} states/s",
        file=sys.stderr, flush=True,
    )


def write_trace_file(result: CheckResult, out_dir: str) -> str | None:
    """Write ``DIR/<spec>-<invariant>.trace.json`` for a violation; returns the path written."""
    if result.trace is None or result.violated is None:
        return None
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, f"{_file_part(result.spec)}-{result.violated}.trace.json")
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(result_to_json(result), fh, indent=1)
        fh.write("\n")
    os.replace(tmp, path)
    return path


def _file_part(spec_name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in spec_name)


def write_counterexample(result: CheckResult, out_dir: str | None, html: str | None = None) -> list[str]:
    """Every file a violation produces: JSON and ITF in ``out_dir``; the HTML viewer if asked."""
    written: list[str] = []
    if result.trace is None or result.violated is None:
        return written
    if out_dir:
        path = write_trace_file(result, out_dir)
        if path:
            written.append(path)
        try:
            from kafkamc.counterexamples.itf import write_itf
        except ImportError:
            write_itf = None
        if write_itf is not None:
            path = write_itf(result, out_dir)
            if path:
                written.append(path)
    if html is not None:
        try:
            from kafkamc.counterexamples.html import write_html
        except ImportError:
            raise UsageError("--html: this installation has no HTML trace viewer") from None
        target = html or os.path.join(out_dir or ".", f"{_file_part(result.spec)}-{result.violated}.html")
        os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
        written.append(write_html(result, target))
    return written


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
