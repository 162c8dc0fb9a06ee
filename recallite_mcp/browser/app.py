"""Routes: each request becomes a ``Page`` (its parameters and the engine) handed to a plain
function in a worker thread; engine errors become the page that explains them."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable
from urllib.parse import parse_qsl

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from recallite_core import (
    InvalidInputError,
    InvalidTransitionError,
    NotFoundError,
    Recallite,
    RecalliteError,
    StoreError,
    TrustPolicyError,
)

from . import curate, detail, health, learning, memories
from .guard import Guard, GuardMiddleware
from .markup import alert, layout
from .wording import said

STATIC = Path(__file__).parent / "static"
MAX_FORM_BYTES = 256 * 1024  # a memory is at most 64 KiB by default; forms carry one
NOTICES = {
    "edited": "Saved as a new version; the old one is superseded and listed under Versions.",
    "validated": "Validated.", "activated": "Activated.", "deprecated": "Deprecated: it leaves default recall.",
    "superseded": "Superseded.", "related": "Linked.", "resolved": "Contradiction resolved.",
}


class Page:
    """What a page function gets: the engine, the read views, and the request's values."""

    def __init__(self, mem: Recallite, look, request: Request, form: dict[str, str]):
        self.mem, self.look = mem, look
        self.path = dict(request.path_params)
        self.query = dict(request.query_params)
        self.form = form

    def int_param(self, name: str, default: int) -> int:
        raw = self.query.get(name, "")
        try:
            value = int(raw) if raw else default
        except ValueError:
            raise InvalidInputError(f"{name} must be a whole number, got {raw!r}.") from None
        if value < 0:  # was clamped to 0, and the page then said "got 0"
            raise InvalidInputError(f"{name} must be 0 or more, got {raw}.")
        return value

    def flag(self, name: str) -> bool:
        return self.form.get(name) in ("1", "on", "yes")

    def notice(self) -> str | None:
        done = self.query.get("done")
        if done == "forgotten":
            return f"Forgot {self.query.get('id', 'the memory')}."
        return NOTICES.get(done or "")

    @staticmethod
    def redirect(to: str) -> Response:
        return RedirectResponse(to, status_code=303)  # after a POST: the browser GETs the result

    @staticmethod
    def status_of(exc: Exception) -> int:
        if isinstance(exc, NotFoundError):
            return 404
        if isinstance(exc, (InvalidTransitionError, TrustPolicyError)):
            return 409
        if isinstance(exc, StoreError):
            return 503
        return 400


def page(fn: Callable[[Page], Any]):
    """A Starlette endpoint around a page function: reads the form (urlencoded, bounded), runs
    the function off the event loop, and turns its result or engine error into a response."""

    async def endpoint(request: Request) -> Response:
        form: dict[str, str] = {}
        if request.method == "POST":
            body = b""
            async for chunk in request.stream():
                body += chunk
                if len(body) > MAX_FORM_BYTES:
                    return HTMLResponse(layout("Too large", alert("error", "The form is too large.")), 413)
            form = dict(parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True))
        state = request.app.state
        ctx = Page(state.memory, state.look, request, form)
        return await run_in_threadpool(_run, fn, ctx)

    return endpoint


def _run(fn: Callable[[Page], Any], ctx: Page) -> Response:
    try:
        out = fn(ctx)
    except RecalliteError as exc:
        status = Page.status_of(exc)
        return HTMLResponse(layout("Not found" if status == 404 else "Could not do that", alert("error", said(exc))), status)
    if isinstance(out, Response):
        return out
    html, status = out
    return HTMLResponse(html, status)


def open_by_id(ctx: Page):
    memory_id = ctx.query.get("id", "").strip()
    ctx.mem.get(memory_id)  # a wrong id is an error page that says what ids look like
    return ctx.redirect(f"/memory/{memory_id}")


def style(_request: Request) -> Response:
    return Response((STATIC / "style.css").read_bytes(), media_type="text/css")


def build_app(memory: Recallite, guard: Guard) -> Starlette:
    """The browser app over an open engine; ``guard`` decides who may use it."""
    routes = [
        Route("/", page(memories.memories_page)),
        Route("/memory", page(open_by_id)),
        Route("/memory/{id}", page(lambda ctx: detail.memory_page(ctx, ctx.path["id"]))),
        Route("/memory/{id}/edit", page(curate.edit), methods=["POST"]),
        Route("/memory/{id}/status", page(curate.change_status), methods=["POST"]),
        Route("/memory/{id}/supersede", page(curate.supersede), methods=["POST"]),
        Route("/memory/{id}/relate", page(curate.relate), methods=["POST"]),
        Route("/memory/{id}/forget", page(curate.forget), methods=["POST"]),
        Route("/curate", page(curate.curate_page)),
        Route("/curate/apply", page(curate.apply), methods=["POST"]),
        Route("/learning", page(learning.learning_page)),
        Route("/learning/retrieval/{id}", page(learning.retrieval_page)),
        Route("/learning/resolve", page(learning.resolve), methods=["POST"]),
        Route("/health", page(health.health_page)),
        Route("/static/style.css", style),
    ]
    app = Starlette(routes=routes)
    app.state.memory = memory
    app.state.look = memory.inspection()
    app.add_middleware(GuardMiddleware, guard=guard)
    return app


__all__ = ["build_app", "Page"]
