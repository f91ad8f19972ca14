"""Spec functions recompiled so that the symbolic executor runs both sides of a condition on one
path instead of forking: what makes ``bmc``'s transition relation affordable.

An action run symbolically over a whole shape of the domain forks at every ``if`` on a state
field, and a loop over brokers, members or replicas multiplies the forks of its iterations: the
decisions of iteration 1 stay on the path of every successor yielded in iteration 2 (a profile of
``controller -p brokers=4``'s ``_send`` put 3,784 of its first 4,000 paths on one ``sorted`` and
2,187 on ``r in bag``). ``predicated(fn)`` compiles the same source with

- ``if C: A else: B`` whose branches only bind locals, yield, and call functions that mutate
  nothing: both branches run, each under its guard (``merge.py``), and the locals they bind are
  joined into one value per name; ``continue`` and an early ``return`` become ``else`` branches
  first (the rest of the loop body or function is the else side);
- ``A if C else B``, ``and``, ``or``, ``not``, ``==``, ``!=``, ``in``, ``len``, ``any``, ``all`` and
  iteration over a symbolic set as branch-free combinators (``merge.py``).

On concrete values every rewritten construct is Python's own (tests compare the successors of
every reached state of the bundled specs); anything the rewrite does not prove harmless (a list
mutated in a branch, a ``try``, a call it cannot see into) is left as written, so the executor
forks there exactly as before. The recompiled code keeps the spec's file name and line numbers,
so the executor's guard inspects it as spec code and errors name the spec's lines.
"""

from __future__ import annotations

import ast
import builtins
import copy
import dataclasses
import enum
import inspect
import textwrap
import types
from typing import Any, Callable

from kafkamc.prover import merge as _merge_module
from kafkamc.prover.liveness import closure_reads, live_after, live_in, loop_head
from kafkamc.prover.recompile import loaded, namespace, parsed

__all__ = ["predicated", "LABEL"]

LABEL = "\u27e8label\u27e9"  # what an action's f-string label is in the relation
_K = "_kmc"  # the runtime module's name in a recompiled function's globals
_RET = "_kmc_ret"
_BROKE = "_kmc_broke"  # a loop's flag saying it broke (``_Rewrite.breaks``): joined like the spec's locals
_MUTATORS = frozenset({"append", "add", "extend", "update", "pop", "remove", "discard", "insert", "clear",
                       "setdefault", "sort", "reverse", "popitem", "__set__", "__setitem__", "__delitem__",
                       "intersection_update", "difference_update", "symmetric_difference_update", "send",
                       "throw", "close"})
_PURE_BUILTINS = frozenset({
    "len", "min", "max", "sorted", "tuple", "frozenset", "set", "list", "dict", "range", "enumerate", "zip",
    "any", "all", "sum", "abs", "isinstance", "type", "int", "bool", "str", "reversed", "iter", "map",
    "filter", "repr", "format", "divmod", "hash", "getattr", "hasattr", "round", "chr", "ord", "slice",
})
_FRESH_CALLS = frozenset({"list", "dict", "set"})
_FRESH_ITERABLES = frozenset({"sorted", "list", "dict", "set", "tuple", "frozenset", "range"})  # a new object
_INTROSPECTION = frozenset({"locals", "vars", "eval", "exec", "dir"})  # read locals by name

_functions: dict[Any, Callable[..., Any]] = {}
_namespaces: dict[str, dict[str, Any]] = {}
_purity: dict[Any, bool] = {}


class _Cannot(Exception):
    """This scope's early exits cannot be restructured: it is left as written."""


def _without_continue(body: list[ast.stmt]) -> list[ast.stmt]:
    """A loop body with its ``continue`` statements turned into ``else`` branches (the rest of the
    body), or the body as written when they cannot be."""
    if not _exits(body, ast.Continue):
        return body
    try:
        return _restructure(body, ast.Continue, lambda _s: [ast.Pass()])
    except _Cannot:
        return body


def predicated(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The branch-free recompilation of ``fn`` (and of the functions of its module it calls);
    ``fn`` itself when its source is not available."""
    done = _functions.get(fn)
    if done is None:
        done = _functions[fn] = _recompile(fn)
    return done


def _recompile(fn: Any) -> Any:
    if not isinstance(fn, types.FunctionType):
        return fn
    ns = _namespace(fn.__globals__)
    if fn.__closure__:
        # A decorator's wrapper (``@_tracking``): recompiled too, so that it takes the guarded
        # items of the function it wraps with their guards; the functions it closes over
        # recompiled, its other cells kept as they are (a later rebinding stays seen). When its
        # source cannot be, its own code as written.
        try:
            contents = [c.cell_contents for c in fn.__closure__]
        except ValueError:
            return fn  # a variable not yet bound: nothing to recompile it with
        cells = tuple(types.CellType(predicated(v)) if isinstance(v, types.FunctionType) else c
                      for c, v in zip(fn.__closure__, contents))
        made = _compiled(fn, ns, [c.cell_contents for c in cells])
        made = getattr(made, "__kmc_generator__", made)
        code = fn.__code__ if made is None else made.__code__
        new = types.FunctionType(code, ns, fn.__name__, fn.__defaults__, cells)
        new.__kwdefaults__ = fn.__kwdefaults__
        new.__qualname__ = fn.__qualname__
        return new if made is None else _yielding(new)
    return _compiled(fn, ns) or fn


def _namespace(globs: dict[str, Any]) -> dict[str, Any]:
    """A copy of a module's globals whose functions are their recompiled versions."""
    return namespace(globs, _namespaces, (_K, _merge_module), _compiled, _functions)


def _compiled(fn: types.FunctionType, ns: dict[str, Any], free: list[Any] | None = None) -> Any:
    """``fn`` recompiled in ``ns``, or None; ``free``: the values of its closure's variables."""
    source = parsed(fn)
    if source is None:
        return None
    tree, fdef = source
    if _has(fdef, (ast.Try, ast.Global, ast.Nonlocal)):
        return None
    _Rewrite(ns).function(fdef)
    return _yielding(loaded(tree, fdef, fn, ns, free))


def _yielding(made: Any) -> Any:
    """``made``, a recompiled generator function returning its generator as ``items.Yielded``:
    a consumer that does not know guards settles the items a region yielded under a condition."""
    if made is None or not inspect.isgeneratorfunction(made):
        return made

    def run(*args: Any, **kwargs: Any) -> Any:
        return _merge_module.Yielded(made(*args, **kwargs))

    run.__name__, run.__qualname__, run.__doc__ = made.__name__, made.__qualname__, made.__doc__
    run.__kmc_generator__ = made  # type: ignore[attr-defined]
    return run


# -- AST helpers ---------------------------------------------------------------------------------


def _target_read_after(st: ast.For, live: frozenset[str]) -> bool:
    """Whether the loop's target may be read once the loop is over: a name live after it, or a
    target that is not only names (an attribute or an item, stored where anything may read it)."""
    if not _plain_target(st.target):
        return True
    return any(isinstance(n, ast.Name) and n.id in live for n in ast.walk(st.target))


def _has(node: ast.AST, kinds: tuple[type, ...]) -> bool:
    return any(isinstance(n, kinds) for n in ast.walk(node))


def _own_nodes(stmts: list[ast.stmt], skip_loops: bool) -> Any:
    """The nodes of ``stmts``, not descending into nested functions, lambdas, classes, nor (with
    ``skip_loops``) into a nested loop's body: its continue and break are its own."""
    todo: list[ast.AST] = list(stmts)
    while todo:
        n = todo.pop()
        yield n
        if skip_loops and isinstance(n, (ast.For, ast.While)):
            todo.extend(n.orelse)
            continue
        for child in ast.iter_child_nodes(n):
            if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                todo.append(child)


def _is_generator(fdef: ast.FunctionDef) -> bool:
    return any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in _own_nodes(fdef.body, False))


