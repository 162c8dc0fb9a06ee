"""The in-memory keyword index and episode map answer exactly what FTS5 and SQL answer."""

from __future__ import annotations

import random
import sqlite3

import numpy as np
import pytest

from recallite_core import Recallite, RecalliteConfig
from recallite_core.retrieval.candidates import RecallFilter
from recallite_core.retrieval.conversation_ranking import EpisodeMap, episode_structure
from recallite_core.storage.fts import fts_query, query_terms
from recallite_core.storage.order import top_order
from recallite_core.storage.sqlite.keyword_mirror import KeywordIndex
from recallite_mcp.benchmarks.dataset import memories, queries

WORDS = ("deploy deploys deploying deployment cache caches caching café cafe naïve naive résumé build builds "
         "docker kubernetes pod pods timeout timeouts retry retries flaky test tests testing the a of run runs "
         "running ran migration migrations schema index indexes indexing postgres sqlite wal lock locks").split()


def _text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)) + rng.choice(["", ".", "!", " (x)", " 42", " é"])


def _fts_table(rows: list[tuple[int, str, str, str]]) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(title, content, tags, tokenize='porter unicode61')")
    conn.executemany("INSERT INTO t (rowid, title, content, tags) VALUES (?, ?, ?, ?)", rows)
    return conn


def _reference(conn, query: str) -> list[tuple[int, float]]:
    return [(r[0], -r[1]) for r in conn.execute(
        "SELECT rowid, bm25(t, 0.3, 1.0, 0.5) AS s FROM t WHERE t MATCH ? ORDER BY s, rowid", (fts_query(query),))]


def _mine(index: KeywordIndex, conn, query: str) -> list[tuple[int, float]]:
    ids, scores = index.bm25(conn, query_terms(query))
    return [(int(ids[j]), float(scores[j])) for j in top_order(ids, scores, None)]


def _same(a: list[tuple[int, float]], b: list[tuple[int, float]]) -> None:
    assert [i for i, _ in a] == [i for i, _ in b]
    assert np.allclose([s for _, s in a], [s for _, s in b], rtol=1e-12, atol=0)


@pytest.fixture(params=["eager", "lazy"])
def postings_mode(request, monkeypatch):
    """Both ways postings arrive: all at load (small tables) and one term at a time."""
    monkeypatch.setattr(KeywordIndex, "EAGER_TOKENS", 10**9 if request.param == "eager" else -1)
    return request.param


def test_eager_postings_equal_the_ones_read_one_term_at_a_time(monkeypatch):
    rng = random.Random(12)
    rows = [(i, _text(rng, rng.randint(0, 5)), _text(rng, rng.randint(0, 40)), _text(rng, rng.randint(0, 4)))
            for i in range(1, 300)]
    conn = _fts_table(rows)
    eager = KeywordIndex("t", ["title", "content", "tags"], [0.3, 1.0, 0.5])
    eager.load(conn)
    monkeypatch.setattr(KeywordIndex, "EAGER_TOKENS", -1)
    lazy = KeywordIndex("t", ["title", "content", "tags"], [0.3, 1.0, 0.5])
    lazy.load(conn)
    try:
        terms = [r[0] for r in conn.execute("SELECT DISTINCT term FROM temp.recallite_vocab_t")]
        assert len(eager.postings) == len(terms) > 20 and not lazy.postings
        assert eager.cached_postings == sum(p.size for p in eager.postings.values())
        for term in terms:
            a, b = eager.postings[term], lazy._postings(conn, term)
            assert a.size == b.size and a.slots.tolist() == b.slots.tolist() and a.freq.tolist() == b.freq.tolist(), term
    finally:
        eager.tokenizer.close()
        lazy.tokenizer.close()


def test_bm25_equals_fts5_on_random_text_with_stems_accents_and_empty_rows(postings_mode):
    rng = random.Random(5)
    rows = [(i, _text(rng, rng.randint(0, 4)), _text(rng, rng.randint(0, 30)), _text(rng, rng.randint(0, 3)))
            for i in range(1, 400)]
    rows.append((400, "", "", ""))  # a row with no token counts in N, as in FTS5
    conn = _fts_table(rows)
    index = KeywordIndex("t", ["title", "content", "tags"], [0.3, 1.0, 0.5])
    index.load(conn)
    assert index.rows == 400 and index.matches_table(conn)
    for _ in range(60):
        q = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 6)))
        _same(_mine(index, conn, q), _reference(conn, q))


