"""Stopping a long run cleanly, and watching it while it runs.

- ``Stopped`` is how a run is ended from outside its loops: SIGTERM and SIGHUP (turned into it by
  ``termination_signals``) and the memory guard raise it where Ctrl-C raises KeyboardInterrupt, of
  which it is a subclass, so every place that already ends a run as incomplete on Ctrl-C does so
  for these too; ``stop_reason`` gives the incomplete run's reason.
- ``Watch`` wraps an exploration: once a second (SIGALRM, so the engine's loops carry no
  bookkeeping) it measures the memory of the engine's processes, stops the run with reason
  ``max-memory`` above the limit, and prints a progress line within a level when no line was
  printed for ``every`` seconds. A watch outside the main thread, or where SIGALRM does not exist,
  does nothing: signal handlers run only in the main thread.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import threading
import time
from dataclasses import replace
from typing import Any, Callable, Iterable, Iterator

from kafkamc.checker.resources import format_size, pss, rss
from kafkamc.result import CheckResult, LevelStats

__all__ = [
    "Stopped", "stop_reason", "stops_taken", "is_stop", "STOPS", "raise_pending_stop", "termination_signals", "Watch", "PROGRESS_EVERY", "INTERRUPTED", "TERMINATED",
    "MAX_MEMORY",
]

INTERRUPTED, TERMINATED, MAX_MEMORY = "interrupted", "terminated", "max-memory"
# Within a long level, a progress line at least this often (seconds).
PROGRESS_EVERY = 10.0
# How often the watch measures memory (seconds).
TICK = 1.0
# The exact figure (PSS) costs about 10 ms per GiB resident: while RSS, which counts the pages
# forked workers share with the parent once per process, is over the limit but the last PSS was
# comfortably below it, PSS is measured again only this often (seconds).
PSS_EVERY = 5.0
PSS_MARGIN = 0.9

Progress = Callable[[LevelStats], None]


class Stopped(KeyboardInterrupt):
    """The run was ended from outside: ``reason`` is what an incomplete result reports."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.detail = detail


# A stop raised from a signal handler and not yet taken by any run (see termination_signals).
_unhonoured: list[Stopped] = []
# The watches whose runs are going on (``Watch`` as a context manager).
_watching: list["Watch"] = []
_taken: list[str] = []
# A stop that was raised where Python drops exceptions is raised again this often (seconds).
REDELIVER_EVERY = 0.5


def stop_reason(exc: BaseException) -> str:
    """The incomplete run's reason for ``exc`` (a stop, or what wrapped one: ``is_stop``); whoever
    asks has taken the stop. The memory guards go quiet: a run that took a stop is ending, and
    its last work (a checkpoint of the stopped run, the largest write of all) is not stopped.
    Every stop taken is recorded (``stops_taken``): a run may take one and still return its
    answer, found before it."""
    pending = list(_unhonoured)
    _unhonoured.clear()
    for watch in _watching:
        watch.quiet()
    if isinstance(exc, Stopped):
        reason = exc.reason
    elif pending and not isinstance(exc, KeyboardInterrupt):
        reason = pending[0].reason
    else:
        reason = INTERRUPTED
    # Ctrl-C or SIGTERM pending beside the memory guard's stop is the one reported: it ends more
    # than this run (the gate stops on it).
    reason = next((s.reason for s in pending if s.reason in (INTERRUPTED, TERMINATED)), reason)
    _taken.append(reason)
    return reason


def stops_taken() -> list[str]:
    """The reasons of the stops runs took in this process, in order."""
    return list(_taken)


def is_stop(exc: BaseException) -> bool:
    """Whether ``exc`` ends the run from outside: a stop, or the ``ctypes.ArgumentError`` that Z3's
    ctypes calls make of a stop raised while they convert an argument (see raise_pending_stop).
    An engine catches ``STOPS`` and re-raises what this says is not a stop."""
    return isinstance(exc, KeyboardInterrupt) or (bool(_unhonoured) and isinstance(exc, ctypes.ArgumentError))


STOPS = (KeyboardInterrupt, ctypes.ArgumentError)


