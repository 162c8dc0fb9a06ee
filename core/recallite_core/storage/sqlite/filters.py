"""SQL fragments: parameter marks, and a MemoryFilter as a WHERE clause over the memories table."""

from __future__ import annotations

from recallite_core.storage.base import MemoryFilter


def marks(n: int) -> str:
    """n comma-separated parameter marks."""
    return ",".join("?" * n)


def where_sql(flt: MemoryFilter, alias: str = "m") -> tuple[str, list]:
    """WHERE fragments (joined by AND; "1" for none) and their parameters, on ``memories``
    under ``alias``."""
    where: list[str] = []
    params: list = []

    def among(column: str, values: tuple[str | None, ...]) -> None:  # a None (blank session) matches no row
        where.append(f"{alias}.{column} IN ({marks(len(values))})")
        params.extend(values)

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
        where.append(
            f"EXISTS (SELECT 1 FROM json_each({alias}.tags) WHERE json_each.value IN ({marks(len(flt.tags))}))"
        )
        params.extend(flt.tags)
    if flt.roles is not None:
        where.append(f"{alias}.id IN (SELECT memory_id FROM episodes WHERE role IN ({marks(len(flt.roles))}))")
        params.extend(flt.roles)
    if flt.categories is not None:
        where.append(
            f"{alias}.id IN (SELECT memory_id FROM memory_categories WHERE category IN ({marks(len(flt.categories))}))"
        )
        params.extend(flt.categories)
    if flt.valid_at is not None:
        where.append(f"({alias}.valid_until IS NULL OR {alias}.valid_until > ?)")
        params.append(flt.valid_at)
    return " AND ".join(where) or "1", params