def test_bm25_stays_equal_through_inserts_and_deletes(postings_mode):
    rng = random.Random(9)
    rows = [(i, _text(rng, 2), _text(rng, 20), _text(rng, 1)) for i in range(1, 200)]
    conn = _fts_table(rows)
    index = KeywordIndex("t", ["title", "content", "tags"], [0.3, 1.0, 0.5])
    index.load(conn)
    for q in ("deploy cache", "timeouts retry", "café naive"):
        _mine(index, conn, q)  # postings of these terms are now cached: later changes must reach them
    new = [(i, _text(rng, 2), _text(rng, 25), _text(rng, 2)) for i in range(200, 260)]
    conn.executemany("INSERT INTO t (rowid, title, content, tags) VALUES (?, ?, ?, ?)", new)
    index.upsert([(r[0], r[1:]) for r in new])
    gone = rng.sample(range(1, 260), 40)
    conn.executemany("DELETE FROM t WHERE rowid = ?", [(g,) for g in gone])
    index.remove(gone)
    assert index.matches_table(conn)
    for q in ("deploy cache", "timeouts retry", "café naive", "kubernetes pods locks", "the"):
        _same(_mine(index, conn, q), _reference(conn, q))


def test_a_word_fts5_splits_into_a_phrase_is_left_to_fts5():
    conn = _fts_table([(1, "", "deploying fast-path", "")])
    index = KeywordIndex("t", ["title", "content", "tags"])
    index.load(conn)
    assert index.term_of("deploying") == "deploi"  # porter, as FTS5 stems it
    assert index.bm25(conn, ["deploying"]) is not None
    assert index.term_of("fast-path") is None  # two tokens: a phrase query, not ours to answer
    assert index.bm25(conn, ["deploying", "fast-path"]) is None


def _open_pair(path: str):
    on = Recallite.open(path, embedder="hash")
    off = Recallite.open(path, embedder="hash", config=RecalliteConfig(keyword_cache=False))
    return on, off


def _ranked(m, q, **kw):
    return [(h.memory.id, round(h.score, 9)) for h in m.recall(q, limit=10, **kw).memories]


def test_recall_is_identical_with_and_without_the_cache_through_writes(tmp_path, postings_mode):
    path = str(tmp_path / "m.db")
    on, off = _open_pair(path)
    try:
        on.remember_many(list(memories(400, seed=3)))
        rng = random.Random(1)
        turns = [{"session": f"s{k % 3}", "role": rng.choice(["Caroline", "Mel", "user"]),
                  "content": _text(rng, 15)} for k in range(60)]
        on.record_turns(turns, scope="proj-alpha")
        qs = queries(12, seed=7) + ["Caroline deploy cache", "what did Mel say about retries"]
        checks = 0

        def compare():
            nonlocal checks
            for q in qs:
                assert _ranked(on, q) == _ranked(off, q), q
                assert _ranked(on, q, scope="proj-alpha") == _ranked(off, q, scope="proj-alpha"), q
                assert _ranked(on, q, types=["lesson", "episode"]) == _ranked(off, q, types=["lesson", "episode"]), q
                checks += 3

        compare()
        # Writes through the other engine (another process would look the same: one file).
        off.remember_many(list(memories(50, seed=11)))
        off.record_turns([{"session": "s1", "role": "Mel", "content": "deploy cache retries again"}], scope="proj-alpha")
        ids = [h.memory.id for h in on.recall("deploy cache", limit=6).memories]
        off.forget(ids[0])
        off.deprecate(ids[1], reason="test")
        compare()
        # A hand-made edit of a memory's text (no API does this) still reaches the cache.
        with off.store.transaction() as conn:
            off.store.conn.execute("UPDATE memories SET content = 'kubernetes kubernetes kubernetes' WHERE id = ?", (int(ids[2][4:]),))
        assert _ranked(on, "kubernetes") == _ranked(off, "kubernetes")
        flt = RecallFilter(scopes=None, statuses=("candidate", "validated", "active"), types=None, tags=None,
                           sessions=None)
        with on.store.reading() as conn:
            assert on.retriever.keyword_channel(conn, "kubernetes", flt, 5)[0][0] == int(ids[2][4:])
        compare()
        off.reindex()
        compare()
        assert checks >= 4 * 3 * len(qs)
    finally:
        on.close()
        off.close()


