"""A breadth-first level's states, in memory up to a budget and in files beyond it (TLC's DiskStateQueue).

A level is appended in discovery order and read back once, in the same order, a chunk at a time.
While its states fit the budget they stay in a list; past it, every full chunk is pickled to the
end of the level's file, and reading yields the file's chunks, then the states still in memory.
So the engine holds the chunk it expands, the next level's last chunk and whatever fits the budget
(half of it for each of the two levels), not the widest level.

What a state costs in memory is estimated once per frontier from a sample (the objects reachable
from it, each counted once per state, as ``sys.getsizeof`` sees them). States share structure
(small ints, the parts a successor keeps from its parent), so the estimate errs high, which only
makes the frontier spill sooner.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any, Iterator

from kafkamc.checker.codec import codec_for

__all__ = ["Frontier", "FrontierStore", "estimate_bytes", "DEFAULT_FRONTIER_MEMORY", "SPILL_CHUNK"]

# kafkamc check's default budget (--frontier-memory).
DEFAULT_FRONTIER_MEMORY = 2 << 30

# States per pickled chunk in a level's file (and the smallest spill).
SPILL_CHUNK = 8192
_SAMPLE = 32


def estimate_bytes(states: list[Any]) -> int:
    """Bytes per state: the mean over ``states`` of the sizes of the objects each reaches."""
    if not states:
        return 0
    total = 0
    for s in states:
        seen: set[int] = set()
        todo = [s]
        while todo:
            o = todo.pop()
            if id(o) in seen:
                continue
            seen.add(id(o))
            total += sys.getsizeof(o)
            if isinstance(o, (tuple, list, frozenset, set)):
                todo.extend(o)
            elif isinstance(o, dict):
                todo.extend(o.keys())
                todo.extend(o.values())
            else:
                slots = getattr(type(o), "__slots__", None)
                if slots is not None:
                    todo.extend(getattr(o, name) for name in slots if hasattr(o, name))
                elif hasattr(o, "__dict__"):
                    todo.append(vars(o))
    return max(1, total // len(states))


def _encoded(part: list[Any]) -> tuple[str, Any]:
    """A chunk as it is pickled: its states as plain tuples (``codec``: pickled in C, about three
    times faster than slotted dataclasses) when they are all of one type whose codec gives back
    the chunk's first state exactly, else the states themselves."""
    tp = type(part[0]) if part else None
    codec = codec_for(tp) if tp is not None else None
    if codec is not None and codec.plain and all(type(s) is tp for s in part) and codec.round_trips(part[0]):
        return "T", (tp, list(map(codec.enc, part)))
    return "O", part


def _decoded(data: tuple[str, Any]) -> list[Any]:
    kind, body = data
    if kind == "T":
        tp, plain = body
        return list(map(codec_for(tp).dec, plain))
    return body


