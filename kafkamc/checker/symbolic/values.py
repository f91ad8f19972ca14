"""Symbolic ints and bools: Python objects over Z3 terms that spec code can use like int and bool.

Arithmetic and comparisons build terms without forking. Python needs a concrete answer in three
places, and each is exact:

- ``__bool__`` (``if``, ``and``, ``not``, ``in``, tuple and dataclass comparison) forks the path:
  the explorer follows every feasible outcome.
- ``__index__`` (``brokers[r - 1]``, slicing, ``range(n)``) enumerates every feasible value, up to a
  small limit; more values is an error, never a sample.
- ``__format__``/``__str__``/``__repr__`` give a placeholder, and only inside an action (where they
  build labels, which are re-made concretely for a counterexample); elsewhere they are an error.

Everything else that would need the concrete value (``hash``, ``int()``, ``float()``, use as a
dict key or set member) raises ``SymbolicUnsupported`` naming the construct and the spec line.
Python's semantics are kept where Z3's differ: ``//`` and ``%`` are floor division and modulo
(only by a concrete positive int), bools are ints 0 and 1 in arithmetic.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Any

import z3
from z3 import z3core

from kafkamc.checker.symbolic.context import PLACEHOLDER, current, unsupported

__all__ = ["SymInt", "SymBool", "as_arith", "as_bool", "is_symbolic", "fast_simplify", "bool_value", "ast_id", "substituted",
           "fast_and", "fast_or", "fast_not"]

# Comparisons and simplification are the hot path of every symbolic run; z3py's operators coerce
# and sort-check each operand, so the few used here call the C API directly on the main context.
_CTX = z3.main_ctx()
_REF = _CTX.ref()


def _rel(mk: Any, a: z3.ExprRef, b: z3.ExprRef) -> z3.BoolRef:
    return z3.BoolRef(mk(_REF, a.as_ast(), b.as_ast()), _CTX)


def _ne(a: z3.ExprRef, b: z3.ExprRef) -> z3.BoolRef:
    return z3.BoolRef(z3core.Z3_mk_not(_REF, z3core.Z3_mk_eq(_REF, a.as_ast(), b.as_ast())), _CTX)


def fast_simplify(e: z3.BoolRef) -> z3.BoolRef:
    return z3.BoolRef(z3core.Z3_simplify(_REF, e.as_ast()), _CTX)


def bool_value(e: z3.BoolRef) -> bool | None:
    """True or False for a constant, None otherwise."""
    v = z3core.Z3_get_bool_value(_REF, e.as_ast())
    return True if v == 1 else (False if v == -1 else None)


_TRUE = z3.BoolVal(True)
_FALSE = z3.BoolVal(False)


def _nary(mk: Any, parts: list[z3.BoolRef], empty: z3.BoolRef) -> z3.BoolRef:
    if not parts:
        return empty
    if len(parts) == 1:
        return parts[0]
    arr = (z3.Ast * len(parts))(*(e.as_ast() for e in parts))
    return z3.BoolRef(mk(_REF, len(parts), arr), _CTX)


def fast_and(parts: list[z3.BoolRef]) -> z3.BoolRef:
    return _nary(z3core.Z3_mk_and, parts, _TRUE)


def fast_or(parts: list[z3.BoolRef]) -> z3.BoolRef:
    return _nary(z3core.Z3_mk_or, parts, _FALSE)


def fast_not(e: z3.BoolRef) -> z3.BoolRef:
    return z3.BoolRef(z3core.Z3_mk_not(_REF, e.as_ast()), _CTX)


def substituted(term: z3.ExprRef, pairs: list[tuple[z3.ExprRef, z3.ExprRef]]) -> z3.ExprRef:
    """``term`` with each first of ``pairs`` replaced by its second, in one Z3 call (``z3.substitute``
    checks and wraps every pair in Python, which was most of the cost where this is used)."""
    if not pairs:
        return term
    n = len(pairs)
    src = (z3.Ast * n)(*(a.as_ast() for a, _b in pairs))
    dst = (z3.Ast * n)(*(b.as_ast() for _a, b in pairs))
    ctx = term.ctx
    return z3.z3._to_expr_ref(z3core.Z3_substitute(ctx.ref(), term.as_ast(), n, src, dst), ctx)


def ast_id(e: z3.ExprRef) -> int:
    return z3core.Z3_get_ast_id(_REF, e.as_ast())


_SMALL = {i: z3.IntVal(i) for i in range(-8, 65)}  # cached: IntVal is a measurable cost per run


def as_arith(v: Any) -> z3.ArithRef | None:
    """The integer term of ``v`` (int, bool, IntEnum, SymInt, SymBool), or None for other types."""
    if isinstance(v, SymInt):
        return v.z
    if isinstance(v, SymBool):
        return z3.If(v.z, z3.IntVal(1), z3.IntVal(0))
    if isinstance(v, int):  # bool and IntEnum included
        i = int(v)
        small = _SMALL.get(i)
        return small if small is not None else z3.IntVal(i)
    return None


def as_bool(v: Any) -> z3.BoolRef | None:
    """The boolean term of a bool or SymBool, or None."""
    if isinstance(v, SymBool):
        return v.z
    if isinstance(v, bool):
        return z3.BoolVal(v)
    return None


def is_symbolic(v: Any) -> bool:
    return isinstance(v, (SymInt, SymBool))


def _text(v: Any) -> str:
    explorer = current()
    if not explorer.formatting_allowed:
        raise unsupported("str() or format() of a symbolic value (allowed only in an action's label)")
    explorer.formatted = True
    return PLACEHOLDER


class _Opaque:
    """What both symbolic types refuse: any use that needs the concrete value without forking."""

    __slots__ = ()

    def __hash__(self) -> int:
        err = unsupported("hash() of a symbolic value (a dict key or set member)")
        # The term that needed a concrete value: ``bmc`` runs the code again once per value of it.
        err.term = getattr(self, "z", None)
        raise err

    def __int__(self) -> int:
        err = unsupported("int() of a symbolic value")
        # As for a hash: ``bmc`` runs the code again once per value of the term (a joined
        # ``_RESULT_OF_PREPARE[c.state]`` passed to ``int``).
        err.term = getattr(self, "z", None)
        raise err

    def __float__(self) -> float:
        raise unsupported("float() of a symbolic value")

    def __complex__(self) -> complex:
        raise unsupported("complex() of a symbolic value")

    def __round__(self, ndigits: Any = None) -> Any:
        raise unsupported("round() of a symbolic value")

    def __trunc__(self) -> Any:
        raise unsupported("math.trunc() of a symbolic value")

    def __floor__(self) -> Any:
        raise unsupported("math.floor() of a symbolic value")

    def __ceil__(self) -> Any:
        raise unsupported("math.ceil() of a symbolic value")

    def __format__(self, spec: str) -> str:
        return _text(self)

    def __str__(self) -> str:
        return _text(self)

    def __repr__(self) -> str:
        return _text(self)

    def __reduce__(self) -> Any:
        raise unsupported("pickling a symbolic value")

    def __copy__(self) -> Any:
        return self

    def __deepcopy__(self, memo: Any) -> Any:
        return self


class SymInt(_Opaque):
    """A symbolic int; ``enum`` is the IntEnum class its value ranges over, if any (for display)."""

    __slots__ = ("z", "enum")

    def __init__(self, z: z3.ArithRef, enum: type[IntEnum] | None = None) -> None:
        self.z = z
        self.enum = enum

    # -- arithmetic ---------------------------------------------------------------------------
    def _bin(self, other: Any, op: Any) -> Any:
        o = as_arith(other)
        return NotImplemented if o is None else SymInt(op(self.z, o))

    def _rbin(self, other: Any, op: Any) -> Any:
        o = as_arith(other)
        return NotImplemented if o is None else SymInt(op(o, self.z))

    def __add__(self, o: Any) -> Any: return self._bin(o, lambda a, b: a + b)
    def __radd__(self, o: Any) -> Any: return self._rbin(o, lambda a, b: a + b)
    def __sub__(self, o: Any) -> Any: return self._bin(o, lambda a, b: a - b)
    def __rsub__(self, o: Any) -> Any: return self._rbin(o, lambda a, b: a - b)
    def __mul__(self, o: Any) -> Any: return self._bin(o, lambda a, b: a * b)
    def __rmul__(self, o: Any) -> Any: return self._rbin(o, lambda a, b: a * b)

    def _divisor(self, o: Any, op: str) -> int:
        if isinstance(o, int) and not isinstance(o, bool) and o > 0:
            return int(o)
        raise unsupported(f"'{op}' by {'a symbolic value' if is_symbolic(o) else repr(o)} "
                          "(only by a concrete positive int)")

    def __floordiv__(self, o: Any) -> Any:
        # SMT-LIB div is Euclidean, equal to Python's floor division for a positive divisor.
        return SymInt(self.z / z3.IntVal(self._divisor(o, "//")))

    def __mod__(self, o: Any) -> Any:
        return SymInt(self.z % z3.IntVal(self._divisor(o, "%")))

    def __rfloordiv__(self, o: Any) -> Any:
        raise unsupported("'//' by a symbolic value")

    def __rmod__(self, o: Any) -> Any:
        raise unsupported("'%' by a symbolic value")

    def __truediv__(self, o: Any) -> Any:
        raise unsupported("'/' (true division) of a symbolic value")

    __rtruediv__ = __truediv__

    def __pow__(self, o: Any) -> Any:
        if isinstance(o, int) and not isinstance(o, bool) and 0 <= o <= 8:
            r: z3.ArithRef = z3.IntVal(1)
            for _ in range(o):
                r = r * self.z
            return SymInt(r)
        raise unsupported("'**' with an exponent that is not a concrete int in 0..8")

    def __rpow__(self, o: Any) -> Any:
        raise unsupported("'**' with a symbolic exponent")

    def __neg__(self) -> SymInt: return SymInt(-self.z)
    def __pos__(self) -> SymInt: return self
    def __abs__(self) -> SymInt: return SymInt(z3.If(self.z >= 0, self.z, -self.z))

    def __lshift__(self, o: Any) -> Any: raise unsupported("'<<' of a symbolic value")
    __rshift__ = __rlshift__ = __rrshift__ = __lshift__
    def __and__(self, o: Any) -> Any: raise unsupported("bitwise '&' of a symbolic int")
    __rand__ = __or__ = __ror__ = __xor__ = __rxor__ = __and__
    def __invert__(self) -> Any: return SymInt(-self.z - 1)

    # -- comparisons (terms, no fork) ---------------------------------------------------------
    def _cmp(self, other: Any, op: Any) -> Any:
        o = as_arith(other)
        return NotImplemented if o is None else SymBool(op(self.z, o))

    def __eq__(self, o: Any) -> Any: return self._cmp(o, lambda a, b: _rel(z3core.Z3_mk_eq, a, b))  # type: ignore[override]
    def __ne__(self, o: Any) -> Any: return self._cmp(o, _ne)  # type: ignore[override]
    def __lt__(self, o: Any) -> Any: return self._cmp(o, lambda a, b: _rel(z3core.Z3_mk_lt, a, b))
    def __le__(self, o: Any) -> Any: return self._cmp(o, lambda a, b: _rel(z3core.Z3_mk_le, a, b))
    def __gt__(self, o: Any) -> Any: return self._cmp(o, lambda a, b: _rel(z3core.Z3_mk_gt, a, b))
    def __ge__(self, o: Any) -> Any: return self._cmp(o, lambda a, b: _rel(z3core.Z3_mk_ge, a, b))

    # -- where Python needs a concrete answer -------------------------------------------------
    def __bool__(self) -> bool:
        return current().decide(_ne(self.z, _SMALL[0]))

    def __index__(self) -> int:
        return current().choose_value(self.z)

    __hash__ = _Opaque.__hash__


class SymBool(_Opaque):
    """A symbolic bool. ``not x``, ``x and y`` and ``if x`` fork; ``&``, ``|``, ``^``, ``==`` build terms."""

    __slots__ = ("z",)

    def __init__(self, z: z3.BoolRef) -> None:
        self.z = z

    def __bool__(self) -> bool:
        return current().decide(self.z)

    def _logic(self, other: Any, op: Any) -> Any:
        o = as_bool(other)
        if o is not None:
            return SymBool(op(self.z, o))
        if isinstance(other, (int, SymInt)):  # Python: True & 3 is an int operation
            raise unsupported("a bitwise operation between a symbolic bool and an int")
        return NotImplemented

    def __and__(self, o: Any) -> Any: return self._logic(o, lambda a, b: z3.And(a, b))
    def __rand__(self, o: Any) -> Any: return self._logic(o, lambda a, b: z3.And(b, a))
    def __or__(self, o: Any) -> Any: return self._logic(o, lambda a, b: z3.Or(a, b))
    def __ror__(self, o: Any) -> Any: return self._logic(o, lambda a, b: z3.Or(b, a))
    def __xor__(self, o: Any) -> Any: return self._logic(o, lambda a, b: z3.Xor(a, b))
    def __rxor__(self, o: Any) -> Any: return self._logic(o, lambda a, b: z3.Xor(b, a))

    def __eq__(self, o: Any) -> Any:  # type: ignore[override]
        b = as_bool(o)
        if b is not None:
            return SymBool(self.z == b)
        return self._as_int() == o

    def __ne__(self, o: Any) -> Any:  # type: ignore[override]
        b = as_bool(o)
        if b is not None:
            return SymBool(self.z != b)
        return self._as_int() != o

    def _as_int(self) -> SymInt:
        return SymInt(z3.If(self.z, z3.IntVal(1), z3.IntVal(0)))

    # A bool is an int 0/1 in every other operation, as in Python.
    def __lt__(self, o: Any) -> Any: return self._as_int() < o
    def __le__(self, o: Any) -> Any: return self._as_int() <= o
    def __gt__(self, o: Any) -> Any: return self._as_int() > o
    def __ge__(self, o: Any) -> Any: return self._as_int() >= o
    def __add__(self, o: Any) -> Any: return self._as_int() + o
    def __radd__(self, o: Any) -> Any: return o + self._as_int()
    def __sub__(self, o: Any) -> Any: return self._as_int() - o
    def __rsub__(self, o: Any) -> Any: return o - self._as_int()
    def __mul__(self, o: Any) -> Any: return self._as_int() * o
    def __rmul__(self, o: Any) -> Any: return o * self._as_int()
    def __neg__(self) -> Any: return -self._as_int()
    def __pos__(self) -> Any: return self._as_int()
    def __invert__(self) -> Any: return ~self._as_int()
    def __index__(self) -> int: return current().choose_value(self._as_int().z)

    __hash__ = _Opaque.__hash__
