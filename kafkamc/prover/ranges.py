"""The range of every int of ``bmc``'s vector at each depth: what lets the unrolling be bit-blasted.

Z3's ``QF_FD`` solver turns bounded ints into bit-vectors and the whole question into SAT (the
classic approach of hardware bounded model checking); on the unrollings of ``group`` and
``controller`` it answers several times faster than ``QF_LIA`` (docs/bmc.md). It needs a bound on
every int, and a bound must never cut a reachable state:

- An int the domain bounds in every shape where it is live (``Int(lo, hi)``, an enum, a site)
  gets that range at every depth. A live value outside it is a successor outside the domain,
  which ``bmc`` asks for at the depth before the step (exit 3), so the range never cuts a step it
  has not already cleared. A variable dead in a shape carries nothing: no formula of the shape
  reads it, and a move gives every variable it makes live a term of its own, so holding a dead
  one inside the range loses nothing.
- An int the domain leaves open (``Int(0)``, a ZooKeeper version) gets, per depth, an interval
  holding every value it can have: its initial values, then at each step the hull of the
  interval before (the frame) and of every move's term for it, evaluated over the intervals
  before (interval arithmetic: a superset of the values, never a subset).

When a term's interval cannot be computed (an operator other than ``+ - * div mod If``),
``ranges`` answers None and the unrolling keeps ``QF_LIA``: nothing is approximated.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import z3

from kafkamc.prover.layout import Layout, leaf_vars
from kafkamc.prover.relation import Move

__all__ = ["Ranges", "ranges"]

Interval = tuple[int, int]


class _Open(Exception):
    """A term whose interval is not computed here."""


@dataclass(frozen=True, slots=True)
class Ranges:
    """The fixed ranges of the ints the domain bounds, and the per-depth intervals of the others."""

    layout: Layout
    fixed: dict[str, Interval]  # key -> the domain's range, the same at every depth
    depths: list[dict[str, Interval]]  # depth -> open key -> interval; grows with ``at``
    moves: tuple[Move, ...]

    def at(self, k: int, prefix: str) -> z3.BoolRef:
        """Every int of the copy ``prefix`` (depth ``k``) inside its range."""
        while len(self.depths) <= k:
            self.depths.append(self._next(self.depths[-1]))
        parts = []
        for key, (lo, hi) in [*self.fixed.items(), *self.depths[k].items()]:
            v = self.layout.var(key, prefix)
            parts += [v >= lo, v <= hi]
        return z3.And(parts)

    def _next(self, before: dict[str, Interval]) -> dict[str, Interval]:
        env = {**self.fixed, **before}
        after = dict(before)
        memo: dict[int, Interval] = {}
        for m in self.moves:
            for key, term in m.assigns:
                if key in after:
                    after[key] = _hull(after[key], _interval(term, env, memo))
        return after


def ranges(layout: Layout, moves: Iterable[Move], initial: list[dict[str, z3.ExprRef]]) -> Ranges | None:
    """The ranges of ``layout``'s ints, ``initial`` the terms of each initial state's live
    variables; None when an open int's interval cannot be computed."""
    ints = [k for k, v in layout.variables.items() if v.sort() == z3.IntSort()]
    found: dict[str, list[int | None]] = {}
    unbounded: set[str] = set()
    for shape in layout.shapes:
        seen: dict[str, list[int | None]] = {}
        tmpl, tmpl_facts = layout.template(shape, "x")
        for f in tmpl_facts:
            _read_fact(f, seen)
        for key, var in leaf_vars(tmpl, "x"):  # live here without a bound read: open
            if var.sort() == z3.IntSort() and key not in seen:
                unbounded.add(key)
        for key, (lo, hi) in seen.items():
            if lo is None or hi is None:
                unbounded.add(key)
                continue
            if lo > hi:  # no state of this shape has a value here (``Int(1, 0)``): it bounds nothing
                continue
            o = found.setdefault(key, [lo, hi])
            o[0], o[1] = min(o[0], lo), max(o[1], hi)  # type: ignore[type-var]
        for site, alt in shape.choices:
            o = found.setdefault("#" + site, [alt, alt])
            o[0], o[1] = min(o[0], alt), max(o[1], alt)  # type: ignore[type-var]
    fixed = {k: (int(lo), int(hi)) for k, (lo, hi) in found.items()  # type: ignore[arg-type]
             if k in layout.variables and k not in unbounded}
    start: dict[str, Interval] = {}
    for key in ints:
        if key in fixed:
            continue
        values = [t.as_long() for terms in initial if (t := terms.get(key)) is not None and z3.is_int_value(t)]
        if any(key in terms and not z3.is_int_value(terms[key]) for terms in initial):
            return None
        # Dead in every initial state: any one value will do, nothing reads it.
        start[key] = (min(values), max(values)) if values else (0, 0)
    moves = tuple(moves)
    result = Ranges(layout, fixed, [start], moves)
    try:
        result.at(1, "x")  # every term evaluated once: an operator not handled shows here
    except _Open:
        return None
    return result


