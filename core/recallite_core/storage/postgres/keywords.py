"""Keyword search from the stored tsvector columns (GIN), scored by BM25 in the server.

The score is FTS5's bm25() (which SQLite's Keywords returns negated, so that higher is better),
computed from the same inputs: for each query term t present in document D,

    idf(t) * f * (k1 + 1) / (f + k1 * (1 - b + b * |D| / avgdl)),   k1 = 1.2, b = 0.75,

with f = sum over columns of (column weight * occurrences of t in that column), |D| the
document's tokens in all columns, avgdl the mean |D|, idf(t) = ln((N - n + 0.5) / (n + 0.5)) (or
1e-6 when that is not positive), N the documents and n those holding t. The fusion of the recall
z-scores raw keyword scores with thresholds tuned on bm25's scale, so the scale must match; on
plain text both backends give the same scores (tests/storage/test_storage_contract.py). They differ where
the tokenizers do: PostgreSQL's parser keeps paths, URLs and e-mail addresses whole, splits
hyphenated words into the whole and its parts, and stems with Snowball English (Porter 2).

Occurrences come from the tsvector's positions, labelled A, B, C by column (title, content, tags),
kept as postings (migration 0007): one row per lexeme and document with its occurrences per label
and the document's length, written by triggers in the writing transaction. A query reads only the
postings of its own lexemes; N and the token total come from counters kept by triggers, n from
the postings.
"""

from __future__ import annotations

import re
from typing import Any, Sequence

from recallite_core.storage.base import MemoryFilter
from recallite_core.storage.fts import query_terms
from recallite_core.storage.postgres.filters import where_sql
from recallite_core.storage.postgres.migrations import POSTINGS_REBUILD, TEXT_CONFIG

K1 = 1.2
B = 0.75
#: The keyword top checks its filter on this many times ``depth`` best documents before walking them all.
OVERFETCH = 4
#: A term of an FTS5 query as fts_query writes it: a double-quoted word (no quote inside).
_QUOTED = re.compile(r'"(\w+)"')


def ts_query(text: str) -> str | None:
    """User text as a to_tsquery() expression: every term a quoted lexeme, OR-ed (as fts_query
    does for FTS5). query_terms yields \\w+ tokens, which hold no quote or operator, so quoting
    them makes every word plain text. None when the text has no word at all."""
    terms = query_terms(text)
    return " | ".join(f"'{t}'" for t in terms) if terms else None


