"""Performance benchmark: `recallite-mcp bench` / `python -m recallite_mcp.benchmarks.performance`.

Measures, on deterministic synthetic memories (``dataset.py``), the operations an agent
loop runs — remember, remember_many, recall (inline and in worker processes), ten
concurrent recalls, format_context, feedback, reinforce, reindex, cold start — and prints
one table with count, total, throughput, avg, p50 and p95, the machine it ran on, and
peak RSS. In the same run it measures the floor of a vector search, a bare numpy matmul +
argpartition over the very same matrix, and prints every recall figure as a ratio to it.

It measures and prints; it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any, Callable, Sequence

import numpy as np

from .dataset import memories as make_memories
from .dataset import queries as make_queries
from .timing import concurrent_recalls, time_each

DEFAULT_SIZES = (10_000, 100_000)
BATCH = 100


# -- measuring ---------------------------------------------------------------------------------
def _row(operation: str, samples: Sequence[float], *, count: int | None = None, items_per_sample: int = 1,
         unit: str = "ops", floor_ms: float | None = None, note: str = "") -> dict:
    """One table row from per-sample seconds. Throughput counts items (items_per_sample each)."""
    s = sorted(samples)
    total = float(sum(s))
    n = len(s)
    count = n * items_per_sample if count is None else count
    row = {
        "operation": operation,
        "count": count,
        "total_s": round(total, 4),
        "throughput": round(count / total, 1) if total > 0 else None,
        "unit": f"{unit}/s",
        "avg_ms": round(1000 * total / n, 3) if n else None,
        "p50_ms": round(1000 * statistics.median(s), 3) if n else None,
        "p95_ms": round(1000 * s[min(n - 1, int(round(0.95 * (n - 1))))], 3) if n else None,
        "note": note,
    }
    if floor_ms:
        row["floor_p50_ms"] = round(floor_ms, 3)
        row["x_floor"] = round(row["p50_ms"] / floor_ms, 2)
    return row



def _rss_mb(pid: int | None = None) -> float | None:
    try:
        with open(f"/proc/{pid or 'self'}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def _peak_rss_mb() -> dict:
    scale = 1024 if sys.platform != "darwin" else 1024 * 1024  # ru_maxrss: KiB on Linux, bytes on macOS
    return {
        "self_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / scale, 1),
        "largest_child_mb": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / scale, 1),
    }


def machine_info() -> dict:
    blas = "unknown"
    try:
        cfg = np.show_config(mode="dicts")  # numpy >= 1.26
        b = cfg.get("Build Dependencies", {}).get("blas", {})
        blas = f"{b.get('name', '?')} {b.get('version', '')}".strip()
    except Exception:
        pass
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count()
    cpu_model = platform.processor() or ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu_model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    info = {
        "cpus": cpus,
        "cpu": cpu_model,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "blas": blas,
        "sqlite": sqlite3.sqlite_version,
        "platform": platform.platform(),
        "blas_env": {k: v for k, v in os.environ.items() if k.startswith(("OPENBLAS", "OMP_", "MKL_"))},
    }
    try:
        info["loadavg_at_start"] = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        pass
    return info


# -- phases ------------------------------------------------------------------------------------
def _open(path: str, embedder: str, dims: int, workers: Any = False):
    from recallite_core import Recallite

    return Recallite.open(path, embedder=embedder, dims=dims, workers=workers)


def _bench_remember_single(tmp: str, embedder: str, dims: int, n: int) -> dict:
    path = os.path.join(tmp, "single.db")
    items = list(make_memories(n, seed=4242))
    m = _open(path, embedder, dims)
    try:
        m.remember(**items[0])  # warm: first embed, prepared statements
        samples = time_each(lambda it: m.remember(**it), items[1:])
    finally:
        m.close()
    return _row("remember (single)", samples, unit="ops")


def _bench_feedback(path: str, embedder: str, dims: int, qs: list[str], label: str, recalls: int, ops: int) -> list[dict]:
    """The feedback and reinforce rows alone (``--writes-only``), on the grown store."""
    m = _open(path, embedder, dims, workers=False)
    try:
        done = [m.recall(q, limit=10) for q in qs[:recalls]]
        fb = [done[i % len(done)].retrieval_id for i in range(ops)]
        outcomes = ("success", "failure", "partial")
        # One outcome per retrieval: a retrieval comes round again with the outcome it had (feedback
        # refuses another one that names no memory).
        out = [_row(f"feedback @{label}", time_each(lambda it: m.feedback(it[1], outcomes[it[0] % len(done) % 3]),
                                                     list(enumerate(fb))))]
        ids = [h.memory.id for r in done for h in r.memories] or [m.list(limit=1)[0].id]
        targets = [ids[i % len(ids)] for i in range(ops)]
        out.append(_row(f"reinforce @{label}", time_each(
            lambda it: m.reinforce(it[1], 0.05 if it[0] % 2 else -0.05), list(enumerate(targets)))))
        return out
    finally:
        m.close()


def _grow(m, items: list[dict], batch_samples: list[float]) -> None:
    for i in range(0, len(items), BATCH):
        chunk = items[i : i + BATCH]
        t = time.perf_counter()
        m.remember_many(chunk)
        batch_samples.append(time.perf_counter() - t)


def _query_vectors(m, qs: list[str]) -> np.ndarray:
    return np.asarray(m.embedder.embed(qs), dtype=np.float32)


def _floor(matrix: np.ndarray, qvecs: np.ndarray, k: int) -> list[float]:
    """The bare vector search: one matmul and one argpartition, nothing else."""
    out = []
    for q in qvecs:
        t = time.perf_counter()
        scores = matrix @ q
        np.argpartition(-scores, k - 1)[:k]
        out.append(time.perf_counter() - t)
    return out


def _cold_start(path: str, embedder: str, dims: int) -> float:
    """Seconds from process start to its first answered recall (a fresh interpreter)."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    code = (
        "import sys\n"
        f"sys.path[:0] = [{os.path.join(root, 'core')!r}, {root!r}]\n"
        "from recallite_core import Recallite\n"
        f"m = Recallite.open({path!r}, embedder={embedder!r}, dims={dims})\n"
        "r = m.recall('why does the cache break the build', limit=10)\n"
        "print('ANSWERED', len(r.memories), flush=True)\n"
        "m.close()\n"
    )
    t = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    elapsed = time.perf_counter() - t
    proc.wait(timeout=600)
    if not line.startswith("ANSWERED"):
        raise RuntimeError("the cold-start child did not answer its recall")
    return elapsed


