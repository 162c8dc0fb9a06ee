"""Pydantic models: what the engine takes and returns."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field

MemoryType = Literal["observation", "preference", "fact", "constraint", "lesson", "procedure", "episode"]
Status = Literal["candidate", "validated", "active", "deprecated", "superseded"]
SourceType = Literal["user", "system", "tool", "agent", "llm", "imported"]
RelationType = Literal["contradicts", "supports", "derived_from", "supersedes", "causes", "requires"]
Outcome = Literal["success", "failure", "partial"]
ContextFormat = Literal["markdown", "xml", "plain", "compact"]

MEMORY_TYPES: tuple[str, ...] = MemoryType.__args__  # type: ignore[attr-defined]
STATUSES: tuple[str, ...] = Status.__args__  # type: ignore[attr-defined]
SOURCE_TYPES: tuple[str, ...] = SourceType.__args__  # type: ignore[attr-defined]
RELATION_TYPES: tuple[str, ...] = RelationType.__args__  # type: ignore[attr-defined]
OUTCOMES: tuple[str, ...] = Outcome.__args__  # type: ignore[attr-defined]
CONTEXT_FORMATS: tuple[str, ...] = ContextFormat.__args__  # type: ignore[attr-defined]


class Source(BaseModel):
    """Who wrote a memory. The type decides how far it is trusted."""

    model_config = ConfigDict(extra="forbid")
    type: SourceType = "user"
    id: Optional[str] = None


class EpisodeInfo(BaseModel):
    """Where a conversation turn or event sits: its session, speaker and position."""

    session: Optional[str] = None
    role: str
    seq: int = Field(description="Position in the session (scope + session), from 1.")
    timestamp: datetime = Field(description="When it was said or happened (event time, not when it was stored).")


class Memory(BaseModel):
    id: str
    type: MemoryType
    title: str
    content: str
    status: Status
    source: Source
    scope: str
    session: Optional[str] = None
    tags: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    confidence: float
    usefulness: float
    importance: float
    success_count: int = 0
    failure_count: int = 0
    access_count: int = 0
    last_accessed_at: Optional[datetime] = None
    created_at: datetime
    updated_at: datetime
    superseded_by: Optional[str] = None
    content_hash: str
    tokens: int = 0
    duplicate_of: Optional[str] = Field(
        default=None, description="Set when remember() found an identical memory in the scope and returned it."
    )
    # Conversation memory (episodes.py): set for turns/events and for categorised memories.
    episode: Optional[EpisodeInfo] = None
    category: Optional[str] = None


class ScoreBreakdown(BaseModel):
    """How a hit's final score was made: fusion, then multipliers."""

    keyword_rank: Optional[int] = None
    keyword_score: Optional[float] = None
    vector_rank: Optional[int] = None
    vector_similarity: Optional[float] = None
    fusion: float = 0.0
    status_factor: float = 1.0
    profile_factor: float = 1.0
    quality: float = 1.0
    contradiction_factor: float = 1.0
    final: float = 0.0
    rerank_score: Optional[float] = None  # set when the optional reranking stage ran


class RecallHit(BaseModel):
    memory: Memory
    score: float
    rank: int
    reasons: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    breakdown: ScoreBreakdown = Field(default_factory=ScoreBreakdown)
    window: list[Memory] = Field(
        default_factory=list,
        description="With recall(expand_episodes=w): the hit episode and its neighbouring turns (same session, "
        "seq ± w) in conversation order. Each episode appears in at most one hit's window.",
    )


class RecallResult(BaseModel):
    retrieval_id: str
    query: str
    profile: str
    memories: list[RecallHit] = Field(default_factory=list)

    @property
    def ids(self) -> list[str]:
        return [h.memory.id for h in self.memories]


class ContextResult(BaseModel):
    """A recall rendered as prompt text within a token budget."""

    context: str
    retrieval_id: str
    memory_ids: list[str]
    tokens: int
    max_tokens: int
    format: ContextFormat
    truncated: bool = False
    omitted: int = 0


class UsefulnessChange(BaseModel):
    id: str
    weight: float
    old_usefulness: float
    new_usefulness: float


class FeedbackResult(BaseModel):
    feedback_id: str
    retrieval_id: str
    outcome: Outcome
    score: float
    changes: list[UsefulnessChange]
    duplicate: bool = Field(False, description="True when this client_key was already applied; nothing changed.")


class Relation(BaseModel):
    id: str
    from_id: str
    to_id: str
    type: RelationType
    created_at: datetime
    confidence_effect: bool = Field(
        True, description="False when the trust policy stored the link without letting it move confidence."
    )


class RelationCounts(BaseModel):
    id: str
    evidence_count: int
    contradiction_count: int
    confidence: float


class ConsolidationGroup(BaseModel):
    member_ids: list[str]
    similarity: float
    merged_id: Optional[str] = None


class Stats(BaseModel):
    memories: int
    by_type: dict[str, int]
    by_status: dict[str, int]
    by_source: dict[str, int]
    by_scope: dict[str, int]
    relations: dict[str, int]
    vectors: int
    embedder: str
    dimensions: int
    retrievals: int
    feedback: dict[str, int]
    context_calls: int
    tokens_stored: int
    tokens_served: int
    tokens_matched: int
    tokens_saved: int
    tokens_served_median: float
    tokens_served_p95: float
    db_path: Optional[str]
    db_bytes: int
    wal_bytes: int
    schema_version: int


# -- conversation memory (episodes.py) -------------------------------------------------------------------


class Citation(BaseModel):
    memory_id: str = Field(description="The memory (a fact, preference, ...) that cites.")
    episode_id: str = Field(description="The conversation turn it came from.")
    created_at: datetime


class ForgetResult(BaseModel):
    """What forget() removed. Truthy when the memory was deleted."""

    id: str
    deleted: bool = True
    chunks: int = Field(0, description="Chunk vectors removed with it.")
    citations: int = Field(0, description="Citations removed with it (as source or as citing memory).")
    orphans: list[str] = Field(
        default_factory=list, description="Memories whose every cited source is now gone (kept with orphans='report')."
    )
    removed: list[str] = Field(default_factory=list, description="Orphans deleted too (orphans='remove').")

    def __bool__(self) -> bool:
        return self.deleted


class SessionContext(BaseModel):
    """Short-term memory of one conversation: its last turns and a running summary of the older ones."""

    session: str
    turns: list[Memory] = Field(default_factory=list, description="The last N turns, oldest first.")
    summary: str = Field("", description="Extractive summary of the turns before those (no LLM): their most informative sentences, in order.")
    summary_ids: list[str] = Field(default_factory=list, description="The turns the summary sentences come from.")
    total_turns: int = 0


class DriftItem(BaseModel):
    kind: str
    count: int
    ids: list[str] = Field(default_factory=list, description="Up to 20 of the affected ids.")
    fix: str
    repaired: int = 0


class ReconcileReport(BaseModel):
    """Drift between the memories table (the truth) and its projections."""

    ok: bool
    repaired: bool
    memories: int
    vectors: int
    chunks: int
    drift: list[DriftItem] = Field(default_factory=list)
