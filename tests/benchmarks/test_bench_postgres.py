"""`recallite-mcp bench --db postgresql://...`'s writer phase (issue 17) reports what a remember
costs in CPU, the writers' own and the database server's, beside the rate: the rate moves with the
machine's load, the CPU per remember much less. Only presence and sign are asserted, never a time."""

from __future__ import annotations

from recallite_mcp.benchmarks import backends


def test_the_writer_phase_reports_cpu_per_remember_in_the_writers_and_the_server(postgres_db_url):
    w = backends.writers(postgres_db_url, "hash", 8, processes=2, per_process=3)
    assert w["errors"] == 0 and w["processes"] == 2 and w["per_process"] == 3
    assert w["client_cpu_ms_per_remember"] > 0
    # The test server runs on this machine, so its processes' CPU is readable from /proc.
    assert w["server_cpu_ms_per_remember"] is not None and w["server_cpu_ms_per_remember"] >= 0
    report = backends.format_report({"embedder": "hash", "dims": 8, "cpus": 2, "loadavg_at_start": (1, 1, 1),
                                     "loadavg_at_end": (1, 1, 1), "backends": {"postgres": {"rows": [], "writers": w}}})
    assert "ms in the writers" in report and "ms in the server" in report


def test_the_server_cpu_reader_counts_the_server_processes(postgres_db_url):
    from recallite_core.storage.postgres import PostgresStore

    store = PostgresStore(postgres_db_url)
    try:
        before = store.server_cpu_seconds()
        with store.reading() as s:
            s.memories.count()
        after = store.server_cpu_seconds()
    finally:
        store.close()
    assert before is not None and before > 0 and after is not None and after >= before


def test_the_statement_costs_of_a_recall_name_each_statement_and_leave_the_connection_as_it_was(postgres_db_url):
    from recallite_core import Recallite

    m = Recallite.open(postgres_db_url, embedder="hash", dims=8)
    try:
        m.remember_many([{"content": f"the deploy cache note {i}"} for i in range(20)])
        raw = m.store.conn.raw
        c = backends.statement_costs(m, ["deploy cache", "cache note"])
        assert m.store.conn.raw is raw and m.recall("deploy", limit=3).memories
    finally:
        m.close()
    texts = [r["statement"] for r in c["statements"]]
    assert c["recalls"] == 2 and all(r["ms"] >= 0 and r["per_recall"] > 0 for r in c["statements"])
    assert [t for t in texts if t.startswith("(with BEGIN) ")]  # the unit's opening pipeline, timed as one
    assert [t for t in texts if "recallite_counter('keyword_docs')" in t]  # the BM25 postings
    w = {"processes": 1, "per_process": 1, "wall_s": 1, "remembers_per_s": 1, "errors": 0,
         "client_cpu_ms_per_remember": 1.0, "server_cpu_ms_per_remember": None, "loadavg_after": (1, 1, 1)}
    report = backends.format_report({"embedder": "hash", "dims": 8, "cpus": 2, "loadavg_at_start": (1, 1, 1),
                                     "loadavg_at_end": (1, 1, 1),
                                     "backends": {"postgres": {"rows": [], "writers": w, "statements": {20: c}}}})
    assert "statements of 2 recalls @20" in report


def test_a_missing_driver_failed_only_after_the_sqlite_side_with_a_traceback(monkeypatch):
    """Without the [postgres] extra, `bench --db postgresql://...` ran the whole SQLite side and then
    died in a 40-line traceback; an unreachable database the same way. Both are one line now, before
    anything runs."""
    import pytest

    from recallite_core.errors import StoreError
    from recallite_core.storage.postgres import driver

    pytest.importorskip("psycopg")
    url = "postgresql://u:hunter2@127.0.0.1:1/nodb"
    problem = backends.preflight(url)
    assert problem is not None and problem.startswith("cannot connect to") and "hunter2" not in problem

    def missing(module):
        raise StoreError(f"PostgreSQL storage needs psycopg 3 and pgvector ({module} is missing): {driver.INSTALL_HINT}")

    monkeypatch.setattr(driver, "load", missing)
    assert 'pip install "recallite-mcp[postgres]"' in backends.preflight(url)
    ran = []
    monkeypatch.setattr(backends, "run", lambda *a, **k: ran.append(a))
    assert backends.main(["--db", url, "--quick"]) == 2 and not ran
