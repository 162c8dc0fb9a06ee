"""Curate: every change a person makes in the browser, each through the engine's public API
(same rules and errors as the MCP tools and the CLI), and bulk validate/forget by filter with
a preview to confirm. A forget, of one or many, names the memories it left without a source
and offers to forget them too."""

from __future__ import annotations

import hashlib

from recallite_core import RecalliteError

from .detail import forget_confirm, memory_page
from .filters import Filters
from .markup import Safe, alert, badge, h, join, layout, mem_link, memories_count, shorten, table, url
from .wording import said

# The person at the browser: trusted, and named so the record says where a change came from.
BY_USER = {"type": "user", "id": "browser"}
BULK_MAX = 1000  # one request never runs longer than this many engine calls
STATUS_ACTIONS = {"validate": "validated", "activate": "activated", "deprecate": "deprecated"}


def on_memory(ctx, action, done: str, *, draft_field: str | None = None):
    """Run ``action()`` for the memory in the path; on success go back to its page with a
    notice, on an engine error show the page again with the error (and what was typed)."""
    memory_id = ctx.path["id"]
    try:
        target = action(memory_id) or memory_id
    except RecalliteError as exc:
        draft = ctx.form.get(draft_field) if draft_field else None
        return memory_page(ctx, memory_id, error=said(exc), status=ctx.status_of(exc), draft=draft)
    return ctx.redirect(url(f"/memory/{target}", done=done))


def edit(ctx):
    f = ctx.form
    return on_memory(ctx, lambda mid: ctx.mem.revise(
        mid, f.get("content", ""), title=f.get("title") or None, source=BY_USER, reason=f.get("reason") or None,
        tags=[t.strip() for t in f.get("tags", "").split(",") if t.strip()]).id, "edited", draft_field="content")


def change_status(ctx):
    action = ctx.form.get("action", "")
    if action not in STATUS_ACTIONS:
        return memory_page(ctx, ctx.path["id"], error=f"Unknown action {action!r}: use Validate, Activate or Deprecate.",
                           status=400)
    method = getattr(ctx.mem, action)
    return on_memory(ctx, lambda mid: method(mid, ctx.form.get("reason") or None, by=BY_USER,
                                             allow_unsafe=ctx.flag("allow_unsafe")) and None, STATUS_ACTIONS[action])


def supersede(ctx):
    return on_memory(ctx, lambda mid: ctx.mem.supersede(
        mid, ctx.form.get("by", "").strip(), reason=ctx.form.get("reason") or None, by=BY_USER,
        allow_unsafe=ctx.flag("allow_unsafe")) and None, "superseded")


def relate(ctx):
    return on_memory(ctx, lambda mid: ctx.mem.relate(
        mid, ctx.form.get("to", "").strip(), ctx.form.get("relation", ""), allow_unsafe=ctx.flag("allow_unsafe")) and None,
        "related")


def forget(ctx):
    if ctx.form.get("confirm") != "yes":
        return forget_confirm(ctx, ctx.path["id"])
    memory_id = ctx.path["id"]
    try:
        result = ctx.mem.forget(memory_id)
    except RecalliteError as exc:
        return memory_page(ctx, memory_id, error=said(exc), status=ctx.status_of(exc))
    if result.orphans:  # what it leaves without a source is named here, as a bulk forget does
        body = join([orphans_section(ctx, result.orphans), Safe('<p><a href="/">Back to the memories</a></p>')])
        return layout("Forgotten", body, active="/", notice=f"Forgot {result.id}."), 200
    return ctx.redirect(url("/", done="forgotten", id=memory_id))


def orphans_section(ctx, orphans: list[str]) -> Safe:
    """The memories a forget left without a source (they cited only what went): kept, and the
    choice, forget them too (one button) or keep them."""
    try:
        titles = {m.id: m.title for m in ctx.mem.get_many(orphans)}
    except RecalliteError:  # one went meanwhile: the ids still say which
        titles = {}
    one = len(orphans) == 1
    text = (f"{orphans[0]} cited only what was forgotten. It was kept and still comes up in recall, with no source "
            "left to check it against: forget it too, or keep it (nothing to do)." if one else
            f"These {len(orphans)} memories cited only what was forgotten. They were kept and still come up in recall, "
            "with no source left to check them against: forget them too, or keep them (nothing to do).")
    return h('<section><h2>Left without a source</h2><p>{}</p>{}<form method="post" action="/curate/apply">'
             '<input type="hidden" name="action" value="forget"><input type="hidden" name="ids" value="{}">'
             '<button class="danger">{}</button></form></section>', text,
             table(["id", "memory"], [[mem_link(i), shorten(titles.get(i, ""), 90)] for i in orphans]), ",".join(orphans),
             "Forget this one too" if one else f"Forget these {len(orphans)} too")


