"""A counterexample to induction made trustworthy: replayed concretely, then searched for.

The solver's answer is never shown as is. Its pre-state is run through the real Python action on
concrete values; the successor it predicted must come out, the pre-state must satisfy every assumed
invariant and the spec's domain, and the successor must break the target. Any disagreement is a
bug of the prover, reported as ``SoundnessError``. Then a breadth-first search within concrete
bounds says whether the pre-state is reachable (a real violation, with its trace) or not reached.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from kafkamc.checker.local import explore
from kafkamc.counterexamples.trace import Trace, TraceStep
from kafkamc.errors import SoundnessError, UsageError
from kafkamc.invariants.api import Property
from kafkamc.prover.query import RawCti
from kafkamc.prover.result import INIT, TYPE_OK, Cti
from kafkamc.result import VIOLATION
from kafkamc.spec.api import Params, Spec, format_label
from kafkamc.spec.domain import contains

__all__ = ["verify_cti", "search_pre_state"]

# A search for a CTI's pre-state stops here and says "not reached within these bounds".
SEARCH_MAX_STATES = 2_000_000


def _holds(prop: Property, p: Params, pre: Any, label: str | None, post: Any) -> bool:
    if prop.kind == "invariant":
        return bool(prop.fn(p, post))
    return bool(prop.fn(p, pre, label, post))


def verify_cti(spec: Spec, raw: RawCti, assumed: tuple[Property, ...]) -> Cti:
    """Replay ``raw`` on concrete values; a disagreement with the solver is a SoundnessError."""
    cls = type(spec)
    p = Params({**spec.p.as_dict(), **raw.lifted_values})
    dom = cls.domain(p)
    props = {pr.name: pr for pr in assumed}

    def broken(label: str | None, post: Any) -> bool:
        if raw.target == TYPE_OK:
            return not contains(dom, post)
        return not _holds(props[raw.target], p, raw.pre, label, post)

    if raw.action == INIT:
        states = list(cls.init_states(p))
        if raw.post not in states:
            raise SoundnessError(f"prove: the initial state the solver found is not an initial state: {raw.post!r}")
        if not broken(None, raw.post):
            raise SoundnessError(f"prove: the initial state the solver found satisfies {raw.target}: {raw.post!r}")
        return Cti(INIT, "initial state", None, raw.post, raw.target, raw.lifted_values)
    pre = raw.pre
    if not contains(dom, pre):
        raise SoundnessError(f"prove: the solver's pre-state is outside the spec's domain: {pre!r}")
    if cls.constraint is not None and not cls.constraint(p, pre):
        raise SoundnessError(f"prove: the solver's pre-state is outside the spec's constraint: {pre!r}")
    for pr in assumed:
        if pr.kind == "invariant" and not pr.fn(p, pre):
            raise SoundnessError(f"prove: the solver's pre-state breaks the assumed invariant {pr.name}: {pre!r}")
    act = next(a for a in cls.actions() if a.name == raw.action)
    for label, post in act.fn(p, pre):
        if post == raw.post:
            shown = format_label(act.name, label)
            if not broken(shown, post):
                raise SoundnessError(f"prove: the successor the solver found satisfies {raw.target} when run "
                                     f"concretely ({shown})")
            return Cti(act.name, shown, pre, post, raw.target, raw.lifted_values)
    raise SoundnessError(f"prove: action {raw.action} run concretely on the solver's pre-state does not yield the "
                         f"predicted successor {raw.post!r}")


def search_pre_state(spec: Spec, cti: Cti, max_states: int = SEARCH_MAX_STATES) -> Cti:
    """Breadth-first search for ``cti.pre`` within concrete bounds: the spec's given values, with
    each lifted parameter at the CTI's value when the parameter allows it (else its given value)."""
    cls = type(spec)
    values = spec.p.as_dict()
    notes = []
    for name, v in sorted(cti.lifted_values.items()):
        prm = next(pr for pr in cls.parameters if pr.name == name)
        if (prm.min is None or v >= prm.min) and (prm.max is None or v <= prm.max):
            values[name] = v
            notes.append(f"{name}={v} (the CTI's)")
        else:
            notes.append(f"{name}={values[name]} (given; the CTI's {v} is outside {prm.allowed()})")
    try:
        bounded = cls(**values)
    except UsageError as exc:
        return dataclasses.replace(cti, reachable=False, search_params=values,
                                   search_note=f"not searched: {exc}")
    note = ", ".join(notes) if notes else "the given parameters"
    if cti.pre is None:  # an initial state is reachable by definition
        trace = Trace((TraceStep(None, cti.post),), (0,))
        return dataclasses.replace(cti, reachable=True, trace=trace, search_params=values, search_note=note)
    p = bounded.p
    view = cls.view
    target = cti.pre if view is None else view(p, cti.pre)

    def not_pre(p_: Params, s: Any) -> bool:
        return (s if view is None else view(p_, s)) != target

    prop = Property("cti-pre-state", "the CTI's pre-state is not reached", "invariant", not_pre)
    result = explore(bounded, [prop], max_states=max_states)
    if result.result != VIOLATION or result.trace is None:
        suffix = "" if result.result != "incomplete" else f" (search stopped at {result.distinct_states:,} states)"
        return dataclasses.replace(cti, reachable=False, search_params=values, search_note=note + suffix,
                                   search_states=result.distinct_states)
    # The trace ends in a state with the pre-state's view; the CTI's step follows it.
    steps = list(result.trace.steps)
    last = steps[-1].state
    path = list(result.trace.path)
    index = 0
    for act in cls.actions():
        for label, post in act.fn(p, last):
            if act.name == cti.action and format_label(act.name, label) == cti.label:
                steps.append(TraceStep(cti.label, post))
                path.append(index)
                trace = Trace(tuple(steps), tuple(path))
                return dataclasses.replace(cti, reachable=True, trace=trace, search_params=values,
                                           search_note=note, search_states=result.distinct_states)
            index += 1
    raise SoundnessError(f"prove: the reached pre-state has no step {cti.label!r}")
