"""What the branch-free versions of spec functions (``predicated.py``) call instead of forking.

On concrete values every function here gives exactly Python's answer (the same object where
Python returns an operand). On symbolic values, where Python would ask a condition for a concrete
``bool`` and the executor would fork the path, both sides run under a *guard* (the executor's
``split``/``enter``/``leave``, ``kafkamc/checker/symbolic/paths.py``) and their results are joined
into one value: ints and bools as ``If`` terms, sets member by member, tuples and dataclasses field
by field. What cannot be joined (two tuples of different lengths, a value bound on one side only,
a list) is decided after all: the path forks on the condition, which is always exact.

A side that raises is not lost: where it raised is recorded (the path condition and its guard),
and the path goes on with the other side's states only. The unrolling asks whether a reachable
state is one that raised, as for an action that raises without guards.
"""

from __future__ import annotations

import copy
import dataclasses
import enum
from typing import Any, Callable, Iterable, Iterator

import z3

from kafkamc.checker.symbolic import SymBool, SymInt, SymSet
from kafkamc.checker.symbolic.context import current, unsupported
from kafkamc.checker.symbolic.sets import BuiltSet, as_members
from kafkamc.checker.symbolic.state import equal, int_terms, lex_le
from kafkamc.checker.symbolic.values import _Opaque, as_arith, as_bool, bool_value, fast_and, fast_not, fast_or, fast_simplify
from kafkamc.checker.watch import raise_pending_stop
from kafkamc.errors import KafkamcError
from kafkamc.prover.items import Guarded, Items, Yielded, items, passed, running  # noqa: F401 (passed: the rewritten code's)

__all__ = ["UNBOUND", "Label", "Split", "Guarded", "region", "test", "enter_side", "leave_side", "drop_side", "run_side", "ite", "merge", "ifexp", "and_", "or_", "and_t", "or_t", "not_", "in_", "eq",
           "ne", "len_", "any_", "all_", "sorted_", "members", "truth_of",
           "Items", "items", "successors", "index_", "replace_at", "finite", "each", "apart"]

_MAX_SORTED = 6  # longest sequence sorted by compare-exchange (n(n-1)/2 joins); longer ones fork


class UNBOUND:
    """A local not bound on one side of a guarded ``if`` (a class: immutable for the guard)."""


_TRUE = z3.BoolVal(True)


def truth_of(value: Any) -> Any:
    """Python's truth of ``value``: a bool, or a Z3 condition when it is symbolic."""
    if isinstance(value, bool):
        return value
    if isinstance(value, SymBool):
        return value.z
    if isinstance(value, SymInt):
        return value.z != 0
    if isinstance(value, SymSet):
        return fast_or(list(value.bits))
    return bool(value)


class Label(_Opaque):
    """Two different strings joined (an action's labels, which the relation never reads): it
    formats as a symbolic value does, only inside an action, and refuses every other use."""

    __slots__ = ()

    def __add__(self, other: Any) -> Any:
        if isinstance(other, (str, Label)):
            return self
        return NotImplemented

    __radd__ = __add__

    def __eq__(self, other: Any) -> Any:
        raise unsupported("comparing a label that differs between two joined branches")

    __ne__ = __eq__
    __hash__ = _Opaque.__hash__


class Split:
    """One evaluation of a condition: which sides run, and which of them raised (per run)."""

    __slots__ = ("cond", "then_model", "else_model", "dropped")

    def __init__(self, cond: z3.BoolRef, then_model: Any, else_model: Any) -> None:
        self.cond = cond
        self.then_model = then_model
        self.else_model = else_model
        self.dropped: set[bool] = set()


def test(value: Any) -> Any:
    """True or False when only one side is taken on the path, else a ``Split``."""
    t = truth_of(value)
    if isinstance(t, bool):
        return t
    verdict, then_model, else_model = current().split(t)
    if verdict != "both":
        return verdict
    return Split(t, then_model, else_model)


def enter_side(split: Any, side: bool) -> None:
    """What follows runs under the guard of one side of ``split`` (nothing to do when the
    condition was concrete on the path: ``split`` is then a bool)."""
    if split.__class__ is not Split:
        return
    current().enter(split.cond if side else fast_not(split.cond), split.then_model if side else split.else_model)


def leave_side(split: Any) -> None:
    if split.__class__ is Split:
        current().leave()


