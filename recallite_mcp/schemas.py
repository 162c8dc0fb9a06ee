"""What the MCP tools return: pydantic models, so every tool has an output schema. Results are
lean (Out): optional fields that are empty are left out, floats are rounded; bodies are bounded."""

from __future__ import annotations

from typing import Any, Optional

from pydantic import BaseModel, Field, model_serializer

from recallite_core.models import BeliefGraph, Memory, RecallHit, Stats

HIT_CHARS = 1500  # a memory's body in a recall result; recallite_get has the rest
GET_CHARS = 6000  # a memory's body per recallite_get call; offset= pages on
DIGITS = 3


def rounded(value: Any) -> Any:
    return round(value, DIGITS) if isinstance(value, float) else value


class Out(BaseModel):
    """A tool result: optional fields that are None or empty are dropped, floats rounded."""

    @model_serializer(mode="wrap")
    def _lean(self, handler):
        data = handler(self)
        if not isinstance(data, dict):
            return data
        fields = type(self).model_fields
        return {k: rounded(v) for k, v in data.items()
                if not (k in fields and not fields[k].is_required() and (v is None or v == [] or v == {}))}


def cut(text: str, start: int, width: int) -> tuple[str, Optional[int]]:
    """text[start:start+width] and the offset of what follows (None when nothing does)."""
    end = start + width
    return text[start:end], (end if end < len(text) else None)


TASK_NAMES = "Names of jobs these memories worked for, nearest first: if one is yours, pass it as task."


class ContextOut(Out):
    context: str = Field(description="Prompt-ready text of the memories that matter; paste it into your working context.")
    retrieval_id: str = Field(description="Pass this to recallite_feedback when the task ends.")
    memory_ids: list[str] = Field(description="Ids of the memories included, best first.")
    tokens: int = Field(description="Estimated tokens of `context` (never above max_tokens).")
    truncated: bool = Field(description="True if a memory was cut to fit the budget.")
    omitted: int = Field(description="Matching memories left out for the budget.")
    scope: str = Field(description="The scope that was searched.")
    turn_ids: list[str] = Field([], description="With session: the conversation turns shown first (not in memory_ids).")
    hint: str | None = Field(None, description="Set when the scope searched holds no memory at all: the scopes that do.")
    task_names: list[str] = Field(default_factory=list, exclude_if=lambda v: not v, description=TASK_NAMES)


class RememberOut(Out):
    id: str
    status: str = Field(description="candidate, validated or active (decided by the source's trust).")
    type: str
    title: str
    scope: str
    source: str = Field(description="The source recorded (clients claiming user/system are recorded as agent unless the server trusts them).")
    duplicate_of: Optional[str] = Field(None, description="Set when an identical memory already existed; nothing new was stored.")
    layer: str = Field("semantic", description="working (this session only, in RAM), episodic, semantic or procedural.")
    hint: Optional[str] = Field(None, exclude_if=lambda v: v is None,
                                description="For a candidate: how it gets validated.")
    note: Optional[str] = Field(None, description="What else happened, in one line (e.g. an older memory it corrects).")
    supersedes: Optional[list[str]] = Field(None, description="Older memories this one replaced (now superseded).")
    conflicts_with: Optional[list[str]] = Field(None, description="Older memories it contradicts, left for you to resolve.")


class UsefulnessChangeOut(Out):
    id: str
    weight: float
    old_usefulness: float
    new_usefulness: float


class FeedbackOut(Out):
    feedback_id: str
    retrieval_id: str
    outcome: str
    score: float
    changes: list[UsefulnessChangeOut] = Field(description="Each credited memory with its usefulness before and after.")
    duplicate: bool = Field(description="True when nothing changed: the same client_key, or every memory already judged.")
    promoted: list[str] = Field(default_factory=list, exclude_if=lambda v: not v,
                                description="Candidates this feedback validated: they kept helping (omitted when none).")
    already_judged: list[str] = Field(default_factory=list, exclude_if=lambda v: not v,
                                      description="Already credited by earlier feedback on this retrieval: not again.")
    not_shown: list[str] = Field(default_factory=list, exclude_if=lambda v: not v,
                                 description="Named but not served here; credited anyway.")
    task: str | None = Field(None, exclude_if=lambda v: v is None, description="The task name it was filed under.")


class TurnOut(Out):
    """A conversation turn (episode) with where it sits. Under a hit, what the hit already says is
    left out: its own turn's id, text and scope, and the scope its window shares."""

    id: str | None = None
    role: str
    session: Optional[str]
    seq: int
    timestamp: str = Field(description="When it was said (ISO 8601, UTC).")
    content: str | None = None
    scope: str | None = None

    @classmethod
    def of(cls, m: Memory, hit: Memory | None = None, place_only: bool = False) -> "TurnOut":
        """``hit``: the hit it is shown under (its text and scope are not repeated); ``place_only``:
        the hit's own turn, where it sits and nothing else."""
        ep = m.episode
        own = hit is not None and m.id == hit.id
        return cls(id=None if place_only else m.id,
                   role=ep.role if ep else m.type, session=ep.session if ep else m.session,
                   seq=ep.seq if ep else 0, timestamp=(ep.timestamp if ep else m.created_at).isoformat(),
                   content=None if own else m.content, scope=None if hit is not None and m.scope == hit.scope else m.scope)


