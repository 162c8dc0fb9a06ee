"""Memory rows: models, filters, the columns ranking, trust and promotion read."""

from __future__ import annotations

import sqlite3
from typing import Collection, Sequence

from recallite_core.models import Memory
from recallite_core.storage.base import MemoryFilter, NewMemoryRow, TrustRow, chunked
from recallite_core.storage.sqlite.filters import marks, where_sql
from recallite_core.storage.sqlite.rows import SELECT_MEMORIES, load_memories, memory_from_select


class SqliteMemories:
    def __init__(self, conn: sqlite3.Connection):
        self._conn = conn

    def load(self, ids: Sequence[int]) -> dict[int, Memory]:
        return load_memories(self._conn, list(ids))

    def matching(self, ids: Collection[int] | None, flt: MemoryFilter) -> list[int]:
        """The ids (among ``ids``; None: all memories) that pass the filter."""
        where, params = where_sql(flt)
        if ids is None:
            return [r[0] for r in self._conn.execute(f"SELECT m.id FROM memories m WHERE {where}", params)]
        out: list[int] = []
        for chunk in chunked(ids, 900):
            out.extend(r[0] for r in self._conn.execute(
                f"SELECT m.id FROM memories m WHERE m.id IN ({marks(len(chunk))}) AND {where}", [*chunk, *params]))
        return out

    def expired(self, valid_at: float) -> set[int]:
        return {r[0] for r in self._conn.execute(
            "SELECT id FROM memories WHERE valid_until IS NOT NULL AND valid_until <= ?", (valid_at,))}

    def trust_rows(self, ids: Sequence[int]) -> list[TrustRow]:
        out: list[TrustRow] = []
        for chunk in chunked(ids):
            for mid, st, sid, behavioral, created, validated in self._conn.execute(
                "SELECT id, source_type, source_id, json_extract(metadata, '$.behavioral'), created_at, validated_at "
                f"FROM memories WHERE id IN ({marks(len(chunk))})", chunk,
            ):
                out.append(TrustRow(mid, st, sid, bool(behavioral), created, validated))
        return out

    def candidates(self, ids: Sequence[int]) -> dict[int, tuple[float, str]]:
        out: dict[int, tuple[float, str]] = {}
        for chunk in chunked(ids):
            for mid, conf, meta in self._conn.execute(
                f"SELECT id, confidence, metadata FROM memories WHERE status = 'candidate' AND id IN ({marks(len(chunk))})",
                chunk,
            ):
                out[mid] = (conf, meta)
        return out

    def page(self, flt: MemoryFilter, limit: int, offset: int) -> tuple[list[Memory], int]:
        """Memories passing the filter, newest first, from ``offset``; and how many pass it."""
        where, params = where_sql(flt)
        rows = self._conn.execute(f"{SELECT_MEMORIES} WHERE {where} ORDER BY m.id DESC LIMIT ? OFFSET ?",
                                  [*params, limit, offset]).fetchall()
        total = self._conn.execute(f"SELECT count(*) FROM memories m WHERE {where}", params).fetchone()[0]
        return [memory_from_select(r) for r in rows], total

    def exists(self, mid: int) -> bool:
        return self._conn.execute("SELECT 1 FROM memories WHERE id = ?", (mid,)).fetchone() is not None

    def scope_counts(self) -> dict[str, int]:
        """Memories per scope (any status), largest first, ties by name."""
        return dict(self._conn.execute("SELECT scope, count(*) FROM memories GROUP BY scope ORDER BY 2 DESC, 1"))

    def scope_holds_any(self, scope: str) -> bool:
        """Whether any memory (any status) is stored in ``scope``: one step of the scope-first index."""
        return self._conn.execute("SELECT 1 FROM memories WHERE scope = ? LIMIT 1", (scope,)).fetchone() is not None

    def created_at(self, ids: Sequence[int]) -> dict[int, float]:
        out: dict[int, float] = {}
        for chunk in chunked(ids):
            out.update(self._conn.execute(f"SELECT id, created_at FROM memories WHERE id IN ({marks(len(chunk))})", chunk))
        return out

    def policy_columns(self, ids: Sequence[int]) -> list[tuple[int, str, str, float, float, float]]:
        """(id, type, status, confidence, usefulness, importance) of the rows among ``ids``."""
        out: list[tuple[int, str, str, float, float, float]] = []
        for chunk in chunked(ids, 900):
            out += self._conn.execute(
                "SELECT id, type, status, confidence, usefulness, importance FROM memories "
                f"WHERE id IN ({marks(len(chunk))})", chunk).fetchall()
        return out

    def summaries(self, ids: Sequence[int]) -> list[tuple[int, str, str, str, str, str]]:
        """(id, title, status, scope, source type, metadata JSON) of the rows among ``ids``."""
        return self._conn.execute(
            f"SELECT id, title, status, scope, source_type, metadata FROM memories WHERE id IN ({marks(len(ids))})",
            list(ids)).fetchall()

    def record_access(self, ids: Sequence[int], now: float) -> None:
        """One more access for each of ``ids``, at ``now``."""
        self._conn.execute(
            f"UPDATE memories SET access_count = access_count + 1, last_accessed_at = ? WHERE id IN ({marks(len(ids))})",
            [now, *ids])

    def mark_validated(self, mid: int, confidence: float, metadata: str, now: float) -> None:
        self._conn.execute(
            "UPDATE memories SET status = 'validated', confidence = ?, metadata = ?, updated_at = ?, validated_at = ? "
            "WHERE id = ?",
            (confidence, metadata, now, now, mid),
        )

    def newest(self, flt: MemoryFilter, limit: int, offset: int) -> list[Memory]:
        """Memories passing the filter, newest first, from ``offset`` (page() without the total)."""
        where, params = where_sql(flt)
        rows = self._conn.execute(f"{SELECT_MEMORIES} WHERE {where} ORDER BY m.id DESC LIMIT ? OFFSET ?",
                                  [*params, limit, offset]).fetchall()
        return [memory_from_select(r) for r in rows]

    def retype(self, mid: int, type: str, metadata: str, now: float) -> None:
        """A new type and metadata for one memory (promotion between layers)."""
        self._conn.execute("UPDATE memories SET type = ?, metadata = ?, updated_at = ? WHERE id = ?",
                           (type, metadata, now, mid))

    def set_metadata(self, mid: int, metadata: str, now: float) -> None:
        """New metadata for one memory (a note on it, such as a team copy's stale original)."""
        self._conn.execute("UPDATE memories SET metadata = ?, updated_at = ? WHERE id = ?", (metadata, now, mid))

    def newest_ids(self, flt: MemoryFilter, limit: int) -> list[int]:
        """The ids of the newest ``limit`` memories passing the filter, newest first."""
        where, params = where_sql(flt)
        return [r[0] for r in self._conn.execute(
            f"SELECT m.id FROM memories m WHERE {where} ORDER BY m.id DESC LIMIT ?", [*params, int(limit)])]

    def texts(self) -> list[tuple[int, str, str]]:
        """(id, title, content) of every memory, by id (what its embedding is made of)."""
        return self._conn.execute("SELECT id, title, content FROM memories ORDER BY id").fetchall()

    def classified(self, flt: MemoryFilter) -> list[tuple[int, str, str, str]]:
        """(id, scope, type, metadata JSON) of the memories passing the filter."""
        where, params = where_sql(flt)
        return self._conn.execute(f"SELECT m.id, m.scope, m.type, m.metadata FROM memories m WHERE {where}",
                                  params).fetchall()

    def merged_metadata(self) -> list[str]:
        """The metadata JSON of memories that may be merges (it names consolidated_from)."""
        return [r[0] for r in self._conn.execute(
            "SELECT metadata FROM memories WHERE metadata LIKE '%consolidated_from%'")]

    def usefulness_of(self, ids: Sequence[int]) -> list[tuple[int, float, str]]:
        """(id, usefulness, status) of the rows among ``ids``."""
        out: list[tuple[int, float, str]] = []
        for chunk in chunked(ids):
            out += self._conn.execute(
                f"SELECT id, usefulness, status FROM memories WHERE id IN ({marks(len(chunk))})", chunk).fetchall()
        return out

    def set_usefulness(self, mid: int, usefulness: float, now: float) -> None:
        self._conn.execute("UPDATE memories SET usefulness = ?, updated_at = ? WHERE id = ?", (usefulness, now, mid))

    def apply_outcomes(self, rows: Sequence[tuple[float, int, int, float, int]]) -> None:
        """(new usefulness, successes to add, failures to add, now, id) per memory judged by a feedback."""
        self._conn.executemany(
            "UPDATE memories SET usefulness = ?, success_count = success_count + ?, "
            "failure_count = failure_count + ?, updated_at = ? WHERE id = ?", rows)

    def type_of(self, mid: int) -> str | None:
        row = self._conn.execute("SELECT type FROM memories WHERE id = ?", (mid,)).fetchone()
        return None if row is None else row[0]

    def state(self, mid: int) -> tuple[str, str, float, str] | None:
        """(status, source type, confidence, metadata JSON) of one memory: what a status change reads."""
        return self._conn.execute("SELECT status, source_type, confidence, metadata FROM memories WHERE id = ?",
                                  (mid,)).fetchone()

    def states_of(self, ids: Sequence[int]) -> list[tuple[int, str, str, str]]:
        """(id, status, source type, metadata JSON) of the rows among ``ids`` (a few)."""
        return self._conn.execute(
            f"SELECT id, status, source_type, metadata FROM memories WHERE id IN ({marks(len(ids))})", list(ids)).fetchall()

    def supersede_state(self, mid: int) -> tuple[str, int | None, str, str] | None:
        """(status, superseded_by, metadata JSON, source type) of one memory."""
        return self._conn.execute("SELECT status, superseded_by, metadata, source_type FROM memories WHERE id = ?",
                                  (mid,)).fetchone()

    def source_of(self, mid: int) -> tuple[str, str] | None:
        """(source type, metadata JSON) of one memory: what its trust is judged by."""
        return self._conn.execute("SELECT source_type, metadata FROM memories WHERE id = ?", (mid,)).fetchone()

    def link_ends(self, ids: Sequence[int]) -> list[tuple[int, str, str | None, float, str]]:
        """(id, source type, source id, confidence, metadata JSON) of the rows among ``ids`` (a few)."""
        return self._conn.execute(
            f"SELECT id, source_type, source_id, confidence, metadata FROM memories WHERE id IN ({marks(len(ids))})",
            list(ids)).fetchall()

    def confidence_of(self, mid: int) -> float | None:
        row = self._conn.execute("SELECT confidence FROM memories WHERE id = ?", (mid,)).fetchone()
        return None if row is None else row[0]

    def set_status(self, mid: int, status: str, confidence: float, metadata: str, now: float,
                   validated_at: float | None) -> None:
        """A status change; ``validated_at`` (None: unchanged) restarts trust's decay."""
        self._conn.execute("UPDATE memories SET status = ?, confidence = ?, metadata = ?, updated_at = ? WHERE id = ?",
                           (status, confidence, metadata, now, mid))
        if validated_at is not None:
            self._conn.execute("UPDATE memories SET validated_at = ? WHERE id = ?", (validated_at, mid))

    def mark_superseded(self, mid: int, by: int, metadata: str, now: float) -> None:
        self._conn.execute(
            "UPDATE memories SET status = 'superseded', superseded_by = ?, metadata = ?, updated_at = ? WHERE id = ?",
            (by, metadata, now, mid))

    def restore_status(self, mid: int, status: str, metadata: str, now: float) -> None:
        """Undo a supersede: the status it had, no superseded_by."""
        self._conn.execute("UPDATE memories SET status = ?, superseded_by = NULL, metadata = ?, updated_at = ? WHERE id = ?",
                           (status, metadata, now, mid))

    def set_confidence(self, mid: int, confidence: float, now: float) -> None:
        self._conn.execute("UPDATE memories SET confidence = ?, updated_at = ? WHERE id = ?", (confidence, now, mid))

    def delete(self, mid: int) -> bool:
        """Delete a memory (its vector, keyword entry, relations, outcomes, chunks and citations go
        with it) and blank what the retrieval log may quote of it: the queries that surfaced it
        and the reasons of feedback on them. False if there was no such memory."""
        shown_in = "SELECT retrieval_id FROM retrieval_items WHERE memory_id = ?"
        self._conn.execute(f"UPDATE retrievals SET query = '[forgotten]' WHERE id IN ({shown_in})", (mid,))
        self._conn.execute(f"UPDATE feedback SET reason = NULL WHERE retrieval_id IN ({shown_in}) OR used_ids LIKE ?",
                           (mid, f'%"mem_{mid}"%'))
        return self._conn.execute("DELETE FROM memories WHERE id = ?", (mid,)).rowcount > 0

    def types_of(self, ids: Sequence[int]) -> dict[int, str]:
        """The type of each memory among ``ids``."""
        out: dict[int, str] = {}
        for chunk in chunked(ids):
            out.update(self._conn.execute(f"SELECT id, type FROM memories WHERE id IN ({marks(len(chunk))})", chunk))
        return out

    def insert_many(self, rows: Sequence[NewMemoryRow], vectors: Sequence[bytes],
                    ids: Sequence[int] | None = None) -> list[int]:
        """Insert new memories with their vectors (one little-endian float32 blob each); returns
        their ids, in order. ``ids``: the ids to give them (a restore keeping a backup's; none
        of them in use), else new ones.

        A few statements for the whole batch: ids are taken after the largest ever used
        (AUTOINCREMENT semantics; the write transaction holds the lock) and every row is stamped
        with one bump of the change counter, so the per-row seq triggers skip them (migration
        0006) and so does the FTS trigger: one INSERT ... SELECT indexes the batch (migration 0009)."""
        if not rows:
            return []
        conn = self._conn
        conn.execute("UPDATE counters SET value = value + 1 WHERE name = 'changes'")
        seq = conn.execute("SELECT value FROM counters WHERE name = 'changes'").fetchone()[0]
        if ids is None:
            top = conn.execute(
                "SELECT max(coalesce((SELECT max(id) FROM memories), 0), "
                "coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'memories'), 0))"
            ).fetchone()[0]
            ids = list(range(top + 1, top + 1 + len(rows)))
        else:
            ids = list(ids)
        conn.executemany(
            "INSERT INTO memories (id, type, title, content, status, source_type, source_id, scope, session, tags, "
            "metadata, confidence, usefulness, importance, success_count, failure_count, access_count, "
            "last_accessed_at, created_at, updated_at, content_hash, tokens, valid_until, seq) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            [(mid, *row, seq) for mid, row in zip(ids, rows)],
        )
        if ids == list(range(ids[0], ids[0] + len(ids))):
            conn.execute("INSERT INTO memories_fts(rowid, title, content, tags) "
                         "SELECT id, title, content, tags FROM memories WHERE id BETWEEN ? AND ?", (ids[0], ids[-1]))
        else:  # kept ids need not follow each other
            conn.executemany("INSERT INTO memories_fts(rowid, title, content, tags) "
                             "SELECT id, title, content, tags FROM memories WHERE id = ?", [(mid,) for mid in ids])
        conn.executemany("INSERT INTO vectors (memory_id, vector, seq) VALUES (?, ?, ?)",
                         [(mid, blob, seq) for mid, blob in zip(ids, vectors)])
        return ids

    def duplicate_of(self, content_hash: str, scope: str, other: str | None = None) -> int | None:
        """A memory of the scope with this content hash (or ``other``, another spelling of the same
        text, second), one that is not superseded first."""
        row = self._conn.execute(
            "SELECT id FROM memories WHERE content_hash IN (?, ?) AND scope = ? "
            "ORDER BY content_hash != ?, status = 'superseded', id LIMIT 1",
            (content_hash, other or content_hash, scope, content_hash)).fetchone()
        return row[0] if row else None

    def with_hashes(self, hashes: Sequence[str]) -> list[tuple[int, str, str, bool]]:
        """(id, content hash, scope, superseded) of the memories with one of these hashes."""
        out: list[tuple[int, str, str, bool]] = []
        for i in range(0, len(hashes), 500):
            chunk = list(hashes[i : i + 500])
            out += [(mid, h, sc, bool(stale)) for mid, h, sc, stale in self._conn.execute(
                f"SELECT id, content_hash, scope, status = 'superseded' FROM memories WHERE content_hash IN "
                f"({marks(len(chunk))})", chunk)]
        return out

    def comparable(self, ids: Sequence[int]) -> list[tuple[int, str, str, str, str]]:
        """(id, content, source type, metadata JSON, type) of the rows among ``ids``: what a
        correction compares a new memory with."""
        out: list[tuple[int, str, str, str, str]] = []
        for chunk in chunked(ids):
            out += self._conn.execute(
                f"SELECT id, content, source_type, metadata, type FROM memories WHERE id IN ({marks(len(chunk))})",
                chunk).fetchall()
        return out

    def count(self) -> int:
        return self._conn.execute("SELECT count(*) FROM memories").fetchone()[0]

    def expired_among(self, flt: MemoryFilter, now: float) -> list[int]:
        """The ids passing the filter whose valid_until is at or before ``now``, by id."""
        where, params = where_sql(flt)
        return [r[0] for r in self._conn.execute(
            f"SELECT m.id FROM memories m WHERE {where} AND m.valid_until IS NOT NULL AND m.valid_until <= ? ORDER BY m.id",
            [*params, now])]

    def purge(self, ids: Sequence[int]) -> None:
        """Delete these memories (with what hangs off them), leaving the retrieval log as it is:
        expiry, where the text is not secret, only out of date."""
        for chunk in chunked(ids):
            self._conn.execute(f"DELETE FROM memories WHERE id IN ({marks(len(chunk))})", chunk)

    def mark_deprecated(self, mid: int, metadata: str, now: float) -> None:
        self._conn.execute("UPDATE memories SET status = 'deprecated', metadata = ?, updated_at = ? WHERE id = ?",
                           (metadata, now, mid))

    def versions(self, mid: int) -> tuple[list[int], list[int]]:
        """(the versions it superseded, oldest first, ending with itself; the versions that
        superseded it, in order), following superseded_by both ways (at most 10000 steps)."""
        older = [r[0] for r in self._conn.execute(
            "WITH RECURSIVE back(id, n) AS (SELECT ?, 0 UNION SELECT m.id, back.n + 1 FROM memories m "
            "JOIN back ON m.superseded_by = back.id WHERE back.n < 10000) SELECT id FROM back ORDER BY n DESC", (mid,))]
        newer = [r[0] for r in self._conn.execute(
            "WITH RECURSIVE fwd(id, n) AS (SELECT superseded_by, 1 FROM memories WHERE id = ? AND superseded_by IS NOT NULL "
            "UNION SELECT m.superseded_by, fwd.n + 1 FROM memories m JOIN fwd ON m.id = fwd.id "
            "WHERE m.superseded_by IS NOT NULL AND fwd.n < 10000) SELECT id FROM fwd ORDER BY n", (mid,))]
        return older, newer

    def live_duplicate_of(self, content_hash: str, scope: str) -> int | None:
        """The oldest memory of the scope with this content hash that is not superseded."""
        row = self._conn.execute(
            "SELECT id FROM memories WHERE content_hash = ? AND scope = ? AND status != 'superseded' ORDER BY id LIMIT 1",
            (content_hash, scope)).fetchone()
        return None if row is None else row[0]

    def record_behaviour(self, mid: int, metadata: str, status: str, importance: float, now: float) -> None:
        """A behaviour seen again: its counts (metadata), status, importance (never lowered); a
        status change restarts trust's decay."""
        self._conn.execute(
            "UPDATE memories SET metadata = ?, status = ?, importance = max(importance, ?), updated_at = ?, "
            "validated_at = CASE WHEN ? != status THEN ? ELSE validated_at END WHERE id = ?",
            (metadata, status, importance, now, status, now, mid))

    def all_ids(self) -> list[int]:
        return [r[0] for r in self._conn.execute("SELECT id FROM memories")]

    def contents(self) -> list[tuple[int, str, str]]:
        """(id, type, content) of every memory: what chunks are cut from."""
        return self._conn.execute("SELECT id, type, content FROM memories").fetchall()

    def texts_of(self, ids: Sequence[int]) -> list[tuple[int, str, str]]:
        """(id, title, content) of the rows among ``ids``."""
        out: list[tuple[int, str, str]] = []
        for chunk in chunked(ids):
            out += self._conn.execute(f"SELECT id, title, content FROM memories WHERE id IN ({marks(len(chunk))})",
                                      chunk).fetchall()
        return out
