"""Symbolic frozensets over a small concrete universe: one Z3 bool per possible member.

A spec's sets of broker, replica or partition ids (an ISR, the partitions of a transaction, an
assignment) are frozensets of a few known ints. Enumerating each as a concrete shape multiplies the
shapes of a state (4 ISRs of 2 replicas, 4^k for k such sets), so ``SymSet`` keeps the universe
concrete and membership symbolic. Operations between sets build terms without forking; Python needs
a concrete answer, and gets it exactly, in the same places as for ints:

- ``x in s``, ``bool(s)``, ``==``, ``<=`` return ``SymBool``; an ``if`` on them forks;
- iteration forks on each element of the universe, ascending, and yields the members (Python's
  order of a set is unspecified, so spec code must not depend on it);
- ``len(s)`` enumerates its feasible values (``__index__`` of the count).

``hash`` (a set of sets, a dict key) is refused like every other symbolic value's.
"""

from __future__ import annotations

from typing import Any, Iterable, Iterator

import z3

from kafkamc.checker.symbolic.context import current, unsupported
from kafkamc.checker.symbolic.values import SymBool, _Opaque, as_arith, fast_and, fast_not, fast_or

__all__ = ["SymSet", "as_members"]

_TRUE = z3.BoolVal(True)
_FALSE = z3.BoolVal(False)


def as_members(v: Any) -> dict[Any, z3.BoolRef] | None:
    """Element -> membership term of a SymSet or a concrete set of concrete elements, else None."""
    if isinstance(v, SymSet):
        return dict(zip(v.elems, v.bits))
    if isinstance(v, (frozenset, set)):
        for x in v:
            if isinstance(x, _Opaque):
                raise unsupported("a set holding a symbolic value")
        return {x: _TRUE for x in v}
    return None


def _of(members: dict[Any, z3.BoolRef]) -> SymSet:
    elems = tuple(sorted(members))
    return SymSet(elems, tuple(members[e] for e in elems))


class SymSet(_Opaque):
    """A frozenset whose members are among ``elems`` (sorted, concrete): ``elems[i]`` is a member
    exactly when ``bits[i]`` holds."""

    __slots__ = ("elems", "bits")

    def __init__(self, elems: tuple[Any, ...], bits: tuple[z3.BoolRef, ...]) -> None:
        self.elems = elems
        self.bits = bits

    # -- where Python needs a concrete answer -------------------------------------------------
    def __contains__(self, x: Any) -> Any:
        if isinstance(x, _Opaque):
            t = as_arith(x)
            if t is None:
                raise unsupported("a symbolic set asked whether it holds a set")
            return SymBool(fast_or([z3.And(t == e, b) for e, b in zip(self.elems, self.bits)
                                    if isinstance(e, int)]))
        for e, b in zip(self.elems, self.bits):
            if e == x:
                return SymBool(b)
        return False

    def __iter__(self) -> Iterator[Any]:
        explorer = current()
        for e, b in zip(self.elems, self.bits):
            if explorer.decide(b):
                yield e

    def __len__(self) -> int:
        return current().choose_value(z3.Sum([z3.If(b, 1, 0) for b in self.bits]) if self.bits else z3.IntVal(0))

    def __bool__(self) -> bool:
        return current().decide(fast_or(list(self.bits)))

    # -- set algebra (terms, no fork) -----------------------------------------------------------
    def _combine(self, other: Any, op: Any, reflected: bool = False) -> Any:
        mine, theirs = as_members(self), as_members(other)
        if theirs is None:
            return NotImplemented
        if reflected:
            mine, theirs = theirs, mine
        keys = set(mine) | set(theirs)
        return _of({k: op(mine.get(k, _FALSE), theirs.get(k, _FALSE)) for k in keys})

    def __or__(self, o: Any) -> Any: return self._combine(o, lambda a, b: fast_or([a, b]))
    def __ror__(self, o: Any) -> Any: return self._combine(o, lambda a, b: fast_or([a, b]), True)
    def __and__(self, o: Any) -> Any: return self._combine(o, lambda a, b: fast_and([a, b]))
    def __rand__(self, o: Any) -> Any: return self._combine(o, lambda a, b: fast_and([a, b]), True)
    def __sub__(self, o: Any) -> Any: return self._combine(o, lambda a, b: fast_and([a, fast_not(b)]))
    def __rsub__(self, o: Any) -> Any: return self._combine(o, lambda a, b: fast_and([a, fast_not(b)]), True)
    def __xor__(self, o: Any) -> Any: return self._combine(o, lambda a, b: z3.Xor(a, b))
    def __rxor__(self, o: Any) -> Any: return self._combine(o, lambda a, b: z3.Xor(a, b), True)

    def union(self, *others: Iterable[Any]) -> Any:
        out = self
        for o in others:
            out = out | _coerce(o)
        return out

    def intersection(self, *others: Iterable[Any]) -> Any:
        out = self
        for o in others:
            out = out & _coerce(o)
        return out

    def difference(self, *others: Iterable[Any]) -> Any:
        out = self
        for o in others:
            out = out - _coerce(o)
        return out

    # -- comparisons (terms, no fork) -----------------------------------------------------------
    def _subset(self, a: dict[Any, z3.BoolRef], b: dict[Any, z3.BoolRef]) -> z3.BoolRef:
        return fast_and([z3.Implies(t, b.get(k, _FALSE)) for k, t in a.items()])

    def _relation(self, other: Any, which: str) -> Any:
        mine, theirs = as_members(self), as_members(other)
        if theirs is None:
            return NotImplemented
        le = self._subset(mine, theirs)
        ge = self._subset(theirs, mine)
        if which == "eq":
            return SymBool(fast_and([le, ge]))
        if which == "ne":
            return SymBool(fast_not(fast_and([le, ge])))
        if which == "le":
            return SymBool(le)
        if which == "ge":
            return SymBool(ge)
        if which == "lt":
            return SymBool(fast_and([le, fast_not(ge)]))
        return SymBool(fast_and([ge, fast_not(le)]))

    def __eq__(self, o: Any) -> Any: return self._relation(o, "eq")  # type: ignore[override]
    def __ne__(self, o: Any) -> Any: return self._relation(o, "ne")  # type: ignore[override]
    def __le__(self, o: Any) -> Any: return self._relation(o, "le")
    def __ge__(self, o: Any) -> Any: return self._relation(o, "ge")
    def __lt__(self, o: Any) -> Any: return self._relation(o, "lt")
    def __gt__(self, o: Any) -> Any: return self._relation(o, "gt")

    def issubset(self, o: Iterable[Any]) -> Any: return self <= _coerce(o)
    def issuperset(self, o: Iterable[Any]) -> Any: return self >= _coerce(o)

    def isdisjoint(self, o: Iterable[Any]) -> Any:
        both = as_members(self & _coerce(o))
        return SymBool(fast_not(fast_or(list(both.values()))))

    # A SymSet also stands for a ``set`` a comprehension built (``setbuild.py``); changing it in
    # place is not modelled, and must not pass for the AttributeError Python would not raise.
    def _mutated(self, *args: Any) -> Any:
        raise unsupported("changing in place a set built from symbolic values")

    add = discard = remove = pop = clear = update = _mutated
    intersection_update = difference_update = symmetric_difference_update = _mutated

    __hash__ = _Opaque.__hash__


def _coerce(o: Any) -> Any:
    return o if isinstance(o, (SymSet, frozenset, set)) else frozenset(o)