def test_regression_stale_cache_is_dropped_when_totals_disagree(tmp_path):
    # Simulates a writer that changes FTS rows without stamping them (e.g. an older version of
    # this package): the totals check after a catch-up notices and reloads.
    m = Recallite.open(str(tmp_path / "m.db"), embedder="hash")
    try:
        m.remember_many(list(memories(100, seed=2)))
        m.recall("deploy", limit=3)
        kx = m.retriever.keywords
        reloads = kx.reloads
        with m.store.transaction() as conn:
            m.store.conn.execute("DROP TRIGGER memories_seq_text_au")
            m.store.conn.execute("UPDATE memories SET content = content || ' extra words here' WHERE id <= 5")
        m.remember("a stamped write moves the counter")  # the cache catches up and checks totals
        m.recall("deploy", limit=3)
        assert kx.reloads == reloads + 1
    finally:
        m.close()


def _structure(em: EpisodeMap, ids) -> tuple[dict, dict]:
    """episode_structure's answer (adjacency both ways, roles) rebuilt from the map's links."""
    from recallite_core.retrieval.conversation_ranking import NO_TURN

    ids = np.asarray(list(ids), dtype=np.int64)
    prev, nxt, role = em.links(ids)
    adjacency: dict[int, list[int]] = {}
    roles: dict[int, str] = {}
    for mid, p, n, r in zip(ids.tolist(), prev.tolist(), nxt.tolist(), role.tolist()):
        if r < 0:
            continue
        roles[mid] = em.role_names[r]
        for other in (p, n):
            if other != NO_TURN:
                roles[other] = em.role_names[int(em.links(np.array([other]))[2][0])]
                adjacency.setdefault(mid, []).append(other)
                back = adjacency.setdefault(other, [])
                if mid not in back:
                    back.append(mid)
    return adjacency, roles


def test_episode_map_matches_the_sql_structure(tmp_path):
    m = Recallite.open(str(tmp_path / "m.db"), embedder="hash")
    try:
        rng = random.Random(4)
        for s in range(4):
            m.record_turns([{"session": f"s{s}", "role": rng.choice(["Ann", "Bob"]), "content": _text(rng, 6)}
                            for _ in range(25)], scope=rng.choice(["a", "b"]))
        m.remember_many(list(memories(30, seed=1)))
        em = EpisodeMap()
        with m.store.reading() as conn:
            em.sync(conn, m.store.change_counter())
            ids = [r[0] for r in m.store.conn.execute("SELECT id FROM memories")]
            for _ in range(20):
                pick = rng.sample(ids, 15)
                adj, roles = episode_structure(conn, pick)
                adj2, roles2 = _structure(em, pick)
                assert roles == roles2
                assert {k: set(v) for k, v in adj.items()} == {k: set(v) for k, v in adj2.items()}  # expand() takes a max
        gone = m.list(limit=200)[3].id
        m.forget(gone)
        with m.store.reading() as conn:
            em.sync(conn, m.store.change_counter())
            assert int(gone[4:]) not in em.pos
            assert len(em.pos) == m.store.conn.execute("SELECT count(*) FROM episodes").fetchone()[0]
    finally:
        m.close()


def test_stats_from_the_covering_index_match_plain_counts(tmp_path):
    m = Recallite.open(str(tmp_path / "m.db"), embedder="hash")
    try:
        m.remember_many(list(memories(120, seed=6)))
        m.remember(type="lesson", title="t", content="scoped lesson here", scope="proj-x",
                   source={"type": "llm", "id": "run-1"})
        gone = m.list(limit=5)[0].id
        m.deprecate(m.list(limit=5)[1].id, reason="old")
        m.forget(gone)
        for scope in (None, "proj-x", "default"):
            s = m.stats(scope=scope)
            with m.store.reading() as conn:
                where = "" if scope is None else "WHERE scope = ?"
                args = [] if scope is None else [scope]
                rows = m.store.conn.execute(f"SELECT type, status, source_type, scope, tokens, id FROM memories {where}", args).fetchall()
                vecs = m.store.conn.execute(f"SELECT count(*) FROM vectors v JOIN memories m ON m.id = v.memory_id {where.replace('scope', 'm.scope')}", args).fetchone()[0]
            assert s.memories == len(rows)
            for key, col in (("by_type", 0), ("by_status", 1), ("by_source", 2), ("by_scope", 3)):
                expect: dict = {}
                for r in rows:
                    expect[r[col]] = expect.get(r[col], 0) + 1
                assert getattr(s, key) == expect, key
            assert s.tokens_stored == sum(r[4] for r in rows if r[1] in ("candidate", "validated", "active"))
            assert s.vectors == vecs
    finally:
        m.close()


