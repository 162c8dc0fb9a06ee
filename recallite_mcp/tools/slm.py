"""The SLM-Lite extras (served with --tools all): recallite_beliefs (the belief graph around a
topic), recallite_history (a memory's versions), recallite_capture (behaviour worth repeating)
and recallite_auto_context (auto-recall for a whole message, with concepts extracted by the
client's LLM through MCP sampling when it offers it, else locally). Registers them on the
server; may import the app state (recallite_mcp.app), the shared edge (tools.common), schemas
and the core, never the server module or another tool group."""

# No `from __future__ import annotations`: the SDK evaluates the tool signatures (the `Resolve`
# marker among them) against this module.

import json
import logging
import re
from typing import Annotated, Any, Literal, Optional

import mcp_types as t
from mcp.server import MCPServer
from mcp.server.mcpserver import Context, Resolve, Sample
from mcp_types import CreateMessageResult
from pydantic import Field

from recallite_core.models import Concepts

from ..app import RootsArg, state_of, working_session
from ..schemas import AutoContextOut, BeliefsOut, CaptureOut, HistoryOut, MemoryOut
from ..sessions import awaiting_key
from .common import READ_ONLY, WRITES, edge

log = logging.getLogger("recallite.server")

TOOLS = ("recallite_beliefs", "recallite_history", "recallite_capture", "recallite_auto_context")

MAX_SAMPLED_CHARS = 6000
SAMPLING_PROMPT = (
    "Extract up to 8 key concepts (short noun phrases a search engine should look for) and a one-sentence "
    "summary of the text between <<< and >>>. Answer with JSON only, no prose: "
    '{{"concepts": ["..."], "summary": "..."}}\n\n<<<\n{text}\n>>>'
)


def sampling_request(text: str, ctx: Context) -> Any:
    """Resolver of recallite_auto_context: ask the client's LLM for concepts when it offers
    sampling (works in both protocol eras); None otherwise, and the local extractor answers."""
    caps = ctx.client_capabilities
    if caps is None or getattr(caps, "sampling", None) is None or not text.strip():
        return None
    prompt = SAMPLING_PROMPT.format(text=text[:MAX_SAMPLED_CHARS])
    return Sample(
        [t.SamplingMessage(role="user", content=t.TextContent(type="text", text=prompt))],
        max_tokens=300,
        system_prompt="You extract search concepts for an agent's memory. Reply with JSON only.",
        temperature=0.0,
    )


def _reply_text(reply: Any) -> str:
    content = getattr(reply, "content", None)
    blocks = content if isinstance(content, list) else [content]
    return "\n".join(getattr(b, "text", "") or "" for b in blocks if b is not None)


def concepts_from_reply(reply: Any) -> Optional[Concepts]:
    """Concepts from a sampled reply, or None when there is none or it cannot be read."""
    if reply is None:
        return None
    text = _reply_text(reply).strip()
    match = re.search(r"\{.*\}", text, re.S)
    if not match:
        return None
    try:
        data = json.loads(match.group(0))
    except json.JSONDecodeError:
        return None
    if not isinstance(data, dict):
        return None
    raw = data.get("concepts")
    concepts = [str(c).strip()[:120] for c in raw if str(c).strip()] if isinstance(raw, list) else []
    if not concepts:
        return None
    summary = str(data.get("summary") or "").strip()[:600]
    return Concepts(concepts=concepts[:16], summary=summary, method="sampling")


def _client_name(ctx: Context) -> Optional[str]:
    try:
        info = ctx.session.client_params.client_info
        return info.name if info and info.name else None
    except Exception:
        return None


