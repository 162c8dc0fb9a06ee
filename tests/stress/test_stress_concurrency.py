"""4 `recallite-mcp` processes on one file, each driven over stdio by the official MCP client:
a fixed, seeded mix of remember / recall / feedback with client keys and deliberate retries
(same process, another process, at the same time). Sized for CI (~10-20 s); run bigger with
`recallite-mcp bench --faults --only concurrency --processes 6 --ops 300`."""

import os

import pytest

from recallite_mcp.benchmarks.faults import run_concurrency

pytestmark = pytest.mark.slow

PROCESSES = int(os.environ.get("RECALLITE_STRESS_PROCESSES", "4"))
OPS = int(os.environ.get("RECALLITE_STRESS_OPS", "60"))


def test_four_servers_one_file(tmp_path):
    fig = run_concurrency(str(tmp_path / "shared.db"), processes=PROCESSES, ops=OPS, seed=1)
    print(f"\nconcurrency: {fig}")
    assert fig.errors == []
    assert fig.locked_errors == 0 and fig.tool_errors == 0  # no 'database is locked' reached a client
    assert fig.lost == 0 and fig.duplicated == 0 and fig.stored_memories == fig.expected_memories > 0
    assert fig.feedback_applied_twice == 0 and fig.success_count_mismatches == 0 and fig.feedback_rows > 0
    assert fig.remember_retries > 0 and fig.feedback_retries > 0 and fig.cross_process_retries > 0  # retries happened
    assert fig.visibility_checks > 0 and fig.visibility_misses == 0  # others' commits seen on the next call
    assert fig.integrity == "ok" and fig.projections_ok
    assert fig.operations == PROCESSES * OPS
