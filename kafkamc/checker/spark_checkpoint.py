"""Reliable checkpoints of the Spark engine (``kafkamc check --engine spark --checkpoint DIR``).

Without them the engine keeps each level's blocks (a partition's visited fingerprints and its
frontier) only in the executors' block managers and cuts lineage with ``localCheckpoint``: fast,
but a lost executor takes blocks with it that nothing can recompute. With them every level's
blocks are files in DIR, on a filesystem every executor sees, and the next level reads them from
there: lineage is one level long, so Spark reruns a lost executor's tasks, which read the blocks
again from the files; and after every level the driver records its state in the checkpoint's
manifest (``kafkamc.checker.manifest``, shared with the local engine's checkpoints), so a driver
that dies is resumed with ``kafkamc check --resume DIR``.

Block ``j`` of level ``L`` is ``spark.<L>.<j>.<digest>.blk``, named after a prefix of the SHA-256
of its bytes: two attempts of one task (Spark reruns tasks) never overwrite each other's file,
and the driver records exactly the file of the attempt whose statistics it accepted, with its
SHA-256 and size. Readers check the digest. Files of other levels go once a level is recorded.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import struct
from typing import Any, Mapping, Sequence

import numpy as np

from kafkamc.checker.checkpoint import Checkpointer
from kafkamc.checker.manifest import FileEntry, Manifest, runtime_identity, verify_file
from kafkamc.errors import UsageError
from kafkamc.safewrite import write_file

__all__ = ["ENGINE", "LevelState", "SparkCheckpointer", "write_block", "read_block"]

ENGINE = "spark"
_MAGIC = b"KMCSPK01"
_HEADER = struct.Struct("<8sQQQ")  # magic, fingerprints, frontier bytes, frontier states


@dataclasses.dataclass(frozen=True, slots=True)
class LevelState:
    """The driver's state after a complete level: enough to go on as if it had never stopped."""

    level: int  # merge jobs completed (0: the initial states' blocks)
    partitions: int
    distinct: int
    generated: int
    depth: int
    frontier: int
    coverage: tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]
    plain_codec: bool
    levels: tuple[Mapping[str, Any], ...]  # the per-level statistics reported in the result's extra

    def to_json(self) -> dict[str, Any]:
        doc = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        doc["coverage"] = [list(c) for c in self.coverage]
        doc["levels"] = [dict(lv) for lv in self.levels]
        return doc

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> "LevelState":
        return cls(
            level=int(doc["level"]), partitions=int(doc["partitions"]), distinct=int(doc["distinct"]),
            generated=int(doc["generated"]), depth=int(doc["depth"]), frontier=int(doc["frontier"]),
            coverage=tuple(tuple(int(n) for n in c) for c in doc["coverage"]),  # type: ignore[arg-type]
            plain_codec=bool(doc["plain_codec"]), levels=tuple(doc["levels"]),
        )


class SparkCheckpointer(Checkpointer):
    """The Spark engine's checkpoints in one directory: the lock, the refusals and the manifest
    are the local engine's; the data files are the blocks the executors write."""

    engine = ENGINE
    # Blocks, and the temporary files of blocks and manifests a killed task or driver left.
    data_files = re.compile(r"^(\.?spark\.\d+\.\d+\.[0-9a-f]{16}\.blk(\.[^.]+\.tmp)?|\.manifest\.json\.[^.]+\.tmp)$")

    @staticmethod
    def _saved(manifest: Manifest | None) -> Any:
        if manifest is None or not manifest.files:
            return None
        try:
            return LevelState.from_json(manifest.state)
        except (KeyError, TypeError, ValueError) as exc:
            raise UsageError(f"the checkpoint's Spark state is damaged ({type(exc).__name__}: {exc}); allowed: an "
                             "intact checkpoint") from None

    def root(self) -> str:
        """The directory as executors must name it (the same absolute path everywhere)."""
        return os.path.abspath(self.directory)

    def resumed_level(self) -> tuple[LevelState, list[FileEntry]] | None:
        """The level to continue from and its blocks (each checked against the manifest first),
        or None for a new run."""
        m = self.manifest
        if m is None or not m.files:
            return None
        state = self.saved
        if len(m.files) != state.partitions or any(
                not f.name.startswith(f"spark.{state.level}.{j}.") for j, f in enumerate(m.files)):
            raise UsageError(f"--resume {self.directory}: the manifest names other blocks than level {state.level}'s "
                             f"{state.partitions}; allowed: an intact checkpoint")
        for f in m.files:
            verify_file(self.directory, f)
        return state, list(m.files)

    def record(self, state: LevelState, blocks: Sequence[FileEntry]) -> None:
        """Commit level ``state`` (its blocks written): the manifest names them, other levels' go."""
        self._commit(Manifest(engine=self.engine, spec=self.spec, runtime=runtime_identity(), options=self.options,
                              generation=self.next_generation(), level=state.depth, files=tuple(blocks),
                              state=state.to_json()))
        self.saved = state
        self.saves += 1


def write_block(root: str, level: int, index: int, visited: np.ndarray, packed: bytes,
                count: int) -> tuple[str, str, int]:
    """Write partition ``index``'s block of ``level`` into ``root`` (on an executor): its file's
    name, SHA-256 and size."""
    fps = np.ascontiguousarray(visited, dtype=np.int64)
    parts = (_HEADER.pack(_MAGIC, fps.size, len(packed), count), memoryview(fps).cast("B"), packed)
    h = hashlib.sha256()
    for part in parts:
        h.update(part)
    digest = h.hexdigest()
    name = f"spark.{level}.{index}.{digest[:16]}.blk"

    def fill(fh: Any) -> None:
        for part in parts:
            fh.write(part)

    write_file(os.path.join(root, name), fill, "--checkpoint: cannot write")
    return name, digest, sum(len(part) for part in parts)


def read_block(root: str, name: str, sha256: str) -> tuple[np.ndarray, bytes, int]:
    """The block in file ``name``, checked against its SHA-256 (on an executor)."""
    path = os.path.join(root, name)
    with open(path, "rb") as fh:
        data = fh.read()
    if hashlib.sha256(data).hexdigest() != sha256:
        raise ValueError(f"checkpoint block {path} does not match its SHA-256")
    magic, n, flen, count = _HEADER.unpack_from(data)
    if magic != _MAGIC or _HEADER.size + 8 * n + flen != len(data):
        raise ValueError(f"checkpoint block {path} is not a kafkamc block")
    visited = np.frombuffer(data, dtype=np.int64, count=n, offset=_HEADER.size).copy()
    return visited, data[_HEADER.size + 8 * n:], count
