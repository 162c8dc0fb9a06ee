"""Conversation projections written beside a memory, inside the caller's write transaction:
a turn's place in its session (episodes, windows, running summaries), sentence chunks with
their vectors, categories and citations, and what deleting a turn leaves behind. The write
path, the conversation calls, import, reconcile and reindex all use these public methods.

May import the plumbing, the episode text functions, storage, models; never another
service module or the facade.
"""

from __future__ import annotations

import json
import time
from typing import Any, Iterable, Sequence

from recallite_core.conversation.episode_windows import write_windows
from recallite_core.conversation.episodes import chunk_spans, merge_pool, summary_entries
from recallite_core.errors import InvalidInputError, MemoryNotFoundError
from recallite_core.models import Citation, ForgetResult
from recallite_core.plumbing import Plumbing
from recallite_core.storage.codec import encode_vector, ts


class TurnStore:
    """Episode positions, chunks, categories, citations and session summaries of stored memories."""

    def __init__(self, core: Plumbing):
        self.core = core

    def register_episode(self, conn, mid: int, p: Any, role: str, event_at: float) -> int:
        """The episodes row (next seq in scope + session) and the session summary update."""
        return self.register_episodes(conn, [(mid, p, role, event_at)])[mid]

    def register_episodes(self, conn, turns: Sequence[tuple[int, Any, str, float]]) -> dict[int, int]:
        """register_episode for many new turns (memory id, prepared, role, event time), in
        order: the same rows as one call per turn, with a few statements per session."""
        sessions: dict[tuple[str, str], list[tuple[int, Any, str, float]]] = {}
        for turn in turns:
            sessions.setdefault((turn[1].scope, turn[1].session or ""), []).append(turn)
        seqs: dict[int, int] = {}
        rows = []
        for (scope, session), group in sessions.items():
            last = conn.episodes.last_seq(scope, session)
            for k, (mid, p, role, event_at) in enumerate(group, start=1):
                seqs[mid] = last + k
                rows.append((mid, scope, session, role, last + k, event_at))
        conn.episodes.add_turns(rows)
        for (scope, session), group in sessions.items():
            first = seqs[group[0][0]]
            # One fold per turn, as when turns arrive one by one.
            self.summarise(conn, scope, session, [(mid, seqs[mid], role, p.content) for mid, p, role, _ in group],
                            each=True)
            # The previous turn's row too; the new turns' ids are new, so they have no row to delete.
            write_windows(conn, scope, session, range(first - 1, first + len(group)), absent={t[0] for t in group})
        return seqs

    def set_category(self, conn, mid: int, category: str | None) -> None:
        if category:
            conn.episodes.set_categories([(mid, category)])

    # -- chunks ---------------------------------------------------------------------------------------------------
    def chunks_of(self, text: str) -> list[tuple[int, int]]:
        """The chunk spans a memory text gets; [] when it is short enough to be one chunk."""
        cfg = self.core.config
        if len(text) <= cfg.chunk_threshold_chars:
            return []
        spans = chunk_spans(text, cfg.chunk_max_chars, cfg.chunk_min_chars)
        return spans if len(spans) > 1 else []

    def chunk_plans(self, prepared: Sequence[Any], roles: Sequence[str | None] | None = None) -> list[list]:
        """For each prepared memory: [(ord, start, stop, text, vector)], embedded in one batch."""
        plans: list[list] = []
        texts: list[str] = []
        for i, p in enumerate(prepared):
            spans = self.chunks_of(p.content) if p.type in self.core.config.chunk_types else []
            role = roles[i] if roles else None
            plan = []
            for o, (a, b) in enumerate(spans):
                plan.append([o, a, b, p.content[a:b]])
                texts.append(f"{role}: {p.content[a:b]}" if role else p.content[a:b])
            plans.append(plan)
        if texts:
            vecs = iter(self.core.embed(texts))
            for plan in plans:
                for entry in plan:
                    entry.append(next(vecs))
        return plans

    def write_chunks(self, conn, mid: int, plan: list) -> int:
        return self.write_chunks_many(conn, [(mid, plan)])

    def write_chunks_many(self, conn, plans: Sequence[tuple[int, list]]) -> int:
        """The chunk rows of several memories (id, plan), in order, in one statement."""
        dims = self.core.embedder.dimensions
        rows = [(mid, o, a, b, text, encode_vector(v, dims)) for mid, plan in plans for o, a, b, text, v in plan]
        if rows:
            conn.episodes.add_chunks(rows)
        return len(rows)

    def rechunk(self, ids: Sequence[int] | None = None) -> int:
        """(Re)build the chunks of the given memories (all chunkable ones if None). Returns chunks written."""
        types = tuple(self.core.config.chunk_types)
        if not types:
            return 0
        with self.core.store.reading() as conn:
            rows = conn.episodes.chunk_sources(types if ids is None else None, ids)

        class _P:  # what chunk_plans reads
            def __init__(self, t, c):
                self.type, self.content = t, c

        plans = self.chunk_plans([_P(t, c) for _, t, c, _ in rows], [r for *_, r in rows])
        written = 0
        with self.core.store.transaction() as conn:
            for (mid, *_), plan in zip(rows, plans):
                conn.episodes.delete_chunks([mid])
                if conn.memories.exists(mid):
                    written += self.write_chunks(conn, mid, plan)
            self.prune_chunk_tombstones(conn)
        return written

    def prune_chunk_tombstones(self, conn, force: bool = False) -> None:
        conn.episodes.prune_chunk_tombstones(None if force else self.core.config.max_tombstones)

    # -- reading episodes -------------------------------------------------------------------------------------------
    @staticmethod
    def window_ids(conn, mid: int, w: int, statuses: tuple[str, ...]) -> list[int] | None:
        row = conn.episodes.place_of(mid)
        if row is None:
            return None
        scope, session, seq = row
        return conn.episodes.window(scope, session, seq - w, seq + w, statuses, mid)

    def summarise(self, conn, scope: str, session: str, turns: list[tuple[int, int, str, str]], *,
                   each: bool = False) -> None:
        """Fold new turns (id, seq, role, text) into the session's running summary pool: all
        in one merge, or (``each``) one merge per turn, as if they had come one at a time."""
        row = conn.episodes.summary(scope, session)
        pool = json.loads(row[0]) if row else []
        count = row[1] if row else 0
        words: dict[str, set[str]] = {}
        for part in ([[t] for t in turns] if each else [turns]):
            new = [e for mid, seq, role, text in part for e in summary_entries(mid, seq, role, text)]
            pool = merge_pool(pool, new, self.core.config.summary_pool, words)
        conn.episodes.put_summary(scope, session, json.dumps(pool, ensure_ascii=False), count + len(turns), time.time())

    def rebuild_summaries(self, conn, keys: Iterable[tuple[str, str]] | None = None) -> int:
        """Recompute session summaries from the turns (all sessions if ``keys`` is None)."""
        if keys is None:
            conn.episodes.clear_summaries()
            keys = conn.episodes.sessions()
        n = 0
        for scope, session in keys:
            conn.episodes.drop_summary(scope, session)
            rows = conn.episodes.session_texts(scope, session)
            if rows:
                self.summarise(conn, scope, session, rows)
                n += 1
        return n

    def cite(self, conn, mid: int, eids: list[int]) -> None:
        if mid in eids:
            raise InvalidInputError(f"mem_{mid} cannot cite itself.")
        if not conn.memories.exists(mid):
            raise MemoryNotFoundError(f"No memory mem_{mid}.")
        types = conn.memories.types_of(eids)
        missing = [f"mem_{e}" for e in eids if e not in types]
        if missing:
            raise MemoryNotFoundError(f"Cannot cite {', '.join(missing)}: no such memory.")
        wrong = [f"mem_{e} ({types[e]})" for e in eids if types[e] != "episode"]
        if wrong:
            raise InvalidInputError(
                f"Citations point to conversation turns (type episode); {', '.join(wrong)} is not one. "
                "Link other memories with relate()."
            )
        conn.episodes.cite(mid, eids, time.time())

    @staticmethod
    def citations(conn, mid: int) -> list[Citation]:
        return [Citation(memory_id=f"mem_{m}", episode_id=f"mem_{e}", created_at=ts(c))
                for m, e, c in conn.episodes.citations(mid)]

    def before_forget(self, conn, mid: int) -> dict:
        chunks, citations, citing = conn.episodes.links_of(mid)
        place = conn.episodes.place_of(mid)
        return {"citing": citing, "chunks": chunks, "citations": citations,
                "session": None if place is None else place[:2]}

    def after_forget(self, conn, mid: int, before: dict, orphans: str) -> ForgetResult:
        res = ForgetResult(id=f"mem_{mid}", chunks=before["chunks"], citations=before["citations"])
        if before["session"] is not None:
            scope, session = before["session"]
            row = conn.episodes.summary(scope, session)
            if row and row[1] <= 1:  # its last turn: no session is left to summarise (reconcile counts a row as drift)
                conn.episodes.drop_summary(scope, session)
            elif row:
                pool = [e for e in json.loads(row[0]) if e["m"] != mid]
                conn.episodes.put_summary(scope, session, json.dumps(pool, ensure_ascii=False), row[1] - 1, time.time())
        left = [m for m in dict.fromkeys(before["citing"]) if not conn.episodes.cites_any(m)]
        res.orphans = [f"mem_{m}" for m in left]
        if orphans == "remove" and left:
            for m in left:  # as forget() does: the log may quote them too
                conn.memories.delete(m)
            res.removed = list(res.orphans)
        self.prune_chunk_tombstones(conn)
        return res

