"""The client examples: configs that our CLI accepts, without a hard-coded scope, and agent-rule
files in the clients' current formats that name only tools the server has."""

import json
import re
from pathlib import Path

import anyio
import pytest

from recallite_mcp.cli import main

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
CONFIGS = sorted(p.relative_to(EXAMPLES).as_posix() for p in EXAMPLES.rglob("*.json"))


def server_tool_names() -> set[str]:
    from mcp import Client

    from recallite_mcp.server import build_server
    from recallite_mcp.settings import Settings

    async def run():
        settings = Settings(db=":memory:", embedder="hash", warm_embedder=False, tools="all")
        async with Client(build_server(settings)) as client:
            return {t.name for t in (await client.list_tools()).tools}

    return anyio.run(run)


def test_there_is_a_config_for_each_client_and_one_for_after_publishing():
    assert {"claude_desktop_config.json", "cursor/mcp.json", "windsurf/mcp_config.json",
            "after-publishing/mcp.json"} <= set(CONFIGS)


@pytest.mark.parametrize("name", CONFIGS)
def test_example_configs_run_our_cli_without_a_scope(name):
    server = json.loads((EXAMPLES / name).read_text())["mcpServers"]["recallite"]
    args = server["args"]
    assert server["command"] == "uvx" and "--scope" not in args
    if name.startswith("after-publishing/"):
        assert args[0] == "recallite-mcp"
    else:  # works today, from a checkout
        assert args[:3] == ["--from", "/path/to/recallite-mcp", "recallite-mcp"]
    main.make_context("recallite-mcp", args[args.index("recallite-mcp") + 1:])


def test_the_cursor_rule_the_docs_point_to_uses_the_mdc_format():
    """Cursor's current rules format (.cursor/rules/*.mdc with front matter), not the legacy .cursorrules."""
    readme = (ROOT / "README.md").read_text() + (EXAMPLES / "README.md").read_text()
    assert "agent-rules/recallite.mdc" in readme and ".cursorrules" not in readme
    text = (ROOT / "agent-rules" / "recallite.mdc").read_text()
    m = re.match(r"---\n(.*?)\n---\n", text, flags=re.S)
    assert m, "front matter first"
    fields = dict(line.split(":", 1) for line in m.group(1).splitlines())
    assert fields["alwaysApply"].strip() == "true"  # the boolean, applied to every request
    assert fields["description"].strip() and ": " not in fields["description"].strip()
    assert set(fields) <= {"description", "globs", "alwaysApply"}


def test_rule_files_name_only_real_tools():
    real = server_tool_names() | {"recallite_rules"}
    for f in ("agent-rules/recallite.mdc", "examples/claude-code/CLAUDE.md"):
        text = (ROOT / f).read_text()
        named = set(re.findall(r"recallite_\w+", text))
        assert {"recallite_context", "recallite_remember", "recallite_feedback"} <= named, f
        assert named <= real, (f, named - real)
