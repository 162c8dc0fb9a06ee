"""Keyword search from postings kept beside the stored tsvector columns, scored by BM25 in the client.

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
postings of its own lexemes (one statement, binary arrays) and scores them here with numpy; N and
the token total come from counters kept by triggers, n from the postings.
"""

from __future__ import annotations

import math
import re
from typing import Any, Sequence

import numpy as np

from recallite_core.storage.base import MemoryFilter
from recallite_core.storage.fts import query_terms
from recallite_core.storage.postgres.filters import where_sql
from recallite_core.storage.postgres.migrations import POSTINGS_REBUILD, TEXT_CONFIG

K1 = 1.2
B = 0.75
#: A term of an FTS5 query as fts_query writes it: a double-quoted word (no quote inside).
_QUOTED = re.compile(r'"(\w+)"')
#: Bits of each label's occurrences in the packed column _postings reads (a smallint >= 0 fits 15).
_LABEL_BITS = 15


def _array(data: bytes, kind: str) -> np.ndarray:
    """A one-dimensional array without NULLs in PostgreSQL's binary format (array_send) as numpy:
    a header (dimensions, flags, element type, then size and lower bound per dimension), then
    each element as its big-endian length and value."""
    dims = int.from_bytes(data[:4], "big")
    if dims == 0:
        return np.zeros(0, dtype=kind)
    return np.frombuffer(data, dtype=np.dtype([("n", ">i4"), ("v", kind)]), offset=12 + 8 * dims)["v"]


def ts_query(text: str) -> str | None:
    """User text as a to_tsquery() expression: every term a quoted lexeme, OR-ed (as fts_query
    does for FTS5). query_terms yields \\w+ tokens, which hold no quote or operator, so quoting
    them makes every word plain text. None when the text has no word at all."""
    terms = query_terms(text)
    return " | ".join(f"'{t}'" for t in terms) if terms else None


