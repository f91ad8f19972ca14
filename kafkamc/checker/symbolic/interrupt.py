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
    work = _Check(solver, assumptions)
    collecting = gc.isenabled()
    gc.disable()
    try:
        try:
            work.thread.start()
            while not work.done.wait(WAIT_SLICE):
                pass
        except BaseException:
            work.cancel()
            work.finish()
            raise
        # Joined before anything else: no code of the worker runs while this thread goes on with
        # the context.
        late = work.finish()
        if late is not None:
            raise late
    finally:
        if collecting:
            gc.enable()
    result = work.outcome[0]
    if isinstance(result, BaseException):
        raise result
    return result


class _Check:
    """One check on a thread of its own, and how the main thread stops it."""

    __slots__ = ("solver", "assumptions", "outcome", "done", "thread", "_lock", "_cancelled", "_running")

    def __init__(self, solver: Any, assumptions: tuple[z3.BoolRef, ...]) -> None:
        self.solver, self.assumptions = solver, assumptions
        self.outcome: list[Any] = []  # the verdict, or what the check raised
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, name="kafkamc-z3-check", daemon=True)
        self._lock = threading.Lock()
        self._cancelled = self._running = False

    def _run(self) -> None:
        try:
            if hasattr(signal, "pthread_sigmask"):
                signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
            with self._lock:
                if self._cancelled:  # stopped before it began: the context is not touched
                    return
                self._running = True
            self.outcome.append(self.solver.check(*self.assumptions))
        except BaseException as exc:  # handed to the caller, on its own thread
            self.outcome.append(exc)
        finally:
            self.done.set()

    def cancel(self) -> None:
        """Stop the check, begun or not, and wait until the worker has left it. The interrupt is
        sent again each slice: one sent before the check began is not kept by Z3."""
        while True:
            try:
                with self._lock:
                    self._cancelled = True
                    running = self._running
                break
            except BaseException:  # a second signal (a stop is redelivered until a run takes it)
                continue
        while running:
            # Every step under the guard: a stop raised again anywhere here must not end the
            # loop while the worker still runs the check on the context.
            try:
                if self.done.is_set():
                    break
                try:
                    self.solver.ctx.interrupt()
                except z3.Z3Exception:
                    pass  # the check failed meanwhile: its own error is the worker's to report
                self.done.wait(WAIT_SLICE)
            except BaseException:
                continue

    def finish(self) -> BaseException | None:
        """Wait for the worker to end once its check is over (one cancelled before it began never
        touches the context: nothing to wait for); the first exception a signal handler raised
        meanwhile, if any, for the caller to raise once it is done."""
        late = None
        while self.done.is_set():
            try:
                self.thread.join()
                break
            except BaseException as exc:
                late = late or exc
        return late
