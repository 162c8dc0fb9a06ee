"""The best-per-query ceiling of `eval --ceiling` (issue 14): each question scored by the mode
that ranked it best, so the report shows how far any per-query choice among the channels could go."""

from pathlib import Path

import pytest

from recallite_mcp.benchmarks import evalsets, locomo
from recallite_mcp.benchmarks.locomo import CEILING, best_per_query, query_metrics


def test_each_question_takes_the_mode_that_ranked_it_best():
    gold = [["a"], ["b"]]
    hybrid = [query_metrics(["x", "a"], gold[0]), query_metrics(["b"], gold[1])]
    keyword = [query_metrics(["a"], gold[0]), query_metrics(["x", "y", "b"], gold[1])]
    best = best_per_query({"hybrid": hybrid, "keyword-only": keyword})
    assert [m["recall@1"] for m in best] == [1.0, 1.0]
    assert best[0] is keyword[0] and best[1] is hybrid[1]


def test_a_tie_goes_to_the_first_mode():
    same = query_metrics(["a"], ["a"])
    other = dict(same)
    assert best_per_query({"hybrid": [same], "vector-only": [other]})[0] is same


def test_modes_must_answer_the_same_questions():
    with pytest.raises(ValueError):
        best_per_query({"hybrid": [query_metrics([], ["a"])], "keyword-only": []})
    assert best_per_query({}) == []


def test_the_report_names_the_ceiling_beside_the_modes():
    row = {"n": 1, "recall@1": 1.0, "recall@5": 1.0, "recall@10": 1.0, "ndcg@10": 1.0}
    res = {"set": "nearmiss", "describe": "d", "embedder": "e",
           "modes": {"hybrid": {"dev": row}, CEILING: {"dev": row}}}
    lines = evalsets.format_report(res).splitlines()
    assert any(line.split()[:2] == ["dev", CEILING] for line in lines)


BENCH = Path(__file__).resolve().parents[2].parent / "shared" / "bench"


@pytest.mark.skipif(not (BENCH / "locomo" / "corpus.jsonl").exists(), reason="benchmark data not beside the checkout")
def test_locomo_ceiling_is_never_below_a_mode(tmp_path):
    res = locomo.evaluate(str(BENCH), embedder="hash", conversations=1, modes=("hybrid", "keyword-only"),
                          out_dir=str(tmp_path), ceiling=True)
    check_ceiling(res)


def check_ceiling(res):
    best = res["modes"][CEILING]
    for key in ("ndcg@10",):  # the row is picked by nDCG@10, so no mode can beat it there
        assert all(best["metrics"]["all"][key] >= body["metrics"]["all"][key] - 1e-9
                   for mode, body in res["modes"].items() if mode != CEILING)
    assert best["metrics"]["all"]["n"] == res["queries"]
    assert set(best["parts"]) >= {"dev"}
    assert CEILING in locomo.format_report(res)
