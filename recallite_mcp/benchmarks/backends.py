"""PostgreSQL beside SQLite, one run on one machine: `recallite-mcp bench --db postgresql://...`.

For each backend (a SQLite file in a temporary folder, and the PostgreSQL database given) the
same phases on the same synthetic memories (``dataset.py``), hash embedder by default:

- remember (single calls) and remember_many (batches of 100, growing the store);
- recall p50/p95 at each size (10k and 100k by default; ``--quick``: 1k and 5k);
- 10 concurrent recalls (10 threads on one store, wall time for the 10);
- N writer processes (think N machines, default 8), each its own store on the same database,
  remembering at the same moment: the total remembers/s;
- with ``--statements``, each statement's time in the same recalls on PostgreSQL (per recall).

The PostgreSQL database must hold no recallite data yet (a fresh one: the run leaves its
memories there). It measures and prints; it asserts nothing. Numbers on a shared machine move
with its load: the load average is printed with them.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import shutil
import statistics
import sys
import tempfile
import time
from typing import Any, Callable, Iterator, Sequence

from .dataset import memories as make_memories
from .dataset import queries as make_queries
from .timing import concurrent_recalls, time_each

SIZES = (10_000, 100_000)
QUICK_SIZES = (1_000, 5_000)
BATCH = 100


def _ms(samples: Sequence[float], q: float) -> float:
    s = sorted(samples)
    return 1000 * s[min(len(s) - 1, int(q * len(s)))]


def _row(backend: str, operation: str, samples: Sequence[float], items_per_sample: int = 1) -> dict:
    total = sum(samples)
    return {"backend": backend, "operation": operation, "count": len(samples) * items_per_sample,
            "total_s": round(total, 3), "per_s": round(len(samples) * items_per_sample / total, 1) if total else None,
            "p50_ms": round(1000 * statistics.median(samples), 2), "p95_ms": round(_ms(samples, 0.95), 2)}



class _StatementClock:
    """Stands in for the PostgreSQL store's psycopg connection (``store.conn.raw``) and adds up
    the client's wall time per statement text: ``execute`` returns once the server answered, so
    its time is the round trip and the server's work. A unit's BEGIN travels in one pipeline
    with its first statement (storage/postgres/lazy.py): that pipeline's time counts under the
    first statement's text, marked "(with BEGIN)"."""

    def __init__(self, raw: Any):
        self.raw = raw
        self.seconds: dict[str, float] = {}
        self.calls: dict[str, int] = {}
        self._pipelined: list[str] | None = None

    def _add(self, text: str, seconds: float) -> None:
        key = " ".join(text.split())[:100]
        self.seconds[key] = self.seconds.get(key, 0.0) + seconds
        self.calls[key] = self.calls.get(key, 0) + 1

    def execute(self, query: Any, params: Any = None, **kwargs: Any) -> Any:
        if self._pipelined is not None:  # timed with the whole pipeline
            self._pipelined.append(str(query))
            return self.raw.execute(query, params, **kwargs)
        t = time.perf_counter()
        try:
            return self.raw.execute(query, params, **kwargs)
        finally:
            self._add(str(query), time.perf_counter() - t)

    @contextlib.contextmanager
    def pipeline(self) -> Iterator[Any]:
        self._pipelined = sent = []
        t = time.perf_counter()
        try:
            with self.raw.pipeline() as p:
                yield p
        finally:
            self._pipelined = None
            rest = [q for q in sent if not q.startswith(("BEGIN", "SET", "SELECT set_config"))]
            self._add("(with BEGIN) " + (rest[0] if rest else "BEGIN"), time.perf_counter() - t)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.raw, name)


def statement_costs(m: Any, qs: Sequence[str]) -> dict:
    """Each statement's client wall time per recall over ``qs`` on a PostgreSQL-backed Recallite,
    and the recalls' own (the rest is the client: embedding, the vector scan, fusion, policy)."""
    conn = m.store.conn
    clock = _StatementClock(conn.raw)
    conn.raw = clock
    try:
        walls = time_each(lambda q: m.recall(q, limit=10), qs)
    finally:
        conn.raw = clock.raw
    n = len(qs)
    rows = sorted(({"statement": k, "per_recall": round(clock.calls[k] / n, 2), "ms": round(1000 * v / n, 2)}
                   for k, v in clock.seconds.items()), key=lambda r: -r["ms"])
    return {"recalls": n, "recall_p50_ms": round(1000 * statistics.median(walls), 2),
            "recall_mean_ms": round(1000 * sum(walls) / n, 2), "statements": rows}


