"""Automatic project scope from client roots, user-level memories, isolation, compact context."""

import warnings
from pathlib import Path

import mcp_types as t
import pytest
from mcp import Client

from recallite_mcp.scoping import decide_scope, git_remote_url, level_for, scope_for_folder
from recallite_mcp.server import build_server
from recallite_mcp.settings import Settings
from tests.mcp_helpers import call

pytestmark = [pytest.mark.anyio, pytest.mark.filterwarnings("ignore::mcp.MCPDeprecationWarning")]


def make_repo(path: Path, remote: str | None = None) -> Path:
    path.mkdir(parents=True)
    (path / ".git").mkdir()
    cfg = "[core]\n\trepositoryformatversion = 0\n"
    if remote:
        cfg += f'[remote "origin"]\n\turl = {remote}\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n'
    (path / ".git" / "config").write_text(cfg)
    return path


def roots_callback(folders: list):
    """A client whose workspace folders can change during the session."""

    async def cb(ctx):
        return t.ListRootsResult(roots=[t.Root(uri=Path(f).as_uri(), name=Path(f).name) for f in folders])

    return cb


def test_scope_names_from_git_and_folders(tmp_path):
    a = make_repo(tmp_path / "clone1" / "webapp", "git@github.com:acme/webapp.git")
    b = make_repo(tmp_path / "clone2" / "webapp", "https://github.com/acme/webapp")
    c = make_repo(tmp_path / "other" / "webapp", "https://github.com/other/webapp.git")
    assert git_remote_url(a) == "git@github.com:acme/webapp.git"
    sa, why = scope_for_folder(a / "src" if (a / "src").mkdir() is None else a)
    assert sa.startswith("webapp-") and "remote" in why
    assert scope_for_folder(b)[0] == sa  # two clones of one repository share a scope
    assert scope_for_folder(c)[0] != sa  # same folder name, another repository
    plain = tmp_path / "notes"
    plain.mkdir()
    assert scope_for_folder(plain)[0].startswith("notes-")


def test_rule_order(tmp_path):
    repo = make_repo(tmp_path / "proj", "https://example.com/proj.git")
    root_uri = repo.as_uri()
    assert decide_scope([root_uri], "flagged", "envd", str(tmp_path)).rule == "roots"
    assert decide_scope(None, "flagged", None, str(repo)).scope == "flagged"
    assert decide_scope(None, None, "envd", str(repo)).rule == "env"
    d = decide_scope(None, None, None, str(repo))
    assert d.rule == "git" and d.scope.startswith("proj-")
    assert decide_scope(None, None, None, str(tmp_path)).scope == "default"
    assert level_for("preference") == "user" and level_for("lesson") == "project" and level_for("lesson", "user") == "user"


async def test_two_clients_with_different_roots_share_only_user_memories(tmp_path):
    db = str(tmp_path / "shared.db")
    web = make_repo(tmp_path / "web", "https://git.example/web.git")
    api = make_repo(tmp_path / "api", "https://git.example/api.git")
    settings = Settings(db=db, embedder="hash", warm_embedder=False)
    async with Client(build_server(settings), mode="legacy", list_roots_callback=roots_callback([web])) as c1, \
               Client(build_server(settings), mode="legacy", list_roots_callback=roots_callback([api])) as c2:
        w = await call(c1, "recallite_remember", type="lesson", content="The web build needs node 20 for vite.")
        pref = await call(c1, "recallite_remember", type="preference", content="The user wants commit messages in English.")
        a = await call(c2, "recallite_remember", type="lesson", content="The api build needs go 1.22 for generics.")
        assert w["scope"].startswith("web-") and a["scope"].startswith("api-") and pref["scope"] == "user"
        r1 = await call(c1, "recallite_recall", query="build needs version commit messages", limit=10)
        r2 = await call(c2, "recallite_recall", query="build needs version commit messages", limit=10)
        ids1 = {m["id"] for m in r1["memories"]}
        ids2 = {m["id"] for m in r2["memories"]}
        assert w["id"] in ids1 and a["id"] not in ids1
        assert a["id"] in ids2 and w["id"] not in ids2
        assert pref["id"] in ids1 and pref["id"] in ids2
        assert {m["level"] for m in r2["memories"] if m["id"] == pref["id"]} == {"user"}
        stats = await call(c2, "recallite_stats")
        assert stats["scope_rule"] == "roots" and stats["active_scope"] == a["scope"] and "api" in stats["scope_reason"]


