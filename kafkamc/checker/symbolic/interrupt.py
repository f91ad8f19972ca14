"""A solver check that Ctrl-C, SIGTERM and the memory guard end within about a second.

A long run of ``bmc`` spends most of its time inside one ``check()``, which is C code: Python
runs a signal handler only between bytecodes of the main thread, so a SIGTERM waited for the
check to return (over 4 minutes at depth 9 of ``replication -p replicas=2 -p truncation=kip279``;
the process had to be killed and the depth it had finished was lost).

So ``check`` runs the same call on a thread of its own while the main thread waits in short
slices, in which the handler runs. When it raises (``Stopped``, KeyboardInterrupt), Z3 is asked to
interrupt the check (``Z3_interrupt``, the one call Z3 allows on a context another thread is
using), the thread is waited for, and the stop is raised again: the caller reports an incomplete
run as it always did.

The check itself is the one call the caller would make, on the same solver with the same
parameters, so answers and models are unchanged. While it runs, the main thread must not touch the
context: it runs only the wait and the signal handlers, and the garbage collector is held off so
that no Z3 object of the context is freed (``Z3_dec_ref``) under the running check.

A thread per check costs about 0.3 ms CPU unloaded, 1.6 ms at load 6 on 2 cores
(``benchmarks/solver_interrupt.py``; most of it Z3 setting up a thread it has not seen): nothing
against bmc's few questions per depth (17 on ``controller -p brokers=2``), too much for the
executor's thousands of short path checks, which do not use it. A long-lived worker would cost
less per call, but would be alive when the relation's workers are forked.
"""

from __future__ import annotations

import gc
import signal
import threading
from typing import Any

import z3

__all__ = ["interruptible_check", "WAIT_SLICE"]

# How long the main thread waits between looks at the worker (seconds). The signals below are
# blocked on the worker, so one sent to the process reaches the main thread and wakes its wait at
# once; the slice only bounds the wait where a signal still lands on the worker.
WAIT_SLICE = 0.2

# The signals whose handlers stop a run (termination_signals, Watch): left to the main thread.
_SIGNALS = {s for s in (signal.SIGINT, signal.SIGTERM, getattr(signal, "SIGHUP", None),
                        getattr(signal, "SIGALRM", None)) if s is not None}


def interruptible_check(solver: Any, *assumptions: z3.BoolRef) -> z3.CheckSatResult:
    """``solver.check(*assumptions)`` (a Solver or an Optimize), which a signal handler's
    exception interrupts: the check is stopped and the exception raised."""
    if threading.current_thread() is not threading.main_thread():
        return solver.check(*assumptions)  # no handler runs on this thread: nothing to wait for
    outcome: list[Any] = []
    done = threading.Event()

    def run() -> None:
        try:
            if hasattr(signal, "pthread_sigmask"):
                signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
            outcome.append(solver.check(*assumptions))
        except BaseException as exc:  # handed to the caller, on its own thread
            outcome.append(exc)
        finally:
            done.set()

    collecting = gc.isenabled()
    gc.disable()
    try:
        worker = threading.Thread(target=run, name="kafkamc-z3-check", daemon=True)
        worker.start()
        try:
            while not done.wait(WAIT_SLICE):
                pass
        except BaseException:
            _interrupt(solver, done)
            raise
    finally:
        if collecting:
            gc.enable()
    worker.join()
    result = outcome[0]
    if isinstance(result, BaseException):
        raise result
    return result


def _interrupt(solver: Any, done: threading.Event) -> None:
    """Stop the running check and wait until the worker has left it. The interrupt is sent again
    each slice: one sent before the check began is not kept by Z3. A second signal meanwhile
    (the stop is redelivered until a run takes it) changes nothing: the first one is raised."""
    while not done.is_set():
        try:
            solver.ctx.interrupt()
        except z3.Z3Exception:
            pass  # the check failed meanwhile: its own error is the worker's to report
        try:
            done.wait(WAIT_SLICE)
        except BaseException:
            continue
