import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Tests run against the checkout even before `pip install -e .`.
for p in (ROOT / "core", ROOT):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

from recallite_core import Recallite  # noqa: E402


@pytest.fixture
def mem():
    m = Recallite.open(None, embedder="hash")
    yield m
    m.close()


@pytest.fixture
def db_path(tmp_path):
    return str(tmp_path / "agent-memory.db")


@pytest.fixture
def file_mem(db_path):
    m = Recallite.open(db_path, embedder="hash")
    yield m
    m.close()


@pytest.fixture
def anyio_backend():
    """The MCP tests' async backend (the SDK runs on anyio): asyncio only, for every test module."""
    return "asyncio"

# One throwaway PostgreSQL + pgvector for the whole session (issue 17), started only when a test
# asks for `postgres_url` / `postgres_db_url`: tests/postgres_server.py imports no driver until then.
# Defined here, not imported per module, so that the test modules share one server.
from tests.postgres_server import postgres_db_url, postgres_url  # noqa: E402,F401

# Both storage backends (issue 17): `backend_mem` is a Recallite on SQLite (in memory, like `mem`)
# and on PostgreSQL (a fresh database per test); `backend_location` is what Recallite.open takes to
# reach the same store twice (a SQLite file, or the PostgreSQL URL). The postgres parameter skips
# with the server fixture's stated reason only where the wheel cannot start, and fails instead
# under RECALLITE_POSTGRES_TEST=required (CI).
BACKENDS = ["sqlite", "postgres"]


@pytest.fixture(params=BACKENDS)
def backend(request):
    return request.param


@pytest.fixture
def backend_location(request, backend, tmp_path):
    if backend == "postgres":
        return request.getfixturevalue("postgres_db_url")
    return str(tmp_path / "agent-memory.db")


@pytest.fixture
def backend_url(request, backend):
    """None (SQLite in memory) or the URL of a fresh PostgreSQL database."""
    return request.getfixturevalue("postgres_db_url") if backend == "postgres" else None


@pytest.fixture
def backend_mem(backend_url):
    m = Recallite.open(backend_url, embedder="hash")
    yield m
    m.close()
