"""Outcome rows, the retrieval log and the context tuner's arms: what learning reads and writes."""

from __future__ import annotations

from typing import Any, Sequence

from recallite_core.storage.base import LABEL_ROWS, CreditRecord
from recallite_core.storage.postgres.locking import UnitLocks
from recallite_core.storage.postgres.snapshot import snapshot_fact


def _searched(scope: str | None) -> tuple[str, list]:
    """Retrievals whose searched scopes (a JSON list as text, NULL for every scope) include ``scope``."""
    if not scope:
        return "true", []
    return "(r.scope IS NULL OR r.scope::jsonb ? %s)", [scope]


class PostgresOutcomes:
    def __init__(self, conn: Any, locks: UnitLocks | None = None):
        self._conn = conn
        self._locks = locks or UnitLocks(conn)

    def serialise_feedback(self) -> None:
        """Take the learning lock now, before the feedback's checks read what it then writes (its
        retrieval's task name, earlier feedback): two feedbacks on one retrieval in two processes
        had both passed the checks, and the second renamed what the first had reported."""
        self._locks.learning()

    def last_success(self, ids: Sequence[int], min_target: float) -> dict[int, float]:
        return dict(self._conn.execute(
            "SELECT memory_id, max(created_at) FROM memory_outcomes WHERE target >= %s AND memory_id = ANY(%s) "
            "GROUP BY memory_id", (min_target, list(ids))).fetchall())

    def of_memory(self, mid: int, limit: int) -> list[tuple]:
        """(feedback id, retrieval id, query, outcome, kind, weight, target, usefulness before,
        after, created_at) of a memory's outcome rows, newest first."""
        return self._conn.execute(
            "SELECT o.feedback_id, f.retrieval_id, r.query, f.outcome, o.kind, o.weight, o.target, "
            "o.old_usefulness, o.new_usefulness, o.created_at FROM memory_outcomes o "
            "JOIN feedback f ON f.id = o.feedback_id LEFT JOIN retrievals r ON r.id = f.retrieval_id "
            "WHERE o.memory_id = %s ORDER BY o.created_at DESC, o.feedback_id DESC LIMIT %s", (mid, limit)).fetchall()

    def outcome_mark(self) -> tuple[int, int | None]:
        """(last outcome row's id, 0 for none; the learning epoch): the learner's cache key."""
        if snapshot_fact(self._conn, "learning_epoch") is not None:
            return snapshot_fact(self._conn, "outcome_top") or 0, snapshot_fact(self._conn, "learning_epoch")
        top, epoch = self._conn.execute(
            "SELECT (SELECT max(row_id) FROM memory_outcomes), "
            "(SELECT value FROM counters WHERE name = 'learning_epoch')").fetchone()
        return top or 0, epoch

    def judged_since(self, rowid: int) -> list[int]:
        """Memories with an outcome row after ``rowid``."""
        return [r[0] for r in self._conn.execute(
            "SELECT DISTINCT memory_id FROM memory_outcomes WHERE row_id > %s", (rowid,))]

    def history(self, ids: Sequence[int], limit: int) -> list[tuple]:
        """The latest ``limit`` outcome rows of each memory, newest first per memory:
        (memory id, target, weight, created_at, rival, explained, task vector bytes or None, task key or None,
        scopes JSON its retrieval searched or None, guessed);
        see SqliteOutcomes.history for rival, explained and guessed."""
        if not ids:
            return []
        peers = ("(SELECT coalesce(sum(({cmp})::int), 0) FROM feedback f2"
                 " JOIN memory_outcomes mo2 ON mo2.feedback_id = f2.id JOIN memories m2 ON m2.id = mo2.memory_id"
                 " WHERE f2.retrieval_id = f.retrieval_id AND mo2.memory_id <> mo.memory_id AND mo2.target >= 0.5)")
        return self._conn.execute(
            "SELECT memory_id, target, weight, created_at, rival, explained, vector, task, searched, guessed FROM ("
            " SELECT mo.memory_id, mo.target, mo.weight, mo.created_at,"
            f"  CASE WHEN mo.kind = 'unused' THEN 0 ELSE {peers.format(cmp='m2.created_at > me.created_at')} END AS rival,"
            f"  CASE WHEN mo.kind = 'unused' THEN 1 ELSE {peers.format(cmp='m2.created_at <= me.created_at')} END AS explained,"
            "  rv.vector, r.task, r.scope AS searched,"
            "  coalesce(mo.kind = 'credit' AND f.used_ids = '[]' AND NOT EXISTS (SELECT 1 FROM retrieval_items ri"
            "   WHERE ri.retrieval_id = f.retrieval_id AND ri.memory_id = mo.memory_id AND ri.expanded <> 0), false)::int"
            "  AS guessed,"
            "  row_number() OVER (PARTITION BY mo.memory_id ORDER BY mo.row_id DESC) AS rn"
            " FROM memory_outcomes mo JOIN memories me ON me.id = mo.memory_id"
            " LEFT JOIN feedback f ON f.id = mo.feedback_id"
            " LEFT JOIN retrieval_vectors rv ON rv.retrieval_id = f.retrieval_id"
            " LEFT JOIN retrievals r ON r.id = f.retrieval_id"
            " WHERE mo.memory_id = ANY(%s)"
            ") h WHERE rn <= %s ORDER BY memory_id, rn", (list(ids), limit)).fetchall()

    def proven_under(self, key: str) -> list[tuple[int, str | None, bool]]:
        """Memories whose latest outcome under task key ``key`` was a success, or a partial that
        credited them (the part that worked; not a failure or an 'unused' mark), with the
        scopes JSON that retrieval searched (None: all) and whether a feedback under the name that
        was not a failure named it in its used ids: what worked the last time the job of that name
        was done, where, and whether the agent said so."""
        return [(r[0], r[1], bool(r[2])) for r in self._conn.execute(
            "SELECT memory_id, searched, named FROM ("
            " SELECT mo.memory_id, mo.target, mo.kind, f.outcome, r.scope AS searched,"
            "  max(CASE WHEN f.outcome <> 'failure' AND mo.target >= 0.5 AND position(('\"mem_' || mo.memory_id || '\"') in f.used_ids) > 0"
            "  THEN 1 ELSE 0 END) OVER (PARTITION BY mo.memory_id) AS named,"
            "  row_number() OVER (PARTITION BY mo.memory_id ORDER BY mo.row_id DESC) AS rn"
            " FROM retrievals r JOIN feedback f ON f.retrieval_id = r.id"
            " JOIN memory_outcomes mo ON mo.feedback_id = f.id WHERE r.task = %s"
            ") h WHERE rn = 1 AND (target > 0.5 OR (outcome <> 'failure' AND kind = 'credit' AND target >= 0.5))"
            " ORDER BY memory_id", (key,))]

    def offered(self, ids: Sequence[int]) -> list[int]:
        """Which of ``ids`` were served (not left out by a budget) in a retrieval whose feedback was
        not a failure: the task was done, in full or in part, with what the agent chose."""
        return [r[0] for r in self._conn.execute(
            "SELECT DISTINCT ri.memory_id FROM retrieval_items ri WHERE ri.memory_id = ANY(%s) AND ri.served = 1 "
            "AND EXISTS (SELECT 1 FROM feedback f WHERE f.retrieval_id = ri.retrieval_id "
            "AND f.outcome <> 'failure')", (list(ids),))]

    def credit_records(self, ids: Sequence[int], min_weight: float) -> dict[int, CreditRecord]:
        return {mid: CreditRecord(succ, rets, fails) for mid, succ, rets, fails in self._conn.execute(
            "SELECT mo.memory_id, "
            "count(*) FILTER (WHERE f.outcome = 'success' AND mo.weight >= %s), "
            "count(DISTINCT f.retrieval_id) FILTER (WHERE f.outcome = 'success' AND mo.weight >= %s), "
            "count(*) FILTER (WHERE f.outcome = 'failure') "
            "FROM memory_outcomes mo JOIN feedback f ON f.id = mo.feedback_id "
            "WHERE mo.kind = 'credit' AND mo.memory_id = ANY(%s) GROUP BY mo.memory_id",
            (min_weight, min_weight, list(ids)))}

    def add_feedback(self, rid: int | None, outcome: str, score: float, used_ids: str, reason: str | None,
                     client_key: str | None, now: float) -> int:
        """Log one feedback on a retrieval (None: a restored one whose retrieval was not kept); returns its id."""
        self._locks.learning()
        return self._conn.execute(
            "INSERT INTO feedback (retrieval_id, outcome, score, used_ids, reason, client_key, created_at) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s) RETURNING id",
            (rid, outcome, score, used_ids, reason, client_key, now)).fetchone()[0]

    def feedback_with_key(self, client_key: str) -> int | None:
        """The feedback sent earlier with this client key (a retry), if any. A concurrent write
        takes the learning lock first, so a retry racing its first try waits and finds it."""
        self._locks.learning()
        row = self._conn.execute("SELECT id FROM feedback WHERE client_key = %s", (client_key,)).fetchone()
        return None if row is None else row[0]

    def feedback(self, fid: int) -> tuple[int | None, str, float]:
        """(retrieval id, outcome, score) of one feedback."""
        return self._conn.execute("SELECT retrieval_id, outcome, score FROM feedback WHERE id = %s", (fid,)).fetchone()

    def credits_of(self, fid: int) -> list[tuple[int, float, float, float]]:
        """(memory id, weight, usefulness before, after) of the credit rows a feedback wrote, in order."""
        return self._conn.execute(
            "SELECT memory_id, weight, old_usefulness, new_usefulness FROM memory_outcomes "
            "WHERE feedback_id = %s AND kind = 'credit' ORDER BY row_id", (fid,)).fetchall()

    def add(self, rows: Sequence[tuple[int, int, float, float, float, float, float]]) -> None:
        """Credit rows: (feedback id, memory id, weight, target, usefulness before, after, created_at)."""
        if rows:
            self._locks.learning()
            with self._conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO memory_outcomes (feedback_id, memory_id, weight, target, old_usefulness, "
                    "new_usefulness, created_at) VALUES (%s, %s, %s, %s, %s, %s, %s)", list(rows))

    def add_unused(self, fid: int, ids: Sequence[int], weight: float, now: float, exempt_types: Sequence[str]) -> None:
        """'unused' rows (target 0, usefulness unchanged) for the memories among ``ids`` whose
        type is not one of ``exempt_types`` (one statement, rows in the order of ``ids``)."""
        if ids:
            self._conn.execute(
                "INSERT INTO memory_outcomes (feedback_id, memory_id, weight, target, old_usefulness, "
                "new_usefulness, created_at, kind) SELECT %s, m.id, %s, 0.0, m.usefulness, m.usefulness, %s, 'unused' "
                "FROM unnest(%s::bigint[]) WITH ORDINALITY AS u(id, n) JOIN memories m ON m.id = u.id "
                "WHERE NOT (m.type = ANY(%s::text[])) ORDER BY u.n",
                (fid, weight, now, list(ids), list(exempt_types)))