def drop_side(split: Split, side: bool, exc: BaseException) -> None:
    """The side raised ``exc``: recorded where (unless it is the executor's own refusal), and the
    path goes on with the other side's states."""
    raise_pending_stop(exc)
    if split.__class__ is not Split or isinstance(exc, KafkamcError):
        raise exc
    ex = current()
    if ex.fatal is not None:
        raise ex.fatal from None
    split.dropped.add(side)
    ex.drop(split.else_model if side else split.then_model)


def run_side(split: Split, side: bool, body: Callable[[], Any]) -> Any:
    """``body()`` under the guard of ``side``; UNBOUND (and the side dropped) when it raised."""
    enter_side(split, side)
    try:
        value = body()
    except Exception as exc:
        raise_pending_stop(exc)
        drop_side(split, side, exc)
        return UNBOUND
    leave_side(split)
    return value


def region(split: Any, then: Callable[[], Any], other: Callable[[], Any]) -> Any:
    """What ``if C: A else: B`` yields when A and B bind nothing that is read afterwards: each
    side's paths explored on their own (``Explorer.region``), so that their forks do not multiply
    the paths of the code after them."""
    if split is True:
        return then()
    if split is False:
        return other()
    found = current().region([(split.cond, then), (fast_not(split.cond), other)])
    return [Guarded(fast_and([cond, item.cond]) if isinstance(item, Guarded) else cond, item)
            for cond, item in found]


def apart(split: Any, then: Callable[[], Any], other: Callable[[], Any]) -> list[tuple[Any, Any]]:
    """(condition or None, item) of what ``if C: A else: B`` appends to a list of guarded items
    when A and B append to their own list and yield its ``guarded()`` pairs: each side's paths
    explored on their own (``Explorer.region``), as ``region`` does for yields."""
    if split is True:
        return list(then())
    if split is False:
        return list(other())
    found = current().region([(split.cond, then), (fast_not(split.cond), other)])
    return [(cond if inner is None else fast_and([cond, inner]), item) for cond, (inner, item) in found]


def ite(split: Split, a: Any, b: Any) -> Any:
    """The value that is ``a`` on the then side and ``b`` on the else side of ``split``."""
    if True in split.dropped:
        return b
    if False in split.dropped:
        return a
    return merge(split.cond, a, b)


def _intlike(v: Any) -> bool:
    return isinstance(v, SymInt) or (isinstance(v, int) and not isinstance(v, bool))


def _concrete(v: Any) -> bool:
    if isinstance(v, (_Opaque, list, dict, set)):
        return False
    if isinstance(v, tuple):
        return all(_concrete(x) for x in v)
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return all(_concrete(getattr(v, f.name)) for f in dataclasses.fields(v))
    return True


def merge(c: z3.BoolRef, a: Any, b: Any) -> Any:
    """``a`` where ``c`` holds, ``b`` elsewhere, as one value; a fork on ``c`` when the two have
    no common structure."""
    if a is b:
        return a
    if a is UNBOUND or b is UNBOUND:
        return _fork(c, a, b)
    if (isinstance(a, Items) or isinstance(b, Items)) and all(isinstance(v, (list, tuple)) for v in (a, b)):
        # Two lists of items (``return ()`` on one side, ``return out`` on the other): each item
        # under its side, and settled (a fork on ``c``) by any use that is not a guard-aware one.
        return Items.joined(c, a, b)
    if isinstance(a, (bool, SymBool)) and isinstance(b, (bool, SymBool)):
        if isinstance(a, bool) and isinstance(b, bool) and a == b:
            return a
        return SymBool(z3.If(c, as_bool(a), as_bool(b)))
    if _intlike(a) and _intlike(b):
        if type(a) is type(b) and not isinstance(a, SymInt) and a == b:
            return a
        ea, eb = _enum_of(a), _enum_of(b)
        if ea is not None and eb is not None and ea is not eb:
            return _fork(c, a, b)
        return SymInt(z3.If(c, as_arith(a), as_arith(b)), ea or eb)
    if isinstance(a, (SymSet, frozenset)) and isinstance(b, (SymSet, frozenset)):
        if isinstance(a, frozenset) and isinstance(b, frozenset) and a == b:
            return a
        ma, mb = as_members(a), as_members(b)
        keys = set(ma) | set(mb)
        if not all(_concrete(k) for k in keys):
            return _fork(c, a, b)
        false = z3.BoolVal(False)
        elems = tuple(sorted(keys))
        # A set spec code built on either side refuses changes in place (``BuiltSet``).
        kind = BuiltSet if isinstance(a, BuiltSet) or isinstance(b, BuiltSet) else SymSet
        return kind(elems, tuple(z3.If(c, ma.get(e, false), mb.get(e, false)) for e in elems))
    if type(a) is tuple and type(b) is tuple:
        if len(a) != len(b):
            return _fork(c, a, b)
        return tuple(merge(c, x, y) for x, y in zip(a, b))
    if (dataclasses.is_dataclass(a) and not isinstance(a, type) and type(a) is type(b)
            and all(f.init for f in dataclasses.fields(a))):
        return type(a)(**{f.name: merge(c, getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a)})
    if type(a) is type(b) and isinstance(a, (str, type(None))) and a == b:
        return a
    if isinstance(a, (str, Label)) and isinstance(b, (str, Label)):
        return Label()
    return _fork(c, a, b)


