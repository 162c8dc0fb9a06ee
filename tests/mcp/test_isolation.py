"""--isolate-scopes at the MCP edge: one project's server cannot move another project's memories."""

import pytest
from mcp import Client

from recallite_core import Recallite
from recallite_mcp.server import build_server
from recallite_mcp.settings import Settings
from tests.mcp_helpers import call, error_text

pytestmark = [pytest.mark.anyio, pytest.mark.filterwarnings("ignore::DeprecationWarning")]


@pytest.fixture
def anyio_backend():
    return "asyncio"


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
            assert "--isolate-scopes" in await error_text(b, "recallite_feedback", retrieval_id=rb["retrieval_id"],
                                                          outcome="failure", used_memory_ids=[ma["id"]])
            assert "--isolate-scopes" in await error_text(b, "recallite_feedback", retrieval_id=ra["retrieval_id"],
                                                          outcome="failure")
            assert "--isolate-scopes" in await error_text(b, "recallite_get", ids=[ma["id"]],
                                                          retrieval_id=ra["retrieval_id"])
            assert mem.get(ma["id"]).usefulness == pytest.approx(0.5)
            # its own project's feedback still works
            ok = await call(a, "recallite_feedback", retrieval_id=ra["retrieval_id"], outcome="success",
                            used_memory_ids=[ma["id"]])
            assert ok["changes"] and mem.get(ma["id"]).usefulness > 0.5
    finally:
        mem.close()
