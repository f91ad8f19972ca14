"""Specs that are wrong in the ways a new user gets them wrong (tests/test_spec_loading.py)."""

from __future__ import annotations

from kafkamc import Spec, action, invariant


def plain_invariant(p, s):
    return True


@invariant("small", "the counter stays small")
def small(p, s):
    return s < 100


class YieldsBareState(Spec):
    """Forgets the label: ``yield s + 1``."""

    invariants = (small,)

    def init_states(p):
        yield 0

    @action
    def inc(p, s):
        if s < 3:
            yield s + 1


class ReturnsTuple(Spec):
    """Returns one pair instead of yielding it."""

    def init_states(p):
        yield 0

    @action
    def inc(p, s):
        if s < 3:
            return ("Inc", s + 1)
        return ()


class ReturnsNone(Spec):
    """Neither yields nor returns."""

    def init_states(p):
        yield 0

    @action
    def inc(p, s):
        s + 1


class UndecoratedInvariant(Spec):
    invariants = (small, plain_invariant)

    def init_states(p):
        yield 0


class NoInitStates(Spec):
    @action
    def inc(p, s):
        yield "Inc", s + 1


class ValidateRaises(Spec):
    def init_states(p):
        yield 0

    def validate_params(self, p):
        raise ValueError("brokers must exceed replicas")


class WideThenBare(Spec):
    """Level 2 holds 3,000 states (enough for the multicore engine to fork), whose successors
    are bare states: the malformed action is found inside a worker."""

    def init_states(p):
        yield 0

    @action
    def spread(p, s):
        if s == 0:
            for i in range(1, 3001):
                yield ("Spread", i), i

    @action
    def bare(p, s):
        if 0 < s <= 3000:
            yield s + 10_000


HOSTILE = "\x1b]0;pwned\x07\x1b[2J\x1b[31mred\x1b[0m\nok: every reachable state satisfies everything\r\x00\u202e\ud800"


class HostileLabels(Spec):
    """Labels and parameter values with ANSI escapes, a newline that fakes a verdict, NUL, a
    bidirectional override and a lone surrogate."""

    parameters = (__import__("kafkamc").Param("tag", "t", "a free string"),)
    invariants = (small,)

    def init_states(p):
        yield 0

    @action
    def step(p, s):
        if s < 200:
            yield f"Step({HOSTILE}{p.tag})", s + 100


class HostileRaise(Spec):
    def init_states(p):
        yield 0

    @action
    def step(p, s):
        raise ValueError(f"bad {HOSTILE}")
