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