def _server_start(path: str, embedder: str) -> float:
    """Seconds from spawning `recallite-mcp` to its answer to tools/list, over stdio."""
    import anyio
    from mcp import Client, StdioServerParameters

    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = os.pathsep.join([root, os.path.join(root, "core"), env.get("PYTHONPATH", "")])

    async def once() -> float:
        t = time.perf_counter()
        params = StdioServerParameters(command=sys.executable, args=["-m", "recallite_mcp", "--db", path,
                                                                     "--embedder", embedder], env=env)
        async with Client(params) as client:
            await client.list_tools()
            return time.perf_counter() - t

    return anyio.run(once)


def _stats_during_scans(m, qs: list[str], samples: int = 20) -> list[float]:
    """stats() latencies while another thread keeps recalling (scans in flight)."""
    stop = threading.Event()

    def recall_loop() -> None:
        i = 0
        while not stop.is_set():
            m.recall(qs[i % len(qs)], limit=10)
            i += 1

    t = threading.Thread(target=recall_loop, daemon=True)
    t.start()
    time.sleep(0.2)
    out = []
    try:
        for _ in range(samples):
            t0 = time.perf_counter()
            m.stats()
            out.append(time.perf_counter() - t0)
            time.sleep(0.02)
    finally:
        stop.set()
        t.join(timeout=60)
    return out


