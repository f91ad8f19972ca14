"""The counterexample trace: stored as an action-index path, rebuilt by replaying the spec.

A path is ``(i0, i1, ..., ik)``: ``i0`` indexes the spec's initial states and every later ``ij``
indexes the successors of the previous state in successor-index order (see ``Spec.successors``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from kafkamc.spec.api import Spec, action_failure, format_label

__all__ = ["TraceStep", "Trace", "ReplayError", "replay"]


@dataclass(frozen=True, slots=True)
class TraceStep:
    """One state of a trace and the label of the action that led to it (None for an initial state)."""

    action: str | None
    state: Any


@dataclass(frozen=True, slots=True)
class Trace:
    """A counterexample. A *lasso* (a liveness counterexample) also has ``loop_start``: the index of
    the step where the cycle starts; the behaviour goes on from the last state back to that step's
    state by the transition labelled ``loop_action``, forever, or stutters in the last state forever
    when ``loop_action`` is None (then ``loop_start`` is the last index)."""

    steps: tuple[TraceStep, ...]
    path: tuple[int, ...]
    loop_start: int | None = None
    loop_action: str | None = None

    def __len__(self) -> int:
        return len(self.steps)

    @property
    def last(self) -> Any:
        return self.steps[-1].state


class ReplayError(Exception):
    """A stored path no longer leads anywhere in the spec (it changed, or the path is foreign)."""


def replay(spec: Spec, path: Sequence[int]) -> Trace:
    """Re-execute ``path`` against ``spec`` and return the states it visits."""
    if not path:
        raise ReplayError("an empty path has no initial state")
    inits = spec.initial()
    if not 0 <= path[0] < len(inits):
        raise ReplayError(f"initial state index {path[0]} out of range (the spec has {len(inits)})")
    state = inits[path[0]]
    steps = [TraceStep(None, state)]
    for depth, index in enumerate(path[1:], start=2):
        chosen = None
        i = 0
        for act in spec.actions():
            try:
                for label, nxt in act.fn(spec.p, state):
                    if i == index:
                        chosen = (format_label(act.name, label), nxt)
                        break
                    i += 1
            except Exception as exc:
                raise action_failure(act.name, act.fn, spec.p, state, exc) from exc
            if chosen is not None:
                break
        if chosen is None:
            raise ReplayError(f"step {depth}: successor index {index} out of range ({i} successors)")
        steps.append(TraceStep(chosen[0], chosen[1]))
        state = chosen[1]
    return Trace(tuple(steps), tuple(path))
