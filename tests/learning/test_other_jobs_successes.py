"""What worked for another job is weak evidence for this one (learning/learner.py, OutcomeModel.elsewhere):
once a task name has a record, a memory with no outcome under it is seen with its successes under
other names at LearningConfig.other_names_weight of their credit; its failures and 'unused' marks
there, and its unnamed outcomes, count in full."""

from recallite_core import Recallite
from recallite_core.text.task_names import task_key
from tests.learning.test_task_names import CFG

AGAIN = "the api gateway serves stale responses again"


def _two_jobs():
    m = Recallite.open(None, embedder="hash", config=CFG)
    restart = m.remember("Restart the api gateway pods with kubectl rollout restart.", type="procedure")
    scale = m.remember("Scale the api gateway deployment to zero and back up.", type="procedure")
    flush = m.remember("Flush the api gateway response cache with the admin endpoint.", type="procedure")
    for q in ("restart the api gateway pods", "api gateway pods restart now"):
        r = m.recall(q, limit=3, task="restart gateway")
        m.feedback(r.retrieval_id, "success", used_memory_ids=[restart.id])
    r = m.recall("scale the api gateway deployment, it serves stale responses", limit=3, task="stale gateway")
    assert r.memories[0].memory.id == scale.id
    m.feedback(r.retrieval_id, "failure", used_memory_ids=[scale.id])
    return m, restart, scale, flush


def test_another_jobs_proven_memory_led_a_named_job_it_had_never_worked_for():
    """The issue's loop, the outsider's catalog, tasks named, one attempt: 66 of the family-rounds a
    perfect task-local learner won and we lost were led by another family's working memory, lifted
    by its successes under that family's name (seeds 1-6)."""
    m, restart, scale, flush = _two_jobs()
    ids = [h.memory.id for h in m.recall(AGAIN, limit=3, task="stale gateway").memories]
    assert ids == [flush.id, restart.id, scale.id]  # the untried procedure first, then the other job's


def test_another_jobs_successes_still_count_without_a_name_or_under_a_new_one():
    m, restart, _, _ = _two_jobs()
    assert m.recall(AGAIN, limit=3).memories[0].memory.id == restart.id
    assert m.recall(AGAIN, limit=3, task="gateway caching").memories[0].memory.id == restart.id  # no record yet
    assert m.recall("restart the api gateway pods", limit=3, task="restart gateway").memories[0].memory.id == restart.id


def test_another_jobs_successes_weigh_less_for_a_named_job_with_a_record():
    m, restart, scale, _ = _two_jobs()
    q, mine = m.core.retriever.query_vector(AGAIN), int(restart.id[4:])
    with m.core.store.reading() as s:
        named = m.core.learning.outcomes.assess(s, q, {mine: 0.5, int(scale.id[4:]): 0.5}, True,
                                                task_key=task_key("stale gateway"))[mine]
        alone = m.core.learning.outcomes.assess(s, q, {mine: 0.5}, True, task_key=task_key("stale gateway"))[mine]
    assert named.outcomes == alone.outcomes == 2
    assert 0.5 < named.mean < alone.mean  # the name's record is not among the candidates alone: as before
    assert named.successes < alone.successes


def test_other_names_weight_is_a_share_of_credit():
    import pytest

    from recallite_core.learning.learner import LearningConfig

    with pytest.raises(ValueError, match="other_names_weight"):
        LearningConfig(other_names_weight=1.5)
