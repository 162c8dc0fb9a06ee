"""Prompt-ready results (issue 15): the text a model reads is plain markdown, not JSON; the
structured content stays for programs, with rounded numbers and no empty optional fields; every
result is bounded, a long body cut with a pointer to the rest; an FTS-operator query on a store of
unrelated memories finds nothing."""

import json

import pytest
from mcp import Client

from recallite_mcp.render import MAX_TEXT
from recallite_mcp.schemas import GET_CHARS, HIT_CHARS
from recallite_mcp.server import build_server
from recallite_mcp.settings import Settings
from tests.mcp_helpers import call

pytestmark = pytest.mark.anyio

CODING = [
    ("lesson", "When pytest cannot import the package, install it in editable mode with pip install -e ."),
    ("procedure", "Run ruff check --fix before committing; CI fails on lint errors."),
    ("constraint", "Never force-push to main; open a pull request instead."),
    ("fact", "The web frontend is built with vite and served by nginx."),
    ("lesson", "A flaky test in test_io came from a shared temp dir; use tmp_path per test."),
    ("preference", "The user wants type hints on every public function."),
]


@pytest.fixture
async def client():
    async with Client(build_server(Settings(db=":memory:", embedder="hash", warm_embedder=False, scope="p",
                                            scope_origin="flag"))) as c:
        for kind, text in CODING:
            await call(c, "recallite_remember", type=kind, content=text)
        yield c


def not_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return True
    return False


async def test_context_text_is_the_markdown_itself(client):
    res = await client.call_tool("recallite_context", {"query": "how do I run the linter before a commit"})
    text, data = res.content[0].text, res.structured_content
    assert not_json(text) and '\\n' not in text and text.startswith(data["context"].rstrip())
    assert data["retrieval_id"] in text and "recallite_feedback" in text


@pytest.mark.parametrize("tool, args", [
    ("recallite_recall", {"query": "flaky test temp dir"}),
    ("recallite_list", {}),
    ("recallite_get", {"ids": ["mem_1", "mem_2"]}),
    ("recallite_stats", {}),
    ("recallite_remember", {"content": "Use uv to manage the virtualenv.", "type": "procedure"}),
])
async def test_every_core_result_reads_as_text_not_json(client, tool, args):
    res = await client.call_tool(tool, args)
    assert not res.is_error and not_json(res.content[0].text) and res.structured_content


async def test_numbers_rounded_and_empty_fields_dropped(client):
    ctx = await call(client, "recallite_context", query="flaky test temp dir")
    res = await client.call_tool("recallite_feedback", {"retrieval_id": ctx["retrieval_id"], "outcome": "success"})
    fb = res.structured_content
    for ch in fb["changes"]:
        for v in (ch["weight"], ch["old_usefulness"], ch["new_usefulness"]):
            assert round(v, 3) == v  # no 0.4387500000000001
    assert "promoted" not in fb  # nothing promoted: left out, not []
    rec = await call(client, "recallite_recall", query="flaky test temp dir")
    hit = rec["memories"][0]
    assert "turn" not in hit and "window" not in hit and "content_chars" not in hit
    assert all(len(repr(hit[k]).split(".")[-1]) <= 3 for k in ("score", "confidence", "usefulness") if isinstance(hit[k], float))
    text = res.content[0].text
    assert "Recorded success" in text and "→" in text
    assert "already_judged" not in fb  # nothing repeated: left out
    again = await client.call_tool("recallite_feedback", {"retrieval_id": ctx["retrieval_id"], "outcome": "success"})
    assert again.structured_content["duplicate"] and again.structured_content["already_judged"]
    assert again.content[0].text.startswith("Nothing changed: earlier feedback on " + ctx["retrieval_id"])


