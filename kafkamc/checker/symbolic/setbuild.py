"""Sets that spec code builds, ``{e.epoch for e in log if e.pid == pid}`` and ``{c.log_epoch}``,
kept symbolic instead of hashing their symbolic elements.

Python builds a set by hashing each element, which a symbolic int refuses (``values.py``); the
relation of ``bmc`` then ran the whole function once per value of each hashed term, so a formula
over three log entries ran 5^3 times (``no_hanging_transaction``, KIP-890). Here a set whose
elements are symbolic ints, or are included under a symbolic condition, becomes a ``SymSet`` over
the values its elements can take on the path: value ``v`` is a member exactly when some element
equals ``v`` and its condition holds. The values are all those the solver allows on the path, so
on every state of the path the members are exactly the set Python would build.

What is not a symbolic int (a tuple holding one, a symbolic bool or set) is built as Python does,
the conditions decided (the path forks) and the elements hashed: a refusal stays a refusal.
``prover/formula_sets.py`` rewrites a spec function's set comprehensions, set displays and
``max``/``min`` calls into the functions here; on concrete values each gives Python's own value.
"""

from __future__ import annotations

import builtins
from enum import IntEnum
from typing import Any, Callable, Iterable

import z3

from kafkamc.checker.symbolic.context import current
from kafkamc.checker.symbolic.sets import SymSet
from kafkamc.checker.symbolic.values import SymBool, SymInt, _Opaque, bool_value, fast_and, fast_or, fast_simplify
from kafkamc.checker.watch import raise_pending_stop
from kafkamc.errors import KafkamcError

__all__ = ["collect", "display", "max_", "min_", "MAX_VALUES"]

# Most values one symbolic element may take; beyond, the set is built as Python builds it.
MAX_VALUES = 64

_TRUE = z3.BoolVal(True)


def _condition(value: Any) -> Any:
    """Python's truth of a comprehension's condition: a bool, or a Z3 term when symbolic."""
    if isinstance(value, bool):
        return value
    if isinstance(value, SymBool):
        term = fast_simplify(value.z)
    elif isinstance(value, SymInt):
        term = fast_simplify(value.z != 0)
    elif isinstance(value, SymSet):
        term = fast_simplify(fast_or(list(value.bits)))
    else:
        return bool(value)
    constant = bool_value(term)
    return term if constant is None else constant


def collect(items: Iterable[tuple[Any, Callable[[], Any]]]) -> Any:
    """``{e for ... if c}`` from the pairs ``(c, lambda: e)`` in Python's order: ``e`` is made
    right after its ``c`` (before the next pair), as Python would. Under a symbolic ``c`` it is
    made for the whole path; where it raises, the path forks on ``c`` and raises where ``c``
    holds, as Python would, and leaves the item out where it does not."""
    entries: list[tuple[Any, Any]] = []
    for cond, make in items:
        c = _condition(cond)
        if c is False:
            continue
        if c is True:
            entries.append((True, make()))
            continue
        try:
            value = make()
        except KafkamcError:
            raise
        except Exception as exc:
            raise_pending_stop(exc)
            if current().decide(c):
                raise
            continue
        entries.append((c, value))
    return _built(entries)


def display(*elems: Any) -> Any:
    """``{a, b}``: its elements already made, left to right, as Python makes them."""
    return _built([(True, e) for e in elems])


def _built(entries: list[tuple[Any, Any]]) -> Any:
    if all(c is True and not isinstance(v, _Opaque) for c, v in entries):
        return {v for _c, v in entries}  # concrete: Python's own set (a hash refusal stays one)
    members = _members(entries)
    if members is None:
        out = set()
        for c, v in entries:
            if c is True or current().decide(c):
                out.add(v)
        return out
    return members


def _members(entries: list[tuple[Any, Any]]) -> SymSet | None:
    """The SymSet of ``entries``, or None when an element is symbolic but not an int whose
    values on the path are few, or the elements do not sort (SymSet keeps them sorted)."""
    conds: dict[Any, list[z3.BoolRef]] = {}
    explorer = None
    for c, v in entries:
        cz = _TRUE if c is True else c
        if isinstance(v, SymInt):
            explorer = explorer or current()
            values = explorer.values_of(v.z, MAX_VALUES)
            if values is None:
                return None
            for x in values:
                try:
                    # An enum field's members are the enum's, as Python's set would hold them.
                    e = v.enum(x) if v.enum is not None else x
                except ValueError:
                    return None
                conds.setdefault(e, []).append(fast_and([cz, v.z == x]))
        elif isinstance(v, _Opaque):
            return None
        else:
            conds.setdefault(v, []).append(cz)  # hashing a tuple holding a symbolic value refuses here
    try:
        elems = tuple(sorted(conds))
    except TypeError:
        return None
    return SymSet(elems, tuple(fast_simplify(fast_or(conds[e])) for e in elems))


def _extreme(name: str, args: tuple[Any, ...], kwargs: dict[str, Any], larger: bool) -> Any:
    builtin = getattr(builtins, name)
    if len(args) != 1 or kwargs or not isinstance(args[0], SymSet):
        return builtin(*args, **kwargs)
    s = args[0]
    kinds = {type(e) for e in s.elems}
    if len(kinds) != 1 or not (kinds == {int} or issubclass(next(iter(kinds)), IntEnum)):
        return builtin(s)  # iterating forks on each member: exact
    if not s.elems or not current().decide(fast_or(list(s.bits))):
        raise ValueError(f"{name}() iterable argument is empty")
    order = list(zip(s.elems, s.bits))
    if larger:
        order.reverse()
    # The first member in that order; past every member is unreachable (the set is not empty).
    term: z3.ArithRef = z3.IntVal(int(order[-1][0]))
    for e, b in reversed(order[:-1]):
        term = z3.If(b, z3.IntVal(int(e)), term)
    kind = next(iter(kinds))
    return SymInt(term, kind if kind is not int else None)


def max_(*args: Any, **kwargs: Any) -> Any:
    """``max``: of a SymSet of ints, the largest member as a term (empty: Python's ValueError)."""
    return _extreme("max", args, kwargs, True)


def min_(*args: Any, **kwargs: Any) -> Any:
    """``min``: of a SymSet of ints, the smallest member as a term (empty: Python's ValueError)."""
    return _extreme("min", args, kwargs, False)
