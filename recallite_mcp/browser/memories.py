"""The Memories page: newest first by filter, or the real hybrid recall with its reasons."""

from __future__ import annotations

from recallite_core import RecalliteError
from recallite_core.models import RecallHit, ScoreBreakdown

from .filters import Filters
from .markup import Safe, badge, h, join, layout, mem_link, num, shorten, url, when
from .wording import in_browser_terms, said

PAGE_SIZE = 50
SEARCH_LIMITS = (10, 20, 50, 100)


def memories_page(ctx) -> tuple[Safe, int]:
    f = Filters.read(ctx.query)
    q = ctx.query.get("q", "").strip()
    form = search_form(ctx, f, q)
    try:
        found = results(ctx, f, q) if q else listing(ctx, f)
    except RecalliteError as exc:  # a bad filter or query: say so above the form, keep what was typed
        return layout("Memories", form, active="/", error=said(exc)), ctx.status_of(exc)
    return layout("Memories", join([form, found]), active="/", notice=ctx.notice()), 200


def search_form(ctx, f: Filters, q: str) -> Safe:
    limit = ctx.query.get("limit", "20")
    return h(
        '<form method="get" action="/" class="filters"><input type="search" name="q" value="{}" '
        'placeholder="search: what an agent would ask" size="40" autofocus>{}'
        '<label>hits <select name="limit">{}</select></label><button>Search</button> <a href="/">clear</a></form>',
        q, f.fields(list(ctx.look.scopes())),
        join(h('<option{}>{}</option>', Safe(" selected") if str(n) == limit else Safe(""), n) for n in SEARCH_LIMITS),
    )


def listing(ctx, f: Filters) -> Safe:
    offset = ctx.int_param("offset", 0)
    page = f.page(ctx.look, limit=PAGE_SIZE, offset=offset)
    if not page.memories:
        return h("<p>No memories match{}.</p>", " these filters" if f.params() else "")
    trust = ctx.mem.trust([m.id for m in page.memories])
    links = ctx.look.relation_totals([m.id for m in page.memories])
    rows = [memory_row(m, trust.get(m.id), links.get(m.id, 0)) for m in page.memories]
    nav = []
    if offset > 0:
        nav.append(h('<a href="{}">← newer</a>', url("/", **f.params(), offset=max(0, offset - PAGE_SIZE) or None)))
    if page.next_offset is not None:
        nav.append(h('<a href="{}">older →</a>', url("/", **f.params(), offset=page.next_offset)))
    return h('<p class="count">{}–{} of {} memories, newest first</p>{}<p class="pages">{}</p>',
             offset + 1, offset + len(page.memories), page.total, memory_table(rows), join(nav, " "))


def memory_table(rows: list[Safe]) -> Safe:
    return h('<table class="memories"><thead><tr><th>memory</th><th>type</th><th>status</th><th>source</th>'
             '<th>scope</th><th title="trust score 0.1..1">trust</th><th>confidence</th><th>usefulness</th>'
             '<th title="relations">links</th><th>created</th></tr></thead><tbody>{}</tbody></table>', join(rows))


def memory_row(m, trust: float | None, links: int) -> Safe:
    version = m.metadata.get("version")
    # A derived title is the text's first words: repeat the text only when it says more.
    said = m.content.strip().rstrip(".") != m.title.rstrip("…").rstrip(".")
    return h(
        '<tr><td>{} <strong>{}</strong>{}<div class="text">{}</div>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>'
        '<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>',
        mem_link(m.id), m.title, h(' <span class="muted">v{}</span>', version) if version else "",
        shorten(m.content) if said else "", tags(m.tags), badge("type", m.type), badge("status", m.status), m.source.type, m.scope,
        num(trust), num(m.confidence), num(m.usefulness), links or "", when(m.created_at),
    )


def tags(values: list[str]) -> Safe:
    return join(h('<a class="tag" href="{}">{}</a>', url("/", tag=t), t) for t in values)


def results(ctx, f: Filters, q: str) -> Safe:
    limit = ctx.int_param("limit", 20)
    statuses = [f.status] if f.status else None
    res = ctx.mem.recall(q, limit=limit, scope=f.scope or None, types=[f.type] if f.type else None,
                         statuses=statuses, tags=f.tags() or None)
    hits = [hit for hit in res.memories if not f.source or hit.memory.source.type == f.source]
    head = h('<p class="count">{} hit{} for <q>{}</q> ({}; logged as {}).{}</p>', len(hits), "" if len(hits) == 1 else "s", res.query,
             "live statuses" if not f.status else f.status, res.retrieval_id,
             " The source filter applies to these hits." if f.source else "")
    if not hits:
        return join([head, Safe("<p>Nothing found. Fewer filters, or other words?</p>")])
    trust = ctx.mem.trust([hit.memory.id for hit in hits])
    return join([head, Safe('<ol class="hits">'), join(hit_item(hit, trust.get(hit.memory.id)) for hit in hits),
                 Safe("</ol>")])


def hit_item(hit: RecallHit, trust: float | None) -> Safe:
    m = hit.memory
    warn = join(h('<div class="warning">{}</div>', in_browser_terms(w, m.id)) for w in hit.warnings)
    return h(
        '<li class="hit"><div>{} <strong>{}</strong> {} {} <span class="muted">{} · {} · trust {} · confidence {} · '
        'usefulness {}</span></div><div class="text">{}</div>{}<div class="reasons">score {} · {}</div>'
        '<details><summary>score breakdown</summary>{}</details></li>',
        mem_link(m.id), m.title, badge("type", m.type), badge("status", m.status), m.source.type, m.scope,
        num(trust), num(m.confidence), num(m.usefulness), shorten(m.content, 400), warn, num(hit.score, 4),
        join((h('<span class="reason">{}</span>', r) for r in hit.reasons), " "), breakdown(hit.breakdown),
    )


def breakdown(b: ScoreBreakdown) -> Safe:
    rows = [
        ("keyword channel", f"rank {b.keyword_rank}, score {num(b.keyword_score, 3)}" if b.keyword_rank else "no match"),
        ("vector channel", f"rank {b.vector_rank}, similarity {num(b.vector_similarity, 3)}" if b.vector_rank else "no match"),
        ("fusion", num(b.fusion, 4) + (f" (keyword weight {num(b.keyword_alpha)})" if b.keyword_alpha is not None else "")),
        ("× status", num(b.status_factor, 3)), ("× profile", num(b.profile_factor, 3)),
        ("× quality (confidence, usefulness, importance)", num(b.quality, 3)),
        ("× outcomes (learning)", num(b.outcome_factor, 3)), ("× contradictions", num(b.contradiction_factor, 3)),
        ("= final", num(b.final, 4)),
    ]
    if b.rerank_score is not None:
        rows.append(("rerank score", num(b.rerank_score, 4)))
    if b.learning is not None:
        e = b.learning
        rows.append(("outcome evidence", f"{e.outcomes} outcomes: {num(e.successes)} success, {num(e.failures)} failure; "
                                         f"posterior {num(e.posterior_mean)}, exploration +{num(e.exploration_bonus)}"))
    return h('<table class="breakdown">{}</table>', join(h("<tr><th>{}</th><td>{}</td></tr>", k, v) for k, v in rows))
