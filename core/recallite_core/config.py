"""Engine settings. Every number that shapes behaviour lives here, with its default, or is
read here from the module that owns it (policy.py for the score arithmetic). Every choice is a
Literal, checked when it is set (at construction and after): a misspelt choice fails with one
line naming the field, the value and what is allowed, instead of quietly changing what recall
returns."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable, Literal, Sequence, Union, get_args

from recallite_core.errors import InvalidInputError
from recallite_core.learning.learner import LEARNING_MODES, LearningConfig
from recallite_core.models import MEMORY_TYPES, MemoryType
from recallite_core.policy.rules import OUTCOME_GAIN, PROFILES
from recallite_core.text.validation import Limits

Fusion = Literal["zscore", "rrf"]
Channels = Literal["hybrid", "keyword", "vector"]
WorkingOverflow = Literal["archive", "drop"]
# The reranker kinds rerank.resolve_reranker builds, in the spellings it accepts (any case).
RerankKind = Literal["cross-encoder", "crossencoder", "cross_encoder"]
Reranker = Callable[[str, list[str]], Sequence[float]]
# False, True, "auto" or a dict of scan_workers.WorkerOptions fields (a WorkerOptions works too).
Workers = Union[bool, Literal["auto"], dict[str, Any]]

FUSIONS: tuple[str, ...] = get_args(Fusion)
CHANNELS: tuple[str, ...] = get_args(Channels)
WORKING_OVERFLOWS: tuple[str, ...] = get_args(WorkingOverflow)
RERANK_KINDS: tuple[str, ...] = get_args(RerankKind)


def choice_error(name: str, value: Any, allowed: Sequence[Any]) -> InvalidInputError:
    return InvalidInputError(f"{name} must be one of {', '.join(repr(a) for a in allowed)}, not {value!r}.")


def check_choice(name: str, allowed: tuple[str, ...]) -> Callable[[Any], None]:
    def check(value: Any) -> None:
        if not isinstance(value, str) or value not in allowed:
            raise choice_error(name, value, allowed)
    return check


def check_rerank(value: Any) -> None:
    if value is None or value is False or callable(value):
        return
    if not isinstance(value, str) or value.lower() not in RERANK_KINDS:
        raise InvalidInputError(f"rerank must be None, 'cross-encoder' or a callable (query, texts) -> scores, "
                                f"not {value!r}.")


def check_workers(value: Any) -> None:
    options = dataclasses.is_dataclass(value) and not isinstance(value, type)  # a scan_workers.WorkerOptions
    if value is None or isinstance(value, (bool, dict)) or value == "auto" or options:
        return
    raise InvalidInputError(f"workers must be one of False, True, 'auto' or a dict of worker options, not {value!r}.")


def check_chunk_types(value: Any) -> None:
    if isinstance(value, str):
        raise InvalidInputError(f"chunk_types must be a tuple of memory types, not the string {value!r}.")
    for t in value:
        if t not in MEMORY_TYPES:
            raise choice_error("chunk_types item", t, MEMORY_TYPES)


def check_learning(value: Any) -> None:
    if getattr(value, "mode", None) not in LEARNING_MODES:
        raise choice_error("learning.mode", getattr(value, "mode", None), LEARNING_MODES)


# Checked on every assignment: benchmarks and callers switch these on a live config.
CHECKS: dict[str, Callable[[Any], None]] = {
    "fusion": check_choice("fusion", FUSIONS),
    "channels": check_choice("channels", CHANNELS),
    "working_overflow": check_choice("working_overflow", WORKING_OVERFLOWS),
    "rerank": check_rerank,
    "workers": check_workers,
    "chunk_types": check_chunk_types,
    "learning": check_learning,
}


@dataclass
class RecalliteConfig:
    limits: Limits = field(default_factory=Limits)
    default_scope: str = "default"
    # Retrieval. fusion "zscore" (default): coverage-gated z-score fusion; "rrf": weighted
    # reciprocal rank fusion with the weights below. channels: "hybrid", "keyword" or "vector"
    # (single-channel ablations for evaluation).
    fusion: Fusion = "zscore"
    channels: Channels = "hybrid"
    keyword_alpha_max: float = 0.45
    keyword_coverage_ramp: tuple[float, float] = (0.1, 0.4)
    coverage_docs: int = 20  # keyword hits inspected for query-term coverage
    # The keyword weight (keyword_alpha_max, ramped by coverage) also fades to 0 as the vector
    # channel's best match stands out: its cosine above the vector_margin_rank-th best, in units
    # of the scope's cosine spread, across vector_margin_ramp (None: no fade). Chosen on the dev
    # parts of `recallite-mcp eval locomo|history|nearmiss` (fusion.keyword_weight).
    vector_margin_ramp: tuple[float, float] | None = (3.0, 3.5)
    vector_margin_ramp_unmatched: tuple[float, float] | None = (2.0, 3.0)  # the best vector match holds no query word
    vector_margin_rank: int = 20
    # bm25 from an in-memory mirror of the FTS5 tables (storage/sqlite/keyword_mirror.py): the same scores,
    # without the per-query SQL. False asks FTS5 every time (tests compare the two).
    keyword_cache: bool = True
    # Conversation turns (z-score fusion only): a turn gains this share of its best
    # neighbouring turn's score; turns by a speaker the query names gain speaker_boost z-units.
    neighbour_gain: float = 0.5
    window_keyword_weight: float = 1.0  # bm25 of a turn with its neighbours, added to the turn's own
    speaker_boost: float = 2.0
    keyword_weight: float = 1.0
    vector_weight: float = 1.0
    rrf_k: int = 60
    candidate_depth: int = 100  # per channel
    rerank_pool: int = 40  # fused candidates that get the policy multipliers
    semantic_match_threshold: float = 0.25
    # Relevance floor: a memory is returned (and may be explored) only with some evidence for
    # the query: cosine at least relevance_floor (None: the embedder's own `relevance_floor`,
    # 0.2 for MiniLM, 0.1 for the hash embedder, none for an embedder that names none), or its
    # words covering at least keyword_relevance of the query's IDF mass. Nothing is returned
    # just to fill the limit.
    relevance_floor: float | None = None
    keyword_relevance: float = 0.15
    profiles: dict[str, dict[str, float]] = field(default_factory=lambda: {k: dict(v) for k, v in PROFILES.items()})
    # Learning
    learning_rate: float = 0.35
    outcome_gain: float = OUTCOME_GAIN  # on the usefulness column; the learner has its own (learning.gain)
    # Outcome learner (context-aware posterior, exploration, context auto-tuning): learning.py
    learning: LearningConfig = field(default_factory=LearningConfig)
    # Caches
    query_cache_size: int = 256
    embed_batch_size: int = 64
    busy_timeout_ms: int = 5000
    # Corrections (corrections.py): every write compares the new memory with its nearest live
    # memories in the scope (this many, at or above this cosine) and supersedes or links the ones
    # whose value it changes. False turns detection off.
    corrections: bool = True
    correction_candidates: int = 5
    correction_min_similarity: float = 0.3
    # Secrets found in memory text are stored as [REDACTED:kind] (see redaction.py).
    redact_secrets: bool = True
    # Tombstones kept for incremental readers before they are pruned (readers then reload).
    max_tombstones: int = 20000
    # Conversation memory (episodes.py). Memories of these types longer than
    # chunk_threshold_chars are split into sentence-level chunks (about chunk_max_chars each,
    # short sentences merged up to chunk_min_chars) that get their own vectors.
    chunk_types: tuple[MemoryType, ...] = ("episode",)
    chunk_threshold_chars: int = 280
    chunk_max_chars: int = 240
    chunk_min_chars: int = 40
    # Running session summary: sentences kept per session, and how many are shown.
    summary_pool: int = 24
    summary_sentences: int = 5
    # build_context(conversation=...): at most this share of max_tokens for the session block.
    conversation_share: float = 0.5
    # Optional reranking stage, off by default: None, "cross-encoder" (sentence-transformers,
    # with rerank_model = a local model directory; nothing is downloaded) or a callable
    # (query, texts) -> scores (higher = more relevant). Reorders the top rerank_depth hits.
    rerank: Union[None, RerankKind, Reranker] = None
    rerank_model: str | None = None
    rerank_depth: int = 20
    # SLM-Lite: trust, working memory, behaviour capture
    trust_half_life_days: float = 180.0
    working_max_entries: int = 200  # per session; the oldest entry is archived beyond it
    working_max_bytes: int = 256 * 1024  # per session, content bytes
    working_overflow: WorkingOverflow = "archive"  # "archive": written as a candidate episode; "drop": forgotten
    working_promote_after: int = 3  # uses (recall hits + credited feedback) before auto-promotion; 0 = never
    behavior_queue_size: int = 1000
    # Vector scans in worker processes (file stores only): False, True, "auto" or a dict of
    # scan_workers.WorkerOptions fields (size, min_vector_count, min_scan_operations,
    # max_concurrent_scans, task_timeout, max_queue, fallback). False keeps every scan inline.
    workers: Workers = False

    def __setattr__(self, name: str, value: Any) -> None:
        check = CHECKS.get(name)
        if check is not None:
            check(value)
        super().__setattr__(name, value)

    def __post_init__(self) -> None:
        for name in ("vector_margin_ramp", "vector_margin_ramp_unmatched"):
            ramp = getattr(self, name)
            if ramp is not None and not (len(ramp) == 2 and 0 <= ramp[0] < ramp[1]):
                raise InvalidInputError(f"{name} must be None or (lo, hi) with 0 <= lo < hi, not {ramp!r}.")
        if int(self.vector_margin_rank) < 2:
            raise InvalidInputError(f"vector_margin_rank must be at least 2, not {self.vector_margin_rank!r}.")
