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


@pytest.fixture
def anyio_backend():
    return "asyncio"


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
