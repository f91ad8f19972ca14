"""Stable 64-bit state fingerprints, identical in every process and on every machine.

CPython hashes ints, bools, tuples, frozensets and frozen dataclasses of them with fixed
algorithms (no per-process salt), so for such values ``hash()`` is a deterministic fingerprint
that costs one C call. Strings and bytes are salted per process, and on Python 3.11 ``None`` and
plain ``Enum`` members hash by address, so a state type that may hold them takes the canonical
path: every such leaf is replaced by a deterministic integer (blake2b of its text) before hashing.

Which path a spec takes is decided from the state type's annotations, never guessed from values;
early states are then walked in full to catch a value that contradicts its annotation.

CPython's int hash is not injective: ``hash(-1) == hash(-2)`` (-1 is reserved for errors) and
ints are reduced modulo 2**61 - 1. On the fast path that would merge two states that differ only
there, so the fast path admits only ints in [-1, 2**61 - 2] (the early-state walk enforces it and
a spec can opt out with ``fingerprint = "canonical"``); the canonical path maps every int outside
that range through blake2b.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import types
import typing
from typing import Any, Callable

from kafkamc.errors import UsageError

__all__ = ["MASK64", "Fingerprinter", "canonical", "is_hash_stable_type"]

MASK64 = (1 << 64) - 1
_TEXT_CACHE: dict[Any, int] = {}


def _text_int(tag: str, text: str) -> int:
    digest = hashlib.blake2b(f"{tag}:{text}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little", signed=True)


_INT_LO, _INT_HI = -1, (1 << 61) - 2


def canonical(value: Any) -> Any:
    """A value equal in structure to ``value`` whose ``hash()`` is process-independent and injective
    on ints (up to 64-bit collisions)."""
    kind = type(value)
    if kind is bool:
        return value
    if kind is int or isinstance(value, enum.IntEnum):
        if 0 <= value <= _INT_HI:
            return int(value)
        out = _TEXT_CACHE.get(("i", value))
        if out is None:
            out = _TEXT_CACHE[("i", value)] = _text_int("i", str(int(value)))
        return out
    if kind is tuple:
        return tuple(map(canonical, value))
    if kind is frozenset:
        return frozenset(map(canonical, value))
    if kind is str:
        out = _TEXT_CACHE.get(value)
        if out is None:
            out = _TEXT_CACHE[value] = _text_int("s", value)
        return out
    if value is None:
        return -0x6E6F6E65  # "none": a fixed constant instead of an address-based hash
    if isinstance(value, enum.Enum):
        key = (kind, value)
        out = _TEXT_CACHE.get(key)
        if out is None:
            out = _TEXT_CACHE[key] = _text_int("e", f"{kind.__qualname__}.{value.name}")
        return out
    if dataclasses.is_dataclass(value):
        return tuple(canonical(getattr(value, f.name)) for f in dataclasses.fields(value))
    if kind is bytes:
        return _text_int("b", value.hex())
    raise UsageError(
        f"state value {value!r} of type {kind.__name__} is not allowed in a state; allowed: int, bool, "
        "str, tuple, frozenset, IntEnum, frozen dataclasses of these"
    )


_STABLE_LEAVES = (int, bool)


def is_hash_stable_type(tp: Any, _seen: set[Any] | None = None) -> bool:
    """True when every value the annotation ``tp`` admits hashes identically in every process."""
    seen = _seen if _seen is not None else set()
    if tp in _STABLE_LEAVES:
        return True
    if isinstance(tp, type) and issubclass(tp, enum.IntEnum):
        return True
    origin = typing.get_origin(tp)
    if origin in (tuple, frozenset):
        args = [a for a in typing.get_args(tp) if a is not Ellipsis]
        return bool(args) and all(is_hash_stable_type(a, seen) for a in args)
    if origin in (typing.Union, types.UnionType):
        return all(is_hash_stable_type(a, seen) for a in typing.get_args(tp))
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if tp in seen:
            return True
        seen.add(tp)
        params = getattr(tp, "__dataclass_params__", None)
        if params is None or not params.frozen:
            return False
        try:
            hints = typing.get_type_hints(tp)
        except Exception:
            return False
        return all(is_hash_stable_type(hints.get(f.name, Any), seen) for f in dataclasses.fields(tp))
    return False


def _validate_stable(value: Any, path: str) -> None:
    """Raise if ``value`` holds anything whose hash is salted or address-based."""
    kind = type(value)
    if kind is bool:
        return
    if kind is int or isinstance(value, enum.IntEnum):
        if not _INT_LO <= value <= _INT_HI:
            raise UsageError(
                f"state field {path} holds the int {int(value)}, outside [-1, 2**61-2] where CPython's hash "
                "is injective (hash(-1) == hash(-2)); set fingerprint = \"canonical\" on the spec class"
            )
        return
    if kind is tuple or kind is frozenset:
        for i, item in enumerate(value if kind is tuple else sorted(value, key=repr)):
            _validate_stable(item, f"{path}[{i}]")
        return
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            _validate_stable(getattr(value, f.name), f"{path}.{f.name}")
        return
    raise UsageError(
        f"state field {path} holds {value!r} ({kind.__name__}) but its annotation promises only ints, "
        "bools, tuples, frozensets, IntEnums and frozen dataclasses; fix the annotation or the value"
    )


class Fingerprinter:
    """Maps a state (after the view, if the spec has one) to an unsigned 64-bit fingerprint."""

    VALIDATE_FIRST = 2000

    def __init__(self, state_type: type, view: Callable[[Any, Any], Any] | None = None,
                 mode: str = "auto") -> None:
        if mode not in ("auto", "canonical"):
            raise UsageError(f"fingerprint mode {mode!r} is not allowed; allowed: auto, canonical")
        if mode == "canonical":
            self.fast = False
        elif view is not None:
            hints = typing.get_type_hints(view) if callable(view) else {}
            self.fast = "return" in hints and is_hash_stable_type(hints["return"])
        else:
            self.fast = is_hash_stable_type(state_type)
        self.state_type = state_type
        self._to_validate = self.VALIDATE_FIRST if self.fast else 0

    def __call__(self, value: Any) -> int:
        if self.fast:
            return hash(value) & MASK64
        return hash(canonical(value)) & MASK64

    def check(self, value: Any) -> None:
        """Deep-check an early state against the fast path's promise (a no-op after a while)."""
        if self._to_validate > 0:
            self._to_validate -= 1
            _validate_stable(value, "state")

    @property
    def validating(self) -> bool:
        return self._to_validate > 0

    @property
    def validate_left(self) -> int:
        """How many more states check() deep-checks (a checkpoint keeps it, so a resumed run
        checks the same states as an uninterrupted one)."""
        return self._to_validate

    @validate_left.setter
    def validate_left(self, left: int) -> None:
        self._to_validate = left if self.fast else 0
