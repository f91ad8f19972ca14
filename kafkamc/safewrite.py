"""Writing output files safely, and checking before a long run that they can be written.

Every file kafkamc writes (JSON and ITF traces, the HTML viewer, graphs, JUnit XML) goes through
``write_file``: the content goes to a fresh temporary file beside the target, which then replaces
the target in one rename, so a reader never sees half a file and no ``PATH.tmp`` is left behind on
any failure. Only a regular file is ever replaced: a symbolic link, a device (``/dev/full``), a
FIFO or a directory at the target is refused, never turned into a regular file. The commands call
``check_output_file`` / ``check_output_dir`` before exploring, so that an unwritable path costs
one line and exit 2 instead of the verdict of a long run.

Every failure is a UsageError (exit 2) naming the path and the reason.
"""

from __future__ import annotations

import os
import stat
import tempfile
from typing import IO, Callable

from kafkamc.errors import UsageError

__all__ = ["write_file", "check_output_file", "check_output_dir"]

Content = str | bytes | Callable[[IO[bytes]], None]


def _read_umask() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return umask


# Where the kernel does not show it, the umask as it was when kafkamc was imported.
_UMASK_AT_IMPORT = _read_umask()


def _umask() -> int:
    """The process's umask, read without setting it where Linux shows it: setting it to 0 and
    back leaves it 0 if a stop lands between the two calls (every later file world-writable)."""
    try:
        with open("/proc/self/status", "rb") as fh:
            for line in fh:
                if line.startswith(b"Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return _UMASK_AT_IMPORT


def _kind(mode: int) -> str | None:
    """What a non-regular file is, for the error; None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    for test, name in ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISDIR, "a directory"),
                       (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def _refuse_special(path: str, what: str) -> None:
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        raise UsageError(f"{what} {path}: cannot write it: {exc.strerror or exc}") from None
    kind = _kind(mode)
    if kind is not None:
        raise UsageError(f"{what} {path}: is {kind}; kafkamc writes only regular files (allowed: a new or "
                         "regular file)")


def _probe_directory(directory: str, what: str, path: str) -> None:
    """Whether a file can be created in ``directory`` (or, if it does not exist yet, in the
    nearest existing ancestor where it would be created): by creating one, which answers for
    root, read-only file systems and ACLs alike."""
    probe = os.path.abspath(directory or ".")
    while not os.path.lexists(probe):
        parent = os.path.dirname(probe)
        if parent == probe:
            break
        probe = parent
    if not os.path.isdir(probe):
        raise UsageError(f"{what} {path}: {probe} is not a directory")
    try:
        fd, name = tempfile.mkstemp(dir=probe, prefix=".kafkamc-probe-", suffix=".tmp")
    except OSError as exc:
        raise UsageError(f"{what} {path}: cannot write in {probe}: {exc.strerror or exc}") from None
    os.close(fd)
    os.unlink(name)


def check_output_file(path: str, what: str) -> None:
    """Refuse, before any work, an output file that ``write_file`` could not write."""
    if not path:
        raise UsageError(f"{what}: an empty path; allowed: a file name")
    if path.endswith(os.sep):
        raise UsageError(f"{what} {path}: names a directory; allowed: a file name")
    _refuse_special(path, what)
    _probe_directory(os.path.dirname(path), what, path)


def check_output_dir(path: str, what: str) -> None:
    """Refuse, before any work, an output directory that cannot be created or written."""
    if not path:
        raise UsageError(f"{what}: an empty path; allowed: a directory")
    if os.path.lexists(path) and not os.path.isdir(path):
        raise UsageError(f"{what} {path}: exists and is not a directory")
    _probe_directory(path, what, path)


def write_file(path: str, content: Content, what: str = "cannot write") -> str:
    """Write ``content`` (text as UTF-8, bytes, or a function given a binary file) to ``path``
    atomically; returns ``path``. UsageError, and nothing left behind, on any failure."""
    directory = os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"{what} {path}: cannot create {directory}: {exc.strerror or exc}") from None
    _refuse_special(path, what)
    try:
        fd, tmp = tempfile.mkstemp(dir=directory, prefix="." + os.path.basename(path) + ".", suffix=".tmp")
    except OSError as exc:
        raise UsageError(f"{what} {path}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            if isinstance(content, str):
                # A spec's label may hold a lone surrogate; it is shown escaped, never a crash.
                fh.write(content.encode("utf-8", "backslashreplace"))
            elif isinstance(content, bytes):
                fh.write(content)
            else:
                content(fh)
        # mkstemp makes the file private; an output file gets the permissions of any new file.
        os.chmod(tmp, 0o666 & ~_umask())
        _refuse_special(path, what)  # again: it may have appeared while the content was written
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise UsageError(f"{what} {path}: {exc.strerror or exc}") from None
        raise
    return path
