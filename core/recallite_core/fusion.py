"""Rank fusion of the keyword and vector channels. Pure."""

from __future__ import annotations

from typing import Hashable, Iterable, Sequence

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


# -- gated z-score fusion (the default; see README "How ranking works") -----------------------
#
# Plain RRF throws away how far apart scores are and loses to its best channel on LoCoMo. We
# normalise each channel's raw scores by their mean and spread over the whole filtered scope,
# and weight the keyword channel by how much of the query's IDF mass its best match covers:
# a query whose words barely occur in memory is answered by meaning alone.


def ramp(x: float, lo: float, hi: float) -> float:
    if hi <= lo:
        return 1.0
    return min(1.0, max(0.0, (x - lo) / (hi - lo)))


def keyword_weight(coverage: float, alpha_max: float = 0.4, lo: float = 0.1, hi: float = 0.4) -> float:
    """alpha = alpha_max * ramp(coverage, lo, hi)."""
    return alpha_max * ramp(coverage, lo, hi)


def moments(n: int, total: float, total_sq: float) -> tuple[float, float]:
    """Mean and population standard deviation from count, sum and sum of squares."""
    if n <= 0:
        return 0.0, 0.0
    mean = total / n
    var = max(0.0, total_sq / n - mean * mean)
    return mean, var ** 0.5


def zscores(values: dict, mean: float, std: float) -> dict:
    d = std + 1e-9
    return {k: (v - mean) / d for k, v in values.items()}


def zscore_fusion(
    keyword: dict,
    vector: dict,
    scope_size: int,
    vector_moments: tuple[float, float],
    alpha: float,
    keyword_std_floor: float = 0.5,
    vector_std_floor: float = 0.05,
    only: "Iterable | None" = None,
) -> tuple[dict, dict, dict]:
    """s = alpha * z(keyword) + (1 - alpha) * z(vector) for every candidate.

    ``keyword``: raw scores of the keyword hits (0 for every other memory of the scope);
    ``vector``: cosine of each candidate; ``vector_moments``: mean and std of the cosine over
    the whole scope. The spreads have floors: in a store of a handful of memories the
    measured spread is tiny and would blow a hair's difference up to a whole z-unit.
    ``only``: compute just these candidates (a candidate's values do not depend on which
    others are computed with it). Returns (fused, keyword z, vector z)."""
    candidates = set(keyword) | set(vector) if only is None else only
    n = max(scope_size, len(keyword), 1)
    kvals = list(keyword.values())
    k_mean, k_std = moments(n, sum(kvals), sum(v * v for v in kvals))
    kz = zscores({c: keyword.get(c, 0.0) for c in candidates}, k_mean, max(k_std, keyword_std_floor))
    v_mean, v_std = vector_moments
    vz = zscores({c: vector.get(c, v_mean) for c in candidates}, v_mean, max(v_std, vector_std_floor))
    fused = {c: alpha * kz[c] + (1.0 - alpha) * vz[c] for c in candidates}
    return fused, kz, vz
