"""The PostgreSQL keyword postings (migration 0007, issue 17: recall @100k): kept by triggers in
step with every write path, and scoring exactly what unnesting the documents' tsvectors scored."""

from __future__ import annotations

import pytest

from recallite_core import Recallite
from recallite_core.storage.base import MemoryFilter
from recallite_core.storage.fts import query_terms
from recallite_core.storage.postgres.migrations import POSTINGS_REBUILD

TEXTS = [
    "Deploy the api with helm upgrade --install and the staging values file.",
    "The staging server runs on port 8080; deploy checks hit /healthz.",
    "Rotate the database password in the vault, then restart the api pods.",
    "Lint with ruff check . before every deploy of the api.",
    "The billing service was upgraded to Python 3.12.",
]


@pytest.fixture
def pg(postgres_db_url):
    m = Recallite.open(postgres_db_url, embedder="hash")
    yield m
    m.close()


def _postings(conn) -> dict[str, list[tuple]]:
    return {t: conn.execute(f"SELECT lexeme, memory_id, fa, fb, fc, fd, len FROM {t} ORDER BY 1, 2").fetchall()
            for t in ("keyword_postings", "window_postings")}


class _Undo(Exception):
    pass


def _rebuilt(mem) -> tuple[dict, dict]:
    """(the postings the triggers kept, the postings derived from scratch), in one transaction
    that is then rolled back (the store stays as the triggers left it)."""
    try:
        with mem.store.transaction():
            conn = mem.store.conn
            kept = _postings(conn)
            for statement in POSTINGS_REBUILD:
                conn.execute(statement)
            fresh = _postings(conn)
            raise _Undo
    except _Undo:
        pass
    return kept, fresh


def test_postings_follow_every_write_path(pg):
    ids = [pg.remember(t, tags=["ops"]).id for t in TEXTS[:2]]
    pg.remember_many([{"content": t, "title": "Note"} for t in TEXTS[2:]])
    pg.record_turns([{"role": "user", "content": "we moved staging to port 9090 yesterday"},
                     {"role": "assistant", "content": "noted: the staging deploy uses port 9090"}], session="chat")
    pg.forget(ids[0])  # a forget keeps the row retired, or deletes it: either way the postings follow
    with pg.store.transaction():  # a hand-made edit of a text column (no API edits one)
        pg.store.conn.execute("UPDATE memories SET content = 'Deploy with argo instead of helm.' WHERE id = %s",
                                 (int(ids[1][4:]),))
    with pg.store.transaction():
        pg.store.conn.execute("DELETE FROM memories WHERE id = (SELECT max(id) FROM memories WHERE type <> 'episode')")
    kept, fresh = _rebuilt(pg)
    assert kept["keyword_postings"] and kept["window_postings"]
    assert kept == fresh


def test_postings_score_what_unnesting_the_tsvectors_scored(pg):
    pg.remember_many([{"content": f"{t} Copy {'x' * i}.", "title": f"Note {i}", "tags": ["deploy"] if i % 2 else []}
                      for i, t in enumerate(TEXTS * 3)])
    with pg.store.reading() as s:
        conn = pg.store.conn
        for query in ("deploy the api", "staging port", "python billing upgraded", "vault password api"):
            got = s.keywords.top(query, MemoryFilter(), 10, (2.0, 1.0, 0.5))
            lexemes = conn.execute("SELECT array(SELECT DISTINCT unnest(tsvector_to_array("
                                   "to_tsvector('recallite_english', %s))) ORDER BY 1)",
                                   (" ".join(query_terms(query)),)).fetchone()[0]
            want = _unnested(conn, lexemes, (2.0, 1.0, 0.5, 0.0))
            assert [i for i, _ in got] == [i for i, _ in want], query
            assert all(abs(a - b) < 1e-9 for (_, a), (_, b) in zip(got, want)), query


