"""``kafkamc prove``: is the conjunction of some invariants inductive, for every value of the lifted bounds?

Exit codes: 0 proved; 1 a counterexample to induction (reachable or not); 2 bad input; 3 a spec
function cannot be executed symbolically (or the prover disagreed with a concrete replay); 4 unknown.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
from typing import Any

from kafkamc.cli.args import seconds
from kafkamc.cli.output import file_part, write_counterexample
from kafkamc.counterexamples.proof import cti_check_result, proof_to_json, render_proof
from kafkamc.errors import UsageError
from kafkamc.prover import CTI_FOUND, DEFAULT_TIMEOUT, PROVED, UNKNOWN, liftable, prove
from kafkamc.prover.infer import counts, infer, python_source, summary, unknown_reason
from kafkamc.spec.registry import build_spec, load_spec_class, select_properties

__all__ = ["register", "EXIT_FOR_PROOF"]

EXIT_FOR_PROOF = {PROVED: 0, CTI_FOUND: 1, UNKNOWN: 4}


def register(subparsers: Any) -> None:
    cmd = subparsers.add_parser(
        "prove", help="prove invariants inductive with Z3 for every value of the lifted bounds")
    cmd.add_argument("spec", help="a bundled spec name (see 'kafkamc list') or module:Class")
    cmd.add_argument("-p", "--param", action="append", default=[], metavar="NAME=VALUE",
                     help="set a parameter; a liftable bound given here stays concrete (repeatable)")
    cmd.add_argument("-i", "--invariant", action="append", default=[], metavar="NAME",
                     help="an invariant or action property of the conjunction (repeatable; 'all' for every "
                          "one; default: the spec's defaults)")
    cmd.add_argument("--json", action="store_true", help="print exactly one JSON object on stdout")
    cmd.add_argument("--out", metavar="DIR", default=None,
                     help="write the result JSON and, for a CTI, its trace (kafkamc JSON and ITF) to DIR")
    cmd.add_argument("--html", nargs="?", const="", default=None, metavar="FILE",
                     help="for a CTI, write the HTML trace viewer")
    cmd.add_argument("--timeout", type=seconds, default=DEFAULT_TIMEOUT, metavar="S",
                     help=f"time limit per action's queries, in seconds (default {DEFAULT_TIMEOUT:g}); "
                          "beyond it the queries are unknown")
    cmd.add_argument("--workers", type=int, default=None, metavar="N",
                     help="processes (default: the cores available); results do not depend on it")
    cmd.add_argument("--progress", action="store_true", help="print a line per action on stderr as it completes")
    cmd.add_argument("--infer", action="store_true",
                     help="mine candidate invariants from a bounded run and keep the largest inductive subset "
                          "with the given ones (Houdini); prints the inferred invariants as Python")
    cmd.set_defaults(run=_cmd_prove)


def _print_progress(queries: tuple[Any, ...]) -> None:
    if queries:
        verdicts = ", ".join(f"{v} {sum(q.verdict == v for q in queries)}" for v in sorted({q.verdict for q in queries}))
        print(f"{queries[0].action}: {len(queries)} queries ({verdicts}), {queries[0].seconds:.1f} s",
              file=sys.stderr, flush=True)


def _cmd_prove(args: argparse.Namespace) -> int:
    cls = load_spec_class(args.spec)
    spec = build_spec(args.spec, args.param)
    given = {text.partition("=")[0].strip() for text in args.param}
    lifted = tuple(name for name in liftable(cls) if name not in given)
    props = select_properties(cls, args.invariant)
    if args.workers is not None and args.workers < 1:
        raise UsageError(f"--workers {args.workers}: allowed: a positive integer")
    if args.infer:
        return _cmd_infer(args, cls, spec, props, lifted)
    show = args.progress or (sys.stderr.isatty() and not args.json)
    result = prove(spec, props, lifted=lifted, timeout=args.timeout, workers=args.workers,
                   progress=_print_progress if show else None)
    written: list[str] = []
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        path = os.path.join(args.out, f"{file_part(result.spec)}.prove.json")
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(proof_to_json(result), fh, indent=1)
            fh.write("\n")
        written.append(path)
    as_check = cti_check_result(result)
    if as_check is not None and (args.out or args.html is not None):
        written.extend(write_counterexample(as_check, args.out, args.html))
    if args.json:
        print(json.dumps(proof_to_json(result)))
    else:
        print(render_proof(result, entities=getattr(cls, "entities", None)))
        for path in written:
            print(f"written to {path}")
    return EXIT_FOR_PROOF[result.result]


def _cmd_infer(args: argparse.Namespace, cls: Any, spec: Any, props: Any, lifted: tuple[str, ...]) -> int:
    quiet = args.json
    res = infer(spec, props, lifted=lifted, timeout=args.timeout, workers=args.workers,
                progress=None if quiet else functools.partial(print, flush=True),
                action_progress=_print_progress if args.progress else None)
    doc = {"spec": cls.name, **summary(res), "proof": proof_to_json(res.last) if res.last is not None else None}
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, f"{file_part(cls.name)}.infer.json"), "w", encoding="utf-8") as fh:
            json.dump(doc, fh, indent=1)
            fh.write("\n")
    if quiet:
        print(json.dumps(doc))
    else:
        if res.result == CTI_FOUND and res.last is not None:
            print(render_proof(res.last, entities=getattr(cls, "entities", None)))
        kept = ", ".join(res.targets)
        outcome = {PROVED: f"proved: {kept} inductive with {len(res.inferred)} inferred invariants",
                   CTI_FOUND: f"not proved: {', '.join(res.dropped_targets)} not implied by the inferred invariants",
                   UNKNOWN: f"unknown: {unknown_reason(res)}"}[res.result]
        print(outcome)
        print(counts(res))
        print(python_source(res), end="")
    return EXIT_FOR_PROOF[res.result]
