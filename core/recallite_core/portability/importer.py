"""Import of a JSON-lines export in batches, in bounded memory, all or nothing.

Two passes over the file, never holding it whole:

1. **Check and embed**, outside any transaction: every line is parsed and every memory prepared
   (so a bad line stops the import before anything is written), ``batch`` memories at a time. Their
   vectors, and those of their sentence chunks, go to a private temporary file: copied from the
   export when it carries vectors of the target's embedder (same name and dimensions: no model
   runs), computed otherwise. Memory held: one batch, plus a few integers per memory.
2. **Write**, in one transaction: the file is read again and the memories inserted ``batch`` at
   a time with the vectors read back from the temporary file, then the relations, citations,
   team memberships, retrieval log, feedback and session summaries. If anything fails the
   transaction rolls back and the target is as it was (the promise of ``import_jsonl``).

The write lock is held only for the second pass (no embedding in it), as before batching.
Called by ``jsonl.Portability.import_jsonl``; may import what that module may.
"""

from __future__ import annotations

import base64
import json
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import Any, BinaryIO

import numpy as np

from recallite_core.conversation.episode_windows import write_windows
from recallite_core.conversation.episodes import check_category, check_role, check_timestamp
from recallite_core.errors import InvalidInputError
from recallite_core.models import OUTCOMES, RELATION_TYPES
from recallite_core.policy import rules as policy
from recallite_core.storage.codec import decode_vector
from recallite_core.text.task_names import key_or_none, stored_key
from recallite_core.text.validation import check_scope, parse_id

Progress = Callable[[int, int], None]

#: Memories embedded, then inserted, per step: bounds what an import holds in memory.
IMPORT_BATCH = 500

#: The nouns whose rows an import counts as already there (memories: "duplicates").
#: Statuses a memory of the file keeps whatever the trust: retired is never made live again.
RETIRED = ("deprecated", "superseded")

PRESENT_NOUNS = ("relations", "citations", "session_summaries", "retrievals", "feedback", "team_links")


def records(path: str, header_check: Callable[[dict], None]) -> Iterator[tuple[int, dict]]:
    """(line number, record) of every line after the header, streamed; the header is checked first."""
    target = os.path.abspath(os.path.expanduser(path))
    if not os.path.isfile(target):
        raise InvalidInputError(f"No file at {target}. Pass the path of a file written by export.")
    with open(target, encoding="utf-8") as f:
        first = True
        for n, line in _text_lines(f, target):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InvalidInputError(f"{target} line {n} is not JSON ({exc.msg}); nothing was imported.") from None
            if not isinstance(obj, dict) or "kind" not in obj:
                raise InvalidInputError(f"{target} line {n} has no 'kind'; nothing was imported.")
            if first:
                header_check(obj)
                first = False
                continue
            yield n, obj
        if first:
            header_check({})


def _text_lines(f: Any, target: str) -> Iterator[tuple[int, str]]:
    """(line number, line) of an open text file; a file that is not text says what it is not."""
    try:
        yield from enumerate(f, start=1)
    except UnicodeDecodeError:
        raise InvalidInputError(f"{target} is not text, so not a file written by export (a database file? export it "
                                "first: recallite-mcp --db THAT_FILE export OUT.jsonl); nothing was imported.") from None


def _blob(text: Any, dims: int) -> np.ndarray | None:
    """A vector stored in the export (base64 float32), or None when absent or of another size."""
    if not isinstance(text, str):
        return None
    try:
        return decode_vector(base64.b64decode(text), dims)
    except (ValueError, InvalidInputError):
        return None


