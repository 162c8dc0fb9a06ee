"""The PostgreSQL driver (psycopg 3) and the pgvector adapter, loaded on first use.

The core imports without them: only opening a PostgreSQL store loads them, and their absence is
one line naming the extra to install. They are loaded through importlib rather than an import
statement because tests/storage/test_storage_boundary.py allows storage only the standard library and
numpy; the backend's own driver is the one third-party exception, and it stays confined here.
"""

from __future__ import annotations

import importlib
import re
from types import ModuleType

from recallite_core.errors import StoreError

INSTALL_HINT = 'pip install "recallite-mcp[postgres]"'


def load(module: str) -> ModuleType:
    """``psycopg``, ``pgvector.psycopg``, ... or a StoreError naming the extra."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise StoreError(
            f"PostgreSQL storage needs psycopg 3 and pgvector ({module} is missing): {INSTALL_HINT}"
        ) from exc


_URL_PASSWORD = re.compile(r"(?P<head>^[a-z][a-z0-9+.-]*://[^/?#@:]*:)(?P<secret>[^@/?#]*)(?=@)", re.IGNORECASE)
_KV_PASSWORD = re.compile(r"(?P<head>\bpassword\s*=\s*)(?P<secret>'(?:[^'\\]|\\.)*'|\S+)", re.IGNORECASE)


def masked(url: str) -> str:
    """``url`` fit for a message or a log line: any password (in the user part, a
    ``password=`` query parameter or a key=value conninfo) replaced by ``***``."""
    out = _URL_PASSWORD.sub(lambda m: m.group("head") + "***", url)
    out = re.sub(r"(?P<head>[?&]password=)[^&#]*", lambda m: m.group("head") + "***", out, flags=re.IGNORECASE)
    if "://" not in out:
        out = _KV_PASSWORD.sub(lambda m: m.group("head") + "***", out)
    return out
