"""How each distinct state was first reached: its parent's index and the successor index from it.

Six bytes a state (an int32 parent, -1 for an initial state, and a uint16 successor index, or the
initial state's position for one), in numpy columns indexed like the fingerprint table. A
counterexample is the chain of parents of its last state, replayed by successor index.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from kafkamc.checker.column import Column
from kafkamc.checker.fptable import load_array, save_array

__all__ = ["Lineage", "MAX_SUCCESSORS"]

# Successor indexes are uint16: a state may have at most this many successors.
MAX_SUCCESSORS = 65535
_PARENT, _SIDX = "parent.npy", "successor-index.npy"


class Lineage:
    """Per state, in index order: parent index and successor index."""

    __slots__ = ("_parent", "_sidx")

    def __init__(self) -> None:
        self._parent = Column(np.int32)
        self._sidx = Column(np.uint16)

    def __len__(self) -> int:
        return len(self._parent)

    @property
    def nbytes(self) -> int:
        return self._parent.nbytes + self._sidx.nbytes

    def append(self, parent: int, sidx: int) -> None:
        self._parent.append(parent)
        self._sidx.append(sidx)

    def extend(self, parents: np.ndarray, sidx: np.ndarray) -> None:
        """Records for the next ``len(parents)`` states."""
        self._parent.extend(parents)
        self._sidx.extend(sidx)

    def set_length(self, n: int) -> None:
        """Forget the records of states ``n`` onwards."""
        self._parent.set_length(n)
        self._sidx.set_length(n)

    def columns(self) -> tuple[np.ndarray, np.ndarray]:
        """The parent and successor-index columns, in index order (views, valid until the next
        append or extend)."""
        return self._parent.values(), self._sidx.values()

    def parent(self, i: int) -> int:
        return self._parent[i]

    def successor_index(self, i: int) -> int:
        return self._sidx[i]

    def chain(self, i: int) -> list[int]:
        """The indexes of the states from an initial state to state ``i``, in order."""
        out = []
        parent = self._parent.values()
        while i >= 0:
            out.append(i)
            i = int(parent[i])
        out.reverse()
        return out

    def path(self, i: int) -> list[int]:
        """The successor-index path that replays to state ``i`` (its first entry picks the
        initial state)."""
        sidx = self._sidx.values()
        return [int(sidx[j]) for j in self.chain(i)]

    def save(self, directory: str | os.PathLike[str]) -> None:
        save_array(Path(directory) / _PARENT, self._parent.values())
        save_array(Path(directory) / _SIDX, self._sidx.values())

    @classmethod
    def load(cls, directory: str | os.PathLike[str]) -> "Lineage":
        """What ``save`` wrote; ValueError naming a missing or damaged file."""
        parent = load_array(Path(directory) / _PARENT, np.int32)
        sidx = load_array(Path(directory) / _SIDX, np.uint16)
        try:
            return cls.of(parent, sidx)
        except ValueError as exc:
            raise ValueError(f"{directory}: damaged: {exc}") from None

    @classmethod
    def of(cls, parent: np.ndarray, sidx: np.ndarray) -> "Lineage":
        """The records ``parent`` and ``sidx``, in index order; ValueError if they cannot be a
        lineage (different lengths, a parent that is not an earlier state)."""
        if len(parent) != len(sidx):
            raise ValueError(f"{len(parent)} parents but {len(sidx)} successor indexes")
        if len(parent) and (parent.min() < -1 or (parent >= np.arange(len(parent))).any()):
            raise ValueError("a parent index is not an earlier state")
        out = cls()
        out.extend(parent, sidx)
        return out
