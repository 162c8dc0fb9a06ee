"""The state one MCP server keeps beside its engine: the open engine (or why it could not be
opened), the settings, per client session the retrievals awaiting feedback and the active
project scope, and the rules that map a tool call to scopes. Tool groups (recallite_mcp.tools)
get it with ``state_of``; the server (recallite_mcp.server) creates it in its lifespan. Imports
the core, the SDK and render, scoping, sessions and settings; never the server or a tool group."""

import logging
import threading
import warnings
from dataclasses import dataclass, field
from typing import Annotated, Any, Optional, cast

from mcp.server.mcpserver import Context, ListRoots, Resolve
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ListRootsResult
from mcp_types.version import is_version_at_least

from recallite_core import Recallite, RecalliteConfig
from recallite_core.errors import MemoryNotFoundError
from recallite_core.text.validation import Limits

from .render import empty_scope_hint, new_scope_hint
from .scoping import ScopeDecision, level_for
from .sessions import PROCESS_SESSION, AwaitingFeedback, connection_key
from .settings import Settings

log = logging.getLogger("recallite.server")


def session_key(ctx: Context) -> str:
    """The client session a request belongs to (sessions.connection_key)."""
    return connection_key(ctx.session, getattr(ctx.request_context, "protocol_version", None))


def scope_key(ctx: Context) -> Optional[str]:
    """Whose scope decision a request shares: its client session's, or None when this client
    cannot be told apart from others (stateless HTTP): then it is decided for the request alone."""
    key = session_key(ctx)
    if key == PROCESS_SESSION and getattr(ctx.request_context, "request", None) is not None:
        return None
    return key


def working_session(ctx: Context) -> str:
    """The working-memory session of this client (see sessions.py): one per connection in the
    classic protocol era, one per server process in the stateless era."""
    return session_key(ctx)


def offers_roots(ctx: Context) -> bool:
    caps = ctx.client_capabilities
    return caps is not None and getattr(caps, "roots", None) is not None


ISOLATED = "Cross-scope access is disabled on this server (--isolate-scopes)"


def scope_denied(scope: str, project: str, user: str) -> ToolError:
    """For a `scope` argument naming another project (the caller's own word, so it is named back)."""
    return ToolError(
        f"{ISOLATED}: scope {scope!r} is neither the active project scope {project!r} nor the user scope "
        f"{user!r}. Omit `scope` to use the active project."
    )


