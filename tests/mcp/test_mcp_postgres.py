"""The MCP server on PostgreSQL (issue 17): `--db postgresql://...` serves the memory loop through
the same tools, and the stats tool never shows the password of the URL."""

import pytest
from mcp import Client

from recallite_mcp.server import build_server
from recallite_mcp.settings import Settings
from tests.mcp_helpers import call

pytestmark = pytest.mark.anyio

SECRET = "s3cret-pw"


async def test_memory_loop_through_the_server_on_postgres(postgres_db_url):
    head, rest = postgres_db_url.split("://", 1)
    user, _, tail = rest.partition("@")
    url = f"{head}://{user.split(':')[0]}:{SECRET}@{tail}"  # the socket's trust login ignores it
    async with Client(build_server(Settings(db=url, embedder="hash", warm_embedder=False))) as client:
        bad = await call(client, "recallite_remember", type="procedure",
                         content="To rotate the API key run the rotate-keys script from the admin box.")
        good = await call(client, "recallite_remember", type="procedure",
                          content="To rotate the API key run the rotate-keys workflow from CI.")
        ctx = await call(client, "recallite_context", query="rotate the API key", max_tokens=500)
        assert set(ctx["memory_ids"]) == {bad["id"], good["id"]}
        loser, winner = ctx["memory_ids"][0], ctx["memory_ids"][1]
        for _ in range(3):
            r = await call(client, "recallite_recall", query="rotate the API key", limit=2)
            await call(client, "recallite_feedback", retrieval_id=r["retrieval_id"], outcome="failure", used_memory_ids=[loser])
            await call(client, "recallite_feedback", retrieval_id=r["retrieval_id"], outcome="success", used_memory_ids=[winner])
        after = await call(client, "recallite_context", query="rotate the API key", max_tokens=500)
        assert after["memory_ids"][0] == winner
        await call(client, "recallite_forget", id=loser)
        stats = await call(client, "recallite_stats")
        assert stats["memories"] == 1 and stats["retrievals"] >= 5
        assert stats["db_path"].startswith("postgresql://") and SECRET not in repr(stats)


def test_cli_on_postgres_masks_the_password(postgres_db_url):
    from click.testing import CliRunner

    from recallite_mcp.cli import main

    head, rest = postgres_db_url.split("://", 1)
    user, _, tail = rest.partition("@")
    url = f"{head}://{user.split(':')[0]}:{SECRET}@{tail}"
    runner = CliRunner()
    added = runner.invoke(main, ["add", "--db", url, "--embedder", "hash", "Deploys run from CI only."])
    assert added.exit_code == 0, added.output
    for args in (["stats"], ["doctor"], ["recall", "deploys CI"]):
        res = runner.invoke(main, [args[0], "--db", url, "--embedder", "hash", *args[1:]])
        assert SECRET not in res.output, (args, res.output)
        assert res.exit_code == 0, (args, res.output)
    assert "postgresql://postgres:***@" in runner.invoke(main, ["stats", "--db", url, "--embedder", "hash"]).output
