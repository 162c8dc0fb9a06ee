"""Tests of the deterministic task generator of the closed-loop learning benchmark."""

from __future__ import annotations

import hashlib
import json
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
try:
    from recallite_mcp.benchmarks import learning_tasks as lt
except ImportError:  # running from a checkout that is not installed
    sys.path.insert(0, str(REPO_ROOT))
    from recallite_mcp.benchmarks import learning_tasks as lt


@pytest.fixture(scope="module")
def families() -> list[lt.TaskFamily]:
    return lt.generate_families()


def _all_memories(families):
    for fam in families:
        yield from fam.all_memories


# ---------------------------------------------------------------------------------------------
# Shape of the catalog
# ---------------------------------------------------------------------------------------------


def test_at_least_40_families_by_default(families):
    assert lt.catalog_size() == 48
    assert len(families) == 48 >= 40
    keys = [f.key for f in families]
    assert len(set(keys)) == len(keys)


def test_each_family_has_working_distractors_replacement_and_queries(families):
    for fam in families:
        assert fam.topic.strip(), fam.key
        assert fam.working.role == "working"
        assert 2 <= len(fam.distractors) <= 4, fam.key
        assert all(d.role == "distractor" for d in fam.distractors)
        assert fam.drift_replacement.role == "drift_replacement"
        assert len(fam.queries) >= 6, fam.key
        assert len(set(fam.queries)) == len(fam.queries), fam.key
        assert fam.memories == (fam.working, *fam.distractors)
        assert fam.all_memories == (*fam.memories, fam.drift_replacement)
        for mem in fam.all_memories:
            assert mem.type in lt.MEMORY_TYPES, mem.key
            assert mem.role in lt.ROLES
            assert mem.family_key == fam.key
            assert mem.title.strip() and mem.content.strip(), mem.key
            assert "  " not in mem.content, mem.key
            # 1-3 sentences
            assert len(re.findall(r"[.!?]\s+[A-Z]", mem.content)) <= 2, mem.key
            assert 80 <= len(mem.content) <= 260, (mem.key, len(mem.content))


def test_type_is_shared_within_a_family(families):
    # the type must not reveal the role (and profile type multipliers must not favour one role)
    for fam in families:
        assert len({m.type for m in fam.all_memories}) == 1, fam.key
    assert {f.working.type for f in families} == set(lt.MEMORY_TYPES)


def test_distractor_counts_vary(families):
    counts = {len(f.distractors) for f in families}
    assert counts == {2, 3, 4}


def test_memory_keys_titles_and_contents_are_unique(families):
    mems = list(_all_memories(families))
    assert len({m.key for m in mems}) == len(mems)
    assert len({m.title.lower() for m in mems}) == len(mems)
    assert len({m.content for m in mems}) == len(mems)
    # no near-verbatim copies either: the content minus its lead phrase differs
    tails = [m.content.split(",", 1)[-1].strip().lower() for m in mems]
    assert len(set(tails)) == len(tails)


def test_queries_are_unique_across_the_catalog(families):
    queries = [q for f in families for q in f.queries]
    queries += [q for p in lt.INTERFERENCE_PAIRS for q in p.queries]
    assert len({q.lower() for q in queries}) == len(queries)


# ---------------------------------------------------------------------------------------------
# Balance and neutrality
# ---------------------------------------------------------------------------------------------


def test_length_balance_per_family(families):
    for fam in families:
        d_mean = statistics.mean(len(d.content) for d in fam.distractors)
        assert abs(len(fam.working.content) - d_mean) / d_mean <= 0.25, fam.key
        assert abs(len(fam.drift_replacement.content) - d_mean) / d_mean <= 0.25, fam.key


def test_length_balance_overall(families):
    ratios = [len(f.working.text) / statistics.mean(len(d.text) for d in f.distractors) for f in families]
    # working memories are neither systematically longer nor shorter than their distractors
    assert 0.95 <= statistics.mean(ratios) <= 1.08


def test_every_working_memory_has_specific_solution_tokens(families):
    for fam in families:
        assert lt.solution_tokens(fam), fam.key


def test_queries_never_contain_tokens_unique_to_the_working_memory(families):
    for fam in families:
        unique = lt.solution_tokens(fam)
        for q in fam.queries:
            leaked = set(lt.tokenize(q)) & unique
            assert not leaked, (fam.key, q, leaked)


def test_interference_queries_do_not_point_at_b_working_memory(families):
    by_key = {f.key: f for f in families}
    for a, b in lt.interference_pairs(families):
        unique = lt.solution_tokens(by_key[b])
        for q in lt.interference_pair(a, b).queries:
            leaked = set(lt.tokenize(q)) & unique
            assert not leaked, (b, q, leaked)


