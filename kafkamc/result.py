"""What every engine returns: the verdict, the statistics and the counterexample."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from kafkamc.counterexamples.trace import Trace

__all__ = [
    "CheckResult", "LevelStats", "ActionCoverage", "OK", "VIOLATION", "INCOMPLETE", "DEADLOCK",
    "FINGERPRINT_BITS", "collision_probability", "coverage_of",
]

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


# The width the collision estimate assumes. A fingerprint is a 64-bit word (CPython's hash of the
# state, see checker/fingerprint.py), but not a random function of 64 bits: every int leaf is first
# reduced modulo the Mersenne prime 2**61 - 1, and a fingerprinted value that is itself an int (a
# view returning one, a canonicalised string) lands below 2**61. Counting 61 bits never flatters.
FINGERPRINT_BITS = 61


def collision_probability(distinct: int, generated: int) -> float:
    """TLC's optimistic estimate that two distinct states shared a fingerprint: n * (g - n) / 2**b.

    Each of the g - n lookups that found its fingerprint already present could have been a new
    state colliding with one of at most n stored fingerprints, each with probability 2**-b.
    """
    return distinct * max(generated - distinct, 0) / 2.0 ** FINGERPRINT_BITS


@dataclass(frozen=True, slots=True)
class ActionCoverage:
    """TLC's -coverage for one action: on how many states it yielded at least one successor
    (enabled), how many successors it yielded (generated, duplicates included), and how many
    distinct states it was the first to reach (distinct)."""

    action: str
    enabled: int
    generated: int
    distinct: int


def coverage_of(names: Sequence[str], enabled: Sequence[int], generated: Sequence[int],
                distinct: Sequence[int]) -> tuple[ActionCoverage, ...]:
    """The engines' per-action counters (parallel lists in declaration order) as a result field."""
    return tuple(ActionCoverage(*row) for row in zip(names, enabled, generated, distinct))


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
    # (SIGTERM or SIGHUP), "max-memory"; bmc also "max-time" (its --timeout), "max-paths" and "solver-unknown";
    # None otherwise.
    reason: str | None = None
    symmetry: bool = False
    extra: dict[str, Any] = field(default_factory=dict)
    # Per action in declaration order; None from a checker that does not count them.
    coverage: tuple[ActionCoverage, ...] | None = None

    @property
    def states_per_second(self) -> float:
        return self.states_generated / self.seconds if self.seconds > 0 else 0.0

    @property
    def fingerprint_collision_probability(self) -> float:
        return collision_probability(self.distinct_states, self.states_generated)
