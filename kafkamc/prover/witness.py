"""The solver's states found again concretely: what every ``bmc`` encoding reports.

A counterexample is never the solver's word: its states are found again among the spec's initial
states and concrete successors, the successor-index path is replayed, and the replayed trace is
what is reported (``kafkamc trace replay`` reproduces it). A state where a spec function raised
symbolically is run concretely and reported as ``check`` reports it. Any disagreement is a
``SoundnessError`` (exit 3), never a result.
"""

from __future__ import annotations

import time
from typing import Any

from kafkamc.checker.symbolic.paths import PathLimit
from kafkamc.counterexamples.trace import replay
from kafkamc.errors import SoundnessError, SpecRaised
from kafkamc.invariants.api import Property
from kafkamc.result import INCOMPLETE, VIOLATION, CheckResult
from kafkamc.spec.api import Spec

__all__ = ["concrete_path", "confirmed", "incomplete", "limit_reason", "raised"]


def raised(spec: Spec, props: tuple[Property, ...], states: list[Any], *, actions: bool) -> None:
    """A reachable state on which a spec function raised symbolically: found again concretely and
    reported as ``check`` reports it (exit 3), or a disagreement."""
    concrete_path(spec, states)
    last = states[-1]
    p = spec.p
    for pr in props:
        try:
            pr.fn(p, last)
        except Exception as exc:
            raise SpecRaised(f"invariant {pr.name}", last, exc) from exc
    cons = type(spec).constraint
    if cons is not None:
        try:
            cons(p, last)
        except Exception as exc:
            raise SpecRaised("constraint", last, exc) from exc
    if actions:
        for act in type(spec).actions():
            try:
                list(act.fn(p, last))
            except Exception as exc:
                raise SpecRaised(f"action {act.name}", last, exc) from exc
    raise SoundnessError(f"bmc: a spec function raised on a symbolic state that runs concretely: {last!r}")


def incomplete(spec: Spec, props: tuple[Property, ...], started: float, reached: int, reason: str,
               why: str | None, stats: dict[str, Any]) -> CheckResult:
    """None within ``reached`` steps (-1: not even the initial states were checked)."""
    extra = {**stats, "bmc_depth": reached}
    if why is not None:
        extra["limit"] = why
    return CheckResult(
        spec=spec.name, params=spec.p.as_dict(), engine="bmc", result=INCOMPLETE,
        invariants=tuple(pr.name for pr in props), violated=None, distinct_states=0, states_generated=0,
        depth=reached + 1, seconds=round(time.perf_counter() - started, 3), reason=reason, extra=extra)


def limit_reason(exc: BaseException, deadline: float) -> str:
    """The incomplete run's reason when a query was left open: the run's ``--timeout``, a
    query's path budget, or the solver's own unknown."""
    if time.monotonic() >= deadline:
        return "max-time"
    return "max-paths" if isinstance(exc, PathLimit) else "solver-unknown"


def concrete_path(spec: Spec, states: list[Any]) -> list[int]:
    """The successor-index path of the solver's states, found again among the concrete initial
    states and successors; a state that is not there is a disagreement, never printed."""
    inits = spec.initial()
    try:
        path = [inits.index(states[0])]
    except ValueError:
        raise SoundnessError(f"bmc: the solver's initial state is not an initial state of {spec.name}: "
                             f"{states[0]!r}") from None
    cons = type(spec).constraint
    for k, (pre, post) in enumerate(zip(states, states[1:]), start=1):
        if cons is not None and not cons(spec.p, pre):
            raise SoundnessError(f"bmc: step {k} leaves a state the constraint does not expand")
        succ = [nxt for _act, _label, nxt in spec.successors(pre)]
        if post not in succ:
            raise SoundnessError(f"bmc: the solver's state {k + 1} is not a successor of state {k}: {post!r}")
        path.append(succ.index(post))
    return path


def confirmed(spec: Spec, props: tuple[Property, ...], states: list[Any], started: float, depth: int,
              stats: dict[str, Any]) -> CheckResult:
    """Find the solver's states again concretely and replay them: never an unchecked trace."""
    trace = replay(spec, concrete_path(spec, states))
    if [st.state for st in trace.steps] != states:
        raise SoundnessError("bmc: the replayed trace differs from the solver's states")
    p = spec.p
    for k, st in enumerate(states[:-1], start=1):
        if not all(pr.fn(p, st) for pr in props):
            raise SoundnessError(f"bmc: state {k} already violates an invariant: the search was not shortest")
    violated = next((pr.name for pr in props if not pr.fn(p, states[-1])), None)
    if violated is None:
        raise SoundnessError("bmc: the solver's last state satisfies every invariant when replayed")
    return CheckResult(
        spec=spec.name, params=p.as_dict(), engine="bmc", result=VIOLATION,
        invariants=tuple(pr.name for pr in props), violated=violated, distinct_states=0, states_generated=0,
        depth=len(states), seconds=round(time.perf_counter() - started, 3), trace=trace,
        extra={**stats, "bmc_depth": len(states) - 1, "bmc_bound": depth})
