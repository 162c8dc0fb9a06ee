"""Conversation turns and their keyword windows."""

from __future__ import annotations

from typing import Any, Sequence

from recallite_core.storage.base import TurnRow

_TURN = "SELECT memory_id, scope, session, seq, role FROM episodes"


class PostgresEpisodes:
    def __init__(self, conn: Any):
        self._conn = conn

    def any(self) -> bool:
        return self._conn.execute("SELECT 1 FROM episodes LIMIT 1").fetchone() is not None

    def turns_of(self, ids: Sequence[int]) -> list[TurnRow]:
        return self._conn.execute(f"{_TURN} WHERE memory_id = ANY(%s)", (list(ids),)).fetchall()

    def turns_at(self, places: Sequence[tuple[str, str, int]]) -> list[TurnRow]:
        """The turns at these (scope, session, seq) places (three arrays, one round trip)."""
        if not places:
            return []
        scopes, sessions, seqs = (list(col) for col in zip(*places))
        return self._conn.execute(
            "SELECT e.memory_id, e.scope, e.session, e.seq, e.role FROM episodes e "
            "JOIN unnest(%s::text[], %s::text[], %s::int[]) AS p(scope, session, seq) "
            "ON e.scope = p.scope AND e.session = p.session AND e.seq = p.seq", (scopes, sessions, seqs)).fetchall()

    def all_turns(self) -> list[TurnRow]:
        return self._conn.execute(_TURN).fetchall()

    def turns_changed_since(self, seq: int) -> list[TurnRow]:
        return self._conn.execute(
            "SELECT e.memory_id, e.scope, e.session, e.seq, e.role FROM memories m "
            "JOIN episodes e ON e.memory_id = m.id WHERE m.seq > %s", (seq,)).fetchall()

    def turn_texts(self, scope: str, session: str, first: int, last: int) -> list[tuple[int, int, str, str]]:
        """(seq, memory id, role, content) of the turns of one session between two positions."""
        return self._conn.execute(
            "SELECT n.seq, n.memory_id, n.role, m.content FROM episodes n JOIN memories m ON m.id = n.memory_id "
            "WHERE n.scope = %s AND n.session = %s AND n.seq BETWEEN %s AND %s",
            (scope, session, first, last)).fetchall()

    def replace_windows(self, stale: Sequence[int], rows: Sequence[tuple[int, str]]) -> None:
        """Delete the window rows of ``stale`` turns, then write ``rows`` (turn id, text)."""
        if stale:
            self._conn.execute("DELETE FROM episode_windows WHERE memory_id = ANY(%s)", (list(stale),))
        if rows:
            with self._conn.cursor() as cur:
                cur.executemany("INSERT INTO episode_windows (memory_id, text) VALUES (%s, %s) "
                                "ON CONFLICT (memory_id) DO UPDATE SET text = excluded.text", rows)

    def clear_windows(self) -> None:
        self._conn.execute("DELETE FROM episode_windows")

    def places(self) -> list[tuple[str, str, int]]:
        return self._conn.execute("SELECT scope, session, seq FROM episodes").fetchall()
