"""Export and import in a documented JSON-lines format (see docs/operations.md, "Backups: export and import").

Import writes through the write path's and the turn store's public methods, in one
transaction (all or nothing). May import the plumbing, the write path, the turn store, the
episode checks, policy, storage, models and validation; never the facade or another
service.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from typing import Any, Callable

from recallite_core.conversation.episodes import check_category, check_role, check_timestamp
from recallite_core.conversation.turns import TurnStore
from recallite_core.errors import InvalidInputError
from recallite_core.models import OUTCOMES, RELATION_TYPES
from recallite_core.plumbing import Plumbing
from recallite_core.policy import rules as policy
from recallite_core.storage.codec import encode_vector
from recallite_core.text.validation import parse_id
from recallite_core.writer import Writer

Progress = Callable[[int, int], None]

FORMAT = "recallite-jsonl"
VERSION = 1


def _epoch(dt) -> float | None:
    return None if dt is None else dt.timestamp()


def _read(path: str) -> list[tuple[int, dict]]:
    target = os.path.abspath(os.path.expanduser(path))
    if not os.path.isfile(target):
        raise InvalidInputError(f"No file at {target}. Pass the path of a file written by export.")
    out = []
    with open(target, encoding="utf-8") as f:
        for n, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InvalidInputError(f"{target} line {n} is not JSON ({exc.msg}); nothing was imported.") from None
            if not isinstance(obj, dict) or "kind" not in obj:
                raise InvalidInputError(f"{target} line {n} has no 'kind'; nothing was imported.")
            out.append((n, obj))
    if not out or out[0][1].get("kind") != "header" or out[0][1].get("format") != FORMAT:
        raise InvalidInputError(f"{target} is not a recallite export (no {FORMAT} header line); nothing was imported.")
    if int(out[0][1].get("version", 0)) > VERSION:
        raise InvalidInputError(f"{target} was written by a newer recallite (format {out[0][1]['version']}). Upgrade first.")
    return out[1:]


class Portability:
    """export_jsonl and import_jsonl of one open store."""

    def __init__(self, core: Plumbing, writer: Writer, turns: TurnStore):
        self.core = core
        self.writer = writer
        self.turns = turns

    def export_jsonl(self, path: str, *, scope: str | None = None) -> int:
        """Write memories, relations, retrievals and feedback as JSON lines. Returns lines written."""
        self.core.live()
        return self._export(path, scope)

    def import_jsonl(self, path: str, *, trust: str = "untrusted", progress: Progress | None = None) -> dict[str, int]:
        """Read a file written by export_jsonl in one transaction (all or nothing).

        ``trust="untrusted"`` (default): every memory arrives as source ``imported``, status
        ``candidate``. ``trust="restore"``: your own backup; statuses, sources, scores and the
        feedback history are kept as they were.
        """
        self.core.live()
        counts = self._import(path, trust, progress)
        self.core.learning.backfill()
        return counts

    def _export(self, path: str, scope: str | None) -> int:
        """Write atomically (temp file + rename) so a crash never leaves half an export."""
        schema = self.core.store.schema_version()
        lines = 0
        target = os.path.abspath(os.path.expanduser(path))
        folder = os.path.dirname(target) or "."
        if not os.path.isdir(folder):
            raise InvalidInputError(f"The directory {folder} does not exist. Create it or choose another path.")
        fd, tmp = tempfile.mkstemp(prefix=".recallite-export-", dir=folder)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out, self.core.store.reading() as conn:
                def write(obj: dict[str, Any]) -> None:
                    nonlocal lines
                    out.write(json.dumps(obj, ensure_ascii=False) + "\n")
                    lines += 1

                write({"kind": "header", "format": FORMAT, "version": VERSION, "schema": schema,
                       "embedder": self.core.embedder.name, "dimensions": self.core.embedder.dimensions, "exported_at": time.time(),
                       "scope": scope})
                ids_list = conn.archive.memory_ids(scope or None)
                ids: set[int] = set(ids_list)
                for start in range(0, len(ids_list), 500):
                    for mid, m in sorted(conn.memories.load(ids_list[start : start + 500]).items()):
                        d = m.model_dump(exclude={"duplicate_of"})
                        for k in ("created_at", "updated_at", "last_accessed_at", "valid_until"):
                            d[k] = _epoch(getattr(m, k))
                        if m.episode is not None:
                            d["episode"]["timestamp"] = _epoch(m.episode.timestamp)
                        write({"kind": "memory", **d})
                for a, b, t, eff, created in conn.archive.relations():
                    if a in ids and b in ids:
                        write({"kind": "relation", "from_id": f"mem_{a}", "to_id": f"mem_{b}", "type": t,
                               "confidence_effect": bool(eff), "created_at": created})
                for a, b, created in conn.archive.citations():
                    if a in ids and b in ids:
                        write({"kind": "citation", "memory_id": f"mem_{a}", "episode_id": f"mem_{b}", "created_at": created})
                for sc, sess, pool, turns, updated in conn.archive.summaries():
                    if scope and sc != scope:
                        continue
                    entries = [dict(e, m=f"mem_{e['m']}") for e in json.loads(pool) if e["m"] in ids]
                    write({"kind": "session_summary", "scope": sc, "session": sess, "turns": turns, "updated_at": updated,
                           "pool": entries})
                for rid, q, prof, searched, kind, ts_, tm, created in conn.archive.retrievals():
                    items = [
                        {"memory_id": f"mem_{m}", "rank": r, "score": s, "expanded": bool(e)}
                        for m, r, s, e in conn.archive.items_of(rid)
                        if m in ids
                    ]
                    if scope and not items:
                        continue
                    write({"kind": "retrieval", "id": f"ret_{rid}", "query": q, "profile": prof,
                           "scope": None if searched is None else json.loads(searched), "retrieval_kind": kind,
                           "tokens_served": ts_, "tokens_matched": tm, "created_at": created, "items": items})
                for fid, judged, outcome, score, used, reason, key, created in conn.archive.feedback():
                    effects = [
                        {"memory_id": f"mem_{m}", "weight": w, "target": t, "old_usefulness": o, "new_usefulness": n,
                         **({"kind": k} if k != "credit" else {})}
                        for m, w, t, o, n, k in conn.archive.effects_of(fid)
                        if m in ids
                    ]
                    if scope and not effects:
                        continue
                    write({"kind": "feedback", "id": f"fb_{fid}", "retrieval_id": None if judged is None else f"ret_{judged}",
                           "outcome": outcome, "score": score, "used_memory_ids": json.loads(used), "reason": reason,
                           "client_key": key, "created_at": created, "effects": effects})
            os.chmod(tmp, 0o600)
            os.replace(tmp, target)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
        return lines


    def _import(self, path: str, trust: str, progress: Progress | None) -> dict[str, int]:
        if trust not in ("untrusted", "restore"):
            raise InvalidInputError("trust must be 'untrusted' (treat as imported candidates) or 'restore' (your own backup).")
        records = _read(path)
        restore = trust == "restore"
        memories = [(n, r) for n, r in records if r["kind"] == "memory"]
        # Validate everything before writing anything.
        prepared = []
        extras: list[tuple[dict | None, str | None]] = []
        now = time.time()
        for n, r in memories:
            try:
                src = r.get("source") or {"type": "user"}
                if not restore:
                    origin = src.get("type", "?") + (f":{src['id']}" if src.get("id") else "")
                    src = {"type": "imported", "id": origin}
                p = self.writer.prepare(
                    content=r.get("content"), type=r.get("type", "observation"), title=r.get("title"), source=src,
                    tags=r.get("tags"), metadata=r.get("metadata"), importance=r.get("importance"), scope=r.get("scope"),
                    session=r.get("session"), status=None if not restore else (r.get("status") if r.get("status") in policy.STATUS_RANK else None),
                    allow_unsafe_status_override=restore, confidence=r.get("confidence") if restore else None,
                    valid_until=r.get("valid_until"),
                )
                old_id = parse_id(r.get("id"))
                ep = r.get("episode")
                if ep is not None:
                    if not isinstance(ep, dict) or p.type != "episode":
                        raise InvalidInputError("'episode' must be an object with role, seq and timestamp, on an episode memory.")
                    ep = {"role": check_role(ep.get("role")), "seq": ep.get("seq"), "at": check_timestamp(ep.get("timestamp"), now)}
                    if not isinstance(ep["seq"], int) or isinstance(ep["seq"], bool) or ep["seq"] < 1:
                        raise InvalidInputError("episode.seq must be a whole number >= 1.")
                extras.append((ep, check_category(r.get("category"))))
            except InvalidInputError as exc:
                raise InvalidInputError(f"{path} line {n}: {exc} Nothing was imported.") from None
            prepared.append((n, r, p, old_id))
        vecs = self.core.embed([p.embed_text for _, _, p, _ in prepared])
        plans = self.turns.chunk_plans([p for _, _, p, _ in prepared], [e[0]["role"] if e[0] else None for e in extras])
        counts = {"memories": 0, "duplicates": 0, "relations": 0, "retrievals": 0, "feedback": 0, "citations": 0}
        idmap: dict[int, int] = {}
        retmap: dict[int, int] = {}
        sessions: set[tuple[str, str]] = set()
        inserted: dict[int, int] = {}  # position in the file -> new id
        with self.core.store.transaction() as conn:
            # A backup restores its own links; anything else is compared with what is stored (and
            # with its own earlier lines) like any write, before it is inserted.
            found = [[] for _ in prepared] if restore else self.writer.find_corrections(conn, [(p, v) for (_, _, p, _), v in zip(prepared, vecs)])
            for k, ((n, r, p, old_id), vec) in enumerate(zip(prepared, vecs)):
                ep, category = extras[k]
                if ep is not None:  # turns repeat themselves: the same turn is the same place in the same session
                    dup = conn.archive.turn_at(p.scope, p.session or "", ep["seq"], p.hash)
                else:
                    dup = self.writer.find_duplicate(conn, p)
                if dup is not None:
                    idmap[old_id] = dup
                    counts["duplicates"] += 1
                    continue
                extra: dict[str, Any] = {}  # the restored columns, none of them None
                if restore:
                    extra = {k2: r.get(k2) for k2 in ("usefulness", "success_count", "failure_count", "access_count",
                                                       "last_accessed_at", "created_at", "updated_at") if r.get(k2) is not None}
                    if "usefulness" in extra:
                        extra["usefulness"] = policy.clamp01(float(extra["usefulness"]))
                idmap[old_id] = inserted[k] = mid = self.writer.insert(conn, p, vec, now, extra)
                if ep is not None:
                    session = p.session or ""
                    taken = conn.archive.turn_at(p.scope, session, ep["seq"], None) is not None
                    seq = ep["seq"] if not taken else conn.episodes.last_seq(p.scope, session) + 1
                    conn.episodes.add_turns([(mid, p.scope, session, ep["role"], seq, ep["at"])])
                    sessions.add((p.scope, session))
                elif p.type == "episode":
                    self.turns.register_episode(conn, mid, p, "event", now)
                self.turns.write_chunks(conn, mid, plans[k])
                self.turns.set_category(conn, mid, category)
                counts["memories"] += 1
                if progress:
                    progress(k + 1, len(prepared))
            for k, mid in inserted.items():
                self.writer.apply_corrections(conn, mid, found[k], batch=inserted)
            # Second pass: superseded_by pointers and final statuses (superseded/deprecated) of restores.
            if restore:
                for n, r, p, old_id in prepared:
                    if old_id not in idmap:
                        continue
                    st = r.get("status")
                    sup = r.get("superseded_by")
                    if st in ("deprecated", "superseded"):
                        conn.archive.restore_status(idmap[old_id], st)
                    if sup:
                        target = idmap.get(parse_id(sup))
                        if target:
                            conn.archive.restore_superseded_by(idmap[old_id], target)
            for n, r in records:
                kind = r["kind"]
                try:
                    if kind == "citation":
                        a, b = idmap.get(parse_id(r.get("memory_id"))), idmap.get(parse_id(r.get("episode_id")))
                        if a and b and a != b and conn.memories.type_of(b) == "episode":
                            counts["citations"] += conn.archive.add_citation(a, b, r.get("created_at") or now)
                    elif kind == "relation":
                        if r.get("type") not in RELATION_TYPES:
                            raise InvalidInputError(f"unknown relation type {r.get('type')!r}.")
                        a, b = idmap.get(parse_id(r.get("from_id"))), idmap.get(parse_id(r.get("to_id")))
                        if a and b and a != b:
                            counts["relations"] += conn.archive.add_relation(
                                a, b, r["type"], int(bool(r.get("confidence_effect", True)) and restore), r.get("created_at") or now)
                    elif kind == "retrieval" and restore:
                        new_rid = conn.archive.add_retrieval(
                            str(r.get("query", "")), str(r.get("profile", "default")),
                            None if r.get("scope") is None else json.dumps(r["scope"]), str(r.get("retrieval_kind", "recall")),
                            r.get("tokens_served"), r.get("tokens_matched"), r.get("created_at") or now)
                        retmap[parse_id(r.get("id"), "ret")] = new_rid
                        item_rows = []
                        for it in r.get("items", []):
                            item_mid = idmap.get(parse_id(it["memory_id"]))
                            if item_mid:
                                item_rows.append((item_mid, int(it["rank"]), float(it["score"]), int(bool(it.get("expanded")))))
                        conn.archive.add_items(new_rid, item_rows)
                        counts["retrievals"] += 1
                    elif kind == "feedback" and restore:
                        if r.get("outcome") not in OUTCOMES:
                            raise InvalidInputError(f"unknown outcome {r.get('outcome')!r}.")
                        rid = retmap.get(parse_id(r["retrieval_id"], "ret")) if r.get("retrieval_id") else None
                        key = r.get("client_key")
                        if key and conn.outcomes.feedback_with_key(key) is not None:
                            continue
                        used = [f"mem_{idmap[parse_id(u)]}" for u in r.get("used_memory_ids", []) if parse_id(u) in idmap]
                        fid = conn.outcomes.add_feedback(rid, r["outcome"], policy.clamp01(float(r.get("score", 0.0))),
                                                         json.dumps(used), r.get("reason"), key, r.get("created_at") or now)
                        effect_rows = []
                        for e in r.get("effects", []):
                            effect_mid = idmap.get(parse_id(e["memory_id"]))
                            if effect_mid:
                                effect_rows.append((effect_mid, float(e["weight"]), float(e["target"]), float(e["old_usefulness"]),
                                                    float(e["new_usefulness"]), r.get("created_at") or now,
                                                    "unused" if e.get("kind") == "unused" else "credit"))
                        conn.archive.add_effects(fid, effect_rows)
                        counts["feedback"] += 1
                except (KeyError, TypeError, ValueError) as exc:
                    raise InvalidInputError(f"{path} line {n}: malformed {kind} record ({exc}). Nothing was imported.") from None
            self._restore_summaries(conn, records, idmap, sessions, restore)
        return counts


    def _restore_summaries(self, conn, records, idmap: dict[int, int], sessions: set, restore: bool) -> None:
        """Session summaries: as exported when restoring (ids remapped), else rebuilt from the turns."""
        done = set()
        if restore:
            for _n, r in records:
                if r["kind"] != "session_summary" or (r.get("scope"), r.get("session")) not in sessions:
                    continue
                pool = [dict(e, m=idmap[parse_id(e["m"])]) for e in r.get("pool", []) if parse_id(e["m"]) in idmap]
                key = (r["scope"], r["session"])
                turns = conn.archive.turn_count(*key)
                conn.episodes.put_summary(*key, json.dumps(pool, ensure_ascii=False), turns, r.get("updated_at") or time.time())
                done.add(key)
        if sessions - done:
            self.turns.rebuild_summaries(conn, sorted(sessions - done))


__all__ = ["Portability", "encode_vector", "FORMAT", "VERSION"]
