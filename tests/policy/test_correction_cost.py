"""What a write pays for detection (issue 20, "remember p50 within 1.2x"): each text parsed once and
kept within a bound, and candidates picked from the nearest rows without the whole filter mask,
the same rows as the whole filtered scan. Behaviour only: no timings here."""

import random

import numpy as np
import pytest

from recallite_core import Recallite
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
