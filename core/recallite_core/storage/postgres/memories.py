"""Memory rows: models, filters, the columns ranking, trust and promotion read."""

from __future__ import annotations

from typing import Any, Collection, Sequence

import numpy as np

from recallite_core.models import Memory
from recallite_core.storage.base import MemoryFilter, NewMemoryRow, TrustRow
from recallite_core.storage.postgres.filters import where_sql
from recallite_core.storage.postgres.locking import UnitLocks
from recallite_core.storage.postgres.rows import SELECT_MEMORIES, TRUST_COLUMNS, load_memories, memory_from_select

_LE_F4 = np.dtype("<f4")
#: A NewMemoryRow's columns (base.py) as PostgreSQL array element types, and the Python type each
#: value is made before it goes into its array (an array takes one element type).
_NEW_ROW_TYPES = ("text", "text", "text", "text", "text", "text", "text", "text", "text", "text", "float8", "float8",
                  "float8", "int", "int", "int", "float8", "float8", "float8", "text", "int", "float8")
_NEW_ROW_CASTS = tuple({"text": str, "float8": float, "int": int}[t] for t in _NEW_ROW_TYPES)


class PostgresMemories:
    def __init__(self, conn: Any, locks: UnitLocks | None = None):
        self._conn = conn
        self._locks = locks or UnitLocks(conn)

    def load(self, ids: Sequence[int]) -> dict[int, Memory]:
        return load_memories(self._conn, list(ids))

    def matching(self, ids: Collection[int] | None, flt: MemoryFilter) -> list[int]:
        """The ids (among ``ids``; None: all memories) that pass the filter, in id order."""
        where, params = where_sql(flt)
        if ids is None:
            return [r[0] for r in self._conn.execute(f"SELECT m.id FROM memories m WHERE {where} ORDER BY m.id", params)]
        if not ids:
            return []
        return [r[0] for r in self._conn.execute(
            f"SELECT m.id FROM memories m WHERE m.id = ANY(%s) AND {where} ORDER BY m.id", [list(ids), *params])]

    def expired(self, valid_at: float) -> set[int]:
        return {r[0] for r in self._conn.execute(
            "SELECT id FROM memories WHERE valid_until IS NOT NULL AND valid_until <= %s", (valid_at,))}

    def trust_rows(self, ids: Sequence[int]) -> list[TrustRow]:
        kept = (getattr(self._conn, "facts", None) or {}).get("trust_rows")
        if kept is not None and kept[1].issuperset(ids):  # read with these memories (rows.py)
            rows = [kept[0][i] for i in dict.fromkeys(ids) if i in kept[0]]
            return [TrustRow(mid, st, sid, bool(behavioral), created, validated)
                    for mid, st, sid, behavioral, created, validated in rows]
        # metadata->'behavioral' comes back as its JSON value; bool() reads it as SQLite's
        # json_extract result would be read (true/1/"x" are true; false/0/null/absent are not).
        return [TrustRow(mid, st, sid, bool(behavioral), created, validated)
                for mid, st, sid, behavioral, created, validated in self._conn.execute(
                    f"SELECT {TRUST_COLUMNS} FROM memories m WHERE id = ANY(%s)", (list(ids),))]

    def candidates(self, ids: Sequence[int]) -> dict[int, tuple[float, str]]:
        return {mid: (conf, meta) for mid, conf, meta in self._conn.execute(
            "SELECT id, confidence, metadata::text FROM memories WHERE status = 'candidate' AND id = ANY(%s)",
            (list(ids),))}

    def page(self, flt: MemoryFilter, limit: int, offset: int) -> tuple[list[Memory], int]:
        """Memories passing the filter, newest first, from ``offset``; and how many pass it."""
        where, params = where_sql(flt)
        rows = self._conn.execute(f"{SELECT_MEMORIES} WHERE {where} ORDER BY m.id DESC LIMIT %s OFFSET %s",
                                  [*params, limit, offset]).fetchall()
        total = self._conn.execute(f"SELECT count(*) FROM memories m WHERE {where}", params).fetchone()[0]
        return [memory_from_select(r) for r in rows], total

    def exists(self, mid: int) -> bool:
        return self._conn.execute("SELECT 1 FROM memories WHERE id = %s", (mid,)).fetchone() is not None

    def scope_counts(self) -> dict[str, int]:
        """Memories per scope (any status), largest first, ties by name (bytewise, as SQLite)."""
        return dict(self._conn.execute(
            'SELECT scope, count(*) FROM memories GROUP BY scope ORDER BY 2 DESC, scope COLLATE "C"').fetchall())

    def scope_holds_any(self, scope: str) -> bool:
        """Whether any memory (any status) is stored in ``scope``: one step of the scope-first index."""
        return self._conn.execute("SELECT 1 FROM memories WHERE scope = %s LIMIT 1", (scope,)).fetchone() is not None

    def created_at(self, ids: Sequence[int]) -> dict[int, float]:
        return dict(self._conn.execute("SELECT id, created_at FROM memories WHERE id = ANY(%s)", (list(ids),)).fetchall())

    def policy_columns(self, ids: Sequence[int]) -> list[tuple[int, str, str, float, float, float]]:
        """(id, type, status, confidence, usefulness, importance) of the rows among ``ids``."""
        return self._conn.execute(
            "SELECT id, type, status, confidence, usefulness, importance FROM memories WHERE id = ANY(%s)",
            (list(ids),)).fetchall()

    def summaries(self, ids: Sequence[int]) -> list[tuple[int, str, str, str, str, str]]:
        """(id, title, status, scope, source type, metadata JSON) of the rows among ``ids``."""
        return self._conn.execute(
            "SELECT id, title, status, scope, source_type, metadata::text FROM memories WHERE id = ANY(%s)",
            (list(ids),)).fetchall()

    def record_access(self, ids: Sequence[int], now: float) -> None:
        """One more access for each of ``ids``, at ``now``."""
        # Rows are locked in id order, as every other locking read here does: two writers
        # locking overlapping rows in different (physical) orders could deadlock. NO KEY UPDATE
        # (what an UPDATE of these columns takes anyway) lets foreign-key checks (KEY SHARE) pass.
        self._conn.execute(
            "UPDATE memories m SET access_count = m.access_count + 1, last_accessed_at = %s FROM "
            "(SELECT id FROM memories WHERE id = ANY(%s) ORDER BY id FOR NO KEY UPDATE) l WHERE m.id = l.id",
            (now, list(ids)))

    def mark_validated(self, mid: int, confidence: float, metadata: str, now: float) -> None:
        self._conn.execute(
            "UPDATE memories SET status = 'validated', confidence = %s, metadata = %s::jsonb, updated_at = %s, "
            "validated_at = %s WHERE id = %s", (confidence, metadata, now, now, mid))

    # -- reads added with the engine's services (same answers as storage/sqlite/memories.py) -------
    def newest(self, flt: MemoryFilter, limit: int, offset: int) -> list[Memory]:
        """Memories passing the filter, newest first, from ``offset`` (page() without the total)."""
        where, params = where_sql(flt)
        rows = self._conn.execute(f"{SELECT_MEMORIES} WHERE {where} ORDER BY m.id DESC LIMIT %s OFFSET %s",
                                  [*params, limit, offset]).fetchall()
        return [memory_from_select(r) for r in rows]

    def newest_ids(self, flt: MemoryFilter, limit: int) -> list[int]:
        where, params = where_sql(flt)
        return [r[0] for r in self._conn.execute(
            f"SELECT m.id FROM memories m WHERE {where} ORDER BY m.id DESC LIMIT %s", [*params, int(limit)])]

    def count(self) -> int:
        return self._conn.execute("SELECT count(*) FROM memories").fetchone()[0]

    def all_ids(self) -> list[int]:
        return [r[0] for r in self._conn.execute("SELECT id FROM memories ORDER BY id")]

    def expired_among(self, flt: MemoryFilter, now: float) -> list[int]:
        where, params = where_sql(flt)
        return [r[0] for r in self._conn.execute(
            f"SELECT m.id FROM memories m WHERE {where} AND m.valid_until IS NOT NULL AND m.valid_until <= %s "
            "ORDER BY m.id", [*params, now])]

    def usefulness_of(self, ids: Sequence[int]) -> list[tuple[int, float, str]]:
        # In a concurrent write the rows are locked: feedback reads usefulness to write it back.
        return self._conn.execute("SELECT id, usefulness, status FROM memories WHERE id = ANY(%s) ORDER BY id"
                                  + self._locks.for_update, (list(ids),)).fetchall()

    def type_of(self, mid: int) -> str | None:
        row = self._conn.execute("SELECT type FROM memories WHERE id = %s", (mid,)).fetchone()
        return None if row is None else row[0]

    def types_of(self, ids: Sequence[int]) -> dict[int, str]:
        return dict(self._conn.execute("SELECT id, type FROM memories WHERE id = ANY(%s)", (list(ids),)).fetchall())

    def confidence_of(self, mid: int) -> float | None:
        row = self._conn.execute("SELECT confidence FROM memories WHERE id = %s", (mid,)).fetchone()
        return None if row is None else row[0]

    def state(self, mid: int) -> tuple[str, str, float, str] | None:
        """(status, source type, confidence, metadata JSON) of one memory."""
        return self._conn.execute("SELECT status, source_type, confidence, metadata::text FROM memories WHERE id = %s"
                                  + self._locks.for_update, (mid,)).fetchone()

    def states_of(self, ids: Sequence[int]) -> list[tuple[int, str, str, str]]:
        return self._conn.execute("SELECT id, status, source_type, metadata::text FROM memories WHERE id = ANY(%s) "
                                  "ORDER BY id" + self._locks.for_update, (list(ids),)).fetchall()

    def supersede_state(self, mid: int) -> tuple[str, int | None, str, str] | None:
        return self._conn.execute("SELECT status, superseded_by, metadata::text, source_type FROM memories WHERE id = %s"
                                  + self._locks.for_update, (mid,)).fetchone()

    def source_of(self, mid: int) -> tuple[str, str] | None:
        return self._conn.execute("SELECT source_type, metadata::text FROM memories WHERE id = %s", (mid,)).fetchone()

    def link_ends(self, ids: Sequence[int]) -> list[tuple[int, str, str | None, float, str]]:
        # relate() writes the ends' confidence from what it reads here.
        return self._conn.execute("SELECT id, source_type, source_id, confidence, metadata::text FROM memories "
                                  "WHERE id = ANY(%s) ORDER BY id" + self._locks.for_update, (list(ids),)).fetchall()

    def texts(self) -> list[tuple[int, str, str]]:
        return self._conn.execute("SELECT id, title, content FROM memories ORDER BY id").fetchall()

    def texts_of(self, ids: Sequence[int]) -> list[tuple[int, str, str]]:
        return self._conn.execute("SELECT id, title, content FROM memories WHERE id = ANY(%s) ORDER BY id",
                                  (list(ids),)).fetchall()

    def contents(self) -> list[tuple[int, str, str]]:
        return self._conn.execute("SELECT id, type, content FROM memories ORDER BY id").fetchall()

    def classified(self, flt: MemoryFilter) -> list[tuple[int, str, str, str]]:
        where, params = where_sql(flt)
        return self._conn.execute(f"SELECT m.id, m.scope, m.type, m.metadata::text FROM memories m WHERE {where} "
                                  "ORDER BY m.id", params).fetchall()

    def merged_metadata(self) -> list[str]:
        """The metadata JSON of memories that may be merges (its text names consolidated_from)."""
        return [r[0] for r in self._conn.execute(
            "SELECT metadata::text FROM memories WHERE strpos(metadata::text, 'consolidated_from') > 0 ORDER BY id")]

    def comparable(self, ids: Sequence[int]) -> list[tuple[int, str, str, str, str]]:
        return self._conn.execute("SELECT id, content, source_type, metadata::text, type FROM memories "
                                  "WHERE id = ANY(%s) ORDER BY id", (list(ids),)).fetchall()

    def versions(self, mid: int) -> tuple[list[int], list[int]]:
        """(the versions it superseded, oldest first, ending with itself; the versions that
        superseded it, in order), following superseded_by both ways (at most 10000 steps)."""
        older = [r[0] for r in self._conn.execute(
            "WITH RECURSIVE back(id, n) AS (SELECT %s::bigint, 0 UNION SELECT m.id, back.n + 1 FROM memories m "
            "JOIN back ON m.superseded_by = back.id WHERE back.n < 10000) SELECT id FROM back ORDER BY n DESC", (mid,))]
        newer = [r[0] for r in self._conn.execute(
            "WITH RECURSIVE fwd(id, n) AS (SELECT superseded_by, 1 FROM memories WHERE id = %s AND superseded_by IS NOT NULL "
            "UNION SELECT m.superseded_by, fwd.n + 1 FROM memories m JOIN fwd ON m.id = fwd.id "
            "WHERE m.superseded_by IS NOT NULL AND fwd.n < 10000) SELECT id FROM fwd ORDER BY n", (mid,))]
        return older, newer

    # -- duplicates ---------------------------------------------------------------------------------
    def duplicate_of(self, content_hash: str, scope: str, other: str | None = None) -> int | None:
        # A concurrent write locks the text first (both spellings: "X" and "X." queue on the same
        # locks): whoever stores it first wins. The lock and the check go out together (one round
        # trip); the check is a later statement, so it sees every commit made before the lock was granted.
        with self._conn.pipeline():
            self._locks.texts([content_hash, other] if other else [content_hash])
            cur = self._conn.execute(
                "SELECT id FROM memories WHERE content_hash IN (%s, %s) AND scope = %s "
                "ORDER BY content_hash != %s, status = 'superseded', id LIMIT 1",
                (content_hash, other or content_hash, scope, content_hash))
        row = cur.fetchone()
        return row[0] if row else None

    def live_duplicate_of(self, content_hash: str, scope: str) -> int | None:
        row = self._conn.execute(
            "SELECT id FROM memories WHERE content_hash = %s AND scope = %s AND status <> 'superseded' ORDER BY id LIMIT 1",
            (content_hash, scope)).fetchone()
        return None if row is None else row[0]

    def with_hashes(self, hashes: Sequence[str]) -> list[tuple[int, str, str, bool]]:
        with self._conn.pipeline():  # as duplicate_of: the text locks, then the check
            self._locks.texts(hashes)
            cur = self._conn.execute("SELECT id, content_hash, scope, status = 'superseded' FROM memories "
                                     "WHERE content_hash = ANY(%s) ORDER BY id", (list(hashes),))
        return [(mid, h, sc, bool(stale)) for mid, h, sc, stale in cur.fetchall()]

    # -- writes -------------------------------------------------------------------------------------
    def insert_many(self, rows: Sequence[NewMemoryRow], vectors: Sequence[bytes],
                    ids: Sequence[int] | None = None) -> list[int]:
        """Insert new memories with their vectors (little-endian float32 bytes each); returns their
        ids, in order. The ids come from the identity sequence (never reused), or are ``ids`` (a
        restore keeping a backup's; none of them in use; the sequence then moves past them); the seq triggers
        stamp each row with this transaction's id (no shared row is updated, so concurrent
        writers do not queue: docs/postgres.md, "The change feed"); the keyword column is generated."""
        if not rows:
            return []
        cols = [list(c) for c in zip(*rows)]
        cols = [[None if v is None else cast(v) for v in col] for cast, col in zip(_NEW_ROW_CASTS, cols)]
        embeddings = [np.frombuffer(blob, dtype=_LE_F4) for blob in vectors]
        names = ("type, title, content, status, source_type, source_id, scope, session, tags, metadata, confidence, "
                 "usefulness, importance, success_count, failure_count, access_count, last_accessed_at, created_at, "
                 "updated_at, content_hash, tokens, valid_until")
        # One statement, one round trip: ids drawn in input order, the memories and their vectors
        # inserted together (the foreign key is checked at the statement's end). Over column
        # arrays, so the keyword totals' statement trigger fires once for the batch.
        given = ids is not None
        source = "x.kept" if given else "nextval(pg_get_serial_sequence('memories', 'id'))"
        kept = ", %s::bigint[]" if given else ""
        out = [r[0] for r in self._conn.execute(
            f"WITH u AS MATERIALIZED (SELECT {source} AS id, x.* FROM "
            "(SELECT * FROM unnest(%b::vector[], " + ", ".join(f"%s::{t}[]" for t in _NEW_ROW_TYPES)
            + f"{kept}) WITH ORDINALITY AS x(embedding, {names}{', kept' if given else ''}, ord) ORDER BY ord) x), "
            f"m AS (INSERT INTO memories (id, {names}) "
            "SELECT u.id, u.type, u.title, u.content, u.status, u.source_type, u.source_id, u.scope, u.session, "
            "u.tags::jsonb, u.metadata::jsonb, u.confidence, u.usefulness, u.importance, u.success_count, "
            "u.failure_count, u.access_count, u.last_accessed_at, u.created_at, u.updated_at, u.content_hash, "
            "u.tokens, u.valid_until FROM u ORDER BY u.ord), "
            "v AS (INSERT INTO vectors (memory_id, embedding) SELECT u.id, u.embedding FROM u ORDER BY u.ord) "
            "SELECT id FROM u ORDER BY ord",
            [embeddings, *cols, *([list(ids)] if ids is not None else [])])]
        if given:  # new memories continue after the kept ids
            self._conn.execute("SELECT setval(pg_get_serial_sequence('memories', 'id'), "
                               "greatest((SELECT max(id) FROM memories), 1))")
        return out

    def set_status(self, mid: int, status: str, confidence: float, metadata: str, now: float,
                   validated_at: float | None) -> None:
        """A status change; ``validated_at`` (None: unchanged) restarts trust's decay."""
        self._conn.execute(
            "UPDATE memories SET status = %s, confidence = %s, metadata = %s::jsonb, updated_at = %s, "
            "validated_at = coalesce(%s, validated_at) WHERE id = %s",
            (status, confidence, metadata, now, validated_at, mid))

    def mark_superseded(self, mid: int, by: int, metadata: str, now: float) -> None:
        self._conn.execute("UPDATE memories SET status = 'superseded', superseded_by = %s, metadata = %s::jsonb, "
                           "updated_at = %s WHERE id = %s", (by, metadata, now, mid))

    def restore_status(self, mid: int, status: str, metadata: str, now: float) -> None:
        """Undo a supersede: the status it had, no superseded_by."""
        self._conn.execute("UPDATE memories SET status = %s, superseded_by = NULL, metadata = %s::jsonb, "
                           "updated_at = %s WHERE id = %s", (status, metadata, now, mid))

    def mark_deprecated(self, mid: int, metadata: str, now: float) -> None:
        self._conn.execute("UPDATE memories SET status = 'deprecated', metadata = %s::jsonb, updated_at = %s "
                           "WHERE id = %s", (metadata, now, mid))

    def retype(self, mid: int, type: str, metadata: str, now: float) -> None:
        self._conn.execute("UPDATE memories SET type = %s, metadata = %s::jsonb, updated_at = %s WHERE id = %s",
                           (type, metadata, now, mid))

    def set_metadata(self, mid: int, metadata: str, now: float) -> None:
        self._conn.execute("UPDATE memories SET metadata = %s::jsonb, updated_at = %s WHERE id = %s", (metadata, now, mid))

    def set_confidence(self, mid: int, confidence: float, now: float) -> None:
        self._conn.execute("UPDATE memories SET confidence = %s, updated_at = %s WHERE id = %s", (confidence, now, mid))

    def set_usefulness(self, mid: int, usefulness: float, now: float) -> None:
        self._conn.execute("UPDATE memories SET usefulness = %s, updated_at = %s WHERE id = %s", (usefulness, now, mid))

    def apply_outcomes(self, rows: Sequence[tuple[float, int, int, float, int]]) -> None:
        """(new usefulness, successes to add, failures to add, now, id) per memory judged by a feedback."""
        if not rows:
            return
        with self._conn.cursor() as cur:
            cur.executemany("UPDATE memories SET usefulness = %s, success_count = success_count + %s, "
                            "failure_count = failure_count + %s, updated_at = %s WHERE id = %s", list(rows))

    def record_behaviour(self, mid: int, metadata: str, status: str, importance: float, now: float) -> None:
        """A behaviour seen again: its counts (metadata), status, importance (never lowered); a
        status change restarts trust's decay."""
        self._conn.execute(
            "UPDATE memories SET metadata = %s::jsonb, status = %s, importance = greatest(importance, %s), "
            "updated_at = %s, validated_at = CASE WHEN %s <> status THEN %s ELSE validated_at END WHERE id = %s",
            (metadata, status, importance, now, status, now, mid))

    def delete(self, mid: int) -> bool:
        """Delete a memory (what hangs off it goes by foreign key) and blank what the retrieval
        log may quote of it: the queries that surfaced it and the reasons of feedback on them.
        False if there was no such memory."""
        shown_in = "SELECT retrieval_id FROM retrieval_items WHERE memory_id = %s"
        self._conn.execute(f"UPDATE retrievals SET query = '[forgotten]' WHERE id IN ({shown_in})", (mid,))
        self._conn.execute(f"UPDATE feedback SET reason = NULL WHERE retrieval_id IN ({shown_in}) OR used_ids LIKE %s",
                           (mid, f'%"mem_{mid}"%'))
        return self._conn.execute("DELETE FROM memories WHERE id = %s", (mid,)).rowcount > 0

    def purge(self, ids: Sequence[int]) -> None:
        """Delete these memories (with what hangs off them), leaving the retrieval log as it is."""
        if ids:
            self._conn.execute("DELETE FROM memories WHERE id = ANY(%s)", (list(ids),))
