"""Regression tests for the learning loop in a real agent's day (issue #13): each is named after
what broke. Hash embedder, in-memory stores."""

from __future__ import annotations

import pytest

from recallite_core import Recallite, RecalliteConfig

SHRINK = [
    "Shrink the docker container image of the api: build it with a multi-stage Dockerfile and a slim runtime base image.",
    "Shrink the docker container image of the api: add a .dockerignore so the build context leaves out the test data.",
    "Shrink the docker container image of the api: squash the image layers with the experimental squash flag on build.",
]
OTHERS = [
    "Rotate the api database password: generate it in the vault, update the secret, restart the api pods.",
    "The api pods log to stdout in JSON; ship the logs to the central cluster with the collector daemonset.",
]
PROCEDURES = [
    "Run the database migrations with alembic upgrade head from the release job, never at container start.",
    "Deploy the branch to staging with helm upgrade --install and the staging values file.",
    "Lint the code with ruff check . and format it with ruff format before every commit.",
    "Rotate the database password in the vault, then restart the api pods so they read the new secret.",
    "Fix flaky integration tests by marking them with pytest flaky reruns and filing a ticket.",
    "Build the frontend with npm ci and npm run build; the bundle goes to the cdn bucket.",
]
COFFEE = "The office coffee machine is on the third floor next to the kitchen."


@pytest.fixture
def mem():
    m = Recallite.open(None, embedder="hash")
    yield m
    m.close()


def test_learning_transfers_across_phrasings_of_one_task(mem):
    """Two phrasings of one task that share few words (hash cosine 0.17): what failed and what worked
    on the first carries over to the second, because both retrieve the same memories."""
    ids = [mem.remember(t, type="procedure").id for t in SHRINK + OTHERS]
    first = "the api docker image is too big, shrink it"
    second = "reduce the size of the container we ship for the api"
    assert mem.recall(second, limit=3).memories[0].memory.id != ids[1]  # not the working one before feedback
    r = mem.recall(first, limit=3)
    mem.feedback(r.retrieval_id, "failure", used_memory_ids=[ids[0]])
    mem.feedback(r.retrieval_id, "success", used_memory_ids=[ids[1]])
    top = mem.recall(second, limit=3).memories
    assert top[0].memory.id == ids[1]
    assert ids[0] not in [h.memory.id for h in top[:2]]


def test_evidence_stays_local_to_its_task(mem):
    """A memory that worked for one task gains nothing on an unrelated task's ranking."""
    ids = [mem.remember(t, type="procedure").id for t in SHRINK + OTHERS]
    r = mem.recall("rotate the api database password", limit=3)
    assert r.memories[0].memory.id == ids[3]
    for _ in range(3):
        mem.feedback(r.retrieval_id, "success", used_memory_ids=[ids[3]])
    hits = mem.recall("the api docker image is too big, shrink it", limit=3).memories
    assert ids[3] not in [h.memory.id for h in hits]


def test_exploration_never_lifts_an_unrelated_newcomer_into_a_context(mem):
    """Six procedures, one success, then a memory about the office coffee machine: exploration
    favoured it as an untried newcomer and put it into every context."""
    ids = [mem.remember(t, type="procedure").id for t in PROCEDURES]
    ctx = mem.build_context("deploy the branch to staging", limit=3)
    mem.feedback(ctx.retrieval_id, "success", used_memory_ids=[ids[1]])
    coffee = mem.remember(COFFEE, type="fact").id
    for task in ("how do I run the database migrations", "deploy the branch to staging", "lint the code"):
        served = mem.build_context(task, limit=3).memory_ids
        assert served and coffee not in served, task
    # it is still found when it is what the task is about
    assert mem.build_context("where is the coffee machine", limit=3).memory_ids[0] == coffee


def test_recall_does_not_fill_the_limit_with_unrelated_memories(mem):
    for t in PROCEDURES:
        mem.remember(t, type="procedure")
    assert mem.recall("what is the capital of mongolia", limit=5).memories == []
    assert mem.recall('"foo NEAR(', limit=5).memories == []
    hits = mem.recall("run the database migrations", limit=5).memories
    assert hits and "migrations" in hits[0].memory.content


def test_relevance_floor_can_be_turned_off():
    m = Recallite.open(None, embedder="hash", config=RecalliteConfig(relevance_floor=-1.0))
    try:
        for t in PROCEDURES:
            m.remember(t, type="procedure")
        assert len(m.recall("what is the capital of mongolia", limit=5).memories) == 5
    finally:
        m.close()


