"""The learning benchmark's --explain diagnostic: each regression (a family failing right after it
succeeded) is listed with what was served first, so a session can see why before changing anything."""

from __future__ import annotations

from recallite_mcp.benchmarks.learning_agent import REGRESSION_KINDS, regression_cases


def _turn(r: int, fam: str, ok: bool, keys: list[str]) -> dict:
    return {"round": r, "family": fam, "query": f"{fam} phrasing {r}", "keys": keys, "working": f"{fam}:working",
            "ok": ok}


def test_regressions_are_listed_with_what_was_served_first():
    log = [
        _turn(1, "a", True, ["a:working", "a:distractor-1"]),
        _turn(1, "b", True, ["b:working"]),
        _turn(1, "c", False, ["c:distractor-1", "c:working"]),  # failed first: not a regression later
        _turn(2, "a", False, ["a:distractor-1", "a:working"]),  # own distractor first
        _turn(2, "b", False, ["a:working", "b:working"]),  # another task's memory first
        _turn(2, "c", False, ["c:distractor-1"]),  # no success before: not a regression
        _turn(3, "a", True, ["a:working"]),
        _turn(4, "a", False, ["x:working", "x:distractor-2"]),  # its working memory not shown at all
    ]
    cases = regression_cases(log)
    assert [(c["round"], c["family"], c["kind"]) for c in cases] == [
        (2, "a", REGRESSION_KINDS[2]), (2, "b", REGRESSION_KINDS[1]), (4, "a", REGRESSION_KINDS[0])]
    assert cases[1]["shown"] == ["a:working", "b:working"]


def test_the_ceiling_probe_reports_a_share_for_task_and_query_vectors():
    from recallite_mcp.benchmarks.learning import ceiling

    c = ceiling("voices-dev", embedder="hash")
    for name in ("task", "query"):
        assert c[name]["cases"] > 0 and 0.0 <= c[name]["won"] <= 1.0
