"""Reliable checkpoints of the Spark engine (``kafkamc check --engine spark --checkpoint DIR``).

Without it the engine keeps each level's blocks (the visited fingerprints and the frontier of a
partition) only in the executors' block managers and cuts lineage with ``localCheckpoint``: fast,
but a lost executor takes blocks with it that nothing can recompute. With it every level's blocks
are files in DIR, on a filesystem every executor sees, and the next level reads them from there:
lineage is one level long, so a lost executor's blocks are read again from the files (its tasks
are rerun by Spark), and the driver's state at the last complete level is a small file beside them,
so a driver that dies is resumed with ``kafkamc check --resume DIR``.

DIR holds:

- ``kafkamc-spark-checkpoint.json``: the run's identity (spec, parameters, properties, options,
  a digest of the source of the spec's modules) and the driver's state after the last complete
  level (counts, coverage, the per-level statistics, the name of each block file). Rewritten whole
  (temporary file, fsync, rename) after every level.
- ``level-<L>/part-<j>-<checksum>``: block ``j`` of level ``L``, named by the BLAKE2b digest of its
  bytes, so that two attempts of one task (Spark reruns tasks) never overwrite each other's file
  and the driver records exactly the file of the attempt it accepted. A reader checks the digest.
  A level's directory is deleted once the next level's state is recorded.

The identity is checked before anything runs: a checkpoint of another spec, other parameters or
options, or of a spec whose source changed since, is refused in one line (exit 2), and so is a
damaged one (an unreadable state file, a missing block, a block whose digest does not match).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import struct
import sys
import tempfile
from typing import Any, Sequence

import numpy as np

from kafkamc.errors import EngineError, UsageError

__all__ = [
    "FORMAT", "STATE_FILE", "Identity", "LevelState", "spec_identity", "source_digest", "prepare", "load",
    "check_identity", "save", "write_block", "read_block", "verify_blocks", "drop_other_levels",
]

FORMAT = 1
STATE_FILE = "kafkamc-spark-checkpoint.json"
_MAGIC = b"KMCSPK01"
_HEADER = struct.Struct("<8sQQQ")  # magic, fingerprints, frontier bytes, frontier states


@dataclasses.dataclass(frozen=True, slots=True)
class Identity:
    """What a checkpoint was written for; resuming needs all of it equal."""

    spec: str  # as given: a bundled name or module:Class
    params: tuple[tuple[str, Any], ...]
    properties: tuple[str, ...]
    symmetry: bool
    deadlock: bool
    max_depth: int | None
    max_states: int | None
    source: str  # digest of the source files of the spec's modules

    def as_json(self) -> dict:
        doc = dataclasses.asdict(self)
        doc["params"] = dict(self.params)
        doc["properties"] = list(self.properties)
        return doc

    @classmethod
    def from_json(cls, doc: dict) -> "Identity":
        return cls(
            spec=str(doc["spec"]), params=tuple(sorted(dict(doc["params"]).items())),
            properties=tuple(doc["properties"]), symmetry=bool(doc["symmetry"]), deadlock=bool(doc["deadlock"]),
            max_depth=doc["max_depth"], max_states=doc["max_states"], source=str(doc["source"]),
        )


@dataclasses.dataclass(frozen=True, slots=True)
class LevelState:
    """The driver's state after a complete level: enough to go on as if it had never stopped."""

    level: int  # how many merge jobs completed (0: the initial states' blocks)
    partitions: int
    blocks: tuple[str, ...]  # the file name of each partition's block in level-<level>/
    distinct: int
    generated: int
    depth: int
    frontier: int
    coverage: tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]
    plain_codec: bool
    levels: tuple[dict, ...]  # the per-level statistics reported in the result's extra


def source_digest(objects: Sequence[Any]) -> str:
    """SHA-256 over the source files of the modules that define ``objects`` (the spec class and its
    bases, its actions, properties, hooks and state type): any edit to them is another version."""
    names = set()
    for obj in objects:
        name = getattr(obj, "__module__", None)
        if name and name not in ("builtins", "__main__"):
            names.add(name)
    h = hashlib.sha256()
    for name in sorted(names):
        module = sys.modules.get(name)
        path = getattr(module, "__file__", None)
        h.update(name.encode() + b"\0")
        if path and os.path.isfile(path):
            with open(path, "rb") as fh:
                h.update(hashlib.sha256(fh.read()).digest())
    return h.hexdigest()


