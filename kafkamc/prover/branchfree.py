"""Candidate invariants rewritten so that the symbolic executor runs them on one path.

A mined candidate such as ``all(b.epoch <= s.controller_epoch for b in s.brokers if b.up)`` run
as written on a symbolic state forks at every ``if``, ``and``, ``or``, ``not`` and ``in`` (Python
asks each symbolic condition for a concrete ``bool``), and each of its paths is replayed from the
start: a Houdini round turns hundreds of candidates into formulas on every pre-state shape and
every successor skeleton, and a profile of a round on ``controller`` put 88% of its time there.

``branch_free(expr, names)`` compiles the same expression with each of those constructs replaced
by a combinator (``_and``, ``_or``, ``_not``, ``_all``, ``_count``, ``_in``, ``_ids``) that gives
Python's own answer on concrete values and builds the Z3 term instead of forking on symbolic
ones. The function it returns is therefore equal to the expression, as a truth value, on every
concrete state (tests check both on every reached state and, through the executor, as formulas);
the executor still runs it under its guard and still enumerates whatever it does fork on (an
index by a symbolic int outside the id pattern below), so the formula stays exact either way.

Not forking means evaluating an operand after a symbolic one on the whole path, also where Python
would have stopped before it (``x >= 1 and t[x - 1] > 0`` where ``x`` is 0 or less). If it raises
there, the path forks on whether Python reaches it (``_evaluated``): the exception stands where it
does, and the combinator's own value where it does not, so an error is reported exactly where
the expression as written raises and never read as a truth value.

The id pattern: ``1 <= X <= N and B`` where ``B`` indexes a collection by ``X - 1`` (the mined form
``s.brokers[e.dest - 1].up``) is ``B`` said of each id ``k`` with ``X == k``, joined by ``or``:
Python's value for every integer ``X`` (outside 1..N the range check is false), without an index
by a symbolic int.
"""

from __future__ import annotations

import ast
import sys
from typing import Any, Callable, Iterable

import z3

from kafkamc.checker.symbolic import SymBool, SymInt, SymSet
from kafkamc.checker.symbolic.context import current
from kafkamc.checker.symbolic.values import as_bool, fast_and, fast_not, fast_or
from kafkamc.checker.watch import raise_pending_stop
from kafkamc.errors import KafkamcError

__all__ = ["branch_free"]


_END = object()  # the end of an all()/any() generator


def _z(value: Any) -> z3.BoolRef:
    """The Z3 truth of a value already known to be symbolic (a SymBool)."""
    b = as_bool(value)
    if b is None:
        raise TypeError(f"not a truth value: {type(value).__name__}")
    return b


def _sym(value: Any) -> bool:
    return isinstance(value, SymBool)


def _evaluated(thunk: Callable[[], Any], parts: list[z3.BoolRef], reached: Callable[[list[z3.BoolRef]], z3.BoolRef],
               masked: Any) -> tuple[bool, Any]:
    """Run one operand after earlier ones, ``parts`` of them symbolic: ``(True, its value)``, or
    ``(False, masked)`` when it raised on states where Python never evaluates it.

    Python evaluates the operand only where ``reached(parts)`` holds (``a and b``: where ``a`` is
    true); the combinators evaluate it on the whole path instead, so an exception from it (an
    index out of range where ``a`` is false) is Python's only where ``reached`` holds. That is
    decided as Python's ``if`` would: the path forks, the exception is raised where the operand is
    reached, and the combinator's value is ``masked`` (Python's value) where it is not. The
    executor's own errors (an unsupported construct) and its path control pass through."""
    try:
        return True, thunk()
    except KafkamcError:
        raise
    except Exception as exc:
        raise_pending_stop(exc)
        if parts and not current().decide(reached(parts)):
            return False, masked
        raise


def _and(*thunks: Callable[[], Any]) -> Any:
    """``a and b and ...``: Python's value while the operands are concrete (stopping at the first
    false one, as Python does); once one is symbolic, the conjunction of the rest."""
    parts: list[z3.BoolRef] = []
    value: Any = True
    for thunk in thunks:
        ok, value = _evaluated(thunk, parts, fast_and, False)
        if not ok:
            return value
        if _sym(value):
            parts.append(_z(value))
        elif not value:
            return value if not parts else False
    if not parts:
        return value
    return SymBool(fast_and(parts))