class BatchImport:
    """One import: ``run()`` returns the counts."""

    def __init__(self, portability: Any, path: str, trust: str, progress: Progress | None, batch: int,
                 header_check: Callable[[dict], None], scope: str | None = None):
        self.p = portability
        self.scope = scope  # every memory goes to this scope, whatever the file says (None: as exported)
        self.core = portability.core
        self.path = path
        self.restore = trust == "restore"
        self.progress = progress
        self.batch = max(1, int(batch))
        self.own: set[int] = set()  # the memories this import inserted
        self.header: dict = {}
        self._check_header = header_check
        self.dims = self.core.embedder.dimensions
        self.copied = 0  # memories whose vectors came from the file
        self.expected = 0  # memories in the file (for the progress bar)
        # Rows of the file the target held already (an import into a non-empty store, the same
        # backup twice): left as they were, and counted so that a check (migrate's) can tell
        # "already there" from "missing". Reported only when there are some.
        self.present = dict.fromkeys(PRESENT_NOUNS, 0)
        self.links_skipped = 0  # team memberships of an untrusted file, not joined
        self.history_skipped = 0  # retrievals and feedback of an untrusted file: its outcomes are not ours
        self.retired = 0  # memories written deprecated or superseded, as in the file
        self.file_ids: list[int | None] = []  # the file's memory ids, in order (the first pass)
        self.keep_ids = False  # a restore into an empty store gives each memory its id of the file

    def _header(self, obj: dict) -> None:
        self._check_header(obj)
        self.header = obj

    def _lines(self) -> Iterator[tuple[int, dict]]:
        return records(self.path, self._header)

    def _same_embedder(self) -> bool:
        h = self.header
        return bool(h.get("vectors")) and h.get("embedder") == self.core.embedder.name and h.get("dimensions") == self.dims

    # -- pass 1 ----------------------------------------------------------------------------------
    def _prepare(self, n: int, r: dict, now: float) -> tuple[Any, int | None, dict | None, str | None]:
        try:
            src = r.get("source") or {"type": "user"}
            if not self.restore:
                origin = src.get("type", "?") + (f":{src['id']}" if src.get("id") else "")
                src = {"type": "imported", "id": origin}
            status = r.get("status") if self.restore and r.get("status") in policy.STATUS_RANK else None
            p = self.p.writer.prepare(
                content=r.get("content"), type=r.get("type", "observation"), title=r.get("title"), source=src,
                tags=r.get("tags"), metadata=r.get("metadata"), importance=r.get("importance"),
                scope=self.scope or r.get("scope"),
                session=r.get("session"), status=status, allow_unsafe_status_override=self.restore,
                confidence=r.get("confidence") if self.restore else None, valid_until=r.get("valid_until"),
            )
            old_id = parse_id(r.get("id"))
            ep = r.get("episode")
            if ep is not None:
                if not isinstance(ep, dict) or p.type != "episode":
                    raise InvalidInputError("'episode' must be an object with role, seq and timestamp, on an episode memory.")
                ep = {"role": check_role(ep.get("role")), "seq": ep.get("seq"), "at": check_timestamp(ep.get("timestamp"), now)}
                if not isinstance(ep["seq"], int) or isinstance(ep["seq"], bool) or ep["seq"] < 1:
                    raise InvalidInputError("episode.seq must be a whole number >= 1.")
            return p, old_id, ep, check_category(r.get("category"))
        except InvalidInputError as exc:
            raise InvalidInputError(f"{self.path} line {n}: {exc} Nothing was imported.") from None

    def _spans(self, p: Any) -> list[tuple[int, int]]:
        return self.p.turns.chunks_of(p.content) if p.type in self.core.config.chunk_types else []

    def _embed_batch(self, rows: list[tuple[dict, Any, dict | None]], out: BinaryIO, chunks_out: BinaryIO,
                     copy: bool) -> list[int]:
        """Write the batch's memory vectors, then its chunk vectors, to the temporary files (in
        file order); returns the number of chunks of each memory."""
        vecs: list[np.ndarray | None] = []
        chunk_vecs: list[list[np.ndarray] | None] = []
        texts: list[str] = []
        chunk_texts: list[str] = []
        counts: list[int] = []
        for r, p, ep in rows:
            spans = self._spans(p)
            counts.append(len(spans))
            v = _blob(r.get("vector"), self.dims) if copy else None
            cv = [_blob(c, self.dims) for c in r.get("chunk_vectors") or []] if copy else []
            if v is None:
                texts.append(p.embed_text)
            else:
                self.copied += 1
            vecs.append(v)
            if copy and len(cv) == len(spans) and all(c is not None for c in cv):
                chunk_vecs.append(cv)  # type: ignore[arg-type]
            else:
                chunk_vecs.append(None)
                role = ep["role"] if ep else None
                chunk_texts += [f"{role}: {p.content[a:b]}" if role else p.content[a:b] for a, b in spans]
        fresh = iter(self.core.embed(texts)) if texts else iter(())
        fresh_chunks = iter(self.core.embed(chunk_texts)) if chunk_texts else iter(())
        for v in vecs:
            out.write(np.asarray(v if v is not None else next(fresh), dtype="<f4").tobytes())
        for given, k in zip(chunk_vecs, counts):
            chunk_rows = given if given is not None else [next(fresh_chunks) for _ in range(k)]
            chunks_out.writelines(np.asarray(c, dtype="<f4").tobytes() for c in chunk_rows)
        return counts

    # -- the whole import ------------------------------------------------------------------------
    def run(self) -> dict[str, int]:
        now = time.time()
        folder = tempfile.mkdtemp(prefix="recallite-import-")
        try:
            vec_path, chunk_path = os.path.join(folder, "vectors.f32"), os.path.join(folder, "chunks.f32")
            chunk_counts: list[int] = []
            total = 0
            self.expected = self._count()
            with open(vec_path, "wb") as out, open(chunk_path, "wb") as chunks_out:
                pending: list[tuple[dict, Any, dict | None]] = []
                for n, r in self._lines():
                    if r["kind"] != "memory":
                        continue
                    p, old, ep, _cat = self._prepare(n, r, now)
                    self.file_ids.append(old)
                    pending.append((r, p, ep))
                    if len(pending) >= self.batch:
                        chunk_counts += self._embed_batch(pending, out, chunks_out, self._same_embedder())
                        total += len(pending)
                        pending = []
                        self._report(total)
                if pending:
                    chunk_counts += self._embed_batch(pending, out, chunks_out, self._same_embedder())
                    total += len(pending)
            self.expected = total
            self._report(total)
            with open(vec_path, "rb") as vecs, open(chunk_path, "rb") as chunk_vecs:
                return self._write(now, vecs, chunk_vecs, chunk_counts)
        finally:
            for name in ("vectors.f32", "chunks.f32"):
                try:
                    os.unlink(os.path.join(folder, name))
                except OSError:
                    pass
            os.rmdir(folder)

    def _count(self) -> int:
        """Memory lines, counted cheaply (export writes "kind" first) to size the progress bar
        before the first pass; the first pass's own count replaces it."""
        target = os.path.abspath(os.path.expanduser(self.path))
        if not os.path.isfile(target):
            return 0  # the first pass says so, in its own words
        try:
            with open(target, encoding="utf-8") as f:
                return sum(1 for line in f if line.startswith('{"kind": "memory"'))
        except UnicodeDecodeError:
            return 0  # not text (a database file given by mistake): the first pass says so

    def _report(self, done: int) -> None:
        """Progress over 2 x memories: the first half checks and embeds (or copies), the second writes."""
        if self.progress and self.expected:
            self.progress(min(done, 2 * self.expected), 2 * self.expected)

    # -- pass 2 ----------------------------------------------------------------------------------
    def _write(self, now: float, vecs: BinaryIO, chunk_vecs: BinaryIO, chunk_counts: list[int]) -> dict[str, int]:
        counts = {"memories": 0, "duplicates": 0, "relations": 0, "retrievals": 0, "feedback": 0, "citations": 0,
                  "team_links": 0}
        idmap: dict[int, int] = {}
        # (old id, status, superseded_by) of restored memories; of an untrusted file's, the retired
        # ones it inserted (status None: set already), whose superseded_by is set at the end
        finals: list[tuple[int, Any, Any]] = []
        sessions: set[tuple[str, str]] = set()
        self.placed: dict[tuple[str, str], dict[int, int]] = {}  # (scope, session) -> {seq: new turn id}
        row_size = self.dims * 4
        with self.core.store.transaction() as conn:
            # Ids are what agents, notes and feedback name a memory by: a backup restored into an
            # empty store keeps them (a new user's trial found "mem_26" naming another project's
            # memory after a restore). Into a store holding memories, they are new ones.
            ids = self.file_ids
            self.keep_ids = (self.restore and bool(ids) and None not in ids and len(set(ids)) == len(ids)
                             and not conn.memories.scope_counts())
            batch: list[tuple[int, dict]] = []
            k = 0

            def flush() -> None:
                nonlocal k
                prepared: list[tuple] = []
                for n, r in batch:
                    p, old_id, ep, category = self._prepare(n, r, now)
                    vec = np.frombuffer(vecs.read(row_size), dtype="<f4")
                    spans = self._spans(p)
                    if len(spans) != chunk_counts[k + len(prepared)]:
                        raise InvalidInputError(f"{self.path} changed during the import; nothing was imported.")
                    plan = [[o, a, b, p.content[a:b], np.frombuffer(chunk_vecs.read(row_size), dtype="<f4")]
                            for o, (a, b) in enumerate(spans)]
                    prepared.append((r, p, old_id, ep, category, vec, plan))
                self._insert(conn, prepared, idmap, finals, sessions, counts, now)
                k += len(prepared)
                self._report(self.expected + k)

            for n, r in self._lines():
                if r["kind"] == "memory":
                    batch.append((n, r))
                    if len(batch) >= self.batch:
                        flush()
                        batch = []
            if batch:
                flush()
            self._restore_finals(conn, finals, idmap)
            self._windows(conn)
            self._links(conn, idmap, counts, now)
            self._restore_summaries(conn, idmap, sessions)
        if self.retired:
            counts["retired"] = self.retired
        counts.update({f"{noun}_already_there": n for noun, n in self.present.items() if n})
        if self.links_skipped:
            counts["team_links_skipped"] = self.links_skipped
        if self.history_skipped:
            counts["history_skipped"] = self.history_skipped
        if self.header.get("vectors"):  # an export that carried vectors (migrate's): say how many were used
            counts["vectors_copied"] = self.copied
        return counts

    def _restore_summaries(self, conn, idmap: dict[int, int], sessions: set) -> None:
        """Session summaries: as exported when restoring (ids remapped), else rebuilt from the turns."""
        done = set()
        # Into another scope the exported pools would name the file's scopes, and two sessions of
        # one name from two scopes would meet in one: rebuild them from the turns instead.
        if self.restore and not self.scope:
            for _n, r in self._lines():
                if r["kind"] != "session_summary":
                    continue
                if (r.get("scope"), r.get("session")) not in sessions:
                    # No turn of it was new: the target's own summary of that session stands.
                    self.present["session_summaries"] += conn.episodes.summary(r.get("scope"), r.get("session")) is not None
                    continue
                pool = [dict(e, m=idmap[parse_id(e["m"])]) for e in r.get("pool", []) if parse_id(e["m"]) in idmap]
                key = (r["scope"], r["session"])
                turns = conn.archive.turn_count(*key)
                self.present["session_summaries"] += conn.episodes.summary(*key) is not None  # refreshed in place
                conn.episodes.put_summary(*key, json.dumps(pool, ensure_ascii=False), turns, r.get("updated_at") or time.time())
                done.add(key)
        if sessions - done:
            self.p.turns.rebuild_summaries(conn, sorted(sessions - done))

    def _insert(self, conn, prepared: list, idmap: dict, finals: list, sessions: set, counts: dict, now: float) -> None:
        writer, turns = self.p.writer, self.p.turns
        # A backup restores its own links; anything else is compared with what was stored before
        # the import, never with the file's own memories (earlier batches nor its own): a file is
        # one state of things, and what it left unlinked its owner left apart (a superseded memory
        # a person restored was superseded again by the untrusted import of its successor). What
        # the file retired changes nothing (live lists positions in the batch).
        live = [] if self.restore else [k for k, x in enumerate(prepared) if x[0].get("status") not in RETIRED]
        found: list[list] = [[] for _ in prepared]
        items = [(prepared[k][1], prepared[k][5]) for k in live]
        for k, f in zip(live, writer.find_corrections(conn, items, with_batch=False, skip=self.own)):
            found[k] = f
        inserted: dict[int, int] = {}
        for k, (r, p, old_id, ep, category, vec, plan) in enumerate(prepared):
            if self.restore:
                finals.append((old_id, r.get("status"), r.get("superseded_by")))
            if ep is not None:  # turns repeat themselves: the same turn is the same place in the same session
                dup = conn.archive.turn_at(p.scope, p.session or "", ep["seq"], p.hash)
            else:
                dup = writer.find_duplicate(conn, p)
            if dup is not None:
                idmap[old_id] = dup
                counts["duplicates"] += 1
                continue
            extra: dict[str, Any] = {}  # the restored columns, none of them None
            if self.restore:
                extra = {k2: r.get(k2) for k2 in ("usefulness", "success_count", "failure_count", "access_count",
                                                   "last_accessed_at", "created_at", "updated_at") if r.get(k2) is not None}
                if "usefulness" in extra:
                    extra["usefulness"] = policy.clamp01(float(extra["usefulness"]))
            idmap[old_id] = inserted[k] = mid = writer.insert(conn, p, vec, now, extra,
                                                              old_id if self.keep_ids else None)
            self.own.add(mid)
            if ep is not None:
                session = p.session or ""
                taken = conn.archive.turn_at(p.scope, session, ep["seq"], None) is not None
                seq = ep["seq"] if not taken else conn.episodes.last_seq(p.scope, session) + 1
                conn.episodes.add_turns([(mid, p.scope, session, ep["role"], seq, ep["at"])])
                sessions.add((p.scope, session))
                self.placed.setdefault((p.scope, session), {})[seq] = mid
            elif p.type == "episode":
                turns.register_episode(conn, mid, p, "event", now)
            turns.write_chunks(conn, mid, plan)
            turns.set_category(conn, mid, category)
            counts["memories"] += 1
            if r.get("status") in RETIRED:
                self.retired += 1
                if not self.restore:
                    # Someone else's retired memory arrives retired, never as a live candidate (it came
                    # back in recall); set now, so that a later batch's corrections do not take it for
                    # a live one. Memories already stored are left as they were.
                    conn.archive.restore_status(mid, r["status"])
                    finals.append((old_id, None, r.get("superseded_by")))
        at = {j: inserted[k] for j, k in enumerate(live) if k in inserted}  # find_corrections named them by j
        for k, mid in inserted.items():
            writer.apply_corrections(conn, mid, found[k], batch=at)

    def _windows(self, conn) -> None:
        """The keyword windows of the imported turns and of their neighbours already stored (an
        import into a non-empty store), as recording the turns writes them. Import wrote none
        before: turns imported or migrated had no window channel, and LoCoMo recall on a migrated
        store fell (R@5 .673 -> .628)."""
        for (scope, session), at in self.placed.items():
            seqs = sorted({n for seq in at for n in (seq - 1, seq, seq + 1) if n >= 1})
            write_windows(conn, scope, session, seqs, absent=set(at.values()))

    def _restore_finals(self, conn, finals: list, idmap: dict) -> None:
        """superseded_by pointers and final statuses (superseded / deprecated) of a restore; the
        pointers of an untrusted file's retired memories (their status is set)."""
        for old_id, status, sup in finals:
            if old_id not in idmap:
                continue
            if status in ("deprecated", "superseded"):
                conn.archive.restore_status(idmap[old_id], status)
            if sup:
                target = idmap.get(parse_id(sup))
                if target:
                    conn.archive.restore_superseded_by(idmap[old_id], target)

    def _links(self, conn, idmap: dict, counts: dict, now: float) -> None:
        """Citations, relations, and (restore only) the retrieval log and feedback, streamed."""
        retmap: dict[int, int] = {}
        # Only a store that already logged retrievals can hold this file's: a restore into a new
        # store (and every migrate) skips the lookup, which has no index to use.
        logged = conn.archive.last_retrieval() if self.restore else 0
        for n, r in self._lines():
            kind = r["kind"]
            try:
                if kind == "citation":
                    a, b = idmap.get(parse_id(r.get("memory_id"))), idmap.get(parse_id(r.get("episode_id")))
                    if a and b and a != b and conn.memories.type_of(b) == "episode":
                        self._tally(counts, "citations", conn.archive.add_citation(a, b, r.get("created_at") or now))
                elif kind == "relation":
                    if r.get("type") not in RELATION_TYPES:
                        raise InvalidInputError(f"unknown relation type {r.get('type')!r}.")
                    a, b = idmap.get(parse_id(r.get("from_id"))), idmap.get(parse_id(r.get("to_id")))
                    if a and b and a != b:
                        self._tally(counts, "relations", conn.archive.add_relation(
                            a, b, r["type"], int(bool(r.get("confidence_effect", True)) and self.restore),
                            r.get("created_at") or now))
                elif kind == "team_link":
                    self._team_link(conn, r, counts, now)
                elif kind == "retrieval" and self.restore:
                    self._tally(counts, "retrievals", self._retrieval(conn, r, idmap, retmap, now, logged))
                elif kind == "feedback" and self.restore:
                    self._tally(counts, "feedback", self._feedback(conn, r, idmap, retmap, now))
                elif kind in ("retrieval", "feedback"):
                    self.history_skipped += 1
            except (KeyError, TypeError, ValueError) as exc:
                raise InvalidInputError(f"{self.path} line {n}: malformed {kind} record ({exc}). Nothing was imported.") from None

    def _team_link(self, conn, r: dict, counts: dict, now: float) -> None:
        """One team membership. Joined only from your own backup: a membership widens what the
        member scope recalls (with --isolate-scopes it is what lets a project read a team), so
        someone else's file does not get to add one; those are counted as skipped."""
        if not self.restore:
            self.links_skipped += 1
            return
        lim = self.core.limits
        scope, team = check_scope(self.scope or r["scope"], lim, ""), check_scope(r["team_scope"], lim, "")
        if not scope or not team:
            raise ValueError("scope and team_scope must be non-empty")
        if scope != team:  # into --scope X, X's own team link would make X its own team
            self._tally(counts, "team_links", conn.archive.add_team_link(scope, team, r.get("created_at") or now))

    def _tally(self, counts: dict, noun: str, written: int) -> None:
        """One record of ``noun`` handled: 1 written, 0 found already in the store."""
        counts[noun] += written
        self.present[noun] += 1 - written

    def _retrieval(self, conn, r: dict, idmap: dict, retmap: dict, now: float, logged: int) -> int:
        """Restore one logged retrieval with its items; 0 when the store held it before this import
        (ids up to ``logged``: the same backup restored again; its feedback then lands on that one, once)."""
        query, kind, at = str(r.get("query", "")), str(r.get("retrieval_kind", "recall")), r.get("created_at") or now
        searched = r.get("scope") if not self.scope or r.get("scope") is None else [self.scope]
        # Into another scope, the original's entry (same query and time, its own scope) is not this
        # copy's: only one that searched the new scope counts as already there.
        only = json.dumps(searched) if self.scope and searched is not None else None
        same = conn.archive.same_retrieval(query, kind, at, logged, only) if logged and r.get("created_at") else None
        if same is not None:
            retmap[parse_id(r.get("id"), "ret")] = same
            return 0
        new_rid = conn.archive.add_retrieval(
            query, str(r.get("profile", "default")), None if searched is None else json.dumps(searched), kind,
            r.get("tokens_served"), r.get("tokens_matched"), at, stored_key(r.get("task")), _label(r))
        retmap[parse_id(r.get("id"), "ret")] = new_rid
        rows = []
        for it in r.get("items", []):
            mid = idmap.get(parse_id(it["memory_id"]))
            if mid:
                keep = it.get("keep")
                rows.append((mid, int(it["rank"]), float(it["score"]), int(bool(it.get("expanded"))),
                             None if keep is None else float(keep)))
        conn.archive.add_items(new_rid, rows)
        return 1

    def _feedback(self, conn, r: dict, idmap: dict, retmap: dict, now: float) -> int:
        if r.get("outcome") not in OUTCOMES:
            raise InvalidInputError(f"unknown outcome {r.get('outcome')!r}.")
        rid = retmap.get(parse_id(r["retrieval_id"], "ret")) if r.get("retrieval_id") else None
        key = r.get("client_key")
        if key and self.scope:  # client keys are unique: the copy in another scope gets its own, stable key
            key = f"{key}@{self.scope}"
        if key and conn.outcomes.feedback_with_key(key) is not None:
            return 0
        if rid is not None and r.get("created_at") and conn.archive.has_feedback(rid, r["outcome"], r["created_at"]):
            return 0  # restored before, with its retrieval
        used = [f"mem_{idmap[parse_id(u)]}" for u in r.get("used_memory_ids", []) if parse_id(u) in idmap]
        fid = conn.outcomes.add_feedback(rid, r["outcome"], policy.clamp01(float(r.get("score", 0.0))),
                                         json.dumps(used), r.get("reason"), key, r.get("created_at") or now)
        rows = []
        for e in r.get("effects", []):
            mid = idmap.get(parse_id(e["memory_id"]))
            if mid:
                rows.append((mid, float(e["weight"]), float(e["target"]), float(e["old_usefulness"]),
                             float(e["new_usefulness"]), r.get("created_at") or now,
                             "unused" if e.get("kind") == "unused" else "credit"))
        conn.archive.add_effects(fid, rows)
        return 1


def _label(r: dict) -> str | None:
    """A restored retrieval's task name as written: kept only where it still names its key."""
    label, key = stored_key(r.get("task_label")), stored_key(r.get("task"))
    return label if label is not None and key is not None and key_or_none(label) == key else None
