"""The closed-loop learning benchmark: scenario outcomes on a small, fast configuration.

Hash embedder, 12 families (2 interference pairs, 3 drifting families), 12 rounds: a few
seconds. The hash embedder only sees shared words, so paraphrases of a task are far apart and
learning is slower than with MiniLM (README, "Learning from outcomes", has the default run); the
thresholds below are what this configuration reaches, less one family, and each is far from
what no learning (or a learner that ignores the query) gives, so a regression fails here.
The default configuration (48 families, MiniLM) is checked against the issue's targets by
``test_default_configuration_meets_the_targets`` (slow; skipped without the model).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from recallite_core import RecalliteConfig
from recallite_core.learning.learner import LearningConfig
from recallite_mcp.benchmarks import learning as bench
from recallite_mcp.benchmarks import learning_tasks as lt

ROOT = Path(__file__).resolve().parents[2]
SMALL = dict(families=12, rounds=12, seed=7, embedder="hash")


@pytest.fixture(scope="module")
def small() -> dict:
    return bench.run_learning_benchmark(**SMALL, mcp=True, mcp_families=8, mcp_rounds=6)


def curve(result: dict, scenario: str, group: str = "all") -> list[float]:
    return bench.series(result["scenarios"][scenario]["rounds"], group)


def mean(xs) -> float:
    return sum(xs) / len(xs)


def test_baseline_before_feedback(small):
    fams = lt.generate_families(12, seed=7)
    expected = mean([1 / (1 + f.n_distractors) for f in fams])
    for sc in bench.SCENARIOS:
        assert curve(small, sc)[0] <= expected + 0.15, sc  # round 1: no feedback yet anywhere


def test_clean_learns(small):
    c = curve(small, "clean")
    assert min(c[3:]) >= 0.83 and mean(c[-3:]) >= 0.9
    assert mean(c[-3:]) - c[0] >= 0.6


def test_noise_still_learns(small):
    n = curve(small, "noise")
    assert mean(n[5:]) >= 0.6 and mean(n[5:]) - n[0] >= 0.45


def test_drift_the_old_memory_falls_and_the_new_one_wins(small):
    d = small["scenarios"]["drift"]
    drifted = curve(small, "drift", "drifted")
    # It worked before the change: rounds 3-5, not round 5 alone. Three families make steps of
    # 1/3, and with the hash embedder a paraphrase that shares few words with the earlier ones
    # can cost a family one round (clean shows the same dip at round 5).
    assert mean(drifted[2 : lt.DRIFT_AFTER_ROUND]) >= 0.75
    assert drifted[lt.DRIFT_AFTER_ROUND] <= 0.5  # the change hits
    assert min(drifted[8:]) >= 0.9  # and it is learned again
    assert set(d["replacement_first_used_round"]) == set(d["drifted_families"])  # every new memory got tried
    assert all(r <= lt.DRIFT_AFTER_ROUND + 3 for r in d["replacement_first_used_round"].values())


def test_interference_a_keeps_winning_while_b_recovers(small):
    start = small["scenarios"]["interference"]["interference_from"]
    a, b = curve(small, "interference", "A"), curve(small, "interference", "B")
    assert min(a[start - 1 :]) >= 0.9
    assert mean(b[-5:]) >= 0.9


def test_interference_needs_context_aware_credit(small):
    """One posterior per memory (global) cannot keep A and B apart; the contextual learner does."""
    glob = bench.run_learning_benchmark(**SMALL, scenarios=["interference"], mcp=False,
                                        config=RecalliteConfig(learning=LearningConfig(mode="global")))
    start = 4
    ctx_b = mean(curve(small, "interference", "B")[start - 1 :])
    glob_b = mean(curve(glob, "interference", "B")[start - 1 :])
    ctx_a = mean(curve(small, "interference", "A")[start - 1 :])
    glob_a = mean(curve(glob, "interference", "A")[start - 1 :])
    assert ctx_b - glob_b >= 0.3 and ctx_a >= glob_a


def test_no_feedback_means_no_learning_from_reads(small):
    none = small["scenarios"]["none"]
    assert none["feedback_calls"] == 0 and none["repeated_queries"] >= 24
    assert none["rankings_changed_by_reads"] == 0
    assert none["access_counts"] > 0  # reads were counted, and moved nothing
    assert max(curve(small, "none")) <= 0.6


def test_the_mcp_tools_learn_too(small):
    m = small["mcp"]
    s = [r["success"] for r in m["rounds"]]
    assert mean(s[-3:]) >= 0.75 and mean(s[-3:]) - s[0] >= 0.4
    assert m["feedback"]["success"] > 0
    tuning = m["context_tuning"]["learning-bench"]
    assert tuning["limit"] in (3, 5, 10) and len(tuning["arms"]) == len(LearningConfig().arms)


def test_results_are_reported(small, tmp_path):
    text = bench.final_table(small)
    assert text.count("\n") >= 8 and "| clean " in text and "interference" in text
    for sc in ("clean", "noise", "drift", "interference", "none"):
        assert sc in bench.format_scenario(small["scenarios"][sc])
    json.dumps(small)  # --json works
    made = bench.plot(small, str(tmp_path / "p.png"))
    assert made == (tmp_path / "p.png").exists()


def test_cli_runs_it(tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "core"), str(ROOT)])}
    res = subprocess.run(
        [sys.executable, "-m", "recallite_mcp", "bench", "--learning", "--families", "4", "--rounds", "2",
         "--embedder", "hash", "--scenarios", "clean,none", "--no-mcp", "--json", "--plot", str(tmp_path / "x.png")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert set(out["scenarios"]) == {"clean", "none"} and out["config"]["families"] == 4
    res = subprocess.run([sys.executable, "-m", "recallite_mcp", "bench", "--learning", "--", "--help"], env=env,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and "--families" in res.stdout and "--plot" in res.stdout


def _model_available() -> bool:
    from recallite_core.embedding.onnx_embedder import OnnxMiniLMEmbedder

    return OnnxMiniLMEmbedder.is_available()


@pytest.mark.slow
@pytest.mark.skipif(not _model_available(), reason="the MiniLM model is not installed")
def test_default_configuration_meets_the_targets():
    """`recallite-mcp bench --learning` as the README reports it (48 families, MiniLM, seed 7).

    ONNX results can differ in the last bits between CPUs; a near-tie may then flip one family.
    So: every target met, or exactly one missed by at most one family."""
    res = bench.run_learning_benchmark(mcp=False)
    missed = [t for s in res["scenarios"].values() for t in s["targets"] if t["required"] and not t["pass"]]
    assert len(missed) <= 1, missed
    for t in missed:
        group = {"all": 48, "drifted": 12, "A": 10, "B": 10}[t["group"]]
        assert t["value"] >= t["target"] - 1.0 / group - 1e-9, t
    assert res["scenarios"]["none"]["rankings_changed_by_reads"] == 0


# -- catalogs and --via recall -------------------------------------------------------------------------------


def test_voices_dev_via_recall_end_to_end():
    """A small voices-dev run through recall (no exploration): regressions and the paraphrase cosine reported."""
    res = bench.run_learning_benchmark(families=8, rounds=6, seed=7, embedder="hash", catalog="voices-dev",
                                       via="recall", attempts=1, mcp=False, scenarios=["clean", "noise", "interference"],
                                       keep_log=True)
    assert res["catalog"] == "voices-dev" and res["via"] == "recall" and res["config"]["families"] == 8
    pc = res["paraphrase_cosine"]
    assert pc["embedder"] == "hash-v1-384" and pc["pairs"] == 8 * 15
    assert -1 <= pc["min"] <= pc["p10"] <= pc["median"] <= pc["p90"] <= pc["max"] <= 1
    assert pc["min"] <= pc["mean"] <= pc["max"]
    clean = res["scenarios"]["clean"]
    assert clean["via"] == "recall" and clean["family_rounds_after_first"] == 8 * 5
    assert 0 <= clean["regressions"] <= 1
    assert clean["regression_count"] == round(clean["regressions"] * 40)
    names = {t["name"]: t for t in clean["targets"]}
    assert names["regressions"]["value"] == clean["regressions"]
    assert names["regressions"]["pass"] == (clean["regressions"] <= 0.02)
    noise = {t["name"]: t for t in res["scenarios"]["noise"]["targets"]}["mean of rounds 6-10"]
    assert noise["to"] == 6 and noise["value"] == round(curve(res, "noise")[5], 4)
    # recall shows at most 3, each logged with its retrieval id
    log = clean["log"]
    assert len(log) == 8 * 6 and all(e["retrieval_id"].startswith("ret_") and len(e["ids"]) <= 3 for e in log)
    assert "interference" in res["scenarios"] or "interference" in res["skipped"]
    text = bench.format_scenario(clean)
    assert "regressions" in text and "via recall" in text
    table = bench.final_table(res)
    assert "regr." in table and "regressions" in table
    json.dumps(res)


def test_interference_is_skipped_without_pairs():
    say: list[str] = []
    res = bench.run_learning_benchmark(families=1, rounds=2, seed=7, embedder="hash", catalog="voices-dev",
                                       mcp=False, scenarios=["clean", "interference"], progress=say.append)
    assert "interference" not in res["scenarios"] and "no interference pairs" in res["skipped"]["interference"]
    assert any("skipped" in s for s in say) and any(s.startswith("paraphrase cosine") for s in say)


def test_cli_passes_catalog_and_via(tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "core"), str(ROOT)])}
    res = subprocess.run(
        [sys.executable, "-m", "recallite_mcp", "bench", "--learning", "--catalog", "voices-dev", "--via", "recall",
         "--families", "3", "--rounds", "2", "--embedder", "hash", "--scenarios", "clean", "--no-mcp", "--json"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["catalog"] == "voices-dev" and out["via"] == "recall" and out["config"]["families"] == 3
    assert "regressions" in out["scenarios"]["clean"] and out["paraphrase_cosine"]["pairs"] == 45


def test_separation_reports_query_and_task_vectors_and_the_floor():
    from recallite_mcp.benchmarks.learning import format_separation, separation

    s = separation("voices-dev", "hash")
    for name in ("query", "task"):
        assert 0.0 <= s[name]["auc"] <= 1.0 and s[name]["pairs"][0] > 0 and s[name]["pairs"][1] > 0
    assert s["floor"]["cosine"] == 0.3 and 0.0 <= s["floor"]["own_memories_above"] <= 1.0
    assert "AUC" in format_separation(s)


def test_oracle_bound_learns_and_one_attempt_is_slower():
    from recallite_mcp.benchmarks.learning import oracle

    one, three = oracle("voices-dev", 1, 4, "hash"), oracle("voices-dev", 3, 4, "hash")
    assert len(one) == 4 and one[0] == three[0] < three[1]
    assert sum(one[:3]) <= sum(three[:3])


def test_the_oracle_ignored_the_families_distractors_and_phrasings_of_the_run_it_bounds():
    from recallite_mcp.benchmarks.learning import oracle

    # One family of two candidates: each round is that family's success (0 or 1), and with one
    # attempt the second candidate is reached by round 2 at the latest. The whole catalog (48
    # families, four candidates each) gave fractions.
    curve = oracle("ops", 1, 3, "hash", 7, families=1, distractors=1)
    assert all(x in (0.0, 1.0) for x in curve) and curve[1] == 1.0
    assert all(x in (0.0, 0.5, 1.0) for x in oracle("voices-dev", 1, 3, "hash", 8, families=2, distractors=2, phrasings=2))


def test_a_closed_loop_of_three_candidates_and_three_phrasings_plays_only_those():
    res = bench.run_learning_benchmark(families=6, rounds=4, seed=7, embedder="hash", scenarios=["clean"], mcp=False,
                                       attempts=1, distractors=2, phrasings=3, keep_log=True)
    assert res["config"]["memories"] == 6 * 3 and (res["config"]["distractors"], res["config"]["phrasings"]) == (2, 3)
    fams = lt.trimmed(lt.generate_families(6, seed=7), distractors=2, phrasings=3)
    asked = {e["query"] for e in res["scenarios"]["clean"]["log"]}
    assert asked <= {q for f in fams for q in f.queries} and all(len(f.queries) == 3 for f in fams)
    assert res["paraphrase_cosine"]["pairs"] == 6 * 3  # three pairs of phrasings per family
    with pytest.raises(ValueError, match="distractors must be at least 1"):
        lt.trimmed(fams, distractors=0)


def test_known_tasks_put_every_phrasing_of_a_family_on_its_own_axis():
    from recallite_core import Recallite
    from recallite_mcp.benchmarks.learning_agent import KnownTasks, make_embedder

    mem = Recallite.open(None, embedder=make_embedder("hash"))
    try:
        told = KnownTasks(mem)
        told.ask("deploy the branch to staging", "deploy")
        told.ask("ship this build to the test environment", "deploy")
        told.ask("rotate the database password", "rotate")
        r = mem.core.retriever

        def task(q):  # no candidates: the blended task vector is the query's own
            return r.task_vector(None, r.query_vector(q), [])

        deploy, ship, rotate = task("deploy the branch to staging"), task("ship this build to the test environment"), \
            task("rotate the database password")
        assert float(deploy @ ship) == 1.0 and float(deploy @ rotate) == 0.0
        stranger = task("lint the code")  # not registered: left as the learner would place it
        assert float(stranger @ r.query_vector("lint the code")) == pytest.approx(1.0, abs=1e-5)
    finally:
        mem.close()
    res = bench.run_learning_benchmark(families=4, rounds=3, seed=7, embedder="hash", scenarios=["clean"], mcp=False,
                                       attempts=1, distractors=2, phrasings=3, known_tasks=True)
    assert res["config"]["learner"] == "contextual, told each task"


def test_an_agent_that_names_its_tasks_passes_the_names_to_recall():
    res = bench.run_learning_benchmark(families=4, rounds=3, seed=7, embedder="hash", scenarios=["clean"], mcp=False,
                                       attempts=1, distractors=2, phrasings=3, task_names=1.0)
    assert res["config"]["learner"] == "contextual, agent names its tasks (100% the same name)"
    with pytest.raises(SystemExit):
        bench.main(["--task-names", "1.5", "--families", "2", "--rounds", "1", "--no-mcp"])


def test_an_agent_with_names_of_its_own_reports_under_a_listed_family_name():
    kw = {"rounds": 4, "embedder": "hash", "scenarios": ["clean"], "attempts": 1, "distractors": 2, "phrasings": 3,
          "families": 4, "task_names": 0.5}
    res = bench.run_seeds([7, 8], adopt_names="own", **kw)
    own = res["scenarios"]["clean"]["own_names"]
    per_seed = [r["scenarios"]["clean"]["own_names"] for r in res["per_seed_runs"]]
    assert own["adopted"] and own["asks"] == sum(o["asks"] for o in per_seed) > 0
    assert 0 < own["family_listed"] <= own["asks"] and own["family_first"] <= own["family_listed"]
    assert "reports under its family's name when listed" in res["config"]["learner"]
    naive = bench.run_learning_benchmark(seed=7, mcp=False, adopt_names="first", **kw)
    assert naive["scenarios"]["clean"]["own_names"]["adopted"] == "first"
    with pytest.raises(SystemExit):
        bench.main(["--adopt-names", "--families", "2", "--rounds", "1", "--no-mcp"])  # needs --task-names


def test_the_published_loop_figure_was_a_mean_over_seeds_that_no_command_printed():
    """The README's learning row is a mean over seeds 7-9 while its command ran one seed: --seeds
    prints the means (targets judged on them) and each seed's values."""
    kw = dict(families=4, rounds=3, embedder="hash", scenarios=["clean", "noise"], attempts=1, distractors=2, phrasings=3)
    res = bench.run_seeds([7, 8], **kw)
    runs = [bench.run_learning_benchmark(seed=s, mcp=False, **kw) for s in (7, 8)]
    assert res["config"]["seeds"] == [7, 8] and "mcp" not in res
    for name in ("clean", "noise"):
        got, one, two = (r["scenarios"][name] for r in (res, *runs))
        assert [r["success"] for r in got["rounds"]] == pytest.approx(
            [(a["success"] + b["success"]) / 2 for a, b in zip(one["rounds"], two["rounds"])])
        assert got["regressions"] == pytest.approx((one["regressions"] + two["regressions"]) / 2, abs=1e-4)
        for t in got["targets"]:
            assert got["per_seed"][t["name"]] == [next(u["value"] for u in r["targets"] if u["name"] == t["name"])
                                                  for r in (one, two)]
    clean = res["scenarios"]["clean"]["targets"]
    r3 = next(t for t in clean if t["name"] == "round 3")
    assert r3["value"] == pytest.approx(sum(res["scenarios"]["clean"]["per_seed"]["round 3"]) / 2)
    with pytest.raises(SystemExit):
        bench.main(["--separation", "--seeds", "7,8", "--embedder", "hash"])
