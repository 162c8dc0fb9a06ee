"""The LoCoMo harness on a small slice, so it cannot silently break; and our metrics agree
with the benchmark's reference scorer on the same run file."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from recallite_mcp.benchmarks import locomo

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT.parent / "shared" / "bench"
pytestmark = pytest.mark.skipif(not (BENCH / "locomo" / "corpus.jsonl").exists(), reason="benchmark data not beside the checkout")


def test_metrics_by_hand():
    m = locomo.query_metrics(["a", "x", "b", "y"], ["a", "b"])
    assert m["recall@1"] == 0.5 and m["recall@5"] == 1.0 and m["mrr@10"] == 1.0
    assert 0.9 < m["ndcg@10"] < 1.0
    assert locomo.query_metrics(["x"], ["a"])["ndcg@10"] == 0.0


def test_harness_on_a_slice_matches_the_reference_scorer(tmp_path):
    res = locomo.evaluate(str(BENCH), embedder="hash", conversations=1, out_dir=str(tmp_path))
    assert set(res["modes"]) == {"hybrid", "keyword-only", "vector-only"}
    for mode, body in res["modes"].items():
        m = body["metrics"]["all"]
        assert m["n"] == res["queries"] > 50
        assert 0.2 < m["recall@10"] <= 1.0, (mode, m)
        runs = [json.loads(l) for l in Path(body["run_file"]).read_text().splitlines()]
        assert len(runs) == res["queries"]
        if mode == "hybrid":  # keyword-only returns only what matches a query word
            assert all(len(r["ranked"]) >= 10 for r in runs)
        elif mode == "vector-only":  # a full list, or nothing when no turn is near the question at all
            assert all(len(r["ranked"]) >= 10 or not r["ranked"] for r in runs)
    scored = tmp_path / "scored.json"
    subprocess.run([sys.executable, str(BENCH / "score.py"), "locomo", "--score", res["modes"]["hybrid"]["run_file"],
                    "--out", str(scored)], check=True, capture_output=True)
    ref = json.loads(scored.read_text())
    ours = res["modes"]["hybrid"]["metrics"]["all"]
    # The reference scorer averages over every LoCoMo question; the slice's absent ones score 0.
    scale = ours["n"] / ref["n_queries"]
    for key in ("recall@1", "recall@5", "recall@10", "ndcg@10", "mrr@10"):
        assert abs(ref["overall"][key] - ours[key] * scale) < 1e-3, (key, ours[key], ref["overall"][key])
    report = locomo.format_report(res)
    assert "keyword-only" in report and "vector-only" in report and "nDCG@10" in report


def test_rerank_mode_and_chunk_ablation_on_a_slice(tmp_path):
    res = locomo.evaluate(str(BENCH), embedder="hash", conversations=1, modes=["hybrid+overlap-rerank"], chunks=False)
    m = res["modes"]["hybrid+overlap-rerank"]["metrics"]["all"]
    assert m["n"] == res["queries"] and 0.2 < m["recall@10"] <= 1.0
