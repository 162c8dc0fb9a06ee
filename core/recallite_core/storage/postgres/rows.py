"""PostgreSQL rows -> models: the same mapping as SQLite's (storage/sqlite/rows.py), fed the same
tuple shape; jsonb columns are read back as JSON text, which that mapping parses."""

from __future__ import annotations

from recallite_core.models import Memory
from recallite_core.storage.sqlite.rows import MEMORY_COLUMNS, memory_from_select

_JSON = {"tags", "metadata"}

#: Whole memories with their episode and category; add WHERE / ORDER BY on alias ``m``.
SELECT_MEMORIES = (
    "SELECT "
    + ", ".join(f"m.{c}::text" if c in _JSON else f"m.{c}" for c in (c.strip() for c in MEMORY_COLUMNS.split(",")))
    + ", e.session, e.role, e.seq, e.event_at, c.category FROM memories m"
    " LEFT JOIN episodes e ON e.memory_id = m.id LEFT JOIN memory_categories c ON c.memory_id = m.id"
)


def load_memories(conn, ids: list[int]) -> dict[int, Memory]:
    """The memories among ``ids`` that exist, with their episode and category (one query)."""
    if not ids:
        return {}
    return {row[0]: memory_from_select(row) for row in conn.execute(f"{SELECT_MEMORIES} WHERE m.id = ANY(%s)", (ids,))}


__all__ = ["SELECT_MEMORIES", "load_memories", "memory_from_select"]
