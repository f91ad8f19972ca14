"""The one way every engine turns a violation into a trace: replay its path and check the replay.

An engine stores a counterexample as a successor-index path and rebuilds its states by re-running
the spec. That is only the trace the search found if the spec yields the same successors in the
same order on every call. A spec that does not (a ``random.shuffle``, iteration over a set of
strings, a module-level counter) would get a trace that ends somewhere else, often in a state that
violates nothing. So the replay is checked: each replayed state's fingerprint against the one the
engine recorded for that position, then the violated property itself on the last state (or on the
last transition, for an action property; no successors, for a deadlock). A mismatch is a spec
error (exit 3) naming the action and the state, never a printed trace.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from kafkamc.counterexamples.trace import Trace, TraceStep
from kafkamc.errors import SpecError, SpecRaised
from kafkamc.invariants.api import Property, fails
from kafkamc.result import DEADLOCK
from kafkamc.spec.api import Spec, format_label

__all__ = ["checked_replay", "Expected"]

# (position in the trace, fingerprint of the replayed state there) -> True when it is the state the
# engine recorded at that position, False when it is not, None when the engine kept no record.
Expected = Callable[[int, int], "bool | None"]

_RULE = ("actions and init_states must yield in the same order on every call: iterate over sorted "
         "ranges, never over a set of strings or at random")


def checked_replay(
    spec: Spec,
    path: Sequence[int],
    violated: str,
    properties: Sequence[Property],
    *,
    key: Callable[[Any], int] | None = None,
    expected: Expected | None = None,
) -> Trace:
    """Replay ``path`` against ``spec``, check it is the counterexample the engine found, return it.

    ``violated`` names the property (or ``deadlock``) the engine reported; ``properties`` are the
    ones it checked. ``key`` is the engine's fingerprint function and ``expected`` says whether a
    fingerprint is the one recorded at a position; without them only the property is checked.
    A recoverability property is checked by fingerprints only (its verdict needs the state graph).
    """
    if not path:
        raise SpecError("internal: an engine reported a counterexample with an empty path")
    inits = spec.initial()
    if not 0 <= path[0] < len(inits):
        raise SpecError(
            f"the spec is not deterministic: init_states now yields {len(inits)} initial states, but the search "
            f"took initial state #{path[0]}; {_RULE}"
        )
    state = inits[path[0]]
    steps = [TraceStep(None, state)]
    _check_fingerprint(spec, key, expected, 0, state, None, path, steps)
    for j in range(1, len(path)):
        step = _successor(spec, state, path[j])
        if step is None:
            at, culprit = _first_unstable(spec, steps, key)
            raise SpecError(
                f"the spec is not deterministic: {_who(culprit)} yields its successors in a different order on the "
                f"same state {at!r} (replaying step {j + 1} of the counterexample, state {state!r} has no "
                f"successor #{path[j]}); {_RULE}"
            )
        aname, label, nxt = step
        _check_fingerprint(spec, key, expected, j, nxt, (state, aname, label), path, steps)
        steps.append(TraceStep(format_label(aname, label), nxt))
        state = nxt
    _check_verdict(spec, violated, properties, steps, key is not None and expected is not None)
    return Trace(tuple(steps), tuple(path))


def _successor(spec: Spec, state: Any, index: int) -> tuple[str, Any, Any] | None:
    i = 0
    for act in spec.actions():
        try:
            for label, nxt in act.fn(spec.p, state):
                if i == index:
                    return act.name, label, nxt
                i += 1
        except Exception as exc:
            raise SpecRaised(f"action {act.name}", state, exc) from exc
    return None


def _check_fingerprint(spec: Spec, key: Callable[[Any], int] | None, expected: Expected | None, j: int,
                       state: Any, came_from: tuple[Any, str, Any] | None, path: Sequence[int],
                       steps: list[TraceStep]) -> None:
    if key is None or expected is None or expected(j, key(state)) is not False:
        return
    if came_from is None:
        raise SpecError(
            f"the spec is not deterministic: init_states yields the initial states in a different order "
            f"(initial state #{path[0]} is now {state!r}, not the state the search found); {_RULE}"
        )
    prev, aname, label = came_from
    at, culprit = _first_unstable(spec, steps, key)
    if culprit is None:
        # Stable within this process (the search ran in other processes, or the order depends on a
        # salted hash), and an engine that records only some fingerprints notices a divergence late.
        raise SpecError(
            f"the spec is not deterministic: action {aname} yields its successors in a different order on the same "
            f"state {prev!r}, or an action did on an earlier state of the counterexample (replaying step {j + 1}, "
            f"successor #{path[j]} is now {format_label(aname, label)}, off the path the search found; the order "
            f"differs between processes or runs, not between two calls here); {_RULE}"
        )
    raise SpecError(
        f"the spec is not deterministic: action {culprit} yields its successors in a different order on the same "
        f"state {at!r} (replaying step {j + 1} of the counterexample, successor #{path[j]} of state {prev!r} is "
        f"now {format_label(aname, label)}, not the state the search found); {_RULE}"
    )


def _first_unstable(spec: Spec, steps: list[TraceStep], key: Callable[[Any], int] | None) -> tuple[Any, str | None]:
    """The first state of the replay on which an action's successors differ between two calls.

    An engine that records only some fingerprints (Spark) notices a divergence only where it has
    one, possibly steps after the state where the order changed.
    """
    for st in steps:
        culprit = _unstable_action(spec, st.state, key)
        if culprit is not None:
            return st.state, culprit
    return steps[-1].state, None


def _unstable_action(spec: Spec, state: Any, key: Callable[[Any], int] | None) -> str | None:
    """The first action whose successors of ``state`` differ between two calls, if one does here."""
    fp = key if key is not None else (lambda s: s)
    for act in spec.actions():
        try:
            once = [(format_label(act.name, lb), fp(t)) for lb, t in act.fn(spec.p, state)]
            again = [(format_label(act.name, lb), fp(t)) for lb, t in act.fn(spec.p, state)]
        except Exception as exc:
            raise SpecRaised(f"action {act.name}", state, exc) from exc
        if once != again:
            return act.name
    return None


def _who(culprit: str | None) -> str:
    return f"action {culprit}" if culprit else "an action"


def _check_verdict(spec: Spec, violated: str, properties: Sequence[Property], steps: list[TraceStep],
                   same_state: bool) -> None:
    """The property the engine reported must fail on the replayed trace's end."""
    p = spec.p
    last = steps[-1].state
    where = "on the same state" if same_state else "on the state the replayed counterexample ends in"
    if violated == DEADLOCK and not any(pr.name == DEADLOCK for pr in properties):
        if spec.constraint is not None and not spec.constraint(p, last):
            raise SpecError(f"the spec is not deterministic: constraint excludes {where} {last!r}, which the search "
                            "found as a deadlock")
        culprit = next((a.name for a in spec.actions() if any(True for _ in a.fn(p, last))), None)
        if culprit is not None:
            raise SpecError(
                f"the spec is not deterministic: action {culprit} yields a successor {where} {last!r}, which the "
                f"search found as a deadlock (no successors); {_RULE}"
            )
        return
    prop = next((pr for pr in properties if pr.name == violated), None)
    if prop is None or prop.kind == "recoverability":
        return
    if prop.kind == "action":
        if len(steps) < 2:
            raise SpecError(f"internal: action property {violated} reported without a transition")
        prev = steps[-2].state
        what = f"action property {violated}"
        try:
            value = prop.fn(p, prev, steps[-1].action, last)
        except Exception as exc:
            raise SpecRaised(what, prev, exc) from exc
        if value is not True and fails(value, what, prev):
            return
        raise SpecError(
            f"the spec is not deterministic: {what} holds on the transition {steps[-1].action} from {where} "
            f"{prev!r}, which the search found to violate it; it must depend only on (p, state, label, next_state)"
        )
    what = f"invariant {violated}"
    try:
        value = prop.fn(p, last)
    except Exception as exc:
        raise SpecRaised(what, last, exc) from exc
    if value is not True and fails(value, what, last):
        return
    raise SpecError(
        f"the spec is not deterministic: {what} holds {where} {last!r}, which the search found to violate it; "
        "it must depend only on (p, state)"
    )