async def test_roots_change_switches_scope_mid_session(tmp_path):
    one = make_repo(tmp_path / "one", "https://git.example/one.git")
    two = make_repo(tmp_path / "two", "https://git.example/two.git")
    folders = [one]
    async with Client(build_server(Settings(db=str(tmp_path / "m.db"), embedder="hash", warm_embedder=False)),
                      mode="legacy", list_roots_callback=roots_callback(folders)) as c:
        first = await call(c, "recallite_remember", type="fact", content="Project one uses Postgres.")
        folders[:] = [two]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            await c.send_roots_list_changed()
        second = None
        for _ in range(50):  # the notification is handled asynchronously
            second = await call(c, "recallite_stats")
            if second["active_scope"] != first["scope"]:
                break
        assert second["active_scope"].startswith("two-")
        r = await call(c, "recallite_recall", query="Postgres database")
        assert first["id"] not in {m["id"] for m in r["memories"]}


async def test_isolate_scopes_blocks_cross_scope_access(tmp_path):
    s = Settings(db=str(tmp_path / "iso.db"), embedder="hash", warm_embedder=False, scope="alpha",
                 scope_origin="flag", isolate_scopes=True)
    open_s = Settings(db=str(tmp_path / "iso.db"), embedder="hash", warm_embedder=False, scope="beta", scope_origin="flag")
    async with Client(build_server(open_s)) as other:
        foreign = await call(other, "recallite_remember", type="fact", content="Beta secret plan.")
    async with Client(build_server(s)) as c:
        mine = await call(c, "recallite_remember", type="fact", content="Alpha plan.")
        assert mine["scope"] == "alpha"
        for tool, args in [("recallite_recall", {"query": "plan", "scope": "beta"}),
                           ("recallite_context", {"query": "plan", "scope": "beta"}),
                           ("recallite_remember", {"content": "sneak", "scope": "beta"}),
                           ("recallite_get", {"ids": [foreign["id"]]}),
                           ("recallite_forget", {"id": foreign["id"]}),
                           ("recallite_relate", {"from_id": mine["id"], "to_id": foreign["id"], "relation": "supports"}),
                           ("recallite_stats", {"scope": "beta"})]:
            res = await c.call_tool(tool, args)
            by_id = tool in ("recallite_get", "recallite_forget", "recallite_relate")  # refused as if missing
            assert res.is_error and ("No memory" if by_id else "--isolate-scopes") in res.content[0].text, tool
        r = await call(c, "recallite_recall", query="plan secret")
        assert [m["id"] for m in r["memories"]] == [mine["id"]]


async def test_compact_context_and_get_keep_attribution(tmp_path):
    s = Settings(db=":memory:", embedder="hash", warm_embedder=False, scope="p", scope_origin="flag")
    async with Client(build_server(s)) as c:
        ids = []
        for i in range(30):
            m = await call(c, "recallite_remember", type="lesson", title=f"Cache lesson {i}",
                           content=f"Lesson {i} about the cache: " + "details that take many tokens to read. " * 6)
            ids.append(m["id"])
        full = await call(c, "recallite_context", query="cache lesson", max_tokens=600)
        compact = await call(c, "recallite_context", query="cache lesson", max_tokens=600, format="compact")
        assert compact["tokens"] <= 600 and len(compact["memory_ids"]) >= 2 * len(full["memory_ids"])
        line = next(l for l in compact["context"].splitlines() if l.startswith("- mem_"))
        assert "[LESSON]" in line and "%" not in line  # an agent's validated lesson: no confidence said
        pick = compact["memory_ids"][:2]
        got = await call(c, "recallite_get", ids=pick, retrieval_id=compact["retrieval_id"])
        assert [m["id"] for m in got["memories"]] == pick and got["memories"][0]["content"].startswith("Lesson")
        fb = await call(c, "recallite_feedback", retrieval_id=compact["retrieval_id"], outcome="success")
        assert sorted(ch["id"] for ch in fb["changes"]) == sorted(pick)  # credit goes to what was opened
        stats = await call(c, "recallite_stats")
        assert stats["context_calls"] == 2 and stats["tokens_served_p95"] >= stats["tokens_served_median"] > 0
        assert stats["tokens_saved"] > 0


async def test_title_is_derived_over_mcp():
    async with Client(build_server(Settings(db=":memory:", embedder="hash", warm_embedder=False))) as c:
        m = await call(c, "recallite_remember", content="Staging deploys need the VPN. Ask ops if it fails.")
        assert m["title"] == "Staging deploys need the VPN"


async def test_roots_are_listed_once_per_connection_not_per_call(tmp_path):
    """Regression: the SDK makes a new session object per request; the scope cache must key
    on the connection, or every tool call costs a roots/list round trip."""
    repo = make_repo(tmp_path / "svc", "https://git.example/svc.git")
    calls = []

    async def cb(ctx):
        calls.append(1)
        return t.ListRootsResult(roots=[t.Root(uri=repo.as_uri())])

    async with Client(build_server(Settings(db=":memory:", embedder="hash", warm_embedder=False)),
                      mode="legacy", list_roots_callback=cb) as c:
        for _ in range(4):
            await call(c, "recallite_remember", content=f"note {_}")
        assert (await call(c, "recallite_stats"))["scope_rule"] == "roots"
    assert len(calls) == 1
