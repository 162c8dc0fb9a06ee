"""Rank fusion of the keyword and vector channels. Pure."""

from __future__ import annotations

from typing import Hashable, Sequence

RRF_K = 60


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[Hashable]], weights: Sequence[float] | None = None, k: int = RRF_K
) -> dict[Hashable, float]:
    """Weighted RRF: score(d) = sum_i w_i / (k + rank_i(d)), ranks 1-based; a missing channel adds 0."""
    if weights is None:
        weights = [1.0] * len(rankings)
    if len(weights) != len(rankings):
        raise ValueError("one weight per ranking")
    scores: dict[Hashable, float] = {}
    for ranking, w in zip(rankings, weights):
        seen = set()
        for r, item in enumerate(ranking, start=1):
            if item in seen:
                continue
            seen.add(item)
            scores[item] = scores.get(item, 0.0) + w / (k + r)
    return scores
