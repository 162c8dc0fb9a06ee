"""A known job's cut of what its record rates below even (retrieval/cutting.py, below_even_unguessed),
read on each memory's record without the failures a report that named nothing credited by rank."""

import numpy as np

from recallite_core import Recallite
from recallite_core.learning.learner import Assessment, LearningConfig, OutcomeModel
from recallite_core.retrieval.cutting import KNOWN_JOB_EVIDENCE, KNOWN_JOB_SCORE, keep_ratios, known_job
from tests.learning.test_task_names import CFG

FACTORS = (1.0, 1.0, 1.0, 1.0, 1.0)


def _row(target, credit, at, vec, guessed):
    """An outcome row as Outcomes.history gives it, without the memory id."""
    return (target, credit, at, 0, 0, np.asarray(vec, dtype="<f4").tobytes(), None, None, guessed)


def test_a_guessed_failure_is_left_out_of_the_unguessed_record():
    q = np.zeros(8, dtype=np.float32)
    q[0] = 1.0
    om = OutcomeModel(8, LearningConfig(), 7.0)
    guessed = om._fit([_row(0.0, 0.5, 1000.0, q, 1)], 1000.0)
    a = om.assess_model(guessed, q, 0.5, False, unguessed=True)
    assert a.mean < 0.5 and a.failures > 0  # the whole record blames it
    assert a.unguessed_mean == 0.5 and a.unguessed_failures == 0.0  # without the guess: nothing
    named = om.assess_model(om._fit([_row(0.0, 1.0, 1000.0, q, 0)], 1000.0), q, 0.5, False, unguessed=True)
    assert named.unguessed_mean == named.mean < 0.5 and named.unguessed_failures == named.failures > 0
    success = om.assess_model(om._fit([_row(1.0, 1.0, 1000.0, q, 1)], 1000.0), q, 0.5, False, unguessed=True)
    assert success.unguessed_mean == success.mean > 0.5  # only failures are guesses worth leaving out
    assert om.assess_model(guessed, q, 0.5, False).unguessed_mean is None  # not asked for: not computed


def test_a_needed_memory_blamed_by_a_guess_was_cut_from_a_known_jobs_context():
    """Agent day, outsider's set, tasks named (a scratch variant that cut on the whole record): a
    failure that named nothing blamed the job's second procedure by rank, and a known job then cut it
    at a posterior mean below even. Only what the record says without guesses cuts."""
    used, other = (10.0, "mem_1", 1, 8.0, FACTORS), (10.0 * KNOWN_JOB_SCORE * 2, "mem_2", 2, 8.0, FACTORS)
    blamed = Assessment(outcomes=1, nearest=0.9, mean=0.4, failures=0.5, unguessed_mean=0.5, unguessed_failures=0.0)
    assert keep_ratios([used, other], None, {2: blamed}, vouched={1}, named={1})[2] > 0.0
    passed = Assessment(outcomes=1, nearest=0.9, mean=0.45, failures=KNOWN_JOB_EVIDENCE,
                        unguessed_mean=0.45, unguessed_failures=KNOWN_JOB_EVIDENCE)
    assert keep_ratios([used, other], None, {2: passed}, vouched={1}, named={1})[2] == 0.0
    assert keep_ratios([used, other], None, {2: passed})[2] > 0.0  # an unknown job keeps it
    thin = Assessment(outcomes=1, nearest=0.9, mean=0.45, failures=0.2, unguessed_mean=0.45, unguessed_failures=0.2)
    assert keep_ratios([used, other], None, {2: thin}, vouched={1}, named={1})[2] > 0.0  # too little evidence



