"""Vector scans in worker processes: the same answers as inline, and every failure typed.

Pools are small (1-2 workers) and thresholds 0 so that small data goes to the workers.
Workers are frozen with SIGSTOP to hold a scan in flight deterministically (no sleeps
standing in for "slow").
"""

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

from recallite_core import (
    InvalidInputError,
    QueueFullError,
    Recallite,
    ScanAbortedError,
    ScanError,
    ScanPool,
    WorkerCrashedError,
    WorkerOptions,
    WorkerTimeoutError,
)
from recallite_core.index.vector_index import VectorIndex, exact_scores, merge_top
from recallite_core.retrieval.candidates import RecallFilter
from recallite_mcp.benchmarks.dataset import memories, queries

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGSTOP"), reason="POSIX signals freeze the workers")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FORCE = {"min_vector_count": 0, "min_scan_operations": 0}
ACTIVE = ("candidate", "validated", "active")


def flt(**kw):
    base = dict(scopes=None, statuses=ACTIVE, types=None, tags=None, sessions=None)
    base.update(kw)
    return RecallFilter(**base)


def wait_until(cond, timeout=20.0, what="condition"):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return
        time.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what}")


def fill(mem, n, seed=7):
    items = list(memories(n, seed=seed))
    for i, item in enumerate(items):  # a few sessions, for the session filter
        item["session"] = f"s{i % 3}" if i % 2 else None
    return mem.remember_many(items)


def same_hits(a, b):
    assert a.ids == b.ids
    for x, y in zip(a.memories, b.memories):
        assert x.score == y.score
        assert x.breakdown == y.breakdown
        assert x.reasons == y.reasons


# -- one shared pair of engines on one file: inline and workers ------------------------------
@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("workers") / "shared.db")
    inline = Recallite.open(path, embedder="hash")
    fill(inline, 600)
    workers = Recallite.open(path, embedder="hash", workers={"size": 2, **FORCE})
    yield inline, workers, path
    workers.close()
    inline.close()


def compare_all(inline, workers, n_queries=25, seed=3):
    rng = np.random.default_rng(seed)
    kinds = [
        {},
        {"scope": "proj-alpha"},
        {"scope": ["default", "proj-beta"]},
        {"types": ["lesson", "procedure"]},
        {"include_inactive": True},
        {"statuses": ["deprecated", "superseded"]},
        {"tags": ["database", "python"]},
        {"session": "s1"},
        {"scope": "proj-gamma", "types": ["fact"], "tags": ["ml", "ops", "api"]},
    ]
    for i, q in enumerate(queries(n_queries, seed=seed)):
        kw = kinds[i % len(kinds)]
        limit = int(rng.integers(1, 30))
        same_hits(inline.recall(q, limit=limit, **kw), workers.recall(q, limit=limit, **kw))
    assert workers.scan_pool.completed > 0


def test_workers_equal_inline_with_filters(pair):
    inline, workers, _ = pair
    compare_all(inline, workers)


def test_raw_scan_equals_inline_on_random_vectors(pair):
    inline, workers, _ = pair
    pool = workers.scan_pool
    pool.start()
    rng = np.random.default_rng(11)
    with inline.store.reading() as conn:
        inline.index.refresh(conn)
        from recallite_core.retrieval.candidates import scan_filter_for

        for i in range(30):
            q = rng.standard_normal(inline.embedder.dimensions).astype(np.float32)
            if i % 2:
                q /= np.linalg.norm(q)
            f = [flt(), flt(scopes=("proj-alpha", "default")), flt(types=("fact",)), flt(tags=("testing",)),
                 flt(statuses=("active",), sessions=("s2",))][i % 5]
            k = int(rng.integers(1, 120))
            ids, sims = inline.index.search(q, k, scan_filter_for(conn, f))
            res = pool.search(q, k, f)
            assert np.array_equal(ids, res.ids)
            assert np.array_equal(sims, res.sims)  # bit-identical scores


