"""`recallite-mcp migrate`: copy a whole store to another (SQLite file or PostgreSQL URL).

Built on the export/import path: the source is exported, with its stored vectors, to a private
temporary file and read into the target with ``trust="restore"`` in one transaction (all or
nothing), so statuses, sources, scores, superseded_by, relations, citations, session summaries,
team memberships, the retrieval log and the feedback history arrive as they were. The import runs
in batches (bounded memory, the bar moves per batch). When both stores use the same embedder (name and
dimensions) the vectors are copied, not recomputed; otherwise the target embeds again and the
summary says so. Counts per noun are compared at the end: every source row must be in the target,
copied now or (--into-nonempty) found there already.
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

NOUNS = ("memories", "relations", "citations", "session_summaries", "retrievals", "feedback", "team_links")


def counts(mem: Any) -> dict[str, int]:
    """Rows per noun of an open store (every scope)."""
    with mem.core.store.reading() as conn:
        a = conn.archive
        return {"memories": len(a.memory_ids(None)), "relations": len(a.relations()), "citations": len(a.citations()),
                "session_summaries": len(a.summaries()), "retrievals": len(a.retrievals()), "feedback": len(a.feedback()),
                "team_links": len(a.team_links(None))}


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
    click.echo(f"migrated {src_label} -> {dst_label}")
    ok = _verify(before_src, before_dst, after_dst, got, into=any(before_dst.values()))
    _vectors(got, src_embedder[0], dst_embedder)
    return ok


def already_there(got: dict[str, int], noun: str) -> int:
    """Rows of ``noun`` the import found in the target and left as they were."""
    return got.get("duplicates", 0) if noun == "memories" else got.get(f"{noun}_already_there", 0)


def _verify(before_src: dict, before_dst: dict, after_dst: dict, got: dict, *, into: bool) -> bool:
    """Print one line per noun; True when every source row is in the target: copied now, or
    already there (an --into-nonempty copy of what the target holds: the import skips those,
    so "copied" alone would read as rows lost)."""
    ok = True
    for noun in NOUNS:
        added = after_dst[noun] - before_dst[noun]
        present = already_there(got, noun)
        same = added >= 0 and added + present == before_src[noun]
        ok = ok and same
        extra = f"  already there {present:>7}" if into else ""
        click.echo(f"  {noun:<18} source {before_src[noun]:>7}  copied {added:>7}{extra}  {'ok' if same else 'MISMATCH'}")
    if ok and into and any(already_there(got, noun) for noun in NOUNS):
        click.echo("  rows already in the target were left as they were, not copied again")
    return ok


def _vectors(got: dict[str, int], src_embedder: str, dst_embedder: str) -> None:
    """Say whether the vectors were copied: of every memory of the file, those already in the
    target included (their vectors were checked, then not written)."""
    copied, total = got.get("vectors_copied", 0), got.get("memories", 0) + got.get("duplicates", 0)
    if copied >= total:
        click.echo(f"  vectors copied ({dst_embedder}), none recomputed")
    else:
        click.echo(f"  vectors: {copied} copied, {total - copied} recomputed with {dst_embedder}"
                   + ("" if src_embedder == dst_embedder else f" (the source used {src_embedder})"))
