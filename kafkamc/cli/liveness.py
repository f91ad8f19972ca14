"""``kafkamc check SPEC -l NAME``: liveness properties under fairness (the options and their checks)."""

from __future__ import annotations

import argparse
import sys

from kafkamc.cli.args import print_progress
from kafkamc.errors import UsageError
from kafkamc.invariants.api import Property
from kafkamc.result import CheckResult
from kafkamc.spec.api import Spec
from kafkamc.spec.registry import select_properties

__all__ = ["run_liveness", "select_liveness", "SYMMETRY_REFUSED"]

SYMMETRY_REFUSED = (
    "--symmetry cannot be combined with -l: a symmetry reduction can hide liveness violations (as TLC "
    "warns), since a cycle of representatives need not be a cycle of the model; drop --symmetry"
)


def select_liveness(cls: type[Spec], names: list[str] | tuple[str, ...]) -> tuple[Property, ...]:
    """The liveness properties named by ``-l`` (repeatable; ``all`` for every one)."""
    if "all" in names:
        if not cls.liveness:
            raise UsageError(f"-l all: spec {cls.name} declares no liveness properties")
        return cls.liveness_properties()
    chosen: list[Property] = []
    for name in names:
        prop = cls.liveness_named(name)
        if prop not in chosen:
            chosen.append(prop)
    return tuple(chosen)


def run_liveness(args: argparse.Namespace, spec: Spec) -> CheckResult:
    """Check ``-l`` properties; invariants only when named with ``-i`` (they are checked first)."""
    if not args.liveness:
        flag = "--fair" if args.fair else "--strong-fair" if args.strong_fair else "--no-fairness"
        raise UsageError(f"{flag} applies only with -l NAME (a liveness property to check)")
    if args.symmetry:
        raise UsageError(SYMMETRY_REFUSED)
    if args.recoverability:
        raise UsageError("-l and -r cannot be combined in one run; check them in two runs")
    if args.engine != "local":
        raise UsageError("-l/--liveness is checked on the state graph by the local engine only")
    for flag, given in (("--max-depth", args.max_depth), ("--deadlock", args.deadlock or None),
                        ("--workers", args.workers), ("--master", args.master), ("--partitions", args.partitions),
                        ("--frontier-memory", getattr(args, "frontier_memory", None)),
                        ("--frontier-dir", getattr(args, "frontier_dir", None))):
        if given is not None:
            raise UsageError(f"{flag} does not apply with -l (the whole state graph is built); allowed with -l: "
                             "-p, -i, --fair, --strong-fair, --no-fairness, --max-states, --json, --out, --html, "
                             "--progress")
    from kafkamc.checker.liveness import check_liveness, resolve_fairness

    cls = type(spec)
    lives = select_liveness(cls, args.liveness)
    props = select_properties(cls, args.invariant) if args.invariant else ()
    fairness = resolve_fairness(cls, args.fair, args.strong_fair, args.no_fairness)
    show_progress = args.progress or (sys.stderr.isatty() and not args.json)
    return check_liveness(spec, props, lives, fairness, max_states=args.max_states,
                          progress=print_progress if show_progress else None)
