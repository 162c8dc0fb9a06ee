"""Export's reads and import's writes of restored rows (the JSON-lines backup format)."""

from __future__ import annotations

import sqlite3
from typing import Sequence


class SqliteArchive:
    def __init__(self, conn: sqlite3.Connection):
        self._conn = conn

    # -- export ------------------------------------------------------------------------------------
    def memory_ids(self, scope: str | None) -> list[int]:
        """Every memory id (of one scope, if given), in order."""
        if scope:
            return [r[0] for r in self._conn.execute("SELECT id FROM memories WHERE scope = ? ORDER BY id", (scope,))]
        return [r[0] for r in self._conn.execute("SELECT id FROM memories ORDER BY id")]

    def relations(self) -> list[tuple[int, int, str, int, float]]:
        """(from, to, type, confidence effect, created_at) of every relation, in order."""
        return self._conn.execute(
            "SELECT from_id, to_id, type, confidence_effect, created_at FROM relations ORDER BY id").fetchall()

    def citations(self) -> list[tuple[int, int, float]]:
        """(memory id, episode id, created_at) of every citation, in order."""
        return self._conn.execute("SELECT memory_id, episode_id, created_at FROM citations ORDER BY rowid").fetchall()

    def summaries(self) -> list[tuple[str, str, str, int, float]]:
        """(scope, session, pool JSON, turns, updated_at) of every running summary."""
        return self._conn.execute(
            "SELECT scope, session, pool, turns, updated_at FROM session_summaries ORDER BY scope, session").fetchall()

    def retrievals(self) -> list[tuple[int, str, str, str | None, str, int | None, int | None, float, str | None, str | None]]:
        """(id, query, profile, scopes JSON, kind, tokens served, tokens matched, created_at, task key, name as written) of every retrieval."""
        return self._conn.execute(
            "SELECT id, query, profile, scope, kind, tokens_served, tokens_matched, created_at, task, task_label "
            "FROM retrievals ORDER BY id"
        ).fetchall()

    def items_of(self, rid: int) -> list[tuple[int, int, float, int, float | None]]:
        """(memory id, rank, score, expanded, keep ratio) of one retrieval's items, by rank."""
        return self._conn.execute(
            "SELECT memory_id, rank, score, expanded, keep FROM retrieval_items WHERE retrieval_id = ? ORDER BY rank",
            (rid,)).fetchall()

    def feedback(self) -> list[tuple[int, int | None, str, float, str, str | None, str | None, float]]:
        """(id, retrieval id, outcome, score, used ids JSON, reason, client key, created_at) of every feedback."""
        return self._conn.execute(
            "SELECT id, retrieval_id, outcome, score, used_ids, reason, client_key, created_at FROM feedback ORDER BY id"
        ).fetchall()

    def effects_of(self, fid: int) -> list[tuple[int, float, float, float, float, str]]:
        """(memory id, weight, target, usefulness before, after, kind) of one feedback's outcome rows."""
        return self._conn.execute(
            "SELECT memory_id, weight, target, old_usefulness, new_usefulness, kind FROM memory_outcomes "
            "WHERE feedback_id = ? ORDER BY rowid", (fid,)).fetchall()

    def team_links(self, scope: str | None) -> list[tuple[str, str, float]]:
        """(member scope, team scope, created_at) of every team membership (of one member scope, if given)."""
        sql = "SELECT scope, team_scope, created_at FROM scope_links"
        params: tuple = ()
        if scope:
            sql, params = sql + " WHERE scope = ?", (scope,)
        return self._conn.execute(sql + " ORDER BY scope, team_scope", params).fetchall()

    # -- import ------------------------------------------------------------------------------------
    def turn_at(self, scope: str, session: str, seq: int, content_hash: str | None) -> int | None:
        """The turn at a place of a session (with this content hash, if given)."""
        if content_hash is None:
            row = self._conn.execute("SELECT memory_id FROM episodes WHERE scope = ? AND session = ? AND seq = ?",
                                     (scope, session, seq)).fetchone()
        else:
            row = self._conn.execute(
                "SELECT e.memory_id FROM episodes e JOIN memories m ON m.id = e.memory_id WHERE e.scope = ? AND "
                "e.session = ? AND e.seq = ? AND m.content_hash = ?", (scope, session, seq, content_hash)).fetchone()
        return None if row is None else row[0]

    def turn_count(self, scope: str, session: str) -> int:
        return self._conn.execute("SELECT count(*) FROM episodes WHERE scope = ? AND session = ?",
                                  (scope, session)).fetchone()[0]

    def restore_status(self, mid: int, status: str) -> None:
        """A restored memory's final status (set after every line is in)."""
        self._conn.execute("UPDATE memories SET status = ? WHERE id = ?", (status, mid))

    def restore_superseded_by(self, mid: int, by: int) -> None:
        self._conn.execute("UPDATE memories SET superseded_by = ? WHERE id = ?", (by, mid))

    def add_citation(self, mid: int, episode_id: int, created_at: float) -> int:
        """1 if the citation is new, 0 if it was there."""
        return self._conn.execute("INSERT OR IGNORE INTO citations (memory_id, episode_id, created_at) VALUES (?, ?, ?)",
                                  (mid, episode_id, created_at)).rowcount

    def add_relation(self, from_id: int, to_id: int, type: str, effect: int, created_at: float) -> int:
        """1 if the relation is new, 0 if it was there."""
        return self._conn.execute(
            "INSERT OR IGNORE INTO relations (from_id, to_id, type, confidence_effect, created_at) VALUES (?, ?, ?, ?, ?)",
            (from_id, to_id, type, effect, created_at)).rowcount

    def add_team_link(self, scope: str, team_scope: str, created_at: float) -> int:
        """1 if ``scope`` became a member of ``team_scope``, 0 if it was one."""
        return self._conn.execute("INSERT OR IGNORE INTO scope_links (scope, team_scope, created_at) VALUES (?, ?, ?)",
                                  (scope, team_scope, created_at)).rowcount

    def last_retrieval(self) -> int:
        """The id of the newest logged retrieval (0: none)."""
        return int(self._conn.execute("SELECT coalesce(max(id), 0) FROM retrievals").fetchone()[0])

    def same_retrieval(self, query: str, kind: str, created_at: float, upto: int,
                       searched: str | None = None) -> int | None:
        """A retrieval logged with this query, kind and time, of id ``upto`` or older (a backup restored twice);
        with ``searched``, only one that searched those scopes (JSON, as logged: an import into another scope)."""
        sql = "SELECT id FROM retrievals WHERE id <= ? AND query = ? AND kind = ? AND created_at = ?"
        params: list = [upto, query, kind, created_at]
        if searched is not None:
            sql, params = sql + " AND scope = ?", [*params, searched]
        row = self._conn.execute(sql + " ORDER BY id LIMIT 1", params).fetchone()
        return None if row is None else int(row[0])

    def has_feedback(self, rid: int, outcome: str, created_at: float) -> bool:
        """Whether retrieval ``rid`` already has this outcome logged at this time."""
        return self._conn.execute("SELECT 1 FROM feedback WHERE retrieval_id = ? AND outcome = ? AND created_at = ?",
                                  (rid, outcome, created_at)).fetchone() is not None

    def add_retrieval(self, query: str, profile: str, scopes: str | None, kind: str, tokens_served: int | None,
                      tokens_matched: int | None, created_at: float, task: str | None = None,
                      label: str | None = None) -> int:
        """A restored retrieval; returns its new id."""
        rid = self._conn.execute(
            "INSERT INTO retrievals (query, profile, scope, kind, tokens_served, tokens_matched, created_at, task, task_label) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (query, profile, scopes, kind, tokens_served, tokens_matched, created_at, task, label if task else None)).lastrowid
        assert rid is not None  # every INSERT sets it
        return rid

    def add_items(self, rid: int, rows: Sequence[tuple[int, int, float, int, float | None]]) -> None:
        """A restored retrieval's items: (memory id, rank, score, expanded, keep ratio)."""
        self._conn.executemany(
            "INSERT OR IGNORE INTO retrieval_items (retrieval_id, memory_id, rank, score, expanded, keep) VALUES (?, ?, ?, ?, ?, ?)",
            [(rid, *row) for row in rows])

    def add_effects(self, fid: int, rows: Sequence[tuple[int, float, float, float, float, float, str]]) -> None:
        """A restored feedback's outcome rows: (memory id, weight, target, usefulness before,
        after, created_at, kind)."""
        self._conn.executemany(
            "INSERT OR IGNORE INTO memory_outcomes (feedback_id, memory_id, weight, target, old_usefulness, "
            "new_usefulness, created_at, kind) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", [(fid, *row) for row in rows])
