"""Conversation turns and their keyword windows."""

from __future__ import annotations

import sqlite3
from typing import Sequence

from ..base import TurnRow, chunked
from .filters import marks


_TURN = "SELECT memory_id, scope, session, seq, role FROM episodes"


def _in_scopes(scopes: Sequence[str] | None, alias: str) -> tuple[str, list]:
    """An "AND alias.scope IN (...)" fragment, empty for None (every scope)."""
    if scopes is None:
        return "", []
    return f"AND {alias}.scope IN ({marks(len(scopes))})", list(scopes)


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

    def set_categories(self, rows: Sequence[tuple[int, str]]) -> None:
        """(memory id, category) rows; a memory's earlier category is replaced."""
        self._conn.executemany(
            "INSERT INTO memory_categories (memory_id, category) VALUES (?, ?) "
            "ON CONFLICT(memory_id) DO UPDATE SET category = excluded.category", rows)

    def session_latest(self, session: str, scopes: Sequence[str] | None, statuses: Sequence[str],
                       limit: int | None) -> list[int]:
        """The turn ids of a session whose memory has one of ``statuses``, latest first (at
        most ``limit``)."""
        where, params = _in_scopes(scopes, "e")
        sql = (f"SELECT e.memory_id FROM episodes e JOIN memories m ON m.id = e.memory_id WHERE e.session = ? {where} "
               f"AND m.status IN ({marks(len(statuses))}) ORDER BY e.seq DESC, e.event_at DESC")
        args: list = [session, *params, *statuses]
        if limit is not None:
            sql += " LIMIT ?"
            args.append(limit)
        return [r[0] for r in self._conn.execute(sql, args)]

    def session_turns(self, session: str, scopes: Sequence[str] | None,
                      statuses: Sequence[str]) -> list[tuple[int, int]]:
        """(memory id, seq) of a session's turns whose memory has one of ``statuses``, in order."""
        where, params = _in_scopes(scopes, "e")
        return self._conn.execute(
            f"SELECT e.memory_id, e.seq FROM episodes e JOIN memories m ON m.id = e.memory_id WHERE e.session = ? {where} "
            f"AND m.status IN ({marks(len(statuses))}) ORDER BY e.seq, e.event_at", [session, *params, *statuses]).fetchall()

    def summary_pools(self, session: str, scopes: Sequence[str] | None) -> list[str]:
        """The summary sentence pools (JSON) of a session, one per scope it has turns in."""
        where, params = _in_scopes(scopes, "e")
        return [r[0] for r in self._conn.execute(
            f"SELECT pool FROM session_summaries e WHERE e.session = ? {where}", [session, *params])]

    def sources_of(self, mid: int) -> list[int]:
        """The turns a memory cites, and those cited by the memories it was derived from."""
        return [r[0] for r in self._conn.execute(
            "SELECT episode_id FROM citations WHERE memory_id = ? UNION "
            "SELECT c.episode_id FROM relations r JOIN citations c ON c.memory_id = r.to_id "
            "WHERE r.from_id = ? AND r.type = 'derived_from'", (mid, mid))]
