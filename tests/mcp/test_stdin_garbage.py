"""Malformed JSON-RPC on stdin does not kill the server: the real `recallite-mcp` process, fed
garbage lines, truncated frames, invalid UTF-8, JSON that is not JSON-RPC, a 2 MB line and
100 000-deep JSON between real requests, keeps answering and exits cleanly on EOF."""

import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEEP = 100_000


def start(db: str) -> tuple[subprocess.Popen, "queue.Queue[dict]"]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "core"), env.get("PYTHONPATH", "")])
    proc = subprocess.Popen([sys.executable, "-m", "recallite_mcp", "--db", db, "--embedder", "hash"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    out: "queue.Queue[dict]" = queue.Queue()

    def pump() -> None:
        for line in proc.stdout:
            out.put(json.loads(line))  # every line the server writes must be JSON-RPC

    threading.Thread(target=pump, daemon=True).start()
    threading.Thread(target=proc.stderr.read, daemon=True).start()  # never let stderr fill up
    return proc, out


def send(proc: subprocess.Popen, data: bytes) -> None:
    proc.stdin.write(data)
    proc.stdin.flush()


def request(proc, rid: int, method: str, params: dict | None = None) -> None:
    msg = {"jsonrpc": "2.0", "id": rid, "method": method, **({"params": params} if params is not None else {})}
    send(proc, (json.dumps(msg) + "\n").encode())


def answer(out: "queue.Queue[dict]", rid: int, timeout: float = 30) -> dict:
    while True:
        msg = out.get(timeout=timeout)
        if msg.get("id") == rid:
            return msg


def test_garbage_on_stdin_does_not_kill_the_server(tmp_path):
    db = str(tmp_path / "garbage.db")
    proc, out = start(db)
    try:
        send(proc, b"this is not json\n")  # before initialize, too
        request(proc, 1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                        "clientInfo": {"name": "garbage-test", "version": "0"}})
        assert answer(out, 1)["result"]["serverInfo"]["name"] == "recallite"
        send(proc, b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        garbage = [
            b"garbage\n",
            b'{"jsonrpc":"2.0","id":50,"method":"tools/li\n',  # truncated frame
            b"\n", b"   \n", b'{"id":3}\n', b"[1,2,3]\n", b'"just a string"\n', b"null\n", b"{}\n",
            b"\xff\xfe\xfd invalid utf-8\n",
            b'{"jsonrpc":"2.0","id":51,"method":"tools/call","params":{"name":"recallite_stats"',  # no newline:
            b'{"jsonrpc":"2.0","id":52,"method":"tools/list"}\n',  # ...so this line is glued to it and lost
            b"x" * (2 * 1024 * 1024) + b"\n",
            b"[" * DEEP + b"]" * DEEP + b"\n",
            (b'{"jsonrpc":"2.0","id":53,"method":"tools/call","params":{"name":"recallite_remember","arguments":'
             b'{"content":"deep","metadata":{"a":' + b"[" * DEEP + b"]" * DEEP + b"}}}}\n"),
            b'{"jsonrpc":"2.0","id":54,"method":"no/such/method"}\n',
            b'{"jsonrpc":"2.0","id":55,"method":"tools/call","params":{"name":"no_such_tool","arguments":{}}}\n',
            b'{"jsonrpc":"2.0","id":56,"method":"tools/call","params":{"name":"recallite_remember","arguments":{"content":7}}}\n',
        ]
        for chunk in garbage:
            send(proc, chunk)
        assert "error" in answer(out, 54)  # method not found is still answered
        r55 = answer(out, 55)["result"]
        assert r55["isError"]
        assert answer(out, 56)["result"]["isError"]
        request(proc, 60, "tools/call", {"name": "recallite_remember", "arguments": {"content": "survived the garbage"}})
        r = answer(out, 60)["result"]
        assert not r["isError"], r
        request(proc, 61, "tools/call", {"name": "recallite_recall", "arguments": {"query": "survived garbage"}})
        hits = answer(out, 61)["result"]["structuredContent"]["memories"]
        assert hits[0]["content"] == "survived the garbage"
        assert proc.poll() is None
    finally:
        proc.stdin.close()
        rc = proc.wait(timeout=30)
    assert rc == 0
    # nothing from the garbage was stored, and the file is sound
    import sqlite3

    c = sqlite3.connect(db)
    assert [r[0] for r in c.execute("SELECT content FROM memories")] == ["survived the garbage"]
    assert c.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    c.close()
