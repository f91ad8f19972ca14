"""The state domain hook: the type of every state field, TLA+'s TypeOK.

``kafkamc prove`` checks that an invariant is inductive over every state of the spec's declared
domain, not only the reachable ones, so a spec that wants to be proved describes its states::

    def domain(p):
        return d.Record(CounterState, x=d.Int(0, p.bound), flag=d.Bool(), peers=d.Tuple(d.Int(0), p.n))

Bounds are ints or parameter values; a parameter declared ``Param(..., lift=True)`` may be lifted by
``prove`` (it is then symbolic, so ``d.Int(0, p.elections)`` ranges up to any number of elections).
Shapes stay concrete: a ``Tuple``'s length is an int, a ``Bag`` is proved for each of its lengths, a
``Subset`` and a ``OneOf`` for each of their members. The domain must contain every reachable state;
``prove`` checks that every successor of a domain state is again in the domain (so a domain that is
too narrow is reported, never assumed), and ``contains`` checks a concrete state.

This module is data only: the prover interprets it, and nothing here depends on the checker.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from enum import IntEnum
from itertools import combinations
from typing import Any

__all__ = ["Domain", "Int", "Bool", "Enum", "Const", "OneOf", "Record", "Tuple", "Seq", "Bag", "Subset", "Set",
           "contains"]


class Domain:
    """Base of the domain vocabulary."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class Int(Domain):
    """An int in ``lo..hi`` (``hi`` None: no upper bound)."""

    lo: Any = 0
    hi: Any = None


@dataclass(frozen=True, slots=True)
class Bool(Domain):
    """True or False."""


@dataclass(frozen=True, slots=True)
class Enum(Domain):
    """A member of an IntEnum."""

    cls: type[IntEnum]


@dataclass(frozen=True, slots=True)
class Const(Domain):
    """Exactly ``value``."""

    value: Any


@dataclass(frozen=True, slots=True, init=False)
class OneOf(Domain):
    """One of a few concrete values (each is proved separately)."""

    values: tuple[Any, ...]

    def __init__(self, *values: Any) -> None:
        object.__setattr__(self, "values", tuple(values))


@dataclass(frozen=True, slots=True, init=False)
class Record(Domain):
    """An instance of the dataclass ``cls`` with each field in its domain: ``Record(Broker, up=Bool(), ...)``."""

    cls: type
    fields: tuple[tuple[str, Domain], ...]

    def __init__(self, cls: type, **fields: Domain) -> None:
        names = [f.name for f in dataclasses.fields(cls) if f.init]
        missing = [n for n in names if n not in fields]
        extra = [n for n in fields if n not in names]
        if missing or extra:
            raise ValueError(f"Record({cls.__name__}): missing fields {missing}, unknown fields {extra}")
        object.__setattr__(self, "cls", cls)
        object.__setattr__(self, "fields", tuple((n, fields[n]) for n in names))


@dataclass(frozen=True, slots=True)
class Tuple(Domain):
    """A tuple of exactly ``length`` elements, each in ``elem``."""

    elem: Domain
    length: int


@dataclass(frozen=True, slots=True, init=False)
class Seq(Domain):
    """A tuple of fixed length whose i-th element is in ``elems[i]``: ``Seq(Int(0, n), Int(-1), Set(range(1, n + 1)))``."""

    elems: tuple[Domain, ...]

    def __init__(self, *elems: Domain) -> None:
        object.__setattr__(self, "elems", tuple(elems))


@dataclass(frozen=True, slots=True)
class Bag(Domain):
    """A multiset kept as a tuple of ``min_len..max_len`` elements of ``elem``, sorted when ``sorted``."""

    elem: Domain
    max_len: int
    sorted: bool = True
    min_len: int = 0


@dataclass(frozen=True, slots=True)
class Subset(Domain):
    """A set of ints in ``lo..hi`` kept as a sorted tuple of distinct ints (``nonempty``: at least one)."""

    lo: int
    hi: int
    nonempty: bool = False

    def members(self) -> list[tuple[int, ...]]:
        """Every such tuple: by size, then in lexicographic order."""
        ids = range(self.lo, self.hi + 1)
        return [c for k in range(1 if self.nonempty else 0, len(ids) + 1) for c in combinations(ids, k)]


@dataclass(frozen=True, slots=True, init=False)
class Set(Domain):
    """A frozenset of members of ``universe`` (concrete, e.g. ``Set(range(1, n + 1))``). Unlike
    ``Subset`` it is not a shape: the prover keeps one symbolic bool per possible member, so k such
    sets do not make 2^(k*n) shapes."""

    universe: tuple[Any, ...]

    def __init__(self, universe: Any) -> None:
        object.__setattr__(self, "universe", tuple(sorted(set(universe))))


def contains(domain: Domain, value: Any) -> bool:
    """Whether the concrete ``value`` is in ``domain`` (bounds must be concrete here)."""
    if isinstance(domain, Int):
        return (isinstance(value, int) and not isinstance(value, bool) and value >= domain.lo
                and (domain.hi is None or value <= domain.hi))
    if isinstance(domain, Bool):
        return isinstance(value, bool)
    if isinstance(domain, Enum):
        return isinstance(value, int) and not isinstance(value, bool) and value in set(int(m) for m in domain.cls)
    if isinstance(domain, Const):
        return value == domain.value
    if isinstance(domain, OneOf):
        return value in domain.values
    if isinstance(domain, Record):
        return type(value) is domain.cls and all(contains(d, getattr(value, n)) for n, d in domain.fields)
    if isinstance(domain, Tuple):
        return isinstance(value, tuple) and len(value) == domain.length and all(contains(domain.elem, v) for v in value)
    if isinstance(domain, Bag):
        return (isinstance(value, tuple) and domain.min_len <= len(value) <= domain.max_len
                and all(contains(domain.elem, v) for v in value)
                and (not domain.sorted or all(a <= b for a, b in zip(value, value[1:]))))
    if isinstance(domain, Seq):
        return (isinstance(value, tuple) and len(value) == len(domain.elems)
                and all(contains(d, v) for d, v in zip(domain.elems, value)))
    if isinstance(domain, Subset):
        return isinstance(value, tuple) and value in domain.members()
    if isinstance(domain, Set):
        return isinstance(value, frozenset) and value <= frozenset(domain.universe)
    raise TypeError(f"not a domain: {domain!r}")
