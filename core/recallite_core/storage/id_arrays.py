"""A value per memory id kept in a numpy array, so that many ids are looked up at once.

Memory ids are SQLite rowids handed out from 1 upwards, so an array indexed by id stays about
as long as the store. An id that does not fit that (negative, or far past the ids set so far:
a hand-made row) turns the array off for good: callers then answer from their dict or from
SQL, the way they did before the array existed.
"""

from __future__ import annotations

import numpy as np

#: Ids at or above this are not indexed densely (the array would be 8 bytes per possible id).
MAX_DENSE_ID = 1 << 27
#: Nor is an id more than this many times the number of ids set so far (plus 2^20): sparse ids
#: would cost an array mostly of holes.
MAX_SPARSENESS = 8


class IdArray:
    """id -> integer (-1: none). ``usable`` turns False for good once an id does not fit."""

    def __init__(self, dtype=np.int64):
        self.values = np.full(0, -1, dtype=dtype)
        self.usable = True
        self._set = 0  # ids set so far (an upper bound: a set twice counts twice)

    def set(self, ids, values) -> None:
        """values[ids] = values (ids: an int or an array of ints)."""
        if not self.usable:
            return
        many = np.ndim(ids) > 0
        if many and not len(ids):
            return
        top = int(np.max(ids)) if many else int(ids)
        low = int(np.min(ids)) if many else top
        self._set += len(ids) if many else 1
        if low < 0 or (top >= len(self.values)
                       and (top >= MAX_DENSE_ID or top > MAX_SPARSENESS * self._set + (1 << 20))):
            self.usable = False
            self.values = self.values[:0]
            return
        if top >= len(self.values):
            grown = np.full(max(1024, top + 1, 2 * len(self.values)), -1, dtype=self.values.dtype)
            grown[: len(self.values)] = self.values
            self.values = grown
        self.values[ids] = values

    def forget(self, mid: int) -> None:
        if self.usable and 0 <= mid < len(self.values):
            self.values[mid] = -1

    def clear(self) -> None:
        self.values[:] = -1

    def get(self, ids: np.ndarray) -> np.ndarray:
        """The value of each id (-1: none, also for ids never set)."""
        dense = self.values
        if not len(dense):
            return np.full(len(ids), -1, dtype=dense.dtype)
        out = dense.take(ids, mode="clip")
        if len(ids) and (ids.min() < 0 or ids.max() >= len(dense)):  # rare: ids past the array
            out[(ids < 0) | (ids >= len(dense))] = -1
        return out
