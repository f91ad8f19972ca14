"""``kafkamc trace show|replay|html``: reading, re-checking and viewing stored counterexamples.

Every command reads both kinds of trace file: the JSON that ``kafkamc check --out DIR`` writes
(``<spec>-<invariant>.trace.json``) and ITF (``<spec>-<invariant>.itf.json``, or an ITF trace of
another tool for ``show`` and ``html``). A malformed or foreign file is a one-line error, exit 2.
"""

from __future__ import annotations

import argparse
import json
import re
from typing import Any, Iterator

from kafkamc.counterexamples.itf import load_trace_file
from kafkamc.counterexamples.render import render_trace, state_to_json
from kafkamc.errors import MalformedSpec, SpecRaised, UsageError
from kafkamc.safewrite import check_output_file
from kafkamc.terminal import printable
from kafkamc.invariants.api import fails as property_fails

__all__ = ["register", "render_document", "replay_document", "ReplayReport", "show_json"]

EXIT_REPRODUCED, EXIT_NOT_REPRODUCED = 0, 1
_BARE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")


def register(subparsers: Any) -> None:
    trace = subparsers.add_parser("trace", help="show, replay or view a stored counterexample trace")
    sub = trace.add_subparsers(dest="trace_command", metavar="ACTION", parser_class=type(trace))
    sub.required = True

    show = sub.add_parser("show", help="print a trace: each step's action and what changed (old -> new)")
    show.add_argument("file", metavar="FILE", help="a .trace.json or .itf.json file")
    show.add_argument("--full", action="store_true", help="print every field of every state")
    show.set_defaults(run=_cmd_show)

    rep = sub.add_parser(
        "replay", help="re-execute a trace against its spec: exit 0 if it still reproduces the violation, else 1"
    )
    rep.add_argument("file", metavar="FILE", help="a .trace.json or .itf.json file")
    rep.add_argument("--spec", default=None, metavar="SPEC",
                     help="the spec to replay against (default: the one the file names; module:Class for your own)")
    rep.add_argument("--trust", action="store_true",
                     help="import the module:Class the file names (only bundled specs are imported without "
                          "--spec or --trust: replaying imports and runs the spec's code)")
    rep.set_defaults(run=_cmd_replay)

    html = sub.add_parser("html", help="write a self-contained HTML viewer of a trace")
    html.add_argument("file", metavar="FILE", help="a .trace.json or .itf.json file")
    html.add_argument("-o", "--output", required=True, metavar="OUT.html", help="the HTML file to write")
    html.set_defaults(run=_cmd_html)


# -- show ------------------------------------------------------------------------------------


