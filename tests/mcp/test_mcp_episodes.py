"""Conversation memory through the MCP tools (in process), and the streamable HTTP transport
(a real `recallite-mcp --transport http` subprocess on 127.0.0.1)."""

import time
from pathlib import Path

import pytest
from mcp import Client

from recallite_mcp import render
from recallite_mcp.server import build_server, http_url
from recallite_mcp.settings import Settings
from tests.mcp_helpers import call, http_server

pytestmark = pytest.mark.anyio
ROOT = Path(__file__).resolve().parents[2]


async def conversation(client):
    first = await call(client, "recallite_record", session="monday", turns=[
        {"role": "user", "content": "My passport expires on 3 March 2026, I must renew it.", "timestamp": "2025-01-06T09:00:00Z"},
        {"role": "assistant", "content": "Noted. Renewal takes about six weeks."},
        {"role": "user", "content": "Also, I only fly with window seats."},
    ])
    second = await call(client, "recallite_record", session="friday", turns=[
        {"role": "user", "content": "Book me a flight to Oslo next month."},
        {"role": "assistant", "content": "Which dates work for you?"},
    ])
    return first, second


async def test_record_context_recall_why_forget_over_mcp():
    async with Client(build_server(Settings(db=":memory:", embedder="hash", warm_embedder=False, tools="all"))) as c:
        first, second = await conversation(c)
        t = first["turns"]
        assert [x["seq"] for x in t] == [1, 2, 3] and t[0]["role"] == "user" and t[0]["session"] == "monday"
        assert t[0]["timestamp"].startswith("2025-01-06T09:00:00")
        # context in the friday session: its last turns first, then what matters from monday
        # (the hash embedder matches words, not meanings: "seats", not "seat preferences", which
        # scores under a tenth of the best hit here and is left out by the default floor)
        ctx = await call(c, "recallite_context", query="book a flight: passport and window seats", session="friday",
                         max_tokens=400)
        assert "Recent conversation" in ctx["context"] and "Oslo" in ctx["context"]
        assert not ctx.get("hint")
        # a session that does not exist was ignored without a word (a new user's trial)
        typo = await call(c, "recallite_context", query="book a flight", session="fridya", max_tokens=400)
        assert "Recent conversation" not in typo["context"]
        assert typo["hint"].startswith("session 'fridya' has no recorded turns in this scope")
        assert "window seats" in ctx["context"] and ctx["tokens"] <= 400
        # recall with the neighbouring turns, filtered by role
        r = await call(c, "recallite_recall", query="passport expires renew", roles=["user"], window=1, limit=3)
        top = r["memories"][0]
        assert top["id"] == t[0]["id"] and top["turn"]["seq"] == 1
        assert [w["id"] for w in top["window"]] == [t[0]["id"], t[1]["id"]]
        # the text printed the hit twice, once as the hit and once inside its window (a new user's trial)
        text = (await c.call_tool("recallite_recall", {"query": "passport expires renew", "roles": ["user"],
                                                       "window": 1, "limit": 3})).content[0].text
        assert text.count("My passport expires on 3 March 2026") == 1 and "> user: [this turn]" in text
        assert all(h["turn"]["role"] == "user" for h in r["memories"])
        # a fact with its source; why returns the turn
        fact = await call(c, "recallite_remember", type="fact", content="The user's passport expires on 3 March 2026.",
                          cites=[t[0]["id"]], category="travel")
        why = await call(c, "recallite_why", id=fact["id"])
        assert [s["id"] for s in why["sources"]] == [t[0]["id"]] and "3 March 2026" in why["sources"][0]["content"]
        only = await call(c, "recallite_recall", query="passport", categories=["travel"])
        assert [h["id"] for h in only["memories"]] == [fact["id"]]
        bad = await c.call_tool("recallite_remember", {"content": "x", "cites": [second["turns"][0]["id"], "mem_999"]})
        assert bad.is_error and "mem_999" in bad.content[0].text
        gone = await call(c, "recallite_forget", id=t[0]["id"])
        assert gone["deleted"] and gone["orphans"] == [fact["id"]] and "removed" not in gone  # empty lists are left out
        assert (await call(c, "recallite_why", id=fact["id"]))["sources"] == []
        bad = await c.call_tool("recallite_record", {"session": "x", "turns": [{"role": "user", "content": "  "}]})
        assert bad.is_error and "empty" in bad.content[0].text