# -- the Curate page: open by id, bulk changes ---------------------------------------------------------------------
def curate_page(ctx, *, error: str | None = None, status: int = 200):
    f = Filters.read(ctx.query)
    action = ctx.query.get("action", "validate")
    body = [
        Safe('<form method="get" action="/memory" class="filters"><label>open a memory <input name="id" '
             'placeholder="mem_42" size="10"></label><button>Open</button></form>'
             '<p class="muted">Each memory\'s page edits it (a new version), validates, activates, deprecates, '
             'supersedes, relates or forgets it.</p><h2>Change many at once</h2>'),
        h('<form method="get" action="/curate" class="filters">{}<label>action <select name="action">'
          '<option value="validate"{}>validate candidates</option><option value="forget"{}>forget</option>'
          '</select></label><button name="preview" value="1">Preview</button></form>',
          f.fields(list(ctx.look.scopes())), Safe(" selected") if action == "validate" else Safe(""),
          Safe(" selected") if action == "forget" else Safe("")),
    ]
    if ctx.query.get("preview") and not error:
        body.append(preview(ctx, f, action))
    return layout("Curate", join(body), active="/curate", notice=ctx.notice(), error=error), status


def bulk_targets(ctx, f: Filters, action: str) -> tuple[Filters, list]:
    if action not in ("validate", "forget"):
        raise ValueError(f"Unknown bulk action {action!r}: choose validate or forget.")
    if action == "validate" and not f.status:
        f = Filters(**{**f.__dict__, "status": "candidate"})  # what validating many means
    if action == "forget" and not f.narrows():
        raise ValueError("Choose a type, status, source or tag before forgetting by filter (a scope alone is too wide).")
    page = f.page(ctx.look, limit=BULK_MAX, offset=0)
    return f, page.memories


def digest(memories) -> str:
    """Names exactly the set previewed: the change runs only if the filters still match it."""
    return hashlib.sha256(",".join(sorted(m.id for m in memories)).encode()).hexdigest()[:16]


def preview(ctx, f: Filters, action: str) -> Safe:
    try:
        f, found = bulk_targets(ctx, f, action)
    except (ValueError, RecalliteError) as exc:
        return alert("error", said(exc))
    if not found:
        return h("<p>No memories match{}.</p>", " (validate looks at candidates unless you choose a status)"
                 if action == "validate" else "")
    rows = [[mem_link(m.id), badge("status", m.status), m.source.type, m.scope, shorten(m.title or m.content, 90)]
            for m in found[:20]]
    more = h("<p>… and {} more.</p>", len(found) - 20) if len(found) > 20 else ""
    cap = h('<p class="muted">At most {} per run; run it again for the rest.</p>', BULK_MAX) if len(found) >= BULK_MAX else ""
    return h('<h2>{} {}?</h2>{}{}{}<form method="post" action="/curate/apply">{}'
             '<input type="hidden" name="action" value="{}"><input type="hidden" name="digest" value="{}">'
             '<button class="{}">Yes, {} {}</button> <a href="/curate">No</a></form>',
             action.capitalize(), "this memory" if len(found) == 1 else f"these {len(found)} memories",
             table(["id", "status", "source", "scope", "memory"], rows), more, cap,
             f.hidden(), action, digest(found), "danger" if action == "forget" else "", action, memories_count(len(found)))


def apply(ctx):
    f, action = Filters.read(ctx.form), ctx.form.get("action", "")
    named = [i.strip() for i in ctx.form.get("ids", "").split(",") if i.strip()]
    if named:  # the memories a forget left without a source, named on its result: no filter to preview
        if action != "forget" or len(named) > BULK_MAX:
            ctx.query = {}
            return curate_page(ctx, error=f"Named memories can only be forgotten, at most {BULK_MAX} at once.", status=400)
        ids = named
    else:
        try:
            f, found = bulk_targets(ctx, f, action)
        except (ValueError, RecalliteError) as exc:
            ctx.query = {}
            return curate_page(ctx, error=said(exc), status=400)
        if digest(found) != ctx.form.get("digest"):
            ctx.query = {**f.params(), "action": action}
            return curate_page(ctx, error="The matching memories changed since the preview (another process wrote to "
                                          "the store). Preview again and confirm what you see.", status=409)
        ids = [m.id for m in found]
    done, skipped, orphans = [], [], []
    for mid in ids:
        try:
            if action == "forget":
                orphans += ctx.mem.forget(mid).orphans
            else:
                ctx.mem.validate(mid, "validated in the browser", by=BY_USER)
            done.append(mid)
        except RecalliteError as exc:  # one refusal does not stop the rest; each is listed
            skipped.append([mem_link(mid), said(exc)])
    gone = set(done)  # a memory orphaned early in the run may be forgotten later in it
    left = sorted({o for o in orphans if o not in gone}, key=lambda o: int(o.removeprefix("mem_")))
    verb = "forgot" if action == "forget" else "validated"
    body = h("<p>{} {}.</p>{}{}<p><a href=\"{}\">Back to the memories</a></p>", verb.capitalize(), memories_count(len(done)),
             h("<h2>Skipped</h2>{}", table(["id", "why"], skipped)) if skipped else "",
             orphans_section(ctx, left) if left else "", url("/", **f.params()))
    return layout("Curate", body, active="/curate", notice=f"{verb} {len(done)}"), 200
