"""A MemoryFilter as a WHERE clause over the memories table (psycopg ``%s`` parameters).

Lists travel as one array parameter each (``= ANY(%s)``), so a filter or an id list of any
length is one bound value: no chunking for a parameter limit as SQLite needs."""

from __future__ import annotations

from recallite_core.storage.base import MemoryFilter


def where_sql(flt: MemoryFilter, alias: str = "m") -> tuple[str, list]:
    """WHERE fragments (joined by AND; "true" for none) and their parameters."""
    where: list[str] = []
    params: list = []

    def among(column: str, values: tuple[str | None, ...]) -> None:  # a None (blank session) matches no row
        where.append(f"{alias}.{column} = ANY(%s)")
        params.append(list(values))

    if flt.scopes is not None:
        among("scope", flt.scopes)
    if flt.statuses is not None:
        among("status", flt.statuses)
    if flt.types is not None:
        among("type", flt.types)
    if flt.sessions is not None:
        among("session", flt.sessions)
    if flt.sources is not None:
        among("source_type", flt.sources)
    if flt.tags is not None:
        # jsonb ?| text[]: any of the tags is an element of the array (GIN memories_tags).
        where.append(f"{alias}.tags ?| %s::text[]")
        params.append(list(flt.tags))
    if flt.roles is not None:
        where.append(f"{alias}.id IN (SELECT memory_id FROM episodes WHERE role = ANY(%s))")
        params.append(list(flt.roles))
    if flt.categories is not None:
        where.append(f"{alias}.id IN (SELECT memory_id FROM memory_categories WHERE category = ANY(%s))")
        params.append(list(flt.categories))
    if flt.valid_at is not None:
        where.append(f"({alias}.valid_until IS NULL OR {alias}.valid_until > %s)")
        params.append(flt.valid_at)
    return " AND ".join(where) or "true", params