def raise_pending_stop(exc: BaseException) -> None:
    """Raise the stop a signal handler raised, if ``exc`` may be hiding it.

    Z3 is called through ctypes, and a handler that fires while ctypes converts an argument has
    its exception wrapped in ``ctypes.ArgumentError``: an ``except Exception`` would then take
    the end of the run for a spec that raised. Every such handler calls this first."""
    if _unhonoured:
        raise _unhonoured[0] from exc


@contextlib.contextmanager
def termination_signals() -> Iterator[None]:
    """Ctrl-C (reason ``interrupted``), SIGTERM and SIGHUP (reason ``terminated``) end what runs
    inside as incomplete, not the process on the spot: the run reports what it did and its
    workers are stopped.

    A signal handler's exception is lost when it fires inside a garbage-collector callback or a
    ``__del__`` (hypothesis registers gc callbacks: ``simulate`` ran on after SIGTERM). So until
    some run takes the stop (``stop_reason``), the signal is raised again every half second,
    and Python's "Exception ignored" report of the lost one is not printed.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    saved = {}
    main_id = threading.main_thread().ident
    active = [True]

    def again(signum: int, stop: Stopped) -> None:
        if active[0] and stop in _unhonoured:
            signal.pthread_kill(main_id, signum)

    def handler(signum: int, frame: Any) -> None:
        reason = INTERRUPTED if signum == signal.SIGINT else TERMINATED
        stop = Stopped(reason, signal.Signals(signum).name)
        _unhonoured[:] = [stop]
        timer = threading.Timer(REDELIVER_EVERY, again, (signum, stop))
        timer.daemon = True
        timer.start()
        raise stop

    def unraisable(info: Any) -> None:
        # Z3's ``__del__`` calls C through ctypes, which wraps a handler's exception that lands
        # in its argument conversion in ``ctypes.ArgumentError``: that one is the stop too.
        # One that lands in a Z3 object's ``__init__`` before it holds its handle leaves a
        # ``__del__`` that raises AttributeError: that one is a stop's too.
        exc = info.exc_value
        if not (isinstance(exc, Stopped) or (_unhonoured and isinstance(exc, ctypes.ArgumentError))
                or (isinstance(exc, AttributeError) and getattr(info.object, "__module__", "") == "z3.z3")):
            old_hook(info)

    old_hook = sys.unraisablehook
    sys.unraisablehook = unraisable
    for sig in (signal.SIGINT, signal.SIGTERM, getattr(signal, "SIGHUP", None)):
        if sig is not None:
            saved[sig] = signal.signal(sig, handler)
    try:
        yield
    except ctypes.ArgumentError as exc:
        # The stop a Z3 call wrapped, come out where no engine took it: the stop, for the caller.
        raise_pending_stop(exc)
        raise
    finally:
        active[0] = False
        _unhonoured.clear()
        for sig, old in saved.items():
            signal.signal(sig, old)
        sys.unraisablehook = old_hook


class Watch:
    """Memory guard and progress lines for one exploration (use as a context manager).

    The engine sets ``probe`` to a function returning a LevelStats for the level being built
    (``within_level=True``) and ``workers`` to a function returning its worker pids; it passes
    ``progress`` (the wrapped callback) on for its per-level lines.
    """

    def __init__(self, progress: Progress | None, *, max_memory: int | None = None,
                 every: float = PROGRESS_EVERY, tick: float = TICK) -> None:
        self._progress = progress
        self.max_memory = max_memory
        self.every = every
        self.tick = min(tick, every)
        self.probe: Callable[[], LevelStats | None] | None = None
        self.workers: Callable[[], Iterable[int]] = lambda: ()
        self._armed = False  # ticks act (until the guard's stop is taken)
        self._installed = False  # the timer runs and the handler is ours
        self._saved: Any = None
        self._last_line = 0.0
        self._last_generated = 0
        self._frontier = 0
        self._busy = False
        self.detail = ""
        self._pss_at = -PSS_EVERY
        self._pss = 0
        self._stop: Stopped | None = None

    def annotate(self, result: CheckResult) -> CheckResult:
        """The result, with what the memory guard saw if it stopped the run."""
        if result.reason == MAX_MEMORY and self.detail:
            return replace(result, extra={**result.extra, "stop_detail": self.detail})
        return result

    @property
    def progress(self) -> Progress | None:
        return self._level_line if self._progress is not None else None

    def resumed(self, generated: int) -> None:
        """The run goes on from a checkpoint that had generated this many states: the next line's
        rate counts only what this run generates."""
        self._last_generated = generated

    def pids(self) -> list[int]:
        return [os.getpid(), *self.workers()]

    def quiet(self) -> None:
        """No more stops and no more lines from this watch."""
        self._armed = False

    def __enter__(self) -> "Watch":
        _watching.append(self)
        self._last_line = time.monotonic()
        if ((self.max_memory is None and self._progress is None) or not hasattr(signal, "setitimer")
                or threading.current_thread() is not threading.main_thread()):
            return self
        self._saved = signal.signal(signal.SIGALRM, self._on_tick)
        signal.setitimer(signal.ITIMER_REAL, self.tick, self.tick)
        self._installed = self._armed = True
        return self

    def __exit__(self, *exc: Any) -> None:
        self._armed = False
        if self in _watching:
            _watching.remove(self)
        # A stop of this run's guard that no run took (lost in a finalizer as the run ended)
        # must not end the next run in this process.
        if self._stop is not None and self._stop in _unhonoured:
            _unhonoured.remove(self._stop)
        if self._installed:
            # Timer first: a SIGALRM after the default action is back would kill the process.
            self._installed = False
            signal.setitimer(signal.ITIMER_REAL, 0, 0)
            signal.signal(signal.SIGALRM, self._saved)

    def _level_line(self, stats: LevelStats) -> None:
        # Not re-entered from a tick while it prints: a stream written from a signal handler
        # in the middle of a write raises.
        busy, self._busy = self._busy, True
        try:
            now = time.monotonic()
            line = replace(stats, memory=self._measure(), rate=self._rate(stats, now), growth=self._growth(stats))
            self._last_line = now
            assert self._progress is not None
            self._progress(line)
        finally:
            self._busy = busy

    def _rate(self, stats: LevelStats, now: float) -> float | None:
        # States generated per second since the previous line: a run that slows down (swapping,
        # a denser part of the model) shows it at once, not diluted by the whole run's average.
        elapsed = now - self._last_line
        rate = (stats.states_generated - self._last_generated) / elapsed if elapsed > 0 else None
        self._last_generated = stats.states_generated
        return rate

    def _growth(self, stats: LevelStats) -> float | None:
        if stats.within_level:
            if stats.new is None or not stats.frontier:
                return None
            return stats.new / stats.frontier
        before, self._frontier = self._frontier, stats.frontier
        return stats.frontier / before if before else None

    def _measure(self) -> int:
        return pss(self.pids())

    def _on_tick(self, signum: int, frame: Any) -> None:
        if not self._armed or self._busy:
            return
        if self._stop is not None:
            # Raised where Python drops exceptions (a ``__del__``, a weakref or gc callback), the
            # stop is raised again until a run takes it (``stop_reason``).
            if self._stop in _unhonoured:
                raise self._stop
            self._armed = False
            return
        self._busy = True
        try:
            self._check()
        except Stopped:
            raise
        except Exception:
            # Raised here, it would surface inside the spec's code and be reported as the spec's
            # error; a watch that cannot measure or print stops watching instead.
            self._armed = False
        finally:
            self._busy = False

    def _check(self) -> None:
        if self.max_memory is not None:
            pids = self.pids()
            # RSS is cheap and never below PSS: pay for the exact figure only when it matters.
            now = time.monotonic()
            if rss(pids) > self.max_memory and (
                    self._pss > PSS_MARGIN * self.max_memory or now - self._pss_at >= PSS_EVERY):
                used = self._pss = pss(pids)
                self._pss_at = now
                if used > self.max_memory:
                    self.detail = f"{format_size(used)} in use, limit {format_size(self.max_memory)}"
                    self._stop = Stopped(MAX_MEMORY, self.detail)
                    _unhonoured.append(self._stop)  # after a pending Ctrl-C or SIGTERM, which comes first
                    raise self._stop
        now = time.monotonic()
        if self._progress is not None and self.probe is not None and now - self._last_line >= self.every:
            stats = self.probe()
            if stats is not None:
                self._level_line(stats)
            else:
                self._last_line = now
