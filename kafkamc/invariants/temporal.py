"""Temporal (liveness) properties: four forms over state predicates, and the ``@liveness`` decorator.

A state predicate is a plain module-level function ``(p, state) -> bool``, as an invariant is. A
liveness property combines predicates with one of four constructors (TLA+ notation in brackets):

- ``eventually(P)``          (<>P): every behaviour reaches a P state;
- ``leads_to(P, Q)``         (P ~> Q, i.e. [](P => <>Q)): after every P state a Q state follows
  (the P state itself counts);
- ``always_eventually(P)``   ([]<>P): P holds again and again, forever;
- ``eventually_always(P)``   (<>[]P): from some point on P holds forever.

``@liveness("kebab-name", "one-line description")`` decorates a function of no arguments that
returns the formula, so the name and description sit beside the invariants and the function is
listed on the spec class (``liveness = (...)``):

    @liveness("controller-eventually-elected", "a working controller is eventually elected")
    def controller_eventually_elected():
        return eventually(controller_working)

Behaviours are judged under the spec's fairness (``kafkamc.checker.liveness``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from kafkamc.invariants.api import Property, _mark

__all__ = [
    "Temporal", "FORMS", "eventually", "leads_to", "always_eventually", "eventually_always", "liveness",
    "formula_of",
]

Predicate = Callable[[Any, Any], bool]

FORMS = ("eventually", "leads_to", "always_eventually", "eventually_always")
_SHOWN = {"eventually": "<>{p}", "leads_to": "{p} ~> {q}", "always_eventually": "[]<>{p}",
          "eventually_always": "<>[]{p}"}


@dataclass(frozen=True, slots=True)
class Temporal:
    """One of the four forms over the predicates ``p`` (and ``q`` for ``leads_to``)."""

    form: str
    p: Predicate
    q: Predicate | None = None

    def __str__(self) -> str:
        return _SHOWN[self.form].format(p=_name(self.p), q=_name(self.q) if self.q is not None else "")


def _name(fn: Any) -> str:
    return getattr(fn, "__name__", repr(fn))


def _predicate(fn: Any, role: str) -> Predicate:
    if not callable(fn):
        raise TypeError(f"{role} must be a state predicate (p, state) -> bool, not {fn!r}")
    return fn


def eventually(p: Predicate) -> Temporal:
    """<>P: every fair behaviour reaches a state satisfying P."""
    return Temporal("eventually", _predicate(p, "eventually(P)"))


def leads_to(p: Predicate, q: Predicate) -> Temporal:
    """P ~> Q: whenever P holds, Q holds then or later."""
    return Temporal("leads_to", _predicate(p, "leads_to(P, Q): P"), _predicate(q, "leads_to(P, Q): Q"))


def always_eventually(p: Predicate) -> Temporal:
    """[]<>P: P holds infinitely often."""
    return Temporal("always_eventually", _predicate(p, "always_eventually(P)"))


def eventually_always(p: Predicate) -> Temporal:
    """<>[]P: P holds from some point on, forever."""
    return Temporal("eventually_always", _predicate(p, "eventually_always(P)"))


def liveness(name: str, description: str) -> Callable[[Callable[[], Temporal]], Callable[[], Temporal]]:
    """Declare ``fn() -> Temporal`` as the liveness property ``name`` (checked with ``-l NAME``)."""
    return _mark("liveness", name, description)


def formula_of(prop: Property) -> Temporal:
    """The formula of a liveness property; TypeError when the function returns something else."""
    if prop.kind != "liveness":
        raise TypeError(f"{prop.name} is an {prop.kind}, not a liveness property")
    formula = prop.fn()
    if not isinstance(formula, Temporal):
        raise TypeError(f"liveness property {prop.name} must return eventually(...), leads_to(...), "
                        f"always_eventually(...) or eventually_always(...), not {formula!r}")
    return formula

