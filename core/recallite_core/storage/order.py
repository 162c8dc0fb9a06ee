"""The order keyword answers are ranked in, whichever backend computed them."""

from __future__ import annotations

import numpy as np


def top_order(ids: np.ndarray, scores: np.ndarray, k: int | None) -> np.ndarray:
    """Indexes of the best ``k`` by score descending, ties by id ascending (FTS5's ORDER BY s, rowid)."""
    n = len(ids)
    if k is not None and k < n:
        # Everything at least as good as the k-th score, so ties at the cut are all kept.
        cut = np.partition(-scores, k - 1)[k - 1]
        cand = np.flatnonzero(-scores <= cut)
    else:
        cand = np.arange(n)
    order = cand[np.lexsort((ids[cand], -scores[cand]))]
    return order if k is None else order[:k]
