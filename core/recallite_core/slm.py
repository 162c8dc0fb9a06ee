"""SLM-Lite capabilities of the facade: layers and working memory, trust, belief graph,
immutable versions, behaviour capture, team scopes, expiry, concepts and auto-recall.

``Recallite`` inherits these methods; they reuse its store, retriever and policy (no second
engine). Kept in their own module so the facade in engine.py stays small.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import threading
import time
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

from . import policy
from .behavior import BEHAVIOR_KINDS, BEHAVIOR_OUTCOMES, BehaviorEvent, BehaviorRecorder
from .beliefs import walk
from .concepts import concepts_query, extract_concepts, summarize
from .errors import InvalidInputError, InvalidTransitionError, MemoryNotFoundError
from .fts import fts_query
from .models import (
    AutoContextResult,
    BeliefEdge,
    BeliefGraph,
    BeliefNode,
    Concepts,
    Memory,
    RecallHit,
    ScoreBreakdown,
    Source,
)
from .rows import load_memories
from .trust import trust_distribution, trust_scores
from .validation import (
    check_content,
    check_metadata,
    check_optional_name,
    check_scope,
    check_source,
    check_tags,
    check_title,
    check_unit,
    content_hash,
    derive_title,
    parse_id,
)
from .working import WorkingEntry, WorkingMemory, rank_entries, words

if TYPE_CHECKING:
    from .retriever import RecallFilter

log = logging.getLogger("recallite.slm")

WORKING_PREFIX = "wm_"
Summarizer = Callable[[str], "Concepts | None"]


def _ts(value: float | None) -> datetime | None:
    return None if value is None else datetime.fromtimestamp(value, tz=timezone.utc)


TRUST_STATS_SAMPLE = 2000


class SlmLite:
    """Mixin of ``Recallite``; expects its ``store``, ``retriever``, ``config``, ``embedder``."""

    # -- lazily created per-process parts ----------------------------------------------------------------------------
    @property
    def working(self) -> WorkingMemory:
        """This process's working memory (per session, never written unless promoted)."""
        wm = self.__dict__.get("_working")
        if wm is None:
            with self._slm_lock:
                wm = self.__dict__.get("_working")
                if wm is None:
                    cfg = self.config
                    wm = WorkingMemory(cfg.working_max_entries, cfg.working_max_bytes, self._on_working_overflow)
                    self.__dict__["_working"] = wm
                    self.__dict__["_working_shown"] = {}
        return wm

    @property
    def _slm_lock(self) -> threading.Lock:
        lock = self.__dict__.get("_slm_lock_obj")
        if lock is None:
            lock = self.__dict__.setdefault("_slm_lock_obj", threading.Lock())
        return lock

    @property
    def _behavior(self) -> BehaviorRecorder:
        rec = self.__dict__.get("_behavior_rec")
        if rec is None:
            with self._slm_lock:
                rec = self.__dict__.get("_behavior_rec")
                if rec is None:
                    rec = BehaviorRecorder(self._write_behavior, self.config.behavior_queue_size)
                    self.__dict__["_behavior_rec"] = rec
        return rec

    def _slm_close(self) -> None:
        rec = self.__dict__.get("_behavior_rec")
        if rec is not None:
            rec.close()

    # == layers and working memory ====================================================================================
    def remember_working(
        self,
        content: str,
        *,
        session: str,
        type: str = "observation",
        title: str | None = None,
        tags: Sequence[str] | None = None,
        metadata: dict | None = None,
        importance: float | None = None,
        source: Any = None,
        scope: str | None = None,
    ) -> Memory:
        """Keep a short-lived entry in this session's working memory (RAM only).

        It is found by ``recall(..., working_session=session)``, merged with stored memories and
        marked ``layer="working"``. It reaches the database only when promoted: by
        :meth:`promote`, or automatically once used ``config.working_promote_after`` times
        (recall hits and credited feedback). Over the session's cap the oldest entry is archived
        as a candidate episode (``working_overflow="archive"``) or dropped (``"drop"``).
        """
        self._live()
        lim = self.limits
        policy.check_type(type)
        sess = check_optional_name(session, "session", lim)
        if not sess:
            raise InvalidInputError("session is required for working memory: name the conversation or run it belongs to.")
        text = check_content(content, lim)
        ttl = check_title(title, lim) or derive_title(text)
        src = check_source(source)
        from .engine import embedding_text

        vec = self._embed([embedding_text(ttl, text)])[0]
        entry = WorkingEntry(
            id=self.working.new_id(), session=sess, scope=check_scope(scope, lim, self.config.default_scope), type=type,
            title=ttl, content=text, tags=check_tags(tags, lim), metadata=check_metadata(metadata, lim),
            importance=check_unit("importance", importance, 0.5), source_type=src.type, source_id=src.id,
            confidence=policy.SOURCE_CONFIDENCE[src.type], vector=np.asarray(vec, dtype=np.float32),
            words=words(f"{ttl} {text} {' '.join(check_tags(tags, lim))}"), nbytes=len(text.encode("utf-8")),
        )
        for existing in self.working.entries(sess):
            if existing.content == text and existing.scope == entry.scope:
                m = self._working_memory_model(existing)
                m.duplicate_of = existing.id
                return m
        self.working.add(entry)
        return self._working_memory_model(entry)

    def working_entries(self, session: str) -> list[Memory]:
        """The session's working entries, oldest first."""
        return [self._working_memory_model(e) for e in self.working.entries(session)]

    def working_entry(self, entry_id: str) -> Memory:
        """One working entry by its ``wm_…`` id (or, once promoted or archived, its stored memory)."""
        moved = self.working.moved.get(entry_id)
        if moved and self.working.find(entry_id) is None:
            return self.get(moved)
        return self._working_memory_model(self.working.get(entry_id))

    def clear_working(self, session: str) -> int:
        """Forget a session's working memory (nothing of it was written). Returns entries dropped."""
        return self.working.clear(session)

    def _working_memory_model(self, e: WorkingEntry) -> Memory:
        return Memory(
            id=e.id, type=e.type, title=e.title, content=e.content, status="active",  # type: ignore[arg-type]
            source=Source(type=e.source_type, id=e.source_id), scope=e.scope, session=e.session, tags=list(e.tags),  # type: ignore[arg-type]
            metadata=dict(e.metadata), confidence=e.confidence, usefulness=e.usefulness, importance=e.importance,
            access_count=e.uses, last_accessed_at=_ts(e.last_used_at), created_at=_ts(e.created_at),  # type: ignore[arg-type]
            updated_at=_ts(e.last_used_at or e.created_at), content_hash=content_hash(e.content),  # type: ignore[arg-type]
            tokens=0, layer="working",
        )

    def _write_entry(self, e: WorkingEntry, memory_type: str, status: str | None, extra_meta: dict) -> Memory:
        """Write a working entry to SQLite, reusing its vector. Identical stored content wins."""
        meta = {**e.metadata, **extra_meta}
        p = self._prepare(
            content=e.content, type=memory_type, title=e.title, source={"type": e.source_type, "id": e.source_id},
            tags=e.tags, metadata=meta, importance=e.importance, scope=e.scope, session=e.session, status=status,
        )
        with self.store.transaction() as conn:
            dup = self._find_duplicate(conn, p)
            mid = dup if dup is not None else self._insert(conn, p, e.vector, time.time())
        self.working.remove(e.id, moved_to=f"mem_{mid}")
        m = self.get(mid)
        if dup is not None:
            m.duplicate_of = m.id
        return m

    def _on_working_overflow(self, e: WorkingEntry) -> None:
        if self.config.working_overflow != "archive" or self._closed:
            return
        try:
            self._write_entry(e, "episode", "candidate", {"archived_from": "working"})
        except Exception:
            log.exception("Could not archive working entry %s", e.id)

    def promote(self, memory_id: str | int, layer: str | None = None, *, type: str | None = None,
                status: str | None = None) -> Memory:
        """Move a memory up a layer.

        A working entry (``wm_…``) is written to SQLite in ``layer`` (default: its type's layer)
        with the lifecycle status its source earns. A stored memory moves up from episodic to
        semantic or procedural (episodic -> semantic -> procedural) by taking a type of that layer
        (``type``, else the layer's default: fact, procedure); the move is recorded in its
        metadata (``promoted_from``).
        """
        self._live()
        if isinstance(memory_id, str) and memory_id.strip().startswith(WORKING_PREFIX):
            wid = memory_id.strip()
            e = self.working.find(wid)
            if e is None:
                moved = self.working.moved.get(wid)
                if moved:
                    return self.get(moved)
                self.working.get(wid)  # raises the not-found error
            assert e is not None
            target = policy.layer_of(e.type) if layer is None else policy.check_layer(layer, stored_only=True)
            mtype = policy.promotion_type(e.type, target, type)
            return self._write_entry(e, mtype, status, {"promoted_from": {"layer": "working", "uses": e.uses}})
        if layer is None:
            raise InvalidInputError("Name the layer to promote a stored memory to: semantic or procedural.")
        mid = parse_id(memory_id)
        cur = self.get(mid)
        policy.check_promotion(cur.layer or policy.layer_of(cur.type), layer)
        if cur.status in ("deprecated", "superseded"):
            raise InvalidTransitionError(f"mem_{mid} is {cur.status}; only live memories are promoted.")
        mtype = policy.promotion_type(cur.type, layer, type)
        meta = dict(cur.metadata)
        meta["promoted_from"] = {"layer": cur.layer, "type": cur.type, "at": time.time()}
        with self.store.transaction() as conn:
            conn.execute("UPDATE memories SET type = ?, metadata = ?, updated_at = ? WHERE id = ?",
                         (mtype, json.dumps(meta, ensure_ascii=False), time.time(), mid))
        return self.get(mid)

    def promote_working(self, session: str | None = None, min_uses: int | None = None) -> list[Memory]:
        """The automatic promotion pass: every working entry used at least ``min_uses`` times
        (default ``config.working_promote_after``) is written to its type's layer."""
        n = self.config.working_promote_after if min_uses is None else int(min_uses)
        if n <= 0:
            return []
        out = []
        for e in self.working.entries(session):
            if e.uses >= n:
                try:
                    out.append(self.promote(e.id))
                except Exception:
                    log.exception("Automatic promotion of %s failed", e.id)
        return out

    def _merge_working(self, hits: list[RecallHit], query: str, flt: "RecallFilter", limit: int, profile: str,
                       session: str, min_trust: float | None, min_score: float | None) -> list[RecallHit]:
        entries = [
            e for e in self.working.entries(session)
            if (flt.scopes is None or e.scope in flt.scopes) and (flt.types is None or e.type in flt.types)
            and (flt.tags is None or set(flt.tags) & set(e.tags))
        ]
        if not entries:
            return hits
        cfg = self.config
        qvec = self.retriever.query_cache.get(self.embedder, query)
        weights = cfg.profiles[profile]
        now = time.time()
        extra: list[RecallHit] = []
        for e, fusion, kr, vr, sim in rank_entries(
            entries, words(query), qvec, rrf_k=cfg.rrf_k, keyword_weight=cfg.keyword_weight,
            vector_weight=cfg.vector_weight, semantic_threshold=cfg.semantic_match_threshold,
        ):
            trust = round(policy.trust_score(e.source_type, 0, (now - e.created_at) / 86400.0, 0,
                                             cfg.trust_half_life_days), 4)
            if min_trust is not None and trust < min_trust:
                continue
            bd = ScoreBreakdown(
                keyword_rank=kr, vector_rank=vr, vector_similarity=round(sim, 6), fusion=fusion,
                status_factor=policy.STATUS_FACTOR["active"], profile_factor=weights.get(e.type, 1.0),
                quality=policy.quality(e.confidence, e.usefulness, e.importance),
            )
            bd.final = bd.fusion * bd.status_factor * bd.profile_factor * bd.quality * bd.contradiction_factor
            if min_score is not None and bd.final < min_score:
                continue
            reasons = (["keyword-match"] if kr else []) + (["semantic-match"] if sim >= cfg.semantic_match_threshold else [])
            extra.append(RecallHit(memory=self._working_memory_model(e), score=bd.final, rank=0,
                                   reasons=reasons + ["working-memory"], breakdown=bd, trust=trust))
        if not extra:
            return hits
        merged = sorted(hits + extra, key=lambda h: (-h.score, h.memory.id))[:limit]
        for r, h in enumerate(merged, start=1):
            h.rank = r
        return merged

    def _after_recall(self, retrieval_id: str, hits: list[RecallHit]) -> None:
        shown = [(h.memory.id, h.rank) for h in hits if h.memory.layer == "working"]
        if not shown:
            return
        wm = self.working
        wm.touch([i for i, _ in shown])
        with self._slm_lock:
            reg = self.__dict__["_working_shown"]
            reg[retrieval_id] = shown
            while len(reg) > 1000:
                reg.pop(next(iter(reg)))
        self.promote_working()

    @staticmethod
    def _split_working_ids(used: Sequence[str] | None) -> tuple[list | None, list[str] | None]:
        if used is None:
            return None, None
        if isinstance(used, str):
            used = [used]
        stored = [u for u in used if not (isinstance(u, str) and u.strip().startswith(WORKING_PREFIX))]
        work = [u.strip() for u in used if isinstance(u, str) and u.strip().startswith(WORKING_PREFIX)]
        return stored, work

    def _credit_working(self, retrieval_id: str, outcome: str, score: float | None, used: list[str] | None) -> None:
        if "_working" not in self.__dict__:
            return
        if used is None:
            credits = [(i, policy.rank_weight(rank - 1)) for i, rank in self.__dict__["_working_shown"].get(retrieval_id, [])]
        else:
            credits = [(i, 1.0) for i in used]
        if not credits:
            return
        target = policy.outcome_target(outcome, score)
        for wid, weight in credits:
            e = self.working.find(wid)
            if e is None:
                continue
            e.usefulness = policy.updated_usefulness(e.usefulness, target, weight, self.config.learning_rate)
            if target >= 0.5 and outcome != "failure":
                e.uses += 1
        self.promote_working()

    # == trust ===========================================================================================================
    def trust(self, memory_ids: Sequence[str | int]) -> dict[str, float]:
        """Trust score in [0.1, 1] of each memory (see policy.trust_score), computed now."""
        self._live()
        ids = [parse_id(i) for i in memory_ids]
        with self.store.reading() as conn:
            scores = trust_scores(conn, ids, half_life_days=self.config.trust_half_life_days)
        missing = [f"mem_{i}" for i in ids if i not in scores]
        if missing:
            raise MemoryNotFoundError(f"No memory {', '.join(missing)}.")
        return {f"mem_{i}": scores[i] for i in ids}

    def _slm_stats(self, stats, flt: "RecallFilter") -> None:
        where, params = flt.sql("m")
        by_type = stats.by_type  # counted by stats() under the same filter
        with self._reader().reading() as conn:
            # The trust distribution of the newest live memories: a bounded sample keeps stats
            # prompt on a store of any size (it reports how many it covered).
            ids = [r[0] for r in conn.execute(
                f"SELECT m.id FROM memories m WHERE {where} AND m.status IN ('candidate', 'validated', 'active') "
                f"ORDER BY m.id DESC LIMIT {TRUST_STATS_SAMPLE}", params)]
            scores = trust_scores(conn, ids, half_life_days=self.config.trust_half_life_days)
            stats.expired = conn.execute(
                f"SELECT count(*) FROM memories m WHERE {where} AND m.valid_until IS NOT NULL AND m.valid_until <= ? "
                "AND m.status IN ('candidate', 'validated', 'active')", [*params, time.time()]).fetchone()[0]
        layers = {name: 0 for name in policy.STORED_LAYERS}
        for t, n in by_type.items():
            layers[policy.TYPE_LAYER[t]] += n
        wstats = self.working.stats() if "_working" in self.__dict__ else {"sessions": 0, "entries": 0, "bytes": 0}
        stats.by_layer = {"working": wstats["entries"], **layers}
        stats.trust = trust_distribution(scores.values())
        stats.trust["sampled"] = len(scores)  # the newest live memories, at most TRUST_STATS_SAMPLE
        stats.working = wstats

    # == teams ===========================================================================================================
    def join_team(self, scope: str, team_scope: str) -> list[str]:
        """Make ``scope`` a member of ``team_scope``: recall with include_teams searches both.
        Returns the scope's team scopes."""
        self._live()
        s, t = self._team_pair(scope, team_scope)
        with self.store.transaction() as conn:
            conn.execute("INSERT OR IGNORE INTO scope_links (scope, team_scope, created_at) VALUES (?, ?, ?)",
                         (s, t, time.time()))
        return self.teams(s)

    def leave_team(self, scope: str, team_scope: str) -> list[str]:
        self._live()
        s, t = self._team_pair(scope, team_scope)
        with self.store.transaction() as conn:
            conn.execute("DELETE FROM scope_links WHERE scope = ? AND team_scope = ?", (s, t))
        return self.teams(s)

    def teams(self, scope: str) -> list[str]:
        """The team scopes ``scope`` belongs to."""
        self._live()
        s = check_scope(scope, self.limits, self.config.default_scope)
        with self.store.reading() as conn:
            return [r[0] for r in conn.execute(
                "SELECT team_scope FROM scope_links WHERE scope = ? ORDER BY team_scope", (s,))]

    def _team_pair(self, scope: str, team_scope: str) -> tuple[str, str]:
        s = check_scope(scope, self.limits, self.config.default_scope)
        t = check_scope(team_scope, self.limits, self.config.default_scope)
        if s == t:
            raise InvalidInputError("A scope cannot be its own team; name a separate team scope.")
        return s, t

    def _with_teams(self, scopes: tuple[str, ...] | None) -> tuple[str, ...] | None:
        if scopes is None:
            return None
        with self.store.reading() as conn:
            marks = ",".join("?" * len(scopes))
            teams = [r[0] for r in conn.execute(
                f"SELECT team_scope FROM scope_links WHERE scope IN ({marks}) ORDER BY scope, team_scope", list(scopes))]
        return tuple(dict.fromkeys([*scopes, *teams]))

    def share(self, memory_id: str | int, team_scope: str, *, join: bool = True) -> Memory:
        """Copy a memory from its (private) scope into ``team_scope``, linked ``derived_from`` the
        original (metadata ``shared_from``). The copy keeps type, title, tags, source and status
        policy; the original stays private. ``join`` (default) also makes the original's scope a
        member of the team, so its recall with include_teams sees the team's memories."""
        self._live()
        m = self.get(memory_id)
        s, t = self._team_pair(m.scope, team_scope)
        if m.status in ("deprecated", "superseded"):
            raise InvalidTransitionError(f"{m.id} is {m.status}; share a live memory.")
        meta = {**m.metadata, "shared_from": {"id": m.id, "scope": s}}
        copy = self.remember(
            m.content, type=m.type, title=m.title, source=m.source.model_dump(), tags=m.tags, metadata=meta,
            importance=m.importance, scope=t, valid_until=m.valid_until,
        )
        if copy.duplicate_of is None:
            with self.store.transaction() as conn:
                conn.execute(
                    "INSERT OR IGNORE INTO relations (from_id, to_id, type, confidence_effect, created_at) "
                    "VALUES (?, ?, 'derived_from', 0, ?)", (parse_id(copy.id), parse_id(m.id), time.time()))
        if join:
            self.join_team(s, t)
        return copy

    # == expiry ==========================================================================================================
    def clean_expired(self, action: str = "deprecate", *, scope: str | Sequence[str] | None = None,
                      now: float | None = None) -> list[str]:
        """Retire memories past their ``valid_until``: ``deprecate`` (default; they stay on record,
        reason "expired") or ``delete`` (hard delete, like forget). Returns the ids handled."""
        self._live()
        if action not in ("deprecate", "delete"):
            raise InvalidInputError("action must be 'deprecate' or 'delete'.")
        at = time.time() if now is None else float(now)
        flt = self._filter(scope, None, policy.DEFAULT_RECALL_STATUSES if action == "deprecate" else
                           ("candidate", "validated", "active", "deprecated", "superseded"), None, None)
        where, params = flt.sql("m")
        with self.store.reading() as conn:
            ids = [r[0] for r in conn.execute(
                f"SELECT m.id FROM memories m WHERE {where} AND m.valid_until IS NOT NULL AND m.valid_until <= ? ORDER BY m.id",
                [*params, at])]
        if not ids:
            return []
        if action == "delete":
            with self.store.transaction() as conn:
                for chunk in range(0, len(ids), 500):
                    part = ids[chunk : chunk + 500]
                    conn.execute(f"DELETE FROM memories WHERE id IN ({','.join('?' * len(part))})", part)
                self._prune_tombstones(conn)
        else:
            with self.store.transaction() as conn:
                for mid in ids:
                    meta = json.loads(conn.execute("SELECT metadata FROM memories WHERE id = ?", (mid,)).fetchone()[0])
                    meta["deprecated_reason"] = "expired"
                    conn.execute("UPDATE memories SET status = 'deprecated', metadata = ?, updated_at = ? WHERE id = ?",
                                 (json.dumps(meta, ensure_ascii=False), at, mid))
        return [f"mem_{i}" for i in ids]

    # == versions ========================================================================================================
    def revise(self, memory_id: str | int, new_content: str, *, title: str | None = None, source: Any = None,
               reason: str | None = None, tags: Sequence[str] | None = None, allow_unsafe: bool = False) -> Memory:
        """A new version of a memory. Versions are immutable: the new text becomes a new memory
        (same type, scope, session, tags, importance, expiry; metadata ``version`` and
        ``previous_id``) and the old one is marked superseded with ``superseded_by`` pointing at
        it. ``source`` defaults to the old version's. Returns the new version."""
        self._live()
        old = self.get(memory_id)
        if old.status == "superseded":
            raise InvalidTransitionError(
                f"{old.id} is already superseded by {old.superseded_by}; revise the newest version "
                f"(history({old.id}) lists them).")
        text = check_content(new_content, self.limits)
        if content_hash(text) == old.content_hash:
            raise InvalidInputError("The new content is the same as the current version; nothing to revise.")
        meta = {k: v for k, v in old.metadata.items() if not k.endswith("_reason")}
        meta.update({"version": int(old.metadata.get("version", 1)) + 1, "previous_id": old.id})
        src = check_source(source) if source is not None else old.source
        new_title = title if title is not None else (None if old.title == derive_title(old.content) else old.title)
        new = self.remember(
            text, type=old.type, title=new_title, source=src.model_dump(), tags=old.tags if tags is None else tags,
            metadata=meta, importance=old.importance, scope=old.scope, session=old.session,
            valid_until=old.valid_until,
        )
        if new.duplicate_of is not None:
            raise InvalidInputError(
                f"{new.id} already holds this text in scope {old.scope}; supersede {old.id} by it instead.")
        self.supersede(old.id, new.id, reason=reason or "revised", allow_unsafe=allow_unsafe)
        return self.get(new.id)

    def history(self, memory_id: str | int) -> list[Memory]:
        """Every version of a memory, oldest first, from any version's id (follows superseded_by
        both ways)."""
        self._live()
        mid = parse_id(memory_id)
        with self.store.reading() as conn:
            if conn.execute("SELECT 1 FROM memories WHERE id = ?", (mid,)).fetchone() is None:
                raise MemoryNotFoundError(f"No memory mem_{mid}.")
            older = [r[0] for r in conn.execute(
                "WITH RECURSIVE back(id, n) AS (SELECT ?, 0 UNION SELECT m.id, back.n + 1 FROM memories m "
                "JOIN back ON m.superseded_by = back.id WHERE back.n < 10000) SELECT id FROM back ORDER BY n DESC", (mid,))]
            newer = [r[0] for r in conn.execute(
                "WITH RECURSIVE fwd(id, n) AS (SELECT superseded_by, 1 FROM memories WHERE id = ? AND superseded_by IS NOT NULL "
                "UNION SELECT m.superseded_by, fwd.n + 1 FROM memories m JOIN fwd ON m.id = fwd.id "
                "WHERE m.superseded_by IS NOT NULL AND fwd.n < 10000) SELECT id FROM fwd ORDER BY n", (mid,))]
            chain = list(dict.fromkeys([*older, *newer]))
            found = load_memories(conn, chain)
        return [found[i] for i in chain if i in found]

    # == belief graph ====================================================================================================
    def beliefs(self, topic: str, depth: int = 2, *, scope: str | Sequence[str] | None = None, limit: int = 5,
                include_teams: bool = False, min_trust: float | None = None) -> BeliefGraph:
        """The belief neighbourhood of a topic: seed memories from recall, then every memory
        linked to them by causes / contradicts / supports / requires (both directions) within
        ``depth`` hops (at most 3), each with a belief confidence decayed x0.6 per hop. Only
        live, unexpired memories of the searched scopes take part."""
        self._live()
        if isinstance(depth, bool) or not isinstance(depth, int) or not 0 <= depth <= 3:
            raise InvalidInputError(f"depth must be 0, 1, 2 or 3, got {depth!r}.")
        r = self.recall(topic, limit=limit, scope=scope, include_teams=include_teams, min_trust=min_trust,
                        _kind="beliefs")
        flt = self._filter(scope, None, policy.DEFAULT_RECALL_STATUSES, None, None)
        scopes = self._with_teams(flt.scopes) if include_teams else flt.scopes
        seeds = {parse_id(h.memory.id): h.memory.confidence for h in r.memories}
        with self.store.reading() as conn:
            reached, edges = walk(conn, seeds, depth=depth, scopes=scopes, valid_at=time.time())
            mems = load_memories(conn, list(reached))
            trust = trust_scores(conn, list(reached), half_life_days=self.config.trust_half_life_days)
        nodes = []
        for mid, node in sorted(reached.items(), key=lambda kv: (kv[1].hops, -kv[1].confidence, kv[0])):
            if mid not in mems:
                continue
            if min_trust is not None and trust.get(mid, 0.0) < min_trust:
                continue
            nodes.append(BeliefNode(memory=mems[mid], hops=node.hops, confidence=round(node.confidence, 4),
                                    trust=trust.get(mid), via=None if node.via is None else f"mem_{node.via}",
                                    relation=node.relation))
        kept = {parse_id(n.memory.id) for n in nodes}
        return BeliefGraph(topic=r.query, retrieval_id=r.retrieval_id, nodes=nodes,
                           edges=[BeliefEdge(from_id=f"mem_{a}", to_id=f"mem_{b}", type=t)  # type: ignore[arg-type]
                                  for a, b, t in edges if a in kept and b in kept])

    def _belief_neighbours(self, hits: list[RecallHit], flt: "RecallFilter", limit: int,
                           min_trust: float | None = None) -> list[RecallHit]:
        """One hop along the belief graph from the stored hits; added after them, at most ``limit``."""
        seeds = {parse_id(h.memory.id): h.score for h in hits if h.memory.layer != "working"}
        if not seeds:
            return []
        with self.store.reading() as conn:
            reached, _ = walk(conn, seeds, depth=1, scopes=flt.scopes, valid_at=flt.valid_at)
            new = sorted((n for n in reached.values() if n.hops == 1), key=lambda n: (-n.confidence, n.id))
            mems = load_memories(conn, [n.id for n in new])
            trust = trust_scores(conn, [n.id for n in new], half_life_days=self.config.trust_half_life_days)
        out: list[RecallHit] = []
        start = len(hits)
        for n in new:
            m = mems.get(n.id)
            if m is None or (flt.types is not None and m.type not in flt.types):
                continue
            if min_trust is not None and trust.get(n.id, 0.0) < min_trust:
                continue
            if len(out) >= limit:
                break
            out.append(RecallHit(
                memory=m, score=n.confidence, rank=start + len(out) + 1, trust=trust.get(n.id),
                reasons=["belief-expansion", f"{n.relation}:mem_{n.via}", f"{m.status}-memory"],
                breakdown=ScoreBreakdown(fusion=0.0, final=n.confidence),
            ))
        return out

    # == behaviour capture ===============================================================================================
    def capture_behavior(self, agent_id: str, kind: str, description: str, *, outcome: str | None = None,
                         tool: str | None = None, scope: str | None = None, context: str | None = None) -> bool:
        """Record an agent's behaviour without blocking: ``kind`` is tool_choice, error_recovery
        or success_pattern. Arguments are checked now; the write happens on a background thread
        (``flush()`` waits for it). Each distinct (kind, tool, description) in a scope becomes one
        procedural memory, source agent ``agent_id``, metadata ``behavioral: true``; repeats add to
        its ``occurrences`` and ``outcomes`` counts instead of duplicating it. Returns False if the
        queue was full and the event was dropped."""
        self._live()
        lim = self.limits
        if kind not in BEHAVIOR_KINDS:
            raise InvalidInputError(f"kind must be one of {', '.join(BEHAVIOR_KINDS)}, got {kind!r}.")
        if outcome is not None and outcome not in BEHAVIOR_OUTCOMES:
            raise InvalidInputError(f"outcome must be one of {', '.join(BEHAVIOR_OUTCOMES)}, got {outcome!r}.")
        agent = check_optional_name(agent_id, "agent_id", lim)
        if not agent:
            raise InvalidInputError("agent_id is required: name the agent whose behaviour this is.")
        desc = check_content(description, lim, "description")
        event = BehaviorEvent(
            agent_id=agent, kind=kind, description=desc, outcome=outcome,
            tool=check_optional_name(tool, "tool", lim), scope=check_scope(scope, lim, self.config.default_scope),
            context=None if context is None else check_content(context, lim, "context")[:2000],
        )
        return self._behavior.submit(event)

    def flush(self, timeout: float | None = 10.0) -> bool:
        """Wait until queued behaviour events are written. True if everything was written in time."""
        rec = self.__dict__.get("_behavior_rec")
        return True if rec is None else rec.flush(timeout)

    def behavior_stats(self) -> dict[str, int]:
        """Behaviour events queued, written, failed and dropped in this process, and still pending."""
        rec = self.__dict__.get("_behavior_rec")
        if rec is None:
            return {"queued": 0, "written": 0, "failed": 0, "dropped": 0, "pending": 0}
        return {**rec.counts, "pending": rec.pending()}

    def _write_behavior(self, ev: BehaviorEvent) -> None:
        if self._closed:
            return
        label = BEHAVIOR_KINDS[ev.kind]
        content = f"{label}{f' ({ev.tool})' if ev.tool else ''}: {ev.description}"
        h = content_hash(content)
        now = ev.at
        with self.store.reading() as conn:
            row = conn.execute(
                "SELECT id FROM memories WHERE content_hash = ? AND scope = ? AND status != 'superseded' ORDER BY id LIMIT 1",
                (h, ev.scope)).fetchone()
        if row is None:
            meta = {"behavioral": True, "kind": ev.kind, "tool": ev.tool, "agent_id": ev.agent_id, "occurrences": 1,
                    "outcomes": {o: int(ev.outcome == o) for o in BEHAVIOR_OUTCOMES}, "last_seen": now}
            if ev.context:
                meta["context"] = ev.context
            m = self.remember(content, type="procedure", source={"type": "agent", "id": ev.agent_id}, metadata=meta,
                              scope=ev.scope, status="candidate", tags=["behavior", ev.kind.replace("_", "-")])
            if m.duplicate_of is None:
                return
            row = (parse_id(m.id),)
        with self.store.transaction() as conn:
            status, meta_text = conn.execute("SELECT status, metadata FROM memories WHERE id = ?", (row[0],)).fetchone()
            meta = json.loads(meta_text)
            meta["occurrences"] = int(meta.get("occurrences", 1)) + 1
            outcomes = meta.setdefault("outcomes", {o: 0 for o in BEHAVIOR_OUTCOMES})
            if ev.outcome:
                outcomes[ev.outcome] = int(outcomes.get(ev.outcome, 0)) + 1
            meta["last_seen"] = now
            meta["behavioral"] = True
            new_status = status
            # A pattern seen three times that works more often than not is confirmed.
            if status == "candidate" and meta["occurrences"] >= 3 and outcomes.get("success", 0) > outcomes.get("failure", 0):
                new_status = "validated"
            importance = min(0.9, 0.5 + 0.04 * (meta["occurrences"] - 1))
            conn.execute(
                "UPDATE memories SET metadata = ?, status = ?, importance = max(importance, ?), updated_at = ?, "
                "validated_at = CASE WHEN ? != status THEN ? ELSE validated_at END WHERE id = ?",
                (json.dumps(meta, ensure_ascii=False), new_status, importance, now, new_status, now, row[0]))

    # == concepts and auto-recall ========================================================================================
    def concepts(self, text: str, k: int = 8, *, summarizer: Summarizer | None = None) -> Concepts:
        """Key phrases and a short summary of ``text``. ``summarizer`` (e.g. an LLM through MCP
        sampling) is tried first; if it is missing, fails or returns nothing, the local
        extractor (RAKE-like phrases weighted by idf over the store's FTS index) answers."""
        self._live()
        body = check_content(text, self.limits, "text")
        if summarizer is not None:
            try:
                got = summarizer(body)
                if got is not None and got.concepts:
                    got.concepts = [c for c in got.concepts if c.strip()][:k]
                    return got
            except Exception as exc:  # never a hard dependency on an LLM
                log.info("Summarizer failed (%s); using the local extractor", exc)
        found = extract_concepts(body, k, self._doc_freq, self._doc_count())
        return Concepts(concepts=found, summary=summarize(body, found), method="local")

    def _doc_count(self) -> int:
        with self.store.reading() as conn:
            return conn.execute("SELECT count(*) FROM memories").fetchone()[0]

    def _doc_freq(self, terms: list[str]) -> dict[str, int]:
        """How many memories contain each term (FTS applies the same stemming as recall), one statement."""
        pairs = [(t, fts_query(t)) for t in terms]
        pairs = [(t, q) for t, q in pairs if q]
        if not pairs:
            return {}
        sql = " UNION ALL ".join("SELECT ?, (SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?)" for _ in pairs)
        params = [x for t, q in pairs for x in (t, q)]
        with self.store.reading() as conn:
            return {t: n for t, n in conn.execute(sql, params)}

    def auto_context(self, text: str, max_tokens: int = 2000, *, k: int = 8, format: str = "markdown",
                     summarizer: Summarizer | None = None, **recall_kwargs: Any) -> AutoContextResult:
        """Auto-recall for a long message or conversation: extract its concepts (sampling or the
        local extractor), recall with a query built from them, render the context."""
        c = self.concepts(text, k, summarizer=summarizer)
        query = concepts_query(c.concepts) or c.summary or text[:2000]
        r = self.build_context(query, max_tokens=max_tokens, format=format, **recall_kwargs)
        return AutoContextResult(context=r.context, retrieval_id=r.retrieval_id, memory_ids=r.memory_ids,
                                 tokens=r.tokens, query=query, concepts=c.concepts, summary=c.summary, method=c.method)

    # == recall hooks (called by Recallite.recall) =======================================================================
    def _slm_filter(self, flt: "RecallFilter", include_teams: bool, include_expired: bool) -> "RecallFilter":
        if include_teams:
            flt = dataclasses.replace(flt, scopes=self._with_teams(flt.scopes))
        if not include_expired:
            flt = dataclasses.replace(flt, valid_at=time.time())
        return flt
