"""Do the projections (FTS index, vectors) agree with the memories table? Read-only checks.

Rows of ``memories`` are the truth; ``memories_fts`` and ``vectors`` are projections that
``reindex`` rebuilds. A crash cannot make them disagree (one transaction writes all three), but
a hand edit, a restore by another tool or a bug can; ``recallite-mcp doctor`` reports it and
``recallite-mcp reindex`` repairs it.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field

SHOWN = 10  # ids listed per problem in messages


@dataclass
class ProjectionReport:
    memories: int = 0
    vectors: int = 0
    fts_rows: int = 0
    missing_vectors: list[int] = field(default_factory=list)
    orphan_vectors: list[int] = field(default_factory=list)
    bad_vectors: list[int] = field(default_factory=list)
    missing_fts: list[int] = field(default_factory=list)
    orphan_fts: list[int] = field(default_factory=list)
    fts_detail: str = "ok"

    @property
    def vectors_ok(self) -> bool:
        return not (self.missing_vectors or self.orphan_vectors or self.bad_vectors) and self.vectors == self.memories

    @property
    def fts_ok(self) -> bool:
        return not (self.missing_fts or self.orphan_fts) and self.fts_detail == "ok"

    @property
    def ok(self) -> bool:
        return self.vectors_ok and self.fts_ok

    def problems(self) -> list[str]:
        def ids(xs: list[int]) -> str:
            return ", ".join(f"mem_{i}" for i in xs[:SHOWN]) + (" …" if len(xs) > SHOWN else "")

        out = []
        for name, xs in (("memories without a vector", self.missing_vectors), ("vectors without a memory", self.orphan_vectors),
                         ("vectors of the wrong size", self.bad_vectors), ("memories missing from the FTS index", self.missing_fts),
                         ("FTS rows without a memory", self.orphan_fts)):
            if xs:
                out.append(f"{len(xs)} {name} ({ids(xs)})")
        if self.fts_detail != "ok" and not (self.missing_fts or self.orphan_fts):
            out.append(f"FTS index does not match the memories table ({self.fts_detail})")
        return out


def check_projections(conn: sqlite3.Connection, dimensions: int | None = None) -> ProjectionReport:
    """Compare memories, vectors and the FTS index. ``conn`` may be any connection to the file."""
    r = ProjectionReport()
    one = lambda sql: conn.execute(sql).fetchone()[0]  # noqa: E731
    r.memories = one("SELECT count(*) FROM memories")
    r.vectors = one("SELECT count(*) FROM vectors")
    r.fts_rows = one("SELECT count(*) FROM memories_fts_docsize")
    col = lambda sql: [row[0] for row in conn.execute(sql)]  # noqa: E731
    r.missing_vectors = col("SELECT id FROM memories WHERE id NOT IN (SELECT memory_id FROM vectors) ORDER BY id")
    r.orphan_vectors = col("SELECT memory_id FROM vectors WHERE memory_id NOT IN (SELECT id FROM memories) ORDER BY 1")
    if dimensions:
        r.bad_vectors = col(f"SELECT memory_id FROM vectors WHERE length(vector) != {4 * int(dimensions)} ORDER BY 1")
    r.missing_fts = col("SELECT id FROM memories WHERE id NOT IN (SELECT id FROM memories_fts_docsize) ORDER BY id")
    r.orphan_fts = col("SELECT id FROM memories_fts_docsize WHERE id NOT IN (SELECT id FROM memories) ORDER BY id")
    try:
        # rank = 1 also compares the index with the content of the memories table.
        conn.execute("INSERT INTO memories_fts(memories_fts, rank) VALUES ('integrity-check', 1)")
    except sqlite3.Error as exc:
        r.fts_detail = str(exc)
    return r


__all__ = ["ProjectionReport", "check_projections"]