def _unnested(conn, lexemes, weights):
    """The statement the postings replaced: BM25 from each matched document's own tsvector."""
    wa, wb, wc, wd = weights
    sql = (
        "WITH totals AS (SELECT recallite_counter('keyword_docs')::float8 AS n_docs,"
        " recallite_counter('keyword_tokens')::float8 AS n_tokens),"
        " idf AS (SELECT l.lexeme, CASE WHEN x.v <= 0 THEN 1e-6 ELSE x.v END AS idf"
        "  FROM unnest(%s::text[]) AS l(lexeme), totals,"
        "  LATERAL (SELECT count(*)::float8 AS n FROM memories d WHERE d.tsv @@ quote_literal(l.lexeme)::tsquery) c,"
        "  LATERAL (SELECT ln((totals.n_docs - c.n + 0.5) / (c.n + 0.5)) AS v) x)"
        " SELECT m.id, sum(idf.idf * h.f * 2.2 / (h.f + 1.2 * (0.25 + 0.75 * m.tsv_tokens"
        "  / greatest(totals.n_tokens / greatest(totals.n_docs, 1), 1e-9)))) AS s"
        " FROM memories m CROSS JOIN totals CROSS JOIN LATERAL (SELECT u.lexeme,"
        "  %s * cardinality(array_positions(u.weights, 'A')) + %s * cardinality(array_positions(u.weights, 'B'))"
        "  + %s * cardinality(array_positions(u.weights, 'C')) + %s * cardinality(array_positions(u.weights, 'D')) AS f"
        "  FROM unnest(m.tsv) u WHERE u.lexeme = ANY(%s::text[])) h JOIN idf ON idf.lexeme = h.lexeme"
        " WHERE m.tsv @@ %s::tsquery GROUP BY m.id ORDER BY s DESC, m.id LIMIT 10")
    any_of = " | ".join("'" + lx.replace("'", "''") + "'" for lx in lexemes)
    return [(i, float(s)) for i, s in conn.execute(sql, [lexemes, wa, wb, wc, wd, lexemes, any_of])]


def test_a_filter_that_drops_the_best_documents_still_gets_its_full_depth(pg):
    """The filter is checked on the best 4 x depth first; when it keeps fewer than depth of those,
    every scored document is walked: a narrow scope whose memories all score low still gets its
    depth, in score order."""
    pg.remember_many([{"content": f"deploy deploy deploy the api release {i}", "scope": "busy"} for i in range(30)]
                     + [{"content": f"a note that mentions a deploy once, number {i}", "scope": "quiet"}
                        for i in range(6)])
    with pg.store.reading() as s:
        everything = s.keywords.top("deploy", MemoryFilter(), 100, (1.0, 1.0, 1.0))
        quiet = {r[0] for r in pg.store.conn.execute("SELECT id FROM memories WHERE scope = 'quiet'")}
        got = s.keywords.top("deploy", MemoryFilter(scopes=("quiet",)), 5, (1.0, 1.0, 1.0))
    assert [i for i, _ in everything[:20]] and not quiet & {i for i, _ in everything[:20]}  # the best are all 'busy'
    assert got == [r for r in everything if r[0] in quiet][:5]


def test_document_frequencies_from_postings_are_the_tsvector_counts(pg):
    """A recall asks each query term's document frequency: one-lexeme terms are counted from the
    postings (the others from the tsvectors), as the GIN index counts them."""
    pg.remember_many([{"content": t} for t in ("the spare key", "keys and a key-ring", "see /usr/local/bin", "a key_ring",
                                                "a blue flowerpot", "spare spare parts")])
    query = "spare key ring flowerpot the absent usr"
    with pg.store.reading() as s:
        s.keywords.top(query, MemoryFilter(), 10, (1.0, 1.0, 1.0))  # the terms of the query, asked together
        got = {t: s.keywords.document_frequency(t) for t in query_terms(query)}
        want = {t: pg.store.conn.execute("SELECT count(*) FROM memories WHERE tsv @@ "
                                         "to_tsquery('recallite_english', %s)", (f"'{t}'",)).fetchone()[0]
                for t in query_terms(query)}
    assert got == want and want["spare"] == 2 and want["key"] == 3 and want["absent"] == 0
