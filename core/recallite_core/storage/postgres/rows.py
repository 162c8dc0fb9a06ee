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


#: What a trust score starts from (memories.trust_rows), read along with whole memories in a snapshot.
TRUST_COLUMNS = "m.id, m.source_type, m.source_id, m.metadata->'behavioral', m.created_at, m.validated_at"


def load_memories(conn, ids: list[int]) -> dict[int, Memory]:
    """The memories among ``ids`` that exist, with their episode and category (one query).
    Inside a read snapshot a recall asks next for the trust rows of the same ids: they come
    along here and are kept for it (snapshot.py), a round trip saved."""
    if not ids:
        return {}
    facts = getattr(conn, "facts", None)
    if facts is None:
        return {row[0]: memory_from_select(row) for row in conn.execute(f"{SELECT_MEMORIES} WHERE m.id = ANY(%s)", (ids,))}
    n = len(TRUST_COLUMNS.split(","))
    sql = SELECT_MEMORIES.replace(" FROM memories m", f", {TRUST_COLUMNS} FROM memories m", 1)
    out: dict[int, Memory] = {}
    trust = facts.setdefault("trust_rows", ({}, set()))
    for row in conn.execute(f"{sql} WHERE m.id = ANY(%s)", (ids,)):
        out[row[0]] = memory_from_select(row[:-n])
        trust[0][row[0]] = row[-n:]
    trust[1].update(ids)
    return out


__all__ = ["SELECT_MEMORIES", "TRUST_COLUMNS", "load_memories", "memory_from_select"]
