"""Pins the MCP tool contract: names, parameters, required ones, output fields, hints.
A change here is a change for every client: update the README tool table with it."""

import json

import pytest
from mcp import Client

from recallite_mcp.server import build_server
from recallite_mcp.settings import Settings
from tests.mcp_helpers import call, error_text

pytestmark = pytest.mark.anyio

# The core set (served by default): (required, advertised parameters, output fields).
CONTRACT = {
    "recallite_context": (["query"], ["format", "limit", "max_tokens", "query", "scope", "task", "types"],
                          ["context", "hint", "memory_ids", "omitted", "retrieval_id", "scope", "task_names", "tokens",
                           "truncated", "turn_ids"]),
    "recallite_remember": (["content"], ["content", "level", "metadata", "source", "tags", "title", "type", "valid_until"],
                           ["conflicts_with", "duplicate_of", "hint", "id", "layer", "note", "scope", "source", "status",
                            "supersedes", "title", "type"]),
    "recallite_feedback": (["outcome"], ["outcome", "reason", "retrieval_id", "score", "task", "used_memory_ids"],
                           ["already_judged", "changes", "duplicate", "feedback_id", "not_shown", "outcome", "promoted", "retrieval_id",
                            "score", "task"]),
    "recallite_recall": (["query"], ["include_inactive", "limit", "query", "scope", "types"],
                         ["hint", "memories", "retrieval_id", "scope", "task_names"]),
    "recallite_get": (["ids"], ["ids", "offset", "retrieval_id"], ["memories"]),
    "recallite_list": ([], ["limit", "offset", "scope", "sources", "statuses", "tags", "types"],
                       ["hint", "memories", "next_offset", "offset", "scopes"]),
    "recallite_update": (["action", "id"], ["action", "content", "id", "other", "reason", "superseded_by"],
                         ["confidence", "id", "layer", "note", "scope", "status", "superseded_by"]),
    "recallite_forget": (["id"], ["id", "vacuum"], ["deleted", "id", "orphans", "removed"]),
    "recallite_stats": ([], ["scope"], None),
    "recallite_relate": (["from_id", "relation", "to_id"], ["from_id", "relation", "to_id"], ["from_memory", "relation", "to_memory"]),
}
# With --tools all: these tools too, and the core tools' advanced parameters.
EXTRA = {
    "recallite_record": (["session", "turns"], ["scope", "session", "turns"], ["scope", "session", "turns"]),
    "recallite_why": (["id"], ["id", "window"], ["id", "sources"]),
    "recallite_beliefs": (["topic"], ["depth", "include_teams", "limit", "min_trust", "scope", "topic"],
                          ["edges", "nodes", "retrieval_id", "topic"]),
    "recallite_history": (["id"], ["id"], ["versions"]),
    "recallite_capture": (["description", "kind"], ["agent_id", "context", "description", "kind", "outcome", "tool"],
                          ["pending", "queued"]),
    "recallite_auto_context": (["text"], ["format", "include_teams", "limit", "max_tokens", "min_trust", "text"],
                               ["concepts", "context", "hint", "memory_ids", "method", "query", "retrieval_id", "scope",
                                "summary", "tokens"]),
}
ADVANCED = {
    "recallite_context": ["expand_beliefs", "include_teams", "min_trust", "profile", "session"],
    "recallite_remember": ["category", "cites", "importance", "scope", "source_id", "working"],
    "recallite_feedback": ["client_key"],
    "recallite_recall": ["categories", "expand_beliefs", "include_teams", "min_score", "min_trust", "profile", "roles",
                         "session", "task", "window"],
    "recallite_update": ["layer", "source", "team_scope"],
    "recallite_forget": ["orphans"],
}
BUDGET = 8000  # characters of names, descriptions and input schemas in the default tools/list (issue 15)


async def listed(**kw):
    async with Client(build_server(Settings(db=":memory:", embedder="hash", warm_embedder=False, **kw))) as c:
        return {t.name: t for t in (await c.list_tools()).tools}


def size(t) -> int:
    return len(t.name) + len(t.description or "") + len(json.dumps(t.input_schema))


async def test_tool_contract():
    tools = await listed()
    assert sorted(tools) == sorted(CONTRACT)
    for name, (required, params, outputs) in CONTRACT.items():
        t = tools[name]
        schema = t.input_schema
        assert sorted(schema.get("required", [])) == required, name
        assert sorted(schema["properties"]) == params, name
        for p, spec in schema["properties"].items():
            assert spec.get("description"), f"{name}.{p} has no description"
        assert t.output_schema is not None, name
        if outputs is not None:
            assert sorted(t.output_schema["properties"]) == outputs, name
        assert t.description and len(t.description) > 40, name
        assert "\n" not in t.description and "  " not in t.description, name  # no docstring indentation
        assert t.annotations is not None
    assert tools["recallite_stats"].annotations.read_only_hint is True
    assert tools["recallite_get"].annotations.read_only_hint is True
    assert tools["recallite_list"].annotations.read_only_hint is True
    assert tools["recallite_forget"].annotations.destructive_hint is True
    assert tools["recallite_remember"].annotations.destructive_hint is False
    assert tools["recallite_update"].input_schema["properties"]["action"]["enum"] == [
        "validate", "activate", "deprecate", "supersede", "restore", "keep_both", "revise"]  # share, promote: --tools all
    enum = tools["recallite_feedback"].input_schema["properties"]["outcome"]["enum"]
    assert enum == ["success", "failure", "partial"]
    rel = tools["recallite_relate"].input_schema["properties"]["relation"]["enum"]
    assert rel == ["contradicts", "supports", "derived_from", "supersedes", "causes", "requires"]


