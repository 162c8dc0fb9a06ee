"""The fast paths keep their behaviour: same vectors, same rankings, fewer statements.

These assert what the code does (results, SQL issued), never how long it takes.
"""

import zlib

import numpy as np
import pytest

from recallite_core import HashEmbedder, Recallite, RecalliteConfig
from recallite_core.embedding.embedder import normalize_rows
from recallite_core.index.vector_index import ScanFilter, VectorIndex
from recallite_core.storage.id_arrays import MAX_DENSE_ID
from recallite_mcp.benchmarks.dataset import memories, queries


def reference_hash_embed(emb: HashEmbedder, texts):
    """The original per-feature loop of HashEmbedder, kept here as the reference."""
    out = np.zeros((len(texts), emb.dimensions), dtype=np.float32)
    for row, text in enumerate(texts):
        feats = emb._features(text)
        if not feats:
            continue
        idx = np.empty(len(feats), dtype=np.int64)
        sign = np.empty(len(feats), dtype=np.float32)
        for j, f in enumerate(feats):
            h = zlib.crc32(f.encode("utf-8"))
            idx[j] = h % emb.dimensions
            sign[j] = 1.0 if (h >> 31) & 1 else -1.0
        np.add.at(out[row], idx, sign)
    return normalize_rows(out)


@pytest.mark.parametrize("dims", [8, 64, 384])
def test_vectorised_hash_embedder_gives_identical_vectors(dims):
    emb = HashEmbedder(dims)
    texts = [m["content"] for m in memories(300, seed=5)] + ["", "   ", "a", "Ünïcödé wörds ñ 漢字 testing", "x" * 5000]
    assert np.array_equal(emb.embed(texts), reference_hash_embed(emb, texts))
    assert emb.embed([]).shape == (0, dims)


def brute_force(matrix, ids, q, k, keep=None):
    scores = (matrix.astype(np.float64) * q.astype(np.float64)).sum(axis=1)
    rows = np.arange(len(ids)) if keep is None else np.flatnonzero(keep)
    order = rows[np.lexsort((ids[rows], -scores[rows]))][:k]
    return ids[order], scores[order]


def test_scan_equals_float64_brute_force_on_every_path():
    rng = np.random.default_rng(3)
    n, d = 3000, 48
    mat = rng.standard_normal((n, d)).astype(np.float32)
    mat /= np.linalg.norm(mat, axis=1, keepdims=True)
    mat[500:520] = mat[3]  # ties
    ids = np.arange(1, n + 1, dtype=np.int64)
    statuses = np.array(["active", "candidate", "deprecated"])[rng.integers(0, 3, n)]
    scopes = np.array(["a", "b", "c", "d", "e", "f"])[rng.integers(0, 6, n)]
    idx = VectorIndex(d)
    idx._upsert([(int(i), str(sc), str(st), "fact", None, v.tobytes()) for i, sc, st, v in zip(ids, scopes, statuses, mat)])
    for t in range(40):
        q = mat[3] if t % 5 == 0 else rng.standard_normal(d).astype(np.float32)
        k = int(rng.integers(1, 200))
        cases = [
            (None, None),  # unfiltered fast path
            (ScanFilter(statuses=("active", "candidate")), np.isin(statuses, ["active", "candidate"])),  # broad mask
            (ScanFilter(scopes=("a",)), scopes == "a"),  # narrow: gathered rows
            (ScanFilter(allowed_ids=ids[::7]), np.isin(ids, ids[::7])),
        ]
        for flt, keep in cases:
            got = idx.search(q, k, flt)
            want = brute_force(mat, ids, q, k, keep)
            assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])


def test_filter_masks_are_cached_until_the_index_changes(tmp_path):
    m = Recallite.open(str(tmp_path / "m.db"), embedder="hash")
    try:
        m.remember_many(list(memories(200, seed=2)))
        m.recall("flaky pytest", limit=5, scope="proj-alpha")
        key = next(iter(m.index._masks))
        first = m.index._masks[key][0]
        m.recall("deploy canary", limit=5, scope="proj-alpha")
        assert m.index._masks[key][0] is first  # reused, not rebuilt
        new = m.remember("zebra quokka axolotl narwhal", scope="proj-alpha")
        r = m.recall("zebra quokka axolotl narwhal", limit=5, scope="proj-alpha")
        assert r.memories[0].memory.id == new.id and r.memories[0].breakdown.vector_rank == 1  # refreshed
        assert m.index._masks[key][0] is not first  # and the mask rebuilt
    finally:
        m.close()


