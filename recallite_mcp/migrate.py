"""`recallite-mcp migrate`: copy a whole store to another (SQLite file or PostgreSQL URL).

Built on the export/import path: the source is exported, with its stored vectors, to a private
temporary file and read into the target with ``trust="restore"`` in one transaction (all or
nothing), so statuses, sources, scores, superseded_by, relations, citations, session summaries,
the retrieval log and the feedback history arrive as they were. The import runs in batches
(bounded memory, the bar moves per batch). When both stores use the same embedder (name and
dimensions) the vectors are copied, not recomputed; otherwise the target embeds again and the
summary says so. Counts per noun are compared at the end.
May import click, the settings, the app and the core's storage helpers.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import click

from recallite_core.storage import is_postgres_url, masked_location

NOUNS = ("memories", "relations", "citations", "session_summaries", "retrievals", "feedback")


def counts(mem: Any) -> dict[str, int]:
    """Rows per noun of an open store (every scope)."""
    with mem.core.store.reading() as conn:
        a = conn.archive
        return {"memories": len(a.memory_ids(None)), "relations": len(a.relations()), "citations": len(a.citations()),
                "session_summaries": len(a.summaries()), "retrievals": len(a.retrievals()), "feedback": len(a.feedback())}


def _identity(location: str) -> str:
    """What makes two locations the same store: the URL as given, or the resolved file path."""
    if is_postgres_url(location):
        return location.strip()
    return os.path.realpath(str(Path(location).expanduser()))


def check_locations(source: str, target: str) -> None:
    for label, loc in (("--from", source), ("--to", target)):
        if not loc or loc.strip() == ":memory:":
            raise click.UsageError(f"{label} must be a SQLite file or a postgresql:// URL, not {loc or 'empty'!r}.")
    if _identity(source) == _identity(target):
        raise click.UsageError(f"--from and --to are the same store ({masked_location(source)}); nothing was copied.")
    if not is_postgres_url(source) and not os.path.isfile(os.path.expanduser(source)):
        raise click.UsageError(f"No store at {source}; nothing was copied.")


def _bar(label: str):
    """A progress callback (done, total) drawing a click progress bar on stderr."""
    state: dict[str, Any] = {"bar": None, "done": 0}

    def report(done: int, total: int) -> None:
        bar = state["bar"]
        if bar is None:
            bar = state["bar"] = click.progressbar(length=total, label=label, file=sys.stderr)
            bar.__enter__()
        bar.update(done - state["done"])
        state["done"] = done
        if done >= total:
            bar.__exit__(None, None, None)

    return report


def migrate(source: str, target: str, *, embedder: str | None, into_nonempty: bool, load_settings, open_engine,
            batch: int | None = None) -> bool:
    """Copy ``source`` into ``target``; print the counts; True when they match."""
    check_locations(source, target)
    src_label, dst_label = masked_location(source), masked_location(target)
    src_settings = load_settings(db=source, embedder=embedder)
    dst_settings = load_settings(db=target, embedder=embedder)
    with tempfile.TemporaryDirectory(prefix="recallite-migrate-") as folder:
        dump = os.path.join(folder, "store.jsonl")
        with open_engine(src_settings) as src:
            before_src = counts(src)
            src_embedder = (src.embedder.name, src.embedder.dimensions)
            click.echo(f"exporting {src_label} ({before_src['memories']} memories)", err=True)
            src.export_jsonl(dump, vectors=True)
        with open_engine(dst_settings) as dst:
            before_dst = counts(dst)
            if any(before_dst.values()) and not into_nonempty:
                raise click.ClickException(
                    f"{dst_label} is not empty ({before_dst['memories']} memories); pass --into-nonempty to add to it. "
                    "Nothing was copied.")
            same = src_embedder == (dst.embedder.name, dst.embedder.dimensions)
            click.echo(f"importing into {dst_label}"
                       + ("" if same else f" (re-embedding with {dst.embedder.name}: the source used {src_embedder[0]})"),
                       err=True)
            got = dst.import_jsonl(dump, trust="restore", progress=_bar("copying memories (check, then write)"),
                                   **({"batch": batch} if batch else {}))
            after_dst = counts(dst)
            dst_embedder = dst.embedder.name
    ok = True
    click.echo(f"migrated {src_label} -> {dst_label}")
    for noun in NOUNS:
        added = after_dst[noun] - before_dst[noun]
        same = added == before_src[noun]
        ok = ok and same
        click.echo(f"  {noun:<18} source {before_src[noun]:>7}  copied {added:>7}  {'ok' if same else 'MISMATCH'}")
    copied = got.get("vectors_copied", 0)
    if copied == got.get("memories", 0):
        click.echo(f"  vectors copied ({dst_embedder}), none recomputed")
    else:
        click.echo(f"  vectors: {copied} copied, {got.get('memories', 0) - copied} recomputed with {dst_embedder}"
                   + ("" if src_embedder[0] == dst_embedder else f" (the source used {src_embedder[0]})"))
    if got.get("duplicates"):
        click.echo(f"  {got['duplicates']} memories matched ones already in the target and were not copied again")
    return ok