def _writer(location: str, embedder: str, dims: int, p: int, n: int, ready: Any, start: Any, out: Any,
            detection: bool = True, run: str = "") -> None:
    """One 'machine': its own store on the shared database, n remembers once all are ready. ``run``
    makes the texts new on every run, so a writer phase repeated on one database writes, not
    meets duplicates."""
    from recallite_core import Recallite

    m = Recallite.open(location, embedder=embedder, dims=dims)
    m.config.corrections = detection
    try:
        m.remember(f"Writer {p} is ready to write.", type="fact")  # warm: first embed, statements
        ready.put(p)
        start.wait()
        t0, c0 = time.perf_counter(), time.process_time()
        errors = 0
        for i in range(n):
            try:
                m.remember(f"Writer {p}{run} note {i}: the deploy of service {i % 13} took {i * 7 % 97} seconds.",
                           type="observation", tags=[f"w{p}"])
            except Exception:  # noqa: BLE001  counted and reported
                errors += 1
        out.put((p, time.perf_counter() - t0, time.perf_counter(), errors, time.process_time() - c0))
    finally:
        m.close()


class _ServerCpu:
    """The database server's CPU seconds so far (None: SQLite has no server, or the server is not
    on this machine: storage/postgres/cpu.py)."""

    def __init__(self, location: str):
        from recallite_core.storage import is_postgres_url, open_store

        self._store = open_store(location) if is_postgres_url(location) else None

    def read(self) -> float | None:
        return None if self._store is None else self._store.server_cpu_seconds()

    def close(self) -> None:
        if self._store is not None:
            self._store.close()


def writers(location: str, embedder: str, dims: int, processes: int, per_process: int, detection: bool = True) -> dict:
    """``processes`` writer processes remembering ``per_process`` memories each, started together:
    total remembers per second from the first start to the last finish, the errors, and the CPU
    time per remember (the writers' own, and the database server's over the same window). The
    rate moves with the machine's load; the CPU per remember much less: on C free cores the
    writers can reach at most about C / (client + server CPU per remember) remembers/s."""
    ctx = multiprocessing.get_context("spawn")
    ready, start, out = ctx.Queue(), ctx.Event(), ctx.Queue()
    run = f" run {os.getpid()}-{int(time.time())}"
    procs = [ctx.Process(target=_writer, args=(location, embedder, dims, p, per_process, ready, start, out, detection, run))
             for p in range(processes)]
    for pr in procs:
        pr.start()
    server_cpu = _ServerCpu(location)
    try:
        for _ in procs:  # every writer imported, opened and warm: the clock measures writes only
            ready.get(timeout=600)
        s0 = server_cpu.read()
        t0 = time.perf_counter()
        start.set()
        done = [out.get(timeout=1800) for _ in procs]
        s1 = server_cpu.read()
    finally:
        server_cpu.close()
    for pr in procs:
        pr.join(timeout=60)
    wall = max(end for _, _, end, _, _ in done) - t0
    total = processes * per_process
    client_ms = 1000 * sum(cpu for *_, cpu in done) / total
    server_ms = None if s0 is None or s1 is None else 1000 * (s1 - s0) / total
    return {"processes": processes, "per_process": per_process, "wall_s": round(wall, 2),
            "remembers_per_s": round(total / wall, 1), "errors": sum(e for _, _, _, e, _ in done),
            "client_cpu_ms_per_remember": round(client_ms, 2),
            "server_cpu_ms_per_remember": None if server_ms is None else round(server_ms, 2),
            "loadavg_after": os.getloadavg()}


