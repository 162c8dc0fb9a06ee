"""The long-history set (issue 14): what it claims to be, and its harness end to end."""

import json
from collections import Counter

import make_history_set as history_data

from recallite_mcp.benchmarks import evalsets


def test_the_committed_file_is_what_the_generator_writes():
    committed = evalsets.load_history()
    assert committed == json.loads(json.dumps(history_data.generate()))


def test_hundreds_of_turns_per_user_and_evidence_spread_over_sessions():
    users = evalsets.load_history()
    assert [u["part"] for u in users] == ["dev"] * 3 + ["holdout"] * 3
    for u in users:
        ids = {t["id"] for t in u["turns"]}
        assert len(u["turns"]) >= 300
        assert len({t["session"] for t in u["turns"]}) >= 10
        for q in u["questions"]:
            assert set(q["gold"]) <= ids
            if q["kind"] in ("multi", "update"):
                sessions = {g.split(":")[1] for g in q["gold"]}
                assert len(sessions) == len(q["gold"]) >= 2, q
    kinds = Counter(q["kind"] for u in users for q in u["questions"])
    assert kinds["update"] >= 20 and kinds["multi"] >= 20
    # a knowledge update comes after what it replaces
    for u in users:
        when = {t["id"]: t["timestamp"] for t in u["turns"]}
        for q in u["questions"]:
            if q["kind"] == "update":
                assert when[q["gold"][0]] < when[q["gold"][1]]


def test_harness_reports_each_channel_on_both_parts():
    res = evalsets.evaluate("history", "hash")
    assert set(res["modes"]) == {"hybrid", "keyword-only", "vector-only"}
    for body in res["modes"].values():
        assert body["dev"]["n"] == body["holdout"]["n"] == 66
        assert 0.0 < body["all"]["recall@10"] <= 1.0
    assert "holdout" in evalsets.format_report(res)


def test_the_chats_set_holds_one_expected_turn_per_question_and_reports_each_kind():
    users = evalsets.load_history(evalsets.HISTORY_FILES["chats"])
    assert [u["part"] for u in users] == ["dev"] * 20 + ["holdout"] * 44
    kinds = Counter()
    for u in users:
        turns = {t["id"]: t for t in u["turns"]}
        assert {t["role"] for t in u["turns"]} == {"user", "assistant"}
        for q in u["questions"]:
            (gold,) = q["gold"]
            assert turns[gold]["role"] == ("assistant" if q["kind"] == "assistant" else "user"), q
            kinds[q["kind"]] += 1
    assert set(kinds) == {"self-now", "self", "other", "assistant", "past"} and sum(kinds.values()) == 160
    res = evalsets.evaluate("chats", "hash", modes=["hybrid"], kinds=True)
    assert set(res["kinds"]["hybrid"]) == set(kinds)
    assert sum(m["n"] for m in res["kinds"]["hybrid"].values()) == 160
    assert "self-now" in evalsets.format_report(res)
