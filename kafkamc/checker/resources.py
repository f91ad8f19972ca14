"""What an exploration costs the machine, and the tie that makes worker processes die with the parent.

Memory is read from ``/proc``: a process's resident set size from ``statm`` (a few microseconds)
and its proportional set size from ``smaps_rollup`` (exact for forked workers, which share their
copy-on-write pages with the parent, but about 10 ms per GiB). The guard (``watch.Watch``)
compares the cheap RSS sum first and pays for PSS only when RSS is over the limit: RSS >= PSS,
so that never misses.
"""

from __future__ import annotations

import os
import resource
import re
import signal
import threading
import time
from typing import Iterable

__all__ = [
    "parse_size", "format_size", "machine_memory", "default_memory_limit", "rss", "pss", "die_with_parent",
    "cpu_seconds", "DEFAULT_MEMORY_FRACTION",
]

# Without --max-memory, a run stops at this fraction of the machine's (or container's) memory.
DEFAULT_MEMORY_FRACTION = 0.8

_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_SIZE = re.compile(r"([0-9]+(?:\.[0-9]+)?)\s*([KMGT]?)(?:I?B)?", re.IGNORECASE)
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def cpu_seconds() -> float:
    """CPU seconds (user and system) of this process and of its waited-for children: work done
    on worker processes counts, which ``time.process_time()`` leaves out."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def parse_size(text: str) -> int:
    """Bytes from ``800M``, ``4G``, ``1.5GiB``, ``123456`` (binary units) or ``50%`` of the machine."""
    allowed = "a size such as 800M, 4G or 1.5GiB (K, M, G, T are powers of 1024), or a percentage such as 50%"
    raw = text.strip()
    if raw.endswith("%"):
        try:
            pct = float(raw[:-1])
        except ValueError:
            raise ValueError(f"{text!r} is not a size; allowed: {allowed}") from None
        if not 0 < pct <= 100:
            raise ValueError(f"{text!r} is not allowed; allowed: a percentage in (0, 100]")
        total = machine_memory()
        if total is None:
            raise ValueError(f"{text!r}: the machine's memory is unknown here; allowed: an absolute size such as 4G")
        return int(total * pct / 100)
    m = _SIZE.fullmatch(raw)
    if m is None:
        raise ValueError(f"{text!r} is not a size; allowed: {allowed}")
    value = int(float(m.group(1)) * _UNITS[m.group(2).upper()])
    if value < 1 << 20:
        raise ValueError(f"{text!r} is below 1M; allowed: {allowed}")
    return value


def format_size(n: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n / 1024:.0f} KiB"


def machine_memory() -> int | None:
    """Physical memory, or the memory cgroup's limit when that is smaller (a container's share)."""
    total = None
    try:
        total = os.sysconf("SC_PHYS_PAGES") * _PAGE
    except (ValueError, OSError, AttributeError):
        pass
    for limit in _cgroup_limits():
        if total is None or limit < total:
            total = limit
    return total


def _cgroup_limits() -> Iterable[int]:
    try:
        with open("/proc/self/cgroup", encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controllers == "":
            files = [f"/sys/fs/cgroup{path}/memory.max", "/sys/fs/cgroup/memory.max"]
        elif "memory" in controllers.split(","):
            files = [f"/sys/fs/cgroup/memory{path}/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.limit_in_bytes"]
        else:
            continue
        for name in files:
            try:
                with open(name, encoding="utf-8") as fh:
                    value = fh.read().strip()
            except OSError:
                continue
            if value.isdigit() and int(value) < 1 << 60:  # "max" or a huge number: no limit
                yield int(value)
            break


def default_memory_limit() -> int | None:
    total = machine_memory()
    return None if total is None else int(total * DEFAULT_MEMORY_FRACTION)


def rss(pids: Iterable[int]) -> int:
    """Sum of resident set sizes in bytes; a process that has exited counts 0."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/statm", "rb") as fh:
                total += int(fh.read().split()[1]) * _PAGE
        except (OSError, IndexError, ValueError):
            pass
    return total


def pss(pids: Iterable[int]) -> int:
    """Sum of proportional set sizes in bytes (shared pages split between their users); RSS where
    the kernel has no ``smaps_rollup``."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/smaps_rollup", "rb") as fh:
                for line in fh:
                    if line.startswith(b"Pss:"):
                        total += int(line.split()[1]) * 1024
                        break
        except FileNotFoundError:
            total += rss([pid])
        except (OSError, IndexError, ValueError):
            pass
    return total


def die_with_parent(parent_pid: int) -> None:
    """Make the calling (forked) process die when ``parent_pid`` does, even by SIGKILL.

    Linux's parent-death signal does it in the kernel; elsewhere a thread polls the parent pid
    twice a second. A parent that died before the signal was set leaves us adopted already.
    """
    if not _set_pdeathsig(signal.SIGKILL):
        threading.Thread(target=_watch_parent, args=(parent_pid,), name="kafkamc-parent-watch", daemon=True).start()
    if os.getppid() != parent_pid:
        os._exit(1)


def _set_pdeathsig(sig: int) -> bool:
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_PDEATHSIG = 1
        return libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0
    except (OSError, AttributeError, ImportError):
        return False


def _watch_parent(parent_pid: int) -> None:
    while os.getppid() == parent_pid:
        time.sleep(0.5)
    os._exit(1)
