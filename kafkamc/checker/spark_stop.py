"""Ctrl-C, SIGTERM and SIGHUP during a Spark run: cancel the jobs, end the run as incomplete.

PySpark's own SIGINT handler calls the JVM from inside the signal handler, on the very Py4J
connection the interrupted call is reading, then raises inside that call: the connection breaks
and Py4J logs some fifty lines of tracebacks. Here a signal only records the request and asks
Spark, from another thread (its own Py4J connection), to cancel the running jobs; the driver
notices when its call returns (``check``) and the engine reports the run as incomplete.
"""

from __future__ import annotations

import signal
import threading
from typing import Any

from kafkamc.checker.watch import INTERRUPTED, TERMINATED, Stopped

__all__ = ["JobStop"]

_SIGNALS = tuple(s for s in (signal.SIGINT, signal.SIGTERM, getattr(signal, "SIGHUP", None)) if s is not None)


class JobStop:
    """Create before the SparkContext (it keeps the handlers in place then), ``arm`` once the
    context exists (replacing PySpark's), ``disarm`` at the end (restoring the first ones)."""

    def __init__(self) -> None:
        self.reason: str | None = None
        self._sc: Any = None
        self._main = threading.current_thread() is threading.main_thread()
        self._saved = {sig: signal.getsignal(sig) for sig in _SIGNALS} if self._main else {}
        self._armed = False

    def arm(self, sc: Any) -> None:
        self._sc = sc
        if self._main:
            for sig in _SIGNALS:
                signal.signal(sig, self._on_signal)
            self._armed = True

    def disarm(self) -> None:
        if self._armed:
            self._armed = False
            for sig, old in self._saved.items():
                signal.signal(sig, old if old is not None else signal.SIG_DFL)

    def check(self) -> None:
        """Raise Stopped if a stop was asked for (call before and after each Spark job)."""
        if self.reason is not None:
            raise Stopped(self.reason)

    def _on_signal(self, signum: int, frame: Any) -> None:
        if self.reason is not None:
            raise Stopped(self.reason)  # asked twice: do not wait for Spark any longer
        self.reason = INTERRUPTED if signum == signal.SIGINT else TERMINATED
        threading.Thread(target=self._cancel, name="kafkamc-cancel", daemon=True).start()

    def _cancel(self) -> None:
        try:
            self._sc.cancelAllJobs()
        except Exception:  # the context is going away anyway; nothing to report
            pass