def _import_start() -> float:
    t = time.perf_counter()
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(root, "core"), root]))
    subprocess.run([sys.executable, "-c", "import recallite_core"], check=True, env=env)
    return time.perf_counter() - t


def _worker_rss(m) -> float | None:
    pool = getattr(m, "scan_pool", None)
    if pool is None:
        return None
    vals = [_rss_mb(p) for p in pool.pids() if p]
    vals = [v for v in vals if v is not None]
    return round(sum(vals), 1) if vals else None


def _size_label(n: int) -> str:
    return f"{n // 1_000_000}M" if n >= 1_000_000 and n % 1_000_000 == 0 else f"{n // 1000}k" if n % 1000 == 0 else str(n)


def run_benchmark(
    memories: int = 100_000,
    dims: int = 384,
    embedder: str = "hash",
    workers: Any = "auto",
    sizes: Sequence[int] | None = None,
    json_output: bool = False,
    queries: int = 200,
    concurrent_rounds: int = 20,
    single_writes: int = 1000,
    feedback_ops: int = 1000,
    log: Callable[[str], None] | None = None,
    keep_dir: str | None = None,
    writes_only: bool = False,
) -> dict:
    """Run every measurement and return the results as a dict (``format_report`` prints it).

    ``sizes``: store sizes to measure recall at (default: 10k and 100k, capped at
    ``memories``; ``memories`` itself is always measured). ``workers``: the pool options
    used for the "workers" rows (``"auto"`` = min(max(1, cpus-1), 4) workers; a dict
    for more). ``json_output`` only marks the dict; printing is the caller's choice.
    """
    say = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
    sizes = sorted({int(s) for s in (sizes or [s for s in DEFAULT_SIZES if s <= memories])} | {int(memories)})
    wopts = workers if isinstance(workers, dict) else ({} if workers in (True, "auto") else None)
    if wopts is not None:
        from recallite_core.index.scan_workers import WorkerOptions

        wopts = dict(wopts)
        wopts.setdefault("fallback", "error")  # a benchmark must not hide a failed pool
        pool_size = WorkerOptions.parse(wopts).workers
    result: dict = {
        "machine": machine_info(),
        "settings": {"memories": memories, "dims": dims, "embedder": embedder, "sizes": sizes,
                     "workers": wopts, "pool_size": pool_size if wopts is not None else 0, "queries": queries,
                     "writes_only": writes_only},
        "rows": [],
        "memory": [],
        "notes": [],
        "json": bool(json_output),
    }
    rows = result["rows"]
    tmp = keep_dir or tempfile.mkdtemp(prefix="recallite-bench-")
    os.makedirs(tmp, exist_ok=True)
    t_all = time.perf_counter()
    try:
        say(f"[bench] remember (single) x {single_writes}")
        rows.append(_bench_remember_single(tmp, embedder, dims, single_writes + 1))

        path = os.path.join(tmp, "store.db")
        items = list(make_memories(max(sizes), seed=1234))
        qs = make_queries(max(queries, 10 * concurrent_rounds), seed=99)
        batch_samples: list[float] = []
        have = 0
        for size in sizes:
            label = _size_label(size)
            say(f"[bench] growing the store to {label} with remember_many ({BATCH}/batch)")
            writer = _open(path, embedder, dims)
            try:
                _grow(writer, items[have:size], batch_samples)
            finally:
                writer.close()
            have = size
            if writes_only:
                if size == sizes[-1]:
                    rows.extend(_bench_feedback(path, embedder, dims, qs, label, min(queries, 100), feedback_ops))
                continue

            # inline ---------------------------------------------------------------------
            say(f"[bench] recall @{label} inline")
            rss0 = _rss_mb()
            m = _open(path, embedder, dims, workers=False)
            try:
                m.recall(qs[0], limit=10)  # loads the matrix once
                rss_inline = _rss_mb()
                recall_inline = time_each(lambda q: m.recall(q, limit=10), qs[:queries])
                # The same queries again: every word's postings and every query vector are cached
                # now, as they are for an agent that keeps asking about the same project.
                recall_again = time_each(lambda q: m.recall(q, limit=10), qs[:queries])
                depth = max(m.config.candidate_depth, 40)
                matrix = m.index.matrix[: m.index.n]
                qvecs = _query_vectors(m, qs[:queries])
                floor = _floor(matrix, qvecs, depth)
                floor_ms = 1000 * statistics.median(floor)
                matrix_mb = matrix.nbytes / 2**20
                rows.append(_row(f"numpy floor @{label} (matmul+argpartition)", floor, unit="queries"))
                rows.append(_row(f"recall @{label} inline", recall_inline, unit="queries", floor_ms=floor_ms,
                                 note="first time for each query (its embedding; in a store past ~500k tokens, each new word's postings too)"))
                rows.append(_row(f"recall @{label} inline, repeated queries", recall_again, unit="queries",
                                 floor_ms=floor_ms, note="the same queries a second time: keyword postings warm"))
                say(f"[bench] 10 concurrent recalls @{label} inline")
                walls = concurrent_recalls(m, qs, concurrent_rounds)
                rows.append(_row(f"10 concurrent recalls @{label} inline (wall for 10)", walls, items_per_sample=10,
                                 unit="recalls", floor_ms=floor_ms,
                                 note="p50/p95: wall time for all 10"))
                # format_context / feedback / reinforce ------------------------------------
                recalls = [m.recall(q, limit=10) for q in qs[: min(queries, 100)]]
                rows.append(_row(f"format_context @{label}", time_each(lambda r: m.format_context(r, 2000), recalls)))
                fb = [recalls[i % len(recalls)].retrieval_id for i in range(feedback_ops)]
                outcomes = ("success", "failure", "partial")
                rows.append(_row(f"feedback @{label}", time_each(  # one outcome per retrieval, as above
                    lambda it, n=len(recalls): m.feedback(it[1], outcomes[it[0] % n % 3]), list(enumerate(fb)))))
                ids = [h.memory.id for r in recalls for h in r.memories] or [m.list(limit=1)[0].id]
                targets = [ids[i % len(ids)] for i in range(feedback_ops)]
                rows.append(_row(f"reinforce @{label}", time_each(
                    lambda it: m.reinforce(it[1], 0.05 if it[0] % 2 else -0.05), list(enumerate(targets)))))
            finally:
                m.close()
            del matrix
            result["memory"].append({
                "size": size, "matrix_mb": round(matrix_mb, 1),
                "inline_process_rss_mb": None if rss_inline is None else round(rss_inline, 1),
                "inline_rss_growth_mb": None if rss0 is None or rss_inline is None else round(rss_inline - rss0, 1),
            })

            # workers ---------------------------------------------------------------------
            if wopts is not None:
                say(f"[bench] recall @{label} workers ({pool_size} process(es))")
                m = _open(path, embedder, dims, workers=wopts)
                try:
                    t = time.perf_counter()
                    m.recall(qs[0], limit=10)  # starts the pool; each worker loads its shard
                    warm = time.perf_counter() - t
                    routed = m.scan_pool is not None and m.scan_pool.completed > 0
                    recall_workers = time_each(lambda q: m.recall(q, limit=10), qs[:queries])
                    note = f"{pool_size} worker(s); pool start + shard load {warm:.2f} s (not counted)"
                    if not routed:
                        note = "below the thresholds: answered inline"
                    rows.append(_row(f"recall @{label} workers", recall_workers, unit="queries", floor_ms=floor_ms, note=note))
                    say(f"[bench] 10 concurrent recalls @{label} workers")
                    walls = concurrent_recalls(m, qs, concurrent_rounds)
                    rows.append(_row(f"10 concurrent recalls @{label} workers (wall for 10)", walls, items_per_sample=10,
                                     unit="recalls", floor_ms=floor_ms, note="p50/p95: wall time for all 10"))
                    say(f"[bench] stats while worker scans run @{label}")
                    rows.append(_row(f"stats during worker recalls @{label}", _stats_during_scans(m, qs),
                                     note="recallite_stats' work while another thread keeps scanning"))
                    result["memory"][-1].update({
                        "workers_rss_mb": _worker_rss(m),
                        "server_rss_with_workers_mb": None if _rss_mb() is None else round(_rss_mb(), 1),
                    })
                finally:
                    m.close()

            say(f"[bench] cold start @{label}")
            rows.append(_row(f"cold start @{label} (process start to first recall)", [_cold_start(path, embedder, dims)],
                             unit="starts", note="fresh interpreter: import, open, load matrix, FTS, answer"))

        rows.append(_row(f"remember_many ({BATCH}/batch)", batch_samples, items_per_sample=BATCH, count=have, unit="items",
                         note=f"p50/p95 per batch of 100, growing the store to {_size_label(have)}"))

        if not writes_only:
            say(f"[bench] reindex @{_size_label(sizes[0])}")
            ridx = os.path.join(tmp, "reindex.db")
            m = _open(ridx, embedder, dims)
            try:
                _grow(m, items[: sizes[0]], [])
                t = time.perf_counter()
                n = m.reindex()
                rows.append(_row(f"reindex @{_size_label(sizes[0])}", [time.perf_counter() - t], count=n, unit="memories"))
            finally:
                m.close()

            say("[bench] cold start: import recallite_core")
            rows.append(_row("cold start: python -c 'import recallite_core'", [_import_start() for _ in range(3)], unit="starts"))
            for emb in dict.fromkeys([embedder, "default"]):
                say(f"[bench] server start to tools/list ({emb} embedder)")
                try:
                    starts = [_server_start(os.path.join(tmp, f"start-{emb}-{i}.db"), emb) for i in range(3)]
                    rows.append(_row(f"server start to tools/list answered ({emb} embedder)", starts, unit="starts",
                                     note="spawn `recallite-mcp` over stdio; the model loads after the answer"))
                except Exception as exc:  # the benchmark reports, never dies on one row
                    result["notes"].append(f"server start not measured: {exc!r}")
    finally:
        if keep_dir is None:
            shutil.rmtree(tmp, ignore_errors=True)
    result["peak_rss"] = _peak_rss_mb()
    result["elapsed_s"] = round(time.perf_counter() - t_all, 1)
    result["notes"].append(
        "x floor = recall p50 / p50 of a bare numpy matmul + argpartition over the same matrix, same run. "
        "recall = FTS + vector scan + fusion + scoring + the retrieval log write."
    )
    return result


