"""Conversation memory (served with --tools all): recallite_record keeps raw conversation turns
verbatim, with their role, order and time; recallite_why traces a memory back to the turns it
was learned from. Registers them on the server; may import the app state (recallite_mcp.app),
the shared edge (tools.common), schemas and the core, never the server module or another tool
group."""

# No `from __future__ import annotations`: the SDK evaluates the tool signatures, which are the
# schema, against this module.

from typing import Annotated, Optional

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from pydantic import Field

from ..app import RootsArg, state_of
from ..schemas import RecordOut, TurnArg, TurnOut, WhyOut
from .common import READ_ONLY, WRITES, edge

TOOLS = ("recallite_record", "recallite_why")


def register(server: MCPServer) -> None:
    @server.tool(title="Record conversation turns", annotations=WRITES)
    @edge
    def recallite_record(
        session: Annotated[str, Field(min_length=1, description="The conversation's id; use the same one for every turn of a conversation.")],
        turns: Annotated[list[TurnArg], Field(min_length=1, max_length=200, description="One or more turns in the order they happened: role, content, optional timestamp, metadata, category.")],
        ctx: Context,
        scope: Annotated[Optional[str], Field(description="Store in this scope instead of the active project scope.")] = None,
        roots: RootsArg = None,
    ) -> RecordOut:
        """Record what was said, verbatim: raw conversation turns (or events) with their role, order and
        time. Recall finds them later (long turns are searched sentence by sentence) with their
        neighbouring turns; recallite_context with session= shows the last turns and a running summary;
        facts you remember with cites=[turn ids] can be traced back with recallite_why."""
        st = state_of(ctx, roots)
        target = st.write_scope(ctx, scope, "episode", None)
        mems = st.engine.record_turns(
            [{"role": t.role, "content": t.content, "timestamp": t.timestamp, "metadata": t.metadata, "category": t.category}
             for t in turns],
            session=session, scope=target, source={"type": "agent"},
        )
        return RecordOut(session=session, scope=target, turns=[TurnOut.of(m) for m in mems])

    @server.tool(title="Why do you think that? Sources of a memory", annotations=READ_ONLY)
    @edge
    def recallite_why(
        id: Annotated[str, Field(description="The memory to explain, e.g. mem_12.")],
        ctx: Context,
        window: Annotated[int, Field(ge=0, le=10, description="Also return this many neighbouring turns around each source.")] = 0,
        roots: RootsArg = None,
    ) -> WhyOut:
        """The conversation turns a memory came from (its citations, and those of the memories it was
        derived from), in conversation order. Use it when asked why you believe something."""
        st = state_of(ctx, roots)
        st.guard_memories(ctx, [id])
        sources = st.engine.why(id, window=window)
        if st.settings.isolate_scopes:
            allowed = st.allowed_scopes(ctx)
            sources = [m for m in sources if m.scope in allowed]
        return WhyOut(id=id, sources=[TurnOut.of(m) for m in sources])
