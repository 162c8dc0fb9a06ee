"""--isolate-scopes at the MCP edge: one project's server cannot move another project's memories."""

import pytest
from mcp import Client

from recallite_core import Recallite
from recallite_mcp.server import build_server
from recallite_mcp.settings import Settings
from tests.mcp_helpers import call, error_text

pytestmark = [pytest.mark.anyio, pytest.mark.filterwarnings("ignore::DeprecationWarning")]


def server(mem: Recallite, scope: str):
    return build_server(Settings(db=":memory:", embedder="hash", warm_embedder=False, scope=scope, tools="all",
                                 isolate_scopes=True), memory=mem)


async def test_an_isolated_server_moved_another_projects_memory_through_feedback():
    """A new user's trial: server B (--isolate-scopes, scope projB) could not read project A's
    memory, but a failure naming it on B's own retrieval, and a failure on A's retrieval id,
    each lowered its usefulness (0.5 -> 0.325 -> 0.211)."""
    mem = Recallite.open(None, embedder="hash")
    try:
        async with Client(server(mem, "projA")) as a, Client(server(mem, "projB")) as b:
            ma = await call(a, "recallite_remember", content="Project A deploys with Capistrano.", type="procedure")
            await call(b, "recallite_remember", content="Project B deploys with Helm charts.", type="procedure")
            rb = await call(b, "recallite_context", query="how to deploy")
            ra = await call(a, "recallite_context", query="how to deploy")
            assert "No memory" in await error_text(b, "recallite_feedback", retrieval_id=rb["retrieval_id"],
                                                   outcome="failure", used_memory_ids=[ma["id"]])
            assert "--isolate-scopes" in await error_text(b, "recallite_feedback", retrieval_id=ra["retrieval_id"],
                                                          outcome="failure")
            assert "No memory" in await error_text(b, "recallite_get", ids=[ma["id"]], retrieval_id=ra["retrieval_id"])
            assert mem.get(ma["id"]).usefulness == pytest.approx(0.5)
            # its own project's feedback still works
            ok = await call(a, "recallite_feedback", retrieval_id=ra["retrieval_id"], outcome="success",
                            used_memory_ids=[ma["id"]])
            assert ok["changes"] and mem.get(ma["id"]).usefulness > 0.5
    finally:
        mem.close()


async def test_an_isolated_server_confirmed_that_another_projects_memory_exists():
    """A new user's trial: on an --isolate-scopes server, recallite_get of another project's id said
    "mem_1 belongs to another project" and of a missing id "No memory mem_999": the difference told
    the client which ids exist elsewhere. Both now read as missing."""
    mem = Recallite.open(None, embedder="hash")
    try:
        async with Client(server(mem, "projA")) as a, Client(server(mem, "projB")) as b:
            ma = await call(a, "recallite_remember", content="Project A launches on May 3.", type="fact")
            foreign = await error_text(b, "recallite_get", ids=[ma["id"]])
            missing = await error_text(b, "recallite_get", ids=["mem_999"])
            assert foreign == missing.replace("mem_999", ma["id"])
            assert foreign == (await error_text(b, "recallite_update", id=ma["id"], action="validate")
                               ).replace("recallite_update", "recallite_get")
    finally:
        mem.close()


def plain(mem: Recallite, scope: str):
    return build_server(Settings(db=":memory:", embedder="hash", warm_embedder=False, scope=scope, tools="all"),
                        memory=mem)


async def test_sharing_a_user_level_memory_opened_the_team_to_every_project():
    """A new user's trial: alice shared a lesson to team-web (bob's include_teams recall saw nothing,
    right), then shared her user-level preference there; share() made the user scope a member of
    team-web, every project searches the user scope, so bob's include_teams recall now returned
    team-web's lesson. The sharing project joins instead, and a team the user scope joined before
    (an older store) reaches no project."""
    mem = Recallite.open(None, embedder="hash")
    try:
        async with Client(plain(mem, "alice")) as a, Client(plain(mem, "bob")) as b:
            lesson = await call(a, "recallite_remember", content="The e2e suite needs the STAGING_URL env var.",
                                type="lesson")
            await call(a, "recallite_update", id=lesson["id"], action="share", team_scope="team-web")
            pref = await call(a, "recallite_remember", content="Alice prefers tabs over spaces.", type="preference")
            assert pref["scope"] == "user"
            await call(a, "recallite_update", id=pref["id"], action="share", team_scope="team-web")
            assert "user" not in mem.teams("team-web") and mem.teams("user") == []
            mem.remember("The team dashboards live in the Grafana folder WEB-OPS.", type="fact", scope="team-web")
            q = {"query": "grafana folder for the team dashboards", "limit": 10, "include_teams": True}
            assert any(h["scope"] == "team-web" for h in (await call(a, "recallite_recall", **q))["memories"])
            assert not any(h["scope"] == "team-web" for h in (await call(b, "recallite_recall", **q))["memories"])
            mem.join_team("user", "team-web")  # what an older version stored
            assert not any(h["scope"] == "team-web" for h in (await call(b, "recallite_recall", **q))["memories"])
            ctx = await call(b, "recallite_context", query="grafana folder for the team dashboards", include_teams=True)
            assert "WEB-OPS" not in ctx["context"]
    finally:
        mem.close()
