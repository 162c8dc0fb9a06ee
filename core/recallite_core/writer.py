"""The write path: checking and preparing a memory (redaction, trust, flags, title),
embedding it, the duplicate check, inserting rows with their vector and FTS entry, detecting
what a new memory corrects and applying it (the team copies of what it supersedes following it),
a new version that supersedes its old one (``replace``, for revise), and the public
``remember``/``remember_many``.
Conversations and import write through these public methods, each inside one transaction.

May import the plumbing, the turn store (conversation projections of a new memory), the
lifecycle (superseding what a write corrects), the catalog (reading it back), corrections,
policy, redaction, injection, storage, models and validation; never the facade.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Set as AbstractSet
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from recallite_core.catalog import Catalog
from recallite_core.conversation.episodes import check_category
from recallite_core.conversation.turns import TurnStore
from recallite_core.errors import InvalidInputError
from recallite_core.models import MEMORY_TYPES, STATUSES, EpisodeInfo, Memory
from recallite_core.plumbing import Plumbing
from recallite_core.policy import corrections
from recallite_core.policy import rules as policy
from recallite_core.policy.lifecycle import Lifecycle, effective_source
from recallite_core.storage.codec import encode_many, encode_vector, ts
from recallite_core.storage.sqlite.rows import new_memory
from recallite_core.text.injection import flags_for
from recallite_core.text.redaction import redact_text, redact_value
from recallite_core.text.tokens import estimate_tokens
from recallite_core.text.validation import (
    Limits,
    check_content,
    check_metadata,
    check_optional_name,
    check_scope,
    check_source,
    check_tags,
    check_title,
    check_unit,
    check_valid_until,
    content_hash,
    derive_title,
    parse_id,
)

Progress = Callable[[int, int], None]


ITEM_FIELDS = frozenset({
    "content", "type", "title", "source", "tags", "metadata", "importance", "scope", "session", "status",
    "allow_unsafe_status_override", "confidence", "valid_until", "redact_secrets", "category", "cites",
})


class Prepared:
    """A validated memory ready to insert."""

    __slots__ = ("type", "title", "content", "status", "source", "scope", "session", "tags", "metadata",
                 "confidence", "importance", "hash", "tokens", "embed_text", "valid_until", "redactions")

    def __init__(self, *, type, title, content, status, source, scope, session, tags, metadata, confidence,
                 importance, hash, tokens, embed_text, valid_until, redactions):
        self.type, self.title, self.content, self.status, self.source = type, title, content, status, source
        self.scope, self.session, self.tags, self.metadata, self.confidence = scope, session, tags, metadata, confidence
        self.importance, self.hash, self.tokens, self.embed_text = importance, hash, tokens, embed_text
        self.valid_until, self.redactions = valid_until, redactions

    @property
    def alt_hash(self) -> str:
        """The hash of the same text with its final period toggled: "X." and "X" are one memory."""
        text = self.content.rstrip()
        return content_hash(text[:-1] if text.endswith(".") else text + ".")

    @property
    def key(self) -> str:
        """One key for both spellings (a batch's repeats)."""
        return min(self.hash, self.alt_hash)


@dataclasses.dataclass
class Copies:
    """What a write did to the team copies (share) of the memories it superseded."""

    followed: list[tuple[str, str, str]] = dataclasses.field(default_factory=list)  # (copy, its scope, new version)
    kept: list[tuple[str, str, str]] = dataclasses.field(default_factory=list)  # (copy, its scope, what replaced its original)

    def extend(self, other: Copies) -> None:
        self.followed += other.followed
        self.kept += other.kept


def embedding_text(title: str, content: str) -> str:
    """What the embedder sees for a memory: the title when it adds words, then the content."""
    if title and not content.lower().startswith(title.rstrip("…").lower()):
        return f"{title}. {content}"
    return content


def redact_fields(text: str, title: str, raw_tags: Any, tags: list[str], metadata: dict, lim: Limits
                  ) -> tuple[str, str, list[str], dict, list[str]]:
    """Secrets replaced in a memory's checked text, title, tags and metadata, with the kinds found
    (the same for a stored memory and a working entry: neither may hold one in clear)."""
    text, redactions = redact_text(text)
    if title:
        title = redact_value(title, redactions)
    if tags:  # redact the tags as given (before lower-casing hides an AKIA... key)
        found = len(redactions)
        redacted = redact_value(raw_tags, redactions)
        if len(redactions) > found:  # else the same tags as checked
            tags = check_tags(redacted, lim)
    if metadata:
        metadata = redact_value(metadata, redactions)
    return text, title, tags, metadata, redactions


class Writer:
    """Prepares, checks and stores memories; the one place rows are inserted."""

    def __init__(self, core: Plumbing, catalog: Catalog, turns: TurnStore, lifecycle: Lifecycle):
        self.core = core
        self.catalog = catalog
        self.turns = turns
        self.lifecycle = lifecycle

    def prepare(
        self,
        *,
        content: Any,
        type: str = "observation",
        title: Any = None,
        source: Any = None,
        tags: Any = None,
        metadata: Any = None,
        importance: Any = None,
        scope: Any = None,
        session: Any = None,
        status: str | None = None,
        allow_unsafe_status_override: bool = False,
        confidence: Any = None,
        valid_until: Any = None,
        redact_secrets: bool | None = None,
    ) -> Prepared:
        lim = self.core.limits
        if not isinstance(type, str):
            raise InvalidInputError(f"type must be one of {', '.join(MEMORY_TYPES)}.")
        policy.check_type(type)
        text = check_content(content, lim)
        src = check_source(source)
        # Secrets are replaced before hashing, embedding and FTS, so they never reach the file.
        ttl, tag_list, meta = check_title(title, lim), check_tags(tags, lim), check_metadata(metadata, lim)
        redactions: list[str] = []
        if self.core.config.redact_secrets if redact_secrets is None else bool(redact_secrets):
            text, ttl, tag_list, meta, redactions = redact_fields(text, ttl, tags, tag_list, meta, lim)
        ttl = ttl or derive_title(text)
        if status is not None and not isinstance(status, str):
            raise InvalidInputError(f"status must be one of {', '.join(STATUSES)}.")
        st = policy.initial_status(type, src.type, status, allow_unsafe_status_override)
        # Instruction-like text is flagged (metadata "flagged", reserved) and waits as a candidate.
        meta.pop("flagged", None)
        trust = policy.trust_of(src.type)
        flags = flags_for([text, ttl, *tag_list], trust)
        if flags:
            meta["flagged"] = flags
            if trust != policy.TRUSTED and not allow_unsafe_status_override:
                st = "candidate"
        conf = check_unit("confidence", confidence, policy.SOURCE_CONFIDENCE[src.type])
        if confidence is not None and trust != policy.TRUSTED and not allow_unsafe_status_override:
            conf = min(conf, policy.SOURCE_CONFIDENCE[src.type])  # untrusted text cannot vouch for itself
        return Prepared(
            type=type,
            title=ttl,
            content=text,
            status=st,
            source=src,
            scope=check_scope(scope, lim, self.core.config.default_scope),
            session=check_optional_name(session, "session", lim),
            tags=tag_list,
            metadata=meta,
            confidence=conf,
            importance=check_unit("importance", importance, 0.5),
            hash=content_hash(text),
            tokens=estimate_tokens(text) + estimate_tokens(ttl),
            embed_text=embedding_text(ttl, text),
            valid_until=check_valid_until(valid_until),
            redactions=redactions,
        )

    def insert(self, conn, p: Prepared, vector: np.ndarray, now: float, extra: dict | None = None,
               keep_id: int | None = None) -> int:
        """One memory (``keep_id``: the id to give it, a restore's; else a new one)."""
        return self.insert_many(conn, [(p, vector, extra)], now, None if keep_id is None else [keep_id])[0]

    def insert_many(self, conn, rows: Sequence[tuple[Prepared, np.ndarray, dict | None]], now: float,
                    ids: Sequence[int] | None = None) -> list[int]:
        """Insert memories with their vectors (caller holds the write transaction), in a few
        statements for the whole batch (storage's memories.insert_many); returns their ids."""
        if not rows:
            return []
        dims = self.core.embedder.dimensions
        vectors = [v for _, v, _ in rows]
        try:
            matrix = np.stack(vectors)
        except ValueError:  # ragged: let the per-vector check name the problem
            blobs = [encode_vector(v, dims) for v in vectors]
        else:
            blobs = encode_many(matrix, dims) if matrix.ndim == 2 else [encode_vector(v, dims) for v in vectors]
        dumps = json.dumps
        mem_rows = []
        redacted: dict[str, int] = {}
        for p, _, extra in rows:
            if extra:
                counts = (extra.get("usefulness", 0.5), extra.get("success_count", 0), extra.get("failure_count", 0),
                          extra.get("access_count", 0), extra.get("last_accessed_at"), extra.get("created_at", now),
                          extra.get("updated_at", now))
            else:
                counts = (0.5, 0, 0, 0, None, now, now)
            mem_rows.append((
                p.type, p.title, p.content, p.status, p.source.type, p.source.id, p.scope, p.session,
                dumps(p.tags, ensure_ascii=False), dumps(p.metadata, ensure_ascii=False) if p.metadata else "{}",
                p.confidence, counts[0], p.importance, *counts[1:], p.hash, p.tokens, p.valid_until,
            ))
            for kind in p.redactions:
                redacted[kind] = redacted.get(kind, 0) + 1
        out = conn.memories.insert_many(mem_rows, blobs, ids)
        if redacted:
            conn.stats.count_redactions(redacted)
        return out

    def find_duplicate(self, conn, p: Prepared) -> int | None:
        """An identical memory in the scope, one that is not superseded first. A superseded one counts
        too: the stale text sent again (an agent re-reading an old note) must not come back as a new
        memory that would supersede its own correction; restore() brings the old one back."""
        return conn.memories.duplicate_of(p.hash, p.scope, p.alt_hash)

    def find_duplicates(self, conn, prepared: Sequence[Prepared]) -> list[int | None]:
        """find_duplicate for many at once: one indexed query per 500 hashes."""
        best: dict[tuple[str, str], tuple[bool, int]] = {}
        for mid, h, sc, stale in conn.memories.with_hashes(list({h for p in prepared for h in (p.hash, p.alt_hash)})):
            key = (stale, mid)
            if (h, sc) not in best or key < best[(h, sc)]:
                best[(h, sc)] = key
        out: list[int | None] = []
        for p in prepared:
            hit = best.get((p.hash, p.scope)) or best.get((p.alt_hash, p.scope))
            out.append(hit[1] if hit else None)
        return out

    def remember(
        self,
        content: str | None = None,
        *,
        type: str = "observation",
        title: str | None = None,
        source: Any = None,
        tags: Sequence[str] | None = None,
        metadata: dict | None = None,
        importance: float | None = None,
        scope: str | None = None,
        session: str | None = None,
        status: str | None = None,
        allow_unsafe_status_override: bool = False,
        confidence: float | None = None,
        category: str | None = None,
        cites: Sequence[str | int] | None = None,
        valid_until: Any = None,
        redact_secrets: bool | None = None,
    ) -> Memory:
        """Store one memory. Identical content in the same scope returns the existing one (``duplicate_of`` set).

        ``source`` (default ``{"type": "user"}``) decides trust: llm and imported memories start
        as candidates whatever ``status`` asks, unless ``allow_unsafe_status_override``.
        ``category``: an optional label recall(categories=...) filters on. ``cites``: ids of the
        conversation turns (episodes) it came from, see :meth:`why` (also added to a duplicate).
        An ``episode`` stored here is an event of its session (role ``event``); use
        :meth:`record_turn` for conversation turns.
        ``valid_until`` (datetime, ISO string or epoch seconds): after it the memory leaves default recall.
        Secrets in content, title, tags and metadata are stored as ``[REDACTED:kind]`` unless
        ``redact_secrets=False`` (default: ``config.redact_secrets``). Instruction-like text
        gets ``metadata["flagged"]`` and, from a non-trusted source, stays a candidate.
        """
        self.core.live()
        p = self.prepare(
            content=content, type=type, title=title, source=source, tags=tags, metadata=metadata,
            importance=importance, scope=scope, session=session, status=status,
            allow_unsafe_status_override=allow_unsafe_status_override, confidence=confidence,
            valid_until=valid_until,
            redact_secrets=redact_secrets,
        )
        cat = check_category(category)
        cited = None if cites is None else [parse_id(c) for c in ([cites] if isinstance(cites, (str, int)) else cites)]
        with self.core.store.reading(consistent=False) as conn:  # one statement: no snapshot to keep
            dup = self.find_duplicate(conn, p)
        if dup is not None:
            return self._remembered_again(dup, cat, cited)
        vec = self.core.embed([p.embed_text])[0]
        plan = self.turns.chunk_plans([p])[0]
        with self.core.store.transaction(concurrent=True) as conn:
            dup = self.find_duplicate(conn, p)  # another thread or process may have won the race
            if dup is None:
                found = self.find_corrections(conn, [(p, vec)])[0]
                now = time.time()
                mid = self.insert(conn, p, vec, now)
                episodes = self.after_insert_many(conn, [(mid, p, plan, cat, cited)], now)
                # apply_corrections reads (and locks) every memory it changes in one statement, in
                # id order: no lock_in_id_order needed for one new memory.
                copies = self.apply_corrections(conn, mid, found, source=new_source(p), made=(p, vec, plan))
        if dup is not None:
            return self._remembered_again(dup, cat, cited)
        # Built from what was written, as remember_many does, not read back (a round trip to a server).
        return _with_copies(_with_corrections(new_memory(mid, p, ts(now), episodes.get(mid), cat), found), copies)

    def replace(self, old_id: int, reason: str, allow_unsafe: bool, **fields: Any) -> Memory:
        """Store a new version of a memory (``fields``: the arguments of :meth:`remember`) and supersede
        ``old_id`` by it, its team copies following (see follow_copies), in one transaction."""
        self.core.live()
        p = self.prepare(**fields)
        with self.core.store.reading(consistent=False) as conn:
            dup = self.find_duplicate(conn, p)
        if dup is None:
            vec = self.core.embed([p.embed_text])[0]
            plan = self.turns.chunk_plans([p])[0]
            with self.core.store.transaction() as conn:  # a supersede: exclusive (docs/postgres.md)
                dup = self.find_duplicate(conn, p)
                if dup is None:
                    found = self.find_corrections(conn, [(p, vec)])[0]
                    now = time.time()
                    mid = self.insert(conn, p, vec, now)
                    self.after_insert_many(conn, [(mid, p, plan, None, None)], now)
                    copies = self.apply_corrections(conn, mid, found, source=new_source(p), made=(p, vec, plan))
                    self.lifecycle.supersede_within(conn, old_id, mid, reason, allow_unsafe)
                    copies.extend(self.follow_copies(conn, old_id, mid, (p, vec, plan), now))
        if dup is not None:
            raise InvalidInputError(
                f"mem_{dup} already holds this text in scope {p.scope}; supersede mem_{old_id} by it instead.")
        return _with_copies(_with_corrections(self.catalog.get(mid), found), copies)

    def after_insert(self, conn, mid: int, p: Prepared, plan: list, category: str | None, cites: list[int] | None) -> None:
        """Conversation memory of a new memory: episode position, chunks, category, citations."""
        self.after_insert_many(conn, [(mid, p, plan, category, cites)], time.time())

    def after_insert_many(self, conn, new: Sequence[tuple[int, Prepared, list, str | None, list[int] | None]],
                           now: float) -> dict[int, EpisodeInfo]:
        """after_insert for a batch of new memories (id, prepared, chunk plan, category, cites),
        in statements per batch rather than per memory. Returns the position of each episode."""
        events = [(mid, p, "event", now) for mid, p, *_ in new if p.type == "episode"]
        positions = self.turns.register_episodes(conn, events) if events else {}
        chunks = [(mid, plan) for mid, _, plan, *_ in new if plan]
        if chunks:
            self.turns.write_chunks_many(conn, chunks)
        categories = [(mid, category) for mid, _, _, category, _ in new if category]
        if categories:
            conn.episodes.set_categories(categories)
        for mid, _, _, _, cites in new:
            if cites:
                self.turns.cite(conn, mid, cites)
        at = ts(now)
        return {mid: EpisodeInfo(session=p.session or None, role="event", seq=positions[mid], timestamp=at)
                for mid, p, *_ in new if mid in positions}

    def _remembered_again(self, dup: int, category: str | None, cites: list[int] | None) -> Memory:
        if cites or category:
            with self.core.store.transaction() as conn:
                if cites:
                    self.turns.cite(conn, dup, cites)
                if category and conn.episodes.category_of(dup) is None:
                    self.turns.set_category(conn, dup, category)
        return _sent_again(self.catalog.get(dup))

    # -- corrections (corrections.py) ---------------------------------------------------------------
    def find_corrections(self, conn, items: Sequence[tuple[Prepared, np.ndarray]], *, with_batch: bool = True,
                         skip: AbstractSet[int] = frozenset()) -> list[list[corrections.Finding]]:
        """For each new memory (in write order), the stored memories of its scope, and the earlier
        ones of the same batch, whose value it changes. Read in the write transaction, before the
        batch is inserted; an earlier item of the batch is named by its position as -(k + 1).
        ``with_batch`` False and ``skip``: an import compares nothing of its own file with the rest
        of it (a file is one state of things: what it did not link, its owner left apart)."""
        cfg = self.core.config
        out: list[list[corrections.Finding]] = [[] for _ in items]
        if not cfg.corrections or not items:
            return out
        k = max(1, cfg.correction_candidates)
        wanted: list[tuple[int, list[int]]] = []
        for n, (p, vec) in enumerate(items):
            if p.type in corrections.COMPARED_TYPES:
                wanted.append((n, corrections.nearest(self.core.retriever, conn, vec, p.scope, k, cfg.correction_min_similarity)))
        ids = sorted({i for _, c in wanted for i in c})
        stored: dict[int, corrections.Stored] = {}
        for mid, content, src, meta, mtype in conn.memories.comparable(ids):
            stored[mid] = corrections.Stored(mid, content, effective_source(src, meta), mtype)
        vecs = np.array([v for _, v in items], dtype=np.float32)
        for n, cands in wanted:
            p = items[n][0]
            # A new version (revise) or a merge (consolidate) already says what it relates to.
            named = {parse_id(x) for x in [p.metadata.get("previous_id"), *p.metadata.get("consolidated_from", [])]
                     if isinstance(x, str) and x.startswith("mem_")}
            pool = [stored[i] for i in cands if i in stored and i not in named and i not in skip]
            # Earlier memories of the same batch and scope, nearest first.
            earlier = [j for j in range(n) if with_batch and items[j][0].scope == p.scope
                       and items[j][0].type in corrections.COMPARED_TYPES]
            if earlier:
                sims = vecs[earlier] @ vecs[n]
                near = [earlier[j] for j in np.argsort(-sims)[:k].tolist() if sims[j] >= cfg.correction_min_similarity]
                pool += [corrections.Stored(-(j + 1), items[j][0].content, new_source(items[j][0]), items[j][0].type)
                         for j in near]
            out[n] = corrections.findings(p.content, new_source(p), p.type, pool)
        return out

    def apply_corrections(self, conn, new_id: int, found: list[corrections.Finding],
                           batch: dict[int, int] | None = None, source: str | None = None,
                           made: tuple[Prepared, np.ndarray, list] | None = None) -> Copies:
        """Supersede or link what a new memory changes (caller holds the write transaction).
        The olds' states are read in one statement and the contradictions written in one: a
        restatement often conflicts with several stored memories, and a round trip each was a
        third of such a remember's statements on PostgreSQL. ``source``: the new memory's effective
        source (as find_corrections read it), else read from the store. The team copies of what
        it supersedes follow it (``made``: its prepared row, vector and chunk plan) or are marked stale."""
        copies = Copies()
        olds = [(f, old) for f in found
                if (old := f.old_id if f.old_id > 0 else (batch or {}).get(-f.old_id - 1)) is not None]
        if not olds:
            return copies
        # The olds are distinct, and superseding one leaves the others' status as it was.
        status = {mid: st for mid, st, *_ in conn.memories.states_of([old for _, old in olds])}
        links: list[int] = []
        for f, old in olds:
            if status.get(old) not in corrections.LIVE:
                continue  # an earlier write of this batch retired it already
            if f.action == "supersede":
                self.lifecycle.supersede_within(conn, old, new_id, f"detected: {f.why}", allow_unsafe=False, auto=True)
                copies.extend(self.follow_copies(conn, old, new_id, made, time.time()))
            else:
                links.append(old)
        if links:
            # An untrusted writer's contradiction warns without demoting (as relate() does).
            src = source if source is not None else effective_source(*conn.memories.source_of(new_id))
            effect = int(policy.SOURCE_TRUST[src] != policy.UNTRUSTED)
            now = time.time()
            conn.relations.add_many([(new_id, old, "contradicts", effect, now) for old in links])
        return copies

    def follow_copies(self, conn, old: int, new: int, made: tuple[Prepared, np.ndarray, list] | None,
                      now: float) -> Copies:
        """After ``new`` superseded ``old`` (caller holds the write transaction): a team copy of
        ``old`` that still says what ``old`` said becomes a new version in its team scope with
        ``new``'s text (``made``: its prepared row, vector and chunk plan), derived_from ``new``. A
        copy its team changed since is the team's word: kept, marked stale (recall warns of it)."""
        copies = Copies()
        heads = self.lifecycle.team_copies(conn, old)
        if not heads:
            return copies
        old_hash = conn.memories.load([old])[old].content_hash
        stale = []
        for head in heads:
            if made is not None and head.content_hash == made[0].hash:
                continue  # its team already wrote the new text
            q = None if made is None or head.content_hash != old_hash else _team_version(made[0], head, new)
            if q is None or self.find_duplicate(conn, q) is not None:
                stale.append(head)
                copies.kept.append((head.id, head.scope, f"mem_{new}"))
                continue
            assert made is not None, "a copy follows only the prepared new text"
            cid = self.insert(conn, q, made[1], now)
            self.after_insert_many(conn, [(cid, q, made[2], None, None)], now)
            self.lifecycle.supersede_within(conn, parse_id(head.id), cid, f"its original was replaced by mem_{new}",
                                            allow_unsafe=True, auto=True)
            conn.relations.add(cid, new, "derived_from", 0, now)
            copies.followed.append((head.id, head.scope, f"mem_{cid}"))
            # A copy shared on from the team copy follows in turn (a scope that holds the text already stops it).
            copies.extend(self.follow_copies(conn, parse_id(head.id), cid, (q, made[1], made[2]), now))
        self.lifecycle.mark_stale(conn, stale, new, now)
        return copies

    def remember_many(self, items: Iterable[dict], *, progress: Progress | None = None) -> list[Memory]:
        """Store many memories in one transaction with one embedding batch. All or nothing.

        Each item takes the keyword arguments of :meth:`remember` (``content`` required).
        Duplicates (of stored memories or within the batch) come back with ``duplicate_of``.
        """
        self.core.live()
        prepared: list[Prepared] = []
        extras: list[tuple[str | None, list[int] | None]] = []
        for n, item in enumerate(items):
            if not isinstance(item, dict):
                raise InvalidInputError(f"Item {n} is not a dict of remember() arguments.")
            if not ITEM_FIELDS.issuperset(item):
                raise InvalidInputError(f"Item {n} has unknown fields: {', '.join(sorted(set(item) - ITEM_FIELDS))}.")
            try:
                category, cites = item.get("category"), item.get("cites")
                extras.append((None if category is None else check_category(category),
                               None if cites is None else [parse_id(c) for c in cites]))
                if "category" not in item and "cites" not in item:
                    prepared.append(self.prepare(**item))
                else:
                    prepared.append(self.prepare(**{k: v for k, v in item.items() if k not in ("category", "cites")}))
            except InvalidInputError as exc:
                raise type(exc)(f"Item {n}: {exc}") from None
        if not prepared:
            return []
        with self.core.store.reading() as conn:
            existing = dict(enumerate(self.find_duplicates(conn, prepared)))
            mark = self.core.store.write_mark()
        first_of: dict[tuple[str, str], int] = {}
        to_embed: list[int] = []
        for i, p in enumerate(prepared):
            key = (p.key, p.scope)
            if existing[i] is None and key not in first_of:
                first_of[key] = i
                to_embed.append(i)
        vecs = self.core.embed([prepared[i].embed_text for i in to_embed])
        vec_of = dict(zip(to_embed, vecs))
        plan_of = dict(zip(to_embed, self.turns.chunk_plans([prepared[i] for i in to_embed])))
        ids: list[tuple[int, bool]] = []
        now = time.time()
        with self.core.store.transaction(concurrent=True) as conn:
            # Another thread or process may have stored some of them since: check again, in
            # one query (the batch itself holds no two first occurrences of one key), unless
            # nothing at all was written to the file since the first check.
            if self.core.store.write_mark() == mark:
                late = dict.fromkeys(to_embed)
            else:
                late = dict(zip(to_embed, self.find_duplicates(conn, [prepared[i] for i in to_embed])))
            fresh = [i for i in to_embed if late[i] is None]
            found_of = dict(zip(fresh, self.find_corrections(conn, [(prepared[i], vec_of[i]) for i in fresh])))
            new_ids = dict(zip(fresh, self.insert_many(conn, [(prepared[i], vec_of[i], None) for i in fresh], now)))
            episodes = self.after_insert_many(
                conn, [(new_ids[i], prepared[i], plan_of[i], *extras[i]) for i in fresh], now)
            lock_in_id_order(conn, list(found_of.values()))
            copies_of = {i: self.apply_corrections(conn, new_ids[i], found_of[i], batch=new_ids, source=new_source(prepared[i]),
                                                   made=(prepared[i], vec_of[i], plan_of[i])) for i in fresh}
            for i, p in enumerate(prepared):
                if i in new_ids:
                    ids.append((new_ids[i], False))
                elif i in vec_of:
                    late_id = late[i]
                    assert late_id is not None, "embedded but not inserted: not fresh, so found late"
                    ids.append((late_id, True))
                else:
                    dup = existing[i] if existing[i] is not None else new_ids.get(first_of[(p.key, p.scope)])
                    if dup is None:
                        dup = self.find_duplicate(conn, p)
                    # Its first occurrence in the batch was found late, in this same transaction.
                    assert dup is not None, "a repeat whose first occurrence is stored"
                    ids.append((dup, True))
                if progress:
                    progress(i + 1, len(prepared))
            # New memories are built from what was written; only duplicates, and new ones a later
            # item of the batch superseded, are read back.
            retired = {new_ids[-f.old_id - 1] for fs in found_of.values() for f in fs
                       if f.old_id < 0 and f.action == "supersede" and -f.old_id - 1 in new_ids}
            loaded = conn.memories.load(sorted({mid for mid, is_dup in ids if is_dup} | retired))
        at = ts(now)
        for i, mid in new_ids.items():
            m = loaded[mid] if mid in retired else new_memory(mid, prepared[i], at, episodes.get(mid), extras[i][0])
            loaded[mid] = _with_copies(_with_corrections(m, found_of[i], new_ids), copies_of[i])
        out = []
        handed: set[int] = set()
        for mid, is_dup in ids:
            if is_dup:
                m = _sent_again(loaded[mid].model_copy())
            else:  # a new memory comes back once as itself; a duplicate of it gets a copy
                m = loaded[mid] if mid not in handed else loaded[mid].model_copy()
                handed.add(mid)
            out.append(m)
        return out

    def retitle(self, p: Any, title: str) -> None:
        """Give a prepared memory another title, with the token count and embedding text that follow."""
        limit = self.core.limits.max_title_chars
        p.title = title if len(title) <= limit else title[: limit - 1].rstrip() + "…"
        p.tokens = estimate_tokens(p.content) + estimate_tokens(p.title)
        p.embed_text = embedding_text(p.title, p.content)


def new_source(p: Prepared) -> str:
    """A prepared memory's effective source (trust), as it will be stored."""
    return effective_source(p.source.type, json.dumps(p.metadata))


def lock_in_id_order(conn, founds: Sequence[list[corrections.Finding]]) -> None:
    """Lock every stored memory these findings change, at once and in id order (states_of), before
    any is read on its own: two concurrent writers correcting the same two memories, nearest first
    and so in opposite orders, otherwise each locked one and waited for the other (a deadlock, seen
    with 8 writers on PostgreSQL). A memory of the batch itself is this transaction's own row."""
    olds = sorted({f.old_id for found in founds for f in found if f.old_id > 0})
    if len(olds) > 1:
        conn.memories.states_of(olds)


def _sent_again(m: Memory) -> Memory:
    """A write whose text is already stored returns that memory, saying so if it was superseded."""
    m.duplicate_of = m.id
    if m.status == "superseded":
        m.correction = (f"the same text is {m.id}, superseded by {m.superseded_by}: nothing stored; "
                        f"if it holds again, restore {m.id}")
    return m


def _with_corrections(m: Memory, found: list[corrections.Finding], batch: dict[int, int] | None = None) -> Memory:
    """The memory a write returns, with what it superseded or contradicts and the line saying so."""
    if not found:
        return m
    def name(f: corrections.Finding) -> corrections.Finding:  # batch positions -> ids
        if f.old_id > 0:
            return f
        return dataclasses.replace(f, old_id=(batch or {}).get(-f.old_id - 1, 0))
    found = [g for g in map(name, found) if g.old_id > 0]
    m.supersedes = [f"mem_{f.old_id}" for f in found if f.action == "supersede"] or None
    m.conflicts_with = [f"mem_{f.old_id}" for f in found if f.action == "contradict"] or None
    m.correction = corrections.note(m.id, found)
    return m


def _team_version(p: Prepared, head: Memory, new: int) -> Prepared:
    """The next version of a team copy: the new original's text in the copy's scope and session,
    its version metadata carried on (the stale note and reasons dropped), derived from ``new``."""
    meta = {k: v for k, v in head.metadata.items()
            if not k.endswith("_reason") and k not in (policy.STALE_COPY_KEY, "flagged")}
    meta.update({"version": int(head.metadata.get("version", 1)) + 1, "previous_id": head.id,
                 "shared_from": {"id": f"mem_{new}", "scope": p.scope}})
    if p.metadata.get("flagged"):
        meta["flagged"] = p.metadata["flagged"]
    return Prepared(type=p.type, title=p.title, content=p.content, status=p.status, source=p.source, scope=head.scope,
                    session=head.session, tags=p.tags, metadata=meta, confidence=p.confidence, importance=p.importance,
                    hash=p.hash, tokens=p.tokens, embed_text=p.embed_text, valid_until=p.valid_until, redactions=[])


def _with_copies(m: Memory, copies: Copies) -> Memory:
    """The memory a write returns, with the team copies that followed it or were kept, said in its line."""
    if not copies.followed and not copies.kept:
        return m
    m.team_copies = [n for _, _, n in copies.followed] or None
    m.stale_copies = [c for c, _, _ in copies.kept] or None
    parts = [f"team copy {c} in {scope} follows as {n}" for c, scope, n in copies.followed]
    parts += [f"team copy {c} in {scope} kept as its team changed it; it warns that {n} replaced its original"
              for c, scope, n in copies.kept]
    m.correction = "; ".join([m.correction, *parts] if m.correction else parts)
    return m
