"""The transition relation of ``bmc`` made on worker processes, one shape per task.

Shapes are independent: each runs every action on its own template with its own solver
(``relation.relate_shape``), so a shape made in a forked worker is the shape made in process. The worker
sends it back as SMT-LIB text (``relation_wire.py``) and the parent reads the relations back in
shape order, whatever order the workers finish in: the moves, their order and so the unrolling are
those of the serial run for any number of workers (``tests/test_bmc_relation_pool.py`` proves each
move equivalent with Z3).

The path budget is the serial one: each shape runs under the whole limit and the parent adds the
shapes' paths up in shape order, so the limit is reached at the same shape as in process (the
answer is then incomplete either way). Statistics (paths, solver checks) are the sums of the
workers'.
"""

from __future__ import annotations

import multiprocessing
from typing import Any, Callable, Sequence

from kafkamc.checker.symbolic import Budget, PathLimit, SolverUnknown
from kafkamc.errors import KafkamcError, SymbolicUnsupported
from kafkamc.invariants.api import Property
from kafkamc.prover.history import LeftOut
from kafkamc.prover.layout import Layout, Shape
from kafkamc.prover.prove import _worker_signals
from kafkamc.prover.relation import ShapeRelation, relate, relate_shape
from kafkamc.prover.relation_wire import decode, encode
from kafkamc.spec.api import Spec

__all__ = ["relate_on_workers"]

# Set in the parent just before forking; workers read it (fork shares it without pickling).
_WORK: tuple[Spec, tuple[Property, ...], Layout, Budget, bool, LeftOut | None] | None = None

# The exceptions a shape may end with that the parent raises again as they were (by type and
# message): the same verdict as in process (exit 3, or an incomplete run).
_PASSED_ON = (KafkamcError, SolverUnknown, PathLimit)


def relate_on_workers(spec: Spec, props: Sequence[Property], layout: Layout, budget: Budget,
                      progress: Callable[[ShapeRelation, int], None] | None = None, *, workers: int = 1,
                      branch_free: bool = True, only: Sequence[Shape] | None = None,
                      left: LeftOut | None = None) -> list[ShapeRelation]:
    """``relation.relate`` with the shapes made on ``workers`` forked processes (1: in process);
    ``only``: those shapes (default every one), in the order given."""
    shapes = list(layout.shapes if only is None else only)
    workers = min(workers, len(shapes))
    if workers <= 1 or "fork" not in multiprocessing.get_all_start_methods():
        return relate(spec, props, layout, budget, progress, branch_free=branch_free, only=shapes, left=left)
    global _WORK
    _WORK = (spec, tuple(props), layout, budget, branch_free, left)
    out: list[ShapeRelation] = []
    try:
        with multiprocessing.get_context("fork").Pool(workers, initializer=_worker_signals) as pool:
            for outcome in pool.imap(_made, shapes, chunksize=1):
                out.append(_received(outcome, budget))
                if progress is not None:
                    progress(out[-1], len(layout.shapes))
    finally:
        _WORK = None
    return out


def _made(shape: Shape) -> tuple[Any, ...]:
    """In a worker: ``shape``'s relation as text, with the budget's counts it spent."""
    spec, props, layout, parent, branch_free, left = _WORK  # type: ignore[misc]
    budget = Budget(deadline=parent.deadline, max_paths=parent.max_paths, max_values=parent.max_values)
    try:
        rel = relate_shape(spec, props, layout, shape, budget, branch_free, left)
    except _PASSED_ON as exc:
        return ("raised", type(exc), str(exc))
    return ("made", encode(rel), budget.checks, budget.solver_seconds)


def _received(outcome: tuple[Any, ...], budget: Budget) -> ShapeRelation:
    if outcome[0] == "raised":
        _kind, cls, message = outcome
        try:
            err = cls(message)
        except TypeError:  # an error whose constructor takes more than its message (SpecRaised)
            err = SymbolicUnsupported(message)
        raise err
    _kind, wire, checks, seconds = outcome
    budget.paths += wire.paths
    budget.checks += checks
    budget.solver_seconds += seconds
    if budget.paths > budget.max_paths:
        raise PathLimit(f"more than {budget.max_paths} paths")
    return decode(wire)

