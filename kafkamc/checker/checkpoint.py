"""Checkpoints of the local engine: its state at a level boundary, saved and loaded.

At a level boundary the breadth-first search is entirely described by: the visited states (one
fingerprint each, in discovery order, so a state's index is its position), each state's parent
index and successor index (the trace of any state is rebuilt from them), the frontier (the
states of the last level, whole: they are expanded next), and the counters (depth, states
generated, per-action coverage, the index of the frontier's first state). A run resumed from
there explores exactly what the uninterrupted run explores next, in the same order, so it ends
with the same counts, depth, verdict and trace.

A checkpoint is a directory: ``visited.<g>.bin`` (the fingerprint, parent and successor-index
columns of generation ``g``, those of ``checker/fptable.py`` and ``checker/lineage.py``, as raw
arrays), ``frontier.<g>.<part>.pkl`` (the frontier in order, in one or more parts: each worker
of the multicore engine writes its own segment) and ``manifest.json``
(``kafkamc.checker.manifest``), written last: until its rename the previous generation is the
checkpoint, after it the new one, and the files of other generations are then removed. A lock
file keeps two runs from writing the same directory.

Frontier files are pickles: a checkpoint is trusted as the spec's own code is (the checksums in
the manifest detect damage, not tampering).
"""

from __future__ import annotations

import fcntl
import os
import pickle
import re
import time
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Mapping, Sequence

import numpy as np

from kafkamc.checker.fptable import FingerprintTable
from kafkamc.checker.lineage import Lineage
from kafkamc.checker.manifest import (
    FileEntry, Manifest, has_manifest, refuse_mismatch, runtime_identity, verify_file,
    write_data_file, write_manifest,
)
from kafkamc.errors import UsageError
from kafkamc.result import CheckResult

__all__ = ["Boundary", "Resumed", "Checkpointer", "chunked", "write_frontier", "read_frontier", "finished_doc",
           "refuse_other_run", "ENGINE", "LOCK"]

ENGINE = "local"
LOCK = ".lock"
# States per pickle in a frontier file: large enough to pickle fast, small enough to stream.
_CHUNK_STATES = 4096
# Names of the data files this module writes (and may remove), and of their temporary files that
# a run killed outright leaves behind: anything else is left alone.
_DATA_FILE = re.compile(r"^(\.?(visited|frontier)\.\d+(\.\d+)?\.(bin|pkl)(\.[^.]+\.tmp)?|\.manifest\.json\.[^.]+\.tmp)$")


@dataclass(frozen=True, slots=True)
class Boundary:
    """The engine's counters at the end of a level (``depth`` levels done, nothing of the next)."""

    depth: int
    level_start: int  # index of the frontier's first state
    distinct: int  # states visited: the frontier's states are the last distinct - level_start
    generated: int
    cov_enabled: tuple[int, ...]
    cov_generated: tuple[int, ...]
    cov_distinct: tuple[int, ...]
    validate_left: int  # early states the fingerprinter still deep-checks
    seconds: float  # exploration time up to here, across every run that got here

    def to_json(self) -> dict[str, Any]:
        return {name: list(v) if isinstance(v, tuple) else v
                for name, v in ((f, getattr(self, f)) for f in self.__slots__)}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> "Boundary":
        return cls(**{f: tuple(doc[f]) if f.startswith("cov_") else doc[f] for f in cls.__slots__})


@dataclass(frozen=True, slots=True)
class Resumed:
    """What the engine continues from."""

    boundary: Boundary
    table: FingerprintTable
    lineage: Lineage
    frontier_paths: tuple[str, ...]
    directory: str

    def restore(self, coverage: tuple[list[int], list[int], list[int]], fpr: Any, frontier: Any,
                watch: Any) -> tuple[Any, ...]:
        """Set the engine's coverage counters and fingerprinter as they were at the boundary, fill
        its (empty) ``frontier`` (a list or a ``Frontier``) and tell its ``watch`` (if any); the rest
        of its state: (table, lineage, distinct states, depth, level_start, generated)."""
        b = self.boundary
        for into, saved in zip(coverage, (b.cov_enabled, b.cov_generated, b.cov_distinct)):
            into[:] = saved
        fpr.validate_left = b.validate_left
        for part in self.frontier():
            frontier.extend(part)
        if watch is not None:
            watch.resumed(b.generated)
        return self.table, self.lineage, b.distinct, b.depth, b.level_start, b.generated

    def frontier(self) -> Iterator[list[Any]]:
        """The frontier's states in order, a chunk at a time (the files were verified on load)."""
        count = 0
        for path in self.frontier_paths:
            for chunk in read_frontier(path):
                count += len(chunk)
                yield chunk
        expected = self.boundary.distinct - self.boundary.level_start
        if count != expected:
            raise UsageError(f"--resume {self.directory}: the checkpoint's frontier holds {count} states, its manifest "
                             f"says {expected}; allowed: an intact checkpoint")