class HitOut(Out):
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
    trust: Optional[float] = Field(None, description="Trust score 0.1..1 (source credibility, contradictions, corroboration, age).")
    layer: str = Field("semantic", description="working (this session, RAM only), episodic, semantic or procedural.")
    turn: Optional[TurnOut] = Field(None, description="For a conversation turn: its role, session, position and time.")
    window: list[TurnOut] = Field(default_factory=list, description="With window > 0: the turn and its neighbours, in order.")
    outcome_factor: float = Field(1.0, description="What task outcomes did to this hit's score for this query: 1 nothing, "
                                                   "above 1 it helped on similar tasks, below 1 it misled (reasons say why).")
    content_chars: Optional[int] = Field(None, description="Set when `content` was cut: its full length (recallite_get has it all).")

    @classmethod
    def of(cls, hit: RecallHit, user_scope: str = "user") -> "HitOut":
        m = hit.memory
        body, more = cut(m.content, 0, HIT_CHARS)
        return cls(
            id=m.id, type=m.type, title=m.title, content=body, content_chars=len(m.content) if more else None,
            status=m.status, scope=m.scope, tags=m.tags,
            level="user" if m.scope == user_scope else "project",
            confidence=round(m.confidence, 4), usefulness=round(m.usefulness, 4), score=hit.score, rank=hit.rank,
            reasons=hit.reasons, warnings=hit.warnings, source=m.source.type, trust=hit.trust, layer=m.layer or "semantic",
            turn=TurnOut.of(m, m, place_only=True) if m.episode else None, window=[TurnOut.of(w, m) for w in hit.window],
            outcome_factor=round(hit.breakdown.outcome_factor, 4),
        )


class RecallOut(Out):
    retrieval_id: str
    memories: list[HitOut]
    scope: str
    hint: str | None = Field(None, description="Set when the scope searched holds no memory at all: the scopes that do.")
    task_names: list[str] = Field(default_factory=list, exclude_if=lambda v: not v, description=TASK_NAMES)


class MemoryOut(Out):
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
    layer: str = "semantic"
    last_accessed_at: Optional[str] = None
    valid_until: Optional[str] = None
    content_chars: Optional[int] = Field(None, description="Set when `content` is a part: the full length.")
    next_offset: Optional[int] = Field(None, description="Set when more follows: pass it as offset to read on.")

    @classmethod
    def of(cls, m: Memory, offset: int = 0, width: int = GET_CHARS) -> "MemoryOut":
        body, more = cut(m.content, offset, width)
        part = offset > 0 or more is not None
        return cls(
            id=m.id, type=m.type, title=m.title, content=body, content_chars=len(m.content) if part else None,
            next_offset=more, status=m.status, scope=m.scope, session=m.session,
            tags=m.tags, metadata=m.metadata, source=m.source.type, source_id=m.source.id,
            confidence=round(m.confidence, 4), usefulness=round(m.usefulness, 4), importance=m.importance,
            success_count=m.success_count, failure_count=m.failure_count, access_count=m.access_count,
            superseded_by=m.superseded_by, created_at=m.created_at.isoformat(), updated_at=m.updated_at.isoformat(),
            layer=m.layer or "semantic", last_accessed_at=m.last_accessed_at.isoformat() if m.last_accessed_at else None,
            valid_until=m.valid_until.isoformat() if m.valid_until else None,
        )


class GetOut(Out):
    memories: list[MemoryOut]


class ListItemOut(Out):
    id: str
    type: str
    status: str
    title: str
    scope: str
    source: str
    tags: list[str] = Field(default_factory=list)
    created_at: str
    confidence: float
    usefulness: float

    @classmethod
    def of(cls, m: Memory) -> "ListItemOut":
        return cls(id=m.id, type=m.type, status=m.status, title=m.title, scope=m.scope, source=m.source.type, tags=m.tags,
                   created_at=m.created_at.isoformat(timespec="seconds"), confidence=m.confidence, usefulness=m.usefulness)


class ListOut(Out):
    memories: list[ListItemOut] = Field(description="Newest first.")
    offset: int
    next_offset: Optional[int] = Field(None, description="Pass as offset for the next page (absent on the last page).")
    scopes: list[str] = Field(description="The scopes listed.")
    hint: str | None = Field(None, description="Set when the scope named holds no memory at all: the scopes that do.")


class RelationOut(Out):
    id: str
    from_id: str
    to_id: str
    type: str
    confidence_effect: bool
    replaced: list[str] = Field(default_factory=list, description="Supports links this contradiction replaced.")


class CountsOut(Out):
    id: str
    evidence_count: int
    contradiction_count: int
    confidence: float


class RelateOut(Out):
    relation: RelationOut
    from_memory: CountsOut
    to_memory: CountsOut


