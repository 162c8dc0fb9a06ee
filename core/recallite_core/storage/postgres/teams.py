"""Team scopes (scope_links): a member scope recalls from its teams with include_teams."""

from __future__ import annotations

from typing import Any, Sequence


class PostgresTeams:
    def __init__(self, conn: Any):
        self._conn = conn

    def join(self, scope: str, team_scope: str, now: float) -> None:
        """``scope`` becomes a member of ``team_scope`` (joining twice keeps the first)."""
        self._conn.execute("INSERT INTO scope_links (scope, team_scope, created_at) VALUES (%s, %s, %s) "
                           "ON CONFLICT DO NOTHING", (scope, team_scope, now))

    def leave(self, scope: str, team_scope: str) -> None:
        self._conn.execute("DELETE FROM scope_links WHERE scope = %s AND team_scope = %s", (scope, team_scope))

    def of_scopes(self, scopes: Sequence[str]) -> list[str]:
        """The team scopes of these scopes, by member scope then team scope (bytewise, as SQLite)."""
        return [r[0] for r in self._conn.execute(
            'SELECT team_scope FROM scope_links WHERE scope = ANY(%s) ORDER BY scope COLLATE "C", team_scope COLLATE "C"',
            (list(scopes),))]
