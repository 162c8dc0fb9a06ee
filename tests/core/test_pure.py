"""Pure functions: codec, fusion, FTS quoting, policy, token estimate (Hypothesis where it pays)."""

import math
import sqlite3

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recallite_core import InvalidInputError, InvalidTransitionError
from recallite_core.models import MEMORY_TYPES, SOURCE_TYPES, STATUSES
from recallite_core.policy import rules as policy
from recallite_core.retrieval.fusion import reciprocal_rank_fusion
from recallite_core.storage.codec import decode_many, decode_vector, encode_vector
from recallite_core.storage.fts import fts_query
from recallite_core.text.tokens import estimate_tokens, truncate_to_tokens

finite32 = st.floats(allow_nan=False, allow_infinity=False, width=32)


@given(st.lists(finite32, min_size=1, max_size=64))
def test_codec_round_trip(values):
    v = np.array(values, dtype=np.float32)
    blob = encode_vector(v)
    assert len(blob) == 4 * len(values)
    assert blob == v.astype("<f4").tobytes()  # little-endian whatever the host
    assert np.array_equal(decode_vector(blob, len(values)), v)
    assert np.array_equal(decode_many([blob, blob], len(values)), np.vstack([v, v]))


def test_codec_rejects_bad_vectors():
    with pytest.raises(InvalidInputError):
        encode_vector(np.array([1.0, float("nan")]))
    with pytest.raises(InvalidInputError, match="dimensions"):
        encode_vector(np.zeros(3), dimensions=4)
    with pytest.raises(InvalidInputError):
        decode_vector(b"\x00" * 7)
    with pytest.raises(InvalidInputError, match="reindex"):
        decode_vector(b"\x00" * 8, dimensions=3)


rankings = st.lists(st.lists(st.integers(0, 30), max_size=20, unique=True), min_size=1, max_size=3)


@given(rankings)
def test_rrf_properties(ranks):
    scores = reciprocal_rank_fusion(ranks)
    assert set(scores) == {i for r in ranks for i in r}
    for r in ranks:
        for a, b in zip(r, r[1:]):
            # within one channel, a better rank never loses when the other channels agree
            if all((a in o) == (b in o) for o in ranks) and all(
                (o.index(a) < o.index(b)) for o in ranks if a in o and b in o
            ):
                assert scores[a] >= scores[b]
    for s in scores.values():
        assert 0 < s <= len(ranks) / 61


def test_rrf_weights_and_missing_channel():
    s = reciprocal_rank_fusion([["a", "b"], ["b"]], weights=[1.0, 2.0])
    assert math.isclose(s["a"], 1 / 61)
    assert math.isclose(s["b"], 1 / 62 + 2 / 61)


@given(st.text(max_size=200))
@settings(max_examples=300)
def test_fts_query_is_always_valid_fts5(text):
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='porter unicode61')")
    conn.execute("INSERT INTO t VALUES ('hello world near and or not')")
    q = fts_query(text)
    if q is not None:
        conn.execute("SELECT * FROM t WHERE t MATCH ?", (q,)).fetchall()


def test_fts_query_keeps_names_and_numbers():
    q = fts_query("What did Caroline do on 8 May 2023?")
    assert '"caroline"' in q and '"8"' in q and '"2023"' in q and '"did"' not in q
    assert fts_query("the and of") is not None  # all stop words: still searchable
    assert fts_query("!!! ???") is None


@given(st.sampled_from(MEMORY_TYPES), st.sampled_from(SOURCE_TYPES), st.sampled_from([None, "candidate", "validated", "active"]))
def test_untrusted_never_starts_above_candidate(mtype, source, requested):
    status = policy.initial_status(mtype, source, requested)
    if policy.SOURCE_TRUST[source] == policy.UNTRUSTED:
        assert status == "candidate"
    if policy.SOURCE_TRUST[source] == policy.MEDIUM:
        assert status in ("candidate", "validated", "active")
        if requested == "active":
            assert status == "validated"
    if requested is not None:
        assert policy.STATUS_RANK[status] <= policy.STATUS_RANK[requested] or policy.SOURCE_TRUST[source] == policy.MEDIUM


@given(st.sampled_from(STATUSES), st.sampled_from(STATUSES), st.sampled_from(SOURCE_TYPES))
def test_transitions_follow_the_table(current, new, source):
    legal = new in policy.TRANSITIONS[current] and not (
        current == "candidate" and new == "active" and policy.SOURCE_TRUST[source] == policy.UNTRUSTED
    )
    if legal:
        policy.check_transition(current, new, source)
    else:
        with pytest.raises(InvalidTransitionError):
            policy.check_transition(current, new, source)


@given(st.floats(0, 1), st.floats(0, 1), st.floats(-10, 10), st.floats(0, 1))
def test_usefulness_stays_in_unit_interval(current, target, weight, rate):
    u = policy.updated_usefulness(current, target, weight, rate)
    assert 0.0 <= u <= 1.0
    if weight > 0 and rate > 0:
        assert abs(u - target) <= abs(current - target) + 1e-12


@given(st.floats(0, 1), st.floats(0, 1), st.floats(0, 1))
def test_quality_bounds(c, u, i):
    q = policy.quality(c, u, i)
    assert 0.45 <= q <= 1.0 + 1e-12


@given(st.sampled_from(["success", "failure", "partial"]), st.one_of(st.none(), st.floats(0, 1)))
def test_outcome_target_bounds(outcome, score):
    t = policy.outcome_target(outcome, score)
    assert 0 <= t <= 1
    if outcome == "success":
        assert t >= 0.5
    if outcome == "failure":
        assert t <= 0.5


@given(st.text(max_size=500), st.integers(0, 200))
def test_truncate_respects_budget(text, budget):
    cut = truncate_to_tokens(text, budget)
    assert estimate_tokens(cut) <= budget
    assert text.startswith(cut) or text.startswith(cut.rstrip())


def test_token_estimate_is_conservative_for_non_ascii():
    assert estimate_tokens("abcd") == 1
    assert estimate_tokens("abcde") == 2
    assert estimate_tokens("日本語") == 3