def spec_identity(spec: Any, spec_ref: str, props: Sequence[Any], state_type: type, *, symmetry: bool,
                  deadlock: bool, max_depth: int | None, max_states: int | None) -> Identity:
    objects: list[Any] = list(type(spec).__mro__[:-1]) + [a.fn for a in spec.actions()]
    objects += [pr.fn for pr in props] + [state_type]
    objects += [h for h in (spec.constraint, spec.symmetry, spec.view) if h is not None]
    return Identity(
        spec=spec_ref, params=tuple(sorted(spec.p.as_dict().items())), properties=tuple(pr.name for pr in props),
        symmetry=symmetry, deadlock=deadlock, max_depth=max_depth, max_states=max_states,
        source=source_digest(objects),
    )


def _damaged(root: str, what: str) -> UsageError:
    return UsageError(f"checkpoint {root} is damaged: {what}; allowed: an intact checkpoint directory, "
                      "or start afresh with --checkpoint and an empty directory")


def prepare(root: str) -> str:
    """The absolute path of a new checkpoint directory: created if missing, refused if it already
    holds a checkpoint (that is for --resume) or cannot be written."""
    root = os.path.abspath(root)
    if os.path.exists(os.path.join(root, STATE_FILE)):
        raise UsageError(f"--checkpoint {root} already holds a checkpoint; allowed: --resume {root}, "
                         "or an empty or new directory")
    try:
        os.makedirs(root, exist_ok=True)
        probe = tempfile.NamedTemporaryFile(dir=root, prefix=".probe-")
        probe.close()
    except OSError as exc:
        raise UsageError(f"--checkpoint {root} cannot be written ({exc.strerror or exc}); allowed: a directory "
                         "this user can write, on a filesystem every Spark executor sees") from None
    return root


def load(root: str) -> tuple[Identity, LevelState | None]:
    """The identity and last level state recorded in ``root`` (the state is None when the run
    stopped before its first level was recorded)."""
    root = os.path.abspath(root)
    path = os.path.join(root, STATE_FILE)
    if not os.path.isfile(path):
        raise UsageError(f"--resume {root} holds no kafkamc Spark checkpoint (no {STATE_FILE}); allowed: "
                         "a directory written by --engine spark --checkpoint")
    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
        if doc.get("format") != FORMAT:
            raise UsageError(f"--resume {root} was written in checkpoint format {doc.get('format')!r}; "
                             f"allowed: format {FORMAT}, this kafkamc's")
        identity = Identity.from_json(doc["identity"])
        lv = doc.get("state")
        state = None if lv is None else LevelState(
            level=int(lv["level"]), partitions=int(lv["partitions"]), blocks=tuple(lv["blocks"]),
            distinct=int(lv["distinct"]), generated=int(lv["generated"]), depth=int(lv["depth"]),
            frontier=int(lv["frontier"]), coverage=tuple(tuple(int(n) for n in c) for c in lv["coverage"]),
            plain_codec=bool(lv["plain_codec"]), levels=tuple(lv["levels"]),
        )
    except UsageError:
        raise
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise _damaged(root, f"{STATE_FILE} cannot be read ({type(exc).__name__}: {exc})") from None
    if state is not None and (len(state.blocks) != state.partitions or len(state.coverage) != 3):
        raise _damaged(root, f"{STATE_FILE} is inconsistent")
    return identity, state


def check_identity(root: str, recorded: Identity, current: Identity) -> None:
    """One line naming what differs between the checkpoint's run and this one."""
    for field in dataclasses.fields(Identity):
        was, now = getattr(recorded, field.name), getattr(current, field.name)
        if was != now:
            if field.name == "source":
                what = f"the source of spec {current.spec} changed since the checkpoint was written"
            else:
                what = f"{field.name} was {was!r} there, {now!r} here"
            raise UsageError(f"--resume {root}: the checkpoint is of another run ({what}); allowed: resume it "
                             "with the same spec source, or start afresh with --checkpoint and an empty directory")


