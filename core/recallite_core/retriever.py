"""Hybrid recall: FTS5 bm25 + exact vector scan, fused, then weighted by policy."""

from __future__ import annotations

import json
import sqlite3
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from . import policy
from .config import RecalliteConfig
from .embedder import Embedder
from .episodes import chunk_channel, needs_id_list
from .fts import fts_query
from .fusion import reciprocal_rank_fusion
from .models import Memory, RecallHit, ScoreBreakdown
from .rows import load_memories
from .store import Store
from .vector_index import ScanFilter, VectorIndex


@dataclass(frozen=True)
class RecallFilter:
    scopes: tuple[str, ...] | None
    statuses: tuple[str, ...]
    types: tuple[str, ...] | None
    tags: tuple[str, ...] | None
    sessions: tuple[str, ...] | None
    roles: tuple[str, ...] | None = None  # speakers of conversation turns (episodes.py)
    categories: tuple[str, ...] | None = None

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
        if self.roles is not None:
            where.append(f"{alias}.id IN (SELECT memory_id FROM episodes WHERE role IN ({','.join('?' * len(self.roles))}))")
            params.extend(self.roles)
        if self.categories is not None:
            where.append(
                f"{alias}.id IN (SELECT memory_id FROM memory_categories WHERE category IN ({','.join('?' * len(self.categories))}))"
            )
            params.extend(self.categories)
        return " AND ".join(where) or "1", params


class QueryVectorCache:
    """LRU of query embeddings: agents repeat their task descriptions."""

    def __init__(self, size: int):
        self.size = size
        self._data: OrderedDict[str, np.ndarray] = OrderedDict()

    def get(self, embedder: Embedder, text: str) -> np.ndarray:
        vec = self._data.get(text)
        if vec is not None:
            self._data.move_to_end(text)
            return vec
        vec = np.asarray(embedder.embed([text])[0], dtype=np.float32)
        self._data[text] = vec
        if len(self._data) > self.size:
            self._data.popitem(last=False)
        return vec


class Retriever:
    def __init__(self, store: Store, embedder: Embedder, index: VectorIndex, config: RecalliteConfig):
        self.store = store
        self.embedder = embedder
        self.index = index
        self.config = config
        self.query_cache = QueryVectorCache(config.query_cache_size)

    # -- channels -------------------------------------------------------------------------------
    def keyword_channel(self, conn: sqlite3.Connection, query: str, flt: RecallFilter, depth: int) -> list[tuple[int, float]]:
        match = fts_query(query)
        if match is None:
            return []
        where, params = flt.sql("m")
        rows = conn.execute(
            "SELECT m.id, bm25(memories_fts, 1.5, 1.0, 0.5) AS s FROM memories_fts "
            "JOIN memories m ON m.id = memories_fts.rowid "
            f"WHERE memories_fts MATCH ? AND {where} ORDER BY s LIMIT ?",
            [match, *params, depth],
        ).fetchall()
        return [(r[0], -r[1]) for r in rows]

    def vector_channel(self, conn: sqlite3.Connection, qvec: np.ndarray, flt: RecallFilter, depth: int) -> list[tuple[int, float]]:
        self.index.refresh(conn)
        allowed = None
        if needs_id_list(flt):  # tags, roles, categories: an id list from SQL, applied inside the scan
            where, params = flt.sql("m")
            allowed = np.array([r[0] for r in conn.execute(f"SELECT m.id FROM memories m WHERE {where}", params)], dtype=np.int64)
        ids, sims = self.index.search(
            qvec,
            depth,
            ScanFilter(scopes=flt.scopes, statuses=flt.statuses, types=flt.types, sessions=flt.sessions, allowed_ids=allowed),
        )
        return [(int(i), float(s)) for i, s in zip(ids, sims)]

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
    def rank(
        self, query: str, flt: RecallFilter, limit: int, profile: str, min_score: float | None
    ) -> list[RecallHit]:
        cfg = self.config
        qvec = self.query_cache.get(self.embedder, query)
        depth = max(cfg.candidate_depth, limit * 4)
        with self.store.reading() as conn:
            kw = self.keyword_channel(conn, query, flt, depth)
            vec = self.vector_channel(conn, qvec, flt, depth)
            vec = chunk_channel(self, conn, qvec, flt, depth, vec)  # sentence chunks of long episodes
            fused = reciprocal_rank_fusion(
                [[i for i, _ in kw], [i for i, _ in vec]], [cfg.keyword_weight, cfg.vector_weight], cfg.rrf_k
            )
            pool = sorted(fused.items(), key=lambda kv: (-kv[1], kv[0]))[: max(cfg.rerank_pool, limit * 3)]
            pool_ids = [i for i, _ in pool]
            memories = load_memories(conn, pool_ids)
            contra = self.contradictions(conn, pool_ids, flt.scopes)
        kw_rank = {i: (r, s) for r, (i, s) in enumerate(kw, start=1)}
        vec_rank = {i: (r, s) for r, (i, s) in enumerate(vec, start=1)}
        weights = cfg.profiles[profile]
        hits: list[RecallHit] = []
        for mid, fusion_score in pool:
            mem = memories.get(mid)
            if mem is None:
                continue
            kr = kw_rank.get(mid)
            vr = vec_rank.get(mid)
            against = contra.get(mid, [])
            bd = ScoreBreakdown(
                keyword_rank=kr[0] if kr else None,
                keyword_score=round(kr[1], 6) if kr else None,
                vector_rank=vr[0] if vr else None,
                vector_similarity=round(vr[1], 6) if vr else None,
                fusion=fusion_score,
                status_factor=policy.STATUS_FACTOR[mem.status],
                profile_factor=weights.get(mem.type, 1.0),
                quality=policy.quality(mem.confidence, mem.usefulness, mem.importance),
                contradiction_factor=policy.contradiction_factor(len(against)),
            )
            bd.final = bd.fusion * bd.status_factor * bd.profile_factor * bd.quality * bd.contradiction_factor
            hits.append(
                RecallHit(
                    memory=mem,
                    score=bd.final,
                    rank=0,
                    reasons=self.reasons(mem, bd, profile),
                    warnings=[
                        f"Contradicted by {f'mem_{oid}'}" + (f' "{title}"' if title else "") + f" ({status})"
                        for oid, title, status in against
                    ],
                    breakdown=bd,
                )
            )
        hits.sort(key=lambda h: (-h.score, h.memory.id))
        if min_score is not None:
            hits = [h for h in hits if h.score >= min_score]
        hits = hits[:limit]
        for r, h in enumerate(hits, start=1):
            h.rank = r
        return hits

    def reasons(self, mem: Memory, bd: ScoreBreakdown, profile: str) -> list[str]:
        out: list[str] = []
        if bd.keyword_rank is not None:
            out.append("keyword-match")
        if bd.vector_similarity is not None and bd.vector_similarity >= self.config.semantic_match_threshold:
            out.append("semantic-match")
        out.append(f"{mem.status}-memory")
        if policy.SOURCE_TRUST.get(mem.source.type) == policy.UNTRUSTED:
            out.append(f"untrusted-source:{mem.source.type}")
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
