"""A spec function compiled again from its own source after a rewrite of its syntax tree, with the
spec's file name and line numbers (the executor's guard inspects it as spec code, errors name the
spec's lines), in a copy of its module's globals whose functions are rewritten the same way.

What the rewrite is belongs to its caller: ``formula_sets.py`` (invariants, their sets kept
symbolic) and ``predicated.py`` (the actions, branch-free; it parses and loads on its own, as it
also compiles a decorator's wrapper with its closure, and shares ``namespace``).
"""

from __future__ import annotations

import ast
import inspect
import textwrap
import types
from typing import Any, Callable

__all__ = ["parsed", "loaded", "namespace"]


def parsed(fn: types.FunctionType) -> tuple[ast.Module, ast.FunctionDef] | None:
    """The syntax tree of ``fn``'s source and its ``def`` (decorators dropped), or None when the
    source is not available or is not a plain ``def`` of that name."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError, IndentationError):
        return None
    fdef = tree.body[0] if tree.body else None
    if not isinstance(fdef, ast.FunctionDef) or fdef.name != fn.__name__:
        return None
    fdef.decorator_list = []
    return tree, fdef


def loaded(tree: ast.Module, fdef: ast.FunctionDef, fn: types.FunctionType, ns: dict[str, Any]) -> Any:
    """The function ``tree`` (rewritten from ``fn``) defines, with ``ns`` as its globals."""
    ast.fix_missing_locations(tree)
    ast.increment_lineno(tree, fn.__code__.co_firstlineno - 1)
    local: dict[str, Any] = {}
    exec(compile(tree, fn.__code__.co_filename, "exec"), ns, local)  # noqa: S102 - the spec's own source
    new = local[fdef.name]
    new.__defaults__ = fn.__defaults__
    new.__kwdefaults__ = fn.__kwdefaults__
    new.__qualname__ = fn.__qualname__
    return new


def namespace(globs: dict[str, Any], cache: dict[str, dict[str, Any]], runtime: tuple[str, Any],
              compile_one: Callable[[types.FunctionType, dict[str, Any]], Any],
              done: dict[Any, Any]) -> dict[str, Any]:
    """A copy of a module's globals (one per module in ``cache``) holding ``runtime`` (the name
    the rewritten code calls, and its module) and, for each function of the module that closes over
    nothing, ``compile_one``'s version of it when there is one (also recorded in ``done``)."""
    name = globs.get("__name__", "")
    ns = cache.get(name)
    if ns is not None and ns.get("__file__") == globs.get("__file__"):
        return ns
    ns = dict(globs)
    ns[runtime[0]] = runtime[1]
    cache[name] = ns
    for key, value in list(globs.items()):
        if isinstance(value, types.FunctionType) and value.__module__ == name and not value.__closure__:
            new = compile_one(value, ns)
            if new is not None:
                ns[key] = new
                done[value] = new
    return ns
