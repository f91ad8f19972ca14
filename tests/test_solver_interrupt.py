"""A stop (SIGTERM, Ctrl-C) ends a run inside a long Z3 check within about a second
(kafkamc/checker/symbolic/interrupt.py), where it used to wait for the check to return."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from typing import Iterator

import pytest
import z3

from kafkamc import Param, Spec, action, invariant
from kafkamc.checker.symbolic.interrupt import interruptible_check
from kafkamc.checker.watch import TERMINATED, Stopped, stop_reason, termination_signals
from kafkamc.spec import domain as d

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def _weights(n: int) -> tuple[int, ...]:
    # Fixed pseudo-random weights below 2**27 (a linear congruential generator), the same every run.
    out, x = [], 12345
    for _ in range(n):
        x = (x * 1103515245 + 12345) % 2**31
        out.append(x >> 4)
    return tuple(out)


@dataclass(frozen=True, slots=True)
class Sum:
    total: int


@invariant("target-missed", "no sum of the weights taken equals the target")
def target_missed(p, s):
    return s.total != p.target


class Sums(Spec):
    """Subset sum unrolled: each step adds one of ``weights`` fixed weights. Whether k steps can
    reach the target is a SAT question over adders that gets about 30 times harder per step: at
    64 weights, depth 3 is answered in about a second, depth 4 takes about 36 s CPU."""

    name = "sums"
    parameters = (Param("weights", 64, "how many weights a step chooses from", min=1, max=200),
                  Param("target", 268447803, "the sum that must never be reached", min=0, max=2**40))
    invariants = (target_missed,)

    def init_states(p):
        yield Sum(0)

    def domain(p):
        return d.Record(Sum, total=d.Int(0))

    @action
    def add(p, s):
        for w in _weights(p.weights):
            yield f"Add({w})", Sum(s.total + w)


def _pigeonhole(holes: int) -> list[z3.BoolRef]:
    """holes + 1 pigeons in ``holes`` holes, each hole holding at most one: unsatisfiable, and
    hard for resolution (at 12 holes far beyond a minute, as QF_FD and as an Optimize)."""
    at = [[z3.Bool(f"php!{i}!{j}") for j in range(holes)] for i in range(holes + 1)]
    return [z3.Or(row) for row in at] + [
        z3.Or(z3.Not(at[i][j]), z3.Not(at[k][j]))
        for j in range(holes) for i in range(holes + 1) for k in range(i + 1, holes + 1)]


def _fd(constraints: list[z3.BoolRef]) -> z3.Solver:
    solver = z3.SolverFor("QF_FD")
    solver.add(constraints)
    return solver


@contextlib.contextmanager
def _sigterm_to_main_in(seconds: float) -> Iterator[None]:
    """SIGTERM to the main thread after ``seconds``, under termination_signals; never later than
    the block (a late one, once the default handler is back, would end the test run)."""
    main_id = threading.main_thread().ident
    timer = threading.Timer(seconds, signal.pthread_kill, (main_id, signal.SIGTERM))
    timer.daemon = True
    with termination_signals():
        timer.start()
        try:
            yield
        finally:
            timer.cancel()
            timer.join()


def test_a_termination_signal_interrupts_a_hard_check_at_once():
    solver = _fd(_pigeonhole(12))
    started = time.monotonic()
    with _sigterm_to_main_in(0.5), pytest.raises(Stopped) as stop:
        interruptible_check(solver)
    took = time.monotonic() - started
    assert stop_reason(stop.value) == TERMINATED
    assert took < 5.0, took
    # The interrupt is not kept by the context: the next check is answered as before.
    assert interruptible_check(_fd(_pigeonhole(5))) == z3.unsat


def test_an_optimize_is_interrupted_as_a_solver_is():
    # query.py minimises a counterexample with an Optimize, in the main process under --workers 1.
    opt = z3.Optimize()
    opt.add(_pigeonhole(12))
    opt.minimize(z3.Sum([z3.If(z3.Bool(f"php!0!{j}"), j, 0) for j in range(12)]))
    started = time.monotonic()
    with _sigterm_to_main_in(0.5), pytest.raises(Stopped) as stop:
        interruptible_check(opt)
    assert stop_reason(stop.value) == TERMINATED
    assert time.monotonic() - started < 5.0


# The same questions in a fresh process, as a run asks them (Z3's answers to a sequence of
# questions depend on what the process asked before, so the comparison is process against process).
_QUESTIONS = """
import sys, z3
from kafkamc.checker.symbolic.interrupt import interruptible_check
z3.set_param("smt.random_seed", 0)
z3.set_param("sat.random_seed", 0)
check = interruptible_check if sys.argv[1] == "thread" else (lambda s, *a: s.check(*a))
for width in (16, 12):
    xs = [z3.BitVec(f"x{i}", width) for i in range(6)]
    s = z3.SolverFor("QF_FD")
    s.add(z3.Distinct(xs), z3.Sum(xs) == 1000, *(x > 3 for x in xs))
    print(check(s), [s.model().eval(x).as_long() for x in xs])
    small = z3.Bool(f"small{width}")
    s.add(z3.Implies(small, xs[0] < 3))
    print(check(s, small), s.unsat_core())
    s = z3.SolverFor("QF_LIA")
    ys = [z3.Int(f"y{i}") for i in range(4)]
    s.add(z3.Distinct(ys), z3.Sum(ys) == 77, *(y > 2 for y in ys))
    print(check(s), [s.model().eval(y).as_long() for y in ys])
