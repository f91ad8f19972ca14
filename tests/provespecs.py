"""Small specs for ``prove``: proofs that must succeed, proofs that must FAIL, unsupported code."""

from __future__ import annotations

import random
from dataclasses import dataclass

from kafkamc import Param, Spec, action, action_property, invariant
from kafkamc.spec import domain as d


@dataclass(frozen=True, slots=True)
class Count:
    n: int


@invariant("count-non-negative", "the counter is never negative")
def count_non_negative(p, s) -> bool:
    return s.n >= 0


@action_property("count-never-decreases", "no step lowers the counter")
def count_never_decreases(p, s, label, t) -> bool:
    return t.n >= s.n


class Counter1000(Spec):
    """A counter that counts up to ``bound`` and misbehaves only at 1000 (it wraps to -1)."""

    name = "counter-1000"
    parameters = (Param("bound", 5, "how far the counter counts", min=1, max=2000, lift=True),)
    invariants = (count_non_negative, count_never_decreases)

    def init_states(p):
        yield Count(0)

    def domain(p):
        return d.Record(Count, n=d.Int(-1, p.bound))

    @action
    def inc(p, s):
        if s.n < p.bound:
            yield f"Inc(n={s.n})", Count(-1 if s.n == 1000 else s.n + 1)


@dataclass(frozen=True, slots=True)
class Lag:
    x: int
    y: int


@invariant("y-non-negative", "y, which copies x, is never negative")
def y_non_negative(p, s) -> bool:
    return s.y >= 0


@invariant("x-non-negative", "x is never negative")
def x_non_negative(p, s) -> bool:
    return s.x >= 0


class Lagging(Spec):
    """y copies x, then x counts on: y >= 0 holds but is not inductive alone (x >= 0 fixes it)."""

    name = "lagging"
    parameters = (Param("bound", 3, "how far x counts", min=1, max=50, lift=True),)
    invariants = (y_non_negative, x_non_negative)

    def init_states(p):
        yield Lag(0, 0)

    def domain(p):
        return d.Record(Lag, x=d.Int(-5, p.bound), y=d.Int(-5, p.bound))

    @action
    def step(p, s):
        if s.x < p.bound:
            yield "Step", Lag(s.x + 1, s.x)


@dataclass(frozen=True, slots=True)
class Slots:
    owner: tuple[int, ...]  # owner[k] is the broker owning slot k, 0 for none
    flags: tuple[bool, ...]


@invariant("owners-in-range", "every owner is 0 or a broker id")
def owners_in_range(p, s) -> bool:
    return all(0 <= o <= p.n for o in s.owner)


class Indexed(Spec):
    """Symbolic indices (``flags[o - 1]``), a bag-free tuple of records, and an IntEnum-free domain."""

    name = "indexed"
    parameters = (Param("n", 3, "slots and brokers", min=1, max=5),)
    invariants = (owners_in_range,)

    def init_states(p):
        yield Slots((0,) * p.n, (False,) * p.n)

    def domain(p):
        return d.Record(Slots, owner=d.Tuple(d.Int(0, p.n), p.n), flags=d.Tuple(d.Bool(), p.n))

    @action
    def claim(p, s):
        for k, o in enumerate(s.owner):
            if o == 0:
                for b in range(1, p.n + 1):
                    yield f"Claim(slot={k}, b{b})", Slots(s.owner[:k] + (b,) + s.owner[k + 1:], s.flags)

    @action
    def flag_owner(p, s):
        for o in s.owner:
            if o != 0 and not s.flags[o - 1]:
                yield f"Flag(b{o})", Slots(s.owner, s.flags[:o - 1] + (True,) + s.flags[o:])


# -- specs whose functions cannot run symbolically: prove must refuse, naming the construct ----

_SEEN: list[int] = []  # a mutable global


def _counter_spec(name: str, step_fn) -> type[Spec]:
    class Bad(Spec):
        parameters = (Param("bound", 3, "bound", min=1, max=10, lift=True),)
        invariants = (count_non_negative,)

        def init_states(p):
            yield Count(0)

        def domain(p):
            return d.Record(Count, n=d.Int(0, p.bound))

        step = action(step_fn)

    Bad.name = name
    Bad.__name__ = Bad.__qualname__ = "".join(w.title() for w in name.split("-"))
    return Bad


def _uses_hash(p, s):
    if s.n < p.bound and len({s.n, 1}) > 0:
        yield "Step", Count(s.n + 1)


def _uses_int(p, s):
    if s.n < p.bound:
        yield "Step", Count(int(s.n) + 1)


def _uses_dict_key(p, s):
    table = {0: 1}
    if s.n < p.bound and table.get(s.n, 0) >= 0:
        yield "Step", Count(s.n + 1)


def _reads_mutable_global(p, s):
    if s.n < p.bound and len(_SEEN) == 0:
        yield "Step", Count(s.n + 1)


def _uses_random(p, s):
    if s.n < p.bound:
        yield "Step", Count(s.n + random.randint(0, 1))


def _symbolic_range(p, s):
    for _ in range(s.n):  # iteration over a symbolic number of steps (n is unbounded above)
        pass
    yield "Step", Count(s.n)


HashSpec = _counter_spec("uses-hash", _uses_hash)
IntSpec = _counter_spec("uses-int", _uses_int)
DictKeySpec = _counter_spec("uses-dict-key", _uses_dict_key)
GlobalSpec = _counter_spec("reads-global", _reads_mutable_global)
RandomSpec = _counter_spec("uses-random", _uses_random)


class RangeSpec(Spec):
    name = "symbolic-range"
    parameters = (Param("bound", 3, "bound", min=1, max=10, lift=True),)
    invariants = (count_non_negative,)

    def init_states(p):
        yield Count(0)

    def domain(p):
        return d.Record(Count, n=d.Int(0))

    step = action(_symbolic_range)
