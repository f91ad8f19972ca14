"""History variables left out of ``bmc``'s encoding when no asked invariant reads them.

A history variable (Lamport's auxiliary variable; replication's ``visible``, the prefix consumers
have read) records the past and steers nothing: no action reads it. A spec declares each in
``Spec.history``, with the bool parameter that records it. Recording one can cost far more than
the protocol: on ``replication -p replicas=3 -p truncation=kip279`` the visible prefix triples the
shapes (108 to 324) and the slicing of each successor's logs at a symbolic high watermark
multiplies the relation's paths, and the unrolling of replicas=2 did not reach 9 steps in 20
minutes with it where it finds the 12-state violation in 256 s CPU without it (docs/bmc.md).

So ``bmc`` asks its question of the spec with recording off whenever no invariant asked and not
the constraint reads a recorded history field: the cone of influence of the question, the classic
reduction of hardware model checking. The other fields evolve as with recording on (no action
reads the field), so the states reachable in k steps are the same once the field is left out, and
"none within K" and the length of a shortest violation are the same answers. The trace found is
then found again on the spec as given, each step the successor whose other fields are the next
state's, and replayed there as every bmc trace is.

What is checked, not taken on trust: that no invariant asked and not the constraint reads the
field (first on the initial states, then on every state of every shape: the field holds
``WITHHELD``, which raises ``HistoryRead`` on any use), and that no action reads it with recording
off (the same; the run stops, exit 3, naming the action). What the declaration promises and is not
checked here: that recording writes only the field (``tests/test_bmc_history.py`` compares the
reachable states with and without it on small bounds). Not seen while sliced: the recording
raising on a state off the trace (on the trace the replay runs it).
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import textwrap
import types
from dataclasses import dataclass
from typing import Any, Sequence

from kafkamc.checker.watch import raise_pending_stop
from kafkamc.errors import SoundnessError, SymbolicUnsupported
from kafkamc.invariants.api import Property
from kafkamc.spec.api import Params, Spec

__all__ = ["WITHHELD", "HistoryRead", "LeftOut", "left_out", "reads", "withhold", "restore", "found_again"]


class HistoryRead(SymbolicUnsupported):
    """A function read a history field that ``bmc`` left out: an invariant or the constraint (the
    question is then asked with the field), or an action (the spec's declaration does not hold)."""


class _Withheld:
    """The value of a left-out history field: any use of it is a ``HistoryRead``. Carrying it
    along (into a successor) is not a use."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<history left out>"

    def _read(self, *_args: Any, **_kw: Any) -> Any:
        # Counted before raising: a spec's own ``except Exception`` may swallow the error, and the
        # relation then finds the read by the count (``reads``).
        _READS[0] += 1
        raise HistoryRead("reads a history field that bmc left out of the encoding")

    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = _read  # type: ignore[assignment]
    __hash__ = __bool__ = __len__ = __iter__ = __contains__ = __getitem__ = __reversed__ = _read  # type: ignore[assignment]
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __matmul__ = __rmatmul__ = _read  # type: ignore[assignment]
    __truediv__ = __rtruediv__ = __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = _read  # type: ignore[assignment]
    __divmod__ = __rdivmod__ = __pow__ = __rpow__ = __lshift__ = __rlshift__ = __rshift__ = __rrshift__ = _read  # type: ignore[assignment]
    __and__ = __rand__ = __or__ = __ror__ = __xor__ = __rxor__ = _read  # type: ignore[assignment]
    __index__ = __int__ = __float__ = __complex__ = __round__ = __trunc__ = __floor__ = __ceil__ = _read  # type: ignore[assignment]
    __neg__ = __pos__ = __abs__ = __invert__ = __str__ = __format__ = __bytes__ = _read  # type: ignore[assignment]

    def __copy__(self) -> "_Withheld":
        return self

    def __deepcopy__(self, _memo: Any) -> "_Withheld":
        return self

    def __reduce__(self) -> str:
        return "WITHHELD"

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # copy's and pickle's look-ups, not the spec's
            raise AttributeError(name)
        return self._read()


_READS = [0]
WITHHELD = _Withheld()


def reads() -> int:
    """How many uses of ``WITHHELD`` this process has seen (each raised ``HistoryRead``)."""
    return _READS[0]


@dataclass(frozen=True, slots=True)
class LeftOut:
    """The history fields left out, and the parameters as given: the invariants and the
    constraint are read under them (with recording off, ``visible-prefix-stable`` checks only the
    present and never reads the field: reading it under the changed parameters would ask another
    question)."""

    fields: tuple[str, ...]
    p: Params


def left_out(spec: Spec, props: Sequence[Property]) -> tuple[Spec, LeftOut | None]:
    """The spec to ask (recording off for each history field that is recorded and that no
    invariant of ``props`` and not the constraint reads on an initial state) and what was left out."""
    declared = type(spec).history
    if not declared:
        return spec, None
    known = {f.name for f in dataclasses.fields(_state_type(spec))}
    params = {prm.name: prm for prm in type(spec).parameters}
    fields = []
    for field, param in sorted(declared.items()):
        if field not in known or param not in params or params[param].type is not bool:
            raise SymbolicUnsupported(f"{type(spec).__name__}.history: {field!r} -> {param!r} must name a field of "
                                      "its state and a bool parameter")
        if getattr(spec.p, param):
            fields.append(field)
    if not fields:
        return spec, None
    cons = type(spec).constraint
    asked = [pr.fn for pr in props] + ([cons] if cons is not None else [])
    # Uses that raise nothing (``isinstance``, ``is``, ``type()``) are found in the source: a
    # field that the invariants' or the constraint's code names, or the functions of their
    # modules they call, stays.
    fields = [f for f in fields if not any(_names(fn, f, set()) for fn in asked)]
    if not fields:
        return spec, None
    off = type(spec)(**{**spec.p.as_dict(), **{declared[f]: False for f in fields}})
    for state in off.initial():
        hidden = withhold(state, fields)
        for fn in asked:
            before = reads()
            try:
                fn(spec.p, hidden)
            except HistoryRead:
                return spec, None
            except Exception as exc:  # noqa: BLE001 - raising on the initial state is reported by the run itself
                raise_pending_stop(exc)
            if reads() != before:  # the spec's own ``except`` took the HistoryRead
                return spec, None
    return off, LeftOut(tuple(fields), spec.p)


# Calls that read fields by a name computed at run time: a function making one may read any field.
_BY_NAME = frozenset({"getattr", "vars", "asdict", "astuple", "fields", "replace", "__dict__", "__getattribute__"})


def _names(fn: Any, field: str, seen: set[Any]) -> bool:
    """Whether ``fn``'s source, or that of a function it calls by a global name, names ``field``
    (``s.field``, ``"field"``) or reads fields by a computed name; True when the source cannot be
    read."""
    fn = inspect.unwrap(fn)
    if fn in seen:
        return False
    seen.add(fn)
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return True
    globs = getattr(fn, "__globals__", {})
    for n in ast.walk(tree):
        if isinstance(n, ast.Attribute) and (n.attr == field or n.attr in _BY_NAME):
            return True
        if isinstance(n, ast.Constant) and n.value == field:
            return True
        if isinstance(n, ast.Name):
            if n.id in _BY_NAME:
                return True
            target = globs.get(n.id)
            if isinstance(target, types.FunctionType) and _names(target, field, seen):
                return True
    return False


def _state_type(spec: Spec) -> type:
    first = spec.initial()[0]
    if not dataclasses.is_dataclass(first):
        raise SymbolicUnsupported(f"{type(spec).__name__}.history needs states that are dataclasses")
    return type(first)


def withhold(state: Any, fields: Sequence[str]) -> Any:
    """``state`` with each of ``fields`` holding ``WITHHELD``."""
    return dataclasses.replace(state, **{f: WITHHELD for f in fields})


def restore(state: Any, fields: Sequence[str], constants: dict[str, Any]) -> Any:
    """``state`` with each of ``fields`` that still holds ``WITHHELD`` given its constant again
    (the value the domain fixes with recording off)."""
    back = {f: constants[f] for f in fields if getattr(state, f) is WITHHELD}
    return dataclasses.replace(state, **back) if back else state


def found_again(spec: Spec, states: Sequence[Any], fields: Sequence[str]) -> list[Any]:
    """The trace of ``states`` (of the spec with recording off) on ``spec``: an initial state,
    then at each step the first successor (in successor order) whose other fields are the next
    state's. A step with none is a history declaration that does not hold (``SoundnessError``)."""
    if not fields:
        return list(states)
    names = [f.name for f in dataclasses.fields(states[0]) if f.name not in fields]

    def rest(s: Any) -> tuple[Any, ...]:
        return tuple(getattr(s, n) for n in names)

    out = [next((s for s in spec.initial() if rest(s) == rest(states[0])), None)]
    for nxt in states[1:]:
        if out[-1] is None:
            break
        out.append(next((t for _a, _l, t in spec.successors(out[-1]) if rest(t) == rest(nxt)), None))
    if out[-1] is None:
        raise SoundnessError(f"bmc: the trace found with the history fields {', '.join(fields)} left out is not a "
                             f"trace of {spec.name} with them recorded: {type(spec).__name__}.history does not hold")
    return out