def _name(x: str, ctx: Any = None) -> ast.Name:
    return ast.Name(x, ctx or ast.Load())


def _k(attr: str) -> ast.Attribute:
    return ast.Attribute(_name(_K), attr, ast.Load())


def _call(func: ast.expr, *args: ast.expr) -> ast.Call:
    return ast.Call(func=func, args=list(args), keywords=[])


def _thunk(e: ast.expr) -> ast.Lambda:
    return ast.Lambda(args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[]), body=e)


def _stores(stmts: list[ast.stmt]) -> list[str]:
    """Local names bound by ``stmts`` (assignments, loop targets), in first-seen order."""
    out: dict[str, None] = {}
    for n in _walk_in_order(stmts):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            out[n.id] = None
    return [x for x in out if not x.startswith("_kmc") or x == _RET or x.startswith(_BROKE)]


def _walk_in_order(stmts: list[ast.stmt]) -> Any:
    for s in stmts:
        for n in ast.walk(s):
            yield n


# -- early exits: continue and return as else branches -------------------------------------------

def _exits(stmts: list[ast.stmt], kind: type) -> bool:
    return any(isinstance(n, kind) for n in _own_nodes(stmts, kind in (ast.Continue, ast.Break)))


def _ends(stmts: list[ast.stmt], kind: type) -> bool:
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, kind):
        return True
    return isinstance(last, ast.If) and _ends(last.body, kind) and _ends(last.orelse, kind)


def _restructure(stmts: list[ast.stmt], kind: type, strip: Callable[[ast.stmt], list[ast.stmt]]) -> list[ast.stmt]:
    """``stmts`` with every exit of ``kind`` at the end of its branch: the statements after an
    ``if`` that exits on one side become that ``if``'s other side. Exits are then replaced by
    ``strip(exit)``. Raises _Cannot when an exit sits where this cannot move it (in a loop, a
    ``with``)."""
    out: list[ast.stmt] = []
    for i, st in enumerate(stmts):
        if isinstance(st, kind):
            return out + strip(st)  # what follows is never run
        if isinstance(st, ast.If) and (_exits(st.body, kind) or _exits(st.orelse, kind)):
            rest = stmts[i + 1:]
            body = st.body if _ends(st.body, kind) else st.body + rest
            # The rest runs on both sides when neither exits: a copy, so that each node is in one place.
            orelse = st.orelse if _ends(st.orelse, kind) else st.orelse + (
                copy.deepcopy(rest) if body is not st.body else rest)
            new = ast.If(test=st.test, body=_restructure(body, kind, strip) or [ast.Pass()],
                         orelse=_restructure(orelse, kind, strip))
            return out + [new]
        if _exits([st], kind):
            raise _Cannot()
        out.append(st)
    return out


# -- what a guarded branch may contain ------------------------------------------------------------

