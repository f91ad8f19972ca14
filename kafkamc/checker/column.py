"""A numpy column that grows in place: the engines' per-state records (one entry per distinct state).

A Python ``array`` or list of ints would do the same job at 8 to 36 bytes an entry; a column keeps
exactly its dtype's width, and grows by an eighth with ``ndarray.resize``, which reallocates in
place (``mremap`` for large blocks) rather than copying into a new array twice the size. So the
slack is at most an eighth, never the half that doubling leaves.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["Column"]

_FIRST = 1024


class Column:
    """Append-only 1-D array of ``dtype``. ``values()`` is a view that is valid until the column
    next grows (never keep it across an ``extend``)."""

    __slots__ = ("_a", "_n")

    def __init__(self, dtype: Any, values: np.ndarray | None = None) -> None:
        self._n = 0
        self._a = np.empty(_FIRST, dtype=dtype)
        if values is not None:
            self.extend(values)

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, i: int) -> int:
        if not 0 <= i < self._n:
            raise IndexError(i)
        return int(self._a[i])

    @property
    def dtype(self) -> np.dtype:
        return self._a.dtype

    @property
    def nbytes(self) -> int:
        """Bytes allocated, slack included."""
        return self._a.nbytes

    def reserve(self, total: int) -> np.ndarray:
        """Make room for ``total`` entries; returns the whole buffer (entries past ``len`` are free
        for the caller to use as scratch until the next call)."""
        a = self._a
        if total > len(a):
            a.resize(max(total, len(a) + (len(a) >> 3)), refcheck=False)
        return a

    def extend(self, values: Any) -> None:
        values = np.asarray(values)
        n, m = self._n, len(values)
        self.reserve(n + m)[n:n + m] = values
        self._n = n + m

    def append(self, value: int) -> None:
        self.reserve(self._n + 1)[self._n] = value
        self._n += 1

    def set_length(self, n: int) -> None:
        """The first ``n`` entries of the buffer are the column (written through ``reserve``'s
        buffer, or to forget entries past ``n``)."""
        if not 0 <= n <= len(self._a):
            raise ValueError(f"length {n} outside the column's buffer of {len(self._a)}")
        self._n = n

    def values(self) -> np.ndarray:
        return self._a[:self._n]
