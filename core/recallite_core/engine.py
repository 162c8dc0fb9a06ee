"""The public facade: ``Recallite``. Plain synchronous Python, safe to call from threads."""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import sqlite3
import statistics
import time
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from . import corrections, policy
from .codec import encode_many, encode_vector
from .config import RecalliteConfig
from .context import render
from .embedder import Embedder, resolve_embedder
from .episodes import ConversationMemory, check_category, check_names, check_orphans, check_role
from .injection import flags_for
from .learning import Learning
from .errors import (
    ClosedError,
    EmbedderMismatchError,
    InvalidInputError,
    InvalidTransitionError,
    MemoryNotFoundError,
    RetrievalNotFoundError,
    StoreError,
    TrustPolicyError,
)
from .redaction import redact_text, redact_value
from .models import (
    CONTEXT_FORMATS,
    MEMORY_TYPES,
    OUTCOMES,
    RELATION_TYPES,
    STATUSES,
    ConsolidationGroup,
    ContextResult,
    EpisodeInfo,
    FeedbackResult,
    ForgetResult,
    Memory,
    RecallResult,
    Relation,
    RelationCounts,
    Stats,
    UsefulnessChange,
)
from .promotion import promote_earned
from .reconcile import Reconciler
from .retriever import RecallFilter, Retriever
from .slm import SlmLite
from .rows import SELECT_MEMORIES, load_memories, memory_from_select, new_memory, ts
from .episode_windows import rebuild_windows
from .store import Store, _explain
from .tokens import estimate_tokens
from .validation import (
    check_content,
    check_limit,
    check_metadata,
    check_optional_name,
    check_query,
    check_scope,
    check_source,
    check_tags,
    check_title,
    check_unit,
    check_valid_until,
    content_hash,
    derive_title,
    fmt_id,
    parse_id,
)
from .scan_workers import ScanPool, WorkerOptions
from .vector_index import VectorIndex

log = logging.getLogger("recallite")

Progress = Callable[[int, int], None]


_ITEM_FIELDS = frozenset({
    "content", "type", "title", "source", "tags", "metadata", "importance", "scope", "session", "status",
    "allow_unsafe_status_override", "confidence", "valid_until", "redact_secrets", "category", "cites",
})


class _Prepared:
    """A validated memory ready to insert."""

    __slots__ = ("type", "title", "content", "status", "source", "scope", "session", "tags", "metadata",
                 "confidence", "importance", "hash", "tokens", "embed_text", "valid_until", "redactions")

    def __init__(self, *, type, title, content, status, source, scope, session, tags, metadata, confidence,
                 importance, hash, tokens, embed_text, valid_until, redactions):
        self.type, self.title, self.content, self.status, self.source = type, title, content, status, source
        self.scope, self.session, self.tags, self.metadata, self.confidence = scope, session, tags, metadata, confidence
        self.importance, self.hash, self.tokens, self.embed_text = importance, hash, tokens, embed_text
        self.valid_until, self.redactions = valid_until, redactions


def embedding_text(title: str, content: str) -> str:
    """What the embedder sees for a memory: the title when it adds words, then the content."""
    if title and not content.lower().startswith(title.rstrip("…").lower()):
        return f"{title}. {content}"
    return content


