"""Curation: look at what is stored and look after it. recallite_get and recallite_list to
read, recallite_update to move a memory through its lifecycle or revise it, recallite_forget to
delete, recallite_relate to link two memories, recallite_stats for the store's health (also
behind the recallite://stats resource). Registers them on the server; may import the app state
(recallite_mcp.app), the shared edge (tools.common), schemas and the core, never the server
module or another tool group."""

# No `from __future__ import annotations`: the SDK evaluates the tool signatures, which are the
# schema, against this module.

from typing import Annotated, Any, Literal, Optional

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from recallite_core import Recallite

from ..app import ISOLATED, AppState, RootsArg, embedder_loaded, state_of
from ..schemas import (
    CountsOut,
    ForgetOut,
    GetOut,
    ListItemOut,
    ListOut,
    MemoryOut,
    RelateOut,
    RelationOut,
    StatsOut,
    UpdateOut,
)
from ..scoping import DEFAULT_NOTE, ScopeDecision
from .common import DESTRUCTIVE, READ_ONLY, WRITES, MemoryTypeArg, SourceArg, StatusArg, edge

TOOLS = ("recallite_get", "recallite_list", "recallite_update", "recallite_forget", "recallite_stats", "recallite_relate")
# Parameters advertised only with --tools all (still accepted when sent).
ADVANCED = {
    "recallite_update": {"layer", "team_scope", "source"},
    "recallite_forget": {"orphans"},
}
# Choices that need an ADVANCED parameter: offered only with --tools all (the core list offered
# share and promote without team_scope or layer, a new user's trial).
ADVANCED_CHOICES = {"recallite_update": {"action": {"promote", "share"}}}


def list_page(mem: Recallite, scopes: list[str], types: Any, statuses: Any, sources: Any, tags: Any, limit: int,
              offset: int) -> tuple[list[Any], Optional[int]]:
    """One page of memories newest first, and the offset of the next page (None on the last).
    The source filter is applied here, over the core's pages."""
    if not sources:
        got = mem.list(scope=scopes, types=types, statuses=statuses, tags=tags, limit=limit + 1, offset=offset)
        return got[:limit], (offset + limit if len(got) > limit else None)
    page: list[Any] = []
    skipped, pos, chunk = 0, 0, 500
    while True:
        batch = mem.list(scope=scopes, types=types, statuses=statuses, tags=tags, limit=chunk, offset=pos)
        for m in batch:
            pos += 1
            if m.source.type not in sources:
                continue
            if skipped < offset:
                skipped += 1
                continue
            if len(page) == limit:
                return page, offset + limit
            page.append(m)
        if len(batch) < chunk:
            return page, None


def update_out(m: Any) -> UpdateOut:
    return UpdateOut(id=m.id, status=m.status, superseded_by=m.superseded_by, confidence=round(m.confidence, 4),
                     layer=m.layer or "semantic", scope=m.scope)


def stats_out(st: AppState, scope: Optional[str], decision: Optional[ScopeDecision] = None) -> StatsOut:
    s = st.engine.stats(scope=scope)
    data = s.model_dump()
    d = decision or st.settings.scope_decision()
    return StatsOut(scope=scope, embedder_loaded=embedder_loaded(st.engine), active_scope=d.scope, scope_rule=d.rule,
                    scope_reason=d.reason, user_scope=st.settings.user_scope, isolate_scopes=st.settings.isolate_scopes,
                    scope_note=DEFAULT_NOTE if d.rule == "default" else None, tools=st.settings.tools, **data)


