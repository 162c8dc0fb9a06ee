"""Embedders with a query side of their own (e5 and kin: "query: " and "passage: " prefixes) and
embedders whose cosines crowd into a narrow band (issue 14's e5 trial).

An embedder may offer ``embed_queries`` beside ``embed``: recall and the learner's task vectors
then embed queries with it, memories with ``embed``. It may name ``vector_std_floor``: the floor
of the cosine spread in the vector z-score, in place of the fusion's (set for MiniLM)."""

from __future__ import annotations

import numpy as np

from recallite_core import Recallite
from recallite_core.embedding.embedder import HashEmbedder, embed_queries
from recallite_core.retrieval.fusion import VECTOR_STD_FLOOR


class TwoSided(HashEmbedder):
    """The hash embedder, with queries embedded apart (and recorded)."""

    def __init__(self) -> None:
        super().__init__(64)
        self.name = "two-sided-64"
        self.documents: list[str] = []
        self.queries: list[str] = []

    def embed(self, texts: list[str]) -> np.ndarray:
        self.documents.extend(texts)
        return super().embed(texts)

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        self.queries.extend(texts)
        return super().embed(texts)


def test_recall_embeds_the_query_through_embed_queries_and_memories_through_embed():
    emb = TwoSided()
    with Recallite.open(None, embedder=emb) as mem:
        mem.remember("The staging deploy needs the VPN up first.")
        r = mem.recall("how do I deploy to staging", limit=3)
        assert r.memories, "the memory shares words with the query: it must come back"
    assert emb.queries == ["how do I deploy to staging"]
    assert "how do I deploy to staging" not in emb.documents
    assert any("VPN" in t for t in emb.documents)


def test_task_vectors_rebuilt_from_the_log_use_the_query_side():
    emb = TwoSided()
    with Recallite.open(None, embedder=emb) as mem:
        mem.remember("Run ruff format before every commit.")
        rid = int(mem.recall("formatting before a commit", limit=3).retrieval_id[4:])
        emb.queries.clear()
        mem.learning.rebuild_tasks([(rid, "formatting before a commit")])
    assert emb.queries == ["formatting before a commit"]


def test_an_embedder_without_a_query_side_embeds_queries_with_embed():
    emb = HashEmbedder(32)
    texts = ["one query", "another"]
    assert np.array_equal(embed_queries(emb, texts), emb.embed(texts))


def test_the_vector_z_score_floor_is_the_embedders_own_when_it_names_one():
    narrow = TwoSided()
    narrow.vector_std_floor = 0.01  # type: ignore[attr-defined]
    with Recallite.open(None, embedder=narrow) as mem:
        assert mem.retriever.vector_std_floor == 0.01
    with Recallite.open(None, embedder=HashEmbedder(32)) as mem:
        assert mem.retriever.vector_std_floor == VECTOR_STD_FLOOR