def _or(*thunks: Callable[[], Any]) -> Any:
    parts: list[z3.BoolRef] = []
    value: Any = False
    for thunk in thunks:
        ok, value = _evaluated(thunk, parts, _none, True)
        if not ok:
            return value
        if _sym(value):
            parts.append(_z(value))
        elif value:
            return value if not parts else True
    if not parts:
        return value
    return SymBool(fast_or(parts))


def _none(parts: list[z3.BoolRef]) -> z3.BoolRef:
    """Where an operand after ``parts`` (of an ``or``) is evaluated: none of them holds."""
    return fast_not(fast_or(parts))


def _not(value: Any) -> Any:
    return SymBool(fast_not(_z(value))) if _sym(value) else not value


def _all(items: Iterable[Any]) -> Any:
    """``all(...)``: the items after a symbolic one are evaluated under it (see ``_evaluated``)."""
    return _quantified(items, False)


def _any(items: Iterable[Any]) -> Any:
    """``any(...)``, the dual of ``_all``."""
    return _quantified(items, True)


def _quantified(items: Iterable[Any], decisive: bool) -> Any:
    """``all`` (``decisive`` False) or ``any`` (True): Python's value at the first concrete item
    whose truth is ``decisive``; the items after a symbolic one evaluated under it."""
    parts: list[z3.BoolRef] = []
    reached, join = (_none, fast_or) if decisive else (fast_and, fast_and)
    it = iter(items)
    while True:
        ok, value = _evaluated(lambda: next(it, _END), parts, reached, decisive)
        if not ok:
            return value
        if value is _END:
            break
        if _sym(value):
            parts.append(_z(value))
        elif bool(value) is decisive:
            return decisive
    return SymBool(join(parts)) if parts else not decisive


def _guarded(guard: Callable[[], Any], body: Callable[[], Any]) -> Any:
    """One element of ``all(body for ... if guard)``: ``not guard or body``."""
    return _or(lambda: _not(guard()), body)


def _count(items: Iterable[Any]) -> Any:
    """``sum(1 for ... if guard)`` given the guards: an int, or a SymInt once a guard is symbolic."""
    n = 0
    terms = []
    for value in items:
        if _sym(value):
            terms.append(z3.If(_z(value), 1, 0))
        elif value:
            n += 1
    if not terms:
        return n
    return SymInt(z3.Sum(terms) + n)


def _in(x: Any, coll: Any) -> Any:
    """``x in coll`` without the ``bool`` Python forces on ``__contains__``'s answer."""
    if isinstance(coll, SymSet):
        return coll.__contains__(x)
    if isinstance(coll, (tuple, frozenset, set)) and isinstance(x, SymInt):
        return _any(e == x for e in coll)
    return x in coll


def _ids(x: Any, n: int, body: Callable[[Any], Any]) -> Any:
    """``1 <= x <= n and body(x)``: for a symbolic ``x``, ``body(k)`` of the id ``k`` it equals."""
    if not isinstance(x, SymInt):
        return 1 <= x <= n and body(x)
    return _any(_and(lambda k=k: x == k, lambda k=k: body(k)) for k in range(1, n + 1))


_HELPERS = {f.__name__: f for f in (_and, _or, _not, _all, _any, _guarded, _count, _in, _ids)}
_IDS_ARG = "_id_"


def _thunk(node: ast.expr) -> ast.Lambda:
    return ast.Lambda(args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[]),
                      body=node)


def _call(name: str, *args: ast.expr) -> ast.Call:
    return ast.Call(func=ast.Name(name, ast.Load()), args=list(args), keywords=[])


class _Replace(ast.NodeTransformer):
    """Replaces every occurrence of one expression (by its dump) with a name."""

    def __init__(self, dump: str, name: str) -> None:
        self.dump = dump
        self.name = name

    def visit(self, node: ast.AST) -> ast.AST:  # type: ignore[override]
        if isinstance(node, ast.expr) and ast.dump(node) == self.dump:
            return ast.Name(self.name, ast.Load())
        return super().visit(node)


