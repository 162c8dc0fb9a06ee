"""Issue #13: feedback lands only on what the agent saw, and only on the retrieval it acted on.

- A context rendered within its token budget logs every ranked hit but shows only some; feedback
  that names no memory credits the shown ones (retrieval_items.served, migration 0012).
- recallite_feedback without retrieval_id uses the one retrieval awaiting feedback in the caller's
  own client session (never another session's), and asks which one when there are several."""

from pathlib import Path

import pytest
from mcp import Client

from recallite_core import Recallite
from recallite_mcp.server import build_server
from recallite_mcp.settings import Settings
from tests.mcp_helpers import call, error_text, http_server

ROOT = Path(__file__).resolve().parents[2]

STEPS = [
    f"Deploy step {i}: run the deploy script with flag --stage{i}, then read the logs of stage {i} for errors "
    f"before moving on; stage {i} needs the {['blue', 'green', 'red', 'amber', 'cyan', 'plum'][i]} cluster."
    for i in range(6)
]


@pytest.fixture
def mem():
    m = Recallite.open(None, embedder="hash")
    yield m
    m.close()


def logged(mem, retrieval_id):
    rid = int(retrieval_id[4:])
    with mem.store.reading():
        return mem.store.conn.execute("SELECT memory_id, served FROM retrieval_items WHERE retrieval_id = ? ORDER BY rank",
                            (rid,)).fetchall()


def usefulness(mem, ids):
    return {m.id: m.usefulness for m in mem.get_many(ids)}


# -- defect 1: feedback credits memories the agent never saw -------------------------------------------------
def test_feedback_credits_memories_the_agent_never_saw(mem):
    ids = [m.id for m in mem.remember_many([{"content": s, "type": "procedure"} for s in STEPS])]
    ctx = mem.build_context("run the deploy script", max_tokens=150, limit=6)
    assert 0 < len(ctx.memory_ids) < 6 and ctx.omitted > 0  # the budget showed only some
    unseen = [i for i in ids if i not in ctx.memory_ids]
    fb = mem.feedback(ctx.retrieval_id, "failure")
    assert [c.id for c in fb.changes] == ctx.memory_ids  # only what was shown, in the order shown
    assert [round(c.weight, 4) for c in fb.changes] == [round(1 / (1 + k), 4) for k in range(len(ctx.memory_ids))]
    assert all(u == 0.5 for u in usefulness(mem, unseen).values())  # the unseen ones are untouched
    assert all(u < 0.5 for u in usefulness(mem, ctx.memory_ids).values())


def test_retrieval_log_marks_what_was_served(mem):
    mem.remember_many([{"content": s, "type": "procedure"} for s in STEPS])
    ctx = mem.build_context("run the deploy script", max_tokens=150, limit=6)
    items = logged(mem, ctx.retrieval_id)
    assert len(items) == 6  # all six ranked hits are on record ...
    assert {f"mem_{m}" for m, served in items if served} == set(ctx.memory_ids)  # ... marked as shown or not


def test_named_memories_are_credited_even_when_not_shown(mem):
    ids = [m.id for m in mem.remember_many([{"content": s, "type": "procedure"} for s in STEPS])]
    other = mem.remember("The staging database is reset every Monday night.", type="fact")
    ctx = mem.build_context("run the deploy script", max_tokens=150, limit=6)
    unseen = [i for i in ids if i not in ctx.memory_ids]
    # The agent names what it used: an unshown hit (it may have fetched it) and a memory that
    # was not in this retrieval at all are both credited, as before.
    fb = mem.feedback(ctx.retrieval_id, "success", used_memory_ids=[unseen[0], other.id])
    assert [(c.id, c.weight) for c in fb.changes] == [(unseen[0], 1.0), (other.id, 1.0)]


