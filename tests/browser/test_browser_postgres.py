"""The memory browser on PostgreSQL (issue 17): every in-process page and change of
tests/browser/test_browser.py, run again with the store in a fresh PostgreSQL database instead of
a SQLite file. Only `db_path` changes (it is what the store and the "other process" tests open)."""

from __future__ import annotations

import pytest

from tests.browser.test_browser import *


@pytest.fixture
def db_path(postgres_db_url):
    return postgres_db_url


def test_health_shows_stats_scopes_file_embedder_and_last_repair(client, seeded, store, db_path):
    """The PostgreSQL version: the URL (password masked), table bytes without a WAL figure, and
    drift made with a direct DELETE that reconcile then repairs."""
    import psycopg

    html = client.get("/health").text
    for word in ("memories", "by status", "postgresql://postgres:***@", "bytes in recallite", "hash", "never",
                 "proj", "other"):
        assert word in html, word
    assert "WAL</td>" not in html
    with psycopg.connect(db_path, autocommit=True) as raw:  # drift for reconcile to repair
        raw.execute("DELETE FROM vectors WHERE memory_id = %s", (int(seeded["rule"].id[4:]),))
    assert "vectors" in client.get("/health?check=1").text.split("Check projections now")[1]
    store.reconcile(repair=True)
    html = client.get("/health?check=1").text
    assert "never" not in html and "No drift" in html
