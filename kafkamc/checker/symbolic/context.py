"""Who is executing symbolically right now, and how an unsupported construct is reported.

Symbolic values call back into the explorer that is running them (a ``__bool__`` forks the path),
so the explorer in charge is process-global state, set only by ``Explorer.run`` and restored on
exit (explorations nest: an invariant is explored inside an action's path).
"""

from __future__ import annotations

import os
import sys
import sysconfig
from typing import Any

from kafkamc.errors import SymbolicUnsupported

__all__ = ["current", "activate", "isolated", "unsupported", "user_location", "PLACEHOLDER"]

# What str()/format() of a symbolic value gives inside an action (labels only, see values.py).
PLACEHOLDER = "\u27e8sym\u27e9"

_HERE = os.path.dirname(os.path.abspath(__file__))
_Z3_MARK = os.sep + "z3" + os.sep
_STDLIB = tuple({os.path.abspath(sysconfig.get_paths()[k]) + os.sep for k in ("stdlib", "platstdlib")})

_current: list[Any] = []


def current() -> Any:
    """The innermost running explorer; a symbolic value used outside any exploration is a bug."""
    if not _current:
        raise SymbolicUnsupported("a symbolic value was used outside a symbolic exploration")
    return _current[-1]


class activate:
    """``with activate(explorer):`` makes ``explorer`` the one symbolic values report to."""

    __slots__ = ("explorer",)

    def __init__(self, explorer: Any) -> None:
        self.explorer = explorer

    def __enter__(self) -> Any:
        _current.append(self.explorer)
        return self.explorer

    def __exit__(self, *exc: Any) -> None:
        _current.pop()


class isolated:
    """``with isolated():`` runs a nested exploration that is not part of the running ones: an
    unsupported construct inside it is recorded on its own explorers only, so that the caller can
    catch it and fall back to another way (``prove`` computing a predicate on a skeleton)."""

    __slots__ = ("_saved",)

    def __enter__(self) -> None:
        self._saved = _current[:]
        del _current[:]

    def __exit__(self, *exc: Any) -> None:
        _current[:] = self._saved


def user_location(skip: int = 1) -> str:
    """``function (file:line)`` of the innermost frame that is spec code, not this package or z3."""
    frame = sys._getframe(skip)
    while frame is not None:
        filename = os.path.abspath(frame.f_code.co_filename)
        if (not filename.startswith(_HERE) and not filename.startswith(_STDLIB) and _Z3_MARK not in filename
                and not frame.f_code.co_filename.startswith("<")):
            return f"{frame.f_code.co_qualname} ({os.path.basename(filename)}:{frame.f_lineno})"
        frame = frame.f_back
    return "an unknown function"


def unsupported(construct: str) -> SymbolicUnsupported:
    """The error for ``construct`` at the spec line executing it, also recorded on the explorer so
    that a spec's ``except Exception`` cannot swallow it."""
    err = SymbolicUnsupported(f"cannot execute symbolically: {construct} in {user_location(2)}")
    for explorer in _current:
        if explorer.fatal is None:
            explorer.fatal = err
    return err
