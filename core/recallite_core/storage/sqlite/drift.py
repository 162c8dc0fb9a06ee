"""What reconcile compares: the conversation projections (turn positions, chunks, citations,
running summaries) against the memories table, and the deletes that repair them."""

from __future__ import annotations

import sqlite3
from typing import Sequence

from recallite_core.storage.base import chunked
from recallite_core.storage.sqlite.filters import marks


class SqliteDrift:
    def __init__(self, conn: sqlite3.Connection):
        self._conn = conn

    def _ids(self, sql: str, *args: object) -> list[int]:
        return [r[0] for r in self._conn.execute(sql, args)]

    def unregistered_turns(self) -> list[int]:
        """Episodes (type) without a place in a session, by id."""
        return self._ids("SELECT id FROM memories WHERE type = 'episode' AND id NOT IN (SELECT memory_id FROM episodes) "
                         "ORDER BY id")

    def stray_turns(self) -> list[int]:
        """Turn rows whose memory is gone, is no episode, or moved scope or session."""
        return self._ids("SELECT e.memory_id FROM episodes e LEFT JOIN memories m ON m.id = e.memory_id "
                         "WHERE m.id IS NULL OR m.type != 'episode' OR m.scope != e.scope "
                         "OR coalesce(m.session, '') != e.session")

    def stray_chunks(self) -> list[int]:
        """Memory ids of chunks whose memory is gone."""
        return self._ids("SELECT DISTINCT memory_id FROM chunks WHERE memory_id NOT IN (SELECT id FROM memories)")

    def malformed_chunks(self, dimensions: int) -> list[int]:
        """Memories with a chunk vector that is not ``dimensions`` float32 values."""
        return self._ids("SELECT DISTINCT memory_id FROM chunks WHERE length(vector) != ? "
                         "AND memory_id IN (SELECT id FROM memories)", dimensions * 4)

    def chunk_spans(self) -> list[tuple[int, int, int]]:
        """(memory id, start, stop) of every chunk, by memory and order."""
        return self._conn.execute("SELECT memory_id, start, stop FROM chunks ORDER BY memory_id, ord").fetchall()

    def bad_citations(self) -> list[int]:
        """Citing memories of citations whose either end is gone or whose source is no episode."""
        return self._ids("SELECT c.memory_id FROM citations c LEFT JOIN memories e ON e.id = c.episode_id "
                         "LEFT JOIN memories m ON m.id = c.memory_id WHERE e.id IS NULL OR m.id IS NULL "
                         "OR e.type != 'episode'")

    def summaries(self) -> list[tuple[str, str, str, int]]:
        """(scope, session, pool JSON, turns folded in) of every running summary."""
        return self._conn.execute("SELECT scope, session, pool, turns FROM session_summaries").fetchall()

    def turn_counts(self) -> dict[tuple[str, str], int]:
        """Turns per (scope, session)."""
        return {(sc, se): n for sc, se, n in self._conn.execute(
            "SELECT scope, session, count(*) FROM episodes GROUP BY scope, session")}

    def turn_fields(self, ids: Sequence[int]) -> list[tuple[int, str, str, float]]:
        """(id, scope, session or '', created_at) of the rows among ``ids``, by id: what a
        turn's place is made of."""
        out: list[tuple[int, str, str, float]] = []
        for chunk in chunked(sorted(ids)):
            out += self._conn.execute(
                f"SELECT id, scope, coalesce(session, ''), created_at FROM memories WHERE id IN ({marks(len(chunk))}) "
                "ORDER BY id", chunk).fetchall()
        return out

    def drop_turns(self, ids: Sequence[int]) -> None:
        """The turn rows (places in a session) of these memories."""
        self._conn.executemany("DELETE FROM episodes WHERE memory_id = ?", [(i,) for i in ids])

    def drop_bad_citations(self) -> None:
        """Citations whose source is no episode (or gone) or whose citing memory is gone."""
        self._conn.execute("DELETE FROM citations WHERE episode_id NOT IN (SELECT id FROM memories WHERE type = 'episode') "
                           "OR memory_id NOT IN (SELECT id FROM memories)")