def _read_fact(f: z3.BoolRef, seen: dict[str, list[int | None]]) -> None:
    """A bound of one variable read from a domain fact (``lo <= v``, ``v <= hi``, an enum's
    ``Or(v == a, v == b)``); any other fact bounds nothing here (it stays in the step)."""
    if z3.is_or(f) and f.num_args() and all(z3.is_eq(c) for c in f.children()):
        var, vals = None, []
        for c in f.children():
            a, b = c.arg(0), c.arg(1)
            if z3.is_int_value(a):
                a, b = b, a
            if not (z3.is_const(a) and not z3.is_int_value(a) and z3.is_int_value(b)) or (var is not None and not a.eq(var)):
                return
            var = a
            vals.append(b.as_long())
        _bound(seen, var, min(vals), 0)
        _bound(seen, var, max(vals), 1)
        return
    if not (z3.is_le(f) or z3.is_ge(f)):
        return
    a, b = f.arg(0), f.arg(1)
    upper = z3.is_le(f)
    if z3.is_int_value(a):
        a, b, upper = b, a, not upper
    if z3.is_const(a) and not z3.is_int_value(a) and z3.is_int_value(b):
        _bound(seen, a, b.as_long(), 1 if upper else 0)


def _bound(seen: dict[str, list[int | None]], var: z3.ExprRef, value: int, side: int) -> None:
    name = var.decl().name()
    if not name.startswith("x"):
        return
    slot = seen.setdefault(name[1:], [None, None])
    old = slot[side]
    slot[side] = value if old is None else (max(old, value) if side == 0 else min(old, value))


def _hull(a: Interval, b: Interval) -> Interval:
    return min(a[0], b[0]), max(a[1], b[1])


def _interval(t: z3.ExprRef, env: dict[str, Interval], memo: dict[int, Interval]) -> Interval:
    """An interval holding every value of the int term ``t`` when each variable is in ``env``."""
    key = t.get_id()
    got = memo.get(key)
    if got is not None:
        return got
    if z3.is_int_value(t):
        v = t.as_long()
        out = (v, v)
    elif z3.is_const(t):
        name = t.decl().name()
        if not name.startswith("x") or name[1:] not in env:
            raise _Open(name)
        out = env[name[1:]]
    else:
        k = t.decl().kind()
        args = [t.arg(i) for i in range(t.num_args())]
        if k == z3.Z3_OP_ITE:
            out = _hull(_interval(args[1], env, memo), _interval(args[2], env, memo))
        elif k in (z3.Z3_OP_ADD, z3.Z3_OP_SUB, z3.Z3_OP_MUL, z3.Z3_OP_UMINUS):
            ivs = [_interval(a, env, memo) for a in args]
            lo, hi = ivs[0]
            if k == z3.Z3_OP_UMINUS:
                lo, hi = -hi, -lo
            for a, b in ivs[1:]:
                if k == z3.Z3_OP_ADD:
                    lo, hi = lo + a, hi + b
                elif k == z3.Z3_OP_SUB:
                    lo, hi = lo - b, hi - a
                else:
                    corners = (lo * a, lo * b, hi * a, hi * b)
                    lo, hi = min(corners), max(corners)
            out = (lo, hi)
        elif k in (z3.Z3_OP_IDIV, z3.Z3_OP_MOD) and z3.is_int_value(args[1]) and args[1].as_long() > 0:
            c = args[1].as_long()
            if k == z3.Z3_OP_MOD:
                out = (0, c - 1)
            else:
                lo, hi = _interval(args[0], env, memo)
                out = (lo // c, hi // c)  # Z3's div by a positive constant rounds down, as // does
        else:
            raise _Open(str(t.decl()))
    memo[key] = out
    return out
