"""Relations between memories."""

from __future__ import annotations

from typing import Any, Sequence

from recallite_core.storage.base import LinkedPair


class PostgresRelations:
    def __init__(self, conn: Any):
        self._conn = conn

    def edges(self, ids: Sequence[int], types: Sequence[str]) -> list[tuple[int, int, str]]:
        """(from, to, type) of the relations of these types with either end among ``ids``."""
        held = list(ids)
        return self._conn.execute(
            "SELECT from_id, to_id, type FROM relations WHERE type = ANY(%s) "
            "AND (from_id = ANY(%s) OR to_id = ANY(%s))", (list(types), held, held)).fetchall()

    def pairs_among(self, ids: Sequence[int], types: Sequence[str]) -> list[LinkedPair]:
        """Relations of these types with both ends among ``ids``."""
        held = list(ids)
        return [LinkedPair(a, b, t, "", "", ca, cb, fa, fb) for a, b, t, ca, cb, fa, fb in self._conn.execute(
            "SELECT r.from_id, r.to_id, r.type, a.created_at, b.created_at, a.failure_count > a.success_count, "
            "b.failure_count > b.success_count FROM relations r "
            "JOIN memories a ON a.id = r.from_id JOIN memories b ON b.id = r.to_id "
            "WHERE r.type = ANY(%s) AND r.from_id = ANY(%s) AND r.to_id = ANY(%s)", (list(types), held, held))]

    def touching(self, ids: Sequence[int], type: str) -> list[LinkedPair]:
        """Relations of one type with either end among ``ids``, with both ends' statuses."""
        held = list(ids)
        return [LinkedPair(a, b, type, sa, sb) for a, b, sa, sb in self._conn.execute(
            "SELECT r.from_id, r.to_id, ma.status, mb.status FROM relations r "
            "JOIN memories ma ON ma.id = r.from_id JOIN memories mb ON mb.id = r.to_id "
            "WHERE r.type = %s AND (r.from_id = ANY(%s) OR r.to_id = ANY(%s))", (type, held, held))]

    def effects(self, ids: Sequence[int], type: str) -> list[tuple[int, int, float]]:
        """(from, to, confidence effect) of the relations of one type with either end among ``ids``."""
        held = list(ids)
        return self._conn.execute(
            "SELECT from_id, to_id, confidence_effect FROM relations WHERE type = %s "
            "AND (from_id = ANY(%s) OR to_id = ANY(%s))", (type, held, held)).fetchall()

    def totals(self, ids: Sequence[int]) -> dict[int, int]:
        """How many relations touch each of ``ids`` (either end); absent when none."""
        held = list(ids)
        return dict(self._conn.execute(
            "SELECT x, count(*) FROM (SELECT from_id AS x FROM relations WHERE from_id = ANY(%s) "
            "UNION ALL SELECT to_id FROM relations WHERE to_id = ANY(%s)) t GROUP BY x", (held, held)).fetchall())

    def open_contradictions(self, live: Sequence[str], scope: str | None, limit: int) -> list[tuple[int, int, int, float, float]]:
        """(relation id, from, to, created_at, confidence effect) of ``contradicts`` links whose
        both ends are in ``live`` statuses (the from end in ``scope``), newest first."""
        where, params = ("AND a.scope = %s ", [scope]) if scope else ("", [])
        return self._conn.execute(
            "SELECT r.id, r.from_id, r.to_id, r.created_at, r.confidence_effect FROM relations r "
            "JOIN memories a ON a.id = r.from_id JOIN memories b ON b.id = r.to_id "
            f"WHERE r.type = 'contradicts' AND a.status = ANY(%s) AND b.status = ANY(%s) {where}"
            "ORDER BY r.id DESC LIMIT %s", [list(live), list(live), *params, limit]).fetchall()

    def supporters(self, ids: Sequence[int], statuses: Sequence[str]) -> list[tuple[int, str, str | None]]:
        """(supported id, supporter's source type, source id) of ``supports`` links into ``ids``
        from memories in these statuses."""
        return self._conn.execute(
            "SELECT r.to_id, m.source_type, m.source_id FROM relations r JOIN memories m ON m.id = r.from_id "
            "WHERE r.type = 'supports' AND r.to_id = ANY(%s) AND m.status = ANY(%s)",
            (list(ids), list(statuses))).fetchall()
