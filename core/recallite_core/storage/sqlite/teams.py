"""Team scopes (scope_links): a member scope recalls from its teams with include_teams."""

from __future__ import annotations

import sqlite3
from typing import Sequence

from recallite_core.storage.sqlite.filters import marks


class SqliteTeams:
    def __init__(self, conn: sqlite3.Connection):
        self._conn = conn

    def join(self, scope: str, team_scope: str, now: float) -> None:
        """``scope`` becomes a member of ``team_scope`` (joining twice keeps the first)."""
        self._conn.execute("INSERT OR IGNORE INTO scope_links (scope, team_scope, created_at) VALUES (?, ?, ?)",
                           (scope, team_scope, now))

    def leave(self, scope: str, team_scope: str) -> None:
        self._conn.execute("DELETE FROM scope_links WHERE scope = ? AND team_scope = ?", (scope, team_scope))

    def of_scopes(self, scopes: Sequence[str]) -> list[str]:
        """The team scopes of these scopes, by member scope then team scope."""
        return [r[0] for r in self._conn.execute(
            f"SELECT team_scope FROM scope_links WHERE scope IN ({marks(len(scopes))}) ORDER BY scope, team_scope",
            list(scopes))]
