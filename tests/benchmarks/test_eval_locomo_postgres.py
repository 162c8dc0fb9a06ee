"""`recallite-mcp eval locomo --db postgresql://...` measures retrieval through the PostgreSQL
backend (issue 17): on a one-conversation slice its figures match the SQLite run's within .02, and a
second run reuses the stored turns instead of embedding them again."""

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from recallite_mcp.benchmarks import locomo
from recallite_mcp.cli import main

ROOT = Path(__file__).resolve().parents[2]
BENCH = next((p for p in (ROOT.parent / "shared" / "bench", ROOT.parents[1] / "shared" / "bench")
              if (p / "locomo" / "corpus.jsonl").exists()), None)
pytestmark = [pytest.mark.skipif(BENCH is None, reason="benchmark data not beside the checkout"), pytest.mark.slow]
KEYS = ("recall@5", "recall@10", "ndcg@10")


def test_locomo_through_postgres_matches_sqlite_on_a_slice(postgres_db_url, tmp_path):
    args = ["eval", "locomo", "--data", str(BENCH), "--conversations", "1", "--modes", "hybrid", "--embedder", "hash",
            "--json", "--out", str(tmp_path / "runs")]
    res = CliRunner().invoke(main, [*args, "--db", postgres_db_url])
    assert res.exit_code == 0, res.output
    pg = json.loads(res.output[res.output.index("{"):])
    assert pg["backend"] == "postgresql" and pg["memories"] > 100
    sqlite = locomo.evaluate(str(BENCH), embedder="hash", conversations=1, modes=["hybrid"])
    a, b = pg["modes"]["hybrid"]["metrics"]["all"], sqlite["modes"]["hybrid"]["metrics"]["all"]
    assert a["n"] == b["n"]
    for k in KEYS:
        assert abs(a[k] - b[k]) <= 0.02, (k, a[k], b[k])
    again = CliRunner().invoke(main, [*args, "--db", postgres_db_url])
    assert again.exit_code == 0, again.output
    second = json.loads(again.output[again.output.index("{"):])
    assert second["memories"] == pg["memories"]  # the stored turns were reused, not stored twice
    assert second["modes"]["hybrid"]["metrics"]["all"] == a