@dataclass
class AppState:
    """One server's state, created by its lifespan and shared by every request it serves."""

    memory: Optional[Recallite]  # None when the database could not be opened (see open_error)
    settings: Settings
    embedder_ready: threading.Event = field(default_factory=threading.Event)
    # Per client session: retrievals served and not yet given feedback. recallite_feedback
    # without retrieval_id may only mean one of the caller's own (never "the last one this
    # server served", which over HTTP may be another client's).
    awaiting: AwaitingFeedback = field(default_factory=AwaitingFeedback)
    # Active scope per client session (stdio has one; HTTP may have several), dropped when the
    # client says its roots changed.
    scopes: dict[str, ScopeDecision] = field(default_factory=dict)
    # Decided for one request only (a client that cannot be told apart from others: stateless HTTP).
    request_scopes: dict[int, ScopeDecision] = field(default_factory=dict)
    scope_lock: threading.Lock = field(default_factory=threading.Lock)
    open_error: Optional[str] = None

    @property
    def engine(self) -> Recallite:
        """The open engine; tools reach it only through ``state_of``, which refuses a server
        without its database."""
        if self.memory is None:
            raise self.closed()
        return self.memory

    def closed(self) -> ToolError:
        return ToolError(f"{self.open_error} The server is running without its database: fix this, then restart it.")

    def served(self, key: Optional[str], retrieval_id: Optional[str], query: Optional[str] = None,
               found: bool = True, task: bool = True) -> None:
        """A retrieval was served to this client session and awaits its feedback. ``task``: False
        for a search made on the way (recall); ``found``: False when it served nothing."""
        if key is not None and retrieval_id:
            self.awaiting.add(key, retrieval_id, query, task, found)

    # -- scopes ------------------------------------------------------------------------------------------
    def known_scope(self, ctx: Context) -> Optional[ScopeDecision]:
        key = scope_key(ctx)
        with self.scope_lock:
            if key is None:
                return self.request_scopes.get(id(ctx.request_context))
            return self.scopes.get(key)

    def active_scope(self, ctx: Context, roots: Optional[ListRootsResult] = None) -> ScopeDecision:
        """This client's project scope: decided on its first call (from the roots it offers, see
        scoping.py), then kept until it says its roots changed."""
        decision = self.known_scope(ctx)
        if decision is None:
            uris = [str(r.uri) for r in roots.roots] if roots is not None else None
            decision = self.settings.scope_decision(roots=uris, roots_offered=offers_roots(ctx))
            key = scope_key(ctx)
            with self.scope_lock:
                if key is None:
                    self.request_scopes[id(ctx.request_context)] = decision
                else:
                    self.scopes[key] = decision
            log.info("Active scope %s (%s: %s)", decision.scope, decision.rule, decision.reason)
        return decision

    def end_request(self, ctx: Any) -> None:
        """A request's own scope decision (stateless HTTP) ends with it."""
        if self.request_scopes:
            with self.scope_lock:
                self.request_scopes.pop(id(ctx.request_context), None)

    def roots_changed(self, session_key: str) -> None:
        with self.scope_lock:
            self.scopes.pop(session_key, None)

    def allowed_scopes(self, ctx: Context) -> tuple[str, str]:
        return self.active_scope(ctx).scope, self.settings.user_scope

    def check_scope_access(self, ctx: Context, scope: str) -> None:
        if self.settings.isolate_scopes and scope not in self.allowed_scopes(ctx):
            raise scope_denied(scope, *self.allowed_scopes(ctx))

    def read_scopes(self, ctx: Context, scope: Optional[str]) -> list[str]:
        """What a recall searches: the named scope or the active project, plus the user scope."""
        project, user = self.allowed_scopes(ctx)
        if scope:
            self.check_scope_access(ctx, scope)
            return list(dict.fromkeys([scope, user]))
        return [project, user]

    def known_scopes(self, ctx: Context, scope: str) -> dict[str, int] | None:
        """None when ``scope`` holds a memory; else the scopes that do, with their counts, most first:
        with --isolate-scopes only this client's (other projects' names are not its to see)."""
        known = self.engine.empty_scope(scope)
        if known is not None and self.settings.isolate_scopes:
            allowed = self.allowed_scopes(ctx)
            known = {name: n for name, n in known.items() if name in allowed}
        return known

    def scope_hint(self, ctx: Context, scope: str, found: bool) -> str | None:
        """For a search that found nothing in a scope that holds no memory at all (a misspelt or
        never-used name): one line naming the scopes that do. None otherwise; the store is asked
        only when nothing was found."""
        known = None if found else self.known_scopes(ctx, scope)
        return None if known is None else empty_scope_hint(scope, known)

    def new_scope_hint(self, ctx: Context, scope: str) -> str | None:
        """For a write into a scope that holds no memory yet: one line naming the scopes that do, so a
        misspelt scope is noticed (the write still goes ahead). None for a scope in use."""
        known = self.known_scopes(ctx, scope)
        return None if known is None else new_scope_hint(scope, known)

    def search_scopes(self, ctx: Context, scope: str | None, include_teams: bool) -> list[str]:
        """read_scopes, plus with ``include_teams`` the team scopes of the searched project: never
        the user scope's, which every project searches (a team it had joined reached them all)."""
        scopes = self.read_scopes(ctx, scope)
        if include_teams:
            scopes = list(dict.fromkeys([*scopes, *self.engine.teams(scopes[0])]))
        return scopes

    def write_scope(self, ctx: Context, scope: Optional[str], memory_type: str, level: Optional[str]) -> str:
        if scope:
            self.check_scope_access(ctx, scope)
            return scope
        project, user = self.allowed_scopes(ctx)
        return user if level_for(memory_type, level) == "user" else project

    def guard_memories(self, ctx: Context, ids: list[str]) -> None:
        """With --isolate-scopes, ids of another project's memories are refused as if they did not
        exist: saying they belong to another project would tell this client they do."""
        if not self.settings.isolate_scopes:
            return
        allowed = self.allowed_scopes(ctx)
        for m in self.engine.get_many(ids):
            if m.scope not in allowed:
                raise MemoryNotFoundError(f"No memory {m.id}.")

    def guard_retrieval(self, ctx: Context, retrieval_id: str | None) -> None:
        """With --isolate-scopes, another project's retrieval is refused: its feedback (or the
        memories opened from it) would move that project's memories."""
        if not self.settings.isolate_scopes or not retrieval_id:
            return
        project, user = self.allowed_scopes(ctx)
        allowed = {project, user, *self.engine.teams(project)}
        entry, _ = self.engine.inspection().retrieval(retrieval_id)
        if any(scope not in allowed for scope in entry.scopes):  # which one is not this client's to see
            raise ToolError(f"{ISOLATED}: {entry.id} searched another project; use this project's retrievals only.")

    # -- who asks ----------------------------------------------------------------------------------------
    def client_source(self, source: str) -> str:
        """What a client's claimed source is recorded (or acts) as. The one place this is decided.

        A client's "user" or "system" counts as "agent" unless the server runs with
        --trust-client-sources: any text that reached the model (a web page, a file, a tool result)
        can claim "the user said", so the claim alone earns medium trust; facts and lessons are
        validated at once, preferences and constraints wait as candidates. A user's own rule is not
        stuck there: the agent validates it with recallite_update action=validate (the remember hint
        and the agent rules say when), and a candidate that keeps helping is validated by feedback.
        --trust-client-sources is for setups whose client never relays outside text as the user."""
        if source in ("user", "system") and not self.settings.trust_client_sources:
            return "agent"
        return source

    def default_retrieval(self, session: Optional[str]) -> str:
        """The retrieval a feedback without retrieval_id is about: the one awaiting feedback in the
        caller's session, or a one-line error saying what to pass."""
        if session is None:
            raise ToolError("This HTTP connection has no session, so the server cannot tell your retrievals from other "
                            "clients': pass retrieval_id (the one recallite_context returned).")
        waiting = self.awaiting.pending(session)
        if not waiting:
            raise ToolError("No retrieval of this session awaits feedback: pass retrieval_id "
                            "(call recallite_context first, then pass its retrieval_id).")
        # The one task that served something, else the one retrieval that did, else the one task,
        # else the one retrieval: a context that found nothing, or a search made on the way, does
        # not make the task ambiguous.
        for pool in ([w for w in waiting if w.task and w.found], [w for w in waiting if w.found],
                     [w for w in waiting if w.task], waiting):
            if len(pool) == 1:
                return pool[0].retrieval_id
            if pool:
                break
        listed = ", ".join(f'{w.retrieval_id} "{w.query}"' if w.query else w.retrieval_id for w in pool[:5])
        raise ToolError(f"{len(pool)} retrievals of this session await feedback; pass retrieval_id, one of "
                        f"(newest first): {listed}.")