def test_solution_tokens_cover_commands_and_flags():
    fam = next(f for f in lt.generate_families() if f.key == "billing-staging-deploy")
    tokens = lt.solution_tokens(fam)
    assert "atomic" in tokens  # the --atomic flag only the working memory has
    assert "helm" not in tokens  # shared with distractors: topic, not solution


def test_tokenize_stems_and_drops_stopwords():
    assert lt.tokenize("The Services are deploying the pods") == ["service", "deploy", "pod"]
    assert lt.tokenize("git push --force-with-lease") == ["git", "push", "force", "lease"]


# ---------------------------------------------------------------------------------------------
# Determinism
# ---------------------------------------------------------------------------------------------


def test_same_seed_same_output():
    assert lt.generate_families(48, seed=7) == lt.generate_families(48, seed=7)
    assert lt.generate_families(20, seed=3) == lt.generate_families(20, seed=3)
    fams = lt.generate_families(48, seed=11)
    seq1 = [lt.query_for(f, r, 11) for f in fams for r in range(20)]
    seq2 = [lt.query_for(f, r, 11) for f in fams for r in range(20)]
    assert seq1 == seq2


def test_different_seed_different_query_order():
    f7 = lt.generate_families(48, seed=7)
    f8 = lt.generate_families(48, seed=8)
    # same content, different order of the query variants
    assert [f.key for f in f7] == [f.key for f in f8]
    assert all(sorted(a.queries) == sorted(b.queries) for a, b in zip(f7, f8))
    assert sum(a.queries != b.queries for a, b in zip(f7, f8)) > 40
    seq7 = [lt.query_for(f, r, 7) for f in f7 for r in range(8)]
    seq8 = [lt.query_for(f, r, 8) for f in f7 for r in range(8)]
    assert seq7 != seq8


def test_query_for_cycles_through_every_variant(families):
    for fam in families[:10]:
        n = len(fam.queries)
        for block in range(3):
            picked = [lt.query_for(fam, block * n + i, seed=5) for i in range(n)]
            assert sorted(picked) == sorted(fam.queries)
    with pytest.raises(ValueError):
        lt.query_for(families[0], -1, seed=5)


def test_query_for_depends_on_round_not_on_tuple_order():
    a = lt.generate_families(48, seed=1)[0]
    b = lt.generate_families(48, seed=2)[0]
    assert a.key == b.key
    assert [lt.query_for(a, r, 9) for r in range(16)] == [lt.query_for(b, r, 9) for r in range(16)]


def _digest_code() -> str:
    return (
        "import hashlib, json\n"
        "from recallite_mcp.benchmarks import learning_tasks as lt\n"
        "fams = lt.generate_families(30, seed=4)\n"
        "data = [[f.key, list(f.queries), [lt.query_for(f, r, 4) for r in range(12)]] for f in fams]\n"
        "data.append([m.key for m in lt.store_memories(fams, 4)])\n"
        "data.append(lt.drift_families(fams, 4))\n"
        "print(hashlib.sha256(json.dumps(data).encode()).hexdigest())\n"
    )


def test_output_does_not_depend_on_hash_seed():
    digests = set()
    for hash_seed in ("0", "12345"):
        env = dict(os.environ, PYTHONHASHSEED=hash_seed, PYTHONPATH=str(REPO_ROOT))
        out = subprocess.run(
            [sys.executable, "-c", _digest_code()], env=env, capture_output=True, text=True, check=True
        )
        digests.add(out.stdout.strip())
    fams = lt.generate_families(30, seed=4)
    data = [[f.key, list(f.queries), [lt.query_for(f, r, 4) for r in range(12)]] for f in fams]
    data.append([m.key for m in lt.store_memories(fams, 4)])
    data.append(lt.drift_families(fams, 4))
    digests.add(hashlib.sha256(json.dumps(data).encode()).hexdigest())
    assert len(digests) == 1


# ---------------------------------------------------------------------------------------------
# Subsets, store order, drift
# ---------------------------------------------------------------------------------------------


def test_subset_is_deterministic_and_keeps_pairs_whole():
    full_keys = [f.key for f in lt.generate_families()]
    sub = lt.generate_families(20, seed=3)
    assert len(sub) == 20
    keys = [f.key for f in sub]
    assert len(set(keys)) == 20 and set(keys) <= set(full_keys)
    assert keys == [k for k in full_keys if k in keys]  # catalog order
    assert keys != [f.key for f in lt.generate_families(20, seed=4)]
    present = set(keys)
    for pair in lt.INTERFERENCE_PAIRS:
        assert (pair.a in present) == (pair.b in present)
    for n in (1, 2, 21, 47):
        assert len(lt.generate_families(n, seed=9)) == n


