"""The text a model reads: each tool's structured result as short, plain markdown.

Structured content stays as it is for programs; this is the `TextContent` beside it, with hidden
characters shown escaped ([U+202E]). Every
text is bounded (MAX_TEXT): what does not fit is cut with a line saying how to get the rest."""

from __future__ import annotations

import json
from typing import Any, Callable

from recallite_core.retrieval.context import title_repeats_content
from recallite_core.text.injection import escape_hidden

MAX_TEXT = 16_000


def _num(v: Any) -> str:
    return f"{v:.3g}" if isinstance(v, float) else str(v)


def counted(n: int, one: str, many: str | None = None) -> str:
    """"1 hit", "2 hits": a count with its noun in the right number (``many`` for irregular plurals)."""
    return f"{n} {one if n == 1 else many or one + 's'}"


def _scope_names(known: dict[str, int], shown: int = 3) -> str:
    """The first ``shown`` of the scopes that hold memories (most first), and how many more."""
    more = f" and {len(known) - shown} more" if len(known) > shown else ""
    return ", ".join(list(known)[:shown]) + more


def empty_scope_hint(scope: str, known: dict[str, int]) -> str:
    """One line for a search in a scope that holds no memory at all (``known``: memories per scope,
    most first): a misspelt or never-used scope, told apart from "nothing matched"."""
    if not known:
        return f"scope '{scope}' holds no memories; no scope holds any yet."
    return f"scope '{scope}' holds no memories; known scopes: {_scope_names(known)}."


def new_scope_hint(scope: str, known: dict[str, int]) -> str:
    """One line for a write into a scope that held no memory before it: a misspelt name moves
    memories out of the project unnoticed."""
    return f"New scope '{scope}'" + (f"; known scopes: {_scope_names(known)}." if known else ".")


def _meta(*parts: Any) -> str:
    return " · ".join(str(p) for p in parts if p is not None and p is not False and p not in ("", [], {}))


def _with_hint(text: str, d: dict) -> str:
    return f"{text}\n{d['hint']}" if d.get("hint") else text


def _with_names(text: str, d: dict) -> str:
    """The names of jobs the results worked for, when the agent's own name is new to them."""
    names = d.get("task_names")
    if not names:
        return text
    return (f"{text}\nThese memories worked before as task {', '.join(repr(n) for n in names)}: if one is this job, "
            "pass it as task to recallite_feedback (and next time to recallite_context).")


def context(d: dict) -> str:
    text = d.get("context", "").rstrip()
    n = len(d.get("memory_ids", []))
    tail = _meta(f"retrieval_id {d['retrieval_id']}", counted(n, "memory", "memories"), counted(d.get("tokens", 0), "token"),
                 f"{d['omitted']} more left out for the budget" if d.get("omitted") else None, f"scope {d.get('scope')}")
    if not n and d.get("turn_ids"):  # the session's turns are the whole context: the model must read them
        why = (f"{counted(d['omitted'], 'matching memory', 'matching memories')} left out for the budget; raise max_tokens"
               if d.get("omitted") else "no stored memory matches beyond the conversation")
        tail = _meta(f"retrieval_id {d['retrieval_id']}", why, counted(d.get("tokens", 0), "token"), f"scope {d.get('scope')}")
        return _with_hint(f"{text}\n\n({tail})", d)
    if not n:  # a footer alone ("1 more matching memory left out") told the agent nothing it could act on
        if d.get("omitted"):  # something matched; the budget let none of it in
            return (f"Nothing fit the token budget: {counted(d['omitted'], 'matching memory', 'matching memories')} "
                    f"left out; raise max_tokens. ({tail})")
        return _with_hint(f"No stored memory matches this task. ({tail})", d)
    return _with_names(_with_hint(f"{text}\n\n({tail}; report the outcome with recallite_feedback)", d), d)


def remember(d: dict) -> str:
    if d.get("duplicate_of"):
        head = f"Already stored as {d['duplicate_of']} ({d.get('status')}); nothing new was stored."
    else:
        where = "this session only (RAM)" if d.get("layer") == "working" else f"scope {d.get('scope')}"
        head = f"Stored {d['id']}: {d.get('type')}, {d.get('status')}, {where}. Title: {d.get('title')}"
    lines = [head]
    for key in ("note", "hint"):
        if d.get(key):
            lines.append(str(d[key]))
    for key in ("supersedes", "conflicts_with"):
        if d.get(key) and not d.get("note"):  # the note says it in words
            v = d[key]
            lines.append(f"{key.replace('_', ' ').capitalize()}: {', '.join(v) if isinstance(v, list) else v}")
    return "\n".join(lines)