"""


def test_the_same_answers_and_models_as_the_direct_check():
    env = dict(os.environ, PYTHONPATH=ROOT)
    direct, thread = (subprocess.run([sys.executable, "-c", _QUESTIONS, how], capture_output=True, text=True,
                                     env=env, check=True).stdout for how in ("direct", "thread"))
    assert direct == thread
    verdicts = [line.split()[0] for line in direct.splitlines()]
    assert verdicts == ["sat", "unsat", "sat"] * 2 and direct.count("[small") == 2


def test_a_check_stopped_before_it_began_never_touches_the_solver():
    # A stop that lands while the worker is being started: the worker, once it runs, leaves.
    from kafkamc.checker.symbolic.interrupt import _Check

    work = _Check(_fd(_pigeonhole(12)), ())
    work.cancel()
    assert work.finish() is None
    work.thread.start()
    work.thread.join(timeout=30)
    assert not work.thread.is_alive() and work.outcome == [] and work.done.is_set()


def test_an_error_of_the_check_is_raised_to_the_caller():
    s = z3.Solver()
    with pytest.raises(z3.Z3Exception):
        interruptible_check(s, z3.Int("not-a-bool"))


def test_sigterm_inside_a_long_unrolling_check_ends_bmc_at_once_with_the_depth_reached():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([HERE, ROOT]))
    proc = subprocess.Popen(
        [sys.executable, "-m", "kafkamc", "bmc", "test_solver_interrupt:Sums", "-i", "target-missed",
         "--depth", "8", "--progress", "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        lines = []
        assert proc.stderr is not None
        for line in proc.stderr:  # depths 0 to 3 take about a second, depth 4 about 36 s CPU
            lines.append(line)
            if "no violation within 3 steps" in line:
                break
        assert lines and "within 3 steps" in lines[-1], lines
        time.sleep(1.0)  # well inside depth 4's check
        assert proc.poll() is None
        proc.send_signal(signal.SIGTERM)
        signalled = time.monotonic()
        out, err = proc.communicate(timeout=60)
        took = time.monotonic() - signalled
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 4, (out, err)
    assert took < 10.0, took  # before the change: the rest of the depth-4 check, about 35 s
    result = json.loads(out)
    assert result["result"] == "incomplete" and result["reason"] == "terminated"
    assert result["bmc"]["bmc_depth"] == 3
    assert "Traceback" not in err