def traced(mem):
    seen = []
    mem.store.conn.set_trace_callback(seen.append)
    return seen


def test_remember_many_stamps_a_batch_with_one_counter_bump(tmp_path):
    m = Recallite.open(str(tmp_path / "m.db"), embedder="hash")
    try:
        before = m.store.change_counter()
        out = m.remember_many(list(memories(50, seed=9)))
        assert len({o.id for o in out}) == 50
        assert m.store.change_counter() == before + 1  # one bump stamps the whole batch
        seqs = {r[0] for r in m.store.conn.execute("SELECT seq FROM memories UNION SELECT seq FROM vectors")}
        assert seqs == {before + 1}
        # A row inserted any other way is still stamped by the trigger.
        with m.store.transaction() as conn:
            m.store.conn.execute("INSERT INTO memories (type, content, status, source_type, confidence, created_at, updated_at, "
                         "content_hash) VALUES ('fact', 'raw', 'active', 'user', 1, 0, 0, 'h')")
        assert m.store.conn.execute("SELECT seq FROM memories WHERE content = 'raw'").fetchone()[0] == before + 2
        # Ids never reuse a deleted one (AUTOINCREMENT semantics kept).
        top = max(int(o.id[4:]) for o in out) + 1
        m.forget(f"mem_{top}")
        nxt = m.remember("after a delete of the largest id")
        assert int(nxt.id[4:]) == top + 1
    finally:
        m.close()


def test_recall_does_not_count_the_table_or_join_every_match(tmp_path):
    # The FTS5 path (what answers when the in-memory keyword cache is off or dropped).
    m = Recallite.open(str(tmp_path / "m.db"), embedder="hash", workers={"size": 1, "min_vector_count": 10**9},
                       config=RecalliteConfig(keyword_cache=False))
    try:
        m.remember_many(list(memories(300, seed=4)))
        m.recall("warm up", limit=5)
        seen = traced(m)
        for q in queries(5, seed=1):
            m.recall(q, limit=5)
        m.add("one more memory about pytest fixtures")
        m.recall("pytest fixtures", limit=5)
        m.store.conn.set_trace_callback(None)
        full_counts = [s for s in seen if "count(*) FROM vectors" in s and "WHERE" not in s]
        assert not full_counts  # routing uses the last count plus what changed
        fts = [s for s in seen if "MATCH" in s and "bm25(" in s]  # the keyword ranking query
        assert fts and all("LIMIT" in s.split("MATCH", 1)[1].split(") f", 1)[0] for s in fts)
        # the keyword-coverage lookups are a document count per query term (cached) or confined to the top hits
        others = [s for s in seen if "MATCH" in s and "bm25(" not in s]
        assert all("rowid IN (" in s or s.startswith("SELECT count(*) FROM memories_fts") for s in others), others
    finally:
        m.close()


def test_keyword_channel_widens_when_the_filter_is_narrow(mem):
    # 300 matches in one scope, 3 in another: the bm25 top-N of all matches holds none of
    # the narrow scope's, so the channel must widen and still find all three.
    mem.remember_many([{"content": f"common words about deploy pipelines {i}", "scope": "big"} for i in range(300)])
    mem.remember_many([{"content": f"deploy note {i} in a rare scope", "scope": "rare"} for i in range(3)])
    flt = mem.core.recall_filter("rare", None, ("candidate", "validated", "active"), None, None)
    with mem.store.reading() as conn:
        got = mem.retriever.keyword_channel(conn, "deploy pipelines", flt, 50)
        want = mem.store.conn.execute(
            "SELECT m.id FROM memories_fts JOIN memories m ON m.id = memories_fts.rowid "
            "WHERE memories_fts MATCH '\"deploy\" OR \"pipelines\"' AND m.scope = 'rare'"
        ).fetchall()
    assert sorted(i for i, _ in got) == sorted(r[0] for r in want) and len(got) == 3


