"""Which locals of a function body may still be read after a statement: the live names that a
guarded ``if`` of ``predicated.py`` must join, and the dead ones it may leave as either side left
them.

A local bound on one side of a condition only (``nxt`` bound where the transaction has something
to end, and read only there) cannot be joined with its absence, so the path used to fork on the
condition; when no code that can run afterwards reads it before binding it again, its value after
the ``if`` is never observed, and neither side's value needs to survive.

Over-approximated wherever that is simpler, which only keeps a join that was not needed: a loop's
head is iterated to a fixed point, a statement this module does not know (``with``, ``try``,
``match``) reads everything it names and binds nothing, a ``continue`` or ``break`` inside one
may go to the head or the exit of the loop around it, and a name read by a nested function,
lambda or comprehension is live everywhere (it may run later, reading the binding of that
moment). A loop's ``else`` jumps for the loop around that loop.
"""

from __future__ import annotations

import ast
__all__ = ["live_after", "live_in", "loop_head", "closure_reads"]

# (live at the loop's head, live after the loop): where continue and break go.
_Loop = tuple[frozenset[str], frozenset[str]]


def closure_reads(fdef: ast.AST) -> frozenset[str]:
    """Names read inside a nested function, lambda or comprehension of ``fdef``."""
    out: set[str] = set()
    nested = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp,
              ast.GeneratorExp, ast.ClassDef)
    for node in ast.walk(fdef):
        if node is not fdef and isinstance(node, nested):
            out |= _reads(node)
    return frozenset(out)


def live_after(stmts: list[ast.stmt], out: frozenset[str], loop: _Loop | None) -> list[frozenset[str]]:
    """The names live after each statement of ``stmts`` when ``out`` is live after the block."""
    after: list[frozenset[str]] = [out] * len(stmts)
    live = out
    for i in range(len(stmts) - 1, -1, -1):
        after[i] = live
        live = _live_in(stmts[i], live, loop)
    return after


def loop_head(st: ast.For | ast.While, body: list[ast.stmt], out: frozenset[str],
              enclosing: _Loop | None) -> frozenset[str]:
    """The names live at the head of loop ``st`` (``body``: its body as it will run), ``out``
    live after it, ``enclosing``: where a continue or break of its ``else`` goes: the least fixed
    point of head = exit | (body's live-in - the loop target)."""
    exit_ = _block_in(st.orelse, out, enclosing) | (_reads(st.test) if isinstance(st, ast.While) else frozenset())
    bound = _bound(st.target) if isinstance(st, ast.For) else frozenset()
    head = exit_
    while True:
        inner = _block_in(body, head, (head, out)) - bound
        new = exit_ | inner
        if new == head:
            return head
        head = new


def live_in(stmts: list[ast.stmt], out: frozenset[str], loop: _Loop | None) -> frozenset[str]:
    """The names live before ``stmts`` when ``out`` is live after them."""
    return _block_in(stmts, out, loop)


def _block_in(stmts: list[ast.stmt], out: frozenset[str], loop: _Loop | None) -> frozenset[str]:
    live = out
    for st in reversed(stmts):
        live = _live_in(st, live, loop)
    return live


def _live_in(st: ast.stmt, live: frozenset[str], loop: _Loop | None) -> frozenset[str]:
    if isinstance(st, ast.Assign):
        killed: frozenset[str] = frozenset().union(*(_bound(t) for t in st.targets))
        return (live - killed) | _reads(st)
    if isinstance(st, ast.AnnAssign):
        return ((live - _bound(st.target)) if st.value is not None else live) | _reads(st)
    if isinstance(st, ast.AugAssign):
        return live | _reads(st) | _names(st.target)
    if isinstance(st, ast.If):
        return _reads(st.test) | _block_in(st.body, live, loop) | _block_in(st.orelse, live, loop)
    if isinstance(st, (ast.For, ast.While)):
        head = loop_head(st, st.body, live, loop)
        return head | (_reads(st.iter) if isinstance(st, ast.For) else frozenset())
    if isinstance(st, ast.Continue):
        return loop[0] if loop is not None else live
    if isinstance(st, ast.Break):
        return loop[1] if loop is not None else live
    if isinstance(st, ast.Return):
        return _reads(st)
    # An expression statement (a yield, a call), pass, raise (caught where a guarded side is
    # dropped: the code after the if runs), and anything else: it reads what it names, and a
    # continue or break inside it (``with``, ``try``, ``match``) may go where either goes.
    escapes = frozenset()
    if loop is not None and _jumps(st):
        escapes = loop[0] | loop[1]
    return live | _reads(st) | escapes


def _jumps(st: ast.stmt) -> bool:
    """Whether ``st`` holds a continue or break of the loop around it (not of a loop inside)."""
    todo: list[ast.AST] = [st]
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.Continue, ast.Break)):
            return True
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.For, ast.AsyncFor, ast.While)):
                todo.extend(child.orelse)  # the else of a loop inside jumps for the outer one
            elif not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                todo.append(child)
    return False


def _reads(node: ast.AST | None) -> frozenset[str]:
    if node is None:
        return frozenset()
    # ``del x`` needs x bound: a read as far as liveness goes.
    return frozenset(n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Load, ast.Del)))


def _names(node: ast.AST) -> frozenset[str]:
    return frozenset(n.id for n in ast.walk(node) if isinstance(n, ast.Name))


def _bound(target: ast.expr) -> frozenset[str]:
    """Names a target binds outright (not an item or attribute of something)."""
    if isinstance(target, ast.Name):
        return frozenset((target.id,))
    if isinstance(target, ast.Starred):
        return _bound(target.value)
    if isinstance(target, (ast.Tuple, ast.List)):
        return frozenset().union(*(_bound(t) for t in target.elts))
    return frozenset()