class _Pure:
    """Whether code only binds locals and yields: no mutation a second branch could see."""

    def __init__(self, ns: dict[str, Any]) -> None:
        self.ns = ns
        self.item_lists: frozenset[str] = frozenset()  # lists of guarded items (``items.py``)
        self.slot_targets: frozenset[str] = frozenset()  # the item a loop over such a list is at

    def slot_write(self, v: ast.expr, ns: dict[str, Any], fresh: set[str]) -> bool:
        """``Cls.field.__set__(item, value)`` (a slot written in place) on the item the loop is at:
        run under the item's condition, see ``merge.members``."""
        if not (isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and not v.keywords and len(v.args) == 2
                and isinstance(v.args[0], ast.Name) and v.args[0].id in self.slot_targets):
            return False
        target = ns.get(v.func.id)
        return (isinstance(target, types.MethodWrapperType) and target.__name__ == "__set__"
                and isinstance(getattr(target, "__self__", None), types.MemberDescriptorType)
                and self.expr(v.args[1], ns, fresh))

    def callee(self, func: ast.expr, ns: dict[str, Any], fresh: set[str]) -> bool:
        if isinstance(func, ast.Attribute):
            if isinstance(func.value, ast.Name) and func.value.id == _K:
                return True
            if func.attr in _MUTATORS:
                return _root(func.value) in fresh
            return self.expr(func.value, ns, fresh)
        if not isinstance(func, ast.Name):
            return False
        target = ns.get(func.id, getattr(builtins, func.id, None) if func.id in _PURE_BUILTINS else None)
        if target is None:
            return False
        if isinstance(target, types.BuiltinFunctionType) or target in (tuple, frozenset, list, dict, set, int, str,
                                                                         bool, range, enumerate, zip, reversed,
                                                                         map, filter, slice, type):
            return func.id in _PURE_BUILTINS
        if isinstance(target, type):
            return dataclasses.is_dataclass(target) or issubclass(target, enum.Enum)
        if isinstance(target, types.FunctionType):
            # A recompiled generator is judged by the function it wraps (``_yielding``).
            return _pure_function(getattr(target, "__kmc_generator__", target), self)
        return False

    def expr(self, e: ast.AST, ns: dict[str, Any], fresh: set[str]) -> bool:
        for n in ast.walk(e):
            if isinstance(n, (ast.NamedExpr, ast.Await)):
                return False
            if isinstance(n, ast.Call) and not self.callee(n.func, ns, fresh) and not _next_of_made(n, ns):
                return False
        return True

    def block(self, stmts: list[ast.stmt], in_loop: bool = False, fresh: frozenset[str] = frozenset(),
              items: bool = True) -> bool:
        """Whether ``stmts`` only bind locals, yield, and mutate containers named in ``fresh``
        (made by this code itself: a region's own lists) and, with ``items``, the lists of
        guarded items. A region passes ``items=False``: it runs in an explorer of its own whose
        guards do not hold its condition, and later paths replay what it yielded without running
        it again, so an append there would be stored unguarded and lost on replay."""
        ns = self.ns
        if items:
            fresh = fresh | self.item_lists
        f = set(fresh)
        for st in stmts:
            if isinstance(st, ast.Assign):
                if not all(_plain_target(t) or _root(t) in fresh for t in st.targets) or not self.expr(st.value, ns, f):
                    return False
            elif isinstance(st, (ast.AugAssign, ast.AnnAssign)):
                if not (isinstance(st.target, ast.Name) or _root(st.target) in fresh) or (
                        st.value is not None and not self.expr(st.value, ns, f)):
                    return False
            elif isinstance(st, ast.Expr):
                v = st.value
                if isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute) and v.func.attr in _MUTATORS:
                    if not self.expr(v, ns, f):
                        return False
                elif self.slot_write(v, ns, f):
                    continue
                elif not isinstance(v, (ast.Yield, ast.YieldFrom)) or (v.value is not None and not self.expr(v.value, ns, f)):
                    return False
            elif isinstance(st, ast.Pass):
                continue
            elif isinstance(st, ast.If):
                if not self.expr(st.test, ns, f) or not self.block(st.body, in_loop, fresh, False) \
                        or not self.block(st.orelse, in_loop, fresh, False):
                    return False
            elif isinstance(st, ast.For):
                if not _plain_target(st.target) or not self.expr(st.iter, ns, f) \
                        or not self.block(st.body, True, fresh, False) or not self.block(st.orelse, in_loop, fresh, False):
                    return False
            elif isinstance(st, ast.While):
                if not self.expr(st.test, ns, f) or not self.block(st.body, True, fresh, False) \
                        or not self.block(st.orelse, in_loop, fresh, False):
                    return False
            elif isinstance(st, (ast.Break, ast.Continue)):
                if not in_loop:
                    return False
            else:
                return False
        return True


def _next_of_made(n: ast.Call, ns: dict[str, Any]) -> bool:
    """``next(x for ...)`` (or with a default): the iterator it advances is made right there."""
    return (isinstance(n.func, ast.Name) and n.func.id == "next" and "next" not in ns and not n.keywords
            and 1 <= len(n.args) <= 2 and isinstance(n.args[0], ast.GeneratorExp))


def _fresh_containers(stmts: list[ast.stmt], pure: "_Pure | None" = None, ns: dict[str, Any] | None = None) -> frozenset[str]:
    """Names every assignment of which (in ``stmts``) makes a new list, dict or set: a literal, a
    comprehension, ``list()``, or (given ``pure`` and ``ns``) a call of a function of the spec that
    mutates nothing it did not make and returns a list it made (``_epoch_cache``)."""
    made: dict[str, bool] = {}
    for n in _walk_in_order(stmts):
        if isinstance(n, ast.Assign) or (isinstance(n, ast.AnnAssign) and n.value is not None):
            v = n.value
            new = isinstance(v, (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp)) or (
                isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id in _FRESH_CALLS) or (
                pure is not None and isinstance(v, ast.Call) and isinstance(v.func, ast.Name)
                and _returns_fresh(ns.get(v.func.id), pure))
            for t in (n.targets if isinstance(n, ast.Assign) else [n.target]):
                for x in ast.walk(t):
                    if isinstance(x, ast.Name):
                        made[x.id] = made.get(x.id, True) and new
        elif isinstance(n, (ast.AugAssign, ast.AnnAssign, ast.For, ast.comprehension)):
            for x in ast.walk(n.target):  # an annotation without a value binds nothing new
                if isinstance(x, ast.Name):
                    made[x.id] = False
    return frozenset(k for k, v in made.items() if v)


_fresh_returns: dict[Any, bool] = {}


def _returns_fresh(fn: Any, pure: "_Pure") -> bool:
    """Whether ``fn`` is a spec function that mutates nothing it did not make and returns, on
    every return, a list, dict or set it made: its result is a new container nobody else holds."""
    if not isinstance(fn, types.FunctionType) or fn.__closure__:
        return False
    key = fn.__code__
    known = _fresh_returns.get(key)
    if known is not None:
        return known
    _fresh_returns[key] = False  # recursion: not assumed
    try:
        fdef = ast.parse(textwrap.dedent(inspect.getsource(fn))).body[0]
    except (OSError, TypeError, SyntaxError, IndentationError, IndexError):
        return False
    if not isinstance(fdef, ast.FunctionDef) or _is_generator(fdef) or not _pure_function(fn, pure):
        return False
    args = {a.arg for a in fdef.args.args + fdef.args.posonlyargs + fdef.args.kwonlyargs}
    ns = fn.__globals__ if fn.__globals__.get("__name__") != pure.ns.get("__name__") else pure.ns
    mine = _fresh_containers(fdef.body, pure, ns) - args
    returns = [n for n in _own_nodes(fdef.body, False) if isinstance(n, ast.Return)]
    verdict = bool(returns) and all(
        isinstance(r.value, (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp))
        or (isinstance(r.value, ast.Name) and r.value.id in mine) for r in returns)
    _fresh_returns[key] = verdict
    return verdict


