"""A search in a scope that holds no memory at all (a misspelt or never-used scope) returned nothing,
silently, like a search that merely matched nothing (a new user's trial). The result now carries a
one-line hint naming the scopes that do hold memories, most first; through the MCP tools and the CLI."""

import pytest
from click.testing import CliRunner
from mcp import Client

from recallite_core import Recallite
from recallite_mcp.cli import main
from recallite_mcp.render import empty_scope_hint
from recallite_mcp.server import build_server
from recallite_mcp.settings import Settings
from tests.mcp_helpers import call

pytestmark = pytest.mark.anyio

STORED = [("web-app", "Deploy the web app with make ship."), ("web-app", "The web app is built with vite."),
          ("web-app", "Run ruff before committing."), ("default", "Backups run nightly at 02:00.")]


def server(**kw):
    return build_server(Settings(db=":memory:", embedder="hash", warm_embedder=False, scope="default",
                                 scope_origin="flag", **kw))


async def remember_all(c):
    for scope, text in STORED:
        await call(c, "recallite_remember", type="fact", content=text, scope=scope)


async def test_recall_and_context_in_an_unknown_scope_said_nothing():
    async with Client(server(tools="all")) as c:
        await remember_all(c)
        want = "scope 'proj-x' holds no memories; known scopes: web-app, default."
        res = await c.call_tool("recallite_recall", {"query": "deploy the web app", "scope": "proj-x"})
        assert res.structured_content["memories"] == [] and res.structured_content["hint"] == want
        assert res.content[0].text.splitlines()[-1] == want
        res = await c.call_tool("recallite_context", {"query": "deploy the web app", "scope": "proj-x"})
        assert res.structured_content["hint"] == want and res.content[0].text.splitlines()[-1] == want
        # a scope that holds memories but none that match: no hint (nothing to correct)
        res = await c.call_tool("recallite_recall", {"query": "zebra", "scope": "web-app"})
        assert res.structured_content["memories"] == [] and "hint" not in res.structured_content
        assert "holds no memories" not in res.content[0].text
        # a search that found something: no hint, and the store is not asked
        res = await c.call_tool("recallite_recall", {"query": "deploy the web app", "scope": "web-app"})
        assert res.structured_content["memories"] and "hint" not in res.structured_content


async def test_auto_context_in_an_empty_project_scope_said_nothing():
    async with Client(server(tools="all")) as c:
        await call(c, "recallite_remember", type="fact", content="The web app is built with vite.", scope="web-app")
        out = await call(c, "recallite_auto_context", text="How do I build the web app?")
        assert out["hint"] == "scope 'default' holds no memories; known scopes: web-app."


async def test_the_hint_names_no_other_project_under_isolate_scopes():
    """With --isolate-scopes a client may not read other projects: their scope names stay hidden too."""
    mem = Recallite.open(None, embedder="hash")
    mem.remember("Secret roadmap of another project.", scope="other-proj")
    mem.remember("The user likes short answers.", type="preference", scope="user")
    try:
        async with Client(build_server(Settings(db=":memory:", embedder="hash", warm_embedder=False, scope="default",
                                                scope_origin="flag", isolate_scopes=True), memory=mem)) as c:
            res = await c.call_tool("recallite_recall", {"query": "roadmap"})
    finally:
        mem.close()
    assert res.structured_content["hint"] == "scope 'default' holds no memories; known scopes: user."
    assert "other-proj" not in res.content[0].text


def test_the_hint_lists_a_few_scopes_most_first():
    assert empty_scope_hint("x", {"a": 9, "b": 5, "c": 2, "d": 1, "e": 1}) == \
        "scope 'x' holds no memories; known scopes: a, b, c and 2 more."
    assert empty_scope_hint("x", {}) == "scope 'x' holds no memories; no scope holds any yet."


def test_cli_recall_and_context_in_an_unknown_scope_said_nothing(tmp_path):
    db = str(tmp_path / "cli.db")
    run = CliRunner()
    for scope, text in STORED:
        assert run.invoke(main, ["add", text, "--db", db, "--embedder", "hash", "--scope", scope]).exit_code == 0
    want = "scope 'proj-x' holds no memories; known scopes: web-app, default."
    for cmd in ("recall", "context"):
        res = run.invoke(main, [cmd, "deploy the web app", "--db", db, "--embedder", "hash", "--scope", "proj-x"])
        assert res.exit_code == 0 and want in res.stderr.splitlines() and "holds no" not in res.stdout, cmd
        res = run.invoke(main, [cmd, "zebra", "--db", db, "--embedder", "hash", "--scope", "web-app"])
        assert res.exit_code == 0 and "holds no" not in res.output, cmd


