"""What a write pays for detection (issue 20, "remember p50 within 1.2x"): each text parsed once and
kept within a bound, and candidates picked from the nearest rows without the whole filter mask,
the same rows as the whole filtered scan. Behaviour only: no timings here."""

import random

import numpy as np
import pytest

from recallite_core import Recallite
from recallite_core.index import vector_index
from recallite_core.index.vector_index import ScanFilter, dot_rows
from recallite_core.policy import correction_words, corrections


def test_a_stored_memory_is_parsed_once_not_on_every_write_it_is_a_candidate_of(monkeypatch):
    parsed = []
    real = correction_words._parse
    monkeypatch.setattr(correction_words, "_parse", lambda text: parsed.append(text) or real(text))
    monkeypatch.setattr(correction_words, "_PARSED", correction_words._Parsed(1000))
    old = "The staging server runs on port 8080."
    for new in ("The staging server runs on port 9090.", "The staging server runs on port 7070.",
                "The staging server runs on port 6060."):
        assert corrections.compare(old, new) is not None
    assert parsed.count(old) == 1


def test_kept_parses_stay_within_their_word_budget():
    kept = correction_words._Parsed(50)
    for i in range(40):
        text = f"service {i} listens on port {8000 + i}"
        kept.put(text, correction_words._parse(text))
    assert kept.size <= 50
    assert sum(len(ws) + 1 for ws in kept.texts.values()) == kept.size
    assert "service 39 listens on port 8039" in kept.texts  # the newest stay, the oldest went
    assert "service 0 listens on port 8000" not in kept.texts


def test_a_kept_parse_is_the_same_as_a_fresh_one():
    text = "Maria owns the sales dashboard; the timeout is 30 seconds."
    assert correction_words.words(text) == correction_words._parse(text)
    assert correction_words.words(text) is correction_words.words(text)


def _scores(index, vec):
    return dot_rows(index.matrix[:index.n], np.ascontiguousarray(vec, dtype=np.float32))


def _whole_scan(index, vec, scope, k, min_similarity):
    """The scores of the nearest rows by the whole filtered scan (what nearest() did before it
    checked a pool first), best first."""
    mask = index.mask(ScanFilter(scopes=(scope,), statuses=corrections.LIVE, types=corrections.COMPARED_TYPES))
    scores = _scores(index, vec)
    scores[~mask] = -np.inf
    best = np.sort(scores)[::-1][:k]
    return [float(s) for s in best if s >= min_similarity]


@pytest.mark.parametrize("k", [1, 5, 40])
def test_candidates_from_the_nearest_pool_are_those_of_the_whole_filtered_scan(k):
    """Other scopes, conversation turns and retired memories near the top push the filter past the
    pool: nearest() then scans the whole mask, and either way finds the same memories."""
    rng = random.Random(3)
    vocab = ["alpha", "beta", "gamma", "delta", "port", "server", "staging", "prod", "team", "lead", "python",
             "version", "region", "deploy", "cache"]
    mem = Recallite.open(None, embedder="hash")
    try:
        mem.config.corrections = False
        mem.remember_many([{"content": " ".join(rng.choice(vocab) for _ in range(6)) + f" n{i}",
                            "type": rng.choice(["fact", "fact", "episode", "procedure"]),
                            "scope": rng.choice(["a", "b", "c"])} for i in range(600)])
        for mid in rng.sample(range(1, 601), 40):
            mem.forget(f"mem_{mid}")
        for _ in range(60):
            vec = mem.core.embed([" ".join(rng.choice(vocab) for _ in range(5))])[0]
            scope, floor = rng.choice(["a", "b", "c", "nowhere"]), rng.choice([0.0, 0.3, 0.6])
            with mem.store.reading() as conn:
                got = corrections.nearest(mem.retriever, conn, vec, scope, k, floor)
                index = mem.retriever.index
                want = _whole_scan(index, vec, scope, k, floor)
                scores = _scores(index, vec)
                mask = index.mask(ScanFilter(scopes=(scope,), statuses=corrections.LIVE,
                                             types=corrections.COMPARED_TYPES))
            rows = [index.row_of[m] for m in got]
            assert all(mask[r] for r in rows)
            # The same scores, best first: the same rows up to equal scores at the k-th place (the
            # hash embedder makes ties, broken either way).
            assert [float(scores[r]) for r in rows] == want
    finally:
        mem.close()


def test_the_filter_checked_on_a_few_rows_agrees_with_the_whole_mask():
    mem = Recallite.open(None, embedder="hash")
    try:
        mem.config.corrections = False
        mem.remember_many([{"content": f"fact {i} about thing {i % 7}", "type": "episode" if i % 5 == 0 else "fact",
                            "scope": "x" if i % 3 else "y"} for i in range(200)])
        mem.forget("mem_4")
        with mem.store.reading() as conn:
            mem.retriever.refresh_inline(conn)
        index = mem.retriever.index
        for flt in (ScanFilter(scopes=("x",), statuses=corrections.LIVE, types=corrections.COMPARED_TYPES),
                    ScanFilter(scopes=("nowhere",)), ScanFilter(types=("episode",))):
            rows = np.arange(index.n)[::3]
            assert (index.passes(rows, flt) == index.mask(flt)[rows]).all()
    finally:
        mem.close()