def _enum_of(v: Any) -> Any:
    if isinstance(v, SymInt):
        return v.enum
    return type(v) if type(v) is not int else None


def _fork(c: z3.BoolRef, a: Any, b: Any) -> Any:
    return a if current().decide(c) else b


def ifexp(cond: Any, then: Callable[[], Any], other: Callable[[], Any]) -> Any:
    """``then() if cond else other()``."""
    s = test(cond)
    if s is True:
        return then()
    if s is False:
        return other()
    a = run_side(s, True, then)
    b = run_side(s, False, other)
    return ite(s, a, b)


def _chain(first: Any, rest: tuple[Callable[[], Any], ...], stop_when: bool) -> Any:
    """``a and b and ...`` (stop_when False) or ``a or b or ...`` (True): the first operand whose
    truth is ``stop_when``, else the last, as Python returns it."""
    value = first
    for i, thunk in enumerate(rest):
        s = test(value)
        if s is stop_when:
            return value
        if s is (not stop_when):
            value = thunk()
            continue
        # Symbolic truth: the rest runs where the chain goes on, the value stays where it stops.
        later = rest[i + 1:]
        on = run_side(s, not stop_when, lambda: _chain(thunk(), later, stop_when))
        if on is UNBOUND:
            return value
        return merge(s.cond, value, on) if stop_when else merge(s.cond, on, value)
    return value


def and_(first: Any, *rest: Callable[[], Any]) -> Any:
    return _chain(first, rest, False)


def or_(first: Any, *rest: Callable[[], Any]) -> Any:
    return _chain(first, rest, True)


def _truth(value: Any) -> Any:
    t = truth_of(value)
    return t if isinstance(t, bool) else SymBool(t)


def and_t(first: Any, *rest: Callable[[], Any]) -> Any:
    """``bool(a and b and ...)``: an ``and`` whose value is only tested (an ``if``'s condition)."""
    return _chain(_truth(first), tuple(lambda th=th: _truth(th()) for th in rest), False)


def or_t(first: Any, *rest: Callable[[], Any]) -> Any:
    """``bool(a or b or ...)``: an ``or`` whose value is only tested."""
    return _chain(_truth(first), tuple(lambda th=th: _truth(th()) for th in rest), True)


def not_(value: Any) -> Any:
    t = truth_of(value)
    return (not t) if isinstance(t, bool) else SymBool(fast_not(t))


def _symbolic_inside(v: Any) -> bool:
    return not _concrete(v) and not isinstance(v, (list, dict, set))


def eq(a: Any, b: Any) -> Any:
    """``a == b`` as a term when a tuple or a record holds symbolic values (Python's ``==``
    forks on each field)."""
    if (isinstance(a, tuple) or dataclasses.is_dataclass(a)) and not isinstance(a, type) and \
            type(a) is type(b) and (_symbolic_inside(a) or _symbolic_inside(b)):
        return SymBool(equal(a, b))
    return a == b


def ne(a: Any, b: Any) -> Any:
    if (isinstance(a, tuple) or dataclasses.is_dataclass(a)) and not isinstance(a, type) and \
            type(a) is type(b) and (_symbolic_inside(a) or _symbolic_inside(b)):
        return SymBool(fast_not(equal(a, b)))
    return a != b