class PostgresRetrievals:
    """The retrieval log: what each recall or context served, its feedback, its task vector."""

    def __init__(self, conn: Any):
        self._conn = conn

    def add(self, query: str, profile: str, scopes: str | None, kind: str, now: float,
            items: Sequence[tuple[int, int, float, float | None]], task: str | None = None,
            label: str | None = None) -> int:
        """Log one retrieval (``task``: the caller's task key, ``label``: its name as written) and its items (memory id, rank, score,
        keep ratio or None); returns its id."""
        # One statement for the retrieval and its items (one round trip; the items' rows were an
        # executemany of their own): the items' columns travel as one array each.
        # The unit that logs a recall commits without waiting for its WAL to reach the disk
        # (synchronous_commit off, for this transaction only; the flush was most of its COMMIT):
        # a server crash may lose the last fraction of a second of retrieval log and access
        # counts, never consistency, and other sessions see the rows at once. SQLite's log has
        # the same terms (WAL with synchronous=NORMAL: no fsync per commit). docs/postgres.md.
        mids, ranks, scores, keeps = (list(c) for c in zip(*items)) if items else ([], [], [], [])
        return self._conn.execute(
            "WITH lazy AS MATERIALIZED (SELECT set_config('synchronous_commit', 'off', true)), "
            "r AS (INSERT INTO retrievals (query, profile, scope, kind, created_at, task, task_label) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s) RETURNING id), "
            "i AS (INSERT INTO retrieval_items (retrieval_id, memory_id, rank, score, keep) "
            "SELECT r.id, u.m, u.k, u.s, u.p FROM r, "
            "unnest(%s::bigint[], %s::integer[], %s::float8[], %s::float8[]) AS u(m, k, s, p)) "
            "SELECT r.id FROM r, lazy",
            (query, profile, scopes, kind, now, task, label if task else None, mids, ranks, scores, keeps)).fetchone()[0]

    def page(self, scope: str | None, limit: int, offset: int) -> list[tuple]:
        """(id, query, kind, profile, scopes JSON, created_at, tokens served, items, task key) of
        logged retrievals, newest first; ``scope``: those that searched it."""
        where, params = _searched(scope)
        return self._conn.execute(
            "SELECT r.id, r.query, r.kind, r.profile, r.scope, r.created_at, r.tokens_served, "
            "(SELECT count(*) FROM retrieval_items i WHERE i.retrieval_id = r.id), r.task "
            f"FROM retrievals r WHERE {where} ORDER BY r.id DESC LIMIT %s OFFSET %s",
            [*params, limit, offset]).fetchall()

    def get(self, rid: int) -> tuple | None:
        """(id, query, kind, profile, scopes JSON, created_at, tokens served, task key) of one retrieval."""
        return self._conn.execute("SELECT id, query, kind, profile, scope, created_at, tokens_served, task FROM retrievals "
                                  "WHERE id = %s", (rid,)).fetchone()

    def judged_under(self, key: str) -> bool:
        """Whether any retrieval named ``key`` has feedback: the name has a record."""
        return bool(self._conn.execute(
            "SELECT EXISTS (SELECT 1 FROM retrievals r JOIN feedback f ON f.retrieval_id = r.id WHERE r.task = %s)",
            (key,)).fetchone()[0])

    def name_task(self, rid: int, key: str, label: str | None = None) -> None:
        """Name a retrieval's task after the fact (feedback ``task``): its outcomes count under ``key``."""
        self._conn.execute("UPDATE retrievals SET task = %s, task_label = %s WHERE id = %s", (key, label, rid))

    def labels(self, keys: Sequence[str]) -> list[tuple[str, str, str | None]]:
        """(key, the name as the caller wrote it, scopes JSON) of the judged retrievals (they have
        feedback) named by one of ``keys``, newest first; at most LABEL_ROWS."""
        if not keys:
            return []
        marks = ", ".join(["%s"] * len(keys))
        return self._conn.execute(
            "SELECT r.task, r.task_label, r.scope FROM retrievals r "
            f"WHERE r.task IN ({marks}) AND r.task_label IS NOT NULL "
            "AND EXISTS (SELECT 1 FROM feedback f WHERE f.retrieval_id = r.id) "
            "ORDER BY r.id DESC LIMIT %s", [*keys, LABEL_ROWS]).fetchall()

    def items(self, rid: int) -> list[tuple[int, int, float, int, int]]:
        """(memory id, rank, score, served, expanded) of a retrieval's items, by rank."""
        return self._conn.execute("SELECT memory_id, rank, score, served, expanded FROM retrieval_items "
                                  "WHERE retrieval_id = %s ORDER BY rank", (rid,)).fetchall()

    def feedback_of(self, rids: Sequence[int]) -> list[tuple]:
        """(id, retrieval id, outcome, score, used ids JSON, reason, created_at) of the feedback
        on these retrievals, oldest first."""
        return self._conn.execute(
            "SELECT id, retrieval_id, outcome, score, used_ids, reason, created_at FROM feedback "
            "WHERE retrieval_id = ANY(%s) ORDER BY id", (list(rids),)).fetchall()

    def daily_feedback(self, scope: str | None, days: int) -> list[tuple]:
        """(UTC day, feedback, successes, failures, partial, mean score) per day over the last
        ``days`` days before the latest feedback, oldest first; ``scope``: on retrievals that searched it."""
        latest = self._conn.execute("SELECT max(created_at) FROM feedback").fetchone()[0]
        if latest is None:
            return []
        where, params = _searched(scope)
        return self._conn.execute(
            "SELECT to_char(to_timestamp(f.created_at) AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day, count(*), "
            "count(*) FILTER (WHERE f.outcome = 'success'), count(*) FILTER (WHERE f.outcome = 'failure'), "
            "count(*) FILTER (WHERE f.outcome = 'partial'), avg(f.score) FROM feedback f "
            f"JOIN retrievals r ON r.id = f.retrieval_id WHERE {where} AND f.created_at > %s "
            "GROUP BY day ORDER BY day", [*params, latest - days * 86400.0]).fetchall()

    def query_of(self, rid: int) -> tuple[str, bool] | None:
        """(query, whether a task vector is stored) of a logged retrieval; None if there is none."""
        row = self._conn.execute(
            "SELECT r.query, rv.retrieval_id FROM retrievals r LEFT JOIN retrieval_vectors rv ON rv.retrieval_id = r.id "
            "WHERE r.id = %s", (rid,)).fetchone()
        return None if row is None else (row[0], row[1] is not None)

    def served_vectors(self, rid: int, depth: int) -> list[tuple[bytes, float]]:
        """(vector bytes, score) of a retrieval's first ``depth`` logged items that have a vector."""
        rows = self._conn.execute(
            "SELECT v.embedding, ri.score FROM retrieval_items ri JOIN vectors v ON v.memory_id = ri.memory_id "
            "WHERE ri.retrieval_id = %s ORDER BY ri.rank LIMIT %s", (rid, depth), binary=True).fetchall()
        from recallite_core.storage.postgres.vectors import vector_bytes

        return [(vector_bytes(v), score) for v, score in rows]

    def served_items(self, rid: int) -> list[tuple[int, int, float, int]]:
        """(memory id, rank, replay score, tokens) of a retrieval's logged items, by rank: the replay
        score is the keep ratio where the context was cut, else the score."""
        return self._conn.execute(
            "SELECT ri.memory_id, ri.rank, coalesce(ri.keep, ri.score), m.tokens FROM retrieval_items ri "
            "JOIN memories m ON m.id = ri.memory_id WHERE ri.retrieval_id = %s ORDER BY ri.rank", (rid,)).fetchall()

    def has_task_vectors(self) -> bool:
        return self._conn.execute("SELECT 1 FROM retrieval_vectors LIMIT 1").fetchone() is not None

    def add_task_vector(self, rid: int, vector: bytes) -> None:
        """Keep a retrieval's task vector (the first one written stays)."""
        self._conn.execute("INSERT INTO retrieval_vectors (retrieval_id, vector) VALUES (%s, %s) "
                           "ON CONFLICT (retrieval_id) DO NOTHING", (rid, vector))

    def judged(self, without_vector: bool) -> list[tuple[int, str]]:
        """(id, query) of the retrievals that got feedback (only those without a task vector)."""
        sql = "SELECT DISTINCT r.id, r.query FROM retrievals r JOIN feedback f ON f.retrieval_id = r.id"
        if without_vector:
            sql += " WHERE r.id NOT IN (SELECT retrieval_id FROM retrieval_vectors)"
        return self._conn.execute(sql + " ORDER BY r.id").fetchall()

    def replace_task_vectors(self, rows: Sequence[tuple[int, bytes]], clear: bool) -> None:
        """Write task vectors (all others dropped first with ``clear``) and start a new learning
        epoch, so every learner's cache rebuilds."""
        if clear:
            self._conn.execute("DELETE FROM retrieval_vectors")
        if rows:
            with self._conn.cursor() as cur:
                cur.executemany("INSERT INTO retrieval_vectors (retrieval_id, vector) VALUES (%s, %s) "
                                "ON CONFLICT (retrieval_id) DO UPDATE SET vector = excluded.vector", rows)
        self._conn.execute("UPDATE counters SET value = value + 1 WHERE name = 'learning_epoch'")

    def exists(self, rid: int) -> bool:
        return self._conn.execute("SELECT 1 FROM retrievals WHERE id = %s", (rid,)).fetchone() is not None

    def shown(self, rid: int) -> list[tuple[int, int, int, int]]:
        """(memory id, rank, expanded, served) of a retrieval's items, by rank."""
        return self._conn.execute(
            "SELECT memory_id, rank, expanded, served FROM retrieval_items WHERE retrieval_id = %s ORDER BY rank",
            (rid,)).fetchall()

    def mark_expanded(self, rid: int, ids: Sequence[int]) -> None:
        """These items of a retrieval were opened (expand)."""
        self._conn.execute("UPDATE retrieval_items SET expanded = 1 WHERE retrieval_id = %s AND memory_id = ANY(%s)",
                           (rid, list(ids)))

    def mark_unserved(self, rid: int, ids: Sequence[int]) -> None:
        """These items of a retrieval were logged but never shown (left out by a budget)."""
        self._conn.execute("UPDATE retrieval_items SET served = 0 WHERE retrieval_id = %s AND memory_id = ANY(%s)",
                           (rid, list(ids)))

    def mark_context(self, rid: int, tokens_served: int, tokens_matched: int | None) -> None:
        """A retrieval served as context; ``tokens_matched`` None leaves that column as it is."""
        self._conn.execute(
            "UPDATE retrievals SET kind = 'context', tokens_served = %s, "
            "tokens_matched = coalesce(%s, tokens_matched) WHERE id = %s", (tokens_served, tokens_matched, rid))


