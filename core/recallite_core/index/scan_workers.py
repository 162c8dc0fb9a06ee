"""Vector scans in a pool of worker processes.

Each worker is a ``spawn``-ed process that opens its own read-only connection to the WAL
database (``file:...?mode=ro``, ``query_only``, ``busy_timeout``; never an inherited one),
keeps one shard of the vector matrix (ids with ``id % size == index``, a
:class:`~recallite_core.index.vector_index.VectorIndex`) and refreshes it incrementally from the
store's change counter before every scan, so new, changed and deleted vectors are seen,
whichever process wrote them. Workers never write.

One scan goes to every worker; each returns the exact top-k of its shard and
:func:`~recallite_core.index.vector_index.merge_top` makes the global top-k: the same ids, order
and scores as the inline scan (see ``vector_index`` on exactness).

The pool is usable from threads (blocking :meth:`ScanPool.search`, or :meth:`ScanPool.submit`
which returns a :class:`concurrent.futures.Future`) and from asyncio (:meth:`ScanPool.asearch`).
Failures are typed: :class:`WorkerTimeoutError`, :class:`QueueFullError`,
:class:`ScanAbortedError`, :class:`WorkerCrashedError` (all :class:`ScanError`).

Usage::

    mem = Recallite.open("agent-memory.db", workers="auto")   # or True / {"size": 2, ...}
    mem.recall("...")              # routed to the pool only above the size thresholds
    mem.close(drain_timeout=5.0)   # running scans finish, then the workers stop

    pool = ScanPool(path, dims, WorkerOptions(size=2))
    res = pool.search(qvec, 50, flt)            # blocking, from any thread
    fut = pool.submit(qvec, 50, flt); fut.cancel()   # concurrent.futures; cancel aborts
    res = await pool.asearch(qvec, 50, flt)     # asyncio; cancelling the task aborts

As with any ``spawn`` start method, a script that opens a pool must guard its entry
point with ``if __name__ == "__main__":`` (console scripts and ``python -m`` already do).
"""

from __future__ import annotations

import collections
import concurrent.futures
import itertools
import logging
import multiprocessing
import os
import threading
import time
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from recallite_core.errors import (
    InvalidInputError,
    QueueFullError,
    ScanAbortedError,
    ScanError,
    WorkerCrashedError,
    WorkerTimeoutError,
)
from recallite_core.index.vector_index import VectorIndex, merge_stats, merge_top
from recallite_core.storage.sqlite.reader import SnapshotReader

log = logging.getLogger("recallite.scan")

FALLBACKS = ("error", "inline")
# Thread pools of BLAS/OpenMP in a worker would fight the other workers for the cores.
_WORKER_ENV = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
_ENV_LOCK = threading.Lock()