def feedback(d: dict) -> str:
    judged = d.get("already_judged") or []
    if d.get("duplicate") and judged:
        return (f"Nothing changed: earlier feedback on {d.get('retrieval_id')} already credited {', '.join(judged)} "
                "(one outcome per memory per retrieval; a new task starts with recallite_context).")
    if d.get("duplicate"):
        return f"Feedback {d.get('feedback_id')} was already applied (same client_key); nothing changed."
    lines = [f"Recorded {d.get('outcome')} for {d.get('retrieval_id')} ({d.get('feedback_id')})"
             + (f", filed under task '{d['task']}'." if d.get("task") else ".")]
    ch = d.get("changes") or []
    if ch:
        lines.append("Usefulness: " + ", ".join(
            f"{c['id']} {_num(c.get('old_usefulness'))}→{_num(c.get('new_usefulness'))}" for c in ch[:20])
            + (f" and {len(ch) - 20} more" if len(ch) > 20 else ""))
    if d.get("promoted"):
        lines.append("Validated (they kept helping): " + ", ".join(d["promoted"]))
    if judged:
        lines.append("Not credited again (earlier feedback on this retrieval did): " + ", ".join(judged))
    if d.get("not_shown"):
        lines.append(f"Credited as named, though {d.get('retrieval_id')} did not serve them: " + ", ".join(d["not_shown"]))
    return "\n".join(lines)


def _hit(i: int, h: dict) -> str:
    body = (h.get("content") or "").strip()
    # Most titles are the content's first sentence (a turn's after its speaker): printed beside it,
    # each hit's text came twice.
    said = (h.get("title") or "").removeprefix(f"{(h.get('turn') or {}).get('role')}: ")
    title = "" if title_repeats_content(said, body) else f"**{h.get('title')}** "
    head = f"{i}. {title}[{_meta(h['id'], h.get('type'), h.get('status'), h.get('level') == 'user' and 'user-level', h.get('layer') not in (None, 'semantic') and h.get('layer'))}]"
    nums = _meta(f"score {_num(h['score'])}" if "score" in h else None,
                 f"trust {_num(h['trust'])}" if h.get("trust") is not None else None,
                 ", ".join(h.get("reasons", [])[:4]))
    if h.get("content_chars"):
        body += f" … [cut at {len(h['content'])} of {h['content_chars']} chars: recallite_get ids=[\"{h['id']}\"]]"
    out = [head, f"   {nums}" if nums else "", f"   {body}" if body else ""]
    out += [f"   ⚠ {w}" for w in h.get("warnings", [])]
    turn = h.get("turn")
    if turn:
        out.append(f"   turn {turn.get('session')}#{turn.get('seq')} by {turn.get('role')} at {turn.get('timestamp')}")
    for w in h.get("window", []):  # the hit's own text is printed above: here only where it sits
        out.append(f"   > {w.get('role')}: " + ("[this turn]" if w.get("id") == h["id"] else f"{w.get('content')}"))
    return "\n".join(x for x in out if x)


def recall(d: dict) -> str:
    hits = d.get("memories", [])
    head = _meta(f"retrieval_id {d['retrieval_id']}", f"scope {d.get('scope')}", counted(len(hits), "hit"))
    if not hits:
        return _with_hint(f"Nothing relevant found. ({head})", d)
    return _with_names("\n".join([head, *(_hit(i, h) for i, h in enumerate(hits, 1))]), d)


def _memory(m: dict) -> str:
    uses = m.get("success_count", 0) + m.get("failure_count", 0)
    lines = [f"## {m['id']}: {m.get('title')}",
             _meta(m.get("type"), m.get("status"), f"scope {m.get('scope')}", f"source {m.get('source')}",
                   f"confidence {_num(m.get('confidence'))}", f"usefulness {_num(m.get('usefulness'))}",
                   f"used {uses}× ({m.get('success_count', 0)} ok, {m.get('failure_count', 0)} failed)" if uses else None,
                   f"superseded by {m['superseded_by']}" if m.get("superseded_by") else None,
                   f"valid until {m['valid_until']}" if m.get("valid_until") else None,
                   f"created {str(m.get('created_at', ''))[:19]}")]
    if m.get("tags"):
        lines.append("tags: " + ", ".join(m["tags"]))
    if m.get("metadata"):
        lines.append("metadata: " + json.dumps(m["metadata"], ensure_ascii=False)[:500])
    lines += ["", m.get("content", "")]
    if m.get("content_chars"):
        start = (m.get("next_offset") or m["content_chars"]) - len(m.get("content", ""))
        lines.append(f"[chars {start}–{start + len(m.get('content', ''))} of {m['content_chars']}"
                     + (f"; next part: recallite_get ids=[\"{m['id']}\"] offset={m['next_offset']}]" if m.get("next_offset") else "]"))
    return "\n".join(lines)


def get(d: dict) -> str:
    return "\n\n".join(_memory(m) for m in d.get("memories", [])) or "No memories."


