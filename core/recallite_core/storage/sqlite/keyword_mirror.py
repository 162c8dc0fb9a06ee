"""An in-memory mirror of an FTS5 table that answers bm25 queries without SQL.

A recall asks FTS5 several times (the ranked keyword channel, one document-frequency and one
"which of these hits hold this term" lookup per query term, the conversation-window
channel); at 10k memories those statements alone cost more than the whole recall budget,
because FTS5 walks every matching row and its docsize record each time. This module keeps,
per FTS5 table, the length of every row and the postings of every term (a small table) or of
the terms queries have used (a large one), and computes exactly what ``bm25()`` computes
(SQLite's formula: k1 = 1.2, b = 0.75, IDF floored at 1e-6, per-column weights summed per
instance, row length over all columns) with numpy.

It is a cache, never the truth:
- Tokens come from SQLite itself. Postings are read from the table's own index (an
  ``fts5vocab`` view): all at load for a small table, else a term's the first time a query
  uses it; rows that change later are tokenized by a private in-memory FTS5 table with the
  same tokenizer. No tokenizer or stemmer of ours can drift from FTS5's.
- It follows the store's change counter like the vector matrix (rows stamped with ``seq``,
  tombstones, a reset when the tombstone floor passes it), and checks its row and token
  totals against the table's own after each catch-up; any mismatch drops the cache.
- A query it cannot mirror exactly (a term that FTS5 splits into a phrase) returns None
  and the caller asks FTS5.
"""

from __future__ import annotations

import sqlite3
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Iterable, Sequence, Union

import numpy as np

from recallite_core.storage.base import StaleIndex
from recallite_core.storage.id_arrays import IdArray
from recallite_core.storage.sqlite.filters import marks
from recallite_core.storage.sqlite.session import SqliteSession, connection_of

#: What the mirror reads through: a session of the store, or a plain connection (tests).
SqlHandle = Union[sqlite3.Connection, SqliteSession]


def _raw(conn: SqlHandle) -> sqlite3.Connection:
    """The connection under a session: the mirror is this backend's own cache of its FTS5
    tables and reads them directly."""
    return connection_of(conn) if isinstance(conn, SqliteSession) else conn

K1 = 1.2
B = 0.75

#: Drop and rebuild once this share of row slots belongs to deleted or replaced rows.
_DEAD_SHARE = 0.25
#: Postings kept in memory, all terms together (~24 bytes each with their cached bm25 parts);
#: the least recently used terms go first and are read again from FTS5 when next needed.
MAX_CACHED_POSTINGS = 4_000_000


def _fts5_varints(blob: bytes, count: int) -> list[int]:
    """FTS5's own (SQLite-style, big-endian) varints, as in the %_data averages record."""
    out: list[int] = []
    i = 0
    while len(out) < count and i < len(blob):
        v = 0
        for k in range(9):
            byte = blob[i]
            i += 1
            if k == 8:
                v = (v << 8) | byte
                break
            v = (v << 7) | (byte & 0x7F)
            if not byte & 0x80:
                break
        out.append(v)
    return out


def _docsize(blob: bytes | None) -> int:
    """Tokens in a row, all columns: the %_docsize blob is one varint per column."""
    if not blob:
        return 0
    if max(blob) < 0x80:  # the common case: every column under 128 tokens
        return sum(blob)
    return sum(_fts5_varints(blob, len(blob)))


