"""What every engine returns: the verdict, the statistics and the counterexample."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kafkamc.counterexamples.trace import Trace

__all__ = ["CheckResult", "LevelStats", "OK", "VIOLATION", "INCOMPLETE", "DEADLOCK"]

OK = "ok"
VIOLATION = "violation"
INCOMPLETE = "incomplete"
# The name reported in `violated` when --deadlock finds a state with no successors.
DEADLOCK = "deadlock"


@dataclass(frozen=True, slots=True)
class LevelStats:
    """Progress after one breadth-first level (levels count from 1, the initial states)."""

    level: int
    distinct_states: int
    states_generated: int
    frontier: int
    seconds: float
    # Filled in where known (kafkamc.checker.watch): bytes in use by all the engine's processes,
    # states generated per second since the previous line, and for a line printed within a long
    # level (then ``level`` is the level being built and ``frontier`` the level being expanded):
    # the frontier states expanded so far, or the new states found so far. ``growth``: the new
    # level's size over the previous level's (within a level: the new states so far over it).
    memory: int | None = None
    rate: float | None = None
    within_level: bool = False
    expanded: int | None = None
    new: int | None = None
    growth: float | None = None


@dataclass(frozen=True, slots=True)
class CheckResult:
    spec: str
    params: dict[str, Any]
    engine: str
    result: str
    invariants: tuple[str, ...]
    violated: str | None
    distinct_states: int
    states_generated: int
    depth: int
    seconds: float
    trace: Trace | None = None
    # Why a run is incomplete: "max-depth", "max-states", "interrupted" (Ctrl-C), "terminated"
    # (SIGTERM or SIGHUP), "max-memory"; None otherwise.
    reason: str | None = None
    symmetry: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def states_per_second(self) -> float:
        return self.states_generated / self.seconds if self.seconds > 0 else 0.0
