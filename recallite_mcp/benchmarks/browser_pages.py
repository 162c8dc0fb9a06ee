"""How fast the memory browser (`recallite-mcp ui`) renders its pages on a large store.

    python -m recallite_mcp.benchmarks.browser_pages --memories 10000

Seeds a store with deterministic synthetic memories (``dataset.py``) spread over scopes and
sources, with relations, versions and feedback, then requests each page in process through
the whole app (guard, routing, engine, HTML) and prints the median and p95 of each. The first
request of each page is a warm-up and is not counted. It measures and prints; it asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time

from .dataset import memories as make_memories
from .dataset import queries as make_queries

SCOPES = ("shop-api", "billing", "infra", "user")
SOURCES = ("user", "agent", "tool", "llm")


def seed(mem, count: int) -> None:
    items = []
    for i, item in enumerate(make_memories(count)):
        item = {k: v for k, v in item.items() if k in ("content", "type", "title", "tags", "importance")}
        item["scope"] = SCOPES[i % len(SCOPES)]
        item["source"] = {"type": SOURCES[(i // 4) % len(SOURCES)]}
        items.append(item)
    for start in range(0, len(items), 1000):
        mem.remember_many(items[start : start + 1000])
    live = [m.id for m in mem.list(limit=200)]
    for a, b in zip(live[0:60:2], live[1:60:2]):
        mem.relate(a, b, "supports")
    for q in make_queries(40):
        r = mem.recall(q, limit=5)
        if r.memories:
            mem.feedback(r.retrieval_id, "success" if len(q) % 3 else "failure", used_memory_ids=[r.memories[0].memory.id])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m recallite_mcp.benchmarks.browser_pages", description=__doc__.split("\n")[0])
    ap.add_argument("--memories", type=int, default=10_000, help="store size (default 10000)")
    ap.add_argument("--runs", type=int, default=30, help="requests per page after the warm-up (default 30)")
    ap.add_argument("--embedder", default="hash", choices=["hash", "default"],
                    help="hash (default: seeding 10k stays quick) or default (MiniLM: search pays one query embedding)")
    args = ap.parse_args(argv)
    if args.memories < 100 or args.runs < 1:
        ap.error("--memories must be at least 100 and --runs at least 1.")

    from starlette.testclient import TestClient

    from recallite_core import Recallite

    from ..browser.app import build_app
    from ..browser.guard import Guard

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "memory.db")
        mem = Recallite.open(path, embedder=args.embedder)
        t0 = time.perf_counter()
        seed(mem, args.memories)
        print(f"seeded {args.memories:,} memories in {time.perf_counter() - t0:.1f} s ({mem.embedder.name})", file=sys.stderr)
        guard = Guard("127.0.0.1", 8766)
        client = TestClient(build_app(mem, guard), base_url="http://127.0.0.1:8766")
        client.get(f"/?token={guard.token}")
        some = mem.list(limit=1, offset=args.memories // 2)[0].id
        pages = [
            ("memories, newest first (50 rows)", "/"),
            ("memories, page 100 (offset 4950)", "/?offset=4950"),
            ("memories, filtered (scope+source+type)", "/?scope=billing&source=agent&type=fact"),
            ("memories, search (recall, 20 hits)", "/?q=" + make_queries(1, seed=7)[0].replace(" ", "+")),
            ("one memory", f"/memory/{some}"),
            ("learning", "/learning"),
            ("health", "/health"),
        ]
        print(f"\nmemory browser pages at {args.memories:,} memories, {args.runs} requests each "
              f"({platform.python_implementation()} {platform.python_version()}, {platform.machine()}, "
              f"{os.cpu_count()} cpus)\n")
        print(f"{'page':<42} {'median ms':>10} {'p95 ms':>8} {'KB':>6}")
        for name, path_ in pages:
            r = client.get(path_)
            if r.status_code != 200:
                print(f"{name:<42} HTTP {r.status_code}")
                continue
            times = []
            for _ in range(args.runs):
                t = time.perf_counter()
                client.get(path_)
                times.append(1000 * (time.perf_counter() - t))
            times.sort()
            p95 = times[min(len(times) - 1, int(round(0.95 * (len(times) - 1))))]
            print(f"{name:<42} {statistics.median(times):>10.1f} {p95:>8.1f} {len(r.content) / 1024:>6.1f}")
        mem.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
