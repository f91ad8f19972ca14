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
from kafkamc.prover.liveness import closure_reads, live_after, loop_head
from kafkamc.prover.recompile import loaded, namespace, parsed

__all__ = ["predicated", "LABEL"]

LABEL = "\u27e8label\u27e9"  # what an action's f-string label is in the relation
_K = "_kmc"  # the runtime module's name in a recompiled function's globals
_RET = "_kmc_ret"
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
        # A decorator's wrapper (``@_tracking``): its own code as written, what it closes over
        # recompiled.
        cells = tuple(types.CellType(predicated(c.cell_contents)) if isinstance(c.cell_contents, types.FunctionType)
                      else c for c in fn.__closure__)
        new = types.FunctionType(fn.__code__, ns, fn.__name__, fn.__defaults__, cells)
        new.__kwdefaults__ = fn.__kwdefaults__
        return new
    return _compiled(fn, ns) or fn


def _namespace(globs: dict[str, Any]) -> dict[str, Any]:
    """A copy of a module's globals whose functions are their recompiled versions."""
    return namespace(globs, _namespaces, (_K, _merge_module), _compiled, _functions)


def _compiled(fn: types.FunctionType, ns: dict[str, Any]) -> Any:
    source = parsed(fn)
    if source is None or _has(source[1], (ast.Try, ast.Global, ast.Nonlocal)):
        return None
    tree, fdef = source
    _Rewrite(ns).function(fdef)
    return loaded(tree, fdef, fn, ns)


# -- AST helpers ---------------------------------------------------------------------------------

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
    return [x for x in out if not x.startswith("_kmc") or x == _RET]


def _walk_in_order(stmts: list[ast.stmt]) -> Any:
    for s in stmts:
        for n in ast.walk(s):
            yield n


# -- early exits: continue and return as else branches -------------------------------------------

def _exits(stmts: list[ast.stmt], kind: type) -> bool:
    return any(isinstance(n, kind) for n in _own_nodes(stmts, kind is ast.Continue))


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
            return _pure_function(target, self)
        return False

    def expr(self, e: ast.AST, ns: dict[str, Any], fresh: set[str]) -> bool:
        for n in ast.walk(e):
            if isinstance(n, (ast.NamedExpr, ast.Await)):
                return False
            if isinstance(n, ast.Call) and not self.callee(n.func, ns, fresh):
                return False
        return True

    def block(self, stmts: list[ast.stmt], in_loop: bool = False, fresh: frozenset[str] = frozenset()) -> bool:
        """Whether ``stmts`` only bind locals, yield, and mutate containers named in ``fresh``
        (made by this code itself: a region's own lists)."""
        ns = self.ns
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
                elif not isinstance(v, (ast.Yield, ast.YieldFrom)) or (v.value is not None and not self.expr(v.value, ns, f)):
                    return False
            elif isinstance(st, ast.Pass):
                continue
            elif isinstance(st, ast.If):
                if not self.expr(st.test, ns, f) or not self.block(st.body, in_loop, fresh) \
                        or not self.block(st.orelse, in_loop, fresh):
                    return False
            elif isinstance(st, ast.For):
                if not _plain_target(st.target) or not self.expr(st.iter, ns, f) \
                        or not self.block(st.body, True, fresh) or not self.block(st.orelse, in_loop, fresh):
                    return False
            elif isinstance(st, ast.While):
                if not self.expr(st.test, ns, f) or not self.block(st.body, True, fresh) \
                        or not self.block(st.orelse, in_loop, fresh):
                    return False
            elif isinstance(st, (ast.Break, ast.Continue)):
                if not in_loop:
                    return False
            else:
                return False
        return True


