"""A memory the request matches best keeps its match when its record is only of being passed over
on other requests (cutting.best_match_passed_by)."""

from recallite_core import Recallite
from recallite_core.learning.learner import Assessment
from recallite_core.retrieval.cutting import keep_ratios

FACTORS = (1.0, 1.0, 1.0, 1.0, 1.0)
PASSED_BY = Assessment(outcomes=3, failures=0.8, mean=0.33, nearest=0.88, factor=0.3)


def test_a_lesson_passed_over_on_deploys_was_cut_from_the_deploy_that_needed_it():
    """A new user's trial of the demo: after three deploys that used the tagging procedure, the
    migrations lesson (shown each time, not needed) was cut from "Deploy ...; this release includes a
    database migration", whose words match it best."""
    m = Recallite.open(None, embedder="hash")
    m.remember("To deploy the web app to production, run `fab deploy:prod` from the ops laptop.", type="procedure",
               title="Deploy the web app with fab")
    tag = m.remember("To deploy the web app to production, push a tag like v1.4.2; the release workflow builds and "
                     "ships it.", type="procedure", title="Deploy the web app by tagging a release")
    m.remember("Production deploys are frozen from Friday 12:00 to Monday 08:00.", type="constraint",
               title="Never deploy on Fridays")
    lesson = m.remember("A deploy failed because the database migration had not run; run `make migrate` against "
                        "production first.", type="lesson", title="Migrations before deploy")
    m.remember("Answer in short sentences.", type="preference", title="Concise answers")
    shown = 0
    for ask in ("How do I deploy the web app to production?", "Ship the new web app release to prod",
                "Deploy the latest web app build to production"):
        r = m.recall(ask, limit=5)
        shown += lesson.id in r.ids
        m.feedback(r.retrieval_id, "success", used_memory_ids=[tag.id])
    assert shown >= 2  # passed over: two 'unused' marks or more
    asked = m.build_context("Deploy the web app to production; this release includes a database migration")
    assert asked.memory_ids[0] == tag.id and lesson.id in asked.memory_ids
    # the same request word for word as the ones it was passed over on: still left out
    assert lesson.id not in m.build_context("How do I deploy the web app to production?").memory_ids


def test_only_the_best_match_in_the_requests_words_that_never_misled_is_spared():
    leader = (20.0, "mem_1", 1, 4.0, FACTORS)
    best = (1.2, "mem_2", 2, 5.0, FACTORS)  # the best match, far below the leader's score
    judged = {2: PASSED_BY}
    assert keep_ratios([leader, best], None, judged, worded=frozenset({2}))[2] == 1.0
    assert keep_ratios([leader, best], None, judged, worded=frozenset())[2] < 0.1  # not in the request's words
    assert keep_ratios([leader, best], None, judged)[2] == 1.0  # no keyword channel: the match alone
    misled = {2: Assessment(outcomes=3, failures=0.8, mean=0.33, nearest=0.88, factor=0.3, acted_failures=True)}
    assert keep_ratios([leader, best], None, misled, worded=frozenset({2}))[2] < 0.1
    second = (1.2, "mem_2", 2, 3.9, FACTORS)  # not the best match
    assert keep_ratios([leader, second], None, judged, worded=frozenset({2}))[2] < 0.1
    # a known job's own cut decides there, as before
    assert keep_ratios([leader, best], None, judged, named=frozenset({1, 2}), known=frozenset({1, 2}),
                       worded=frozenset({2}))[2] < 0.1
