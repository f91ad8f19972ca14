"""Symbolic states from a spec's domain, their membership formula, and concrete states from a model.

``build`` makes one state of the domain with a fresh Z3 variable per int and bool field (named by
its path, e.g. ``s.brokers[0].epoch``) and a concrete shape chosen on the path; ``member`` is the
formula for "this (symbolic) value is in the domain", used on every successor; ``concretize`` turns
a symbolic value into the concrete one a Z3 model gives, IntEnum fields back into their enum.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import z3

from kafkamc.checker.symbolic.context import unsupported
from kafkamc.checker.symbolic.sets import SymSet, as_members
from kafkamc.checker.symbolic.values import SymBool, SymInt, as_arith, as_bool, is_symbolic
from kafkamc.spec import domain as d

__all__ = ["build", "shapes", "fixed", "member", "concretize", "rebuilt", "int_terms", "lex_le", "equal"]

# ``choose(n, what)`` picks one of ``n`` concrete alternatives (a bag length, a subset).
Chooser = Callable[[int, str], int]


def _bound(value: Any, what: str) -> z3.ArithRef:
    term = as_arith(value)
    if term is None:
        raise unsupported(f"a domain bound {what}={value!r} that is not an int or int parameter")
    return term


def _length(value: Any, what: str) -> int:
    if is_symbolic(value):
        raise unsupported(f"a symbolic {what} in the domain (shapes must be concrete; do not lift that parameter)")
    return int(value)


def shapes(dom: d.Domain) -> list[tuple[int, ...]]:
    """Every concrete shape of ``dom``: the sequences of choices ``build`` can make, in order."""
    found: list[tuple[int, ...]] = []
    prefix: list[int] = []
    while True:
        made: list[tuple[int, int]] = []  # (choice, number of alternatives)

        def choose(n: int, what: str) -> int:
            k = prefix[len(made)] if len(made) < len(prefix) else 0
            made.append((k, n))
            return k

        build(dom, "shape", choose, [])
        if all(n > 0 for _, n in made):
            found.append(tuple(k for k, _ in made))
        while made and made[-1][0] + 1 >= made[-1][1]:
            made.pop()
        if not made:
            return found
        prefix = [k for k, _ in made[:-1]] + [made[-1][0] + 1]


def fixed(shape: tuple[int, ...]) -> Chooser:
    """The chooser that makes the choices of ``shape``."""
    it = iter(shape)
    return lambda n, what: next(it)


def build(dom: d.Domain, name: str, choose: Chooser, facts: list[z3.BoolRef]) -> Any:
    """A symbolic value of ``dom``; ``facts`` receives the constraints of its fields."""
    if isinstance(dom, d.Int):
        v = z3.Int(name)
        facts.append(v >= _bound(dom.lo, "lo"))
        if dom.hi is not None:
            facts.append(v <= _bound(dom.hi, "hi"))
        return SymInt(v)
    if isinstance(dom, d.Bool):
        return SymBool(z3.Bool(name))
    if isinstance(dom, d.Enum):
        v = z3.Int(name)
        facts.append(z3.Or([v == int(m) for m in dom.cls]))
        return SymInt(v, dom.cls)
    if isinstance(dom, d.Const):
        return dom.value
    if isinstance(dom, d.OneOf):
        return dom.values[choose(len(dom.values), f"{name}: one of")]
    if isinstance(dom, d.Record):
        return dom.cls(**{f: build(sub, f"{name}.{f}", choose, facts) for f, sub in dom.fields})
    if isinstance(dom, d.Tuple):
        return tuple(build(dom.elem, f"{name}[{i}]", choose, facts) for i in range(_length(dom.length, "tuple length")))
    if isinstance(dom, d.Seq):
        return tuple(build(sub, f"{name}[{i}]", choose, facts) for i, sub in enumerate(dom.elems))
    if isinstance(dom, d.Set):
        return SymSet(dom.universe, tuple(z3.Bool(f"{name}.has({e!r})") for e in dom.universe))
    if isinstance(dom, d.Bag):
        lo, hi = _length(dom.min_len, "bag length"), _length(dom.max_len, "bag length")
        n = lo + choose(hi - lo + 1, f"{name}: length")
        items = tuple(build(dom.elem, f"{name}[{i}]", choose, facts) for i in range(n))
        if dom.sorted:
            facts.extend(lex_le(int_terms(a), int_terms(b)) for a, b in zip(items, items[1:]))
        return items
    if isinstance(dom, d.Subset):
        members = d.Subset(_length(dom.lo, "subset bound"), _length(dom.hi, "subset bound"), dom.nonempty).members()
        return members[choose(len(members), f"{name}: subset")]
    raise TypeError(f"not a domain: {dom!r}")


def int_terms(value: Any) -> list[z3.ArithRef]:
    """The value flattened, in the order Python compares it (dataclass fields in order)."""
    term = as_arith(value)
    if term is not None:
        return [term]
    if isinstance(value, tuple):
        return [t for v in value for t in int_terms(v)]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [t for f in dataclasses.fields(value) if f.compare for t in int_terms(getattr(value, f.name))]
    raise unsupported(f"ordering a bag of {type(value).__name__} values")


def lex_le(a: list[z3.ArithRef], b: list[z3.ArithRef]) -> z3.BoolRef:
    """a <= b lexicographically (equal lengths), as Python compares tuples of the same shape."""
    if len(a) != len(b):
        raise unsupported("a sorted bag whose elements have different shapes")
    result: z3.BoolRef = z3.BoolVal(True)
    for x, y in reversed(list(zip(a, b))):
        result = z3.Or(x < y, z3.And(x == y, result))
    return result


def equal(a: Any, b: Any) -> z3.BoolRef:
    """Structural equality as a formula (what ``==`` would decide, without forking)."""
    ba, bb = as_bool(a), as_bool(b)
    if ba is not None and bb is not None:
        return ba == bb
    ta, tb = as_arith(a), as_arith(b)
    if ta is not None and tb is not None:
        return ta == tb
    ma, mb = as_members(a), as_members(b)
    if ma is not None and mb is not None:
        keys = set(ma) | set(mb)
        return z3.And([ma.get(k, z3.BoolVal(False)) == mb.get(k, z3.BoolVal(False)) for k in keys])
    if isinstance(a, tuple) and isinstance(b, tuple):
        if len(a) != len(b):
            return z3.BoolVal(False)
        return z3.And([equal(x, y) for x, y in zip(a, b)])
    if dataclasses.is_dataclass(a) and type(a) is type(b):
        return z3.And([equal(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a) if f.compare])
    if is_symbolic(a) or is_symbolic(b):
        return z3.BoolVal(False)
    return z3.BoolVal(bool(a == b))


def member(dom: d.Domain, value: Any) -> z3.BoolRef:
    """The formula for ``value`` being in ``dom`` (False when its concrete shape or type is wrong)."""
    false = z3.BoolVal(False)
    if isinstance(dom, d.Int):
        if isinstance(value, bool) or isinstance(value, SymBool):
            return false
        t = as_arith(value)
        if t is None:
            return false
        parts = [t >= _bound(dom.lo, "lo")]
        if dom.hi is not None:
            parts.append(t <= _bound(dom.hi, "hi"))
        return z3.And(parts)
    if isinstance(dom, d.Bool):
        return z3.BoolVal(isinstance(value, (bool, SymBool)))
    if isinstance(dom, d.Enum):
        if isinstance(value, (bool, SymBool)):
            return false
        t = as_arith(value)
        return false if t is None else z3.Or([t == int(m) for m in dom.cls])
    if isinstance(dom, d.Const):
        return equal(value, dom.value)
    if isinstance(dom, d.OneOf):
        return z3.Or([equal(value, v) for v in dom.values])
    if isinstance(dom, d.Record):
        if type(value) is not dom.cls:
            return false
        return z3.And([member(sub, getattr(value, f)) for f, sub in dom.fields])
    if isinstance(dom, d.Tuple):
        if not isinstance(value, tuple) or len(value) != _length(dom.length, "tuple length"):
            return false
        return z3.And([member(dom.elem, v) for v in value])
    if isinstance(dom, d.Bag):
        if not isinstance(value, tuple) or not (_length(dom.min_len, "bag length") <= len(value)
                                                 <= _length(dom.max_len, "bag length")):
            return false
        parts = [member(dom.elem, v) for v in value]
        if dom.sorted:
            parts.extend(lex_le(int_terms(a), int_terms(b)) for a, b in zip(value, value[1:]))
        return z3.And(parts)
    if isinstance(dom, d.Seq):
        if not isinstance(value, tuple) or len(value) != len(dom.elems):
            return false
        return z3.And([member(sub, v) for sub, v in zip(dom.elems, value)])
    if isinstance(dom, d.Set):
        members = as_members(value)
        if members is None:
            return false
        # A member outside the universe must be absent.
        universe = frozenset(dom.universe)
        return z3.And([z3.Not(b) for e, b in members.items() if e not in universe])
    if isinstance(dom, d.Subset):
        if not isinstance(value, tuple) or (dom.nonempty and not value):
            return false
        terms = [as_arith(v) if not isinstance(v, (bool, SymBool)) else None for v in value]
        if any(t is None for t in terms):
            return false
        parts = [z3.And(t >= dom.lo, t <= dom.hi) for t in terms]
        parts.extend(a < b for a, b in zip(terms, terms[1:]))
        return z3.And(parts)
    raise TypeError(f"not a domain: {dom!r}")


def rebuilt(value: Any, leaf: Callable[[Any], Any]) -> Any:
    """``value`` with each leaf (what is not a tuple, list or dataclass record) replaced by
    ``leaf(it)``; a tuple or record none of whose parts changed is ``value`` itself."""
    if isinstance(value, tuple):
        parts = [rebuilt(v, leaf) for v in value]
        return value if all(a is b for a, b in zip(value, parts)) else tuple(parts)
    if isinstance(value, list):
        return [rebuilt(v, leaf) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        names = [f.name for f in dataclasses.fields(value) if f.init]
        old = [getattr(value, n) for n in names]
        new = [rebuilt(v, leaf) for v in old]
        if all(a is b for a, b in zip(old, new)):
            return value
        return type(value)(**dict(zip(names, new)))
    return leaf(value)


def concretize(value: Any, model: Any) -> Any:
    """The concrete value ``model`` gives ``value`` (enum-typed ints become their enum)."""

    def leaf(v: Any) -> Any:
        if isinstance(v, SymInt):
            x = model.eval(v.z, model_completion=True).as_long()
            return v.enum(x) if v.enum is not None else x
        if isinstance(v, SymBool):
            return z3.is_true(model.eval(v.z, model_completion=True))
        if isinstance(v, SymSet):
            return frozenset(e for e, b in zip(v.elems, v.bits) if z3.is_true(model.eval(b, model_completion=True)))
        return v

    return rebuilt(value, leaf)
