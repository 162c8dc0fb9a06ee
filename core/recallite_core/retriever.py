"""Hybrid recall: FTS5 bm25 + exact vector scan, fused, then weighted by policy."""

from __future__ import annotations

import concurrent.futures
import json
import logging
import sqlite3
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple, Sequence

import numpy as np

from . import policy
from .config import RecalliteConfig
from .embedder import Embedder
from .errors import ScanError, WorkerTimeoutError
from .fts import fts_query
from .fusion import reciprocal_rank_fusion
from .models import Memory, RecallHit, ScoreBreakdown
from .rows import load_memories
from .store import Store
from .vector_index import ScanFilter, VectorIndex

if TYPE_CHECKING:
    from .scan_workers import ScanPool

log = logging.getLogger("recallite.retriever")

# What scoring needs of a candidate; full Memory objects are built only for the hits kept.
_SCORE_COLUMNS = "m.id, m.type, m.status, m.source_type, m.confidence, m.usefulness, m.importance, m.success_count, m.failure_count"


class _Candidate(NamedTuple):
    id: int
    type: str
    status: str
    source_type: str
    confidence: float
    usefulness: float
    importance: float
    success_count: int
    failure_count: int


@dataclass(frozen=True)
class RecallFilter:
    scopes: tuple[str, ...] | None
    statuses: tuple[str, ...]
    types: tuple[str, ...] | None
    tags: tuple[str, ...] | None
    sessions: tuple[str, ...] | None

    def sql(self, alias: str = "m") -> tuple[str, list]:
        """WHERE fragments (joined by AND) and their parameters."""
        where: list[str] = []
        params: list = []

        def among(column: str, values: Sequence[str]) -> None:
            where.append(f"{alias}.{column} IN ({','.join('?' * len(values))})")
            params.extend(values)

        if self.scopes is not None:
            among("scope", self.scopes)
        among("status", self.statuses)
        if self.types is not None:
            among("type", self.types)
        if self.sessions is not None:
            among("session", self.sessions)
        if self.tags is not None:
            where.append(
                f"EXISTS (SELECT 1 FROM json_each({alias}.tags) WHERE json_each.value IN ({','.join('?' * len(self.tags))}))"
            )
            params.extend(self.tags)
        return " AND ".join(where) or "1", params


def scan_filter_for(conn: sqlite3.Connection, flt: RecallFilter) -> ScanFilter:
    """The filter a vector scan applies before its top-k (tags become an id list via SQL).

    Shared by the inline scan and the worker processes, so both filter identically."""
    allowed = None
    if flt.tags is not None:
        where, params = flt.sql("m")
        allowed = np.array([r[0] for r in conn.execute(f"SELECT m.id FROM memories m WHERE {where}", params)], dtype=np.int64)
    return ScanFilter(scopes=flt.scopes, statuses=flt.statuses, types=flt.types, sessions=flt.sessions, allowed_ids=allowed)


class QueryVectorCache:
    """LRU of query embeddings: agents repeat their task descriptions. Thread-safe; the
    embedding itself runs outside the lock."""

    def __init__(self, size: int):
        self.size = size
        self._data: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, embedder: Embedder, text: str) -> np.ndarray:
        with self._lock:
            vec = self._data.get(text)
            if vec is not None:
                self._data.move_to_end(text)
                return vec
        vec = np.asarray(embedder.embed([text])[0], dtype=np.float32)
        with self._lock:
            self._data[text] = vec
            if len(self._data) > self.size:
                self._data.popitem(last=False)
        return vec


