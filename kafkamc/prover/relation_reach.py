"""Only the shapes a run of at most K steps can reach: the relation built level by level through
the shape graph, so a shape no path of K steps enters is never built.

The shape graph has an edge from shape A to shape B when some path of an action on A yields a
successor of shape B (``ShapeRelation.targets``; path conditions are not asked, so the graph has
every edge the relation has and maybe more). Level 0 is the shapes of the initial states; level
i+1 the targets of level i not seen before. A state reachable in k <= K steps lies in a shape of
level at most k, because each of its steps is a move of a built shape into one of that shape's
targets: every state of the unrolling up to K is in a built shape, and the unrolling asks nothing
of any other (a state in no built shape has no move, and is reached by none). So the answer up to
K is the unpruned one; beyond K the pruned relation says nothing, and ``bmc`` never unrolls it
further.
"""

from __future__ import annotations

from typing import Callable, Sequence

from kafkamc.checker.symbolic import Budget
from kafkamc.invariants.api import Property
from kafkamc.prover.history import LeftOut
from kafkamc.prover.layout import Layout, Shape
from kafkamc.prover.relation import ShapeRelation
from kafkamc.prover.relation_pool import relate_on_workers
from kafkamc.spec.api import Spec

__all__ = ["relate_within"]


def relate_within(spec: Spec, props: Sequence[Property], layout: Layout, budget: Budget, depth: int,
                  progress: Callable[[ShapeRelation, int], None] | None = None, *, workers: int = 1,
                  branch_free: bool = True, left: LeftOut | None = None) -> list[ShapeRelation]:
    """The relation of every shape within ``depth`` steps of an initial state in the shape graph,
    in shape order (a subsequence of ``relation.relate``'s, each shape's relation the same)."""
    by_index = {shape.index: shape for shape in layout.shapes}
    level = sorted({s.index for s in _initial_shapes(spec, layout)})
    built: dict[int, ShapeRelation] = {}
    for k in range(depth + 1):
        if not level:
            break
        made = relate_on_workers(spec, props, layout, budget, progress, workers=workers, branch_free=branch_free,
                                 only=[by_index[i] for i in level], left=left)
        built.update((rel.shape.index, rel) for rel in made)
        if k == depth:
            break
        level = sorted({t for rel in made for t in rel.targets} - built.keys())
    return [built[i] for i in sorted(built)]


def _initial_shapes(spec: Spec, layout: Layout) -> list[Shape]:
    """The shapes of the spec's initial states (one outside the domain has none: ``bmc`` reports it)."""
    out = []
    for state in spec.initial():
        shape = layout.shape_with(layout.match(state).choices)
        if shape is not None:
            out.append(shape)
    return out