def test_plain_recall_serves_every_hit(mem):
    mem.remember_many([{"content": s, "type": "procedure"} for s in STEPS])
    r = mem.recall("run the deploy script", limit=6)
    assert len(r.memories) == 6 and all(served for _, served in logged(mem, r.retrieval_id))
    fb = mem.feedback(r.retrieval_id, "failure")
    assert [c.id for c in fb.changes] == [h.memory.id for h in r.memories]


def test_context_that_fits_serves_everything_and_opened_ones_still_win(mem):
    mem.remember_many([{"content": s, "type": "procedure"} for s in STEPS])
    full = mem.build_context("run the deploy script", max_tokens=4000, limit=6)
    assert len(full.memory_ids) == 6 and all(served for _, served in logged(mem, full.retrieval_id))
    compact = mem.build_context("run the deploy script", max_tokens=4000, limit=6, format="compact")
    mem.expand(compact.retrieval_id, [compact.memory_ids[2]])
    fb = mem.feedback(compact.retrieval_id, "success")
    assert [(c.id, c.weight) for c in fb.changes] == [(compact.memory_ids[2], 1.0)]


def test_stats_still_work_after_budgeted_contexts(mem):
    mem.remember_many([{"content": s, "type": "procedure"} for s in STEPS])
    ctx = mem.build_context("run the deploy script", max_tokens=150, limit=6)
    mem.feedback(ctx.retrieval_id, "failure")
    s = mem.stats()
    assert s.context_calls == 1 and s.feedback["failure"] == 1 and s.tokens_served == ctx.tokens


# -- defect 2: feedback without retrieval_id lands on another session's retrieval ----------------------------


async def _seed(client):
    a = await call(client, "recallite_remember", type="constraint", content="Use pnpm, not npm, in this repository.")
    b = await call(client, "recallite_remember", type="procedure", content="Restart the worker pool after a config change.")
    return a, b


@pytest.mark.anyio
async def test_feedback_without_retrieval_id_lands_on_another_sessions_retrieval_in_process():
    shared = Recallite.open(None, embedder="hash")
    server = build_server(Settings(db=":memory:", embedder="hash", warm_embedder=False), memory=shared)
    try:
        async with Client(server) as one, Client(server) as two:
            a, _b = await _seed(one)
            r1 = await call(one, "recallite_context", query="install node packages")
            r2 = await call(two, "recallite_context", query="restart after config change")
            fb2 = await call(two, "recallite_feedback", outcome="failure")
            assert fb2["retrieval_id"] == r2["retrieval_id"]
            fb1 = await call(one, "recallite_feedback", outcome="success", used_memory_ids=[a["id"]])
            assert fb1["retrieval_id"] == r1["retrieval_id"]
            # nothing awaits any more: say so, and how to name one
            assert "pass retrieval_id" in await error_text(one, "recallite_feedback", outcome="success")
            # several tasks awaiting: the agent is asked which, newest first, with the query
            q1 = await call(one, "recallite_context", query="which package manager: pnpm or npm")
            q2 = await call(one, "recallite_context", query="worker pool restart")
            msg = await error_text(one, "recallite_feedback", outcome="success")
            assert "\n" not in msg and "pass retrieval_id" in msg
            assert msg.index(f'{q2["retrieval_id"]} "worker pool restart"') < msg.index(
                f'{q1["retrieval_id"]} "which package manager: pnpm or npm"')
            # an explicit id settles that one; the other is then the default
            await call(one, "recallite_feedback", outcome="success", retrieval_id=q2["retrieval_id"])
            fb = await call(one, "recallite_feedback", outcome="partial")
            assert fb["retrieval_id"] == q1["retrieval_id"]
    finally:
        shared.close()