def test_context_tuning_waits_for_evidence(mem):
    """After one success and one failure on other tasks the scope's context went from 10
    memories to 3 and dropped the lesson the next task needed."""
    for i in range(12):
        mem.remember(f"Deploy note {i}: run the deploy with step {i} of the checklist.", type="procedure", scope="p")
    for outcome in ("success", "failure"):
        ctx = mem.build_context("deploy with the checklist", scope="p")
        mem.feedback(ctx.retrieval_id, outcome, used_memory_ids=[ctx.memory_ids[0]])
    assert len(mem.build_context("deploy with the checklist", scope="p").memory_ids) == 10
    tuning = mem.stats().context_tuning["p"]
    assert tuning["limit"] == 10 and "until" in tuning["why"]


def test_a_memory_served_but_not_needed_sinks_for_that_task_only(mem):
    ids = [mem.remember(t, type="procedure").id for t in SHRINK + OTHERS]
    task = "the api docker image is too big, shrink it"
    ctx = mem.build_context(task, limit=3)
    assert set(ctx.memory_ids) >= {ids[0], ids[1]}
    mem.feedback(ctx.retrieval_id, "success", used_memory_ids=[ids[1]])
    hits = {h.memory.id: h for h in mem.recall(task, limit=3).memories}
    assert hits[ids[0]].breakdown.learning.failures > 0 and hits[ids[0]].breakdown.learning.posterior_mean < 0.5
    assert mem.get(ids[0]).usefulness == 0.5 and mem.get(ids[0]).failure_count == 0  # a hint, not a failure
    other = mem.recall("rotate the api database password", limit=1).memories[0]
    assert other.memory.id == ids[3] and other.breakdown.learning is None or other.breakdown.learning.outcomes == 0


def test_a_memory_only_passed_over_was_labelled_as_one_that_misled(mem):
    """Served where the agent did the job with another memory, it went unused: a hint that it is
    not what this task needs, not a failure it caused. Its reason says so; one the agent acted on
    and failed with still reads 'misled'."""
    ids = [mem.remember(t, type="procedure").id for t in SHRINK + OTHERS]
    task = "the api docker image is too big, shrink it"
    for _ in range(2):
        ctx = mem.build_context(task, limit=3)
        assert {ids[0], ids[1]} <= set(ctx.memory_ids)
        mem.feedback(ctx.retrieval_id, "success", used_memory_ids=[ids[1]])
    hits = {h.memory.id: h for h in mem.recall(task, limit=3).memories}
    assert hits[ids[0]].breakdown.learning.posterior_mean <= 0.4
    assert "passed-over-on-similar-tasks" in hits[ids[0]].reasons
    assert "misled-on-similar-tasks" not in hits[ids[0]].reasons
    for _ in range(2):
        r = mem.recall(task, limit=3)
        mem.feedback(r.retrieval_id, "failure", used_memory_ids=[ids[0]])
    hits = {h.memory.id: h for h in mem.recall(task, limit=3).memories}
    assert "misled-on-similar-tasks" in hits[ids[0]].reasons


def test_learning_never_cuts_an_unjudged_memory_from_a_context(mem):
    """A relative floor cuts what feedback judged poor; a memory nobody judged yet stays while it is
    as close to the query as the floor asks, however far the proven one has risen."""
    proven = mem.remember(SHRINK[0], type="procedure").id
    task = "the api docker image is too big, shrink it"
    for _ in range(4):
        r = mem.recall(task, limit=1)
        mem.feedback(r.retrieval_id, "success", used_memory_ids=[proven])
    fresh = mem.remember(SHRINK[2], type="procedure").id
    # without exploration the proven one scores 50 times the fresh one; before learning, 4 times
    ctx = mem.build_context(task, min_score_ratio=0.2, explore=False)
    assert ctx.memory_ids == [proven, fresh]


def test_a_task_that_succeeded_keeps_succeeding_after_its_memory_fails_elsewhere(mem):
    """In a clean world a family that had succeeded lost again: its memory, served to a neighbouring
    task that needed something else, failed there, and those failures sank it for its own task."""
    works = mem.remember("Restart the api pods with kubectl rollout restart deployment/api after changing the api "
                         "configmap.", type="procedure").id
    mem.remember("Edit the api configmap and wait; the api pods reload the configmap by themselves within a minute.",
                 type="procedure")
    mem.remember("Roll back a broken api release with helm rollback api to the previous revision.", type="procedure")
    mem.remember("Scale the api pods with kubectl scale deployment/api --replicas=6 before a launch.", type="procedure")
    for q in ("the api pods still use the old configmap values", "api configmap change not picked up by the pods",
              "pods ignore the new api configmap"):
        r = mem.recall(q, limit=3)
        mem.feedback(r.retrieval_id, "success", used_memory_ids=[works])
    for q in ("restart the api pods after the broken release", "the api pods must go back to the previous release"):
        r = mem.recall(q, limit=3)
        mem.feedback(r.retrieval_id, "failure", used_memory_ids=[works])
    top = mem.recall("the api pods did not pick up the configmap edit", limit=3).memories[0]
    assert top.memory.id == works and top.breakdown.learning.failure_run == 0