class Recallite(ConversationMemory, Reconciler, SlmLite):
    """Persistent, outcome-aware agent memory in one SQLite file.

    Open with :meth:`open`. Every public write is one transaction; every method is safe to
    call from several threads (calls are serialised on one connection).
    """

    def __init__(self, store: Store, embedder: Embedder, config: RecalliteConfig | None = None):
        self.store = store
        self.embedder = embedder
        self.config = config or RecalliteConfig()
        self.index = VectorIndex(embedder.dimensions)
        self.scan_pool: ScanPool | None = None
        options = WorkerOptions.parse(self.config.workers)
        if options is not None and store.path is not None:  # in-memory stores always scan inline
            # Lazy: no process starts until a recall is big enough for the pool.
            self.scan_pool = ScanPool(store.path, embedder.dimensions, options, busy_timeout_ms=store.busy_timeout_ms)
        self.retriever = Retriever(store, embedder, self.index, self.config, self.scan_pool)
        self.learning = Learning(store, embedder, self.config.learning, self.config.outcome_gain)
        self.retriever.learning = self.learning.outcomes
        self._closed = False

    # -- opening and closing ----------------------------------------------------------------
    @classmethod
    def open(
        cls,
        path: str | None = None,
        *,
        embedder: "str | Embedder | Callable | None" = "default",
        dims: int | None = None,
        config: RecalliteConfig | None = None,
        on_embedder_mismatch: str = "error",
        workers: Any = None,
    ) -> "Recallite":
        """Open (creating if needed) the store at ``path``; ``None`` or ":memory:" is a private in-memory store.

        ``embedder``: "default" (MiniLM ONNX, offline; hash fallback with a warning),
        "hash", "onnx", an Embedder object, or a callable ``texts -> vectors`` with ``dims``.
        ``on_embedder_mismatch``: "error" (default) or "reindex" when the file was embedded
        with another model.
        ``workers``: vector scans in worker processes for large file stores: False, True,
        "auto" or a dict of options (see ``scan_workers.WorkerOptions``); None keeps
        ``config.workers`` (default False).
        """
        config = config or RecalliteConfig()
        if workers is not None:
            config = dataclasses.replace(config, workers=workers)
        WorkerOptions.parse(config.workers)  # a typo fails here, before the file is touched
        emb = resolve_embedder(embedder, dims)
        store = Store(path, busy_timeout_ms=config.busy_timeout_ms)
        try:
            mem = cls(store, emb, config)
            mem._check_embedder(on_embedder_mismatch)
            mem.learning.ensure_task_vectors()
        except BaseException:
            store.close()
            raise
        return mem

    def _check_embedder(self, on_mismatch: str) -> None:
        name, dims = self.store.get_meta("embedder"), self.store.get_meta("dimensions")
        ours = (self.embedder.name, str(self.embedder.dimensions))
        if (name, dims) == ours:
            return
        with self.store.reading() as conn:
            vectors = conn.execute("SELECT count(*) FROM vectors").fetchone()[0]
        if name is None or vectors == 0:
            with self.store.transaction() as conn:
                self.store.set_meta(conn, "embedder", ours[0])
                self.store.set_meta(conn, "dimensions", ours[1])
            return
        if on_mismatch == "reindex":
            self.reindex()
            return
        raise EmbedderMismatchError(
            f"{self.store.path or 'This store'} was embedded with {name} ({dims} dimensions); this process uses "
            f"{ours[0]} ({ours[1]} dimensions). Open it with the same embedder, or re-embed every memory with "
            f"the new one: `recallite-mcp reindex --db {self.store.path or '<db>'}` "
            "(Python: Recallite.open(path, embedder=..., on_embedder_mismatch='reindex'))."
        )

    def close(self, drain_timeout: float = 5.0) -> None:
        """Close the store. Scans in the worker pool get up to ``drain_timeout`` seconds to
        finish (later ones raise ScanAbortedError), then the workers stop."""
        if not self._closed:
            self._slm_close()  # drain queued behaviour events first
            self._closed = True
            try:
                if self.scan_pool is not None:
                    self.scan_pool.close(drain_timeout=drain_timeout)
                self.retriever.close()
            finally:
                reader = self.__dict__.get("_read_store")
                if reader is not None:
                    reader.close()
                self.store.close()

    def __enter__(self) -> "Recallite":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _live(self) -> None:
        if self._closed:
            raise ClosedError("This Recallite is closed. Open it again with Recallite.open(path).")

    @property
    def limits(self):
        return self.config.limits

    # -- writing memories -------------------------------------------------------------------------
    def _prepare(
        self,
        *,
        content: Any,
        type: str = "observation",
        title: Any = None,
        source: Any = None,
        tags: Any = None,
        metadata: Any = None,
        importance: Any = None,
        scope: Any = None,
        session: Any = None,
        status: str | None = None,
        allow_unsafe_status_override: bool = False,
        confidence: Any = None,
        valid_until: Any = None,
        redact_secrets: bool | None = None,
    ) -> _Prepared:
        lim = self.limits
        if not isinstance(type, str):
            raise InvalidInputError(f"type must be one of {', '.join(MEMORY_TYPES)}.")
        policy.check_type(type)
        text = check_content(content, lim)
        src = check_source(source)
        # Secrets are replaced before hashing, embedding and FTS, so they never reach the file.
        redactions: list[str] = []
        ttl, tag_list, meta = check_title(title, lim), check_tags(tags, lim), check_metadata(metadata, lim)
        if self.config.redact_secrets if redact_secrets is None else bool(redact_secrets):
            text, redactions = redact_text(text)
            if ttl:
                ttl = redact_value(ttl, redactions)
            if tag_list:  # redact the tags as given (before lower-casing hides an AKIA... key)
                found = len(redactions)
                redacted_tags = redact_value(tags, redactions)
                if len(redactions) > found:  # else the same tags as checked above
                    tag_list = check_tags(redacted_tags, lim)
            if meta:
                meta = redact_value(meta, redactions)
        ttl = ttl or derive_title(text)
        if status is not None and not isinstance(status, str):
            raise InvalidInputError(f"status must be one of {', '.join(STATUSES)}.")
        st = policy.initial_status(type, src.type, status, allow_unsafe_status_override)
        # Instruction-like text is flagged (metadata "flagged", reserved) and waits as a candidate.
        meta.pop("flagged", None)
        trust = policy.trust_of(src.type)
        flags = flags_for([text, ttl, *tag_list], trust)
        if flags:
            meta["flagged"] = flags
            if trust != policy.TRUSTED and not allow_unsafe_status_override:
                st = "candidate"
        conf = check_unit("confidence", confidence, policy.SOURCE_CONFIDENCE[src.type])
        if confidence is not None and trust != policy.TRUSTED and not allow_unsafe_status_override:
            conf = min(conf, policy.SOURCE_CONFIDENCE[src.type])  # untrusted text cannot vouch for itself
        return _Prepared(
            type=type,
            title=ttl,
            content=text,
            status=st,
            source=src,
            scope=check_scope(scope, lim, self.config.default_scope),
            session=check_optional_name(session, "session", lim),
            tags=tag_list,
            metadata=meta,
            confidence=conf,
            importance=check_unit("importance", importance, 0.5),
            hash=content_hash(text),
            tokens=estimate_tokens(text) + estimate_tokens(ttl),
            embed_text=embedding_text(ttl, text),
            valid_until=check_valid_until(valid_until),
            redactions=redactions,
        )

    def _embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.empty((0, self.embedder.dimensions), dtype=np.float32)
        out = []
        bs = max(1, self.config.embed_batch_size) * 16
        for i in range(0, len(texts), bs):
            out.append(np.asarray(self.embedder.embed(texts[i : i + bs]), dtype=np.float32))
        vecs = np.vstack(out)
        if vecs.shape != (len(texts), self.embedder.dimensions):
            raise EmbedderMismatchError(
                f"The embedder returned shape {vecs.shape}; expected ({len(texts)}, {self.embedder.dimensions})."
            )
        return vecs

    def _insert(self, conn, p: _Prepared, vector: np.ndarray, now: float, extra: dict | None = None) -> int:
        return self._insert_many(conn, [(p, vector, extra)], now)[0]

    def _insert_many(self, conn, rows: Sequence[tuple[_Prepared, np.ndarray, dict | None]], now: float) -> list[int]:
        """Insert memories with their vectors (caller holds the write transaction).

        A few statements for the whole batch: ids are taken after the largest ever used
        (AUTOINCREMENT semantics, we hold the write lock) and every row is stamped with one
        bump of the change counter, so the per-row seq triggers skip them (migration 0006)
        and so does the FTS trigger: one INSERT ... SELECT indexes the batch (migration 0009)."""
        if not rows:
            return []
        conn.execute("UPDATE counters SET value = value + 1 WHERE name = 'changes'")
        seq = conn.execute("SELECT value FROM counters WHERE name = 'changes'").fetchone()[0]
        top = conn.execute(
            "SELECT max(coalesce((SELECT max(id) FROM memories), 0), "
            "coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'memories'), 0))"
        ).fetchone()[0]
        ids = list(range(top + 1, top + 1 + len(rows)))
        dims = self.embedder.dimensions
        vectors = [v for _, v, _ in rows]
        try:
            matrix = np.stack(vectors)
        except ValueError:  # ragged: let the per-vector check name the problem
            blobs = [encode_vector(v, dims) for v in vectors]
        else:
            blobs = encode_many(matrix, dims) if matrix.ndim == 2 else [encode_vector(v, dims) for v in vectors]
        dumps = json.dumps
        mem_rows = []
        redacted: dict[str, int] = {}
        for mid, (p, _, extra) in zip(ids, rows):
            if extra:
                counts = (extra.get("usefulness", 0.5), extra.get("success_count", 0), extra.get("failure_count", 0),
                          extra.get("access_count", 0), extra.get("last_accessed_at"), extra.get("created_at", now),
                          extra.get("updated_at", now))
            else:
                counts = (0.5, 0, 0, 0, None, now, now)
            mem_rows.append((
                mid, p.type, p.title, p.content, p.status, p.source.type, p.source.id, p.scope, p.session,
                dumps(p.tags, ensure_ascii=False), dumps(p.metadata, ensure_ascii=False) if p.metadata else "{}",
                p.confidence, counts[0], p.importance, *counts[1:], p.hash, p.tokens, p.valid_until, seq,
            ))
            for kind in p.redactions:
                redacted[kind] = redacted.get(kind, 0) + 1
        conn.executemany(
            "INSERT INTO memories (id, type, title, content, status, source_type, source_id, scope, session, tags, "
            "metadata, confidence, usefulness, importance, success_count, failure_count, access_count, "
            "last_accessed_at, created_at, updated_at, content_hash, tokens, valid_until, seq) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            mem_rows,
        )
        conn.execute("INSERT INTO memories_fts(rowid, title, content, tags) "
                     "SELECT id, title, content, tags FROM memories WHERE id BETWEEN ? AND ?", (ids[0], ids[-1]))
        conn.executemany("INSERT INTO vectors (memory_id, vector, seq) VALUES (?, ?, ?)",
                         [(mid, blob, seq) for mid, blob in zip(ids, blobs)])
        if redacted:
            conn.executemany(
                "INSERT INTO redactions (kind, count) VALUES (?, ?) "
                "ON CONFLICT(kind) DO UPDATE SET count = count + excluded.count", list(redacted.items()))
        return ids

    def _find_duplicate(self, conn, p: _Prepared) -> int | None:
        """An identical memory in the scope, one that is not superseded first. A superseded one counts
        too: the stale text sent again (an agent re-reading an old note) must not come back as a new
        memory that would supersede its own correction; restore() brings the old one back."""
        row = conn.execute(
            "SELECT id FROM memories WHERE content_hash = ? AND scope = ? ORDER BY status = 'superseded', id LIMIT 1",
            (p.hash, p.scope),
        ).fetchone()
        return row[0] if row else None

    def _find_duplicates(self, conn, prepared: Sequence[_Prepared]) -> list[int | None]:
        """_find_duplicate for many at once: one indexed query per 500 hashes."""
        best: dict[tuple[str, str], tuple[bool, int]] = {}
        hashes = list({p.hash for p in prepared})
        for i in range(0, len(hashes), 500):
            chunk = hashes[i : i + 500]
            for mid, h, sc, stale in conn.execute(
                f"SELECT id, content_hash, scope, status = 'superseded' FROM memories "
                f"WHERE content_hash IN ({','.join('?' * len(chunk))})",
                chunk,
            ):
                key = (bool(stale), mid)
                if (h, sc) not in best or key < best[(h, sc)]:
                    best[(h, sc)] = key
        return [best[(p.hash, p.scope)][1] if (p.hash, p.scope) in best else None for p in prepared]

    def remember(
        self,
        content: str | None = None,
        *,
        type: str = "observation",
        title: str | None = None,
        source: Any = None,
        tags: Sequence[str] | None = None,
        metadata: dict | None = None,
        importance: float | None = None,
        scope: str | None = None,
        session: str | None = None,
        status: str | None = None,
        allow_unsafe_status_override: bool = False,
        confidence: float | None = None,
        category: str | None = None,
        cites: Sequence[str | int] | None = None,
        valid_until: Any = None,
        redact_secrets: bool | None = None,
    ) -> Memory:
        """Store one memory. Identical content in the same scope returns the existing one (``duplicate_of`` set).

        ``source`` (default ``{"type": "user"}``) decides trust: llm and imported memories start
        as candidates whatever ``status`` asks, unless ``allow_unsafe_status_override``.
        ``category``: an optional label recall(categories=...) filters on. ``cites``: ids of the
        conversation turns (episodes) it came from, see :meth:`why` (also added to a duplicate).
        An ``episode`` stored here is an event of its session (role ``event``); use
        :meth:`record_turn` for conversation turns.
        ``valid_until`` (datetime, ISO string or epoch seconds): after it the memory leaves default recall.
        Secrets in content, title, tags and metadata are stored as ``[REDACTED:kind]`` unless
        ``redact_secrets=False`` (default: ``config.redact_secrets``). Instruction-like text
        gets ``metadata["flagged"]`` and, from a non-trusted source, stays a candidate.
        """
        self._live()
        p = self._prepare(
            content=content, type=type, title=title, source=source, tags=tags, metadata=metadata,
            importance=importance, scope=scope, session=session, status=status,
            allow_unsafe_status_override=allow_unsafe_status_override, confidence=confidence,
            valid_until=valid_until,
            redact_secrets=redact_secrets,
        )
        cat = check_category(category)
        cited = None if cites is None else [parse_id(c) for c in ([cites] if isinstance(cites, (str, int)) else cites)]
        with self.store.reading() as conn:
            dup = self._find_duplicate(conn, p)
        if dup is not None:
            return self._remembered_again(dup, cat, cited)
        vec = self._embed([p.embed_text])[0]
        plan = self._chunk_plans([p])[0]
        with self.store.transaction() as conn:
            dup = self._find_duplicate(conn, p)  # another thread or process may have won the race
            if dup is None:
                found = self._corrections(conn, [(p, vec)])[0]
                mid = self._insert(conn, p, vec, time.time())
                self._after_insert(conn, mid, p, plan, cat, cited)
                self._apply_corrections(conn, mid, found)
        if dup is not None:
            return self._remembered_again(dup, cat, cited)
        return _with_corrections(self.get(mid), found)

    def _after_insert(self, conn, mid: int, p: _Prepared, plan: list, category: str | None, cites: list[int] | None) -> None:
        """Conversation memory of a new memory: episode position, chunks, category, citations."""
        self._after_insert_many(conn, [(mid, p, plan, category, cites)], time.time())

    def _after_insert_many(self, conn, new: Sequence[tuple[int, _Prepared, list, str | None, list[int] | None]],
                           now: float) -> dict[int, EpisodeInfo]:
        """_after_insert for a batch of new memories (id, prepared, chunk plan, category, cites),
        in statements per batch rather than per memory. Returns the position of each episode."""
        events = [(mid, p, "event", now) for mid, p, *_ in new if p.type == "episode"]
        positions = self._register_episodes(conn, events) if events else {}
        chunks = [(mid, plan) for mid, _, plan, *_ in new if plan]
        if chunks:
            self._write_chunks_many(conn, chunks)
        categories = [(mid, category) for mid, _, _, category, _ in new if category]
        if categories:
            conn.executemany(
                "INSERT INTO memory_categories (memory_id, category) VALUES (?, ?) "
                "ON CONFLICT(memory_id) DO UPDATE SET category = excluded.category", categories)
        for mid, _, _, _, cites in new:
            if cites:
                self._cite(conn, mid, cites)
        at = ts(now)
        return {mid: EpisodeInfo(session=p.session or None, role="event", seq=positions[mid], timestamp=at)
                for mid, p, *_ in new if mid in positions}

    def _remembered_again(self, dup: int, category: str | None, cites: list[int] | None) -> Memory:
        if cites or category:
            with self.store.transaction() as conn:
                if cites:
                    self._cite(conn, dup, cites)
                if category and conn.execute("SELECT 1 FROM memory_categories WHERE memory_id = ?", (dup,)).fetchone() is None:
                    self._set_category(conn, dup, category)
        return _sent_again(self.get(dup))

    # -- corrections (corrections.py) ---------------------------------------------------------------
    def _corrections(self, conn, items: Sequence[tuple[_Prepared, np.ndarray]]) -> list[list[corrections.Finding]]:
        """For each new memory (in write order), the stored memories of its scope, and the earlier
        ones of the same batch, whose value it changes. Read in the write transaction, before the
        batch is inserted; an earlier item of the batch is named by its position as -(k + 1)."""
        cfg = self.config
        out: list[list[corrections.Finding]] = [[] for _ in items]
        if not cfg.corrections or not items:
            return out
        k = max(1, cfg.correction_candidates)
        wanted: list[tuple[int, list[int]]] = []
        for n, (p, vec) in enumerate(items):
            if p.type in corrections.COMPARED_TYPES:
                wanted.append((n, corrections.nearest(self.retriever, conn, vec, p.scope, k, cfg.correction_min_similarity)))
        ids = sorted({i for _, c in wanted for i in c})
        stored: dict[int, corrections.Stored] = {}
        for i in range(0, len(ids), 500):
            chunk = ids[i : i + 500]
            for mid, content, src, meta, mtype in conn.execute(
                    f"SELECT id, content, source_type, metadata, type FROM memories WHERE id IN ({','.join('?' * len(chunk))})",
                    chunk):
                stored[mid] = corrections.Stored(mid, content, _effective_source(src, meta), mtype)
        vecs = np.array([v for _, v in items], dtype=np.float32)
        for n, cands in wanted:
            p = items[n][0]
            # A new version (revise) or a merge (consolidate) already says what it relates to.
            named = {parse_id(x) for x in [p.metadata.get("previous_id"), *p.metadata.get("consolidated_from", [])]
                     if isinstance(x, str) and x.startswith("mem_")}
            pool = [stored[i] for i in cands if i in stored and i not in named]
            # Earlier memories of the same batch and scope, nearest first.
            earlier = [j for j in range(n) if items[j][0].scope == p.scope and items[j][0].type in corrections.COMPARED_TYPES]
            if earlier:
                sims = vecs[earlier] @ vecs[n]
                near = [earlier[j] for j in np.argsort(-sims)[:k].tolist() if sims[j] >= cfg.correction_min_similarity]
                pool += [corrections.Stored(-(j + 1), items[j][0].content,
                                            _effective_source(items[j][0].source.type, json.dumps(items[j][0].metadata)),
                                            items[j][0].type)
                         for j in near]
            out[n] = corrections.findings(p.content, _effective_source(p.source.type, json.dumps(p.metadata)), p.type, pool)
        return out

    def _apply_corrections(self, conn, new_id: int, found: list[corrections.Finding],
                           batch: dict[int, int] | None = None) -> None:
        """Supersede or link what a new memory changes (caller holds the write transaction)."""
        for f in found:
            old = f.old_id if f.old_id > 0 else (batch or {}).get(-f.old_id - 1)
            if old is None:
                continue
            status = conn.execute("SELECT status FROM memories WHERE id = ?", (old,)).fetchone()
            if status is None or status[0] not in corrections.LIVE:
                continue  # an earlier write of this batch retired it already
            if f.action == "supersede":
                self._supersede(conn, old, new_id, f"detected: {f.why}", allow_unsafe=False, auto=True)
            else:
                # An untrusted writer's contradiction warns without demoting (as relate() does).
                row = conn.execute("SELECT source_type, metadata FROM memories WHERE id = ?", (new_id,)).fetchone()
                effect = policy.SOURCE_TRUST[_effective_source(*row)] != policy.UNTRUSTED
                conn.execute(
                    "INSERT OR IGNORE INTO relations (from_id, to_id, type, confidence_effect, created_at) "
                    "VALUES (?, ?, 'contradicts', ?, ?)", (new_id, old, int(effect), time.time()))

    def undo_supersede(self, memory_id: str | int, *, by: Any = None) -> Memory:
        """Undo a supersede (detected or by hand): the memory returns to the status it had, its
        ``superseded_by`` and the supersedes link are removed. Returns it. ``by``: who asks, checked
        like any lifecycle change (an untrusted actor cannot put a memory back in force)."""
        self._live()
        mid = parse_id(memory_id)
        actor = None if by is None else check_source(by)
        with self.store.transaction() as conn:
            row = conn.execute("SELECT status, superseded_by, metadata, source_type FROM memories WHERE id = ?",
                               (mid,)).fetchone()
            if row is None:
                raise MemoryNotFoundError(f"No memory mem_{mid}.")
            status, by_id, meta, source_type = row
            if status != "superseded":
                raise InvalidTransitionError(f"mem_{mid} is {status}, not superseded; nothing to undo.")
            m = json.loads(meta)
            back = m.pop("superseded_from", "active")
            if actor is not None:
                policy.check_actor(actor.type, back, _effective_source(source_type, meta), f"mem_{mid}")
            m.pop("superseded_reason", None)
            conn.execute("UPDATE memories SET status = ?, superseded_by = NULL, metadata = ?, updated_at = ? WHERE id = ?",
                         (back, json.dumps(m, ensure_ascii=False), time.time(), mid))
            if by_id is not None:
                conn.execute("DELETE FROM relations WHERE from_id = ? AND to_id = ? AND type = 'supersedes'", (by_id, mid))
        return self.get(mid)

    def resolve_conflict(self, memory_id: str | int, other_id: str | int, keep: str | int = "both", *,
                         by: Any = None) -> list[Memory]:
        """Settle a contradiction between two memories: ``keep`` names the one that holds (the other
        is superseded by it), or ``"both"`` when they state different things (the link is removed,
        with the warnings it gave). Returns both memories."""
        self._live()
        a, b = parse_id(memory_id), parse_id(other_id)
        if keep == "both":
            if by is not None:  # ending a conflict clears both warnings: it vouches, like validate
                policy.check_actor(check_source(by).type, "validated", "user", f"mem_{a} and mem_{b}")
            with self.store.transaction() as conn:
                gone = conn.execute("DELETE FROM relations WHERE type = 'contradicts' AND ((from_id = ? AND to_id = ?) "
                                    "OR (from_id = ? AND to_id = ?))", (a, b, b, a)).rowcount
            if not gone:
                raise InvalidInputError(f"mem_{a} and mem_{b} are not linked as contradicting; nothing to resolve.")
            return self.get_many([a, b])
        winner = parse_id(keep)
        if winner not in (a, b):
            raise InvalidInputError(f"keep must be 'both', mem_{a} or mem_{b}.")
        loser = b if winner == a else a
        self.supersede(loser, winner, reason="conflict resolved", by=by)
        return self.get_many([a, b])

    def remember_many(self, items: Iterable[dict], *, progress: Progress | None = None) -> list[Memory]:
        """Store many memories in one transaction with one embedding batch. All or nothing.

        Each item takes the keyword arguments of :meth:`remember` (``content`` required).
        Duplicates (of stored memories or within the batch) come back with ``duplicate_of``.
        """
        self._live()
        prepared: list[_Prepared] = []
        extras: list[tuple[str | None, list[int] | None]] = []
        for n, item in enumerate(items):
            if not isinstance(item, dict):
                raise InvalidInputError(f"Item {n} is not a dict of remember() arguments.")
            if not _ITEM_FIELDS.issuperset(item):
                raise InvalidInputError(f"Item {n} has unknown fields: {', '.join(sorted(set(item) - _ITEM_FIELDS))}.")
            try:
                category, cites = item.get("category"), item.get("cites")
                extras.append((None if category is None else check_category(category),
                               None if cites is None else [parse_id(c) for c in cites]))
                if "category" not in item and "cites" not in item:
                    prepared.append(self._prepare(**item))
                else:
                    prepared.append(self._prepare(**{k: v for k, v in item.items() if k not in ("category", "cites")}))
            except InvalidInputError as exc:
                raise type(exc)(f"Item {n}: {exc}") from None
        if not prepared:
            return []
        with self.store.reading() as conn:
            existing = dict(enumerate(self._find_duplicates(conn, prepared)))
            mark = self.store.write_mark()
        first_of: dict[tuple[str, str], int] = {}
        to_embed: list[int] = []
        for i, p in enumerate(prepared):
            key = (p.hash, p.scope)
            if existing[i] is None and key not in first_of:
                first_of[key] = i
                to_embed.append(i)
        vecs = self._embed([prepared[i].embed_text for i in to_embed])
        vec_of = dict(zip(to_embed, vecs))
        plan_of = dict(zip(to_embed, self._chunk_plans([prepared[i] for i in to_embed])))
        ids: list[tuple[int, bool]] = []
        now = time.time()
        with self.store.transaction() as conn:
            # Another thread or process may have stored some of them since: check again, in
            # one query (the batch itself holds no two first occurrences of one key), unless
            # nothing at all was written to the file since the first check.
            if self.store.write_mark() == mark:
                late = dict.fromkeys(to_embed)
            else:
                late = dict(zip(to_embed, self._find_duplicates(conn, [prepared[i] for i in to_embed])))
            fresh = [i for i in to_embed if late[i] is None]
            found_of = dict(zip(fresh, self._corrections(conn, [(prepared[i], vec_of[i]) for i in fresh])))
            new_ids = dict(zip(fresh, self._insert_many(conn, [(prepared[i], vec_of[i], None) for i in fresh], now)))
            episodes = self._after_insert_many(
                conn, [(new_ids[i], prepared[i], plan_of[i], *extras[i]) for i in fresh], now)
            for i in fresh:
                self._apply_corrections(conn, new_ids[i], found_of[i], batch=new_ids)
            for i, p in enumerate(prepared):
                if i in new_ids:
                    ids.append((new_ids[i], False))
                elif i in vec_of:
                    ids.append((late[i], True))
                else:
                    dup = existing[i] if existing[i] is not None else new_ids.get(first_of[(p.hash, p.scope)])
                    if dup is None:
                        dup = self._find_duplicate(conn, p)
                    ids.append((dup, True))
                if progress:
                    progress(i + 1, len(prepared))
            # New memories are built from what was written; only duplicates, and new ones a later
            # item of the batch superseded, are read back.
            retired = {new_ids.get(-f.old_id - 1) for fs in found_of.values() for f in fs
                       if f.old_id < 0 and f.action == "supersede"}
            loaded = load_memories(conn, sorted({mid for mid, is_dup in ids if is_dup} | (retired - {None})))
        at = ts(now)
        for i, mid in new_ids.items():
            m = loaded[mid] if mid in retired else new_memory(mid, prepared[i], at, episodes.get(mid), extras[i][0])
            loaded[mid] = _with_corrections(m, found_of[i], new_ids)
        out = []
        handed: set[int] = set()
        for mid, is_dup in ids:
            if is_dup:
                m = _sent_again(loaded[mid].model_copy())
            else:  # a new memory comes back once as itself; a duplicate of it gets a copy
                m = loaded[mid] if mid not in handed else loaded[mid].model_copy()
                handed.add(mid)
            out.append(m)
        return out

    # lite API -------------------------------------------------------------------------------------
    def add(self, text: str, **kwargs: Any) -> Memory:
        """Remember a plain observation: ``mem.add("User prefers dark mode UI.")``."""
        return self.remember(text, **kwargs)

    def context(self, query: str, max_tokens: int = 2000, format: str = "markdown", **recall_kwargs: Any) -> str:
        """Prompt-ready text of the memories that matter for ``query``."""
        return self.build_context(query, max_tokens=max_tokens, format=format, **recall_kwargs).context

    # -- reading ------------------------------------------------------------------------------------------
    def get(self, memory_id: str | int) -> Memory:
        self._live()
        mid = parse_id(memory_id)
        with self.store.reading() as conn:
            found = load_memories(conn, [mid])
        if mid not in found:
            raise MemoryNotFoundError(f"No memory mem_{mid}. List memories with list() or recall() to find ids.")
        return found[mid]

    def get_many(self, memory_ids: Sequence[str | int]) -> list[Memory]:
        self._live()
        ids = [parse_id(i) for i in memory_ids]
        with self.store.reading() as conn:
            found = load_memories(conn, ids)
        missing = [f"mem_{i}" for i in ids if i not in found]
        if missing:
            raise MemoryNotFoundError(f"No memory {', '.join(missing)}.")
        return [found[i] for i in ids]

    def expand(self, retrieval_id: str, memory_ids: Sequence[str | int]) -> list[Memory]:
        """Full memories for ids shown by a (compact) retrieval; marks them as opened, so a later
        feedback without ``used_memory_ids`` credits exactly these."""
        self._live()
        rid = parse_id(retrieval_id, "ret")
        mems = self.get_many(memory_ids)
        with self.store.transaction() as conn:
            if conn.execute("SELECT 1 FROM retrievals WHERE id = ?", (rid,)).fetchone() is None:
                raise RetrievalNotFoundError(f"No retrieval ret_{rid}. Pass the retrieval_id that listed these memories.")
            conn.executemany(
                "UPDATE retrieval_items SET expanded = 1 WHERE retrieval_id = ? AND memory_id = ?",
                [(rid, parse_id(m.id)) for m in mems],
            )
        return mems

    def list(
        self,
        *,
        scope: str | Sequence[str] | None = None,
        types: Sequence[str] | None = None,
        statuses: Sequence[str] | None = None,
        tags: Sequence[str] | None = None,
        session: str | None = None,
        limit: int = 50,
        offset: int = 0,
        roles: Sequence[str] | None = None,
        categories: Sequence[str] | None = None,
    ) -> list[Memory]:
        """Memories newest first, filtered. ``statuses`` defaults to every status."""
        self._live()
        flt = self._filter(scope, types, statuses or STATUSES, tags, session, roles, categories)
        lim = max(1, min(int(limit), 10_000))
        where, params = flt.sql("m")
        with self.store.reading() as conn:
            rows = conn.execute(
                f"{SELECT_MEMORIES} WHERE {where} ORDER BY m.id DESC LIMIT ? OFFSET ?",
                [*params, lim, max(0, int(offset))],
            ).fetchall()
        return [memory_from_select(r) for r in rows]

    def _filter(self, scope, types, statuses, tags, session, roles=None, categories=None) -> RecallFilter:
        lim = self.limits
        scopes = None
        if scope is not None:
            raw = [scope] if isinstance(scope, str) else list(scope)
            scopes = tuple(dict.fromkeys(check_scope(s, lim, self.config.default_scope) for s in raw))
        if types is not None:
            if isinstance(types, str):
                types = [types]
            types = tuple(policy.check_type(t) for t in types)
            if not types:
                types = None
        sts = tuple(policy.check_status(s) for s in ([statuses] if isinstance(statuses, str) else statuses))
        tg = tuple(check_tags(tags, lim)) if tags else None
        sessions = None
        if session is not None:
            sessions = (check_optional_name(session, "session", lim),)
        return RecallFilter(scopes=scopes, statuses=sts, types=types, tags=tg or None, sessions=sessions,
                            roles=check_names(roles, "roles", check_role), categories=check_names(categories, "categories", check_category))

    # -- recall -----------------------------------------------------------------------------------------------
    def recall(
        self,
        query: str,
        limit: int = 5,
        types: Sequence[str] | None = None,
        profile: str = "default",
        scope: str | Sequence[str] | None = None,
        include_inactive: bool = False,
        min_score: float | None = None,
        *,
        tags: Sequence[str] | None = None,
        session: str | None = None,
        statuses: Sequence[str] | None = None,
        roles: Sequence[str] | None = None,
        categories: Sequence[str] | None = None,
        expand_episodes: int | None = None,
        min_trust: float | None = None,
        include_teams: bool = False,
        include_expired: bool = False,
        expand_beliefs: bool = False,
        working_session: str | None = None,
        explore: bool = False,
        min_score_ratio: float | None = None,
        _kind: str = "recall",
        _exclude: set[int] | None = None,
        _tuning: tuple[str, Any, int] | None = None,
    ) -> RecallResult:
        """Hybrid recall: keyword + vector channels fused by RRF, then policy multipliers.

        Filters apply before scoring. Deprecated and superseded memories are left out unless
        ``include_inactive`` (or ``statuses``) asks for them. Every call is logged as a
        retrieval whose id feedback() refers to.

        ``roles`` / ``categories`` keep only turns of these speakers / memories with these
        categories. ``expand_episodes=w`` gives every episode hit its window (the turn and w
        neighbours each side, ``hit.window``); each episode is returned once. With
        ``RecalliteConfig(rerank=...)`` the top hits are reranked.
        SLM-Lite options: ``min_trust`` drops memories whose trust score is lower (before the
        top-k); ``include_teams`` also searches the team scopes of ``scope``; expired memories
        (``valid_until`` passed) are left out unless ``include_expired`` or ``include_inactive``;
        ``expand_beliefs`` appends up to ``limit`` memories one relation away (reason
        ``belief-expansion``); ``working_session`` merges that session's working memory.
        Learning: ``explore`` adds the learner's optimism bonus
        (memories with little evidence get their chance; build_context turns it on);
        ``min_score_ratio`` drops hits scoring below that fraction of the best hit.
        """
        self._live()
        q = check_query(query, self.limits)
        q_redacted: list[str] = []
        if self.config.redact_secrets:
            q, q_redacted = redact_text(q)  # the retrieval log keeps the query text
        n = check_limit(limit, self.limits)
        policy.check_profile(profile, self.config.profiles)
        if statuses is None:
            statuses = STATUSES if include_inactive else policy.DEFAULT_RECALL_STATUSES
        flt = self._filter(scope, types, statuses, tags, session, roles, categories)
        flt = self._slm_filter(flt, include_teams, include_expired or include_inactive)
        if min_score is not None:
            min_score = float(min_score)
            if not math.isfinite(min_score):
                raise InvalidInputError("min_score must be a finite number.")
        ratio = None if min_score_ratio is None else check_unit("min_score_ratio", min_score_ratio, 0.0)
        mt = None if min_trust is None else check_unit("min_trust", min_trust, 0.0)
        if expand_episodes is not None:
            from .episodes import _check_window

            expand_episodes = _check_window(expand_episodes)
        depth = n + len(_exclude or ()) + (n if expand_episodes else 0)
        if self.config.rerank is not None:
            depth = max(depth, self.config.rerank_depth)
        qvec = self.retriever.query_vector(q)  # embedding needs no lock
        # One hold of the store lock for the read and the log write: under concurrent
        # recalls every lock hand-off costs a thread wake-up, so take it once.
        with self.store.lock:
            hits = self.retriever.rank(q, flt, depth, profile, min_score, mt, qvec=qvec,
                                       explore=bool(explore), min_score_ratio=ratio)
            if working_session is not None:
                hits = self._merge_working(hits, q, flt, depth, profile, working_session, mt, min_score)
            hits = self._post_rank(q, hits, n, expand_episodes, _exclude)
            if expand_beliefs:
                hits = hits + self._belief_neighbours(hits, flt, n, mt)
            with self.store.transaction() as conn:
                rid = self.retriever.log(conn, q, profile, flt.scopes, [h for h in hits if h.memory.layer != "working"], _kind)
                _count_redactions(conn, q_redacted)
                if _tuning is not None:  # build_context: which auto-tuned setting served this retrieval
                    self.learning.tuner.log(conn, rid, *_tuning)
        result = RecallResult(retrieval_id=fmt_id("ret", rid), query=q, profile=profile, memories=hits)
        self._after_recall(result.retrieval_id, hits)
        return result

    def format_context(self, result: RecallResult, max_tokens: int = 2000, format: str = "markdown") -> str:
        """Render a recall result as prompt text; the budget (see tokens.py) is never exceeded."""
        return self._render(result, max_tokens, format).context

    def _render(self, result: RecallResult, max_tokens: int, format: str) -> ContextResult:
        self._live()
        with self.store.reading() as conn:  # a replaced value as a one-line "was: ..." note
            was = corrections.was_notes(conn, [h.memory.id for h in result.memories]) if format == "markdown" else {}
        r = render(result.memories, max_tokens, format, was=was)
        matched = sum(h.memory.tokens for h in result.memories)
        try:
            rid = parse_id(result.retrieval_id, "ret")
            # The hits the budget or limit left out were logged but never shown: feedback that
            # names no memory must not credit them (retrieval_items.served, migration 0012).
            shown = set(r.memory_ids)
            unserved = [parse_id(h.memory.id) for h in result.memories
                        if h.memory.layer != "working" and h.memory.id not in shown]
            with self.store.transaction() as conn:
                conn.execute(
                    "UPDATE retrievals SET kind = 'context', tokens_served = ?, tokens_matched = ? WHERE id = ?",
                    (r.tokens, matched, rid),
                )
                if unserved:
                    conn.executemany("UPDATE retrieval_items SET served = 0 WHERE retrieval_id = ? AND memory_id = ?",
                                     [(rid, mid) for mid in unserved])
        except InvalidInputError:
            pass
        return ContextResult(
            context=r.text, retrieval_id=result.retrieval_id, memory_ids=r.memory_ids, tokens=r.tokens,
            max_tokens=max_tokens, format=format, truncated=r.truncated, omitted=r.omitted,  # type: ignore[arg-type]
        )

    def build_context(
        self, query: str, max_tokens: int = 2000, format: str = "markdown", limit: int | None = None, *,
        conversation: str | None = None, recent_turns: int = 8, **recall_kwargs: Any
    ) -> ContextResult:
        """recall() + format_context() in one call, with the ids and token count of what was served.

        ``conversation``: a session id whose short-term memory (its last ``recent_turns`` turns
        and running summary) comes first, then the recalled memories, all within ``max_tokens``.
        Exploration is on (``explore=True``) unless the caller says otherwise. Without ``limit``
        (and ``min_score``), the limit and relative threshold come from the scope's auto-tuning
        bandit (10 hits, 20 in compact format, until feedback says otherwise)."""
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            raise InvalidInputError(f"max_tokens must be a positive whole number, got {max_tokens!r}.")
        if format not in CONTEXT_FORMATS:
            raise InvalidInputError(f"Unknown context format {format!r}. Use one of: {', '.join(CONTEXT_FORMATS)}.")
        recall_kwargs.setdefault("explore", True)
        if limit is None:
            limit = 20 if format == "compact" else 10
            if self.config.learning.tune_context and recall_kwargs.get("min_score") is None \
                    and recall_kwargs.get("min_score_ratio") is None:
                tuning_scope = self._tuning_scope(recall_kwargs.get("scope"))
                with self.store.reading() as conn:
                    arm = self.learning.tuner.choose(conn, tuning_scope)
                limit = arm.limit * (2 if format == "compact" else 1)
                recall_kwargs["min_score_ratio"] = arm.min_score_ratio or None
                recall_kwargs["_tuning"] = (tuning_scope, arm, max_tokens)  # logged with the retrieval
        if conversation is not None:
            return self._conversation_context(query, max_tokens, format, limit, conversation, recent_turns, recall_kwargs)
        result = self.recall(query, limit=limit, _kind="context", **recall_kwargs)
        return self._render(result, max_tokens, format)

    def _tuning_scope(self, scope: Any) -> str:
        """The scope whose bandit tunes a context: the first (project) scope searched, '*' for all."""
        if scope is None:
            return "*"
        first = scope if isinstance(scope, str) else next(iter(scope), None)
        return "*" if first is None else check_scope(first, self.limits, self.config.default_scope)

    # -- feedback ------------------------------------------------------------------------------------------------
    def feedback(
        self,
        retrieval_id: str,
        outcome: str = "success",
        score: float | None = None,
        used_memory_ids: Sequence[str] | None = None,
        reason: str | None = None,
        *,
        client_key: str | None = None,
    ) -> FeedbackResult:
        """Report how the task went. Used memories (or, if none are named, the ones the agent
        opened, else every memory it was shown, with rank-decayed weight; hits a context left
        out for its budget were not shown) move their usefulness toward the outcome.
        A success may validate candidates that earned it (policy.earns_validation; listed in
        ``promoted``); nothing else changes status.
        A repeated ``client_key`` is applied once. Working-memory ids (``wm_…``) in
        ``used_memory_ids`` credit those entries (and count toward their promotion)."""
        used_memory_ids, working_used = self._split_working_ids(used_memory_ids)
        result = self._feedback(retrieval_id, outcome, score, used_memory_ids, reason, client_key=client_key)
        if not result.duplicate:
            self._credit_working(result.retrieval_id, outcome, score, working_used)
        return result

    def _feedback(
        self,
        retrieval_id: str,
        outcome: str = "success",
        score: float | None = None,
        used_memory_ids: Sequence[str] | None = None,
        reason: str | None = None,
        *,
        client_key: str | None = None,
    ) -> FeedbackResult:
        self._live()
        if outcome not in OUTCOMES:
            raise InvalidInputError(f"outcome must be one of {', '.join(OUTCOMES)}, got {outcome!r}.")
        sc = None if score is None else check_unit("score", score, 0.0)
        rid = parse_id(retrieval_id, "ret")
        used = None if used_memory_ids is None else list(dict.fromkeys(parse_id(i) for i in used_memory_ids))
        reason_text = None if reason is None else check_optional_reason(reason)
        key = None if client_key is None else check_optional_name(client_key, "client_key", self.limits)
        target = policy.outcome_target(outcome, sc)
        recorded_score = target if sc is None else sc
        qvec = self.learning.query_vector(rid)  # embedded outside the write lock
        now = time.time()
        with self.store.transaction() as conn:
            if conn.execute("SELECT 1 FROM retrievals WHERE id = ?", (rid,)).fetchone() is None:
                raise RetrievalNotFoundError(
                    f"No retrieval ret_{rid}. Pass the retrieval_id returned by recall/context in this database."
                )
            if key is not None:
                prev = conn.execute("SELECT id FROM feedback WHERE client_key = ?", (key,)).fetchone()
                if prev is not None:
                    return self._feedback_result(conn, prev[0], duplicate=True)
            shown = conn.execute(
                "SELECT memory_id, rank, expanded, served FROM retrieval_items WHERE retrieval_id = ? ORDER BY rank",
                (rid,),
            ).fetchall()
            if used is not None:
                if used:
                    marks = ",".join("?" * len(used))
                    found = {r[0] for r in conn.execute(f"SELECT id FROM memories WHERE id IN ({marks})", used)}
                    missing = [f"mem_{i}" for i in used if i not in found]
                    if missing:
                        raise MemoryNotFoundError(f"used_memory_ids names unknown memories: {', '.join(missing)}.")
                credits = [(i, 1.0) for i in used]
            elif any(e for _, _, e, _ in shown):
                credits = [(mid, 1.0) for mid, _, e, _ in shown if e]  # the ones the agent opened
            else:
                # Only what the agent was shown, weighted by its place in what it saw.
                credits = [(mid, policy.rank_weight(place))
                           for place, mid in enumerate(mid for mid, _, _, s in shown if s)]
            cur = conn.execute(
                "INSERT INTO feedback (retrieval_id, outcome, score, used_ids, reason, client_key, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (rid, outcome, recorded_score, json.dumps([f"mem_{i}" for i in (used or [])]), reason_text, key, now),
            )
            fid = cur.lastrowid
            olds: dict[int, float] = {}
            candidates: list[int] = []
            cids = [mid for mid, _ in credits]
            for i in range(0, len(cids), 500):
                chunk = cids[i : i + 500]
                for mid, usefulness, status in conn.execute(
                        f"SELECT id, usefulness, status FROM memories WHERE id IN ({','.join('?' * len(chunk))})", chunk):
                    olds[mid] = usefulness
                    if status == "candidate":
                        candidates.append(mid)
            succ = 1 if target >= 0.5 and outcome != "failure" else 0
            fail = 1 if outcome == "failure" else 0
            updates, outcomes = [], []
            for mid, weight in credits:
                old = olds[mid]
                new = policy.updated_usefulness(old, target, weight, self.config.learning_rate)
                updates.append((new, succ, fail, now, mid))
                outcomes.append((fid, mid, weight, target, old, new, now))
            conn.executemany(
                "UPDATE memories SET usefulness = ?, success_count = success_count + ?, "
                "failure_count = failure_count + ?, updated_at = ? WHERE id = ?",
                updates,
            )
            conn.executemany(
                "INSERT INTO memory_outcomes (feedback_id, memory_id, weight, target, old_usefulness, new_usefulness, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                outcomes,
            )
            if used and succ:
                # Served but not named by a task that succeeded: not what this task needed.
                # Rules (constraints, preferences) hold whether or not the agent names them: never marked.
                named = set(used)
                unused = [mid for mid, _, _, served in shown if served and mid not in named]
                if unused:
                    conn.executemany(
                        "INSERT INTO memory_outcomes (feedback_id, memory_id, weight, target, old_usefulness, "
                        "new_usefulness, created_at, kind) SELECT ?, id, ?, 0.0, usefulness, usefulness, ?, 'unused' "
                        f"FROM memories WHERE id = ? AND type NOT IN ({','.join('?' * len(policy.RULE_TYPES))})",
                        [(fid, policy.UNUSED_WEIGHT, now, mid, *policy.RULE_TYPES) for mid in unused])
            # Candidates that keep helping earn validation (policy.earns_validation).
            promoted = promote_earned(conn, candidates, now) if outcome == "success" and candidates else []
            self.learning.on_feedback(conn, rid, qvec, target, used, now)
        # What was just written, without reading it back.
        return FeedbackResult(
            feedback_id=fmt_id("fb", fid), retrieval_id=fmt_id("ret", rid), outcome=outcome, score=recorded_score,
            changes=[UsefulnessChange(id=f"mem_{m}", weight=w, old_usefulness=o, new_usefulness=n)
                     for _f, m, w, _t, o, n, _c in outcomes],
            promoted=[f"mem_{m}" for m in promoted],
        )

    def _feedback_result(self, conn, fid: int, duplicate: bool = False) -> FeedbackResult:
        rid, outcome, score = conn.execute("SELECT retrieval_id, outcome, score FROM feedback WHERE id = ?", (fid,)).fetchone()
        changes = [
            UsefulnessChange(id=f"mem_{m}", weight=w, old_usefulness=o, new_usefulness=n)
            for m, w, o, n in conn.execute(
                "SELECT memory_id, weight, old_usefulness, new_usefulness FROM memory_outcomes "
                "WHERE feedback_id = ? AND kind = 'credit' ORDER BY rowid",
                (fid,),
            )
        ]
        return FeedbackResult(
            feedback_id=fmt_id("fb", fid), retrieval_id=fmt_id("ret", rid) if rid else "", outcome=outcome,
            score=score, changes=changes, duplicate=duplicate,
        )

    def reinforce(self, memory_id: str | int, delta: float) -> Memory:
        """Nudge usefulness directly by ``delta`` (-1..1); the result stays in [0, 1]."""
        self._live()
        mid = parse_id(memory_id)
        try:
            d = float(delta)
        except (TypeError, ValueError):
            raise InvalidInputError(f"delta must be a number between -1 and 1, got {delta!r}.") from None
        if not math.isfinite(d):
            raise InvalidInputError("delta must be a finite number between -1 and 1.")
        d = max(-1.0, min(1.0, d))
        with self.store.transaction() as conn:
            row = conn.execute("SELECT usefulness FROM memories WHERE id = ?", (mid,)).fetchone()
            if row is None:
                raise MemoryNotFoundError(f"No memory mem_{mid}.")
            conn.execute(
                "UPDATE memories SET usefulness = ?, updated_at = ? WHERE id = ?",
                (policy.clamp01(row[0] + d), time.time(), mid),
            )
        return self.get(mid)

    # -- lifecycle --------------------------------------------------------------------------------------------------
    def _transition(self, memory_id, new_status: str, *, allow_unsafe: bool = False, reason: str | None = None,
                    by: Any = None) -> Memory:
        self._live()
        mid = parse_id(memory_id)
        actor = None if by is None else check_source(by)
        with self.store.transaction() as conn:
            row = conn.execute("SELECT status, source_type, confidence, metadata FROM memories WHERE id = ?", (mid,)).fetchone()
            if row is None:
                raise MemoryNotFoundError(f"No memory mem_{mid}.")
            status, source_type, conf, metadata = row
            if actor is not None and not allow_unsafe:
                policy.check_actor(actor.type, new_status, _effective_source(source_type, metadata), f"mem_{mid}")
            policy.check_transition(status, new_status, source_type, allow_unsafe)
            if new_status in ("validated", "active") and status in ("candidate", "deprecated"):
                conf = policy.confidence_after_validation(conf)
            meta = json.loads(metadata)
            if reason:
                meta[f"{new_status}_reason"] = check_optional_reason(reason)
            conn.execute(
                "UPDATE memories SET status = ?, confidence = ?, metadata = ?, updated_at = ? WHERE id = ?",
                (new_status, conf, json.dumps(meta, ensure_ascii=False), time.time(), mid),
            )
            if new_status in ("validated", "active"):  # trust decays from the last validation
                conn.execute("UPDATE memories SET validated_at = ? WHERE id = ?", (time.time(), mid))
        return self.get(mid)

    # ``by`` (a source like ``"llm"`` or ``{"type": "agent", "id": ...}``) names who asks for a
    # lifecycle change; an untrusted actor may not retire or promote what it did not write
    # (policy.check_actor) unless ``allow_unsafe``. ``None``: the caller (you) is trusted.
    def validate(self, memory_id: str | int, reason: str | None = None, *, by: Any = None, allow_unsafe: bool = False) -> Memory:
        """Confirm a candidate (raises its confidence)."""
        return self._transition(memory_id, "validated", reason=reason, by=by, allow_unsafe=allow_unsafe)

    def activate(self, memory_id: str | int, reason: str | None = None, allow_unsafe: bool = False, *, by: Any = None) -> Memory:
        """Put a memory in force. Untrusted candidates must be validated first."""
        return self._transition(memory_id, "active", allow_unsafe=allow_unsafe, reason=reason, by=by)

    def deprecate(self, memory_id: str | int, reason: str | None = None, *, by: Any = None, allow_unsafe: bool = False) -> Memory:
        """Retire a memory: it leaves default recall but stays on record. An untrusted ``by``
        cannot deprecate a memory from a trusted or medium source without ``allow_unsafe``."""
        return self._transition(memory_id, "deprecated", reason=reason, by=by, allow_unsafe=allow_unsafe)

    def supersede(self, old_id: str | int, new_id: str | int, *, reason: str | None = None, allow_unsafe: bool = False,
                  by: Any = None) -> Memory:
        """Replace ``old_id`` by ``new_id``: the old one becomes superseded and points at the new one."""
        self._live()
        old, new = parse_id(old_id), parse_id(new_id)
        if old == new:
            raise InvalidInputError("A memory cannot supersede itself.")
        actor = None if by is None else check_source(by)
        with self.store.transaction() as conn:
            if actor is not None and not allow_unsafe:
                row = conn.execute("SELECT source_type, metadata FROM memories WHERE id = ?", (old,)).fetchone()
                if row is not None:
                    policy.check_actor(actor.type, "superseded", _effective_source(*row), f"mem_{old}")
            self._supersede(conn, old, new, reason, allow_unsafe)
        return self.get(old)

    def _supersede(self, conn, old: int, new: int, reason: str | None, allow_unsafe: bool, auto: bool = False) -> None:
        rows = {r[0]: r for r in conn.execute("SELECT id, status, source_type, metadata FROM memories WHERE id IN (?, ?)", (old, new))}
        for i in (old, new):
            if i not in rows:
                raise MemoryNotFoundError(f"No memory mem_{i}.")
        _, old_status, old_src, meta = rows[old]
        _, new_status, new_src, new_meta = rows[new]
        if new_status in ("deprecated", "superseded"):
            raise InvalidTransitionError(f"mem_{new} is {new_status}; a retired memory cannot replace another.")
        if (
            policy.SOURCE_TRUST[_effective_source(new_src, new_meta)] == policy.UNTRUSTED
            and policy.SOURCE_TRUST[old_src] != policy.UNTRUSTED
            and not allow_unsafe
        ):
            why = (f"comes from an untrusted source ({new_src})" if policy.SOURCE_TRUST[new_src] == policy.UNTRUSTED
                   else "is flagged as instruction-like text")
            raise TrustPolicyError(
                f"mem_{new} {why} and cannot replace mem_{old} "
                f"(from {old_src}). Validate it by a trusted source first, or pass allow_unsafe."
            )
        policy.check_transition(old_status, "superseded", old_src, True)
        m = json.loads(meta)
        if reason:
            m["superseded_reason"] = reason if auto else check_optional_reason(reason)
        m["superseded_from"] = old_status  # what undo_supersede restores
        now = time.time()
        conn.execute(
            "UPDATE memories SET status = 'superseded', superseded_by = ?, metadata = ?, updated_at = ? WHERE id = ?",
            (new, json.dumps(m, ensure_ascii=False), now, old),
        )
        conn.execute(
            "INSERT OR IGNORE INTO relations (from_id, to_id, type, confidence_effect, created_at) VALUES (?, ?, 'supersedes', 0, ?)",
            (new, old, now),
        )

    # -- relations ----------------------------------------------------------------------------------------------------
    def relate(self, from_id: str | int, to_id: str | int, relation: str, *, allow_unsafe: bool = False) -> Relation:
        """Link two memories: contradicts, supports, derived_from, supersedes, causes, requires.

        supports/derived_from raise the target's confidence and contradicts lowers both, unless
        the source memory is untrusted (then the link is kept without that effect).
        ``from supersedes to`` also retires ``to``. Linking twice returns the existing link.
        """
        self._live()
        if relation not in RELATION_TYPES:
            raise InvalidInputError(f"Unknown relation {relation!r}. Use one of: {', '.join(RELATION_TYPES)}.")
        a, b = parse_id(from_id), parse_id(to_id)
        if a == b:
            raise InvalidInputError("A memory cannot be related to itself; name two different memories.")
        with self.store.transaction() as conn:
            rows = {r[0]: r for r in conn.execute(
                "SELECT id, source_type, source_id, confidence, metadata FROM memories WHERE id IN (?, ?)", (a, b))}
            for i in (a, b):
                if i not in rows:
                    raise MemoryNotFoundError(f"No memory mem_{i}.")
            existing = conn.execute(
                "SELECT id FROM relations WHERE from_id = ? AND to_id = ? AND type = ?", (a, b, relation)
            ).fetchone()
            if existing:
                return self._relation(conn, existing[0])
            if relation == "supersedes":
                self._supersede(conn, b, a, None, allow_unsafe)
                rid = conn.execute(
                    "SELECT id FROM relations WHERE from_id = ? AND to_id = ? AND type = 'supersedes'", (a, b)
                ).fetchone()[0]
                return self._relation(conn, rid)
            _, a_src, a_sid, a_conf, a_meta = rows[a]
            _, b_src, b_sid, b_conf, _ = rows[b]
            # A flagged (instruction-like) memory is as untrusted as an llm one.
            untrusted = policy.SOURCE_TRUST[_effective_source(a_src, a_meta)] == policy.UNTRUSTED
            self_endorsed = a_src == b_src and a_sid == b_sid and policy.SOURCE_TRUST[a_src] != policy.TRUSTED
            effect = allow_unsafe or not (untrusted or (relation in ("supports", "derived_from") and self_endorsed))
            now = time.time()
            if effect and relation in ("supports", "derived_from"):
                conn.execute("UPDATE memories SET confidence = ?, updated_at = ? WHERE id = ?",
                             (policy.confidence_after_support(b_conf, a_conf), now, b))
            elif effect and relation == "contradicts":
                for mid, c in ((a, a_conf), (b, b_conf)):
                    conn.execute("UPDATE memories SET confidence = ?, updated_at = ? WHERE id = ?",
                                 (policy.confidence_after_contradiction(c), now, mid))
            cur = conn.execute(
                "INSERT INTO relations (from_id, to_id, type, confidence_effect, created_at) VALUES (?, ?, ?, ?, ?)",
                (a, b, relation, int(effect and relation in ("supports", "derived_from", "contradicts")), now),
            )
            return self._relation(conn, cur.lastrowid)

    def _relation(self, conn, rid: int) -> Relation:
        a, b, t, eff, created = conn.execute(
            "SELECT from_id, to_id, type, confidence_effect, created_at FROM relations WHERE id = ?", (rid,)
        ).fetchone()
        return Relation(id=fmt_id("rel", rid), from_id=f"mem_{a}", to_id=f"mem_{b}", type=t,
                        confidence_effect=bool(eff), created_at=ts(created))

    def relations(self, memory_id: str | int) -> list[Relation]:
        self._live()
        mid = parse_id(memory_id)
        with self.store.reading() as conn:
            ids = [r[0] for r in conn.execute(
                "SELECT id FROM relations WHERE from_id = ? OR to_id = ? ORDER BY id", (mid, mid))]
            return [self._relation(conn, r) for r in ids]

    def relation_counts(self, memory_id: str | int) -> RelationCounts:
        self._live()
        mid = parse_id(memory_id)
        with self.store.reading() as conn:
            row = conn.execute("SELECT confidence FROM memories WHERE id = ?", (mid,)).fetchone()
            if row is None:
                raise MemoryNotFoundError(f"No memory mem_{mid}.")
            evidence = conn.execute(
                "SELECT count(*) FROM relations WHERE to_id = ? AND type IN ('supports', 'derived_from')", (mid,)
            ).fetchone()[0]
            contra = conn.execute(
                "SELECT count(*) FROM relations WHERE type = 'contradicts' AND (from_id = ? OR to_id = ?)", (mid, mid)
            ).fetchone()[0]
        return RelationCounts(id=f"mem_{mid}", evidence_count=evidence, contradiction_count=contra, confidence=row[0])

    # -- deletion ---------------------------------------------------------------------------------------------------------
    def forget(self, memory_id: str | int, *, vacuum: bool = False, orphans: str = "report") -> ForgetResult:
        """Hard-delete a memory with its vector, FTS entry, relations, retrieval items and outcomes,
        its chunks and citations. The result is truthy and lists the memories that cited it and
        have no source left (``orphans="report"``), or deletes those too (``orphans="remove"``).
        The text of queries that surfaced it, and reasons given in feedback on them, are blanked
        in the retrieval log (they may quote it).

        ``vacuum=True`` also rewrites the file so the deleted text is gone from disk.
        """
        self._live()
        mid = parse_id(memory_id)
        check_orphans(orphans)
        with self.store.transaction() as conn:
            before = self._before_forget(conn, mid)
            shown_in = "SELECT retrieval_id FROM retrieval_items WHERE memory_id = ?"
            conn.execute(f"UPDATE retrievals SET query = '[forgotten]' WHERE id IN ({shown_in})", (mid,))
            conn.execute(f"UPDATE feedback SET reason = NULL WHERE retrieval_id IN ({shown_in}) OR used_ids LIKE ?",
                         (mid, f'%"mem_{mid}"%'))
            cur = conn.execute("DELETE FROM memories WHERE id = ?", (mid,))
            if cur.rowcount == 0:
                raise MemoryNotFoundError(f"No memory mem_{mid}.")
            result = self._after_forget(conn, mid, before, orphans)
            self._prune_tombstones(conn)
        if vacuum:
            try:
                self.vacuum()
            except StoreError as exc:
                raise StoreError(
                    f"mem_{mid} was deleted, but the file could not be rewritten yet ({exc}) Its text stays in free "
                    "pages until a vacuum succeeds: run `recallite-mcp vacuum` when the other clients are idle."
                ) from exc
        return result

    def vacuum(self) -> None:
        """Merge the FTS index and rewrite the file, so deleted text leaves the disk."""
        self._live()
        with self.store.transaction() as conn:
            conn.execute("INSERT INTO memories_fts(memories_fts) VALUES ('optimize')")
        with self.store.lock:
            try:
                self.store.conn.execute("VACUUM")
                busy = self.store.path and self.store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
            except sqlite3.Error as exc:
                raise _explain(exc, self.store.path) from exc
        if busy:
            # The rewritten pages sit in the WAL; the old ones (deleted text included) stay in the
            # main file until a checkpoint can run, which waits for other processes' readers.
            raise StoreError(
                f"{self.store.path}: another process is reading the file, so the rewritten pages could not be "
                "copied into it yet. Retry when the other clients are idle."
            )

    def _prune_tombstones(self, conn) -> None:
        count = conn.execute("SELECT count(*) FROM tombstones").fetchone()[0]
        if count > self.config.max_tombstones:
            top = conn.execute("SELECT max(seq) FROM tombstones").fetchone()[0]
            conn.execute("DELETE FROM tombstones WHERE seq <= ?", (top,))
            conn.execute("UPDATE counters SET value = ? WHERE name = 'tombstone_floor'", (top,))

    # -- maintenance ------------------------------------------------------------------------------------------------------
    def reindex(self, *, progress: Progress | None = None) -> int:
        """Rebuild FTS and every vector from the memories table with the current embedder."""
        self._live()
        with self.store.reading() as conn:
            rows = conn.execute("SELECT id, title, content FROM memories ORDER BY id").fetchall()
        vecs: list[np.ndarray] = []
        bs = 256
        for i in range(0, len(rows), bs):
            chunk = rows[i : i + bs]
            vecs.append(self._embed([embedding_text(t, c) for _, t, c in chunk]))
            if progress:
                progress(min(i + bs, len(rows)), len(rows))
        matrix = np.vstack(vecs) if vecs else np.empty((0, self.embedder.dimensions), dtype=np.float32)
        with self.store.transaction() as conn:
            conn.execute("DELETE FROM vectors")
            live = {r[0] for r in conn.execute("SELECT id FROM memories")}
            conn.executemany(
                "INSERT INTO vectors (memory_id, vector) VALUES (?, ?)",
                [(mid, encode_vector(v)) for (mid, _, _), v in zip(rows, matrix) if mid in live],
            )
            late = conn.execute(
                "SELECT id, title, content FROM memories WHERE id NOT IN (SELECT memory_id FROM vectors)"
            ).fetchall()
            if late:
                lv = self._embed([embedding_text(t, c) for _, t, c in late])
                conn.executemany("INSERT INTO vectors (memory_id, vector) VALUES (?, ?)",
                                 [(r[0], encode_vector(v)) for r, v in zip(late, lv)])
            conn.execute("INSERT INTO memories_fts(memories_fts) VALUES ('rebuild')")
            rebuild_windows(conn)
            # Every reader reloads from scratch: cheaper than replaying a tombstone per row.
            self.store.reload_readers(conn)
            self.store.set_meta(conn, "embedder", self.embedder.name)
            self.store.set_meta(conn, "dimensions", str(self.embedder.dimensions))
        with self.store.lock:
            self.index.reset()
        self._rechunk()  # chunk vectors too, with the current embedder
        self.learning.backfill(rebuild=True)  # the query vectors of feedback are a projection too
        return len(rows)

    def consolidate(
        self, *, scope: str | None = None, threshold: float = 0.92, types: Sequence[str] | None = None, dry_run: bool = False
    ) -> list[ConsolidationGroup]:
        """Find near-duplicate memories (same scope and type, cosine >= threshold) and, unless
        ``dry_run``, add one merged *candidate* per group, linked ``derived_from`` each member.
        Nothing is deleted or retired: a person or agent decides by superseding."""
        self._live()
        thr = check_unit("threshold", threshold, 0.92)
        flt = self._filter(scope, types, ("candidate", "validated", "active"), None, None)
        where, params = flt.sql("m")
        with self.store.reading() as conn:
            self.index.refresh(conn)
            rows = conn.execute(f"SELECT m.id, m.scope, m.type, m.metadata FROM memories m WHERE {where}", params).fetchall()
            merged_before = set()
            for (meta,) in conn.execute("SELECT metadata FROM memories WHERE metadata LIKE '%consolidated_from%'"):
                merged_before.add(tuple(sorted(json.loads(meta).get("consolidated_from", []))))
        buckets: dict[tuple[str, str], list[int]] = {}
        for mid, sc, ty, meta in rows:
            if "consolidated_from" in json.loads(meta):
                continue
            buckets.setdefault((sc, ty), []).append(mid)
        groups: list[ConsolidationGroup] = []
        for (_sc, _ty), ids in buckets.items():
            if len(ids) < 2:
                continue
            with self.store.lock:
                vecs = np.array([self.index.vector_of(i) for i in ids], dtype=np.float32)
            parent = list(range(len(ids)))

            def find(x: int) -> int:
                while parent[x] != x:
                    parent[x] = parent[parent[x]]
                    x = parent[x]
                return x

            best: dict[int, float] = {}
            for start in range(0, len(ids), 1024):
                sims = vecs[start : start + 1024] @ vecs.T
                for i, j in zip(*np.nonzero(sims >= thr)):
                    gi = start + int(i)
                    if gi < j:
                        parent[find(gi)] = find(int(j))
                        best[gi] = max(best.get(gi, 0.0), float(sims[i, j]))
            members: dict[int, list[int]] = {}
            for k in range(len(ids)):
                members.setdefault(find(k), []).append(k)
            for group in members.values():
                if len(group) < 2:
                    continue
                gids = sorted(ids[k] for k in group)
                sim = float(min((vecs[a] @ vecs[b]) for a in group for b in group if a < b))
                names = [f"mem_{i}" for i in gids]
                if tuple(sorted(names)) in merged_before:
                    continue
                groups.append(ConsolidationGroup(member_ids=names, similarity=round(sim, 4)))
        if dry_run or not groups:
            return groups
        for g in groups:
            mems = self.get_many(g.member_ids)
            mems.sort(key=lambda m: (-m.confidence, -len(m.content)))
            contents = list(dict.fromkeys(m.content for m in mems))
            merged = self.remember(
                "\n".join(contents),
                type=mems[0].type,
                title=mems[0].title,
                source={"type": "system", "id": "consolidate"},
                status="candidate",
                scope=mems[0].scope,
                tags=sorted({t for m in mems for t in m.tags})[: self.limits.max_tags],
                metadata={"consolidated_from": g.member_ids},
                importance=max(m.importance for m in mems),
            )
            g.merged_id = merged.id
            for m in mems:
                with self.store.transaction() as conn:
                    conn.execute(
                        "INSERT OR IGNORE INTO relations (from_id, to_id, type, confidence_effect, created_at) VALUES (?, ?, 'derived_from', 0, ?)",
                        (parse_id(merged.id), parse_id(m.id), time.time()),
                    )
        return groups

    # -- stats -------------------------------------------------------------------------------------------------------------
    def _reader(self) -> Store:
        """A read-only connection of its own (file stores), so stats answer while a long recall
        or write holds the writer connection's lock."""
        if self.store.path is None:
            return self.store
        reader = self.__dict__.get("_read_store")
        if reader is None:
            reader = self._read_store = Store(self.store.path, read_only=True, busy_timeout_ms=self.config.busy_timeout_ms)
        return reader

    def inspection(self) -> "Inspection":
        """Read-only views for people (the local browser): pages of memories by any filter, the
        retrieval log with feedback, each memory's outcome history, success over time, open
        contradictions. File stores read on a read-only connection of their own: never blocked
        by a write, and every call sees what other processes have committed."""
        from .inspection import Inspection

        self._live()
        return Inspection(self._reader(), self.limits, self.config.default_scope)

    def stats(self, scope: str | Sequence[str] | None = None) -> Stats:
        """Counts by type/status/source/scope, relations, feedback, tokens served vs stored, file size."""
        self._live()
        flt = self._filter(scope, None, STATUSES, None, None)
        where, params = flt.sql("m")

        with self._reader().reading() as conn:
            # One pass over a covering index (migration 0011) gives every count by type,
            # status, source and scope, and the live tokens: no scan of the memories table.
            by_type: dict[str, int] = {}
            by_status: dict[str, int] = {}
            by_source: dict[str, int] = {}
            by_scope: dict[str, int] = {}
            total = tokens_stored = 0
            for scope_, status, mtype, source, n, tokens in conn.execute(
                f"SELECT m.scope, m.status, m.type, m.source_type, count(*), coalesce(sum(m.tokens), 0) "
                f"FROM memories m WHERE {where} GROUP BY 1, 2, 3, 4", params,
            ):
                total += n
                for d, k in ((by_type, mtype), (by_status, status), (by_source, source), (by_scope, scope_)):
                    d[k] = d.get(k, 0) + n
                if status in ("candidate", "validated", "active"):
                    tokens_stored += tokens
            by_type, by_status, by_source, by_scope = (
                dict(sorted(d.items(), key=lambda kv: (-kv[1], kv[0]))) for d in (by_type, by_status, by_source, by_scope))
            rel = {k: v for k, v in conn.execute(
                f"SELECT r.type, count(*) FROM relations r JOIN memories m ON m.id = r.from_id WHERE {where} GROUP BY r.type",
                params)}
            if flt.scopes is None and set(flt.statuses) >= set(STATUSES):
                # Every vector belongs to a memory (foreign key): the count is the table's,
                # read from its small seq index instead of the pages that hold the vectors.
                vectors = conn.execute("SELECT count(*) FROM vectors").fetchone()[0]
            else:
                vectors = conn.execute(
                    f"SELECT count(*) FROM memories m WHERE {where} AND EXISTS (SELECT 1 FROM vectors v WHERE v.memory_id = m.id)",
                    params).fetchone()[0]
            rscope = ""
            rparams: list = []
            if flt.scopes is not None:
                rscope = "WHERE scope = ?"
                rparams = [json.dumps(list(flt.scopes))]
            retrievals = conn.execute(f"SELECT count(*) FROM retrievals {rscope}", rparams).fetchone()[0]
            served = [r[0] for r in conn.execute(
                f"SELECT tokens_served FROM retrievals {rscope} {'AND' if rscope else 'WHERE'} kind = 'context' AND tokens_served IS NOT NULL",
                rparams)]
            matched = conn.execute(
                f"SELECT coalesce(sum(tokens_matched), 0) FROM retrievals {rscope} {'AND' if rscope else 'WHERE'} kind = 'context'",
                rparams).fetchone()[0]
            fb = {k: v for k, v in conn.execute(
                f"SELECT f.outcome, count(*) FROM feedback f JOIN retrievals r ON r.id = f.retrieval_id {rscope.replace('scope', 'r.scope')} GROUP BY f.outcome",
                rparams)}
            redacted = {k: v for k, v in conn.execute("SELECT kind, count FROM redactions ORDER BY count DESC, kind")}
        served_sorted = sorted(served)
        db_bytes, wal_bytes = self.store.file_sizes()
        stats = Stats(
            memories=total, by_type=by_type, by_status=by_status, by_source=by_source, by_scope=by_scope,
            relations=rel, vectors=vectors, embedder=self.embedder.name, dimensions=self.embedder.dimensions,
            retrievals=retrievals, feedback={o: fb.get(o, 0) for o in OUTCOMES}, context_calls=len(served),
            tokens_stored=tokens_stored, tokens_served=sum(served), tokens_matched=matched,
            tokens_saved=max(0, matched - sum(served)),
            tokens_served_median=float(statistics.median(served_sorted)) if served_sorted else 0.0,
            tokens_served_p95=float(served_sorted[min(len(served_sorted) - 1, int(0.95 * len(served_sorted)))]) if served_sorted else 0.0,
            db_path=self.store.path, db_bytes=db_bytes, wal_bytes=wal_bytes,
            schema_version=self._reader().schema_version(),
            redactions=sum(redacted.values()), redactions_by_kind=redacted,
            context_tuning=self._context_tuning(flt.scopes),
        )
        self._slm_stats(stats, flt)
        return stats

    def _context_tuning(self, scopes: tuple[str, ...] | None) -> dict[str, dict[str, Any]]:
        with self._reader().reading() as conn:
            return self.learning.tuner.summary(conn, scopes)

    # -- portability --------------------------------------------------------------------------------------------------------
    def export_jsonl(self, path: str, *, scope: str | None = None) -> int:
        """Write memories, relations, retrievals and feedback as JSON lines. Returns lines written."""
        from .portability import export_jsonl

        self._live()
        return export_jsonl(self, path, scope=scope)

    def import_jsonl(self, path: str, *, trust: str = "untrusted", progress: Progress | None = None) -> dict[str, int]:
        """Read a file written by export_jsonl in one transaction (all or nothing).

        ``trust="untrusted"`` (default): every memory arrives as source ``imported``, status
        ``candidate``. ``trust="restore"``: your own backup; statuses, sources, scores and the
        feedback history are kept as they were.
        """
        from .portability import import_jsonl

        self._live()
        counts = import_jsonl(self, path, trust=trust, progress=progress)
        self.learning.backfill()
        return counts


