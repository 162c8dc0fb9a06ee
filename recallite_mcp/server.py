"""The MCP server: builds it (lifespan, the app state, the tool groups, resources and the
prompt) and puts this project's edge around the SDK's: one-line argument errors, markdown text
beside the structured result, lean advertised schemas. It only translates; the engine
(recallite_core) does the work, the tools live in recallite_mcp.tools."""

from __future__ import annotations

import difflib
import json
import logging
import sys
import threading
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from types import MappingProxyType
from typing import Any, Optional

import anyio
from mcp.server import MCPServer, ServerRequestContext
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError, UnexpectedToolError
from mcp_types import CallToolResult, InputRequiredResult, NotificationParams, TextContent
from pydantic import ValidationError

from recallite_core import Recallite, RecalliteError
from recallite_core.errors import MemoryNotFoundError

from . import __version__
from .app import AppState, open_memory, state_of, warm
from .arguments import compact_schema, one_line, unknown
from .render import render
from .rules import agent_rules
from .schemas import MemoryOut
from .sessions import connection_key
from .settings import Settings
from .tools import ADVANCED, ADVANCED_CHOICES, EXTRA_TOOLS, register_tools
from .tools.common import not_found
from .tools.curation import stats_out

log = logging.getLogger("recallite.server")

INSTRUCTIONS = (
    "Persistent memory that learns from outcomes. At the start of a task call recallite_context with the task "
    "and `task`, a short name for that kind of job, the same each time; "
    "when you learn a durable rule, preference, lesson or fix call recallite_remember; when the task ends call "
    "recallite_feedback with success/failure and the memory ids you used."
)

WARMUP_DELAY_S = 1.0


class RecalliteServer(MCPServer):
    """MCPServer with this project's edge: one-line argument errors, markdown text beside the
    structured result, lean advertised schemas, a pointer to --tools all for the extra tools."""

    def lean_schemas(self, all_tools: bool) -> None:
        """Advertise compact input schemas: no titles or null branches; without --tools all, the
        ADVANCED parameters are left out of the list (still accepted when sent)."""
        self.hidden_choices = {} if all_tools else ADVANCED_CHOICES
        for tool in self._tool_manager.list_tools():  # no public hook in mcp 2.3
            schema = compact_schema(tool.parameters)
            if not all_tools:
                for name in ADVANCED.get(tool.name, ()):
                    schema["properties"].pop(name, None)
                self.hide_choices(tool.name, schema)
            tool.parameters = schema
            tool.description = " ".join((tool.description or "").split())
            if tool.fn_metadata.output_schema is not None:
                tool.fn_metadata.output_schema = compact_schema(tool.fn_metadata.output_schema, nulls=True)
                tool.__dict__.pop("output_schema", None)  # a cached_property of Tool

    hidden_choices: Mapping[str, dict[str, set[str]]] = MappingProxyType({})  # until lean_schemas sets it

    def hide_choices(self, tool: str, schema: dict) -> None:
        """Leave the values advertised only with --tools all out of a schema (the list, errors)."""
        for name, hidden in self.hidden_choices.get(tool, {}).items():
            prop = schema.get("properties", {}).get(name, {})
            if "enum" in prop:
                prop["enum"] = [v for v in prop["enum"] if v not in hidden]

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Optional[Context] = None
                        ) -> CallToolResult | InputRequiredResult:
        tool = self._tool_manager.get_tool(name)
        if tool is None and name in EXTRA_TOOLS:
            raise ToolError(f"{name} is one of the extra tools, off on this server: start it with --tools all "
                            "(or RECALLITE_TOOLS=all).")
        if tool is None:  # the SDK's own answer names no tool that exists
            offered = sorted(t.name for t in self._tool_manager.list_tools())
            stem = {o.removeprefix("recallite_"): o for o in offered}  # the shared prefix made every name "close"
            near = [stem[n] for n in difflib.get_close_matches(name.removeprefix("recallite_"), list(stem), n=1)]
            raise ToolError(f"Unknown tool {name!r}{f'; did you mean {near[0]}?' if near else '.'} "
                            f"This server offers {', '.join(offered)}.")
        if tool is not None:
            fields = tool.fn_metadata.arg_model.model_fields
            accepted = {f.alias or n for n, f in fields.items()} | set(fields)
            extra = set(arguments or {}) - accepted
            if extra:
                raise ToolError(unknown(name, extra, tool.parameters.get("properties", {})))
        try:
            result = await super().call_tool(name, arguments, context)
        except UnexpectedToolError:
            raise
        except ToolError as exc:
            if tool is not None and isinstance(exc.__cause__, ValidationError):
                schema = tool.fn_metadata.arg_model.model_json_schema()
                self.hide_choices(name, schema)  # name only what this server offers
                raise ToolError(one_line(name, exc.__cause__, schema)) from exc.__cause__
            prefix = f"Error executing tool {name}: "  # the SDK's; the tool's name is enough
            if str(exc).startswith(prefix):
                raise ToolError(f"{name}: {str(exc)[len(prefix):]}") from exc.__cause__
            raise
        finally:
            st = getattr(getattr(context, "request_context", None), "lifespan_context", None) if context else None
            if isinstance(st, AppState):
                st.end_request(context)
        if isinstance(result, CallToolResult) and not result.is_error and isinstance(result.structured_content, dict):
            try:
                text = render(name, result.structured_content)
            except Exception:  # a rendering slip must not cost the call: the JSON text stays
                log.exception("Could not render the result of %s as text", name)
            else:
                result.content = [TextContent(type="text", text=text)]
        return result


