"""A value per memory id kept in a numpy array, so that many ids are looked up at once.

Memory ids are SQLite rowids handed out from 1 upwards, so an array indexed by id stays about
as long as the store. An id too large for that (a hand-made row) turns the array off: callers
then answer from their dict or from SQL, the way they did before the array existed.
"""

from __future__ import annotations

import numpy as np

#: Ids at or above this are not indexed densely (the array would be 8 bytes per possible id).
MAX_DENSE_ID = 1 << 27


class IdArray:
    """id -> integer (-1: none). ``usable`` turns False for good once an id is too large."""

    def __init__(self, dtype=np.int64):
        self.values = np.full(0, -1, dtype=dtype)
        self.usable = True

    def set(self, ids, values) -> None:
        """values[ids] = values (ids: an int or an array of ints)."""
        if not self.usable:
            return
        top = int(np.max(ids)) if np.ndim(ids) else int(ids)
        if top >= len(self.values):
            if top >= MAX_DENSE_ID:
                self.usable = False
                self.values = self.values[:0]
                return
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
