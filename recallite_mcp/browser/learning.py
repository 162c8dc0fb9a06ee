"""Learning: the retrieval log with its feedback, one retrieval in full, success over time for
a scope (an SVG drawn here, no script), and the contradictions waiting for a decision."""

from __future__ import annotations

from recallite_core import RecalliteError

from .markup import Safe, badge, h, join, layout, mem_link, num, options, shorten, table, url, when
from .wording import said

LOG_PAGE = 30


def learning_page(ctx, *, error: str | None = None, status: int = 200):
    scope = ctx.query.get("scope", "").strip()
    days = ctx.int_param("days", 30)
    body = join([
        h('<form method="get" action="/learning" class="filters"><label>scope <select name="scope">{}</select></label>'
          '<label>days <input name="days" value="{}" size="4"></label><button>Show</button></form>',
          options(list(ctx.look.scopes()), scope, "all scopes"), days),
        h("<section><h2>Success over time</h2>{}</section>", curve(ctx, scope, days)),
        h("<section><h2>Contradictions to resolve</h2>{}</section>", contradictions(ctx, scope)),
        h("<section><h2>Retrieval log</h2>{}</section>", log(ctx, scope)),
    ])
    return layout("Learning", body, active="/learning", notice=ctx.notice(), error=error), status


def curve(ctx, scope: str, days: int) -> Safe:
    points = ctx.look.success_over_time(scope=scope or None, days=days)
    if not points:
        return Safe('<p class="muted">No feedback yet. Agents report outcomes with the recallite_feedback tool.</p>')
    total = sum(p.feedback for p in points)
    wins = sum(p.successes for p in points)
    rows = [[p.day, p.feedback, p.successes, p.partial, p.failures, num(p.mean_score)] for p in reversed(points)]
    return join([
        h('<p>{} feedback reports, {} successes ({}%).</p>', total, wins, round(100 * wins / total)),
        success_svg(points),
        h("<details><summary>per day</summary>{}</details>",
          table(["day", "reports", "success", "partial", "failure", "mean score"], rows)),
    ])


def success_svg(points) -> Safe:
    """Bars: the share of successes per day (height); the line and dots: the mean score."""
    width, height, pad = 640, 140, 20
    step = (width - 2 * pad) / max(1, len(points))
    bars, line = [], []
    for i, p in enumerate(points):
        share = p.successes / p.feedback if p.feedback else 0.0
        x = pad + i * step
        bar = (height - 2 * pad) * share
        bars.append(h('<rect x="{}" y="{}" width="{}" height="{}"><title>{}: {} of {} succeeded</title></rect>',
                      f"{x + step * 0.1:.1f}", f"{height - pad - bar:.1f}", f"{step * 0.8:.1f}", f"{bar:.1f}",
                      p.day, p.successes, p.feedback))
        line.append((f"{x + step / 2:.1f}", f"{height - pad - (height - 2 * pad) * p.mean_score:.1f}"))
    return h('<svg class="curve" viewBox="0 0 {} {}" width="{}" height="{}" role="img" aria-label="success share per '
             'day"><line x1="{}" y1="{}" x2="{}" y2="{}" class="axis"/>{}<polyline points="{}" class="mean"/>{}'
             '<text x="{}" y="14">100%</text><text x="{}" y="{}">{} … {}</text></svg>',
             width, height, width, height, pad, height - pad, width - pad, height - pad, join(bars),
             " ".join(f"{x},{y}" for x, y in line),
             join(h('<circle cx="{}" cy="{}" r="3" class="mean"><title>mean score</title></circle>', x, y) for x, y in line),
             2, pad, height - 4, points[0].day, points[-1].day)


