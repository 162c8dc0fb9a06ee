"""Concurrent writers on PostgreSQL (issue 17, docs/postgres.md "Isolation per write path"):
the change feed misses no write that commits late, the per-text lock stores a text once, and a
store sees what another process wrote on its next recall (its in-memory vector matrix follows
the change feed). Wall-clock times are never asserted."""

from __future__ import annotations

import json
import multiprocessing

import numpy as np

NOW = 1_700_000_000.0
DIMS = 8


def _store(url, **kw):
    from recallite_core.storage.postgres import PostgresStore

    return PostgresStore(url, **kw)


def _row(content: str) -> tuple:
    """A NewMemoryRow (storage/base.py gives the column order)."""
    return ("fact", "", content, "active", "user", None, "default", None, json.dumps([]), json.dumps({}),
            0.7, 0.5, 0.5, 0, 0, 0, None, NOW, NOW, f"h-{content}", len(content.split()), None)


def _blob(n: int) -> bytes:
    return np.random.default_rng(n).standard_normal(DIMS).astype("<f4").tobytes()


def test_a_reader_misses_no_write_that_commits_late(postgres_db_url):
    """Writers commit in any order: a reader that caught up while an older writer was still open
    gets that writer's rows once it commits (the watermark stays below an open writer)."""
    slow, fast, reader = _store(postgres_db_url), _store(postgres_db_url), _store(postgres_db_url)
    try:
        with reader.reading() as r:
            start = r.feed.counter()
        with slow.transaction(concurrent=True) as s:
            late = s.memories.insert_many([_row("written first, committed last")], [_blob(1)])[0]
            with fast.transaction(concurrent=True) as f:
                early = f.memories.insert_many([_row("written second, committed first")], [_blob(2)])[0]
            with reader.reading() as r:
                seen = [row[0] for row in r.vectors.changed_rows(start)]
                mark = r.feed.counter()
            assert seen == [early]
        with reader.reading() as r:
            assert late in [row[0] for row in r.vectors.changed_rows(mark)]
            assert r.feed.counter() > mark
    finally:
        for st in (slow, fast, reader):
            st.close()


def test_two_stores_storing_one_text_at_once_store_it_once(postgres_db_url):
    """The duplicate check of a concurrent write holds the text's lock: the second writer waits,
    then finds the first one's row instead of inserting the text again."""
    a, b = _store(postgres_db_url), _store(postgres_db_url)
    try:
        with a.transaction(concurrent=True) as s:
            assert s.memories.duplicate_of("h-same", "default") is None
            mid = s.memories.insert_many([_row("same")], [_blob(3)])[0]
            found: list = []

            def other() -> None:
                with b.transaction(concurrent=True) as t:
                    found.append(t.memories.duplicate_of("h-same", "default"))

            import threading

            th = threading.Thread(target=other)
            th.start()
            th.join(0.5)
            assert th.is_alive()  # waiting for the text's lock
        th.join(30)
        assert found == [mid]
    finally:
        a.close()
        b.close()


def _remember(url: str, text: str, out) -> None:
    from recallite_core import Recallite

    m = Recallite.open(url, embedder="hash")
    try:
        out.put(m.remember(text, type="fact").id)
    finally:
        m.close()


def test_a_store_sees_what_another_process_wrote_on_its_next_recall(postgres_db_url):
    """Process B has its vector matrix loaded; process A writes; B's next recall finds A's memory
    (the matrix follows the change feed, no reopening)."""
    from recallite_core import Recallite

    b = Recallite.open(postgres_db_url, embedder="hash")
    try:
        b.remember("The staging cluster lives in region west.", type="fact")
        b.recall("zebrafish tank heater", limit=5)  # loads the matrix (one memory so far)
        assert b.index.n == 1
        ctx = multiprocessing.get_context("spawn")
        out = ctx.Queue()
        p = ctx.Process(target=_remember, args=(postgres_db_url, "Zebrafish tanks need a heater at 26 C.", out))
        p.start()
        written = out.get(timeout=300)
        p.join(60)
        assert p.exitcode == 0
        r = b.recall("zebrafish tank heater", limit=5)
        assert written in r.ids
        assert b.index.n == 2  # the matrix itself followed, not only the keyword channel (in the server)
    finally:
        b.close()


def test_two_writers_correcting_the_same_two_memories_in_opposite_orders_do_not_deadlock(postgres_db_url):
    """Broke with 8 writers: a remember that corrects two stored memories read each one locked in
    the order its findings came (nearest first), so two writers whose new memories were nearest
    to the two in opposite orders each locked one and waited for the other, and PostgreSQL
    cancelled one ("deadlock detected"). The memories a write corrects are now locked together,
    in id order, before either is read on its own."""
    import threading

    from recallite_core import Recallite
    from recallite_core.policy.corrections import Finding

    setup = Recallite.open(postgres_db_url, embedder="hash", dims=DIMS)
    y = setup.remember("The staging server runs on port 8080.", type="fact").id
    z = setup.remember("The billing service answers on port 7070.", type="fact").id
    setup.close()
    ids = [int(y.removeprefix("mem_")), int(z.removeprefix("mem_"))]
    barrier = threading.Barrier(2, timeout=3)  # both writers hold their first lock, then go on
    errors: list[BaseException] = []

    def write(order: list[int], text: str) -> None:
        m = Recallite.open(postgres_db_url, embedder="hash", dims=DIMS)
        with m.store.reading() as s:  # runs no statement: only the session's memories noun
            memories = s.memories
        read_state, first = memories.state, []

        def state(mid):  # the first memory read on its own: hold it until the other writer has one too
            row = read_state(mid)
            if not first:
                first.append(mid)
                try:  # unfixed: each writer holds one row here and then waits for the other's
                    barrier.wait()
                except threading.BrokenBarrierError:
                    pass  # fixed: the other writer waits for our locks, never reaching this point
            return row

        memories.state = state
        m.writer.find_corrections = lambda conn, items: [[Finding(i, "contradict", False, "test") for i in order]]
        try:
            m.remember(text, type="fact")
        except BaseException as exc:  # noqa: BLE001  reported below
            errors.append(exc)
        finally:
            m.close()

    threads = [threading.Thread(target=write, args=(ids, "Writer A saw a change.")),
               threading.Thread(target=write, args=(ids[::-1], "Writer B saw another change."))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    check = Recallite.open(postgres_db_url, embedder="hash", dims=DIMS)
    try:
        assert check.stats().memories == 4
    finally:
        check.close()
