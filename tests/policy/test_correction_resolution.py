"""Settling what write-time detection did, in one call, over MCP and from the shell (issue 20): before,
only the Python API had undo_supersede and resolve_conflict, and the note told an MCP agent to
"keep both" with no tool to do it."""

import pytest
from click.testing import CliRunner

from recallite_core import Recallite
from recallite_mcp.cli import main

PORT_OLD, PORT_NEW = "The staging server runs on port 8080.", "The staging server moved to port 9090 last week."
TABS, SPACES = "The team prefers tabs for indentation.", "The team prefers spaces for indentation."


@pytest.mark.anyio
async def test_an_mcp_agent_can_keep_both_sides_of_a_conflict_or_restore_a_superseded_memory():
    from mcp import Client

    from recallite_mcp.server import build_server
    from recallite_mcp.settings import Settings
    from tests.mcp_helpers import call, error_text

    async with Client(build_server(Settings(db=":memory:", embedder="hash", warm_embedder=False))) as client:
        a = await call(client, "recallite_remember", content=TABS, type="fact")
        b = await call(client, "recallite_remember", content=SPACES, type="fact")
        assert b["conflicts_with"] == [a["id"]]
        assert f"keep_both {b['id']} with {a['id']}" in b["note"]  # the note names the call that settles it
        hits = (await call(client, "recallite_recall", query="team prefers tabs"))["memories"]
        assert any(h.get("warnings") for h in hits)

        assert "needs other" in await error_text(client, "recallite_update", id=b["id"], action="keep_both")
        assert "only for action=keep_both" in await error_text(client, "recallite_update", id=b["id"],
                                                                action="validate", other=a["id"])
        await call(client, "recallite_update", id=b["id"], action="keep_both", other=a["id"])
        hits = (await call(client, "recallite_recall", query="team prefers tabs"))["memories"]
        assert {h["id"] for h in hits} >= {a["id"], b["id"]} and not any(h.get("warnings") for h in hits)

        old = await call(client, "recallite_remember", content=PORT_OLD, type="fact")
        new = await call(client, "recallite_remember", content=PORT_NEW, type="fact")
        assert new["note"].startswith(f"supersedes {old['id']}")
        back = await call(client, "recallite_update", id=old["id"], action="restore")
        assert back["status"] != "superseded"
        ids = [h["id"] for h in (await call(client, "recallite_recall", query="staging server port"))["memories"]]
        assert old["id"] in ids and new["id"] in ids
        assert "not superseded" in await error_text(client, "recallite_update", id=old["id"], action="restore")


def test_the_shell_can_resolve_a_conflict_and_restore_a_superseded_memory(tmp_path):
    db = str(tmp_path / "m.db")
    mem = Recallite.open(db, embedder="hash")
    try:
        a = mem.remember(TABS, type="fact", scope="s", source={"type": "agent"})
        b = mem.remember(SPACES, type="fact", scope="s", source={"type": "agent"})
        old = mem.remember(PORT_OLD, type="fact", scope="s", source={"type": "agent"})
        new = mem.remember(PORT_NEW, type="fact", scope="s", source={"type": "agent"})
        assert b.conflicts_with == [a.id] and new.supersedes == [old.id]
    finally:
        mem.close()

    def run(*args):
        return CliRunner().invoke(main, [*args[:1], "--db", db, "--embedder", "hash", *args[1:]], catch_exceptions=False)

    res = run("resolve", a.id, b.id, "--keep", b.id)
    assert res.exit_code == 0 and f"{b.id} holds" in res.output
    res = run("restore", old.id)
    assert res.exit_code == 0 and f"{old.id} is" in res.output
    res = run("restore", old.id)
    assert res.exit_code != 0 and "not superseded" in res.output
    mem = Recallite.open(db, embedder="hash")
    try:
        assert mem.get(a.id).status == "superseded" and mem.get(a.id).superseded_by == b.id
        assert mem.get(old.id).status != "superseded" and not mem.relations(old.id)
    finally:
        mem.close()


@pytest.mark.anyio
async def test_an_untrusted_client_cannot_restore_or_clear_a_conflict():
    """restore and keep_both go through the same actor check as validate and supersede."""
    from mcp import Client

    from recallite_mcp.server import build_server
    from recallite_mcp.settings import Settings
    from tests.mcp_helpers import call, error_text

    async with Client(build_server(Settings(db=":memory:", embedder="hash", warm_embedder=False))) as client:
        a = await call(client, "recallite_remember", content=TABS, type="fact")
        b = await call(client, "recallite_remember", content=SPACES, type="fact")
        assert "untrusted actor" in await error_text(client, "recallite_update", id=b["id"], action="keep_both",
                                                     other=a["id"], source="llm")
        old = await call(client, "recallite_remember", content=PORT_OLD, type="fact")
        await call(client, "recallite_remember", content=PORT_NEW, type="fact")
        assert "untrusted actor" in await error_text(client, "recallite_update", id=old["id"], action="restore",
                                                     source="llm")
        back = await call(client, "recallite_update", id=old["id"], action="restore")
        assert back["status"] != "superseded"
