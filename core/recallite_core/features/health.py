"""Do the projections (FTS index, vectors) agree with the memories table? Read-only checks.

Rows of ``memories`` are the truth; ``memories_fts`` and ``vectors`` are projections that
``reindex`` rebuilds. A crash cannot make them disagree (one transaction writes all three), but
a hand edit, a restore by another tool or a bug can; ``recallite-mcp doctor`` reports it and
``recallite-mcp reindex`` repairs it.
"""

from __future__ import annotations

from dataclasses import dataclass

from recallite_core.storage.base import ProjectionCounts, Session

SHOWN = 10  # ids listed per problem in messages


@dataclass
class ProjectionReport(ProjectionCounts):
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


def check_projections(session: Session, dimensions: int | None = None) -> ProjectionReport:
    """Compare memories, vectors and the FTS index, in any session on the store."""
    return ProjectionReport(**vars(session.integrity.projections(dimensions)))


__all__ = ["ProjectionReport", "check_projections"]
