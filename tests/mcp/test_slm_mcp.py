"""SLM-Lite capabilities through the MCP tools, in process (mcp.Client(build_server(...)))."""

import json
from datetime import datetime, timedelta, timezone

import mcp_types as t
import pytest
from mcp import Client

from recallite_core import Recallite
from recallite_mcp.server import build_server
from recallite_mcp.settings import Settings
from tests.mcp_helpers import call, error_text

pytestmark = [pytest.mark.anyio, pytest.mark.filterwarnings("ignore::DeprecationWarning")]


def settings(**kw):
    return Settings(db=":memory:", embedder="hash", warm_embedder=False, scope="proj", tools="all", **kw)


@pytest.fixture
async def client():
    async with Client(build_server(settings())) as c:
        yield c


async def test_working_memory_over_mcp(client):
    w = await call(client, "recallite_remember", content="Scratch: the failing test is test_login_redirect.",
                   type="observation", working=True)
    assert w["id"].startswith("wm_") and w["layer"] == "working"
    r = await call(client, "recallite_recall", query="failing login redirect test")
    hit = next(h for h in r["memories"] if h["id"] == w["id"])
    assert hit["layer"] == "working" and hit["trust"] is not None
    ctx = await call(client, "recallite_context", query="failing login redirect test")
    assert w["id"] in ctx["memory_ids"]
    got = await call(client, "recallite_get", ids=[w["id"]])
    assert got["memories"][0]["layer"] == "working"
    stats = await call(client, "recallite_stats")
    assert stats["by_layer"]["working"] == 1 and stats["working"]["entries"] == 1
    up = await call(client, "recallite_update", id=w["id"], action="promote")
    assert up["id"].startswith("mem_") and up["layer"] == "semantic" and up["scope"] == "proj"
    r2 = await call(client, "recallite_recall", query="failing login redirect test")
    assert r2["memories"][0]["id"] == up["id"] and r2["memories"][0]["layer"] == "semantic"


async def test_working_memory_is_per_client_session():
    """Classic protocol era: one working memory per connection."""
    mem = Recallite.open(None, embedder="hash")
    server = build_server(settings(), memory=mem)
    try:
        async with Client(server, mode="legacy") as a:
            w = await call(a, "recallite_remember", content="Only session A knows the temp password rotation.", working=True)
            assert w["id"] in [h["id"] for h in (await call(a, "recallite_recall", query="temp password rotation"))["memories"]]
        async with Client(server, mode="legacy") as b:
            r = await call(b, "recallite_recall", query="temp password rotation")
            assert all(not h["id"].startswith("wm_") for h in r["memories"])
    finally:
        mem.close()


async def test_trust_min_trust_and_stats_over_mcp(client):
    a = await call(client, "recallite_remember", content="Use the staging vault for test secrets.", type="procedure")
    llm = await call(client, "recallite_remember", content="Use the prod vault for test secrets.", type="procedure", source="llm")
    r = await call(client, "recallite_recall", query="vault test secrets")
    trust = {h["id"]: h["trust"] for h in r["memories"]}
    assert trust[a["id"]] == pytest.approx(0.7) and trust[llm["id"]] == pytest.approx(0.4)
    r = await call(client, "recallite_recall", query="vault test secrets", min_trust=0.5)
    assert [h["id"] for h in r["memories"]] == [a["id"]]
    ctx = await call(client, "recallite_context", query="vault test secrets", min_trust=0.5)
    assert ctx["memory_ids"] == [a["id"]]
    stats = await call(client, "recallite_stats")
    assert stats["trust"]["buckets"]["0.3-0.5"] == 1 and stats["by_layer"]["procedural"] == 2


async def test_access_counts_visible_over_mcp(client):
    m = await call(client, "recallite_remember", content="Run make lint before pushing.", type="procedure")
    await call(client, "recallite_recall", query="lint before pushing")
    await call(client, "recallite_context", query="lint before pushing")
    got = (await call(client, "recallite_get", ids=[m["id"]]))["memories"][0]
    assert got["access_count"] == 2 and got["last_accessed_at"]