def run_backend(backend: str, location: str, *, sizes: Sequence[int], embedder: str, dims: int, singles: int,
                queries: int, rounds: int, processes: int, per_process: int, say: Callable[[str], None],
                detection: bool = True, statements: bool = False) -> dict:
    from recallite_core import Recallite

    rows: list[dict] = []
    costs: dict[int, dict] = {}
    items = list(make_memories(max(sizes), seed=1234))
    qs = make_queries(max(queries, 10 * rounds), seed=99)
    m = Recallite.open(location, embedder=embedder, dims=dims)
    m.config.corrections = detection
    try:
        if m.stats().memories:
            raise SystemExit(f"{backend}: the store is not empty; give a fresh database (the run writes into it).")
        say(f"[bench {backend}] remember (single) x {singles}")
        extra = list(make_memories(singles + 1, seed=4242))
        m.remember(**extra[0])
        rows.append(_row(backend, "remember (single)", time_each(lambda it: m.remember(**it), extra[1:])))
        have, batches = 0, []
        for size in sizes:
            say(f"[bench {backend}] remember_many to {size:,}")
            for i in range(have, size, BATCH):
                chunk = items[i: min(size, i + BATCH)]
                t = time.perf_counter()
                m.remember_many(chunk)
                batches.append(time.perf_counter() - t)
            have = size
            say(f"[bench {backend}] recall @{size:,}")
            m.recall(qs[0], limit=10)  # the first recall loads what the store keeps in memory
            rows.append(_row(backend, f"recall @{size:,}", time_each(lambda q: m.recall(q, limit=10), qs[:queries])))
            rows.append(_row(backend, f"10 concurrent recalls @{size:,} (wall for 10)", concurrent_recalls(m, qs, rounds),
                             items_per_sample=10))
            if statements and backend == "postgres":
                say(f"[bench {backend}] statements of a recall @{size:,}")
                costs[size] = statement_costs(m, qs[:queries])
        rows.append(_row(backend, f"remember_many ({BATCH}/batch)", batches, items_per_sample=BATCH))
    finally:
        m.close()
    say(f"[bench {backend}] {processes} writer processes x {per_process} remembers")
    return {"rows": rows, "writers": writers(location, embedder, dims, processes, per_process, detection),
            **({"statements": costs} if costs else {})}


def run(db: str, *, quick: bool = False, sizes: Sequence[int] | None = None, embedder: str = "hash", dims: int = 384,
        processes: int = 8, per_process: int | None = None, skip_sqlite: bool = False,
        say: Callable[[str], None] | None = None, detection: bool = True, statements: bool = False) -> dict:
    say = say or (lambda msg: print(msg, file=sys.stderr, flush=True))
    sizes = sorted(sizes or (QUICK_SIZES if quick else SIZES))
    opts: dict[str, Any] = {
        "sizes": sizes, "embedder": embedder, "dims": dims, "singles": 200 if quick else 1000,
        "queries": 50 if quick else 200, "rounds": 5 if quick else 20, "processes": processes,
        "per_process": per_process or (50 if quick else 250), "say": say, "detection": detection,
        "statements": statements}
    result: dict = {"sizes": sizes, "embedder": embedder, "dims": dims, "detection": detection,
                    "loadavg_at_start": os.getloadavg(),
                    "cpus": os.cpu_count(), "backends": {}}
    tmp = tempfile.mkdtemp(prefix="recallite-bench-db-")
    try:
        if not skip_sqlite:
            result["backends"]["sqlite"] = run_backend("sqlite", os.path.join(tmp, "bench.db"), **opts)
        result["backends"]["postgres"] = run_backend("postgres", db, **opts)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    result["loadavg_at_end"] = os.getloadavg()
    return result


