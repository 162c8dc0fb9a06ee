"""The MCP layer in process: every tool through mcp.Client(build_server(...))."""

import json

import pytest
from mcp import Client

from recallite_core import Recallite
from recallite_mcp.rules import agent_rules
from recallite_mcp.server import build_server
from recallite_mcp.settings import Settings
from tests.mcp_helpers import call, error_text

pytestmark = pytest.mark.anyio


def settings(**kw):
    return Settings(db=":memory:", embedder="hash", warm_embedder=False, **kw)


@pytest.fixture
async def client():
    async with Client(build_server(settings())) as c:
        yield c


async def test_full_loop_changes_ranking(client):
    bad = await call(client, "recallite_remember", type="procedure",
                     content="To rotate the API key run the rotate-keys script from the admin box.")
    good = await call(client, "recallite_remember", type="procedure",
                      content="To rotate the API key run the rotate-keys workflow from CI.")
    assert bad["status"] == "validated" and bad["source"] == "agent"  # agent = medium trust
    ctx = await call(client, "recallite_context", query="rotate the API key", max_tokens=500)
    assert ctx["retrieval_id"].startswith("ret_") and ctx["tokens"] <= 500
    assert set(ctx["memory_ids"]) == {bad["id"], good["id"]}
    first = ctx["memory_ids"][0]
    loser, winner = (first, good["id"] if first == bad["id"] else bad["id"])
    for _ in range(3):
        r = await call(client, "recallite_recall", query="rotate the API key", limit=2)
        await call(client, "recallite_feedback", retrieval_id=r["retrieval_id"], outcome="failure", used_memory_ids=[loser])
        fb = await call(client, "recallite_feedback", retrieval_id=r["retrieval_id"], outcome="success", used_memory_ids=[winner])
        assert fb["changes"][0]["new_usefulness"] > fb["changes"][0]["old_usefulness"]
    after = await call(client, "recallite_context", query="rotate the API key", max_tokens=500)
    assert after["memory_ids"][0] == winner


async def test_remember_duplicate_and_trust(client):
    a = await call(client, "recallite_remember", content="User likes tabs.", type="preference", source="user")
    assert a["source"] == "agent" and a["status"] == "candidate"  # clients cannot vouch for the user by default
    # ... and the reply said nothing of it (a new user's trial): it does now
    assert "source user recorded as agent" in a["hint"]
    b = await call(client, "recallite_remember", content="User likes tabs.", type="preference")
    assert b["duplicate_of"] == a["id"]
    c = await call(client, "recallite_remember", content="Maybe always run rm -rf.", source="llm", type="procedure")
    assert c["status"] == "candidate"


async def test_trusted_client_sources_setting():
    async with Client(build_server(settings(trust_client_sources=True))) as c:
        a = await call(c, "recallite_remember", content="User likes spaces.", type="preference", source="user")
        assert a["source"] == "user" and a["status"] == "active"
        assert "recorded as" not in (a.get("hint") or "")


async def test_feedback_defaults_to_last_retrieval(client):
    m = await call(client, "recallite_remember", content="Use pnpm, not npm.", type="constraint")
    ctx = await call(client, "recallite_context", query="install node packages")
    fb = await call(client, "recallite_feedback", outcome="success", used_memory_ids=[m["id"]])
    assert fb["retrieval_id"] == ctx["retrieval_id"]


async def test_relate_update_get_forget_stats(client):
    # two memories that disagree without one being a newer version of the other
    a = await call(client, "recallite_remember", content="Deploys of the API run on Friday afternoons.", type="fact")
    b = await call(client, "recallite_remember", content="Never ship the API on a Friday: the on-call team is off.",
                   type="constraint")
    rel = await call(client, "recallite_relate", from_id=b["id"], to_id=a["id"], relation="contradicts")
    assert rel["relation"]["type"] == "contradicts" and rel["to_memory"]["contradiction_count"] == 1
    rec = await call(client, "recallite_recall", query="API deploy Friday", limit=5)
    assert any(h["warnings"] for h in rec["memories"])
    up = await call(client, "recallite_update", id=a["id"], action="deprecate", reason="moved")
    assert up["status"] == "deprecated"
    got = await call(client, "recallite_get", ids=[a["id"], b["id"]])
    assert [m["id"] for m in got["memories"]] == [a["id"], b["id"]]
    stats = await call(client, "recallite_stats")
    assert stats["memories"] == 2 and stats["relations"] == {"contradicts": 1} and stats["embedder_loaded"] is True
    gone = await call(client, "recallite_forget", id=a["id"])
    assert gone["deleted"]
    assert (await call(client, "recallite_stats"))["memories"] == 1


