"""The in-memory projection of the vectors table: a float32 matrix plus filter columns.

It refreshes incrementally from the store's change counter: rows whose vector or filter
columns changed since the last refresh are upserted, tombstoned ids are dropped. A write by
another process bumps the same counter, so it is seen on the next query.

Exactness: the fast scan (float32, SIMD or BLAS) only *selects* candidates; every candidate
within the float32 error bound of the k-th score is then re-scored in float64 with numpy's
pairwise sum, which gives the same bits for a row whatever matrix, shard or process it sits
in. Ranking is by (-exact score, id), so the inline index, any sharding of it across worker
processes (merged with :func:`merge_top`) and a narrow filtered scan all return the same
ids in the same order with the same scores.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np

from recallite_core.models import MEMORY_TYPES, STATUSES
from recallite_core.storage.base import Session, Shard
from recallite_core.storage.codec import decode_many
from recallite_core.storage.id_arrays import IdArray

STATUS_CODE = {s: i for i, s in enumerate(STATUSES)}
TYPE_CODE = {t: i for i, t in enumerate(MEMORY_TYPES)}

# np.vecdot (numpy >= 2) is a plain SIMD loop: on small VMs it beats a multi-threaded BLAS
# gemv whose thread hand-offs cost scheduler ticks; einsum is the numpy 1.x equivalent.
_vecdot = getattr(np, "vecdot", None)


def dot_rows(matrix: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Approximate float32 dot product of every row with ``query`` (candidate selection only)."""
    if _vecdot is not None:
        return _vecdot(matrix, query)
    return np.einsum("ij,j->i", matrix, query)


def exact_scores(rows: np.ndarray, query64: np.ndarray) -> np.ndarray:
    """float64 dot products, bit-identical for a row wherever it is computed (pairwise sum)."""
    return (rows.astype(np.float64) * query64).sum(axis=1)


_EMPTY = (np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float64))

#: Rows near_rows() keeps by sign agreement before any float is read; below 4x this many rows the
#: caller's plain scan is as cheap.
NEAR_SHORTLIST = 512

_bitwise_count = getattr(np, "bitwise_count", None)  # numpy >= 2
_BYTE_BITS = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)


def sign_codes(vectors: np.ndarray) -> np.ndarray:
    """One bit per dimension (set where the value is positive), packed column-major as
    (words, rows) uint64: a word of every row is one contiguous array to XOR."""
    bits = np.packbits(vectors > 0, axis=1, bitorder="little")
    pad = (-bits.shape[1]) % 8
    if pad:
        bits = np.pad(bits, ((0, 0), (0, pad)))
    return np.ascontiguousarray(bits.view(np.uint64).T)


def _popcount(words: np.ndarray) -> np.ndarray:
    if _bitwise_count is not None:
        return _bitwise_count(words)
    return _BYTE_BITS[words.view(np.uint8)].reshape(words.shape + (8,)).sum(axis=-1, dtype=np.uint8)


@dataclass(frozen=True)
class ScanFilter:
    """Filters applied inside the scan, before the top-k."""

    scopes: tuple[str, ...] | None = None
    statuses: tuple[str, ...] | None = None
    types: tuple[str, ...] | None = None
    sessions: tuple[str | None, ...] | None = None  # None: a session name that was blank (check_optional_name)
    allowed_ids: np.ndarray | None = None  # e.g. the ids that carry a tag; None = all

    def key(self) -> tuple | None:
        """A hashable key of the column filters (None when allowed_ids makes it one-off)."""
        if self.allowed_ids is not None:
            return None
        return (self.scopes, self.statuses, self.types, self.sessions)

    @property
    def unfiltered(self) -> bool:
        return (
            self.scopes is None and self.statuses is None and self.types is None
            and self.sessions is None and self.allowed_ids is None
        )


