"""Adjacent steps that commute, left out of ``bmc``'s unrolling: peephole partial-order reduction.

In an asynchronous protocol most pairs of events do not interfere: a follower of replica 2
fetching and the leader's high watermark moving on replica 3 reach the same state in either
order. The unrolling has both orders, and every other interleaving of every such pair, and the
SAT solver must refute each one at every depth where no violation is. Peephole reduction (Wang,
Yang, Kahlon and Gupta, "Peephole Partial Order Reduction", TACAS 2008) forbids one of the two
orders of a pair of adjacent steps when the other order always reaches the same state.

Each move has a *key*: its action and the layout keys it assigns (``become_follower`` writing
replica 2's log is not ``become_follower`` writing replica 3's). For a move ``a`` of shape S into
shape S' and a move ``b`` of S' with ``key(b) < key(a)``, the pair is *forbidden* (``a`` at step
t, ``b`` at step t+1) when the solver proves, over every state x of S's domain:

    a enabled at x and b enabled at a(x)   implies   for some move b2 of S with key(b) and some
    move a2 of b2's target shape with key(a): b2 enabled at x, a2 enabled at b2(x), and
    a2(b2(x)) = b(a(x)) on every variable of the vector

"Enabled" is everything a step of the unrolling asks of its pre-state: the shape, the domain
facts, the constraint, the path condition. Why this keeps every answer (Reach_k, the states
reachable in exactly k steps, is the same with and without the forbidden pairs, for every k):
take any path of k steps with a forbidden pair at t, t+1 and replace it by the b2, a2 the proof
gives. The result is a path of the unrolling (b2 and a2 enabled where they are taken, b2(x) a
real successor of a reachable state, so inside the domain and its ranges) to the same state. The
sequence of keys along the path has one inversion fewer (the pair's keys swapped, nothing else
changed), so repeating ends, at a path of k steps with no forbidden pair to the same last state.
Every question ``bmc`` asks is about the last state of the unrolling at each depth (a violation,
an action that raises, a successor outside the domain), so every answer is unchanged, and a
shortest violation keeps its breadth-first length. The trace found is replayed concretely as
always.

A pair the solver does not prove within its resource limit is simply not forbidden: leaving out
fewer pairs is always exact. A move whose successors' shape is not one of the layout's (a site it
leaves unassigned that the target lacks) is never a or b2. The pairs are the same on every run and
for any number of workers unless a question comes near the resource limit (Z3's search may depend
on the order terms were made in, which differs between workers; the largest of replication
replicas=2's 4,150 questions used 41,391 of 5,000,000 units). The run's deadline ends the asking
early, with fewer pairs, but the run then ends incomplete at its next question anyway.
"""

from __future__ import annotations

import multiprocessing
import time
from dataclasses import dataclass
from typing import Sequence

import z3
from z3 import z3core

from kafkamc.checker.resources import cpu_seconds
from kafkamc.checker.symbolic.values import fast_and, fast_or, substituted
from kafkamc.prover.layout import Layout
from kafkamc.prover.prove import _worker_signals
from kafkamc.prover.relation import Move, ShapeRelation

__all__ = ["Commuting", "commuting"]

# A pair the solver does not settle within this many of Z3's resource units is left in (never
# forbidden): no run waits on one. The largest of replication replicas=2's 4,150 questions took 41,391.
_CHECK_RLIMIT = 5_000_000


@dataclass(frozen=True, slots=True)
class Commuting:
    """The forbidden pairs, by the unrolling's move index: ``a`` at step t, ``b`` at step t+1."""

    pairs: tuple[tuple[int, int], ...]
    checked: int  # solver checks made (pairs that passed the read/write filter and had a swap)
    cpu: float  # the workers' included


@dataclass(slots=True)
class _Step:
    index: int  # in the unrolling's list of moves
    rel: ShapeRelation
    move: Move
    key: tuple[str, tuple[str, ...]]
    reads: frozenset[str]  # path condition, constraint and terms (not the domain facts)
    writes: frozenset[str]
    target: int | None  # the shape of its successors (None: not a shape of the layout)
    assigns: dict[str, z3.ExprRef]


