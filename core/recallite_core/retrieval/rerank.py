"""Optional reranking stage, off by default.

``RecalliteConfig(rerank=...)``: ``None`` (default, no stage), a callable
``(query, texts) -> scores`` (higher = more relevant), or ``"cross-encoder"``, which loads a
sentence-transformers ``CrossEncoder`` from ``rerank_model`` — a local model directory:
nothing is downloaded at run time. No cross-encoder ships with recallite.

The reranker reorders the top ``rerank_depth`` hits. The policy still applies: a reranked
hit scores ``status × profile × quality × contradiction / (rrf_k + reranker rank)``, the
same form as the fused score with the reranker's rank in place of the channels'.
"""

from __future__ import annotations

import math
import os
from typing import Any, Callable, Sequence

from recallite_core.errors import RecalliteError
from recallite_core.models import RecallHit

Reranker = Callable[[str, list[str]], Sequence[float]]


class RerankerUnavailableError(RecalliteError):
    """The configured reranker cannot run here (package missing, no local model)."""

    code = "reranker_unavailable"


class CrossEncoderReranker:
    """sentence-transformers CrossEncoder over a local model directory (offline only)."""

    def __init__(self, model_path: str | None):
        if not model_path:
            raise RerankerUnavailableError(
                "rerank='cross-encoder' needs rerank_model=<a local model directory>; recallite never downloads "
                "weights at run time. Or pass a callable (query, texts) -> scores as rerank."
            )
        path = os.path.abspath(os.path.expanduser(model_path))
        if not os.path.isdir(path):
            raise RerankerUnavailableError(f"rerank_model {path} is not a directory holding a cross-encoder model.")
        try:
            from sentence_transformers import CrossEncoder
        except ImportError:
            raise RerankerUnavailableError(
                "rerank='cross-encoder' needs the sentence-transformers package: pip install sentence-transformers "
                "(and a local cross-encoder model directory as rerank_model)."
            ) from None
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        self.model = CrossEncoder(path, local_files_only=True)
        self.name = f"cross-encoder:{os.path.basename(path)}"

    def __call__(self, query: str, texts: list[str]) -> Sequence[float]:
        return [float(s) for s in self.model.predict([(query, t) for t in texts])]


def resolve_reranker(spec: Any, model: str | None = None) -> Reranker | None:
    if spec is None or spec is False:
        return None
    if isinstance(spec, str):
        if spec.lower() in ("cross-encoder", "crossencoder", "cross_encoder"):
            return CrossEncoderReranker(model)
        raise RerankerUnavailableError(f"Unknown reranker {spec!r}: use None, 'cross-encoder' or a callable (query, texts) -> scores.")
    if callable(spec):
        return spec
    raise RerankerUnavailableError(f"Cannot use {spec!r} as a reranker: pass a callable (query, texts) -> scores.")


def rerank_hits(reranker: Reranker, query: str, hits: list[RecallHit], depth: int, rrf_k: int = 60) -> list[RecallHit]:
    """Reorder the top ``depth`` hits by the reranker; the rest keep their order after them."""
    from recallite_core.writer import embedding_text

    top, rest = hits[: max(1, depth)], hits[max(1, depth):]
    try:
        scores = [float(s) for s in reranker(query, [embedding_text(h.memory.title, h.memory.content) for h in top])]
    except RecalliteError:
        raise
    except Exception as exc:  # the user's code: wrap, keep the cause
        raise RerankerUnavailableError(f"The reranker failed: {exc!r}.") from exc
    if len(scores) != len(top) or not all(math.isfinite(s) for s in scores):
        raise RerankerUnavailableError(
            f"The reranker returned {len(scores)} scores for {len(top)} texts (or a NaN); return one finite score per text."
        )
    order = sorted(range(len(top)), key=lambda i: (-scores[i], i))
    for new_rank, i in enumerate(order, start=1):
        h = top[i]
        bd = h.breakdown
        bd.rerank_score = round(scores[i], 6)
        factors = bd.status_factor * bd.profile_factor * bd.quality * bd.contradiction_factor
        factors *= getattr(bd, "outcome_factor", 1.0)  # what task outcomes did to it, where the policy has it
        bd.final = factors / (rrf_k + new_rank)
        h.score = bd.final
        if "reranked" not in h.reasons:
            h.reasons.append("reranked")
    top.sort(key=lambda h: (-h.score, h.memory.id))
    return top + rest
