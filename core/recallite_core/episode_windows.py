"""The keyword index of conversation turns with their neighbours (migration 0007)."""

from __future__ import annotations

import sqlite3
from typing import Iterable

_WINDOW_SQL = (
    "SELECT group_concat(t, ' ') FROM (SELECT n.role || ': ' || m.content AS t FROM episodes n "
    "JOIN memories m ON m.id = n.memory_id WHERE n.scope = ? AND n.session = ? AND n.seq BETWEEN ? AND ? ORDER BY n.seq)"
)


def write_windows(conn: sqlite3.Connection, scope: str, session: str, seqs: Iterable[int]) -> None:
    """(Re)write the window rows of the turns at these positions of one session."""
    for seq in sorted(set(seqs)):
        row = conn.execute(
            "SELECT memory_id FROM episodes WHERE scope = ? AND session = ? AND seq = ?", (scope, session, seq)
        ).fetchone()
        if row is None:
            continue
        text = conn.execute(_WINDOW_SQL, (scope, session, seq - 1, seq + 1)).fetchone()[0] or ""
        conn.execute("DELETE FROM episode_windows WHERE rowid = ?", (row[0],))
        conn.execute("INSERT INTO episode_windows (rowid, text) VALUES (?, ?)", (row[0], text))


def rebuild_windows(conn: sqlite3.Connection) -> int:
    conn.execute("DELETE FROM episode_windows")
    rows = conn.execute("SELECT scope, session, seq FROM episodes").fetchall()
    by_session: dict[tuple[str, str], list[int]] = {}
    for scope, session, seq in rows:
        by_session.setdefault((scope, session), []).append(seq)
    for (scope, session), seqs in by_session.items():
        write_windows(conn, scope, session, seqs)
    return len(rows)
