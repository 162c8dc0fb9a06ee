"""Engine settings. Every number that shapes behaviour lives here, with its default."""

from __future__ import annotations

from dataclasses import dataclass, field

from .learning import LearningConfig
from .policy import PROFILES
from .validation import Limits


@dataclass
class RecalliteConfig:
    limits: Limits = field(default_factory=Limits)
    default_scope: str = "default"
    # Retrieval. fusion "zscore" (default): coverage-gated z-score fusion; "rrf": weighted
    # reciprocal rank fusion with the weights below. channels: "hybrid", "keyword" or "vector"
    # (single-channel ablations for evaluation).
    fusion: str = "zscore"
    channels: str = "hybrid"
    keyword_alpha_max: float = 0.4
    keyword_coverage_ramp: tuple[float, float] = (0.1, 0.4)
    coverage_docs: int = 20  # keyword hits inspected for query-term coverage
    keyword_weight: float = 1.0
    vector_weight: float = 1.0
    rrf_k: int = 60
    candidate_depth: int = 100  # per channel
    rerank_pool: int = 40  # fused candidates that get the policy multipliers
    semantic_match_threshold: float = 0.25
    profiles: dict[str, dict[str, float]] = field(default_factory=lambda: {k: dict(v) for k, v in PROFILES.items()})
    # Learning
    learning_rate: float = 0.35
    outcome_gain: float = 3.0
    # Outcome learner (context-aware posterior, exploration, context auto-tuning): learning.py
    learning: LearningConfig = field(default_factory=LearningConfig)
    # Caches
    query_cache_size: int = 256
    embed_batch_size: int = 64
    busy_timeout_ms: int = 5000
    # Tombstones kept for incremental readers before they are pruned (readers then reload).
    max_tombstones: int = 20000