# -- printing ----------------------------------------------------------------------------------
def format_report(result: dict) -> str:
    mach = result["machine"]
    st = result["settings"]
    lines = [
        "recallite-mcp performance",
        f"machine: {mach['cpus']} cpus ({mach.get('cpu', '')}), Python {mach['python']}, numpy {mach['numpy']} "
        f"(BLAS: {mach['blas']}), SQLite {mach['sqlite']}, {mach['platform']}",
    ]
    if mach.get("blas_env"):
        lines.append("BLAS environment: " + ", ".join(f"{k}={v}" for k, v in sorted(mach["blas_env"].items())))
    if "loadavg_at_start" in mach:
        lines.append(f"load average at start: {mach['loadavg_at_start']}")
    lines.append(
        f"data: {st['memories']:,} synthetic memories, {st['dims']} dims, embedder {st['embedder']}; "
        + ("writes only (--writes-only)" if st.get("writes_only") else
           f"recall sizes {', '.join(_size_label(s) for s in st['sizes'])}; worker pool: "
           + (f"{st['pool_size']} process(es)" if st["workers"] is not None else "off"))
    )
    lines.append("")
    head = ("operation", "count", "total s", "throughput", "avg ms", "p50 ms", "p95 ms", "x floor")
    table = [head]
    for r in result["rows"]:
        table.append((
            r["operation"], f"{r['count']:,}", f"{r['total_s']:.3f}",
            "-" if r["throughput"] is None else f"{r['throughput']:,.0f} {r['unit']}",
            f"{r['avg_ms']:.2f}", f"{r['p50_ms']:.2f}", f"{r['p95_ms']:.2f}",
            f"{r['x_floor']:.2f}x" if "x_floor" in r else "",
        ))
    widths = [max(len(row[i]) for row in table) for i in range(len(head))]
    for i, row in enumerate(table):
        cells = [row[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(row[1:], widths[1:])]
        lines.append("  ".join(cells).rstrip())
        if i == 0:
            lines.append("  ".join("-" * w for w in widths))
    lines.append("")
    for mem in result["memory"]:
        parts = [f"@{_size_label(mem['size'])}: matrix {mem['matrix_mb']:.0f} MB"]
        if mem.get("inline_rss_growth_mb") is not None:
            parts.append(f"inline process RSS {mem['inline_process_rss_mb']:.0f} MB "
                         f"(+{mem['inline_rss_growth_mb']:.0f} MB on open + first recall)")
        if mem.get("workers_rss_mb") is not None:
            parts.append(f"workers RSS {mem['workers_rss_mb']:.0f} MB, server RSS with workers "
                         f"{mem['server_rss_with_workers_mb']:.0f} MB")
        lines.append("memory " + "; ".join(parts))
    pk = result["peak_rss"]
    lines.append(f"peak RSS: this process {pk['self_mb']:.0f} MB, largest child process {pk['largest_child_mb']:.0f} MB")
    for n in result["notes"]:
        lines.append(f"note: {n}")
    for r in result["rows"]:
        if r.get("note"):
            lines.append(f"  {r['operation']}: {r['note']}")
    lines.append(f"elapsed: {result['elapsed_s']} s")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if any(a == "--db" or a.startswith("--db=") for a in argv):
        from . import backends  # PostgreSQL beside SQLite (issue 17)

        return backends.main(argv)
    ap = argparse.ArgumentParser(prog="recallite-mcp bench", description=__doc__.split("\n\n")[0])
    ap.add_argument("--memories", type=int, default=100_000, help="largest store size (default 100000)")
    ap.add_argument("--dims", type=int, default=384, help="vector dimensions (default 384)")
    ap.add_argument("--embedder", choices=("hash", "default"), default="hash")
    ap.add_argument("--sizes", type=lambda s: [int(x) for x in s.split(",") if x], default=None,
                    help="comma-separated recall sizes (default 10000,100000 up to --memories)")
    ap.add_argument("--workers", default="auto", help="'auto', 'off', or a worker count")
    ap.add_argument("--queries", type=int, default=200, help="recalls timed per size")
    ap.add_argument("--json", action="store_true", help="print JSON instead of the table")
    ap.add_argument("--writes-only", action="store_true",
                    help="only remember, remember_many (growing to --memories), feedback and reinforce")
    ap.add_argument("--db", help="postgresql://... : PostgreSQL beside SQLite instead (see bench --db URL --help)")
    args = ap.parse_args(argv)
    workers: Any = "auto"
    if args.workers in ("off", "false", "0"):
        workers = None
    elif args.workers.isdigit():
        workers = {"size": int(args.workers)}
    result = run_benchmark(memories=args.memories, dims=args.dims, embedder=args.embedder, workers=workers,
                           sizes=args.sizes, json_output=args.json, queries=args.queries, writes_only=args.writes_only)
    print(json.dumps(result, indent=2) if args.json else format_report(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
