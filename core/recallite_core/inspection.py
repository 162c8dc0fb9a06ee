"""Read-only views of a store for people (the local browser of recallite-mcp).

Pages of memories by any filter (source included, in SQL), the retrieval log with its feedback,
what each feedback did to a memory, success over time and the contradictions still open.
Every method is one short read on the connection it is given: for a file store that is a
read-only connection of its own (``Recallite.inspection``), so a page never waits on a write and
always sees what other processes committed before it.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Sequence

from . import policy
from .errors import InvalidInputError, MemoryNotFoundError, RetrievalNotFoundError
from .models import SOURCE_TYPES, Memory
from .rows import SELECT_MEMORIES, load_memories, memory_from_select, ts
from .store import Store
from .validation import Limits, check_scope, check_tags, parse_id

LIVE = ("candidate", "validated", "active")


@dataclass
class MemoryPage:
    memories: list[Memory]
    total: int  # memories the filters match
    offset: int = 0
    next_offset: int | None = None


@dataclass
class FeedbackEntry:
    id: str
    outcome: str
    score: float
    used_ids: list[str]
    reason: str | None
    created_at: datetime


@dataclass
class RetrievalEntry:
    id: str
    query: str
    kind: str
    profile: str
    scopes: list[str] | None
    created_at: datetime
    hits: int
    tokens_served: int | None
    feedback: list[FeedbackEntry] = field(default_factory=list)


@dataclass
class RetrievalItem:
    memory_id: str
    rank: int
    score: float
    served: bool
    expanded: bool
    memory: Memory | None  # None once the memory was forgotten (its row is gone)


@dataclass
class OutcomeEntry:
    """What one feedback did to one memory."""

    feedback_id: str
    retrieval_id: str | None
    query: str | None
    outcome: str
    kind: str  # credit: it was credited; unused: served but not named by a task that succeeded
    weight: float
    target: float
    old_usefulness: float
    new_usefulness: float
    created_at: datetime


@dataclass
class SuccessPoint:
    day: str  # YYYY-MM-DD (UTC)
    feedback: int
    successes: int
    failures: int
    partial: int
    mean_score: float


@dataclass
class Contradiction:
    relation_id: str
    a: Memory  # the memory that was linked as contradicting ...
    b: Memory  # ... this one
    created_at: datetime
    confidence_effect: bool


class Inspection:
    """Read-only queries over one store. Get one from ``Recallite.inspection()``."""

    def __init__(self, store: Store, limits: Limits, default_scope: str):
        self.store, self.limits, self.default_scope = store, limits, default_scope

    # -- memories ---------------------------------------------------------------------------------------
    def memories(self, *, scope: str | Sequence[str] | None = None, types: Sequence[str] | None = None,
                 statuses: Sequence[str] | None = None, sources: Sequence[str] | None = None,
                 tags: Sequence[str] | None = None, limit: int = 50, offset: int = 0) -> MemoryPage:
        """One page of memories newest first, with the number the filters match. ``tags``:
        memories with any of them. None (or empty) means no filter."""
        where, params = self._where(scope, types, statuses, sources, tags)
        lim = max(1, min(int(limit), 10_000))
        off = max(0, int(offset))
        with self.store.reading() as conn:
            rows = conn.execute(f"{SELECT_MEMORIES} WHERE {where} ORDER BY m.id DESC LIMIT ? OFFSET ?",
                                [*params, lim, off]).fetchall()
            total = conn.execute(f"SELECT count(*) FROM memories m WHERE {where}", params).fetchone()[0]
        return MemoryPage(memories=[memory_from_select(r) for r in rows], total=total, offset=off,
                          next_offset=off + lim if off + lim < total else None)

    def _where(self, scope, types, statuses, sources, tags) -> tuple[str, list]:
        where: list[str] = []
        params: list[Any] = []

        def among(column: str, values: Sequence[str]) -> None:
            where.append(f"m.{column} IN ({','.join('?' * len(values))})")
            params.extend(values)

        if scope:
            raw = [scope] if isinstance(scope, str) else list(scope)
            among("scope", [check_scope(s, self.limits, self.default_scope) for s in raw])
        if types:
            among("type", [policy.check_type(t) for t in _listed(types)])
        if statuses:
            among("status", [policy.check_status(s) for s in _listed(statuses)])
        if sources:
            wanted = _listed(sources)
            bad = [s for s in wanted if s not in SOURCE_TYPES]
            if bad:
                raise InvalidInputError(f"Unknown source {bad[0]!r}. Use one of: {', '.join(SOURCE_TYPES)}.")
            among("source_type", wanted)
        if tags:
            tg = check_tags(list(_listed(tags)), self.limits)
            if tg:
                where.append(f"EXISTS (SELECT 1 FROM json_each(m.tags) WHERE json_each.value IN ({','.join('?' * len(tg))}))")
                params.extend(tg)
        return " AND ".join(where) or "1", params

    def relation_totals(self, memory_ids: Sequence[str | int]) -> dict[str, int]:
        """How many relations touch each of these memories (either end); absent when none."""
        ids = [parse_id(i) for i in memory_ids]
        out: dict[str, int] = {}
        with self.store.reading() as conn:
            for i in range(0, len(ids), 400):
                chunk = ids[i : i + 400]
                marks = ",".join("?" * len(chunk))
                for mid, n in conn.execute(
                        f"SELECT x, count(*) FROM (SELECT from_id AS x FROM relations WHERE from_id IN ({marks}) "
                        f"UNION ALL SELECT to_id FROM relations WHERE to_id IN ({marks})) GROUP BY x", [*chunk, *chunk]):
                    out[f"mem_{mid}"] = n
        return out

    def scopes(self) -> dict[str, int]:
        """Every scope with its number of memories (any status), largest first."""
        with self.store.reading() as conn:
            rows = conn.execute("SELECT scope, count(*) FROM memories GROUP BY scope ORDER BY 2 DESC, 1").fetchall()
        return dict(rows)

    # -- the retrieval log ----------------------------------------------------------------------------------
    def retrievals(self, *, scope: str | None = None, limit: int = 50, offset: int = 0) -> list[RetrievalEntry]:
        """Recalls and contexts newest first, each with its feedback. ``scope``: those that searched it."""
        where, params = "1", []
        if scope:
            where, params = _searched(check_scope(scope, self.limits, self.default_scope))
        lim, off = max(1, min(int(limit), 1000)), max(0, int(offset))
        with self.store.reading() as conn:
            rows = conn.execute(
                "SELECT r.id, r.query, r.kind, r.profile, r.scope, r.created_at, r.tokens_served, "
                "(SELECT count(*) FROM retrieval_items i WHERE i.retrieval_id = r.id) "
                f"FROM retrievals r WHERE {where} ORDER BY r.id DESC LIMIT ? OFFSET ?", [*params, lim, off]).fetchall()
            fb = _feedback_of(conn, [r[0] for r in rows])
        return [RetrievalEntry(id=f"ret_{rid}", query=q, kind=kind, profile=prof, scopes=_scopes(sc), created_at=ts(at),
                               hits=n, tokens_served=served, feedback=fb.get(rid, []))
                for rid, q, kind, prof, sc, at, served, n in rows]

    def retrieval(self, retrieval_id: str | int) -> tuple[RetrievalEntry, list[RetrievalItem]]:
        """One retrieval with its feedback and the memories it ranked, in rank order."""
        rid = parse_id(retrieval_id, "ret")
        with self.store.reading() as conn:
            row = conn.execute("SELECT id, query, kind, profile, scope, created_at, tokens_served FROM retrievals "
                               "WHERE id = ?", (rid,)).fetchone()
            if row is None:
                raise RetrievalNotFoundError(f"No retrieval ret_{rid}; the Learning page lists the log.")
            items = conn.execute("SELECT memory_id, rank, score, served, expanded FROM retrieval_items "
                                 "WHERE retrieval_id = ? ORDER BY rank", (rid,)).fetchall()
            found = load_memories(conn, [i[0] for i in items])
            fb = _feedback_of(conn, [rid])
        _, q, kind, prof, sc, at, served = row
        entry = RetrievalEntry(id=f"ret_{rid}", query=q, kind=kind, profile=prof, scopes=_scopes(sc), created_at=ts(at),
                               hits=len(items), tokens_served=served, feedback=fb.get(rid, []))
        return entry, [RetrievalItem(memory_id=f"mem_{m}", rank=r, score=s, served=bool(sv), expanded=bool(ex),
                                     memory=found.get(m)) for m, r, s, sv, ex in items]

    # -- learning ---------------------------------------------------------------------------------------------
    def outcomes(self, memory_id: str | int, *, limit: int = 200) -> list[OutcomeEntry]:
        """What feedback did to a memory, newest first: each credit (or 'unused' mark) with the
        usefulness before and after."""
        mid = parse_id(memory_id)
        with self.store.reading() as conn:
            if conn.execute("SELECT 1 FROM memories WHERE id = ?", (mid,)).fetchone() is None:
                raise MemoryNotFoundError(f"No memory mem_{mid}.")
            rows = conn.execute(
                "SELECT o.feedback_id, f.retrieval_id, r.query, f.outcome, o.kind, o.weight, o.target, "
                "o.old_usefulness, o.new_usefulness, o.created_at FROM memory_outcomes o "
                "JOIN feedback f ON f.id = o.feedback_id LEFT JOIN retrievals r ON r.id = f.retrieval_id "
                "WHERE o.memory_id = ? ORDER BY o.created_at DESC, o.feedback_id DESC LIMIT ?",
                (mid, max(1, min(int(limit), 10_000)))).fetchall()
        return [OutcomeEntry(feedback_id=f"fb_{fid}", retrieval_id=None if rid is None else f"ret_{rid}", query=q,
                             outcome=out, kind=kind, weight=w, target=t, old_usefulness=o, new_usefulness=n,
                             created_at=ts(at))
                for fid, rid, q, out, kind, w, t, o, n, at in rows]

    def success_over_time(self, *, scope: str | None = None, days: int = 90) -> list[SuccessPoint]:
        """Feedback per UTC day over the last ``days`` days that had any, oldest first: counts by
        outcome and the mean score. ``scope``: feedback on retrievals that searched it."""
        if isinstance(days, bool) or not isinstance(days, int) or not 1 <= days <= 3650:
            raise InvalidInputError(f"days must be a whole number from 1 to 3650, got {days!r}.")
        where, params = "1", []
        if scope:
            where, params = _searched(check_scope(scope, self.limits, self.default_scope))
        with self.store.reading() as conn:
            latest = conn.execute("SELECT max(created_at) FROM feedback").fetchone()[0]
            if latest is None:
                return []
            rows = conn.execute(
                "SELECT date(f.created_at, 'unixepoch') AS day, count(*), sum(f.outcome = 'success'), "
                "sum(f.outcome = 'failure'), sum(f.outcome = 'partial'), avg(f.score) FROM feedback f "
                f"JOIN retrievals r ON r.id = f.retrieval_id WHERE {where} AND f.created_at > ? "
                "GROUP BY day ORDER BY day", [*params, latest - days * 86400.0]).fetchall()
        return [SuccessPoint(day=d, feedback=n, successes=s, failures=f, partial=p, mean_score=round(m, 4))
                for d, n, s, f, p, m in rows]

    def contradictions(self, *, scope: str | None = None, limit: int = 50) -> list[Contradiction]:
        """Open contradictions, newest first: links where both memories are still live
        (candidate, validated or active). ``resolve_conflict`` settles one."""
        where, params = "", []
        if scope:
            where, params = "AND a.scope = ? ", [check_scope(scope, self.limits, self.default_scope)]
        live = ",".join("?" * len(LIVE))
        with self.store.reading() as conn:
            rows = conn.execute(
                "SELECT r.id, r.from_id, r.to_id, r.created_at, r.confidence_effect FROM relations r "
                "JOIN memories a ON a.id = r.from_id JOIN memories b ON b.id = r.to_id "
                f"WHERE r.type = 'contradicts' AND a.status IN ({live}) AND b.status IN ({live}) {where}"
                "ORDER BY r.id DESC LIMIT ?", [*LIVE, *LIVE, *params, max(1, min(int(limit), 1000))]).fetchall()
            found = load_memories(conn, sorted({i for r in rows for i in r[1:3]}))
        return [Contradiction(relation_id=f"rel_{rid}", a=found[a], b=found[b], created_at=ts(at), confidence_effect=bool(e))
                for rid, a, b, at, e in rows if a in found and b in found]

    # -- health -------------------------------------------------------------------------------------------------
    def reconciled_at(self) -> datetime | None:
        """When ``reconcile(repair=True)`` last ran on this file, or None."""
        with self.store.reading() as conn:
            row = conn.execute("SELECT value FROM meta WHERE key = 'reconciled_at'").fetchone()
        return None if row is None else ts(float(row[0]))


def _listed(values: str | Sequence[str]) -> list[str]:
    return [values] if isinstance(values, str) else [v for v in values if v]


def _searched(scope: str) -> tuple[str, list]:
    """Retrievals whose searched scopes (a JSON list, NULL for every scope) include ``scope``."""
    return "(r.scope IS NULL OR EXISTS (SELECT 1 FROM json_each(r.scope) WHERE json_each.value = ?))", [scope]


def _scopes(raw: str | None) -> list[str] | None:
    return None if raw is None else json.loads(raw)


def _feedback_of(conn: sqlite3.Connection, rids: list[int]) -> dict[int, list[FeedbackEntry]]:
    out: dict[int, list[FeedbackEntry]] = {}
    for i in range(0, len(rids), 500):
        chunk = rids[i : i + 500]
        for fid, rid, outcome, score, used, reason, at in conn.execute(
                "SELECT id, retrieval_id, outcome, score, used_ids, reason, created_at FROM feedback "
                f"WHERE retrieval_id IN ({','.join('?' * len(chunk))}) ORDER BY id", chunk):
            out.setdefault(rid, []).append(FeedbackEntry(id=f"fb_{fid}", outcome=outcome, score=score,
                                                         used_ids=json.loads(used), reason=reason, created_at=ts(at)))
    return out


__all__ = ["Contradiction", "FeedbackEntry", "Inspection", "MemoryPage", "OutcomeEntry", "RetrievalEntry",
           "RetrievalItem", "SuccessPoint"]