async def test_a_60kb_memory_is_bounded_everywhere():
    body = "\n".join(f"Line {i}: the deploy script copies build artefacts to the cache bucket." for i in range(900))
    assert len(body) > 60_000
    async with Client(build_server(Settings(db=":memory:", embedder="hash", warm_embedder=False,
                                            max_content_bytes=128 * 1024))) as c:
        m = await call(c, "recallite_remember", type="fact", title="Deploy log", content=body)
        rec = await c.call_tool("recallite_recall", {"query": "deploy script cache bucket"})
        hit = rec.structured_content["memories"][0]
        assert hit["content_chars"] == len(body) and len(hit["content"]) == HIT_CHARS
        assert len(rec.content[0].text) < HIT_CHARS + 1000 and f'recallite_get ids=["{m["id"]}"]' in rec.content[0].text
        ctx = await c.call_tool("recallite_context", {"query": "deploy script cache bucket", "max_tokens": 2000})
        assert ctx.structured_content["tokens"] <= 2000 and len(ctx.content[0].text) < 2000 * 5
        parts, offset = [], 0
        while offset is not None:
            got = await c.call_tool("recallite_get", {"ids": [m["id"]], "offset": offset})
            part = got.structured_content["memories"][0]
            assert len(part["content"]) <= GET_CHARS and len(got.content[0].text) <= GET_CHARS + 1000
            if part.get("next_offset"):
                assert f"offset={part['next_offset']}" in got.content[0].text  # how to fetch the rest
            parts.append(part["content"])
            offset = part.get("next_offset")
        assert "".join(parts) == body  # the pointer leads to every character, once
        many = await c.call_tool("recallite_get", {"ids": [m["id"]] * 5})
        assert len(many.content[0].text) <= MAX_TEXT + 200


async def test_fts_operators_on_unrelated_memories_find_nothing(client):
    r = await call(client, "recallite_recall", query='"foo NEAR(')
    assert r["memories"] == []
    ctx = await call(client, "recallite_context", query='"foo NEAR(')
    assert ctx["memory_ids"] == []


async def test_a_context_too_small_for_its_budget_said_nothing_matched(client):
    """max_tokens=5 left every match out, and the text said "No stored memory matches this task"
    (a new user's trial): it says what did not fit and what to do."""
    res = await client.call_tool("recallite_context", {"query": "fix the flaky test in test_io", "max_tokens": 5})
    text, data = res.content[0].text, res.structured_content
    assert not data["memory_ids"] and data["omitted"] >= 1
    assert text.startswith("Nothing fit the token budget: ") and "raise max_tokens" in text
    assert "No stored memory matches" not in text


async def test_one_hit_said_1_hits():
    """A recall that found one memory said "1 hits" (a new user's trial): counts agree with their noun."""
    async with Client(build_server(Settings(db=":memory:", embedder="hash", warm_embedder=False, scope="p",
                                            scope_origin="flag"))) as c:
        await call(c, "recallite_remember", type="fact", content="The web frontend is built with vite and served by nginx.")
        recall = (await c.call_tool("recallite_recall", {"query": "vite nginx frontend"})).content[0].text
        listed = (await c.call_tool("recallite_list", {})).content[0].text
        context = (await c.call_tool("recallite_context", {"query": "vite nginx frontend"})).content[0].text
    assert "1 hit" in recall and "1 hits" not in recall
    assert listed.startswith("1 memory in ") and "1 memories" not in listed
    assert "1 memory" in context and "1 memories" not in context


def test_counted_says_one_and_many():
    from recallite_mcp.render import counted

    assert [counted(n, "hit") for n in (0, 1, 2)] == ["0 hits", "1 hit", "2 hits"]
    assert counted(1, "memory", "memories") == "1 memory" and counted(3, "memory", "memories") == "3 memories"


async def test_a_budget_that_fit_only_the_footer_said_nothing_to_act_on(client):
    """max_tokens 30 or 60 on a long memory returned no memory and only the footer "(1 more matching
    memories left out ...)", with no hint (a new user's trial); max_tokens 1 said what to do."""
    await call(client, "recallite_remember", type="lesson",
               content="Flaky temp dir tests: " + "use tmp_path per test and never share a directory. " * 600)
    for budget in (30, 60):
        res = await client.call_tool("recallite_context", {"query": "flaky temp dir tests", "max_tokens": budget})
        text, data = res.content[0].text, res.structured_content
        if not data["memory_ids"]:
            assert text.startswith("Nothing fit the token budget: ") and "raise max_tokens" in text, budget