def register(server: MCPServer) -> None:
    @server.tool(title="Get memories by id", annotations=READ_ONLY)
    @edge
    def recallite_get(
        ids: Annotated[list[str], Field(min_length=1, max_length=100, description="Memory ids, e.g. [\"mem_3\"].")],
        ctx: Context,
        retrieval_id: Annotated[Optional[str], Field(description="The retrieval that listed them (credits the ones you open).")] = None,
        offset: Annotated[int, Field(ge=0, description="Start of the text to return (long memories come in parts).")] = 0,
        roots: RootsArg = None,
    ) -> GetOut:
        """Full memories by id: content, status, scores, metadata."""
        st = state_of(ctx, roots)
        work = {i: st.engine.working_entry(i.strip()) for i in ids if i.strip().startswith("wm_")}  # this session's RAM
        stored = [i for i in ids if i not in work]
        st.guard_memories(ctx, stored)
        if stored:
            st.guard_retrieval(ctx, retrieval_id)
        mems = (st.engine.expand(retrieval_id, stored) if retrieval_id and stored else st.engine.get_many(stored))
        found = dict(zip(stored, mems))
        return GetOut(memories=[MemoryOut.of(work[i] if i in work else found[i], offset) for i in ids])

    @server.tool(title="List stored memories", annotations=READ_ONLY)
    @edge
    def recallite_list(
        ctx: Context,
        scope: Annotated[Optional[str], Field(description="One scope (default: this project's and user-level).")] = None,
        types: Annotated[Optional[list[MemoryTypeArg]], Field(description="Only these types.")] = None,
        statuses: Annotated[Optional[list[StatusArg]], Field(description="Only these statuses.")] = None,
        sources: Annotated[Optional[list[SourceArg]], Field(description="Only from these sources.")] = None,
        tags: Annotated[Optional[list[str]], Field(description="Only with all these tags.")] = None,
        limit: Annotated[int, Field(ge=1, le=200, description="Page size.")] = 30,
        offset: Annotated[int, Field(ge=0, description="next_offset of the last page.")] = 0,
        roots: RootsArg = None,
    ) -> ListOut:
        """Browse what is stored, newest first: id, type, status, title. Open one with recallite_get."""
        st = state_of(ctx, roots)
        scopes = st.read_scopes(ctx, scope) if scope is None else [scope]
        if scope:
            st.check_scope_access(ctx, scope)
        page, nxt = list_page(st.engine, scopes, types, statuses, sources, tags, limit, offset)
        return ListOut(memories=[ListItemOut.of(m) for m in page], offset=offset, next_offset=nxt, scopes=scopes,
                       hint=st.scope_hint(ctx, scope, bool(page or offset)) if scope else None)

    @server.tool(title="Change a memory's status or text", annotations=WRITES)
    @edge
    def recallite_update(
        id: Annotated[str, Field(description="The memory, e.g. mem_12.")],
        action: Annotated[Literal["validate", "activate", "deprecate", "supersede", "restore", "keep_both", "revise", "promote", "share"], Field(description="deprecate: retire it; supersede: by superseded_by; restore: undo a supersede; keep_both: it and other both hold (ends their conflict); revise: new text in content.")],
        ctx: Context,
        superseded_by: Annotated[Optional[str], Field(description="For supersede: the replacing memory.")] = None,
        other: Annotated[Optional[str], Field(description="For keep_both: the memory it conflicts with.")] = None,
        reason: Annotated[Optional[str], Field(description="Why, in a sentence.")] = None,
        content: Annotated[Optional[str], Field(description="For revise: the corrected text (the old version is kept).")] = None,
        layer: Annotated[Optional[Literal["episodic", "semantic", "procedural"]], Field(description="With action=promote: the layer to move to (default for a working entry: its type's layer).")] = None,
        team_scope: Annotated[Optional[str], Field(description="With action=share: the team scope to copy the memory into.")] = None,
        source: Annotated[SourceArg, Field(description="Who asks: agent (you); llm/imported for outside text (then nothing can be validated).")] = "agent",
        roots: RootsArg = None,
    ) -> UpdateOut:
        """Move a memory through its lifecycle (candidate -> validated -> active; deprecate what is
        wrong) or revise its text. Illegal moves name the allowed ones. Flagged memories wait for a person."""
        st = state_of(ctx, roots)
        mem = st.engine
        by = st.client_source(source)
        for name, value, owner in (("content", content, "revise"), ("layer", layer, "promote"), ("team_scope", team_scope, "share")):
            if value is not None and action != owner:
                raise ToolError(f"{name} is only for action={owner}.")
            if value is None and action == owner and owner != "promote":
                raise ToolError(f"action={owner} needs {name}.")
        if action == "promote":
            if id.strip().startswith("wm_"):
                m = mem.promote(id, layer)
            else:
                st.guard_memories(ctx, [id])
                if layer is None:
                    raise ToolError("To promote a stored memory name its new layer: semantic or procedural.")
                m = mem.promote(id, layer)
            return update_out(m)
        st.guard_memories(ctx, [id] + [i for i in (superseded_by, other) if i])
        if (other is not None) != (action == "keep_both"):
            raise ToolError("action=keep_both needs other: the memory it conflicts with." if other is None
                            else "other is only for action=keep_both.")
        if action == "keep_both":
            return update_out(mem.resolve_conflict(id, other or "", keep="both", by=by)[0])
        if action == "restore":
            return update_out(mem.undo_supersede(id, by=by))
        if action == "revise":
            src = {"type": "agent"} if not st.settings.trust_client_sources else None
            new = mem.revise(id, content or "", reason=reason, source=src)
            out = update_out(mem.get(new.metadata["previous_id"]))
            if new.correction:  # what else it changed: team copies that followed or warn, older memories it corrects
                out.note = f"Revised {out.id} as {new.id}; {new.correction}"
            return out
        if action == "share":
            if st.settings.isolate_scopes and team_scope not in mem.teams(st.active_scope(ctx).scope):
                raise ToolError(f"{ISOLATED}: {team_scope!r} is not one of this project's team scopes. Ask the operator "
                                "to link it (Python API: join_team).")
            # A user-level memory is in every project's search: its scope joining the team would
            # bring the team to every project. The project that shares it joins instead.
            personal = mem.get(id).scope == st.settings.user_scope
            copy = mem.share(id, team_scope or "", join=not personal)
            if personal:
                mem.join_team(st.active_scope(ctx).scope, team_scope or "")
            out = update_out(copy)
            out.note = (f"{id} was already shared into {copy.scope} as {copy.id}" if copy.duplicate_of
                        else f"Shared {id} into {copy.scope} as {copy.id}")
            return out
        if action == "supersede":
            if not superseded_by:
                raise ToolError("action=supersede needs superseded_by: the id of the memory that replaces this one.")
            m = mem.supersede(id, superseded_by, reason=reason, by=by)
        elif superseded_by:
            raise ToolError("superseded_by is only for action=supersede.")
        elif action == "validate":
            m = mem.validate(id, reason=reason, by=by)
        elif action == "activate":
            m = mem.activate(id, reason=reason, by=by)
        else:
            m = mem.deprecate(id, reason=reason, by=by)
        return update_out(m)

    @server.tool(title="Delete a memory for good", annotations=DESTRUCTIVE)
    @edge
    def recallite_forget(
        id: Annotated[str, Field(description="The memory to delete.")],
        ctx: Context,
        orphans: Annotated[Literal["report", "remove"], Field(description="Memories that cited only this turn: report them (default) or remove them too.")] = "report",
        vacuum: Annotated[bool, Field(description="Also scrub the text from the file (slower).")] = False,
        roots: RootsArg = None,
    ) -> ForgetOut:
        """Delete a memory for good, only when the user asks. To retire a wrong memory use
        recallite_update action=deprecate."""
        st = state_of(ctx, roots)
        st.guard_memories(ctx, [id])
        r = st.engine.forget(id, vacuum=vacuum, orphans=orphans)
        return ForgetOut(id=id, deleted=r.deleted, orphans=r.orphans, removed=r.removed)

    @server.tool(title="Memory health", annotations=READ_ONLY)
    @edge
    def recallite_stats(
        ctx: Context,
        scope: Annotated[Optional[str], Field(description="Count one scope only.")] = None,
        roots: RootsArg = None,
    ) -> StatsOut:
        """The active scope and why, counts by type, status and source, feedback, tokens saved."""
        st = state_of(ctx, roots)
        named = scope
        if scope:
            st.check_scope_access(ctx, scope)
        elif st.settings.isolate_scopes:
            scope = st.active_scope(ctx).scope
        out = stats_out(st, scope, st.active_scope(ctx))
        out.hint = st.scope_hint(ctx, named, bool(out.memories)) if named else None  # a misspelt scope counts 0
        return out

    @server.tool(title="Link two memories", annotations=WRITES)
    @edge
    def recallite_relate(
        from_id: Annotated[str, Field(description="The memory the link starts from.")],
        to_id: Annotated[str, Field(description="The memory it points to.")],
        relation: Annotated[Literal["contradicts", "supports", "derived_from", "supersedes", "causes", "requires"], Field(description="How from_id relates to to_id.")],
        ctx: Context,
        roots: RootsArg = None,
    ) -> RelateOut:
        """Link two memories. contradicts: both get a warning and lose confidence (it replaces a
        supports link between them); supports / derived_from: the target gains confidence (supports
        is refused while they contradict); supersedes: the target is retired."""
        st = state_of(ctx, roots)
        st.guard_memories(ctx, [from_id, to_id])
        rel = st.engine.relate(from_id, to_id, relation)
        return RelateOut(
            relation=RelationOut(id=rel.id, from_id=rel.from_id, to_id=rel.to_id, type=rel.type, confidence_effect=rel.confidence_effect,
                                 replaced=rel.replaced),
            from_memory=CountsOut(**st.engine.relation_counts(rel.from_id).model_dump()),
            to_memory=CountsOut(**st.engine.relation_counts(rel.to_id).model_dump()),
        )