def list_(d: dict) -> str:
    items = d.get("memories", [])
    first = d.get("offset", 0) + 1
    head = f"{counted(len(items), 'memory', 'memories')} in {', '.join(d.get('scopes', []))}, newest first" + (
        f" ({first}–{first + len(items) - 1})" if items else "")
    rows = [f"- {m['id']} · {m.get('type')} · {m.get('status')} · {m.get('title')}"
            + (f" · tags {', '.join(m['tags'])}" if m.get("tags") else "")
            + (f" · {m['source']}" if m.get("source") not in (None, "agent") else "") for m in items]
    if d.get("next_offset") is not None:
        rows.append(f"More: offset={d['next_offset']}.")
    return "\n".join([head, *rows]) if items else _with_hint("No memories match these filters.", d)


def update(d: dict) -> str:
    tail = _meta(f"confidence {_num(d.get('confidence'))}", f"scope {d.get('scope')}" if d.get("scope") else None,
                 d.get("layer") not in (None, "semantic") and f"layer {d.get('layer')}")
    if d.get("note"):
        return f"{d['note']} ({d.get('status')}, {tail})."
    if d.get("superseded_by"):  # the facts (tail) are the kept one's: say so, and which one is current
        return f"{d['superseded_by']} is now current; {d['id']} is kept as history, {d.get('status')} ({tail})."
    return f"{d['id']} is now {d.get('status')} ({tail})."


def forget(d: dict) -> str:
    head = f"Deleted {d['id']}." if d.get("deleted") else f"{d['id']} was not stored; nothing deleted."
    if d.get("removed"):
        head += " Also removed (left without a source): " + ", ".join(d["removed"]) + "."
    if d.get("orphans"):
        head += " Now without a source (kept): " + ", ".join(d["orphans"]) + "."
    return head


def relate(d: dict) -> str:
    r, a, b = d["relation"], d["from_memory"], d["to_memory"]
    counts = lambda c: f"{c['id']}: {c.get('evidence_count', 0)} supporting, {c.get('contradiction_count', 0)} contradicting, confidence {_num(c.get('confidence'))}"  # noqa: E731
    swap = (f" It replaced {'; '.join(r['replaced'])} (a pair cannot both support and contradict)."
            if r.get("replaced") else "")
    return f"Linked {r['from_id']} {r['type']} {r['to_id']} ({r['id']}).{swap}\n{counts(a)}\n{counts(b)}"


def _kv(v: Any) -> str:
    return ", ".join(f"{k} {x}" for k, x in v.items()) if isinstance(v, dict) else str(v)


def stats(d: dict) -> str:
    lines = [f"Scope: {d.get('active_scope')} (rule {d.get('scope_rule')}: {d.get('scope_reason')})"]
    if d.get("scope_note"):
        lines.append(d["scope_note"])
    # Without a scope the count is the whole database's, not the active scope's (a new user read it so).
    lines.append(_meta(f"memories {d.get('memories')}" + (f" in {d['scope']}" if d.get("scope") else " in all scopes"),
                       f"user-level scope {d.get('user_scope')}", f"tools {d.get('tools', 'core')}",
                       "isolated scopes" if d.get("isolate_scopes") else None))
    for key in ("by_type", "by_status", "by_source", "by_scope", "feedback", "relations"):
        if d.get(key):
            lines.append(f"{key.replace('_', ' ')}: {_kv(d[key])}")
    lines.append(_meta(f"retrievals {d.get('retrievals')}", f"context calls {d.get('context_calls')}",
                       f"tokens served {d.get('tokens_served')}"
                       + (f" ({d['tokens_saved']} fewer than every match in full)" if d.get("tokens_saved") else "")))
    wal = f" + {d['wal_bytes']:,} WAL" if d.get("wal_bytes") else ""  # the CLI's figure: much of a busy store is there
    lines.append(_meta(f"embedder {d.get('embedder')}" + ("" if d.get("embedder_loaded", True) else " (loading)"),
                       f"database {d.get('db_path') or ':memory:'}", f"{d.get('db_bytes', 0):,} bytes{wal}"))
    return _with_hint("\n".join(lines), d)


def _moment(at: Any) -> str:
    """An ISO timestamp to the second: 2025-01-06T09:00:00.412242+00:00 -> 2025-01-06T09:00:00+00:00."""
    text = str(at or "")
    head, dot, rest = text.partition(".")
    return head + rest.lstrip("0123456789") if dot and len(head) == 19 else text


def record(d: dict) -> str:
    """The ids and positions of the turns just recorded (not their text, which the caller just sent);
    session and scope once, as every turn shares them."""
    turns = d.get("turns", [])
    ids = ", ".join(f"{t['id']} #{t.get('seq')} {t.get('role')}" for t in turns)
    return f"Recorded {counted(len(turns), 'turn')} in session {d.get('session')}, scope {d.get('scope')}: {ids}."