class PostgresTuning:
    """The context tuner's arms: pulls and reward per (scope, arm), and the arm each retrieval served."""

    def __init__(self, conn: Any, locks: UnitLocks | None = None):
        self._conn = conn
        self._locks = locks or UnitLocks(conn)

    def arms(self, scope: str) -> dict[str, tuple[float, float]]:
        """arm key -> (pulls, reward) in one scope."""
        return {a: (p, r) for a, p, r in self._conn.execute(
            "SELECT arm, pulls, reward FROM context_tuning WHERE scope = %s", (scope,))}

    def scopes(self) -> list[str]:
        return [r[0] for r in self._conn.execute(
            'SELECT DISTINCT scope COLLATE "C" FROM context_tuning ORDER BY 1')]

    def log_arm(self, rid: int, scope: str, arm: str, max_tokens: int, served_limit: int | None = None) -> None:
        self._conn.execute(
            "INSERT INTO retrieval_tuning (retrieval_id, scope, arm, max_tokens, served_limit) "
            "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (retrieval_id) DO UPDATE SET scope = excluded.scope, "
            "arm = excluded.arm, max_tokens = excluded.max_tokens, served_limit = excluded.served_limit",
            (rid, scope, arm, max_tokens, served_limit))

    def arm_of(self, rid: int) -> tuple[str, str, int, int | None] | None:
        """(scope, arm, max tokens, limit served: None if not logged) a retrieval was served with."""
        return self._conn.execute(
            "SELECT scope, arm, max_tokens, served_limit FROM retrieval_tuning WHERE retrieval_id = %s",
            (rid,)).fetchone()

    def reward(self, scope: str, arm: str, reward: float, now: float, decay: float) -> None:
        """One more (discounted) pull of an arm with this reward."""
        self._locks.learning()
        self._conn.execute(
            "INSERT INTO context_tuning (scope, arm, pulls, reward, updated_at) VALUES (%s, %s, 1, %s, %s) "
            "ON CONFLICT (scope, arm) DO UPDATE SET pulls = context_tuning.pulls * %s + 1, "
            "reward = context_tuning.reward * %s + excluded.reward, updated_at = excluded.updated_at",
            (scope, arm, reward, now, decay, decay))
