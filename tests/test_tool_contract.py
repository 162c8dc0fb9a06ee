"""Pins the MCP tool contract: names, parameters, required ones, output fields, hints.
A change here is a change for every client: update the README tool table with it."""

import pytest
from mcp import Client

from recallite_mcp.server import build_server
from recallite_mcp.settings import Settings

pytestmark = pytest.mark.anyio

CONTRACT = {
    "recallite_context": (["query"], ["expand_beliefs", "format", "include_teams", "limit", "max_tokens", "min_trust", "profile",
                                      "query", "scope", "session", "types"],
                          ["context", "memory_ids", "omitted", "retrieval_id", "scope", "tokens", "truncated"]),
    "recallite_remember": (["content"], ["category", "cites", "content", "importance", "level", "metadata", "scope", "source",
                                         "source_id", "tags", "title", "type", "valid_until", "working"],
                           ["duplicate_of", "hint", "id", "layer", "scope", "source", "status", "title", "type"]),
    "recallite_feedback": (["outcome"], ["client_key", "outcome", "reason", "retrieval_id", "score", "used_memory_ids"],
                           ["changes", "duplicate", "feedback_id", "outcome", "promoted", "retrieval_id", "score"]),
    "recallite_stats": ([], ["scope"], None),
    "recallite_relate": (["from_id", "relation", "to_id"], ["from_id", "relation", "to_id"], ["from_memory", "relation", "to_memory"]),
    "recallite_recall": (["query"], ["categories", "expand_beliefs", "include_inactive", "include_teams", "limit", "min_score",
                                     "min_trust", "profile", "query", "roles", "scope", "session", "types", "window"],
                         ["memories", "retrieval_id", "scope"]),
    "recallite_update": (["action", "id"], ["action", "content", "id", "layer", "reason", "source", "superseded_by", "team_scope"],
                         ["confidence", "id", "layer", "scope", "status", "superseded_by"]),
    "recallite_get": (["ids"], ["ids", "retrieval_id"], ["memories"]),
    "recallite_forget": (["id"], ["id", "orphans", "vacuum"], ["deleted", "id", "orphans", "removed"]),
    # conversation memory
    "recallite_record": (["session", "turns"], ["scope", "session", "turns"], ["scope", "session", "turns"]),
    "recallite_why": (["id"], ["id", "window"], ["id", "sources"]),
    # SLM-Lite
    "recallite_beliefs": (["topic"], ["depth", "include_teams", "limit", "min_trust", "scope", "topic"],
                          ["edges", "nodes", "retrieval_id", "topic"]),
    "recallite_history": (["id"], ["id"], ["versions"]),
    "recallite_capture": (["description", "kind"], ["agent_id", "context", "description", "kind", "outcome", "tool"],
                          ["pending", "queued"]),
    "recallite_auto_context": (["text"], ["format", "include_teams", "limit", "max_tokens", "min_trust", "text"],
                               ["concepts", "context", "memory_ids", "method", "query", "retrieval_id", "scope", "summary",
                                "tokens"]),
}


@pytest.fixture
def anyio_backend():
    return "asyncio"


async def test_tool_contract():
    async with Client(build_server(Settings(db=":memory:", embedder="hash", warm_embedder=False))) as c:
        tools = {t.name: t for t in (await c.list_tools()).tools}
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
        assert t.description and len(t.description) > 60, name
        assert t.annotations is not None
    assert tools["recallite_stats"].annotations.read_only_hint is True
    assert tools["recallite_get"].annotations.read_only_hint is True
    assert tools["recallite_why"].annotations.read_only_hint is True
    assert tools["recallite_record"].annotations.destructive_hint is False
    assert tools["recallite_forget"].annotations.destructive_hint is True
    assert tools["recallite_remember"].annotations.destructive_hint is False
    assert tools["recallite_history"].annotations.read_only_hint is True
    assert tools["recallite_update"].input_schema["properties"]["action"]["enum"] == [
        "validate", "activate", "deprecate", "supersede", "revise", "promote", "share"]
    enum = tools["recallite_feedback"].input_schema["properties"]["outcome"]["enum"]
    assert enum == ["success", "failure", "partial"]
    rel = tools["recallite_relate"].input_schema["properties"]["relation"]["enum"]
    assert rel == ["contradicts", "supports", "derived_from", "supersedes", "causes", "requires"]


def test_agent_rules_copy_is_identical():
    from pathlib import Path

    from recallite_mcp.rules import agent_rules

    root = Path(__file__).resolve().parents[1]
    assert (root / "agent-rules" / "AGENTS.md").read_text() == agent_rules()
    for f in ("AGENTS.md", ".cursorrules", "claude-system-prompt.md"):
        text = (root / "agent-rules" / f).read_text()
        for tool in ("recallite_context", "recallite_remember", "recallite_feedback"):
            assert tool in text, (f, tool)


def test_docs_name_every_tool_and_only_real_ones():
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    readme = (root / "README.md").read_text()
    assert [t for t in CONTRACT if f"`{t}`" not in readme] == []
    for f in ("AGENTS.md", ".cursorrules", "claude-system-prompt.md"):
        named = set(re.findall(r"recallite_\w+", (root / "agent-rules" / f).read_text()))
        assert named - set(CONTRACT) - {"recallite_rules"} == set(), f
