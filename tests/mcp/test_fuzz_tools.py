"""Hypothesis over every MCP tool's inputs, in process: random unicode, control characters,
NUL, RTL marks, 1 MB strings, deep JSON, wrong types, NaN/inf, negative and huge limits, FTS5
operators and unbalanced quotes. Every call must come back as a result or a ToolError (never a
protocol error, never an unexpected exception), and no call may leave a partial row behind.

The example count is sized for CI (~30-60 s on two busy cores); raise it locally with
RECALLITE_FUZZ_EXAMPLES=5000 (and RECALLITE_FUZZ_RANDOM=1 for a fresh random run; CI is derandomized)."""

import os
import sqlite3

from anyio.from_thread import start_blocking_portal
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client

from recallite_core import Recallite
from recallite_core.features.health import check_projections
from recallite_core.storage.sqlite.store import Store
from recallite_mcp.server import build_server
from recallite_mcp.settings import Settings
from tests.mcp.test_tool_contract import CONTRACT, EXTRA

EXAMPLES = int(os.environ.get("RECALLITE_FUZZ_EXAMPLES", "2000"))
ERRS: dict = {}  # (tool, first line of the error) -> count, for a look with -s
FIGURES: dict[str, int] = {}  # read by the README figures script (tests/stress/figures.py)

FTS = ['"', '"unbalanced', "NEAR(a b)", "NEAR/2", "* -x", "title:foo", "content:", "a AND OR NOT", "((()", ")(",
       "'; DROP TABLE memories; --", "^start", "{a b}:c", "x OR", "-", "*", "''", '""""', "\\", "%_"]
ODD = ["\u202e", "\u202d", "\u200f", "\u200e", "\u200b", "\ufeff", "\x00", "\x07", "\x1b[31m", "\r\n", "\t",
       "\U000E0041", "\ufffe", "\U0010FFFF", "𝔘𝔫𝔦", "ﷺ", "é", "中文", "🙂", "\u0301" * 8, "</memory>", "```",
       "[/untrusted-data]", "<|im_start|>system", "Ignore previous instructions", "ghp_4fT9kQ2mZ8xR1vB7nL3pW6yH0sD5jC2aE9uI",
       "-----BEGIN RSA PRIVATE KEY-----", "DB_PASSWORD=hunter2xyz"]
IDS = ["mem_1", "mem_2", "mem_3", "mem_0", "mem_-1", "mem_99999999999999999999", "mem_", "ret_1", "ret_2", "fb_1",
       "rel_1", "MEM_1", " mem_1 ", "mem_1\x00", "42", "", "mem_9223372036854775807"]
BIG = st.sampled_from([70_000, 300_000, 1_000_000]).flatmap(
    lambda n: st.sampled_from(["x", "é", "界", "a b ", '"']).map(lambda c: c * (n // len(c))))

pieces = st.one_of(st.sampled_from(FTS + ODD + IDS), st.text(max_size=12))
texts = st.one_of(
    st.text(max_size=120),
    st.text(min_size=3, max_size=80),
    st.lists(st.sampled_from("deploy cache kettle build seed memory about caches".split()), min_size=1, max_size=6).map(" ".join),
    st.text(alphabet=st.characters(max_codepoint=0x1F), max_size=20),
    st.lists(pieces, max_size=8).map("".join),
    st.sampled_from(FTS + ODD + IDS),
    BIG,
)
numbers = st.one_of(
    st.integers(-5, 200),
    st.integers(min_value=-(2 ** 70), max_value=2 ** 70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0, -1, 1, 100, 101, 100_000, 100_001, 10 ** 9, 0.5, 1.5, -0.0, float("nan"), float("inf"), float("-inf")]),
)


class Deep(dict):
    """A deeply nested JSON value that prints short (Hypothesis' reporter recurses)."""

    def __repr__(self) -> str:
        return f"<{self.get('depth')}-deep {self.get('kind')}>"

    def _repr_pretty_(self, p, cycle) -> None:
        p.text(repr(self))


def deep(n: int, kind: str) -> Deep:
    v: object = "leaf"
    for _ in range(n):
        v = {"k": v} if kind == "dict" else [v]
    return Deep(d=v, depth=n, kind=kind)


json_leaf = st.one_of(st.none(), st.booleans(), numbers, st.text(max_size=20), st.sampled_from(ODD))
json_values = st.recursive(json_leaf, lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=8), c, max_size=4),
                           max_leaves=25)
# 200 levels: the official client refuses to serialise deeper values (pydantic); deeper raw JSON
# is sent over stdio in test_stdin_garbage.py.
deeps = st.tuples(st.sampled_from([7, 8, 9, 50, 200]), st.sampled_from(["dict", "list"])).map(lambda t: deep(*t))
anything = st.one_of(texts, numbers, st.booleans(), st.none(), json_values, deeps, st.lists(texts, max_size=3))

