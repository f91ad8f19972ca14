"""``kafkamc graph``: the reachable state graph of a small model, as GraphML, DOT or JSON.

Exit codes: 0 written, 2 bad invocation, 3 the spec raised, 4 the graph is over its size limit
or the run was interrupted (Ctrl-C, SIGTERM, SIGHUP; nothing is written).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from kafkamc.checker.watch import stop_reason
from kafkamc.cli.args import int_at_least, print_progress
from kafkamc.errors import UsageError
from kafkamc.safewrite import check_output_file
from kafkamc.spec.registry import build_spec, select_properties

__all__ = ["register"]

EXIT_OK, EXIT_INCOMPLETE = 0, 4
_positive = int_at_least(1)


def register(subparsers: Any) -> None:
    gr = subparsers.add_parser(
        "graph",
        help="write the reachable state graph of a small model (GraphML, DOT or JSON by extension)",
    )
    gr.add_argument("spec", help="a bundled spec name (see 'kafkamc list') or module:Class")
    gr.add_argument("-p", "--param", action="append", default=[], metavar="NAME=VALUE",
                    help="set a spec parameter (repeatable)")
    gr.add_argument("-i", "--invariant", action="append", default=[], metavar="NAME",
                    help="record this invariant on every node (repeatable; 'all' for every one)")
    gr.add_argument("-r", "--recoverability", action="append", default=[], metavar="NAME",
                    help="mark good:NAME and stuck:NAME on every node for this recoverability property (repeatable)")
    gr.add_argument("--out", required=True, metavar="FILE", help="FILE.graphml, FILE.dot (or .gv) or FILE.json")
    gr.add_argument("--max-states", type=_positive, default=None, metavar="N",
                    help="refuse above N states (default: the limit of 100,000 states)")
    gr.add_argument("--symmetry", action="store_true", help="one node per symmetry class (the spec's hook)")
    gr.add_argument("--json", action="store_true", help="print a JSON summary on stdout")
    gr.set_defaults(run=_cmd_graph)


def _cmd_graph(args: argparse.Namespace) -> int:
    from kafkamc.checker.graph import GraphTooLarge, build_graph, mark_recoverability, write_graph

    spec = build_spec(args.spec, args.param)
    props = select_properties(type(spec), args.invariant)
    recs = [type(spec).recoverability_named(n) for n in args.recoverability]
    if not args.out.lower().endswith((".graphml", ".dot", ".gv", ".json")):
        raise UsageError(f"--out {args.out!r}: unknown graph format; allowed: .graphml, .dot, .gv, .json")
    check_output_file(args.out, "--out")
    show_progress = sys.stderr.isatty() and not args.json
    try:
        g = build_graph(spec, props, max_states=args.max_states, symmetry=args.symmetry,
                        progress=print_progress if show_progress else None)
    except GraphTooLarge as exc:
        print(f"kafkamc graph: {exc}", file=sys.stderr)
        return EXIT_INCOMPLETE
    except KeyboardInterrupt as exc:
        print(f"kafkamc graph: {stop_reason(exc)} while building the graph; nothing written", file=sys.stderr)
        return EXIT_INCOMPLETE
    recoverability = mark_recoverability(spec, g, recs)
    write_graph(g, args.out)
    names = [pr.name for pr in props if pr.kind == "invariant"]
    failing = {n: sum(1 for _, d in g.nodes(data=True) if d.get(n) is False) for n in names}
    summary = {
        "schema": 1, "spec": spec.name, "params": spec.p.as_dict(), "file": args.out,
        "states": g.number_of_nodes(), "edges": g.number_of_edges(), "depth": g.graph["depth"],
        "deadlocks": g.graph["deadlocks"], "stuttering_steps": g.graph["stuttering_steps"],
        "states_violating": failing,
    }
    if recoverability:
        summary["recoverability"] = recoverability
    if args.json:
        print(json.dumps(summary))
    else:
        print(f"{spec.name}: {summary['states']:,} states, {summary['edges']:,} edges, depth {summary['depth']}, "
              f"{summary['deadlocks']:,} deadlocks (states with no successors), "
              f"{summary['stuttering_steps']:,} stuttering steps (self-loops)")
        for n, k in failing.items():
            print(f"  {n}: {'holds in every state' if k == 0 else f'fails in {k:,} states'}")
        for n, c in recoverability.items():
            print(f"  {n}: good states {c['good_states']:,}, stuck states {c['stuck_states']:,} "
                  f"(no good state reachable; drawn orange in DOT), livelock states {c['livelock_states']:,}")
        print(f"graph written to {args.out}")
    return EXIT_OK