class UpdateOut(Out):
    id: str = Field(description="The memory changed: for revise the old version (now superseded), for promote the "
                                "stored memory, for share the team copy.")
    status: str
    superseded_by: Optional[str] = Field(None, description="After supersede or revise: the newer version's id.")
    confidence: float
    layer: str = Field("semantic", description="episodic, semantic or procedural.")
    scope: str = ""
    note: str | None = Field(None, exclude_if=lambda v: v is None, description="What a share did, or what a revise changed besides the "
                          "old version (team copies, corrected memories); omitted otherwise.")


class ForgetOut(Out):
    id: str
    deleted: bool
    orphans: list[str] = Field(default_factory=list, description="Memories whose every cited source is now gone (kept unless orphans=remove).")
    removed: list[str] = Field(default_factory=list, description="Orphans deleted too (orphans=remove).")


class TurnArg(BaseModel):
    """One turn to record."""

    role: str = Field(description="Who spoke: user, assistant, system, tool, a person's name; or event.")
    content: str = Field(description="What was said, verbatim.")
    timestamp: Optional[str] = Field(None, description="When (ISO 8601, e.g. 2024-05-08T13:56:00Z); now if omitted.")
    metadata: Optional[dict[str, Any]] = Field(None, description="Free JSON (message id, channel, ...).")
    category: Optional[str] = Field(None, description="Optional label to filter on later.")


class RecordOut(Out):
    session: str
    scope: str
    turns: list[TurnOut] = Field(description="The recorded turns with their ids and positions (seq).")


class WhyOut(Out):
    id: str
    sources: list[TurnOut] = Field(description="The conversation turns the memory came from, in order (empty: no recorded source).")


class StatsOut(Stats):
    """The engine's Stats plus what this server session knows: its scope and the model state."""

    scope: Optional[str] = Field(description="Scope the counts are limited to; null for the whole database.")
    active_scope: str = Field(description="The project scope this session reads and writes.")
    scope_rule: str = Field(description="Which rule chose it: roots, flag, env, git or default.")
    scope_reason: str
    user_scope: str
    isolate_scopes: bool
    embedder_loaded: bool
    working: dict[str, int] = Field(default_factory=dict, description="Working memory held by this server: sessions, entries, bytes.")
    scope_note: Optional[str] = Field(None, description="Set when no client root, flag or git repository chose the scope: what to do.")
    tools: str = Field("core", description="The tool set served: core or all.")
    hint: str | None = Field(None, description="Set when the scope named holds no memory at all: the scopes that do.")


class BeliefNodeOut(Out):
    id: str
    type: str
    title: str
    content: str
    status: str
    scope: str
    hops: int = Field(description="0: found by recall; 1-2: reached along relations.")
    confidence: float = Field(description="Belief confidence, x0.6 per hop from the seed.")
    trust: Optional[float] = None
    via: Optional[str] = Field(None, description="The memory this one was reached from.")
    relation: Optional[str] = Field(None, description="How it relates to `via`: causes, caused_by, supports, supported_by, "
                                                       "requires, required_by, contradicts, contradicted_by.")


class BeliefEdgeOut(Out):
    from_id: str
    to_id: str
    type: str


class BeliefsOut(Out):
    topic: str
    retrieval_id: str = Field(description="The recall that found the seeds; feedback may refer to it.")
    nodes: list[BeliefNodeOut]
    edges: list[BeliefEdgeOut]

    @classmethod
    def of(cls, g: BeliefGraph) -> "BeliefsOut":
        return cls(
            topic=g.topic, retrieval_id=g.retrieval_id,
            nodes=[BeliefNodeOut(id=n.memory.id, type=n.memory.type, title=n.memory.title, content=n.memory.content,
                                 status=n.memory.status, scope=n.memory.scope, hops=n.hops, confidence=n.confidence,
                                 trust=n.trust, via=n.via, relation=n.relation) for n in g.nodes],
            edges=[BeliefEdgeOut(from_id=e.from_id, to_id=e.to_id, type=e.type) for e in g.edges],
        )


class HistoryOut(Out):
    versions: list[MemoryOut] = Field(description="Every version, oldest first; the last one is current unless retired.")


class CaptureOut(Out):
    queued: bool = Field(description="True when the event was queued (it is written in the background).")
    pending: int = Field(description="Behaviour events still waiting to be written.")


class AutoContextOut(Out):
    context: str = Field(description="Prompt-ready text of the memories that matter for the message.")
    retrieval_id: str = Field(description="Pass this to recallite_feedback when the task ends.")
    memory_ids: list[str]
    tokens: int
    query: str = Field(description="The recall query built from the concepts.")
    concepts: list[str] = Field(description="Key phrases of the message, best first.")
    summary: str = Field(description="A short summary of the message.")
    method: str = Field(description="sampling: your client's LLM extracted them; local: the built-in keyword extractor.")
    scope: str
    hint: str | None = Field(None, description="Set when the scope searched holds no memory at all: the scopes that do.")
