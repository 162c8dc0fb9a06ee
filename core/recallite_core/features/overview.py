"""``stats``: counts by type, status, source, scope and layer, relations, feedback, the
tokens served against those stored, redactions, the context tuner's state, a trust
distribution of the newest live memories and the working layer's size. Read on the read-only
connection of file stores, so it answers while a write holds the writer.

May import the plumbing, the working layer, policy, trust, models; never the facade or
another service.
"""

from __future__ import annotations

import dataclasses
import statistics
import time
from typing import TYPE_CHECKING, Any, Sequence

from recallite_core.features.working_layer import WorkingLayer
from recallite_core.models import OUTCOMES, STATUSES, Stats
from recallite_core.plumbing import Plumbing
from recallite_core.policy import rules as policy
from recallite_core.policy.trust import trust_distribution, trust_scores
from recallite_core.storage.base import MemoryFilter

if TYPE_CHECKING:
    from recallite_core.retrieval.candidates import RecallFilter

TRUST_STATS_SAMPLE = 2000
_LIVE = ("candidate", "validated", "active")


def _live(flt: MemoryFilter) -> MemoryFilter:
    """``flt`` narrowed to the live statuses."""
    wanted = _LIVE if flt.statuses is None else tuple(s for s in flt.statuses if s in _LIVE)
    return dataclasses.replace(flt, statuses=wanted)


class Overview:
    """The numbers ``stats()`` reports."""

    def __init__(self, core: Plumbing, layers: WorkingLayer):
        self.core = core
        self.layers = layers

    def stats(self, scope: str | Sequence[str] | None = None) -> Stats:
        """Counts by type/status/source/scope, relations, feedback, tokens served vs stored, file size."""
        self.core.live()
        flt = self.core.recall_filter(scope, None, STATUSES, None, None)
        mf = flt.memory_filter()
        with self.core.reader().reading() as conn:
            # One pass over a covering index (migration 0011) gives every count by type,
            # status, source and scope, and the live tokens: no scan of the memories table.
            by_type: dict[str, int] = {}
            by_status: dict[str, int] = {}
            by_source: dict[str, int] = {}
            by_scope: dict[str, int] = {}
            total = tokens_stored = 0
            for scope_, status, mtype, source, n, tokens in conn.stats.memory_counts(mf):
                total += n
                for d, k in ((by_type, mtype), (by_status, status), (by_source, source), (by_scope, scope_)):
                    d[k] = d.get(k, 0) + n
                if status in ("candidate", "validated", "active"):
                    tokens_stored += tokens
            by_type, by_status, by_source, by_scope = (
                dict(sorted(d.items(), key=lambda kv: (-kv[1], kv[0]))) for d in (by_type, by_status, by_source, by_scope))
            rel = conn.stats.relation_counts(mf)
            if flt.scopes is None and set(flt.statuses) >= set(STATUSES):
                # Every vector belongs to a memory (foreign key): the count is the table's,
                # which the store reads from a small index instead of the vectors themselves.
                vectors = conn.vectors.count()
            else:
                vectors = conn.stats.vector_count(mf)
            retrievals, served, matched, fb = conn.stats.retrieval_counts(flt.scopes)
            redacted = conn.stats.redactions()
        served_sorted = sorted(served)
        db_bytes, wal_bytes = self.core.store.file_sizes()
        stats = Stats(
            memories=total, by_type=by_type, by_status=by_status, by_source=by_source, by_scope=by_scope,
            relations=rel, vectors=vectors, embedder=self.core.embedder.name, dimensions=self.core.embedder.dimensions,
            retrievals=retrievals, feedback={o: fb.get(o, 0) for o in OUTCOMES}, context_calls=len(served),
            tokens_stored=tokens_stored, tokens_served=sum(served), tokens_matched=matched,
            tokens_saved=max(0, matched - sum(served)),
            tokens_served_median=float(statistics.median(served_sorted)) if served_sorted else 0.0,
            tokens_served_p95=float(served_sorted[min(len(served_sorted) - 1, int(0.95 * len(served_sorted)))]) if served_sorted else 0.0,
            db_path=self.core.store.path or getattr(self.core.store, "where", None), db_bytes=db_bytes, wal_bytes=wal_bytes,
            schema_version=self.core.reader().schema_version(),
            redactions=sum(redacted.values()), redactions_by_kind=redacted,
            context_tuning=self._context_tuning(flt.scopes),
        )
        self._slm_stats(stats, flt)
        return stats

    def _context_tuning(self, scopes: tuple[str, ...] | None) -> dict[str, dict[str, Any]]:
        with self.core.reader().reading() as conn:
            return self.core.learning.tuner.summary(conn, scopes)

    def _slm_stats(self, stats, flt: "RecallFilter") -> None:
        live = _live(flt.memory_filter())
        by_type = stats.by_type  # counted by stats() under the same filter
        with self.core.reader().reading() as conn:
            # The trust distribution of the newest live memories: a bounded sample keeps stats
            # prompt on a store of any size (it reports how many it covered).
            ids = conn.memories.newest_ids(live, TRUST_STATS_SAMPLE)
            scores = trust_scores(conn, ids, half_life_days=self.core.config.trust_half_life_days)
            stats.expired = conn.stats.expired_count(live, time.time())
        layers = {name: 0 for name in policy.STORED_LAYERS}
        for t, n in by_type.items():
            layers[policy.TYPE_LAYER[t]] += n
        wstats = self.layers.stats()
        stats.by_layer = {"working": wstats["entries"], **layers}
        stats.trust = trust_distribution(scores.values())
        stats.trust["sampled"] = len(scores)  # the newest live memories, at most TRUST_STATS_SAMPLE
        stats.working = wstats
