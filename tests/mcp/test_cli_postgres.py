"""Every CLI command on PostgreSQL (issue 17): each one runs against a fresh PostgreSQL database
with `--db postgresql://...` (or RECALLITE_DB), exits 0, does what it does on SQLite, and never
prints the password. What has no meaning on a server (a file's WAL bytes) is said in words.
The browser's pages run on PostgreSQL in tests/browser/test_browser_postgres.py; migrate in
tests/portability; eval locomo in tests/benchmarks/test_eval_locomo_postgres.py."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from recallite_mcp.cli import main

SECRET = "s3cret-pw"


@pytest.fixture
def url(postgres_db_url):
    head, rest = postgres_db_url.split("://", 1)
    user, _, tail = rest.partition("@")
    return f"{head}://{user.split(':')[0]}:{SECRET}@{tail}"  # the test server's socket login ignores it


def run(url, *args, ok=True, env=None):
    res = CliRunner().invoke(main, [args[0], "--db", url, "--embedder", "hash", "--scope", "proj", *args[1:]], env=env)
    assert SECRET not in res.output, res.output
    if ok:
        assert res.exit_code == 0, (args, res.output)
    return res


def add(url, content, *more):
    out = run(url, "add", content, "--json", *more).output
    return json.loads(out[out.index("{"):])["id"]


def test_add_recall_context_list_show(url):
    a = add(url, "Deploys run from CI only.", "--type", "constraint")
    add(url, "Use ruff for linting.", "--type", "preference")
    assert a in run(url, "recall", "deploys CI").output
    assert "Deploys run from CI only" in run(url, "context", "how do we deploy").output
    listed = run(url, "list", "--json").output
    assert {m["id"] for m in json.loads(listed[listed.index("{"):])["memories"]} >= {a}
    assert "Deploys run from CI only." in run(url, "show", a).output


def test_the_environment_variable_opens_postgres_too(url):
    res = CliRunner().invoke(main, ["add", "--embedder", "hash", "Staging rebuilds nightly."], env={"RECALLITE_DB": url})
    assert res.exit_code == 0 and SECRET not in res.output, res.output
    assert "Staging rebuilds nightly" in run(url, "list", "--all-scopes").output


def test_validate_forget_resolve_restore(url):
    from recallite_core import Recallite

    with Recallite.open(url, embedder="hash") as m:
        cand = m.remember("The build cache lives in S3.", type="fact", source="llm", scope="proj").id
    assert "validated 1 memory" in run(url, "validate", "--source", "llm", "--yes").output
    a = add(url, "Releases happen on Tuesdays.", "--type", "fact")
    b = add(url, "Releases happen on Thursdays.", "--type", "fact")
    with Recallite.open(url, embedder="hash") as m:
        if m.get(a).status != "superseded":  # write-time correction detection may have done it already
            m.supersede(a, b)
    assert "again" in run(url, "restore", a).output
    with Recallite.open(url, embedder="hash") as m:
        m.relate(a, b, "contradicts")
    assert "holds" in run(url, "resolve", a, b, "--keep", b).output
    out = run(url, "forget", cand, "--vacuum").output
    assert "forgot 1 memory (tables vacuumed)" in out


def test_stats_reports_table_bytes_not_a_wal(url):
    add(url, "Deploys run from CI only.")
    out = run(url, "stats").output
    assert "postgresql://postgres:***@" in out and "bytes in recallite's tables" in out and "WAL is not counted" in out
    st = json.loads(run(url, "stats", "--json").output)
    assert st["memories"] == 1 and st["wal_bytes"] == 0


def test_doctor_checks_the_server_and_notes_the_masked_password(url):
    add(url, "Deploys run from CI only.")
    out = run(url, "doctor").output
    assert "opens, schema" in out and "consistency check: ok" in out
    assert "PGPASSWORD" in out  # the pasted config would carry *** otherwise


def test_reconcile_and_reindex(url):
    add(url, "Deploys run from CI only.")
    assert "no drift" in run(url, "reconcile").output
    assert "reindexed 1 memory with" in run(url, "reindex").output
    assert "no drift" in run(url, "reconcile", "--repair").output


def test_vacuum_says_what_it_does_on_a_server(url):
    add(url, "Deploys run from CI only.")
    out = run(url, "vacuum").output
    assert "VACUUM FULL" in out and "WAL and backups" in out


def test_export_then_import_into_another_database(url, postgres_db_url, tmp_path):
    add(url, "Deploys run from CI only.")
    dump = str(tmp_path / "dump.jsonl")
    assert "wrote" in run(url, "export", dump).output
    assert "memories 0, duplicates 1" in run(url, "import", dump, "--trust", "restore").output
    fresh = tmp_path / "fresh.db"
    res = CliRunner().invoke(main, ["import", "--db", str(fresh), "--embedder", "hash", dump, "--trust", "restore"])
    assert res.exit_code == 0 and "memories 1" in res.output, res.output
    with_vectors = str(tmp_path / "vectors.jsonl")
    run(url, "export", with_vectors, "--vectors")
    res = CliRunner().invoke(main, ["import", "--db", str(tmp_path / "copy.db"), "--embedder", "hash", with_vectors,
                                    "--trust", "restore"])
    assert res.exit_code == 0 and "memories 1" in res.output and "vectors_copied 1" in res.output, res.output


def test_demo_runs_on_postgres(url):
    assert "this run:" in run(url, "demo", "--rounds", "1").output


def test_ui_serves_the_browser_on_postgres(url, monkeypatch):
    seen = {}

    def fake_run(settings, host, port, open_browser):
        from recallite_mcp.app import open_memory

        with open_memory(settings) as mem:
            seen["memories"] = mem.stats().memories
        seen["db"] = settings.db_label

    monkeypatch.setattr("recallite_mcp.browser.serve.run", fake_run)
    add(url, "Deploys run from CI only.")
    run(url, "ui")
    assert seen == {"memories": 1, "db": seen["db"]} and "***" in seen["db"] and SECRET not in seen["db"]
