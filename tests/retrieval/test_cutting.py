"""The relative cut of a context (retrieval/cutting.py), on hand-made ranked lists: what the score
leg and the match leg each let in. A ranked tuple is (final, key, id, fused, factors)."""

import math

from recallite_core.learning.learner import Assessment
from recallite_core.retrieval.cutting import MATCH_FLOOR, MATCH_RATIO, match_ratio, relative_cut, unexplored

GAIN = 7.0


def judged(mean: float, bonus: float = 0.0, outcomes: int = 4, failures: float = 0.0) -> Assessment:
    u = min(1.0, mean + bonus)
    return Assessment(outcomes=outcomes, mean=mean, bonus=bonus, usefulness=u, failures=failures,
                      factor=math.exp(GAIN * (u - 0.5)))


def ranked(*rows: tuple[int, float, Assessment | None]) -> tuple[list, dict]:
    """(id, fused, assessment) -> the ranked tuples and the learned map, final = fused x factor."""
    scored = [(fused * (a.factor if a else 1.0), f"mem_{i}", i, fused, ()) for i, fused, a in rows]
    scored.sort(key=lambda t: -t[0])
    return scored, {i: a for i, _, a in rows if a is not None}


def kept(scored: list, learned: dict, ratio: float, gain: float | None = GAIN) -> list[int]:
    return [t[2] for t in relative_cut(scored, None, ratio, learned, gain)]


def test_exploration_bonus_does_not_bring_an_untried_newcomer_into_a_context():
    """Agent day: a note that arrived that morning ("the office party is on Friday") topped a
    coupon task's context on its newcomer bonus alone; its match was a tenth of the coupon rule's."""
    rule = judged(0.6)
    party = Assessment(outcomes=0, mean=0.5, bonus=0.38, usefulness=0.88, factor=math.exp(GAIN * 0.38))
    scored, learned = ranked((1, 20.0, rule), (2, 2.2, party))
    assert scored[1][2] == 2 and scored[1][0] >= 0.15 * scored[0][0]  # the bonus lifts it near the top
    assert kept(scored, learned, 0.15) == [1]
    assert kept(scored, learned, 0.15, gain=None) == [1, 2]  # without the gain the bonus stays in


def test_a_rule_proven_on_another_task_is_not_served_where_it_barely_matches():
    """A constraint with many successes on a sibling task scored high on its record alone; its
    match to this task was far below the task's own memory."""
    own = judged(0.7)
    sibling = judged(0.85, outcomes=9)
    fused_sibling = 0.9 * MATCH_FLOOR * 20.0
    scored, learned = ranked((1, 20.0, own), (2, fused_sibling, sibling))
    assert scored[1][0] >= 0.15 * scored[0][0]
    assert kept(scored, learned, 0.15) == [1]


def test_a_judged_memory_stays_on_its_match_only_when_it_is_close_to_the_best():
    """The match leg overrides what feedback says; for a memory with outcomes it asks for a match
    within MATCH_RATIO of the best, for one nobody judged the tuned ratio as before."""
    top = judged(0.9)
    so_so = judged(0.45, failures=0.3)  # not judged poor, but ranked far below by feedback
    scored, learned = ranked((1, 20.0, top), (2, 0.3 * 20.0, so_so), (3, 0.3 * 20.0, None))
    assert kept(scored, learned, 0.15) == [1, 3]
    scored, learned = ranked((1, 20.0, top), (2, (MATCH_RATIO + 0.05) * 20.0, so_so))
    assert kept(scored, learned, 0.15) == [1, 2]


def test_match_ratio_never_goes_below_the_tuned_ratio():
    assert match_ratio(None, 0.2) == 0.2
    assert match_ratio(Assessment(outcomes=0), 0.2) == 0.2
    assert match_ratio(judged(0.5), 0.2) == MATCH_RATIO
    assert match_ratio(judged(0.5), 0.6) == 0.6


def test_unexplored_takes_out_the_bonus_only():
    assert unexplored(None, GAIN) == 1.0
    assert unexplored(judged(0.7), GAIN) == 1.0
    a = judged(0.7, bonus=0.1)
    assert math.isclose(a.factor * unexplored(a, GAIN), math.exp(GAIN * 0.2))
    capped = judged(0.95, bonus=0.2)  # usefulness is capped at 1: only the part below the cap counts
    assert math.isclose(capped.factor * unexplored(capped, GAIN), math.exp(GAIN * 0.45))


def test_the_first_hit_is_never_cut():
    newcomer = Assessment(outcomes=0, mean=0.5, bonus=0.4, usefulness=0.9, factor=math.exp(GAIN * 0.4))
    scored, learned = ranked((1, 1.0, newcomer), (2, 3.0, judged(0.5)))
    assert scored[0][2] == 1
    assert kept(scored, learned, 0.15)[0] == 1


def test_a_newcomer_first_on_its_bonus_alone_is_not_kept_as_the_first_hit():
    """Agent day: a note about the office party, added that morning, ranked first for "make a 20%
    coupon for the spring campaign" on its newcomer bonus; the first hit is never cut, so it stayed."""
    party = Assessment(outcomes=0, mean=0.5, bonus=0.45, usefulness=0.95, factor=math.exp(GAIN * 0.45))
    scored, learned = ranked((1, 2.0, party), (2, 20.0, judged(0.5)))
    assert scored[0][2] == 1
    assert kept(scored, learned, 0.15) == [2]


