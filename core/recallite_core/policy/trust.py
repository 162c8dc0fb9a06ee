"""Trust scores of stored memories, computed at read time from what the store already holds.

Nothing here is cached on the rows: a contradiction, a supporting memory from another source,
a validation or a successful use changes the next score at once. Every function works on a
batch of ids with a fixed number of queries (none per memory), chunked for the driver's
parameter limit. The arithmetic is ``policy.trust_score``.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Iterable

from recallite_core.policy import rules as policy
from recallite_core.storage.base import Session

_CHUNK = 400
_DAY = 86400.0
_LIVE = ("candidate", "validated", "active")


@dataclass
class TrustInputs:
    source: str  # a key of policy.SOURCE_CREDIBILITY
    contradictions: int
    independent_sources: int
    last_validated: float


def _chunks(ids: list[int]) -> Iterable[list[int]]:
    for i in range(0, len(ids), _CHUNK):
        yield ids[i : i + _CHUNK]


def is_flagged(metadata: str | None) -> bool:
    """Whether a memory's metadata JSON carries injection flags (the cheap test first)."""
    return bool(metadata and '"flagged"' in metadata and json.loads(metadata).get("flagged"))


def flagged_among(session: Session, ids: list[int]) -> set[int]:
    """Which of ``ids`` carry injection flags (metadata "flagged"): one read of their metadata.
    Ranking holds them under unflagged memories (policy.FLAGGED_FACTOR)."""
    if not ids:
        return set()
    return {mid for mid, *_, meta in session.memories.summaries(ids) if is_flagged(meta)}


def side_tables(session: Session) -> tuple[bool, bool]:
    """Whether any relation and any outcome row exist: a store without them (most of a new
    one's life) skips the queries that look for them."""
    return session.feed.side_tables()


def trust_inputs(
    session: Session, ids: Iterable[int], present: tuple[bool, bool] | None = None
) -> dict[int, TrustInputs]:
    """Everything the trust score needs, for many memories in a few queries.

    - source credibility: the memory's source; agent-captured behaviour counts as "behavioral";
    - contradictions: ``contradicts`` links (either direction) with a live memory;
    - independent sources: live memories that ``support`` it, from a source identity (type and id)
      other than its own, counted once per identity; untrusted sources (llm, imported) do not count;
    - last validation: the latest of creation, validation/activation and a successful use.
    """
    id_list = list(dict.fromkeys(int(i) for i in ids))
    out: dict[int, TrustInputs] = {}
    if not id_list:
        return out
    relations, outcomes = side_tables(session) if present is None else present
    for chunk in _chunks(id_list):
        own: dict[int, tuple[str, str | None]] = {}
        for row in session.memories.trust_rows(chunk):
            own[row.id] = (row.source_type, row.source_id)
            out[row.id] = TrustInputs(
                source=policy.credibility_key(row.source_type, row.behavioral),
                contradictions=0,
                independent_sources=0,
                last_validated=max(row.created_at, row.validated_at or 0.0),
            )
        if relations:
            _count_relations(session, chunk, own, out)
        if outcomes:
            for mid, last in session.outcomes.last_success(chunk, 0.5).items():
                if mid in out and last:
                    out[mid].last_validated = max(out[mid].last_validated, last)
    return out


def _count_relations(session: Session, chunk: list[int],
                     own: dict[int, tuple[str, str | None]], out: dict[int, TrustInputs]) -> None:
    """Live contradictions and independent supporters of each memory of ``chunk``."""
    seen_pairs: set[tuple[int, int]] = set()
    for link in session.relations.touching(chunk, "contradicts"):
        a, b, sa, sb = link.from_id, link.to_id, link.from_status, link.to_status
        for me, other, other_status in ((a, b, sb), (b, a, sa)):
            if me in out and other_status in _LIVE and (me, other) not in seen_pairs:
                seen_pairs.add((me, other))
                out[me].contradictions += 1
    supporters: dict[int, set[tuple[str, str | None]]] = {}
    for target, st, sid in session.relations.supporters(chunk, _LIVE):
        if policy.SOURCE_TRUST.get(st) == policy.UNTRUSTED or (st, sid) == own.get(target):
            continue
        supporters.setdefault(target, set()).add((st, sid))
    for target, idents in supporters.items():
        out[target].independent_sources = len(idents)


def trust_scores(
    session: Session, ids: Iterable[int], now: float | None = None,
    half_life_days: float = policy.TRUST_HALF_LIFE_DAYS, present: tuple[bool, bool] | None = None,
) -> dict[int, float]:
    """id -> trust in [0.1, 1] (see policy.trust_score)."""
    now = time.time() if now is None else now
    return {
        mid: round(policy.trust_score(t.source, t.contradictions, (now - t.last_validated) / _DAY,
                                      t.independent_sources, half_life_days), 4)
        for mid, t in trust_inputs(session, ids, present).items()
    }


def trust_distribution(scores: Iterable[float]) -> dict:
    """Buckets, mean, min and max of a set of trust scores (for stats)."""
    values = list(scores)
    buckets = {name: 0 for name, _, _ in policy.TRUST_BUCKETS}
    for v in values:
        buckets[policy.trust_bucket(v)] += 1
    return {
        "buckets": buckets,
        "mean": round(sum(values) / len(values), 4) if values else None,
        "min": round(min(values), 4) if values else None,
        "max": round(max(values), 4) if values else None,
    }