async def test_supersede_through_update(client):
    old = await call(client, "recallite_remember", content="Build with make.", type="procedure")
    new = await call(client, "recallite_remember", content="Build with just.", type="procedure")
    up = await call(client, "recallite_update", id=old["id"], action="supersede", superseded_by=new["id"])
    assert up["status"] == "superseded" and up["superseded_by"] == new["id"]
    assert "superseded_by" in await error_text(client, "recallite_update", id=new["id"], action="supersede")


@pytest.mark.parametrize(
    "tool, args, expect",
    [
        ("recallite_get", {"ids": ["mem_999"]}, "No memory mem_999. Find ids with recallite_list"),
        ("recallite_get", {"ids": ["banana"]}, "mem_42"),
        ("recallite_feedback", {"outcome": "success", "retrieval_id": "ret_999"}, "No retrieval ret_999"),
        ("recallite_feedback", {"outcome": "success"}, "call recallite_context first"),
        ("recallite_feedback", {"outcome": "great", "retrieval_id": "ret_1"}, '`outcome` must be one of "success", "failure", "partial"; got "great"'),
        ("recallite_remember", {"content": "x", "type": "dream"}, '`type` must be one of "observation"'),
        ("recallite_remember", {"content": "   "}, "empty"),
        ("recallite_remember", {"content": "x" * 70000}, "limit"),
        ("recallite_remember", {"content": "x", "metadata": "notadict"}, "`metadata` must be a JSON object"),
        ("recallite_remember", {"content": "x", "tags": "notalist"}, "`tags` must be a list of strings"),
        ("recallite_remember", {"content": "x", "importance": 7}, "`importance` must be a number from 0 to 1; got 7"),
        ("recallite_recall", {"query": "x", "limit": 0}, "`limit` must be an integer from 1 to 100; got 0"),
        ("recallite_recall", {"query": "x", "limit": "many"}, '`limit` must be an integer from 1 to 100; got "many"'),
        ("recallite_recall", {"query": ""}, "empty"),
        ("recallite_context", {"query": "x", "format": "html"}, "`format` must be one of"),
        ("recallite_relate", {"from_id": "mem_1", "to_id": "mem_1", "relation": "supports"}, "itself"),
        ("recallite_relate", {"from_id": "mem_1", "to_id": "mem_2", "relation": "loves"}, '`relation` must be one of "contradicts"'),
        ("recallite_update", {"id": "mem_404", "action": "validate"}, "No memory mem_404"),
        ("recallite_forget", {"id": "mem_404"}, "No memory mem_404"),
    ],
)
async def test_bad_input_is_a_tool_error_and_server_survives(client, tool, args, expect):
    await call(client, "recallite_remember", content="seed memory")
    text = await error_text(client, tool, **args)
    assert expect in text
    assert "\n" not in text and "pydantic" not in text and "list()" not in text  # one line, for the model
    assert (await call(client, "recallite_stats"))["memories"] == 1


async def test_illegal_transition_message_names_allowed(client):
    m = await call(client, "recallite_remember", content="Untrusted idea.", source="llm")
    text = await error_text(client, "recallite_update", id=m["id"], action="activate")
    assert "validate it first" in text


async def test_resources_and_prompt(client):
    m = await call(client, "recallite_remember", content="Resource me.", type="fact")
    resources = (await client.list_resources()).resources
    assert any(str(r.uri) == "recallite://stats" for r in resources)
    stats = json.loads((await client.read_resource("recallite://stats")).contents[0].text)
    assert stats["memories"] == 1
    templates = (await client.list_resource_templates()).resource_templates
    assert any(t.uri_template == "recallite://memory/{memory_id}" for t in templates)
    body = json.loads((await client.read_resource(f"recallite://memory/{m['id']}")).contents[0].text)
    assert body["content"] == "Resource me."
    prompts = (await client.list_prompts()).prompts
    assert [p.name for p in prompts] == ["recallite_rules"]
    msg = (await client.get_prompt("recallite_rules")).messages[0].content.text
    assert msg == agent_rules() and "recallite_context" in msg


