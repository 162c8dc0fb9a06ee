"""Conversation memory, the public calls: recording turns (one transaction, one embedding
batch), a turn's window, a session's turns and short-term context (recent turns and running
summary), citations and ``why``. A turn is a memory of type ``episode``; the rows beside it
are written by the turn store.

May import the plumbing, the turn store, the write path, the episode text functions, storage,
models and validation; never the search, the facade or another service.
"""

from __future__ import annotations

import json
import math
import time
from typing import Any, Iterable, Sequence

from recallite_core.conversation.episodes import TURN_FIELDS, check_category, check_role, check_timestamp, check_window
from recallite_core.conversation.turns import TurnStore
from recallite_core.errors import InvalidInputError, MemoryNotFoundError
from recallite_core.models import Citation, Memory, SessionContext
from recallite_core.plumbing import Plumbing
from recallite_core.policy.rules import DEFAULT_RECALL_STATUSES
from recallite_core.text.validation import check_optional_name, derive_title, parse_id
from recallite_core.writer import Writer


class Conversations:
    """Turns, sessions and provenance."""

    def __init__(self, core: Plumbing, turns: TurnStore, writer: Writer):
        self.core = core
        self.turns = turns
        self.writer = writer

    # -- writing turns ----------------------------------------------------------------------------------------
    def record_turn(
        self,
        session: str,
        role: str,
        content: str,
        *,
        timestamp: Any = None,
        scope: str | None = None,
        metadata: dict | None = None,
        source: Any = None,
        category: str | None = None,
        tags: Sequence[str] | None = None,
        title: str | None = None,
        importance: float | None = None,
    ) -> Memory:
        """Record one conversation turn (or event) as an ``episode`` memory with its role, its
        position in the session (``episode.seq``, assigned in order) and its event time
        (``timestamp``: datetime, ISO 8601 or epoch seconds; now if omitted).

        Unlike remember(), identical turns are all kept: a conversation repeats itself.
        Long turns are split into sentence-level chunks with their own vectors."""
        return self.record_turns([{
            "session": session, "role": role, "content": content, "timestamp": timestamp, "scope": scope,
            "metadata": metadata, "source": source, "category": category, "tags": tags, "title": title,
            "importance": importance,
        }])[0]

    def record_turns(
        self,
        turns: Iterable[dict],
        *,
        session: str | None = None,
        scope: str | None = None,
        source: Any = None,
        progress: Any = None,
    ) -> list[Memory]:
        """Record many turns in one transaction with one embedding batch (all or nothing).

        Each item takes the keyword arguments of :meth:`record_turn` (``role`` and ``content``
        required); ``session``, ``scope`` and ``source`` given here are the defaults."""
        self.core.live()
        prepared = []
        now = time.time()
        for n, item in enumerate(turns):
            if not isinstance(item, dict):
                raise InvalidInputError(f"Turn {n} is not a dict with role and content.")
            unknown = set(item) - TURN_FIELDS
            if unknown:
                raise InvalidInputError(f"Turn {n} has unknown fields: {', '.join(sorted(unknown))}.")
            try:
                sess = check_optional_name(item.get("session") or session, "session", self.core.limits)
                if not sess:
                    raise InvalidInputError("session is required: the id of the conversation this turn belongs to.")
                role = check_role(item.get("role"))
                p = self.writer.prepare(
                    content=item.get("content"), type="episode", title=item.get("title"),
                    source=item.get("source") if item.get("source") is not None else source,
                    tags=item.get("tags"), metadata=item.get("metadata"), importance=item.get("importance"),
                    scope=item.get("scope") or scope, session=sess,
                )
                if item.get("title") is None:
                    self.writer.retitle(p, f"{role}: {derive_title(p.content, 80)}")
                event_at = check_timestamp(item.get("timestamp"), now)
                category = check_category(item.get("category"))
            except InvalidInputError as exc:
                raise type(exc)(f"Turn {n}: {exc}") from None
            prepared.append((p, role, event_at, category))
        if not prepared:
            return []
        plans = self.turns.chunk_plans([p for p, *_ in prepared], [r for _, r, *_ in prepared])
        vecs = self.core.embed([p.embed_text for p, *_ in prepared])
        with self.core.store.transaction() as conn:
            ids = self.writer.insert_many(conn, [(p, vec, None) for (p, *_), vec in zip(prepared, vecs)], now)
            self.turns.register_episodes(conn, [(mid, p, role, event_at) for mid, (p, role, event_at, _) in zip(ids, prepared)])
            self.turns.write_chunks_many(conn, list(zip(ids, plans)))
            categories = [(mid, category) for mid, (*_, category) in zip(ids, prepared) if category]
            if categories:
                conn.episodes.set_categories(categories)
            if progress:
                for k in range(len(prepared)):
                    progress(k + 1, len(prepared))
            loaded = conn.memories.load(ids)
        return [loaded[i] for i in ids]

    # -- reading episodes -------------------------------------------------------------------------------------------
    def episode_window(
        self, memory_id: str | int, window: int = 2, *, statuses: Sequence[str] | None = None
    ) -> list[Memory]:
        """The turn and its neighbours in the same session (seq ± ``window``), in order."""
        self.core.live()
        mid = parse_id(memory_id)
        w = check_window(window)
        with self.core.store.reading() as conn:
            ids = self.turns.window_ids(conn, mid, w, tuple(statuses or DEFAULT_RECALL_STATUSES))
            if ids is None:
                mtype = conn.memories.type_of(mid)
                if mtype is None:
                    raise MemoryNotFoundError(f"No memory mem_{mid}.")
                raise InvalidInputError(f"mem_{mid} is a {mtype}, not a conversation turn (episode); it has no window.")
            found = conn.memories.load(ids)
        return [found[i] for i in ids if i in found]

    def session_turns(
        self, session: str, *, scope: str | Sequence[str] | None = None, limit: int | None = None,
        statuses: Sequence[str] | None = None,
    ) -> list[Memory]:
        """The turns of a session in order (the last ``limit`` if given)."""
        self.core.live()
        sess = check_optional_name(session, "session", self.core.limits)
        if not sess:
            raise InvalidInputError("session is required.")
        sts = tuple(statuses or DEFAULT_RECALL_STATUSES)
        scopes = self._scopes(scope)
        with self.core.store.reading() as conn:
            ids = conn.episodes.session_latest(sess, scopes, sts, None if limit is None else max(0, int(limit)))[::-1]
            found = conn.memories.load(ids)
        return [found[i] for i in ids]

    def _scopes(self, scope) -> tuple[str, ...] | None:
        if scope is None:
            return None
        return self.core.recall_filter(scope, None, DEFAULT_RECALL_STATUSES, None, None).scopes

    # -- session memory ---------------------------------------------------------------------------------------------
    def session_context(
        self, session: str, *, last_n: int = 8, scope: str | Sequence[str] | None = None,
        summary_sentences: int | None = None,
    ) -> SessionContext:
        """Short-term memory of a session: its last ``last_n`` turns and a running extractive
        summary (the most informative sentences of the turns before those, in order)."""
        self.core.live()
        sess = check_optional_name(session, "session", self.core.limits)
        if not sess:
            raise InvalidInputError("session is required.")
        if isinstance(last_n, bool) or not isinstance(last_n, int) or last_n < 0:
            raise InvalidInputError(f"last_n must be a whole number >= 0, got {last_n!r}.")
        k = self.core.config.summary_sentences if summary_sentences is None else max(0, int(summary_sentences))
        scopes = self._scopes(scope)
        with self.core.store.reading() as conn:
            rows = conn.episodes.session_turns(sess, scopes, DEFAULT_RECALL_STATUSES)
            recent = rows[-last_n:] if last_n else []
            first_recent = recent[0][1] if recent else math.inf
            live = {r[0] for r in rows}
            pool: list[dict] = []
            for p in conn.episodes.summary_pools(sess, scopes):
                pool.extend(json.loads(p))
            found = conn.memories.load([r[0] for r in recent])
        older = [e for e in pool if e["m"] in live and e["s"] < first_recent]
        older.sort(key=lambda e: (-e["w"], e["s"], e["o"]))
        chosen = sorted(older[:k], key=lambda e: (e["s"], e["o"]))
        return SessionContext(
            session=sess,
            turns=[found[i] for i, _ in recent if i in found],
            summary="\n".join(f"{e.get('r', '')}: {e['t']}" if e.get("r") else e["t"] for e in chosen),
            summary_ids=list(dict.fromkeys(f"mem_{e['m']}" for e in chosen)),
            total_turns=len(rows),
        )

    # -- provenance -------------------------------------------------------------------------------------------------
    def cite(self, memory_id: str | int, episode_ids: Sequence[str | int]) -> list[Citation]:
        """Record that a memory (a fact, a preference, ...) came from these conversation turns.
        Citing twice is harmless. Returns every citation of the memory."""
        self.core.live()
        mid = parse_id(memory_id)
        if isinstance(episode_ids, (str, int)):
            episode_ids = [episode_ids]
        eids = list(dict.fromkeys(parse_id(e) for e in episode_ids))
        if not eids:
            raise InvalidInputError("Name at least one episode id to cite.")
        with self.core.store.transaction() as conn:
            self.turns.cite(conn, mid, eids)
            return self.turns.citations(conn, mid)

    def citations(self, memory_id: str | int) -> list[Citation]:
        """The citations of a memory (its source turns' ids)."""
        self.core.live()
        mid = parse_id(memory_id)
        with self.core.store.reading() as conn:
            return self.turns.citations(conn, mid)

    def why(self, memory_id: str | int, *, window: int = 0) -> list[Memory]:
        """"Why do you think that?": the conversation turns a memory came from, in conversation
        order — its citations, and those of the memories it was derived_from (e.g. by
        consolidate). ``window`` adds that many neighbouring turns around each source."""
        self.core.live()
        mid = parse_id(memory_id)
        w = check_window(window)
        with self.core.store.reading() as conn:
            if not conn.memories.exists(mid):
                raise MemoryNotFoundError(f"No memory mem_{mid}.")
            sources = conn.episodes.sources_of(mid)
            ids: list[int] = []
            for s in sources:
                ids.extend(self.turns.window_ids(conn, s, w, DEFAULT_RECALL_STATUSES) or [s] if w else [s])
            ids = list(dict.fromkeys(ids))
            found = conn.memories.load(ids)
        mems = [found[i] for i in ids if i in found]
        mems.sort(key=lambda m: (m.episode.timestamp if m.episode else m.created_at, m.scope,
                                 m.episode.session or "" if m.episode else "", m.episode.seq if m.episode else 0))
        return mems