class _Rewrite(ast.NodeTransformer):
    """The combinators for the constructs that fork; everything else stays as written."""

    def visit_BoolOp(self, node: ast.BoolOp) -> ast.expr:
        first = node.values[0]
        if isinstance(node.op, ast.And) and len(node.values) == 2:
            ids = self._ids(first, node.values[1])
            if ids is not None:
                return ids
        values = [_thunk(self.visit(v)) for v in node.values]
        return _call("_and" if isinstance(node.op, ast.And) else "_or", *values)

    def _ids(self, check: ast.expr, body: ast.expr) -> ast.expr | None:
        """``1 <= X <= N and B`` with an int constant N: B as a function of the id X."""
        if not (isinstance(check, ast.Compare) and len(check.ops) == 2
                and all(isinstance(op, ast.LtE) for op in check.ops)
                and isinstance(check.left, ast.Constant) and check.left.value == 1
                and isinstance(check.comparators[1], ast.Constant) and type(check.comparators[1].value) is int):
            return None
        x = check.comparators[0]
        replaced = _Replace(ast.dump(x), _IDS_ARG).visit(body)
        fn = ast.Lambda(args=ast.arguments(posonlyargs=[], args=[ast.arg(_IDS_ARG)], kwonlyargs=[],
                                           kw_defaults=[], defaults=[]), body=self.visit(replaced))
        return _call("_ids", self.visit(x), check.comparators[1], fn)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.expr:
        if isinstance(node.op, ast.Not):
            return _call("_not", self.visit(node.operand))
        return self.generic_visit(node)

    def visit_Compare(self, node: ast.Compare) -> ast.expr:
        operands = [node.left] + node.comparators
        parts: list[ast.expr] = []
        for op, a, b in zip(node.ops, operands, operands[1:]):
            a, b = self.visit(a), self.visit(b)
            if isinstance(op, ast.In):
                parts.append(_call("_in", a, b))
            elif isinstance(op, ast.NotIn):
                parts.append(_call("_not", _call("_in", a, b)))
            else:
                parts.append(ast.Compare(left=a, ops=[op], comparators=[b]))
        # A chain evaluates its middle operands once in Python; here twice, which the plain
        # attribute reads and arithmetic of the templates do not notice.
        return parts[0] if len(parts) == 1 else _call("_and", *(_thunk(p) for p in parts))

    def visit_Call(self, node: ast.Call) -> ast.expr:
        if (isinstance(node.func, ast.Name) and node.func.id in ("all", "any", "sum") and len(node.args) == 1
                and not node.keywords and isinstance(node.args[0], ast.GeneratorExp)):
            gen = node.args[0]
            comps = gen.generators
            guards = [g for c in comps for g in c.ifs]
            loops = [ast.comprehension(target=c.target, iter=self.visit(c.iter), ifs=[], is_async=0) for c in comps]
            guard = guards[0] if len(guards) == 1 else ast.BoolOp(ast.And(), guards) if guards else None
            if node.func.id == "sum":
                if not (isinstance(gen.elt, ast.Constant) and gen.elt.value == 1 and type(gen.elt.value) is int):
                    return self.generic_visit(node)
                elt: ast.expr = self.visit(guard) if guard is not None else ast.Constant(True)
                return _call("_count", ast.GeneratorExp(elt=elt, generators=loops))
            body = self.visit(gen.elt)
            if guard is not None:
                g = self.visit(guard)
                body = _call("_guarded", _thunk(g), _thunk(body)) if node.func.id == "all" else \
                    _call("_and", _thunk(g), _thunk(body))
            return _call("_" + node.func.id, ast.GeneratorExp(elt=body, generators=loops))
        return self.generic_visit(node)


def branch_free(expr: str, names: dict[str, Any]) -> Callable[..., Any]:
    """``lambda p, s: expr`` with the forking constructs replaced by the combinators (``names``:
    the globals the expression reads, its enums)."""
    tree = ast.parse(expr, mode="eval")
    body = _Rewrite().visit(tree.body)
    fn = ast.Expression(body=ast.Lambda(
        args=ast.arguments(posonlyargs=[], args=[ast.arg("p"), ast.arg("s")], kwonlyargs=[], kw_defaults=[],
                           defaults=[]), body=body))
    ast.fix_missing_locations(fn)
    code = compile(fn, "<branch-free candidate>", "eval")
    return _unguarded(eval(code, {**names, **_HELPERS}))  # noqa: S307 - compiled from the templates' text


def _unguarded(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` run without the executor's guard (``checker/symbolic/guard.py``), whose profile hook
    inspects every call for spec code that reads a mutable global, a clock or randomness. A
    compiled candidate runs no spec code: only the combinators, reads of the state's dataclass
    fields, the enums it was given, builtins and the symbolic values' own methods. The hook was
    more than half of the time of a candidate's formula (py-spy on a Houdini round of
    ``transactions``; 1.35 -> 0.54 CPU s for 647 controller candidates on its 9 pre-state shapes)."""

    def run(p: Any, s: Any) -> Any:
        hook = sys.getprofile()
        sys.setprofile(None)
        try:
            return fn(p, s)
        finally:
            sys.setprofile(hook)

    return run