def _plain_target(t: ast.expr) -> bool:
    if isinstance(t, ast.Name):
        return True
    if isinstance(t, (ast.Tuple, ast.List)):
        return all(_plain_target(x.value if isinstance(x, ast.Starred) else x) for x in t.elts)
    return False


def _root(e: ast.expr) -> str | None:
    while isinstance(e, (ast.Subscript, ast.Attribute)):
        e = e.value
    return e.id if isinstance(e, ast.Name) else None


def _pure_function(fn: types.FunctionType, pure: _Pure) -> bool:
    """A function that mutates nothing but containers it made itself (a list it fills)."""
    key = fn.__code__
    known = _purity.get(key)
    if known is not None:
        return known
    _purity[key] = True  # recursion: assumed pure while it is being looked at
    verdict = _judge(fn, pure)
    _purity[key] = verdict
    return verdict


def _judge(fn: types.FunctionType, pure: _Pure) -> bool:
    if fn.__closure__:
        return False
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError, IndentationError):
        return False
    fdef = tree.body[0]
    if _has(fdef, (ast.Global, ast.Nonlocal)):
        return False
    args = {a.arg for a in fdef.args.args + fdef.args.posonlyargs + fdef.args.kwonlyargs}
    ns = fn.__globals__ if fn.__globals__.get("__name__") != pure.ns.get("__name__") else pure.ns
    fresh = set(_fresh_containers(fdef.body, pure, ns)) - args
    for n in ast.walk(fdef):
        if isinstance(n, (ast.Attribute, ast.Subscript)) and isinstance(n.ctx, (ast.Store, ast.Del)):
            if isinstance(n, ast.Attribute) or _root(n) not in fresh:
                return False
        if isinstance(n, ast.Call) and not pure.callee(n.func, ns, fresh) and not _next_of_made(n, ns):
            return False
    return True


# -- lists of guarded items, and loops that break ---------------------------------------------------

def _item_lists(body: list[ast.stmt], params: set[str]) -> frozenset[str]:
    """Locals bound once, by ``x = []`` at the top of the function, and otherwise only appended to
    (``x.append(item)`` as a statement), iterated by a ``for``, returned or yielded from: what
    ``items.py`` keeps with each item's guard instead of forking where it is appended."""
    top = {st.targets[0].id for st in body if isinstance(st, ast.Assign) and len(st.targets) == 1
           and isinstance(st.targets[0], ast.Name) and _empty_list(st.value)}
    allowed: set[int] = set()
    for n in _own_nodes(body, False):
        v = n.value if isinstance(n, ast.Expr) else None
        if isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute) and v.func.attr == "append" \
                and isinstance(v.func.value, ast.Name) and len(v.args) == 1 and not v.keywords:
            allowed.add(id(v.func.value))
        elif isinstance(v, ast.YieldFrom) and isinstance(v.value, ast.Name):
            allowed.add(id(v.value))
        elif isinstance(n, ast.For) and isinstance(n.iter, ast.Name):
            allowed.add(id(n.iter))
        elif isinstance(n, ast.Return) and isinstance(n.value, ast.Name):
            allowed.add(id(n.value))
    stores: dict[str, int] = {}
    ok = set(top) - params
    for n in _walk_in_order(body):
        if isinstance(n, ast.Name) and n.id in top:
            if isinstance(n.ctx, ast.Store):
                stores[n.id] = stores.get(n.id, 0) + 1
            elif id(n) not in allowed:
                ok.discard(n.id)
        elif isinstance(n, (ast.Nonlocal, ast.Global)):
            ok -= set(n.names)
    return frozenset(x for x in ok if stores.get(x) == 1)


def _empty_list(e: ast.expr) -> bool:
    return (isinstance(e, ast.List) and not e.elts) or (
        isinstance(e, ast.Call) and isinstance(e.func, ast.Name) and e.func.id == "list" and not e.args
        and not e.keywords)


# -- the rewrite ----------------------------------------------------------------------------------