def in_(x: Any, coll: Any) -> Any:
    """``x in coll`` without the ``bool`` Python forces on each comparison."""
    if isinstance(coll, SymSet):
        return coll.__contains__(x)
    if isinstance(coll, (tuple, list, frozenset)) and (_symbolic_inside(x) or any(_symbolic_inside(e) for e in coll)):
        parts = []
        for e in coll:
            if e is x:
                return True
            r = eq(x, e)
            if isinstance(r, SymBool):
                parts.append(r.z)
            elif r is True or (r is not False and truth_of(r) is True):
                return True
        return SymBool(fast_or(parts)) if parts else False
    return x in coll


def len_(value: Any) -> Any:
    """``len``: the number of members of a symbolic set as a term (Python's ``len`` must be an
    int, so the executor would enumerate it)."""
    if isinstance(value, SymSet):
        return SymInt(z3.Sum([z3.If(b, 1, 0) for b in value.bits])) if value.bits else 0
    return len(value)


def any_(items: Iterable[Any]) -> Any:
    parts = []
    for value in items:
        t = truth_of(value)
        if t is True:
            return True
        if t is not False:
            parts.append(t)
    return SymBool(fast_or(parts)) if parts else False


def all_(items: Iterable[Any]) -> Any:
    parts = []
    for value in items:
        t = truth_of(value)
        if t is False:
            return False
        if t is not True:
            parts.append(t)
    return SymBool(fast_and(parts)) if parts else True


def members(items: Any) -> Iterator[tuple[Any, Any]]:
    """(element, whether it is there) of an iterable: True for each element of a concrete one,
    the membership of each possible member of a symbolic set, the condition of each item of a
    list of guarded items (``items.py``)."""
    if isinstance(items, SymSet):
        for e, b in zip(items.elems, items.bits):
            yield e, SymBool(b)
    elif isinstance(items, Items):
        for cond, e in items.guarded():
            if isinstance(e, Guarded):
                cond = e.cond if cond is None else fast_and([cond, e.cond])
                e = tuple(e)
            yield e, (True if cond is None else SymBool(cond))
    elif isinstance(items, Yielded):
        for e in items.raw():
            if isinstance(e, Guarded):
                yield tuple(e), SymBool(e.cond)
            else:
                yield e, True
    else:
        for e in items:
            yield e, True


def each(items: Any, body: Callable[[Any], None], owners: Any, globs: Any) -> None:
    """``for item in items: body(item)`` where ``body`` only writes slots of the item's records
    (``_tracking``'s ``_set_visible(n, _visible_after(n, seen))``, ``predicated.py`` checks it)
    and ``items`` is read nowhere else. On a list of guarded items each item is explored on its
    own, under its condition, on a copy of its records (``Explorer.region``): the body's forks
    (``_visible_after`` slicing a log at a symbolic high watermark) no longer multiply over the
    items, and each path's copy becomes an item of its own, under the path's condition.

    The body always writes copies: a record may be an item a region yielded, which every later
    path of the exploration gets again (the region is replayed, not run again), so a write in
    place would leak from one path into the next. Two items holding one record (an action that
    appends a successor twice) are copied together, keeping that record shared, and run as
    Python's loop (a fork on each condition). Under a guard (the loop runs on some states
    only), or over a record the arguments or the module hold, a write in place would reach later
    paths (a record of a template every path starts from): refused."""
    ex = running()
    if not isinstance(items, Items) or ex is None:
        for item in items:
            body(item)
        return
    pairs = []
    for cond, item in items.guarded():
        if isinstance(item, Guarded):
            cond = item.cond if cond is None else fast_and([cond, item.cond])
            item = tuple(item)
        pairs.append((cond, item))
    taken = _held(owners, globs)
    records = [_records(item) for _cond, item in pairs]
    if ex.guards:
        raise unsupported("a loop writing slots of guarded items under a condition")
    if any(r & taken for r in records):
        raise unsupported("a loop writing slots of a record the arguments or the module hold")
    shared = sum(len(r) for r in records) != len(frozenset().union(*records)) if records else False
    if shared:
        copies = copy.deepcopy([item for _cond, item in pairs])  # one memo: a shared record stays shared
        for (cond, _item), mine in zip(pairs, copies):
            if cond is None or ex.decide(cond):
                body(mine)
        items.replace([(cond, mine) for (cond, _item), mine in zip(pairs, copies)])
        return
    made: list[tuple[Any, Any]] = []
    for cond, item in pairs:
        def run(item: Any = item) -> Iterator[Any]:
            mine = copy.deepcopy(item)  # symbolic values are shared, the records copied
            body(mine)
            yield mine

        made.extend(ex.region([(_TRUE if cond is None else cond, run)]))
    items.replace(made)


