"""Relations between memories."""

from __future__ import annotations

from typing import Any, Sequence

from recallite_core.storage.base import LinkedPair
from recallite_core.storage.postgres.locking import UnitLocks


class PostgresRelations:
    def __init__(self, conn: Any, locks: UnitLocks | None = None):
        self._conn = conn
        self._locks = locks or UnitLocks(conn)

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

    def add(self, from_id: int, to_id: int, type: str, effect: int, now: float) -> None:
        """One relation, unless the same (from, to, type) exists already."""
        self._conn.execute(
            "INSERT INTO relations (from_id, to_id, type, confidence_effect, created_at) VALUES (%s, %s, %s, %s, %s) "
            "ON CONFLICT DO NOTHING", (from_id, to_id, type, effect, now))

    def add_many(self, rows: Sequence[tuple[int, int, str, int, float]]) -> None:
        """add() for each (from, to, type, effect, created_at), in one statement (a round trip each
        was a third of a remember's statements when it contradicted several stored memories)."""
        if not rows:
            return
        cols = list(zip(*rows))
        self._conn.execute(
            "INSERT INTO relations (from_id, to_id, type, confidence_effect, created_at) "
            "SELECT * FROM unnest(%s::bigint[], %s::bigint[], %s::text[], %s::int[], %s::float8[]) "
            "ON CONFLICT DO NOTHING", [list(c) for c in cols])

    def create(self, from_id: int, to_id: int, type: str, effect: int, now: float) -> int:
        """One new relation; returns its id."""
        return self._conn.execute(
            "INSERT INTO relations (from_id, to_id, type, confidence_effect, created_at) VALUES (%s, %s, %s, %s, %s) "
            "RETURNING id", (from_id, to_id, type, effect, now)).fetchone()[0]

    def find(self, from_id: int, to_id: int, type: str) -> int | None:
        # A concurrent write locks the link first: two processes linking the same pair queue
        # here and the second finds the first's row (find, then create, as relate() does).
        self._locks.relation(from_id, to_id, type)
        row = self._conn.execute("SELECT id FROM relations WHERE from_id = %s AND to_id = %s AND type = %s",
                                 (from_id, to_id, type)).fetchone()
        return None if row is None else row[0]

    def get(self, rid: int) -> tuple[int, int, str, int, float] | None:
        """(from, to, type, confidence effect, created_at) of one relation."""
        return self._conn.execute(
            "SELECT from_id, to_id, type, confidence_effect, created_at FROM relations WHERE id = %s", (rid,)).fetchone()

    def of_memory(self, mid: int) -> list[int]:
        """The ids of the relations with either end at ``mid``, oldest first."""
        return [r[0] for r in self._conn.execute(
            "SELECT id FROM relations WHERE from_id = %s OR to_id = %s ORDER BY id", (mid, mid))]

    def evidence_counts(self, mid: int) -> tuple[int, int]:
        """(supports and derived_from pointing at it, contradictions either way) of one memory."""
        return self._conn.execute(
            "SELECT (SELECT count(*) FROM relations WHERE to_id = %s AND type IN ('supports', 'derived_from')), "
            "(SELECT count(*) FROM relations WHERE type = 'contradicts' AND (from_id = %s OR to_id = %s))",
            (mid, mid, mid)).fetchone()

    def remove(self, from_id: int, to_id: int, type: str) -> int:
        """Delete one relation; returns how many rows went (0 or 1)."""
        return self._conn.execute("DELETE FROM relations WHERE from_id = %s AND to_id = %s AND type = %s",
                                  (from_id, to_id, type)).rowcount