class _Rewrite(ast.NodeTransformer):
    def __init__(self, ns: dict[str, Any]) -> None:
        self.pure = _Pure(ns)
        self.n = 0
        self.gen = False
        self.names: dict[str, list[ast.Name]] = {}  # every occurrence of each local, after restructuring
        self.params: set[str] = set()
        self.closure: frozenset[str] = frozenset()  # read by a nested scope: live everywhere
        self.body: list[ast.stmt] = []  # the function's body, restructured

    def fresh(self) -> str:
        self.n += 1
        return f"_kmc_{self.n}"

    def function(self, fdef: ast.FunctionDef) -> None:
        gen = _is_generator(fdef)
        _Labels().visit(fdef)
        fdef.body = self.live(fdef.body, fdef)
        a = fdef.args
        params = {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs} | (
            {a.vararg.arg} if a.vararg else set()) | ({a.kwarg.arg} if a.kwarg else set())
        self.pure.item_lists = lists = _item_lists(fdef.body, params)
        for st in fdef.body:
            if isinstance(st, ast.Assign) and isinstance(st.targets[0], ast.Name) and st.targets[0].id in lists:
                st.value = _call(_k("items"))
        body = fdef.body
        if _exits(body, ast.Return):
            try:
                if gen:
                    def strip(st: ast.stmt) -> list[ast.stmt]:
                        if st.value is not None and not (isinstance(st.value, ast.Constant) and st.value.value is None):
                            raise _Cannot()
                        return [ast.Pass()]
                    body = _restructure(body, ast.Return, strip)
                else:
                    def strip(st: ast.stmt) -> list[ast.stmt]:
                        value = st.value if st.value is not None else ast.Constant(None)
                        return [ast.Assign(targets=[_name(_RET, ast.Store())], value=value)]
                    body = ([ast.Assign(targets=[_name(_RET, ast.Store())], value=ast.Constant(None))]
                            + _restructure(body, ast.Return, strip) + [ast.Return(value=_name(_RET))])
            except _Cannot:
                body = fdef.body
        self.gen = gen
        for n in _walk_in_order(body):
            if isinstance(n, ast.Name):
                self.names.setdefault(n.id, []).append(n)
        self.params = params
        self.body = body
        self.closure = closure_reads(ast.Module(body=body, type_ignores=[]))
        if any(isinstance(n, ast.Name) and n.id in _INTROSPECTION for n in _walk_in_order(body)):
            self.closure = frozenset(self.names)  # locals() and the like read every local: all live
        fdef.body = self.block(body, frozenset(), None)

    def live(self, stmts: list[ast.stmt], fdef: ast.FunctionDef) -> list[ast.stmt]:
        """``stmts`` without assignments of locals nothing reads (a label's parts, once the label
        is left out), when what they assign calls nothing that mutates."""
        while True:
            loaded = {n.id for n in ast.walk(fdef) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
            dead = [n for n in ast.walk(fdef) if isinstance(n, ast.Assign) and len(n.targets) == 1
                    and isinstance(n.targets[0], ast.Name) and n.targets[0].id not in loaded
                    and self.pure.expr(n.value, self.pure.ns, set())]
            if not dead:
                return fdef.body
            gone = {id(n) for n in dead}
            for n in ast.walk(fdef):
                for field in ("body", "orelse"):
                    block = getattr(n, field, None)
                    if isinstance(block, list) and any(id(x) in gone for x in block):
                        setattr(n, field, [x for x in block if id(x) not in gone] or ([ast.Pass()] if field == "body" else []))

    def _own(self, st: ast.If) -> bool:
        """Whether the locals the branches of ``st`` bind are theirs alone: bound and read
        nowhere else (the test included, and no parameter), so the branches may run as functions
        of their own."""
        inside = {id(n) for n in _walk_in_order(st.body + st.orelse)}
        for x in _stores(st.body + st.orelse):
            if x in self.params or any(id(n) not in inside for n in self.names.get(x, ())):
                return False
        return True

    def block(self, stmts: list[ast.stmt], live: frozenset[str], loop: Any) -> list[ast.stmt]:
        """``stmts`` rewritten; ``live``: the names read after the block, ``loop``: where its
        continue and break go (``liveness.py``)."""
        out: list[ast.stmt] = []
        for st, after in zip(stmts, live_after(stmts, live, loop)):
            out.extend(self.stmt(st, after, loop))
        return out

    def stmt(self, st: ast.stmt, live: frozenset[str], loop: Any) -> list[ast.stmt]:
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return [st]
        if isinstance(st, ast.For) and not isinstance(st, ast.AsyncFor):
            flagged = self.breaks(st, live)
            if flagged is not None:
                return self.block(flagged, live, loop)
            body = _without_continue(st.body)
            head = loop_head(st, body, live, loop)
            if _target_read_after(st, live | self.closure):
                # Python leaves the target at the last member the loop ran on; run over each
                # possible member under its membership, it would be left at the last possible one.
                return [ast.For(target=st.target, iter=self.visit(st.iter), body=self.block(body, head, (head, live)),
                                orelse=self.block(st.orelse, live, loop), type_comment=None)]
            # for x in S: each possible member of a symbolic set under its membership
            b = self.fresh()
            guarded = ast.If(test=_name(b), body=body, orelse=[])
            members = _call(_k("members"), self.visit(st.iter))
            written = self.each(st, body, live)
            if written is not None:
                return written
            inner = self.stmt(guarded, head, (head, live))
            new = ast.For(target=ast.Tuple([st.target, _name(b, ast.Store())], ast.Store()),
                          iter=members, body=inner, orelse=self.block(st.orelse, live, loop), type_comment=None)
            return [new]
        if isinstance(st, ast.While):
            body = _without_continue(st.body)
            head = loop_head(st, body, live, loop)
            _truth_only(st.test)
            return [ast.While(test=self.visit(st.test), body=self.block(body, head, (head, live)),
                              orelse=self.block(st.orelse, live, loop))]
        if isinstance(st, ast.If):
            return self.if_(st, live, loop)
        return [self.visit(st)]

    def each(self, st: ast.For, body: list[ast.stmt], live: frozenset[str]) -> list[ast.stmt] | None:
        """``for T in L: W`` whose body only writes slots of the records ``T`` names
        (``_set_visible(n, ...)``), binds nothing and jumps nowhere, over a list ``L`` bound once
        by a call and otherwise only returned: ``merge.each``, which explores each item apart on a
        copy of its records. None when it does not apply."""
        targets = frozenset(n.id for n in ast.walk(st.target) if isinstance(n, ast.Name))
        it = st.iter
        if st.orelse or not isinstance(it, ast.Name) or targets & (live | self.closure) or _stores(body) \
                or _has(ast.Module(body=body, type_ignores=[]), (ast.Break, ast.Continue, ast.Return, ast.Yield,
                                                                 ast.YieldFrom, ast.Await, ast.NamedExpr)):
            return None
        uses = self.names.get(it.id, ())
        binds = [n for n in uses if isinstance(n.ctx, ast.Store)]
        if it.id in self.params or it.id in self.closure or len(binds) != 1 or not self._bound_by_call(binds[0]):
            return None
        returned = {id(n.value) for n in _own_nodes(self.body, False) if isinstance(n, ast.Return) or (
            isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name)
            and n.targets[0].id == _RET)}
        if any(n is not it and n is not binds[0] and id(n) not in returned for n in uses):
            return None
        saved = self.pure.slot_targets
        self.pure.slot_targets = targets
        try:
            if not any(self.pure.slot_write(n.value, self.pure.ns, set()) for n in body if isinstance(n, ast.Expr)) \
                    or not self.pure.block(body):
                return None
        finally:
            self.pure.slot_targets = saved
        fn, item = self.fresh(), self.fresh()
        inner = ast.FunctionDef(
            name=fn, args=ast.arguments(posonlyargs=[], args=[ast.arg(item)], kwonlyargs=[], kw_defaults=[], defaults=[]),
            body=[ast.Assign(targets=[st.target], value=_name(item))] + self.block(body, frozenset(), None),
            decorator_list=[], returns=None, type_comment=None)
        return [inner, ast.Expr(_call(_k("each"), it, _name(fn), ast.Tuple([_name(x) for x in sorted(self.params)],
                                                                           ast.Load()), _call(_name("globals"))))]

    def _bound_by_call(self, name: ast.Name) -> bool:
        for n in _own_nodes(self.body, False):
            if isinstance(n, ast.Assign) and len(n.targets) == 1 and n.targets[0] is name:
                return isinstance(n.value, ast.Call)
        return False

    def breaks(self, st: ast.For, live: frozenset[str]) -> list[ast.stmt] | None:
        """A ``for`` whose ``break`` sits under a condition, as a loop that goes on with a flag
        saying whether it broke: a ``break`` under a symbolic condition cannot run both sides, a
        flag can (``leader_inc_high_watermark``'s ``for f in isr: if ...: ok = False; break``
        forked on every member). Only over a finite collection (checked when it runs: the loop as
        written otherwise, so an endless iterator still ends), and only when no code after the
        loop reads its target (one that broke leaves it at the item it broke on, the flag at the
        last one), whose target is names, and whose collection the body cannot change
        (``_unchanged``, else only an immutable one). None when it does not apply."""
        if getattr(st, "_kmc_as_written", False) or not any(isinstance(n, ast.Break) for n in _own_nodes(st.body, True)):
            return None
        # ``for o.x in xs`` would write o.x with the items past the break.
        if _target_read_after(st, live | self.closure):
            return None
        flag, it = _BROKE + self.fresh(), self.fresh()
        try:
            body = _restructure(copy.deepcopy(st.body), ast.Break,
                                lambda _s: [ast.Assign(targets=[_name(flag, ast.Store())], value=ast.Constant(True))])
        except _Cannot:
            return None
        flagged: list[ast.stmt] = [
            ast.Assign(targets=[_name(flag, ast.Store())], value=ast.Constant(False)),
            ast.For(target=copy.deepcopy(st.target), iter=_name(it),
                    body=[ast.If(test=ast.UnaryOp(ast.Not(), _name(flag)), body=body or [ast.Pass()], orelse=[])],
                    orelse=[], type_comment=None),
        ]
        if st.orelse:
            flagged.append(ast.If(test=ast.UnaryOp(ast.Not(), _name(flag)), body=copy.deepcopy(st.orelse), orelse=[]))
        as_written = ast.For(target=st.target, iter=_name(it), body=st.body, orelse=st.orelse, type_comment=None)
        as_written._kmc_as_written = True  # type: ignore[attr-defined]
        out = [ast.Assign(targets=[_name(it, ast.Store())], value=st.iter),
               ast.If(test=_call(_k("finite"), _name(it), ast.Constant(self._unchanged(st))), body=flagged,
                      orelse=[as_written])]
        for n in _walk_in_order(out):  # the new occurrences, for ``_own``
            if isinstance(n, ast.Name):
                self.names.setdefault(n.id, []).append(n)
        return out

    def _unchanged(self, st: ast.For) -> bool:
        """Whether the body of ``st`` cannot change the collection it iterates: one a builtin
        call makes right there, or a named one the body mutates nothing of (but the lists of
        guarded items it appends to). Past the break, the flagged loop goes on iterating where
        Python stopped: a dict or set changed before the break would raise there."""
        it = st.iter
        root = _root(it)
        if root is None:
            return (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id in _FRESH_ITERABLES
                    and it.func.id not in self.pure.ns)
        return self.pure.block(st.body, True, self.pure.item_lists - {root}, items=False)

    def if_(self, st: ast.If, live: frozenset[str], loop: Any) -> list[ast.stmt]:
        pure = self.pure
        plain_test = pure.expr(st.test, pure.ns, set())
        # A region runs each branch as a function of its own, once per path: it may fill lists it makes.
        region = (plain_test and self.gen and self._own(st)
                  and any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in _own_nodes(st.body + st.orelse, False)))
        if region:
            mine = _fresh_containers(st.body + st.orelse)
            region = pure.block(st.body, fresh=mine, items=False) and pure.block(st.orelse, fresh=mine, items=False)
        predicable = region or (plain_test and pure.block(st.body) and pure.block(st.orelse))
        apart = None if region or self.gen or not predicable else self._apart(st, live, loop)
        _truth_only(st.test)
        test = self.visit(st.test)
        body = self.block(st.body, live, loop) or [ast.Pass()]
        orelse = self.block(st.orelse, live, loop)
        if not predicable:
            return [ast.If(test=test, body=body, orelse=orelse)]
        s = self.fresh()
        if region:
            return self.region(s, test, body, orelse)
        if apart is not None:
            return self.appended_apart(s, apart, test, body, orelse)
        names = _stores(st.body + st.orelse)
        split = ast.Compare(left=ast.Attribute(_name(s), "__class__", ast.Load()), ops=[ast.Is()],
                            comparators=[_k("Split")])
        is_not = lambda v: ast.Compare(left=_name(s), ops=[ast.IsNot()], comparators=[ast.Constant(v)])  # noqa: E731
        out: list[ast.stmt] = [ast.Assign(targets=[_name(s, ast.Store())], value=_call(_k("test"), test))]
        if names:
            out.append(ast.If(test=split, body=[_capture(f"{s}_o_{x}", x) for x in names], orelse=[]))
        out.append(ast.If(test=is_not(False), body=_side(s, True, body), orelse=[]))
        # Only a name read afterwards is joined; a dead one keeps what the else side left (the
        # else side still starts from the values before the if).
        joined = [x for x in names if x in live or x in self.closure]
        if names:
            out.append(ast.If(test=split, body=[_capture(f"{s}_a_{x}", x) for x in joined]
                              + [_restore(x, _name(f"{s}_o_{x}")) for x in names], orelse=[]))
        out.append(ast.If(test=is_not(True), body=_side(s, False, orelse or [ast.Pass()]), orelse=[]))
        if joined:
            out.append(ast.If(test=split, body=[_capture(f"{s}_b_{x}", x) for x in joined] + [
                _restore(x, _call(_k("ite"), _name(s), _name(f"{s}_a_{x}"), _name(f"{s}_b_{x}"))) for x in joined],
                orelse=[]))
        return out

    def region(self, s: str, test: ast.expr, body: list[ast.stmt], orelse: list[ast.stmt]) -> list[ast.stmt]:
        """``if`` whose branches only yield: each branch a generator function of its own, whose
        paths the executor explores apart (``merge.region``)."""
        sides = []
        for tag, block in (("t", body), ("f", orelse)):
            sides.append(ast.FunctionDef(
                name=f"{s}_{tag}", args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[]),
                body=block + [ast.Expr(ast.YieldFrom(ast.Tuple([], ast.Load())))], decorator_list=[], returns=None,
                type_comment=None))
        return [ast.Assign(targets=[_name(s, ast.Store())], value=_call(_k("test"), test)), *sides,
                ast.Expr(ast.YieldFrom(_call(_k("region"), _name(s), _name(f"{s}_t"), _name(f"{s}_f"))))]

    def _apart(self, st: ast.If, live: frozenset[str], loop: Any) -> str | None:
        """The list of guarded items the branches of ``st`` append to, when they may run as
        functions of their own explored apart (``appended_apart``): they append to that one list
        and use it no other way, jump nowhere, and every local they bind is theirs (read neither
        after the ``if`` nor before the branch binds it). None otherwise."""
        both = st.body + st.orelse
        if any(isinstance(n, (ast.Return, ast.Yield, ast.YieldFrom, ast.Await, ast.NamedExpr, ast.Global,
                              ast.Nonlocal)) for n in _own_nodes(both, False)) \
                or any(isinstance(n, (ast.Break, ast.Continue)) for n in _own_nodes(both, True)):
            return None
        lists = self.pure.item_lists
        appended = {n.value.func.value.id for n in _own_nodes(both, False)
                    if isinstance(n, ast.Expr) and isinstance(n.value, ast.Call) and isinstance(n.value.func, ast.Attribute)
                    and n.value.func.attr == "append" and isinstance(n.value.func.value, ast.Name)
                    and n.value.func.value.id in lists}
        if len(appended) != 1:
            return None
        (target,) = appended
        uses = [n for n in _walk_in_order(both) if isinstance(n, ast.Name) and n.id in lists]
        appends = {id(n.value.func.value) for n in _walk_in_order(both) if isinstance(n, ast.Expr)
                   and isinstance(n.value, ast.Call) and isinstance(n.value.func, ast.Attribute)
                   and isinstance(n.value.func.value, ast.Name)}
        if any(id(n) not in appends for n in uses):
            return None
        stores = set(_stores(both))
        if stores & (live | self.closure) or _RET in stores:
            return None
        if any(stores & live_in(block, live, loop) for block in (st.body, st.orelse)):
            return None
        return target

    def appended_apart(self, s: str, target: str, test: ast.expr, body: list[ast.stmt],
                       orelse: list[ast.stmt]) -> list[ast.stmt]:
        """``if`` whose branches only append to one list of guarded items: each branch a function
        of its own that appends to a list of its own and yields its items, explored apart as a
        region's branches are (``merge.region``): the forks inside (a log truncated at a symbolic
        offset) no longer multiply the paths of the code after it."""
        sides = []
        for tag, block in (("t", body), ("f", orelse)):
            sides.append(ast.FunctionDef(
                name=f"{s}_{tag}", args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[]),
                body=[ast.Assign(targets=[_name(target, ast.Store())], value=_call(_k("items")))] + (block or [])
                + [ast.Expr(ast.YieldFrom(_call(ast.Attribute(_name(target), "guarded", ast.Load()))))],
                decorator_list=[], returns=None, type_comment=None))
        return [ast.Assign(targets=[_name(s, ast.Store())], value=_call(_k("test"), test)), *sides,
                ast.Expr(_call(ast.Attribute(_name(target), "extend_guarded", ast.Load()),
                               _call(_k("apart"), _name(s), _name(f"{s}_t"), _name(f"{s}_f"))))]

    # -- expressions ---------------------------------------------------------------------------
    def visit_YieldFrom(self, node: ast.YieldFrom) -> ast.expr:
        # A recompiled generator's items pass on with their guards (``items.Yielded``).
        node = self.generic_visit(node)
        node.value = _call(_k("passed"), node.value)
        return node

    def visit_Lambda(self, node: ast.Lambda) -> ast.expr:
        return node  # its body runs where it is called: left as written

    def visit_IfExp(self, node: ast.IfExp) -> ast.expr:
        _truth_only(node.test)
        node = self.generic_visit(node)
        if _has(node, (ast.Yield, ast.YieldFrom, ast.NamedExpr)):
            return node
        return _call(_k("ifexp"), node.test, _thunk(node.body), _thunk(node.orelse))

    def visit_BoolOp(self, node: ast.BoolOp) -> ast.expr:
        node = self.generic_visit(node)
        if _has(node, (ast.Yield, ast.YieldFrom, ast.NamedExpr)):
            return node
        fn = "and_" if isinstance(node.op, ast.And) else "or_"
        if getattr(node, "_kmc_truth", False):
            fn += "t"  # only its truth is used: operands of any two types join
        return _call(_k(fn), node.values[0], *(_thunk(v) for v in node.values[1:]))

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.expr:
        if isinstance(node.op, ast.Not):
            _truth_only(node.operand)
        node = self.generic_visit(node)
        if isinstance(node.op, ast.Not):
            return _call(_k("not_"), node.operand)
        return node

    def visit_comprehension(self, node: ast.comprehension) -> ast.comprehension:
        for cond in node.ifs:
            _truth_only(cond)
        return self.generic_visit(node)

    def visit_Compare(self, node: ast.Compare) -> ast.expr:
        node = self.generic_visit(node)
        ops = {ast.Eq: "eq", ast.NotEq: "ne", ast.In: "in_"}
        if not any(type(op) in ops or isinstance(op, ast.NotIn) for op in node.ops):
            return node
        if _has(node, (ast.Yield, ast.YieldFrom, ast.NamedExpr, ast.Await)) or (len(node.ops) > 1 and _has(node, ast.Call)):
            return node  # a chain evaluates its middle operands once; keep it when that shows
        operands = [node.left] + node.comparators
        parts: list[ast.expr] = []
        for op, a, b in zip(node.ops, operands, operands[1:]):
            if isinstance(op, ast.NotIn):
                parts.append(_call(_k("not_"), _call(_k("in_"), a, b)))
            elif type(op) in ops:
                parts.append(_call(_k(ops[type(op)]), a, b))
            else:
                parts.append(ast.Compare(left=a, ops=[op], comparators=[b]))
        if len(parts) == 1:
            return parts[0]
        return _call(_k("and_"), parts[0], *(_thunk(p) for p in parts[1:]))

    def visit_Subscript(self, node: ast.Subscript) -> ast.expr:
        node = self.generic_visit(node)
        if not isinstance(node.ctx, ast.Load) or isinstance(node.slice, ast.Slice) or _has(
                node, (ast.Yield, ast.YieldFrom, ast.NamedExpr, ast.Await, ast.Starred)):
            return node
        return _call(_k("index_"), node.value, node.slice)

    def visit_BinOp(self, node: ast.BinOp) -> ast.expr:
        update = _update(node)
        if update is not None:
            seq, i, x = update
            return _call(_k("replace_at"), self.visit(seq), self.visit(i), self.visit(x))
        return self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> ast.expr:
        node = self.generic_visit(node)
        f = node.func
        if isinstance(f, ast.Name) and f.id in ("len", "any", "all", "sorted") and len(node.args) == 1 \
                and not node.keywords and f.id not in self.pure.ns:
            return _call(_k(f.id + "_"), node.args[0])
        return node


