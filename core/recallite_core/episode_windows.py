"""The keyword index of conversation turns with their neighbours (migration 0007)."""

from __future__ import annotations

import sqlite3
from typing import Collection, Iterable

_WINDOW_SQL = (
    "SELECT group_concat(t, ' ') FROM (SELECT n.role || ': ' || m.content AS t FROM episodes n "
    "JOIN memories m ON m.id = n.memory_id WHERE n.scope = ? AND n.session = ? AND n.seq BETWEEN ? AND ? ORDER BY n.seq)"
)


def write_windows(conn: sqlite3.Connection, scope: str, session: str, seqs: Iterable[int],
                  absent: Collection[int] | bool = ()) -> None:
    """(Re)write the window rows of the turns at these positions of one session.

    The same rows as _WINDOW_SQL per position, read with one query per run of nearby
    positions; the old rows are deleted before any new one is written (FTS5 flushes its
    pending terms whenever a delete follows an insert, so interleaving them costs segments).
    ``absent``: memory ids that have no window row yet (turns inserted in this transaction:
    ids are never reused), or True for all of them; their rows are not looked up to delete."""
    wanted = sorted(set(seqs))
    if not wanted:
        return
    runs: list[list[int]] = [[wanted[0]]]
    for seq in wanted[1:]:
        if seq - runs[-1][-1] <= 3:
            runs[-1].append(seq)
        else:
            runs.append([seq])
    rows: list[tuple[int, str]] = []
    for run in runs:
        turns = {seq: (mid, f"{role}: {content}") for seq, mid, role, content in conn.execute(
            "SELECT n.seq, n.memory_id, n.role, m.content FROM episodes n JOIN memories m ON m.id = n.memory_id "
            "WHERE n.scope = ? AND n.session = ? AND n.seq BETWEEN ? AND ?", (scope, session, run[0] - 1, run[-1] + 1))}
        for seq in run:
            if seq in turns:
                rows.append((turns[seq][0], " ".join(turns[s][1] for s in (seq - 1, seq, seq + 1) if s in turns)))
    if not rows:
        return
    old = [] if absent is True else [mid for mid, _ in rows if mid not in absent]
    for i in range(0, len(old), 500):
        part = old[i : i + 500]
        conn.execute(f"DELETE FROM episode_windows WHERE rowid IN ({','.join('?' * len(part))})", part)
    conn.executemany("INSERT INTO episode_windows (rowid, text) VALUES (?, ?)", rows)


def rebuild_windows(conn: sqlite3.Connection) -> int:
    conn.execute("DELETE FROM episode_windows")
    rows = conn.execute("SELECT scope, session, seq FROM episodes").fetchall()
    by_session: dict[tuple[str, str], list[int]] = {}
    for scope, session, seq in rows:
        by_session.setdefault((scope, session), []).append(seq)
    for (scope, session), seqs in by_session.items():
        write_windows(conn, scope, session, seqs, absent=True)  # every row was deleted above
    return len(rows)
