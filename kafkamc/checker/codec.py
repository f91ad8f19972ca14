"""States as plain values (tuples, ints, frozensets) and back: the fast way to pickle them.

Pickling a slotted dataclass runs Python code per object (``_dataclass_setstate``); pickling its
fields as plain tuples runs in C, and the decoder writes the slots of a new instance in
straight-line code. The Spark engine ships states this way between tasks, and the local
engines write their frontier files this way (``frontier``). A state whose annotations do not
describe it exactly is pickled as it is.
"""

from __future__ import annotations

import dataclasses
import enum
import operator
import pickle
import types
import typing
from functools import partial
from typing import Any, Callable

__all__ = ["codec_for"]


# -- transport of states: plain tuples through marshal --------------------------------------


class _Unsupported(Exception):
    pass


_IDENTITY_LEAVES = (int, bool, str, float, bytes, type(None))


def _converter(tp: Any, seen: set) -> tuple[Callable, Callable] | None:
    """(encode, decode) turning values of annotation ``tp`` into marshal-able values and back;
    None when values already are (ints, bools, tuples and frozensets of them)."""
    if tp in _IDENTITY_LEAVES or tp is None:
        return None
    if isinstance(tp, type) and issubclass(tp, enum.IntEnum):
        members = dict(tp._value2member_map_)
        return int, (lambda v: members.get(v, v))
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        if all(_converter(a, seen) is None for a in typing.get_args(tp)):
            return None
        raise _Unsupported(tp)
    if origin is tuple or origin is frozenset:
        args = typing.get_args(tp)
        if not args:
            raise _Unsupported(tp)
        outer = tuple if origin is tuple else frozenset
        if len(args) == 2 and args[1] is Ellipsis or origin is frozenset:
            inner = _converter(args[0], seen)
            if inner is None:
                return None
            ie, id_ = inner
            return (lambda v: outer(map(ie, v))), (lambda v: outer(map(id_, v)))
        convs = [_converter(a, seen) for a in args]
        if all(c is None for c in convs):
            return None
        encs = [c[0] if c else None for c in convs]
        decs = [c[1] if c else None for c in convs]
        return (
            lambda v: tuple(x if f is None else f(x) for f, x in zip(encs, v)),
            lambda v: tuple(x if f is None else f(x) for f, x in zip(decs, v)),
        )
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if tp in seen:
            raise _Unsupported(tp)  # recursive types: leave them to pickle
        seen = seen | {tp}
        hints = typing.get_type_hints(tp)
        fields = [f.name for f in dataclasses.fields(tp)]
        if "__slots__" in tp.__dict__:
            setters = [getattr(tp, n).__set__ for n in fields]
        else:
            setters = [partial(_set_attr, n) for n in fields]
        convs = [_converter(hints.get(n, Any), seen) for n in fields]
        get = operator.attrgetter(*fields) if len(fields) > 1 else (lambda v, n=fields[0]: (getattr(v, n),))
        encs = [c[0] if c else None for c in convs]
        decs = [c[1] if c else None for c in convs]
        return (get if all(f is None for f in encs) else _tuple_map(encs, get)), _dataclass_decoder(tp, setters, decs)
    raise _Unsupported(tp)


def _set_attr(name: str, obj: Any, value: Any) -> None:
    object.__setattr__(obj, name, value)


def _tuple_map(fns: list, get: Callable[[Any], tuple]) -> Callable[[Any], tuple]:
    def enc(v: Any) -> tuple:
        return tuple(x if f is None else f(x) for f, x in zip(fns, get(v)))
    return enc


def _dataclass_decoder(tp: type, setters: list, decs: list) -> Callable[[tuple], Any]:
    """Straight-line code writing every slot of a new instance (no __init__, as pickle does)."""
    ns: dict[str, Any] = {"new": object.__new__, "tp": tp}
    lines = ["def dec(v):", "    o = new(tp)"]
    for i, (st, f) in enumerate(zip(setters, decs)):
        ns[f"s{i}"] = st
        if f is None:
            lines.append(f"    s{i}(o, v[{i}])")
        else:
            ns[f"f{i}"] = f
            lines.append(f"    s{i}(o, f{i}(v[{i}]))")
    lines.append("    return o")
    exec("\n".join(lines), ns)
    return ns["dec"]


class _Codec:
    """One state to bytes and back. Pickling a slotted dataclass runs Python code per object;
    pickling its fields as plain tuples (ints, tuples, frozensets) runs in C, and the decoder
    writes the slots of a new instance in straight-line code. States whose annotations do not
    describe them exactly are pickled as they are."""

    def __init__(self, state_type: type) -> None:
        self.state_type = state_type
        self.plain = False
        self.enc: Callable[[Any], Any] = _ident
        self.dec: Callable[[Any], Any] = _ident
        if dataclasses.is_dataclass(state_type):
            try:
                conv = _converter(state_type, set())
            except (_Unsupported, NameError, TypeError):
                conv = None
            if conv is not None:
                self.enc, self.dec = conv
                self.plain = True

    def dumps(self, state: Any) -> bytes:
        if self.plain and type(state) is self.state_type:
            return b"T" + pickle.dumps(self.enc(state), 5)
        return b"O" + pickle.dumps(state, 5)  # a state of another type: as it is

    def loads(self, data: bytes) -> Any:
        if data[0] == 84:  # b"T"
            return self.dec(pickle.loads(memoryview(data)[1:]))
        return pickle.loads(memoryview(data)[1:])

    def round_trips(self, state: Any) -> bool:
        try:
            back = self.loads(self.dumps(state))
        except Exception:
            return False
        return type(back) is type(state) and back == state and hash(back) == hash(state)


def _ident(x: Any) -> Any:
    return x


_CODECS: dict[type, _Codec] = {}


def _codec(state_type: type) -> _Codec:
    codec = _CODECS.get(state_type)
    if codec is None:
        codec = _CODECS[state_type] = _Codec(state_type)
    return codec


def codec_for(state_type: type) -> "_Codec":
    """The codec of ``state_type`` (one per type and process)."""
    return _codec(state_type)