def _update(node: ast.BinOp) -> tuple[ast.expr, ast.expr, ast.expr] | None:
    """(t, i, x) of ``t[:i] + (x,) + t[i + 1:]`` (a tuple with position i replaced), when t and i
    are reads (names, attributes, items, arithmetic) that give the same value twice."""
    if not (isinstance(node.op, ast.Add) and isinstance(node.left, ast.BinOp) and isinstance(node.left.op, ast.Add)):
        return None
    head, one, tail = node.left.left, node.left.right, node.right
    if not (isinstance(head, ast.Subscript) and isinstance(head.slice, ast.Slice) and isinstance(tail, ast.Subscript)
            and isinstance(tail.slice, ast.Slice) and isinstance(one, ast.Tuple) and len(one.elts) == 1):
        return None
    hs, ts = head.slice, tail.slice
    if hs.lower is not None or hs.upper is None or hs.step is not None or ts.upper is not None \
            or ts.step is not None or ts.lower is None:
        return None
    nxt = ts.lower
    if not (isinstance(nxt, ast.BinOp) and isinstance(nxt.op, ast.Add) and isinstance(nxt.right, ast.Constant)
            and nxt.right.value == 1 and type(nxt.right.value) is int):
        return None
    if ast.dump(head.value) != ast.dump(tail.value) or ast.dump(hs.upper) != ast.dump(nxt.left):
        return None
    if not all(isinstance(n, (ast.Name, ast.Attribute, ast.Subscript, ast.BinOp, ast.Constant, ast.Load, ast.operator,
                              ast.expr_context)) for e in (head.value, hs.upper) for n in ast.walk(e)):
        return None
    return head.value, hs.upper, one.elts[0]