def format_report(result: dict) -> str:
    off = "" if result.get("detection", True) else "correction detection off, "
    lines = [f"recallite-mcp bench --db: PostgreSQL beside SQLite, {result['embedder']} embedder, {result['dims']} dims, "
             f"{off}"
             f"{result['cpus']} cpus; load average {tuple(round(x, 1) for x in result['loadavg_at_start'])} at start, "
             f"{tuple(round(x, 1) for x in result['loadavg_at_end'])} at end", ""]
    head = ("backend", "operation", "count", "per s", "p50 ms", "p95 ms")
    table = [head]
    for name, b in result["backends"].items():
        for r in b["rows"]:
            table.append((name, r["operation"], f"{r['count']:,}", f"{r['per_s']:,.0f}" if r["per_s"] else "-",
                          f"{r['p50_ms']:.2f}", f"{r['p95_ms']:.2f}"))
    widths = [max(len(row[i]) for row in table) for i in range(len(head))]
    for i, row in enumerate(table):
        lines.append("  ".join([row[0].ljust(widths[0]), row[1].ljust(widths[1])]
                               + [c.rjust(w) for c, w in zip(row[2:], widths[2:])]).rstrip())
        if i == 0:
            lines.append("  ".join("-" * w for w in widths))
    lines.append("")
    for name, b in result["backends"].items():
        w = b["writers"]
        server = w.get("server_cpu_ms_per_remember")
        cpu = w["client_cpu_ms_per_remember"] + (server or 0)
        lines.append(f"{name}: {w['processes']} writer processes x {w['per_process']} remembers: "
                     f"{w['remembers_per_s']:,.0f} remembers/s in total ({w['wall_s']} s), errors {w['errors']}; "
                     f"CPU per remember {w['client_cpu_ms_per_remember']:.2f} ms in the writers"
                     + (f" + {server:.2f} ms in the server" if server is not None else "")
                     + f" = at most {1000 * result['cpus'] / cpu:,.0f} remembers/s on {result['cpus']} free cores"
                     + f" (load average after {round(w['loadavg_after'][0], 1)})")
    for size, c in result["backends"].get("postgres", {}).get("statements", {}).items():
        lines += ["", (f"postgres: statements of {c['recalls']} recalls @{int(size):,} (client wall time per recall; "
                       f"these recalls p50 {c['recall_p50_ms']:.2f} ms, mean {c['recall_mean_ms']:.2f} ms; "
                       f"statements {sum(r['ms'] for r in c['statements']):.2f} ms, the rest is the client)")]
        lines += [f"  {r['ms']:7.2f} ms  x{r['per_recall']:<5} {r['statement']}" for r in c["statements"]]
    return "\n".join(lines)


def preflight(url: str) -> str | None:
    """Why the PostgreSQL side cannot run (None: it can), checked before the SQLite side spends
    minutes: the driver extra is installed and the database answers."""
    from recallite_core.errors import StoreError
    from recallite_core.storage.postgres import driver

    try:
        psycopg = driver.load("psycopg")
        driver.load("pgvector.psycopg")
    except StoreError as exc:
        return str(exc)
    try:
        psycopg.connect(url, connect_timeout=10).close()
    except Exception as exc:  # noqa: BLE001  any connection failure is reported the same way
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return f"cannot connect to {driver.masked(url)}: {driver.masked(first)}; check the URL and that the server runs"
    return None


def main(argv: Sequence[str] | None = None) -> int:
    import argparse
    import json

    ap = argparse.ArgumentParser(prog="recallite-mcp bench --db URL", description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", required=True, help="a fresh PostgreSQL database (postgresql://...)")
    ap.add_argument("--quick", action="store_true", help="small sizes (1k, 5k) and fewer operations: minutes, not an hour")
    ap.add_argument("--sizes", type=lambda s: [int(x) for x in s.split(",") if x], default=None,
                    help="comma-separated recall sizes (default 10000,100000)")
    ap.add_argument("--embedder", choices=("hash", "default"), default="hash")
    ap.add_argument("--dims", type=int, default=384)
    ap.add_argument("--writers", type=int, default=8, help="writer processes (default 8)")
    ap.add_argument("--per-writer", type=int, default=None, help="remembers per writer (default 250; --quick 50)")
    ap.add_argument("--postgres-only", action="store_true", help="skip the SQLite side")
    ap.add_argument("--no-detection", action="store_true",
                    help="write-time correction detection off (what the storage costs without it)")
    ap.add_argument("--statements", action="store_true",
                    help="after the recall timing, time each statement of the same recalls on PostgreSQL")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    problem = preflight(args.db)
    if problem:
        print(f"recallite-mcp bench --db: {problem}", file=sys.stderr)
        return 2
    result = run(args.db, quick=args.quick, sizes=args.sizes, embedder=args.embedder, dims=args.dims,
                 processes=args.writers, per_process=args.per_writer, skip_sqlite=args.postgres_only,
                 detection=not args.no_detection, statements=args.statements)
    print(json.dumps(result, indent=2) if args.json else format_report(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
