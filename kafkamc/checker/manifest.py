"""A checkpoint's manifest: what was being checked, with which options, and which files hold it.

A checkpoint directory holds data files (written by an engine: ``kafkamc.checker.checkpoint`` for
the local engine) and one ``manifest.json`` naming them with their SHA-256 and size. The manifest
is written last, atomically (a temporary file and one rename, ``kafkamc.safewrite``), so the
directory always holds one consistent checkpoint: the previous one until the rename, the new one
after it.

Resuming is sound only with the run that wrote the checkpoint, so the manifest records its
identity and refuses anything else, in one line (UsageError, exit 2):

- the spec: the reference it was named by, its class, its resolved parameters, and the SHA-256 of
  the source of every module its behaviour comes from (the class and its bases, the modules of its
  actions, properties and hooks, and kafkamc's fingerprint and Spec API modules, which decide the
  fingerprints and the successor order). A spec edited since is "another spec version";
- the runtime: kafkamc's version, the Python implementation and version, its hash algorithm and
  the byte order (fingerprints are CPython hashes; data files hold native arrays);
- the engine and its options that change results (properties, symmetry, deadlock, bounds);
- the format's name and version, and a checksum of the manifest itself; each data file is checked
  against its recorded digest and size before any of it is read (a damaged or truncated file).

Engines other than the local one (Spark) keep their own data files and counters; the manifest
stores the counters as a JSON object it does not interpret.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import sys
import time
import types
from dataclasses import dataclass, field, replace
from typing import IO, Any, Callable, Iterable, Mapping

from kafkamc import __version__
from kafkamc.errors import UsageError
from kafkamc.safewrite import write_file
from kafkamc.spec.api import Spec

__all__ = [
    "FORMAT", "VERSION", "MANIFEST", "FileEntry", "Manifest", "spec_identity", "runtime_identity",
    "source_digests", "write_manifest", "read_manifest", "has_manifest", "write_data_file",
    "verify_file", "refuse_mismatch", "HashingWriter",
]

FORMAT = "kafkamc-checkpoint"
# Bumped whenever the meaning of a manifest field or of an engine's data files changes.
VERSION = 1
MANIFEST = "manifest.json"
# kafkamc's own modules that decide what a fingerprint is and in which order successors come.
_ENGINE_MODULES = ("kafkamc.checker.fingerprint", "kafkamc.spec.api")
_CHUNK = 1 << 20


def _digest_file(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(_CHUNK), b""):
            h.update(block)
    return h.hexdigest()


def _module_digest(name: str) -> str:
    module = sys.modules.get(name) or importlib.import_module(name)
    path = getattr(module, "__file__", None)
    if not path or not path.endswith(".py") or not os.path.isfile(path):
        raise UsageError(f"--checkpoint: module {name} has no Python source file to fingerprint; allowed: "
                         "specs, properties and hooks defined in .py modules")
    return _digest_file(path)


def _modules_of(spec: Spec) -> set[str]:
    """Every module whose code decides the states, successors and verdicts of ``spec``: the modules
    of its class, bases, actions, properties and hooks, and what they use, transitively (a helper
    module), except the standard library and installed third-party packages."""
    cls = type(spec)
    names = {c.__module__ for c in cls.__mro__}
    functions: list[Any] = [a.fn for a in cls.actions()] + [pr.fn for pr in cls.properties()]
    for hook in ("init_states", "constraint", "symmetry", "view", "validate_params"):
        functions.append(getattr(cls, hook, None))
    names.update(getattr(fn, "__module__", None) or "builtins" for fn in functions)
    names.update(_ENGINE_MODULES)
    todo = sorted(n for n in names if _is_project(n))
    found: set[str] = set()
    while todo:
        name = todo.pop()
        if name in found:
            continue
        found.add(name)
        for value in vars(sys.modules.get(name) or importlib.import_module(name)).values():
            used = value.__name__ if isinstance(value, types.ModuleType) else getattr(value, "__module__", None)
            if isinstance(used, str) and used not in found and _is_project(used):
                todo.append(used)
    return found


def _is_project(name: str) -> bool:
    """A module of kafkamc or of the user's project, not of Python or an installed package."""
    if name.split(".")[0] == "kafkamc":
        return True
    module = sys.modules.get(name)
    if module is None or name.split(".")[0] in sys.stdlib_module_names:
        return False
    path = getattr(module, "__file__", None)
    if not path:
        return True  # _module_digest refuses it: behaviour we cannot fingerprint
    return not any(part in ("site-packages", "dist-packages") for part in os.path.normpath(path).split(os.sep))