async def test_a_derived_title_printed_each_hit_twice(client):
    """A recall text printed the title, then the content it was cut from (a new user's trial): most
    titles are the content's first sentence, so every hit's text came twice."""
    text = (await client.call_tool("recallite_recall", {"query": "ruff check before committing"})).content[0].text
    assert text.count("Run ruff check --fix before committing") == 1
    await call(client, "recallite_remember", type="procedure", title="Lint first", content="Run ruff twice before a release.")
    text = (await client.call_tool("recallite_recall", {"query": "ruff twice before a release"})).content[0].text
    assert "**Lint first**" in text and "Run ruff twice before a release." in text


async def test_hidden_characters_reach_the_model_escaped_in_recall_list_and_get_text(client):
    """U+202E came raw in the text blocks of recall, list and get (only context showed [U+202E]),
    though docs/security.md says hidden characters are shown escaped in every format. The
    structured content keeps the stored text."""
    stored = "Deploys go through Argo CD \u202etxt.exe\u202c and never by hand\u200b."
    m = await call(client, "recallite_remember", type="fact", title="Argo \u202eCD\u202c deploys", content=stored)
    for tool, args in (("recallite_recall", {"query": "Argo CD deploys by hand"}), ("recallite_list", {}),
                       ("recallite_get", {"ids": [m["id"]]}), ("recallite_context", {"query": "Argo CD deploys by hand"})):
        res = await client.call_tool(tool, args)
        text = res.content[0].text
        assert not res.is_error and "[U+202E]" in text, (tool, text)
        assert not any(ch in text for ch in "\u202e\u202c\u200b"), (tool, text)
        if tool == "recallite_get":
            assert "[U+200B]" in text and res.structured_content["memories"][0]["content"] == stored
    hit = (await call(client, "recallite_recall", query="Argo CD deploys by hand"))["memories"][0]
    assert hit["id"] == m["id"] and "\u202e" in hit["content"]  # structured output: as stored


async def test_relate_keeps_one_side_of_support_and_contradiction_per_pair(client):
    """recallite_relate stored both supports and contradicts for mem_1 and mem_2. Now the
    contradiction replaces the support and says so in one line; a support over a contradiction is
    refused in one line naming the link and the way to end it."""
    sup = await call(client, "recallite_relate", from_id="mem_1", to_id="mem_2", relation="supports")
    res = await client.call_tool("recallite_relate", {"from_id": "mem_2", "to_id": "mem_1", "relation": "contradicts"})
    rel = res.structured_content["relation"]
    assert not res.is_error and rel["replaced"] == [f"{sup['relation']['id']}: mem_1 supports mem_2"]
    assert f"It replaced {sup['relation']['id']}: mem_1 supports mem_2" in res.content[0].text
    assert res.structured_content["to_memory"]["evidence_count"] == 0
    again = await client.call_tool("recallite_relate", {"from_id": "mem_1", "to_id": "mem_2", "relation": "supports"})
    msg = again.content[0].text
    assert again.is_error and "\n" not in msg.strip(), msg
    assert f"mem_2 contradicts mem_1 ({rel['id']})" in msg and "keep_both" in msg and "Nothing was linked" in msg
    plain = await client.call_tool("recallite_relate", {"from_id": "mem_3", "to_id": "mem_4", "relation": "supports"})
    assert "replaced" not in plain.structured_content["relation"] and "It replaced" not in plain.content[0].text


async def test_a_revise_result_left_open_which_memory_is_current(client):
    """A new user's trial: "mem_1 is now superseded; the newer version is mem_2 (confidence 0.7 ...)"
    left open which memory the figures were about and which one to use now."""
    a = await call(client, "recallite_remember", content="Run make test before pushing.", type="procedure")
    r = await client.call_tool("recallite_update", {"id": a["id"], "action": "revise",
                                                    "content": "Run make check before pushing."})
    new = r.structured_content["superseded_by"]
    assert r.content[0].text.startswith(f"{new} is now current; {a['id']} is kept as history, superseded (")
