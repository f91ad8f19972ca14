"""Toy specs for liveness under fairness: each verdict depends on which actions are fair."""

from __future__ import annotations

from dataclasses import dataclass

from kafkamc import Param, Spec, action
from kafkamc.invariants.temporal import always_eventually, eventually, eventually_always, leads_to, liveness


@dataclass(frozen=True, slots=True)
class Spin:
    x: int
    done: bool


def is_done(p, s):
    return s.done


def x_is_zero(p, s):
    return s.x == 0


def x_is_one(p, s):
    return s.x == 1


@liveness("finishes", "the spinner eventually finishes")
def finishes():
    return eventually(is_done)


@liveness("zero-leads-to-done", "whenever x is 0 the spinner finishes later")
def zero_leads_to_done():
    return leads_to(x_is_zero, is_done)


@liveness("one-again-and-again", "x is 1 infinitely often")
def one_again_and_again():
    return always_eventually(x_is_one)


@liveness("done-for-good", "from some point on the spinner is done forever")
def done_for_good():
    return eventually_always(is_done)


class Spinner(Spec):
    """x spins 0 -> 1 -> ... -> size-1 -> 0 forever unless ``finish`` is taken; finishing stops it."""

    name = "spinner"
    description = "a counter that may loop forever unless finishing is fair"
    parameters = (Param("size", 2, "how many values x spins through", min=1, max=20),)
    liveness = (finishes, zero_leads_to_done, one_again_and_again, done_for_good)
    weak_fairness = ("spin", "finish")

    def init_states(p):
        yield Spin(0, False)

    @action
    def spin(p, s):
        if not s.done:
            yield f"Spin(x={(s.x + 1) % p.size})", Spin((s.x + 1) % p.size, False)

    @action
    def finish(p, s):
        if not s.done:
            yield "Finish", Spin(s.x, True)


@dataclass(frozen=True, slots=True)
class Lamp:
    on: bool
    done: bool


def lamp_done(p, s):
    return s.done


@liveness("lamp-finishes", "the lamp is eventually switched off for good")
def lamp_finishes():
    return eventually(lamp_done)


class Flicker(Spec):
    """A lamp toggles on and off; ``finish`` is enabled only while it is on, so only strong
    fairness of ``finish`` forces it to be taken."""

    name = "flicker"
    description = "weak versus strong fairness"
    liveness = (lamp_finishes,)
    weak_fairness = ("toggle",)
    strong_fairness = ("finish",)

    def init_states(p):
        yield Lamp(False, False)

    @action
    def toggle(p, s):
        if not s.done:
            yield "Toggle", Lamp(not s.on, False)

    @action
    def finish(p, s):
        if s.on and not s.done:
            yield "Finish", Lamp(True, True)


def explodes(p, s):
    if s.on:
        raise ZeroDivisionError("boom")
    return False


@liveness("explodes", "a predicate that raises once the lamp is on")
def explodes_eventually():
    return eventually(explodes)


class BrokenLamp(Flicker):
    name = "broken-lamp"
    liveness = (explodes_eventually,)


@dataclass(frozen=True, slots=True)
class XJ:
    x: int
    j: int


def at_seven(p, s):
    return s.x == 7


def at_nine(p, s):
    return s.x == 9


@liveness("seven-leads-to-nine", "x = 7 is followed by x = 9 (never)")
def seven_leads_to_nine():
    return leads_to(at_seven, at_nine)


class Shuffled(Spec):
    """States with one view (x) whose successors come in different orders: a lasso must be rebuilt
    from the states actually reached, not from the successor indices of the first one found."""

    name = "shuffled"
    liveness = (seven_leads_to_nine,)
    weak_fairness = ("go", "alt")

    def init_states(p):
        yield XJ(0, 0)

    @action
    def go(p, s):
        if s.x == 0:
            yield "Go", XJ(1, s.j)
        elif s.x == 1 and s.j == 0:
            yield "Back", XJ(0, 1)
            yield "Sink", XJ(5, 0)
        elif s.x == 1:
            yield "Sink", XJ(5, 1)
            yield "Back", XJ(0, 0)

    @action
    def alt(p, s):
        if s.x == 0:
            yield "Alt", XJ(7, s.j)
        elif s.x == 7:
            yield "Alt", XJ(1, 1 - s.j)

    def view(p, s) -> int:
        return s.x
