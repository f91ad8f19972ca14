"""``kafkamc check --checkpoint DIR`` and ``--resume DIR``: the options, the refusals, the report.

``--resume DIR`` takes the spec, its parameters and every option that changes results from the
checkpoint. Given again on the command line they must be the same; anything else is refused in one
line (exit 2), as is a checkpoint of another spec version, runtime or engine, or a damaged one. A
checkpoint of a finished run reports that run's result again.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, Sequence

from kafkamc.checker.checkpoint import ENGINE, Checkpointer, refuse_other_run
from kafkamc.checker.manifest import Manifest, read_manifest, spec_identity
from kafkamc.counterexamples.checked import checked_replay
from kafkamc.errors import UsageError
from kafkamc.invariants.api import Property
from kafkamc.result import DEADLOCK, INCOMPLETE, ActionCoverage, CheckResult
from kafkamc.safewrite import check_output_dir
from kafkamc.spec.api import Spec
from kafkamc.spec.registry import load_spec_class, select_properties
from kafkamc.terminal import printable

__all__ = ["add_checkpoint_arguments", "prepare_resume", "checkpointer", "finished_result", "report_checkpoint",
           "checkpoint_json", "RESUMABLE"]

SPARK = "spark"
# The stops after which a checkpoint is continued rather than reported again.
RESUMABLE = ("interrupted", "terminated", "max-memory")
# Options that do not change results: free to differ on --resume.
_FREE = "--workers, --progress, --json, --out, --html, --max-memory, --frontier-memory, --frontier-dir, --checkpoint-every"


def _minutes(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number; allowed: minutes >= 0") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text} is not allowed; allowed: minutes >= 0")
    return value


_minutes.__name__ = "minutes"


def add_checkpoint_arguments(chk: argparse.ArgumentParser) -> None:
    chk.add_argument("--checkpoint", metavar="DIR", default=None,
                     help="write a checkpoint to DIR at level boundaries (see --checkpoint-every) and when stopped")
    chk.add_argument("--checkpoint-every", type=_minutes, default=None, metavar="MIN",
                     help="at most one level-boundary checkpoint per MIN minutes (default 10; 0: every level)")
    chk.add_argument("--resume", metavar="DIR", default=None,
                     help="continue the run checkpointed in DIR, with its spec, parameters and options")


def prepare_resume(args: argparse.Namespace) -> Manifest | None:
    """Before anything runs: refuse what cannot be checkpointed; on --resume, fill ``args`` from
    the checkpoint after checking that what the command line says agrees with it."""
    explicit, args.engine = args.engine, args.engine or ENGINE
    directory = args.resume or args.checkpoint
    if directory is None:
        if args.checkpoint_every is not None:
            raise UsageError("--checkpoint-every applies only with --checkpoint DIR or --resume DIR")
        if args.spec is None:
            raise UsageError("check needs a SPEC (a bundled name or module:Class), or --resume DIR")
        return None
    for flag, given in (("-l/--liveness", args.liveness), ("-r/--recoverability", args.recoverability),
                        ("--fair", args.fair), ("--strong-fair", args.strong_fair),
                        ("--no-fairness", args.no_fairness)):
        if given:
            raise UsageError(f"{flag} is not checkpointed; allowed with --checkpoint/--resume: invariant and action "
                             "property checks (-i) on the local engine")
    if args.resume is None:
        _refuse_every(args, args.engine)
        check_output_dir(args.checkpoint, "--checkpoint")
        return None
    if args.checkpoint is not None and os.path.abspath(args.checkpoint) != os.path.abspath(args.resume):
        raise UsageError("--resume DIR goes on writing its checkpoints in DIR; allowed: --checkpoint omitted or the "
                         "same directory")
    manifest = read_manifest(args.resume)
    if manifest.engine not in (ENGINE, SPARK):
        raise UsageError(f"--resume {args.resume}: a checkpoint of the {manifest.engine} engine; allowed here: one of "
                         f"the {ENGINE} or {SPARK} engine")
    if explicit not in (None, manifest.engine):
        raise UsageError(f"--resume {args.resume}: a checkpoint of the {manifest.engine} engine, which goes on with "
                         f"it; allowed: --engine {manifest.engine}, or no --engine")
    _refuse_every(args, manifest.engine)
    args.engine = manifest.engine
    _adopt(args, manifest)
    return manifest


def _refuse_every(args: argparse.Namespace, engine: str) -> None:
    if engine == SPARK and args.checkpoint_every is not None:
        raise UsageError("--checkpoint-every applies only to --engine local; the Spark engine records every level "
                         "(its blocks are files in the checkpoint anyway)")


def _adopt(args: argparse.Namespace, m: Manifest) -> None:
    where = f"--resume {args.resume}:"
    ref, name = m.spec.get("ref"), m.spec.get("name")
    if args.spec is not None and args.spec not in (ref, name):
        raise UsageError(f"{where} the checkpoint is of spec {ref}, not {args.spec}; allowed: {ref}, or no SPEC")
    recorded = dict(m.spec.get("params", {}))
    cls = load_spec_class(str(ref))
    params = {prm.name: prm for prm in cls.parameters}
    for text in args.param:
        pname, eq, raw = text.partition("=")
        pname = pname.strip()
        if not eq or pname not in params:
            raise UsageError(f"{where} -p {text}: not a parameter of spec {name}; allowed: the checkpoint's own "
                             f"values, or no -p")
        value = params[pname].parse(raw)
        if recorded.get(pname) != value:
            raise UsageError(f"{where} -p {pname}={raw} but the checkpoint has {pname}={recorded.get(pname)!r}; "
                             "allowed: the checkpoint's values, or no -p")
    opts = m.options
    if args.invariant:
        names = [pr.name for pr in select_properties(cls, args.invariant)]
        if names != list(opts.get("properties", ())):
            raise UsageError(f"{where} -i selects {', '.join(names)} but the checkpoint checks "
                             f"{', '.join(opts.get('properties', ())) or 'none'}; allowed: the same, or no -i")
    for flag, attr in (("--symmetry", "symmetry"), ("--deadlock", "deadlock")):
        if getattr(args, attr) and not opts.get(attr):
            raise UsageError(f"{where} {flag} was not used by the checkpointed run; allowed: the same options, "
                             f"or only {_FREE}")
        setattr(args, attr, bool(opts.get(attr)))
    for flag, attr in (("--max-depth", "max_depth"), ("--max-states", "max_states")):
        given = getattr(args, attr)
        if given is not None and given != opts.get(attr):
            raise UsageError(f"{where} {flag} {given} but the checkpointed run had {opts.get(attr) or 'none'}; "
                             f"allowed: the same bounds, or only {_FREE}")
        setattr(args, attr, opts.get(attr))
    args.spec = ref
    args.param = recorded
    args.invariant = list(opts.get("properties", ()))
    args.checkpoint = args.resume


def options_of(args: argparse.Namespace, props: Sequence[Property]) -> dict[str, Any]:
    """The options of a run that a checkpoint records: everything that changes its results."""
    return {"properties": [pr.name for pr in props], "symmetry": bool(args.symmetry),
            "deadlock": bool(args.deadlock), "max_depth": args.max_depth, "max_states": args.max_states}


def checkpointer(args: argparse.Namespace, spec: Spec, props: Sequence[Property],
                 manifest: Manifest | None) -> Checkpointer:
    """The run's checkpointer, after refusing a checkpoint of anything but this spec and options."""
    identity = spec_identity(spec, args.spec)
    options = options_of(args, props)
    if manifest is not None:
        refuse_other_run(manifest, identity, options, args.resume)
    every = 10.0 if args.checkpoint_every is None else args.checkpoint_every
    cls = Checkpointer
    if args.engine == SPARK:
        from kafkamc.checker.spark_checkpoint import SparkCheckpointer as cls  # imported only for a Spark checkpoint
    return cls(args.checkpoint, identity, options, every * 60.0, manifest)