async def test_default_tool_list_fits_the_budget():
    """What every session pays before the first call: names, descriptions and input schemas of
    the default tools/list, as a client receives them."""
    tools = await listed()
    sizes = {name: size(t) for name, t in tools.items()}
    print("\ntools/list:", sum(sizes.values()), "chars", sizes)
    assert sum(sizes.values()) <= BUDGET, sizes
    for name, t in tools.items():
        text = json.dumps(t.input_schema)
        assert '"title": "' not in text, name  # no generated titles (a parameter named title is an object)
        assert '{"type": "null"}' not in text, name  # optional means: leave it out
        assert '"title": "' not in json.dumps(t.output_schema), name


async def test_all_tools_contract():
    tools = await listed(tools="all")
    assert sorted(tools) == sorted({**CONTRACT, **EXTRA})
    for name, (required, params, outputs) in EXTRA.items():
        t = tools[name]
        assert sorted(t.input_schema.get("required", [])) == required, name
        assert sorted(t.input_schema["properties"]) == params, name
        assert sorted(t.output_schema["properties"]) == outputs, name
        assert "\n" not in t.description, name
    for name, (_, params, _) in CONTRACT.items():
        assert sorted(tools[name].input_schema["properties"]) == sorted(params + ADVANCED.get(name, [])), name
    assert tools["recallite_why"].annotations.read_only_hint is True
    assert tools["recallite_history"].annotations.read_only_hint is True
    assert tools["recallite_record"].annotations.destructive_hint is False


async def test_advanced_parameters_are_accepted_by_the_core_set():
    async with Client(build_server(Settings(db=":memory:", embedder="hash", warm_embedder=False))) as c:
        m = await call(c, "recallite_remember", content="Scratch: the flaky test is test_io.", working=True)
        assert m["layer"] == "working"
        r = await call(c, "recallite_recall", query="flaky test", profile="debugger", window=1)
        assert [h["id"] for h in r["memories"]] == [m["id"]]


async def test_an_extra_tool_on_the_core_set_says_how_to_get_it():
    async with Client(build_server(Settings(db=":memory:", embedder="hash", warm_embedder=False))) as c:
        text = await error_text(c, "recallite_why", id="mem_1")
    assert "--tools all" in text and "RECALLITE_TOOLS=all" in text


async def test_an_unknown_tool_got_the_sdks_bare_message():
    """A new user's trial: "Unknown tool: recallite_search", naming nothing the server offers."""
    async with Client(build_server(Settings(db=":memory:", embedder="hash", warm_embedder=False))) as c:
        text = await error_text(c, "recallite_search", query="x")
    assert "\n" not in text and "Unknown tool 'recallite_search'" in text
    assert all(name in text for name in CONTRACT)
    async with Client(build_server(Settings(db=":memory:", embedder="hash", warm_embedder=False))) as c:
        assert "did you mean recallite_recall?" in await error_text(c, "recallite_recal", query="x")


def test_agent_rules_copy_is_identical():
    from pathlib import Path

    from recallite_mcp.rules import agent_rules

    root = Path(__file__).resolve().parents[2]
    assert (root / "agent-rules" / "AGENTS.md").read_text() == agent_rules()
    for f in ("AGENTS.md", "recallite.mdc", "claude-system-prompt.md"):
        text = (root / "agent-rules" / f).read_text()
        for tool in ("recallite_context", "recallite_remember", "recallite_feedback"):
            assert tool in text, (f, tool)


def test_docs_name_every_tool_and_only_real_ones():
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    readme = (root / "README.md").read_text()
    assert [t for t in CONTRACT if f"`{t}`" not in readme] == []  # the default tools, at least
    for f in ("AGENTS.md", "recallite.mdc", "claude-system-prompt.md"):
        named = set(re.findall(r"recallite_\w+", (root / "agent-rules" / f).read_text()))
        assert named - set(CONTRACT) - set(EXTRA) - {"recallite_rules"} == set(), f


async def test_the_core_list_offered_update_actions_whose_parameters_it_hid():
    """A new user's trial: the core recallite_update offered action share and promote, but its schema
    listed neither team_scope nor layer, and the description called promote "a working entry" (working
    memory is not in the core set). They are offered with --tools all only, where their parameters are."""
    for tools, shown in (("core", False), ("all", True)):
        async with Client(build_server(Settings(db=":memory:", embedder="hash", warm_embedder=False, tools=tools))) as c:
            schema = next(t for t in (await c.list_tools()).tools if t.name == "recallite_update").input_schema
            actions = schema["properties"]["action"]["enum"]
            assert ("share" in actions and "promote" in actions) is shown
            assert ("team_scope" in schema["properties"] and "layer" in schema["properties"]) is shown
            assert "validate" in actions and "revise" in actions