def test_deletes_updates_and_second_process_writes_are_seen(pair):
    inline, workers, path = pair
    ids = [m.id for m in inline.list(limit=200)]
    for mid in ids[:40]:
        inline.forget(mid)
    for mid in ids[40:60]:
        inline.deprecate(mid)
    inline.supersede(ids[60], ids[61])
    compare_all(inline, workers, 12, seed=5)

    # Writes by another process between queries: new, changed and deleted vectors.
    script = textwrap.dedent(f"""
        import sys
        sys.path[:0] = [{os.path.join(ROOT, 'core')!r}, {ROOT!r}]
        from recallite_core import Recallite
        m = Recallite.open({path!r}, embedder="hash")
        new = m.remember_many([{{"content": f"second process wrote rollback note {{i}} about the canary", "scope": "proj-alpha"}} for i in range(50)])
        for mem in new[:5]:
            m.forget(mem.id)
        for mem in m.list(limit=30, offset=100):
            if mem.status == "active":
                m.deprecate(mem.id)
        m.close()
    """)
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
    r = workers.recall("rollback note canary", limit=20, scope="proj-alpha")
    assert any("second process" in h.memory.content for h in r.memories)
    compare_all(inline, workers, 12, seed=8)
    same_hits(inline.recall("rollback note canary", limit=20), workers.recall("rollback note canary", limit=20))


def test_reindex_and_many_deletes_reload_the_shards(pair):
    inline, workers, _ = pair
    inline.reindex()
    compare_all(inline, workers, 6, seed=12)


def test_merge_of_shards_is_exact_including_ties():
    rng = np.random.default_rng(0)
    whole = VectorIndex(16)
    shards = [VectorIndex(16, (i, 3)) for i in range(3)]
    mat = rng.standard_normal((500, 16)).astype(np.float32)
    mat[100:140] = mat[7]  # exact ties, broken by id everywhere
    rows = [(i + 1, "default", "active", "fact", None, mat[i].tobytes()) for i in range(500)]
    for idx in [whole, *shards]:
        idx._upsert(rows)
    for k in (1, 10, 45, 200, 600):
        q = mat[7] + 0.001 * rng.standard_normal(16).astype(np.float32)
        ids, sims = whole.search(q, k)
        mids, msims = merge_top([s.search(q, k) for s in shards], k)
        assert np.array_equal(ids, mids) and np.array_equal(sims, msims)
        tied = [i for i in ids if 101 <= i <= 141]
        assert tied == sorted(tied)


def test_exact_scores_do_not_depend_on_the_batch():
    rng = np.random.default_rng(1)
    m = rng.standard_normal((300, 384)).astype(np.float32)
    q = rng.standard_normal(384)
    together = exact_scores(m, q)
    alone = np.array([exact_scores(m[i : i + 1], q)[0] for i in range(300)])
    assert np.array_equal(together, alone)


# -- options and routing ----------------------------------------------------------------------
def test_options_parse_and_validate(db_path):
    assert WorkerOptions.parse(False) is None and WorkerOptions.parse(None) is None
    assert WorkerOptions.parse(True) == WorkerOptions()
    auto = WorkerOptions.parse("auto")
    assert auto is None or auto.fallback == "inline"
    opts = WorkerOptions.parse({"size": 3, "task_timeout": 2.5, "fallback": "inline"})
    assert opts.workers == 3 and opts.task_timeout == 2.5
    assert 1 <= WorkerOptions(size="auto").workers <= 4
    for bad in ({"sise": 2}, {"fallback": "retry"}, {"size": 0}, {"max_concurrent_scans": 0}, {"task_timeout": 0}, "many"):
        with pytest.raises(InvalidInputError):
            WorkerOptions.parse(bad)
    with pytest.raises(InvalidInputError, match="Unknown worker options"):
        Recallite.open(db_path, embedder="hash", workers={"bogus": 1})


def test_in_memory_store_is_always_inline():
    m = Recallite.open(None, embedder="hash", workers={"size": 1, **FORCE})
    assert m.scan_pool is None
    m.add("in memory only")
    assert m.recall("memory").ids
    m.close()


