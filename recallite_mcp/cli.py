"""The command line: `recallite-mcp` serves MCP over stdio; subcommands for people and scripts."""

from __future__ import annotations

import functools
import json
import logging
import sys
from typing import Any, Callable

import click

from . import __version__
from .output import emit_json, progress, shorten, table
from .render import counted, empty_scope_hint
from .settings import Settings

LOG_LEVELS = ["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]


def setup_logging(level: str) -> None:
    # Before MCPServer() configures logging: everything goes to stderr, stdout is the protocol.
    logging.basicConfig(stream=sys.stderr, level=level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger().setLevel(level.upper())


def common_options(fn: Callable) -> Callable:
    """--db, --scope, --embedder, --log-level on the group and on every subcommand."""
    opts = [
        click.option("--db", default=None, help="SQLite file (default: per-user app-data file; ':memory:' for a trial) or a postgresql:// URL. Env: RECALLITE_DB."),
        click.option("--scope", default=None, help="Project scope when the MCP client offers no workspace folder (roots "
                     "win; then this; then RECALLITE_SCOPE; then the git repository of the working directory; else "
                     "'default'). Commands: the scope to work on. Env: RECALLITE_SCOPE."),
        click.option("--embedder", type=click.Choice(["default", "onnx", "hash"]), default=None,
                     help="default: MiniLM ONNX offline (hash fallback); hash: no model. Env: RECALLITE_EMBEDDER."),
        click.option("--log-level", type=click.Choice(LOG_LEVELS, case_sensitive=False), default=None,
                     help="Log level (logs go to stderr). Env: RECALLITE_LOG_LEVEL."),
    ]
    for opt in reversed(opts):
        fn = opt(fn)
    return fn


def settings_from(ctx: click.Context, **flags: Any) -> Settings:
    base = dict(ctx.find_root().params) if ctx.find_root() is not ctx else {}
    merged = {k: v for k, v in base.items() if k in ("db", "scope", "embedder", "log_level") and v is not None}
    merged.update({k: v for k, v in flags.items() if v is not None})
    s = load_settings(**merged)
    setup_logging(s.log_level)
    return s


def load_settings(**flags: Any) -> Settings:
    """Settings.load, with a bad RECALLITE_* value as a one-line error instead of a traceback."""
    try:
        return Settings.load(**flags)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from exc


def handle_errors(fn: Callable) -> Callable:
    """Engine errors become a one-line message and exit code 2, not a traceback."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from recallite_core import RecalliteError
        from recallite_core.storage.postgres.errors import explain, is_driver_error

        try:
            return fn(*args, **kwargs)
        except RecalliteError as exc:
            raise click.ClickException(str(exc)) from exc
        except Exception as exc:
            if not is_driver_error(exc):
                raise
            # A PostgreSQL error the store did not wrap: one masked line with the next step, no traceback.
            raise click.ClickException(str(explain(exc, None, fn.__name__.removesuffix("_cmd")))) from exc

    return wrapper


def scope_hint(mem: Any, scope: str) -> str | None:
    """What the MCP tools return as their hint when a search found nothing: a line when the scope
    holds no memory at all, naming the scopes that do (--scope was misspelt, or never used)."""
    known = mem.empty_scope(scope)
    return None if known is None else empty_scope_hint(scope, known)


def open_engine(settings: Settings):
    from .app import open_memory

    return open_memory(settings)


@click.group(invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@common_options
@click.option("--transport", type=click.Choice(["stdio", "http"]), default="stdio", show_default=True,
              help="stdio for MCP clients; http serves streamable HTTP on 127.0.0.1.")
@click.option("--host", default="127.0.0.1", show_default=True, help="HTTP transport: address to bind (loopback by default).")
@click.option("--port", default=8765, show_default=True, type=int, help="HTTP transport: port.")
@click.option("--trust-client-sources", is_flag=True, default=None,
              help="Record source=user/system from clients as given (default: recorded as agent).")
@click.option("--isolate-scopes", is_flag=True, default=None,
              help="Forbid reading or writing any scope but the active project's and the user's.")
@click.option("--tools", "tool_set", type=click.Choice(["core", "all"]), default=None,
              help="core (default): the ten tools of the memory loop; all: also conversation turns, why, beliefs, "
                   "history, capture and auto_context, and every parameter. Env: RECALLITE_TOOLS.")
@click.option("--no-redact-secrets", "no_redact_secrets", is_flag=True, default=None,
              help="Store secrets (API keys, tokens, passwords) as given instead of [REDACTED:kind]. Env: RECALLITE_REDACT_SECRETS=0.")
@click.version_option(__version__, prog_name="recallite-mcp")
@click.pass_context
def main(ctx: click.Context, db, scope, embedder, log_level, transport, host, port, trust_client_sources,
         isolate_scopes, tool_set, no_redact_secrets) -> None:
    """recallite-mcp: persistent, outcome-aware memory for AI agents.

    Without a subcommand it serves MCP over stdio (what MCP clients launch):

        recallite-mcp --db ./agent-memory.db
    """
    if ctx.invoked_subcommand is not None:
        return
    settings = load_settings(db=db, scope=scope, embedder=embedder, log_level=log_level,
                             trust_client_sources=trust_client_sources, isolate_scopes=isolate_scopes, tools=tool_set,
                             redact_secrets=False if no_redact_secrets else None)
    setup_logging(settings.log_level)
    from recallite_core import RecalliteError

    from .server import run_http, run_stdio

    try:
        if transport == "http":
            if host not in ("127.0.0.1", "localhost", "::1"):
                click.echo(f"warning: serving on {host}, not loopback; anyone who can reach it can read your memory.", err=True)
            run_http(settings, host=host, port=port)
        else:
            run_stdio(settings)
    except RecalliteError as exc:
        click.echo(f"recallite-mcp: {exc}", err=True)
        sys.exit(2)


@main.command()
@common_options
@click.option("--rounds", default=3, show_default=True, help="Tasks to play.")
@click.option("--clear", is_flag=True, help="Only remove what earlier demo runs stored, then stop.")
@click.pass_context
@handle_errors
def demo(ctx, db, scope, embedder, log_level, rounds, clear):
    """Remember -> context -> feedback, a few rounds: watch the ranking change."""
    from .demo import clear_demo, run_demo

    settings = settings_from(ctx, db=db, scope=scope, embedder=embedder, log_level=log_level)
    if clear:
        clear_demo(settings)
    else:
        run_demo(settings, rounds=rounds)


@main.command()
@common_options
@click.argument("content")
@click.option("--type", "mtype", default="observation", show_default=True,
              type=click.Choice(["observation", "preference", "fact", "constraint", "lesson", "procedure", "episode"]))
@click.option("--title", default=None)
@click.option("--tags", default=None, help="Comma-separated.")
@click.option("--importance", type=click.FloatRange(0, 1), default=None, help="0..1 (0.5 if omitted).")
@click.option("--source", default="user", show_default=True,
              type=click.Choice(["user", "system", "tool", "agent", "llm", "imported"]))
@click.option("--level", type=click.Choice(["project", "user"]), default=None,
              help="user: seen from every project (default for preferences); project: this scope only.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_context
@handle_errors
def add(ctx, db, scope, embedder, log_level, content, mtype, title, tags, importance, source, level, as_json):
    """Remember one memory."""
    from recallite_core.policy import rules as policy

    from .scoping import level_for

    s = settings_from(ctx, db=db, scope=scope, embedder=embedder, log_level=log_level)
    target = s.user_scope if level_for(mtype, level) == "user" else s.default_scope
    with open_engine(s) as mem:
        m = mem.remember(content, type=mtype, title=title, tags=tags.split(",") if tags else None,
                         importance=importance, scope=target, source={"type": source})
    if as_json:
        emit_json(m.model_dump(mode="json"))
    elif m.duplicate_of:
        click.echo(f"{m.id} already holds this ({m.status}); nothing new stored.")
    else:
        click.echo(f"{m.id} stored as {m.type}, {m.status}: {shorten(m.title)}")
        # What the write did to older memories, and how a candidate gets validated: what the MCP
        # tool returns as its note and hint.
        if m.status == "candidate":  # add never writes working memory; a flagged one never validates itself
            click.echo(f"a candidate until validated: `recallite-mcp validate {m.id}` if you confirm it"
                       + ("" if m.metadata.get("flagged") else
                          f", or by itself after {policy.PROMOTION_SUCCESSES} tasks it helped, with no failure"))
        if m.correction:
            click.echo(m.correction)
        for old in m.conflicts_with or []:
            click.echo(f"here: recallite-mcp resolve {old} {m.id} --keep {m.id} (supersede) or --keep both")
        flags = m.metadata.get("flagged")
        if flags:
            click.echo(f"flagged as instructions to an agent ({', '.join(map(str, flags))}): contexts quote it as data")


@main.command()
@common_options
@click.argument("query")
@click.option("--limit", default=5, show_default=True)
@click.option("--type", "types", multiple=True, help="Only this type (repeatable).")
@click.option("--profile", default="default", show_default=True,
              type=click.Choice(["default", "planner", "coder", "debugger", "assistant"]), help="Ranking profile.")
@click.option("--all-scopes", is_flag=True, help="Search every scope.")
@click.option("--include-inactive", is_flag=True, help="Also deprecated and superseded memories.")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
@handle_errors
def recall(ctx, db, scope, embedder, log_level, query, limit, types, profile, all_scopes, include_inactive, as_json):
    """Ranked memories for a query, with scores and reasons."""
    s = settings_from(ctx, db=db, scope=scope, embedder=embedder, log_level=log_level)
    with open_engine(s) as mem:
        r = mem.recall(query, limit=limit, types=list(types) or None, profile=profile,
                       scope=None if all_scopes else [s.default_scope, s.user_scope], include_inactive=include_inactive)
        hint = None if all_scopes or r.memories else scope_hint(mem, s.default_scope)
    if hint:
        click.echo(hint, err=True)  # stderr: stdout stays the results, for people and for --json
    if as_json:
        emit_json(r.model_dump(mode="json"))
        return
    click.echo(f"retrieval {r.retrieval_id}")
    if not r.memories:
        click.echo("No stored memory matches this query.")
        return
    click.echo(table(
        ["rank", "id", "type", "status", "score", "reasons", "memory"],
        [[h.rank, h.memory.id, h.memory.type, h.memory.status, f"{h.score:.4f}", ",".join(h.reasons[:3]),
          shorten(h.memory.title or h.memory.content, 50)] for h in r.memories],
    ))
    for h in r.memories:
        for w in h.warnings:
            click.echo(f"  warning {h.memory.id}: {w}")


@main.command()
@common_options
@click.argument("query")
@click.option("--max-tokens", default=2000, show_default=True)
@click.option("--limit", type=click.IntRange(1, 100), default=None,
              help="Max memories (default: tuned from feedback, as recallite_context does).")
@click.option("--format", "fmt", default="markdown", type=click.Choice(["markdown", "xml", "plain", "compact"]), show_default=True)
@click.option("--task", default=None, help="Short name of the kind of job (e.g. 'deploy staging'): outcomes under one name carry over.")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
@handle_errors
def context(ctx, db, scope, embedder, log_level, query, max_tokens, limit, fmt, task, as_json):
    """Prompt-ready context for a task, within a token budget."""
    s = settings_from(ctx, db=db, scope=scope, embedder=embedder, log_level=log_level)
    with open_engine(s) as mem:
        r = mem.build_context(query, max_tokens=max_tokens, limit=limit, format=fmt, scope=[s.default_scope, s.user_scope],
                              task=task)
        hint = None if r.memory_ids or r.omitted else scope_hint(mem, s.default_scope)
    if hint:
        click.echo(hint, err=True)  # stderr: stdout stays the context text, ready to paste or pipe
    if as_json:
        emit_json(r.model_dump(mode="json"))
    else:
        click.echo(r.context.rstrip("\n"))
        click.echo(f"\n[{r.retrieval_id}, {r.tokens}/{max_tokens} tokens, {counted(len(r.memory_ids), 'memory', 'memories')}]", err=True)
        if r.task_names:
            click.echo(f"[worked before as task: {', '.join(repr(n) for n in r.task_names)}]", err=True)


TYPES = ["observation", "preference", "fact", "constraint", "lesson", "procedure", "episode"]
STATUSES = ["candidate", "validated", "active", "deprecated", "superseded"]
SOURCES = ["user", "system", "tool", "agent", "llm", "imported"]


def filter_options(fn: Callable) -> Callable:
    """Which memories: scope, type, status, source, tag (each repeatable)."""
    opts = [
        click.option("--all-scopes", is_flag=True, help="Every scope (default: the project scope and the user scope)."),
        click.option("--type", "types", multiple=True, type=click.Choice(TYPES), help="Only this type (repeatable)."),
        click.option("--status", "statuses", multiple=True, type=click.Choice(STATUSES), help="Only this status (repeatable)."),
        click.option("--source", "sources", multiple=True, type=click.Choice(SOURCES), help="Only from this source (repeatable)."),
        click.option("--tag", "tags", multiple=True, help="Only with this tag (repeatable: all of them)."),
    ]
    for opt in reversed(opts):
        fn = opt(fn)
    return fn


def _scopes(s: Settings, all_scopes: bool) -> list[str] | None:
    return None if all_scopes else list(dict.fromkeys([s.default_scope, s.user_scope]))


def _matching(mem, scopes, types, statuses, sources, tags) -> list:
    """Every memory the filters match, newest first."""
    from .tools.curation import list_page

    out, offset = [], 0
    while True:
        page, nxt = list_page(mem, scopes, list(types) or None, list(statuses) or None, list(sources) or None,
                              list(tags) or None, 1000, offset)
        out.extend(page)
        if nxt is None:
            return out
        offset = nxt


@main.command("list")
@common_options
@filter_options
@click.option("--limit", default=50, show_default=True, type=click.IntRange(1, 10_000))
@click.option("--offset", default=0, show_default=True, type=click.IntRange(0))
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
@handle_errors
def list_cmd(ctx, db, scope, embedder, log_level, all_scopes, types, statuses, sources, tags, limit, offset, as_json):
    """Stored memories, newest first, filtered."""
    from .tools.curation import list_page

    s = settings_from(ctx, db=db, scope=scope, embedder=embedder, log_level=log_level)
    with open_engine(s) as mem:
        page, nxt = list_page(mem, _scopes(s, all_scopes), list(types) or None, list(statuses) or None,
                              list(sources) or None, list(tags) or None, limit, offset)
        # Also with user-level rows listed: they hide that the project scope itself is empty.
        hint = None if all_scopes or offset else scope_hint(mem, s.default_scope)
    if hint:
        click.echo(hint, err=True)  # stderr, as context does: stdout stays the listing
    if as_json:
        emit_json({"memories": [m.model_dump(mode="json") for m in page], "next_offset": nxt})
        return
    click.echo(table(["id", "type", "status", "source", "scope", "created", "memory"],
                     [[m.id, m.type, m.status, m.source.type, m.scope, m.created_at.strftime("%Y-%m-%d"),
                       shorten(m.title or m.content, 50)] for m in page]))
    if nxt is not None:
        click.echo(f"more: --offset {nxt}", err=True)


@main.command()
@common_options
@click.argument("ids", nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
@handle_errors
def show(ctx, db, scope, embedder, log_level, ids, as_json):
    """Memories in full, by id."""
    s = settings_from(ctx, db=db, scope=scope, embedder=embedder, log_level=log_level)
    with open_engine(s) as mem:
        mems = mem.get_many(list(ids))
    if as_json:
        emit_json([m.model_dump(mode="json") for m in mems])
        return
    for m in mems:
        click.echo(f"{m.id}  {m.type}, {m.status}, scope {m.scope}, source {m.source.type}, "
                   f"confidence {m.confidence:.2f}, usefulness {m.usefulness:.2f}, created {m.created_at:%Y-%m-%d %H:%M}")
        click.echo(f"title: {m.title}")
        if m.tags:
            click.echo(f"tags: {', '.join(m.tags)}")
        if m.superseded_by:
            click.echo(f"superseded by: {m.superseded_by}")
        click.echo(f"\n{m.content}\n")


def _targets(mem, ids, all_scopes, s, types, statuses, sources, tags, verb: str, yes: bool) -> list:
    """The memories a bulk command acts on: the ids given, or every match of the filters after a
    confirmation (skipped with --yes)."""
    if ids:
        return mem.get_many(list(ids))
    if not (types or statuses or sources or tags):
        raise click.UsageError(f"Name the memories to {verb}: ids, or filters (--source, --status, --type, --tag).")
    found = _matching(mem, _scopes(s, all_scopes), types, statuses, sources, tags)
    if found and not yes:
        click.echo(table(["id", "type", "status", "source", "memory"],
                         [[m.id, m.type, m.status, m.source.type, shorten(m.title or m.content, 50)] for m in found[:10]]))
        if len(found) > 10:
            click.echo(f"... and {len(found) - 10} more")
        what = "this memory" if len(found) == 1 else f"these {len(found)} memories"
        click.confirm(f"{verb.capitalize()} {what}?", abort=True)
    return found


@main.command()
@common_options
@filter_options
@click.argument("ids", nargs=-1)
@click.option("--vacuum", is_flag=True, help="Then rewrite the file so the text leaves the disk.")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@click.pass_context
@handle_errors
def forget(ctx, db, scope, embedder, log_level, all_scopes, types, statuses, sources, tags, ids, vacuum, yes):
    """Delete memories for good: by id, or every memory the filters match."""
    s = settings_from(ctx, db=db, scope=scope, embedder=embedder, log_level=log_level)
    with open_engine(s) as mem:
        targets = _targets(mem, ids, all_scopes, s, types, statuses, sources, tags, "forget", yes)
        results = [mem.forget(m.id) for m in targets]
        n = sum(1 for r in results if r.deleted)
        gone = {m.id for m in targets}
        orphans = list(dict.fromkeys(o for r in results for o in r.orphans if o not in gone))
        if vacuum and n:
            mem.vacuum()
        hint = None if n or ids or all_scopes else scope_hint(mem, s.default_scope)
    what = "tables" if s.is_postgres else "file"
    click.echo(f"forgot {n} memor{'y' if n == 1 else 'ies'}" + (f" ({what} vacuumed)" if vacuum and n else ""))
    if orphans:  # facts whose every cited source is gone: kept, but nothing backs them now
        click.echo(f"now without a source (kept): {', '.join(orphans)}", err=True)
    if hint:  # the filters looked at an empty scope only
        click.echo(hint, err=True)


@main.command()
@common_options
@click.argument("first")
@click.argument("second")
@click.option("--keep", required=True, help="'both' (they state different things: the conflict ends), or the id that holds "
              "(the other is superseded by it).")
@click.pass_context
@handle_errors
def resolve(ctx, db, scope, embedder, log_level, first, second, keep):
    """Settle a conflict between two memories linked as contradicting."""
    s = settings_from(ctx, db=db, scope=scope, embedder=embedder, log_level=log_level)
    with open_engine(s) as mem:
        a, b = mem.resolve_conflict(first, second, keep=keep)
    click.echo(f"{a.id} {a.status}, {b.id} {b.status}" + ("" if keep == "both" else f"; {keep} holds"))


@main.command()
@common_options
@click.argument("memory_id")
@click.pass_context
@handle_errors
def restore(ctx, db, scope, embedder, log_level, memory_id):
    """Undo a supersede (detected at write time or by hand): the memory gets its status back."""
    s = settings_from(ctx, db=db, scope=scope, embedder=embedder, log_level=log_level)
    with open_engine(s) as mem:
        m = mem.undo_supersede(memory_id)
    click.echo(f"{m.id} is {m.status} again")


@main.command()
@common_options
@filter_options
@click.argument("ids", nargs=-1)
@click.option("--reason", default=None, help="Why, recorded with each change.")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@click.pass_context
@handle_errors
def validate(ctx, db, scope, embedder, log_level, all_scopes, types, statuses, sources, tags, ids, reason, yes):
    """Confirm candidate memories as a person: by id, or every candidate the filters match
    (e.g. `validate --source imported` after importing your own backup)."""
    from recallite_core import RecalliteError

    s = settings_from(ctx, db=db, scope=scope, embedder=embedder, log_level=log_level)
    if not ids and not statuses:
        statuses = ("candidate",)
    done, skipped = 0, []
    with open_engine(s) as mem:
        for m in _targets(mem, ids, all_scopes, s, types, statuses, sources, tags, "validate", yes):
            try:
                mem.validate(m.id, reason=reason, by="user")
                done += 1
            except RecalliteError as exc:
                skipped.append(f"{m.id}: {exc}")
    click.echo(f"validated {done} memor{'y' if done == 1 else 'ies'}")
    for line in skipped[:20]:
        click.echo(f"skipped {line}", err=True)
    if skipped:
        sys.exit(1)


@main.command()
@common_options
@click.option("--all-scopes/--this-scope", default=True, show_default=True)
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
@handle_errors
def stats(ctx, db, scope, embedder, log_level, all_scopes, as_json):
    """Memory health: counts, feedback, tokens, file size."""
    s = settings_from(ctx, db=db, scope=scope, embedder=embedder, log_level=log_level)
    with open_engine(s) as mem:
        st = mem.stats(scope=None if all_scopes else s.default_scope)
    if as_json:
        emit_json(st.model_dump(mode="json"))
        return
    d = s.scope_decision()
    rows = [
        ["write scope", f"{d.scope} ({d.rule}: {d.reason})"],
        ["memories", f"{st.memories} ({'every scope; --this-scope for this one' if all_scopes else 'this scope'})"],
        ["by type", _kv(st.by_type)], ["by status", _kv(st.by_status)],
        ["by source", _kv(st.by_source)], ["by scope", _kv(st.by_scope)], ["relations", _kv(st.relations)],
        ["vectors", f"{st.vectors} ({st.embedder}, {st.dimensions} dims)"], ["retrievals", st.retrievals],
        ["feedback", _kv(st.feedback)], ["context calls", st.context_calls],
        ["tokens served", f"{st.tokens_served} (median {st.tokens_served_median:.0f}, p95 {st.tokens_served_p95:.0f} per call)"],
        ["tokens saved", f"{st.tokens_saved} vs injecting every match in full ({st.tokens_matched})"],
        ["tokens stored", st.tokens_stored],
        ["database", f"{st.db_path or ':memory:'} ({_size(st)})"],
        ["schema", st.schema_version],
    ]
    click.echo(table(["stat", "value"], rows))
    if d.rule == "default":
        from .scoping import DEFAULT_NOTE

        click.echo(f"\nnote: {DEFAULT_NOTE}")


def _size(st) -> str:
    from recallite_core.storage import is_postgres_url

    if is_postgres_url(st.db_path):  # the server's WAL is shared by every database on it: none is this store's
        return f"{st.db_bytes:,} bytes in recallite's tables and indexes; the server's WAL is not counted"
    return f"{st.db_bytes:,} bytes + {st.wal_bytes:,} WAL"


def _kv(d: dict) -> str:
    return ", ".join(f"{k} {v}" for k, v in d.items()) or "-"


@main.command("export")
@common_options
@click.argument("path")
@click.option("--this-scope", is_flag=True, help="Only the --scope scope.")
@click.option("--vectors", is_flag=True, help="Also write the stored vectors (about 2 KB per memory), so an import "
              "with the same embedder copies them instead of embedding again.")
@click.pass_context
@handle_errors
def export_cmd(ctx, db, scope, embedder, log_level, path, this_scope, vectors):
    """Write every memory, relation, retrieval and feedback as JSON lines."""
    if path == "-":  # it would have become a file named "-"
        raise click.BadParameter("export writes a file (written whole, then renamed into place): give a path such "
                                 "as backup.jsonl; standard output is not supported.", param_hint="PATH")
    s = settings_from(ctx, db=db, scope=scope, embedder=embedder, log_level=log_level)
    with open_engine(s) as mem:
        n = mem.export_jsonl(path, scope=s.default_scope if this_scope else None, vectors=vectors)
    click.echo(f"wrote {counted(n, 'line')} to {path}")


@main.command("import")
@common_options
@click.argument("path")
@click.option("--trust", type=click.Choice(["untrusted", "restore"]), default="untrusted", show_default=True,
              help="untrusted: memories arrive as imported candidates; restore: your own backup, kept as it was.")
@click.pass_context
@handle_errors
def import_cmd(ctx, db, scope, embedder, log_level, path, trust):
    """Read a file written by export (all or nothing). --scope X puts every memory into scope X."""
    s = settings_from(ctx, db=db, scope=scope, embedder=embedder, log_level=log_level)
    # Only a --scope typed on this command line moves the memories: RECALLITE_SCOPE or the git
    # repository picks where new memories go, and must not fold a backup's projects into one.
    into = scope if scope is not None else ctx.find_root().params.get("scope")
    with open_engine(s) as mem:
        counts = mem.import_jsonl(path, trust=trust, progress=progress("import"), scope=into)
    click.echo(", ".join(f"{k} {v}" for k, v in counts.items()))
    if trust == "untrusted" and counts.get("retired"):
        click.echo(f"{counted(counts['retired'], 'memory', 'memories')} deprecated or superseded in the file stayed so; "
                   "the others are candidates.")
    if counts.get("history_skipped"):
        click.echo(f"{counted(counts['history_skipped'], 'retrieval or feedback record', 'retrieval and feedback records')}"
                   " skipped: outcome history comes back only with --trust restore (your own backup).")


@main.command("migrate")
@click.option("--from", "source", required=True, help="The store to copy: a SQLite file or a postgresql:// URL.")
@click.option("--to", "target", required=True, help="Where to copy it: a SQLite file or a postgresql:// URL (empty).")
@click.option("--into-nonempty", is_flag=True, help="Add to a target that already holds memories.")
@click.option("--embedder", type=click.Choice(["default", "onnx", "hash"]), default=None,
              help="The embedder both stores use (its vectors are copied; another one's are recomputed). "
                   "Env: RECALLITE_EMBEDDER.")
@click.option("--batch", type=click.IntRange(1, 100_000), default=None,
              help="Memories read and written per step (default 500): bounds memory; still one transaction.")
@click.option("--log-level", type=click.Choice(LOG_LEVELS, case_sensitive=False), default=None)
@click.pass_context
@handle_errors
def migrate_cmd(ctx, source, target, into_nonempty, embedder, batch, log_level):
    """Copy a whole store (memories, relations, retrieval log, feedback) to another; verify counts."""
    from .migrate import migrate

    settings_from(ctx, embedder=embedder, log_level=log_level)
    if not migrate(source, target, embedder=embedder, into_nonempty=into_nonempty,
                   load_settings=load_settings, open_engine=open_engine, batch=batch):
        click.echo("counts differ: check the target before using it", err=True)
        ctx.exit(1)


@main.command()
@common_options
@click.pass_context
@handle_errors
def reindex(ctx, db, scope, embedder, log_level):
    """Rebuild the keyword index and every vector (also after changing embedder)."""
    from recallite_core import Recallite, RecalliteConfig

    s = settings_from(ctx, db=db, scope=scope, embedder=embedder, log_level=log_level)
    mem = Recallite.open(s.db_path, embedder=s.embedder, config=RecalliteConfig(default_scope=s.default_scope),
                         on_embedder_mismatch="reindex")
    with mem:
        n = mem.reindex(progress=progress("reindex"))
    click.echo(f"reindexed {counted(n, 'memory', 'memories')} with {mem.embedder.name}")


@main.command()
@common_options
@click.option("--repair", is_flag=True, help="Fix the drift found (re-embeds only what is missing).")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
@handle_errors
def reconcile(ctx, db, scope, embedder, log_level, repair, as_json):
    """Find (and with --repair fix) drift between memories and their projections: vectors, keyword
    index, conversation turns, chunks, citations, session summaries. Exit 1 if drift remains."""
    s = settings_from(ctx, db=db, scope=scope, embedder=embedder, log_level=log_level)
    with open_engine(s) as mem:
        report = mem.reconcile(repair=repair)
    if as_json:
        emit_json(report.model_dump(mode="json"))
    else:
        click.echo(f"{report.memories} memories, {report.vectors} vectors, {report.chunks} chunks")
        if not report.drift:
            click.echo("no drift: every projection matches the memories table")
        else:
            click.echo(table(["drift", "count", "repaired", "fix", "ids"],
                             [[d.kind, d.count, d.repaired, d.fix, shorten(", ".join(d.ids), 40)] for d in report.drift]))
            if not repair:
                click.echo("run `recallite-mcp reconcile --repair` to fix it")
    if not report.ok:
        sys.exit(1)


@main.command()
@common_options
@click.pass_context
@handle_errors
def vacuum(ctx, db, scope, embedder, log_level):
    """Rewrite the file so the text of forgotten memories leaves the disk (needs the other clients idle)."""
    s = settings_from(ctx, db=db, scope=scope, embedder=embedder, log_level=log_level)
    with open_engine(s) as mem:
        before = sum(mem.store.file_sizes())
        mem.vacuum()
        after = sum(mem.store.file_sizes())
    if s.is_postgres:  # VACUUM FULL rewrote the tables; the server's WAL and backups age out on their own
        click.echo(f"vacuumed recallite's tables in {s.db_label} (VACUUM FULL): {before:,} -> {after:,} bytes; "
                   "copies in the server's WAL and backups age out as the server recycles them")
    else:
        click.echo(f"vacuumed {s.db_label}: {before:,} -> {after:,} bytes")


@main.command()
@common_options
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def doctor(ctx, db, scope, embedder, log_level, as_json):
    """Check the database, the embedder, WAL and permissions; print an MCP config to paste."""
    from .doctor import run_doctor

    s = settings_from(ctx, db=db, scope=scope, embedder=embedder, log_level=log_level)
    report = run_doctor(s)
    if as_json:
        emit_json(report)
    else:
        click.echo(table(["check", "ok", "detail"], [[c["check"], "yes" if c["ok"] else "NO", c["detail"]] for c in report["checks"]]))
        click.echo("\nPaste into your MCP client's config (Claude Desktop: claude_desktop_config.json):\n")
        click.echo(json.dumps(report["mcp_config"], indent=2))
        if s.is_postgres and ":***@" in json.dumps(report["mcp_config"]):
            click.echo("\nnote: the password is shown as ***; keep it out of the config with PGPASSWORD or ~/.pgpass.")
    if not all(c["ok"] for c in report["checks"]):
        sys.exit(1)


EVAL_BENCHMARKS = ("locomo", "paraphrase", "nearmiss", "history", "updates", "chats", "corrections")  # modules of recallite_mcp.benchmarks with main(argv)


@main.command("eval", context_settings={"ignore_unknown_options": True, "allow_extra_args": True,
                                        "help_option_names": []})
@click.argument("benchmark", required=False)
@click.pass_context
def eval_cmd(ctx, benchmark):
    """Retrieval quality: `eval locomo --data ../shared/bench` or `eval paraphrase`; `eval NAME --help`
    for a benchmark's options."""
    import importlib

    if benchmark in (None, "-h", "--help"):
        click.echo(ctx.get_help())
        click.echo(f"\nBenchmarks: {', '.join(EVAL_BENCHMARKS)}.")
        return
    if benchmark not in EVAL_BENCHMARKS:
        raise click.BadParameter(f"{benchmark!r} is not one of {', '.join(EVAL_BENCHMARKS)}.", param_hint="BENCHMARK")
    mod = importlib.import_module(f".benchmarks.{benchmark}", __package__)
    sys.exit(mod.main(list(ctx.args)) or 0)


@main.command(context_settings={"ignore_unknown_options": True, "allow_extra_args": True}, add_help_option=False)
@click.option("--learning", is_flag=True, help="The closed-loop learning benchmark instead of speed.")
@click.option("--faults", is_flag=True, help="Concurrency (N servers over stdio, one file) and SIGKILL crash runs, with checks.")
@click.option("--agent-day", "agent_day", is_flag=True,
              help="Days of an agent in two projects through real stdio servers, with and without feedback.")
@click.option("--help", "-h", "show_help", is_flag=True,
              help="This help and the speed benchmark's options; after --learning, --faults or --agent-day, that benchmark's.")
@click.pass_context
def bench(ctx, learning, faults, agent_day, show_help):
    """Benchmarks that print numbers: speed (default), --learning, --faults or --agent-day. Other options go to the benchmark."""
    if agent_day:
        from .benchmarks import agent_day as mod
    elif faults:
        from .benchmarks import faults as mod
    elif learning:
        from .benchmarks import learning as mod
    else:
        from .benchmarks import performance as mod
    args = list(ctx.args)
    if show_help:
        # The benchmark's own options live in its parser: --help is passed on, so that
        # `bench --learning --help` lists --catalog and `bench --db URL --help` lists --quick.
        if not (learning or faults or agent_day):
            click.echo(ctx.get_help())
            click.echo("\nOptions of the speed benchmark (the default):\n")
        args.append("--help")
    sys.exit(mod.main(args) or 0)


@main.command()
@common_options
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind (loopback unless you mean otherwise).")
@click.option("--port", default=8766, show_default=True, type=click.IntRange(1, 65535))
@click.option("--open", "open_browser", is_flag=True, help="Also open the URL in your web browser.")
@click.pass_context
@handle_errors
def ui(ctx, db, scope, embedder, log_level, host, port, open_browser):
    """A local web page to see, search and correct the memory: prints its URL with a one-time token."""
    from .browser.serve import run

    run(settings_from(ctx, db=db, scope=scope, embedder=embedder, log_level=log_level), host, port, open_browser)


if __name__ == "__main__":  # pragma: no cover
    main()
