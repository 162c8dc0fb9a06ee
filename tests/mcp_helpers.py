"""Calling tools in tests: a result's structured content, or the text of the expected tool error;
a real `recallite-mcp --transport http` server on 127.0.0.1 for the tests that need one."""

import contextlib
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


async def call(client, name, **args):
    res = await client.call_tool(name, args)
    assert not res.is_error, res.content[0].text
    return res.structured_content


async def error_text(client, name, **args):
    res = await client.call_tool(name, args)
    assert res.is_error, res.structured_content
    return res.content[0].text


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def http_server(tmp_path, *extra: str):
    """A streamable HTTP server on a fresh database (hash embedder), with extra flags; yields its MCP url."""
    port = free_port()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "core"), os.environ.get("PYTHONPATH", "")]))
    log = open(tmp_path / "server.log", "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "recallite_mcp", "--db", str(tmp_path / "http.db"), "--embedder", "hash",
         "--transport", "http", "--host", "127.0.0.1", "--port", str(port), *extra],
        env=env, stdout=subprocess.DEVNULL, stderr=log, cwd=tmp_path,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"server did not start: {(tmp_path / 'server.log').read_text()}")
                time.sleep(0.2)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