def test_thresholds_route_small_stores_inline(db_path):
    m = Recallite.open(db_path, embedder="hash", workers={"size": 1, "min_vector_count": 100, "min_scan_operations": 0})
    try:
        fill(m, 60)
        m.recall("cache build", limit=5)
        assert not m.scan_pool.stats()["started"]  # 60 < 100: no process was even started
        fill(m, 60, seed=8)
        m.recall("cache build", limit=5)  # 120 >= 100 (counted without a full scan of the table)
        assert m.scan_pool.completed == 1
        assert m.index.seq < 0  # the inline copy was freed once the workers took over
        for mem in m.list(limit=40):
            m.forget(mem.id)
        m.recall("cache build", limit=5)  # 120 - 40 deleted = 80 < 100: back inline
        assert m.scan_pool.completed == 1 and m.index.seq >= 0 and len(m.index) == 80
    finally:
        m.close()
    ops = WorkerOptions(min_vector_count=2000, min_scan_operations=1_000_000)
    assert not ops.wants(1999, 384) and ops.wants(2000, 512) and not ops.wants(2000, 384)


# -- failures: timeout, queue full, cancellation, crash, drain --------------------------------
@pytest.fixture
def small_db(tmp_path):
    path = str(tmp_path / "small.db")
    m = Recallite.open(path, embedder="hash")
    fill(m, 80)
    m.close()
    return path


def make_pool(path, **opts):
    return ScanPool(path, 384, WorkerOptions(**{"size": 1, **FORCE, **opts})).start()


def qvec(seed=0):
    v = np.random.default_rng(seed).standard_normal(384).astype(np.float32)
    return v / np.linalg.norm(v)


def freeze(pool):
    pid = pool.pids()[0]
    os.kill(pid, signal.SIGSTOP)
    return pid


def thaw(pid):
    try:
        os.kill(pid, signal.SIGCONT)
    except ProcessLookupError:
        pass


def test_timeout_is_typed_and_a_stuck_worker_is_replaced(small_db):
    pool = make_pool(small_db, task_timeout=0.3)
    try:
        pid = freeze(pool)
        t = time.monotonic()
        with pytest.raises(WorkerTimeoutError, match="task_timeout"):
            pool.search(qvec(), 10)
        assert time.monotonic() - t < 3
        # Stuck longer than task_timeout on a part: killed and replaced.
        wait_until(lambda: pool.pids()[0] != pid and pool.stats()["crashes"] == 1, what="replacement")
        wait_until(lambda: pool._workers[0].ready.is_set(), what="new worker ready")
        assert len(pool.search(qvec(), 10).ids) == 10
    finally:
        thaw(pid)
        pool.close()


def test_queue_full_is_refused_at_once(small_db):
    pool = make_pool(small_db, max_concurrent_scans=1, max_queue=1)
    pid = freeze(pool)
    try:
        running = pool.submit(qvec(1), 5)
        queued = pool.submit(qvec(2), 5)
        with pytest.raises(QueueFullError, match="max_queue"):
            pool.submit(qvec(3), 5)
        assert pool.stats()["queued"] == 1 and pool.stats()["running"] == 1
    finally:
        thaw(pid)
    assert len(running.result(10).ids) == 5 and len(queued.result(10).ids) == 5
    pool.close()


def test_cancel_queued_and_running_scans(small_db):
    pool = make_pool(small_db, max_concurrent_scans=1)
    pid = freeze(pool)
    try:
        running = pool.submit(qvec(1), 5)
        queued = pool.submit(qvec(2), 5)
        assert queued.cancel() is True
        with pytest.raises(ScanAbortedError, match="cancelled"):
            queued.result(1)
        assert pool.stats()["queued"] == 0
        assert running.cancel() is True
        with pytest.raises(ScanAbortedError):
            running.result(1)  # released at once, although the worker is frozen
        assert running.cancel() is False  # already finished
    finally:
        thaw(pid)
    # The discarded part comes back; its slot is freed and the pool keeps working.
    assert len(pool.search(qvec(3), 7).ids) == 7
    wait_until(lambda: pool.stats()["running"] == 0, what="slot released")
    # An error inside the worker fails that scan only, typed, and the worker lives on.
    with pytest.raises(ScanError, match="worker failed"):
        pool.search(qvec(3), 7, "not a filter")
    assert len(pool.search(qvec(3), 7).ids) == 7 and pool.stats()["crashes"] == 0
    pool.close()