async def test_beliefs_and_expansion_over_mcp(client):
    a = await call(client, "recallite_remember", content="Checkout timeouts come from the payment gateway.", type="observation")
    b = await call(client, "recallite_remember", content="Retry storms spike gateway latency.", type="observation")
    c = await call(client, "recallite_remember", content="Circuit breakers stop retry storms.", type="procedure")
    await call(client, "recallite_relate", from_id=b["id"], to_id=a["id"], relation="causes")
    await call(client, "recallite_relate", from_id=c["id"], to_id=b["id"], relation="supports")
    g = await call(client, "recallite_beliefs", topic="checkout timeouts come from the payment gateway", limit=1)
    hops = {n["id"]: n["hops"] for n in g["nodes"]}
    assert hops == {a["id"]: 0, b["id"]: 1, c["id"]: 2}
    conf = {n["id"]: n["confidence"] for n in g["nodes"]}
    assert conf[c["id"]] == pytest.approx(conf[a["id"]] * 0.36, abs=1e-3)
    r = await call(client, "recallite_recall", query="checkout timeouts come from the payment gateway", limit=1,
                   expand_beliefs=True)
    assert [h["id"] for h in r["memories"]] == [a["id"], b["id"]]
    assert "belief-expansion" in r["memories"][1]["reasons"]


async def test_beliefs_text_repeated_title_content_and_scope_per_node(client):
    # a new user's trial: every node printed "title: Never deploy the web app on Fridays" and "content: Never
    # deploy the web app on Fridays.", its scope, hops, confidence and trust on a line each
    a = await call(client, "recallite_remember", content="Never deploy the web app on Fridays.", type="constraint")
    b = await call(client, "recallite_remember", content="Deploy the web app with make deploy.", type="procedure")
    await call(client, "recallite_relate", from_id=a["id"], to_id=b["id"], relation="requires")
    res = await client.call_tool("recallite_beliefs", {"topic": "deploy the web app on Fridays", "limit": 1})
    text, g = res.content[0].text, res.structured_content
    assert {n["id"] for n in g["nodes"]} == {a["id"], b["id"]}
    assert text.count("Never deploy the web app on Fridays") == 1 and text.count("make deploy") == 1
    assert text.count("proj") == 1 and "title:" not in text and g["retrieval_id"] in text
    assert f"{a['id']} requires {b['id']}" in text
    assert len(text) < 0.5 * len(json.dumps(g))


async def test_revise_and_history_over_mcp(client):
    v1 = await call(client, "recallite_remember", content="Deploy with make deploy.", type="procedure")
    up = await call(client, "recallite_update", id=v1["id"], action="revise", content="Deploy with the release pipeline.",
                    reason="make deploy was removed")
    assert up["id"] == v1["id"] and up["status"] == "superseded" and up["superseded_by"]
    h = await call(client, "recallite_history", id=up["superseded_by"])
    assert [v["id"] for v in h["versions"]] == [v1["id"], up["superseded_by"]]
    assert h["versions"][1]["metadata"]["version"] == 2
    assert "needs content" in await error_text(client, "recallite_update", id=up["superseded_by"], action="revise")
    assert "only for action=revise" in await error_text(client, "recallite_update", id=v1["id"], action="deprecate",
                                                         content="x")


async def test_capture_behavior_over_mcp():
    mem = Recallite.open(None, embedder="hash")
    try:
        async with Client(build_server(settings(), memory=mem)) as c:
            for _ in range(2):
                out = await call(c, "recallite_capture", kind="error_recovery", tool="pip", outcome="success",
                                 description="When pip reports a hash mismatch, clear the cache and retry.")
                assert out["queued"] is True
            assert mem.flush(10)
            procs = mem.list(types=["procedure"])
            assert len(procs) == 1 and procs[0].metadata["occurrences"] == 2 and procs[0].scope == "proj"
            assert procs[0].metadata["behavioral"] is True
    finally:
        mem.close()


