"""reconcile/repair: find and fix drift between the memories table (the truth) and its
projections — vectors and the FTS index (checked by health.check_projections, as doctor does),
episode rows, chunks, citations, session summaries.

Only what is missing or wrong is re-embedded; a clean store is left untouched.

May import the plumbing, the turn store, health, storage, models and the write path's
``embedding_text``; never the facade or another service.
"""

from __future__ import annotations

import json
import time

import numpy as np

from recallite_core.conversation.turns import TurnStore
from recallite_core.features.health import check_projections
from recallite_core.models import DriftItem, ReconcileReport
from recallite_core.plumbing import Plumbing
from recallite_core.storage.codec import encode_vector
from recallite_core.writer import embedding_text

SAMPLE = 20


def _ids(values) -> list[str]:
    return [f"mem_{v}" for v in list(values)[:SAMPLE]]


class Reconciler:
    """``Recallite.reconcile``: drift between the memories table and its projections."""

    def __init__(self, core: Plumbing, turns: TurnStore):
        self.core = core
        self.turns = turns

    def reconcile(self, repair: bool = False) -> ReconcileReport:
        """Compare every projection with the memories table. ``repair=True`` fixes what drifted:
        missing or malformed vectors and chunks are (re-)embedded, stray rows deleted, the FTS
        index rebuilt, unregistered episodes given a place in their session, summaries rebuilt.
        The report lists each kind of drift with a count, up to 20 ids and the fix."""
        self.core.live()
        dims = self.core.embedder.dimensions
        drift: list[DriftItem] = []

        def add(kind: str, ids, fix: str, count: int | None = None) -> DriftItem | None:
            ids = list(ids)
            n = len(ids) if count is None else count
            if not n:
                return None
            item = DriftItem(kind=kind, count=n, ids=_ids(ids), fix=fix)
            drift.append(item)
            return item

        with self.core.store.reading() as conn:
            proj = check_projections(conn, dims)  # vectors and FTS: the same checks as doctor
            live = set(conn.memories.all_ids())
            missing_vec = proj.missing_vectors
            stray_vec = proj.orphan_vectors
            bad_vec = [i for i in proj.bad_vectors if i in live]
            fts_missing, fts_stray, fts_ok = proj.missing_fts, proj.orphan_fts, proj.fts_detail == "ok"
            unregistered = conn.drift.unregistered_turns()
            stray_ep = conn.drift.stray_turns()
            stray_chunks = conn.drift.stray_chunks()
            bad_chunk_vec = conn.drift.malformed_chunks(dims)
            # chunks that differ from what the chunker makes of the current text (or are missing)
            have: dict[int, list[tuple[int, int]]] = {}
            for mid, a, b in conn.drift.chunk_spans():
                have.setdefault(mid, []).append((a, b))
            types = tuple(self.core.config.chunk_types)
            expected: dict[int, list[tuple[int, int]]] = {}
            for mid, mtype, content in conn.memories.contents():
                spans = self.turns.chunks_of(content) if mtype in types else []
                if spans:
                    expected[mid] = spans
            stale_chunks = sorted(m for m in (set(have) | set(expected)) if m in live and have.get(m, []) != expected.get(m, []))
            bad_cites = conn.drift.bad_citations()
            sessions = set(conn.episodes.sessions())
            summaries = {}
            for scope, session, pool, turns in conn.drift.summaries():
                summaries[(scope, session)] = (pool, turns)
            counts = conn.drift.turn_counts()
            bad_sessions = set()
            for key in sessions | set(summaries):
                if key not in summaries or key not in sessions or summaries[key][1] != counts.get(key, 0):
                    bad_sessions.add(key)
                    continue
                if any(e["m"] not in live for e in json.loads(summaries[key][0])):
                    bad_sessions.add(key)
            n_mem = len(live)
            n_vec = conn.vectors.count()
            n_chunks = conn.episodes.chunk_count()
            meta = (self.core.store.get_meta("embedder"), self.core.store.get_meta("dimensions"))

        items = {
            "missing_vectors": add("missing_vectors", missing_vec, "embed the memories that have no vector"),
            "stray_vectors": add("stray_vectors", stray_vec, "delete vectors whose memory is gone"),
            "bad_vector_dimensions": add("bad_vector_dimensions", bad_vec, f"re-embed vectors that are not {dims}-dimensional"),
            "fts_drift": add("fts_drift", fts_missing + fts_stray, "rebuild the FTS index",
                             count=len(fts_missing) + len(fts_stray) + (0 if fts_ok else 1)),
            "unregistered_episodes": add("unregistered_episodes", unregistered,
                                         "give episodes without a session position one (role 'event', appended)"),
            "stray_episode_rows": add("stray_episode_rows", stray_ep, "delete episode rows that no longer match their memory"),
            "stray_chunks": add("stray_chunks", stray_chunks, "delete chunks whose memory is gone"),
            "stale_chunks": add("stale_chunks", sorted(set(stale_chunks) | set(bad_chunk_vec)),
                                "re-chunk and re-embed memories whose chunks are missing, outdated or malformed"),
            "bad_citations": add("bad_citations", bad_cites, "delete citations whose source is gone or not an episode"),
            "session_summaries": add("session_summaries", [], "rebuild the running summaries of these sessions",
                                     count=len(bad_sessions)),
        }
        if meta != (self.core.embedder.name, str(dims)) and n_vec:
            add("embedder_mismatch", [], f"stored with {meta[0]} ({meta[1]} dims): run reindex", count=1)
        if items["session_summaries"] is not None:
            items["session_summaries"].ids = [f"{s or '(none)'}@{sc}" for sc, s in sorted(bad_sessions)[:SAMPLE]]

        if repair and drift:
            self._repair(items, missing_vec + bad_vec, stray_vec, unregistered, stray_ep, stray_chunks,
                         sorted(set(stale_chunks) | set(bad_chunk_vec)), bad_sessions)
            with self.core.store.reading() as conn:
                n_vec = conn.vectors.count()
                n_chunks = conn.episodes.chunk_count()
        ok = not drift or (repair and all(d.repaired >= d.count for d in drift if d.kind != "embedder_mismatch")
                           and not any(d.kind == "embedder_mismatch" for d in drift))
        return ReconcileReport(ok=ok, repaired=bool(repair and drift), memories=n_mem, vectors=n_vec, chunks=n_chunks,
                               drift=drift)

    def _repair(self, items, embed_ids, stray_vec, unregistered, stray_ep, stray_chunks, rechunk, bad_sessions):
        with self.core.store.reading() as conn:
            rows = conn.memories.texts_of(embed_ids)
        vecs = self.core.embed([embedding_text(t, c) for _, t, c in rows]) if rows else np.empty((0, self.core.embedder.dimensions))
        with self.core.store.transaction() as conn:
            if rows:
                conn.vectors.put([(r[0], encode_vector(v, self.core.embedder.dimensions)) for r, v in zip(rows, vecs)])
                for key in ("missing_vectors", "bad_vector_dimensions"):
                    if items[key]:
                        items[key].repaired = items[key].count
            if stray_vec:
                conn.vectors.delete(stray_vec)
                items["stray_vectors"].repaired = len(stray_vec)
            if items["fts_drift"]:
                conn.keywords.rebuild()
                items["fts_drift"].repaired = items["fts_drift"].count
            if stray_ep:
                conn.drift.drop_turns(stray_ep)
                items["stray_episode_rows"].repaired = len(stray_ep)
            if unregistered:
                for mid, scope, session, created in conn.drift.turn_fields(unregistered):
                    seq = conn.episodes.last_seq(scope, session) + 1
                    conn.episodes.add_turns([(mid, scope, session, "event", seq, created)])
                    bad_sessions.add((scope, session))
                items["unregistered_episodes"].repaired = len(unregistered)
            if stray_chunks:
                conn.episodes.delete_chunks(stray_chunks)
                items["stray_chunks"].repaired = len(stray_chunks)
            if items["bad_citations"]:
                conn.drift.drop_bad_citations()
                items["bad_citations"].repaired = items["bad_citations"].count
            if bad_sessions:
                for scope, session in bad_sessions:
                    conn.episodes.drop_summary(scope, session)
                self.turns.rebuild_summaries(conn, sorted(bad_sessions))
                if items["session_summaries"]:
                    items["session_summaries"].repaired = items["session_summaries"].count
            # Repairs rewrite projections without stamping rows (an FTS rebuild, episode positions):
            # every reader's in-memory copy reloads.
            conn.feed.reset_readers()
            self.core.store.set_meta(conn, "reconciled_at", str(time.time()))
        if rechunk:
            self.turns.rechunk(rechunk)
            items["stale_chunks"].repaired = items["stale_chunks"].count
