"""What made ``transactions`` tv1's relation affordable: a local bound on one side of a guarded
``if`` and read nowhere afterwards is not joined (it used to fork the path: ``EndTxn``'s ``nxt``,
``err``, ``c2``), and an ``and`` whose value is only tested joins as bools (``c2.appending and
...``, a tuple on one side). Python's successors on every reached state, the same relation as the
forking executor by Z3, and one path per shape where the action has no fork left."""

from __future__ import annotations

import ast
import itertools
import time
from dataclasses import dataclass, field

import z3

from kafkamc import Spec, action, invariant
from kafkamc.checker.local import explore
from kafkamc.checker.symbolic import Budget, SymBool, SymInt
from kafkamc.prover.layout import Layout
from kafkamc.prover.liveness import live_after, loop_head
from kafkamc.prover.relation import _explore, relate
from kafkamc.spec import domain as d

from tests.test_bmc_predicated import _step, compared_on_reached


@dataclass(frozen=True, slots=True)
class Cell:
    a: int
    b: int
    flags: tuple[bool, ...]
    log: tuple[int, ...]


@invariant("bmc-log-short", "the log never holds two items")
def log_short(p, s) -> bool:
    return len(s.log) < 2


class DeadLocals(Spec):
    """``nxt`` bound on one side of each ``if`` and read only there (the second ``if`` binds it
    again), and an ``and`` of a condition and a tuple that is only tested."""

    name = "bmc-dead-locals"
    invariants = (log_short,)

    def init_states(p):
        yield Cell(0, 0, (False, False), ())

    def domain(p):
        return d.Record(Cell, a=d.Int(0, 3), b=d.Int(0, 3), flags=d.Tuple(d.Bool(), 2),
                        log=d.Bag(d.Int(0, 3), 1, sorted=False))

    @action
    def step(p, s):
        if s.flags[0] and s.a < 3:
            nxt = s.a + 1
            yield "A", Cell(nxt, s.b, s.flags, s.log)
        if s.flags[1] and s.b < 3:
            nxt = s.b + 1
            yield "B", Cell(s.a, nxt, s.flags, s.log)
        if s.a > 0 and s.log:
            nxt = s.a - 1
            yield "Drop", Cell(nxt, s.b, s.flags, ())

    @action
    def toggle(p, s):
        for k in range(2):
            yield "Toggle", Cell(s.a, s.b, s.flags[:k] + (not s.flags[k],) + s.flags[k + 1:], s.log)
        if not s.log:
            yield "Log", Cell(s.a, s.b, s.flags, (s.b,))


def test_dead_locals_give_pythons_successors_and_the_forking_relation_in_one_path_per_shape():
    spec = DeadLocals()
    n, seen = compared_on_reached(spec, 10_000)
    assert n == seen == explore(spec, list(spec.properties())).distinct_states
    layout = Layout(type(spec).domain(spec.p))
    budget = Budget(deadline=time.monotonic() + 600, max_paths=10**6)
    props = list(spec.properties())
    old = relate(spec, props, layout, budget, branch_free=False)
    new = relate(spec, props, layout, budget, branch_free=True)
    for a, b in zip(old, new):
        s = z3.Solver()
        s.add(a.facts, _step(layout, a) != _step(layout, b))
        assert s.check() == z3.unsat, a.shape
    act = next(a for a in type(spec).actions() if a.name == "step")
    for shape in layout.shapes:
        tmpl, facts = layout.template(shape, "x")
        solver = z3.Solver()
        solver.add(facts)
        one = Budget(deadline=time.monotonic() + 600, max_paths=10**6)
        found: list = []
        _explore(spec.p, act, tmpl, solver, one, {}, found, [], True)
        # No fork is left: the dead nxt is not joined, the tested and joins as a bool.
        assert one.paths == 1, shape
        assert len(found) == 2 + len(tmpl.log)


def _live(src: str) -> list[frozenset[str]]:
    body = ast.parse(src).body
    return live_after(body, frozenset(), None)


def test_liveness_over_approximates_loops_and_kills_on_assignment():
    # y is bound again before any read: dead after its first binding; on the if's else side the
    # first binding survives, so there it is live.
    after = _live("y = 1\ny = 2\nprint(y)\n")
    assert after[0] == frozenset({"print"}) and after[1] == frozenset({"y", "print"})
    after = _live("y = 1\nif c:\n    y = 2\nprint(y)\n")
    assert after[0] == frozenset({"c", "y", "print"})
    # In a loop, a name read at the top of the body before it is bound is live at the head.
    loop = ast.parse("for i in r:\n    print(z)\n    z = i\n").body[0]
    assert "z" in loop_head(loop, loop.body, frozenset(), None)
    loop = ast.parse("for i in r:\n    z = i\n    print(z)\n").body[0]
    assert "z" not in loop_head(loop, loop.body, frozenset(), None)



