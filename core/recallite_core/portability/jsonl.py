"""Export and import in a documented JSON-lines format (see docs/operations.md, "Backups: export and import").

Import writes through the write path's and the turn store's public methods, in one
transaction (all or nothing). May import the plumbing, the write path, the turn store, the
episode checks, policy, storage, models and validation; never the facade or another
service.
"""

from __future__ import annotations

import base64
import json
import os
import tempfile
import time
from typing import Any, Callable

from recallite_core.conversation.turns import TurnStore
from recallite_core.errors import InvalidInputError
from recallite_core.plumbing import Plumbing
from recallite_core.portability.importer import IMPORT_BATCH, BatchImport
from recallite_core.storage.codec import encode_vector
from recallite_core.text.validation import check_scope
from recallite_core.writer import Writer

Progress = Callable[[int, int], None]

FORMAT = "recallite-jsonl"
VERSION = 1


def _epoch(dt) -> float | None:
    return None if dt is None else dt.timestamp()


def check_header(obj: dict) -> None:
    """The first line of an export: the format and a version this recallite reads."""
    if obj.get("kind") != "header" or obj.get("format") != FORMAT:
        raise InvalidInputError(f"This file is not a recallite export (no {FORMAT} header line); nothing was imported.")
    if int(obj.get("version", 0)) > VERSION:
        raise InvalidInputError(f"This file was written by a newer recallite (format {obj['version']}). Upgrade first.")


def _b64(blob: bytes) -> str:
    return base64.b64encode(bytes(blob)).decode("ascii")


def _chunk_blobs(conn) -> dict[int, list[bytes]]:
    """Each memory's chunk vectors in chunk order (chunk ids grow with the order they were written)."""
    out: dict[int, list[tuple[int, bytes]]] = {}
    for cid, _sc, _st, _ty, _se, blob, mid in conn.episodes.all_chunks():
        out.setdefault(mid, []).append((cid, blob))
    return {mid: [b for _, b in sorted(rows)] for mid, rows in out.items()}


class Portability:
    """export_jsonl and import_jsonl of one open store."""

    def __init__(self, core: Plumbing, writer: Writer, turns: TurnStore):
        self.core = core
        self.writer = writer
        self.turns = turns

    def export_jsonl(self, path: str, *, scope: str | None = None, vectors: bool = False) -> int:
        """Write memories, relations, team memberships, retrievals and feedback as JSON lines.
        Returns lines written.
        ``vectors=True`` also writes each memory's stored vector and its chunks' (base64 float32),
        so an import into a store with the same embedder copies them instead of embedding again
        (migrate); the file is then about 2 KB per memory larger."""
        self.core.live()
        return self._export(path, scope, vectors)

    def import_jsonl(self, path: str, *, trust: str = "untrusted", progress: Progress | None = None,
                     batch: int = IMPORT_BATCH, scope: str | None = None) -> dict[str, int]:
        """Read a file written by export_jsonl in one transaction (all or nothing), ``batch``
        memories at a time (importer.py: bounded memory; vectors in the file are used when they
        come from this store's embedder).

        ``trust="untrusted"`` (default): every memory arrives as source ``imported``, status
        ``candidate``, except what the file retired: deprecated or superseded, it stays so
        (``retired`` counts them); and no scope joins a team (``team_links_skipped`` counts the file's).
        ``trust="restore"``: your own backup; statuses, sources, scores, team memberships and the
        feedback history are kept as they were.

        ``scope``: put every memory into this scope instead of the one it was exported from
        (copying a project into another); its relations, team memberships, retrievals and feedback follow it, and
        duplicates are those already in that scope. Session summaries are rebuilt from the turns.
        """
        self.core.live()
        if trust not in ("untrusted", "restore"):
            raise InvalidInputError("trust must be 'untrusted' (treat as imported candidates) or 'restore' (your own backup).")
        if scope is not None:
            scope = check_scope(scope, self.core.limits, "")
            if not scope:
                raise InvalidInputError("scope must be a non-empty label such as 'projB', or left out to keep each memory's own.")
        counts = BatchImport(self, path, trust, progress, batch, check_header, scope).run()
        self.core.learning.backfill()
        return counts

    def _export(self, path: str, scope: str | None, vectors: bool = False) -> int:
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
                       "scope": scope, **({"vectors": True} if vectors else {})})
                ids_list = conn.archive.memory_ids(scope or None)
                ids: set[int] = set(ids_list)
                chunks = _chunk_blobs(conn) if vectors else {}
                for start in range(0, len(ids_list), 500):
                    part = ids_list[start : start + 500]
                    blobs = dict(conn.vectors.blobs(part)) if vectors else {}
                    for mid, m in sorted(conn.memories.load(part).items()):
                        d = m.model_dump(exclude={"duplicate_of"})
                        for k in ("created_at", "updated_at", "last_accessed_at", "valid_until"):
                            d[k] = _epoch(getattr(m, k))
                        if m.episode is not None:
                            d["episode"]["timestamp"] = _epoch(m.episode.timestamp)
                        if mid in blobs:
                            d["vector"] = _b64(blobs[mid])
                        if chunks.get(mid):
                            d["chunk_vectors"] = [_b64(b) for b in chunks[mid]]
                        write({"kind": "memory", **d})
                for a, b, t, eff, created in conn.archive.relations():
                    if a in ids and b in ids:
                        write({"kind": "relation", "from_id": f"mem_{a}", "to_id": f"mem_{b}", "type": t,
                               "confidence_effect": bool(eff), "created_at": created})
                for a, b, created in conn.archive.citations():
                    if a in ids and b in ids:
                        write({"kind": "citation", "memory_id": f"mem_{a}", "episode_id": f"mem_{b}", "created_at": created})
                # Team memberships (a kind added within version 1: an older importer skips it). Of a
                # scope's export, that scope's own teams; other members are other projects.
                for sc, team, created in conn.archive.team_links(scope or None):
                    write({"kind": "team_link", "scope": sc, "team_scope": team, "created_at": created})
                for sc, sess, pool, turns, updated in conn.archive.summaries():
                    if scope and sc != scope:
                        continue
                    entries = [dict(e, m=f"mem_{e['m']}") for e in json.loads(pool) if e["m"] in ids]
                    write({"kind": "session_summary", "scope": sc, "session": sess, "turns": turns, "updated_at": updated,
                           "pool": entries})
                for rid, q, prof, searched, kind, ts_, tm, created, task, label in conn.archive.retrievals():
                    items = [
                        {"memory_id": f"mem_{m}", "rank": r, "score": s, "expanded": bool(e),
                         **({} if k is None else {"keep": k})}
                        for m, r, s, e, k in conn.archive.items_of(rid)
                        if m in ids
                    ]
                    if scope and not items:
                        continue
                    write({"kind": "retrieval", "id": f"ret_{rid}", "query": q, "profile": prof,
                           "scope": None if searched is None else json.loads(searched), "retrieval_kind": kind,
                           "tokens_served": ts_, "tokens_matched": tm, "created_at": created, "items": items,
                           **({} if task is None else {"task": task}), **({} if label is None else {"task_label": label})})
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


__all__ = ["Portability", "encode_vector", "FORMAT", "VERSION"]
