"""``kafkamc simulate``: random walks through a spec, a violation shrunk to a short trace.

Exit codes as for ``check``: 0 no violation found (which is not a proof), 1 a violation,
2 bad invocation, 3 the spec raised, 4 interrupted (Ctrl-C, SIGTERM, SIGHUP) before a violation.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from typing import Any

from kafkamc.result import INCOMPLETE, VIOLATION, CheckResult
from kafkamc.cli.args import int_at_least, seconds
from kafkamc.cli.output import check_counterexample_paths, write_counterexample
from kafkamc.counterexamples.render import render_trace, result_to_json
from kafkamc.errors import UsageError
from kafkamc.spec.registry import build_spec, select_properties
from kafkamc.terminal import printable, printable_lines

__all__ = ["register", "render_simulation", "simulation_to_json"]

EXIT_OK, EXIT_VIOLATION, EXIT_INCOMPLETE = 0, 1, 4


_positive = int_at_least(1)
_nonnegative = int_at_least(0)


def register(subparsers: Any) -> None:
    from kafkamc.checker.simulate import DEFAULT_DATABASE, MAX_STEPS

    sim = subparsers.add_parser(
        "simulate",
        help="random walks through a spec; a violation is shrunk to a short trace (not exhaustive)",
        description="Walk the spec at random, checking invariants; a failing walk is shrunk by hypothesis. "
        "Without a violation the verdict is 'ok (simulated)': no claim beyond the walks made.",
    )
    sim.add_argument("spec", help="a bundled spec name (see 'kafkamc list') or module:Class")
    sim.add_argument("-p", "--param", action="append", default=[], metavar="NAME=VALUE",
                     help="set a spec parameter (repeatable)")
    sim.add_argument("-i", "--invariant", action="append", default=[], metavar="NAME",
                     help="check this invariant or action property (repeatable; 'all' for every one)")
    sim.add_argument("--steps", type=_positive, default=100, metavar="N",
                     help=f"longest walk, in transitions (default 100, at most {MAX_STEPS})")
    sim.add_argument("--runs", type=_positive, default=1000, metavar="N", help="number of walks (default 1000)")
    sim.add_argument("--seed", type=_nonnegative, default=None, metavar="S",
                     help="random seed: the same seed gives the same walks and the same shrunk trace "
                     "(default: a fresh seed, printed)")
    sim.add_argument("--time", type=seconds, default=None, metavar="SECONDS",
                     help="stop walking after this many seconds (shrinking a found violation still completes)")
    sim.add_argument("--database", default=DEFAULT_DATABASE, metavar="DIR",
                     help=f"hypothesis example database: a violation found is replayed first next time "
                     f"(default {DEFAULT_DATABASE} in the working directory)")
    sim.add_argument("--no-database", action="store_true", help="neither read nor save earlier failing walks")
    sim.add_argument("--deadlock", action="store_true",
                     help="a walk reaching a state with no successors is a violation (as with check --deadlock)")
    sim.add_argument("--json", action="store_true", help="print exactly one JSON object on stdout")
    sim.add_argument("--out", metavar="DIR", default=None,
                     help="write the counterexample to DIR (kafkamc JSON and ITF)")
    sim.add_argument("--html", nargs="?", const="", default=None, metavar="FILE",
                     help="on a violation, write the HTML trace viewer (default DIR or ./<spec>-<invariant>.html)")
    sim.set_defaults(run=_cmd_simulate)


# -- simulate ----------------------------------------------------------------------------------


def simulation_to_json(result: CheckResult) -> dict[str, Any]:
    """``check``'s schema-1 object, plus what a simulation adds (runs, steps, coverage, seed)."""
    out = result_to_json(result)
    ex = result.extra
    for key in ("seed", "runs", "steps", "max_steps", "longest_walk", "deadlocks", "stuttering_steps",
                "cut_by_constraint", "cut_by_buffer", "coverage", "never_fired", "stopped_by", "found_steps",
                "shrunk_steps", "shrink_walks"):
        if key in ex:
            out[key] = ex[key]
    return out


def render_simulation(result: CheckResult) -> str:
    ex = result.extra
    params = " ".join(f"{k}={_param(v)}" for k, v in result.params.items())
    lines = [f"{result.spec} [{params}] engine=simulate seed={ex['seed']}"]
    checked = ", ".join(result.invariants) or "no invariants"
    if result.result == VIOLATION:
        length = len(result.trace) if result.trace is not None else 0
        what = (f"deadlock (a state with no successors) reached after {length - 1} steps"
                if result.violated == "deadlock" else f"{result.violated} fails after {length - 1} steps")
        lines.append(
            f"violation: {what} (the failing walk had "
            f"{ex.get('found_steps')}; hypothesis shrank it to {ex.get('shrunk_steps')}, then detours and steps "
            f"the violation does not need were removed). Short, not necessarily the shortest: "
            f"'kafkamc check' finds the shortest"
        )
    else:
        why = {"time": "; --time reached", "interrupted": "; interrupted",
               "terminated": "; terminated (SIGTERM or SIGHUP)"}.get(ex.get("stopped_by") or "", "")
        head = "incomplete (simulated)" if result.result == INCOMPLETE else "ok (simulated)"
        lines.append(
            f"{head}: no violation of {checked} in {ex['runs']:,} walks of up to {ex['max_steps']} "
            f"steps{why}; not exhaustive"
        )
    lines.append(
        f"{ex['runs']:,} walks, {ex['steps']:,} steps (longest {ex['longest_walk']}), "
        f"{result.distinct_states:,} distinct states seen, {ex['deadlocks']:,} walks ended in a deadlock "
        f"(a state with no successors), {ex['stuttering_steps']:,} stuttering steps, {result.seconds:.2f} s"
    )
    cov = ex["coverage"]
    width = max((len(n) for n in cov), default=0)
    lines.append("action coverage (times taken in the walks):")
    for name, n in cov.items():
        lines.append(f"  {name:<{width}}  {n:,}" + ("  (never fired)" if n == 0 else ""))
    if ex["never_fired"]:
        lines.append(
            f"never fired: {', '.join(ex['never_fired'])} (disabled by the parameters, unreachable, or rare: "
            "a sign of a vacuous model if none of these)"
        )
    return "\n".join(lines)


def _param(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def _cmd_simulate(args: argparse.Namespace) -> int:
    from kafkamc.checker.simulate import simulate

    spec = build_spec(args.spec, args.param)
    props = select_properties(type(spec), args.invariant)
    check_counterexample_paths(args.out, args.html)
    result = simulate(
        spec, props, runs=args.runs, steps=args.steps, seed=args.seed, time_limit=args.time,
        database=None if args.no_database else args.database, deadlock=args.deadlock,
    )
    if ":" in args.spec:
        # As check does: the trace file names the spec class, and its hints are recorded.
        result = dataclasses.replace(result, extra={**result.extra, "spec_ref": args.spec})
    try:
        written, unwritten = write_counterexample(result, args.out, args.html), None
    except UsageError as exc:  # after a long run: print the verdict first, then fail
        written, unwritten = [], exc
    if args.json:
        print(json.dumps(simulation_to_json(result)))
    else:
        print(printable_lines(render_simulation(result)))
        if result.trace is not None:
            print()
            print(printable_lines(render_trace(result)))
        for path in written:
            print(printable(f"counterexample written to {path}"))
    if unwritten is not None:
        raise unwritten
    if result.result == VIOLATION:
        return EXIT_VIOLATION
    return EXIT_INCOMPLETE if result.result == INCOMPLETE else EXIT_OK
