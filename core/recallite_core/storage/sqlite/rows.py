"""SQLite rows <-> models."""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime

from recallite_core.models import TYPE_LAYER, EpisodeInfo, Memory, Source
from recallite_core.storage.codec import ts
from recallite_core.storage.sqlite.filters import marks

MEMORY_COLUMNS = (
    "id, type, title, content, status, source_type, source_id, scope, session, tags, metadata, confidence, "
    "usefulness, importance, success_count, failure_count, access_count, last_accessed_at, created_at, "
    "updated_at, superseded_by, content_hash, tokens, valid_until"
)


def memory_from_row(row: sqlite3.Row | tuple) -> Memory:
    (
        mid, mtype, title, content, status, source_type, source_id, scope, session, tags, metadata, confidence,
        usefulness, importance, success_count, failure_count, access_count, last_accessed_at, created_at,
        updated_at, superseded_by, chash, tokens, valid_until,
    ) = row
    # Rows come from our own schema (validated on the way in): construct without re-validating.
    return _new_memory({
        "id": f"mem_{mid}",
        "type": mtype,
        "title": title,
        "content": content,
        "status": status,
        "source": _new_source({"type": source_type, "id": source_id}),
        "scope": scope,
        "session": session,
        "tags": json.loads(tags),
        "metadata": json.loads(metadata),
        "confidence": confidence,
        "usefulness": usefulness,
        "importance": importance,
        "success_count": success_count,
        "failure_count": failure_count,
        "access_count": access_count,
        "last_accessed_at": ts(last_accessed_at),
        "created_at": ts(created_at),
        "updated_at": ts(updated_at),
        "superseded_by": None if superseded_by is None else f"mem_{superseded_by}",
        "content_hash": chash,
        "tokens": tokens,
        "valid_until": ts(valid_until),
        "layer": TYPE_LAYER.get(mtype),  # no validators run: set what they would derive
    })


def _constructor(cls):
    """``cls.model_construct(**values)`` for values that name every field but those with a
    None default, without its per-field loop (a batch of remember_many builds hundreds).
    Same __dict__, fields set, extra and private state: tests/core/test_write_path.py compares
    with model_construct, so a pydantic that changes the recipe fails there first."""
    fields = cls.model_fields
    defaults = {name: f.default for name, f in fields.items() if not f.is_required() and f.default is None
                and f.default_factory is None}
    order = list(fields)
    root = cls.__pydantic_root_model__
    if cls.model_config.get("extra") == "allow" or cls.__pydantic_post_init__ or root or cls.__private_attributes__:
        return lambda values: cls.model_construct(**values)
    new, setattr_ = cls.__new__, object.__setattr__

    def construct(values: dict):
        m = new(cls)
        if len(values) == len(order):
            data = {name: values[name] for name in order}
        else:
            data = {name: values[name] if name in values else defaults[name] for name in order}
        setattr_(m, "__dict__", data)
        setattr_(m, "__pydantic_fields_set__", set(values))
        setattr_(m, "__pydantic_extra__", None)
        setattr_(m, "__pydantic_private__", None)
        return m

    return construct


_new_memory = _constructor(Memory)
_new_source = _constructor(Source)
_new_episode = _constructor(EpisodeInfo)


def _set_field(model, name: str, value) -> None:
    """What plain attribute assignment on a model without validate_assignment does, minus its
    checks (a recall fills these on every hit)."""
    model.__dict__[name] = value
    model.__pydantic_fields_set__.add(name)


def new_memory(mid: int, p, at: datetime, episode: EpisodeInfo | None = None, category: str | None = None) -> Memory:
    """The Memory a fresh insert of ``p`` (engine._Prepared, no extras) at ``at`` (ts of the
    insert's time) reads back as, built without reading it back: what memory_from_row and
    attach_extras give for that row."""
    values = {
        "id": f"mem_{mid}",
        "type": p.type,
        "title": p.title,
        "content": p.content,
        "status": p.status,
        "source": _new_source({"type": p.source.type, "id": p.source.id}),
        "scope": p.scope,
        "session": p.session,
        "tags": list(p.tags),
        "metadata": json.loads(json.dumps(p.metadata, ensure_ascii=False)) if p.metadata else {},
        "confidence": p.confidence,
        "usefulness": 0.5,
        "importance": p.importance,
        "success_count": 0,
        "failure_count": 0,
        "access_count": 0,
        "last_accessed_at": None,
        "created_at": at,
        "updated_at": at,
        "superseded_by": None,
        "content_hash": p.hash,
        "tokens": p.tokens,
        "valid_until": ts(p.valid_until),
        "layer": TYPE_LAYER.get(p.type),
    }
    if episode is not None:
        values["episode"] = episode
    if category is not None:
        values["category"] = category
    return _new_memory(values)


#: Whole memories with their episode and category; add WHERE / ORDER BY on alias ``m``.
SELECT_MEMORIES = (
    "SELECT " + ", ".join(f"m.{c.strip()}" for c in MEMORY_COLUMNS.split(","))
    + ", e.session, e.role, e.seq, e.event_at, c.category FROM memories m"
    " LEFT JOIN episodes e ON e.memory_id = m.id LEFT JOIN memory_categories c ON c.memory_id = m.id"
)
_WIDTH = len(MEMORY_COLUMNS.split(","))


def memory_from_select(row: tuple) -> Memory:
    """The Memory of a SELECT_MEMORIES row."""
    mem = memory_from_row(row[:_WIDTH])
    session, role, seq, event_at, category = row[_WIDTH:]
    if role is not None:  # episodes.role is NOT NULL: None means no episode row
        _set_field(mem, "episode", _new_episode({"session": session or None, "role": role, "seq": seq,
                                                 "timestamp": ts(event_at)}))
    if category is not None:
        _set_field(mem, "category", category)
    return mem


def load_memories(conn: sqlite3.Connection, ids: list[int]) -> dict[int, Memory]:
    """The memories among ``ids`` that exist, with their episode and category (one query)."""
    out: dict[int, Memory] = {}
    for i in range(0, len(ids), 500):
        chunk = ids[i : i + 500]
        for row in conn.execute(f"{SELECT_MEMORIES} WHERE m.id IN ({marks(len(chunk))})", chunk):
            out[row[0]] = memory_from_select(row)
    return out
