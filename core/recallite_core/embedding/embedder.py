"""Embedders turn texts into L2-normalised float32 vectors.

Three kinds: the default offline MiniLM ONNX model (``onnx_embedder``), a deterministic
hash embedder for tests and for machines without onnxruntime, and any user callable.
"""

from __future__ import annotations

import logging
import re
import zlib
from typing import Callable, Protocol, Sequence, runtime_checkable

import numpy as np

from recallite_core.errors import EmbedderError, InvalidInputError

log = logging.getLogger("recallite.embedder")


@runtime_checkable
class Embedder(Protocol):
    """What the engine needs of an embedder.

    ``name`` identifies the model; it is stored in the database so that vectors of two
    different models are never compared.

    Optional, read with getattr: ``embed_queries(texts)``, for a model trained to embed search
    queries apart from documents (e5's "query: " and "passage: "); ``relevance_floor``, the
    cosine below which a memory is unrelated to a query; ``vector_std_floor``, the floor of a
    scope's cosine spread in the vector z-score, for a model whose cosines crowd into a band.
    """

    name: str
    dimensions: int

    def embed(self, texts: list[str]) -> np.ndarray:
        """Return a float32 array of shape (len(texts), dimensions), rows L2-normalised."""
        ...


def embed_queries(embedder: Embedder, texts: list[str]) -> np.ndarray:
    """Vectors of search queries: the embedder's ``embed_queries`` if it has one (models trained
    with a query prefix apart from the document one, such as e5), else its ``embed``."""
    fn = getattr(embedder, "embed_queries", None)
    return fn(texts) if callable(fn) else embedder.embed(texts)


def normalize_rows(matrix: np.ndarray) -> np.ndarray:
    """L2-normalise each row; zero rows stay zero."""
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return matrix / norms


_HASH_TOKEN = re.compile(r"\w+", re.UNICODE)


class HashEmbedder:
    """Deterministic feature-hashing embedder: words, word bigrams and character trigrams.

    It carries no meaning beyond shared surface forms, but it is fast, needs nothing but
    numpy, and gives the same vector for the same text on every machine (crc32, not the
    salted built-in ``hash``).
    """

    # Words seen before keep their hashes: (crc32 of the word, b" " + the word for the bigram
    # that ends in it, crc32 of the word and of each of its trigrams). Bounded; cleared when full.
    CACHE_WORDS = 50_000

    def __init__(self, dimensions: int = 384):
        if dimensions < 8:
            raise InvalidInputError("HashEmbedder needs at least 8 dimensions.")
        self.dimensions = int(dimensions)
        self.name = f"hash-v1-{self.dimensions}"
        # Cosine below which a text shares too little surface with a query to count as related by
        # its vector alone. High, because stopwords weigh as much as any word here ("lint the code"
        # is closer to a sentence about the kitchen than to the lint rule); the keyword share
        # (stopwords left out) vouches for the rest.
        self.relevance_floor = 0.3
        self._words: dict[str, tuple[int, bytes, tuple[int, ...]]] = {}

    def _word(self, w: str) -> tuple[int, bytes, tuple[int, ...]]:
        raw = w.encode()
        h = zlib.crc32(raw)
        own = [h]
        if len(w) > 4:
            padded = f"#{w}#"
            own.extend(zlib.crc32(padded[i : i + 3].encode()) for i in range(len(padded) - 2))
        entry = (h, b" " + raw, tuple(own))
        words = self._words
        if len(words) >= self.CACHE_WORDS:
            words.clear()
        words[w] = entry
        return entry

    def _features(self, text: str) -> list[str]:
        words = _HASH_TOKEN.findall(text.lower())
        feats = list(words)
        feats.extend(f"{a} {b}" for a, b in zip(words, words[1:]))
        for w in words:
            if len(w) > 4:
                padded = f"#{w}#"
                feats.extend(padded[i : i + 3] for i in range(len(padded) - 2))
        return feats

    def embed(self, texts: list[str]) -> np.ndarray:
        # The crc32 of every feature of _features (words, bigrams, trigrams), then a single
        # bincount; sums of +-1 are exact, so the order of features does not matter and the
        # vectors equal a per-feature loop. A word's own hashes come from the cache, and a
        # bigram's crc32 continues the first word's: crc32(b" " + b, crc32(a)) == crc32(a + b" " + b).
        dims = self.dimensions
        hashes: list[int] = []
        counts = np.empty(len(texts), dtype=np.int64)
        cache = self._words
        crc = zlib.crc32
        findall = _HASH_TOKEN.findall
        for row, text in enumerate(texts):
            start = len(hashes)
            prev = None
            for w in findall(text.lower()):
                entry = cache.get(w) or self._word(w)
                hashes.extend(entry[2])
                if prev is not None:
                    hashes.append(crc(entry[1], prev))
                prev = entry[0]
            counts[row] = len(hashes) - start
        out = np.zeros((len(texts), dims), dtype=np.float32)
        if hashes:
            h = np.fromiter(hashes, dtype=np.uint32, count=len(hashes))
            slot = np.repeat(np.arange(len(texts), dtype=np.int64) * dims, counts) + (h % dims).astype(np.int64)
            sign = np.where((h >> 31) & 1, 1.0, -1.0)
            out = np.bincount(slot, weights=sign, minlength=len(texts) * dims).astype(np.float32).reshape(len(texts), dims)
        return normalize_rows(out)


class CallableEmbedder:
    """Wraps ``embed=lambda texts: ...`` (OpenAI, Ollama, anything) with declared dimensions."""

    def __init__(self, fn: Callable[[list[str]], Sequence[Sequence[float]]], dimensions: int, name: str | None = None):
        if not callable(fn):
            raise InvalidInputError("embed must be a callable taking a list of texts.")
        if int(dimensions) <= 0:
            raise InvalidInputError("Declare the embedding dimensions of your callable (dims=...).")
        self._fn = fn
        self.dimensions = int(dimensions)
        self.name = name or f"custom-{self.dimensions}"

    def embed(self, texts: list[str]) -> np.ndarray:
        try:
            raw = self._fn(list(texts))
        except Exception as exc:  # the user's code: wrap, keep the cause
            raise EmbedderError(f"Your embed callable failed: {exc!r}. Fix it or use embedder='hash'.") from exc
        arr = np.asarray(raw, dtype=np.float32)
        if arr.ndim != 2 or arr.shape[0] != len(texts) or arr.shape[1] != self.dimensions:
            raise EmbedderError(
                f"Your embed callable returned shape {arr.shape}; expected ({len(texts)}, {self.dimensions}). "
                "Return one vector of the declared dimensions per text."
            )
        if not np.all(np.isfinite(arr)):
            raise EmbedderError("Your embed callable returned NaN or infinite values.")
        return normalize_rows(arr)


def cosine_top(matrix: np.ndarray, query: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices and scores of the k best rows by dot product (rows and query normalised)."""
    if matrix.shape[0] == 0 or k <= 0:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
    scores = matrix @ query
    k = min(k, scores.shape[0])
    if k < scores.shape[0]:
        part = np.argpartition(-scores, k - 1)[:k]
    else:
        part = np.arange(scores.shape[0])
    order = part[np.argsort(-scores[part], kind="stable")]
    return order, scores[order]


__all__ = [
    "Embedder",
    "HashEmbedder",
    "CallableEmbedder",
    "normalize_rows",
    "embed_queries",
    "cosine_top",
]
