"""Outcome rows, the retrieval log and the context tuner's arms: what learning reads and writes."""

from __future__ import annotations

import sqlite3
from typing import Sequence

from recallite_core.storage.base import LABEL_ROWS, CreditRecord, chunked
from recallite_core.storage.sqlite.filters import marks


def _searched(scope: str | None) -> tuple[str, list]:
    """Retrievals whose searched scopes (a JSON list, NULL for every scope) include ``scope``."""
    if not scope:
        return "1", []
    return "(r.scope IS NULL OR EXISTS (SELECT 1 FROM json_each(r.scope) WHERE json_each.value = ?))", [scope]


class SqliteOutcomes:
    def __init__(self, conn: sqlite3.Connection):
        self._conn = conn

    def serialise_feedback(self) -> None:
        """Nothing to take: a write transaction here (BEGIN IMMEDIATE) is the only writer."""

    def last_success(self, ids: Sequence[int], min_target: float) -> dict[int, float]:
        out: dict[int, float] = {}
        for chunk in chunked(ids):
            for mid, last in self._conn.execute(
                f"SELECT memory_id, max(created_at) FROM memory_outcomes WHERE target >= ? AND memory_id IN "
                f"({marks(len(chunk))}) GROUP BY memory_id", [min_target, *chunk],
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
        (memory id, target, weight, created_at, rival, explained, task vector bytes or None, task key or None,
        scopes JSON its retrieval searched or None, guessed).
        ``rival``/``explained``: how many other memories succeeded on the same retrieval and are
        newer / not newer (an 'unused' row counts as explained, never as a rival). ``guessed``: 1 when
        the row's credit was a guess, its feedback naming no memory used and the memory not opened
        (shared among what was served, by rank)."""
        out: list[tuple] = []
        for chunk in chunked(ids):
            out += self._conn.execute(
                "SELECT memory_id, target, weight, created_at, rival, explained, vector, task, searched, guessed FROM ("
                " SELECT mo.memory_id, mo.target, mo.weight, mo.created_at,"
                "  CASE WHEN mo.kind = 'unused' THEN 0 ELSE"
                "  (SELECT coalesce(sum(m2.created_at > me.created_at), 0) FROM feedback f2"
                "   JOIN memory_outcomes mo2 ON mo2.feedback_id = f2.id JOIN memories m2 ON m2.id = mo2.memory_id"
                "   WHERE f2.retrieval_id = f.retrieval_id AND mo2.memory_id != mo.memory_id AND mo2.target >= 0.5) END AS rival,"
                "  CASE WHEN mo.kind = 'unused' THEN 1 ELSE"
                "  (SELECT coalesce(sum(m2.created_at <= me.created_at), 0) FROM feedback f2"
                "   JOIN memory_outcomes mo2 ON mo2.feedback_id = f2.id JOIN memories m2 ON m2.id = mo2.memory_id"
                "   WHERE f2.retrieval_id = f.retrieval_id AND mo2.memory_id != mo.memory_id AND mo2.target >= 0.5) END AS explained,"
                "  rv.vector, r.task, r.scope AS searched,"
                "  coalesce(mo.kind = 'credit' AND f.used_ids = '[]' AND NOT EXISTS (SELECT 1 FROM retrieval_items ri"
                "   WHERE ri.retrieval_id = f.retrieval_id AND ri.memory_id = mo.memory_id AND ri.expanded), 0) AS guessed,"
                "  ROW_NUMBER() OVER (PARTITION BY mo.memory_id ORDER BY mo.rowid DESC) AS rn"
                " FROM memory_outcomes mo JOIN memories me ON me.id = mo.memory_id"
                " LEFT JOIN feedback f ON f.id = mo.feedback_id"
                " LEFT JOIN retrieval_vectors rv ON rv.retrieval_id = f.retrieval_id"
                " LEFT JOIN retrievals r ON r.id = f.retrieval_id"
                f" WHERE mo.memory_id IN ({marks(len(chunk))})"
                ") WHERE rn <= ? ORDER BY memory_id, rn",
                [*chunk, limit],
            ).fetchall()
        return out

    def proven_under(self, key: str) -> list[tuple[int, str | None, bool]]:
        """Memories whose latest outcome under task key ``key`` was a success, or a partial that
        credited them (the part that worked; not a failure or an 'unused' mark), with the
        scopes JSON that retrieval searched (None: all) and whether a feedback under the name that
        was not a failure named it in its used ids: what worked the last time the job of that name
        was done, where, and whether the agent said so."""
        return [(r[0], r[1], bool(r[2])) for r in self._conn.execute(
            "SELECT memory_id, searched, named FROM ("
            " SELECT mo.memory_id, mo.target, mo.kind, f.outcome, r.scope AS searched,"
            "  max(CASE WHEN f.outcome <> 'failure' AND mo.target >= 0.5 AND instr(f.used_ids, '\"mem_' || mo.memory_id || '\"') > 0"
            "  THEN 1 ELSE 0 END) OVER (PARTITION BY mo.memory_id) AS named,"
            "  ROW_NUMBER() OVER (PARTITION BY mo.memory_id ORDER BY mo.rowid DESC) AS rn"
            " FROM retrievals r JOIN feedback f ON f.retrieval_id = r.id"
            " JOIN memory_outcomes mo ON mo.feedback_id = f.id WHERE r.task = ?"
            ") WHERE rn = 1 AND (target > 0.5 OR (outcome <> 'failure' AND kind = 'credit' AND target >= 0.5))"
            " ORDER BY memory_id", (key,))]

    def offered(self, ids: Sequence[int]) -> list[int]:
        """Which of ``ids`` were served (not left out by a budget) in a retrieval whose feedback was
        not a failure: the task was done, in full or in part, with what the agent chose."""
        out: list[int] = []
        for chunk in chunked(ids):
            out += [r[0] for r in self._conn.execute(
                "SELECT DISTINCT ri.memory_id FROM retrieval_items ri "
                f"WHERE ri.memory_id IN ({marks(len(chunk))}) AND ri.served "
                "AND EXISTS (SELECT 1 FROM feedback f WHERE f.retrieval_id = ri.retrieval_id "
                "AND f.outcome <> 'failure')", chunk)]
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
                f"WHERE mo.kind = 'credit' AND mo.memory_id IN ({marks(len(chunk))}) GROUP BY mo.memory_id",
                [min_weight, min_weight, *chunk],
            ):
                out[mid] = CreditRecord(succ or 0, rets or 0, fails or 0)
        return out

    def add_feedback(self, rid: int | None, outcome: str, score: float, used_ids: str, reason: str | None,
                     client_key: str | None, now: float) -> int:
        """Log one feedback on a retrieval (None: a restored one whose retrieval was not kept); returns its id."""
        fid = self._conn.execute(
            "INSERT INTO feedback (retrieval_id, outcome, score, used_ids, reason, client_key, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)", (rid, outcome, score, used_ids, reason, client_key, now)).lastrowid
        assert fid is not None  # every INSERT sets it
        return fid

    def feedback_with_key(self, client_key: str) -> int | None:
        """The feedback sent earlier with this client key (a retry), if any."""
        row = self._conn.execute("SELECT id FROM feedback WHERE client_key = ?", (client_key,)).fetchone()
        return None if row is None else row[0]

    def feedback(self, fid: int) -> tuple[int | None, str, float]:
        """(retrieval id, outcome, score) of one feedback."""
        return self._conn.execute("SELECT retrieval_id, outcome, score FROM feedback WHERE id = ?", (fid,)).fetchone()

    def credits_of(self, fid: int) -> list[tuple[int, float, float, float]]:
        """(memory id, weight, usefulness before, after) of the credit rows a feedback wrote, in order."""
        return self._conn.execute(
            "SELECT memory_id, weight, old_usefulness, new_usefulness FROM memory_outcomes "
            "WHERE feedback_id = ? AND kind = 'credit' ORDER BY rowid", (fid,)).fetchall()

    def add(self, rows: Sequence[tuple[int, int, float, float, float, float, float]]) -> None:
        """Credit rows: (feedback id, memory id, weight, target, usefulness before, after, created_at)."""
        self._conn.executemany(
            "INSERT INTO memory_outcomes (feedback_id, memory_id, weight, target, old_usefulness, new_usefulness, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)", rows)

    def add_unused(self, fid: int, ids: Sequence[int], weight: float, now: float, exempt_types: Sequence[str]) -> None:
        """'unused' rows (target 0, usefulness unchanged) for the memories among ``ids`` whose
        type is not one of ``exempt_types``."""
        self._conn.executemany(
            "INSERT INTO memory_outcomes (feedback_id, memory_id, weight, target, old_usefulness, "
            "new_usefulness, created_at, kind) SELECT ?, id, ?, 0.0, usefulness, usefulness, ?, 'unused' "
            f"FROM memories WHERE id = ? AND type NOT IN ({marks(len(exempt_types))})",
            [(fid, weight, now, mid, *exempt_types) for mid in ids])


class SqliteRetrievals:
    """The retrieval log: what each recall or context served, its feedback, its task vector."""

    def __init__(self, conn: sqlite3.Connection):
        self._conn = conn

    def add(self, query: str, profile: str, scopes: str | None, kind: str, now: float,
            items: Sequence[tuple[int, int, float, float | None]], task: str | None = None,
            label: str | None = None) -> int:
        """Log one retrieval (``task``: the caller's task key, ``label``: its name as written) and its items (memory id, rank, score,
        keep ratio or None); returns its id."""
        rid = self._conn.execute(
            "INSERT INTO retrievals (query, profile, scope, kind, created_at, task, task_label) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (query, profile, scopes, kind, now, task, label if task else None)).lastrowid
        assert rid is not None, "an INSERT sets lastrowid"
        if items:
            self._conn.executemany(
                "INSERT INTO retrieval_items (retrieval_id, memory_id, rank, score, keep) VALUES (?, ?, ?, ?, ?)",
                [(rid, *item) for item in items])
        return rid

    def page(self, scope: str | None, limit: int, offset: int) -> list[tuple]:
        """(id, query, kind, profile, scopes JSON, created_at, tokens served, items, task key) of
        logged retrievals, newest first; ``scope``: those that searched it."""
        where, params = _searched(scope)
        return self._conn.execute(
            "SELECT r.id, r.query, r.kind, r.profile, r.scope, r.created_at, r.tokens_served, "
            "(SELECT count(*) FROM retrieval_items i WHERE i.retrieval_id = r.id), r.task "
            f"FROM retrievals r WHERE {where} ORDER BY r.id DESC LIMIT ? OFFSET ?", [*params, limit, offset]).fetchall()

    def get(self, rid: int) -> tuple | None:
        """(id, query, kind, profile, scopes JSON, created_at, tokens served, task key) of one retrieval."""
        return self._conn.execute("SELECT id, query, kind, profile, scope, created_at, tokens_served, task FROM retrievals "
                                  "WHERE id = ?", (rid,)).fetchone()

    def judged_under(self, key: str) -> bool:
        """Whether any retrieval named ``key`` has feedback: the name has a record."""
        return bool(self._conn.execute(
            "SELECT EXISTS (SELECT 1 FROM retrievals r JOIN feedback f ON f.retrieval_id = r.id WHERE r.task = ?)",
            (key,)).fetchone()[0])

    def name_task(self, rid: int, key: str, label: str | None = None) -> None:
        """Name a retrieval's task after the fact (feedback ``task``): its outcomes count under ``key``."""
        self._conn.execute("UPDATE retrievals SET task = ?, task_label = ? WHERE id = ?", (key, label, rid))

    def labels(self, keys: Sequence[str]) -> list[tuple[str, str, str | None]]:
        """(key, the name as the caller wrote it, scopes JSON) of the judged retrievals (they have
        feedback) named by one of ``keys``, newest first; at most LABEL_ROWS."""
        if not keys:
            return []
        marks = ", ".join(["?"] * len(keys))
        return self._conn.execute(
            "SELECT r.task, r.task_label, r.scope FROM retrievals r "
            f"WHERE r.task IN ({marks}) AND r.task_label IS NOT NULL "
            "AND EXISTS (SELECT 1 FROM feedback f WHERE f.retrieval_id = r.id) "
            "ORDER BY r.id DESC LIMIT ?", [*keys, LABEL_ROWS]).fetchall()

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
                f"WHERE retrieval_id IN ({marks(len(chunk))}) ORDER BY id", chunk).fetchall()
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
        """(memory id, rank, replay score, tokens) of a retrieval's logged items, by rank: the replay
        score is the keep ratio where the context was cut, else the score."""
        return self._conn.execute(
            "SELECT ri.memory_id, ri.rank, coalesce(ri.keep, ri.score), m.tokens FROM retrieval_items ri JOIN memories m ON m.id = ri.memory_id "
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

    def exists(self, rid: int) -> bool:
        return self._conn.execute("SELECT 1 FROM retrievals WHERE id = ?", (rid,)).fetchone() is not None

    def shown(self, rid: int) -> list[tuple[int, int, int, int]]:
        """(memory id, rank, expanded, served) of a retrieval's items, by rank."""
        return self._conn.execute(
            "SELECT memory_id, rank, expanded, served FROM retrieval_items WHERE retrieval_id = ? ORDER BY rank",
            (rid,)).fetchall()

    def mark_expanded(self, rid: int, ids: Sequence[int]) -> None:
        """These items of a retrieval were opened (expand)."""
        self._conn.executemany("UPDATE retrieval_items SET expanded = 1 WHERE retrieval_id = ? AND memory_id = ?",
                               [(rid, mid) for mid in ids])

    def mark_unserved(self, rid: int, ids: Sequence[int]) -> None:
        """These items of a retrieval were logged but never shown (left out by a budget)."""
        self._conn.executemany("UPDATE retrieval_items SET served = 0 WHERE retrieval_id = ? AND memory_id = ?",
                               [(rid, mid) for mid in ids])

    def mark_context(self, rid: int, tokens_served: int, tokens_matched: int | None) -> None:
        """A retrieval served as context; ``tokens_matched`` None leaves that column as it is."""
        if tokens_matched is None:
            self._conn.execute("UPDATE retrievals SET kind = 'context', tokens_served = ? WHERE id = ?",
                               (tokens_served, rid))
        else:
            self._conn.execute(
                "UPDATE retrievals SET kind = 'context', tokens_served = ?, tokens_matched = ? WHERE id = ?",
                (tokens_served, tokens_matched, rid))


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

    def log_arm(self, rid: int, scope: str, arm: str, max_tokens: int, served_limit: int | None = None) -> None:
        self._conn.execute(
            "INSERT OR REPLACE INTO retrieval_tuning (retrieval_id, scope, arm, max_tokens, served_limit) "
            "VALUES (?, ?, ?, ?, ?)", (rid, scope, arm, max_tokens, served_limit))

    def arm_of(self, rid: int) -> tuple[str, str, int, int | None] | None:
        """(scope, arm, max tokens, limit served: None if not logged) a retrieval was served with."""
        return self._conn.execute(
            "SELECT scope, arm, max_tokens, served_limit FROM retrieval_tuning WHERE retrieval_id = ?",
            (rid,)).fetchone()

    def reward(self, scope: str, arm: str, reward: float, now: float, decay: float) -> None:
        """One more (discounted) pull of an arm with this reward."""
        self._conn.execute(
            "INSERT INTO context_tuning (scope, arm, pulls, reward, updated_at) VALUES (?, ?, 1, ?, ?) "
            "ON CONFLICT(scope, arm) DO UPDATE SET pulls = pulls * ? + 1, reward = reward * ? + excluded.reward, "
            "updated_at = excluded.updated_at",
            (scope, arm, reward, now, decay, decay))