def test_query_vectors_stored_before_task_vectors_are_rebuilt_once_on_open(tmp_path):
    """A store judged before task vectors holds bare query vectors: evidence placed there would
    never meet the task vectors of new queries. Opening it rebuilds them, once."""
    import sqlite3

    import numpy as np

    from recallite_core.storage.codec import decode_vector, encode_vector

    db = str(tmp_path / "old.db")
    with Recallite.open(db, embedder="hash") as m:
        ids = [m.remember(t, type="procedure").id for t in SHRINK]
        r = m.recall("the api docker image is too big, shrink it", limit=3)
        m.feedback(r.retrieval_id, "success", used_memory_ids=[ids[1]])
        rid = int(r.retrieval_id[4:])
        task = decode_vector(m.store.conn.execute(
            "SELECT vector FROM retrieval_vectors WHERE retrieval_id = ?", (rid,)).fetchone()[0], 384)
        bare = m.embedder.embed(["the api docker image is too big, shrink it"])[0]
    assert float(np.dot(task, bare)) < 0.99  # a task vector is not the query vector
    with sqlite3.connect(db) as conn:  # the store as an older release left it
        conn.execute("UPDATE retrieval_vectors SET vector = ?", (encode_vector(bare, 384),))
        conn.execute("DELETE FROM meta WHERE key = 'retrieval_vectors'")
    with Recallite.open(db, embedder="hash") as m:
        got = decode_vector(m.store.conn.execute(
            "SELECT vector FROM retrieval_vectors WHERE retrieval_id = ?", (rid,)).fetchone()[0], 384)
        assert float(np.dot(got, bare)) < 0.99 and m.store.get_meta("retrieval_vectors") == m.learning.VECTORS


def test_the_tuner_read_logged_scores_with_the_exploration_bonus_the_cut_leaves_out(mem):
    """A context logs, for each memory it served, the largest relative floor at which its cut keeps
    it: the tuner replays a stricter floor on the log and must see what that floor's cut would serve
    (the logged final scores carried the exploration bonus, which the cut leaves out)."""
    from recallite_core.learning.tuner import Arm

    ids = [mem.remember(t, type="procedure").id for t in PROCEDURES]
    task = "deploy the branch to staging"
    ctx = mem.build_context(task)
    mem.feedback(ctx.retrieval_id, "success", used_memory_ids=[ids[1]])
    fresh = mem.remember("Deploy to staging: the staging values file lives in deploy/values-staging.yaml.",
                         type="fact").id
    ctx = mem.build_context(task)
    hits = {h.memory.id: h for h in mem.recall(task, limit=10, explore=True).memories}
    assert fresh in ctx.memory_ids and hits[fresh].breakdown.learning.exploration_bonus > 0
    with mem.store.reading() as s:
        items = s.retrievals.served_items(int(ctx.retrieval_id[4:]))
    assert max(score for _, _, score, _ in items) == 1.0
    for ratio in (0.05, 0.15, 0.3, 0.6):
        cut = mem.recall(task, limit=10, explore=True, min_score_ratio=ratio)
        assert {f"mem_{i}" for i, *_ in Arm(10, ratio).serves(items)} == {h.memory.id for h in cut.memories}, ratio
    # a plain recall, which cuts nothing, logs the scores it returned
    r = mem.recall(task, limit=10, explore=True)
    plain = dict(mem.store.conn.execute(
        "SELECT memory_id, score FROM retrieval_items WHERE retrieval_id = ?", (int(r.retrieval_id[4:]),)).fetchall())
    assert plain == {int(h.memory.id[4:]): h.score for h in r.memories}


def test_a_cut_context_logged_keep_ratios_in_place_of_its_scores(mem):
    """The keep ratios the tuner replays on have a column of their own: the logged score stays the
    score the agent was shown (the browser, export and the task vectors rebuilt by reindex read it)."""
    ids = [mem.remember(t, type="procedure").id for t in PROCEDURES]
    task = "deploy the branch to staging"
    mem.feedback(mem.build_context(task).retrieval_id, "success", used_memory_ids=[ids[1]])
    ctx = mem.build_context(task)
    rid = int(ctx.retrieval_id[4:])
    rows = mem.store.conn.execute(
        "SELECT memory_id, score, keep FROM retrieval_items WHERE retrieval_id = ? ORDER BY rank", (rid,)).fetchall()
    assert rows and all(keep is not None and 0.0 < keep <= 1.0 for _, _, keep in rows)
    assert rows[0][2] == 1.0  # the first hit is never cut
    assert any(score != keep for _, score, keep in rows)
    scores = [score for _, score, _ in rows]
    assert scores == sorted(scores, reverse=True)  # ranked by score, as served


