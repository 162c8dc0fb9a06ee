"""A known job's cut of what its record rates below even (retrieval/cutting.py, below_even_unguessed),
read on each memory's record without the failures a report that named nothing credited by rank."""

import numpy as np

from recallite_core.learning.learner import Assessment, LearningConfig, OutcomeModel
from recallite_core.retrieval.cutting import KNOWN_JOB_EVIDENCE, KNOWN_JOB_SCORE, keep_ratios

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

