"""Small specs the engine and CLI tests check: each exercises one feature of the Spec API."""

from __future__ import annotations

import time
from dataclasses import dataclass

from kafkamc import Param, Spec, action, action_property, invariant


@dataclass(frozen=True, slots=True)
class Pair:
    x: int
    y: int


@invariant("x-below-limit", "x never reaches the limit")
def x_below_limit(p, s):
    return s.x < p.limit


@invariant("sum-below-cap", "x + y stays below the cap")
def sum_below_cap(p, s):
    return s.x + s.y < p.cap


@action_property("x-never-decreases", "no transition lowers x")
def x_never_decreases(p, s, label, t):
    return t.x >= s.x


class Counters(Spec):
    """Two counters that count up to ``bound``; ``reset`` lets y go back to 0."""

    name = "counters"
    description = "two bounded counters"
    parameters = (
        Param("bound", 4, "largest counter value", min=1, max=50),
        Param("limit", 100, "x must stay below this", min=1, max=1000),
        Param("cap", 1000, "x + y must stay below this", min=1, max=1000),
        Param("decrement", False, "allow x to go down (breaks x-never-decreases)"),
    )
    invariants = (x_below_limit, sum_below_cap, x_never_decreases)
    default_invariants = ("x-below-limit", "sum-below-cap")

    def init_states(p):
        yield Pair(0, 0)

    @action
    def inc_x(p, s):
        if s.x < p.bound:
            yield f"IncX(x={s.x + 1})", Pair(s.x + 1, s.y)

    @action
    def inc_y(p, s):
        if s.y < p.bound:
            yield (s.y + 1,), Pair(s.x, s.y + 1)

    @action
    def dec_x(p, s):
        if p.decrement and s.x > 0:
            yield "DecX", Pair(s.x - 1, s.y)


class Raising(Spec):
    """An action that divides by zero once x reaches 2: exploration must report it (exit 3)."""

    name = "raising"
    parameters = ()

    def init_states(p):
        yield Pair(0, 0)

    @action
    def step(p, s):
        if s.x < 5:
            yield "Step", Pair(s.x + 1, 1 // (2 - s.x - 1) if s.x == 1 else 0)


@dataclass(frozen=True, slots=True)
class Named:
    owner: str
    votes: frozenset[str]


@invariant("at-most-two-votes", "no more than two brokers have voted")
def at_most_two_votes(p, s):
    return len(s.votes) <= 2


class Election(Spec):
    """States with strings: fingerprints must take the canonical (unsalted) path."""

    name = "election"
    parameters = (Param("brokers", 3, "number of brokers", min=1, max=6),)
    invariants = (at_most_two_votes,)

    def init_states(p):
        yield Named("", frozenset())

    @action
    def vote(p, s):
        for b in range(1, p.brokers + 1):
            name = f"b{b}"
            if name not in s.votes:
                yield f"Vote({name})", Named(s.owner or name, s.votes | {name})


@dataclass(frozen=True, slots=True)
class Tokens:
    held: tuple[int, ...]


@invariant("tokens-conserved", "the number of tokens never changes")
def tokens_conserved(p, s):
    return sum(s.held) == p.tokens


class Tokens3(Spec):
    """Brokers pass tokens; brokers are interchangeable, so sorting ``held`` is a symmetry."""

    name = "tokens"
    parameters = (
        Param("brokers", 3, "number of brokers", min=2, max=5),
        Param("tokens", 2, "tokens in circulation", min=1, max=4),
    )
    invariants = (tokens_conserved,)

    def init_states(p):
        yield Tokens((p.tokens,) + (0,) * (p.brokers - 1))

    @action
    def give(p, s):
        for a in range(p.brokers):
            if s.held[a] == 0:
                continue
            for b in range(p.brokers):
                if a != b:
                    held = list(s.held)
                    held[a] -= 1
                    held[b] += 1
                    yield f"Give(b{a + 1}, b{b + 1})", Tokens(tuple(held))

    def symmetry(p, s):
        return Tokens(tuple(sorted(s.held)))


# Expansions of each state in this process: the per-call order of Shuffled's successors.
_CALLS: dict[Pair, int] = {}


@invariant("x-below-two", "x stays below 2")
def x_below_two(p, s):
    return s.x < 2


class Shuffled(Spec):
    """Nondeterministic on purpose: successors come out reversed on every second call for a state,
    and reversed again in any process but ``home`` (forked workers, Spark executors). A checker must
    refuse to print the counterexample it rebuilds from this spec."""

    name = "shuffled"
    parameters = (
        Param("bound", 3, "largest counter value", min=1, max=9),
        Param("home", 0, "the process id whose first call yields in declaration order", min=0),
    )
    invariants = (x_below_two,)

    def init_states(p):
        yield Pair(0, 0)

    @action
    def step(p, s):
        import os

        _CALLS[s] = _CALLS.get(s, 0) + 1
        out = []
        if s.x < p.bound:
            out.append(("IncX", Pair(s.x + 1, s.y)))
        if s.y < p.bound:
            out.append(("IncY", Pair(s.x, s.y + 1)))
        if (_CALLS[s] % 2 == 0) != (os.getpid() != p.home):
            out.reverse()
        yield from out


@invariant("x-forgot-return", "x stays small, but the author forgot the return")
def x_forgot_return(p, s):
    s.x < 2  # noqa: B015 - the bug under test


class ForgotReturn(Counters):
    name = "forgot-return"
    invariants = (x_forgot_return,)
    default_invariants = None


class NoActions(Spec):
    """A spec whose author forgot @action: it has initial states and nothing else."""

    name = "no-actions"

    def init_states(p):
        yield Pair(0, 0)

    def inc(p, s):  # not decorated: never an action
        yield "Inc", Pair(s.x + 1, s.y)


@invariant("rung-below-top", "the ladder's top rung is never reached at position 0")
def rung_below_top(p, s):
    return not (s.x == p.rungs and s.y == 0)


class Ladder(Spec):
    """Levels of ``width`` states (x is the rung, y the position on it), each reaching two of the
    next; each expansion sleeps ``delay_us``, so a level takes a known time without using CPU.
    ``top`` makes reaching the last rung at position 0 a violation."""

    name = "ladder"
    description = "wide levels of slow states"
    parameters = (
        Param("width", 1000, "states per rung", min=1, max=100_000),
        Param("rungs", 6, "rungs", min=1, max=100),
        Param("delay_us", 0, "sleep per expanded state (microseconds)", min=0, max=1_000_000),
        Param("top", False, "check rung-below-top"),
    )
    invariants = (rung_below_top,)
    default_invariants = ()

    def init_states(p):
        for y in range(p.width):
            yield Pair(0, y)

    @action
    def climb(p, s):
        if s.x < p.rungs:
            if p.delay_us:
                time.sleep(p.delay_us / 1e6)
            yield "Up", Pair(s.x + 1, s.y)
            yield "Skip", Pair(s.x + 1, (s.y * 7 + s.x) % p.width)
