"""``kafkamc trace replay`` for a lasso (a liveness counterexample).

A lasso reproduces when every recorded step is still a transition of the spec, the last state
still leads back to the state at ``loop_start`` by the recorded ``loop_action`` (or may stutter
there forever when that is null), the cycle is fair under the recorded fairness, and the
liveness property fails on the behaviour the lasso describes.
"""

from __future__ import annotations

from typing import Any, Iterator

from kafkamc.counterexamples.render import state_to_json
from kafkamc.errors import SpecRaised, UsageError

__all__ = ["replay_lasso"]


def _successors(spec: Any, state: Any) -> Iterator[tuple[int, str, str, Any]]:
    """(successor index, action name, label, next state) in successor-index order."""
    from kafkamc.spec.api import format_label

    i = 0
    for act in spec.actions():
        try:
            produced = list(act.fn(spec.p, state))
        except Exception as exc:
            raise SpecRaised(f"action {act.name}", state, exc) from exc
        for label, nxt in produced:
            yield i, act.name, format_label(act.name, label), nxt
            i += 1


def replay_lasso(doc: dict[str, Any], spec_ref: str | None = None) -> Any:
    """Re-execute a lasso document; a ``ReplayReport`` (see ``kafkamc.cli.trace``)."""
    from kafkamc.checker.liveness import Fairness, judge_lasso
    from kafkamc.cli.trace import ReplayReport, printable, show_json
    from kafkamc.invariants.temporal import formula_of
    from kafkamc.spec.registry import build_spec, load_spec_class

    ref = spec_ref or (doc.get("spec_ref") if isinstance(doc.get("spec_ref"), str) else None) or doc.get("spec")
    if not ref:
        raise UsageError("the trace names no spec; pass --spec NAME (or module:Class)")
    violated = doc.get("violated")
    if not violated:
        raise UsageError("the trace names no violated property, so there is nothing to reproduce")
    cls = load_spec_class(str(ref))
    report = ReplayReport()

    def fail(line: str) -> Any:
        report.say(line)
        report.say("not reproduced")
        return report

    try:
        spec = build_spec(str(ref), dict(doc.get("params") or {}))
    except UsageError as exc:
        return fail(f"the spec does not accept the trace's parameters any more: {exc}")
    try:
        formula = formula_of(cls.liveness_named(str(violated)))
    except (UsageError, TypeError):
        return fail(f"spec {spec.name} has no liveness property {printable(str(violated))} any more")
    fair = doc.get("fairness")
    actions = [a.name for a in cls.actions()]
    if isinstance(fair, dict):
        weak = tuple(str(a) for a in fair.get("weak") or ())
        strong = tuple(str(a) for a in fair.get("strong") or ())
        gone = [a for a in weak + strong if a not in actions]
        if gone:
            return fail(f"the recorded fairness names {printable(gone[0])}, which is no longer an action of "
                        f"spec {spec.name}")
        fairness = Fairness(weak, strong)
    else:
        fairness = Fairness(tuple(cls.weak_fairness), tuple(cls.strong_fairness))
        report.say("the trace records no fairness; the spec's declared fairness is assumed")
    steps = doc["trace"]
    loop_start = doc["loop_start"]
    loop_action = doc.get("loop_action")
    params = " ".join(f"{k}={show_json(v)}" for k, v in spec.p.as_dict().items())
    report.say(f"replaying a lasso of {len(steps)} states (the cycle from step {loop_start + 1}) against "
               f"{spec.name} [{params}] under fairness {fairness.describe()}")

    inits = spec.initial()
    state = next((s for s in inits if state_to_json(s) == steps[0]["state"]), None)
    if state is None:
        return fail("step 1 (initial state): not an initial state of the spec any more")
    states = [state]
    names: list[str] = []
    path = doc.get("path") if isinstance(doc.get("path"), list) and len(doc["path"]) == len(steps) else None
    for n in range(1, len(steps)):
        want, want_label = steps[n]["state"], steps[n]["action"]
        chosen = loose = None
        for i, name, label, nxt in _successors(spec, state):
            if state_to_json(nxt) != want:
                continue
            if want_label is None or label == want_label:
                if chosen is None or (path is not None and i == path[n]):
                    chosen = (name, nxt)
                if path is None or i == path[n]:
                    break
            elif loose is None:
                loose = (name, nxt)
        chosen = chosen or loose
        if chosen is None:
            return fail(f"step {n + 1} ({printable(want_label or 'a step')}): not a transition of the spec any "
                        f"more: no successor of step {n} has the recorded state")
        names.append(chosen[0])
        state = chosen[1]
        states.append(state)
    report.say(f"all {len(steps) - 1} transitions are still legal")

    closing: str | None = None
    if loop_action is None:
        if loop_start != len(steps) - 1:
            return fail("the lasso has no closing transition, so it must stutter in its last state only")
        report.say(f"the behaviour stutters in state {len(steps)} forever")
    else:
        view = spec.view
        key = (lambda s: view(spec.p, s)) if view is not None else (lambda s: s)
        back = key(states[loop_start])
        found = [(name, label) for _, name, label, nxt in _successors(spec, state) if key(nxt) == back]
        exact = [name for name, label in found if label == loop_action]
        if not found:
            return fail(f"the last state no longer leads back to state {loop_start + 1}: the cycle is broken")
        if not exact:
            report.say(f"the transition back to state {loop_start + 1} was recorded as {printable(loop_action)}, "
                       f"now {printable(found[0][1])}")
        closing = exact[0] if exact else found[0][0]
        report.say(f"{printable(loop_action)} still leads from state {len(steps)} back to state {loop_start + 1}")
    problems = judge_lasso(spec, formula, fairness, states, names, loop_start, closing)
    for line in problems:
        report.say(line)
    if problems:
        report.say("not reproduced")
        return report
    report.say(f"{violated} ({formula}) still fails on this fair behaviour")
    report.reproduced = True
    report.say("reproduced")
    return report