def test_asearch_from_asyncio_and_cancellation(small_db):
    pool = make_pool(small_db)

    async def main():
        res = await pool.asearch(qvec(4), 6)
        assert len(res.ids) == 6
        pid = freeze(pool)
        try:
            task = asyncio.ensure_future(pool.asearch(qvec(5), 6))
            await asyncio.sleep(0.05)
            assert pool.stats()["running"] == 1
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        finally:
            thaw(pid)
        again = await asyncio.gather(*(pool.asearch(qvec(s), 3) for s in range(4)))
        assert all(len(r.ids) == 3 for r in again)

    try:
        asyncio.run(main())
    finally:
        pool.close()


def test_killed_worker_fails_the_scan_cleanly_and_is_replaced(small_db):
    pool = make_pool(small_db)
    pid = freeze(pool)
    fut = pool.submit(qvec(6), 5)
    os.kill(pid, signal.SIGKILL)
    with pytest.raises(WorkerCrashedError, match="died"):
        fut.result(10)
    wait_until(lambda: pool.pids()[0] not in (None, pid), what="replacement")
    assert len(pool.search(qvec(6), 5).ids) == 5
    assert pool.stats()["crashes"] == 1
    pool.close()


def test_crash_falls_back_inline_when_configured(small_db):
    inline = Recallite.open(small_db, embedder="hash")
    m = Recallite.open(small_db, embedder="hash", workers={"size": 1, "fallback": "inline", **FORCE})
    try:
        want = inline.recall("flaky pytest fixture", limit=8)
        same_hits(want, m.recall("flaky pytest fixture", limit=8))
        pid = freeze(m.scan_pool)
        killer = threading.Timer(0.2, os.kill, (pid, signal.SIGKILL))
        killer.start()
        same_hits(want, m.recall("flaky pytest fixture", limit=8))  # answered inline
        killer.join()
        assert m.scan_pool.stats()["crashes"] == 1
    finally:
        m.close()
        inline.close()
    strict = Recallite.open(small_db, embedder="hash", workers={"size": 1, **FORCE})
    try:
        strict.recall("warm up the pool", limit=3)
        pid = freeze(strict.scan_pool)
        killer = threading.Timer(0.2, os.kill, (pid, signal.SIGKILL))
        killer.start()
        with pytest.raises(WorkerCrashedError):
            strict.recall("flaky pytest fixture", limit=8)
        killer.join()
        wait_until(lambda: strict.scan_pool._workers[0].ready.is_set() and not strict.scan_pool._workers[0].dead)
        assert strict.recall("flaky pytest fixture", limit=8).ids  # the replacement answers
    finally:
        strict.close()


def test_close_drains_running_scans_then_stops(small_db):
    pool = make_pool(small_db, max_concurrent_scans=1)
    pid = freeze(pool)
    running = pool.submit(qvec(1), 4)
    queued = pool.submit(qvec(2), 4)
    threading.Timer(0.2, thaw, (pid,)).start()
    pool.close(drain_timeout=10)
    assert len(running.result(0).ids) == 4 and len(queued.result(0).ids) == 4  # drained, not dropped
    with pytest.raises(ScanAbortedError, match="closed"):
        pool.submit(qvec(3), 4)
    wait_until(lambda: not any(os.path.exists(f"/proc/{p}") and open(f"/proc/{p}/stat").read().split()[2] != "Z"
                               for p in [pid]), what="worker exit")


def test_close_aborts_what_does_not_drain_in_time(small_db):
    pool = make_pool(small_db)
    pid = freeze(pool)
    try:
        fut = pool.submit(qvec(1), 4)
        t = time.monotonic()
        pool.close(drain_timeout=0.2)
        assert time.monotonic() - t < 6
        with pytest.raises(ScanAbortedError, match="closed"):
            fut.result(0)
    finally:
        thaw(pid)


