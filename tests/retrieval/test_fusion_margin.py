"""Hybrid ranking keeps what each channel alone gets right at the top (issue 14).

The embedder here is a stand-in with known geometry: every text gets a fixed pseudo-random
unit vector, except the texts a test pins to a direction. So "the vector channel alone
answers this" and "the vector channel knows nothing here" are facts of the test, not hopes
about a model.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from recallite_core import Recallite, RecalliteConfig
from recallite_core.retrieval.fusion import keyword_weight, margin_ramp, vector_margin

DIMS = 64


def random_unit(text: str) -> np.ndarray:
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    v = np.random.default_rng(seed).standard_normal(DIMS)
    return v / np.linalg.norm(v)


class PinnedEmbedder:
    """Random directions, except ``pinned`` texts, which get the given vectors."""

    dimensions = DIMS
    name = "pinned-test"

    def __init__(self, pinned: dict[str, np.ndarray] | None = None):
        self.pinned = pinned or {}

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.stack([self.pinned.get(t, random_unit(t)) for t in texts]).astype(np.float32)


FILLER = [f"Note {i}: the {w} review for sprint {i} is filed under {w}-{i}." for i, w in
          enumerate(["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"] * 6)]


def open_store(embedder: PinnedEmbedder, texts: list[str], **config) -> tuple[Recallite, dict[str, str]]:
    mem = Recallite.open(None, embedder=embedder, config=RecalliteConfig(**config))
    stored = mem.remember_many([{"content": t, "type": "fact", "scope": "s", "source": {"type": "user"}} for t in texts])
    return mem, {m.id: t for m, t in zip(stored, texts)}


TARGET = "Our neighbour Marta feeds Whiskers and empties the litter box whenever we are away on holiday."
NEAR_MISS = "When we travel by car the cat gets carsick, so the vet gave us a mild sedative."
QUESTION = "Who looks after the cat when we travel?"


def pinned_paraphrase() -> PinnedEmbedder:
    """The question and the target point the same way; the near miss is only loosely related."""
    q = random_unit("question direction")
    other = random_unit("near-miss direction")
    other = other - (other @ q) * q
    other /= np.linalg.norm(other)
    near = 0.45 * q + np.sqrt(1 - 0.45**2) * other
    return PinnedEmbedder({QUESTION: q, TARGET: 0.95 * q + 0.05 * random_unit("t"), NEAR_MISS: near})


def test_a_near_miss_repeating_the_question_words_does_not_beat_a_clear_semantic_answer():
    mem, text = open_store(pinned_paraphrase(), [TARGET, NEAR_MISS, *FILLER])
    hits = mem.recall(QUESTION, limit=5, scope="s").memories
    assert text[hits[0].memory.id] == TARGET
    assert hits[0].breakdown.keyword_alpha == 0.0  # the vector match stood out: words did not count
    # The near miss is still found, below it (the keyword channel is not thrown away).
    assert NEAR_MISS in [text[h.memory.id] for h in hits]


def test_without_the_margin_fade_the_near_miss_won():
    """What broke before: the shared words alone put the near miss first."""
    mem, text = open_store(pinned_paraphrase(), [TARGET, NEAR_MISS, *FILLER], vector_margin_ramp=None,
                           vector_margin_ramp_unmatched=None)
    hits = mem.recall(QUESTION, limit=5, scope="s").memories
    assert text[hits[0].memory.id] == NEAR_MISS


def test_exact_rare_terms_still_win_when_the_vectors_know_nothing():
    rare = "Error XJ-4471 from the licence daemon means its port 27000 is blocked by the firewall."
    mem, text = open_store(PinnedEmbedder(), [rare, *FILLER])  # every vector is random
    hits = mem.recall("what does XJ-4471 mean", limit=3, scope="s").memories
    assert text[hits[0].memory.id] == rare
    assert hits[0].breakdown.keyword_alpha > 0


def test_a_few_memories_are_never_said_to_stand_out():
    # With fewer vector hits than vector_margin_rank there is no margin, so no fade.
    mem, text = open_store(pinned_paraphrase(), [TARGET, NEAR_MISS, *FILLER[:5]])
    hits = mem.recall(QUESTION, limit=3, scope="s").memories
    assert hits[0].breakdown.keyword_alpha > 0


# -- the pure functions ------------------------------------------------------------------------
def test_vector_margin_is_in_units_of_the_scope_spread():
    cos = [0.9, 0.5, *([0.1] * 18)]
    assert vector_margin(cos, (0.0, 0.2), rank=20) == pytest.approx(4.0)
    assert vector_margin(cos, (0.0, 0.01), rank=20) == pytest.approx(0.8 / 0.05)  # the spread's floor
    assert vector_margin(cos[:19], (0.0, 0.2), rank=20) == 0.0
    assert vector_margin(list(reversed(cos)), (0.0, 0.2), rank=20) == pytest.approx(4.0)  # order does not matter


def test_keyword_weight_fades_across_the_margin_ramp():
    full = keyword_weight(1.0, 0.45, 0.1, 0.4)
    assert keyword_weight(1.0, 0.45, 0.1, 0.4, margin=2.0, margin_ramp=(3.0, 3.5)) == full
    assert keyword_weight(1.0, 0.45, 0.1, 0.4, margin=3.25, margin_ramp=(3.0, 3.5)) == pytest.approx(full / 2)
    assert keyword_weight(1.0, 0.45, 0.1, 0.4, margin=9.0, margin_ramp=(3.0, 3.5)) == 0.0
    assert keyword_weight(1.0, 0.45, 0.1, 0.4, margin=9.0, margin_ramp=None) == full


def test_the_fade_starts_earlier_when_the_best_vector_match_holds_no_query_word():
    usual, unmatched = (3.0, 3.5), (2.0, 3.0)
    vector = [(1, 0.5), (2, 0.9), (3, 0.1)]  # 2 is the best match, in any order
    assert margin_ramp(vector, {1: 4.0}, usual, unmatched) == unmatched
    assert margin_ramp(vector, {2: 4.0}, usual, unmatched) == usual
    assert margin_ramp(vector, {1: 4.0}, usual, None) == usual
    assert margin_ramp([], {}, usual, unmatched) == usual


@pytest.mark.parametrize("bad", [{"vector_margin_ramp": (3.5, 3.0)}, {"vector_margin_ramp": (-1.0, 2.0)},
                                 {"vector_margin_ramp_unmatched": (2.0, 2.0)}, {"vector_margin_rank": 1}])
def test_config_refuses_a_margin_setting_that_cannot_work(bad):
    with pytest.raises(ValueError):
        RecalliteConfig(**bad)


# -- a context's relative cut reads the fusion before the fade -------------------------------------
OFF_TASK = [
    "We travel light: one cabin bag each, never a checked suitcase.",
    "The cat's vaccination booklet is in the blue folder on the shelf.",
    "When the office moves we travel to the new site by the 8:10 train.",
]


def served(mem: Recallite, ratio: float) -> set[str]:
    return set(mem.recall(QUESTION, limit=10, scope="s", min_score_ratio=ratio).ids)


@pytest.mark.parametrize("ratio", [0.05, 0.15, 0.3])
def test_the_context_cut_does_not_widen_when_the_fade_drops_the_keyword_channel(ratio):
    """What broke: with the keyword weight faded out the scores a context's relative cut reads were
    flatter, so the same ratio kept more off-task memories than without the fade (agent day)."""
    texts = [TARGET, NEAR_MISS, *OFF_TASK, *FILLER]
    faded, _ = open_store(pinned_paraphrase(), texts)
    plain, _ = open_store(pinned_paraphrase(), texts, vector_margin_ramp=None, vector_margin_ramp_unmatched=None)
    assert faded.recall(QUESTION, limit=1, scope="s").memories[0].breakdown.keyword_alpha == 0.0  # the fade is on
    assert plain.recall(QUESTION, limit=1, scope="s").memories[0].breakdown.keyword_alpha > 0
    # The same memories pass the cut, and a context never cuts its own first hit (the ids differ
    # per store: compare by position in the store).
    ids_f = [m.id for m in faded.list(limit=100, scope="s")]
    ids_p = [m.id for m in plain.list(limit=100, scope="s")]
    first = faded.recall(QUESTION, limit=1, scope="s").ids[0]
    kept_f = {ids_f.index(i) for i in served(faded, ratio)}
    kept_p = {ids_p.index(i) for i in served(plain, ratio)}
    assert kept_f == kept_p | {ids_f.index(first)}
