"""What the MCP tools return: pydantic models, so every tool has an output schema."""

from __future__ import annotations

from typing import Any, Optional

from pydantic import BaseModel, Field

from recallite_core.models import Memory, RecallHit


class ContextOut(BaseModel):
    context: str = Field(description="Prompt-ready text of the memories that matter; paste it into your working context.")
    retrieval_id: str = Field(description="Pass this to recallite_feedback when the task ends.")
    memory_ids: list[str] = Field(description="Ids of the memories included, best first.")
    tokens: int = Field(description="Estimated tokens of `context` (never above max_tokens).")
    truncated: bool = Field(description="True if a memory was cut to fit the budget.")
    omitted: int = Field(description="Matching memories left out for the budget.")
    scope: str = Field(description="The scope that was searched.")


class RememberOut(BaseModel):
    id: str
    status: str = Field(description="candidate, validated or active (decided by the source's trust).")
    type: str
    title: str
    scope: str
    source: str = Field(description="The source recorded (clients claiming user/system are recorded as agent unless the server trusts them).")
    duplicate_of: Optional[str] = Field(None, description="Set when an identical memory already existed; nothing new was stored.")


class UsefulnessChangeOut(BaseModel):
    id: str
    weight: float
    old_usefulness: float
    new_usefulness: float


class FeedbackOut(BaseModel):
    feedback_id: str
    retrieval_id: str
    outcome: str
    score: float
    changes: list[UsefulnessChangeOut] = Field(description="Each credited memory with its usefulness before and after.")
    duplicate: bool = Field(description="True when this client_key was already applied; nothing changed.")


class HitOut(BaseModel):
    id: str
    type: str
    title: str
    content: str
    status: str
    scope: str
    tags: list[str]
    confidence: float
    usefulness: float
    score: float
    rank: int
    reasons: list[str]
    warnings: list[str]
    source: str
    level: str = Field(description="user: a user-level memory seen from every project; project: this project's.")
    outcome_factor: float = Field(1.0, description="What task outcomes did to this hit's score for this query: 1 nothing, "
                                                   "above 1 it helped on similar tasks, below 1 it misled (reasons say why).")

    @classmethod
    def of(cls, hit: RecallHit, user_scope: str = "user") -> "HitOut":
        m = hit.memory
        return cls(
            id=m.id, type=m.type, title=m.title, content=m.content, status=m.status, scope=m.scope, tags=m.tags,
            level="user" if m.scope == user_scope else "project",
            confidence=round(m.confidence, 4), usefulness=round(m.usefulness, 4), score=hit.score, rank=hit.rank,
            reasons=hit.reasons, warnings=hit.warnings, source=m.source.type,
            outcome_factor=round(hit.breakdown.outcome_factor, 4),
        )


class RecallOut(BaseModel):
    retrieval_id: str
    memories: list[HitOut]
    scope: str


class MemoryOut(BaseModel):
    id: str
    type: str
    title: str
    content: str
    status: str
    scope: str
    session: Optional[str]
    tags: list[str]
    metadata: dict[str, Any]
    source: str
    source_id: Optional[str]
    confidence: float
    usefulness: float
    importance: float
    success_count: int
    failure_count: int
    access_count: int
    superseded_by: Optional[str]
    created_at: str
    updated_at: str

    @classmethod
    def of(cls, m: Memory) -> "MemoryOut":
        return cls(
            id=m.id, type=m.type, title=m.title, content=m.content, status=m.status, scope=m.scope, session=m.session,
            tags=m.tags, metadata=m.metadata, source=m.source.type, source_id=m.source.id,
            confidence=round(m.confidence, 4), usefulness=round(m.usefulness, 4), importance=m.importance,
            success_count=m.success_count, failure_count=m.failure_count, access_count=m.access_count,
            superseded_by=m.superseded_by, created_at=m.created_at.isoformat(), updated_at=m.updated_at.isoformat(),
        )


class GetOut(BaseModel):
    memories: list[MemoryOut]


class RelationOut(BaseModel):
    id: str
    from_id: str
    to_id: str
    type: str
    confidence_effect: bool


class CountsOut(BaseModel):
    id: str
    evidence_count: int
    contradiction_count: int
    confidence: float


class RelateOut(BaseModel):
    relation: RelationOut
    from_memory: CountsOut
    to_memory: CountsOut


class UpdateOut(BaseModel):
    id: str
    status: str
    superseded_by: Optional[str] = None
    confidence: float


class ForgetOut(BaseModel):
    id: str
    deleted: bool


class StatsOut(BaseModel):
    scope: Optional[str] = Field(description="Scope the counts are limited to; null for the whole database.")
    active_scope: str = Field(description="The project scope this session reads and writes.")
    scope_rule: str = Field(description="Which rule chose it: roots, flag, env, git or default.")
    scope_reason: str
    user_scope: str
    isolate_scopes: bool
    memories: int
    by_type: dict[str, int]
    by_status: dict[str, int]
    by_source: dict[str, int]
    by_scope: dict[str, int]
    relations: dict[str, int]
    vectors: int
    embedder: str
    embedder_loaded: bool
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
        description="Auto-tuning of recallite_context per scope: the limit and min_score_ratio in use, and each "
                    "setting's feedback (pulls, mean reward = outcome minus a token cost).")