def compact_json(data: dict[str, Any]) -> str:
    """A resource's JSON as a model reads it: one line, no empty fields (tokens are the user's money)."""
    return json.dumps({k: v for k, v in data.items() if v not in ([], {}, "")}, separators=(",", ":"),
                      ensure_ascii=False)


def build_server(settings: Settings | None = None, *, memory: Recallite | None = None) -> MCPServer:
    """The MCP server. ``memory`` lets a caller share an already open engine (tests, embedding)."""
    settings = settings or Settings()
    holder: dict[str, AppState] = {}

    @asynccontextmanager
    async def lifespan(app: MCPServer) -> AsyncIterator[AppState]:
        owned = memory is None
        mem, open_error = memory, None
        if mem is None:
            try:
                mem = open_memory(settings)
            except RecalliteError as exc:
                # Keep serving: every tool call then answers with this message, so the user sees
                # what is wrong with the file (and what to do) in the chat, not in a client log.
                open_error = str(exc)
                log.error("recallite-mcp cannot open its database: %s", exc)
        state = AppState(memory=mem, settings=settings, open_error=open_error)
        if mem is not None and settings.warm_embedder:
            # A short delay keeps the model import from competing with the handshake for the GIL.
            timer = threading.Timer(WARMUP_DELAY_S, warm, args=(state,))
            timer.name, timer.daemon = "recallite-embedder-warmup", True
            timer.start()
        else:
            state.embedder_ready.set()
        holder["state"] = state
        try:
            yield state
        finally:
            holder.pop("state", None)
            if owned and mem is not None:
                mem.close()

    server = RecalliteServer(
        settings.server_name, version=__version__, instructions=INSTRUCTIONS, lifespan=lifespan,
        log_level=settings.log_level.upper(),  # type: ignore[arg-type]
    )

    async def on_roots_changed(ctx: ServerRequestContext, params: NotificationParams) -> None:
        st = holder.get("state")
        if st is not None:
            st.roots_changed(connection_key(ctx.session, ctx.protocol_version))
            log.info("Client roots changed; the scope is decided again on the next call")

    server._lowlevel_server.add_notification_handler(  # no public hook in mcp 2.3
        "notifications/roots/list_changed", NotificationParams, on_roots_changed
    )

    register_tools(server, settings.tools == "all")

    @server.resource("recallite://stats", name="stats", title="Memory stats", mime_type="application/json")
    def stats_resource() -> str:
        st = holder.get("state")
        if st is None or st.memory is None:
            raise ResourceNotFoundError(st.open_error if st is not None and st.open_error else "The memory store is not open.")
        return compact_json(stats_out(st, None, next(iter(st.scopes.values()), None)).model_dump(mode="json", exclude_none=True))

    @server.resource("recallite://memory/{memory_id}", name="memory", title="A memory by id", mime_type="application/json")
    def memory_resource(memory_id: str, ctx: Context) -> str:
        try:
            st = state_of(ctx)
            m = st.engine.get(memory_id)
            if st.settings.isolate_scopes and m.scope not in st.allowed_scopes(ctx):
                raise MemoryNotFoundError(f"No memory {memory_id}.")  # as if missing: no hint it exists elsewhere
            return compact_json(MemoryOut.of(m, 0, len(m.content) or 1).model_dump(mode="json", exclude_none=True))
        except MemoryNotFoundError as exc:
            raise ResourceNotFoundError(not_found(exc)) from exc
        except (RecalliteError, ToolError) as exc:
            raise ResourceNotFoundError(str(exc)) from exc

    @server.prompt(name="recallite_rules", title="Recallite agent rules",
                   description="How and when an agent should use the recallite memory tools.")
    def recallite_rules() -> str:
        return agent_rules()

    server.lean_schemas(settings.tools == "all")
    return server


def run_stdio(settings: Settings) -> None:
    build_server(settings).run()


HTTP_PATH = "/mcp"  # the SDK's default endpoint of streamable HTTP


def http_url(host: str, port: int, path: str = HTTP_PATH) -> str:
    """The URL a client connects to (an IPv6 address in brackets)."""
    return f"http://{f'[{host}]' if ':' in host else host}:{port}{path}"


def run_http(settings: Settings, host: str = "127.0.0.1", port: int = 8765) -> None:
    anyio.run(_serve_http, build_server(settings), host, port)


async def _serve_http(server: MCPServer, host: str, port: int) -> None:
    """What MCPServer.run("streamable-http") does, with a uvicorn server that says where it listens:
    the SDK's own run prints nothing at the default log level, so a user could not tell it was up."""
    import uvicorn

    class Announced(uvicorn.Server):
        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets)
            if self.started:  # bound and listening (a taken port exits inside startup instead)
                bound = self.servers[0].sockets[0].getsockname()[1] if self.servers else port  # port 0: the one picked
                print(f"recallite-mcp: serving MCP (streamable HTTP) at {http_url(host, bound)}",
                      file=sys.stderr, flush=True)

    app = server.streamable_http_app(streamable_http_path=HTTP_PATH, host=host)
    await Announced(uvicorn.Config(app, host=host, port=port, log_level=server.settings.log_level.lower())).serve()


__all__ = ["build_server", "RecalliteServer", "AppState", "open_memory", "run_stdio", "run_http"]
