"""A known job serves what was written after it worked only near what did the job (retrieval/cutting.py,
NEAR_KNOWN; learner.OutcomeModel.arrivals)."""

import time

import numpy as np
import pytest

from recallite_core import Recallite, RecalliteConfig
from recallite_core.learning.learner import Assessment
from recallite_core.retrieval.cutting import NEAR_KNOWN, keep_ratios, kinship
from recallite_core.text.task_names import task_key
from tests.learning.test_task_names import CFG

FACTORS = (1.0, 1.0, 1.0, 1.0, 1.0)
JOB = "feature backfill"
ASK = "backfill the dwell time feature for last month"


def _after():
    """created_at and outcome times are wall-clock seconds: let the clock move on a coarse timer."""
    time.sleep(0.02)


def _backfill_worked(before=()):
    """A job that worked under its name, the agent naming the procedure it used, among other jobs'
    procedures (and ``before``: (text, type) written before it worked, kept out of that context)."""
    m = Recallite.open(None, embedder="hash", config=CFG)
    proc = m.remember("Backfill the dwell time feature in the feature store: run feast materialize over the "
                      "date range from the backfill runner.", type="procedure")
    for other in ("Deploy the api service with the release script: make release.",
                  "Rotate the orders database password through vault, then restart the pods.",
                  "Silence a noisy alert with an alertmanager silence that expires in two weeks.",
                  "Train the ranker on the gpu box with the ray submit script."):
        m.remember(other, type="procedure")
    old = [m.remember(text, type=kind) for text, kind in before]
    r = m.build_context(ASK, task=JOB, min_score_ratio=0.1, limit=1)
    assert r.memory_ids == [proc.id]
    m.feedback(r.retrieval_id, "success", used_memory_ids=[proc.id], task=JOB)
    _after()
    return m, proc, old


def test_a_known_job_served_a_memo_that_shared_only_a_name_with_the_request():
    """Agent day, outsider's set, tasks named: "Kofi is vegetarian", written after the backfill job had
    worked, sat beside its procedure because the request named Kofi (a newcomer in the request's words)."""
    m, proc, _ = _backfill_worked()
    memo = m.remember("Kofi is vegetarian: order the veggie option for team lunches.", type="observation")
    ask = "Kofi needs last month populated"
    assert memo.id in m.build_context(ask, min_score_ratio=0.1, limit=10).memory_ids  # no job named: it matches
    assert m.build_context(ask, task=JOB, min_score_ratio=0.1, limit=10).memory_ids == [proc.id]
    assert memo.id in m.build_context(ask, task="lunch order", min_score_ratio=0.1, limit=10).memory_ids


def test_a_known_job_keeps_a_newcomer_that_reads_like_what_did_it():
    """A replacement procedure lies near the one it replaces: it comes in to be tried."""
    m, proc, _ = _backfill_worked()
    new = m.remember("Backfill the dwell time feature in the feature store: feast materialize is gone, run the "
                     "backfill runner's incremental job over the date range.", type="procedure")
    got = m.build_context("backfill the dwell time feature with the incremental job", task=JOB, min_score_ratio=0.1, limit=10)
    assert set(got.memory_ids) == {proc.id, new.id}


def test_a_known_job_cut_what_it_needed_and_had_never_been_shown():
    """Held out, a first version asked it of every memory nobody judged: a note the job needed, there
    before the job worked but never shown to it, lay far from its procedure and was never served.
    Only what was written after the job worked is asked; rules, whenever written, never are."""
    m, proc, (note,) = _backfill_worked(before=[("Kofi keeps last month's raw clicks in the scratch bucket.", "fact")])
    rule = m.remember("Kofi signs off every backfill longer than a week.", type="constraint")
    got = m.build_context("dwell time backfill for Kofi: last month, signed off", task=JOB, min_score_ratio=0.1, limit=10)
    assert got.memory_ids[0] == proc.id and {note.id, rule.id} <= set(got.memory_ids)


def _mid(mem):
    return int(mem.id[4:])


def test_arrivals_are_what_was_written_after_the_job_first_worked():
    m, proc, (old,) = _backfill_worked(before=[("The scratch bucket empties every thirty days.", "fact")])
    between = m.remember("The office is closed on Friday.", type="fact")
    _after()
    r = m.build_context(ASK, task=JOB, min_score_ratio=0.1, limit=1)  # the job works again
    m.feedback(r.retrieval_id, "success", used_memory_ids=[proc.id], task=JOB)
    ids = [_mid(old), _mid(between), _mid(proc)]
    learning = m.core.learning.outcomes
    with m.core.store.reading() as session:
        assert learning.arrivals(session, task_key(JOB), {_mid(proc)}, ids) == [_mid(between)]  # since it first worked
        assert learning.arrivals(session, task_key("never worked"), {_mid(proc)}, ids) == []


