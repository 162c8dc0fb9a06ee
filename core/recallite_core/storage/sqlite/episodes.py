"""Conversation turns and their keyword windows."""

from __future__ import annotations

import sqlite3
from typing import Sequence

from ..base import TurnRow, chunked
from .filters import marks


_TURN = "SELECT memory_id, scope, session, seq, role FROM episodes"


class SqliteEpisodes:
    def __init__(self, conn: sqlite3.Connection):
        self._conn = conn

    def any(self) -> bool:
        return self._conn.execute("SELECT 1 FROM episodes LIMIT 1").fetchone() is not None

    def turns_of(self, ids: Sequence[int]) -> list[TurnRow]:
        out: list[TurnRow] = []
        for chunk in chunked(ids):
            out.extend(self._conn.execute(f"{_TURN} WHERE memory_id IN ({marks(len(chunk))})", chunk))
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
            self._conn.execute(f"DELETE FROM episode_windows WHERE rowid IN ({marks(len(chunk))})", chunk)
        self._conn.executemany("INSERT INTO episode_windows (rowid, text) VALUES (?, ?)", rows)

    def clear_windows(self) -> None:
        self._conn.execute("DELETE FROM episode_windows")

    def places(self) -> list[tuple[str, str, int]]:
        return self._conn.execute("SELECT scope, session, seq FROM episodes").fetchall()