def test_postings_beyond_the_cap_are_evicted_and_read_again(monkeypatch):
    import recallite_core.storage.sqlite.keyword_mirror as ki

    rng = random.Random(3)
    rows = [(i, _text(rng, 2), _text(rng, 20), _text(rng, 1)) for i in range(1, 300)]
    conn = _fts_table(rows)
    monkeypatch.setattr(ki, "MAX_CACHED_POSTINGS", 120)
    index = KeywordIndex("t", ["title", "content", "tags"], [0.3, 1.0, 0.5])
    index.load(conn)
    for q in ("deploy cache", "timeouts retry", "kubernetes pods locks", "deploy cache", "the running"):
        _same(_mine(index, conn, q), _reference(conn, q))
        assert index.cached_postings <= 120 or len(index.postings) == 1
        assert index.cached_postings == sum(p.size for p in index.postings.values())


def test_regression_fts_repair_reloads_the_keyword_cache(tmp_path):
    # A drifted FTS index mirrored in memory, then repaired by reconcile: the rebuild stamps no
    # row, so without moving the counter the mirror would keep answering from the drifted copy.
    m = Recallite.open(str(tmp_path / "m.db"), embedder="hash")
    off = Recallite.open(str(tmp_path / "m.db"), embedder="hash", config=RecalliteConfig(keyword_cache=False))
    try:
        m.remember_many(list(memories(80, seed=12)))
        target = m.remember("zebrafish aquarium heater notes", type="fact")
        with m.store.transaction() as conn:  # drift: the FTS row of one memory disappears
            m.store.conn.execute("INSERT INTO memories_fts(memories_fts, rowid, title, content, tags) "
                         "SELECT 'delete', id, title, content, tags FROM memories WHERE id = ?", (int(target.id[4:]),))
        assert target.id not in [h.memory.id for h in m.recall("zebrafish aquarium", limit=5).memories
                                 if h.breakdown.keyword_rank is not None]
        report = m.reconcile(repair=True)
        assert report.repaired and [d for d in report.drift if d.kind == "fts_drift" and d.repaired >= 1]
        flt = RecallFilter(scopes=None, statuses=("candidate", "validated", "active"), types=None, tags=None,
                           sessions=None)
        with m.store.reading() as conn:
            assert m.retriever.keyword_channel(conn, "zebrafish aquarium", flt, 5)[0][0] == int(target.id[4:])
        assert _ranked(m, "zebrafish aquarium") == _ranked(off, "zebrafish aquarium")
    finally:
        m.close()
        off.close()


def test_slot_array_follows_rows_and_hands_over_to_the_dict_for_huge_ids():
    from recallite_core.storage.id_arrays import MAX_DENSE_ID

    kx = KeywordIndex("memories_fts", ["title", "content", "tags"])
    try:
        def check():
            probe = np.array(sorted(set(kx.slot_of) | {0, 7, 4096, 10**6}), dtype=np.int64)
            assert kx.slots_of(probe).tolist() == [kx.slot_of.get(i, -1) for i in probe.tolist()]

        for rid in range(1, 2500, 3):
            kx._add_row(rid, 5)
        check()
        for rid in range(1, 2500, 9):
            kx._remove_row(rid)
        check()
        kx._add_row(MAX_DENSE_ID + 5, 3)
        assert not kx._slots.usable
        check()
        kx.reset()
        kx._add_row(3, 1)
        assert kx._slots.usable and kx.slots_of(np.array([3, 4])).tolist() == [0, -1]
    finally:
        kx.tokenizer.close()


def test_episode_map_links_after_incremental_syncs_equal_a_fresh_load(tmp_path):
    m = Recallite.open(str(tmp_path / "m.db"), embedder="hash")
    try:
        rng = random.Random(8)
        em = EpisodeMap()

        def turns(session, n):
            return [{"session": session, "role": rng.choice(["Ann", "Bob", "user"]), "content": _text(rng, 5)}
                    for _ in range(n)]

        m.record_turns(turns("s1", 6) + turns("s2", 4), scope="a")
        with m.store.reading() as conn:
            em.sync(conn, m.store.change_counter())
        m.record_turns(turns("s1", 3) + turns("s3", 5), scope="a")  # appended to s1, a new session
        m.remember_many(list(memories(20, seed=5)))
        listed = [x for x in m.list(limit=100) if x.type == "episode"]
        for gone in (listed[2], listed[7], listed[-1]):
            m.forget(gone.id)
        with m.store.reading() as conn:
            em.sync(conn, m.store.change_counter())
            fresh = EpisodeMap()
            fresh.sync(conn, m.store.change_counter())
            ids = np.array([r[0] for r in m.store.conn.execute("SELECT id FROM memories")] + [10**6], dtype=np.int64)
        got, want = em.links(ids), fresh.links(ids)
        names = lambda mp, codes: [mp.role_names[c] if c >= 0 else None for c in codes.tolist()]  # noqa: E731
        assert got[0].tolist() == want[0].tolist() and got[1].tolist() == want[1].tolist()
        assert names(em, got[2]) == names(fresh, want[2])
        assert (got[0] >= 0).sum() > 5 and (got[2] < 0).sum() >= 15  # turns linked; plain memories are not turns
    finally:
        m.close()


