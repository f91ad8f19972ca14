"""Branch-free candidates (``prover/branchfree.py``) short-circuit as Python does on symbolic states.

``x >= 1 and t[x - 1] > 0`` run as written forks on ``x >= 1`` and never indexes ``t`` where it
is false. The combinators do not fork: they evaluate ``t[x - 1]`` on the whole path, where for some
``x`` Python would not evaluate it at all. An operand that raises there must not make the candidate
an error (Python does not raise on those states), nor a wrong formula; and where Python does raise,
so must the candidate (never a silent truth value). Each candidate's formula is compared with Z3
against the formula of the expression as written (which the executor forks exactly) and against
Python on every concrete state of a small domain.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass

import pytest
import z3

from kafkamc.checker.symbolic import Budget, Explorer, build, fixed, guarded, shapes
from kafkamc.errors import SymbolicUnsupported
from kafkamc.prover.branchfree import branch_free
from kafkamc.spec import domain as d


@dataclass(frozen=True, slots=True)
class XT:
    x: int
    t: tuple[int, ...]


X_LO, X_HI, T_LEN, T_HI = -3, 5, 2, 2
DOMAIN = d.Record(XT, x=d.Int(X_LO, X_HI), t=d.Tuple(d.Int(0, T_HI), T_LEN))

# Each evaluates s.t[s.x - 1] (or s.t[s.x]) only where Python would: where that index is in range.
# Evaluated on every state instead, it raises IndexError for some x (x - 1 = -4, or 2 and beyond).
DEFINED = [
    "s.x >= 1 and s.x <= 2 and s.t[s.x - 1] > 0",
    "s.x < 1 or s.x > 2 or s.t[s.x - 1] > 0",
    "not (s.x >= 1 and s.x <= 2 and s.t[s.x - 1] > 0)",
    "s.t[0] > 0 and (s.x >= 1 and s.x <= 2 and s.t[s.x - 1] > 0)",
    "all(s.t[s.x - 1] > k for k in (0, 1) if s.x >= 1 and s.x <= 2)",
    "all((s.x >= 0 and s.x <= 1) if k == 0 else s.t[s.x] > 0 for k in range(2))",
    "any((s.x < 0 or s.x > 1) if k == 0 else s.t[s.x] > 0 for k in range(2))",
    "sum(1 for k in range(2) if s.x >= 1 and s.x <= 2 and s.t[s.x - 1] > k) <= 1",
    "s.x < 0 or s.x > 1 or (s.x >= 0 and s.t[s.x] == s.t[0] and s.t[s.x] >= 0)",
    "1 <= s.x <= 2 and s.t[s.x - 1] > 0",
]
# Python itself raises IndexError on some state of the domain (x = 3 here): so must the candidate.
RAISES = [
    "s.x >= 1 and s.t[s.x - 1] > 0",
    "s.x < 1 or s.t[s.x - 1] > 0",
    "all(s.t[s.x - 1] > 0 for k in (0,) if s.x >= 1)",
    "s.x <= 3 and (s.x < 1 or s.t[s.x - 1] >= 0)",
]


def _states():
    for x in range(X_LO, X_HI + 1):
        for t in itertools.product(range(T_HI + 1), repeat=T_LEN):
            yield XT(x, t)


def _plain(expr):
    return eval(f"lambda p, s: {expr}", {})  # noqa: S307 - the test's own expressions


def _formulas(*fns):
    """The executor's formula of each function on one symbolic state of DOMAIN, and the solver
    holding the domain's facts."""
    solver = z3.Solver()
    (shape,) = shapes(DOMAIN)
    facts: list = []
    pre = build(DOMAIN, "s", fixed(shape), facts)
    solver.add(facts)
    assert solver.check() == z3.sat
    ex = Explorer(solver, solver.model(), Budget(deadline=time.monotonic() + 120), formatting_allowed=False)
    with guarded():
        return solver, pre, [ex.formula(fn, None, pre) for fn in fns]


def _value(pre, formula, st):
    """The formula's truth on the concrete state ``st``."""
    subst = [(pre.x.z, z3.IntVal(st.x))] + [(v.z, z3.IntVal(c)) for v, c in zip(pre.t, st.t)]
    return z3.is_true(z3.simplify(z3.substitute(formula, *subst)))


@pytest.mark.parametrize("expr", DEFINED)
def test_an_operand_python_would_not_evaluate_does_not_make_the_candidate_an_error(expr):
    plain, free = _plain(expr), branch_free(expr, {})
    for st in _states():
        assert bool(free(None, st)) == bool(plain(None, st)), st
    solver, pre, (as_written, compiled) = _formulas(plain, free)
    assert solver.check(as_written != compiled) == z3.unsat
    for st in _states():  # and the formula is Python's value on each state, not only equal to another
        assert _value(pre, compiled, st) == bool(plain(None, st)), st


@pytest.mark.parametrize("expr", RAISES)
def test_an_operand_that_raises_where_python_evaluates_it_is_reported(expr):
    plain, free = _plain(expr), branch_free(expr, {})
    assert any(_raises(plain, st) for st in _states())
    for fn in (plain, free):
        with pytest.raises(SymbolicUnsupported, match="IndexError"):
            _formulas(fn)


def _raises(fn, st):
    try:
        fn(None, st)
    except IndexError:
        return True
    return False