def contradictions(ctx, scope: str) -> Safe:
    found = ctx.look.contradictions(scope=scope or None)
    if not found:
        return Safe('<p class="muted">None open.</p>')
    items = []
    for c in found:
        items.append(h(
            '<div class="pair"><div>{} <span class="muted">{}</span><div class="text">{}</div></div>'
            '<div class="vs">contradicts</div><div>{} <span class="muted">{}</span><div class="text">{}</div></div>'
            '<form method="post" action="/learning/resolve"><input type="hidden" name="a" value="{}">'
            '<input type="hidden" name="b" value="{}"><button name="keep" value="{}">{} holds</button> '
            '<button name="keep" value="{}">{} holds</button> <button name="keep" value="both">both hold</button>'
            '</form></div>',
            mem_link(c.a.id), c.a.scope, shorten(c.a.content, 240), mem_link(c.b.id), c.b.scope, shorten(c.b.content, 240),
            c.a.id, c.b.id, c.a.id, c.a.id, c.b.id, c.b.id))
    return join(items)


def log(ctx, scope: str) -> Safe:
    offset = ctx.int_param("offset", 0)
    entries = ctx.look.retrievals(scope=scope or None, limit=LOG_PAGE + 1, offset=offset)
    more, entries = len(entries) > LOG_PAGE, entries[:LOG_PAGE]
    if not entries:
        return Safe('<p class="muted">No retrievals yet.</p>')
    rows = []
    for e in entries:
        fb = join((h("{} {} ", badge("outcome", f.outcome), num(f.score)) for f in e.feedback)) if e.feedback else "—"
        rows.append([h('<a href="{}">{}</a>', f"/learning/retrieval/{e.id}", e.id), when(e.created_at), e.kind,
                     shorten(e.query, 90), e.task or "—", ", ".join(e.scopes) if e.scopes else "all", e.hits, fb])
    nav = []
    if offset:
        nav.append(h('<a href="{}">← newer</a>', url("/learning", scope=scope, offset=max(0, offset - LOG_PAGE) or None)))
    if more:
        nav.append(h('<a href="{}">older →</a>', url("/learning", scope=scope, offset=offset + LOG_PAGE)))
    return join([table(["id", "when", "kind", "query", "task", "scopes", "hits", "feedback"], rows),
                 h('<p class="pages">{}</p>', join(nav, " "))])


def retrieval_page(ctx):
    entry, items = ctx.look.retrieval(ctx.path["id"])
    fb = [[f.id, badge("outcome", f.outcome), num(f.score), ", ".join(f.used_ids) or "(none named)", f.reason or "—",
           when(f.created_at)] for f in entry.feedback]
    rows = [[i.rank, mem_link(i.memory_id), i.memory.title if i.memory else "(forgotten)", num(i.score, 4),
             "yes" if i.served else "no (budget)", "yes" if i.expanded else ""] for i in items]
    body = join([
        h('<p><q>{}</q> · {}{} · profile {} · scopes {} · {}{}</p>', entry.query, entry.kind,
          f" · task {entry.task}" if entry.task else "", entry.profile,
          ", ".join(entry.scopes) if entry.scopes else "all", when(entry.created_at),
          f" · {entry.tokens_served} tokens served" if entry.tokens_served is not None else ""),
        h("<h2>Feedback</h2>{}", table(["id", "outcome", "score", "used", "reason", "when"], fb) if fb
          else Safe('<p class="muted">None reported.</p>')),
        h("<h2>Ranked</h2>{}", table(["rank", "memory", "title", "score", "shown", "opened"], rows)),
    ])
    return layout(f"Retrieval {entry.id}", body, active="/learning"), 200


def resolve(ctx):
    a, b, keep = ctx.form.get("a", ""), ctx.form.get("b", ""), ctx.form.get("keep", "")
    try:
        ctx.mem.resolve_conflict(a, b, keep=keep)
    except RecalliteError as exc:
        ctx.query = {}
        return learning_page(ctx, error=said(exc), status=ctx.status_of(exc))
    return ctx.redirect(url("/learning", done="resolved"))


__all__ = ["learning_page", "retrieval_page", "resolve"]
