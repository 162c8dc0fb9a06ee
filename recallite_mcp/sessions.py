"""Which client connection a request belongs to.

The SDK (mcp 2.3) builds a new ServerSession object for every request, so per-client state
(the active scope, working memory) is keyed by the session's underlying connection, held
weakly so a closed connection's entry goes with it. From protocol 2026-07-28 on, requests
carry no connection state: there is one key per server process (a stdio server serves one
client anyway)."""

from __future__ import annotations

import threading
import weakref
from typing import Any, NamedTuple

STATELESS_ERA = "2026-07-28"
PROCESS_SESSION = "mcp"

_lock = threading.Lock()
_counter = [0]
_by_connection: "weakref.WeakKeyDictionary[Any, str]" = weakref.WeakKeyDictionary()


def connection_key(session: Any, protocol_version: str | None) -> str:
    conn = getattr(session, "_connection", None)  # no public handle in mcp 2.3
    if conn is None or (protocol_version or "") >= STATELESS_ERA:
        return PROCESS_SESSION
    with _lock:
        try:
            name = _by_connection.get(conn)
        except TypeError:  # not weak-referenceable
            return PROCESS_SESSION
        if name is None:
            _counter[0] += 1
            name = _by_connection[conn] = f"mcp-{_counter[0]}"
    return name


def feedback_key(session: Any, protocol_version: str | None, request: Any) -> str | None:
    """The client session whose retrievals a feedback without retrieval_id may default to, or
    None when this request cannot be told apart from other clients': an HTTP request without a
    connection of its own (protocol 2026-07-28, stateless HTTP) shares the process key with every
    other HTTP client. stdio and in-process clients are alone on their key."""
    key = connection_key(session, protocol_version)
    if key == PROCESS_SESSION and request is not None:
        return None
    return key


AWAITING_PER_SESSION = 20  # retrievals kept per client session until their feedback
AWAITING_SESSIONS = 1000  # client sessions remembered (least recently served dropped first)


class Awaiting(NamedTuple):
    """A retrieval awaiting feedback: its query (a snippet), whether it started a task (a
    context, not a search made on the way) and whether it served anything."""

    retrieval_id: str
    query: str
    task: bool
    found: bool


class AwaitingFeedback:
    """Per client session, the retrievals it was served (recallite_context, recallite_recall, ...)
    that have not had feedback yet, oldest first, with a short query snippet. Feedback without
    a retrieval_id may only ever mean one of the caller's own; with one, it settles it."""

    def __init__(self, per_session: int = AWAITING_PER_SESSION, sessions: int = AWAITING_SESSIONS):
        self.per_session, self.sessions = per_session, sessions
        self._lock = threading.Lock()
        self._by_session: dict[str, dict[str, Awaiting]] = {}  # insertion-ordered: oldest first

    def add(self, session: str, retrieval_id: str, query: str | None = None, task: bool = True,
            found: bool = True) -> None:
        """``task``: the retrieval started a task (a context), not a search made on the way;
        ``found``: it served something."""
        snippet = " ".join((query or "").split())
        snippet = snippet if len(snippet) <= 40 else snippet[:39] + "…"
        with self._lock:
            waiting = self._by_session.pop(session, None)
            if waiting is None:
                waiting = {}
                while len(self._by_session) >= self.sessions:
                    self._by_session.pop(next(iter(self._by_session)))
            self._by_session[session] = waiting  # most recently served session last
            waiting.pop(retrieval_id, None)
            waiting[retrieval_id] = Awaiting(retrieval_id, snippet, task, found)
            while len(waiting) > self.per_session:
                waiting.pop(next(iter(waiting)))

    def pending(self, session: str) -> list[Awaiting]:
        """The retrievals awaiting feedback in this session, newest first."""
        with self._lock:
            return list(reversed(self._by_session.get(session, {}).values()))

    def settle(self, retrieval_id: str) -> None:
        """It got feedback: no session awaits it any more, nor the searches made after it, on the
        way through its task."""
        with self._lock:
            for waiting in self._by_session.values():
                if retrieval_id not in waiting:
                    continue
                order = list(waiting)
                task = waiting.pop(retrieval_id).task
                for later in order[order.index(retrieval_id) + 1:] if task else ():
                    if not waiting[later].task:
                        del waiting[later]


def awaiting_key(ctx: Any) -> str | None:
    """The session key of a tool call's retrievals awaiting feedback (None: this client cannot be
    told apart from others, so nothing is assumed for it; see feedback_key)."""
    rc = ctx.request_context
    return feedback_key(ctx.session, getattr(rc, "protocol_version", None), getattr(rc, "request", None))