def test_recallite_close_drains_the_pool(small_db):
    m = Recallite.open(small_db, embedder="hash", workers={"size": 1, **FORCE})
    m.recall("deploy canary", limit=3)
    pid = m.scan_pool.pids()[0]
    m.close(drain_timeout=1.0)
    assert m.scan_pool.closed
    wait_until(lambda: not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split()[2] == "Z",
               what="worker exit")


def test_scan_errors_are_one_family():
    for cls in (WorkerTimeoutError, QueueFullError, ScanAbortedError, WorkerCrashedError):
        assert issubclass(cls, ScanError)
        assert cls.code != ScanError.code


def test_inline_scan_in_a_helper_thread_gives_the_same_answers(pair, monkeypatch):
    inline, _, _ = pair
    want = [inline.recall(q, limit=12, scope=["default", "proj-alpha"]) for q in queries(6, seed=21)]
    monkeypatch.setattr(inline.retriever, "PARALLEL_SCAN_OPS", 0)  # every scan overlaps the FTS query
    got = [inline.recall(q, limit=12, scope=["default", "proj-alpha"]) for q in queries(6, seed=21)]
    assert inline.retriever._scan_thread is not None
    for a, b in zip(want, got):
        same_hits(a, b)


def test_a_pool_whose_workers_keep_dying_gives_up_cleanly(tmp_path):
    bad = tmp_path / "not-a-db.db"
    bad.write_bytes(b"garbage, not sqlite" * 200)
    pool = ScanPool(str(bad), 384, WorkerOptions(size=1, **FORCE))
    pool.MAX_RESTARTS = 1  # the second death in the window stops the replacing
    try:
        pool.start()
        with pytest.raises(WorkerCrashedError):
            pool.search(qvec(), 5)
        wait_until(lambda: pool.stats()["broken"], what="pool gives up")
        with pytest.raises(WorkerCrashedError, match="stopped replacing"):
            pool.submit(qvec(), 5)
    finally:
        pool.close(drain_timeout=0)


def test_a_broken_pool_errors_or_falls_back_as_configured(small_db):
    for fallback in ("error", "inline"):
        m = Recallite.open(small_db, embedder="hash", workers={"size": 1, "fallback": fallback, **FORCE})
        try:
            m.scan_pool._broken = "Scan workers crashed too often (simulated)."
            if fallback == "error":
                with pytest.raises(WorkerCrashedError, match="simulated"):
                    m.recall("flaky pytest fixture", limit=3)
            else:
                assert m.recall("flaky pytest fixture", limit=3).ids  # answered inline
                assert m.scan_pool.pids() == [None]  # no worker was ever started
        finally:
            m.close()


def test_the_follow_up_step_scans_through_the_workers_too(tmp_path):
    """The correction step that looks for what became of the best hit (its nearest later turn) runs
    one more scan: by the workers when they hold the vectors, with the answer of the inline scan."""
    path = str(tmp_path / "turns.db")
    inline = Recallite.open(path)
    said = ("My phone plan is 12 a month for 20GB of data.", "I bake sourdough most weekends.",
            "Now I'm paying 18 a month, but the data's unlimited.")
    for n, text in enumerate(said):
        at = 1_700_000_000 + n * 3_000_000
        inline.record_turns([{"role": "user", "content": text, "timestamp": at},
                             {"role": "assistant", "content": "Good to know.", "timestamp": at + 60}],
                            session=f"s{n + 1}", scope="p")
    workers = Recallite.open(path, workers={"size": 1, **FORCE})
    try:
        question = "What does the user's mobile contract cost?"
        got = [[h.memory.content for h in m.recall(question, scope="p", limit=3).memories] for m in (inline, workers)]
        assert got[0] == got[1]
        assert got[1][0] == said[2]
        assert workers.scan_pool.completed == 2  # the question's scan, then the best hit's
    finally:
        workers.close()
        inline.close()