def commuting(layout: Layout, rels: Sequence[ShapeRelation], deadline: float | None = None,
              workers: int = 1) -> Commuting:
    """The pairs of adjacent moves the unrolling may leave out (see the module docstring), the
    shapes' pairs asked on ``workers`` forked processes (the same pairs for any number)."""
    started = cpu_seconds()
    pairs = _Pairs(layout, rels, deadline)
    shapes = [rel.shape.index for rel in rels]
    workers = min(workers, len(shapes))
    global _WORK
    if workers <= 1 or "fork" not in multiprocessing.get_all_start_methods():
        done = [pairs.of_shape(i) for i in shapes]
    else:
        _WORK = pairs
        try:
            with multiprocessing.get_context("fork").Pool(workers, initializer=_worker_signals) as pool:
                done = list(pool.imap(_of_shape, shapes, chunksize=1))
        finally:
            _WORK = None
    return Commuting(tuple(p for found, _n in done for p in found), sum(n for _f, n in done),
                     round(cpu_seconds() - started, 1))


# Set in the parent just before forking; workers read it (fork shares it without pickling).
_WORK: _Pairs | None = None


def _of_shape(shape: int) -> tuple[list[tuple[int, int]], int]:
    assert _WORK is not None
    return _WORK.of_shape(shape)


class _Pairs:
    """The moves with what the pair questions need: keys, reads and writes, target shapes."""

    def __init__(self, layout: Layout, rels: Sequence[ShapeRelation], deadline: float | None) -> None:
        self.layout, self.deadline = layout, deadline
        self.x = x = layout.variables
        name_of = {v.decl().name(): k for k, v in x.items()}
        self.by_shape: dict[int, list[_Step]] = {}
        memo: dict[int, frozenset[str]] = {}
        index = 0
        for rel in rels:
            current = dict(rel.shape.choices)
            expand_reads = _keys(rel.expand, name_of, memo)
            for m in rel.moves:
                reads = set(expand_reads) | _keys(m.pc, name_of, memo)
                for _k, term in m.assigns:
                    reads |= _keys(term, name_of, memo)
                step = _Step(index, rel, m, (m.action, tuple(sorted(k for k, _t in m.assigns))), frozenset(reads),
                             frozenset(k for k, _t in m.assigns), _target(layout, current, m), dict(m.assigns))
                self.by_shape.setdefault(rel.shape.index, []).append(step)
                index += 1
        self._enabled: dict[int, z3.BoolRef] = {}
        self._both: dict[tuple[int, int], tuple[z3.BoolRef, dict[str, tuple[int, z3.ExprRef]]]] = {}
        self._ctx = z3.main_ctx()
        self._x_ids = {k: (_id(v), v) for k, v in x.items()}
        # a2(b2(x)) = b(a(x)) on one key, by the two terms' ids: most recur across the swaps of
        # many pairs. None: two different numerals, which no state makes equal.
        self._eqs: dict[tuple[int, int], z3.BoolRef | None] = {}

    def _en(self, s: _Step) -> z3.BoolRef:
        if s.index not in self._enabled:
            self._enabled[s.index] = fast_and([self.layout.selects(s.rel.shape, "x"), s.rel.facts, s.rel.expand,
                                               s.move.pc])
        return self._enabled[s.index]

    def _after(self, s: _Step, f: z3.ExprRef) -> z3.ExprRef:
        return substituted(f, [(self.x[k], t) for k, t in s.move.assigns])

    def _then(self, first: _Step, second: _Step) -> tuple[z3.BoolRef, dict[str, tuple[int, z3.ExprRef]]]:
        """When ``first`` then ``second`` can be taken from x, and the variables they assign (each
        term with its Z3 id: terms are hash-consed, so equal ids are one term)."""
        key = (first.index, second.index)
        if key not in self._both:
            out = {k: self._after(first, second.assigns[k]) if k in second.assigns else t
                   for k, t in first.assigns.items()}
            out.update((k, self._after(first, t)) for k, t in second.assigns.items() if k not in first.assigns)
            self._both[key] = (fast_and([self._en(first), self._after(first, self._en(second))]),
                               {k: (_id(t), t) for k, t in out.items()})
        return self._both[key]

    def _same(self, t: tuple[int, z3.ExprRef], t2: tuple[int, z3.ExprRef]) -> z3.BoolRef | None:
        key = (t[0], t2[0])
        if key in self._eqs:
            return self._eqs[key]
        ctx = self._ctx.ref()
        a, b = t[1].as_ast(), t2[1].as_ast()
        if z3core.Z3_is_numeral_ast(ctx, a) and z3core.Z3_is_numeral_ast(ctx, b):
            # Hash-consed: numerals of one sort with different ids differ in value.
            eq = None
        else:
            eq = z3.BoolRef(z3core.Z3_mk_eq(ctx, a, b), self._ctx)
        self._eqs[key] = eq
        return eq

    def of_shape(self, shape: int) -> tuple[list[tuple[int, int]], int]:
        """The forbidden pairs whose first move is of ``shape``, and how many were asked. A fresh
        solver per shape and a resource limit (not a time limit): the same answers on every run,
        for any number of workers, at any load."""
        by_shape, xs, same_as = self.by_shape, self._x_ids, self._same
        solver = z3.SolverFor("QF_LIA")
        solver.set("rlimit", _CHECK_RLIMIT)
        forbidden: list[tuple[int, int]] = []
        checked = 0
        for a in by_shape.get(shape, []):
            if a.target is None or a.target not in by_shape:
                continue
            for b in by_shape[a.target]:
                if not b.key < a.key or a.writes & (b.reads | b.writes) or b.writes & a.reads:
                    continue
                swaps = [(b2, a2) for b2 in by_shape[shape]
                         if b2.key == b.key and b2.target is not None and b2.target in by_shape
                         for a2 in by_shape[b2.target] if a2.key == a.key]
                if not swaps:
                    continue
                if self.deadline is not None and time.monotonic() >= self.deadline:
                    return forbidden, checked  # fewer pairs left out: still exact
                taken, final = self._then(a, b)
                options = []
                for b2, a2 in swaps:
                    taken2, final2 = self._then(b2, a2)
                    same = [same_as(t, t2) for k in sorted(final.keys() | final2.keys())
                            if (t := final.get(k) or xs[k])[0] != (t2 := final2.get(k) or xs[k])[0]]
                    if None not in same:
                        options.append(fast_and([taken2] + same))
                # With no option left, what is asked is whether ``a`` then ``b`` is ever taken.
                solver.push()
                solver.add(taken, z3.Not(fast_or(options)))
                checked += 1
                if solver.check() == z3.unsat:
                    forbidden.append((a.index, b.index))
                solver.pop()
        return forbidden, checked


