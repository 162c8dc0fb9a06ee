"""Scopes follow the client's roots in every protocol mode the mcp 2.x SDK offers (issue 15: in the
default mode a client offering roots got scope `default`; only legacy mode worked and was tested).

Modes: `legacy` (initialize handshake, roots/list sent mid-call), `auto` (the SDK default; in
process it dispatches the 2026-07-28 protocol directly, over stdio and HTTP it discovers it) and a
pinned modern version (roots arrive through an input-required round). Plus: the rule when no root
applies, and the stats line that says so."""

import os
import sys
import warnings
from pathlib import Path

import mcp_types as t
import pytest
from mcp import Client, StdioServerParameters

from recallite_mcp.server import build_server
from recallite_mcp.settings import Settings
from tests.mcp_helpers import ROOT, call, http_server

pytestmark = [pytest.mark.anyio, pytest.mark.filterwarnings("ignore::mcp.MCPDeprecationWarning")]
MODES = ["legacy", "auto", "2026-07-28"]


def repo(path: Path, remote: str) -> Path:
    (path / ".git").mkdir(parents=True)
    (path / ".git" / "config").write_text(f'[remote "origin"]\n\turl = {remote}\n')
    return path


def roots_of(*folders: Path):
    async def cb(ctx):
        return t.ListRootsResult(roots=[t.Root(uri=f.as_uri(), name=f.name) for f in folders])

    return cb


def settings(tmp_path, **kw) -> Settings:
    return Settings(db=str(tmp_path / "m.db"), embedder="hash", warm_embedder=False, **kw)


@pytest.mark.parametrize("mode", MODES)
async def test_roots_choose_the_scope_in_process(tmp_path, mode):
    web = repo(tmp_path / "web", "https://git.example/web.git")
    async with Client(build_server(settings(tmp_path)), mode=mode, list_roots_callback=roots_of(web)) as c:
        m = await call(c, "recallite_remember", type="lesson", content="The web build needs node 20 for vite.")
        stats = await call(c, "recallite_stats")
        ctx = await call(c, "recallite_context", query="web build node version")
    assert m["scope"].startswith("web-") and stats["active_scope"] == m["scope"] and stats["scope_rule"] == "roots"
    assert stats.get("scope_note") is None and ctx["memory_ids"] == [m["id"]] and ctx["scope"] == m["scope"]


@pytest.mark.parametrize("mode", MODES)
async def test_two_clients_with_different_roots_stay_apart(tmp_path, mode):
    web = repo(tmp_path / "web", "https://git.example/web.git")
    api = repo(tmp_path / "api", "https://git.example/api.git")
    async with Client(build_server(settings(tmp_path)), mode=mode, list_roots_callback=roots_of(web)) as c1, \
               Client(build_server(settings(tmp_path)), mode=mode, list_roots_callback=roots_of(api)) as c2:
        w = await call(c1, "recallite_remember", type="lesson", content="The web build needs node 20 for vite.")
        a = await call(c2, "recallite_remember", type="lesson", content="The api build needs go 1.22 for generics.")
        listed1 = await call(c1, "recallite_list")
        listed2 = await call(c2, "recallite_list")
    assert w["scope"].startswith("web-") and a["scope"].startswith("api-")
    assert [m["id"] for m in listed1["memories"]] == [w["id"]] and [m["id"] for m in listed2["memories"]] == [a["id"]]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_roots_over_stdio(tmp_path, mode):
    web = repo(tmp_path / "web", "https://git.example/web.git")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "core"), os.environ.get("PYTHONPATH", "")]))
    params = StdioServerParameters(command=sys.executable, cwd=str(tmp_path), env=env,
                                   args=["-m", "recallite_mcp", "--db", str(tmp_path / "s.db"), "--embedder", "hash"])
    async with Client(params, mode=mode, list_roots_callback=roots_of(web)) as c:
        m = await call(c, "recallite_remember", type="fact", content="The web app deploys from main.")
        stats = await call(c, "recallite_stats")
    assert m["scope"].startswith("web-") and stats["scope_rule"] == "roots"


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_roots_over_http_keep_two_clients_apart(tmp_path, mode):
    web = repo(tmp_path / "web", "https://git.example/web.git")
    api = repo(tmp_path / "api", "https://git.example/api.git")
    with http_server(tmp_path) as url:
        async with Client(url, mode=mode, list_roots_callback=roots_of(web)) as c1, \
                   Client(url, mode=mode, list_roots_callback=roots_of(api)) as c2:
            w = await call(c1, "recallite_remember", type="fact", content="The web app deploys from main.")
            a = await call(c2, "recallite_remember", type="fact", content="The api deploys from release tags.")
            w2 = await call(c1, "recallite_remember", type="fact", content="The web app uses vite.")
    assert w["scope"].startswith("web-") and a["scope"].startswith("api-") and w2["scope"] == w["scope"]


@pytest.mark.parametrize("mode", MODES)
async def test_no_root_no_flag_no_git_says_so_in_stats(tmp_path, monkeypatch, mode):
    monkeypatch.chdir(tmp_path)  # no git repository here
    async with Client(build_server(settings(tmp_path)), mode=mode) as c:
        res = await c.call_tool("recallite_stats", {})
    stats, text = res.structured_content, res.content[0].text
    assert stats["active_scope"] == "default" and stats["scope_rule"] == "default"
    assert "no client roots" in stats["scope_reason"] and "--scope" in stats["scope_note"]
    assert "Scope: default" in text and stats["scope_note"] in text


async def test_client_with_roots_but_no_folder_open_falls_back_to_the_flag(tmp_path):
    async with Client(build_server(settings(tmp_path, scope="shop", scope_origin="flag")),
                      list_roots_callback=roots_of()) as c:
        stats = await call(c, "recallite_stats")
    assert stats["active_scope"] == "shop" and stats["scope_rule"] == "flag"
    assert "offers roots but has no folder open" in stats["scope_reason"]


async def test_client_whose_roots_fail_still_gets_served(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)

    async def broken(ctx):
        raise RuntimeError("roots unavailable")

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        async with Client(build_server(settings(tmp_path)), mode="legacy", list_roots_callback=broken) as c:
            m = await call(c, "recallite_remember", type="fact", content="Served without roots.")
    assert m["scope"] == "default"