def why(d: dict) -> str:
    """The source turns of a memory, in order; what they all share (scope, session) said once."""
    turns = d.get("sources", [])
    if not turns:
        return f"{d.get('id')} has no recorded source: it cites no conversation turn that is still stored."
    shared = {key: vals.pop() for key in ("scope", "session") if len(vals := {t.get(key) for t in turns}) == 1}
    where = ", ".join(f"{k} {v}" for k, v in shared.items() if v)
    lines = [f"{d.get('id')} comes from these turns" + (f" ({where})" if where else "") + ":"]
    for t in turns:
        place = "" if "session" in shared or not t.get("session") else str(t["session"])
        lines.append(f"- {t['id']} {place}#{t.get('seq')} {t.get('role')}, {_moment(t.get('timestamp'))}"
                     + ("" if "scope" in shared else f", scope {t.get('scope')}"))
        lines.append("  " + str(t.get("content", "")).replace("\n", "\n  "))
    return "\n".join(lines)


def _said(title: str, content: str, turn_role: str | None) -> str:
    """A memory's text, its title only where it adds something (most titles are the content's first
    sentence; a turn's after its speaker, "user: ...", and then the speaker leads the content)."""
    role = f"{turn_role}: " if turn_role and title.startswith(f"{turn_role}: ") else ""
    if title_repeats_content(title.removeprefix(role), content):
        return role + content
    return f"**{title}** {content}"


def beliefs(d: dict) -> str:
    """One line per node (its text once; scope once when all share it) and the links between them."""
    nodes = d.get("nodes", [])
    scopes = {n.get("scope") for n in nodes}
    shared = next(iter(scopes)) if len(scopes) == 1 else None
    head = f"Beliefs on \"{d.get('topic')}\" (" + _meta(f"retrieval_id {d.get('retrieval_id')}",
                                                       shared and f"scope {shared}") + ")"
    if not nodes:
        return f"{head}: no memory matches."
    lines = [head + ":"]
    for n in nodes:
        role = n.get("title", "").partition(": ")[0] if n.get("type") == "episode" else None
        tags = _meta(n["id"], n.get("type"), n.get("status"), f"hop {n['hops']}" if n.get("hops") else None,
                     f"conf {_num(n.get('confidence'))}", n.get("trust") is not None and f"trust {_num(n['trust'])}",
                     shared is None and f"scope {n.get('scope')}")
        text = _said(n.get("title") or "", (n.get("content") or "").strip(), role)
        lines.append(f"- [{tags}] " + text.replace("\n", "\n  "))
    if d.get("edges"):
        lines.append("Links: " + "; ".join(f"{e['from_id']} {e['type']} {e['to_id']}" for e in d["edges"]) + ".")
    return "\n".join(lines)


def _fields(v: Any, indent: str = "") -> str:
    """Any other result: key: value lines, lists as bullets."""
    if isinstance(v, dict):
        out = []
        for k, x in v.items():
            if isinstance(x, (dict, list)) and x:
                out.append(f"{indent}{k}:\n{_fields(x, indent + '  ')}")
            else:
                out.append(f"{indent}{k}: {_num(x)}")
        return "\n".join(out)
    if isinstance(v, list):
        return "\n".join(f"{indent}- " + _fields(x, indent + "  ").lstrip() for x in v)
    return f"{indent}{_num(v)}"


RENDER: dict[str, Callable[[dict], str]] = {
    "recallite_context": context, "recallite_auto_context": context, "recallite_remember": remember,
    "recallite_feedback": feedback, "recallite_recall": recall, "recallite_get": get, "recallite_list": list_,
    "recallite_update": update, "recallite_forget": forget, "recallite_relate": relate, "recallite_stats": stats,
    "recallite_history": lambda d: "\n\n".join(_memory(m) for m in d.get("versions", [])) or "No versions.",
    "recallite_record": record, "recallite_why": why, "recallite_beliefs": beliefs,
}

# A context is bounded by its own max_tokens; everything else by MAX_TEXT.
OWN_BOUND = {"recallite_context", "recallite_auto_context"}


def render(tool: str, data: dict) -> str:
    # Invisible and direction-changing characters (U+202E...) are shown as [U+202E] in every text
    # a model reads, as the context formats do (docs/security.md): stored text can hide an
    # instruction in them. The structured content keeps the stored text, for programs.
    text = escape_hidden(RENDER.get(tool, _fields)(data))
    if tool not in OWN_BOUND and len(text) > MAX_TEXT:
        text = (text[:MAX_TEXT].rstrip() + f"\n[cut at {MAX_TEXT:,} of {len(text):,} chars: ask for fewer items "
                "(limit, ids) or one memory with recallite_get]")
    return text