@pytest.mark.anyio
async def test_a_search_or_an_empty_context_made_feedback_need_a_retrieval_id():
    """A new user's trial: after a context that found nothing, then the task's context, feedback
    without retrieval_id was refused ("2 retrievals of this session await feedback"), and so after
    any recallite_recall made on the way. A retrieval that found nothing awaits no feedback, and a
    search does not count while one task's context awaits it; two tasks still ask which."""
    async with Client(build_server(Settings(db=":memory:", embedder="hash", warm_embedder=False))) as c:
        empty = await call(c, "recallite_context", query="zebra migration quokka")
        assert empty["memory_ids"] == []
        a, _b = await _seed(c)
        task = await call(c, "recallite_context", query="install node packages with pnpm")
        await call(c, "recallite_recall", query="pnpm")
        fb = await call(c, "recallite_feedback", outcome="success", used_memory_ids=[a["id"]])
        assert fb["retrieval_id"] == task["retrieval_id"]
        search = await call(c, "recallite_recall", query="worker pool")  # no task awaits: the search is the default
        assert (await call(c, "recallite_feedback", outcome="partial"))["retrieval_id"] == search["retrieval_id"]
        two = [await call(c, "recallite_context", query=q) for q in ("use pnpm, not npm", "restart the worker pool")]
        assert all(t["memory_ids"] for t in two)
        assert "2 retrievals" in await error_text(c, "recallite_feedback", outcome="success")


@pytest.mark.anyio
async def test_awaiting_list_is_bounded_and_lists_at_most_five():
    async with Client(build_server(Settings(db=":memory:", embedder="hash", warm_embedder=False))) as c:
        await _seed(c)
        rids = [(await call(c, "recallite_recall", query=f"pnpm question {i}"))["retrieval_id"] for i in range(25)]
        msg = await error_text(c, "recallite_feedback", outcome="success")
        assert "20 retrievals" in msg and msg.count("ret_") == 5 and rids[-1] in msg and rids[-6] not in msg


@pytest.mark.anyio
async def test_feedback_without_retrieval_id_lands_on_another_sessions_retrieval_over_http(tmp_path):
    with http_server(tmp_path) as url:
        # Two client sessions (initialize handshake, Mcp-Session-Id), used concurrently.
        async with Client(url, mode="legacy") as one, Client(url, mode="legacy") as two:
            _a, b = await _seed(one)
            r1 = await call(one, "recallite_context", query="install node packages")
            r2 = await call(two, "recallite_context", query="restart after config change")  # served last
            fb1 = await call(one, "recallite_feedback", outcome="failure")
            assert fb1["retrieval_id"] == r1["retrieval_id"]  # not session 2's, though it was served last
            fb2 = await call(two, "recallite_feedback", outcome="success", used_memory_ids=[b["id"]])
            assert fb2["retrieval_id"] == r2["retrieval_id"]
            assert "pass retrieval_id" in await error_text(one, "recallite_feedback", outcome="success")
        # Sessionless clients (protocol 2026-07-28 over HTTP): the server cannot tell them apart,
        # so a feedback without retrieval_id is refused rather than landing on another's retrieval.
        async with Client(url) as one, Client(url) as two:
            r1 = await call(one, "recallite_context", query="install node packages")
            await call(two, "recallite_context", query="restart after config change")
            msg = await error_text(one, "recallite_feedback", outcome="failure")
            assert "pass retrieval_id" in msg and "restart after" not in msg
            fb1 = await call(one, "recallite_feedback", outcome="failure", retrieval_id=r1["retrieval_id"])
            assert fb1["retrieval_id"] == r1["retrieval_id"]


# -- a memory tried first, failed, then passed over for the one that worked, was counted twice ---------------
def test_a_failed_attempt_is_not_also_marked_unused_when_the_fallback_succeeds(mem):
    ids = [m.id for m in mem.remember_many([{"content": s, "type": "procedure"} for s in STEPS])]
    ctx = mem.build_context("run the deploy script", max_tokens=2000, limit=3)
    first, second, third = ctx.memory_ids
    mem.feedback(ctx.retrieval_id, "failure", used_memory_ids=[first])  # tried first: it failed
    mem.feedback(ctx.retrieval_id, "success", used_memory_ids=[second])  # the fallback worked
    rows = mem.store.conn.execute(
        "SELECT memory_id, kind, weight FROM memory_outcomes ORDER BY rowid").fetchall()
    by_memory: dict[int, list[tuple[str, float]]] = {}
    for mid, kind, weight in rows:
        by_memory.setdefault(mid, []).append((kind, weight))
    # The failed attempt keeps its one failure; only the memory never tried is 'unused'.
    assert by_memory[int(first[4:])] == [("credit", 1.0)]
    assert by_memory[int(second[4:])] == [("credit", 1.0)]
    assert [k for k, _ in by_memory[int(third[4:])]] == ["unused"]
    assert len(ids) == len(STEPS)


