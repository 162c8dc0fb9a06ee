"""Who may talk to the browser app.

The app reads and changes memories that agents act on, so every request must come from the
person who started it:

- Host must be one this server answers as (the bound address, or a loopback name when bound
  to loopback): a DNS-rebinding page reaches us under its own host name and is refused.
- A request that carries Origin (every browser POST does) must come from this server's
  origin, and a POST must carry Origin or Referer: a cross-site form cannot write.
- A session cookie (HttpOnly, SameSite=Strict) must be present. It is obtained once: the
  URL printed at start carries a one-time token, exchanged on first use for the cookie and
  then spent, so a token left in a terminal or a history file opens nothing.
"""

from __future__ import annotations

import hmac
import secrets
import threading
from urllib.parse import parse_qsl, urlencode, urlsplit

from starlette.datastructures import Headers
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

COOKIE = "recallite_ui"  # + the port: browsers share cookies between ports of one host, and two
# `ui` processes (two stores) must not overwrite each other's session
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
# No script runs on these pages and nothing loads from elsewhere; no site may frame them.
SECURITY_HEADERS = {
    "content-security-policy": "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; "
                               "frame-ancestors 'none'; base-uri 'none'",
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    # same-origin, not no-referrer: with no-referrer a browser sends "Origin: null" on its own form posts.
    "referrer-policy": "same-origin",
    "cache-control": "no-store",
}


def is_loopback(host: str) -> bool:
    return host in LOOPBACK_NAMES or host.startswith("127.")


def host_names(host: str, port: int) -> set[str]:
    """Host header values this server answers to."""
    hosts = set(LOOPBACK_NAMES) | {host} if is_loopback(host) else {host}
    out = set()
    for name in hosts:
        shown = f"[{name}]" if ":" in name else name
        out.add(f"{shown}:{port}".lower())
        if port == 80:
            out.add(shown.lower())
    return out


class Guard:
    """The one-time token, the session it opens, and the checks every request passes."""

    def __init__(self, host: str, port: int, *, token: str | None = None):
        self.host, self.port = host, port
        self.token: str | None = token or secrets.token_urlsafe(32)
        self.session = secrets.token_urlsafe(32)
        self.cookie = f"{COOKIE}_{port}"
        self.hosts = host_names(host, port)
        self.origins = {f"http://{name}" for name in self.hosts}
        self._lock = threading.Lock()

    def start_url(self) -> str:
        shown = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{shown}:{self.port}/?{urlencode({'token': self.token or ''})}"

    def spend(self, offered: str) -> bool:
        """True once, for the right token."""
        with self._lock:
            if self.token is None or not hmac.compare_digest(offered.encode(), self.token.encode()):
                return False
            self.token = None
            return True

    def has_session(self, headers: Headers) -> bool:
        for part in headers.get("cookie", "").split(";"):
            name, _, value = part.strip().partition("=")
            if name == self.cookie and hmac.compare_digest(value.encode(), self.session.encode()):
                return True
        return False

    def refusal(self, scope: Scope) -> Response | None:
        """None when the request may go on, else the response that refuses it."""
        headers = Headers(scope=scope)
        if headers.get("host", "").lower() not in self.hosts:
            return PlainTextResponse("Refused: unknown Host. Open the URL that `recallite-mcp ui` printed.", 421)
        origin = headers.get("origin")
        if origin is not None and origin.lower() not in self.origins:
            return PlainTextResponse("Refused: a request from another site (Origin) cannot use this app.", 403)
        if scope["method"] not in ("GET", "HEAD"):
            referer = headers.get("referer")
            ref_origin = _origin_of(referer) if referer else None
            if origin is None and ref_origin not in self.origins:
                return PlainTextResponse("Refused: a change must come from this app's own pages (no Origin).", 403)
            if headers.get("sec-fetch-site") not in (None, "same-origin", "none"):
                return PlainTextResponse("Refused: a change must come from this app's own pages.", 403)
        return None


def _origin_of(address: str) -> str | None:
    parts = urlsplit(address)
    return f"{parts.scheme}://{parts.netloc}".lower() if parts.scheme and parts.netloc else None


class GuardMiddleware:
    """ASGI middleware: refuse, exchange the token for the cookie, or pass the request on."""

    def __init__(self, app: ASGIApp, guard: Guard):
        self.app, self.guard = app, guard

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            if scope["type"] == "lifespan":
                await self.app(scope, receive, send)
            return  # no websockets here
        response = self.guard.refusal(scope) or self._session(scope)
        if response is not None:
            for k, v in SECURITY_HEADERS.items():
                response.headers[k] = v
            await response(scope, receive, send)
            return

        async def send_secured(message):
            if message["type"] == "http.response.start":
                names = {k.lower() for k, _ in message.get("headers", [])}
                message["headers"] = list(message.get("headers", [])) + [
                    (k.encode(), v.encode()) for k, v in SECURITY_HEADERS.items() if k.encode() not in names]
            await send(message)

        await self.app(scope, receive, send_secured)

    def _session(self, scope: Scope) -> Response | None:
        headers = Headers(scope=scope)
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        offered = query.pop("token", None)
        if offered is not None:
            if scope["method"] == "GET" and self.guard.spend(offered):
                # Drop the token from the address bar and history at once.
                rest = urlencode(query)
                path = scope["path"] if not scope["path"].startswith("//") else "/"  # never to another host
                response = RedirectResponse(path + ("?" + rest if rest else ""), status_code=303)
                response.set_cookie(self.guard.cookie, self.guard.session, httponly=True, samesite="strict", path="/")
                return response
            if not self.guard.has_session(headers):
                return _page(403, "This access token was already used or is wrong. Each token opens one browser "
                                  "session: restart `recallite-mcp ui` for a new one.")
        if self.guard.has_session(headers):
            return None
        return _page(401, "Open the URL with the access token that `recallite-mcp ui` printed when it started.")


def _page(status: int, text: str) -> Response:
    body = (f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>recallite</title></head>'
            f"<body><h1>recallite</h1><p>{text}</p></body></html>")  # text: our own fixed sentences
    return HTMLResponse(body, status)