class FrontierStore:
    """Where the levels that pass the budget are written: ``directory``, or a temporary directory
    made there (or in the system's temporary directory) at the first spill and removed on close.

    The multicore engine's workers write into their coordinator's directory (``share`` makes it
    before the fork, ``forked`` gives each worker a store of its own there, with its own budget
    and file names): the coordinator removes it whatever becomes of its workers, which are
    killed rather than asked to clean up when a run is cut short."""

    def __init__(self, budget: int | None, directory: str | os.PathLike[str] | None = None) -> None:
        self.budget = budget
        self._parent = None if directory is None else Path(directory)
        self._dir: Path | None = None
        self._prefix = ""
        self._owner = True
        self._count = 0
        self.spilled_levels = 0
        self.bytes_written = 0

    def new(self) -> "Frontier":
        return Frontier(self)

    def share(self) -> None:
        """Make the temporary directory now, so that forked stores use it (the multicore engine's
        workers also pass their candidates to each other through files there, budget or not)."""
        if self._dir is None:
            self._make()

    def forked(self, name: str, budget: int | None) -> "FrontierStore":
        """A store for a forked worker: files named ``name-level-N`` in this store's directory
        (``share`` first), which this store, not the worker's, removes."""
        if self._dir is None:
            raise RuntimeError("FrontierStore.forked: share() the directory before the fork")
        child = FrontierStore(budget, self._parent)
        child._dir, child._prefix, child._owner = self._dir, f"{name}-", False
        return child

    def _make(self) -> Path:
        if self._parent is not None:
            self._parent.mkdir(parents=True, exist_ok=True)
        self._dir = Path(tempfile.mkdtemp(prefix="kafkamc-frontier-", dir=self._parent))
        return self._dir

    def shared(self, name: str) -> Path:
        """A file ``name`` in the directory that ``share`` made (the same for every forked store)."""
        if self._dir is None:
            raise RuntimeError("FrontierStore.shared: share() the directory before the fork")
        return self._dir / name

    def _file(self) -> Path:
        where = self._dir if self._dir is not None else self._make()
        self._count += 1
        return where / f"{self._prefix}level-{self._count}.pickle"

    def close(self) -> None:
        if self._dir is not None and self._owner:
            shutil.rmtree(self._dir, ignore_errors=True)
        self._dir = None

    def __enter__(self) -> "FrontierStore":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class Frontier:
    """One level: ``extend`` in order, then ``chunks``, in the same order, as often as needed (a
    checkpoint reads the level before it is expanded, and again after a stop), then ``discard``."""

    def __init__(self, store: FrontierStore) -> None:
        self._store = store
        self._mem: list[Any] = []
        self._len = 0
        self._limit: int | None = None  # states kept in memory before spilling (None: not yet known)
        self._path: Path | None = None
        self._file: Any = None
        self._chunks_on_disk = 0

    def __len__(self) -> int:
        return self._len

    @property
    def on_disk(self) -> bool:
        return self._path is not None

    def extend(self, states: list[Any]) -> None:
        self._mem.extend(states)
        self._len += len(states)
        budget = self._store.budget
        if budget is None:
            return
        if self._limit is None:
            if len(self._mem) < _SAMPLE and self._len < SPILL_CHUNK:
                return
            # Half the budget each: the level being expanded and the one being built.
            self._limit = max(1, budget // 2 // estimate_bytes(self._mem[:_SAMPLE]))
        if self._path is not None or len(self._mem) > self._limit:
            while len(self._mem) >= SPILL_CHUNK:
                self._spill(self._mem[:SPILL_CHUNK])
                del self._mem[:SPILL_CHUNK]
            if self._path is None and self._mem:  # a budget below one chunk: spill what there is
                self._spill(self._mem)
                self._mem = []

    def _spill(self, part: list[Any]) -> None:
        if self._file is None:
            self._path = self._store._file()
            self._file = open(self._path, "wb")
            self._store.spilled_levels += 1
        pickle.dump(_encoded(part), self._file, protocol=pickle.HIGHEST_PROTOCOL)
        self._chunks_on_disk += 1

    def seal(self) -> None:
        """The level is complete: close its file (before a fork, so that no process inherits
        unwritten buffered chunks, which each would write again when it ends)."""
        f = self._file
        if f is not None:
            # Again after a stop that landed between the close and forgetting the file: done.
            if not f.closed:
                self._store.bytes_written += f.tell()
                f.close()
            self._file = None

    def chunks(self, size: int) -> Iterator[list[Any]]:
        """The states in order, in lists of at most ``size`` (a list from the file may be shorter).
        The level is complete from the first call on (``extend`` no more); its file stays until
        ``discard``."""
        self.seal()
        if self._path is not None:
            with open(self._path, "rb") as f:
                for _ in range(self._chunks_on_disk):
                    part = _decoded(pickle.load(f))
                    for i in range(0, len(part), size):
                        yield part[i:i + size]
        mem = self._mem
        for i in range(0, len(mem), size):
            yield mem[i:i + size]

    def discard(self) -> None:
        """Forget the level (its file too)."""
        if self._file is not None:
            self._file.close()
            self._file = None
        if self._path is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self._path)
            self._path = None
            self._chunks_on_disk = 0
        self._mem = []
