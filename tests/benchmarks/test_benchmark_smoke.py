"""The performance benchmark runs end to end on a tiny store (it measures; nothing is timed here)."""

import json

import pytest

from recallite_mcp.benchmarks.dataset import memories, queries
from recallite_mcp.benchmarks.performance import format_report, run_benchmark


def test_dataset_is_deterministic_and_varied():
    a, b = list(memories(500, seed=3)), list(memories(500, seed=3))
    assert a == b
    assert len({m["content"] for m in a}) == 500
    assert len({m["content"].split(" (#")[0] for m in a}) > 450  # not copies of one sentence
    assert len({m["type"] for m in a}) == 7 and len({m["scope"] for m in a}) > 3
    assert queries(20, seed=1) == queries(20, seed=1)


@pytest.mark.slow
def test_run_benchmark_small():
    result = run_benchmark(
        memories=300, dims=64, sizes=[300], queries=5, concurrent_rounds=1, single_writes=5, feedback_ops=12,
        workers={"size": 1, "min_vector_count": 0, "min_scan_operations": 0}, json_output=True, log=lambda m: None,
    )
    ops = [r["operation"] for r in result["rows"]]
    for name in ("remember (single)", "remember_many (100/batch)", "recall @300 inline", "recall @300 workers",
                 "10 concurrent recalls @300 inline (wall for 10)", "10 concurrent recalls @300 workers (wall for 10)",
                 "format_context @300", "feedback @300", "reinforce @300", "reindex @300",
                 "numpy floor @300 (matmul+argpartition)", "cold start @300 (process start to first recall)",
                 "cold start: python -c 'import recallite_core'"):
        assert name in ops, name
    recall = next(r for r in result["rows"] if r["operation"] == "recall @300 workers")
    assert recall["count"] == 5 and recall["x_floor"] > 0 and "worker" in recall["note"]
    assert result["machine"]["cpus"] >= 1 and result["machine"]["sqlite"]
    assert result["memory"][0]["matrix_mb"] >= 0 and result["peak_rss"]["self_mb"] > 0
    json.dumps(result)
    text = format_report(result)
    assert "p50 ms" in text and "x floor" in text and "peak RSS" in text


def test_run_benchmark_writes_only():
    result = run_benchmark(memories=400, dims=32, sizes=[200], single_writes=5, feedback_ops=12, queries=5,
                           workers=None, writes_only=True, log=lambda m: None)
    ops = [r["operation"] for r in result["rows"]]
    assert ops == ["remember (single)", "feedback @400", "reinforce @400", "remember_many (100/batch)"]
    assert result["rows"][-1]["count"] == 400
    text = format_report(result)
    assert "writes only" in text and "remember_many" in text and "peak RSS" in text
