"""PostgreSQL driver errors as one line that says what went wrong and what to do next.

The SQLite store turns ``sqlite3`` errors into a ``StoreError`` naming the file and a next step
(``storage/sqlite/store.py: explain``); this is the same for psycopg. It never imports psycopg:
it reads the error's SQLSTATE and, for the errors libpq raises before a session exists (refused
connection, unknown host, bad password, missing database, SSL), which carry no SQLSTATE, the
first line of its message. Every message shows the URL masked and has the password, wherever it
appears, replaced by ``***``.
"""

from __future__ import annotations

import re

from recallite_core.errors import StoreError
from recallite_core.storage.postgres.driver import masked

#: SQLSTATE -> what to do next. Classes (the first two characters) are looked up after the code.
_BY_SQLSTATE = {
    "3D000": "Create the database (createdb NAME) or fix its name in the URL.",
    "28P01": "Check the user and password (keep the password out of the URL with PGPASSWORD or ~/.pgpass).",
    "28000": "Check the user name, or ask the server's admin to allow this role from here (pg_hba.conf).",
    "42501": "Grant this role what recallite needs (docs/postgres.md, 'Least-privilege roles'), or use the owner's role.",
    "40001": "Another client changed the same rows at the same moment; nothing of this call was kept: retry it.",
    "40P01": "It deadlocked with another client and was cancelled; nothing of this call was kept: retry it.",
    "55P03": "Another recallite process held the write lock for too long; retry shortly.",
    "57014": "The server cancelled the statement (statement_timeout or an admin); retry, or raise the timeout.",
    "53300": "The server has no free connection slots: close idle clients, raise max_connections, or put a pooler "
             "(pgbouncer) in front.",
    "25006": "This server is read-only (a hot-standby replica?): point --db at the primary for writes.",
    "57P03": "The server is starting up, shutting down or recovering; retry in a moment.",
    "58P01": "A file the server needs is missing (pgvector not installed?): install pgvector on the server.",
    "0A000": "The server lacks a feature recallite needs: PostgreSQL >= 14 with pgvector >= 0.8.",
}
_BY_CLASS = {
    "08": "The connection to the server was lost (restart, failover or idle timeout): retry; the store reconnects by itself.",
    "57": "The server ended the session (restart or an admin): retry; the store reconnects by itself.",
    "53": "The server is out of resources (disk, memory or connections): ask its admin.",
    "40": "It conflicted with another client; nothing of this call was kept: retry it.",
}
#: Patterns of libpq's own messages (no SQLSTATE) -> what to do next. First match wins.
_BY_MESSAGE = [
    (r"password authentication failed|no password supplied|authentication failed",
     _BY_SQLSTATE["28P01"]),
    (r"database \".*\" does not exist", _BY_SQLSTATE["3D000"]),
    (r"role \".*\" does not exist", "Check the user name in the URL, or create the role (CREATE ROLE ... LOGIN)."),
    (r"no pg_hba\.conf entry", _BY_SQLSTATE["28000"]),
    (r"failed to resolve host|could not translate host name|name or service not known",
     "Check the host name in the URL."),
    (r"connection refused|no such file or directory|is the server running",
     "Check that the server is running and the URL's host and port (or socket folder) are right."),
    (r"timeout expired|timed out", "The server did not answer in time: check the host, port and firewall."),
    (r"invalid sslmode|ssl|certificate",
     ("Check the TLS settings: sslmode (disable, allow, prefer, require, verify-ca, verify-full), sslrootcert, "
      "and whether the server has TLS enabled.")),
    (r"too many clients|remaining connection slots", _BY_SQLSTATE["53300"]),
    ((r"server closed the connection|terminating connection|connection is (closed|lost|bad)"
      r"|consuming input failed|server conn crashed|ssl syscall"), _BY_CLASS["08"]),
    (r"invalid (uri|connection option|integer value)|missing \"=\"|invalid percent-encoded",
     "Fix the URL: postgresql://user@host:5432/dbname?sslmode=require (see docs/postgres.md)."),
]
_NO_VECTOR_TYPE = ("The `vector` extension is in a schema this connection does not search: put that schema on the "
                   "search_path too (options=-csearch_path=recallite,public) or CREATE EXTENSION vector SCHEMA recallite.")
_LOST_AT_COMMIT = ("The connection was lost while committing, so the write may or may not have been kept: "
                   "check (recallite-mcp list / stats) before repeating it.")


def is_driver_error(exc: BaseException) -> bool:
    """True for an exception raised by psycopg (checked by module, so psycopg is not imported)."""
    return any(k.__module__.split(".")[0] == "psycopg" for k in type(exc).__mro__)


def reason(exc: BaseException, secret: str | None = None) -> str:
    """The driver's message on one line, without libpq's repeated prefix and the server's
    CONTEXT / HINT lines (the hint below replaces them), password masked."""
    # libpq indents its own advice ("\tIs the server running on that host...?"): the hint replaces it.
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip() and not ln.startswith("\t")]
    keep = [ln for ln in lines if not ln.startswith(("CONTEXT:", "DETAIL:", "HINT:", "LINE ", "^"))] or lines or [type(exc).__name__]
    text = " ".join(" ".join(keep).split())
    text = re.sub(r"^connection failed: ", "", text)
    text = re.sub(r"\bFATAL:\s+", "", text)
    text = masked(text)
    if secret:
        text = text.replace(secret, "***")
    return text.rstrip(".")


def next_step(exc: BaseException, doing: str = "") -> str:
    """What to do about ``exc``: by SQLSTATE, then its class, then libpq's message."""
    sqlstate = str(getattr(exc, "sqlstate", None) or "")
    lost = sqlstate[:2] in ("08", "57") and sqlstate not in ("57014", "57P03")
    text = str(exc).lower()
    if 'type "vector" does not exist' in text:
        return _NO_VECTOR_TYPE
    if not sqlstate:
        for pattern, hint in _BY_MESSAGE:
            if re.search(pattern, text):
                lost = hint == _BY_CLASS["08"]
                if not (lost and doing == "committing"):
                    return hint
                break
    if lost and doing == "committing":
        return _LOST_AT_COMMIT
    return _BY_SQLSTATE.get(sqlstate) or _BY_CLASS.get(sqlstate[:2]) or (
        "See the server's log for details; nothing of this call was kept." if sqlstate else
        "Check the URL and that the server is reachable.")


def explain(exc: BaseException, where: str | None, doing: str, secret: str | None = None) -> StoreError:
    """``exc`` (a psycopg error) as a one-line StoreError: the server (masked), the step that
    failed, the driver's reason, and what to do next."""
    head = f"PostgreSQL {masked(where)}" if where else "PostgreSQL"
    return StoreError(f"{head}: {doing} failed: {reason(exc, secret)}. {next_step(exc, doing)}")


__all__ = ["explain", "is_driver_error", "next_step", "reason"]
