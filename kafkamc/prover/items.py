"""The list an action makes and fills in branches (``out = []``, ``out.append(...)`` under an
``if``, ``return out``), kept without forking: an item appended under a guard is stored with it.

The branch-free actions (``predicated.py``) run both sides of a symbolic condition under a guard.
An ``out.append(x)`` there used to make the branch unfit to run that way (a list filled in a
branch is a mutation the other side would see), so the path forked on the condition, and a loop
over requests or replicas that appends multiplied its paths by two per iteration (replication's
``become_leader``: three requests, eight paths before any other decision). Here the append is
kept as a *guarded item*: the item and the condition under which Python would have appended it,
as a region's yields are (``Guarded``). The list is the same list on both sides, so nothing
needs joining.

Exact by construction: a consumer that knows guards (the relation, through
``merge.successors``; a ``for`` of a recompiled function, through ``merge.members``) takes each
item with its condition; every other use (``len``, ``bool``, an index, ``==``, iteration by code
that is not recompiled) first *settles* the list: the path forks on each item's condition, which
is the fork the ``if`` would have made, only later, and gives Python's list.
"""

from __future__ import annotations

from typing import Any, Iterator

import z3

from kafkamc.checker.symbolic.context import current, unsupported
from kafkamc.checker.symbolic.values import fast_and, fast_not
from kafkamc.errors import SymbolicUnsupported

__all__ = ["Guarded", "Items", "Yielded", "items", "passed", "running"]


def running() -> Any:
    """The explorer running the code, or None in a concrete run."""
    try:
        return current()
    except SymbolicUnsupported:
        return None


def _guard() -> z3.BoolRef | None:
    """The guards the running code is under, or None outside any (a concrete run included)."""
    ex = running()
    return fast_and(list(ex.guards)) if ex is not None and ex.guards else None


class Guarded(tuple):
    """An item a guarded region yielded (a ``(label, state)`` pair, unpacked as one) and the
    condition under which it was yielded; the relation adds it to the path's. Known by its
    class: a spec's own tuple may have a ``cond`` field."""

    cond: z3.BoolRef

    def __new__(cls, cond: z3.BoolRef, item: Any) -> "Guarded":
        made = super().__new__(cls, item)
        made.cond = cond
        return made


