"""Which client connection a request belongs to.

The SDK (mcp 2.3) builds a new ServerSession object for every request, so per-client state
(the active scope, working memory) is keyed by the session's underlying connection, held
weakly so a closed connection's entry goes with it. From protocol 2026-07-28 on, requests
carry no connection state: there is one key per server process (a stdio server serves one
client anyway)."""

from __future__ import annotations

import threading
import weakref
from typing import Any

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
