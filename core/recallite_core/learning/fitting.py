"""The arithmetic of the outcome model (learner.py), pure functions on arrays: recency weights, the
kernel ridge fit a memory's outcomes are read through, change detection (failure runs), what
happened on this very task, task vectors, Beta posteriors."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence

import numpy as np


def coverage(reach: float, ramp: tuple[float, float], floor: float) -> float:
    """How much of a memory's outcome evidence applies to a query whose reach is ``reach``."""
    lo, hi = ramp
    g = min(1.0, max(0.0, (reach - lo) / max(hi - lo, 1e-6)))
    return floor + (1.0 - floor) * g


def recency_weights(n: int, ages_s: np.ndarray, decay: float, half_life_days: float) -> np.ndarray:
    """decay ** (newer outcomes of this memory) * 0.5 ** (age / half-life); newest first."""
    w = np.power(decay, np.arange(n, dtype=np.float64))
    if half_life_days > 0:
        w = w * np.power(0.5, np.maximum(ages_s, 0.0) / (half_life_days * 86400.0))
    return w


def ridge_dual(vectors: np.ndarray, y: np.ndarray, weights: np.ndarray, lam: float) -> np.ndarray:
    """Dual coefficients of weighted ridge regression with the cosine kernel:
    a = (K + lam * diag(1 / w))^-1 y, so that the prediction for a query q is (V q) . a.
    Old or little-credited outcomes (small w) are fitted loosely."""
    if len(y) == 0:
        return np.zeros(0)
    K = vectors @ vectors.T
    reg = lam / np.maximum(weights, 1e-6)
    return np.linalg.solve(K + np.diag(reg), y)


def failure_run(vectors: np.ndarray, targets: np.ndarray, weights: np.ndarray, has_vec: np.ndarray, lam: float,
                limit: int = 4, min_reach: float = 0.5, confirmed: np.ndarray | None = None,
                explained: np.ndarray | None = None, confirmed_count: int = 2) -> tuple[int, int]:
    """Most recent consecutive failures that look like a change of the world (newest first).

    A failure counts when the outcomes before it covered its query (the regression fitted on
    them reaches at least ``min_reach`` there: the failure happened where the memory used to be
    judged, not on another task) and predicted success there. A failure on another task (reach
    below ``min_reach``) is skipped: it neither counts nor ends the run. A success, or a failure
    where the memory was already expected to fail, ends the run. A failure confirmed by a newer memory's success on the same retrieval (the
    agent moved on to something added since, and that worked: not a noisy label, and the sign
    of a replacement) counts ``confirmed_count`` times. A failure ``explained`` by the success of a memory that was
    there all along (not newer) on the same retrieval is skipped: it neither counts nor ends the
    run (another task that needed another memory, as when a task that reads like this memory's
    needs a different one).
    Returns (run length as counted, number of rows in the run)."""
    run = rows = 0
    for i in range(min(limit, len(targets))):
        if targets[i] >= 0.5 or not has_vec[i]:
            break
        if explained is not None and explained[i] and not (confirmed is not None and confirmed[i]):
            rows += 1
            continue
        older = np.arange(i + 1, len(targets))
        older = older[has_vec[older]]
        if older.size == 0:
            break
        sims = vectors[older] @ vectors[i]
        reach = float(sims @ ridge_dual(vectors[older], np.ones(older.size), weights[older], lam))
        if reach < min_reach:
            # Another task (the older outcomes do not reach it): says nothing about whether the
            # memory changed on its own, so it neither counts nor ends the run. Ending it let a
            # replaced memory's old successes come back once it was tried on a far phrasing.
            rows += 1
            continue
        predicted = float(sims @ ridge_dual(vectors[older], targets[older] - 0.5, weights[older], lam))
        if predicted <= 0:
            break
        run += confirmed_count if confirmed is not None and confirmed[i] else 1
        rows += 1
    return run, rows


#: An outcome row with at least this credit was named in ``used_memory_ids`` (or opened, or led a
#: context whose feedback named none): the agent acted on that memory.
FULL_CREDIT = 0.99


def failed_here(sims: np.ndarray, targets: np.ndarray, full: np.ndarray, same_task: float, repeats: int) -> bool:
    """Whether a memory failed ``repeats`` times on this very task with no success of its own as near:
    its outcome rows at task cosine ``sims`` >= ``same_task`` from the query, failures (target < .5)
    with full credit (``full``) nearer than its nearest success there."""
    if repeats <= 0:
        return False
    near = sims >= same_task
    if not near.any():
        return False
    worked = near & (targets >= 0.5)
    bar = float(sims[worked].max()) if worked.any() else -np.inf
    return int((near & (targets < 0.5) & full & (sims > bar)).sum()) >= repeats


def last_here(sims: np.ndarray, targets: np.ndarray, full: np.ndarray, same_task: float, newest: bool = False) -> bool | None:
    """How the memory's nearest (``newest``: latest; rows come newest first) outcome on this very task
    (task cosine ``sims`` >= ``same_task``) that the agent acted on (``full``) went: True a success,
    False a failure, None: none there."""
    near = (sims >= same_task) & full
    if not near.any():
        return None
    return bool(targets[int(np.argmax(near)) if newest else int(np.argmax(np.where(near, sims, -np.inf)))] >= 0.5)


def blend_task(qvec: np.ndarray, vectors: np.ndarray, scores: np.ndarray, weight: float) -> np.ndarray:
    """A query's task vector: ``qvec + weight * c``, normalised, where ``c`` is the unit centroid of
    the vectors of the memories it retrieved, weighted by their scores. Two phrasings of one task
    share their memories, so their task vectors are close even when their words are not."""
    w = np.maximum(np.asarray(scores, dtype=np.float64), 0.0)
    w = w / w.sum() if w.sum() > 0 else np.full(len(w), 1.0 / max(1, len(w)))
    centre = w @ np.asarray(vectors, dtype=np.float64)
    norm = float(np.linalg.norm(centre))
    if weight <= 0 or norm <= 1e-9:
        return np.asarray(qvec, dtype=np.float32)
    t = np.asarray(qvec, dtype=np.float64) + weight * centre / norm
    return (t / max(float(np.linalg.norm(t)), 1e-12)).astype(np.float32)


def beta_mean_sd(alpha: float, beta: float) -> tuple[float, float]:
    n = alpha + beta
    if n <= 0:
        return 0.5, math.sqrt(1 / 12)
    mean = alpha / n
    return mean, math.sqrt(max(0.0, mean * (1 - mean)) / (n + 1))


def searched_scopes(raw: str | None) -> frozenset[str] | None:
    """The scopes a logged retrieval searched (its scopes JSON; None: every scope)."""
    return None if raw is None else frozenset(json.loads(raw))


def within(searched: frozenset[str] | None, scopes: Sequence[str] | None) -> bool:
    """Whether a retrieval that searched ``searched`` stayed within ``scopes`` (None: every scope)."""
    return scopes is None or (searched is not None and searched <= set(scopes))


def learned_factor(usefulness: float, gain: float) -> float:
    """exp(gain * (u - 0.5)): the policy's outcome factor applied to the learned usefulness."""
    return math.exp(gain * (min(1.0, max(0.0, usefulness)) - 0.5))
