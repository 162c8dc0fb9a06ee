"""Read-only views of a store for people (the local browser of recallite-mcp).

Pages of memories by any filter (source included, in the store's query), the retrieval log with its feedback,
what each feedback did to a memory, success over time and the contradictions still open.
Every method is one short read on the connection it is given: for a file store that is a
read-only connection of its own (``Recallite.inspection``), so a page never waits on a write and
always sees what other processes committed before it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Sequence

from recallite_core.errors import InvalidInputError, MemoryNotFoundError, RetrievalNotFoundError
from recallite_core.models import SOURCE_TYPES, Memory
from recallite_core.policy import rules as policy
from recallite_core.storage.base import MemoryFilter, Session, Storage
from recallite_core.storage.codec import ts
from recallite_core.text.validation import Limits, check_scope, check_tags, parse_id

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
    task: str | None = None  # the task key it was named with (recall/context/feedback ``task``)


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

    def __init__(self, store: Storage, limits: Limits, default_scope: str):
        self.store, self.limits, self.default_scope = store, limits, default_scope

    # -- memories ---------------------------------------------------------------------------------------
    def memories(self, *, scope: str | Sequence[str] | None = None, types: Sequence[str] | None = None,
                 statuses: Sequence[str] | None = None, sources: Sequence[str] | None = None,
                 tags: Sequence[str] | None = None, limit: int = 50, offset: int = 0) -> MemoryPage:
        """One page of memories newest first, with the number the filters match. ``tags``:
        memories with any of them. None (or empty) means no filter."""
        flt = self._filter(scope, types, statuses, sources, tags)
        lim = max(1, min(int(limit), 10_000))
        off = max(0, int(offset))
        with self.store.reading() as session:
            found, total = session.memories.page(flt, lim, off)
        return MemoryPage(memories=found, total=total, offset=off,
                          next_offset=off + lim if off + lim < total else None)

    def _filter(self, scope, types, statuses, sources, tags) -> MemoryFilter:
        scopes = kinds = states = origins = tagged = None
        if scope:
            raw = [scope] if isinstance(scope, str) else list(scope)
            scopes = tuple(check_scope(s, self.limits, self.default_scope) for s in raw)
        if types:
            kinds = tuple(policy.check_type(t) for t in _listed(types))
        if statuses:
            states = tuple(policy.check_status(s) for s in _listed(statuses))
        if sources:
            wanted = _listed(sources)
            bad = [s for s in wanted if s not in SOURCE_TYPES]
            if bad:
                raise InvalidInputError(f"Unknown source {bad[0]!r}. Use one of: {', '.join(SOURCE_TYPES)}.")
            origins = tuple(wanted)
        if tags:
            tagged = tuple(check_tags(list(_listed(tags)), self.limits)) or None
        return MemoryFilter(scopes=scopes, statuses=states, types=kinds, sources=origins, tags=tagged)

    def relation_totals(self, memory_ids: Sequence[str | int]) -> dict[str, int]:
        """How many relations touch each of these memories (either end); absent when none."""
        ids = [parse_id(i) for i in memory_ids]
        with self.store.reading() as session:
            totals = session.relations.totals(ids)
        return {f"mem_{mid}": n for mid, n in totals.items()}

    def scopes(self) -> dict[str, int]:
        """Every scope with its number of memories (any status), largest first."""
        with self.store.reading() as session:
            return session.memories.scope_counts()

    # -- the retrieval log ----------------------------------------------------------------------------------
    def retrievals(self, *, scope: str | None = None, limit: int = 50, offset: int = 0) -> list[RetrievalEntry]:
        """Recalls and contexts newest first, each with its feedback. ``scope``: those that searched it."""
        searched = check_scope(scope, self.limits, self.default_scope) if scope else None
        lim, off = max(1, min(int(limit), 1000)), max(0, int(offset))
        with self.store.reading() as session:
            rows = session.retrievals.page(searched, lim, off)
            fb = _feedback_of(session, [r[0] for r in rows])
        return [RetrievalEntry(id=f"ret_{rid}", query=q, kind=kind, profile=prof, scopes=_scopes(sc), created_at=ts(at),
                               hits=n, tokens_served=served, feedback=fb.get(rid, []), task=task)
                for rid, q, kind, prof, sc, at, served, n, task in rows]

    def retrieval(self, retrieval_id: str | int) -> tuple[RetrievalEntry, list[RetrievalItem]]:
        """One retrieval with its feedback and the memories it ranked, in rank order."""
        rid = parse_id(retrieval_id, "ret")
        with self.store.reading() as session:
            row = session.retrievals.get(rid)
            if row is None:
                raise RetrievalNotFoundError(f"No retrieval ret_{rid}; the Learning page lists the log.")
            items = session.retrievals.items(rid)
            found = session.memories.load([i[0] for i in items])
            fb = _feedback_of(session, [rid])
        _, q, kind, prof, sc, at, served, task = row
        entry = RetrievalEntry(id=f"ret_{rid}", query=q, kind=kind, profile=prof, scopes=_scopes(sc), created_at=ts(at),
                               hits=len(items), tokens_served=served, feedback=fb.get(rid, []), task=task)
        return entry, [RetrievalItem(memory_id=f"mem_{m}", rank=r, score=s, served=bool(sv), expanded=bool(ex),
                                     memory=found.get(m)) for m, r, s, sv, ex in items]

    # -- learning ---------------------------------------------------------------------------------------------
    def outcomes(self, memory_id: str | int, *, limit: int = 200) -> list[OutcomeEntry]:
        """What feedback did to a memory, newest first: each credit (or 'unused' mark) with the
        usefulness before and after."""
        mid = parse_id(memory_id)
        with self.store.reading() as session:
            if not session.memories.exists(mid):
                raise MemoryNotFoundError(f"No memory mem_{mid}.")
            rows = session.outcomes.of_memory(mid, max(1, min(int(limit), 10_000)))
        return [OutcomeEntry(feedback_id=f"fb_{fid}", retrieval_id=None if rid is None else f"ret_{rid}", query=q,
                             outcome=out, kind=kind, weight=w, target=t, old_usefulness=o, new_usefulness=n,
                             created_at=ts(at))
                for fid, rid, q, out, kind, w, t, o, n, at in rows]

    def success_over_time(self, *, scope: str | None = None, days: int = 90) -> list[SuccessPoint]:
        """Feedback per UTC day over the last ``days`` days that had any, oldest first: counts by
        outcome and the mean score. ``scope``: feedback on retrievals that searched it."""
        if isinstance(days, bool) or not isinstance(days, int) or not 1 <= days <= 3650:
            raise InvalidInputError(f"days must be a whole number from 1 to 3650, got {days!r}.")
        searched = check_scope(scope, self.limits, self.default_scope) if scope else None
        with self.store.reading() as session:
            rows = session.retrievals.daily_feedback(searched, days)
        return [SuccessPoint(day=d, feedback=n, successes=s, failures=f, partial=p, mean_score=round(m, 4))
                for d, n, s, f, p, m in rows]

    def contradictions(self, *, scope: str | None = None, limit: int = 50) -> list[Contradiction]:
        """Open contradictions, newest first: links where both memories are still live
        (candidate, validated or active). ``resolve_conflict`` settles one."""
        in_scope = check_scope(scope, self.limits, self.default_scope) if scope else None
        with self.store.reading() as session:
            rows = session.relations.open_contradictions(LIVE, in_scope, max(1, min(int(limit), 1000)))
            found = session.memories.load(sorted({i for r in rows for i in r[1:3]}))
        return [Contradiction(relation_id=f"rel_{rid}", a=found[a], b=found[b], created_at=ts(at), confidence_effect=bool(e))
                for rid, a, b, at, e in rows if a in found and b in found]

    # -- health -------------------------------------------------------------------------------------------------
    def reconciled_at(self) -> datetime | None:
        """When ``reconcile(repair=True)`` last ran on this file, or None."""
        value = self.store.get_meta("reconciled_at")
        return None if value is None else ts(float(value))


def _listed(values: str | Sequence[str]) -> list[str]:
    return [values] if isinstance(values, str) else [v for v in values if v]


def _scopes(raw: str | None) -> list[str] | None:
    return None if raw is None else json.loads(raw)


def _feedback_of(session: Session, rids: list[int]) -> dict[int, list[FeedbackEntry]]:
    out: dict[int, list[FeedbackEntry]] = {}
    for fid, rid, outcome, score, used, reason, at in session.retrievals.feedback_of(rids):
        out.setdefault(rid, []).append(FeedbackEntry(id=f"fb_{fid}", outcome=outcome, score=score,
                                                     used_ids=json.loads(used), reason=reason, created_at=ts(at)))
    return out


__all__ = ["Contradiction", "FeedbackEntry", "Inspection", "MemoryPage", "OutcomeEntry", "RetrievalEntry",
           "RetrievalItem", "SuccessPoint"]