# -- a partial outcome marked the memory the task lacked as unused (agent day, dev `ota-update`, day 3) --------
def test_a_partial_outcome_marked_the_memory_the_task_lacked_as_unused(mem):
    """What broke: the agent followed a misleading procedure ranked above the right one, so only the
    rule it named worked ("partial", used = the rule); the right procedure got an 'unused' mark on
    its own task, and two such marks later cut it from that task's context. A task done only in
    part does not say the memories it did not name were not needed: only a success does."""
    ids = [m.id for m in mem.remember_many([{"content": s, "type": "procedure"} for s in STEPS])]
    ctx = mem.build_context("run the deploy script", max_tokens=2000, limit=3)
    assert len(ctx.memory_ids) == 3
    first = ctx.memory_ids[0]
    mem.feedback(ctx.retrieval_id, "partial", used_memory_ids=[first])
    kinds = mem.store.conn.execute("SELECT memory_id, kind FROM memory_outcomes").fetchall()
    assert kinds == [(int(first[4:]), "credit")]
    assert len(ids) == len(STEPS)


# -- a partial without ids marked a needed rule poor (agent day, dev `coupon`, day 5) -------------------------
def test_partial_without_ids_marked_a_needed_rule_shown_in_every_task_poor(mem):
    rule = mem.remember("Coupons never stack: apply at most one coupon per order.", type="constraint").id
    mem.remember_many([{"content": s, "type": "procedure"} for s in STEPS[:3]])
    for _ in range(3):  # the task keeps missing something else; the rule is shown first every time
        ctx = mem.build_context("apply a coupon to the order")
        assert rule in ctx.memory_ids
        fb = mem.feedback(ctx.retrieval_id, "partial")
        assert fb.changes == []  # nothing says which shown memory fell short
    assert usefulness(mem, [rule])[rule] == 0.5
    # a partial that names what it used still credits exactly that
    ctx = mem.build_context("apply a coupon to the order")
    fb = mem.feedback(ctx.retrieval_id, "partial", used_memory_ids=[rule])
    assert [c.id for c in fb.changes] == [rule]
    # and a success without ids still credits what was shown, by rank
    ctx = mem.build_context("apply a coupon to the order")
    fb = mem.feedback(ctx.retrieval_id, "success")
    assert [c.id for c in fb.changes] == ctx.memory_ids


@pytest.fixture
def two_backends(backend_url):
    m = Recallite.open(backend_url, embedder="hash")
    yield m
    m.close()


def test_four_identical_success_reports_on_one_retrieval_were_all_applied(two_backends):
    """A new user's trial: four identical feedback calls on one retrieval each credited its memory
    (usefulness 0.5 -> 0.911, success_count 4). One outcome per memory per retrieval now."""
    m = two_backends
    a = m.remember("Deploys go through the release pipeline, never by hand.", type="procedure")
    b = m.remember("Deploys need a green build on the main branch first.", type="procedure")
    r = m.recall("how do deploys work", limit=5)
    first = m.feedback(r.retrieval_id, "success", used_memory_ids=[a.id])
    after_one = m.get(a.id).usefulness
    assert first.changes and not first.duplicate and after_one > 0.5
    for _ in range(3):
        again = m.feedback(r.retrieval_id, "success", used_memory_ids=[a.id])
        assert again.duplicate and again.already_judged == [a.id] and not again.changes
    assert m.get(a.id).usefulness == pytest.approx(after_one)
    assert m.get(a.id).success_count == 1
    # naming one more memory credits only that one
    more = m.feedback(r.retrieval_id, "success", used_memory_ids=[a.id, b.id])
    assert [c.id for c in more.changes] == [b.id] and more.already_judged == [a.id]
    # without ids, a repeat of the rank-decayed credit changes nothing either
    r2 = m.recall("deploys", limit=5)
    m.feedback(r2.retrieval_id, "failure")
    assert m.feedback(r2.retrieval_id, "failure").duplicate


