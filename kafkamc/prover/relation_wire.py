"""One shape's relation (``relation.ShapeRelation``) as plain data, so that a worker process can
make it and the parent can use it: Z3 terms do not cross a process boundary, their SMT-LIB text
does.

Every formula and term of the relation is one assertion of a single SMT-LIB benchmark (item ``i``
as ``(= kmc!i item)``), in a fixed order, so the parent reads them back in the same order and
the shared subterms stay shared (``let``). The text names the layout's variables (``x.brokers[0].epoch``,
``x#.in_flight: length``), and Z3 makes a constant of the same name and sort the same term, so the
terms read back are over the parent's own variables. A term read back may be built differently
(``(- 1)`` is read as a negation, not the numeral -1) but means the same: the unrolling only asks
what the formulas mean, and the tests prove each read-back move equivalent to the one made in
process. The merging of paths into moves and the frame (a variable a move leaves as it was) read
term identity, so both are done before encoding, where the terms were made.
"""

from __future__ import annotations

from dataclasses import dataclass

import z3

from kafkamc.errors import SoundnessError, SymbolicUnsupported
from kafkamc.prover.layout import Shape
from kafkamc.prover.relation import Move, ShapeRelation

__all__ = ["WireRelation", "encode", "decode"]

# Each item is asserted as ``(= kmc!<i> item)`` with its own constant: an assertion ``true``, or
# two equal ones, would not survive the printer as items of their own. No layout key starts so.
_SLOT = "kmc!"


@dataclass(frozen=True, slots=True)
class WireRelation:
    """A ``ShapeRelation`` whose formulas and terms are one SMT-LIB text, in ``encode``'s order."""

    shape: Shape
    props: int  # how many invariant formulas
    moves: tuple[tuple[str, tuple[str, ...]], ...]  # (action, the keys it assigns)
    text: str
    paths: int
    cpu: float
    targets: tuple[int, ...]


def encode(rel: ShapeRelation) -> WireRelation:
    """``rel`` as text: facts, each invariant, expand, raised_check, raised_action, escapes, then
    per move its path condition and its assigned terms."""
    items: list[z3.ExprRef] = [rel.facts, *rel.props, rel.expand, rel.raised_check, rel.raised_action, rel.escapes]
    for m in rel.moves:
        items.append(m.pc)
        items.extend(term for _key, term in m.assigns)
    solver = z3.Solver()
    for i, item in enumerate(items):
        solver.add(z3.Const(f"{_SLOT}{i}", item.sort()) == item)
    moves = tuple((m.action, tuple(key for key, _term in m.assigns)) for m in rel.moves)
    return WireRelation(rel.shape, len(rel.props), moves, solver.to_smt2(), rel.paths, rel.cpu, rel.targets)


def decode(wire: WireRelation) -> ShapeRelation:
    """The relation ``wire`` holds, over this process's variables of the same names."""
    try:
        read = list(z3.parse_smt2_string(wire.text))
    except z3.Z3Exception as exc:  # a variable named from a value SMT-LIB cannot quote (a bar or a backslash)
        raise SymbolicUnsupported(
            f"bmc --workers: shape {wire.shape.index + 1}'s relation cannot be sent back from its worker as "
            f"SMT-LIB text ({str(exc)[:120]}); run it with --workers 1") from None
    expected = 5 + wire.props + sum(1 + len(keys) for _a, keys in wire.moves)
    if len(read) != expected:
        raise SoundnessError(f"bmc: shape {wire.shape.index + 1}'s relation came back from its worker with "
                             f"{len(read)} formulas, not {expected}")
    at = iter(_item(i, x, wire) for i, x in enumerate(read))
    facts = next(at)
    props = tuple(next(at) for _ in range(wire.props))
    expand, raised_check, raised_action, escapes = next(at), next(at), next(at), next(at)
    moves = []
    for action, keys in wire.moves:
        pc = next(at)
        moves.append(Move(wire.shape.index, action, pc, tuple((key, next(at)) for key in keys)))
    return ShapeRelation(wire.shape, facts, props, expand, raised_check, raised_action, escapes, tuple(moves),
                         wire.paths, wire.cpu, wire.targets)


def _item(i: int, read: z3.BoolRef, wire: WireRelation) -> z3.ExprRef:
    """The item of ``(= kmc!i item)`` (Z3 may print it the other way round); anything else is a
    relation that did not come back whole."""
    if z3.is_eq(read):
        for mark, item in ((read.arg(0), read.arg(1)), (read.arg(1), read.arg(0))):
            if z3.is_const(mark) and mark.decl().name() == f"{_SLOT}{i}":
                return item
    raise SoundnessError(f"bmc: shape {wire.shape.index + 1}'s relation came back from its worker changed "
                         f"at item {i}: {read.sexpr()[:200]}")
