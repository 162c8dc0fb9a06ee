"""Wrong arguments get one line that names the argument, says what to send and shows what came;
never a pydantic dump (issue 15: 18 of 48 hostile calls returned one, with an errors.pydantic.dev URL).

The hostile calls are generated from the real tools/list (--tools all, so every parameter of every
tool): for each parameter a value of the wrong kind, then each required argument left out, then an
unknown argument."""

import pytest
from mcp import Client

from recallite_mcp.server import build_server
from recallite_mcp.settings import Settings
from tests.mcp_helpers import call

pytestmark = pytest.mark.anyio


def wrong_value(spec: dict):
    """A value of the wrong kind for this parameter schema (None: nothing is wrong for it)."""
    if "enum" in spec or spec.get("items", {}).get("enum"):
        return "bogus" if "enum" in spec else ["bogus"]
    return {"string": 123, "integer": "many", "number": "lots", "boolean": "maybe", "array": 5,
            "object": "notadict"}.get(spec.get("type"))


def plausible(name: str, spec: dict):
    """A valid value, to fill the other required arguments."""
    if "enum" in spec:
        return spec["enum"][0]
    if name == "turns":
        return [{"role": "user", "content": "hi"}]
    return {"string": "mem_1", "array": ["mem_1"], "integer": 1}.get(spec.get("type"), "x")


def hostile_calls(tools) -> list[tuple[str, str, dict]]:
    calls = []
    for t in tools:
        props, required = t.input_schema["properties"], t.input_schema.get("required", [])
        base = {r: plausible(r, props[r]) for r in required}
        for p, spec in props.items():
            bad = wrong_value(spec)
            if bad is not None:
                calls.append((t.name, p, {**base, p: bad}))
        for r in required:
            calls.append((t.name, r, {k: v for k, v in base.items() if k != r}))
        calls.append((t.name, "colour", {**base, "colour": "blue"}))
    return calls


async def test_every_wrong_argument_gets_one_line_naming_it():
    async with Client(build_server(Settings(db=":memory:", embedder="hash", warm_embedder=False, tools="all"))) as c:
        await call(c, "recallite_remember", content="seed memory")
        calls = hostile_calls((await c.list_tools()).tools)
        assert len(calls) > 100
        bad = []
        for tool, param, args in calls:
            res = await c.call_tool(tool, args)
            text = res.content[0].text if res.content else ""
            named = f"`{param}`" in text or f"`{param}[" in text  # a list item: `types[0]`
            if not res.is_error or "\n" in text or "pydantic" in text or not named \
                    or not any(w in text for w in ("must be", "is required", "unknown argument")) or len(text) > 400:
                bad.append((tool, param, args, res.is_error, text))
        assert bad == []
        assert (await call(c, "recallite_stats"))["memories"] == 1  # nothing was written by a refused call


@pytest.mark.parametrize("tool, args, expect", [
    ("recallite_recall", {"query": "x", "limit": "ten"}, 'recallite_recall: `limit` must be an integer from 1 to 100; got "ten".'),
    ("recallite_feedback", {"outcome": "ok"}, 'recallite_feedback: `outcome` must be one of "success", "failure", "partial"; got "ok".'),
    ("recallite_get", {"ids": "mem_1, mem_2"}, "recallite_get: `ids` must be a list of strings (1 to 100 items)"),
    ("recallite_remember", {}, "recallite_remember: `content` is required: a string."),
    ("recallite_recall", {"query": "x", "limt": 3}, "recallite_recall: unknown argument `limt`; it takes query, limit"),
    ("recallite_record", {"session": "s", "turns": [{"content": "hi"}]}, "`turns[0].role` is required: a string"),
])
async def test_wrong_argument_messages(tool, args, expect):
    async with Client(build_server(Settings(db=":memory:", embedder="hash", warm_embedder=False, tools="all"))) as c:
        res = await c.call_tool(tool, args)
    assert res.is_error and expect in res.content[0].text


async def test_missing_memory_error_names_mcp_tools_not_python_methods():
    async with Client(build_server(Settings(db=":memory:", embedder="hash", warm_embedder=False))) as c:
        res = await c.call_tool("recallite_get", {"ids": ["mem_404"]})
    text = res.content[0].text
    assert res.is_error and "recallite_list" in text and "list()" not in text and "recall()" not in text


