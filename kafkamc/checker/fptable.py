"""The visited set: 64-bit fingerprints in an open-addressing table held in numpy (TLC's FPSet).

Each fingerprint gets a dense index, 0, 1, 2, ... in the order of first insertion, which is the
engines' state index (the position of its parent/successor-index record). The fingerprints
themselves live in a column in that order (8 bytes a state); the hash table holds only int32
indexes into it (4 bytes a slot), with linear probing and at most three quarters of the slots used
(``MAX_LOAD``), doubled and rebuilt from the column when that is passed. So a table costs 8 + 5.3
to 10.7 bytes per fingerprint, where a Python dict of ints costs about 100. (At most half used
cost 8 to 16 bytes a fingerprint and measured no faster: 20 million random keys inserted and
looked up in batches of a million took 10.6 s of CPU either way.)

Lookups and insertions take whole batches (numpy arrays of int64) and are vectorised: every key
of the batch advances one probe per round, so the Python work is per round, not per key. The
batch's own duplicates are resolved too: only a key's first occurrence in the batch counts as
new, so inserting the successors of a level in discovery order gives the same indexes as
inserting them one by one.

API (kept small; the multicore engine and checkpoints use it): ``insert(keys) -> new mask``,
``contains(keys)``, ``index(keys)``, ``fingerprint(i)``, ``len``, ``nbytes``, ``save(dir)`` /
``FingerprintTable.load(dir)``.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from kafkamc.checker.column import Column
from kafkamc.errors import EngineError

__all__ = ["FingerprintTable", "MAX_STATES", "save_array", "load_array"]

# Indexes are int32 in the slots (-1: empty), and a batch takes provisional indexes past the last.
MAX_STATES = 2**31 - 1
_EMPTY = -1
# The most of the slots the keys may fill (numerator, denominator) before they are doubled.
MAX_LOAD = (3, 4)
_MIN_BITS = 12
# Fibonacci hashing: the high bits of key * 2^64/phi spread any fingerprint over the table, even
# CPython hashes of small ints, which are the ints themselves.
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_FILE = "fingerprints.npy"
_NO_SLOTS = np.zeros(0, dtype=np.int32)
# Loading, rebuilding and large insertions take this many fingerprints at a time: the probing
# needs about 80 bytes of scratch a key (positions, provisional ids, gathered fingerprints), which
# for a level's candidates at 10^8 states (tens of millions a shard) was the largest transient of
# a run; a million keys a round costs no measurable speed.
_LOAD_BATCH = 1 << 20


class FingerprintTable:
    """A set of int64 fingerprints, each with its dense index in insertion order."""

    __slots__ = ("_fps", "_slots", "_bits", "_stale")

    def __init__(self, capacity: int = 0) -> None:
        """``capacity``: fingerprints to make room for up front (the table grows as needed)."""
        self._fps = Column(np.int64)
        self._bits = _MIN_BITS
        while (1 << self._bits) * MAX_LOAD[0] < MAX_LOAD[1] * capacity:
            self._bits += 1
        self._slots = np.full(1 << self._bits, _EMPTY, dtype=np.int32)
        # While the slots are being written they index the column only in part: an exception
        # then (the memory guard's stop is raised wherever the run is) leaves them stale, and they
        # are rebuilt from the column, whose first len() entries are always whole, before next use.
        self._stale = False

    def __len__(self) -> int:
        return len(self._fps)

    @property
    def nbytes(self) -> int:
        """Bytes held: the slots and the fingerprint column (its slack included)."""
        return self._slots.nbytes + self._fps.nbytes

    def fingerprint(self, i: int) -> int:
        """The fingerprint with index ``i``."""
        return self._fps[i]

    def fingerprints(self) -> np.ndarray:
        """Every fingerprint, in index order (a view, valid until the table next grows)."""
        return self._fps.values()

    def insert(self, keys: np.ndarray) -> np.ndarray:
        """Add ``keys`` (int64). Returns a bool mask of the keys that were new: absent before, and
        the first occurrence within ``keys``. The new keys get the indexes ``len(self)`` onwards
        in their order in ``keys``."""
        keys = np.ascontiguousarray(keys, dtype=np.int64)
        m = len(keys)
        if m > _LOAD_BATCH:
            # One part after the other: a key of a later part that an earlier part inserted is
            # found in the table, so first occurrences and indexes are those of one batch.
            return np.concatenate([self._insert(keys[at:at + _LOAD_BATCH]) for at in range(0, m, _LOAD_BATCH)])
        return self._insert(keys)

    def _insert(self, keys: np.ndarray) -> np.ndarray:
        m = len(keys)
        new = np.zeros(m, dtype=bool)
        if m == 0:
            return new
        n = len(self._fps)
        if n + m > MAX_STATES:
            raise EngineError(f"the fingerprint table holds at most {MAX_STATES:,} distinct states; this run needs "
                              "more (bound it with --max-states)")
        self._room(n + m)
        self._stale = True
        # Scratch past the last index: batch position j is provisionally index n + j, so that a
        # later duplicate in the same batch finds it like any stored fingerprint.
        fps = self._fps.reserve(n + m)
        fps[n:n + m] = keys
        ids = np.arange(n, n + m, dtype=np.int64)
        found, claimed = self._probe(keys, ids, fps, claim=True)
        won = found == ids
        winners = np.flatnonzero(won)
        dup = (found >= n) & ~won
        if dup.any():
            # A duplicate may have won the race for the slot: the group's first occurrence is
            # the new one.
            first = np.arange(m, dtype=np.int64)
            np.minimum.at(first, found[dup] - n, np.flatnonzero(dup))
            firsts = first[winners]
            order = np.argsort(firsts, kind="stable")
            rank = np.empty(len(winners), dtype=np.int64)
            rank[order] = np.arange(len(winners))
            self._slots[claimed[winners]] = n + rank
            firsts = firsts[order]
        else:
            self._slots[claimed[winners]] = n + np.arange(len(winners))
            firsts = winners
        new[firsts] = True
        fps[n:n + len(firsts)] = keys[firsts]
        self._fps.set_length(n + len(firsts))
        self._stale = False
        return new

    def index(self, keys: np.ndarray) -> np.ndarray:
        """Each key's index (int64), -1 for a key not in the table."""
        keys = np.ascontiguousarray(keys, dtype=np.int64)
        if len(keys) == 0:
            return np.zeros(0, dtype=np.int64)
        if self._stale:
            self._rebuild(self._bits)
        found, _ = self._probe(keys, None, self._fps.reserve(0), claim=False)
        return found

    def contains(self, keys: np.ndarray) -> np.ndarray:
        """A bool mask: which keys are in the table."""
        return self.index(keys) >= 0

    def _home(self, keys: np.ndarray) -> np.ndarray:
        return (keys.view(np.uint64) * _GOLDEN >> np.uint64(64 - self._bits)).view(np.int64)

    def _probe(self, keys: np.ndarray, ids: np.ndarray | None, fps: np.ndarray,
               claim: bool) -> tuple[np.ndarray, np.ndarray]:
        """Linear probing for every key at once. Returns the index each key resolved to (its own
        provisional id if it claimed an empty slot; -1 if absent and not claiming) and, for the
        keys that claimed one, the slot."""
        slots = self._slots
        mask = len(slots) - 1
        m = len(keys)
        found = np.full(m, -1, dtype=np.int64)
        claimed = np.empty(m if claim else 0, dtype=np.int64)
        todo = np.arange(m, dtype=np.int64)  # batch positions still probing, their slots, their keys
        pos = self._home(keys)
        k = keys
        while len(todo):
            s = slots[pos]
            empty = s == _EMPTY
            # For an empty slot fps[-1] is read, harmlessly: `empty` masks it.
            hit = fps[s] == k
            hit &= ~empty
            h = np.flatnonzero(hit)
            if len(h):
                found[todo[h]] = s[h]
            # A slot holding another key: probe on.
            c = np.flatnonzero(~(hit | empty))
            next_todo, next_pos, next_k = todo[c], (pos[c] + 1) & mask, k[c]
            if claim:
                e = np.flatnonzero(empty)
                if len(e):
                    # Several keys may race for one empty slot: one write wins, the others look
                    # at the slot again next round (the winner may be their own duplicate).
                    te, pe = todo[e], pos[e]
                    ie = ids[te]
                    slots[pe] = ie
                    got = slots[pe] == ie
                    g = np.flatnonzero(got)
                    found[te[g]] = ie[g]
                    claimed[te[g]] = pe[g]
                    if len(g) < len(e):
                        lost = np.flatnonzero(~got)
                        next_todo = np.concatenate((next_todo, te[lost]))
                        next_pos = np.concatenate((next_pos, pe[lost]))
                        next_k = np.concatenate((next_k, k[e[lost]]))
            todo, pos, k = next_todo, next_pos, next_k
        return found, claimed

    def _room(self, total: int) -> None:
        """Double the slots (rebuilt from the column) until ``total`` keys fill at most
        ``MAX_LOAD`` of them; rebuild stale ones."""
        bits = self._bits
        num, den = MAX_LOAD
        while (1 << bits) * num < den * total:
            bits += 1
        if bits != self._bits or self._stale:
            self._rebuild(bits)

    def _rebuild(self, bits: int) -> None:
        n = len(self._fps)
        self._stale = True
        self._bits = bits
        self._slots = _NO_SLOTS  # the old ones freed before the larger ones are allocated
        self._slots = np.full(1 << bits, _EMPTY, dtype=np.int32)
        fps = self._fps.reserve(0)
        # In batches: probing all n at once would need about 40 bytes of scratch per state, at
        # the moment the table is largest (gigabytes at 10^8 states).
        for start in range(0, n, _LOAD_BATCH):
            end = min(n, start + _LOAD_BATCH)
            ids = np.arange(start, end, dtype=np.int64)
            found, _ = self._probe(fps[start:end].copy(), ids, fps, claim=True)
            if not np.array_equal(found, ids):  # every stored fingerprint is distinct
                raise AssertionError("fingerprint table: a stored fingerprint is duplicated")
        self._stale = False

    def save(self, directory: str | os.PathLike[str]) -> Path:
        """Write the fingerprints, in index order, to ``directory/fingerprints.npy`` (the slots
        are rebuilt on load). Returns the file's path."""
        return save_array(Path(directory) / _FILE, self._fps.values())

    @classmethod
    def load(cls, directory: str | os.PathLike[str]) -> "FingerprintTable":
        """The table ``save`` wrote. A missing or damaged file (not a 1-D int64 array, or a
        fingerprint twice) is ValueError saying so."""
        path = Path(directory) / _FILE
        try:
            return cls.of(load_array(path, np.int64))
        except ValueError as exc:
            raise ValueError(f"{path}: damaged: {exc}") from None

    @classmethod
    def of(cls, fps: np.ndarray) -> "FingerprintTable":
        """A table of ``fps`` (int64) with their indexes in that order; ValueError if a
        fingerprint appears twice."""
        table = cls(capacity=len(fps))
        for start in range(0, len(fps), _LOAD_BATCH):
            part = fps[start:start + _LOAD_BATCH]
            if not table.insert(part).all():
                raise ValueError("a fingerprint appears twice")
        return table


def save_array(path: Path, values: np.ndarray) -> Path:
    """``np.save`` to a temporary file beside ``path``, then one rename: never half a file."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        np.save(f, values, allow_pickle=False)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    return path


def load_array(path: Path, dtype: type) -> np.ndarray:
    """A 1-D array of ``dtype`` that ``save_array`` wrote, or ValueError naming what is wrong."""
    try:
        values = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise ValueError(f"{path}: missing") from None
    except (OSError, ValueError, EOFError) as exc:
        raise ValueError(f"{path}: damaged: {exc}") from None
    if values.ndim != 1 or values.dtype != np.dtype(dtype):
        raise ValueError(f"{path}: damaged: expected a 1-D {np.dtype(dtype)} array, found {values.ndim}-D {values.dtype}")
    return values
