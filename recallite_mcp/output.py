"""Human-readable tables and JSON for the CLI."""

from __future__ import annotations

import json
import sys
from typing import Any, Iterable, Sequence

import click


def emit_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    rows = [["" if c is None else str(c) for c in r] for r in rows]
    widths = [len(h) for h in headers]
    for r in rows:
        for i, c in enumerate(r):
            widths[i] = max(widths[i], len(c))
    line = lambda cells: "  ".join(c.ljust(widths[i]) for i, c in enumerate(cells)).rstrip()  # noqa: E731
    out = [line(headers), line(["-" * w for w in widths])]
    out.extend(line(r) for r in rows)
    return "\n".join(out)


def shorten(text: str, width: int = 70) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def progress(label: str):
    """A progress callback (done, total) that writes to stderr, never stdout."""
    state = {"last": -1}

    def report(done: int, total: int) -> None:
        pct = int(100 * done / max(total, 1))
        if pct != state["last"] and (pct % 5 == 0 or done == total):
            state["last"] = pct
            tty = sys.stderr.isatty()  # piped: one line per step, not steps run together by \r
            sys.stderr.write(f"\r{label}: {done}/{total} ({pct}%)" if tty else f"{label}: {done}/{total} ({pct}%)\n")
            if done == total and tty:
                sys.stderr.write("\n")
            sys.stderr.flush()

    return report