def _fsync_dir(path: str) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _write_whole(path: str, data: bytes) -> None:
    """Write ``data`` at ``path`` durably and atomically: a temporary file beside it, fsync, rename."""
    directory = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-")
    try:
        os.fchmod(fd, 0o644)  # mkstemp's 0600 would keep executors of another user out
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fsync_dir(directory)


def save(root: str, identity: Identity, state: LevelState | None) -> None:
    """Record the identity and the state after a complete level (the driver, after each level)."""
    doc = {"format": FORMAT, "identity": identity.as_json(),
           "state": None if state is None else {
               **{f.name: getattr(state, f.name) for f in dataclasses.fields(LevelState)},
               "blocks": list(state.blocks), "coverage": [list(c) for c in state.coverage],
               "levels": list(state.levels)}}
    try:
        _write_whole(os.path.join(root, STATE_FILE), json.dumps(doc, indent=1).encode())
    except OSError as exc:
        raise EngineError(f"cannot write the checkpoint in {root}: {exc}") from None


def _level_dir(root: str, level: int) -> str:
    return os.path.join(root, f"level-{level}")


def write_block(root: str, level: int, index: int, visited: np.ndarray, packed: bytes, count: int) -> str:
    """Write partition ``index``'s block of ``level`` (on an executor); returns the file's name."""
    directory = _level_dir(root, level)
    os.makedirs(directory, exist_ok=True)
    fps = np.ascontiguousarray(visited, dtype=np.int64)
    header = _HEADER.pack(_MAGIC, fps.size, len(packed), count)
    h = hashlib.blake2b(digest_size=16)
    for part in (header, memoryview(fps).cast("B"), packed):
        h.update(part)
    name = f"part-{index:05d}-{h.hexdigest()}"
    path = os.path.join(directory, name)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".tmp-part-{index:05d}-")
    try:
        os.fchmod(fd, 0o644)
        with os.fdopen(fd, "wb") as fh:
            fh.write(header)
            fh.write(memoryview(fps).cast("B"))
            fh.write(packed)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return name


def read_block(root: str, level: int, name: str) -> tuple[np.ndarray, bytes, int]:
    """The block in ``level-<level>/<name>``, checked against the digest in its name."""
    path = os.path.join(_level_dir(root, level), name)
    with open(path, "rb") as fh:
        data = fh.read()
    if hashlib.blake2b(data, digest_size=16).hexdigest() != name.rsplit("-", 1)[-1]:
        raise ValueError(f"checkpoint block {path} does not match its checksum")
    magic, n, flen, count = _HEADER.unpack_from(data)
    if magic != _MAGIC or _HEADER.size + 8 * n + flen != len(data):
        raise ValueError(f"checkpoint block {path} is not a kafkamc block")
    visited = np.frombuffer(data, dtype=np.int64, count=n, offset=_HEADER.size).copy()
    return visited, data[_HEADER.size + 8 * n:], count


def verify_blocks(root: str, state: LevelState) -> None:
    """On resume, before Spark starts: every block the state names is there, intact."""
    directory = _level_dir(root, state.level)
    for index, name in enumerate(state.blocks):
        if not name.startswith(f"part-{index:05d}-"):
            raise _damaged(root, f"block {index} of level {state.level} is named {name!r}")
        path = os.path.join(directory, name)
        h = hashlib.blake2b(digest_size=16)
        try:
            with open(path, "rb") as fh:
                for chunk in iter(lambda: fh.read(1 << 20), b""):
                    h.update(chunk)
        except OSError as exc:
            raise _damaged(root, f"block {index} of level {state.level} cannot be read ({exc.strerror or exc})") \
                from None
        if h.hexdigest() != name.rsplit("-", 1)[-1]:
            raise _damaged(root, f"block {index} of level {state.level} ({name}) does not match its checksum")


def drop_other_levels(root: str, keep: int) -> None:
    """Delete every level directory but ``keep`` (earlier levels, and a level a dead driver left
    half written)."""
    try:
        names = os.listdir(root)
    except OSError:
        return
    for name in names:
        if name.startswith("level-") and name != f"level-{keep}":
            shutil.rmtree(os.path.join(root, name), ignore_errors=True)
