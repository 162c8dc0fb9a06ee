"""The working layer: this process's short-lived, per-session memory (RAM only), merged
into recall for its session, credited by feedback, and promoted (written) once used often
enough or on request; ``promote`` also moves stored memories up a layer.

May import the plumbing, the write path (promotion writes through it), the catalog, policy,
working, models and validation; never the search, the facade or another service.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Sequence, overload

import numpy as np

from recallite_core.catalog import Catalog
from recallite_core.errors import InvalidInputError, InvalidTransitionError
from recallite_core.features.working import WorkingEntry, WorkingMemory, rank_entries, words
from recallite_core.models import Memory, RecallHit, ScoreBreakdown, Source
from recallite_core.plumbing import Plumbing
from recallite_core.policy import rules as policy
from recallite_core.retrieval.context import flag_warning
from recallite_core.text.injection import flags_for
from recallite_core.text.validation import (
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
from recallite_core.writer import Writer, embedding_text, redact_fields

if TYPE_CHECKING:
    from recallite_core.retrieval.candidates import RecallFilter

log = logging.getLogger("recallite.slm")

WORKING_PREFIX = "wm_"


@overload
def _ts(value: float) -> datetime: ...
@overload
def _ts(value: float | None) -> datetime | None: ...
def _ts(value: float | None) -> datetime | None:
    return None if value is None else datetime.fromtimestamp(value, tz=timezone.utc)


class WorkingLayer:
    """Working memory of one open ``Recallite``: created on first use, closed with it."""

    def __init__(self, core: Plumbing, catalog: Catalog, writer: Writer):
        self.core = core
        self.catalog = catalog
        self.writer = writer
        self._lock = threading.Lock()
        self._memory: WorkingMemory | None = None
        self._shown: dict[str, list[tuple[str, int]]] = {}  # retrieval id -> working entries shown, with ranks

    def memory(self) -> WorkingMemory:
        """This process's working memory (per session, never written unless promoted)."""
        if self._memory is None:
            with self._lock:
                if self._memory is None:
                    cfg = self.core.config
                    self._memory = WorkingMemory(cfg.working_max_entries, cfg.working_max_bytes, self._on_working_overflow)
        return self._memory

    def stats(self) -> dict[str, int]:
        """Sessions, entries and bytes held (zeros before the first use)."""
        return self._memory.stats() if self._memory is not None else {"sessions": 0, "entries": 0, "bytes": 0}

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
        self.core.live()
        lim = self.core.limits
        mtype = policy.check_type(type)
        sess = check_optional_name(session, "session", lim)
        if not sess:
            raise InvalidInputError("session is required for working memory: name the conversation or run it belongs to.")
        text = check_content(content, lim)
        ttl, tag_list, meta = check_title(title, lim), check_tags(tags, lim), check_metadata(metadata, lim)
        if self.core.config.redact_secrets:  # RAM only, but recalled and served like a stored memory
            text, ttl, tag_list, meta, _ = redact_fields(text, ttl, tags, tag_list, meta, lim)
        ttl = ttl or derive_title(text)
        src = check_source(source)
        # Instruction-like text is flagged as a stored memory's is: served as quoted data, ranked down.
        meta.pop("flagged", None)
        flags = flags_for([text, ttl, *tag_list], policy.trust_of(src.type))
        if flags:
            meta["flagged"] = flags
        vec = self.core.embed([embedding_text(ttl, text)])[0]
        entry = WorkingEntry(
            id=self.memory().new_id(), session=sess, scope=check_scope(scope, lim, self.core.config.default_scope), type=mtype,
            title=ttl, content=text, tags=tag_list, metadata=meta,
            importance=check_unit("importance", importance, 0.5), source_type=src.type, source_id=src.id,
            confidence=policy.SOURCE_CONFIDENCE[src.type], vector=np.asarray(vec, dtype=np.float32),
            words=words(f"{ttl} {text} {' '.join(tag_list)}"), nbytes=len(text.encode("utf-8")),
        )
        for existing in self.memory().entries(sess):
            if existing.content == text and existing.scope == entry.scope:
                m = self._working_memory_model(existing)
                m.duplicate_of = existing.id
                return m
        self.memory().add(entry)
        return self._working_memory_model(entry)

    def working_entries(self, session: str) -> list[Memory]:
        """The session's working entries, oldest first."""
        return [self._working_memory_model(e) for e in self.memory().entries(session)]

    def working_entry(self, entry_id: str) -> Memory:
        """One working entry by its ``wm_…`` id (or, once promoted or archived, its stored memory)."""
        moved = self.memory().moved.get(entry_id)
        if moved and self.memory().find(entry_id) is None:
            return self.catalog.get(moved)
        return self._working_memory_model(self.memory().get(entry_id))

    def clear_working(self, session: str) -> int:
        """Forget a session's working memory (nothing of it was written). Returns entries dropped."""
        return self.memory().clear(session)

    def _working_memory_model(self, e: WorkingEntry) -> Memory:
        return Memory(
            id=e.id, type=e.type, title=e.title, content=e.content, status="active",
            source=Source(type=e.source_type, id=e.source_id), scope=e.scope, session=e.session, tags=list(e.tags),
            metadata=dict(e.metadata), confidence=e.confidence, usefulness=e.usefulness, importance=e.importance,
            access_count=e.uses, last_accessed_at=_ts(e.last_used_at), created_at=_ts(e.created_at),
            updated_at=_ts(e.last_used_at or e.created_at), content_hash=content_hash(e.content),
            tokens=0, layer="working",
        )

    def _write_entry(self, e: WorkingEntry, memory_type: str, status: str | None, extra_meta: dict) -> Memory:
        """Write a working entry to SQLite, reusing its vector. Identical stored content wins."""
        meta = {**e.metadata, **extra_meta}
        p = self.writer.prepare(
            content=e.content, type=memory_type, title=e.title, source={"type": e.source_type, "id": e.source_id},
            tags=e.tags, metadata=meta, importance=e.importance, scope=e.scope, session=e.session, status=status,
        )
        # An episode is an event of its session, like one remember() writes: without a position
        # (and the sentence chunks of a long one) reconcile counts it as drift.
        plan = self.writer.turns.chunk_plans([p])[0]
        with self.core.store.transaction() as conn:
            dup = self.writer.find_duplicate(conn, p)
            if dup is None:
                mid = self.writer.insert(conn, p, e.vector, time.time())
                self.writer.after_insert(conn, mid, p, plan, None, None)
            else:
                mid = dup
        self.memory().remove(e.id, moved_to=f"mem_{mid}")
        m = self.catalog.get(mid)
        if dup is not None:
            m.duplicate_of = m.id
        return m

    def _on_working_overflow(self, e: WorkingEntry) -> None:
        if self.core.config.working_overflow != "archive" or self.core.closed:
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
        self.core.live()
        if isinstance(memory_id, str) and memory_id.strip().startswith(WORKING_PREFIX):
            wid = memory_id.strip()
            e = self.memory().find(wid)
            if e is None:
                moved = self.memory().moved.get(wid)
                if moved:
                    return self.catalog.get(moved)
                self.memory().get(wid)  # raises the not-found error
            assert e is not None
            target = policy.layer_of(e.type) if layer is None else policy.check_layer(layer, stored_only=True)
            mtype = policy.promotion_type(e.type, target, type)
            return self._write_entry(e, mtype, status, {"promoted_from": {"layer": "working", "uses": e.uses}})
        if layer is None:
            raise InvalidInputError("Name the layer to promote a stored memory to: semantic or procedural.")
        mid = parse_id(memory_id)
        cur = self.catalog.get(mid)
        policy.check_promotion(cur.layer or policy.layer_of(cur.type), layer)
        if cur.status in ("deprecated", "superseded"):
            raise InvalidTransitionError(f"mem_{mid} is {cur.status}; only live memories are promoted.")
        mtype = policy.promotion_type(cur.type, layer, type)
        meta = dict(cur.metadata)
        meta["promoted_from"] = {"layer": cur.layer, "type": cur.type, "at": time.time()}
        with self.core.store.transaction() as s:
            s.memories.retype(mid, mtype, json.dumps(meta, ensure_ascii=False), time.time())
        return self.catalog.get(mid)

    def promote_working(self, session: str | None = None, min_uses: int | None = None) -> list[Memory]:
        """The automatic promotion pass: every working entry used at least ``min_uses`` times
        (default ``config.working_promote_after``) is written to its type's layer."""
        n = self.core.config.working_promote_after if min_uses is None else int(min_uses)
        if n <= 0:
            return []
        out = []
        for e in self.memory().entries(session):
            if e.uses >= n:
                try:
                    out.append(self.promote(e.id))
                except Exception:
                    log.exception("Automatic promotion of %s failed", e.id)
        return out

    def merge_working(self, hits: list[RecallHit], query: str, flt: "RecallFilter", limit: int, profile: str,
                       session: str, min_trust: float | None, min_score: float | None) -> list[RecallHit]:
        entries = [
            e for e in self.memory().entries(session)
            if (flt.scopes is None or e.scope in flt.scopes) and (flt.types is None or e.type in flt.types)
            and (flt.tags is None or set(flt.tags) & set(e.tags))
        ]
        if not entries:
            return hits
        cfg = self.core.config
        qvec = self.core.retriever.query_cache.get(self.core.embedder, query)
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
                status_factor=policy.status_factor("active", bool(e.metadata.get("flagged"))),
                profile_factor=weights.get(e.type, 1.0),
                quality=policy.quality(e.confidence, e.usefulness, e.importance),
            )
            bd.final = bd.fusion * bd.status_factor * bd.profile_factor * bd.quality * bd.contradiction_factor
            if min_score is not None and bd.final < min_score:
                continue
            reasons = (["keyword-match"] if kr else []) + (["semantic-match"] if sim >= cfg.semantic_match_threshold else [])
            flagged = e.metadata.get("flagged")
            extra.append(RecallHit(memory=self._working_memory_model(e), score=bd.final, rank=0,
                                   reasons=reasons + ["working-memory"], breakdown=bd, trust=trust,
                                   warnings=[flag_warning([str(f) for f in flagged])] if flagged else []))
        if not extra:
            return hits
        merged = sorted(hits + extra, key=lambda h: (-h.score, h.memory.id))[:limit]
        for r, h in enumerate(merged, start=1):
            h.rank = r
        return merged

    def after_recall(self, retrieval_id: str, hits: list[RecallHit]) -> None:
        shown = [(h.memory.id, h.rank) for h in hits if h.memory.layer == "working"]
        if not shown:
            return
        wm = self.memory()
        wm.touch([i for i, _ in shown])
        with self._lock:
            reg = self._shown
            reg[retrieval_id] = shown
            while len(reg) > 1000:
                reg.pop(next(iter(reg)))
        self.promote_working()

    @staticmethod
    def split_working_ids(used: Sequence[str] | None) -> tuple[list | None, list[str] | None]:
        if used is None:
            return None, None
        if isinstance(used, str):
            used = [used]
        stored = [u for u in used if not (isinstance(u, str) and u.strip().startswith(WORKING_PREFIX))]
        work = [u.strip() for u in used if isinstance(u, str) and u.strip().startswith(WORKING_PREFIX)]
        return stored, work

    def credit_working(self, retrieval_id: str, outcome: str, score: float | None, used: list[str] | None) -> None:
        if self._memory is None:
            return
        if used is None:
            credits = [(i, policy.rank_weight(rank - 1)) for i, rank in self._shown.get(retrieval_id, [])]
        else:
            credits = [(i, 1.0) for i in used]
        if not credits:
            return
        target = policy.outcome_target(outcome, score)
        for wid, weight in credits:
            e = self.memory().find(wid)
            if e is None:
                continue
            e.usefulness = policy.updated_usefulness(e.usefulness, target, weight, self.core.config.learning_rate)
            if target >= 0.5 and outcome != "failure":
                e.uses += 1
        self.promote_working()