async def test_share_and_team_recall_over_mcp(client):
    m = await call(client, "recallite_remember", content="The e2e suite needs --retries 2.", type="lesson")
    other = await call(client, "recallite_remember", content="The e2e suite is owned by QA.", type="fact", scope="other-proj")
    up = await call(client, "recallite_update", id=m["id"], action="share", team_scope="team-web")
    assert up["scope"] == "team-web" and up["id"] != m["id"]
    # it said "mem_1 is now validated", and the same again when shared twice (a new user's trial)
    assert up["note"] == f"Shared {m['id']} into team-web as {up['id']}"
    again = await client.call_tool("recallite_update", {"id": m["id"], "action": "share", "team_scope": "team-web"})
    assert again.content[0].text.startswith(f"{m['id']} was already shared into team-web as {up['id']}")
    plain = await call(client, "recallite_recall", query="e2e suite", limit=10)
    assert {h["scope"] for h in plain["memories"]} == {"proj"}
    await call(client, "recallite_remember", content="The e2e suite runs nightly at 2am.", type="fact", scope="team-web")
    teamed = await call(client, "recallite_recall", query="e2e suite", limit=10, include_teams=True)
    assert {h["scope"] for h in teamed["memories"]} == {"proj", "team-web"}
    assert other["id"] not in [h["id"] for h in teamed["memories"]]
    # the shared copy has the same text as the original: shown once, not twice
    assert [h["content"] for h in teamed["memories"]].count("The e2e suite needs --retries 2.") == 1


async def test_a_team_copy_went_stale_when_its_original_was_revised_over_mcp(client):
    """Revising a shared memory left the team copy validated with the old text (a new user's trial):
    the copy follows, and the revise reply says so; a copy its team changed is kept and warns."""
    m = await call(client, "recallite_remember", content="The e2e suite needs --retries 2.", type="lesson")
    copy = await call(client, "recallite_update", id=m["id"], action="share", team_scope="team-web")
    out = await client.call_tool("recallite_update", {"id": m["id"], "action": "revise",
                                                      "content": "The e2e suite needs --retries 3."})
    up = out.structured_content
    new_copy = up["note"].rsplit(" follows as ", 1)[1]
    assert up["note"] == f"Revised {m['id']} as {up['superseded_by']}; team copy {copy['id']} in team-web follows as {new_copy}"
    assert out.content[0].text.startswith(up["note"])
    r = await call(client, "recallite_recall", query="e2e suite retries", scope="team-web")
    assert [(h["id"], h["content"]) for h in r["memories"]] == [(new_copy, "The e2e suite needs --retries 3.")]
    # a correction detected at write time moves the copy along too, and the remember note says so
    fixed = await call(client, "recallite_remember", content="The e2e suite needs --retries 4.", type="lesson")
    assert f"team copy {new_copy} in team-web follows as" in fixed["note"]
    # the team's own wording is kept, with a warning naming the new original
    rule = await call(client, "recallite_remember", content="Releases ship on Tuesdays.", type="fact")
    theirs = await call(client, "recallite_update", id=rule["id"], action="share", team_scope="team-web")
    ours = await call(client, "recallite_update", id=theirs["id"], action="revise",
                      content="Releases ship on Tuesdays, except in December.")
    up = await call(client, "recallite_update", id=rule["id"], action="revise", content="Releases ship on Thursdays.")
    assert f"team copy {ours['superseded_by']} in team-web kept" in up["note"]
    ctx = await client.call_tool("recallite_context", {"query": "when do releases ship", "scope": "team-web"})
    assert f"Stale team copy: its original is now {up['superseded_by']} (scope proj)" in ctx.content[0].text