def test_recall_with_the_keyword_cache_asks_fts5_nothing_once_warm(tmp_path):
    m = Recallite.open(str(tmp_path / "m.db"), embedder="hash")
    try:
        m.remember_many(list(memories(300, seed=4)))
        qs = queries(5, seed=1)
        for q in qs:
            m.recall(q, limit=5)  # first use of each term reads its postings once
        seen = traced(m)
        for q in qs:
            m.recall(q, limit=5)
        m.store.conn.set_trace_callback(None)
        assert not [s for s in seen if "MATCH" in s or "fts5vocab" in s or "_vocab_" in s], seen
        # Only the change counter, the retrieval log and a handful of lookups per recall.
        recall_statements = [s for s in seen if not s.startswith(("BEGIN", "COMMIT", "INSERT", "UPDATE"))]
        assert len(recall_statements) <= 14 * len(qs), recall_statements
    finally:
        m.close()


def test_dense_row_map_follows_upserts_deletes_and_compaction():
    rng = np.random.default_rng(5)
    idx = VectorIndex(8)

    def rows(ids):
        return [(int(i), "s", "active", "fact", None, rng.standard_normal(8).astype(np.float32).tobytes()) for i in ids]

    def check():
        probe = np.array(sorted(set(idx.row_of) | {0, 1, 5000, 99_999, 10**9}), dtype=np.int64)
        assert idx.rows_of(probe).tolist() == [idx.row_of.get(i, -1) for i in probe.tolist()]

    idx._upsert(rows(range(1, 3000)))
    check()
    for mid in range(1, 3000, 2):
        idx._remove(mid)
    check()
    idx._upsert(rows([5, 7, 4000]))  # back after a delete, and a new one
    check()
    idx._compact()
    check()
    idx._upsert(rows([MAX_DENSE_ID + 3]))  # too large for the array: the dict answers
    assert not idx._rows.usable
    check()


def test_passing_mask_agrees_with_sql_for_ids_with_and_without_vectors(tmp_path):
    from recallite_core.retrieval.candidates import RecallFilter

    m = Recallite.open(str(tmp_path / "m.db"), embedder="hash")
    try:
        made = m.remember_many(list(memories(300, seed=9)))
        ids = [int(x.id[4:]) for x in made]
        m.deprecate(made[0].id, reason="t")
        with m.store.transaction() as conn:  # a row without a vector: SQL must answer for it
            m.store.conn.execute("DELETE FROM vectors WHERE memory_id = ?", (ids[1],))
        m.recall("warm the index", limit=3)  # the matrix is current: its columns answer the rest
        assert m.index.seq == m.store.change_counter() and m.index.rows_of(np.array([ids[1]]))[0] == -1
        probe = np.array(ids[:40] + [10**6], dtype=np.int64)
        for flt in (RecallFilter(scopes=("proj-alpha",), statuses=("active", "candidate", "validated"), types=None,
                                 tags=None, sessions=None),
                    RecallFilter(scopes=None, statuses=("active",), types=("lesson", "fact"), tags=None, sessions=None)):
            with m.store.reading() as conn:
                got = m.retriever.passing_mask(conn, probe, flt)
                want = set(conn.memories.matching(None, flt.memory_filter()))  # the store's own answer
            assert got.tolist() == [i in want for i in probe.tolist()]
            assert got.any() and not got.all()
    finally:
        m.close()


@pytest.mark.parametrize("cfg, check", [
    (dict(fusion="rrf"), lambda b: b.keyword_z is None and b.vector_z is None and b.neighbour_share is None),
    (dict(channels="keyword"), lambda b: b.vector_rank is None and b.vector_z == 0.0),
    (dict(channels="vector"), lambda b: b.keyword_rank is None and b.keyword_alpha == 0.0),
])
def test_other_fusion_and_channel_modes_rank_from_their_channels(tmp_path, cfg, check):
    m = Recallite.open(str(tmp_path / "m.db"), embedder="hash", config=RecalliteConfig(**cfg))
    try:
        m.remember_many(list(memories(150, seed=6)))
        m.record_turns([{"session": "s", "role": r, "content": c} for r, c in (
            ("Caroline", "Did the deploy cache fix work?"), ("Mel", "Yes, retries stopped after the cache flush."))],
            scope="proj-alpha")
        for q in queries(5, seed=2) + ["deploy cache retries"]:
            hits = m.recall(q, limit=6).memories
            assert hits and [h.rank for h in hits] == list(range(1, len(hits) + 1))
            assert all(check(h.breakdown) for h in hits), q
            assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    finally:
        m.close()
