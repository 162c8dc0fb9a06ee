"""One place per text in a ranked list (retrieval/distinct.py)."""

import pytest

from recallite_core import Recallite
from recallite_core.retrieval.distinct import distinct_texts


class _Mem:
    def __init__(self, text: str):
        self.content_hash = " ".join(text.split()).lower()


def _loader(texts: dict[int, str], calls: list):
    def load(ids):
        calls.append(list(ids))
        return {i: _Mem(texts[i]) for i in ids if i in texts}
    return load


def ranked(*ids: int) -> list[tuple]:
    return [(10.0 - n, f"mem_{i}", i, 1.0, ()) for n, i in enumerate(ids)]


def test_a_repeated_text_keeps_its_best_copy_and_the_next_memory_takes_the_freed_place():
    texts = {1: "Morning! A few things today.", 2: "morning!  a few things TODAY.", 3: "I sold the Mazda.",
             4: "Morning! A few things today.", 5: "We moved to Nantes."}
    calls: list = []
    kept, mems = distinct_texts(ranked(1, 2, 3, 4, 5), 3, _loader(texts, calls))
    assert [t[2] for t in kept] == [1, 3, 5]
    assert set(mems) == {1, 3, 5}
    assert calls == [[1, 2, 3], [4], [5]]  # loads only what is needed to fill the freed places


def test_a_list_without_repeats_is_loaded_once_and_cut_to_the_limit():
    calls: list = []
    kept, _ = distinct_texts(ranked(1, 2, 3, 4), 2, _loader({i: f"text {i}" for i in range(1, 5)}, calls))
    assert [t[2] for t in kept] == [1, 2] and calls == [[1, 2]]


def test_a_memory_gone_since_ranking_is_skipped_and_its_place_filled():
    kept, _ = distinct_texts(ranked(1, 2, 3), 2, _loader({1: "a", 3: "c"}, []))
    assert [t[2] for t in kept] == [1, 3]


@pytest.fixture
def chat(backend_url):
    m = Recallite.open(backend_url, embedder="hash")
    turns = []
    for s in ("s1", "s2", "s3"):
        turns += [{"session": s, "role": "Amara", "content": "Morning! Got a few random things today.", "scope": "u"},
                  {"session": s, "role": "assistant", "content": f"Sure, go ahead ({s}).", "scope": "u"}]
    turns.append({"session": "s4", "role": "Amara", "content": "Saturday was all baking sourdough, things I love.",
                  "scope": "u"})
    m.record_turns(turns)
    yield m
    m.close()


def test_the_same_greeting_opening_every_session_took_three_places_of_a_recall(chat):
    """A user's "Morning! Got a few random things today." opened three sessions; a question that
    matched it got the same sentence three times in its top five (eval updates, a dev question)."""
    hits = chat.recall("a few random things today", limit=5, scope="u").memories
    texts = [h.memory.content for h in hits]
    assert texts.count("Morning! Got a few random things today.") == 1
    assert len(texts) == len(set(texts))
    assert any("sourdough" in t for t in texts)


def test_one_memory_kept_in_two_scopes_is_shown_once_by_a_recall_of_both(backend_url):
    m = Recallite.open(backend_url, embedder="hash")
    try:
        m.remember("Deploys freeze on Fridays after 3pm.", scope="alice")
        m.remember("Deploys freeze on Fridays after 3pm.", scope="team-web")
        m.remember("Deploys go through the release pipeline.", scope="alice")
        hits = m.recall("deploys", limit=5, scope=["alice", "team-web"]).memories
        texts = [h.memory.content for h in hits]
        assert texts.count("Deploys freeze on Fridays after 3pm.") == 1
        assert "Deploys go through the release pipeline." in texts
    finally:
        m.close()