def _truth_only(e: ast.expr) -> None:
    """Mark the ``and``/``or`` of ``e`` (a condition, whose truth alone is used) as truth-only:
    ``if a and b`` asks ``bool(a) and bool(b)``, whatever values ``a`` and ``b`` are, so the two
    sides of a symbolic ``a`` join as bools where their values (a tuple, a bool) would not."""
    if isinstance(e, ast.BoolOp):
        e._kmc_truth = True  # type: ignore[attr-defined]
        for v in e.values:
            _truth_only(v)
    elif isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.Not):
        _truth_only(e.operand)


class _Labels(ast.NodeTransformer):
    """``(f"Label(...)", state)`` is ``(LABEL, state)``: the relation never reads a label, and
    making one forks on every member of a set it lists (``sorted(c.positions)``)."""

    def visit_Tuple(self, node: ast.Tuple) -> ast.expr:
        if len(node.elts) == 2 and isinstance(node.elts[0], ast.JoinedStr) and isinstance(node.ctx, ast.Load):
            node.elts[0] = ast.Constant(LABEL)
        return self.generic_visit(node)


def _capture(dst: str, src: str) -> ast.stmt:
    """``dst = src``, or UNBOUND when ``src`` is not bound."""
    return ast.Try(body=[ast.Assign(targets=[_name(dst, ast.Store())], value=_name(src))],
                   handlers=[ast.ExceptHandler(type=_name("NameError"), name=None, body=[
                       ast.Assign(targets=[_name(dst, ast.Store())], value=_k("UNBOUND"))])],
                   orelse=[], finalbody=[])


