"""One memory in full: its text and numbers, relations, versions, outcome history, and the
forms that correct it (handled in curate.py)."""

from __future__ import annotations

import json

from recallite_core.models import RELATION_TYPES

from .markup import Safe, badge, h, join, layout, mem_link, num, table, url, when


def memory_page(ctx, memory_id: str, *, error: str | None = None, status: int = 200, draft: str | None = None
                ) -> tuple[Safe, int]:
    m = ctx.mem.get(memory_id)
    trust = ctx.mem.trust([m.id])[m.id]
    body = join([
        h('<p>{} {} <span class="muted">scope {} · source {}{} · {}</span></p>', badge("type", m.type),
          badge("status", m.status), m.scope, m.source.type, f" ({m.source.id})" if m.source.id else "",
          m.layer or ""),
        h('<pre class="content">{}</pre>', m.content),
        facts(m, trust),
        section("Relations", relations(ctx, m.id)),
        section("Versions", versions(ctx, m.id)),
        section("Outcome history", outcomes(ctx, m.id)),
        section("Correct it", forms(m, draft)),
    ])
    return layout(f"{m.id}: {m.title}", body, active="/", notice=ctx.notice(), error=error), status


def section(title: str, content: Safe) -> Safe:
    return h('<section><h2>{}</h2>{}</section>', title, content)


def facts(m, trust: float) -> Safe:
    rows = [
        ("trust", f"{num(trust)} (source, validation age, contradictions, independent support)"),
        ("confidence", num(m.confidence)), ("usefulness", f"{num(m.usefulness)} ({m.success_count} successes, "
                                                         f"{m.failure_count} failures)"),
        ("importance", num(m.importance)), ("recalled", f"{m.access_count} times, last {when(m.last_accessed_at)}"),
        ("created", when(m.created_at)), ("updated", when(m.updated_at)),
        ("tags", ", ".join(m.tags) or "—"), ("session", m.session or "—"), ("category", m.category or "—"),
        ("valid until", when(m.valid_until)),
        ("superseded by", mem_link(m.superseded_by) if m.superseded_by else "—"),
        ("metadata", h("<code>{}</code>", json.dumps(m.metadata, ensure_ascii=False)) if m.metadata else "—"),
    ]
    return h('<table class="facts">{}</table>', join(h("<tr><th>{}</th><td>{}</td></tr>", k, v) for k, v in rows))


def relations(ctx, memory_id: str) -> Safe:
    rels = ctx.mem.relations(memory_id)
    if not rels:
        return Safe('<p class="muted">None.</p>')
    others = {r.to_id if r.from_id == memory_id else r.from_id for r in rels}
    found = {o.id: o for o in ctx.mem.get_many(sorted(others))} if others else {}
    rows = []
    for r in rels:
        out = r.from_id == memory_id
        other = r.to_id if out else r.from_id
        label = f"this {r.type} →" if out else f"← {r.type} this"
        title = found[other].title if other in found else ""
        rows.append([label, mem_link(other), title, "yes" if r.confidence_effect else "no (trust policy)", when(r.created_at)])
    return table(["link", "memory", "title", "moves confidence", "since"], rows)


def versions(ctx, memory_id: str) -> Safe:
    chain = ctx.mem.history(memory_id)
    if len(chain) < 2:
        return Safe('<p class="muted">One version.</p>')
    rows = [[mem_link(v.id) if v.id != memory_id else h("<strong>{}</strong>", v.id), v.metadata.get("version", 1),
             badge("status", v.status), when(v.created_at), v.content[:120]] for v in chain]
    return table(["id", "version", "status", "written", "text"], rows)


def outcomes(ctx, memory_id: str) -> Safe:
    rows = ctx.look.outcomes(memory_id, limit=50)
    if not rows:
        return Safe('<p class="muted">No feedback has reached it yet.</p>')
    return table(["when", "retrieval", "query", "outcome", "credit", "usefulness"], [
        [when(o.created_at), h('<a href="{}">{}</a>', f"/learning/retrieval/{o.retrieval_id}", o.retrieval_id)
         if o.retrieval_id else "—", o.query or "—", o.outcome,
         "unused (served, not named)" if o.kind == "unused" else f"weight {num(o.weight)}",
         f"{num(o.old_usefulness)} → {num(o.new_usefulness)}"] for o in rows])


def forms(m, draft: str | None) -> Safe:
    base = f"/memory/{m.id}"
    unsafe = Safe('<label class="small"><input type="checkbox" name="allow_unsafe" value="1"> override the trust '
                  'policy</label>')
    retired = m.status == "superseded"
    edit = Safe('<p class="muted">Superseded: correct the newest version instead.</p>') if retired else h(
        '<form method="post" action="{}/edit" class="edit"><h3>Edit (saved as a new version; this one is superseded)</h3>'
        '<label>title <input name="title" value="{}" size="60"></label>'
        '<textarea name="content" rows="6" cols="90">{}</textarea>'
        '<label>tags <input name="tags" value="{}" size="40"></label>'
        '<label>why <input name="reason" size="40"></label><button name="go" value="edit">Save new version</button></form>',
        base, m.title, m.content if draft is None else draft, ", ".join(m.tags))
    status = h(
        '<form method="post" action="{}/status" class="inline"><h3>Status</h3>'
        '<label>why <input name="reason" size="30"></label>{}'
        '<button name="action" value="validate">Validate</button>'
        '<button name="action" value="activate">Activate</button>'
        '<button name="action" value="deprecate">Deprecate</button></form>', base, unsafe)
    supersede = h(
        '<form method="post" action="{}/supersede" class="inline"><h3>Supersede by another memory</h3>'
        '<label>newer memory <input name="by" placeholder="mem_42" size="10"></label>'
        '<label>why <input name="reason" size="30"></label>{}<button>Supersede</button></form>', base, unsafe)
    relate = h(
        '<form method="post" action="{}/relate" class="inline"><h3>Relate</h3>this <select name="relation">{}</select> '
        '<input name="to" placeholder="mem_42" size="10">{}<button>Link</button></form>',
        base, join(h("<option>{}</option>", r) for r in RELATION_TYPES), unsafe)
    forget = h('<form method="post" action="{}/forget" class="inline danger"><h3>Forget</h3>'
               'Deletes it with its vector, relations and outcomes (asks first). <button>Forget…</button></form>', base)
    return join([edit, status, supersede, relate, forget])


def forget_confirm(ctx, memory_id: str) -> tuple[Safe, int]:
    m = ctx.mem.get(memory_id)
    body = h('<p>Delete <strong>{}</strong> for good? Its text, vector, relations and outcome history go; queries '
             'that showed it are blanked in the log.</p><pre class="content">{}</pre>'
             '<form method="post" action="{}"><input type="hidden" name="confirm" value="yes">'
             '<button class="danger">Yes, forget {}</button> <a href="{}">No, keep it</a></form>',
             m.id, m.content, f"/memory/{m.id}/forget", m.id, url(f"/memory/{m.id}"))
    return layout(f"Forget {m.id}?", body, active="/"), 200
