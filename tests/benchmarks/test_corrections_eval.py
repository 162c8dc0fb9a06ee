"""`recallite-mcp eval corrections` on its dev split with the hash embedder: the set loads, every
write is stored, and what is measured moves the way the issue asks (detection off vs on)."""

from recallite_mcp.benchmarks.corrections import OUTSIDER, buckets, evaluate, format_report, load, pairs_of


def test_the_set_has_its_parts_and_splits():
    ups, looks = load("corrections_updates.jsonl"), load("corrections_lookalikes.jsonl")
    assert len(ups) >= 200 and len(looks) >= 200
    assert {p["split"] for p in ups} == {p["split"] for p in looks} == {"dev", "holdout"}
    assert {p["form"] for p in ups} == {"cue", "plain", "para", "partial"}
    assert all(p.get("kept_questions") for p in ups if p["form"] == "partial")
    assert all(p["questions"] for p in ups) and all(p["first_questions"] and p["second_questions"] for p in looks)


def test_detection_links_updates_and_leaves_look_alikes_alone():
    off = evaluate("dev", embedder="hash", detection=False)
    on = evaluate("dev", embedder="hash")
    assert off["lost"] == on["lost"] == 0
    assert off["linked"] == 0 and on["linked"] > 0.5
    assert on["newer_first"] > off["newer_first"] + 0.3
    assert on["look_linked"] <= 0.02 and on["look_under_twin"] <= off["look_under_twin"]
    # a changed half is linked, and the half it leaves standing still answers its own question
    assert on["by_form"]["partial"]["linked"] > 0.5 and on["kept_questions"] and on["kept_first"] >= off["kept_first"]
    assert "newer 1st" in format_report([on]) and "part left standing" in format_report([on])


def test_the_outsider_set_has_its_three_parts_and_every_pair_its_questions():
    for kind in ("updates", "lookalikes"):
        rows = load(f"corrections_outsider_{kind}.jsonl")
        assert {p["split"] for p in rows} == set(OUTSIDER)
        assert len({p["id"] for p in rows}) == len(rows)
        assert all(len(pairs_of(kind, part)) >= 60 for part in OUTSIDER)
    ups = load("corrections_outsider_updates.jsonl")
    assert {p["form"] for p in ups} == {"cue", "plain", "para"}
    assert all(p["old"] != p["new"] and p["questions"] and len(p["subjects"]) == 1 for p in ups)
    looks = load("corrections_outsider_lookalikes.jsonl")
    assert all(p["first_questions"] and p["second_questions"] and len(p["subjects"]) == 2 for p in looks)
    # no scope holds one subject twice, so a pair is compared only with pairs about other things
    for scope, members in buckets(ups, "u").items():
        subjects = [s for p in members for s in p["subjects"]]
        assert len(subjects) == len(set(subjects)), scope


def test_an_outsider_part_is_measured_like_ours():
    on = evaluate("outsider-dev", embedder="hash")
    assert on["split"] == "outsider-dev" and on["updates"] >= 60 and on["lookalikes"] >= 60
    assert on["lost"] == 0 and on["linked"] > 0