def test_words_tokenized_together_match_one_at_a_time():
    words = ["deploying", "fast-path", "Café", "naïve", "résumé", "RUNS", "42", "x", "deploying", "e-mail"]
    batch = KeywordIndex("t", ["title", "content", "tags"])
    single = KeywordIndex("t", ["title", "content", "tags"])
    try:
        assert batch.terms_of(words) == [single.term_of(w) for w in words]
        assert batch.terms_of(["deploying"]) == ["deploi"] and batch.term_of("fast-path") is None
        assert single.tokenizer.tokens_many(["fast-path", "", "café"]) == [("fast", "path"), (), ("cafe",)]
    finally:
        batch.tokenizer.close()
        single.tokenizer.close()


def test_regression_full_word_cache_still_answers_the_query_words(tmp_path):
    # terms_of cleared a full word cache and then looked this query's known words up in it: KeyError.
    m = Recallite.open(str(tmp_path / "m.db"), embedder="hash")
    try:
        made = m.remember("pytest needs the -x flag to stop at the first failure")
        m.recall("pytest", limit=3)
        cache = m.retriever.keywords.memories._word_tokens
        assert "pytest" in cache
        cache.update((f"filler{i}", ("filler",)) for i in range(50_000 - len(cache)))
        assert m.recall("pytest quokka", limit=3).memories[0].memory.id == made.id
        assert len(cache) <= 50_000 and "quokka" in cache
    finally:
        m.close()


def test_regression_negative_ids_turn_the_dense_arrays_off(tmp_path):
    # A hand-made row with a negative id was written at the array's end by Python indexing
    # (another memory's slot) or raised IndexError on an empty array.
    from recallite_core.storage.id_arrays import IdArray

    arr = IdArray()
    arr.set(np.array([1, 2, 3]), np.array([10, 20, 30]))
    arr.set(-1, 99)
    assert not arr.usable
    empty = Recallite.open(None, embedder="hash")
    try:
        with empty.store.transaction() as conn:
            empty.store.conn.execute("INSERT INTO memories (id, type, content, status, source_type, confidence, created_at, updated_at,"
                         " content_hash) VALUES (-1, 'fact', 'handmade negative row', 'active', 'user', 1, 0, 0, 'h')")
            empty.store.conn.execute("INSERT INTO vectors (memory_id, vector) VALUES (-1, ?)",
                         (np.ones(empty.index.dimensions, dtype=np.float32).tobytes(),))
        assert [h.memory.id for h in empty.recall("handmade", limit=3).memories] == ["mem_-1"]
    finally:
        empty.close()
    m = Recallite.open(str(tmp_path / "m.db"), embedder="hash")
    try:
        m.remember_many(list(memories(60, seed=3)))
        target = m.remember("the xylophonist victimword memory", scope="proj-alpha")
        m.recall("warm up deploy", limit=3)
        with m.store.transaction() as conn:
            m.store.conn.execute("INSERT INTO memories (id, type, content, status, source_type, confidence, created_at, updated_at,"
                         " content_hash) VALUES (-1, 'fact', 'unrelated handmade row', 'active', 'user', 1, 0, 0, 'h')")
        hit = m.recall("victimword", limit=3).memories[0]
        assert hit.memory.id == target.id and hit.breakdown.keyword_rank == 1
    finally:
        m.close()


def test_regression_sparse_huge_ids_do_not_allocate_dense_arrays():
    from recallite_core.storage.id_arrays import IdArray

    arr = IdArray()
    arr.set(np.arange(1, 100), np.arange(99))
    arr.set(20_000_000, 5)  # far past the 99 ids set: an array of holes; the dict answers instead
    assert not arr.usable and len(arr.values) == 0