def _target(layout: Layout, current: dict[str, int], m: Move) -> int | None:
    """The shape a move's successors take (its sites are constants; None if not a layout shape)."""
    choices = dict(current)
    for key, term in m.assigns:
        if key.startswith("#"):
            value = z3.simplify(term)
            if not z3.is_int_value(value):
                return None
            choices[key[1:]] = value.as_long()
    shape = layout.shape_with(choices)
    return None if shape is None else shape.index


def _id(term: z3.ExprRef) -> int:
    return z3core.Z3_get_ast_id(term.ctx.ref(), term.as_ast())


def _keys(term: z3.ExprRef, name_of: dict[str, str], memo: dict[int, frozenset[str]]) -> frozenset[str]:
    """The layout keys whose variables ``term`` reads (``memo``: by Z3 id, shared between the
    terms of a relation, which share most subterms). On Z3's own ASTs: wrapping each node in
    Python was most of the cost."""
    ctx = term.ctx.ref()
    stack = [term.as_ast()]
    while stack:
        node = stack[-1]
        nid = z3core.Z3_get_ast_id(ctx, node)
        if nid in memo:
            stack.pop()
            continue
        if z3core.Z3_get_ast_kind(ctx, node) != z3.Z3_APP_AST:
            memo[nid] = frozenset()  # a numeral or a bound variable reads no key
            stack.pop()
            continue
        n = z3core.Z3_get_app_num_args(ctx, node)
        if n == 0:
            decl = z3core.Z3_get_app_decl(ctx, node)
            key = None
            if z3core.Z3_get_decl_kind(ctx, decl) == z3.Z3_OP_UNINTERPRETED:
                key = name_of.get(z3core.Z3_get_symbol_string(ctx, z3core.Z3_get_decl_name(ctx, decl)))
            memo[nid] = frozenset() if key is None else frozenset((key,))
            stack.pop()
            continue
        args = [z3core.Z3_get_app_arg(ctx, node, i) for i in range(n)]
        todo = [a for a in args if z3core.Z3_get_ast_id(ctx, a) not in memo]
        if todo:
            stack.extend(todo)
            continue
        stack.pop()
        memo[nid] = frozenset().union(*(memo[z3core.Z3_get_ast_id(ctx, a)] for a in args))
    return memo[z3core.Z3_get_ast_id(ctx, term.as_ast())]