class VectorIndex:
    """Exact cosine scan over a cached matrix. Not thread-safe: the caller serialises."""

    MASK_CACHE = 16  # prepared filter masks kept between refreshes

    def __init__(self, dimensions: int, shard: tuple[int, int] | None = None):
        self.dimensions = dimensions
        # Optional (index, count): keep only ids with id % count == index (worker shards).
        # Modulo keeps shards balanced as ids grow; merge_top makes the union exact.
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
        self._rows = IdArray()  # row_of as an array, for lookups of many ids at once
        self.dead = 0
        self.max_norm = 0.0  # largest row norm seen: bounds the float32 scan error
        self._scope_codes: dict[str, int] = {}
        self._session_codes: dict[str | None, int] = {None: 0}
        self._masks: dict[tuple, tuple[np.ndarray, int, np.ndarray | None]] = {}  # key -> (mask, n, rows)
        self._codes: np.ndarray | None = None  # sign_codes of the matrix, (words, cap); built by near_rows

    # -- maintenance ----------------------------------------------------------------------
    def __len__(self) -> int:
        return self.n - self.dead

    def holds(self, status: str) -> bool:
        """Whether a live row has this status (no store read: recall asks it to skip a second look)."""
        n = self.n
        return bool(np.any((self.status[:n] == STATUS_CODE[status]) & self.alive[:n]))

    @property
    def nbytes(self) -> int:
        return int(self.matrix.nbytes + self.ids.nbytes + self.scope.nbytes + self.status.nbytes
                   + self.type.nbytes + self.session.nbytes + self.alive.nbytes)

    def _grow(self, need: int) -> None:
        if need <= self._cap:
            return
        cap = max(need, 1024, self._cap + self._cap // 2)

        def grow(a: np.ndarray) -> np.ndarray:
            out = np.zeros((cap,) + a.shape[1:], dtype=a.dtype)
            out[: self.n] = a[: self.n]
            return out

        for name in ("matrix", "ids", "scope", "status", "type", "session", "alive"):
            setattr(self, name, grow(getattr(self, name)))
        if self._codes is not None:
            codes = np.zeros((self._codes.shape[0], cap), dtype=np.uint64)
            codes[:, : self.n] = self._codes[:, : self.n]
            self._codes = codes
        self._cap = cap

    def _code(self, table: dict, key) -> int:
        code = table.get(key)
        if code is None:  # codes are consecutive from 0
            code = table[key] = len(table)
        return code

    def _keep(self, mid: int) -> bool:
        return self.shard is None or mid % self.shard[1] == self.shard[0]

    def rows_of(self, mids: np.ndarray) -> np.ndarray:
        """The matrix row of each id (-1: no vector here)."""
        if self._rows.usable:
            return self._rows.get(mids)
        get = self.row_of.get
        return np.fromiter((get(m, -1) for m in mids.tolist()), dtype=np.int64, count=len(mids))

    def _remove(self, mid: int) -> None:
        row = self.row_of.pop(mid, None)
        if row is not None:
            self._rows.forget(mid)
        if row is not None and self.alive[row]:
            self.alive[row] = False
            self.dead += 1

    def _upsert(self, rows: Sequence[tuple]) -> None:
        if self.shard is not None:
            rows = [r for r in rows if self._keep(r[0])]
        if not rows:
            return
        vecs = decode_many([r[5] for r in rows], self.dimensions)
        if len(vecs):
            self.max_norm = max(self.max_norm, float(np.sqrt(np.einsum("ij,ij->i", vecs, vecs).max())))
        mids = [r[0] for r in rows]
        row_of = self.row_of
        targets = np.empty(len(rows), dtype=np.int64)
        fresh = 0
        for i, mid in enumerate(mids):
            row = row_of.get(mid)
            if row is None:
                fresh += 1
                row = -1
            targets[i] = row
        if fresh:
            self._grow(self.n + fresh)
            new_pos = np.flatnonzero(targets < 0)
            new_rows = np.arange(self.n, self.n + len(new_pos))
            targets[new_pos] = new_rows
            for pos, row in zip(new_pos.tolist(), new_rows.tolist()):
                row_of[mids[pos]] = row
            self.ids[new_rows] = np.asarray(mids, dtype=np.int64)[new_pos]
            self._rows.set(self.ids[new_rows], new_rows)
            self.alive[new_rows] = True
            self.n += len(new_pos)
        self.matrix[targets] = vecs
        if self._codes is not None:
            self._codes[:, targets] = sign_codes(vecs)
        code, scopes, sessions = self._code, self._scope_codes, self._session_codes
        self.scope[targets] = [code(scopes, r[1]) for r in rows]
        self.status[targets] = [STATUS_CODE[r[2]] for r in rows]
        self.type[targets] = [TYPE_CODE[r[3]] for r in rows]
        self.session[targets] = [code(sessions, r[4]) for r in rows]

    def _compact(self) -> None:
        keep = np.flatnonzero(self.alive[: self.n])
        n = len(keep)
        for name in ("matrix", "ids", "scope", "status", "type", "session", "alive"):
            arr = getattr(self, name)
            arr[:n] = arr[keep]
        if self._codes is not None:
            self._codes[:, :n] = self._codes[:, keep]
        self.alive[n:] = False
        self.n = n
        self.dead = 0
        self.row_of = dict(zip(self.ids[:n].tolist(), range(n)))
        self._rows.clear()
        if n:
            self._rows.set(self.ids[:n], np.arange(n))

    def reset(self) -> None:
        """Empty the index: the class's own __init__ runs again, so a subclass's state is emptied too."""
        type(self).__init__(self, self.dimensions, self.shard)

    def refresh(self, session: Session, counter: int | None = None) -> bool:
        """Bring the matrix up to date with the database. Returns True if anything changed.

        ``session`` must be a snapshot (reading() or a transaction) so that the counter and
        the rows come from one state of the store.
        """
        feed = session.feed
        if counter is None:
            counter = feed.counter()
        if counter == self.seq:
            return False
        floor = feed.tombstone_floor()
        shard = None if self.shard is None else Shard(*self.shard)
        if self.seq < 0 or self.seq < floor or counter < self.seq:
            self.reset()
            self._grow(session.vectors.count(shard))
            for rows in session.vectors.all_rows(shard):
                self._upsert(rows)
        else:
            for mid in feed.tombstones_since(self.seq):
                self._remove(mid)
            self._upsert(session.vectors.changed_rows(self.seq, shard))
            if self.dead > 1000 and self.dead * 4 > self.n:
                self._compact()
        self.seq = counter
        self._masks.clear()
        return True

    # -- search -----------------------------------------------------------------------------
    def mask(self, flt: ScanFilter | None) -> np.ndarray:
        """Rows that are alive and pass the filter (a lookup table per column, no isin)."""
        return self._filtered(flt)[0]

    def passes(self, rows: np.ndarray, flt: ScanFilter) -> np.ndarray:
        """Whether each of ``rows`` is alive and passes ``flt``: a few rows checked without
        building the filter's mask over the whole matrix (which every refresh invalidates)."""
        ok = self.alive[rows].copy()
        self._apply(flt, rows, ok)
        return ok

    def _apply(self, flt: ScanFilter, rows: np.ndarray | slice, ok: np.ndarray) -> None:
        """AND into ``ok`` whether each of ``rows`` passes the filter's columns (a lookup table per
        column, as np.isin costs more)."""
        def keep(column: np.ndarray, codes: list[int | None], size: int) -> None:  # None: value unknown here
            lut = np.zeros(max(size, 1), dtype=bool)
            lut[[c for c in codes if c is not None]] = True
            np.logical_and(ok, lut[column[rows]], out=ok)

        if flt.scopes is not None:
            keep(self.scope, [self._scope_codes.get(s) for s in flt.scopes], len(self._scope_codes))
        if flt.statuses is not None:
            keep(self.status, [STATUS_CODE[s] for s in flt.statuses], len(STATUS_CODE))
        if flt.types is not None:
            keep(self.type, [TYPE_CODE[t] for t in flt.types], len(TYPE_CODE))
        if flt.sessions is not None:
            keep(self.session, [self._session_codes.get(s) for s in flt.sessions], len(self._session_codes))
        if flt.allowed_ids is not None:
            np.logical_and(ok, np.isin(self.ids[rows], flt.allowed_ids), out=ok)

    def _filtered(self, flt: ScanFilter | None) -> tuple[np.ndarray, np.ndarray | None]:
        """(mask, rows passing it; None when every row does), cached per column filter."""
        n = self.n
        key = None if flt is None else flt.key()
        if key is not None:
            hit = self._masks.get(key)
            if hit is not None and hit[1] == n:
                return hit[0], hit[2]
        mask = self.alive[:n].copy()
        if flt is not None:
            self._apply(flt, slice(0, n), mask)
        rows = None if mask.all() else np.flatnonzero(mask)
        if key is not None:
            if len(self._masks) >= self.MASK_CACHE:
                self._masks.pop(next(iter(self._masks)))
            self._masks[key] = (mask, n, rows)
        return mask, rows

    def search(self, query: np.ndarray, k: int, flt: ScanFilter | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Top-k memory ids and exact (float64) cosine similarities among rows passing the filter."""
        ids, sims, _ = self.search_with_stats(query, k, flt)
        return ids, sims

    def search_with_stats(
        self, query: np.ndarray, k: int, flt: ScanFilter | None = None
    ) -> tuple[np.ndarray, np.ndarray, tuple[int, int, int]]:
        """Like search(), plus (count, sum, sum of squares) of the similarity over every row
        that passed the filter: what score normalisation needs, mergeable across shards."""
        n = self.n
        if n == 0 or k <= 0:
            return (*_EMPTY, (0, 0, 0))
        q = np.ascontiguousarray(query, dtype=np.float32)
        if (flt is None or flt.unfiltered) and self.dead == 0:
            rows = None
        else:
            rows = self._filtered(flt)[1]
        if rows is None:  # every row passes (common: the default statuses cover everything)
            scores = dot_rows(self.matrix[:n], q)
            return (*self._top(scores, None, k, q), _stats(scores))
        if len(rows) == 0:
            return (*_EMPTY, (0, 0, 0))
        if len(rows) * 3 < n:  # a narrow filter: gather the rows, scan only them
            scores = dot_rows(self.matrix[rows], q)
        else:
            scores = dot_rows(self.matrix[:n], q)[rows]
        return (*self._top(scores, rows, k, q), _stats(scores))

    def _top(self, scores: np.ndarray, rows: np.ndarray | None, k: int, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Exact top-k from approximate ``scores`` of ``rows`` (None = rows 0..len-1)."""
        m = scores.shape[0]
        if k < m:
            kth = scores[np.argpartition(scores, m - k)[m - k:]].min()
            # With |approx - exact| <= bound for every row, each row of the exact top-k has
            # approx >= kth - 2*bound. bound: |q| * max|row| * d * 2^-23, twice the textbook
            # float32 dot-product error (d * 2^-24 relative to |q||row|).
            bound = float(np.linalg.norm(q)) * max(self.max_norm, 1e-30) * self.dimensions * 2.0 ** -23
            cand = np.flatnonzero(scores >= kth - 2 * bound)
        else:
            cand = np.arange(m)
        rows = cand if rows is None else rows[cand]
        exact = exact_scores(self.matrix[rows], q.astype(np.float64))
        ids = self.ids[rows]
        # Ties broken by id so that every engine (inline, workers) returns the same order.
        order = np.lexsort((ids, -exact))[:k]
        return ids[order].astype(np.int64), exact[order]

    def near_rows(self, query: np.ndarray, m: int = NEAR_SHORTLIST) -> np.ndarray | None:
        """A shortlist of about ``m`` live rows, ascending, whose signs agree most with the query's
        (fewest differing bits; rows tied with the m-th are all in): a cosine's near neighbours share
        most signs, so the top few by cosine are among them, found without reading the float matrix.
        None when a shortlist would not beat the plain scan: a small index, or so many rows tied at
        the boundary (sparse or repeated vectors) that the list is no longer short. Candidates only:
        the caller scores the rows it gets."""
        n = self.n
        if n <= 4 * m:
            return None
        if self._codes is None:
            codes = np.zeros((-(-self.dimensions // 64), self._cap), dtype=np.uint64)
            codes[:, :n] = sign_codes(self.matrix[:n])
            self._codes = codes
        q = sign_codes(np.asarray(query, dtype=np.float32).reshape(1, -1))
        distance = _popcount(self._codes[:, :n] ^ q).sum(axis=0, dtype=np.uint16)
        distance[~self.alive[:n]] = self.dimensions + 1
        # The m-th smallest distance from a histogram (distances are small integers), then every
        # row within it: ascending by row, and rows tied at the boundary all kept (so a few over m).
        counts = np.bincount(distance, minlength=self.dimensions + 2)
        limit = int(np.searchsorted(np.cumsum(counts), m))
        rows = np.flatnonzero(distance <= min(limit, self.dimensions))
        return rows if len(rows) <= 2 * m else None

    def vector_of(self, mid: int) -> np.ndarray | None:
        row = self.row_of.get(mid)
        return None if row is None else self.matrix[row]


# Score statistics are summed as integers (each cosine rounded to 2^-32) so that a whole
# scan and the merge of its shards give the same bits: float sums depend on their order.
STATS_SCALE = 2.0 ** 32


def _stats(scores: np.ndarray) -> tuple[int, int, int]:
    s64 = scores.astype(np.float64, copy=False)
    total = int(np.rint(s64 * STATS_SCALE).astype(np.int64).sum())
    total_sq = int(np.rint(s64 * s64 * STATS_SCALE).astype(np.int64).sum())
    return int(s64.shape[0]), total, total_sq


def merge_stats(parts: Iterable[tuple[int, int, int]]) -> tuple[int, int, int]:
    n, s, q = 0, 0, 0
    for pn, ps, pq in parts:
        n, s, q = n + pn, s + ps, q + pq
    return n, s, q


def stats_moments(stats: tuple[int, int, int]) -> tuple[float, float]:
    """Mean and population standard deviation of the cosine from _stats/merge_stats."""
    n, s, q = stats
    if n <= 0:
        return 0.0, 0.0
    mean = s / STATS_SCALE / n
    var = max(0.0, q / STATS_SCALE / n - mean * mean)
    return mean, var ** 0.5


def unexpired(ids: np.ndarray, sims: np.ndarray, expired: set[int], depth: int) -> list[tuple[int, float]]:
    """A scan's (id, cosine) pairs without expired memories, cut to depth."""
    return [(i, s) for i, s in zip(ids.tolist(), sims.tolist()) if i not in expired][:depth]


def merge_top(parts: Iterable[tuple[np.ndarray, np.ndarray]], k: int) -> tuple[np.ndarray, np.ndarray]:
    """Merge several top-k lists (e.g. from shards) into one, same tie order as a single scan."""
    parts = list(parts)
    ids = [p[0] for p in parts]
    sims = [p[1] for p in parts]
    if not ids:
        return _EMPTY
    all_ids = np.concatenate(ids)
    all_sims = np.concatenate(sims)
    order = np.lexsort((all_ids, -all_sims))[:k]
    return all_ids[order], all_sims[order]