async def test_isolated_server_refuses_sharing_into_unlinked_team():
    async with Client(build_server(settings(isolate_scopes=True))) as c:
        m = await call(c, "recallite_remember", content="Use pnpm.", type="constraint")
        assert "team scopes" in await error_text(c, "recallite_update", id=m["id"], action="share", team_scope="team-x")


async def test_valid_until_over_mcp(client):
    past = (datetime.now(timezone.utc) - timedelta(minutes=5)).isoformat()
    gone = await call(client, "recallite_remember", content="The deploy freeze is on.", type="constraint", valid_until=past)
    kept = await call(client, "recallite_remember", content="The deploy freeze needs a ticket to lift.", type="constraint",
                      valid_until="2999-01-01")
    r = await call(client, "recallite_recall", query="deploy freeze", limit=10)
    ids = [h["id"] for h in r["memories"]]
    assert gone["id"] not in ids and kept["id"] in ids
    # A past date was stored silently, dead on arrival (a new user's trial): the reply says so.
    assert "already past" in (gone.get("hint") or "") and "already past" not in (kept.get("hint") or "")
    got = (await call(client, "recallite_get", ids=[kept["id"]]))["memories"][0]
    assert got["valid_until"].startswith("2999-01-01")
    assert "ISO 8601" in await error_text(client, "recallite_remember", content="x", valid_until="soon")


MESSAGE = ("I keep getting a ModuleNotFoundError for numpy when running pytest in the CI pipeline. "
           "Locally everything works fine. Could the virtualenv be missing in the runner?")


async def _seed(c):
    return await call(c, "recallite_remember", type="lesson",
                      content="When pytest cannot import numpy in CI, add numpy to requirements-dev.txt.")


async def test_auto_context_local_without_sampling():
    async with Client(build_server(settings()), mode="legacy") as c:
        m = await _seed(c)
        out = await call(c, "recallite_auto_context", text=MESSAGE, max_tokens=400)
    assert out["method"] == "local" and m["id"] in out["memory_ids"]
    assert any("numpy" in x for x in out["concepts"]) and out["summary"]


async def test_auto_context_with_no_text_asked_for_the_text_to_store():
    """A new user's trial: recallite_auto_context text="" said "Pass the text you want to store"."""
    async with Client(build_server(settings())) as c:
        msg = await error_text(c, "recallite_auto_context", text="  ")
        assert "text is empty" in msg and "store" not in msg and "find the memories" in msg


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_auto_context_uses_client_sampling(mode):
    seen = []

    async def sampling_callback(ctx, params: t.CreateMessageRequestParams) -> t.CreateMessageResult:
        seen.append(params.messages[0].content.text)
        reply = json.dumps({"concepts": ["numpy import error", "ci requirements"], "summary": "CI cannot import numpy."})
        return t.CreateMessageResult(role="assistant", content=t.TextContent(type="text", text=reply), model="test-llm")

    async with Client(build_server(settings()), mode=mode, sampling_callback=sampling_callback) as c:
        m = await _seed(c)
        out = await call(c, "recallite_auto_context", text=MESSAGE, max_tokens=400)
    assert seen and "ModuleNotFoundError" in seen[0]
    assert out["method"] == "sampling" and out["concepts"] == ["numpy import error", "ci requirements"]
    assert out["summary"] == "CI cannot import numpy." and m["id"] in out["memory_ids"]


async def test_auto_context_falls_back_when_sampling_answer_is_unusable():
    async def sampling_callback(ctx, params):
        return t.CreateMessageResult(role="assistant", content=t.TextContent(type="text", text="I cannot help."), model="m")

    async with Client(build_server(settings()), mode="legacy", sampling_callback=sampling_callback) as c:
        await _seed(c)
        out = await call(c, "recallite_auto_context", text=MESSAGE)
    assert out["method"] == "local" and out["concepts"]