_global_objects: dict[int, tuple[Any, frozenset[int]]] = {}


def _objects(value: Any, out: set[int], depth: int = 0) -> None:
    """The ids of the records (dataclass instances: what a slot write changes) inside ``value``."""
    if depth > 8:
        return
    if isinstance(value, (tuple, list)):
        for v in value:
            _objects(v, out, depth + 1)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        out.add(id(value))
        for f in dataclasses.fields(value):
            _objects(getattr(value, f.name, None), out, depth + 1)


def _records(item: Any) -> frozenset[int]:
    found: set[int] = set()
    _objects(item, found)
    return frozenset(found)


def _held(owners: Any, globs: Any) -> frozenset[int]:
    """The records the function's arguments and its module's globals hold."""
    taken: set[int] = set()
    _objects(owners, taken)
    if globs is not None:
        known = _global_objects.get(id(globs))
        if known is None or known[0] is not globs:
            found: set[int] = set()
            _objects(tuple(v for v in globs.values() if isinstance(v, tuple) or dataclasses.is_dataclass(v)), found)
            known = _global_objects[id(globs)] = (globs, frozenset(found))
        taken |= known[1]
    return frozenset(taken)


_MAX_FLAGGED = 4096  # most items a loop that breaks runs over with a flag (a huge range would not end)


def finite(value: Any, unchanged: bool = False) -> bool:
    """Whether iterating ``value`` to its end is harmless (a loop that breaks is run to the end
    with a flag only then, ``predicated.py``): a collection of at most ``_MAX_FLAGGED`` items, not
    an iterator, that nothing changes while it is iterated: an immutable one, or a list, set or
    dict the loop's body leaves alone (``unchanged``, which the rewrite checked)."""
    if isinstance(value, SymSet):
        return len(value.elems) <= _MAX_FLAGGED
    if isinstance(value, range):
        return value.start == value.stop or (value.stop - value.start) // value.step < _MAX_FLAGGED
    if isinstance(value, (tuple, frozenset, str)):
        return len(value) <= _MAX_FLAGGED
    if unchanged and isinstance(value, (list, set, dict)):
        # A list of guarded items counts its possible items (its ``len`` forks on them).
        return list.__len__(value) <= _MAX_FLAGGED if isinstance(value, list) else len(value) <= _MAX_FLAGGED
    return False


def successors(result: Any) -> Iterator[Any]:
    """The items of an action's result, each guarded item as a ``Guarded`` (the relation adds its
    condition to the path's); a guarded item that is not a pair is decided on the path."""
    if isinstance(result, Yielded):
        yield from result.raw()  # each Guarded item with its condition, for the relation
        return
    if not isinstance(result, Items):
        yield from result
        return
    for cond, item in result.guarded():
        if isinstance(item, Guarded):
            cond = item.cond if cond is None else fast_and([cond, item.cond])
        if cond is None:
            yield item
        elif isinstance(item, tuple):
            yield Guarded(cond, item)
        elif current().decide(cond):
            yield item


def _in_range(i: SymInt, lo: int, hi: int) -> bool:
    """Whether ``lo <= i < hi`` on every state of the path (and its guards)."""
    return test(SymBool(z3.And(i.z >= lo, i.z < hi))) is True


def _identityless(v: Any, depth: int = 0) -> bool:
    """Whether a join of ``v`` with another value may stand for it: nothing can tell a copy from
    ``v`` itself. A record or a container is not such a value: a slot written in place
    (``Cls.field.__set__``, the ``_tracking`` pattern) or an append would change the join, a new
    object, and not the element Python's indexing returns."""
    if v is None or isinstance(v, (bool, int, str, enum.Enum, SymInt, SymBool, Label)):
        return True
    if v.__class__ is SymSet:
        return True  # a set the domain holds, a frozenset: never changed in place
    if depth < 8 and v.__class__ in (tuple, frozenset):
        return all(_identityless(x, depth + 1) for x in v)
    return False