def _summed(parts: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """The documents of all parts (ascending) and each one's scores summed in part order (a
    lexeme holds a document once: no id repeats within one part). Summed in an array indexed by
    id while the largest id is small beside the postings, else through np.unique's inverse."""
    top = max(int(ids.max()) for ids, _ in parts)
    if top <= 4 * sum(len(ids) for ids, _ in parts) + 1_000_000:
        total, seen = np.zeros(top + 1), np.zeros(top + 1, dtype=bool)
        for ids, s in parts:
            total[ids] += s
            seen[ids] = True
        unique = np.flatnonzero(seen)
        return unique, total[unique]
    unique, where_in = np.unique(np.concatenate([ids for ids, _ in parts]), return_inverse=True)
    scores = np.zeros(len(unique))
    at = 0
    for ids, s in parts:
        scores[where_in[at:at + len(ids)]] += s
        at += len(ids)
    return unique, scores


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
        terms = list(dict.fromkeys(query_terms(query)))
        # Beside the lexemes, each term's own lexeme when it is one (as _frequencies reads it), so
        # that the terms' document frequencies and holders come from the postings _bm25 read.
        row = self._conn.execute(
            f"SELECT array(SELECT DISTINCT unnest(tsvector_to_array(to_tsvector('{TEXT_CONFIG}', %s))) ORDER BY 1), "
            "array(SELECT CASE WHEN numnode(x.q) = 1 THEN btrim(querytree(x.q), chr(39)) END "
            "FROM unnest(%s::text[]) WITH ORDINALITY AS u(t, n) "
            f"CROSS JOIN LATERAL (SELECT to_tsquery('{TEXT_CONFIG}', u.t) AS q) x ORDER BY u.n)",
            (" ".join(terms), [ts_query(t) for t in terms])).fetchone()
        if facts is not None:
            facts[("lexemes", query)] = list(row[0] or [])
            facts.setdefault("term_lexemes", {}).update(
                (t, lex) for t, lex in zip(terms, row[1] or []) if lex is not None)
        return list(row[0] or [])

    def _kept_postings(self, term: str) -> np.ndarray | None:
        """The memory ids holding ``term`` as read by this snapshot's keyword top (None: not read)."""
        facts = getattr(self._conn, "facts", None) or {}
        lexeme = facts.get("term_lexemes", {}).get(term)
        return None if lexeme is None else facts.get("postings", {}).get(lexeme)

    def _postings(self, postings: str, lexemes: list[str], labels: Sequence[str],
                  docs: str, tokens: str) -> tuple[float, float, list[tuple[str, np.ndarray, list[np.ndarray]]]]:
        """N and the token total, and each lexeme's postings as arrays (memory ids, then the
        occurrences of each of ``labels``, then the document lengths), in one statement. Each
        column travels as one array in PostgreSQL's binary format, read by numpy without a
        Python object per posting (a row per posting cost the client more than the scoring).
        Every array the server builds costs about as much as reading the postings, so the
        labels' occurrences (smallints, never negative: 15 bits each) travel packed in one bigint."""
        packed = " | ".join(f"(p.{c}::int8 << {_LABEL_BITS * i})" for i, c in enumerate(labels)) or "0::int8"
        cols = ", ".join(f"array_send(coalesce(array_agg({c}), '{{}}'))" for c in ("p.memory_id", packed, "p.len"))
        rows = self._conn.execute(
            f"SELECT recallite_counter('{docs}')::float8, recallite_counter('{tokens}')::float8, l.lexeme, x.* "
            f"FROM unnest(%s::text[]) AS l(lexeme) CROSS JOIN LATERAL (SELECT {cols} "
            f"FROM {postings} p WHERE p.lexeme = l.lexeme) x", (lexemes,), binary=True).fetchall()
        if not rows:
            return 0.0, 0.0, []
        mask = (1 << _LABEL_BITS) - 1
        out = []
        for _, _, lexeme, ids, occurs, lengths in rows:
            both = _array(occurs, ">i8")
            out.append((lexeme, _array(ids, ">i8"),
                        [(both >> (_LABEL_BITS * i)) & mask for i in range(len(labels))] + [_array(lengths, ">i4")]))
        return float(rows[0][0]), float(rows[0][1]), out

    def _bm25(self, postings: str, lexemes: list[str], weights: Sequence[float], flt: MemoryFilter, depth: int,
              docs: str, tokens: str) -> list[tuple[int, float]]:
        """BM25 of every document holding a query lexeme, from the postings alone; then the best
        ``depth`` of those whose memory passes the filter, checked on the best few first (one
        statement), on more only when too few of them pass.

        The postings are read in one statement (_postings) and scored here with numpy: the
        server's hash aggregate and sort of every scored document were most of a recall at 100k
        (docs/postgres.md, "What a recall costs"). Same arithmetic, in the same order, as the
        statement it replaced: each document's terms summed in sorted-lexeme order, every
        operation in float64, so the scores are the same bits."""
        weighed = [(float(w), col) for w, col in zip(weights, ("fa", "fb", "fc", "fd")) if float(w) != 0.0]
        n_docs, n_tokens, found = self._postings(postings, sorted(lexemes), [col for _, col in weighed], docs, tokens)
        facts = getattr(self._conn, "facts", None)
        if facts is not None and postings == "keyword_postings":  # what document_frequency / holding ask next
            facts.setdefault("postings", {}).update((lex, np.sort(ids)) for lex, ids, _ in found)  # holding() bisects
        # |D|'s part of the denominator, k1 * (1 - b + b * |D| / avgdl), as c1 + c2 * |D|.
        c1 = K1 * (1 - B)
        c2 = K1 * B / max(n_tokens / max(n_docs, 1.0), 1e-9)
        parts = []
        for _, ids, (*occurs, lengths) in sorted(found, key=lambda r: r[0]):
            if not len(ids):
                continue
            x = math.log((n_docs - len(ids) + 0.5) / (len(ids) + 0.5))
            idf = 1e-6 if x <= 0 else x
            f = np.zeros(len(ids))  # 0 + w * o is w * o exactly: the statement's first term
            for (w, _), o in zip(weighed, occurs):
                f = f + w * o.astype(np.float64)
            parts.append((ids, idf * f * (K1 + 1) / (f + c1 + c2 * lengths)))
        if not parts:
            return []
        unique, scores = _summed(parts)
        order = np.lexsort((unique, -scores))
        where, params = where_sql(flt)
        # The filter is asked about the best depth + a quarter (at least 20 more), then 8 times more,
        # as long as fewer than ``depth`` pass and there are more (the retriever's _filtered_top
        # widens its cut the same way); the last step asks the server which of all scored documents
        # pass (a join on the postings instead of every id sent). Each id asked is an index probe.
        window = depth + max(20, depth // 4)
        while True:
            if window < len(order):
                ids = unique[order[:window]].tolist()
                kept = {r[0] for r in self._conn.execute(
                    f"SELECT m.id FROM memories m WHERE m.id = ANY(%s) AND {where}", [ids, *params])}
            else:
                kept = {r[0] for r in self._conn.execute(
                    f"SELECT m.id FROM memories m WHERE {where} AND EXISTS (SELECT 1 FROM {postings} p "
                    "WHERE p.memory_id = m.id AND p.lexeme = ANY(%s))", [*params, lexemes])}
            if len(kept) >= depth or window >= len(order):
                break
            window *= 8
        return [(int(unique[i]), float(scores[i])) for i in order[:window] if int(unique[i]) in kept][:depth]

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
        kept = self._kept_postings(term)
        if kept is not None:
            return len(kept)
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
        held = self._kept_postings(term)
        if held is not None:
            ask = np.unique(np.asarray(list(ids), dtype=np.int64))
            at = np.minimum(np.searchsorted(held, ask), max(len(held) - 1, 0))
            return ask[held[at] == ask].tolist() if len(held) else []
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
