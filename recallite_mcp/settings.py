"""Server settings: flags, then environment variables, then defaults."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from recallite_core.storage import is_postgres_url, masked_location

APP_NAME = "recallite-mcp"

ENV = {
    "db": "RECALLITE_DB",
    "scope": "RECALLITE_SCOPE",
    "log_level": "RECALLITE_LOG_LEVEL",
    "embedder": "RECALLITE_EMBEDDER",
    "trust_client_sources": "RECALLITE_TRUST_CLIENT_SOURCES",
    "max_content_bytes": "RECALLITE_MAX_CONTENT_BYTES",
    "warm_embedder": "RECALLITE_WARM_EMBEDDER",
    "isolate_scopes": "RECALLITE_ISOLATE_SCOPES",
    "redact_secrets": "RECALLITE_REDACT_SECRETS",
    "max_metadata_bytes": "RECALLITE_MAX_METADATA_BYTES",
    "max_tags": "RECALLITE_MAX_TAGS",
    "tools": "RECALLITE_TOOLS",
}

TOOL_SETS = ("core", "all")


def default_db_path() -> str:
    """The per-user database: the platform's app-data folder (e.g. ~/.local/share/recallite-mcp)."""
    from platformdirs import user_data_dir

    return str(Path(user_data_dir(APP_NAME, appauthor=False)) / "memory.db")


def ensure_db_parent(path: str) -> None:
    """Create the default database's folder (0700). Only for the default path: a user's own
    --db in a missing folder is an error that names it, not something we silently create."""
    parent = Path(path).expanduser().parent
    if not parent.exists():
        parent.mkdir(parents=True, mode=0o700, exist_ok=True)


def _bool(value: str) -> bool:
    return value.strip().lower() in ("1", "true", "yes", "on")


@dataclass
class Settings:
    db: str | None = None  # None: the per-user default file; ":memory:" for trials
    scope: str | None = None
    log_level: str = "WARNING"
    embedder: str = "default"  # default | onnx | hash
    trust_client_sources: bool = False
    max_content_bytes: int = 64 * 1024
    max_metadata_bytes: int = 16 * 1024
    max_tags: int = 32
    redact_secrets: bool = True  # secrets in memories are stored as [REDACTED:kind]
    warm_embedder: bool = True  # load the model in a background thread at start-up
    isolate_scopes: bool = False  # forbid reading or writing any scope but the active project's and the user's
    user_scope: str = "user"
    tools: str = "core"  # core: the ten tools of the memory loop; all: also conversation, beliefs, history, capture
    scope_origin: str | None = None  # "flag" or "env": where `scope` came from
    server_name: str = "recallite"
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.tools not in TOOL_SETS:
            raise ValueError(f"tools must be one of {', '.join(TOOL_SETS)}, not {self.tools!r} (RECALLITE_TOOLS or --tools).")

    @classmethod
    def load(cls, **flags: Any) -> "Settings":
        """Flags given (not None) win; then RECALLITE_* variables; then defaults."""
        values: dict[str, Any] = {}
        types = {f.name: f.type for f in fields(cls)}
        for name, env in ENV.items():
            raw = os.environ.get(env)
            if raw is None or raw == "":
                continue
            kind = types[name]
            if kind in ("bool", bool):
                values[name] = _bool(raw)
            elif kind in ("int", int):
                values[name] = int(raw)
            else:
                values[name] = raw
        if "scope" in values:
            values["scope_origin"] = "env"
        given = {k: v for k, v in flags.items() if v is not None}
        if "scope" in given:
            given.setdefault("scope_origin", "flag")
        values.update(given)
        return cls(**values)

    @property
    def db_path(self) -> str | None:
        """What the store opens: a file path, a ``postgresql://`` URL, or None for a private
        in-memory store. Show ``db_label`` instead in messages (it masks a password)."""
        if self.db in (":memory:",):
            return None
        if self.db and is_postgres_url(self.db):
            return self.db.strip()  # a PostgreSQL server (docs/postgres.md): passed on as it is
        if self.db:
            return str(Path(self.db).expanduser())
        path = default_db_path()
        ensure_db_parent(path)
        return path

    @property
    def db_label(self) -> str:
        """The database as messages may show it: the file, ":memory:", or a server URL with its
        password masked (``***``)."""
        return masked_location(self.db_path)

    @property
    def is_postgres(self) -> bool:
        return is_postgres_url(self.db)

    def scope_decision(self, roots: list[str] | None = None, cwd: str | None = None, roots_offered: bool = False):
        """The active project scope and the rule that chose it (see scoping.py)."""
        from .scoping import decide_scope

        flag = self.scope if self.scope_origin != "env" else None
        env = self.scope if self.scope_origin == "env" else None
        return decide_scope(roots, flag, env, cwd if cwd is not None else os.getcwd(), roots_offered=roots_offered)

    @property
    def default_scope(self) -> str:
        """The project scope without client roots (CLI commands, and servers whose client has none)."""
        return self.scope_decision().scope