@pytest.mark.parametrize("bad", [0, -3, 49])
def test_subset_size_out_of_range(bad):
    with pytest.raises(ValueError):
        lt.generate_families(bad)


def test_store_memories_order(families):
    store = lt.store_memories(families, seed=7)
    assert sorted(m.key for m in store) == sorted(m.key for f in families for m in f.memories)
    assert lt.store_memories(families, seed=7) == store
    assert lt.store_memories(families, seed=8) != store
    head = store[: len(families)]
    assert sum(m.role == "working" for m in head) < len(families) // 2
    with_drift = lt.store_memories(families, seed=7, include_drift=True)
    assert len(with_drift) == len(store) + len(families)


def test_drift_families_and_working_key(families):
    drifted = lt.drift_families(families, seed=7)
    assert len(drifted) == 12
    assert drifted == lt.drift_families(families, seed=7)
    assert drifted != lt.drift_families(families, seed=8)
    assert set(drifted) <= {f.key for f in families}
    fam = next(f for f in families if f.key == drifted[0])
    last_old = lt.DRIFT_AFTER_ROUND - 1
    assert lt.working_key(fam, last_old, drifted=True) == fam.working.key
    assert lt.working_key(fam, lt.DRIFT_AFTER_ROUND, drifted=True) == fam.drift_replacement.key
    assert lt.working_key(fam, 50, drifted=False) == fam.working.key


# ---------------------------------------------------------------------------------------------
# Interference
# ---------------------------------------------------------------------------------------------


def test_interference_pairs(families):
    pairs = lt.interference_pairs(families)
    assert len(pairs) >= 6
    seen = [k for pair in pairs for k in pair]
    assert len(seen) == len(set(seen)), "a family is in at most one pair"
    by_key = {f.key: f for f in families}
    for a, b in pairs:
        assert a != b and a in by_key and b in by_key
        spec = lt.interference_pair(a, b)
        assert len(spec.queries) >= 6
        assert spec.bridge and spec.rationale
        assert not set(spec.queries) & set(by_key[b].queries)
        assert not set(spec.queries) & set(by_key[a].queries)
    with pytest.raises(KeyError):
        lt.interference_pair(pairs[0][1], pairs[0][0])


def test_interference_pairs_follow_the_family_subset():
    sub = lt.generate_families(10, seed=2)
    present = {f.key for f in sub}
    for a, b in lt.interference_pairs(sub):
        assert a in present and b in present


def test_interference_query_for(families):
    a, b = lt.interference_pairs(families)[0]
    spec = lt.interference_pair(a, b)
    seq = [lt.interference_query_for((a, b), r, seed=3) for r in range(12)]
    assert seq == [lt.interference_query_for(spec, r, seed=3) for r in range(12)]
    assert sorted(seq[:6]) == sorted(spec.queries)
    assert seq != [lt.interference_query_for(spec, r, seed=4) for r in range(12)]


# ---------------------------------------------------------------------------------------------
# Catalog files and load_catalog
# ---------------------------------------------------------------------------------------------

TEXT_CATALOGS = [name for name in lt.CATALOGS if name != "ops" and lt.catalog_available(name)]


def test_parser_reads_interference_lines_and_skips_comments():
    text = (
        "# a comment\n"
        "@ fam-a\n"
        "topic: task a\n"
        "W fact | A works\n"
        "  The working one,\n"
        "  wrapped.\n"
        "# another comment between entries\n"
        "D fact | A fails\n"
        "  A distractor.\n"
        "R fact | A new\n"
        "  The replacement.\n"
        "Q do task a\n"
        "@ fam-b\n"
        "topic: task b\n"
        "W fact | B works\n"
        "  B working.\n"
        "D fact | B fails\n"
        "  B distractor.\n"
        "R fact | B new\n"
        "  B replacement.\n"
        "Q do task b\n"
        "I fam-a | do task b the way of task a\n"
        "I fam-a | another b query that sounds like a\n"
    )
    raw = lt._parse_catalog(text)
    assert [r["key"] for r in raw] == ["fam-a", "fam-b"]
    assert raw[0]["working"] == ("fact", "A works", "The working one, wrapped.")
    assert raw[0]["interference"] == ()
    assert raw[1]["interference"] == (("fam-a", "do task b the way of task a"), ("fam-a", "another b query that sounds like a"))
    pairs = lt._pairs_from_lines(raw, "test")
    assert [(p.a, p.b, p.queries) for p in pairs] == [
        ("fam-a", "fam-b", ("do task b the way of task a", "another b query that sounds like a"))
    ]
    with pytest.raises(ValueError):
        lt._pairs_from_lines(lt._parse_catalog(text.replace("I fam-a |", "I fam-x |")), "test")
    with pytest.raises(ValueError):
        lt._parse_catalog(text.replace("I fam-a | do", "I fam-a do"))
    with pytest.raises(ValueError):
        lt._parse_catalog(text.replace("@ fam-b", "@ fam-a"))  # duplicate key