def _large_store(rows: int, seed: int = 5):
    """A store big enough for nearest() to take the sign-agreement shortlist, with its texts."""
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(400)]
    texts = [" ".join(rng.choice(words) for _ in range(8)) for _ in range(rows)]
    mem = Recallite.open(None, embedder="hash")
    mem.config.corrections = False
    mem.remember_many([{"content": t, "scope": "a" if i % 4 else "b"} for i, t in enumerate(texts)])
    return mem, texts, rng


def _restatements(texts, rng, count):
    """Edits of stored texts (one word changed): what a correction looks like to the index."""
    out = []
    for t in rng.sample(texts, count):
        ws = t.split()
        ws[rng.randrange(len(ws))] = "changed"
        out.append(" ".join(ws))
    return out


def test_in_a_large_store_the_shortlist_finds_the_candidates_of_the_whole_scan():
    mem, texts, rng = _large_store(3000)
    try:
        for text in _restatements(texts, rng, 60):
            vec = mem.core.embed([text])[0]
            with mem.store.reading() as conn:
                got = corrections.nearest(mem.retriever, conn, vec, "a", 5, 0.3)
                index = mem.retriever.index
                assert index.near_rows(vec, vector_index.NEAR_SHORTLIST) is not None  # the shortlist path ran
                want = _whole_scan(index, vec, "a", 5, 0.3)
                scores = _scores(index, vec)
            assert [float(scores[index.row_of[m]]) for m in got] == want
    finally:
        mem.close()


def test_a_shortlist_too_short_misses_candidates_so_the_check_above_can_fail(monkeypatch):
    monkeypatch.setattr(vector_index, "NEAR_SHORTLIST", 20)
    mem, texts, rng = _large_store(3000)
    try:
        missed = 0
        for text in _restatements(texts, rng, 60):
            vec = mem.core.embed([text])[0]
            with mem.store.reading() as conn:
                got = corrections.nearest(mem.retriever, conn, vec, "a", 5, 0.3)
                index = mem.retriever.index
                want = _whole_scan(index, vec, "a", 5, 0.3)
                scores = _scores(index, vec)
            missed += [float(scores[index.row_of[m]]) for m in got] != want
        assert missed
    finally:
        mem.close()


def _dense(texts):
    """A dense embedder (every dimension signed, as real embedders' are; the hash embedder's
    sparse vectors tie too many rows for a shortlist): a seeded normal vector per text."""
    import zlib

    return np.array([np.random.default_rng(zlib.crc32(t.encode())).standard_normal(64) for t in texts],
                    dtype=np.float32)


def test_sign_codes_follow_writes_deletes_and_compaction():
    """The shortlist of an index kept up to date write by write equals a freshly built index's."""
    rng = random.Random(5)
    texts = [" ".join(f"w{rng.randrange(400)}" for _ in range(8)) for _ in range(2600)]
    mem = Recallite.open(None, embedder=_dense, dims=64)
    mem.config.corrections = False
    mem.remember_many([{"content": t} for t in texts])
    try:
        probe = mem.core.embed(_restatements(texts, rng, 5))
        with mem.store.reading() as conn:
            mem.retriever.refresh_inline(conn)
        kept = mem.retriever.index
        kept.near_rows(probe[0], 100)  # codes built now, then maintained
        mem.revise("mem_7", "an entirely new statement about the release train")
        mem.remember_many([{"content": t + " again"} for t in texts[:300]])
        for mid in range(10, 1300):
            mem.forget(f"mem_{mid}")  # past the compaction threshold
        with mem.store.reading() as conn:
            mem.retriever.refresh_inline(conn)
            fresh = vector_index.VectorIndex(kept.dimensions)
            fresh.refresh(conn)
        assert kept.dead == 0 and kept.n == fresh.n  # compacted
        for vec in probe:
            a, b = kept.near_rows(vec, 100), fresh.near_rows(vec, 100)
            assert a is not None and b is not None
            assert sorted(kept.ids[a].tolist()) == sorted(fresh.ids[b].tolist())
    finally:
        mem.close()


def test_the_bit_count_without_numpy_2_counts_the_same(monkeypatch):
    words = np.random.default_rng(1).integers(0, 2**63, size=500, dtype=np.uint64)
    fast = vector_index._popcount(words)
    monkeypatch.setattr(vector_index, "_bitwise_count", None)
    assert (vector_index._popcount(words) == fast).all()
    assert fast.sum() == sum(bin(int(w)).count("1") for w in words)
