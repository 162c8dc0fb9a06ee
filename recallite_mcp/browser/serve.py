"""``recallite-mcp ui``: bind, open the store, print the URL with its one-time token, serve."""

from __future__ import annotations

import socket
import sys
import webbrowser

import click

from ..settings import Settings
from .guard import Guard, is_loopback


def bind(host: str, port: int) -> socket.socket:
    """The listening socket, taken before anything is printed: a busy port is one clear line."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise click.ClickException(f"cannot listen on {host}:{port} ({exc.strerror or exc}); "
                                   "choose another --port (or --host).") from None
    return sock


def serve_forever(app, sock: socket.socket) -> None:
    import uvicorn

    config = uvicorn.Config(app, log_level="warning", access_log=False, server_header=False)
    uvicorn.Server(config).run(sockets=[sock])


def run(settings: Settings, host: str = "127.0.0.1", port: int = 8766, open_browser: bool = False) -> None:
    from ..server import open_memory
    from .app import build_app

    sock = bind(host, port)
    try:
        memory = open_memory(settings)
        try:
            guard = Guard(host, port)
            app = build_app(memory, guard)
            address = guard.start_url()
            print(f"recallite memory browser for {settings.db_label}", flush=True)
            print(f"open (the token works once): {address}", flush=True)
            if not is_loopback(host):
                print(f"warning: listening on {host}, not loopback: anyone who can reach it and holds the token can "
                      "read and change your memory.", file=sys.stderr, flush=True)
            if open_browser:
                webbrowser.open(address)
            serve_forever(app, sock)
        finally:
            memory.close()
    finally:
        sock.close()