def finished_result(spec: Spec, props: Sequence[Property], manifest: Manifest, deadlock: bool,
                    symmetry: bool) -> CheckResult:
    """The result of a finished run, from its checkpoint (its trace replayed and checked again)."""
    f = manifest.finished
    assert f is not None
    trace = None
    if f.get("path"):
        trace = checked_replay(spec, f["path"], f["violated"], props)
    coverage = None if f.get("coverage") is None else tuple(ActionCoverage(*row) for row in f["coverage"])
    return CheckResult(
        spec=spec.name, params=spec.p.as_dict(), engine=manifest.engine, result=f["result"],
        invariants=tuple(pr.name for pr in props) + ((DEADLOCK,) if deadlock else ()), violated=f["violated"],
        distinct_states=f["distinct_states"], states_generated=f["states_generated"], depth=f["depth"],
        seconds=f["seconds"], trace=trace, reason=f["reason"], symmetry=symmetry, coverage=coverage,
    )


def report_checkpoint(result: CheckResult, ckpt: Checkpointer) -> None:
    """After a stopped run: where its checkpoint is and how to continue it (stderr)."""
    if not (result.result == INCOMPLETE and result.reason in RESUMABLE):
        return
    b = ckpt.saved
    where = printable(ckpt.directory)
    if ckpt.failure:
        print(f"kafkamc: the checkpoint of the stopped run could not be written: {printable(ckpt.failure)}",
              file=sys.stderr)
    if b is None:
        print(f"kafkamc: {where} holds no checkpoint to continue from (none was written before the stop)",
              file=sys.stderr)
        return
    print(f"kafkamc: checkpoint of level {b.depth} ({b.distinct:,} distinct states) in {where}; continue with: "
          f"kafkamc check --resume {where}", file=sys.stderr)


def checkpoint_json(ckpt: Checkpointer) -> dict[str, Any]:
    """The ``checkpoint`` member of ``--json``: the directory and the level it holds (null: none,
    or the run is finished)."""
    b = ckpt.saved
    return {"directory": ckpt.directory, "level": None if b is None else b.depth,
            "distinct_states": None if b is None else b.distinct}
