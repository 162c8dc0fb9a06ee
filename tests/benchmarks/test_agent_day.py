"""The agent-day benchmark: a small run of the dev set through real stdio servers (hash embedder, 2 days).

The targets (precision, recall, feedback never worse) are printed by the benchmark, not asserted here."""

import pytest

from recallite_mcp.benchmarks import agent_day as ad

METRICS = ("tasks", "precision", "recall", "tokens", "served", "success", "memories")


@pytest.mark.parametrize("name", ad.SETS)
def test_catalogs_are_well_formed(name):
    data = ad.load_set(name)
    assert data["name"] == name and data.get("description")
    projects = ad.build_projects(data)
    assert len(projects) == 2 and len({p.scope for p in projects}) == 2
    for p in projects:
        assert 8 <= len(p.tasks) <= 12
        assert any(m.role == "unrelated" for m in p.memories) and any(m.role == "general" for m in p.memories)
        for t in p.tasks:
            assert len(t.phrasings) >= 3 and 1 <= len(t.needed) <= 2 and 1 <= len(t.misleading) <= 2
        for m in p.memories:
            assert m.day >= 1 and m.content
            assert not m.learned or m.role == "needed"  # only a needed memory is written down by the agent


def test_judge_follows_the_agent_model():
    data = ad.load_set("dev")
    task = next(t for t in ad.build_projects(data)[0].tasks if t.kind == "deploy-api")
    key_of = {"m1": "deploy-proc", "m2": "deploy-old", "m3": "g-stack"}
    assert ad.judge(task, ["m3", "m1", "m2"], key_of)[0] == "success"  # procedure above the misleading one
    outcome, ok, followed = ad.judge(task, ["m2", "m1"], key_of)  # misleading procedure read first
    assert outcome == "failure" and ok == [] and followed == ["m2"]
    assert ad.judge(task, ["m3"], key_of)[0] == "failure"


def test_small_run_through_real_servers(tmp_path):
    res = ad.run_agent_day("dev", days=2, seed=3, embedder="hash", tasks_per_day=4, kinds=3, trace=True,
                           keep=str(tmp_path))
    assert [row["day"] for row in res["days"]] == [1, 2]
    for row in res["days"]:
        assert set(row["projects"]) == {"billing-api", "mobile-app"}
        for scope, r in row["projects"].items():
            for twin in ("feedback", "no_feedback"):
                m = r[twin]
                for k in METRICS:
                    assert m[k] is not None, (row["day"], scope, twin, k)
                assert m["tasks"] == 4
                assert 0.0 <= m["precision"] <= 1.0 and 0.0 <= m["recall"] <= 1.0 and 0.0 <= m["success"] <= 1.0
                assert m["tokens"] > 0 and m["memories"] > 0
            assert r["no_feedback"]["feedback_sent"] == 0 and r["feedback"]["feedback_sent"] == 4
            assert set(r["delta"]) == {"precision", "recall"}
        # checked through the servers' own stats: the twin without feedback recorded none
        assert sum(row["stats"]["no_feedback"]["feedback"].values()) == 0
        assert sum(row["stats"]["feedback"]["feedback"].values()) >= 8
        assert row["stats"]["no_feedback"]["context_calls"] == row["stats"]["feedback"]["context_calls"]
    assert res["checks"] and {"day", "project", "check", "value", "ok"} <= set(res["checks"][0])
    assert "prec fb/no" in ad.format_table(res)
    for row in res["days"]:  # the off-task diagnostic counts served memories that are not the task's
        for r in row["projects"].values():
            for twin in ("feedback", "no_feedback"):
                m = r[twin]
                assert 0 <= sum(m["off_task_served"].values()) <= m["served_total"]
                assert (m["precision"] == 1.0) <= (sum(m["off_task_served"].values()) == 0)
    assert ad.off_task_line(res).startswith("off-task memories served")
    # --trace: every task of both twins, by catalog key; --keep: each twin's database at the end of each day
    trace = res["trace"]
    assert len(trace) == 2 * 2 * 2 * 4 and {t["twin"] for t in trace} == {"feedback", "no_feedback"}
    for t in trace:
        assert t["outcome"] in ("success", "partial", "failure") and set(t["missing"]) <= {
            m.key for p in ad.build_projects(ad.load_set("dev"), 3) for k in p.tasks if k.kind == t["kind"] for m in k.needed}
    assert sorted(f.name for f in tmp_path.iterdir()) == [
        f"{twin}.day{d}.db" for twin in ("feedback", "no_feedback") for d in (1, 2)]


def test_off_task_memories_are_told_apart():
    projects = ad.build_projects(ad.load_set("dev"))
    agent = ad.Agent("x", projects, ":memory:", "hash", False, 7)
    other = next(m for m in projects[0].memories if m.role == "misleading")
    general = next(m for m in projects[0].memories if m.role == "general")
    unrelated = next(m for m in projects[1].memories if m.role == "unrelated")
    assert agent.off_task_kind(f"0:{other.key}") == "other task's misleading"
    assert agent.off_task_kind(f"0:{general.key}") == "general"
    assert agent.off_task_kind(f"1:{unrelated.key}") == "unrelated"
    assert agent.off_task_kind(None) == "unknown"


def _run(seed: int, rows: list[tuple[int, float, float | None]]) -> dict:
    """A run as run_agent_day returns it: (day, precision, recall) with feedback, the twin at 0.5/1.0."""
    days = [{"day": d, "projects": {"p": {"feedback": {"precision": p, "recall": r, "tokens": 100, "recall_each": []},
                                          "no_feedback": {"precision": 0.5, "recall": 1.0, "tokens": 300,
                                                          "recall_each": []},
                                          "delta": {"precision": p - 0.5, "recall": None if r is None else r - 1.0}}}}
            for d, p, r in rows]
    res = {"days": days, "config": {"seed": seed}}
    res["checks"] = ad.check_targets(res)
    return res


def test_seeds_summary_averages_days_from_the_target_day_over_every_run():
    a = _run(1, [(2, 0.0, 0.0), (3, 0.8, 1.0), (4, 1.0, None)])
    b = _run(2, [(3, 0.6, 0.5)])
    s = ad.seeds_summary([a, b])
    assert s["seeds"] == [1, 2]
    assert s["precision"] == round((0.8 + 1.0 + 0.6) / 3, 4)  # day 2 left out
    assert s["recall"] == 0.75  # a day with no recall (nothing needed was stored yet) is not a zero
    assert s["twin_recall"] == 1.0
    assert s["checks_failed"] == sum(1 for r in (a, b) for c in r["checks"] if not c["ok"]) > 0


def test_misses_are_told_apart_by_which_twin_missed():
    a = _run(1, [(2, 1.0, 0.0), (3, 1.0, 0.5)])
    a["days"][0]["projects"]["p"]["feedback"]["recall_each"] = [0]  # day 2: before the target day, not counted
    a["days"][0]["projects"]["p"]["no_feedback"]["recall_each"] = [1]
    a["days"][1]["projects"]["p"]["feedback"]["recall_each"] = [0, 0, 1, 1]
    a["days"][1]["projects"]["p"]["no_feedback"]["recall_each"] = [1, 0, 0, 1]
    assert ad.miss_counts([a]) == {"feedback_only": 1, "both": 1, "no_feedback_only": 1}
