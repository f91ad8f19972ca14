"""The Spec API: parameters, initial states, actions and optional hooks.

A spec is a class. Its parameters are declared as ``Param`` values; an instance of the class is the
spec bound to resolved parameter values (``spec.p``). Actions are plain functions of
``(p, state)`` marked with ``@action``; each yields ``(label, next_state)`` pairs, several for
nondeterminism, in a deterministic order. Properties live beside the spec (see
``kafkamc.invariants``) and are listed on the class.

The engine identifies a transition by its successor index: the position of the successor in the
concatenation, in declaration order, of what every action yields for the state. Traces are stored
as such index paths and rebuilt by replay, so initial states and successors must come out in the
same order on every run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Iterable, Iterator

from kafkamc.errors import MalformedSpec, SpecRaised, UsageError
from kafkamc.invariants.api import Property, property_of

__all__ = ["Param", "Params", "Spec", "Action", "action", "format_label", "malformed_successors", "action_failure"]

Value = int | bool | str
_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}


@dataclass(frozen=True, slots=True)
class Param:
    """One parameter: its type is the type of ``default`` (int, bool or str)."""

    name: str
    default: Value
    help: str
    choices: tuple[Value, ...] | None = None
    min: int | None = None
    max: int | None = None
    # Only bounds a counter, so ``kafkamc prove`` may treat it as symbolic: the proof then covers
    # every value >= min at once (an int parameter only).
    lift: bool = False

    def __post_init__(self) -> None:
        if self.lift and type(self.default) is not int:
            raise ValueError(f"parameter {self.name}: only an int parameter can be lifted")

    @property
    def type(self) -> type:
        return type(self.default)

    def allowed(self) -> str:
        """Human-readable allowed values, used in every error about this parameter."""
        if self.choices is not None:
            return ", ".join(str(c).lower() if isinstance(c, bool) else str(c) for c in self.choices)
        if self.type is bool:
            return "true, false"
        if self.type is int:
            lo = "" if self.min is None else str(self.min)
            hi = "" if self.max is None else str(self.max)
            return f"an integer in {lo}..{hi}" if (lo or hi) else "an integer"
        return "a string"

    def parse(self, text: str) -> Value:
        """Parse a ``-p NAME=VALUE`` value, raising UsageError naming what is allowed."""
        if self.type is bool:
            low = text.strip().lower()
            if low in _TRUE:
                value: Value = True
            elif low in _FALSE:
                value = False
            else:
                raise UsageError(f"parameter {self.name}={text!r} is not a boolean; allowed: {self.allowed()}")
        elif self.type is int:
            try:
                value = int(text.strip())
            except ValueError:
                raise UsageError(
                    f"parameter {self.name}={text!r} is not an integer; allowed: {self.allowed()}"
                ) from None
        else:
            value = text
        return self.validate(value)

    def validate(self, value: Any) -> Value:
        if self.type is int and (isinstance(value, bool) or not isinstance(value, int)):
            raise UsageError(f"parameter {self.name}={value!r} is not an integer; allowed: {self.allowed()}")
        if self.type is not int and not isinstance(value, self.type):
            raise UsageError(f"parameter {self.name}={value!r} has the wrong type; allowed: {self.allowed()}")
        if self.choices is not None and value not in self.choices:
            raise UsageError(f"parameter {self.name}={value!r} is not allowed; allowed: {self.allowed()}")
        if self.type is int and (
            (self.min is not None and value < self.min) or (self.max is not None and value > self.max)
        ):
            raise UsageError(f"parameter {self.name}={value} is out of range; allowed: {self.allowed()}")
        return value


class Params:
    """Resolved parameter values with attribute access (``p.brokers``); immutable and picklable."""

    def __init__(self, values: dict[str, Value]) -> None:
        self.__dict__.update(values)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Params are immutable")

    def as_dict(self) -> dict[str, Value]:
        return dict(self.__dict__)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Params) and self.__dict__ == other.__dict__

    def __hash__(self) -> int:
        return hash(tuple(sorted((k, v) for k, v in self.__dict__.items() if not isinstance(v, str))))

    def __repr__(self) -> str:
        return "Params(" + ", ".join(f"{k}={v!r}" for k, v in self.__dict__.items()) + ")"

    def __reduce__(self) -> tuple[Any, ...]:
        return (Params, (dict(self.__dict__),))


@dataclass(frozen=True, slots=True)
class Action:
    """An action as the engine sees it: a name and ``fn(p, state) -> Iterable[(label, state)]``."""

    name: str
    fn: Callable[[Params, Any], Iterable[tuple[Any, Any]]]


_ACTION_ATTR = "__kafkamc_action__"


def action(fn: Callable[[Params, Any], Iterable[tuple[Any, Any]]]) -> Any:
    """Mark ``fn(p, state)`` in a Spec class body as an action.

    The function yields ``(label, next_state)``. A label is a string, e.g.
    ``f"BecomeLeader(r{r}, epoch={e})"``, or a tuple of arguments that is formatted lazily as
    ``FunctionName(a, b)``, which keeps the hot loop free of string formatting.
    """
    setattr(fn, _ACTION_ATTR, fn.__name__)
    return staticmethod(fn)


def format_label(action_name: str, label: Any) -> str:
    """The readable label of a transition, as traces show it."""
    if isinstance(label, str):
        return label
    if isinstance(label, tuple):
        return f"{action_name}({', '.join(str(a) for a in label)})"
    return f"{action_name}({label})"


def malformed_successors(produced: Any) -> str | None:
    """What is wrong with an action's result, or None if it is an iterable of 2-item pairs.

    Only run once something failed: the engines' loops unpack the pairs without looking.
    """
    try:
        items = iter(produced)
    except TypeError:
        return (f"returned {_short(produced)} instead of yielding (label, next_state) pairs "
                "(an action is a generator: use yield)")
    for item in items:
        if isinstance(item, (tuple, list)) and len(item) == 2:
            continue
        if isinstance(item, str):
            return (f"yielded the string {_short(item)} instead of a (label, next_state) pair "
                    "(did it return a tuple instead of yielding one?)")
        if isinstance(item, (tuple, list)):
            return f"yielded a {type(item).__name__} of {len(item)} items instead of a (label, next_state) pair"
        return f"yielded {_short(item)} instead of a (label, next_state) pair (a bare state needs its label)"
    return None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def action_failure(name: str, fn: Callable[..., Any], p: Any, state: Any, exc: BaseException) -> SpecRaised:
    """The error to report for action ``name``, which failed on ``state`` with ``exc``: its
    malformed output if that is what went wrong (it is pure, so it is run again), else ``exc``."""
    try:
        problem = malformed_successors(fn(p, state))
    except Exception as again:
        return SpecRaised(f"action {name}", state, again)
    if problem is not None:
        return SpecRaised(f"action {name}", state, MalformedSpec(problem))
    return SpecRaised(f"action {name}", state, exc)


_NAME = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")


class Spec:
    """Base class of every spec. Subclasses set the class attributes and define the functions.

    Class attributes:
      name: the spec's name on the command line (kebab-case); defaults to the class name lowered.
      description: one line for ``kafkamc list``.
      parameters: tuple of Param.
      invariants: tuple of functions decorated with @invariant or @action_property.
      default_invariants: names checked when the user names none (default: every state invariant).
      fingerprint: "auto" (default: CPython's unsalted hash when the state annotations allow it) or
        "canonical" (always canonicalise first: needed when states hold ints below -1 or >= 2**61-1).
      entities: optional mapping from an entity kind to the per-entity state fields, e.g.
        ``{"replica": ("logs", "hw", "leader_epoch", "leader", "isr")}``: tuples indexed by entity
        that the trace viewer draws as one swim lane per entity (inferred when absent).
      recoverability: tuple of functions decorated with @recoverable (AG EF good-state properties,
        checked on the state graph with ``kafkamc check -r NAME``).
      liveness: tuple of functions decorated with @liveness (temporal properties, checked on the
        state graph under fairness with ``kafkamc check -l NAME``).
      history: history variables (Lamport's auxiliary variables), as {field: the bool parameter
        that records it}: fields no action reads, which with the parameter false keep their initial
        value while every other field evolves as with it true. ``bmc`` leaves such a field out
        when no invariant asked reads it (kafkamc/prover/history.py; an action or invariant that
        does read it is found and reported).
      weak_fairness, strong_fairness: names of the actions assumed weakly / strongly fair (TLA+'s
        WF_vars(A) / SF_vars(A)); a run may override them (``--fair``, ``--strong-fair``,
        ``--no-fairness``).

    Functions (all take the resolved parameters ``p`` first; none may do I/O or use randomness):
      init_states(p) -> iterable of states (required)
      @action functions (p, state) -> iterable of (label, next_state)
      constraint(p, state) -> bool: a state outside it is checked but not expanded (optional)
      symmetry(p, state) -> state: canonical representative, used only with --symmetry (optional)
      view(p, state) -> value: the projection that is fingerprinted (optional)
      domain(p) -> kafkamc.spec.domain.Domain: the type of every state (TypeOK), needed only by
        ``kafkamc prove``; ``p`` holds symbolic values for the lifted parameters (optional)
    """

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    parameters: ClassVar[tuple[Param, ...]] = ()
    invariants: ClassVar[tuple[Callable[..., bool], ...]] = ()
    default_invariants: ClassVar[tuple[str, ...] | None] = None
    recoverability: ClassVar[tuple[Callable[..., bool], ...]] = ()
    liveness: ClassVar[tuple[Callable[..., Any], ...]] = ()
    weak_fairness: ClassVar[tuple[str, ...]] = ()
    strong_fairness: ClassVar[tuple[str, ...]] = ()
    entities: ClassVar[dict[str, tuple[str, ...]] | None] = None
    fingerprint: ClassVar[str] = "auto"
    constraint: ClassVar[Callable[[Params, Any], bool] | None] = None
    symmetry: ClassVar[Callable[[Params, Any], Any] | None] = None
    view: ClassVar[Callable[[Params, Any], Any] | None] = None
    domain: ClassVar[Callable[[Params], Any] | None] = None
    history: ClassVar[dict[str, str]] = {}

    _actions: ClassVar[tuple[Action, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if not cls.__dict__.get("name"):
            cls.name = re.sub(r"(?<!^)(?=[A-Z])", "-", cls.__name__).lower()
        found: list[Action] = []
        seen: set[str] = set()
        for klass in reversed(cls.__mro__):
            for attr, value in vars(klass).items():
                fn = value.__func__ if isinstance(value, staticmethod) else None
                if fn is not None and hasattr(fn, _ACTION_ATTR):
                    if attr in seen:
                        found = [a for a in found if a.name != attr]
                    seen.add(attr)
                    found.append(Action(attr, fn))
        cls._actions = tuple(found)
        for hook in ("init_states", "constraint", "symmetry", "view", "domain"):
            value = cls.__dict__.get(hook)
            if callable(value) and not isinstance(value, staticmethod):
                # Hooks take (p, ...) like actions, never self.
                setattr(cls, hook, staticmethod(value))

    def __init__(self, **values: Value) -> None:
        known = {prm.name: prm for prm in self.parameters}
        for key in values:
            if key not in known:
                allowed = ", ".join(known) or "none"
                raise UsageError(f"unknown parameter {key!r} for spec {self.name}; allowed: {allowed}")
        resolved: dict[str, Value] = {}
        for prm in self.parameters:
            resolved[prm.name] = prm.validate(values[prm.name]) if prm.name in values else prm.default
        self.p = Params(resolved)
        self.validate_params(self.p)

    def validate_params(self, p: Params) -> None:
        """Cross-parameter checks; raise UsageError. Override when parameters constrain each other."""

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), self.p.as_dict()))

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.p.as_dict().items())
        return f"{type(self).__name__}({args})"

    # -- what engines use -------------------------------------------------------------------

    @staticmethod
    def init_states(p: Params) -> Iterable[Any]:
        raise NotImplementedError("a spec must define init_states(p)")

    @classmethod
    def actions(cls) -> tuple[Action, ...]:
        return cls._actions

    @classmethod
    def properties(cls) -> tuple[Property, ...]:
        return tuple(property_of(fn) for fn in cls.invariants)

    @classmethod
    def property_named(cls, name: str) -> Property:
        for prop in cls.properties():
            if prop.name == name:
                return prop
        allowed = ", ".join(p.name for p in cls.properties()) or "none"
        raise UsageError(f"unknown invariant {name!r} for spec {cls.name}; allowed: {allowed}, all")

    @classmethod
    def recoverability_properties(cls) -> tuple[Property, ...]:
        return tuple(property_of(fn) for fn in cls.recoverability)

    @classmethod
    def recoverability_named(cls, name: str) -> Property:
        for prop in cls.recoverability_properties():
            if prop.name == name:
                return prop
        allowed = ", ".join(p.name for p in cls.recoverability_properties()) or "none"
        raise UsageError(f"unknown recoverability property {name!r} for spec {cls.name}; allowed: {allowed}")

    @classmethod
    def liveness_properties(cls) -> tuple[Property, ...]:
        return tuple(property_of(fn) for fn in cls.liveness)

    @classmethod
    def liveness_named(cls, name: str) -> Property:
        for prop in cls.liveness_properties():
            if prop.name == name:
                return prop
        allowed = ", ".join(p.name for p in cls.liveness_properties()) or "none"
        raise UsageError(f"unknown liveness property {name!r} for spec {cls.name}; allowed: {allowed}"
                         + (", all" if cls.liveness else ""))

    @classmethod
    def default_properties(cls) -> tuple[Property, ...]:
        if cls.default_invariants is None:
            return tuple(p for p in cls.properties() if p.kind == "invariant")
        return tuple(cls.property_named(n) for n in cls.default_invariants)

    def initial(self) -> list[Any]:
        """The initial states in order; a spec that raises or yields none is reported, not crashed on."""
        try:
            states = list(self.init_states(self.p))
        except Exception as exc:
            raise SpecRaised(f"{type(self).__name__}.init_states", None, exc) from exc
        if not states:
            raise UsageError(f"spec {self.name} has no initial states with parameters {self.p.as_dict()}")
        return states

    def successors(self, state: Any) -> Iterator[tuple[Action, Any, Any]]:
        """Every (action, label, next_state) of ``state``, in successor-index order."""
        p = self.p
        for act in self._actions:
            for label, nxt in act.fn(p, state):
                yield act, label, nxt


def _rebuild(cls: type[Spec], values: dict[str, Value]) -> Spec:
    return cls(**values)
