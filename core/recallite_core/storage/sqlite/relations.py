"""Relations between memories."""

from __future__ import annotations

import sqlite3
from typing import Sequence

from recallite_core.storage.base import LinkedPair, chunked
from recallite_core.storage.sqlite.filters import marks


class SqliteRelations:
    def __init__(self, conn: sqlite3.Connection):
        self._conn = conn

    def edges(self, ids: Sequence[int], types: Sequence[str]) -> list[tuple[int, int, str]]:
        """(from, to, type) of the relations of these types with either end among ``ids``."""
        held = marks(len(ids))
        return self._conn.execute(
            f"SELECT from_id, to_id, type FROM relations WHERE type IN ({marks(len(types))}) "
            f"AND (from_id IN ({held}) OR to_id IN ({held}))",
            [*types, *ids, *ids],
        ).fetchall()

    def pairs_among(self, ids: Sequence[int], types: Sequence[str]) -> list[LinkedPair]:
        """Relations of these types with both ends among ``ids``."""
        held = marks(len(ids))
        return [LinkedPair(a, b, t, "", "", ca, cb, bool(fa), bool(fb)) for a, b, t, ca, cb, fa, fb in self._conn.execute(
            "SELECT r.from_id, r.to_id, r.type, a.created_at, b.created_at, a.failure_count > a.success_count, "
            "b.failure_count > b.success_count FROM relations r "
            "JOIN memories a ON a.id = r.from_id JOIN memories b ON b.id = r.to_id "
            f"WHERE r.type IN ({marks(len(types))}) AND r.from_id IN ({held}) AND r.to_id IN ({held})",
            [*types, *ids, *ids])]

    def touching(self, ids: Sequence[int], type: str) -> list[LinkedPair]:
        """Relations of one type with either end among ``ids``, with both ends' statuses."""
        held = marks(len(ids))
        return [LinkedPair(a, b, type, sa, sb) for a, b, sa, sb in self._conn.execute(
            "SELECT r.from_id, r.to_id, ma.status, mb.status FROM relations r "
            "JOIN memories ma ON ma.id = r.from_id JOIN memories mb ON mb.id = r.to_id "
            f"WHERE r.type = ? AND (r.from_id IN ({held}) OR r.to_id IN ({held}))",
            [type, *ids, *ids])]

    def effects(self, ids: Sequence[int], type: str) -> list[tuple[int, int, float]]:
        """(from, to, confidence effect) of the relations of one type with either end among ``ids``."""
        held = marks(len(ids))
        return self._conn.execute(
            f"SELECT from_id, to_id, confidence_effect FROM relations WHERE type = ? "
            f"AND (from_id IN ({held}) OR to_id IN ({held}))",
            [type, *ids, *ids]).fetchall()

    def totals(self, ids: Sequence[int]) -> dict[int, int]:
        """How many relations touch each of ``ids`` (either end); absent when none."""
        out: dict[int, int] = {}
        for chunk in chunked(ids, 400):
            held = marks(len(chunk))
            out.update(self._conn.execute(
                f"SELECT x, count(*) FROM (SELECT from_id AS x FROM relations WHERE from_id IN ({held}) "
                f"UNION ALL SELECT to_id FROM relations WHERE to_id IN ({held})) GROUP BY x", [*chunk, *chunk]))
        return out

    def open_contradictions(self, live: Sequence[str], scope: str | None, limit: int) -> list[tuple[int, int, int, float, float]]:
        """(relation id, from, to, created_at, confidence effect) of ``contradicts`` links whose
        both ends are in ``live`` statuses (the from end in ``scope``), newest first."""
        where, params = ("AND a.scope = ? ", [scope]) if scope else ("", [])
        held = marks(len(live))
        return self._conn.execute(
            "SELECT r.id, r.from_id, r.to_id, r.created_at, r.confidence_effect FROM relations r "
            "JOIN memories a ON a.id = r.from_id JOIN memories b ON b.id = r.to_id "
            f"WHERE r.type = 'contradicts' AND a.status IN ({held}) AND b.status IN ({held}) {where}"
            "ORDER BY r.id DESC LIMIT ?", [*live, *live, *params, limit]).fetchall()

    def supporters(self, ids: Sequence[int], statuses: Sequence[str]) -> list[tuple[int, str, str | None]]:
        """(supported id, supporter's source type, source id) of ``supports`` links into ``ids``
        from memories in these statuses."""
        return self._conn.execute(
            "SELECT r.to_id, m.source_type, m.source_id FROM relations r JOIN memories m ON m.id = r.from_id "
            f"WHERE r.type = 'supports' AND r.to_id IN ({marks(len(ids))}) AND m.status IN ({marks(len(statuses))})",
            [*ids, *statuses],
        ).fetchall()

    def add(self, from_id: int, to_id: int, type: str, effect: int, now: float) -> None:
        """One relation, unless the same (from, to, type) exists already."""
        self._conn.execute(
            "INSERT OR IGNORE INTO relations (from_id, to_id, type, confidence_effect, created_at) VALUES (?, ?, ?, ?, ?)",
            (from_id, to_id, type, effect, now))

    def add_many(self, rows: Sequence[tuple[int, int, str, int, float]]) -> None:
        """add() for each (from, to, type, effect, created_at)."""
        self._conn.executemany(
            "INSERT OR IGNORE INTO relations (from_id, to_id, type, confidence_effect, created_at) VALUES (?, ?, ?, ?, ?)",
            list(rows))

    def create(self, from_id: int, to_id: int, type: str, effect: int, now: float) -> int:
        """One new relation; returns its id."""
        rid = self._conn.execute(
            "INSERT INTO relations (from_id, to_id, type, confidence_effect, created_at) VALUES (?, ?, ?, ?, ?)",
            (from_id, to_id, type, effect, now)).lastrowid
        assert rid is not None  # every INSERT sets it
        return rid

    def find(self, from_id: int, to_id: int, type: str) -> int | None:
        row = self._conn.execute("SELECT id FROM relations WHERE from_id = ? AND to_id = ? AND type = ?",
                                 (from_id, to_id, type)).fetchone()
        return None if row is None else row[0]

    def get(self, rid: int) -> tuple[int, int, str, int, float] | None:
        """(from, to, type, confidence effect, created_at) of one relation."""
        return self._conn.execute(
            "SELECT from_id, to_id, type, confidence_effect, created_at FROM relations WHERE id = ?", (rid,)).fetchone()

    def of_memory(self, mid: int) -> list[int]:
        """The ids of the relations with either end at ``mid``, oldest first."""
        return [r[0] for r in self._conn.execute(
            "SELECT id FROM relations WHERE from_id = ? OR to_id = ? ORDER BY id", (mid, mid))]

    def evidence_counts(self, mid: int) -> tuple[int, int]:
        """(supports and derived_from pointing at it, contradictions either way) of one memory."""
        evidence = self._conn.execute(
            "SELECT count(*) FROM relations WHERE to_id = ? AND type IN ('supports', 'derived_from')", (mid,)).fetchone()[0]
        contra = self._conn.execute(
            "SELECT count(*) FROM relations WHERE type = 'contradicts' AND (from_id = ? OR to_id = ?)", (mid, mid)
        ).fetchone()[0]
        return evidence, contra

    def remove(self, from_id: int, to_id: int, type: str) -> int:
        """Delete one relation; returns how many rows went (0 or 1)."""
        return self._conn.execute("DELETE FROM relations WHERE from_id = ? AND to_id = ? AND type = ?",
                                  (from_id, to_id, type)).rowcount
