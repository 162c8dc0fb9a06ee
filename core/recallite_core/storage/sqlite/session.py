"""The storage nouns on one SQLite connection inside one transaction."""

from __future__ import annotations

import sqlite3
from functools import cached_property
from typing import Collection, Iterator, Sequence

from ...models import Memory
from ..base import (
    CreditRecord, LinkedPair, MemoryFilter, ProjectionCounts, Shard, TrustRow, TurnRow, VectorRow, chunked,
)
from ..fts import fts_query
from .filters import where_sql
from .rows import SELECT_MEMORIES, load_memories, memory_from_select


def _marks(n: int) -> str:
    return ",".join("?" * n)


class SqliteChangeFeed:
    def __init__(self, conn: sqlite3.Connection):
        self._conn = conn

    def counter(self) -> int:
        return self._conn.execute("SELECT value FROM counters WHERE name = 'changes'").fetchone()[0]

    def tombstone_floor(self) -> int:
        return self._conn.execute("SELECT value FROM counters WHERE name = 'tombstone_floor'").fetchone()[0]

    def tombstones_since(self, seq: int) -> list[int]:
        return [r[0] for r in self._conn.execute("SELECT memory_id FROM tombstones WHERE seq > ?", (seq,))]

    def tombstones_count_since(self, seq: int) -> int:
        return self._conn.execute("SELECT count(*) FROM tombstones WHERE seq > ?", (seq,)).fetchone()[0]

    def side_tables(self) -> tuple[bool, bool]:
        rel, out = self._conn.execute(
            "SELECT EXISTS (SELECT 1 FROM relations), EXISTS (SELECT 1 FROM memory_outcomes)").fetchone()
        return bool(rel), bool(out)


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
                f"SELECT m.id FROM memories m WHERE m.id IN ({_marks(len(chunk))}) AND {where}", [*chunk, *params]))
        return out

    def expired(self, valid_at: float) -> set[int]:
        return {r[0] for r in self._conn.execute(
            "SELECT id FROM memories WHERE valid_until IS NOT NULL AND valid_until <= ?", (valid_at,))}

    def trust_rows(self, ids: Sequence[int]) -> list[TrustRow]:
        out: list[TrustRow] = []
        for chunk in chunked(ids):
            for mid, st, sid, behavioral, created, validated in self._conn.execute(
                "SELECT id, source_type, source_id, json_extract(metadata, '$.behavioral'), created_at, validated_at "
                f"FROM memories WHERE id IN ({_marks(len(chunk))})", chunk,
            ):
                out.append(TrustRow(mid, st, sid, bool(behavioral), created, validated))
        return out

    def candidates(self, ids: Sequence[int]) -> dict[int, tuple[float, str]]:
        out: dict[int, tuple[float, str]] = {}
        for chunk in chunked(ids):
            for mid, conf, meta in self._conn.execute(
                f"SELECT id, confidence, metadata FROM memories WHERE status = 'candidate' AND id IN ({_marks(len(chunk))})",
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

    def created_at(self, ids: Sequence[int]) -> dict[int, float]:
        out: dict[int, float] = {}
        for chunk in chunked(ids):
            out.update(self._conn.execute(f"SELECT id, created_at FROM memories WHERE id IN ({_marks(len(chunk))})", chunk))
        return out

    def policy_columns(self, ids: Sequence[int]) -> list[tuple[int, str, str, float, float, float]]:
        """(id, type, status, confidence, usefulness, importance) of the rows among ``ids``."""
        out: list[tuple[int, str, str, float, float, float]] = []
        for chunk in chunked(ids, 900):
            out += self._conn.execute(
                "SELECT id, type, status, confidence, usefulness, importance FROM memories "
                f"WHERE id IN ({_marks(len(chunk))})", chunk).fetchall()
        return out

    def summaries(self, ids: Sequence[int]) -> list[tuple[int, str, str, str, str, str]]:
        """(id, title, status, scope, source type, metadata JSON) of the rows among ``ids``."""
        return self._conn.execute(
            f"SELECT id, title, status, scope, source_type, metadata FROM memories WHERE id IN ({_marks(len(ids))})",
            list(ids)).fetchall()

    def record_access(self, ids: Sequence[int], now: float) -> None:
        """One more access for each of ``ids``, at ``now``."""
        self._conn.execute(
            f"UPDATE memories SET access_count = access_count + 1, last_accessed_at = ? WHERE id IN ({_marks(len(ids))})",
            [now, *ids])

    def mark_validated(self, mid: int, confidence: float, metadata: str, now: float) -> None:
        self._conn.execute(
            "UPDATE memories SET status = 'validated', confidence = ?, metadata = ?, updated_at = ?, validated_at = ? "
            "WHERE id = ?",
            (confidence, metadata, now, now, mid),
        )


_VECTOR_SELECT = ("SELECT m.id, m.scope, m.status, m.type, m.session, v.vector FROM vectors v "
                  "JOIN memories m ON m.id = v.memory_id")


def _shard_sql(shard: Shard | None, column: str) -> tuple[str, list]:
    if shard is None:
        return "", []
    return f" AND {column} % ? = ?", [shard.count, shard.index]


class SqliteVectors:
    def __init__(self, conn: sqlite3.Connection):
        self._conn = conn

    def count(self, shard: Shard | None = None) -> int:
        where, params = _shard_sql(shard, "v.memory_id")
        return self._conn.execute(f"SELECT count(*) FROM vectors v WHERE 1{where}", params).fetchone()[0]

    def count_since(self, seq: int) -> int:
        return self._conn.execute("SELECT count(*) FROM vectors WHERE seq > ?", (seq,)).fetchone()[0]

    def all_rows(self, shard: Shard | None = None, batch: int = 8192) -> Iterator[list[VectorRow]]:
        where, params = _shard_sql(shard, "v.memory_id")
        cur = self._conn.execute(f"{_VECTOR_SELECT} WHERE 1{where}", params)
        while True:  # in batches: never hold every BLOB of a large store at once
            rows = cur.fetchmany(batch)
            if not rows:
                return
            yield rows

    def changed_rows(self, seq: int, shard: Shard | None = None) -> list[VectorRow]:
        """Rows whose vector, or whose memory's filter columns, changed after ``seq``."""
        where, params = _shard_sql(shard, "v.memory_id")
        return self._conn.execute(
            f"{_VECTOR_SELECT} WHERE v.seq > ?{where} UNION ALL {_VECTOR_SELECT} WHERE m.seq > ? AND v.seq <= ?{where}",
            (seq, *params, seq, seq, *params),
        ).fetchall()

    def blobs(self, ids: Sequence[int]) -> list[tuple[int, bytes]]:
        out: list[tuple[int, bytes]] = []
        for chunk in chunked(ids):
            out.extend(self._conn.execute(
                f"SELECT memory_id, vector FROM vectors WHERE memory_id IN ({_marks(len(chunk))})", chunk))
        return out


class SqliteRelations:
    def __init__(self, conn: sqlite3.Connection):
        self._conn = conn

    def edges(self, ids: Sequence[int], types: Sequence[str]) -> list[tuple[int, int, str]]:
        """(from, to, type) of the relations of these types with either end among ``ids``."""
        marks = _marks(len(ids))
        return self._conn.execute(
            f"SELECT from_id, to_id, type FROM relations WHERE type IN ({_marks(len(types))}) "
            f"AND (from_id IN ({marks}) OR to_id IN ({marks}))",
            [*types, *ids, *ids],
        ).fetchall()

    def pairs_among(self, ids: Sequence[int], types: Sequence[str]) -> list[LinkedPair]:
        """Relations of these types with both ends among ``ids``."""
        marks = _marks(len(ids))
        return [LinkedPair(a, b, t, "", "", ca, cb, bool(fa), bool(fb)) for a, b, t, ca, cb, fa, fb in self._conn.execute(
            "SELECT r.from_id, r.to_id, r.type, a.created_at, b.created_at, a.failure_count > a.success_count, "
            "b.failure_count > b.success_count FROM relations r "
            "JOIN memories a ON a.id = r.from_id JOIN memories b ON b.id = r.to_id "
            f"WHERE r.type IN ({_marks(len(types))}) AND r.from_id IN ({marks}) AND r.to_id IN ({marks})",
            [*types, *ids, *ids])]

    def touching(self, ids: Sequence[int], type: str) -> list[LinkedPair]:
        """Relations of one type with either end among ``ids``, with both ends' statuses."""
        marks = _marks(len(ids))
        return [LinkedPair(a, b, type, sa, sb) for a, b, sa, sb in self._conn.execute(
            "SELECT r.from_id, r.to_id, ma.status, mb.status FROM relations r "
            "JOIN memories ma ON ma.id = r.from_id JOIN memories mb ON mb.id = r.to_id "
            f"WHERE r.type = ? AND (r.from_id IN ({marks}) OR r.to_id IN ({marks}))",
            [type, *ids, *ids])]

    def effects(self, ids: Sequence[int], type: str) -> list[tuple[int, int, float]]:
        """(from, to, confidence effect) of the relations of one type with either end among ``ids``."""
        marks = _marks(len(ids))
        return self._conn.execute(
            f"SELECT from_id, to_id, confidence_effect FROM relations WHERE type = ? "
            f"AND (from_id IN ({marks}) OR to_id IN ({marks}))",
            [type, *ids, *ids]).fetchall()

    def totals(self, ids: Sequence[int]) -> dict[int, int]:
        """How many relations touch each of ``ids`` (either end); absent when none."""
        out: dict[int, int] = {}
        for chunk in chunked(ids, 400):
            marks = _marks(len(chunk))
            out.update(self._conn.execute(
                f"SELECT x, count(*) FROM (SELECT from_id AS x FROM relations WHERE from_id IN ({marks}) "
                f"UNION ALL SELECT to_id FROM relations WHERE to_id IN ({marks})) GROUP BY x", [*chunk, *chunk]))
        return out

    def open_contradictions(self, live: Sequence[str], scope: str | None, limit: int) -> list[tuple[int, int, int, float, float]]:
        """(relation id, from, to, created_at, confidence effect) of ``contradicts`` links whose
        both ends are in ``live`` statuses (the from end in ``scope``), newest first."""
        where, params = ("AND a.scope = ? ", [scope]) if scope else ("", [])
        marks = _marks(len(live))
        return self._conn.execute(
            "SELECT r.id, r.from_id, r.to_id, r.created_at, r.confidence_effect FROM relations r "
            "JOIN memories a ON a.id = r.from_id JOIN memories b ON b.id = r.to_id "
            f"WHERE r.type = 'contradicts' AND a.status IN ({marks}) AND b.status IN ({marks}) {where}"
            "ORDER BY r.id DESC LIMIT ?", [*live, *live, *params, limit]).fetchall()

    def supporters(self, ids: Sequence[int], statuses: Sequence[str]) -> list[tuple[int, str, str | None]]:
        """(supported id, supporter's source type, source id) of ``supports`` links into ``ids``
        from memories in these statuses."""
        return self._conn.execute(
            "SELECT r.to_id, m.source_type, m.source_id FROM relations r JOIN memories m ON m.id = r.from_id "
            f"WHERE r.type = 'supports' AND r.to_id IN ({_marks(len(ids))}) AND m.status IN ({_marks(len(statuses))})",
            [*ids, *statuses],
        ).fetchall()


def _searched(scope: str | None) -> tuple[str, list]:
    """Retrievals whose searched scopes (a JSON list, NULL for every scope) include ``scope``."""
    if not scope:
        return "1", []
    return "(r.scope IS NULL OR EXISTS (SELECT 1 FROM json_each(r.scope) WHERE json_each.value = ?))", [scope]


class SqliteOutcomes:
    def __init__(self, conn: sqlite3.Connection):
        self._conn = conn

    def last_success(self, ids: Sequence[int], min_target: float) -> dict[int, float]:
        out: dict[int, float] = {}
        for chunk in chunked(ids):
            for mid, last in self._conn.execute(
                f"SELECT memory_id, max(created_at) FROM memory_outcomes WHERE target >= ? AND memory_id IN "
                f"({_marks(len(chunk))}) GROUP BY memory_id", [min_target, *chunk],
            ):
                out[mid] = last
        return out

    def of_memory(self, mid: int, limit: int) -> list[tuple]:
        """(feedback id, retrieval id, query, outcome, kind, weight, target, usefulness before,
        after, created_at) of a memory's outcome rows, newest first."""
        return self._conn.execute(
            "SELECT o.feedback_id, f.retrieval_id, r.query, f.outcome, o.kind, o.weight, o.target, "
            "o.old_usefulness, o.new_usefulness, o.created_at FROM memory_outcomes o "
            "JOIN feedback f ON f.id = o.feedback_id LEFT JOIN retrievals r ON r.id = f.retrieval_id "
            "WHERE o.memory_id = ? ORDER BY o.created_at DESC, o.feedback_id DESC LIMIT ?", (mid, limit)).fetchall()

    def outcome_mark(self) -> tuple[int, int | None]:
        """(last outcome row's id, 0 for none; the learning epoch): the learner's cache key."""
        top, epoch = self._conn.execute(
            "SELECT (SELECT max(rowid) FROM memory_outcomes), (SELECT value FROM counters WHERE name = 'learning_epoch')"
        ).fetchone()
        return top or 0, epoch

    def judged_since(self, rowid: int) -> list[int]:
        """Memories with an outcome row after ``rowid``."""
        return [r[0] for r in self._conn.execute(
            "SELECT DISTINCT memory_id FROM memory_outcomes WHERE rowid > ?", (rowid,))]

    def history(self, ids: Sequence[int], limit: int) -> list[tuple]:
        """The latest ``limit`` outcome rows of each memory, newest first per memory:
        (memory id, target, weight, created_at, rival, explained, task vector bytes or None).
        ``rival``/``explained``: how many other memories succeeded on the same retrieval and are
        newer / not newer (an 'unused' row counts as explained, never as a rival)."""
        out: list[tuple] = []
        for chunk in chunked(ids):
            out += self._conn.execute(
                "SELECT memory_id, target, weight, created_at, rival, explained, vector FROM ("
                " SELECT mo.memory_id, mo.target, mo.weight, mo.created_at,"
                "  CASE WHEN mo.kind = 'unused' THEN 0 ELSE"
                "  (SELECT coalesce(sum(m2.created_at > me.created_at), 0) FROM feedback f2"
                "   JOIN memory_outcomes mo2 ON mo2.feedback_id = f2.id JOIN memories m2 ON m2.id = mo2.memory_id"
                "   WHERE f2.retrieval_id = f.retrieval_id AND mo2.memory_id != mo.memory_id AND mo2.target >= 0.5) END AS rival,"
                "  CASE WHEN mo.kind = 'unused' THEN 1 ELSE"
                "  (SELECT coalesce(sum(m2.created_at <= me.created_at), 0) FROM feedback f2"
                "   JOIN memory_outcomes mo2 ON mo2.feedback_id = f2.id JOIN memories m2 ON m2.id = mo2.memory_id"
                "   WHERE f2.retrieval_id = f.retrieval_id AND mo2.memory_id != mo.memory_id AND mo2.target >= 0.5) END AS explained,"
                "  rv.vector,"
                "  ROW_NUMBER() OVER (PARTITION BY mo.memory_id ORDER BY mo.rowid DESC) AS rn"
                " FROM memory_outcomes mo JOIN memories me ON me.id = mo.memory_id"
                " LEFT JOIN feedback f ON f.id = mo.feedback_id"
                " LEFT JOIN retrieval_vectors rv ON rv.retrieval_id = f.retrieval_id"
                f" WHERE mo.memory_id IN ({_marks(len(chunk))})"
                ") WHERE rn <= ? ORDER BY memory_id, rn",
                [*chunk, limit],
            ).fetchall()
        return out

    def offered(self, ids: Sequence[int]) -> list[int]:
        """Which of ``ids`` were shown in a retrieval that got feedback."""
        out: list[int] = []
        for chunk in chunked(ids):
            out += [r[0] for r in self._conn.execute(
                "SELECT DISTINCT ri.memory_id FROM retrieval_items ri "
                f"WHERE ri.memory_id IN ({_marks(len(chunk))}) "
                "AND EXISTS (SELECT 1 FROM feedback f WHERE f.retrieval_id = ri.retrieval_id)", chunk)]
        return out

    def credit_records(self, ids: Sequence[int], min_weight: float) -> dict[int, CreditRecord]:
        out: dict[int, CreditRecord] = {}
        for chunk in chunked(ids):
            for mid, succ, rets, fails in self._conn.execute(
                "SELECT mo.memory_id, "
                "sum(f.outcome = 'success' AND mo.weight >= ?), "
                "count(DISTINCT CASE WHEN f.outcome = 'success' AND mo.weight >= ? THEN f.retrieval_id END), "
                "sum(f.outcome = 'failure') "
                "FROM memory_outcomes mo JOIN feedback f ON f.id = mo.feedback_id "
                f"WHERE mo.kind = 'credit' AND mo.memory_id IN ({_marks(len(chunk))}) GROUP BY mo.memory_id",
                [min_weight, min_weight, *chunk],
            ):
                out[mid] = CreditRecord(succ or 0, rets or 0, fails or 0)
        return out


class SqliteRetrievals:
    """The retrieval log: what each recall or context served, its feedback, its task vector."""

    def __init__(self, conn: sqlite3.Connection):
        self._conn = conn

    def add(self, query: str, profile: str, scopes: str | None, kind: str, now: float,
                      items: Sequence[tuple[int, int, float]]) -> int:
        """Log one retrieval and its items (memory id, rank, score); returns its id."""
        rid = self._conn.execute(
            "INSERT INTO retrievals (query, profile, scope, kind, created_at) VALUES (?, ?, ?, ?, ?)",
            (query, profile, scopes, kind, now)).lastrowid
        if items:
            self._conn.executemany(
                "INSERT INTO retrieval_items (retrieval_id, memory_id, rank, score) VALUES (?, ?, ?, ?)",
                [(rid, mid, rank, score) for mid, rank, score in items])
        return rid

    def page(self, scope: str | None, limit: int, offset: int) -> list[tuple]:
        """(id, query, kind, profile, scopes JSON, created_at, tokens served, items) of logged
        retrievals, newest first; ``scope``: those that searched it."""
        where, params = _searched(scope)
        return self._conn.execute(
            "SELECT r.id, r.query, r.kind, r.profile, r.scope, r.created_at, r.tokens_served, "
            "(SELECT count(*) FROM retrieval_items i WHERE i.retrieval_id = r.id) "
            f"FROM retrievals r WHERE {where} ORDER BY r.id DESC LIMIT ? OFFSET ?", [*params, limit, offset]).fetchall()

    def get(self, rid: int) -> tuple | None:
        """(id, query, kind, profile, scopes JSON, created_at, tokens served) of one retrieval."""
        return self._conn.execute("SELECT id, query, kind, profile, scope, created_at, tokens_served FROM retrievals "
                                  "WHERE id = ?", (rid,)).fetchone()

    def items(self, rid: int) -> list[tuple[int, int, float, int, int]]:
        """(memory id, rank, score, served, expanded) of a retrieval's items, by rank."""
        return self._conn.execute("SELECT memory_id, rank, score, served, expanded FROM retrieval_items "
                                  "WHERE retrieval_id = ? ORDER BY rank", (rid,)).fetchall()

    def feedback_of(self, rids: Sequence[int]) -> list[tuple]:
        """(id, retrieval id, outcome, score, used ids JSON, reason, created_at) of the feedback
        on these retrievals, oldest first per chunk of ids."""
        out: list[tuple] = []
        for chunk in chunked(rids):
            out += self._conn.execute(
                "SELECT id, retrieval_id, outcome, score, used_ids, reason, created_at FROM feedback "
                f"WHERE retrieval_id IN ({_marks(len(chunk))}) ORDER BY id", chunk).fetchall()
        return out

    def daily_feedback(self, scope: str | None, days: int) -> list[tuple]:
        """(UTC day, feedback, successes, failures, partial, mean score) per day over the last
        ``days`` days before the latest feedback, oldest first; ``scope``: on retrievals that searched it."""
        latest = self._conn.execute("SELECT max(created_at) FROM feedback").fetchone()[0]
        if latest is None:
            return []
        where, params = _searched(scope)
        return self._conn.execute(
            "SELECT date(f.created_at, 'unixepoch') AS day, count(*), sum(f.outcome = 'success'), "
            "sum(f.outcome = 'failure'), sum(f.outcome = 'partial'), avg(f.score) FROM feedback f "
            f"JOIN retrievals r ON r.id = f.retrieval_id WHERE {where} AND f.created_at > ? "
            "GROUP BY day ORDER BY day", [*params, latest - days * 86400.0]).fetchall()

    def query_of(self, rid: int) -> tuple[str, bool] | None:
        """(query, whether a task vector is stored) of a logged retrieval; None if there is none."""
        row = self._conn.execute(
            "SELECT r.query, rv.retrieval_id FROM retrievals r LEFT JOIN retrieval_vectors rv ON rv.retrieval_id = r.id "
            "WHERE r.id = ?", (rid,)).fetchone()
        return None if row is None else (row[0], row[1] is not None)

    def served_vectors(self, rid: int, depth: int) -> list[tuple[bytes, float]]:
        """(vector bytes, score) of a retrieval's first ``depth`` logged items that have a vector."""
        return self._conn.execute(
            "SELECT v.vector, ri.score FROM retrieval_items ri JOIN vectors v ON v.memory_id = ri.memory_id "
            "WHERE ri.retrieval_id = ? ORDER BY ri.rank LIMIT ?", (rid, depth)).fetchall()

    def served_items(self, rid: int) -> list[tuple[int, int, float, int]]:
        """(memory id, rank, score, tokens) of a retrieval's logged items, by rank."""
        return self._conn.execute(
            "SELECT ri.memory_id, ri.rank, ri.score, m.tokens FROM retrieval_items ri JOIN memories m ON m.id = ri.memory_id "
            "WHERE ri.retrieval_id = ? ORDER BY ri.rank", (rid,)).fetchall()

    def has_task_vectors(self) -> bool:
        return self._conn.execute("SELECT 1 FROM retrieval_vectors LIMIT 1").fetchone() is not None

    def add_task_vector(self, rid: int, vector: bytes) -> None:
        """Keep a retrieval's task vector (the first one written stays)."""
        self._conn.execute("INSERT OR IGNORE INTO retrieval_vectors (retrieval_id, vector) VALUES (?, ?)", (rid, vector))

    def judged(self, without_vector: bool) -> list[tuple[int, str]]:
        """(id, query) of the retrievals that got feedback (only those without a task vector)."""
        sql = "SELECT DISTINCT r.id, r.query FROM retrievals r JOIN feedback f ON f.retrieval_id = r.id"
        if without_vector:
            sql += " WHERE r.id NOT IN (SELECT retrieval_id FROM retrieval_vectors)"
        return self._conn.execute(sql).fetchall()

    def replace_task_vectors(self, rows: Sequence[tuple[int, bytes]], clear: bool) -> None:
        """Write task vectors (all others dropped first with ``clear``) and start a new learning
        epoch, so every learner's cache rebuilds."""
        if clear:
            self._conn.execute("DELETE FROM retrieval_vectors")
        self._conn.executemany("INSERT OR REPLACE INTO retrieval_vectors (retrieval_id, vector) VALUES (?, ?)", rows)
        self._conn.execute("UPDATE counters SET value = value + 1 WHERE name = 'learning_epoch'")


class SqliteKeywords:
    """Keyword search over FTS5: the memories' table and the conversation windows. Scores are
    -bm25() (higher is better), ties by id."""

    def __init__(self, conn: sqlite3.Connection):
        self._conn = conn

    def top(self, query: str, flt: MemoryFilter, depth: int, weights: Sequence[float]) -> list[tuple[int, float]]:
        """The bm25 top-``depth`` among the memories passing the filter.

        The bm25 top-N is taken on the FTS table alone (no per-match join to memories), then
        filtered; only when the filter leaves fewer than ``depth`` of a full top-N is the N
        widened (and finally the whole match set filtered), so the answer is the same as
        filtering every match first."""
        match = fts_query(query)
        if match is None:
            return []
        where, params = where_sql(flt)
        weights_sql = ", ".join(str(w) for w in weights)
        inner = max(depth * 2, 100)
        while True:
            limit_sql, limit_params = ("LIMIT ?", [inner]) if inner else ("", [])
            # One pass: the bm25 top-N with, for each, whether it passes the filter.
            rows = self._conn.execute(
                f"SELECT f.id, f.s, ({where}) FROM (SELECT rowid AS id, bm25(memories_fts, {weights_sql}) AS s "
                f"FROM memories_fts WHERE memories_fts MATCH ? ORDER BY s, rowid {limit_sql}) f "
                "JOIN memories m ON m.id = f.id ORDER BY f.s, f.id",
                [*params, match, *limit_params],
            ).fetchall()
            kept = [r for r in rows if r[2]]
            if len(kept) >= depth or not inner or len(rows) < inner:
                break  # enough, or the top-N already held every match
            inner = inner * 8 if inner < 100_000 else 0
        return [(r[0], -r[1]) for r in kept[:depth]]

    def windows_top(self, query: str, flt: MemoryFilter, depth: int) -> list[tuple[int, float]]:
        """The bm25 top-``depth`` of conversation turns indexed with their neighbours."""
        match = fts_query(query)
        if match is None:
            return []
        where, params = where_sql(flt)
        rows = self._conn.execute(
            "SELECT w.rowid, bm25(episode_windows) AS s FROM episode_windows w JOIN memories m ON m.id = w.rowid "
            f"WHERE episode_windows MATCH ? AND {where} ORDER BY s, w.rowid LIMIT ?",
            [match, *params, depth],
        ).fetchall()
        return [(r[0], -r[1]) for r in rows]

    def document_frequency(self, term: str) -> int:
        """Memories holding the term (a single token)."""
        return self._conn.execute(
            "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?", (f'"{term}"',)).fetchone()[0]

    def holding(self, term: str, ids: Sequence[int]) -> list[int]:
        """Which of ``ids`` hold the term."""
        return [r[0] for r in self._conn.execute(
            f"SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? AND rowid IN ({_marks(len(ids))})",
            [f'"{term}"', *ids])]


class SqliteTuning:
    """The context tuner's arms: pulls and reward per (scope, arm), and the arm each retrieval served."""

    def __init__(self, conn: sqlite3.Connection):
        self._conn = conn

    def arms(self, scope: str) -> dict[str, tuple[float, float]]:
        """arm key -> (pulls, reward) in one scope."""
        return {a: (p, r) for a, p, r in self._conn.execute(
            "SELECT arm, pulls, reward FROM context_tuning WHERE scope = ?", (scope,))}

    def scopes(self) -> list[str]:
        return [r[0] for r in self._conn.execute("SELECT DISTINCT scope FROM context_tuning ORDER BY scope")]

    def log_arm(self, rid: int, scope: str, arm: str, max_tokens: int) -> None:
        self._conn.execute(
            "INSERT OR REPLACE INTO retrieval_tuning (retrieval_id, scope, arm, max_tokens) VALUES (?, ?, ?, ?)",
            (rid, scope, arm, max_tokens))

    def arm_of(self, rid: int) -> tuple[str, str, int] | None:
        """(scope, arm, max tokens) a retrieval was served with."""
        return self._conn.execute("SELECT scope, arm, max_tokens FROM retrieval_tuning WHERE retrieval_id = ?",
                                  (rid,)).fetchone()

    def reward(self, scope: str, arm: str, reward: float, now: float, decay: float) -> None:
        """One more (discounted) pull of an arm with this reward."""
        self._conn.execute(
            "INSERT INTO context_tuning (scope, arm, pulls, reward, updated_at) VALUES (?, ?, 1, ?, ?) "
            "ON CONFLICT(scope, arm) DO UPDATE SET pulls = pulls * ? + 1, reward = reward * ? + excluded.reward, "
            "updated_at = excluded.updated_at",
            (scope, arm, reward, now, decay, decay))


_TURN = "SELECT memory_id, scope, session, seq, role FROM episodes"


class SqliteEpisodes:
    def __init__(self, conn: sqlite3.Connection):
        self._conn = conn

    def any(self) -> bool:
        return self._conn.execute("SELECT 1 FROM episodes LIMIT 1").fetchone() is not None

    def turns_of(self, ids: Sequence[int]) -> list[TurnRow]:
        out: list[TurnRow] = []
        for chunk in chunked(ids):
            out.extend(self._conn.execute(f"{_TURN} WHERE memory_id IN ({_marks(len(chunk))})", chunk))
        return out

    def turns_at(self, places: Sequence[tuple[str, str, int]]) -> list[TurnRow]:
        """The turns at these (scope, session, seq) places."""
        out: list[TurnRow] = []
        for i in range(0, len(places), 300):
            chunk = places[i : i + 300]
            out.extend(self._conn.execute(
                f"{_TURN} WHERE (scope, session, seq) IN (VALUES {','.join(['(?, ?, ?)'] * len(chunk))})",
                [x for place in chunk for x in place]))
        return out

    def all_turns(self) -> list[TurnRow]:
        return self._conn.execute(_TURN).fetchall()

    def turns_changed_since(self, seq: int) -> list[TurnRow]:
        return self._conn.execute(
            "SELECT e.memory_id, e.scope, e.session, e.seq, e.role FROM memories m "
            "JOIN episodes e ON e.memory_id = m.id WHERE m.seq > ?", (seq,)).fetchall()

    def turn_texts(self, scope: str, session: str, first: int, last: int) -> list[tuple[int, int, str, str]]:
        """(seq, memory id, role, content) of the turns of one session between two positions."""
        return self._conn.execute(
            "SELECT n.seq, n.memory_id, n.role, m.content FROM episodes n JOIN memories m ON m.id = n.memory_id "
            "WHERE n.scope = ? AND n.session = ? AND n.seq BETWEEN ? AND ?", (scope, session, first, last)).fetchall()

    def replace_windows(self, stale: Sequence[int], rows: Sequence[tuple[int, str]]) -> None:
        """Delete the window rows of ``stale`` turns, then write ``rows`` (turn id, text). Deletes
        go first: FTS5 flushes its pending terms whenever a delete follows an insert."""
        for chunk in chunked(stale):
            self._conn.execute(f"DELETE FROM episode_windows WHERE rowid IN ({_marks(len(chunk))})", chunk)
        self._conn.executemany("INSERT INTO episode_windows (rowid, text) VALUES (?, ?)", rows)

    def clear_windows(self) -> None:
        self._conn.execute("DELETE FROM episode_windows")

    def places(self) -> list[tuple[str, str, int]]:
        return self._conn.execute("SELECT scope, session, seq FROM episodes").fetchall()


class SqliteIntegrity:
    def __init__(self, conn: sqlite3.Connection):
        self._conn = conn

    def projections(self, dimensions: int | None = None) -> ProjectionCounts:
        conn = self._conn
        r = ProjectionCounts()

        def one(sql: str) -> int:
            return conn.execute(sql).fetchone()[0]

        def col(sql: str) -> list[int]:
            return [row[0] for row in conn.execute(sql)]

        r.memories = one("SELECT count(*) FROM memories")
        r.vectors = one("SELECT count(*) FROM vectors")
        r.fts_rows = one("SELECT count(*) FROM memories_fts_docsize")
        r.missing_vectors = col("SELECT id FROM memories WHERE id NOT IN (SELECT memory_id FROM vectors) ORDER BY id")
        r.orphan_vectors = col("SELECT memory_id FROM vectors WHERE memory_id NOT IN (SELECT id FROM memories) ORDER BY 1")
        if dimensions:
            r.bad_vectors = col(f"SELECT memory_id FROM vectors WHERE length(vector) != {4 * int(dimensions)} ORDER BY 1")
        r.missing_fts = col("SELECT id FROM memories WHERE id NOT IN (SELECT id FROM memories_fts_docsize) ORDER BY id")
        r.orphan_fts = col("SELECT id FROM memories_fts_docsize WHERE id NOT IN (SELECT id FROM memories) ORDER BY id")
        try:
            # rank = 1 also compares the index with the content of the memories table.
            conn.execute("INSERT INTO memories_fts(memories_fts, rank) VALUES ('integrity-check', 1)")
        except sqlite3.Error as exc:
            r.fts_detail = str(exc)
        return r


class SqliteSession:
    """One unit of work on an SQLite connection: the nouns of storage.base.Session.

    ``execute``/``executemany`` pass through to the connection for the modules that still
    write their own SQL (docs/storage.md lists them); they are not part of the interface and
    go once those modules are converted."""

    def __init__(self, conn: sqlite3.Connection):
        self._conn = conn
        self.execute = conn.execute
        self.executemany = conn.executemany

    @cached_property
    def feed(self) -> SqliteChangeFeed:
        return SqliteChangeFeed(self._conn)

    @cached_property
    def memories(self) -> SqliteMemories:
        return SqliteMemories(self._conn)

    @cached_property
    def vectors(self) -> SqliteVectors:
        return SqliteVectors(self._conn)

    @cached_property
    def relations(self) -> SqliteRelations:
        return SqliteRelations(self._conn)

    @cached_property
    def outcomes(self) -> SqliteOutcomes:
        return SqliteOutcomes(self._conn)

    @cached_property
    def retrievals(self) -> SqliteRetrievals:
        return SqliteRetrievals(self._conn)

    @cached_property
    def episodes(self) -> SqliteEpisodes:
        return SqliteEpisodes(self._conn)

    @cached_property
    def tuning(self) -> SqliteTuning:
        return SqliteTuning(self._conn)

    @cached_property
    def keywords(self) -> SqliteKeywords:
        return SqliteKeywords(self._conn)

    @cached_property
    def integrity(self) -> SqliteIntegrity:
        return SqliteIntegrity(self._conn)
