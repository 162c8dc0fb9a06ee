"""Recallite.inspection(): the read-only views behind the memory browser."""

from __future__ import annotations

import threading

import pytest

from recallite_core import InvalidInputError, MemoryNotFoundError, Recallite, RetrievalNotFoundError


@pytest.fixture
def seeded(file_mem):
    m = file_mem
    a = m.remember("Run pytest with -x.", type="lesson", tags=["testing"], scope="proj")
    b = m.remember("Never push to main.", type="constraint", scope="proj", tags=["git"])
    c = m.remember("Staging listens on 5433.", type="fact", source="llm", scope="proj")
    d = m.remember("Tabs in Makefiles.", type="preference", scope="user")
    return m, a, b, c, d


def test_memories_filter_by_everything_newest_first_with_a_total(seeded):
    m, a, b, c, d = seeded
    look = m.inspection()
    page = look.memories()
    assert [x.id for x in page.memories] == [d.id, c.id, b.id, a.id] and page.total == 4 and page.next_offset is None
    assert [x.id for x in look.memories(sources=["llm"]).memories] == [c.id]
    assert [x.id for x in look.memories(scope="user").memories] == [d.id]
    assert [x.id for x in look.memories(types=["lesson", "constraint"]).memories] == [b.id, a.id]
    assert [x.id for x in look.memories(statuses=["candidate"]).memories] == [c.id]
    assert [x.id for x in look.memories(tags=["git", "testing"]).memories] == [b.id, a.id]
    two = look.memories(limit=2)
    assert len(two.memories) == 2 and two.total == 4 and two.next_offset == 2
    assert look.memories(limit=2, offset=2).next_offset is None
    with pytest.raises(InvalidInputError, match="Unknown source 'robot'"):
        look.memories(sources=["robot"])
    with pytest.raises(InvalidInputError, match="Unknown status"):
        look.memories(statuses=["gone"])
    assert look.scopes() == {"proj": 3, "user": 1}
    m.relate(a.id, b.id, "supports")
    assert look.relation_totals([a.id, b.id, c.id]) == {a.id: 1, b.id: 1}


def test_retrieval_log_outcomes_and_success_over_time(seeded):
    m, a, b, c, d = seeded
    r1 = m.recall("pytest", scope="proj")
    m.feedback(r1.retrieval_id, "success", used_memory_ids=[a.id], reason="worked")
    r2 = m.recall("tabs", scope="user")
    m.feedback(r2.retrieval_id, "failure")
    look = m.inspection()
    log = look.retrievals()
    assert [e.id for e in log] == [r2.retrieval_id, r1.retrieval_id]
    assert log[1].feedback[0].outcome == "success" and log[1].feedback[0].reason == "worked"
    assert log[1].feedback[0].used_ids == [a.id] and log[1].scopes == ["proj"] and log[1].hits >= 1
    assert [e.id for e in look.retrievals(scope="user")] == [r2.retrieval_id]
    entry, items = look.retrieval(r1.retrieval_id)
    assert entry.query == "pytest" and items[0].memory_id == a.id and items[0].memory.content == a.content
    with pytest.raises(RetrievalNotFoundError):
        look.retrieval("ret_999")
    out = look.outcomes(a.id)
    assert out[0].outcome == "success" and out[0].retrieval_id == r1.retrieval_id and out[0].query == "pytest"
    assert out[0].new_usefulness > out[0].old_usefulness == 0.5
    with pytest.raises(MemoryNotFoundError):
        look.outcomes("mem_999")
    days = look.success_over_time()
    assert len(days) == 1 and (days[0].feedback, days[0].successes, days[0].failures) == (2, 1, 1)
    assert look.success_over_time(scope="proj")[0].feedback == 1
    with pytest.raises(InvalidInputError, match="days must be"):
        look.success_over_time(days=0)
    m.forget(a.id)  # the log keeps the retrieval; the item says the memory is gone
    _, items = look.retrieval(r1.retrieval_id)
    assert a.id not in [i.memory_id for i in items]


def test_open_contradictions_and_last_repair(seeded, db_path):
    m, a, b, c, d = seeded
    look = m.inspection()
    assert look.contradictions() == [] and look.reconciled_at() is None
    m.relate(a.id, b.id, "contradicts")
    found = look.contradictions()
    assert [(x.a.id, x.b.id) for x in found] == [(a.id, b.id)]
    assert look.contradictions(scope="user") == []
    m.resolve_conflict(a.id, b.id, keep=b.id)  # a is superseded: no longer open
    assert look.contradictions() == []
    import sqlite3

    with sqlite3.connect(db_path) as raw:
        raw.execute("DELETE FROM vectors WHERE memory_id = ?", (int(c.id[4:]),))
    m.reconcile(repair=True)
    assert look.reconciled_at() is not None


def test_reads_see_other_processes_and_never_wait_for_a_write(seeded, db_path):
    m, *_ = seeded
    look = m.inspection()
    other = Recallite.open(db_path, embedder="hash")
    try:
        new = other.remember("Written by another process.", scope="proj")
    finally:
        other.close()
    assert look.memories().memories[0].id == new.id
    # A write transaction is open on the writer connection; the read answers all the same.
    done = threading.Event()
    got: list = []

    def read():
        got.append(look.memories(limit=1).total)
        done.set()

    with m.store.transaction():
        t = threading.Thread(target=read)
        t.start()
        finished = done.wait(timeout=30)
    t.join()
    assert finished and got == [5]
