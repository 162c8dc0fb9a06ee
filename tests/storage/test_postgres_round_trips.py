"""Round trips of a recall on PostgreSQL (storage/postgres/snapshot.py): the facts of a read
snapshot come in one statement and trust rows come with the memories loaded, while a write
unit and the next snapshot still read fresh values."""

from __future__ import annotations

import contextlib

import pytest

from recallite_core import Recallite
from recallite_core.storage.postgres.rows import TRUST_COLUMNS


class _Spy:
    """Records every statement sent on the wrapped connection."""

    def __init__(self, raw):
        self.raw, self.sent = raw, []

    def execute(self, query, params=None, **kw):
        self.sent.append(str(query))
        return self.raw.execute(query, params, **kw)

    def __getattr__(self, name):
        return getattr(self.raw, name)


@contextlib.contextmanager
def _spying(m):
    """Every statement ``m`` sends inside the block, in ``spy.sent``."""
    spy = _Spy(m.store.conn.raw)
    m.store.conn.raw = spy
    try:
        yield spy
    finally:
        m.store.conn.raw = spy.raw


@pytest.fixture
def mem(postgres_db_url):
    m = Recallite.open(postgres_db_url, embedder="hash")
    for text in ("redis cache timeout on deploy", "docker build cache", "auth token refresh on the server"):
        m.add(text)
    yield m
    m.close()


def test_recall_sent_each_snapshot_fact_and_the_trust_rows_as_statements_of_their_own(mem):
    mem.recall("redis cache")  # warm: the engine's caches loaded
    with _spying(mem) as spy:
        hits = mem.recall("redis cache")
    assert hits.memories and all(h.trust is not None for h in hits.memories)
    alone = ("SELECT value FROM counters WHERE name = 'tombstone_floor'", "SELECT 1 FROM episodes LIMIT 1",
             "SELECT EXISTS (SELECT 1 FROM relations)", "SELECT (SELECT max(row_id) FROM memory_outcomes)",
             f"SELECT {TRUST_COLUMNS} FROM")
    assert not [s for s in spy.sent if s.startswith(alone)]
    assert sum("recallite_feed_mark()" in s for s in spy.sent) == 1


def test_a_write_unit_reads_the_floor_it_moved_and_the_next_snapshot_sees_new_rows(mem):
    store = mem.store
    with store.reading() as s:
        before, floor = s.feed.counter(), s.feed.tombstone_floor()
        assert s.feed.counter() == before  # answered from the snapshot's facts
    with store.transaction() as s:
        s.feed.reset_readers()
        assert s.feed.tombstone_floor() > floor  # not a kept value: this unit moved it
    mem.add("a new memory after the snapshot")
    with store.reading() as s:
        assert s.feed.counter() > before
        assert s.feed.tombstone_floor() > floor
        assert s.episodes.any() is False and s.feed.side_tables() == (False, False)
        assert s.outcomes.outcome_mark()[0] == 0


def _spied_recall(m, query):
    with _spying(m) as spy:
        m.recall(query)
    return spy.sent


def test_another_process_recalling_does_not_make_a_store_read_the_change_feed_again(mem, postgres_db_url):
    """Broke in session 7: the change feed's counter was the watermark, which moves with every
    transaction, so another process's recall (its retrieval log, the access counts) made every
    store re-read the feed and drop its counter-keyed caches on its next recall. The counter is
    now the newest settled stamp (migration 0004): a write that stamps no row leaves it."""
    other = Recallite.open(postgres_db_url, embedder="hash")
    try:
        mem.recall("redis cache")  # warm
        with mem.store.reading() as s:
            before = s.feed.counter()
        other.recall("docker build cache")  # a retrieval log and access counts, in another process's store
        other.recall("docker build cache")
        sent = _spied_recall(mem, "redis cache")
        with mem.store.reading() as s:
            assert s.feed.counter() == before
        assert not [s for s in sent if "FROM tombstones" in s or "FROM vectors v JOIN memories" in s]
        other.add("a memory written by the other process")  # a stamped row: the feed moves
        sent = _spied_recall(mem, "redis cache")
        assert [s for s in sent if "FROM vectors v JOIN memories" in s]
        with mem.store.reading() as s:
            assert s.feed.counter() > before
    finally:
        other.close()