def chunked(states: Sequence[Any]) -> Iterator[Sequence[Any]]:
    """A list of states as the chunks ``write_frontier`` takes."""
    for lo in range(0, len(states), _CHUNK_STATES):
        yield states[lo:lo + _CHUNK_STATES]


def write_frontier(directory: str, name: str, chunks: Iterable[Sequence[Any]]) -> FileEntry:
    """Write a frontier or a worker's segment of it, given as chunks of states in order, as one
    data file."""

    def fill(out: Any) -> None:
        for chunk in chunks:
            pickle.dump(list(chunk), out, protocol=pickle.HIGHEST_PROTOCOL)

    return write_data_file(directory, name, fill)


def read_frontier(path: str) -> Iterator[list[Any]]:
    """The chunks ``write_frontier`` wrote, in order."""
    with open(path, "rb") as fh:
        while True:
            try:
                yield pickle.load(fh)
            except EOFError:
                return


def finished_doc(result: CheckResult) -> dict[str, Any]:
    """What a finished run's manifest keeps of its result, to report it again on --resume."""
    return {
        "result": result.result, "violated": result.violated, "reason": result.reason,
        "distinct_states": result.distinct_states, "states_generated": result.states_generated,
        "depth": result.depth, "seconds": result.seconds,
        "path": None if result.trace is None else list(result.trace.path),
        "coverage": None if result.coverage is None else [
            [c.action, c.enabled, c.generated, c.distinct] for c in result.coverage],
    }


