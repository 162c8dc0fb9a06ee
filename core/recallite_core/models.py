"""Pydantic models: what the engine takes and returns."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, Optional, TypeGuard, get_args

from pydantic import BaseModel, ConfigDict, Field, model_validator

MemoryType = Literal["observation", "preference", "fact", "constraint", "lesson", "procedure", "episode"]
Status = Literal["candidate", "validated", "active", "deprecated", "superseded"]
SourceType = Literal["user", "system", "tool", "agent", "llm", "imported"]
RelationType = Literal["contradicts", "supports", "derived_from", "supersedes", "causes", "requires"]
Outcome = Literal["success", "failure", "partial"]
ContextFormat = Literal["markdown", "xml", "plain", "compact"]
Layer = Literal["working", "episodic", "semantic", "procedural"]

MEMORY_TYPES: tuple[str, ...] = get_args(MemoryType)
STATUSES: tuple[str, ...] = get_args(Status)
SOURCE_TYPES: tuple[str, ...] = get_args(SourceType)
RELATION_TYPES: tuple[str, ...] = get_args(RelationType)
OUTCOMES: tuple[str, ...] = get_args(Outcome)
CONTEXT_FORMATS: tuple[str, ...] = get_args(ContextFormat)


def is_memory_type(value: object) -> TypeGuard[MemoryType]:
    return value in MEMORY_TYPES


def is_outcome(value: object) -> TypeGuard[Outcome]:
    return value in OUTCOMES


def is_context_format(value: object) -> TypeGuard[ContextFormat]:
    return value in CONTEXT_FORMATS



# A stored memory's layer follows from its type (SLM-Lite layers; working memory is in process only).
TYPE_LAYER: dict[str, Layer] = {
    "episode": "episodic",
    "observation": "semantic",
    "fact": "semantic",
    "preference": "semantic",
    "procedure": "procedural",
    "lesson": "procedural",
    "constraint": "procedural",
}

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
    # Corrections (corrections.py), set on the memory a write returns: older memories of the scope
    # whose value it changes, superseded by it or linked as contradicting it, and one line saying so.
    supersedes: Optional[list[str]] = Field(default=None, description="Older memories this write superseded.")
    conflicts_with: Optional[list[str]] = Field(default=None, description="Older memories it contradicts (unresolved).")
    correction: Optional[str] = Field(default=None, description="What the write changed, in one line.")
    # Team copies (share) of what this write superseded: revised with it, or kept as their team changed them.
    team_copies: list[str] | None = Field(default=None, description="New versions of the team copies that followed.")
    stale_copies: list[str] | None = Field(
        default=None, description="Team copies their team had changed: kept, they now warn that the original was replaced.")
    # Conversation memory (episodes.py): set for turns/events and for categorised memories.
    episode: Optional[EpisodeInfo] = None
    category: Optional[str] = None
    valid_until: Optional[datetime] = Field(default=None, description="After this moment the memory leaves default recall.")
    layer: Optional[Layer] = Field(
        default=None, description="working (in process only), episodic, semantic or procedural; follows from the type."
    )

    @model_validator(mode="after")
    def _default_layer(self) -> "Memory":
        if self.layer is None:
            self.layer = TYPE_LAYER[self.type]
        return self


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
    success_locality: float = Field(1.0, description="Share of its success evidence that counts for this query: below 1 "
                                                     "when another candidate succeeded on tasks closer to it.")
    failed_here: bool = Field(False, description="Failed at least twice on this very task and never worked there: "
                                                 "not served first there again.")
    failed_last_here: bool = Field(False, description="The agent acted on it for this very task and its latest outcome "
                                                      "there was a failure.")


class ScoreBreakdown(BaseModel):
    """How a hit's final score was made: fusion, then multipliers."""

    keyword_rank: Optional[int] = None
    keyword_score: Optional[float] = None
    vector_rank: Optional[int] = None
    vector_similarity: Optional[float] = None
    keyword_z: Optional[float] = None
    vector_z: Optional[float] = None
    keyword_alpha: Optional[float] = Field(None, description="Weight of the keyword channel for this query (z-score fusion).")
    neighbour_share: Optional[float] = Field(None, description="z-units a conversation turn gained from its neighbouring turns.")
    speaker_boost: Optional[float] = Field(None, description="z-units a turn gained because the query names its speaker.")
    fusion: float = 0.0
    status_factor: float = 1.0
    profile_factor: float = 1.0
    quality: float = 1.0
    outcome_factor: float = Field(1.0, description="What task outcomes did to this memory (1 = no effect).")
    contradiction_factor: float = 1.0
    final: float = 0.0
    rerank_score: Optional[float] = None  # set when the optional reranking stage ran
    learning: Optional[OutcomeEvidence] = Field(None, description="Evidence behind outcome_factor; None when ranking used the usefulness column.")


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
    trust: Optional[float] = Field(default=None, description="Trust score in [0.1, 1] (policy.trust_score).")