class Tokenizer:
    """Token counts per column, computed by SQLite's FTS5 with a given tokenizer."""

    def __init__(self, columns: int, tokenize: str = "porter unicode61"):
        self.columns = columns
        self._db = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        cols = ", ".join(f"c{i}" for i in range(columns))
        self._db.execute(f"CREATE VIRTUAL TABLE t USING fts5({cols}, tokenize='{tokenize}')")
        self._db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, instance)")
        self._lock = threading.Lock()

    def count(self, rows: Sequence[tuple[int, Sequence[str | None]]]) -> dict[int, list[dict[str, int]]]:
        """For each (id, column texts): per column, token -> occurrences, and the row's length."""
        out: dict[int, list[dict[str, int]]] = {rid: [{} for _ in range(self.columns)] for rid, _ in rows}
        if not rows:
            return out
        with self._lock:
            self._db.execute("BEGIN")
            try:
                self._db.executemany(
                    f"INSERT INTO t (rowid, {', '.join(f'c{i}' for i in range(self.columns))}) "
                    f"VALUES (?{', ?' * self.columns})",
                    [(rid, *texts) for rid, texts in rows],
                )
                names = {f"c{i}": i for i in range(self.columns)}
                for doc, col, term, n in self._db.execute(
                    "SELECT doc, col, term, count(*) FROM v GROUP BY doc, col, term"
                ):
                    out[doc][names[col]][term] = n
            finally:
                self._db.execute("ROLLBACK")  # nothing is kept: the table is a scratch pad
        return out

    def tokens_many(self, words: Sequence[str]) -> list[tuple[str, ...]]:
        """The tokens FTS5 makes of each query word, in order (one scratch insert for all)."""
        out: list[list[str]] = [[] for _ in words]
        with self._lock:
            self._db.execute("BEGIN")
            try:
                self._db.executemany("INSERT INTO t (rowid, c0) VALUES (?, ?)", list(enumerate(words, start=1)))
                for doc, term in self._db.execute("SELECT doc, term FROM v ORDER BY doc, offset"):
                    out[doc - 1].append(term)
            finally:
                self._db.execute("ROLLBACK")
        return [tuple(t) for t in out]

    def close(self) -> None:
        self._db.close()


@dataclass
class _Postings:
    slots: np.ndarray  # int64 row slots holding the term
    freq: np.ndarray  # float64 weighted frequency (sum of column weights over instances)
    size: int
    live: tuple | None = None  # (key, slots, freq) of the live rows, while the key holds
    contribution: tuple | None = None  # (key, bm25 part per live row), see KeywordIndex.bm25

    def append(self, slot: int, f: float) -> None:
        if self.size == len(self.slots):
            cap = max(8, 2 * self.size)
            self.slots = np.resize(self.slots, cap)
            self.freq = np.resize(self.freq, cap)
        self.slots[self.size] = slot
        self.freq[self.size] = f
        self.size += 1


def weighted_frequency(counts: Sequence[int], weights: Sequence[float]) -> float:
    """FTS5 adds a column's weight once per instance, in column order; so do we (same rounding)."""
    f = 0.0
    for n, w in zip(counts, weights):
        for _ in range(n):
            f += w
    return f