class PostgresKeywords:
    """Keyword search over the memories' tsvector and the conversation windows'. Scores are
    BM25 as FTS5 computes it (higher is better), ties by id."""

    def __init__(self, conn: Any):
        self._conn = conn

    def _lexemes(self, query: str) -> list[str]:
        """The query's terms as the index holds them (stemmed by the same configuration)."""
        tsq = ts_query(query)
        if tsq is None:
            return []
        facts = getattr(self._conn, "facts", None)  # a recall asks twice: memories, then windows
        known = None if facts is None else facts.get(("lexemes", query))
        if known is not None:
            return list(known)
        row = self._conn.execute(
            f"SELECT array(SELECT DISTINCT unnest(tsvector_to_array(to_tsvector('{TEXT_CONFIG}', %s))) ORDER BY 1)",
            (" ".join(query_terms(query)),)).fetchone()
        if facts is not None:
            facts[("lexemes", query)] = list(row[0] or [])
        return list(row[0] or [])

    def _bm25(self, postings: str, lexemes: list[str], weights: Sequence[float], flt: MemoryFilter, depth: int,
              docs: str, tokens: str) -> list[tuple[int, float]]:
        """BM25 of every document holding a query lexeme, from the postings alone; then the best
        ``depth`` of those whose memory passes the filter. The filter is checked on the best
        OVERFETCH x depth first (a partial sort, a join per row); only when it keeps fewer than
        ``depth`` of them and there are more is every scored document walked best first."""
        where, params = where_sql(flt)
        # f: the column-weighted occurrences, naming only the labels that weigh.
        weighed = [(float(w), col) for w, col in zip(weights, ("fa", "fb", "fc", "fd")) if float(w) != 0.0]
        occurrences = " + ".join(f"%s::float8 * p.{col}" for _, col in weighed) or "0::float8"
        scored = (
            # N and the token total from the trigger-kept counters (base row + the deltas not folded
            # in yet, migration 0003); n per lexeme from its postings.
            "WITH counts AS MATERIALIZED (SELECT"
            f" recallite_counter('{docs}')::float8 AS n_docs,"
            f" recallite_counter('{tokens}')::float8 AS n_tokens),"
            # |D|'s part of the denominator, k1 * (1 - b + b * |D| / avgdl), as c1 + c2 * |D|.
            f" totals AS MATERIALIZED (SELECT n_docs, {K1 * (1 - B)}::float8 AS c1,"
            f"  {K1 * B}::float8 / greatest(n_tokens / greatest(n_docs, 1), 1e-9) AS c2 FROM counts),"
            " idf AS MATERIALIZED (SELECT l.lexeme, CASE WHEN x.v <= 0 THEN 1e-6 ELSE x.v END AS idf"
            "  FROM unnest(%s::text[]) AS l(lexeme), totals,"
            f"  LATERAL (SELECT count(*)::float8 AS n FROM {postings} c WHERE c.lexeme = l.lexeme) c,"
            "  LATERAL (SELECT ln((totals.n_docs - c.n + 0.5) / (c.n + 0.5)) AS v) x),"
            # No ORDER BY in the sum, which would sort every posting: the plan reads the sorted lexemes'
            # postings one lexeme after another, so each document's terms are summed in lexeme order;
            # another plan could only move a score in its last bits (a float sum depends on its order).
            " scored AS MATERIALIZED (SELECT h.memory_id,"
            f"  sum(idf.idf * h.f * {K1 + 1} / (h.f + totals.c1 + totals.c2 * h.len)) AS s"
            "  FROM idf CROSS JOIN totals CROSS JOIN LATERAL ("
            f"   SELECT p.memory_id, p.len, {occurrences} AS f FROM {postings} p WHERE p.lexeme = idf.lexeme) h"
            "  GROUP BY h.memory_id)"
        )
        passes = f"CROSS JOIN LATERAL (SELECT 1 FROM memories m WHERE m.id = r.memory_id AND {where}) ok"
        head = [sorted(lexemes), *(w for w, _ in weighed)]
        over = depth * OVERFETCH
        rows = self._conn.execute(
            scored + ", best AS MATERIALIZED (SELECT memory_id, s FROM scored ORDER BY s DESC, memory_id LIMIT %s)"
            f" SELECT r.memory_id, r.s FROM best r {passes}"
            " UNION ALL SELECT NULL, count(*) FROM best", [*head, over, *params]).fetchall()
        found = sorted(((mid, float(s)) for mid, s in rows if mid is not None), key=lambda r: (-r[1], r[0]))
        best = next(int(s) for mid, s in rows if mid is None)
        if len(found) >= depth or best < over:
            return found[:depth]
        rows = self._conn.execute(
            scored + f" SELECT r.memory_id, r.s FROM (SELECT * FROM scored ORDER BY s DESC, memory_id) r {passes}"
            " ORDER BY r.s DESC, r.memory_id LIMIT %s", [*head, *params, depth]).fetchall()
        return [(mid, float(s)) for mid, s in rows]

    # -- the query's terms, asked about one by one: answered for all of them at once -----------------
    # A recall asks for the keyword top, then, term by term, each term's document frequency and which
    # candidates hold it: 2 statements per term. Inside one read snapshot the answers cannot change,
    # so the first question about a term of the query asked for the top fetches the answer for every
    # term of it in one statement, kept until the snapshot ends (same counts, same ids).
    def _remember_terms(self, query: str) -> None:
        facts = getattr(self._conn, "facts", None)  # a dict inside a reading() snapshot only
        if facts is not None:
            facts["query_terms"] = list(dict.fromkeys(query_terms(query)))

    def _query_terms_with(self, term: str) -> tuple[dict[str, Any], list[str]] | None:
        facts = getattr(self._conn, "facts", None)
        terms = None if facts is None else facts.get("query_terms")
        return (facts, terms) if terms and term in terms else None  # type: ignore[return-value]

    def _frequencies(self, terms: list[str]) -> dict[str, int]:
        """Memories holding each term: a term that is one lexeme counts its postings (an index-only
        count); one the text parser turns into several lexemes is matched against the tsvectors."""
        return dict(zip(terms, (r[0] for r in self._conn.execute(
            "SELECT CASE WHEN u.q IS NULL THEN 0 "
            "WHEN numnode(t.q) = 1 THEN (SELECT count(*) FROM keyword_postings p "
            "  WHERE p.lexeme = btrim(querytree(t.q), chr(39))) "
            "ELSE (SELECT count(*) FROM memories WHERE tsv @@ t.q) END "
            "FROM unnest(%s::text[]) WITH ORDINALITY AS u(q, n), "
            f"LATERAL (SELECT CASE WHEN u.q IS NOT NULL THEN to_tsquery('{TEXT_CONFIG}', u.q) END AS q) t "
            "ORDER BY u.n", ([ts_query(t) for t in terms],)))))

    def _holders(self, terms: list[str], ids: Sequence[int]) -> dict[str, list[int]]:
        out: dict[str, list[int]] = {t: [] for t in terms}
        for n, mid in self._conn.execute(
                "SELECT u.n, m.id FROM unnest(%s::text[]) WITH ORDINALITY AS u(q, n) "
                f"JOIN memories m ON m.tsv @@ to_tsquery('{TEXT_CONFIG}', u.q) "
                "WHERE u.q IS NOT NULL AND m.id = ANY(%s) ORDER BY u.n, m.id",
                ([ts_query(t) for t in terms], list(ids))):
            out[terms[n - 1]].append(mid)
        return out

    def top(self, query: str, flt: MemoryFilter, depth: int, weights: Sequence[float]) -> list[tuple[int, float]]:
        """The bm25 top-``depth`` among the memories passing the filter (the filter is in the query)."""
        self._remember_terms(query)
        if depth <= 0:
            return []
        lexemes = self._lexemes(query)
        if not lexemes:
            return []
        title, content, tags = weights
        return self._bm25("keyword_postings", lexemes, (title, content, tags, 0.0), flt, depth,
                          "keyword_docs", "keyword_tokens")

    def windows_top(self, query: str, flt: MemoryFilter, depth: int) -> list[tuple[int, float]]:
        """The bm25 top-``depth`` of conversation turns indexed with their neighbours (one column,
        weight 1: its positions carry the default label D)."""
        self._remember_terms(query)
        if depth <= 0:
            return []
        lexemes = self._lexemes(query)
        if not lexemes:
            return []
        return self._bm25("window_postings", lexemes, (0.0, 0.0, 0.0, 1.0), flt, depth,
                          "window_docs", "window_tokens")

    def document_frequency(self, term: str) -> int:
        """Memories holding the term (a single token)."""
        known = self._query_terms_with(term)
        if known is not None:
            facts, terms = known
            if "frequencies" not in facts:
                facts["frequencies"] = self._frequencies(terms)
            return facts["frequencies"][term]
        tsq = ts_query(term)
        if tsq is None:
            return 0
        return self._conn.execute(
            f"SELECT count(*) FROM memories WHERE tsv @@ to_tsquery('{TEXT_CONFIG}', %s)", (tsq,)).fetchone()[0]

    def holding(self, term: str, ids: Sequence[int]) -> list[int]:
        """Which of ``ids`` hold the term, in id order."""
        known = self._query_terms_with(term)
        if known is not None and ids:
            facts, terms = known
            kept = facts.get("holders")
            if kept is None or kept[0] != list(ids):
                kept = facts["holders"] = (list(ids), self._holders(terms, ids))
            return list(kept[1][term])
        tsq = ts_query(term)
        if tsq is None or not ids:
            return []
        return [r[0] for r in self._conn.execute(
            f"SELECT id FROM memories WHERE tsv @@ to_tsquery('{TEXT_CONFIG}', %s) AND id = ANY(%s) ORDER BY id",
            (tsq, list(ids)))]

    def rebuild(self) -> None:
        """The keyword index is a generated column the server keeps in step with each row, so
        there is nothing to re-derive from the table; what can drift (a restore that bypassed
        the triggers, say) is what is derived from it: the postings, re-derived here, and the
        collection statistics BM25 reads, recounted here."""
        for statement in POSTINGS_REBUILD:
            self._conn.execute(statement)
        for prefix, table in (("keyword", "memories"), ("window", "episode_windows")):
            self._conn.execute(f"DELETE FROM counter_deltas WHERE name IN ('{prefix}_docs', '{prefix}_tokens')")
            self._conn.execute(
                f"UPDATE counters SET value = CASE name WHEN '{prefix}_docs' THEN (SELECT count(*) FROM {table}) "
                f"ELSE (SELECT coalesce(sum(tsv_tokens), 0) FROM {table}) END "
                f"WHERE name IN ('{prefix}_docs', '{prefix}_tokens')")

    def optimize(self) -> None:
        """Merge the GIN indexes' pending lists into their main structure (FTS5's 'optimize'
        merges segments). Deleted text leaves the table files only with store.vacuum()."""
        self._conn.execute(
            "SELECT gin_clean_pending_list(i) FROM (SELECT to_regclass('memories_tsv') AS i "
            "UNION ALL SELECT to_regclass('episode_windows_tsv')) x WHERE i IS NOT NULL")

    def match_counts(self, queries: Sequence[str]) -> list[int]:
        """How many memories match each keyword query (same stemming as recall), in one statement.
        The queries are fts.fts_query's (quoted terms OR-ed), read here as the same terms."""
        if not queries:
            return []
        tsqs = [" | ".join(f"'{t}'" for t in _QUOTED.findall(q)) for q in queries]
        return [r[0] for r in self._conn.execute(
            "SELECT CASE WHEN u.q = '' THEN 0 ELSE (SELECT count(*) FROM memories "
            f"WHERE tsv @@ to_tsquery('{TEXT_CONFIG}', u.q)) END "
            "FROM unnest(%s::text[]) WITH ORDINALITY AS u(q, n) ORDER BY u.n", (tsqs,))]