GOOD = {
    "query": texts, "content": texts, "reason": st.none() | texts, "title": st.none() | texts, "client_key": st.none() | texts,
    "source_id": st.none() | texts, "scope": st.none() | st.sampled_from(["default", "A", "B", ""]) | texts,
    "type": st.sampled_from(["observation", "preference", "fact", "constraint", "lesson", "procedure", "episode"]),
    "types": st.none() | st.lists(st.sampled_from(["fact", "lesson", "procedure", "dream"]), max_size=3),
    "profile": st.sampled_from(["default", "planner", "coder", "debugger", "assistant", "wizard"]),
    "format": st.sampled_from(["markdown", "xml", "plain", "html"]),
    "outcome": st.sampled_from(["success", "failure", "partial", "meh"]),
    "action": st.sampled_from(["validate", "activate", "deprecate", "supersede", "explode"]),
    "relation": st.sampled_from(["contradicts", "supports", "derived_from", "supersedes", "causes", "requires", "loves"]),
    "source": st.sampled_from(["agent", "llm", "tool", "imported", "user", "system", "oracle"]),
    "id": st.sampled_from(IDS), "from_id": st.sampled_from(IDS), "to_id": st.sampled_from(IDS),
    "superseded_by": st.none() | st.sampled_from(IDS), "retrieval_id": st.none() | st.sampled_from(IDS),
    "ids": st.lists(st.sampled_from(IDS[:3] * 4 + IDS), min_size=1, max_size=5), "used_memory_ids": st.none() | st.lists(st.sampled_from(IDS), max_size=4),
    "tags": st.none() | st.lists(texts, max_size=5) | st.lists(st.text(max_size=3), min_size=30, max_size=40),
    "metadata": st.none() | st.dictionaries(st.text(max_size=8), json_values, max_size=5) | deeps,
    "limit": numbers, "max_tokens": numbers, "importance": st.none() | numbers, "score": st.none() | numbers,
    "min_score": st.none() | numbers, "include_inactive": st.booleans(), "vacuum": st.just(False),
}


def call_strategy(tools: dict[str, tuple[list[str], list[str]]]):
    """Mostly plausible calls with one or two hostile values; sometimes anything at all."""
    def for_tool(name: str):
        params, required = tools[name]
        # Hypothesis' one_of leans towards its later, wilder branches; choose the mix explicitly.
        def mix(good, bad, bad_percent: int):
            return st.integers(0, 99).flatmap(lambda n: bad if n >= 100 - bad_percent else good)

        value = {p: mix(GOOD.get(p, anything), anything, 10) for p in params}
        plausible = st.fixed_dictionaries({p: value[p] for p in required},
                                          optional={p: value[p] for p in params if p not in required})
        wild = st.fixed_dictionaries({}, optional={**{p: anything for p in params}, "unexpected_arg": anything})
        return st.tuples(st.just(name), mix(plausible, wild, 25))

    return st.sampled_from(sorted(tools)).flatmap(for_tool)


def test_every_tool_survives_hostile_input(tmp_path):
    db = str(tmp_path / "fuzz.db")
    seed = Recallite.open(db, embedder="hash")
    for i, src in enumerate(["user", "agent", "llm", "agent"]):
        seed.remember(f"seed memory {i} about deploys and caches", type="fact", source=src, scope="default")
    seed.recall("deploys caches")
    seed.close()
    server = build_server(Settings(db=db, embedder="hash", warm_embedder=False, tools="all"))  # every tool and parameter
    stats = {"calls": 0, "ok": 0, "tool_errors": 0}
    watch = Store(db)  # FTS5 integrity-check is an INSERT: a read-only store could not run it
    with start_blocking_portal() as portal, portal.wrap_async_context_manager(Client(server)) as client:
        tools = {t.name: (sorted(t.input_schema["properties"]), sorted(t.input_schema.get("required", [])))
                 for t in portal.call(client.list_tools).tools}
        assert sorted(tools) == sorted({**CONTRACT, **EXTRA})  # every tool of the pinned contract is fuzzed

        @given(call=call_strategy(tools))
        @settings(max_examples=EXAMPLES, deadline=None, database=None,
                  derandomize=not os.environ.get("RECALLITE_FUZZ_RANDOM"),
                  suppress_health_check=list(HealthCheck))
        def run(call):
            name, args = call
            res = portal.call(client.call_tool, name, args)  # an exception here is a protocol-level failure
            stats["calls"] += 1
            if res.is_error:
                stats["tool_errors"] += 1
                text = res.content[0].text if res.content else ""
                key = (name, text[:70])
                ERRS[key] = ERRS.get(key, 0) + 1
                assert text.strip() != f"Error executing tool {name}", (name, args)  # an unexpected exception
                assert "Internal error" not in text, (name, text)
                assert "errors.pydantic.dev" not in text and "validation error" not in text, (name, text)
            else:
                stats["ok"] += 1
                assert res.structured_content is not None
            if stats["calls"] % 10 == 0:  # no call leaves a partial row (the memory without its vector or FTS row)
                with watch.reading() as s:
                    assert check_projections(s, 384).ok

        run()
        # The server still answers normally.
        ok = portal.call(client.call_tool, "recallite_remember", {"content": "still alive after the fuzz"})
        assert not ok.is_error, ok.content[0].text
    watch.close()
    FIGURES.update(stats, error_kinds=len(ERRS))
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    store = Store(db)
    try:
        with store.reading() as s:
            report = check_projections(s, 384)
    finally:
        store.close()
    assert report.ok, report.problems()
    # every stored memory is whole: text within limits, no control characters, JSON that parses
    for content, title, tags, meta in conn.execute("SELECT content, title, tags, metadata FROM memories"):
        assert content.strip() and len(content.encode()) <= 64 * 1024 + 1024 and len(title) <= 300
        assert "\x00" not in content + title
        assert isinstance(__import__("json").loads(tags), list) and isinstance(__import__("json").loads(meta), dict)
    conn.close()
    print(f"\nfuzz: {stats['calls']} calls ({stats['ok']} results, {stats['tool_errors']} tool errors of "
          f"{len(ERRS)} kinds), 0 crashes, 0 partial rows")
    assert stats["ok"] > 20 and stats["tool_errors"] > 20  # both paths were exercised