class KeywordIndex:
    """bm25 over one FTS5 table, from memory. Call ``sync`` inside the snapshot you query."""

    def __init__(self, table: str, columns: Sequence[str], weights: Sequence[float] | None = None):
        self.table = table
        self.columns = list(columns)
        self.weights = [float(w) for w in (weights or [1.0] * len(columns))]
        self.tokenizer = Tokenizer(len(columns))
        self._word_tokens: dict[str, tuple[str, ...]] = {}
        self.reset()

    # -- state ------------------------------------------------------------------------------
    def reset(self) -> None:
        self.slot_of: dict[int, int] = {}
        self._slots = IdArray()  # slot_of as an array, for lookups of many ids at once
        self.ids = np.zeros(0, dtype=np.int64)
        self.length = np.zeros(0, dtype=np.float64)
        self.alive = np.zeros(0, dtype=bool)
        self.n = 0  # slots used
        self.rows = 0  # live rows
        self.tokens_total = 0
        self.dead = 0
        self.postings: OrderedDict[str, _Postings] = OrderedDict()
        self.cached_postings = 0
        self._vocab_ready = False
        self._score = np.zeros(0, dtype=np.float64)
        self._hit = np.zeros(0, dtype=bool)

    def _grow(self, need: int) -> None:
        if need <= len(self.ids):
            return
        cap = max(need, 2 * len(self.ids), 1024)
        self.ids = np.resize(self.ids, cap)
        self.length = np.resize(self.length, cap)
        alive = np.zeros(cap, dtype=bool)
        alive[: self.n] = self.alive[: self.n]
        self.alive = alive

    def _add_row(self, rid: int, length: int) -> int:
        self._grow(self.n + 1)
        slot = self.n
        self.n += 1
        self.ids[slot] = rid
        self.length[slot] = length
        self.alive[slot] = True
        self.slot_of[rid] = slot
        self._slots.set(rid, slot)
        self.rows += 1
        self.tokens_total += length
        return slot

    def _remove_row(self, rid: int) -> None:
        slot = self.slot_of.pop(rid, None)
        if slot is None:
            return
        self._slots.forget(rid)
        self.alive[slot] = False
        self.rows -= 1
        self.tokens_total -= int(self.length[slot])
        self.dead += 1

    # -- loading and catching up ------------------------------------------------------------
    #: Tables of at most this many tokens have every word's postings read when the mirror loads
    #: (both tables of a 10k store, ~430k tokens: ~0.2 s at its first recall), so that no query
    #: waits for a word's first read; larger ones read a word's postings on its first use.
    EAGER_TOKENS = 500_000

    def load(self, conn: SqlHandle) -> None:
        """Every row's length from the table's docsize records; the postings too for a small
        table (else they come lazily)."""
        self.reset()
        rows = _raw(conn).execute(f"SELECT id, sz FROM {self.table}_docsize ORDER BY id").fetchall()
        n = len(rows)
        self._grow(n)
        ids = [r[0] for r in rows]
        lengths = [_docsize(r[1]) for r in rows]
        self.ids[:n] = ids
        self.length[:n] = lengths
        self.alive[:n] = True
        self.n = self.rows = n
        self.tokens_total = sum(lengths)
        self.slot_of = dict(zip(ids, range(n)))
        if n:
            self._slots.set(self.ids[:n], np.arange(n))
        if self.tokens_total <= self.EAGER_TOKENS:
            self._load_all_postings(conn)

    def _instance_keys(self) -> str:
        """SQL of an instance's key, doc * columns + column, over the fts5vocab instance table."""
        case = " ".join(f"WHEN '{c}' THEN {i}" for i, c in enumerate(self.columns))
        return f"doc * {len(self.columns)} + CASE col {case} END"

    def _load_all_postings(self, conn: SqlHandle) -> None:
        """Every term's postings in one pass over the table's instances, counted with numpy a
        few thousand terms at a time: the same (slots, weighted frequency) that _postings
        reads for one term."""
        cur = _raw(conn).execute(
            f"SELECT term, count(*), group_concat({self._instance_keys()}) FROM {self._vocab(conn)} GROUP BY term"
        )
        while found := cur.fetchmany(4096):
            counts = np.fromiter((r[1] for r in found), dtype=np.int64, count=len(found))
            keys = np.fromstring(",".join(r[2] for r in found), dtype=np.int64, sep=",")
            if len(keys) != int(counts.sum()):
                return  # not what was expected: the other terms come lazily
            term = np.repeat(np.arange(len(found)), counts)
            if ((term[1:] == term[:-1]) & (keys[1:] < keys[:-1])).any():  # the index's order was not kept
                order = np.lexsort((keys, term))
                term, keys = term[order], keys[order]
            docs, freq, owner = self._count_runs(term, keys)
            slots = self.slots_of(docs)
            if len(slots) and slots.min() < 0:
                raise StaleIndex(f"{self.table} holds rows this cache has not seen")
            if self.cached_postings + len(slots) > MAX_CACHED_POSTINGS // 2:
                return  # a table this dense leaves the rest lazy (the cache would evict it anyway)
            bounds = np.concatenate(([0], np.flatnonzero(owner[1:] != owner[:-1]) + 1, [len(owner)]))
            for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
                self.postings[found[int(owner[a])][0]] = _Postings(slots[a:b].copy(), freq[a:b].copy(), b - a)
            self.cached_postings += len(slots)

    def _count_runs(self, owner: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(docs, weighted frequency, owner) per (owner, doc) from instance keys sorted by
        (owner, key). The weight of a column is added once per instance, columns in order, as
        FTS5's bm25 adds them: same rounding."""
        ncols = len(self.columns)
        if not len(keys):
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64), owner[:0]
        start = np.ones(len(keys), dtype=bool)  # runs of one (owner, doc, column)
        start[1:] = (owner[1:] != owner[:-1]) | (keys[1:] != keys[:-1])
        at = np.flatnonzero(start)
        runs = np.diff(np.append(at, len(keys)))
        owner, keys = owner[at], keys[at]
        docs_all = keys // ncols
        first = np.ones(len(keys), dtype=bool)  # one posting per (owner, doc)
        first[1:] = (owner[1:] != owner[:-1]) | (docs_all[1:] != docs_all[:-1])
        where = np.cumsum(first) - 1
        per_col = np.zeros((int(where[-1]) + 1, ncols), dtype=np.int64)
        per_col[where, keys % ncols] = runs
        freq = np.zeros(len(per_col), dtype=np.float64)
        for col, w in enumerate(self.weights):
            c = per_col[:, col]
            todo, k = np.flatnonzero(c > 0), 0
            while len(todo):
                freq[todo] += w
                k += 1
                todo = todo[c[todo] > k]
        return docs_all[first], freq, owner[first]

    def slots_of(self, ids: np.ndarray) -> np.ndarray:
        """The slot of each row id (-1: not a live row here)."""
        if self._slots.usable:
            return self._slots.get(ids)
        get = self.slot_of.get
        return np.fromiter((get(i, -1) for i in ids.tolist()), dtype=np.int64, count=len(ids))

    def _vocab(self, conn: SqlHandle) -> str:
        name = f"temp.recallite_vocab_{self.table}"
        if not self._vocab_ready:
            _raw(conn).execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS {name} USING fts5vocab(main, '{self.table}', 'instance')")
            self._vocab_ready = True
        return name

    def upsert(self, rows: Iterable[tuple[int, Sequence[str | None]]]) -> None:
        """Rows that were written since the last sync: (id, texts of the indexed columns)."""
        rows = list(rows)
        for rid, _ in rows:
            self._remove_row(rid)
        counts = self.tokenizer.count(rows)
        for rid, _ in rows:
            per_col = counts[rid]
            length = sum(sum(c.values()) for c in per_col)
            slot = self._add_row(rid, length)
            for term in set().union(*per_col):
                post = self.postings.get(term)
                if post is not None:  # terms not held yet are read from FTS5 when first needed
                    post.append(slot, weighted_frequency([c.get(term, 0) for c in per_col], self.weights))
                    self.cached_postings += 1

    def remove(self, ids: Iterable[int]) -> None:
        for rid in ids:
            self._remove_row(rid)

    def needs_rebuild(self) -> bool:
        return self.dead > 1000 and self.dead > _DEAD_SHARE * self.n

    def matches_table(self, conn: SqlHandle) -> bool:
        """Our row and token totals equal the table's own (its averages record)."""
        row = _raw(conn).execute(f"SELECT block FROM {self.table}_data WHERE id = 1").fetchone()
        if row is None:
            return self.rows == 0
        vals = _fts5_varints(row[0] or b"", 1 + len(self.columns))
        vals += [0] * (1 + len(self.columns) - len(vals))  # an empty table may hold an empty record
        return vals[0] == self.rows and sum(vals[1:]) == self.tokens_total

    # -- querying ---------------------------------------------------------------------------
    def term_of(self, word: str) -> str | None:
        """The single FTS5 token of a query word, or None when FTS5 makes it a phrase."""
        return self.terms_of([word])[0]

    def terms_of(self, words: Sequence[str]) -> list[str | None]:
        """term_of for each word; the words not seen before are tokenized together."""
        cache = self._word_tokens
        known = {w: cache[w] for w in words if w in cache}
        new = [w for w in dict.fromkeys(words) if w not in known]
        if new:
            known.update(zip(new, self.tokenizer.tokens_many(new)))
            if len(cache) + len(new) > 50_000:  # bounded; this query's words stay in `known`
                cache.clear()
            cache.update((w, known[w]) for w in new)
        return [toks[0] if len(toks) == 1 else None for toks in (known[w] for w in words)]

    def _postings(self, conn: SqlHandle, term: str) -> _Postings:
        post = self.postings.get(term)
        if post is not None:
            self.postings.move_to_end(term)
        else:
            # Every instance as doc * columns + column, in the index's order, in one string:
            # a row per instance cost a Python tuple each (most of a common word's load).
            packed = _raw(conn).execute(
                f"SELECT group_concat({self._instance_keys()}) FROM {self._vocab(conn)} WHERE term = ?", (term,)
            ).fetchone()[0]
            docs, freq = self._count_instances(np.fromstring(packed or "", dtype=np.int64, sep=","))
            slots = self.slots_of(docs)
            if len(slots) and slots.min() < 0:
                raise StaleIndex(f"{self.table} holds rows this cache has not seen")
            post = _Postings(slots, freq, len(slots))
            while self.postings and self.cached_postings + post.size > MAX_CACHED_POSTINGS:
                _, old = self.postings.popitem(last=False)
                self.cached_postings -= old.size
            self.postings[term] = post
            self.cached_postings += post.size
        return post

    def _count_instances(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(docs, weighted frequency) of one term from its instance keys (doc * columns + column)."""
        if len(keys) > 1 and (keys[1:] < keys[:-1]).any():  # not in the index's order
            keys = np.sort(keys, kind="stable")
        docs, freq, _ = self._count_runs(np.zeros(len(keys), dtype=np.int64), keys)
        return docs, freq

    def live_postings(self, conn: SqlHandle, term: str) -> tuple[np.ndarray, np.ndarray]:
        post = self._postings(conn, term)
        key = (post.size, self.dead)  # rows only ever die or are appended: this pins the answer
        if post.live is not None and post.live[0] == key:
            return post.live[1], post.live[2]
        slots, freq = post.slots[: post.size], post.freq[: post.size]
        keep = self.alive[slots]
        if not keep.all():
            slots, freq = slots[keep], freq[keep]
        post.live = (key, slots, freq)
        return slots, freq

    def document_frequency(self, conn: SqlHandle, word: str) -> int | None:
        term = self.term_of(word)
        if term is None:
            return None
        return len(self.live_postings(conn, term)[0])

    def containing(self, conn: SqlHandle, word: str, ids: Sequence[int]) -> set[int] | None:
        """Which of ``ids`` hold the word (None: ask FTS5)."""
        term = self.term_of(word)
        if term is None:
            return None
        slots, _ = self.live_postings(conn, term)
        mine = self.slots_of(np.asarray(ids, dtype=np.int64))
        hit = self._hit  # the bm25 scratch mask: all False between calls
        if len(hit) < self.n:
            hit = self._hit = np.zeros(len(self.ids), dtype=bool)
        hit[slots] = True
        try:
            held = hit[mine] & (mine >= 0)
        finally:
            hit[slots] = False
        return {i for i, h in zip(ids, held.tolist()) if h}

    def bm25(self, conn: SqlHandle, words: Sequence[str]) -> tuple[np.ndarray, np.ndarray] | None:
        """(ids, scores) of every live row matching any word; score = -bm25(), higher is better.
        None when a word is not a single FTS5 token (the caller asks FTS5 instead)."""
        found = self.terms_of(words)
        terms = [t for t in found if t is not None]
        if not found or len(terms) < len(found) or self.rows <= 0:  # a word that is not one token
            return None
        n_rows = float(self.rows)
        avgdl = float(self.tokens_total) / n_rows
        if len(self._score) < self.n:  # scratch buffers, all zero between queries
            self._score = np.zeros(len(self.ids), dtype=np.float64)
            self._hit = np.zeros(len(self.ids), dtype=bool)
        score, hit = self._score, self._hit
        touched = []
        try:
            for term in terms:  # phrase order, as FTS5 sums them
                slots, freq = self.live_postings(conn, term)
                n_hit = len(slots)
                if not n_hit:
                    continue
                post = self.postings[term]
                key = (post.size, self.dead, self.rows, self.tokens_total)
                if post.contribution is not None and post.contribution[0] == key:
                    part = post.contribution[1]
                else:  # agents repeat their words: a term's part stays valid until the table moves
                    idf = np.log((n_rows - n_hit + 0.5) / (n_hit + 0.5))
                    if idf <= 0.0:
                        idf = 1e-6
                    dl = self.length[slots]
                    part = idf * ((freq * (K1 + 1.0)) / (freq + K1 * ((1 - B) + (B * dl) / avgdl)))
                    post.contribution = (key, part)
                score[slots] += part
                hit[slots] = True
                touched.append(slots)
            if not touched:
                return self.ids[:0], score[:0].copy()
            # The rows hit, ascending: a scan of the hit mask unless the postings are few next to it.
            total = sum(len(t) for t in touched)
            where = (np.unique(np.concatenate(touched)) if total * 32 < self.n
                     else np.flatnonzero(hit[: self.n]))
            return self.ids[where], score[where]  # fancy indexing copies
        finally:
            for slots in touched:
                score[slots] = 0.0
                hit[slots] = False


_WINDOW_NEIGHBOURS = (
    "SELECT DISTINCT n.memory_id FROM memories m JOIN episodes e ON e.memory_id = m.id "
    "JOIN episodes n ON n.scope = e.scope AND n.session = e.session AND n.seq BETWEEN e.seq - 1 AND e.seq + 1 "
    "WHERE m.seq > ?"
)


class KeywordIndexes:
    """The memories' FTS table and the conversation-window table, kept in step with the store.

    ``sync`` must run inside the read snapshot that the queries then use, under the store
    lock (the retriever's ``rank`` does both)."""

    def __init__(self, weights: Sequence[float]):
        self.memories = KeywordIndex("memories_fts", ["title", "content", "tags"], weights)
        self.windows = KeywordIndex("episode_windows", ["text"])
        self.seq = -1
        self._hashes: dict[str, dict[int, int]] = {"memories_fts": {}, "episode_windows": {}}
        self.reloads = 0  # how often the cache was dropped and read again (stats, tests)

    def close(self) -> None:
        self.memories.tokenizer.close()
        self.windows.tokenizer.close()

    def reset(self) -> None:
        self.seq = -1
        self.memories.reset()
        self.windows.reset()
        for h in self._hashes.values():
            h.clear()

    def _reload(self, conn: SqlHandle, counter: int) -> None:
        self.reset()
        self.memories.load(conn)
        self.windows.load(conn)
        self.seq = counter
        self.reloads += 1

    def _changed(self, index: KeywordIndex, rows: list[tuple]) -> None:
        """Upsert rows whose indexed text is new or differs (a status change re-stamps a row
        without touching its text)."""
        hashes = self._hashes[index.table]
        fresh = []
        for rid, *texts in rows:
            h = hash(tuple(texts))
            if hashes.get(rid) != h or rid not in index.slot_of:
                hashes[rid] = h
                fresh.append((rid, texts))
        if fresh:
            index.upsert(fresh)

    def sync(self, conn: SqlHandle, counter: int) -> None:
        if counter == self.seq:
            return
        floor = _raw(conn).execute("SELECT value FROM counters WHERE name = 'tombstone_floor'").fetchone()[0]
        if (self.seq < 0 or self.seq < floor or counter < self.seq
                or self.memories.needs_rebuild() or self.windows.needs_rebuild()):
            self._reload(conn, counter)
            return
        gone = [r[0] for r in _raw(conn).execute("SELECT memory_id FROM tombstones WHERE seq > ?", (self.seq,))]
        for index in (self.memories, self.windows):
            index.remove(gone)
            for rid in gone:
                self._hashes[index.table].pop(rid, None)
        self._changed(self.memories, _raw(conn).execute(
            "SELECT id, title, content, tags FROM memories WHERE seq > ?", (self.seq,)).fetchall())
        dirty = [r[0] for r in _raw(conn).execute(_WINDOW_NEIGHBOURS, (self.seq,))]
        if dirty:
            found: list[tuple] = []
            for i in range(0, len(dirty), 500):
                chunk = dirty[i : i + 500]
                found += _raw(conn).execute(
                    f"SELECT rowid, text FROM episode_windows WHERE rowid IN ({marks(len(chunk))})", chunk
                ).fetchall()
            have = {r[0] for r in found}
            missing = [d for d in dirty if d not in have]
            self.windows.remove(missing)
            for rid in missing:
                self._hashes["episode_windows"].pop(rid, None)
            self._changed(self.windows, found)
        if not (self.memories.matches_table(conn) and self.windows.matches_table(conn)):
            self._reload(conn, counter)  # written behind our back (or a bug): never answer from a stale copy
            return
        self.seq = counter