async def test_errors_that_did_not_fit_where_they_appear(tmp_path):
    """A new user's trial: MCP errors named Python calls and arguments ("(history(mem_1) lists them)",
    "or pass allow_unsafe"), sharing into team_scope "" said "A scope cannot be its own team", and
    `turns: []` had to be "a list of object with role and contents"."""
    async with Client(build_server(Settings(db=":memory:", embedder="hash", warm_embedder=False, tools="all",
                                            scope="web", scope_origin="flag"))) as c:
        v1 = await call(c, "recallite_remember", content="Deploy with make deploy.", type="procedure")
        up = await call(c, "recallite_update", id=v1["id"], action="revise", content="Deploy with the release pipeline.")
        res = await c.call_tool("recallite_update", {"id": v1["id"], "action": "revise", "content": "Deploy by hand."})
        text = res.content[0].text
        assert res.is_error and f"revise {up['superseded_by']} instead" in text and "history(" not in text
        user = await call(c, "recallite_remember", content="Never deploy on Fridays.", type="constraint")
        res = await c.call_tool("recallite_update", {"id": user["id"], "action": "deprecate", "source": "llm"})
        assert res.is_error and "Ask the user" in res.content[0].text and "allow_unsafe" not in res.content[0].text
        for team in ("", "  "):
            res = await c.call_tool("recallite_update", {"id": user["id"], "action": "share", "team_scope": team})
            assert res.is_error and "team_scope is empty" in res.content[0].text and "own team" not in res.content[0].text
        res = await c.call_tool("recallite_record", {"session": "s", "turns": []})
        assert res.is_error and "`turns` must be a list of objects with role and content (1 to 200 items)" in res.content[0].text
        assert (await call(c, "recallite_stats"))["by_scope"] == {"web": 3}  # nothing was shared into the default scope


async def test_isolated_get_said_omit_scope_and_named_the_other_project(tmp_path):
    # a new user's trial: recallite_get(ids=["mem_9"]) under --isolate-scopes said "scope 'web-9ad1f9a4' is neither
    # the active project scope ... Omit `scope` to use the active project": get has no scope, and that name is another project's
    db = str(tmp_path / "iso.db")
    async with Client(build_server(Settings(db=db, embedder="hash", warm_embedder=False, scope="web-9ad1f9a4",
                                            scope_origin="flag"))) as web:
        other = await call(web, "recallite_remember", content="Web deploys with make ship.", type="procedure")
        ctx = await call(web, "recallite_context", query="deploy make ship")
    async with Client(build_server(Settings(db=db, embedder="hash", warm_embedder=False, scope="api", scope_origin="flag",
                                            isolate_scopes=True))) as api:
        for tool, args in [("recallite_get", {"ids": [other["id"]]}), ("recallite_forget", {"id": other["id"]}),
                           ("recallite_feedback", {"retrieval_id": ctx["retrieval_id"], "outcome": "success"})]:
            res = await api.call_tool(tool, args)
            text = res.content[0].text
            refused = "No memory" in text if {"id", "ids"} & set(args) else "--isolate-scopes" in text  # ids: as if missing
            assert res.is_error and refused and "web-9ad1f9a4" not in text, tool
            assert "Omit `scope`" not in text, tool
        res = await api.call_tool("recallite_recall", {"query": "x", "scope": "web-9ad1f9a4"})  # a scope it named itself
        assert res.is_error and "Omit `scope`" in res.content[0].text


async def test_a_core_server_error_listed_actions_it_does_not_advertise():
    """A new user's trial: under --tools core, recallite_update's schema offers seven actions but its
    error for a wrong one listed promote and share too. Errors name what the list advertises."""
    for tools, shown in (("core", False), ("all", True)):
        async with Client(build_server(Settings(db=":memory:", embedder="hash", warm_embedder=False, tools=tools))) as c:
            a = await call(c, "recallite_remember", content="Run make test before pushing.")
            for args in ({"id": a["id"], "action": "explode"}, {"id": a["id"]}):
                text = (await c.call_tool("recallite_update", args)).content[0].text
                assert '"revise"' in text and ('"promote"' in text) is shown and ('"share"' in text) is shown, text
