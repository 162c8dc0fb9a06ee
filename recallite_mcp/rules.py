"""The agent rules, served as an MCP prompt. Same text as agent-rules/AGENTS.md (a test checks)."""

from importlib import resources


def agent_rules() -> str:
    return resources.files("recallite_mcp").joinpath("agent_rules.md").read_text(encoding="utf-8")