def test_the_tuner_replayed_a_compact_context_at_the_markdown_limit(mem):
    """A compact context serves twice its arm's limit (20 for the default 10). The tuner replayed it
    at 10, so a success on the memory the agent used at rank 11-20 scored 0 for the very arm that
    served it, and tuning drifted toward smaller contexts on evidence of the opposite."""
    for i in range(24):
        mem.remember(f"Deploy note {i}: run the deploy with step {i} of the checklist.", type="procedure", scope="p")
    ctx = mem.build_context("deploy with the checklist", scope="p", format="compact", max_tokens=4000)
    assert len(ctx.memory_ids) > 12
    used = ctx.memory_ids[12]  # served at rank 13: beyond the arm's own limit, within the compact one
    mem.feedback(ctx.retrieval_id, "success", used_memory_ids=[used])
    default = mem.stats().context_tuning["p"]["arms"][0]  # the default arm, which served it
    assert default["pulls"] == 1 and default["mean_reward"] > 0.5  # credited: it served what was used


def test_successes_that_named_no_memory_voted_for_the_strictest_context(mem):
    """Feedback without used_memory_ids says nothing about what a stricter setting would have cut,
    but the tuner counted each such success as kept by every arm: stricter arms cost fewer tokens,
    so they won, and the next task's needed memory ranked second was cut."""
    for i in range(12):
        mem.remember(f"Deploy note {i}: run the deploy with step {i} of the checklist.", type="procedure", scope="p")
    for _ in range(30):
        ctx = mem.build_context("deploy with the checklist", scope="p")
        mem.feedback(ctx.retrieval_id, "success")
    assert "until" in mem.stats().context_tuning.get("p", {"why": "until"})["why"]
    assert len(mem.build_context("deploy with the checklist", scope="p").memory_ids) == 10


def test_a_memory_the_agent_opened_counts_as_named_for_the_tuner(mem):
    ids = [mem.remember(f"Deploy note {i}: run the deploy with step {i} of the checklist.", type="procedure",
                        scope="p").id for i in range(12)]
    ctx = mem.build_context("deploy with the checklist", scope="p")
    mem.expand(ctx.retrieval_id, [ctx.memory_ids[0]])  # the agent opens the first one
    mem.feedback(ctx.retrieval_id, "success")
    default = mem.stats().context_tuning["p"]["arms"][0]
    assert default["pulls"] == 1 and default["mean_reward"] > 0.5
    assert ids


def test_a_context_without_feedback_served_memories_a_twentieth_as_relevant_as_its_best(mem):
    """Until feedback tunes it, every context used the loosest floor (0.05 of the best hit): on the
    agent day a context without feedback served about seven memories, four of them other tasks'.
    The default floor is 0.1: the frontend build (0.054 of the best) stays out of a migrations task."""
    for t in PROCEDURES + SHRINK + OTHERS + [COFFEE]:
        mem.remember(t, type="procedure")
    task = "run the database migrations"
    served = mem.build_context(task).memory_ids
    loosest = mem.recall(task, limit=10, explore=True, min_score_ratio=0.05).memories
    assert served == [h.memory.id for h in loosest if h.score >= 0.1 * loosest[0].score]
    left_out = [h.memory.content for h in loosest if h.memory.id not in served]
    assert left_out and all("frontend" in c for c in left_out)


def test_a_rule_used_with_success_on_this_task_was_cut_from_its_next_context(mem):
    """Agent day: the coupon procedure matched the request's words, the sign-off rule did not; after
    two successes that named both, a stricter floor served the procedure alone."""
    proc = mem.remember("Create a promo code: make the coupon in Stripe with the month count, add a promotion "
                        "code, then run manage.py sync_coupons.", type="procedure").id
    mem.remember("To create a promo code, add a row in the Django admin under Billing > Discounts with the code "
                 "and the percentage.", type="procedure")
    rule = mem.remember("Coupons above 30 % off or longer than 6 months need sign-off from the head of sales.",
                        type="constraint").id
    task = "create promo code SPRING20 for a 20% coupon"
    for _ in range(2):
        c = mem.build_context(task, min_score_ratio=0.1)
        assert rule in c.memory_ids
        mem.feedback(c.retrieval_id, "success", used_memory_ids=[proc, rule])
    assert mem.build_context(task, min_score_ratio=0.3).memory_ids == [proc, rule]