def test_the_terms_of_a_recall_query_are_answered_from_the_postings_the_keyword_top_read(mem):
    """A recall asked, term by term, for each term's document frequency and for which candidates
    hold it (2 statements per term); inside the recall's snapshot, after the keyword top of the
    query, a term that is one lexeme (all that fts.query_terms yields, here) is answered from the
    postings the top read, with no statement, and the answers are those of the term-by-term
    statements. (A term the parser turns into several lexemes would still be asked about in one
    statement each way for every term.)"""
    from recallite_core.storage.base import MemoryFilter

    store, terms = mem.store, ["redis", "cache", "server", "absent"]
    with store.reading() as s:
        ids = s.memories.all_ids()
    spy = _Spy(store.conn.raw)
    store.conn.raw = spy
    try:
        with store.reading() as s:
            s.keywords.top("redis cache server absent", MemoryFilter(), 10, (0.3, 1.0, 0.5))
            top = len(spy.sent)
            batched = {t: (s.keywords.document_frequency(t), s.keywords.holding(t, ids)) for t in terms}
            assert len(spy.sent) == top
    finally:
        store.conn.raw = spy.raw
    assert not [q for q in spy.sent if "to_tsquery('recallite_english', %s)" in q]
    with store.transaction() as s:  # outside a snapshot: the statement per term
        single = {t: (s.keywords.document_frequency(t), s.keywords.holding(t, ids)) for t in terms}
    assert batched == single and batched["cache"][0] == 2 and batched["server"][1] and batched["absent"] == (0, [])


def test_a_remember_that_contradicted_three_memories_sent_one_statement_for_their_states_and_one_for_the_links(
        postgres_db_url):
    m = Recallite.open(postgres_db_url, embedder="hash")
    try:
        olds = [m.remember(f"Writer 1 run a note {i}: the deploy of service 5 took {secs} seconds.", type="observation").id
                for i, secs in ((5, 35), (18, 29), (31, 23))]
        with _spying(m) as spy:
            new = m.remember("Writer 1 run a note 44: the deploy of service 5 took 17 seconds.", type="observation")
        assert all(o in (new.correction or "") for o in olds)  # it conflicts with all three (what this is about)
        with m.store.reading() as s:
            linked = s.relations.effects([int(o.split("_")[1]) for o in olds], "contradicts")
        assert sorted(f for f, _t, _e in linked if f == int(new.id.split("_")[1])) == [int(new.id.split("_")[1])] * 3
        # One statement reads (and locks) the three, one writes the three links: none per memory,
        # and the new memory's own source is known, not read back.
        assert sum(s.startswith("SELECT id, status, source_type") for s in spy.sent) == 1
        assert sum(s.startswith("INSERT INTO relations") for s in spy.sent) == 1
        assert not [s for s in spy.sent if s.startswith("SELECT source_type, metadata")]
    finally:
        m.close()


def test_a_remember_sent_its_duplicate_check_inside_a_transaction_of_its_own(mem):
    with _spying(mem) as spy:
        new = mem.remember("The staging server runs on port 8080.")
    # The first check is one statement on its own: no BEGIN ... ROLLBACK around it (a round trip
    # saved); the write unit checks again under its text lock, so a race still finds the winner.
    assert not [s for s in spy.sent if "READ ONLY" in s or s == "ROLLBACK"]
    assert sum(s.startswith("SELECT id FROM memories WHERE content_hash") for s in spy.sent) == 2
    assert sum(s == "COMMIT" for s in spy.sent) == 1
    assert mem.remember("The staging server runs on port 8080.").duplicate_of == new.id


def test_a_feedback_read_its_task_name_before_taking_the_learning_lock(mem):
    """Two processes' feedbacks on one retrieval, under two names, both read 'no feedback yet' and
    the second renamed what the first had reported: the lock now comes before the checks."""
    r = mem.recall("redis cache")
    with _spying(mem) as spy:
        mem.feedback(r.retrieval_id, "success", task="warm the cache")
    lock = next(i for i, s in enumerate(spy.sent) if s.startswith("SELECT pg_advisory_xact_lock(%s)"))
    read = next(i for i, s in enumerate(spy.sent) if s.startswith("SELECT id, query, kind, profile, scope, created_at, "
                                                                   "tokens_served, task FROM retrievals"))
    assert lock < read