class Items(list):
    """A list whose items may carry the condition under which they were appended (None: on the
    whole path), or, when ``choice`` is set, the join ``a if c else b`` of two lists of items."""

    __slots__ = ("conds", "choice")

    def __init__(self) -> None:
        super().__init__()
        self.conds: list[z3.BoolRef | None] = []
        self.choice: tuple[z3.BoolRef, Any, Any] | None = None

    @staticmethod
    def joined(c: z3.BoolRef, a: Any, b: Any) -> "Items":
        """The list that is ``a`` where ``c`` holds and ``b`` elsewhere (each an Items, a list or a
        tuple of items): settled, it is ``a`` or ``b`` itself, as Python's value is."""
        made = Items()
        made.choice = (c, a, b)
        return made

    # -- what a guard-aware consumer reads ------------------------------------------------------
    def guarded(self) -> Iterator[tuple[z3.BoolRef | None, Any]]:
        """(condition or None, item) for every item that may be in the list."""
        if self.choice is not None:
            c, a, b = self.choice
            for side, value in ((c, a), (fast_not(c), b)):
                for cond, item in _guarded_of(value):
                    yield (side if cond is None else fast_and([side, cond])), item
            return
        yield from zip(self.conds, list.__iter__(self))

    def append(self, item: Any) -> None:
        if self.choice is not None:
            raise unsupported("appending to a list joined from two branches")
        list.append(self, item)
        self.conds.append(_guard())

    def replace(self, made: list[tuple[z3.BoolRef, Any]]) -> None:
        """Its items become ``made``, (condition, item) each (``merge.each``)."""
        self.choice = None
        list.clear(self)
        list.extend(self, [item for _c, item in made])
        self.conds = [c for c, _item in made]

    def extend_guarded(self, pairs: Any) -> None:
        """Append each (condition or None, item) with its condition (``merge.apart``)."""
        if self.choice is not None:
            raise unsupported("appending to a list joined from two branches")
        guard = _guard()
        for cond, item in pairs:
            list.append(self, item)
            self.conds.append(cond if guard is None else guard if cond is None else fast_and([guard, cond]))

    def extend(self, more: Any) -> None:
        for item in more:
            self.append(item)

    # -- every other use: Python's list, after forking on the conditions -----------------------------
    def settled(self) -> Any:
        """Python's value: the list (or, for a join, the side's own object) of the items whose
        condition holds on the path, forking on each condition not yet decided."""
        if self.choice is not None:
            c, a, b = self.choice
            side = a if current().decide(c) else b
            return side.settled() if isinstance(side, Items) else side
        if not any(c is not None for c in self.conds) and not any(
                isinstance(item, Guarded) for item in list.__iter__(self)):
            return list(list.__iter__(self))
        ex = current()
        out = []
        for cond, item in zip(self.conds, list.__iter__(self)):
            # An item a region yielded carries its own condition.
            inner = item.cond if isinstance(item, Guarded) else None
            if (cond is None or ex.decide(cond)) and (inner is None or ex.decide(inner)):
                out.append(tuple(item) if inner is not None else item)
        return out

    def __iter__(self) -> Iterator[Any]:
        return iter(self.settled())

    def __len__(self) -> int:
        return len(self.settled())

    def __bool__(self) -> bool:
        return bool(self.settled())

    def __getitem__(self, key: Any) -> Any:
        return self.settled()[key]

    def __contains__(self, x: Any) -> bool:
        return x in self.settled()

    def __reversed__(self) -> Iterator[Any]:
        return reversed(self.settled())

    def __eq__(self, other: Any) -> Any:
        return self.settled() == (other.settled() if isinstance(other, Items) else other)

    def __ne__(self, other: Any) -> Any:
        return self.settled() != (other.settled() if isinstance(other, Items) else other)

    __hash__ = None  # type: ignore[assignment]

    def __add__(self, other: Any) -> Any:
        return self.settled() + (other.settled() if isinstance(other, Items) else other)

    def __radd__(self, other: Any) -> Any:
        return other + self.settled()

    def __mul__(self, n: Any) -> Any:
        return self.settled() * n

    __rmul__ = __mul__

    def __lt__(self, other: Any) -> Any:
        return self.settled() < other

    def __le__(self, other: Any) -> Any:
        return self.settled() <= other

    def __gt__(self, other: Any) -> Any:
        return self.settled() > other

    def __ge__(self, other: Any) -> Any:
        return self.settled() >= other

    def index(self, *args: Any) -> int:
        return self.settled().index(*args)

    def count(self, x: Any) -> int:
        return self.settled().count(x)

    def copy(self) -> Any:
        return list(self.settled())

    def __repr__(self) -> str:
        return repr(self.settled())

    def __reduce_ex__(self, protocol: Any) -> Any:
        return (list, (list(self.settled()),))

    def _refused(self, *args: Any, **kwargs: Any) -> Any:
        raise unsupported("changing a list of guarded items other than by append")

    insert = pop = remove = clear = sort = reverse = __setitem__ = __delitem__ = __iadd__ = __imul__ = _refused


class Yielded:
    """What a recompiled generator function returns. A region's items are ``Guarded`` (yielded
    under a condition, ``merge.region``); a guard-aware consumer (the relation's
    ``merge.successors``, ``merge.members``, a recompiled ``yield from``) reads them with
    ``raw()``. Any other iteration (a wrapper's ``for label, n in fn(p, s)``, ``list(...)``)
    settles each on the path, forking on its condition, so that it gets Python's items: unpacking
    a ``Guarded`` item as a pair would drop its condition and yield it on every state."""

    __slots__ = ("_gen", "_inside")

    def __init__(self, gen: Any) -> None:
        self._gen = gen
        # The guards the generator was under when it last yielded (a side run both ways): they
        # are the stack's only while it runs, so a consumer that stops early (``next(...)``,
        # ``any(...)``) does not leave them on the rest of the path.
        self._inside: list[Any] = []

    def raw(self) -> Any:
        return self._gen

    def __iter__(self) -> "Yielded":
        return self

    def __next__(self) -> Any:
        ex = running()
        if ex is None:
            return next(self._gen)
        while True:
            depth = len(ex.guards)
            ex.guards.extend(self._inside)  # back under the side it yielded from
            try:
                item = next(self._gen)
            finally:
                self._inside = ex.guards[depth:]
                del ex.guards[depth:]
            # An item yielded under a guard or by a region: settled here, on the path.
            conds = list(self._inside) + ([item.cond] if isinstance(item, Guarded) else [])
            if not conds or ex.decide(fast_and(conds)):
                return tuple(item) if isinstance(item, Guarded) else item

    def close(self) -> None:
        self._gen.close()


def passed(value: Any) -> Any:
    """What a recompiled ``yield from`` iterates: a recompiled generator's items as yielded,
    guards included (its own consumer knows them), anything else as it is."""
    return value.raw() if isinstance(value, Yielded) else value


def _guarded_of(value: Any) -> Iterator[tuple[z3.BoolRef | None, Any]]:
    if isinstance(value, Items):
        yield from value.guarded()
    else:
        for item in value:
            yield None, item


def items() -> Items:
    """What ``[]`` is in a recompiled action whose list is only appended to, iterated and returned."""
    return Items()