def _joinable(a: Any, b: Any) -> bool:
    return a is b or (_identityless(a) and _identityless(b))


def index_(seq: Any, i: Any) -> Any:
    """``seq[i]``: for a tuple and a symbolic index that is in range on every state of the path,
    the join of the elements under ``i == position`` (Python's ``__index__`` forks on each value
    of ``i``); anything else is Python's own indexing, which also picks among records and
    containers (their join would be a new object, ``_identityless``)."""
    if i.__class__ is not SymInt or seq.__class__ is not tuple or not seq:
        return seq[i]
    n = len(seq)
    if not _in_range(i, -n, n):
        return seq[i]
    at: list[tuple[int, Any]] = []
    for j in range(n):
        cond = fast_simplify(z3.Or(i.z == j, i.z == j - n))
        known = bool_value(cond)
        if known is not False:
            at.append((j, cond if known is None else True))
    if not at or not all(_joinable(seq[at[0][0]], seq[j]) for j, _c in at[1:]):
        return seq[i]
    value = seq[at[-1][0]]
    for j, cond in reversed(at[:-1]):
        value = seq[j] if cond is True else merge(cond, seq[j], value)
    return value


def replace_at(seq: Any, i: Any, x: Any) -> Any:
    """``seq[:i] + (x,) + seq[i + 1:]``: for a tuple and a symbolic ``i`` within ``0..len-1`` on
    every state of the path, each position joined under ``i == position``; else Python's (also
    when a position would join a record or a container with another, ``_identityless``)."""
    if i.__class__ is not SymInt or seq.__class__ is not tuple or not _in_range(i, 0, len(seq)):
        return seq[:i] + (x,) + seq[i + 1:]
    out = []
    for j, old in enumerate(seq):
        at = fast_simplify(i.z == j)
        known = bool_value(at)
        if known is None and not _joinable(x, old):
            return seq[:i] + (x,) + seq[i + 1:]
        out.append(old if known is False else x if known else merge(at, x, old))
    return tuple(out)


def _order_signature(v: Any) -> Any:
    """What Python's ``<`` walks in ``v`` (ints, enums, bools, tuples, ordered records), or None
    when it meets anything else: two values of one signature compare as their ``int_terms``."""
    # Bools and ints apart: ``1`` and ``True`` compare equal, but the neighbours are joined.
    if isinstance(v, (SymBool, bool)):
        return "b"
    if isinstance(v, (SymInt, int)):
        return "i"
    if isinstance(v, tuple):
        sig = tuple(_order_signature(x) for x in v)
        return None if None in sig else ("t", sig)
    params = getattr(type(v), "__dataclass_params__", None)
    # Every field compared: a field ``<`` does not read would still be joined, and two records
    # equal in order but not in that field would lose it (two labels join to an opaque one).
    fields = dataclasses.fields(v) if params is not None else ()
    if params is not None and params.order and all(f.init and f.compare for f in fields):
        sig = tuple(_order_signature(getattr(v, f.name)) for f in fields)
        return None if None in sig else (type(v), sig)
    return None


def sorted_(items: Iterable[Any]) -> Any:
    """``sorted(items)``: when symbolic values of one orderable structure are sorted, a bubble
    sort whose compare-exchange joins the two neighbours under "the right one is smaller" (Python's
    ``<`` as a lexicographic term), instead of forking on every comparison. Bubble sort swaps only
    on a strict ``<``, so it is stable, as ``sorted`` is: both give the same list for every state."""
    xs = list(items)
    if len(xs) < 2 or len(xs) > _MAX_SORTED or all(_concrete(x) for x in xs):
        return sorted(xs)
    sig = _order_signature(xs[0])
    if sig is None or any(_order_signature(x) != sig for x in xs[1:]):
        return sorted(xs)
    for i in range(len(xs) - 1):
        for j in range(len(xs) - 1 - i):
            a, b = xs[j], xs[j + 1]
            swap = fast_simplify(fast_not(lex_le(int_terms(a), int_terms(b))))  # b < a
            known = bool_value(swap)
            if known is not None:
                if known:
                    xs[j], xs[j + 1] = b, a
                continue
            xs[j], xs[j + 1] = merge(swap, b, a), merge(swap, a, b)
    return xs