def _restore(name: str, value: ast.expr) -> ast.stmt:
    """``name = value``, or ``name`` unbound when value is UNBOUND."""
    tmp = f"_kmc_v_{name}"
    return ast.If(test=ast.Compare(left=ast.NamedExpr(target=_name(tmp, ast.Store()), value=value), ops=[ast.Is()],
                                   comparators=[_k("UNBOUND")]),
                  body=[ast.Try(body=[ast.Delete(targets=[_name(name, ast.Del())])],
                                handlers=[ast.ExceptHandler(type=_name("NameError"), name=None, body=[ast.Pass()])],
                                orelse=[], finalbody=[])],
                  orelse=[ast.Assign(targets=[_name(name, ast.Store())], value=_name(tmp))])


def _side(s: str, side: bool, body: list[ast.stmt]) -> list[ast.stmt]:
    """``body`` under the guard of one side of split ``s``; if it raises, the side is dropped."""
    exc = f"{s}_e"
    return [
        ast.Expr(_call(_k("enter_side"), _name(s), ast.Constant(side))),
        ast.Try(body=body,
                handlers=[ast.ExceptHandler(type=_name("Exception"), name=exc, body=[
                    ast.Expr(_call(_k("drop_side"), _name(s), ast.Constant(side), _name(exc)))])],
                orelse=[ast.Expr(_call(_k("leave_side"), _name(s)))], finalbody=[]),
    ]