def show_json(value: Any) -> str:
    """A compact rendering of a JSON trace value: lists as [a, b], names bare, other strings quoted."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, str):
        return value if _BARE.match(value) else json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(show_json(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{printable(k)}: {show_json(v)}" for k, v in value.items()) + "}"
    return str(value)


def _header(doc: dict[str, Any]) -> list[str]:
    params = " ".join(f"{printable(str(k))}={show_json(v)}" for k, v in doc.get("params", {}).items())
    spec = printable(str(doc.get("spec") or "(unnamed spec)"))
    engine = f" engine={printable(str(doc['engine']))}" if doc.get("engine") else ""
    head = f"{spec} [{params}]{engine}"
    n = len(doc["trace"])
    violated = doc.get("violated")
    if violated == "deadlock":
        verdict = f"violation: a deadlock (a state with no successors) after {n - 1} steps (trace of {n} states)"
    elif violated and doc.get("loop_start") is not None:
        verdict = f"violation: {printable(str(violated))} fails on a lasso of {n} states (the cycle from state " \
                  f"{doc['loop_start'] + 1})"
    elif violated:
        verdict = f"violation: {printable(str(violated))} fails after {n - 1} steps (trace of {n} states)"
    else:
        verdict = f"a trace of {n} states"
    lines = [head, verdict]
    stats = [f"{doc[k]:,} {label}" for k, label in
             (("distinct_states", "distinct states"), ("states_generated", "generated")) if isinstance(doc.get(k), int)]
    if isinstance(doc.get("depth"), int):
        stats.append(f"depth {doc['depth']}")
    if stats:
        lines.append(", ".join(stats))
    return lines


def render_document(doc: dict[str, Any], full: bool = False) -> str:
    """The terminal rendering of a trace document: a header, then the trace exactly as
    ``kafkamc check`` prints it (one renderer, ``render_trace``, for both)."""
    return "\n".join(_header(doc) + ["", render_trace(doc, full=full)])


def _cmd_show(args: argparse.Namespace) -> int:
    doc = load_trace_file(args.file)
    print(render_document(doc, full=args.full))
    return 0


# -- replay ----------------------------------------------------------------------------------


class ReplayReport:
    """What a replay found: ``reproduced`` and the lines that say why."""

    def __init__(self) -> None:
        self.reproduced = False
        self.lines: list[str] = []

    def say(self, line: str) -> None:
        self.lines.append(line)


def _successors(spec: Any, state: Any) -> Iterator[tuple[int, str, Any]]:
    from kafkamc.spec.api import format_label, malformed_successors

    i = 0
    for act in spec.actions():
        try:
            produced = list(act.fn(spec.p, state))
            problem = malformed_successors(produced)
        except Exception as exc:
            raise SpecRaised(f"action {act.name}", state, exc) from exc
        if problem is not None:
            raise SpecRaised(f"action {act.name}", state, MalformedSpec(problem))
        for label, nxt in produced:
            yield i, format_label(act.name, label), nxt
            i += 1


def replay_document(doc: dict[str, Any], spec_ref: str | None = None, trust: bool = False) -> ReplayReport:
    """Re-execute a trace document against its spec.

    Each recorded step must still be a transition of the spec: the stored successor-index path is
    followed where it still leads to the recorded state, otherwise the recorded state (and, if it
    can, its action label) is searched among the successors. Then the violated property must
    still fail at the end. UsageError if the file names no spec or the spec cannot be built.

    A file is data, and may come from anywhere: the spec it names is imported only if it is
    bundled with kafkamc, unless ``trust`` (or the caller names the spec in ``spec_ref``).
    """
    from kafkamc.spec.registry import BUNDLED, build_spec, load_spec_class

    ref = spec_ref or (doc.get("spec_ref") if isinstance(doc.get("spec_ref"), str) else None) or doc.get("spec")
    if not ref:
        raise UsageError("the trace names no spec; pass --spec NAME (or module:Class)")
    violated = doc.get("violated")
    if not violated:
        raise UsageError("the trace names no violated invariant, so there is nothing to reproduce")
    if spec_ref is None and not trust and ":" in str(ref) and ref not in BUNDLED.values():
        # A bare name can only mean a bundled spec; module:Class would import the file's choice.
        raise UsageError(
            f"the trace names spec {ref!r}, which is not bundled with kafkamc, and replaying imports and runs "
            f"its module; pass --spec {ref} to replay against it, or --trust to use the file's reference"
        )
    if doc.get("loop_start") is not None:
        from kafkamc.cli.replay_lasso import replay_lasso

        return replay_lasso(doc, str(ref))
    load_spec_class(str(ref))  # an unknown spec is a usage error (exit 2)
    report = ReplayReport()
    recorded = dict(doc.get("params") or {})
    try:
        spec = build_spec(str(ref), recorded)
    except UsageError as exc:
        # The spec exists but no longer takes the trace's parameters: it changed under the trace.
        report.say(f"the spec does not accept the trace's parameters any more: {exc}")
        report.say("not reproduced")
        return report
    steps = doc["trace"]
    path = doc.get("path")
    if path is not None and len(path) != len(steps):
        path = None
    p = spec.p
    params = " ".join(f"{k}={show_json(v)}" for k, v in p.as_dict().items())
    report.say(f"replaying {len(steps)} states against {spec.name} [{params}]")
    defaulted = [k for k in p.as_dict() if k not in recorded]
    if defaulted and recorded:
        report.say("parameters the trace does not set take their defaults: " + ", ".join(defaulted))

    try:
        inits = spec.initial()
    except Exception as exc:
        raise SpecRaised(f"{type(spec).__name__}.init_states", None, exc) from exc
    want = steps[0]["state"]
    state = None
    if path is not None and 0 <= path[0] < len(inits) and state_to_json(inits[path[0]]) == want:
        state = inits[path[0]]
    else:
        state = next((s for s in inits if state_to_json(s) == want), None)
    if state is None:
        report.say("step 1 (initial state): not an initial state of the spec any more")
        report.say("not reproduced")
        return report

    from kafkamc.invariants.api import Property

    prop: Property | None = None
    if violated != "deadlock":
        try:
            prop = type(spec).property_named(str(violated))
        except UsageError:
            report.say(f"spec {spec.name} has no invariant {printable(str(violated))} any more")
            report.say("not reproduced")
            return report

    by_state = 0
    relabelled = []
    prev_state, last_label = state, None
    early: int | None = None
    for n in range(1, len(steps)):
        want, want_label = steps[n]["state"], steps[n]["action"]
        chosen = exact = loose = None
        for i, label, nxt in _successors(spec, state):
            if state_to_json(nxt) != want:
                continue
            label_ok = want_label is None or label == want_label
            if path is not None and i == path[n] and label_ok:
                chosen = (label, nxt)
                break
            if label_ok and exact is None:
                exact = (label, nxt)
                if path is None or i > path[n]:
                    break
            elif loose is None:
                loose = (label, nxt)
        fallback = exact or loose
        if chosen is None:
            if fallback is None:
                title = printable(want_label) if want_label else "a step"
                report.say(f"step {n + 1} ({title}): not a transition of the spec any more: "
                           f"no successor of step {n} has the recorded state")
                report.say("not reproduced")
                return report
            chosen = fallback
            by_state += 1
            if want_label is not None and chosen[0] != want_label:
                relabelled.append(f"step {n + 1}: recorded {printable(want_label)}, now {printable(chosen[0])}")
        prev_state, last_label, state = state, chosen[0], chosen[1]
        if prop is not None and prop.kind == "invariant" and n < len(steps) - 1 and early is None:
            if not _holds(prop, p, prev_state, last_label, state):
                early = n + 1

    if path is not None and by_state:
        report.say(f"the stored path no longer indexes {by_state} of the transitions; they were matched by state")
    for line in relabelled:
        report.say(line)
    report.say(f"all {len(steps) - 1} transitions are still legal")
    if violated == "deadlock":
        fails = next(iter(_successors(spec, state)), None) is None
        what = "the last state still has no successors (deadlock)"
        what_not = "the last state has successors now: no deadlock"
    else:
        assert prop is not None
        fails = not _holds(prop, p, prev_state, last_label, state)
        what = f"{prop.name} still fails at step {len(steps)}"
        what_not = f"{prop.name} holds at step {len(steps)} now"
    if early is not None:
        report.say(f"note: {violated} already fails at step {early}")
    report.say(what if fails else what_not)
    report.reproduced = fails
    report.say("reproduced" if fails else "not reproduced")
    return report


def _holds(prop: Any, p: Any, prev: Any, label: str | None, state: Any) -> bool:
    try:
        if prop.kind == "invariant":
            verdict = prop.fn(p, state)
        else:
            verdict = prop.fn(p, prev, label, state)
    except Exception as exc:
        raise SpecRaised(f"{prop.kind} {prop.name}", state, exc) from exc
    # None from a forgotten return is a spec error, not a reproduced violation.
    what = "invariant" if prop.kind == "invariant" else "action property"
    return verdict is True or not property_fails(verdict, f"{what} {prop.name}", state)


def _cmd_replay(args: argparse.Namespace) -> int:
    doc = load_trace_file(args.file)
    report = replay_document(doc, args.spec, trust=args.trust)
    print("\n".join(report.lines))
    return EXIT_REPRODUCED if report.reproduced else EXIT_NOT_REPRODUCED


# -- html ------------------------------------------------------------------------------------


def _cmd_html(args: argparse.Namespace) -> int:
    from kafkamc.counterexamples.html import write_html

    check_output_file(args.output, "-o")
    doc = load_trace_file(args.file)
    written = write_html(doc, args.output)
    print(f"trace viewer written to {written}")
    return 0
