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


class OutcomeEvidence(BaseModel):
    """What feedback did to a hit: the posterior behind its outcome factor (learning.py)."""

    outcomes: int = Field(0, description="Outcome rows considered (the most recent ones, at most 32).")
    successes: float = Field(0.0, description="Success evidence, weighted by credit, recency and query similarity.")
    failures: float = Field(0.0, description="Failure evidence, weighted the same way.")
    nearest_similarity: Optional[float] = Field(None, description="Cosine of the closest past query with an outcome.")
    posterior_mean: float = Field(0.5, description="Beta posterior mean of success for this query.")
    exploration_bonus: float = Field(0.0, description="Optimism added when exploring (recallite_context).")
    usefulness: float = Field(0.5, description="posterior_mean + exploration_bonus: what the outcome factor used.")
    last_outcome_at: Optional[datetime] = None
    failure_run: int = Field(0, description="Latest consecutive failures where it used to work: older successes count less.")
    newcomer: bool = Field(False, description="Never judged and newer than its judged rivals: explored first.")


class ScoreBreakdown(BaseModel):
    """How a hit's final score was made: fusion, then multipliers."""

    keyword_rank: Optional[int] = None
    keyword_score: Optional[float] = None
    vector_rank: Optional[int] = None
    vector_similarity: Optional[float] = None
    keyword_z: Optional[float] = None
    vector_z: Optional[float] = None
    keyword_alpha: Optional[float] = Field(None, description="Weight of the keyword channel for this query (z-score fusion).")
    fusion: float = 0.0
    status_factor: float = 1.0
    profile_factor: float = 1.0
    quality: float = 1.0
    outcome_factor: float = Field(1.0, description="What task outcomes did to this memory (1 = no effect).")
    contradiction_factor: float = 1.0
    final: float = 0.0
    learning: Optional[OutcomeEvidence] = Field(None, description="Evidence behind outcome_factor; None when ranking used the usefulness column.")


class RecallHit(BaseModel):
    memory: Memory
    score: float
    rank: int
    reasons: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    breakdown: ScoreBreakdown = Field(default_factory=ScoreBreakdown)


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
    context_tuning: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="Per scope: the (limit, min_score_ratio) recallite_context uses now and each setting's feedback.")
