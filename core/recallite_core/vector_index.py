"""The in-memory projection of the vectors table: a float32 matrix plus filter columns.

It refreshes incrementally from the store's change counter: rows whose vector or filter
columns changed since the last refresh are upserted, tombstoned ids are dropped. A write by
another process bumps the same counter, so it is seen on the next query.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np

from .codec import decode_many
from .models import MEMORY_TYPES, STATUSES

STATUS_CODE = {s: i for i, s in enumerate(STATUSES)}
TYPE_CODE = {t: i for i, t in enumerate(MEMORY_TYPES)}

_SELECT = "SELECT m.id, m.scope, m.status, m.type, m.session, v.vector FROM vectors v JOIN memories m ON m.id = v.memory_id"


@dataclass(frozen=True)
class ScanFilter:
    """Filters applied inside the scan, before the top-k."""

    scopes: tuple[str, ...] | None = None
    statuses: tuple[str, ...] | None = None
    types: tuple[str, ...] | None = None
    sessions: tuple[str, ...] | None = None
    allowed_ids: np.ndarray | None = None  # e.g. the ids that carry a tag; None = all


class VectorIndex:
    """Exact cosine scan over a cached matrix. Not thread-safe: the caller serialises."""

    def __init__(self, dimensions: int, shard: tuple[int, int] | None = None):
        self.dimensions = dimensions
        # Optional (index, count): keep only ids with id % count == index (worker shards).
        self.shard = shard
        self.seq = -1
        self._cap = 0
        self.n = 0
        self.matrix = np.empty((0, dimensions), dtype=np.float32)
        self.ids = np.empty(0, dtype=np.int64)
        self.scope = np.empty(0, dtype=np.int32)
        self.status = np.empty(0, dtype=np.int8)
        self.type = np.empty(0, dtype=np.int8)
        self.session = np.empty(0, dtype=np.int32)
        self.alive = np.empty(0, dtype=bool)
        self.row_of: dict[int, int] = {}
        self.dead = 0
        self._scope_codes: dict[str, int] = {}
        self._session_codes: dict[str | None, int] = {None: 0}

    # -- maintenance ----------------------------------------------------------------------
    def __len__(self) -> int:
        return self.n - self.dead

    def _grow(self, need: int) -> None:
        if need <= self._cap:
            return
        cap = max(need, 1024, self._cap * 2)

        def grow(a: np.ndarray, fill=0) -> np.ndarray:
            shape = (cap,) + a.shape[1:]
            out = np.full(shape, fill, dtype=a.dtype) if fill else np.zeros(shape, dtype=a.dtype)
            out[: self.n] = a[: self.n]
            return out

        self.matrix = grow(self.matrix)
        self.ids = grow(self.ids)
        self.scope = grow(self.scope)
        self.status = grow(self.status)
        self.type = grow(self.type)
        self.session = grow(self.session)
        self.alive = grow(self.alive)
        self._cap = cap

    def _code(self, table: dict, key) -> int:
        code = table.get(key)
        if code is None:
            code = max(table.values(), default=-1) + 1
            table[key] = code
        return code

    def _keep(self, mid: int) -> bool:
        return self.shard is None or mid % self.shard[1] == self.shard[0]

    def _remove(self, mid: int) -> None:
        row = self.row_of.pop(mid, None)
        if row is not None and self.alive[row]:
            self.alive[row] = False
            self.dead += 1

    def _upsert(self, rows: Sequence[tuple]) -> None:
        rows = [r for r in rows if self._keep(r[0])]
        if not rows:
            return
        vecs = decode_many([r[5] for r in rows], self.dimensions)
        new = [i for i, r in enumerate(rows) if r[0] not in self.row_of]
        self._grow(self.n + len(new))
        for i, (mid, scope, status, mtype, session, _blob) in enumerate(rows):
            row = self.row_of.get(mid)
            if row is None:
                row = self.n
                self.n += 1
                self.row_of[mid] = row
                self.ids[row] = mid
                self.alive[row] = True
            self.matrix[row] = vecs[i]
            self.scope[row] = self._code(self._scope_codes, scope)
            self.status[row] = STATUS_CODE[status]
            self.type[row] = TYPE_CODE[mtype]
            self.session[row] = self._code(self._session_codes, session)

    def _compact(self) -> None:
        keep = np.flatnonzero(self.alive[: self.n])
        n = len(keep)
        for name in ("matrix", "ids", "scope", "status", "type", "session", "alive"):
            arr = getattr(self, name)
            arr[:n] = arr[keep]
        self.alive[n:] = False
        self.n = n
        self.dead = 0
        self.row_of = {int(mid): i for i, mid in enumerate(self.ids[:n])}

    def reset(self) -> None:
        self.__init__(self.dimensions, self.shard)

    def refresh(self, conn: sqlite3.Connection, counter: int | None = None) -> bool:
        """Bring the matrix up to date with the database. Returns True if anything changed.

        ``conn`` must be inside a read transaction (or autocommit with no concurrent writer)
        so that the counter and the rows come from one snapshot.
        """
        if counter is None:
            counter = conn.execute("SELECT value FROM counters WHERE name = 'changes'").fetchone()[0]
        if counter == self.seq:
            return False
        floor = conn.execute("SELECT value FROM counters WHERE name = 'tombstone_floor'").fetchone()[0]
        if self.seq < 0 or self.seq < floor or counter < self.seq:
            self.reset()
            rows = conn.execute(_SELECT).fetchall()
            self._upsert(rows)
        else:
            for (mid,) in conn.execute("SELECT memory_id FROM tombstones WHERE seq > ?", (self.seq,)):
                self._remove(mid)
            rows = conn.execute(
                f"{_SELECT} WHERE v.seq > ? UNION ALL {_SELECT} WHERE m.seq > ? AND v.seq <= ?",
                (self.seq, self.seq, self.seq),
            ).fetchall()
            self._upsert(rows)
            if self.dead > 1000 and self.dead * 4 > self.n:
                self._compact()
        self.seq = counter
        return True

    # -- search -----------------------------------------------------------------------------
    def mask(self, flt: ScanFilter | None) -> np.ndarray:
        n = self.n
        mask = self.alive[:n].copy()
        if flt is None:
            return mask
        if flt.scopes is not None:
            codes = [self._scope_codes[s] for s in flt.scopes if s in self._scope_codes]
            mask &= np.isin(self.scope[:n], codes)
        if flt.statuses is not None:
            mask &= np.isin(self.status[:n], [STATUS_CODE[s] for s in flt.statuses])
        if flt.types is not None:
            mask &= np.isin(self.type[:n], [TYPE_CODE[t] for t in flt.types])
        if flt.sessions is not None:
            codes = [self._session_codes[s] for s in flt.sessions if s in self._session_codes]
            mask &= np.isin(self.session[:n], codes)
        if flt.allowed_ids is not None:
            mask &= np.isin(self.ids[:n], flt.allowed_ids)
        return mask

    def search(self, query: np.ndarray, k: int, flt: ScanFilter | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Top-k memory ids and cosine similarities among rows passing the filter."""
        ids, sims, _ = self.search_with_stats(query, k, flt)
        return ids, sims

    def search_with_stats(
        self, query: np.ndarray, k: int, flt: ScanFilter | None = None
    ) -> tuple[np.ndarray, np.ndarray, tuple[int, float, float]]:
        """Like search(), plus (count, sum, sum of squares) of the similarity over every row
        that passed the filter: what score normalisation needs, mergeable across shards."""
        empty = (np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32), (0, 0.0, 0.0))
        n = self.n
        if n == 0 or k <= 0:
            return empty
        q = np.asarray(query, dtype=np.float32)
        unfiltered = flt is None or (
            flt.scopes is None and flt.statuses is None and flt.types is None and flt.sessions is None and flt.allowed_ids is None
        )
        if unfiltered and self.dead == 0:
            scores = self.matrix[:n] @ q
            ids, sims = self._top(scores, self.ids[:n], k)
            return ids, sims, _stats(scores)
        mask = self.mask(flt)
        selected = int(mask.sum())
        if selected == 0:
            return empty
        if selected * 3 < n:  # a narrow filter: gather the rows, scan only them
            rows = np.flatnonzero(mask)
            scores = self.matrix[rows] @ q
            ids, sims = self._top(scores, self.ids[rows], k)
            return ids, sims, _stats(scores)
        scores = self.matrix[:n] @ q
        stats = _stats(scores[mask])
        scores[~mask] = -np.inf
        ids, sims = self._top(scores, self.ids[:n], min(k, selected))
        return ids, sims, stats

    @staticmethod
    def _top(scores: np.ndarray, ids: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        k = min(k, scores.shape[0])
        if k <= 0:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
        if k < scores.shape[0]:
            part = np.argpartition(-scores, k - 1)[:k]
        else:
            part = np.arange(scores.shape[0])
        # Ties broken by id so that every engine (inline, workers) returns the same order.
        order = part[np.lexsort((ids[part], -scores[part]))]
        return ids[order].astype(np.int64), scores[order].astype(np.float32)

    def vector_of(self, mid: int) -> np.ndarray | None:
        row = self.row_of.get(mid)
        return None if row is None else self.matrix[row]


def _stats(scores: np.ndarray) -> tuple[int, float, float]:
    s64 = scores.astype(np.float64, copy=False)
    return int(s64.shape[0]), float(s64.sum()), float(np.dot(s64, s64))


def merge_stats(parts: Iterable[tuple[int, float, float]]) -> tuple[int, float, float]:
    n, s, q = 0, 0.0, 0.0
    for pn, ps, pq in parts:
        n, s, q = n + pn, s + ps, q + pq
    return n, s, q


def merge_top(parts: Iterable[tuple[np.ndarray, np.ndarray]], k: int) -> tuple[np.ndarray, np.ndarray]:
    """Merge several top-k lists (e.g. from shards) into one, same tie order as a single scan."""
    ids = [p[0] for p in parts]
    sims = [p[1] for p in parts]
    if not ids:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
    all_ids = np.concatenate(ids)
    all_sims = np.concatenate(sims)
    order = np.lexsort((all_ids, -all_sims))[:k]
    return all_ids[order], all_sims[order]
