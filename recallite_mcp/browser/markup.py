"""HTML by string building, escaped by default.

``h(template, *values)`` escapes every value that is not already ``Safe`` markup, so text from
the store (which an agent or an import may have written) can only ever reach the page as text.
"""

from __future__ import annotations

from datetime import datetime
from html import escape
from typing import Any, Iterable
from urllib.parse import urlencode


class Safe(str):
    """Markup we built ourselves: inserted as is."""


def h(template: str, *values: Any) -> Safe:
    """``template`` with ``{}`` filled by the values, each escaped unless it is Safe."""
    return Safe(template.format(*(v if isinstance(v, Safe) else escape("" if v is None else str(v)) for v in values)))


def join(parts: Iterable[Any], sep: str = "") -> Safe:
    return Safe(sep.join(p if isinstance(p, Safe) else escape(str(p)) for p in parts))


def url(path: str, **params: Any) -> str:
    """A path with its query string; empty values are left out."""
    pairs = [(k, v) for k, v in params.items() if v not in (None, "", [])]
    return path + ("?" + urlencode(pairs, doseq=True) if pairs else "")


def when(at: datetime | None) -> str:
    return "—" if at is None else at.strftime("%Y-%m-%d %H:%M")


def num(value: float | None, digits: int = 2) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def memories_count(n: int) -> str:
    return f"{n} memor{'y' if n == 1 else 'ies'}"


def shorten(text: str, width: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def mem_link(memory_id: str, label: Any = None) -> Safe:
    return h('<a href="{}">{}</a>', url(f"/memory/{memory_id}"), memory_id if label is None else label)


def badge(kind: str, value: str) -> Safe:
    # The class is one of our own words (kind) plus a value from a fixed vocabulary (status,
    # type, source); escaped all the same.
    return h('<span class="badge {}-{}">{}</span>', kind, value, value)


def options(values: Iterable[str], selected: str | None, blank: str | None = None) -> Safe:
    out = [h('<option value="">{}</option>', blank)] if blank is not None else []
    for v in values:
        out.append(h('<option value="{}"{}>{}</option>', v, Safe(" selected") if v == selected else Safe(""), v))
    return join(out)


def table(head: list[str], rows: Iterable[list[Any]], cls: str = "") -> Safe:
    heads = join(h("<th>{}</th>", x) for x in head)
    body = join(h("<tr>{}</tr>", join(h("<td>{}</td>", c) for c in row)) for row in rows)
    return h('<table class="{}"><thead><tr>{}</tr></thead><tbody>{}</tbody></table>', cls, heads, body)


def alert(kind: str, text: Any) -> Safe:
    role = "alert" if kind == "error" else "status"
    return h('<div class="{}" role="{}">{}</div>', kind, role, text)


NAV = (("/", "Memories"), ("/curate", "Curate"), ("/learning", "Learning"), ("/health", "Health"))


def layout(title: str, body: Any, *, active: str = "/", notice: Any = None, error: Any = None) -> Safe:
    nav = join(h('<a href="{}"{}>{}</a>', path, Safe(' class="on"') if path == active else Safe(""), label)
               for path, label in NAV)
    top = join([alert("error", error) if error else "", alert("notice", notice) if notice else ""])
    return h(
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<title>{} · recallite</title><link rel="stylesheet" href="/static/style.css"></head>'
        '<body><header><strong>recallite</strong> <nav>{}</nav></header><main><h1>{}</h1>{}{}</main></body></html>',
        title, nav, title, top, body,
    )