def default_pool_size() -> int:
    """``"auto"``: one core left to the server process, at most 4 workers."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return min(max(1, cpus - 1), 4)


@dataclass(frozen=True)
class WorkerOptions:
    """How and when vector scans leave the server process.

    A scan goes to the workers only when the store holds at least ``min_vector_count``
    vectors *and* ``vectors x dimensions >= min_scan_operations``; smaller stores are
    scanned inline (a round trip costs more than the scan). At most
    ``max_concurrent_scans`` scans run at once, ``max_queue`` more wait; one more is
    refused with :class:`QueueFullError`. ``task_timeout`` (seconds, queue wait included)
    bounds every scan. ``fallback="inline"`` answers a failed scan in process instead of
    raising (a full queue, a timeout or a crash).
    """

    size: int | str = "auto"
    min_vector_count: int = 2000
    min_scan_operations: int = 1_000_000
    max_concurrent_scans: int = 2
    task_timeout: float = 10.0
    max_queue: int = 100
    fallback: str = "error"

    @property
    def workers(self) -> int:
        return default_pool_size() if self.size == "auto" else int(self.size)

    def wants(self, vector_count: int, dimensions: int) -> bool:
        """Whether a store of this size should be scanned by the pool."""
        return vector_count >= self.min_vector_count and vector_count * dimensions >= self.min_scan_operations

    @classmethod
    def parse(cls, spec: Any) -> "WorkerOptions | None":
        """``False``/``None`` -> no pool; ``True`` -> defaults; ``"auto"`` -> defaults with
        ``fallback="inline"`` (and no pool on a single core); a dict -> those options."""
        if spec is None or spec is False:
            return None
        if isinstance(spec, WorkerOptions):
            opts = spec
        elif spec is True:
            opts = cls()
        elif spec == "auto":
            if default_pool_size() < 1 or (os.cpu_count() or 1) < 2:
                return None
            opts = cls(fallback="inline")
        elif isinstance(spec, dict):
            known = {f.name for f in fields(cls)}
            unknown = set(spec) - known
            if unknown:
                raise InvalidInputError(
                    f"Unknown worker options: {', '.join(sorted(unknown))}. Known: {', '.join(sorted(known))}."
                )
            opts = cls(**spec)
        else:
            raise InvalidInputError(f"workers must be False, True, 'auto' or a dict of options, got {spec!r}.")
        opts.check()
        return opts

    def check(self) -> None:
        if not (self.size == "auto" or (isinstance(self.size, int) and not isinstance(self.size, bool) and self.size >= 1)):
            raise InvalidInputError(f"workers size must be 'auto' or a whole number >= 1, got {self.size!r}.")
        for name in ("min_vector_count", "min_scan_operations", "max_queue"):
            if int(getattr(self, name)) < 0:
                raise InvalidInputError(f"workers {name} must be >= 0.")
        if int(self.max_concurrent_scans) < 1:
            raise InvalidInputError("workers max_concurrent_scans must be >= 1.")
        if not float(self.task_timeout) > 0:
            raise InvalidInputError("workers task_timeout must be a positive number of seconds.")
        if self.fallback not in FALLBACKS:
            raise InvalidInputError(f"workers fallback must be 'error' or 'inline', got {self.fallback!r}.")


@dataclass
class ScanResult:
    ids: np.ndarray  # int64 memory ids, best first
    sims: np.ndarray  # float64 exact cosine similarities
    vector_count: int  # vectors the workers held (all shards) when they scanned
    seq: int  # the oldest change counter among the shards' snapshots
    elapsed: float  # seconds from submit to merge
    stats: tuple[int, int, int] = (0, 0, 0)  # count, sum, sum of squares of the cosine over filtered rows (vector_index._stats)


# -- the worker process ----------------------------------------------------------------------------
def _worker_main(conn, path: str, dimensions: int, shard: tuple[int, int] | None, busy_timeout_ms: int) -> None:
    """Entry point of a worker process: open read-only, load the shard, answer scans."""
    from recallite_core.retrieval.candidates import scan_filter_for  # the same filter code as the inline scan

    try:
        db = SnapshotReader(path, busy_timeout_ms)
        index = VectorIndex(dimensions, shard)
        with db.snapshot() as session:
            index.refresh(session)
        conn.send(("ready", os.getpid(), len(index)))
    except BaseException as exc:  # report, then exit: the pool counts it as a crash
        try:
            conn.send(("failed", f"{type(exc).__name__}: {exc}"))
        except Exception:
            pass
        return
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError, KeyboardInterrupt):
            break
        if msg[0] == "stop":
            break
        if msg[0] != "scan":
            continue
        _, tid, query, k, flt = msg
        reply: tuple[Any, ...]  # ("result", tid, ids, sims, count, seq, stats) or ("error", tid, message)
        try:
            with db.snapshot() as session:
                index.refresh(session)
                ids, sims, stats = index.search_with_stats(
                    query, k, scan_filter_for(session, flt) if flt is not None else None)
            reply = ("result", tid, ids, sims, len(index), index.seq, stats)
        except Exception as exc:
            reply = ("error", tid, f"{type(exc).__name__}: {exc}")
        try:
            conn.send(reply)
        except (OSError, EOFError):
            break
    try:
        db.close()
    except Exception:
        pass


# -- the pool, in the server process -----------------------------------------------------------------
class ScanFuture(concurrent.futures.Future):
    """A scan's future. ``cancel()`` aborts it queued *or* running: ``result()`` then raises
    :class:`ScanAbortedError` (a running part still finishes in its worker, discarded)."""

    def __init__(self, pool: "ScanPool", scan: "_Scan"):
        super().__init__()
        self._pool = pool
        self._scan = scan

    def cancel(self) -> bool:
        return self._pool._abort(self._scan, ScanAbortedError(
            "The vector scan was cancelled by the caller; nothing was returned. Retry the recall if it is still needed."
        ))


@dataclass(eq=False)
class _Scan:
    tid: int
    query: np.ndarray
    k: int
    flt: Any
    submitted: float
    deadline: float
    # Set by submit right after construction (the future holds its scan): never None once queued.
    future: ScanFuture = field(init=False)
    dispatched: float = 0.0
    waiting_on: set = field(default_factory=set)  # worker slots still holding a part
    parts: list = field(default_factory=list)
    stats: list = field(default_factory=list)
    counts: int = 0
    seq: int | None = None


class _Worker:
    def __init__(self, slot: int, process, conn):
        self.slot = slot
        self.process = process
        self.conn = conn
        self.ready = threading.Event()
        self.dead = False
        self.pending: dict[int, _Scan] = {}
        self.ready_at = 0.0
        self.vectors = 0
        self.reader: threading.Thread | None = None


class ScanPool:
    """Worker processes that scan one SQLite file's vectors. Thread-safe.

    Start is lazy (first :meth:`submit`) or explicit (:meth:`start`). A killed worker is
    replaced; the scans it held fail with :class:`WorkerCrashedError`.
    """

    MAX_RESTARTS = 5  # per slot within RESTART_WINDOW seconds, then the pool gives up
    RESTART_WINDOW = 60.0

    def __init__(self, path: str, dimensions: int, options: WorkerOptions | None = None, *, busy_timeout_ms: int = 5000):
        if not path:
            raise InvalidInputError("A worker pool needs a database file; in-memory stores are scanned inline.")
        self.path = path
        self.dimensions = int(dimensions)
        self.options = options or WorkerOptions()
        self.options.check()
        self.size = self.options.workers
        self.busy_timeout_ms = busy_timeout_ms
        self._ctx = multiprocessing.get_context("spawn")
        self._lock = threading.RLock()
        self._cond = threading.Condition(self._lock)
        self._workers: list[_Worker | None] = [None] * self.size
        self._queue: collections.deque[_Scan] = collections.deque()
        self._running: set[_Scan] = set()
        self._tids = itertools.count(1)
        self._started = False
        self._closed = False
        self._stopping = False
        self._broken: str | None = None
        self._restarts: dict[int, list[float]] = collections.defaultdict(list)
        self._watchdog: threading.Thread | None = None
        self.crashes = 0
        self.completed = 0
        self.last_vector_count: int | None = None

    # -- lifecycle -------------------------------------------------------------------------
    def start(self, wait: bool = True, timeout: float | None = 120.0) -> "ScanPool":
        """Spawn the workers (idempotent). ``wait``: until each has loaded its shard."""
        with self._lock:
            if self._closed:
                raise ScanAbortedError("The scan pool is closed. Open the store again to scan with workers.")
            if self._broken:
                raise WorkerCrashedError(self._broken)
            if not self._started:
                self._started = True
                for slot in range(self.size):
                    self._spawn(slot)
                self._watchdog = threading.Thread(target=self._watch, name="recallite-scan-watchdog", daemon=True)
                self._watchdog.start()
            workers = list(self._workers)
        if wait:
            end = None if timeout is None else time.monotonic() + timeout
            for w in workers:
                left = None if end is None else max(0.0, end - time.monotonic())
                if w is not None and not w.ready.wait(left):
                    raise WorkerTimeoutError(
                        f"Scan workers did not load the vectors of {self.path} within {timeout:.0f} s. "
                        "Check the file is readable and the machine has free memory, or use workers=False."
                    )
            if self._broken:
                raise WorkerCrashedError(self._broken)
        return self

    def _spawn(self, slot: int) -> None:
        """Start the worker of ``slot`` (caller holds the lock)."""
        parent, child = self._ctx.Pipe(duplex=True)
        shard = None if self.size == 1 else (slot, self.size)
        proc = self._ctx.Process(
            target=_worker_main,
            args=(child, self.path, self.dimensions, shard, self.busy_timeout_ms),
            name=f"recallite-scan-{slot}",
            daemon=True,
        )
        with _ENV_LOCK:  # spawn copies os.environ at start
            saved = {k: os.environ.get(k) for k in _WORKER_ENV}
            os.environ.update(_WORKER_ENV)
            try:
                proc.start()
            finally:
                for k, v in saved.items():
                    if v is None:
                        os.environ.pop(k, None)
                    else:
                        os.environ[k] = v
        child.close()
        w = _Worker(slot, proc, parent)
        self._workers[slot] = w
        w.reader = threading.Thread(target=self._read, args=(w,), name=f"recallite-scan-reader-{slot}", daemon=True)
        w.reader.start()

    def close(self, drain_timeout: float = 5.0) -> None:
        """Refuse new scans, let queued and running ones finish for up to ``drain_timeout``
        seconds, abort what is left (:class:`ScanAbortedError`), then stop the workers."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            end = time.monotonic() + max(0.0, drain_timeout)
            while (self._queue or self._running) and time.monotonic() < end:
                self._cond.wait(min(0.05, max(0.0, end - time.monotonic())))
            err = ScanAbortedError("The scan pool was closed before this scan finished. Reopen the store and retry.")
            busy = bool(self._queue or self._running)
            self._stopping = True  # from here on nothing is dispatched
            for scan in list(self._queue) + list(self._running):
                self._fail(scan, err)
            self._queue.clear()
            workers = [w for w in self._workers if w is not None]
            self._cond.notify_all()
        for w in workers:
            try:
                w.conn.send(("stop",))
            except (OSError, EOFError, ValueError):
                pass
        for w in workers:
            w.process.join(timeout=0.3 if busy else 2.0)  # a busy worker did not drain: no more grace
            if w.process.is_alive():
                w.process.kill()
                w.process.join(timeout=2.0)
            try:
                w.conn.close()
            except OSError:
                pass
        for w in workers:
            if w.reader is not None and w.reader is not threading.current_thread():
                w.reader.join(timeout=2.0)
        if self._watchdog is not None:
            self._watchdog.join(timeout=2.0)

    @property
    def closed(self) -> bool:
        return self._closed

    def pids(self) -> list[int | None]:
        with self._lock:
            return [None if w is None else w.process.pid for w in self._workers]

    def stats(self) -> dict:
        with self._lock:
            return {
                "size": self.size, "started": self._started, "queued": len(self._queue),
                "running": len(self._running), "completed": self.completed, "crashes": self.crashes, "broken": self._broken,
                "vectors": self.last_vector_count, "pids": [None if w is None else w.process.pid for w in self._workers],
            }

    def wants(self, vector_count: int) -> bool:
        """Whether a store of this size goes to the pool. A broken pool still says yes: its
        submit raises WorkerCrashedError and the caller's fallback decides."""
        return not self._closed and self.options.wants(vector_count, self.dimensions)

    # -- submitting ----------------------------------------------------------------------------
    def submit(self, query: np.ndarray, k: int, flt: Any = None, *, timeout: float | None = None) -> ScanFuture:
        """Queue a scan; returns at once with a future of :class:`ScanResult`.

        ``flt`` is a ``RecallFilter`` (or None); it is applied inside the scan. Raises
        :class:`QueueFullError` when ``max_queue`` scans already wait.
        """
        if not self._started:
            self.start(wait=False)
        q = np.ascontiguousarray(query, dtype=np.float32).reshape(-1)
        if q.shape[0] != self.dimensions:
            raise InvalidInputError(f"The query vector has {q.shape[0]} dimensions; the store uses {self.dimensions}.")
        now = time.monotonic()
        tmo = self.options.task_timeout if timeout is None else float(timeout)
        with self._lock:
            if self._closed:
                raise ScanAbortedError("The scan pool is closed. Open the store again to scan with workers.")
            if self._broken:
                raise WorkerCrashedError(self._broken)
            scan = _Scan(next(self._tids), q, int(k), flt, now, now + tmo)
            scan.future = ScanFuture(self, scan)
            if len(self._running) < self.options.max_concurrent_scans:
                self._dispatch(scan)
            elif len(self._queue) < self.options.max_queue:
                self._queue.append(scan)
            else:
                raise QueueFullError(
                    f"{len(self._queue)} vector scans are already waiting (max_queue={self.options.max_queue}). "
                    "Retry shortly, lower the request rate, or raise workers max_queue / max_concurrent_scans."
                )
            self._cond.notify_all()
            return scan.future

    def search(self, query: np.ndarray, k: int, flt: Any = None, *, timeout: float | None = None) -> ScanResult:
        """Blocking scan. Raises a :class:`ScanError` subclass on failure."""
        fut = self.submit(query, k, flt, timeout=timeout)
        tmo = self.options.task_timeout if timeout is None else float(timeout)
        try:
            return fut.result(timeout=tmo + 5.0)  # the watchdog fails it at the deadline
        except concurrent.futures.TimeoutError:
            fut.cancel()
            raise WorkerTimeoutError(f"The vector scan took longer than {tmo:.1f} s. Retry, or raise task_timeout.") from None

    async def asearch(self, query: np.ndarray, k: int, flt: Any = None, *, timeout: float | None = None) -> ScanResult:
        """The scan from asyncio: never blocks the event loop. Cancelling the awaiting task
        aborts the scan (queued or running)."""
        import asyncio  # only asyncio callers pay its import

        if not self._started:
            await asyncio.get_running_loop().run_in_executor(None, self.start)
        fut = self.submit(query, k, flt, timeout=timeout)
        try:
            return await asyncio.wrap_future(fut)
        except asyncio.CancelledError:
            fut.cancel()
            raise

    # -- internals (all under self._lock) ------------------------------------------------------
    def _dispatch(self, scan: _Scan) -> None:
        scan.dispatched = time.monotonic()
        scan.future.set_running_or_notify_cancel()
        self._running.add(scan)
        msg = ("scan", scan.tid, scan.query, scan.k, scan.flt)
        for w in self._workers:
            if w is None or w.dead:
                self._fail(scan, WorkerCrashedError(
                    "A scan worker is down and being replaced. Retry the recall in a moment."
                ))
                return
            try:
                w.conn.send(msg)
            except (OSError, EOFError, ValueError):
                self._fail(scan, WorkerCrashedError(
                    "A scan worker died before it got the scan; it is being replaced. Retry the recall in a moment."
                ))
                return
            w.pending[scan.tid] = scan
            scan.waiting_on.add(w.slot)

    def _fail(self, scan: _Scan, exc: ScanError) -> None:
        if not scan.future.done():
            scan.future.set_exception(exc)
        if scan in self._queue:
            self._queue.remove(scan)
        self._release(scan)

    def _release(self, scan: _Scan) -> None:
        """Free the scan's running slot once no worker holds a part of it (a part of an
        aborted scan still computing in a worker keeps the slot until it answers or dies)."""
        if scan in self._running and not scan.waiting_on:
            self._running.discard(scan)
            self._pump()

    def _pump(self) -> None:
        while (self._queue and len(self._running) < self.options.max_concurrent_scans
               and self._broken is None and not self._stopping):
            self._dispatch(self._queue.popleft())
        self._cond.notify_all()

    def _abort(self, scan: _Scan, exc: ScanError) -> bool:
        with self._lock:
            if scan.future.done():
                return False
            self._fail(scan, exc)
            return True

    def _read(self, w: _Worker) -> None:
        """Reader thread of one worker: results in, crash detection."""
        while True:
            try:
                msg = w.conn.recv()
            except (EOFError, OSError, ValueError):
                break
            except Exception as exc:  # an unpicklable reply: treat the worker as broken
                log.warning("scan worker %s sent an unreadable reply: %r", w.slot, exc)
                break
            kind = msg[0]
            if kind == "ready":
                w.vectors = msg[2]
                w.ready_at = time.monotonic()
                w.ready.set()
                continue
            if kind == "failed":
                log.warning("scan worker %s could not start: %s", w.slot, msg[1])
                break
            with self._lock:
                scan = w.pending.pop(msg[1], None)
                if scan is None:
                    continue
                scan.waiting_on.discard(w.slot)
                if kind == "result":
                    w.vectors = msg[4]
                    scan.parts.append((msg[2], msg[3]))
                    scan.stats.append(msg[6])
                    scan.counts += msg[4]
                    scan.seq = msg[5] if scan.seq is None else min(scan.seq, msg[5])
                    if not scan.waiting_on and not scan.future.done():
                        ids, sims = merge_top(scan.parts, scan.k)
                        self.last_vector_count = scan.counts
                        self.completed += 1
                        scan.future.set_result(
                            ScanResult(ids, sims, scan.counts, scan.seq, time.monotonic() - scan.submitted,
                                       merge_stats(scan.stats))
                        )
                    self._release(scan)
                else:
                    self._fail(scan, ScanError(f"A scan worker failed: {msg[2]}. Retry; if it persists, run reindex."))
        self._crashed(w)

    def _crashed(self, w: _Worker) -> None:
        with self._lock:
            w.dead = True
            w.ready.set()  # nobody waits forever on a dead worker
            if self._closed or self._workers[w.slot] is not w:
                for scan in list(w.pending.values()):
                    scan.waiting_on.discard(w.slot)
                    self._fail(scan, ScanAbortedError("The scan pool was closed before this scan finished."))
                w.pending.clear()
                return
            self.crashes += 1
            code = w.process.exitcode
            log.warning("scan worker %s (pid %s) died (exit code %s); replacing it", w.slot, w.process.pid, code)
            err = WorkerCrashedError(
                f"A scan worker (pid {w.process.pid}) died while scanning (exit code {code}); it is being replaced. "
                "Retry the recall; set workers fallback='inline' to answer in process instead."
            )
            for scan in list(w.pending.values()):
                scan.waiting_on.discard(w.slot)
                self._fail(scan, err)
            w.pending.clear()
            now = time.monotonic()
            recent = [t for t in self._restarts[w.slot] if now - t < self.RESTART_WINDOW]
            recent.append(now)
            self._restarts[w.slot] = recent
            if len(recent) > self.MAX_RESTARTS:
                self._broken = (
                    f"Scan workers for {self.path} crashed {len(recent)} times in {self.RESTART_WINDOW:.0f} s; the pool "
                    "stopped replacing them. Check memory and the database file, then reopen the store (or use workers=False)."
                )
                for scan in list(self._queue) + list(self._running):
                    self._fail(scan, WorkerCrashedError(self._broken))
                self._queue.clear()
                return
            try:
                w.process.join(timeout=0.5)
                w.conn.close()
            except Exception:
                pass
            self._spawn(w.slot)

    def _watch(self) -> None:
        """Fail scans past their deadline; replace a worker stuck on one part too long."""
        with self._lock:
            while not (self._closed and not self._running and not self._queue):
                now = time.monotonic()
                nearest = now + 1.0
                for scan in list(self._queue) + list(self._running):
                    if scan.deadline <= now and not scan.future.done():
                        where = "waiting in the queue" if scan in self._queue else "in the workers"
                        self._fail(scan, WorkerTimeoutError(
                            f"The vector scan took longer than its {scan.deadline - scan.submitted:.1f} s timeout "
                            f"({where}). Retry, raise workers task_timeout, or lower the load."
                        ))
                    elif not scan.future.done():
                        nearest = min(nearest, scan.deadline)
                limit = self.options.task_timeout
                for w in self._workers:
                    if w is None or w.dead or not w.ready_at:
                        continue  # a worker still loading its shard is slow, not stuck
                    stuck = [s for s in w.pending.values() if now - max(s.dispatched, w.ready_at) > limit]
                    if stuck and w.process.is_alive():
                        log.warning("scan worker %s stuck for %.1f s; killing it", w.slot, now - stuck[0].dispatched)
                        w.process.kill()  # its reader sees EOF and replaces it
                self._cond.wait(max(0.005, min(nearest - now, 1.0)))

    def __enter__(self) -> "ScanPool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