def source_digests(spec: Spec) -> dict[str, str]:
    """Module name -> SHA-256 of its source, for every module ``spec``'s behaviour comes from."""
    return {name: _module_digest(name) for name in sorted(_modules_of(spec))}


def spec_identity(spec: Spec, ref: str) -> dict[str, Any]:
    """The spec as resolved for this run: what ``--resume`` rebuilds and what must not change."""
    cls = type(spec)
    return {
        "ref": ref,
        "name": spec.name,
        "class": f"{cls.__module__}:{cls.__qualname__}",
        "params": spec.p.as_dict(),
        "sources": source_digests(spec),
    }


def runtime_identity() -> dict[str, Any]:
    """What the fingerprints and native arrays of a checkpoint depend on besides the spec."""
    impl = sys.implementation
    return {
        "kafkamc": __version__,
        "python": f"{impl.name}-{sys.version_info[0]}.{sys.version_info[1]}",
        "hash": f"{sys.hash_info.algorithm}/{sys.hash_info.width}",
        "byteorder": sys.byteorder,
    }


@dataclass(frozen=True, slots=True)
class FileEntry:
    """A data file of the checkpoint, by its name inside the directory."""

    name: str
    sha256: str
    size: int


@dataclass(frozen=True, slots=True)
class Manifest:
    """One checkpoint. ``state`` is the engine's own counters (JSON); ``finished`` is the verdict
    of a run that ended, when it did (then there is nothing left to explore)."""

    engine: str
    spec: Mapping[str, Any]
    runtime: Mapping[str, Any]
    options: Mapping[str, Any]
    generation: int
    level: int
    files: tuple[FileEntry, ...] = ()
    state: Mapping[str, Any] = field(default_factory=dict)
    finished: Mapping[str, Any] | None = None
    written: float = 0.0

    def to_json(self) -> dict[str, Any]:
        doc = {
            "format": FORMAT, "version": VERSION, "engine": self.engine, "spec": dict(self.spec),
            "runtime": dict(self.runtime), "options": dict(self.options), "generation": self.generation,
            "level": self.level, "files": [[f.name, f.sha256, f.size] for f in self.files],
            "state": dict(self.state), "finished": None if self.finished is None else dict(self.finished),
            "written": self.written,
        }
        doc["checksum"] = _checksum(doc)
        return doc

    @classmethod
    def from_json(cls, doc: Any, where: str) -> "Manifest":
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            raise UsageError(f"{where}: not a kafkamc checkpoint manifest; allowed: a directory written by "
                             "kafkamc check --checkpoint")
        if doc.get("version") != VERSION:
            raise UsageError(f"{where}: checkpoint format version {doc.get('version')!r}, this kafkamc reads "
                             f"version {VERSION}; allowed: a checkpoint written by this kafkamc version")
        body = {k: v for k, v in doc.items() if k != "checksum"}
        if doc.get("checksum") != _checksum(body):
            raise UsageError(f"{where}: the manifest is damaged (its checksum does not match); allowed: an "
                             "intact checkpoint")
        try:
            return cls(
                engine=doc["engine"], spec=doc["spec"], runtime=doc["runtime"], options=doc["options"],
                generation=int(doc["generation"]), level=int(doc["level"]),
                files=tuple(FileEntry(str(n), str(h), int(s)) for n, h, s in doc["files"]),
                state=doc["state"], finished=doc["finished"], written=float(doc["written"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise UsageError(f"{where}: the manifest lacks or mangles a field ({exc}); allowed: an intact "
                             "checkpoint") from None


def _checksum(body: Mapping[str, Any]) -> str:
    text = json.dumps({k: v for k, v in body.items() if k != "checksum"}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def has_manifest(directory: str) -> bool:
    return os.path.lexists(os.path.join(directory, MANIFEST))


def write_manifest(directory: str, manifest: Manifest) -> str:
    """Write the manifest atomically; the checkpoint it names is the directory's from now on."""
    stamped = manifest if manifest.written else replace(manifest, written=time.time())
    return write_file(os.path.join(directory, MANIFEST), json.dumps(stamped.to_json(), indent=1) + "\n",
                      "--checkpoint: cannot write")


def read_manifest(directory: str, what: str = "--resume") -> Manifest:
    """The directory's manifest, checked for format, version and damage (UsageError otherwise)."""
    path = os.path.join(directory, MANIFEST)
    where = f"{what} {directory}"
    if not os.path.isdir(directory):
        raise UsageError(f"{where}: no such directory; allowed: a directory written by kafkamc check --checkpoint")
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except FileNotFoundError:
        raise UsageError(f"{where}: holds no checkpoint ({MANIFEST} is missing); allowed: a directory written "
                         "by kafkamc check --checkpoint") from None
    except OSError as exc:
        raise UsageError(f"{where}: cannot read {MANIFEST}: {exc.strerror or exc}") from None
    try:
        doc = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise UsageError(f"{where}: the manifest is damaged (not JSON); allowed: an intact checkpoint") from None
    return Manifest.from_json(doc, where)


class HashingWriter:
    """A binary file that also computes the SHA-256 and size of what goes through it."""

    def __init__(self, fh: IO[bytes]) -> None:
        self._fh = fh
        self._hash = hashlib.sha256()
        self.size = 0

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")
        self._hash.update(view)
        self.size += len(view)
        return self._fh.write(view)

    @property
    def sha256(self) -> str:
        return self._hash.hexdigest()


def write_data_file(directory: str, name: str, fill: Callable[[HashingWriter], None]) -> FileEntry:
    """Write one data file atomically through ``fill``; its entry for the manifest."""
    written: list[HashingWriter] = []

    def content(fh: IO[bytes]) -> None:
        out = HashingWriter(fh)
        fill(out)
        written.append(out)

    write_file(os.path.join(directory, name), content, "--checkpoint: cannot write")
    return FileEntry(name, written[0].sha256, written[0].size)


def verify_file(directory: str, entry: FileEntry, what: str = "--resume") -> str:
    """The path of a data file whose size and SHA-256 are those recorded (UsageError otherwise)."""
    path = os.path.join(directory, entry.name)
    where = f"{what} {directory}"
    if os.path.basename(entry.name) != entry.name or entry.name.startswith("."):
        raise UsageError(f"{where}: the manifest names {entry.name!r}, not a file of the checkpoint; allowed: an "
                         "intact checkpoint")
    try:
        size = os.stat(path).st_size
    except OSError:
        raise UsageError(f"{where}: data file {entry.name} is missing; allowed: an intact checkpoint") from None
    if size != entry.size:
        raise UsageError(f"{where}: data file {entry.name} is damaged or truncated ({size} bytes, the manifest "
                         f"says {entry.size}); allowed: an intact checkpoint")
    if _digest_file(path) != entry.sha256:
        raise UsageError(f"{where}: data file {entry.name} is damaged (its SHA-256 does not match); allowed: an "
                         "intact checkpoint")
    return path


def refuse_mismatch(recorded: Mapping[str, Any], current: Mapping[str, Any], what: str,
                    keys: Iterable[str] | None = None) -> None:
    """UsageError naming the first field (in ``keys`` or all) whose value differs."""
    for key in (keys if keys is not None else sorted(set(recorded) | set(current))):
        old, new = recorded.get(key), current.get(key)
        if old == new:
            continue
        if isinstance(old, Mapping) and isinstance(new, Mapping):
            refuse_mismatch(old, new, f"{what} {key}")
            continue
        raise UsageError(f"{what} {key} is {_shown(new)} here but {_shown(old)} in the checkpoint; allowed: "
                         f"{_shown(old)} (or start a new run)")


def _shown(value: Any) -> str:
    if value is None:
        return "absent"
    if isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value):
        return f"sha256 {value[:12]}"
    return json.dumps(value)
