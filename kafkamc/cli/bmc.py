"""``kafkamc bmc``: symbolic bounded model checking, a shortest violation within K steps.

Exit codes as ``check``: 1 a violation (printed and written as ``check`` does, replayable with
``kafkamc trace replay``); 4 none within the depth (a bounded result, never "ok"); 2 bad input;
3 a spec function the symbolic executor cannot run (naming the construct) or an internal disagreement.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from kafkamc.cli.args import int_at_least, seconds
from kafkamc.cli.check import EXIT_FOR_RESULT
from kafkamc.counterexamples.render import render_summary, render_trace, result_to_json
from kafkamc.errors import UsageError
from kafkamc.prover.bmc import ENCODINGS, bmc
from kafkamc.checker.resources import cpu_seconds
from kafkamc.spec.registry import build_spec, select_properties
from kafkamc.terminal import printable_lines

__all__ = ["register"]


def register(subparsers: Any) -> None:
    cmd = subparsers.add_parser(
        "bmc", help="symbolic bounded model checking: a shortest violation within --depth steps (Z3)")
    cmd.add_argument("spec", help="a bundled spec name (see 'kafkamc list') or module:Class")
    cmd.add_argument("-p", "--param", action="append", default=[], metavar="NAME=VALUE",
                     help="set a parameter (repeatable)")
    cmd.add_argument("-i", "--invariant", action="append", required=True, metavar="NAME",
                     help="an invariant to check (repeatable; 'all' for every one)")
    cmd.add_argument("--depth", type=int_at_least(0), required=True, metavar="K",
                     help="most steps from an initial state (a trace has at most K+1 states)")
    cmd.add_argument("--timeout", type=seconds, default=3600.0, metavar="S",
                     help="time limit in seconds (default 3600); beyond it the result is incomplete")
    cmd.add_argument("--encoding", choices=ENCODINGS, default="classical",
                     help="classical (default): the transition relation made once per shape of the spec's "
                          "domain(p), unrolled; context: the actions run per depth on the reachable states "
                          "(no domain needed; see docs/bmc.md)")
    cmd.add_argument("--workers", type=int_at_least(1), default=1, metavar="N",
                     help="processes that make the relation's shapes (default 1; the same relation for any N)")
    cmd.add_argument("--keep-history", action="store_true",
                     help="encode the spec's history fields even when no invariant asked reads them (the same "
                          "answer, asked of more states; by default they are left out: docs/bmc.md)")
    cmd.add_argument("--every-order", action="store_true",
                     help="keep both orders of adjacent steps that commute (the same answer, asked of more "
                          "paths; by default one order is left out: docs/bmc.md)")
    cmd.add_argument("--symmetry", action="store_true",
                     help="use the spec's symmetry hook, trusted as check --symmetry trusts it (view included): "
                          "the first depths are asked through one state per orbit (the same answer, up to renaming)")
    cmd.add_argument("--json", action="store_true", help="print exactly one JSON object on stdout (as check)")
    cmd.add_argument("--progress", action="store_true",
                     help="on stderr, a line per shape of the relation (CPU, paths, moves) and per depth")
    cmd.set_defaults(run=_cmd_bmc)


def _cmd_bmc(args: argparse.Namespace) -> int:
    spec = build_spec(args.spec, args.param)
    props = select_properties(type(spec), args.invariant)
    if not props:
        raise UsageError("bmc needs at least one invariant (-i NAME)")
    progress = shapes = None
    if args.progress:
        progress, shapes = _depth_line, _shape_line
    result = bmc(spec, props, args.depth, timeout=args.timeout, encoding=args.encoding, progress=progress,
                 shapes=shapes, workers=args.workers, slice_history=not args.keep_history,
                 reduce=not args.every_order, symmetry=args.symmetry)
    if ":" in args.spec:
        import dataclasses

        result = dataclasses.replace(result, extra={**result.extra, "spec_ref": args.spec})
    if args.json:
        print(json.dumps(result_to_json(result)))
    else:
        print(printable_lines(render_summary(result)))
        if result.trace is None:
            print(printable_lines(_bounded(result, args.depth)))
        else:
            print()
            print(printable_lines(render_trace(result)))
    return EXIT_FOR_RESULT[result.result]


def _shape_line(rel: Any, total: int) -> None:
    print(f"bmc: shape {rel.shape.index + 1}/{total}: {rel.cpu:.1f} s CPU, {rel.paths:,} paths, "
          f"{len(rel.moves):,} moves", file=sys.stderr, flush=True)


def _depth_line(k: int, unrolling: Any) -> None:
    if k == 0 and unrolling.commuting is not None:
        c = unrolling.commuting
        print(f"bmc: {len(c.pairs):,} pairs of adjacent steps left out, one order of steps that commute "
              f"({c.checked:,} solver checks, {c.cpu:.1f} s CPU)", file=sys.stderr, flush=True)
    print(f"bmc: no violation within {k} steps ({cpu_seconds():.1f} s CPU so far)", file=sys.stderr, flush=True)


def _bounded(result: Any, asked: int) -> str:
    """What an incomplete bmc run establishes: no violation within the depth it finished."""
    done = result.extra.get("bmc_depth", -1)
    if done == asked:
        return f"no violation within {done} steps (bounded: deeper states were not explored)"
    why = result.extra.get("limit") or result.reason
    if done < 0:
        return f"stopped before checking the initial states ({why})"
    return f"no violation within {done} steps; stopped at depth {done + 1} of {asked} ({why})"
