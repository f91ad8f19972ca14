"""Named invariants (state predicates) and action properties (transition predicates).

A property is a plain module-level function that captures nothing, so it pickles by reference and
ships to any engine. The decorators only attach a name and a one-line description; the function
itself is returned unchanged and stays callable as written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

from kafkamc.errors import SpecError, short_repr

__all__ = ["Property", "invariant", "action_property", "recoverable", "property_of", "fails"]

_KEBAB = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
_ATTR = "__kafkamc_property__"


@dataclass(frozen=True, slots=True)
class Property:
    """What the decorators attach.

    ``kind`` is "invariant" (fn(p, s)), "action" (fn(p, s, label, t)) or "recoverability"
    (fn(p, s) says whether s is a good state; the property claims AG EF good: from every reachable
    state some good state can still be reached) or "liveness" (fn() returns a temporal formula,
    see ``kafkamc.invariants.temporal``).
    """

    name: str
    description: str
    kind: str
    fn: Callable[..., bool]


def _mark(kind: str, name: str, description: str) -> Callable[[Callable[..., bool]], Callable[..., bool]]:
    if not _KEBAB.match(name):
        raise ValueError(f"property name {name!r} must be kebab-case, e.g. 'single-controller-per-epoch'")
    if not description or "\n" in description:
        raise ValueError(f"property {name!r} needs a one-line description")

    def decorate(fn: Callable[..., bool]) -> Callable[..., bool]:
        setattr(fn, _ATTR, Property(name, description, kind, fn))
        return fn

    return decorate


def invariant(name: str, description: str) -> Callable[[Callable[..., bool]], Callable[..., bool]]:
    """Declare ``fn(p, state) -> bool`` as the invariant ``name`` (true means the state is fine)."""
    return _mark("invariant", name, description)


def action_property(name: str, description: str) -> Callable[[Callable[..., bool]], Callable[..., bool]]:
    """Declare ``fn(p, state, label, next_state) -> bool`` as a property of every transition."""
    return _mark("action", name, description)


def recoverable(name: str, description: str) -> Callable[[Callable[..., bool]], Callable[..., bool]]:
    """Declare ``fn(p, state) -> bool`` as the good states of the recoverability property ``name``."""
    return _mark("recoverability", name, description)


def property_of(fn: Any) -> Property:
    """The Property a decorated function carries; TypeError for an undecorated one."""
    prop = getattr(fn, _ATTR, None)
    if not isinstance(prop, Property):
        name = getattr(fn, "__qualname__", repr(fn))
        raise TypeError(f"{name} is not decorated with @invariant, @action_property or @recoverable")
    return prop


def fails(value: Any, what: str, state: Any) -> bool:
    """Whether a property's return ``value`` other than ``True`` is a violation.

    The engines call it only when ``value is not True``, which keeps the hot loop at one identity
    test. ``False`` is a violation; numpy's bool (a comparison of numpy values) is accepted as the
    bool it stands for; anything else (``None`` from a forgotten ``return``, an int, a list) is a
    spec error naming ``what`` (e.g. "invariant x-ok") and ``state``, never a verdict.
    """
    if value is False:
        return True
    kind = type(value)
    if kind.__module__ == "numpy" and kind.__name__ in ("bool_", "bool"):
        return not bool(value)
    raise SpecError(
        f"{what} returned {short_repr(value, 60)} ({kind.__name__}), not a bool, on state {state!r}; "
        "a property must return True or False"
    )