def test_arrivals_without_a_name_count_successes_on_this_very_task_only():
    m = Recallite.open(None, embedder="hash", config=CFG)
    proc = m.remember("Backfill the dwell time feature with feast materialize.", type="procedure")
    r = m.build_context(ASK, min_score_ratio=0.1, limit=10)
    m.feedback(r.retrieval_id, "success", used_memory_ids=[proc.id])
    _after()
    memo = m.remember("Kofi is vegetarian: order the veggie option for team lunches.", type="observation")
    learning = m.core.learning.outcomes
    here, elsewhere = (m.core.retriever.query_vector(q) for q in (ASK, "rotate the orders database password"))
    with m.core.store.reading() as session:
        assert learning.arrivals(session, None, {_mid(proc)}, [_mid(memo)], here) == [_mid(memo)]
        assert learning.arrivals(session, None, {_mid(proc)}, [_mid(memo)], elsewhere) == []
        assert learning.arrivals(session, None, {_mid(proc)}, [_mid(memo)]) == []  # no task vector: nothing is known


def test_a_keyword_only_store_never_asked_what_came_after_a_task_worked():
    """Without the vector channel a recall has no task vector; the learner judges on the query's own
    vector, and what helped here was found, but its successes were looked for at no vector at all."""
    m = Recallite.open(None, embedder="hash", config=RecalliteConfig(channels="keyword", learning=CFG.learning))
    proc = m.remember("Backfill the dwell time feature in the feature store: run feast materialize over the "
                      "date range from the backfill runner.", type="procedure")
    ask = "Kofi needs the dwell time feature backfilled for last month"
    r = m.build_context(ask, min_score_ratio=0.1, limit=10)
    m.feedback(r.retrieval_id, "success", used_memory_ids=[proc.id])
    _after()
    memo = m.remember("Kofi is vegetarian: order the veggie option for team lunches.", type="observation")
    assert memo.id in m.build_context("Kofi needs last month", min_score_ratio=0.1, limit=10).memory_ids
    got = m.build_context(ask, min_score_ratio=0.1, limit=10)
    assert proc.id in got.memory_ids and memo.id not in got.memory_ids


def test_an_unnamed_task_that_worked_here_served_a_newcomer_about_something_else():
    """Without a name, what helped on this very task (task cosine >= same_task) is what did the job."""
    m = Recallite.open(None, embedder="hash", config=CFG)
    proc = m.remember("Backfill the dwell time feature in the feature store: run feast materialize over the "
                      "date range from the backfill runner.", type="procedure")
    m.remember("Train the ranker on the gpu box with the ray submit script.", type="procedure")
    ask = "Kofi needs the dwell time feature backfilled for last month"
    r = m.build_context(ask, min_score_ratio=0.1, limit=10)
    m.feedback(r.retrieval_id, "success", used_memory_ids=[proc.id])
    _after()
    memo = m.remember("Kofi is vegetarian: order the veggie option for team lunches.", type="observation")
    got = m.build_context(ask, min_score_ratio=0.1, limit=10)
    assert proc.id in got.memory_ids and memo.id not in got.memory_ids
    assert memo.id in m.build_context("Kofi needs last month", min_score_ratio=0.1, limit=10).memory_ids  # another task


def test_kin_cuts_what_nobody_judged_far_from_what_did_the_job():
    best, other = (10.0, "mem_1", 1, 8.0, FACTORS), (9.0, "mem_2", 2, 8.0, FACTORS)
    assert keep_ratios([best, other], None, {}, kin={2: NEAR_KNOWN - 0.01})[2] == 0.0
    assert keep_ratios([best, other], None, {}, kin={2: NEAR_KNOWN})[2] > 0.0
    assert keep_ratios([best, other], None, {}, named={1})[2] > 0.0  # not asked: no cut
    judged = Assessment(outcomes=1, nearest=0.5, mean=0.6, successes=0.5)
    assert keep_ratios([best, other], None, {2: judged}, named={1}, kin={2: 0.0})[2] > 0.0  # judged: its record decides
    assert keep_ratios([other, best], None, {}, named={1}, kin={2: 0.0})[2] == 1.0  # the first hit is never cut


def test_kinship_is_the_cosine_to_the_nearest_known_memory():
    job = [np.array([1.0, 0.0, 0.0], dtype=np.float32), np.array([0.0, 1.0, 0.0], dtype=np.float32)]
    asked = {3: np.array([0.2, 0.5, 0.8426], dtype=np.float32), 4: np.array([0.9, 0.0, 0.4359], dtype=np.float32)}
    assert kinship(job, asked) == {3: pytest.approx(0.5), 4: pytest.approx(0.9)}
    assert kinship([], asked) == {}  # what did the job has no vector: nothing is asked
    assert kinship(job, {}) == {}
