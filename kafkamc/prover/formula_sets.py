"""Invariants and constraints recompiled so that the sets they build stay symbolic: what made
``transactions``' ``no_hanging_transaction`` (KIP-890, KAFKA-14402) affordable in ``bmc``'s relation.

``{entry.epoch for entry in d.log[first:] if entry.pid == pid}`` hashes each symbolic epoch, which
the executor refuses; the relation then ran the invariant once per value of every epoch of the
log (89,062 paths, 73.2 s CPU on a shape with three entries in one log), and the filter forked on
every entry. ``with_symbolic_sets(fn)`` compiles the same source with

- ``{E for ... if C}`` as ``collect((C, lambda: E) for ...)``: the last condition of the last
  ``for`` becomes the element's condition instead of a fork, the other conditions stay as written;
- ``{a, b}`` as ``display(a, b)``;
- ``max(s)``/``min(s)`` as ``max_(s)``/``min_(s)``, a term when ``s`` is a symbolic set of ints;

(``kafkamc/checker/symbolic/setbuild.py``). On concrete values each is Python's own value (a test
compares every state ``check`` reaches). A comprehension with an assignment expression, ``await``
or ``yield`` inside, a starred display, or a function whose source is not available is left as
written (``recompile.py`` keeps the spec's file name and line numbers).
"""

from __future__ import annotations

import ast
import types
from typing import Any, Callable

from kafkamc.checker.symbolic import setbuild as _setbuild
from kafkamc.prover.recompile import loaded, namespace, parsed

__all__ = ["with_symbolic_sets"]

_K = "_kmc_sets"  # the runtime module's name in a recompiled function's globals

_functions: dict[Any, Callable[..., Any]] = {}
_namespaces: dict[str, dict[str, Any]] = {}


def with_symbolic_sets(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` recompiled (and the functions of its module it calls); ``fn`` itself when its
    source is not available, it closes over variables, or it builds no set."""
    done = _functions.get(fn)
    if done is None:
        done = fn
        if isinstance(fn, types.FunctionType) and not fn.__closure__:
            ns = namespace(fn.__globals__, _namespaces, (_K, _setbuild), _compiled, _functions)
            done = _compiled(fn, ns) or fn
        _functions[fn] = done
    return done


def _compiled(fn: types.FunctionType, ns: dict[str, Any]) -> Any:
    source = parsed(fn)
    if source is None:
        return None
    tree, fdef = source
    rewrite = _Rewrite(_bound_names(fdef) | set(ns) - {_K})
    fdef.body = [rewrite.visit(st) for st in fdef.body]
    return loaded(tree, fdef, fn, ns) if rewrite.changed else None


def _bound_names(fdef: ast.FunctionDef) -> set[str]:
    """Every name the function binds anywhere (a local ``max`` is not the builtin)."""
    out = {a.arg for a in ast.walk(fdef.args) if isinstance(a, ast.arg)}
    out.update(n.id for n in ast.walk(fdef) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load))
    out.update(n.name for n in ast.walk(fdef) if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n is not fdef)
    return out


def _k(attr: str) -> ast.Attribute:
    return ast.Attribute(ast.Name(_K, ast.Load()), attr, ast.Load())


def _thunk(e: ast.expr) -> ast.Lambda:
    return ast.Lambda(args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[]), body=e)


def _has(node: ast.AST, kinds: tuple[type, ...]) -> bool:
    return any(isinstance(n, kinds) for n in ast.walk(node))


_SCOPE_SENSITIVE = (ast.NamedExpr, ast.Yield, ast.YieldFrom, ast.Await)


class _Rewrite(ast.NodeTransformer):
    def __init__(self, shadowed: set[str]) -> None:
        self.shadowed = shadowed
        self.changed = False

    def visit_SetComp(self, node: ast.SetComp) -> ast.expr:
        node = self.generic_visit(node)
        # An assignment expression binds in the enclosing scope, which a lambda would change.
        if _has(node, _SCOPE_SENSITIVE) or any(g.is_async for g in node.generators):
            return node
        last = node.generators[-1]
        cond: ast.expr = ast.Constant(True)
        if last.ifs:
            cond = last.ifs[-1]
            last.ifs = last.ifs[:-1]
        pairs = ast.GeneratorExp(elt=ast.Tuple([cond, _thunk(node.elt)], ast.Load()), generators=node.generators)
        self.changed = True
        return ast.Call(func=_k("collect"), args=[pairs], keywords=[])

    def visit_Set(self, node: ast.Set) -> ast.expr:
        node = self.generic_visit(node)
        if any(isinstance(e, ast.Starred) for e in node.elts):
            return node
        self.changed = True
        return ast.Call(func=_k("display"), args=node.elts, keywords=[])

    def visit_Call(self, node: ast.Call) -> ast.expr:
        node = self.generic_visit(node)
        f = node.func
        if isinstance(f, ast.Name) and f.id in ("max", "min") and f.id not in self.shadowed:
            self.changed = True
            return ast.Call(func=_k(f.id + "_"), args=node.args, keywords=node.keywords)
        return node
