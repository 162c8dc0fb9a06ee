"""LoCoMo-style conversation retrieval through the conversation-memory API.

Reads a benchmark folder laid out as ``corpus.jsonl`` (one dialog turn per line: id, text,
session, timestamp, speaker, conversation) and ``queries.jsonl`` (id, text, conversation,
gold_ids), records every conversation with ``record_turns`` (one scope per conversation,
speaker = role), asks every question with ``recall`` in its conversation's scope and writes
a run file for the scorer: one ``{"id": query, "ranked": [turn ids...]}`` line per question.
The data is read from where it lies (evaluation only; never copied into the package).

    python -m recallite_mcp.benchmarks.conversation /path/to/locomo --out run.jsonl \\
        [--embedder default|hash] [--ingest turns|memories] [--no-chunks] [--rerank none|overlap]
    python3 /path/to/score.py locomo --score run.jsonl
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import defaultdict
from pathlib import Path


def overlap_reranker(query: str, texts: list[str]) -> list[float]:
    """A cheap lexical reranker (for measuring the rerank stage itself, not a cross-encoder):
    the share of the question's content words found in the text."""
    from recallite_core.fts import STOPWORDS

    words = {w for w in re.findall(r"\w+", query.lower()) if w not in STOPWORDS}
    if not words:
        return [0.0] * len(texts)
    return [len(words & set(re.findall(r"\w+", t.lower()))) / len(words) for t in texts]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folder", help="benchmark folder with corpus.jsonl and queries.jsonl")
    ap.add_argument("--out", required=True)
    ap.add_argument("--embedder", default="default")
    ap.add_argument("--ingest", choices=["turns", "memories"], default="turns",
                    help="turns: record_turns (speaker as role, chunks); memories: remember_many, the plain path")
    ap.add_argument("--no-chunks", action="store_true")
    ap.add_argument("--rerank", choices=["none", "overlap"], default="none")
    ap.add_argument("--limit", type=int, default=10)
    ap.add_argument("--db", default=None, help="keep the store in this file (default: in memory)")
    a = ap.parse_args(argv)

    from recallite_core import Recallite, RecalliteConfig

    folder = Path(a.folder)
    corpus = [json.loads(line) for line in (folder / "corpus.jsonl").open()]
    queries = [json.loads(line) for line in (folder / "queries.jsonl").open()]
    cfg = RecalliteConfig(chunk_types=() if a.no_chunks else ("episode",),
                          rerank=overlap_reranker if a.rerank == "overlap" else None)
    mem = Recallite.open(a.db, embedder=a.embedder, config=cfg)
    t0 = time.perf_counter()
    by_conv: dict[str, list[dict]] = defaultdict(list)
    for row in corpus:
        by_conv[row["conversation"]].append(row)
    id_of: dict[str, str] = {}
    for conv, rows in by_conv.items():
        if a.ingest == "turns":
            mems = mem.record_turns([
                {"session": r["session"], "role": r.get("speaker") or "user", "content": r["text"],
                 "timestamp": r.get("timestamp"), "metadata": {"bench_id": r["id"]}} for r in rows], scope=conv)
        else:
            mems = mem.remember_many([{"content": r["text"], "type": "episode", "scope": conv, "session": r["session"],
                                       "metadata": {"bench_id": r["id"]}} for r in rows])
        for m, r in zip(mems, rows):
            id_of[m.id] = r["id"]
    ingest_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    with open(a.out, "w") as out:
        for q in queries:
            r = mem.recall(q["text"], limit=a.limit, scope=q["conversation"])
            out.write(json.dumps({"id": q["id"], "ranked": [id_of[h.memory.id] for h in r.memories if h.memory.id in id_of]}) + "\n")
    query_s = time.perf_counter() - t1
    chunks = mem.store.conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
    print(f"{len(corpus)} turns ({chunks} chunks) ingested in {ingest_s:.1f} s; {len(queries)} questions in {query_s:.1f} s "
          f"({1000 * query_s / max(1, len(queries)):.1f} ms each); embedder {mem.embedder.name}; run -> {a.out}",
          file=sys.stderr)
    mem.close()
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
