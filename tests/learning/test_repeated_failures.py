"""A memory that failed on this very task, again and again, is not served first there again."""

from __future__ import annotations

import numpy as np
import pytest

from recallite_core import Recallite
from recallite_core.learning.fitting import failed_here, last_here, learned_factor
from recallite_core.learning.learner import LearningConfig, OutcomeModel


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v)


@pytest.fixture
def tasks():
    """Task vectors of one task A (five phrasings) and of a request q that reads like A (cosine
    about .8 to A's phrasings) but needs another memory."""
    rng = np.random.default_rng(11)
    d = 64
    a = _unit(rng.normal(size=d))
    phrasings = np.array([_unit(a + 0.4 * _unit(rng.normal(size=d))) for _ in range(5)])
    q = _unit(a + 0.75 * _unit(rng.normal(size=d)))
    return phrasings, q


def _model(cfg: LearningConfig, rows: list[tuple[float, float, np.ndarray]]):
    """Rows (target, credit, task vector), newest first, as the store returns them."""
    om = OutcomeModel(rows[0][2].size, cfg, 7.0)
    fitted = om._fit([(t, c, 1000.0 - i, 0, 0, np.asarray(v, dtype="<f4").tobytes())
                      for i, (t, c, v) in enumerate(rows)], 1000.0)
    return om, fitted


def test_a_memory_proven_on_a_similar_task_kept_leading_where_it_had_failed_twice(tasks):
    """Five successes on task A, then two failures on request q, which reads like A (the issue's
    loop, interference: family B asks in words that pull A's working memory). The smooth fit still
    judged it useful at q (posterior above .3, outcome factor about .4), so its far higher match kept
    it first there, round after round. Now it is capped at q and keeps its place on A."""
    phrasings, q = tasks
    assert 0.7 < float(np.mean(phrasings @ q)) < 0.9
    rows = [(0.0, 1.0, q), (0.0, 1.0, q)] + [(1.0, 1.0, p) for p in phrasings]
    om, m = _model(LearningConfig(), rows)
    at_q = om.assess_model(m, q.astype(np.float32), 0.5, False)
    assert at_q.failed_here
    assert at_q.usefulness <= 0.05
    assert at_q.factor == pytest.approx(learned_factor(0.05, 7.0))
    # exploring (recallite_context) does not bring it back first either
    assert om.assess_model(m, q.astype(np.float32), 0.5, True).usefulness <= 0.05
    on_a = om.assess_model(m, phrasings[0].astype(np.float32), 0.5, False)
    assert not on_a.failed_here and on_a.mean > 0.6 and on_a.factor > 1.5
    off = OutcomeModel(q.size, LearningConfig(repeat_failures=0), 7.0)
    assert not off.assess_model(off._fit([(t, c, 1000.0 - i, 0, 0, np.asarray(v, dtype="<f4").tobytes())
                                          for i, (t, c, v) in enumerate(rows)], 1000.0),
                                q.astype(np.float32), 0.5, False).failed_here


def test_one_failure_or_a_success_as_near_is_not_a_repeated_mistake():
    sims_one = np.array([1.0, 0.8, 0.8])
    # one failure here: may be a flipped label
    assert not failed_here(sims_one, np.array([0.0, 1.0, 1.0]), np.ones(3, bool), 0.9, 2)
    # two failures here, but it also worked here, nearer than the failures
    assert not failed_here(np.array([0.97, 0.95, 1.0]), np.array([0.0, 0.0, 1.0]), np.ones(3, bool), 0.9, 2)
    # two failures nearer than its one success here
    assert failed_here(np.array([1.0, 0.99, 0.92]), np.array([0.0, 0.0, 1.0]), np.ones(3, bool), 0.9, 2)
    # failures it was only shown for ('unused' marks, rank-decayed credit) are not its mistakes
    assert not failed_here(np.array([1.0, 1.0]), np.array([0.0, 0.0]), np.array([False, True]), 0.9, 2)
    # failures on another task (below same_task) say nothing about this one
    assert not failed_here(np.array([0.85, 0.8]), np.array([0.0, 0.0]), np.ones(2, bool), 0.9, 2)
    assert not failed_here(np.array([1.0, 1.0]), np.array([0.0, 0.0]), np.ones(2, bool), 0.9, 0)


def test_repeat_failure_settings_are_checked_where_they_are_built():
    with pytest.raises(ValueError, match="same_task"):
        LearningConfig(same_task=1.5)
    with pytest.raises(ValueError, match="repeat_failures"):
        LearningConfig(repeat_failures=-1)
    with pytest.raises(ValueError, match="failed_here_usefulness"):
        LearningConfig(failed_here_usefulness=0.9)


def test_the_same_request_got_the_memory_that_had_failed_it_twice_first_a_third_time():
    """Through the engine: a procedure proven on its own task three times leads a request that
    repeats most of its words but needs another memory. After two failures named for it on that
    very request, the third asking got it first again (and a fourth failure was needed); now another
    memory leads, the hit says why, and the procedure still leads on its own task."""
    mem = Recallite.open(None, embedder="hash")
    try:
        deploy = mem.remember("Deploy the API with the blue-green script: scripts/deploy.sh --blue-green", type="procedure")
        mem.remember("Background jobs ship with the rolling script: scripts/roll.sh jobs", type="procedure")
        own_task = "how do I deploy the API"
        for _ in range(3):
            got = mem.recall(own_task, limit=3)
            assert got.ids[0] == deploy.id
            mem.feedback(got.retrieval_id, "success", used_memory_ids=[deploy.id])
        request = "deploy the API blue-green script for background jobs"
        for _ in range(2):
            got = mem.recall(request, limit=3)
            assert got.ids[0] == deploy.id
            mem.feedback(got.retrieval_id, "failure", used_memory_ids=[deploy.id])
        again = mem.recall(request, limit=3)
        assert again.ids[0] != deploy.id
        hit = next(h for h in again.memories if h.memory.id == deploy.id)
        assert "failed-repeatedly-on-this-task" in hit.reasons
        assert hit.breakdown.learning is not None and hit.breakdown.learning.failed_here
        assert mem.recall(own_task, limit=3).ids[0] == deploy.id
    finally:
        mem.close()


def test_last_here_reads_the_nearest_outcome_the_agent_acted_on_for_this_very_task():
    full = np.ones(3, bool)
    assert last_here(np.array([0.99, 0.5, 0.2]), np.array([1.0, 0.0, 0.0]), full, 0.9) is True
    assert last_here(np.array([0.95, 0.99, 0.2]), np.array([1.0, 0.0, 0.0]), full, 0.9) is False  # failed nearer
    assert last_here(np.array([0.8, 0.7, 0.2]), np.array([1.0, 1.0, 1.0]), full, 0.9) is None  # another task
    assert last_here(np.array([0.99, 0.5]), np.array([1.0, 0.0]), np.array([False, True]), 0.9) is None  # not acted on