def test_the_fallback_after_a_failed_first_memory_still_credits_both(two_backends):
    m = two_backends
    a = m.remember("Rotate the key with the vault CLI.", type="procedure")
    b = m.remember("Rotate the key in the cloud console.", type="procedure")
    r = m.recall("rotate the key", limit=5)
    m.feedback(r.retrieval_id, "failure", used_memory_ids=[a.id])
    ok = m.feedback(r.retrieval_id, "success", used_memory_ids=[b.id])
    assert [c.id for c in ok.changes] == [b.id] and not ok.already_judged
    assert m.get(a.id).usefulness < 0.5 < m.get(b.id).usefulness


# -- a new user's trial, session 26 ------------------------------------------------------------------------------
def test_feedback_credited_a_memory_of_another_project(mem):
    """Feedback on a billing context named a webshop memory the retrieval never served; it was
    credited (0.5 -> 0.675). A memory outside the scopes a retrieval searched is refused with a
    one-line error, and nothing is recorded; one of a searched scope is still credited as named."""
    from recallite_core import InvalidInputError

    web = mem.remember("Maria is the tech lead for the webshop.", type="fact", scope="webshop")
    keys = mem.remember("Stripe keys rotate every 90 days.", type="fact", scope="billing")
    other = mem.remember("Invoices go out from billing@example.com.", type="fact", scope="billing")
    ctx = mem.build_context("stripe keys", scope=["billing", "user"])
    assert web.id not in ctx.memory_ids
    with pytest.raises(InvalidInputError, match=rf"{web.id} \(webshop\)") as err:
        mem.feedback(ctx.retrieval_id, "success", used_memory_ids=[keys.id, web.id])
    assert "\n" not in str(err.value)
    assert mem.get(web.id).usefulness == mem.get(keys.id).usefulness == 0.5  # nothing half-written
    fb = mem.feedback(ctx.retrieval_id, "success", used_memory_ids=[keys.id, other.id])
    assert {c.id for c in fb.changes} == {keys.id, other.id}


def test_opposite_feedback_on_one_retrieval_was_accepted(mem):
    """A success naming one memory, then a failure on the same retrieval naming none, were both
    recorded, and the failure lowered the memories the success had passed over. A later outcome of
    another kind must name its memories (a failed attempt, then the fallback that worked, still
    does); the same outcome again changes nothing."""
    from recallite_core import InvalidInputError

    ids = [m.id for m in mem.remember_many([{"content": s, "type": "procedure"} for s in STEPS])]
    ctx = mem.build_context("run the deploy script", limit=3)
    first, second = ctx.memory_ids[:2]
    mem.feedback(ctx.retrieval_id, "success", used_memory_ids=[first])
    before = {i: mem.get(i).usefulness for i in ids}
    with pytest.raises(InvalidInputError, match="already has feedback success"):
        mem.feedback(ctx.retrieval_id, "failure")
    assert {i: mem.get(i).usefulness for i in ids} == before
    with pytest.raises(InvalidInputError, match="name the memories"):
        mem.feedback(ctx.retrieval_id, "success")  # after one that named its memory: a guess too
    fb = mem.feedback(ctx.retrieval_id, "failure", used_memory_ids=[second])
    assert [c.id for c in fb.changes] == [second]