def test_a_correction_put_first_stays_first():
    """corrections_first may put a correction above a better-scoring memory: it is never cut."""
    fresh = Assessment(outcomes=0, mean=0.5, bonus=0.3, usefulness=0.8, factor=math.exp(GAIN * 0.3))
    scored, learned = ranked((1, 1.0, fresh), (2, 20.0, judged(0.7)))
    scored = [scored[1], scored[0]]  # the correction first although it scores lower
    assert kept(scored, learned, 0.15)[0] == 1


def test_the_tuner_judged_its_arms_on_scores_with_the_exploration_bonus():
    """The context tuner replays a stricter ratio on the logged scores of what a context served; the
    cut compares scores without the exploration bonus, and keeps a close match on the match leg. With
    final scores in the log, a stricter arm 'kept' a barely tried memory that its cut would drop, so
    it looked safer than it was, and 'dropped' a close match that its cut keeps. The log now holds
    each memory's keep ratio: an arm serves exactly what its cut would."""
    from recallite_core.learning.tuner import Arm
    from recallite_core.retrieval.cutting import keep_ratios

    top = judged(0.7)
    fresh = judged(0.5, bonus=0.25, outcomes=1)
    steady = judged(0.6)
    close = Assessment(outcomes=0, mean=0.5, usefulness=0.5)  # nobody judged it: kept on its match
    scored, learned = ranked((1, 20.0, top), (2, 0.3 * 20.0, fresh), (3, 0.35 * 20.0, steady), (4, 0.25 * 20.0, close))
    served = relative_cut(scored, None, 0.05, learned, GAIN)
    assert [t[2] for t in served] == [1, 2, 3, 4]
    keep = keep_ratios(scored, None, learned, GAIN)
    logged = [(t[2], rank, keep[t[2]], 10) for rank, t in enumerate(served, start=1)]
    for ratio in (0.05, 0.15, 0.2, 0.3, 0.5):
        assert {i for i, *_ in Arm(10, ratio).serves(logged)} == set(kept(scored, learned, ratio)), ratio
    assert kept(scored, learned, 0.15) == [1, 3, 4]
    with_scores = [(t[2], rank, t[0], 10) for rank, t in enumerate(served, start=1)]
    assert {i for i, *_ in Arm(10, 0.15).serves(with_scores)} == {1, 2, 3}


def test_a_rule_the_agent_used_on_this_very_task_was_cut_because_another_memory_matched_its_words():
    """Agent day: "create promo code SPRING20" needs the coupon procedure and the sign-off rule. The
    agent named both in two successes; the next context at the tuner's 0.15 served the procedure
    alone: its words matched the request and the rule's did not (match .14 of the best, final .14).
    A memory acted on with success on this very task stays while its match is above MATCH_FLOOR."""
    proc = judged(0.8)
    rule = judged(0.78)
    scored, learned = ranked((1, 20.0, proc), (2, 0.14 * 20.0, rule))
    assert kept(scored, learned, 0.15) == [1]  # before: only the score or match leg could keep it
    rule.helped_here = True
    assert kept(scored, learned, 0.15) == [1, 2]
    scored, learned = ranked((1, 20.0, proc), (2, 0.9 * MATCH_FLOOR * 20.0, rule))
    assert kept(scored, learned, 0.15) == [1]  # its record does not carry a memory that barely matches


def test_a_memory_this_job_had_passed_over_was_kept_on_its_match_alone():
    """Agent day fresh-dev, named tasks: a project fact served under 'model rollback' and left unused
    there (one unused mark, below POOR_EVIDENCE) was kept in that job's next contexts by its match
    (the best in the pool), beside the procedure that worked. Under this very task (outcome at
    cosine 1), never worked there, went unused: its match no longer keeps it; its score still may."""
    worked = Assessment(outcomes=2, mean=0.8, usefulness=0.8, successes=1.9, nearest=1.0,
                        factor=math.exp(GAIN * 0.3))
    passed = Assessment(outcomes=1, mean=0.42, usefulness=0.42, successes=0.0, failures=0.29, nearest=1.0,
                        factor=math.exp(GAIN * -0.08))
    scored, learned = ranked((1, 1.0, worked), (2, 0.9, passed))
    assert kept(scored, learned, 0.1) == [1]
    elsewhere = Assessment(outcomes=1, mean=0.42, usefulness=0.42, successes=0.0, failures=0.29, nearest=0.8,
                           factor=math.exp(GAIN * -0.08))  # passed over on another task: its match still counts
    scored, learned = ranked((1, 1.0, worked), (2, 0.9, elsewhere))
    assert kept(scored, learned, 0.1) == [1, 2]
    unjudged = Assessment(outcomes=0, mean=0.5, usefulness=0.5)
    scored, learned = ranked((1, 1.0, worked), (2, 0.9, unjudged))
    assert kept(scored, learned, 0.1) == [1, 2]