def _fresh_containers(stmts: list[ast.stmt]) -> frozenset[str]:
    """Names every assignment of which (in ``stmts``) makes a new list, dict or set."""
    made: dict[str, bool] = {}
    for n in _walk_in_order(stmts):
        if isinstance(n, ast.Assign):
            new = isinstance(n.value, (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp)) or (
                isinstance(n.value, ast.Call) and isinstance(n.value.func, ast.Name) and n.value.func.id in _FRESH_CALLS)
            for t in n.targets:
                for x in ast.walk(t):
                    if isinstance(x, ast.Name):
                        made[x.id] = made.get(x.id, True) and new
        elif isinstance(n, (ast.AugAssign, ast.AnnAssign, ast.For, ast.comprehension)):
            for x in ast.walk(n.target):
                if isinstance(x, ast.Name):
                    made[x.id] = False
    return frozenset(k for k, v in made.items() if v)


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
    fresh = set(_fresh_containers(fdef.body)) - args
    ns = fn.__globals__ if fn.__globals__.get("__name__") != pure.ns.get("__name__") else pure.ns
    for n in ast.walk(fdef):
        if isinstance(n, (ast.Attribute, ast.Subscript)) and isinstance(n.ctx, (ast.Store, ast.Del)):
            if isinstance(n, ast.Attribute) or _root(n) not in fresh:
                return False
        if isinstance(n, ast.Call) and not pure.callee(n.func, ns, fresh):
            return False
    return True


# -- the rewrite ----------------------------------------------------------------------------------

class _Rewrite(ast.NodeTransformer):
    def __init__(self, ns: dict[str, Any]) -> None:
        self.pure = _Pure(ns)
        self.n = 0
        self.gen = False
        self.names: dict[str, list[ast.Name]] = {}  # every occurrence of each local, after restructuring
        self.params: set[str] = set()
        self.closure: frozenset[str] = frozenset()  # read by a nested scope: live everywhere

    def fresh(self) -> str:
        self.n += 1
        return f"_kmc_{self.n}"

    def function(self, fdef: ast.FunctionDef) -> None:
        gen = _is_generator(fdef)
        _Labels().visit(fdef)
        fdef.body = self.live(fdef.body, fdef)
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
        a = fdef.args
        self.params = {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs} | (
            {a.vararg.arg} if a.vararg else set()) | ({a.kwarg.arg} if a.kwarg else set())
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
            body = _without_continue(st.body)
            head = loop_head(st, body, live, loop)
            # for x in S: each possible member of a symbolic set under its membership
            b = self.fresh()
            guarded = ast.If(test=_name(b), body=body, orelse=[])
            new = ast.For(target=ast.Tuple([st.target, _name(b, ast.Store())], ast.Store()),
                          iter=_call(_k("members"), self.visit(st.iter)), body=self.stmt(guarded, head, (head, live)),
                          orelse=self.block(st.orelse, live, loop), type_comment=None)
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

    def if_(self, st: ast.If, live: frozenset[str], loop: Any) -> list[ast.stmt]:
        pure = self.pure
        plain_test = pure.expr(st.test, pure.ns, set())
        # A region runs each branch as a function of its own, once per path: it may fill lists it makes.
        region = (plain_test and self.gen and self._own(st)
                  and any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in _own_nodes(st.body + st.orelse, False)))
        if region:
            mine = _fresh_containers(st.body + st.orelse)
            region = pure.block(st.body, fresh=mine) and pure.block(st.orelse, fresh=mine)
        predicable = region or (plain_test and pure.block(st.body) and pure.block(st.orelse))
        _truth_only(st.test)
        test = self.visit(st.test)
        body = self.block(st.body, live, loop) or [ast.Pass()]
        orelse = self.block(st.orelse, live, loop)
        if not predicable:
            return [ast.If(test=test, body=body, orelse=orelse)]
        s = self.fresh()
        if region:
            return self.region(s, test, body, orelse)
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

    # -- expressions ---------------------------------------------------------------------------
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

    def visit_Call(self, node: ast.Call) -> ast.expr:
        node = self.generic_visit(node)
        f = node.func
        if isinstance(f, ast.Name) and f.id in ("len", "any", "all", "sorted") and len(node.args) == 1 \
                and not node.keywords and f.id not in self.pure.ns:
            return _call(_k(f.id + "_"), node.args[0])
        return node


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

