"""Hybrid recall: FTS5 bm25 + exact vector scan, fused, then weighted by policy."""

from __future__ import annotations

import json
import math
import sqlite3
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from . import policy
from .config import RecalliteConfig
from .embedder import Embedder
from .codec import decode_vector
from .fts import fts_query, query_terms
from .fusion import keyword_weight, moments, reciprocal_rank_fusion, zscore_fusion
from .learning import Assessment, OutcomeModel, outcome_reasons
from .models import Memory, OutcomeEvidence, RecallHit, ScoreBreakdown
from .rows import load_memories, ts
from .store import Store
from .vector_index import ScanFilter, VectorIndex


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
        self._df_cache: dict[str, int] = {}
        self._df_counter = -1
        # The outcome learner (set by the engine); None ranks by the usefulness column alone.
        self.learning: OutcomeModel | None = None

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

    def vector_channel(
        self, conn: sqlite3.Connection, qvec: np.ndarray, flt: RecallFilter, depth: int
    ) -> tuple[list[tuple[int, float]], tuple[int, float, float]]:
        """Top-depth (id, cosine) and (count, sum, sum of squares) of the cosine over the scope."""
        self.index.refresh(conn)
        allowed = None
        if flt.tags is not None:
            where, params = flt.sql("m")
            allowed = np.array([r[0] for r in conn.execute(f"SELECT m.id FROM memories m WHERE {where}", params)], dtype=np.int64)
        ids, sims, stats = self.index.search_with_stats(
            qvec,
            depth,
            ScanFilter(scopes=flt.scopes, statuses=flt.statuses, types=flt.types, sessions=flt.sessions, allowed_ids=allowed),
        )
        return [(int(i), float(s)) for i, s in zip(ids, sims)], stats

    def similarities(self, conn: sqlite3.Connection, qvec: np.ndarray, ids: list[int]) -> dict[int, float]:
        """Exact cosine for candidates the vector top-k did not include (keyword-only hits)."""
        out: dict[int, float] = {}
        missing = []
        for i in ids:
            v = self.index.vector_of(i)
            if v is None:
                missing.append(i)
            else:
                out[i] = float(v @ qvec)
        for i in range(0, len(missing), 500):
            chunk = missing[i : i + 500]
            for mid, blob in conn.execute(
                f"SELECT memory_id, vector FROM vectors WHERE memory_id IN ({','.join('?' * len(chunk))})", chunk
            ):
                out[mid] = float(decode_vector(blob, self.embedder.dimensions) @ qvec)
        return out

    # -- keyword confidence ----------------------------------------------------------------------
    def _document_frequency(self, conn: sqlite3.Connection, term: str) -> int:
        counter = self.index.seq
        if abs(counter - self._df_counter) > max(50, len(self.index) // 50):
            self._df_cache.clear()
            self._df_counter = counter
        df = self._df_cache.get(term)
        if df is None:
            df = conn.execute("SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?", (f'"{term}"',)).fetchone()[0]
            if len(self._df_cache) > 4096:
                self._df_cache.clear()
            self._df_cache[term] = df
        return df

    def keyword_coverage(self, conn: sqlite3.Connection, terms: list[str], top_ids: list[int]) -> float:
        """Share of the query's IDF mass matched by its best keyword hit (0..1)."""
        if not terms or not top_ids:
            return 0.0
        n = max(1, len(self.index))
        idf = {}
        for t in terms:
            df = self._document_frequency(conn, t)
            idf[t] = math.log(1 + (n - df + 0.5) / (df + 0.5)) if df else math.log(1 + (n + 0.5) / 0.5)
        total = sum(idf.values())
        if total <= 0:
            return 0.0
        matched: dict[int, float] = {}
        marks = ",".join("?" * len(top_ids))
        for t in terms:
            for (rowid,) in conn.execute(
                f"SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? AND rowid IN ({marks})", [f'"{t}"', *top_ids]
            ):
                matched[rowid] = matched.get(rowid, 0.0) + idf[t]
        return max(matched.values(), default=0.0) / total

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
        self, query: str, flt: RecallFilter, limit: int, profile: str, min_score: float | None,
        explore: bool = False, min_score_ratio: float | None = None,
    ) -> list[RecallHit]:
        cfg = self.config
        qvec = self.query_cache.get(self.embedder, query)
        depth = max(cfg.candidate_depth, limit * 4)
        use_kw = cfg.channels in ("hybrid", "keyword")
        use_vec = cfg.channels in ("hybrid", "vector")
        with self.store.reading() as conn:
            kw = self.keyword_channel(conn, query, flt, depth) if use_kw else []
            vec, vstats = self.vector_channel(conn, qvec, flt, depth)
            if not use_vec:
                vec = []
            alpha = None
            if cfg.fusion == "rrf":
                base = reciprocal_rank_fusion(
                    [[i for i, _ in kw], [i for i, _ in vec]], [cfg.keyword_weight, cfg.vector_weight], cfg.rrf_k
                )
                kz = vz = {}
            else:
                sims = dict(vec)
                if use_vec:
                    extra = [i for i, _ in kw if i not in sims]
                    sims.update(self.similarities(conn, qvec, extra))
                if use_kw and use_vec:
                    coverage = self.keyword_coverage(conn, query_terms(query), [i for i, _ in kw[: cfg.coverage_docs]])
                    alpha = keyword_weight(coverage, cfg.keyword_alpha_max, *cfg.keyword_coverage_ramp)
                else:
                    alpha = 1.0 if use_kw else 0.0
                fused, kz, vz = zscore_fusion(dict(kw), sims, vstats[0], moments(*vstats), alpha)
                # exp keeps the score positive, so policy factors scale it the same way whatever its sign.
                base = {i: math.exp(min(50.0, s)) for i, s in fused.items()}
            pool = sorted(base.items(), key=lambda kv: (-kv[1], kv[0]))[: max(cfg.rerank_pool, limit * 3)]
            pool_ids = [i for i, _ in pool]
            memories = load_memories(conn, pool_ids)
            contra = self.contradictions(conn, pool_ids, flt.scopes)
            learned = self._assess(conn, qvec, memories, explore)
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
            judged = learned.get(mid)
            bd = ScoreBreakdown(
                keyword_rank=kr[0] if kr else None,
                keyword_score=round(kr[1], 6) if kr else None,
                vector_rank=vr[0] if vr else None,
                vector_similarity=round(vr[1], 6) if vr else None,
                keyword_z=round(kz[mid], 4) if mid in kz else None,
                vector_z=round(vz[mid], 4) if mid in vz else None,
                keyword_alpha=None if alpha is None else round(alpha, 4),
                fusion=fusion_score,
                status_factor=policy.STATUS_FACTOR[mem.status],
                profile_factor=weights.get(mem.type, 1.0),
                quality=policy.quality(mem.confidence, judged.mean if judged else mem.usefulness, mem.importance),
                outcome_factor=judged.factor if judged else policy.outcome_factor(mem.usefulness, cfg.outcome_gain),
                contradiction_factor=policy.contradiction_factor(len(against)),
                learning=evidence(judged),
            )
            bd.final = (bd.fusion * bd.status_factor * bd.profile_factor * bd.quality * bd.outcome_factor
                        * bd.contradiction_factor)
            hits.append(
                RecallHit(
                    memory=mem,
                    score=bd.final,
                    rank=0,
                    reasons=self.reasons(mem, bd, profile)
                    + (outcome_reasons(judged, cfg.learning.change_after) if judged else []),
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
        if min_score_ratio and hits:
            hits = [h for h in hits if h.score >= min_score_ratio * hits[0].score]
        hits = hits[:limit]
        for r, h in enumerate(hits, start=1):
            h.rank = r
        return hits

    def _assess(self, conn: sqlite3.Connection, qvec: np.ndarray, memories: dict[int, Memory], explore: bool) -> dict[int, Assessment]:
        """What outcomes say about each candidate for this query (empty: rank by the usefulness column)."""
        if self.learning is None or not self.learning.enabled:
            return {}
        return self.learning.assess(
            conn, qvec, {mid: (m.usefulness, m.created_at.timestamp()) for mid, m in memories.items()}, explore)

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


def evidence(a: Assessment | None) -> OutcomeEvidence | None:
    if a is None:
        return None
    return OutcomeEvidence(
        outcomes=a.outcomes, successes=round(a.successes, 4), failures=round(a.failures, 4),
        nearest_similarity=None if a.nearest is None else round(a.nearest, 4), posterior_mean=round(a.mean, 4),
        exploration_bonus=round(a.bonus, 4), usefulness=round(a.usefulness, 4), last_outcome_at=ts(a.last_outcome_at),
        failure_run=a.failure_run, newcomer=a.newcomer,
    )