def test_ops_catalog_is_unchanged():
    """The ops catalog through load_catalog/generate_families(catalog="ops") is the one of before."""
    cat = lt.load_catalog("ops", seed=7)
    assert len(cat) == lt.catalog_size() == lt.catalog_size("ops") == 48
    assert list(cat.families) == lt.generate_families(seed=7) == lt.generate_families(48, seed=7)
    assert cat.pairs == lt.INTERFERENCE_PAIRS == lt.catalog_pairs("ops")
    fams = lt.generate_families(30, seed=4)
    data = [[f.key, list(f.queries), [lt.query_for(f, r, 4) for r in range(12)]] for f in fams]
    data.append([m.key for m in lt.store_memories(fams, 4)])
    data.append(lt.drift_families(fams, 4))
    # digest of the generator's output for seed 4 before catalogs became files
    assert hashlib.sha256(json.dumps(data).encode()).hexdigest() == OPS_DIGEST_SEED4
    assert lt.interference_pairs(lt.generate_families()) == [(p.a, p.b) for p in lt.INTERFERENCE_PAIRS]


OPS_DIGEST_SEED4 = "8ee22d98f5b6f7029c6beac97bb28617528399e22f17fc118922c49b9fbce601"


def test_unknown_catalog():
    with pytest.raises(ValueError):
        lt.load_catalog("nope")


@pytest.mark.parametrize("name", TEXT_CATALOGS)
def test_text_catalogs_parse_and_are_well_formed(name):
    cat = lt.load_catalog(name, seed=7)
    assert len(cat) >= 18
    assert lt.catalog_size(name) == len(cat)
    by_key = {f.key: f for f in cat.families}
    for fam in cat.families:
        assert fam.catalog == name
        assert fam.topic.strip(), fam.key
        assert len(fam.distractors) == 2, fam.key
        assert len(fam.queries) == 6 and len(set(fam.queries)) == 6, fam.key
        assert len({m.type for m in fam.all_memories}) == 1, fam.key
        unique = lt.solution_tokens(fam)
        assert unique, fam.key
        for q in fam.queries:
            assert not set(lt.tokenize(q)) & unique, (fam.key, q, set(lt.tokenize(q)) & unique)
        for mem in fam.all_memories:
            assert mem.title.strip() and mem.content.strip() and "  " not in mem.content, mem.key
    for p in cat.pairs:
        assert p.a in by_key and p.b in by_key and p.a != p.b
        assert len(p.queries) >= 1
        unique = lt.solution_tokens(by_key[p.b])
        for q in p.queries:
            assert not set(lt.tokenize(q)) & unique, (p.b, q)
    assert lt.interference_pairs(cat.families) == [(p.a, p.b) for p in cat.pairs]
    for a, b in lt.interference_pairs(cat.families):
        assert lt.interference_pair(a, b) == lt.interference_pair(a, b, catalog=name)
        assert lt.interference_query_for((a, b), 0, 7) in lt.interference_pair(a, b).queries
    sub = lt.generate_families(9, seed=3, catalog=name)
    assert len(sub) == 9 and all(f.catalog == name for f in sub)
    present = {f.key for f in sub}
    for p in cat.pairs:
        assert (p.a in present) == (p.b in present)


def test_voices_dev_has_24_families_and_3_pairs():
    cat = lt.load_catalog("voices-dev")
    assert len(cat) == 24 and len(cat.pairs) == 3
    assert all(len(p.queries) == 6 for p in cat.pairs)
    keys = [k for p in cat.pairs for k in (p.a, p.b)]
    assert len(set(keys)) == 6


def test_family_keys_are_unique_across_catalogs():
    keys = [f.key for name in ("ops", *TEXT_CATALOGS) for f in lt.load_catalog(name).families]
    assert len(keys) == len(set(keys))
    titles = [m.title.lower() for name in ("ops", *TEXT_CATALOGS) for f in lt.load_catalog(name).families
              for m in f.all_memories]
    assert len(titles) == len(set(titles))