def _deploy_worked_unnamed():
    """A job that worked once under its name, its report naming no memory; another task's procedure
    that worked there, and a note that task passed over."""
    m = Recallite.open(None, embedder="hash", config=CFG)
    proc = m.remember("Deploy the api service with the release script: make release.", type="procedure")
    note = m.remember("The api service database password lives in vault.", type="procedure")
    rotate = m.remember("Rotate the api service database password with the vault script.", type="procedure")
    for q in ("rotate the api database password", "rotate api service db password"):
        r = m.build_context(q, task="rotate password", min_score_ratio=0.05, limit=10)
        m.feedback(r.retrieval_id, "success", used_memory_ids=[rotate.id])
    r = m.build_context("deploy the api service with make release", task="deploy api", min_score_ratio=0.05, limit=1)
    assert r.memory_ids == [proc.id]
    m.feedback(r.retrieval_id, "success")  # names no memory: credit shared by rank over what was served
    return m, proc, note, rotate


def test_a_job_whose_success_named_no_memory_served_other_tasks_memories():
    """Agent day, outsider's set, tasks named: a job whose reports named no memory was never a known
    job, so its contexts kept other tasks' procedures and notes they had passed over on a small score
    (18 of the 19 judged memories served outside what its last success was credited to)."""
    m, proc, note, rotate = _deploy_worked_unnamed()
    assert m.build_context("deploy the api service", task="deploy api", min_score_ratio=0.05, limit=10).memory_ids == [proc.id]
    got = m.build_context("api service deploy with the script", task="deploy api", min_score_ratio=0.05, limit=10)
    assert rotate.id not in got.memory_ids and got.memory_ids == [proc.id]  # another task's procedure: cut
    # without the name, or under another, nothing is known: the passed-over note keeps its match
    assert m.build_context("deploy the api service", min_score_ratio=0.05, limit=10).memory_ids == [proc.id, note.id]
    assert note.id in m.build_context("deploy the api service", task="other job", min_score_ratio=0.05, limit=10).memory_ids


def test_a_known_job_on_a_guess_spares_what_its_success_was_credited_to():
    used, other = (10.0, "mem_1", 1, 8.0, FACTORS), (10.0 * KNOWN_JOB_SCORE / 2, "mem_2", 2, 8.0, FACTORS)
    judged = {2: Assessment(outcomes=1, nearest=0.9, mean=0.5)}
    assert known_job(frozenset({1}), frozenset({1, 2})) == {1}  # what the agent named comes first
    assert known_job(frozenset(), frozenset({1, 2})) == {1, 2}
    assert keep_ratios([used, other], None, judged, vouched={1, 2}, known=known_job(frozenset(), frozenset({1, 2})))[2] > 0.0
    assert keep_ratios([used, other], None, judged, vouched={1}, known=known_job(frozenset(), frozenset({1})))[2] == 0.0
    assert keep_ratios([used, other], None, judged, vouched={1})[2] > 0.0  # nothing named, nothing known: kept


def test_a_wordy_request_kept_an_untried_memo_beside_a_known_jobs_procedure():
    """Agent day, outsider's set, tasks named: "could you take the networking change ... and get it
    into the real account?" matched a memo of the data team's Airflow move (never judged) on flat
    vector similarities alone, and the known job kept it on its match beside its proven procedure."""
    used, memo = (10.0, "mem_1", 1, 6.0, FACTORS), (10.0 * KNOWN_JOB_SCORE / 2, "mem_2", 2, 8.0, FACTORS)
    assert keep_ratios([used, memo], None, {}, vouched={1}, named={1})[2] > 0.0  # no keyword channel: its match
    assert keep_ratios([used, memo], None, {}, vouched={1}, named={1}, worded={1})[2] == 0.0
    assert keep_ratios([used, memo], None, {}, vouched={1}, named={1}, worded={1, 2})[2] > 0.0  # a new rule in its words
    assert keep_ratios([used, memo], None, {}, worded={1})[2] > 0.0  # an unknown job: its match keeps it


def test_worded_is_what_the_request_words_match_above_average():
    from recallite_core.retrieval.candidates import Fused

    fused = Fused(ids=np.array([1, 2, 3]), score=np.zeros(3), kz=np.array([1.2, 0.0, -0.5]), vz=np.zeros(3))
    assert fused.worded([1, 2, 3]) == {1}
    assert Fused(ids=np.array([1]), score=np.zeros(1), vz=np.zeros(1)).worded([1]) is None  # vectors only