def _live_after_first(loop_src: str) -> frozenset[str]:
    """Live after the first statement of the body of the loop ``loop_src``, ``v`` read after it."""
    loop = ast.parse(loop_src).body[0]
    out = frozenset({"v"})
    head = loop_head(loop, loop.body, out, None)
    return live_after(loop.body, head, (head, out))[0]


def test_a_jump_of_the_enclosing_loop_keeps_what_its_head_reads_live():
    # After ``if g > a: v = ...`` the next statement may continue the outer loop, whose exit
    # reads v: v is live there, although the code after the jump binds it again.
    for_else = ("for a in xs:\n    if g > a:\n        v = 10 + a\n    for b in bs:\n"
                "        if b == a:\n            break\n    else:\n        continue\n    v = 99\n")
    within_with = "for a in xs:\n    if g > a:\n        v = 10 + a\n    with ctx:\n        continue\n    v = 99\n"
    within_try = ("for a in xs:\n    if g > a:\n        v = 10 + a\n    try:\n        break\n"
                  "    finally:\n        pass\n    v = 99\n")
    for src in (for_else, within_with, within_try):
        assert "v" in _live_after_first(src), src
    # Without the jump, v is bound again before any read: dead.
    assert "v" not in _live_after_first("for a in xs:\n    if g > a:\n        v = 10 + a\n    v = 99\n")
    # ``del y`` needs y bound.
    assert "y" in _live("y = 1\ndel y\n")[0]


@dataclass(frozen=True, slots=True, order=True)
class Req:
    kind: int
    seq: int
    flag: bool


def _value(v, valuation):
    if isinstance(v, (SymInt, SymBool)):
        t = z3.simplify(z3.substitute(v.z, *valuation))
        return z3.is_true(t) if z3.is_bool(t) else t.as_long()
    return v


def test_sorted_of_symbolic_records_is_pythons_sorted_on_every_valuation():
    from kafkamc.prover.merge import sorted_

    ks = [z3.Int(f"k{i}") for i in range(3)]
    qs = [z3.Int(f"q{i}") for i in range(3)]
    fs = [z3.Bool(f"f{i}") for i in range(3)]
    items = [Req(SymInt(k), SymInt(q), SymBool(f)) for k, q, f in zip(ks, qs, fs)] + [Req(1, 0, False)]
    got = sorted_(items)
    for bits in itertools.product((0, 1), repeat=9):
        valuation = [(v, z3.IntVal(x)) for v, x in zip(ks + qs, bits[:6])] + [
            (f, z3.BoolVal(bool(x))) for f, x in zip(fs, bits[6:])]
        concrete = [Req(_value(r.kind, valuation), _value(r.seq, valuation), _value(r.flag, valuation)) for r in items]
        assert [Req(_value(r.kind, valuation), _value(r.seq, valuation), _value(r.flag, valuation))
                for r in got] == sorted(concrete), bits


@dataclass(frozen=True, slots=True, order=True)
class Noted:
    kind: int
    note: str = field(compare=False)


@dataclass(frozen=True, slots=True, order=True)
class Either:
    key: object


def _sorted_on_each_path(items, names):
    """Every path of ``sorted_(items)`` under the executor, checked against Python's sorted on
    each valuation of the ints ``names`` (0 or 1) that takes it."""
    from kafkamc.checker.symbolic import Explorer
    from kafkamc.prover.merge import sorted_

    solver = z3.Solver()
    solver.check()
    ex = Explorer(solver, solver.model(), Budget(deadline=float("inf")), formatting_allowed=True)
    paths = list(ex.paths(lambda: sorted_(items)))
    ints = [z3.Int(n) for n in names]
    for bits in itertools.product((0, 1), repeat=len(ints)):
        valuation = [(v, z3.IntVal(x)) for v, x in zip(ints, bits)]
        [got] = [out for pc, out in paths if z3.is_true(z3.simplify(z3.substitute(pc, *valuation)))]
        def fields(r):  # every field, the ones ``==`` skips too, each a plain value
            values = tuple(_value(getattr(r, f), valuation) for f in r.__dataclass_fields__)
            assert all(type(v) in (int, bool, str) for v in values), values
            return values

        expected = sorted(type(r)(*fields(r)) for r in items)
        assert [(type(v), fields(r)) for r in got for v in fields(r)] == \
            [(type(v), fields(r)) for r in expected for v in fields(r)], bits


def test_sorted_keeps_a_field_order_does_not_read_and_tells_one_from_true():
    # Two records equal in order but not in ``note`` (compare=False): joining the neighbours would
    # turn both notes into one opaque label; Python's stable sort keeps each record whole.
    k0, k1 = SymInt(z3.Int("k0")), SymInt(z3.Int("k1"))
    _sorted_on_each_path([Noted(k0, "first"), Noted(k1, "second")], ["k0", "k1"])
    # ``1 == True``: a stable sort keeps their order, and each stays what it is.
    _sorted_on_each_path([Either(SymInt(z3.Int("k0"))), Either(True), Either(1)], ["k0"])
