"""Rank fusion of the keyword and vector channels. Pure."""

from __future__ import annotations

from typing import Hashable, Sequence

import numpy as np

RRF_K = 60
#: Floor of the cosine's spread over a scope: in a store of a handful of memories the measured
#: spread is tiny and would blow a hair's difference up to a whole z-unit.
VECTOR_STD_FLOOR = 0.05


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


# -- gated z-score fusion (the default; see docs/ranking.md) -----------------------
#
# Plain RRF throws away how far apart scores are and loses to its best channel on LoCoMo. We
# normalise each channel's raw scores by their mean and spread over the whole filtered scope,
# and weight the keyword channel by how much of the query's IDF mass its best match covers:
# a query whose words barely occur in memory is answered by meaning alone.


def ramp(x: float, lo: float, hi: float) -> float:
    if hi <= lo:
        return 1.0
    return min(1.0, max(0.0, (x - lo) / (hi - lo)))


def keyword_weight(coverage: float, alpha_max: float = 0.4, lo: float = 0.1, hi: float = 0.4,
                   margin: float = 0.0, margin_ramp: tuple[float, float] | None = None) -> float:
    """alpha = alpha_max * ramp(coverage, lo, hi) * (1 - ramp(margin, *margin_ramp)).

    ``margin`` is how far the vector channel's best match stands above the rest
    (``vector_margin``). A clear semantic winner is taken as it is: words shared with other
    memories then only lose it its place (a near miss that repeats the question's words), so
    the keyword channel's weight fades to 0 across ``margin_ramp``. None: no such fade."""
    alpha = alpha_max * ramp(coverage, lo, hi)
    if margin_ramp is not None:
        alpha *= 1.0 - ramp(margin, *margin_ramp)
    return alpha


def vector_margin(cosines, moments: tuple[float, float], rank: int = 20, std_floor: float = VECTOR_STD_FLOOR) -> float:
    """The best cosine minus the ``rank``-th best, in units of the cosine's spread over the scope
    (floored like the vector z-score). 0 when the channel found fewer than ``rank``: among a
    handful of memories nothing can be said to stand out."""
    if rank < 2 or len(cosines) < rank:
        return 0.0
    top = np.partition(np.asarray(cosines, dtype=np.float64), len(cosines) - rank)[len(cosines) - rank:]
    return float((top.max() - top.min()) / (max(moments[1], std_floor) + 1e-9))


def margin_ramp(vector: Sequence[tuple[Hashable, float]], keyword: dict, ramp, unmatched_ramp):
    """The ramp the vector margin fades the keyword weight across: ``unmatched_ramp`` when the
    vector channel's best match holds none of the query's words (not in ``keyword``), so the
    channels disagree at the top and the keyword hits are likely near misses that repeat the
    question's words; else ``ramp``."""
    if not vector or unmatched_ramp is None:
        return ramp
    best = max(vector, key=lambda t: t[1])[0]
    return ramp if best in keyword else unmatched_ramp


def moments(n: int, total: float, total_sq: float) -> tuple[float, float]:
    """Mean and population standard deviation from count, sum and sum of squares."""
    if n <= 0:
        return 0.0, 0.0
    mean = total / n
    var = max(0.0, total_sq / n - mean * mean)
    return mean, var ** 0.5


def keyword_moments(keyword: dict, scope_size: int) -> tuple[float, float]:
    """Mean and spread of the keyword score over the scope: every memory the keyword channel
    did not return counts as 0. Summed in the dict's order (a fixed order gives fixed bits)."""
    kvals = list(keyword.values())
    return moments(max(scope_size, len(keyword), 1), sum(kvals), sum(v * v for v in kvals))


def zscore_arrays(
    ids: np.ndarray,
    keyword: dict,
    vector: dict,
    kmoments: tuple[float, float],
    vector_moments: tuple[float, float],
    alpha: float,
    keyword_std_floor: float = 0.5,
    vector_std_floor: float = VECTOR_STD_FLOOR,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(fused, keyword z, vector z) of ``ids``: s = alpha * z(keyword) + (1 - alpha) * z(vector).

    A candidate missing from ``keyword`` scores 0 there; one missing from ``vector`` gets the
    scope's mean cosine (z = 0). The spreads have floors: in a store of a handful of memories
    the measured spread is tiny and would blow a hair's difference up to a whole z-unit.
    Elementwise float64 arithmetic, so each value has the bits of the scalar formula."""
    n = len(ids)
    k_mean, k_std = kmoments
    v_mean, v_std = vector_moments
    kget, vget = keyword.get, vector.get
    kv = np.fromiter((kget(c, 0.0) for c in ids.tolist()), dtype=np.float64, count=n)
    vv = np.fromiter((vget(c, v_mean) for c in ids.tolist()), dtype=np.float64, count=n)
    kz = (kv - k_mean) / (max(k_std, keyword_std_floor) + 1e-9)
    vz = (vv - v_mean) / (max(v_std, vector_std_floor) + 1e-9)
    return alpha * kz + (1.0 - alpha) * vz, kz, vz