class Checkpointer:
    """Writes one run's checkpoints into ``directory`` (and holds its lock while the run lasts).

    ``spec`` and ``options`` are the manifest's identity fields; ``every`` is the least number of
    seconds between two level-boundary checkpoints (0: every level). ``manifest`` is the
    checkpoint resumed, if any; ``load`` returns its engine state. The Spark engine's checkpoints
    (``kafkamc.checker.spark_checkpoint``) are a subclass with their own ``engine`` and data files.
    """

    engine = ENGINE
    data_files = _DATA_FILE  # the names of this engine's data files, which _commit may remove

    def __init__(self, directory: str, spec: Mapping[str, Any], options: Mapping[str, Any], every: float,
                 manifest: Manifest | None = None) -> None:
        self.directory = directory
        self.spec = dict(spec)
        self.options = dict(options)
        self.every = every
        self.manifest = manifest
        self.generation = manifest.generation if manifest is not None else 0
        self.saved: Any = self._saved(manifest)
        self._last = time.monotonic()
        self._lock_fd: int | None = None
        self._resumed = False
        # Why the checkpoint of a stopped run could not be written (the last one saved stands).
        self.failure: str | None = None
        # For benchmarks/bench.py: checkpoints written, seconds spent writing them (wall), the
        # largest one's bytes, and the seconds the resumed state took to load and verify.
        self.saves = 0
        self.save_seconds = 0.0
        self.largest = 0
        self.load_seconds = 0.0

    # -- the directory -------------------------------------------------------------------------

    @staticmethod
    def _saved(manifest: Manifest | None) -> Any:
        """The level the resumed checkpoint holds (with ``depth`` and ``distinct``), or None."""
        return Boundary.from_json(manifest.state) if manifest and manifest.files else None

    def __enter__(self) -> "Checkpointer":
        try:
            os.makedirs(self.directory, exist_ok=True)
            fd = os.open(os.path.join(self.directory, LOCK), os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise UsageError(f"--checkpoint {self.directory}: cannot write it: {exc.strerror or exc}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise UsageError(f"--checkpoint {self.directory}: another kafkamc run is writing this checkpoint; "
                             "allowed: one run per checkpoint directory") from None
        self._lock_fd = fd
        if self.manifest is None and has_manifest(self.directory):
            self.__exit__()
            raise UsageError(f"--checkpoint {self.directory}: already holds a checkpoint; allowed: continue it "
                             "with --resume, or a new or empty directory")
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # releases the lock
            self._lock_fd = None

    # -- saving --------------------------------------------------------------------------------

    def due(self) -> bool:
        """Whether a level boundary reached now should be saved (--checkpoint-every)."""
        return time.monotonic() - self._last >= self.every

    def next_generation(self) -> int:
        """Start a checkpoint: the generation its data files are named after."""
        self.generation += 1
        return self.generation

    def frontier_name(self, generation: int, part: int) -> str:
        return f"frontier.{generation}.{part}.pkl"

    def save(self, boundary: Boundary, table: FingerprintTable, lineage: Lineage,
             frontier: Iterable[Sequence[Any]] | None = None, frontier_files: Iterable[FileEntry] = (),
             generation: int | None = None, began: float | None = None) -> None:
        """Write the checkpoint of ``boundary``: the first ``boundary.distinct`` fingerprints and
        lineage records (a level cut short may have added more) and the frontier, given as chunks
        of states or as files already written (a worker's, since ``began``)."""
        began = time.perf_counter() if began is None else began
        gen = generation if generation is not None else self.next_generation()
        n = boundary.distinct
        columns = (table.fingerprints()[:n], *(c[:n] for c in lineage.columns()))
        if any(len(c) < n for c in columns):
            raise ValueError("internal: a checkpoint of more states than were visited")

        def fill(out: Any) -> None:
            for column in columns:
                out.write(np.ascontiguousarray(column))

        files = [write_data_file(self.directory, f"visited.{gen}.bin", fill)]
        if frontier is not None:
            files.append(write_frontier(self.directory, self.frontier_name(gen, 0), frontier))
        files.extend(frontier_files)
        state = boundary.to_json()
        state["columns"] = [c.dtype.str for c in columns]
        self._commit(Manifest(engine=self.engine, spec=self.spec, runtime=runtime_identity(), options=self.options,
                              generation=gen, level=boundary.depth, files=tuple(files), state=state))
        self.saved = boundary
        self._last = time.monotonic()
        self.saves += 1
        self.save_seconds += time.perf_counter() - began
        self.largest = max(self.largest, sum(f.size for f in files))

    def finish(self, result: CheckResult) -> None:
        """Record a run that ended (ok, violation, or a bound): --resume reports it again."""
        gen = self.next_generation()
        self._commit(Manifest(engine=self.engine, spec=self.spec, runtime=runtime_identity(), options=self.options,
                              generation=gen, level=result.depth, finished=finished_doc(result)))
        self.saved = None

    def _commit(self, manifest: Manifest) -> None:
        write_manifest(self.directory, manifest)
        self.manifest = manifest
        keep = {f.name for f in manifest.files}
        for name in os.listdir(self.directory):
            if self.data_files.match(name) and name not in keep:
                try:
                    os.unlink(os.path.join(self.directory, name))
                except OSError:
                    pass  # a file that cannot be removed wastes space; the manifest does not name it

    # -- loading -------------------------------------------------------------------------------

    def resume(self) -> Resumed | None:
        """The engine state to continue from, the first time an engine asks; None for a new run."""
        if self.manifest is None or not self.manifest.files or self._resumed:
            return None
        self._resumed = True
        return self.load()

    def load(self) -> Resumed:
        """The engine state of the resumed checkpoint, every file verified before it is read."""
        m = self.manifest
        if m is None or not m.files:
            raise ValueError("internal: load() of a checkpoint with no engine state")
        began = time.perf_counter()
        paths = [verify_file(self.directory, f) for f in m.files]
        boundary = Boundary.from_json(m.state)
        n = boundary.distinct
        where = f"--resume {self.directory}:"
        try:
            dtypes = [np.dtype(t) for t in m.state["columns"]]
        except (KeyError, TypeError):
            raise UsageError(f"{where} the manifest does not describe its columns; allowed: an intact checkpoint") from None
        if m.files[0].size != n * sum(d.itemsize for d in dtypes):
            raise UsageError(f"{where} {m.files[0].name} holds {m.files[0].size} bytes, not the {n} visited states "
                             "the manifest counts; allowed: an intact checkpoint")
        with open(paths[0], "rb") as fh:
            fps, parent, sidx = (np.fromfile(fh, dtype=d, count=n) for d in dtypes)
        try:
            table = FingerprintTable.of(fps.astype(np.int64, copy=False))
            lineage = Lineage.of(parent, sidx)
        except ValueError as exc:
            raise UsageError(f"{where} {m.files[0].name} is damaged ({exc}); allowed: an intact checkpoint") from None
        self._last = time.monotonic()
        self.load_seconds = time.perf_counter() - began
        return Resumed(boundary, table, lineage, tuple(paths[1:]), self.directory)


def refuse_other_run(manifest: Manifest, spec: Mapping[str, Any], options: Mapping[str, Any], directory: str) -> None:
    """UsageError (one line) unless ``manifest`` was written by this same spec, runtime and options."""
    where = f"--resume {directory}:"
    old_sources, new_sources = manifest.spec.get("sources", {}), spec.get("sources", {})
    for module in sorted(set(old_sources) | set(new_sources)):
        if old_sources.get(module) != new_sources.get(module):
            raise UsageError(f"{where} the checkpoint is of another spec version (module {module} changed since it "
                             "was written); allowed: resume with the source it was written with, or start a new run")
    refuse_mismatch(manifest.runtime, runtime_identity(), f"{where} runtime")
    refuse_mismatch(manifest.spec, spec, f"{where} spec", keys=("ref", "name", "class", "params"))
    refuse_mismatch(manifest.options, options, f"{where} option")
