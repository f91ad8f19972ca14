"""What a check on a thread of its own costs (kafkamc/checker/symbolic/interrupt.py), per call.

    python benchmarks/solver_interrupt.py            # 3000 calls of each
    python benchmarks/solver_interrupt.py --calls 10000

Asks one trivial question (a satisfiable linear constraint) of one solver many times, directly
and through ``interruptible_check``, and prints the CPU and wall microseconds per call of each and
the difference: the price of a check that a stop interrupts at once, which matters only where a
run asks many short questions (the executor's path checks), not for bmc's unrolling questions.
CPU counts every thread of the process; on a shared host it is the honest column.
"""

from __future__ import annotations

import argparse
import sys
import time

import z3

from kafkamc.checker.symbolic.interrupt import interruptible_check


def _per_call(check, solver: z3.Solver, calls: int) -> tuple[float, float]:
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(calls):
        check(solver)
    return ((time.process_time() - cpu) / calls * 1e6, (time.perf_counter() - wall) / calls * 1e6)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=3000, help="checks of each kind (default 3000)")
    args = ap.parse_args(argv)
    x = z3.Int("x")
    solver = z3.Solver()
    solver.add(x > 0, x < 100)
    rows = {}
    for name, check in (("direct", lambda s: s.check()), ("thread", interruptible_check)) * 2:
        rows[name] = _per_call(check, solver, args.calls)  # the second round, after warming up, is kept
    for name, (cpu, wall) in rows.items():
        print(f"{name:8} {cpu:8.1f} us CPU {wall:8.1f} us wall per check")
    print(f"{'overhead':8} {rows['thread'][0] - rows['direct'][0]:8.1f} us CPU "
          f"{rows['thread'][1] - rows['direct'][1]:8.1f} us wall per check")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