def lifespan_state(ctx: Context) -> AppState:
    """The AppState the server's lifespan yielded (the SDK types it as a plain dict)."""
    return cast(AppState, ctx.request_context.lifespan_context)


async def client_roots(ctx: Context) -> Any:
    """Resolver of every tool's hidden `roots` parameter: the client's workspace roots, asked once
    per client session and only while its scope is undecided. Protocol 2026-07-28 on, the SDK
    asks through an input-required round; before it, a roots/list request mid-call (a client
    that fails to answer leaves the scope to the other rules)."""
    st = lifespan_state(ctx)
    if not offers_roots(ctx) or st.known_scope(ctx) is not None:
        return None
    version = getattr(ctx.request_context, "protocol_version", None)
    if version and is_version_at_least(version, "2026-07-28"):
        return ListRoots()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # roots are deprecated in the newest protocol era
            return await ctx.session.list_roots()
    except Exception as exc:  # client error, timeout, no back channel
        log.info("Could not list the client's roots (%s); using the other scope rules", exc)
        return None


RootsArg = Annotated[Optional[ListRootsResult], Resolve(client_roots)]


def state_of(ctx: Context, roots: Optional[ListRootsResult] = None) -> AppState:
    """The server's state for a tool call; refuses the call when the database is not open."""
    st = lifespan_state(ctx)
    if st.memory is None:
        raise st.closed()
    if roots is not None:
        st.active_scope(ctx, roots)  # the client's roots decide this session's scope
    return st


def open_memory(settings: Settings) -> Recallite:
    limits = Limits(max_content_bytes=settings.max_content_bytes, max_metadata_bytes=settings.max_metadata_bytes,
                    max_tags=settings.max_tags)
    config = RecalliteConfig(limits=limits, default_scope=settings.default_scope, redact_secrets=settings.redact_secrets)
    return Recallite.open(settings.db_path, embedder=settings.embedder, config=config)


def warm(state: AppState) -> None:
    """Load the embedding model off the request path, so start-up answers at once."""
    try:
        load = getattr(state.engine.embedder, "load", None)
        if callable(load):
            load()
    except Exception:  # the first recall will raise a proper error; keep serving
        log.exception("Embedding model failed to load in the background")
    finally:
        state.embedder_ready.set()


def embedder_loaded(memory: Recallite) -> bool:
    loaded = getattr(memory.embedder, "loaded", None)
    return bool(loaded() if callable(loaded) else True if loaded is None else loaded)


__all__ = ["AppState", "RootsArg", "state_of", "open_memory", "warm", "embedder_loaded", "working_session",
           "session_key", "scope_key", "offers_roots"]
