"""Fault benchmarks that also prove things: `recallite-mcp bench --faults`.

concurrency: N `recallite-mcp` processes on one database file, each driven over stdio by the
  official MCP client, run a fixed, seeded mix of remember / recall / feedback with client keys
  and deliberate retries (the same call again, to the same or another process, sometimes at the
  same time). Then: every memory exactly once, no duplicates, every feedback applied once,
  integrity_check ok, projections agree, no "database is locked" reached a client, and a recall in
  one process saw the other processes' committed writes on its next call.
crash: a writer (remember_many / feedback / import in a loop, see crash_writer.py) is killed
  with SIGKILL at seeded random moments; after each kill the file must pass integrity_check,
  the projections must agree, everything the writer logged as committed must be there, and no
  operation may be half there.

tests/stress/ runs both at CI size; this command runs them at any size and prints the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import sqlite3
import string
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any


def checkout_env() -> dict[str, str]:
    """Environment for child processes: import this very recallite_mcp and recallite_core."""
    import recallite_core
    import recallite_mcp

    paths = [str(Path(recallite_mcp.__file__).resolve().parents[1]), str(Path(recallite_core.__file__).resolve().parents[1])]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(paths + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    return env


def verify_file(db: str) -> dict[str, Any]:
    """integrity_check and projection agreement of a database file."""
    from recallite_core.features.health import check_projections
    from recallite_core.storage.sqlite.store import Store

    # A store of its own on the file, read in one session (not a read-only one: FTS5's
    # integrity-check is an INSERT that a read-only connection refuses).
    store = Store(db, busy_timeout_ms=30_000)
    try:
        dims = store.get_meta("dimensions")
        with store.reading() as s:
            integrity = s.integrity.file_check()
            report = check_projections(s, int(dims) if dims else None)
        return {"integrity": integrity, "projections_ok": report.ok, "problems": report.problems(),
                "memories": report.memories}
    finally:
        store.close()


# -- concurrency ------------------------------------------------------------------------------------------------------------
@dataclass
class ConcurrencyFigures:
    processes: int = 0
    operations: int = 0  # planned operations (remember / recall / feedback)
    calls: int = 0  # MCP tool calls actually made, retries included
    remembers: int = 0
    remember_retries: int = 0
    recalls: int = 0
    feedbacks: int = 0
    feedback_retries: int = 0
    cross_process_retries: int = 0
    visibility_checks: int = 0
    visibility_misses: int = 0
    expected_memories: int = 0
    stored_memories: int = 0
    lost: int = 0
    duplicated: int = 0
    feedback_rows: int = 0
    feedback_applied_twice: int = 0
    success_count_mismatches: int = 0
    tool_errors: int = 0
    locked_errors: int = 0
    integrity: str = ""
    projections_ok: bool = False
    seconds: float = 0.0
    errors: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return (self.lost == 0 and self.duplicated == 0 and self.feedback_applied_twice == 0 and self.tool_errors == 0
                and self.locked_errors == 0 and self.visibility_misses == 0 and self.success_count_mismatches == 0
                and self.integrity == "ok" and self.projections_ok and self.stored_memories == self.expected_memories)


def _token(rng: random.Random) -> str:
    return "".join(rng.choice(string.ascii_lowercase) for _ in range(10))


async def _concurrency(db: str, processes: int, ops: int, seed: int) -> ConcurrencyFigures:
    from mcp import Client, StdioServerParameters

    fig = ConcurrencyFigures(processes=processes, operations=processes * ops)
    env = checkout_env()
    shared = [f"Shared rule {k}: every process stores this exact text about queue {k}." for k in range(10)]
    committed: list[tuple[int, str, str]] = []  # (process, token, id): writes whose call has returned
    ids_of_content: dict[str, set[str]] = defaultdict(set)
    key_results: dict[str, list[tuple[str, bool]]] = defaultdict(list)  # client_key -> (feedback_id, duplicate)
    credited: Counter[str] = Counter()  # memory id -> distinct success keys that used it
    expected: set[str] = set()
    clients: list[Any] = [None] * processes

    async def call(p: int, name: str, args: dict) -> dict | None:
        fig.calls += 1
        res = await clients[p].call_tool(name, args)
        if res.is_error:
            text = res.content[0].text if res.content else "?"
            fig.tool_errors += 1
            fig.locked_errors += "locked" in text.lower() or "busy" in text.lower()
            fig.errors.append(f"p{p} {name}: {text[:200]}")
            return None
        return res.structured_content

    finished = [asyncio.Event() for _ in range(processes)]

    async def worker(p: int, ready: asyncio.Event, start: asyncio.Event) -> None:
        rng = random.Random(seed * 1000 + p)
        params = StdioServerParameters(command=sys.executable, args=["-m", "recallite_mcp", "--db", db, "--embedder", "hash"],
                                       env=env)
        async with Client(params) as client:
            clients[p] = client
            ready.set()
            await start.wait()
            last_retrieval: tuple[str, list[str]] | None = None
            for j in range(ops):
                kind = rng.choices(["remember", "recall", "feedback"], weights=[4, 3, 3])[0]
                if kind == "feedback" and last_retrieval is None:  # one report per task: a new task recalls first
                    kind = "recall"
                if kind == "remember":
                    fig.remembers += 1
                    tok = None
                    if rng.random() < 0.15:
                        content = rng.choice(shared)
                    else:
                        tok = _token(rng)
                        content = f"Process {p} op {j} learned fact {tok} about deploy {rng.choice('abcdef')}."
                    expected.add(content)
                    out = await call(p, "recallite_remember", {"content": content, "type": "fact"})
                    if out:
                        ids_of_content[content].add(out["id"])
                        if tok is not None:
                            committed.append((p, tok, out["id"]))
                    if rng.random() < 0.2:  # the client retries the same remember (e.g. after a timeout)
                        fig.remember_retries += 1
                        again = await call(p, "recallite_remember", {"content": content, "type": "fact"})
                        if again:
                            ids_of_content[content].add(again["id"])
                elif kind == "recall":
                    fig.recalls += 1
                    others = [c for c in committed if c[0] != p]
                    if others and rng.random() < 0.6:
                        # Another process's write has committed (its call returned): we must see it now.
                        _, tok, mid = rng.choice(others[-20:])
                        out = await call(p, "recallite_recall", {"query": f"learned fact {tok}", "limit": 5})
                        fig.visibility_checks += 1
                        if out is not None and mid not in [h["id"] for h in out["memories"]]:
                            fig.visibility_misses += 1
                            fig.errors.append(f"p{p} did not see {mid} ({tok})")
                    else:
                        out = await call(p, "recallite_recall", {"query": f"deploy {rng.choice('abcdef')} fact", "limit": 5})
                    if out and out["memories"]:
                        last_retrieval = (out["retrieval_id"], [h["id"] for h in out["memories"]])
                else:
                    fig.feedbacks += 1
                    rid, shown = last_retrieval  # type: ignore[misc]
                    used = [rng.choice(shown)]
                    key = f"p{p}-op{j}"
                    args = {"retrieval_id": rid, "outcome": "success", "used_memory_ids": used, "client_key": key}
                    calls = [call(p, "recallite_feedback", args)]
                    if rng.random() < 0.3:  # retry on the same process
                        fig.feedback_retries += 1
                        calls.append(call(p, "recallite_feedback", args))
                    if rng.random() < 0.2:  # and/or the same call reaches another process at the same time
                        fig.cross_process_retries += 1
                        calls.append(call((p + 1) % processes, "recallite_feedback", args))
                    outs = await asyncio.gather(*calls)
                    for out in outs:
                        if out:
                            key_results[key].append((out["feedback_id"], out["duplicate"]))
                    if any(outs):
                        credited[used[0]] += 1
                    last_retrieval = None
            finished[p].set()
            # Stay connected until every worker is done: others may still send retries here.
            await asyncio.gather(*(f.wait() for f in finished))

    t0 = time.perf_counter()
    readies = [asyncio.Event() for _ in range(processes)]
    start = asyncio.Event()
    tasks = [asyncio.create_task(worker(p, readies[p], start)) for p in range(processes)]
    await asyncio.gather(*(r.wait() for r in readies))
    start.set()
    await asyncio.gather(*tasks)
    fig.seconds = round(time.perf_counter() - t0, 1)

    # -- verify -------------------------------------------------------------------------------------------------------------
    fig.expected_memories = len(expected)
    conn = sqlite3.connect(db, timeout=30)
    rows = conn.execute("SELECT id, content FROM memories").fetchall()
    fig.stored_memories = len(rows)
    by_content = Counter(c for _, c in rows)
    fig.duplicated = sum(n - 1 for n in by_content.values() if n > 1)
    fig.duplicated += sum(1 for ids in ids_of_content.values() if len(ids) > 1)  # two ids handed out for one text
    fig.lost = sum(1 for c in expected if by_content.get(c, 0) == 0)
    stored_id = {f"mem_{i}": c for i, c in rows}
    fig.lost += sum(1 for c, ids in ids_of_content.items() for i in ids if stored_id.get(i) != c)
    fig.feedback_rows = conn.execute("SELECT count(*) FROM feedback").fetchone()[0]
    for key, results in key_results.items():
        firsts = [r for r in results if not r[1]]
        if len(firsts) != 1 or len({r[0] for r in results}) != 1:
            fig.feedback_applied_twice += 1
            fig.errors.append(f"feedback {key}: {results}")
    if fig.feedback_rows != len(key_results):
        fig.feedback_applied_twice += abs(fig.feedback_rows - len(key_results))
    for mid, n in credited.items():
        got = conn.execute("SELECT success_count FROM memories WHERE id = ?", (int(mid[4:]),)).fetchone()
        if got is None or got[0] != n:
            fig.success_count_mismatches += 1
            fig.errors.append(f"{mid} success_count {got and got[0]} != {n}")
    conn.close()
    v = verify_file(db)
    fig.integrity, fig.projections_ok = v["integrity"], v["projections_ok"]
    return fig


def run_concurrency(db: str, processes: int = 4, ops: int = 60, seed: int = 1) -> ConcurrencyFigures:
    return asyncio.run(_concurrency(db, processes, ops, seed))


# -- crash ----------------------------------------------------------------------------------------------------------------------
@dataclass
class CrashFigures:
    kills: int = 0
    committed_operations: int = 0  # operations the writer logged as committed, over all runs
    committed_memories: int = 0
    stored_memories: int = 0
    feedbacks: int = 0
    lost: int = 0
    half_written: int = 0
    integrity_failures: int = 0
    projection_failures: int = 0
    seconds: float = 0.0
    errors: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return (self.lost == 0 and self.half_written == 0 and self.integrity_failures == 0
                and self.projection_failures == 0 and self.kills > 0)


def _check_after_kill(db: str, log_path: str, fig: CrashFigures) -> None:
    v = verify_file(db)
    if v["integrity"] != "ok":
        fig.integrity_failures += 1
        fig.errors.append(f"integrity: {v['integrity']}")
    if not v["projections_ok"]:
        fig.projection_failures += 1
        fig.errors.append(f"projections: {v['problems']}")
    entries = []
    with open(log_path, encoding="utf-8") as f:
        for line in f:
            try:
                entries.append(json.loads(line))
            except json.JSONDecodeError:  # the last line, cut by the kill
                pass
    conn = sqlite3.connect(db, timeout=30)
    try:
        tags = Counter()
        for (t,) in conn.execute("SELECT tags FROM memories"):
            for tag in json.loads(t):
                tags[tag] += 1
        # atomicity: every operation is either all there or not there at all
        for tag, n in tags.items():
            if tag.startswith(("batch-", "import-")) and n != int(tag.rsplit("-of-", 1)[1]):
                fig.half_written += 1
                fig.errors.append(f"{tag}: {n} memories")
        for key, used, n_out in conn.execute(
            "SELECT f.client_key, f.used_ids, (SELECT count(*) FROM memory_outcomes o WHERE o.feedback_id = f.id AND o.kind = 'credit') "
            "FROM feedback f"
        ):
            if n_out != len(json.loads(used)) or (key and n_out != int(key.rsplit("-n", 1)[1])):
                fig.half_written += 1
                fig.errors.append(f"feedback {key}: {n_out} outcomes")
        fig.stored_memories = conn.execute("SELECT count(*) FROM memories").fetchone()[0]
        fig.feedbacks = conn.execute("SELECT count(*) FROM feedback").fetchone()[0]
        # durability: everything logged as committed is there
        fig.committed_operations = len(entries)
        fig.committed_memories = 0
        keys = {r[0] for r in conn.execute("SELECT client_key FROM feedback WHERE client_key IS NOT NULL")}
        for e in entries:
            if e["op"] == "batch":
                fig.committed_memories += len(e["ids"])
                marks = ",".join("?" * len(e["ids"]))
                found = conn.execute(f"SELECT count(*) FROM memories WHERE id IN ({marks}) AND tags LIKE ?",
                                     [int(i[4:]) for i in e["ids"]] + [f'%"{e["tag"]}"%']).fetchone()[0]
                if found != len(e["ids"]):
                    fig.lost += len(e["ids"]) - found
                    fig.errors.append(f"lost from {e['tag']}")
            elif e["op"] == "import":
                fig.committed_memories += e["memories"]
                if tags.get(e["tag"], 0) != e["memories"]:
                    fig.lost += 1
                    fig.errors.append(f"lost import {e['tag']}")
            elif e["key"] not in keys:
                fig.lost += 1
                fig.errors.append(f"lost feedback {e['key']}")
    finally:
        conn.close()


def run_crash(db: str, kills: int = 50, seed: int = 7, max_delay: float = 0.6) -> CrashFigures:
    """Start the writer, kill it with SIGKILL after a seeded random delay, check, repeat."""
    fig = CrashFigures()
    rng = random.Random(seed)
    env = checkout_env()
    log_path = db + ".committed.jsonl"
    open(log_path, "w").close()
    t0 = time.perf_counter()
    for k in range(kills):
        child = subprocess.Popen(
            [sys.executable, "-m", "recallite_mcp.benchmarks.crash_writer", "--db", db, "--log", log_path,
             "--seed", str(seed * 10_000 + k)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True,
        )
        line = child.stdout.readline()  # "ready": the file is open; writes start now
        if line.strip() != "ready":
            child.kill()
            raise RuntimeError(f"crash writer did not start: {line!r} {child.stderr.read()[-2000:]}")
        time.sleep(rng.uniform(0.0, max_delay))
        child.send_signal(signal.SIGKILL)
        child.wait()
        child.stdout.close()
        child.stderr.close()
        fig.kills += 1
        _check_after_kill(db, log_path, fig)
    fig.seconds = round(time.perf_counter() - t0, 1)
    return fig


# -- command line --------------------------------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="recallite-mcp bench --faults", description=__doc__.split("\n\n")[0])
    ap.add_argument("--processes", type=int, default=4)
    ap.add_argument("--ops", type=int, default=60, help="operations per process")
    ap.add_argument("--kills", type=int, default=50)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--only", choices=["concurrency", "crash"], default=None)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    out: dict[str, Any] = {}
    ok = True
    with tempfile.TemporaryDirectory(prefix="recallite-faults-") as d:
        if args.only in (None, "concurrency"):
            c = run_concurrency(os.path.join(d, "concurrency.db"), args.processes, args.ops, args.seed)
            out["concurrency"] = {**asdict(c), "ok": c.ok}
            ok &= c.ok
        if args.only in (None, "crash"):
            k = run_crash(os.path.join(d, "crash.db"), args.kills, args.seed)
            out["crash"] = {**asdict(k), "ok": k.ok}
            ok &= k.ok
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        for name, figs in out.items():
            print(f"{name}: " + ", ".join(f"{k}={v}" for k, v in figs.items() if k != "errors"))
            for e in figs["errors"][:20]:
                print(f"  ! {e}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
