"""What ``prove`` returns: per query a verdict with its statistics, and overall a typed result."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kafkamc.counterexamples.trace import Trace

__all__ = ["PROVED", "CTI_FOUND", "UNKNOWN", "TYPE_OK", "INIT", "QueryResult", "Cti", "ProofResult"]

PROVED = "proved"
CTI_FOUND = "cti"
UNKNOWN = "unknown"
# The implicit target of every action: successors of domain states stay in the domain.
TYPE_OK = "type-ok"
# The pseudo-action of the initial-state queries.
INIT = "init"


@dataclass(frozen=True, slots=True)
class QueryResult:
    """One (action, invariant) query: ``action`` is INIT for "every initial state satisfies it"."""

    action: str
    invariant: str
    verdict: str
    paths: int  # the action's paths (shared by its queries) plus this invariant's own
    solver_seconds: float  # this invariant's own solver time
    shared_solver_seconds: float  # solver time of exploring the action, shared by its queries
    seconds: float  # wall time of the action's exploration with all its queries
    checks: int  # this invariant's own solver calls
    reason: str | None = None  # why unknown


@dataclass(frozen=True, slots=True)
class Cti:
    """A counterexample to induction, replayed concretely: ``pre`` satisfies every assumed
    invariant, ``action`` takes it to ``post`` (label ``label``), and ``post`` breaks ``violated``.
    For a failed initial-state query ``pre`` is None and ``post`` is the initial state.

    ``reachable`` says whether a breadth-first search within ``search_params`` reached ``pre``
    (``trace`` then leads to it and on to ``post``); ``search_note`` says where those values came from.
    """

    action: str
    label: str
    pre: Any
    post: Any
    violated: str
    lifted_values: dict[str, int]
    reachable: bool | None = None
    trace: Trace | None = None
    search_params: dict[str, Any] = field(default_factory=dict)
    search_note: str = ""
    search_states: int = 0


@dataclass(frozen=True, slots=True)
class ProofResult:
    spec: str
    params: dict[str, Any]  # the concrete values; lifted ones are listed in ``lifted``
    result: str  # PROVED | CTI_FOUND | UNKNOWN
    invariants: tuple[str, ...]
    lifted: tuple[str, ...]
    lifted_from: dict[str, int]  # lifted name -> the least value the proof covers
    seconds: float
    cpu_seconds: float
    queries: tuple[QueryResult, ...]
    cti: Cti | None = None

    @property
    def open_queries(self) -> tuple[QueryResult, ...]:
        return tuple(q for q in self.queries if q.verdict == UNKNOWN)
