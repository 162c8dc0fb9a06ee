"""Engine settings. Every number that shapes behaviour lives here, with its default."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .policy import PROFILES
from .validation import Limits


@dataclass
class RecalliteConfig:
    limits: Limits = field(default_factory=Limits)
    default_scope: str = "default"
    # Retrieval
    keyword_weight: float = 1.0
    vector_weight: float = 1.0
    rrf_k: int = 60
    candidate_depth: int = 50  # per channel
    rerank_pool: int = 40  # fused candidates that get the policy multipliers
    semantic_match_threshold: float = 0.25
    profiles: dict[str, dict[str, float]] = field(default_factory=lambda: {k: dict(v) for k, v in PROFILES.items()})
    # Learning
    learning_rate: float = 0.35
    # Caches
    query_cache_size: int = 256
    embed_batch_size: int = 64
    busy_timeout_ms: int = 5000
    # Tombstones kept for incremental readers before they are pruned (readers then reload).
    max_tombstones: int = 20000
    # Vector scans in worker processes (file stores only): False, True, "auto" or a dict of
    # scan_workers.WorkerOptions fields (size, min_vector_count, min_scan_operations,
    # max_concurrent_scans, task_timeout, max_queue, fallback). False keeps every scan inline.
    workers: Any = False