def test_cli_list_in_an_unknown_scope_said_nothing(tmp_path):
    """A new user's trial: `recallite-mcp list --scope proj-x` printed an empty table and no word."""
    db = str(tmp_path / "cli.db")
    run = CliRunner()
    for scope, text in STORED:
        assert run.invoke(main, ["add", text, "--db", db, "--embedder", "hash", "--scope", scope]).exit_code == 0
    res = run.invoke(main, ["list", "--db", db, "--embedder", "hash", "--scope", "proj-x"])
    assert res.exit_code == 0 and "scope 'proj-x' holds no memories; known scopes: web-app, default." in res.stderr
    res = run.invoke(main, ["list", "--db", db, "--embedder", "hash", "--scope", "web-app"])
    assert res.exit_code == 0 and "holds no" not in res.output


async def test_a_write_to_a_misspelt_scope_created_it_without_a_word():
    """A new user's trial: recallite_remember(scope="no such scope!!") stored the memory in a new scope
    and said only "Stored mem_4 ... scope no such scope!!": a typo moves memories out of the project
    unnoticed. The write still happens; its hint says the scope is new and names the known ones."""
    async with Client(server(tools="all")) as c:
        await remember_all(c)
        res = await c.call_tool("recallite_remember", {"content": "Staging runs on port 9090.", "scope": "web-ap"})
        assert res.structured_content["scope"] == "web-ap"
        assert res.structured_content["hint"] == "New scope 'web-ap'; known scopes: web-app, default."
        assert "New scope 'web-ap'" in res.content[0].text
        again = await call(c, "recallite_remember", content="Staging uses TLS.", scope="web-ap")
        assert "hint" not in again  # a scope in use: nothing to say
        same = await call(c, "recallite_remember", content="Lint with ruff.", scope="web-app")
        assert "hint" not in same


async def test_stats_of_an_unknown_scope_said_nothing_and_left_out_the_wal(tmp_path):
    # a new user's trial: recallite_stats(scope="nosuch") answered "memories 0 in nosuch" with no hint, its
    # text gave "database ... 4,096 bytes" with 428,512 bytes in the WAL, and scope=<active> counted no retrieval
    async with Client(build_server(Settings(db=str(tmp_path / "m.db"), embedder="hash", warm_embedder=False,
                                            scope="default", scope_origin="flag"))) as c:
        await remember_all(c)
        ctx = await call(c, "recallite_context", query="deploy the web app with make ship", scope="web-app")
        await call(c, "recallite_feedback", retrieval_id=ctx["retrieval_id"], outcome="success")
        res = await c.call_tool("recallite_stats", {"scope": "proj-x"})
        want = "scope 'proj-x' holds no memories; known scopes: web-app, default."
        assert res.structured_content["hint"] == want and want in res.content[0].text
        res = await c.call_tool("recallite_stats", {"scope": "web-app"})
        s, text = res.structured_content, res.content[0].text
        assert s.get("hint") is None and (s["retrievals"], s["context_calls"], s["feedback"]["success"]) == (1, 1, 1)
        assert s["wal_bytes"] > 0 and f"{s['db_bytes']:,} bytes + {s['wal_bytes']:,} WAL" in text
        res = await c.call_tool("recallite_list", {"scope": "proj-x"})
        assert res.structured_content["hint"] == want and res.content[0].text.endswith(want)


def test_cli_list_and_forget_without_a_scope_were_silent_about_the_others(tmp_path):
    """A new user's trial: `list` without --scope printed the one user-level memory and nothing
    about the 31 memories of the project scopes; `forget --source llm` without --scope said
    "forgot 0 memories" with three llm memories in a project scope. Both now name the known scopes
    when the default scope holds nothing."""
    db = str(tmp_path / "cli.db")
    run = CliRunner()
    base = ["--db", db, "--embedder", "hash"]
    assert run.invoke(main, ["add", "Deploy with make ship.", *base, "--scope", "web-app"]).exit_code == 0
    assert run.invoke(main, ["add", "The user prefers short answers.", *base, "--scope", "user",
                             "--type", "preference"]).exit_code == 0
    want = "holds no memories; known scopes: "  # the default scope is named after the working directory
    res = run.invoke(main, ["list", *base])
    assert res.exit_code == 0 and "short answers" in res.stdout and want in res.stderr and "web-app" in res.stderr
    res = run.invoke(main, ["forget", "--source", "agent", "--yes", *base])
    assert res.exit_code == 0 and "forgot 0 memories" in res.stdout and want in res.stderr
    res = run.invoke(main, ["list", *base, "--scope", "web-app"])
    assert "holds no" not in res.output


async def test_stats_headline_counted_the_whole_file_under_the_active_scope():
    """A new user's trial: in a project with no memory yet, recallite_stats opened with "Scope:
    projb ..." then "memories 1": the other project's memory, read as this one's. Without a scope
    the count now says it covers all scopes; with one, it is that scope's."""
    async with Client(server(tools="all")) as c:
        await remember_all(c)
        text = (await c.call_tool("recallite_stats", {})).content[0].text
        assert f"memories {len(STORED)} in all scopes" in text
        text = (await c.call_tool("recallite_stats", {"scope": "web-app"})).content[0].text
        assert "memories 3 in web-app" in text
