"""Maintenance of the whole store: ``reindex`` (every vector, the FTS index, episode
windows, chunks and the learner's query vectors rebuilt with the current embedder) and
``consolidate`` (near-duplicates merged into one new candidate linked to each; nothing is
deleted).

May import the plumbing, the catalog, the write path, the turn store, storage, episode_windows,
models and validation; never the facade or another service.
"""

from __future__ import annotations

import json
import time
from typing import Callable, Sequence

import numpy as np

from recallite_core.catalog import Catalog
from recallite_core.conversation.episode_windows import rebuild_windows
from recallite_core.conversation.turns import TurnStore
from recallite_core.models import ConsolidationGroup
from recallite_core.plumbing import Plumbing
from recallite_core.storage.codec import encode_vector
from recallite_core.text.validation import check_unit, parse_id
from recallite_core.writer import Writer, embedding_text

Progress = Callable[[int, int], None]


class Maintenance:
    """Rebuilding projections and merging near-duplicates."""

    def __init__(self, core: Plumbing, catalog: Catalog, writer: Writer, turns: TurnStore):
        self.core = core
        self.catalog = catalog
        self.writer = writer
        self.turns = turns

    def reindex(self, *, progress: Progress | None = None) -> int:
        """Rebuild FTS and every vector from the memories table with the current embedder."""
        self.core.live()
        with self.core.store.reading() as conn:
            rows = conn.memories.texts()
        vecs: list[np.ndarray] = []
        bs = 256
        for i in range(0, len(rows), bs):
            chunk = rows[i : i + bs]
            vecs.append(self.core.embed([embedding_text(t, c) for _, t, c in chunk]))
            if progress:
                progress(min(i + bs, len(rows)), len(rows))
        matrix = np.vstack(vecs) if vecs else np.empty((0, self.core.embedder.dimensions), dtype=np.float32)
        with self.core.store.transaction() as conn:
            # Memories deleted since the read above are skipped; ones written since come back
            # from missing_texts() and are embedded here.
            conn.vectors.replace_all([(mid, encode_vector(v)) for (mid, _, _), v in zip(rows, matrix)])
            late = conn.vectors.missing_texts()
            if late:
                lv = self.core.embed([embedding_text(t, c) for _, t, c in late])
                conn.vectors.add([(r[0], encode_vector(v)) for r, v in zip(late, lv)])
            conn.keywords.rebuild()
            rebuild_windows(conn)
            # Every reader reloads from scratch: cheaper than replaying a tombstone per row.
            conn.feed.reset_readers()
            self.core.store.set_meta(conn, "embedder", self.core.embedder.name)
            self.core.store.set_meta(conn, "dimensions", str(self.core.embedder.dimensions))
        with self.core.store.lock:
            self.core.index.reset()
        self.turns.rechunk()  # chunk vectors too, with the current embedder
        self.core.learning.backfill(rebuild=True)  # the query vectors of feedback are a projection too
        return len(rows)

    def consolidate(
        self, *, scope: str | None = None, threshold: float = 0.92, types: Sequence[str] | None = None, dry_run: bool = False
    ) -> list[ConsolidationGroup]:
        """Find near-duplicate memories (same scope and type, cosine >= threshold) and, unless
        ``dry_run``, add one merged *candidate* per group, linked ``derived_from`` each member.
        Nothing is deleted or retired: a person or agent decides by superseding."""
        self.core.live()
        thr = check_unit("threshold", threshold, 0.92)
        flt = self.core.recall_filter(scope, types, ("candidate", "validated", "active"), None, None)
        with self.core.store.reading() as conn:
            self.core.index.refresh(conn)
            rows = conn.memories.classified(flt.memory_filter())
            merged_before = set()
            for meta in conn.memories.merged_metadata():
                merged_before.add(tuple(sorted(json.loads(meta).get("consolidated_from", []))))
        buckets: dict[tuple[str, str], list[int]] = {}
        for mid, sc, ty, meta in rows:
            if "consolidated_from" in json.loads(meta):
                continue
            buckets.setdefault((sc, ty), []).append(mid)
        groups: list[ConsolidationGroup] = []
        for (_sc, _ty), ids in buckets.items():
            if len(ids) < 2:
                continue
            with self.core.store.lock:
                vecs = np.array([self.core.index.vector_of(i) for i in ids], dtype=np.float32)
            parent = list(range(len(ids)))

            def find(x: int) -> int:
                while parent[x] != x:
                    parent[x] = parent[parent[x]]
                    x = parent[x]
                return x

            best: dict[int, float] = {}
            for start in range(0, len(ids), 1024):
                sims = vecs[start : start + 1024] @ vecs.T
                for i, j in zip(*np.nonzero(sims >= thr)):
                    gi = start + int(i)
                    if gi < j:
                        parent[find(gi)] = find(int(j))
                        best[gi] = max(best.get(gi, 0.0), float(sims[i, j]))
            members: dict[int, list[int]] = {}
            for k in range(len(ids)):
                members.setdefault(find(k), []).append(k)
            for group in members.values():
                if len(group) < 2:
                    continue
                gids = sorted(ids[k] for k in group)
                sim = float(min((vecs[a] @ vecs[b]) for a in group for b in group if a < b))
                names = [f"mem_{i}" for i in gids]
                if tuple(sorted(names)) in merged_before:
                    continue
                groups.append(ConsolidationGroup(member_ids=names, similarity=round(sim, 4)))
        if dry_run or not groups:
            return groups
        for g in groups:
            mems = self.catalog.get_many(g.member_ids)
            mems.sort(key=lambda m: (-m.confidence, -len(m.content)))
            contents = list(dict.fromkeys(m.content for m in mems))
            merged = self.writer.remember(
                "\n".join(contents),
                type=mems[0].type,
                title=mems[0].title,
                source={"type": "system", "id": "consolidate"},
                status="candidate",
                scope=mems[0].scope,
                tags=sorted({t for m in mems for t in m.tags})[: self.core.limits.max_tags],
                metadata={"consolidated_from": g.member_ids},
                importance=max(m.importance for m in mems),
            )
            g.merged_id = merged.id
            for m in mems:
                with self.core.store.transaction() as conn:
                    conn.relations.add(parse_id(merged.id), parse_id(m.id), "derived_from", 0, time.time())
        return groups
