"""Health: what the store holds, its file, the embedder, and whether the projections agree."""

from __future__ import annotations

from recallite_core.storage import is_postgres_url

from .markup import Safe, h, join, layout, table, url, when
from .wording import in_browser_terms


def health_page(ctx):
    st = ctx.mem.stats()
    last = ctx.look.reconciled_at()
    counts = [["memories", st.memories], ["by status", kv(st.by_status)], ["by type", kv(st.by_type)],
              ["by source", kv(st.by_source)], ["relations", kv(st.relations)],
              ["retrievals", st.retrievals], ["feedback", kv(st.feedback)], ["context calls", st.context_calls],
              ["tokens", f"{st.tokens_served:,} served, {st.tokens_saved:,} saved, {st.tokens_stored:,} stored"],
              ["trust", f"mean {st.trust.get('mean')}, {kv(st.trust.get('buckets', {}))}" if st.trust else "—"],
              ["expired", st.expired], ["secrets redacted", st.redactions]]
    store = [["database" if is_postgres_url(st.db_path) else "file", st.db_path or ":memory:"], ["size", size(st)],
             ["schema", st.schema_version], ["embedder", f"{st.embedder} ({st.dimensions} dimensions)"],
             ["vectors", f"{st.vectors:,} of {st.memories:,} memories"],
             ["last repair", when(last) if last else "never (`recallite-mcp reconcile --repair` has not run)"]]
    scopes = [[h('<a href="{}">{}</a>', url("/", scope=s), s), n] for s, n in st.by_scope.items()]
    check = Safe('<form method="get" action="/health"><button name="check" value="1">Check projections now'
                 '</button> <span class="muted">(vectors, keyword index, turns, chunks; read-only)</span></form>')
    if ctx.query.get("check"):
        check = join([check, reconcile_report(ctx.mem.reconcile(repair=False))])
    body = join([h("<section><h2>Store</h2>{}{}</section>", table(["", ""], store), check),
                 h("<section><h2>Counts</h2>{}</section>", table(["", ""], counts)),
                 h("<section><h2>Scopes</h2>{}</section>", table(["scope", "memories"], scopes))])
    return layout("Health", body, active="/health", notice=ctx.notice()), 200


def reconcile_report(report) -> Safe:
    if not report.drift:
        return Safe('<p class="notice">No drift: every projection matches the memories table.</p>')
    rows = [[d.kind.replace("_", " ").replace("fts", "keyword index"), d.count, in_browser_terms(d.fix), ", ".join(d.ids)]
            for d in report.drift]  # the kinds are the engine's names: missing_vectors is "missing vectors" here
    return join([table(["drift", "count", "fix", "ids"], rows),
                 Safe("<p>Repair with <code>recallite-mcp reconcile --repair</code>.</p>")])


def size(st) -> str:
    # A PostgreSQL server's write-ahead log is shared by all its databases: none of it is this store's.
    if is_postgres_url(st.db_path):
        return f"{st.db_bytes:,} bytes in recallite's tables and indexes (the server's WAL is not counted)"
    return f"{st.db_bytes:,} bytes + {st.wal_bytes:,} WAL"


def kv(d: dict) -> str:
    return ", ".join(f"{k} {v}" for k, v in d.items()) or "—"