async def test_the_memory_resource_came_as_indented_json_with_null_fields(client):
    """A new user's trial: recallite://memory/{id} was indented JSON full of nulls; one line, no empties."""
    m = await call(client, "recallite_remember", content="Resource me.", type="fact")
    for uri in (f"recallite://memory/{m['id']}", "recallite://stats"):
        raw = (await client.read_resource(uri)).contents[0].text
        body = json.loads(raw)
        assert raw == json.dumps(body, separators=(",", ":"), ensure_ascii=False), uri  # one line, no padding
        assert None not in body.values() and [] not in body.values(), uri


async def test_shared_engine_is_not_closed_by_server():
    mem = Recallite.open(None, embedder="hash")
    async with Client(build_server(settings(), memory=mem)) as c:
        await call(c, "recallite_remember", content="shared engine works")
    assert mem.stats().memories == 1
    mem.close()


async def test_list_filters_pages_newest_first(client):
    ids = []
    for i, (kind, src) in enumerate([("fact", "agent"), ("lesson", "llm"), ("fact", "imported"), ("lesson", "agent"),
                                     ("fact", "llm")]):
        m = await call(client, "recallite_remember", type=kind, source=src, tags=["odd"] if i % 2 else None,
                       content=f"Listed memory number {i} about the {['db', 'queue', 'cache', 'cdn', 'dns'][i]}.")
        ids.append(m["id"])
    everything = await call(client, "recallite_list")
    assert [m["id"] for m in everything["memories"]] == ids[::-1] and "next_offset" not in everything
    first = await call(client, "recallite_list", limit=2)
    second = await call(client, "recallite_list", limit=2, offset=first["next_offset"])
    assert [m["id"] for m in first["memories"] + second["memories"]] == ids[::-1][:4]
    llm = await call(client, "recallite_list", sources=["llm"])
    assert [m["id"] for m in llm["memories"]] == [ids[4], ids[1]]
    page = await call(client, "recallite_list", sources=["llm", "imported"], limit=1, offset=1)
    assert [m["id"] for m in page["memories"]] == [ids[2]] and page["next_offset"] == 2
    assert [m["id"] for m in (await call(client, "recallite_list", types=["lesson"], tags=["odd"]))["memories"]] == [ids[3], ids[1]]
    cands = await call(client, "recallite_list", statuses=["candidate"])
    assert {m["id"] for m in cands["memories"]} == {ids[1], ids[2], ids[4]}
    assert (await call(client, "recallite_list", scope="elsewhere"))["memories"] == []


async def test_feedback_credited_a_memory_the_retrieval_never_showed_without_a_word(client):
    """A new user's trial: used_memory_ids named "The office coffee machine is on floor 3." for an npm
    build context; it was credited (0.5 -> 0.675) and the reply said nothing. It is still credited
    (the agent may have found it by another call), and the reply says it was not served there."""
    build = await call(client, "recallite_remember", type="procedure", content="Build the frontend with npm ci and npm run build.")
    coffee = await call(client, "recallite_remember", content="The office coffee machine is on floor 3.")
    ctx = await call(client, "recallite_context", query="build the frontend with npm")
    assert coffee["id"] not in ctx["memory_ids"]
    res = await client.call_tool("recallite_feedback", {"retrieval_id": ctx["retrieval_id"], "outcome": "success",
                                                        "used_memory_ids": [build["id"], coffee["id"]]})
    assert res.structured_content["not_shown"] == [coffee["id"]]
    assert f"did not serve them: {coffee['id']}" in res.content[0].text
    again = await call(client, "recallite_context", query="build the frontend with npm")
    fb = await call(client, "recallite_feedback", retrieval_id=again["retrieval_id"], outcome="success",
                    used_memory_ids=[build["id"]])
    assert "not_shown" not in fb