async def test_why_and_record_printed_the_scope_on_every_turn():
    """The text of recallite_record and recallite_why repeated `scope: proj` (and the session) on
    every turn (a new user's trial): what all share is said once; record lists the ids and positions
    the agent needs, not the text it just sent."""
    async with Client(build_server(Settings(db=":memory:", embedder="hash", warm_embedder=False, tools="all",
                                            scope="proj"))) as c:
        sent = await c.call_tool("recallite_record", {"session": "monday", "turns": [
            {"role": "user", "content": "My passport expires on 3 March 2026, I must renew it.",
             "timestamp": "2025-01-06T09:00:00Z"},
            {"role": "assistant", "content": "Noted. Renewal takes about six weeks."}]})
        t = sent.structured_content["turns"]
        text = sent.content[0].text
        assert text == f"Recorded 2 turns in session monday, scope proj: {t[0]['id']} #1 user, {t[1]['id']} #2 assistant."
        fact = await call(c, "recallite_remember", type="fact", content="The passport expires on 3 March 2026.",
                          cites=[t[0]["id"]])
        why = (await c.call_tool("recallite_why", {"id": fact["id"], "window": 1})).content[0].text
        assert why.count("proj") == 1 and why.count("monday") == 1 and "scope:" not in why
        assert why.splitlines() == [
            f"{fact['id']} comes from these turns (scope proj, session monday):",
            f"- {t[0]['id']} #1 user, 2025-01-06T09:00:00+00:00", "  My passport expires on 3 March 2026, I must renew it.",
            f"- {t[1]['id']} #2 assistant, {t[1]['timestamp'][:19]}+00:00", "  Noted. Renewal takes about six weeks."]
        await call(c, "recallite_forget", id=t[0]["id"])
        alone = (await c.call_tool("recallite_why", {"id": fact["id"]})).content[0].text
        assert alone == f"{fact['id']} has no recorded source: it cites no conversation turn that is still stored."
    # turns of several sessions and scopes (derived memories): each says its own
    mixed = render.why({"id": "mem_9", "sources": [
        {"id": "mem_1", "session": "a", "seq": 1, "role": "user", "timestamp": "2025-01-06T09:00:00+00:00",
         "content": "x", "scope": "p"},
        {"id": "mem_2", "session": "b", "seq": 4, "role": "user", "timestamp": "2025-01-07T09:00:00.5+00:00",
         "content": "y", "scope": "q"}]})
    assert mixed.splitlines() == ["mem_9 comes from these turns:", "- mem_1 a#1 user, 2025-01-06T09:00:00+00:00, scope p",
                                  "  x", "- mem_2 b#4 user, 2025-01-07T09:00:00+00:00, scope q", "  y"]


async def test_session_context_text_lost_the_conversation_when_no_memory_matched():
    # a new user's trial: the text read "No stored memory matches this task. (... 39 tokens ...)" and
    # the conversation the tokens were counted for was only in the structured content
    async with Client(build_server(Settings(db=":memory:", embedder="hash", warm_embedder=False, scope="p1",
                                            scope_origin="flag", tools="all"))) as c:
        await call(c, "recallite_record", session="s1", turns=[
            {"role": "user", "content": "Our CI runner is on Ubuntu 22.04 now."},
            {"role": "assistant", "content": "Noted, I'll use apt for system packages."}])
        res = await c.call_tool("recallite_context", {"query": "what OS is the CI runner?", "session": "s1"})
        text, data = res.content[0].text, res.structured_content
        assert data["memory_ids"] == [] and "Ubuntu 22.04" in data["context"]
        assert text.startswith(data["context"].rstrip()) and "apt for system packages" in text
        assert "No stored memory matches this task" not in text and data["retrieval_id"] in text
        assert len(data["turn_ids"]) == 2
        # a budget too small for the conversation: nothing of it is served, and the text says so plainly
        tiny = await c.call_tool("recallite_context", {"query": "what OS is the CI runner?", "session": "s1",
                                                       "max_tokens": 5})
        assert "Ubuntu" not in tiny.content[0].text and "turn_ids" not in tiny.structured_content


def test_http_transport_printed_nothing_at_startup(tmp_path):
    """`recallite-mcp --transport http` printed nothing once up (a new user's trial): one stderr line
    says where it listens, the URL a client connects to."""
    with http_server(tmp_path) as url:
        deadline = time.monotonic() + 10  # the socket accepts a moment before the line is written
        while "serving" not in (tmp_path / "server.log").read_text() and time.monotonic() < deadline:
            time.sleep(0.1)
        lines = (tmp_path / "server.log").read_text().splitlines()
    assert f"recallite-mcp: serving MCP (streamable HTTP) at {url}" in lines
    assert http_url("::1", 8765) == "http://[::1]:8765/mcp"  # an IPv6 address in brackets


async def test_streamable_http_transport(tmp_path):
    with http_server(tmp_path, "--tools", "all") as url:
        async with Client(url) as c:
            names = {t.name for t in (await c.list_tools()).tools}
            assert {"recallite_record", "recallite_why", "recallite_context"} <= names
            first, _ = await conversation(c)
            r = await call(c, "recallite_recall", query="window seats", window=1)
            assert r["memories"][0]["id"] == first["turns"][2]["id"]
        # the lifespan is shared by HTTP sessions: a second client sees the same store
        async with Client(url) as c2:
            stats = await call(c2, "recallite_stats")
            assert stats["by_type"] == {"episode": 5}


async def test_a_recalled_turn_repeated_its_text_id_and_scope_three_times():
    """A new user's trial: each turn hit carried its text, id and scope again in `turn` and again in
    its own `window` entry, and every window entry repeated the scope: tokens spent on nothing."""
    async with Client(build_server(Settings(db=":memory:", embedder="hash", warm_embedder=False, tools="all"))) as c:
        await conversation(c)
        hit = (await call(c, "recallite_recall", query="passport expires renew", window=1, limit=1))["memories"][0]
        assert set(hit["turn"]) == {"role", "session", "seq", "timestamp"}
        own = [w for w in hit["window"] if w["id"] == hit["id"]]
        assert own and "content" not in own[0] and not any("scope" in w for w in hit["window"])
        assert any(w.get("content") == "Noted. Renewal takes about six weeks." for w in hit["window"])
        text = (await c.call_tool("recallite_recall", {"query": "passport expires renew", "window": 1, "limit": 1})).content[0].text
        assert "[this turn]" in text and text.count("My passport expires") == 1