class RecallResult(BaseModel):
    retrieval_id: str
    query: str
    profile: str
    memories: list[RecallHit] = Field(default_factory=list)
    task_names: list[str] = Field(default_factory=list, description="Task names under which these memories "
                                  "worked, nearest first; empty when the query's own name has outcomes on them.")

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
    conversation_turns: int | None = Field(None, description="With build_context(conversation=...): how many "
                                              "turns that session has (0: none here, served without it).")
    turn_ids: list[str] = Field(default_factory=list, description="With build_context(conversation=...): the "
                                "session's turns shown before the memories (not in memory_ids).")
    task_names: list[str] = Field(default_factory=list, description="As RecallResult.task_names.")


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
    duplicate: bool = Field(False, description="True when nothing was applied: this client_key was, or every memory it "
                            "would credit already has this retrieval's outcome.")
    promoted: list[str] = Field(default_factory=list, description="Candidates this feedback validated: they earned it "
                                "(policy.earns_validation).")
    already_judged: list[str] = Field(default_factory=list, description="Memories earlier feedback on this retrieval "
                                      "credited: not credited again (one outcome per memory per retrieval).")
    not_shown: list[str] = Field(default_factory=list, description="Memories used_memory_ids named that this retrieval "
                                 "neither served nor opened: credited as named (the agent may have found them elsewhere).")
    task: str | None = Field(None, description="With feedback(task=...): the task key the outcome was filed under.")


class Relation(BaseModel):
    id: str
    from_id: str
    to_id: str
    type: RelationType
    created_at: datetime
    confidence_effect: bool = Field(
        True, description="False when the trust policy stored the link without letting it move confidence."
    )
    replaced: list[str] = Field(
        default_factory=list,
        description="The opposite links this one replaced (a contradiction replaces supports between the same pair).",
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
    by_layer: dict[str, int] = Field(default_factory=dict)
    trust: dict[str, Any] = Field(default_factory=dict, description="Trust distribution: buckets, mean, min, max.")
    expired: int = Field(0, description="Memories past valid_until still on record (clean_expired retires them).")
    working: dict[str, int] = Field(default_factory=dict, description="Working memory in this process: sessions, entries, bytes.")
    redactions: int = Field(0, description="Secrets replaced by [REDACTED:kind] before storage, database-wide.")
    redactions_by_kind: dict[str, int] = Field(default_factory=dict)
    context_tuning: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="Auto-tuning of recallite_context per scope: the limit and min_score_ratio in use, and each "
                    "setting's feedback (pulls, mean reward = outcome minus a token cost).")


# -- SLM-Lite ----------------------------------------------------------------------------------------------------------
class BeliefNode(BaseModel):
    memory: Memory
    hops: int = Field(description="0 for a seed found by recall, 1 or 2 for neighbours along relations.")
    confidence: float = Field(description="Belief confidence: the seed's confidence, x 0.6 per hop.")
    trust: Optional[float] = None
    via: Optional[str] = Field(None, description="The node this one was reached from.")
    relation: Optional[str] = Field(None, description="The relation that reached it, seen from `via` (e.g. supports, contradicted_by).")


class BeliefEdge(BaseModel):
    from_id: str
    to_id: str
    type: RelationType


class BeliefGraph(BaseModel):
    topic: str
    retrieval_id: str
    nodes: list[BeliefNode] = Field(default_factory=list)
    edges: list[BeliefEdge] = Field(default_factory=list)


class Concepts(BaseModel):
    concepts: list[str] = Field(description="Key phrases, best first.")
    summary: str = Field(description="A short extractive (or sampled) summary of the text.")
    method: Literal["local", "sampling"] = "local"


class AutoContextResult(BaseModel):
    context: str
    retrieval_id: str
    memory_ids: list[str]
    tokens: int
    query: str = Field(description="The recall query built from the concepts.")
    concepts: list[str]
    summary: str
    method: Literal["local", "sampling"] = "local"


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
