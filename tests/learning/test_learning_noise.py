"""Noisy feedback (the learning benchmark's noise scenario, 15% flipped labels): one or two wrong
labels must not undo what many honest ones taught (docs/learning.md, Session 7)."""

from __future__ import annotations

import numpy as np
import pytest

from recallite_core.learning.learner import LearningConfig, OutcomeModel


def _around(q: np.ndarray, cosines: list[float], seed: int = 5) -> np.ndarray:
    """Unit vectors at the given cosines from ``q``, each off in its own random direction."""
    rng = np.random.default_rng(seed)
    out = []
    for c in cosines:
        r = rng.normal(size=q.size)
        r -= (r @ q) * q
        r /= np.linalg.norm(r)
        out.append(c * q + np.sqrt(max(0.0, 1 - c * c)) * r)
    return np.asarray(out)


def _model(cfg: LearningConfig, vectors: np.ndarray, targets: list[float], confirmed: list[bool] | None = None):
    """A fitted model from rows given newest first (as the store returns them)."""
    om = OutcomeModel(vectors.shape[1], cfg, 7.0)
    conf = confirmed or [False] * len(targets)
    rows = [(t, 1.0, 1000.0 - i, int(c), 0, np.asarray(v, dtype="<f4").tobytes())
            for i, (t, v, c) in enumerate(zip(targets, vectors, conf))]
    return om, om._fit(rows, 1000.0)


@pytest.fixture
def query():
    q = np.random.default_rng(11).normal(size=64)
    return q / np.linalg.norm(q)


def test_two_flipped_failures_in_a_row_do_not_flag_a_proven_memory_as_stopped_working(query):
    """Four successes, then two failures on the same task that nothing confirms: with 15% of labels
    flipped that happens to some family in most runs, and reading it as a change of the world threw
    the four successes away (the memory fell out of the top 3 for rounds). Three such failures, or
    one that a newer memory's success on the same retrieval confirms, still are a change."""
    cfg = LearningConfig()
    vecs = _around(query, [0.97] * 7)
    om, two = _model(cfg, vecs[:6], [0.0, 0.0, 1.0, 1.0, 1.0, 1.0])
    assert two.run < cfg.change_after
    assert om.assess_model(two, query.astype(np.float32), 0.5, False).mean > 0.5  # still more right than wrong
    _, three = _model(cfg, vecs, [0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0])
    assert three.run >= cfg.change_after
    _, replaced = _model(cfg, vecs[:5], [0.0, 1.0, 1.0, 1.0, 1.0], confirmed=[True, False, False, False, False])
    assert replaced.run >= cfg.change_after
    assert om.assess_model(replaced, query.astype(np.float32), 0.5, False).mean < 0.5


def test_one_rival_success_on_this_query_does_not_erase_many_successes_nearby(query):
    """Success locality compared a memory's single closest success with the best candidate's: one
    (flipped) success of a distractor on this very query discounted the working memory's five
    successes on the task's other phrasings to a seventh. Its success evidence now counts as a
    whole (a soft maximum over its successes), while one success a little farther still yields
    to one right here."""
    cfg = LearningConfig()
    q = query.astype(np.float32)
    om, many = _model(cfg, _around(query, [0.9] * 5), [1.0] * 5)
    _, here = _model(cfg, _around(query, [1.0]), [1.0])
    _, one = _model(cfg, _around(query, [0.9], seed=6), [1.0])
    closest = om.closest_success([many, here, one], q)
    a_many = om.assess_model(many, q, 0.5, False, closest=closest)
    a_here = om.assess_model(here, q, 0.5, False, closest=closest)
    a_one = om.assess_model(one, q, 0.5, False, closest=closest)
    assert a_here.locality == pytest.approx(1.0)
    assert a_many.locality > 0.4 and a_many.mean > a_here.mean
    assert a_one.locality < 0.2 and a_one.mean < a_here.mean
