"""What the symbolic executor refuses to run: global mutable state, global writes, randomness, clocks.

A path's formula is only the truth if the function depends on nothing but its arguments. Every
Python function entered during a symbolic exploration is inspected once (``sys.setprofile``): a
read of a module global bound to a mutable object (a list, dict, set, or an instance of a class that
is not a frozen dataclass), a ``global`` write, a call into ``random``/``secrets``/``uuid`` or a
clock raises ``SymbolicUnsupported`` naming it. Standard-library and Z3 code is trusted; this is a
guard on spec code, not a sandbox.
"""

from __future__ import annotations

import builtins
import dataclasses
import dis
import enum
import os
import sys
import sysconfig
import types
from typing import Any

from kafkamc.checker.symbolic.context import unsupported
from kafkamc.checker.symbolic.values import SymBool, SymInt

__all__ = ["guarded"]

_TRUSTED = tuple(
    os.path.abspath(p) + os.sep for p in {
        sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["platstdlib"],
        os.path.dirname(os.path.abspath(__file__)),
        # The prover drives the exploration from inside the guard; it is not spec code.
        os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "prover"),
    }
) + (
    # The engines' signal handler (Ctrl-C, SIGTERM) runs inside whatever frame it interrupts; its
    # bookkeeping is not spec code, and the stop it raises must end the run as interrupted.
    os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "watch.py"),
)
_Z3 = os.sep + "z3" + os.sep
_NONDETERMINISTIC_MODULES = {"random", "_random", "secrets", "uuid", "time", "datetime", "_datetime", "os", "posix"}
_IMMUTABLE = (
    int, float, complex, str, bytes, bool, type(None), type(Ellipsis), range, type, types.ModuleType,
    types.FunctionType, staticmethod, classmethod, property, enum.Enum, SymInt, SymBool,
    # A class's slot descriptor (``Cls.field``): ``Cls.field.__set__`` writes the slot of the
    # object it is given, it holds no state of its own.
    types.MemberDescriptorType, types.GetSetDescriptorType,
)
_verdicts: dict[types.CodeType, tuple[bool, str | None]] = {}


def _immutable(value: Any, depth: int = 0) -> bool:
    if isinstance(value, _IMMUTABLE):
        return True
    if isinstance(value, (types.BuiltinFunctionType, types.MethodType, types.MethodWrapperType)):
        # A bound method carries its object: ``append = _log.append`` is as mutable as ``_log``.
        owner = getattr(value, "__self__", None)
        return owner is None or isinstance(owner, (types.ModuleType, type)) or _immutable(owner, depth + 1)
    if depth > 4:
        return False
    if isinstance(value, (tuple, frozenset)):
        return all(_immutable(v, depth + 1) for v in value)
    params = getattr(type(value), "__dataclass_params__", None)
    if params is not None and params.frozen:
        return all(_immutable(getattr(value, f.name), depth + 1) for f in dataclasses.fields(value))
    return False


def _inspect(code: types.CodeType, globs: dict[str, Any]) -> str | None:
    """Why ``code`` cannot run symbolically, or None."""
    for ins in dis.get_instructions(code):
        if ins.opname in ("STORE_GLOBAL", "DELETE_GLOBAL"):
            return f"a write to the global {ins.argval!r}"
        if ins.opname == "LOAD_GLOBAL":
            name = ins.argval
            if name in globs:
                value = globs[name]
            elif hasattr(builtins, name):
                continue
            else:
                continue  # a NameError at run time, reported as such
            if not _immutable(value):
                return f"a read of the mutable global {name!r} ({type(value).__name__})"
    return None


def _verdict(frame: types.FrameType) -> tuple[bool, str | None]:
    """(trusted, why not runnable) for the code of ``frame``, computed once per code object."""
    code = frame.f_code
    known = _verdicts.get(code)
    if known is None:
        name = frame.f_globals.get("__name__", "")
        filename = os.path.abspath(code.co_filename)
        trusted = filename.startswith(_TRUSTED) or _Z3 in filename or code.co_filename.startswith("<")
        if name.split(".")[0] in _NONDETERMINISTIC_MODULES:
            known = (trusted, f"a call of {name}.{code.co_name} (randomness or a clock)")
        else:
            known = (trusted, None if trusted else _inspect(code, frame.f_globals))
        _verdicts[code] = known
    return known


def _profile(frame: types.FrameType, event: str, arg: Any) -> None:
    if event == "call":
        why = _verdict(frame)[1]
        if why is not None:
            raise unsupported(why)
    elif event == "c_call" and not _verdict(frame)[0]:
        owner = getattr(arg, "__module__", None) or type(getattr(arg, "__self__", None)).__module__
        if owner in _NONDETERMINISTIC_MODULES:
            raise unsupported(f"a call of {owner}.{getattr(arg, '__name__', '?')} (randomness, a clock or the OS)")


class guarded:
    """``with guarded():`` inspects every function that runs inside (nests; restores the old hook)."""

    __slots__ = ("_old",)

    def __enter__(self) -> None:
        self._old = sys.getprofile()
        sys.setprofile(_profile)

    def __exit__(self, *exc: Any) -> None:
        sys.setprofile(self._old)