def register(server: MCPServer) -> None:
    @server.tool(title="Belief graph around a topic", annotations=WRITES)
    @edge
    def recallite_beliefs(
        topic: Annotated[str, Field(description="What you want to understand: a claim, a symptom, a decision.")],
        ctx: Context,
        depth: Annotated[int, Field(ge=0, le=3, description="How many relation hops to follow from the memories found (default 2).")] = 2,
        limit: Annotated[int, Field(ge=1, le=20, description="Seed memories to start from.")] = 5,
        scope: Annotated[Optional[str], Field(description="Another project scope instead of the active one (user-level memories are always included).")] = None,
        include_teams: Annotated[bool, Field(description="Also search the team scopes this project shares into.")] = False,
        min_trust: Annotated[Optional[float], Field(ge=0, le=1, description="Leave out memories whose trust score is lower.")] = None,
        roots: RootsArg = None,
    ) -> BeliefsOut:
        """What is believed about a topic and why: the memories recall finds, plus the memories linked
        to them by causes / supports / requires / contradicts up to `depth` hops, each with a confidence
        that decays 0.6x per hop. Use it to see causes, prerequisites and counter-evidence before acting."""
        st = state_of(ctx, roots)
        g = st.engine.beliefs(topic, depth=depth, limit=limit, scope=st.search_scopes(ctx, scope, include_teams),
                              min_trust=min_trust)
        st.served(awaiting_key(ctx), g.retrieval_id, topic, task=False)
        return BeliefsOut.of(g)

    @server.tool(title="Version history of a memory", annotations=READ_ONLY)
    @edge
    def recallite_history(
        id: Annotated[str, Field(description="Any version's id, e.g. mem_12.")],
        ctx: Context,
        roots: RootsArg = None,
    ) -> HistoryOut:
        """Every version of a memory, oldest first (recallite_update action=revise makes a new version and
        supersedes the old one). The last version is the current one."""
        st = state_of(ctx, roots)
        st.guard_memories(ctx, [id])
        return HistoryOut(versions=[MemoryOut.of(m) for m in st.engine.history(id)])

    @server.tool(title="Record what you did (behaviour)", annotations=WRITES)
    @edge
    def recallite_capture(
        kind: Annotated[Literal["tool_choice", "error_recovery", "success_pattern"], Field(description="tool_choice: which tool suits which job; error_recovery: how you got past an error; success_pattern: an approach that worked.")],
        description: Annotated[str, Field(description="One self-contained sentence, e.g. 'When pip reports a hash mismatch, clear the cache and retry.'")],
        ctx: Context,
        tool: Annotated[Optional[str], Field(description="The tool or command involved.")] = None,
        outcome: Annotated[Optional[Literal["success", "failure", "partial"]], Field(description="How it went this time.")] = None,
        context: Annotated[Optional[str], Field(description="Optional: the situation, briefly.")] = None,
        agent_id: Annotated[Optional[str], Field(description="Your agent name; defaults to the client's name.")] = None,
        roots: RootsArg = None,
    ) -> CaptureOut:
        """Cheap, non-blocking: record a behaviour worth repeating (or avoiding). Repeats of the same
        pattern are counted, not duplicated; a pattern seen three times that mostly succeeds is confirmed
        and shows up as a procedure in later recallite_context calls."""
        st = state_of(ctx, roots)
        queued = st.engine.capture_behavior(
            agent_id or _client_name(ctx) or "agent", kind, description, outcome=outcome, tool=tool,
            scope=st.active_scope(ctx).scope, context=context,
        )
        return CaptureOut(queued=queued, pending=st.engine.behavior_stats()["pending"])

    @server.tool(title="Auto-recall for a message", annotations=WRITES)
    @edge
    def recallite_auto_context(
        text: Annotated[str, Field(description="The user's message or the conversation so far (long text is fine).")],
        ctx: Context,
        max_tokens: Annotated[int, Field(ge=1, le=100_000, description="Token budget for the returned context.")] = 2000,
        limit: Annotated[int, Field(ge=1, le=100, description="At most this many memories.")] = 10,
        format: Annotated[Literal["markdown", "xml", "plain", "compact"], Field(description="Context format, as for recallite_context.")] = "markdown",
        min_trust: Annotated[Optional[float], Field(ge=0, le=1, description="Leave out memories whose trust score is lower.")] = None,
        include_teams: Annotated[bool, Field(description="Also search the team scopes this project shares into.")] = False,
        reply: Annotated[Optional[CreateMessageResult], Resolve(sampling_request)] = None,
        roots: RootsArg = None,
    ) -> AutoContextOut:
        """Like recallite_context, but for a whole message: extracts its key concepts and a summary
        (with your client's LLM through MCP sampling when it offers it, else a built-in keyword
        extractor), recalls with them and returns the context plus the concepts and summary."""
        st = state_of(ctx, roots)
        scopes = st.search_scopes(ctx, None, include_teams)
        sampled = concepts_from_reply(reply)
        if reply is not None and sampled is None:
            log.info("The sampled concepts could not be read; using the local extractor")
        r = st.engine.auto_context(
            text, max_tokens=max_tokens, format=format, limit=limit, scope=scopes, min_trust=min_trust,
            working_session=working_session(ctx),
            summarizer=(lambda _text: sampled) if sampled is not None else None,
        )
        st.served(awaiting_key(ctx), r.retrieval_id, r.query, found=bool(r.memory_ids))
        return AutoContextOut(context=r.context, retrieval_id=r.retrieval_id, memory_ids=r.memory_ids, tokens=r.tokens,
                              query=r.query, concepts=r.concepts, summary=r.summary, method=r.method, scope=scopes[0],
                              hint=st.scope_hint(ctx, scopes[0], bool(r.memory_ids)))