def check_optional_reason(reason: Any) -> str:
    from .validation import clean_text

    text = clean_text(reason, "reason").strip()
    if len(text) > 2000:
        raise InvalidInputError("reason is longer than 2000 characters; keep it to a sentence or two.")
    return redact_text(text)[0]


def _effective_source(source_type: str, metadata: str | None) -> str:
    """The source type a memory is trusted as: a flagged memory counts as ``llm`` (untrusted)."""
    if metadata and '"flagged"' in metadata and json.loads(metadata).get("flagged"):
        return "llm" if policy.SOURCE_TRUST[source_type] != policy.UNTRUSTED else source_type
    return source_type


def _sent_again(m: Memory) -> Memory:
    """A write whose text is already stored returns that memory, saying so if it was superseded."""
    m.duplicate_of = m.id
    if m.status == "superseded":
        m.correction = (f"the same text is {m.id}, superseded by {m.superseded_by}: nothing stored; "
                        f"if it holds again, restore {m.id}")
    return m


def _with_corrections(m: Memory, found: list[corrections.Finding], batch: dict[int, int] | None = None) -> Memory:
    """The memory a write returns, with what it superseded or contradicts and the line saying so."""
    if not found:
        return m
    def name(f: corrections.Finding) -> corrections.Finding:  # batch positions -> ids
        if f.old_id > 0:
            return f
        return dataclasses.replace(f, old_id=(batch or {}).get(-f.old_id - 1, 0))
    found = [g for g in map(name, found) if g.old_id > 0]
    m.supersedes = [f"mem_{f.old_id}" for f in found if f.action == "supersede"] or None
    m.conflicts_with = [f"mem_{f.old_id}" for f in found if f.action == "contradict"] or None
    m.correction = corrections.note(m.id, found)
    return m


def _count_redactions(conn, kinds: Sequence[str]) -> None:
    for kind in kinds:
        conn.execute(
            "INSERT INTO redactions (kind, count) VALUES (?, 1) ON CONFLICT(kind) DO UPDATE SET count = count + 1", (kind,)
        )