class Retriever:
    def __init__(
        self, store: Store, embedder: Embedder, index: VectorIndex, config: RecalliteConfig, pool: "ScanPool | None" = None
    ):
        self.store = store
        self.embedder = embedder
        self.index = index
        self.config = config
        self.pool = pool
        self._counted: tuple[int, int] | None = None  # (vectors, change counter) last seen
        self._scan_thread: concurrent.futures.ThreadPoolExecutor | None = None
        self.query_cache = QueryVectorCache(config.query_cache_size)

    # -- channels -------------------------------------------------------------------------------
    def keyword_channel(self, conn: sqlite3.Connection, query: str, flt: RecallFilter, depth: int) -> list[tuple[int, float]]:
        """bm25 top-``depth`` among the memories passing the filter, ties by id.

        The bm25 top-N is taken on the FTS table alone (no per-match join to memories),
        then filtered; only when the filter leaves fewer than ``depth`` of a full top-N is
        the N widened (and finally the whole match set filtered), so the answer is the same
        as filtering every match first."""
        match = fts_query(query)
        if match is None:
            return []
        where, params = flt.sql("m")
        inner = max(depth * 2, 100)
        while True:
            limit_sql, limit_params = ("LIMIT ?", [inner]) if inner else ("", [])
            # One pass: the bm25 top-N with, for each, whether it passes the filter.
            rows = conn.execute(
                f"SELECT f.id, f.s, ({where}) FROM (SELECT rowid AS id, bm25(memories_fts, 1.5, 1.0, 0.5) AS s "
                f"FROM memories_fts WHERE memories_fts MATCH ? ORDER BY s, rowid {limit_sql}) f "
                "JOIN memories m ON m.id = f.id ORDER BY f.s, f.id",
                [*params, match, *limit_params],
            ).fetchall()
            kept = [r for r in rows if r[2]]
            if len(kept) >= depth or not inner or len(rows) < inner:
                break  # enough, or the top-N already held every match
            inner = inner * 8 if inner < 100_000 else 0
        rows = kept[:depth]
        return [(r[0], -r[1]) for r in rows]

    def vector_channel(self, conn: sqlite3.Connection, qvec: np.ndarray, flt: RecallFilter, depth: int) -> list[tuple[int, float]]:
        """The inline scan: the cached matrix in this process."""
        self._refresh_inline(conn)
        ids, sims = self.index.search(qvec, depth, scan_filter_for(conn, flt))
        return list(zip(ids.tolist(), sims.tolist()))

    def _refresh_inline(self, conn: sqlite3.Connection) -> None:
        self.index.refresh(conn)
        self._counted = (len(self.index), self.index.seq)

    # Inline matrices at least this large (rows x dims) are scanned in a helper thread
    # while the FTS query runs; below it a thread hand-off costs more than it saves.
    PARALLEL_SCAN_OPS = 2_000_000

    def _inline_channels(self, conn, query: str, qvec: np.ndarray, flt: RecallFilter, depth: int):
        """Keyword and inline vector channels; a large matrix is scanned in a helper thread
        while FTS runs here (numpy and SQLite both release the GIL). Safe: the caller holds
        the store lock throughout, and every other user of the index takes it first."""
        self._refresh_inline(conn)
        sflt = scan_filter_for(conn, flt)
        if self.index.n * self.index.dimensions < self.PARALLEL_SCAN_OPS:
            kw = self.keyword_channel(conn, query, flt, depth)
            ids, sims = self.index.search(qvec, depth, sflt)
        else:
            if self._scan_thread is None:
                self._scan_thread = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="recallite-scan")
            future = self._scan_thread.submit(self.index.search, qvec, depth, sflt)
            kw = self.keyword_channel(conn, query, flt, depth)
            ids, sims = future.result()
        return kw, list(zip(ids.tolist(), sims.tolist()))

    def close(self) -> None:
        if self._scan_thread is not None:
            self._scan_thread.shutdown(wait=True)
            self._scan_thread = None

    # -- routing between the inline scan and the worker pool --------------------------------------
    def vector_count(self, conn: sqlite3.Connection) -> int:
        """How many vectors the store holds, cheaply: the last exact count (from whichever
        engine scanned) plus the vectors written and minus those deleted since."""
        counter = conn.execute("SELECT value FROM counters WHERE name = 'changes'").fetchone()[0]
        if self._counted is not None and self._counted[1] == counter:
            return self._counted[0]
        floor = conn.execute("SELECT value FROM counters WHERE name = 'tombstone_floor'").fetchone()[0]
        if self._counted is None or counter < self._counted[1] or floor > self._counted[1]:
            count = conn.execute("SELECT count(*) FROM vectors").fetchone()[0]
        else:
            base, seq = self._counted
            added = conn.execute("SELECT count(*) FROM vectors WHERE seq > ?", (seq,)).fetchone()[0]
            removed = conn.execute("SELECT count(*) FROM tombstones WHERE seq > ?", (seq,)).fetchone()[0]
            count = max(0, base + added - removed)
        self._counted = (count, counter)
        return count

    def _submit_scan(self, conn: sqlite3.Connection, qvec: np.ndarray, flt: RecallFilter, depth: int):
        """A pool future when this store is large enough for the workers, else None (inline)."""
        pool = self.pool
        if pool is None or not pool.wants(self.vector_count(conn)):
            return None
        try:
            pool.start(wait=True)  # once: the workers load their shards
            return pool.submit(qvec, depth, flt)
        except ScanError as exc:
            if pool.options.fallback != "inline":
                raise
            log.warning("vector scan falls back inline: %s", exc)
            return None

    def _pool_result(self, future, conn: sqlite3.Connection, qvec: np.ndarray, flt: RecallFilter, depth: int) -> list[tuple[int, float]]:
        pool = self.pool
        try:
            try:
                res = future.result(timeout=pool.options.task_timeout + 5.0)  # the pool's watchdog fails it first
            except concurrent.futures.TimeoutError:
                future.cancel()
                raise WorkerTimeoutError(
                    f"The vector scan took longer than {pool.options.task_timeout:.1f} s. Retry, or raise task_timeout."
                ) from None
        except ScanError as exc:
            if pool.options.fallback != "inline":
                raise
            log.warning("vector scan falls back inline: %s", exc)
            return self.vector_channel(conn, qvec, flt, depth)
        except BaseException:
            future.cancel()
            raise
        self._counted = (res.vector_count, res.seq)
        if self.index.seq >= 0:
            self.index.reset()  # the workers hold the vectors now: free the inline copy
        return list(zip(res.ids.tolist(), res.sims.tolist()))

    # -- contradictions -----------------------------------------------------------------------------
    def contradictions(
        self, conn: sqlite3.Connection, ids: list[int], scopes: tuple[str, ...] | None
    ) -> dict[int, list[tuple[int, str, str]]]:
        """For each id: the live memories (id, title, status) that contradict it, within the scopes."""
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        rows = conn.execute(
            f"SELECT from_id, to_id FROM relations WHERE type = 'contradicts' AND (from_id IN ({marks}) OR to_id IN ({marks}))",
            [*ids, *ids],
        ).fetchall()
        if not rows:
            return {}
        idset = set(ids)
        others = {b if a in idset else a for a, b in rows} | {a for a, b in rows if b in idset} | {b for a, b in rows if a in idset}
        info: dict[int, tuple[str, str, str]] = {}
        omarks = ",".join("?" * len(others))
        for oid, title, status, scope in conn.execute(
            f"SELECT id, title, status, scope FROM memories WHERE id IN ({omarks})", list(others)
        ):
            info[oid] = (title, status, scope)
        out: dict[int, list[tuple[int, str, str]]] = {}
        for a, b in rows:
            for me, other in ((a, b), (b, a)):
                if me not in idset or other not in info:
                    continue
                title, status, scope = info[other]
                if status in ("deprecated", "superseded"):
                    continue
                if scopes is not None and scope not in scopes:
                    continue  # never leak another scope's memory through a warning
                lst = out.setdefault(me, [])
                if all(o[0] != other for o in lst):
                    lst.append((other, title, status))
        return out

    # -- the whole recall -------------------------------------------------------------------------------
    def query_vector(self, query: str) -> np.ndarray:
        return self.query_cache.get(self.embedder, query)

    def rank(
        self, query: str, flt: RecallFilter, limit: int, profile: str, min_score: float | None,
        qvec: np.ndarray | None = None,
    ) -> list[RecallHit]:
        cfg = self.config
        if qvec is None:
            qvec = self.query_vector(query)
        depth = max(cfg.candidate_depth, limit * 4)
        weights = cfg.profiles[profile]
        with self.store.reading() as conn:
            future = self._submit_scan(conn, qvec, flt, depth)  # the workers scan while FTS runs here
            if future is None:
                kw, vec = self._inline_channels(conn, query, qvec, flt, depth)
            else:
                kw = self.keyword_channel(conn, query, flt, depth)
                vec = self._pool_result(future, conn, qvec, flt, depth)
            fused = reciprocal_rank_fusion(
                [[i for i, _ in kw], [i for i, _ in vec]], [cfg.keyword_weight, cfg.vector_weight], cfg.rrf_k
            )
            pool = sorted(fused.items(), key=lambda kv: (-kv[1], kv[0]))[: max(cfg.rerank_pool, limit * 3)]
            pool_ids = [i for i, _ in pool]
            cands = self._candidates(conn, pool_ids, flt)
            contra = self.contradictions(conn, pool_ids, flt.scopes)
            kw_rank = {i: (r, s) for r, (i, s) in enumerate(kw, start=1)}
            vec_rank = {i: (r, s) for r, (i, s) in enumerate(vec, start=1)}
            scored: list[tuple] = []
            for mid, fusion_score in pool:
                c = cands.get(mid)
                if c is None:
                    continue
                factors = (
                    policy.STATUS_FACTOR[c.status],
                    weights.get(c.type, 1.0),
                    policy.quality(c.confidence, c.usefulness, c.importance),
                    policy.contradiction_factor(len(contra.get(mid, ()))),
                )
                final = fusion_score * factors[0] * factors[1] * factors[2] * factors[3]
                scored.append((final, f"mem_{mid}", c, fusion_score, factors))
            scored.sort(key=lambda t: (-t[0], t[1]))
            if min_score is not None:
                scored = [t for t in scored if t[0] >= min_score]
            scored = scored[:limit]
            memories = load_memories(conn, [t[2].id for t in scored])
        hits: list[RecallHit] = []
        for rank, (final, _, c, fusion_score, (status_f, profile_f, quality, contra_f)) in enumerate(scored, start=1):
            kr = kw_rank.get(c.id)
            vr = vec_rank.get(c.id)
            bd = ScoreBreakdown(  # built only for the hits kept
                keyword_rank=kr[0] if kr else None,
                keyword_score=round(kr[1], 6) if kr else None,
                vector_rank=vr[0] if vr else None,
                vector_similarity=round(vr[1], 6) if vr else None,
                fusion=fusion_score,
                status_factor=status_f,
                profile_factor=profile_f,
                quality=quality,
                contradiction_factor=contra_f,
                final=final,
            )
            hits.append(
                RecallHit(
                    memory=memories[c.id],
                    score=final,
                    rank=rank,
                    reasons=self.reasons(c, bd, profile),
                    warnings=[
                        f"Contradicted by {f'mem_{oid}'}" + (f' "{title}"' if title else "") + f" ({status})"
                        for oid, title, status in contra.get(c.id, [])
                    ],
                    breakdown=bd,
                )
            )
        return hits

    @staticmethod
    def _candidates(conn: sqlite3.Connection, ids: list[int], flt: RecallFilter) -> dict[int, _Candidate]:
        """The scoring columns of the fused pool, re-checked against the filter (a worker's
        snapshot may be a write older or newer than this one)."""
        if not ids:
            return {}
        where, params = flt.sql("m")
        rows = conn.execute(
            f"SELECT {_SCORE_COLUMNS} FROM memories m WHERE m.id IN ({','.join('?' * len(ids))}) AND {where}",
            [*ids, *params],
        ).fetchall()
        return {r[0]: _Candidate(*r) for r in rows}

    def reasons(self, mem: "Memory | _Candidate", bd: ScoreBreakdown, profile: str) -> list[str]:
        source_type = mem.source_type if isinstance(mem, _Candidate) else mem.source.type
        out: list[str] = []
        if bd.keyword_rank is not None:
            out.append("keyword-match")
        if bd.vector_similarity is not None and bd.vector_similarity >= self.config.semantic_match_threshold:
            out.append("semantic-match")
        out.append(f"{mem.status}-memory")
        if policy.SOURCE_TRUST.get(source_type) == policy.UNTRUSTED:
            out.append(f"untrusted-source:{source_type}")
        if mem.success_count and mem.usefulness >= 0.6:
            out.append("reinforced")
        if mem.failure_count and mem.usefulness <= 0.4:
            out.append("penalized-by-feedback")
        if mem.confidence >= 0.85:
            out.append("high-confidence")
        elif mem.confidence < 0.5:
            out.append("low-confidence")
        if mem.importance >= 0.8:
            out.append("important")
        if bd.profile_factor > 1.0:
            out.append(f"profile-boost:{profile}")
        elif bd.profile_factor < 1.0:
            out.append(f"profile-penalty:{profile}")
        if bd.contradiction_factor < 1.0:
            out.append("contradicted")
        return out

    def log(self, conn: sqlite3.Connection, query: str, profile: str, scopes, hits: list[RecallHit], kind: str) -> int:
        now = time.time()
        cur = conn.execute(
            "INSERT INTO retrievals (query, profile, scope, kind, created_at) VALUES (?, ?, ?, ?, ?)",
            (query, profile, None if scopes is None else json.dumps(list(scopes)), kind, now),
        )
        rid = cur.lastrowid
        if hits:
            conn.executemany(
                "INSERT INTO retrieval_items (retrieval_id, memory_id, rank, score) VALUES (?, ?, ?, ?)",
                [(rid, int(h.memory.id[4:]), h.rank, h.score) for h in hits],
            )
            ids = [int(h.memory.id[4:]) for h in hits]
            conn.execute(
                f"UPDATE memories SET access_count = access_count + 1, last_accessed_at = ? WHERE id IN ({','.join('?' * len(ids))})",
                [now, *ids],
            )
        return rid
