"""The lifecycle of stored memories: status transitions (validate, activate, deprecate,
supersede and its undo, settling a conflict), relations between memories, and deletion
(forget, with the tombstones readers replay). Every change is one transaction and checks who
asks (policy.check_actor).

May import the plumbing, the turn store (what deleting a turn leaves behind), the catalog
(reading memories back), policy, storage, models and validation; never the write path, another
service or the facade.
"""

from __future__ import annotations

import json
import time
from typing import Any

from recallite_core.catalog import Catalog
from recallite_core.conversation.episodes import check_orphans
from recallite_core.conversation.turns import TurnStore
from recallite_core.errors import (
    InvalidInputError,
    InvalidTransitionError,
    MemoryNotFoundError,
    StoreError,
    TrustPolicyError,
)
from recallite_core.models import RELATION_TYPES, ForgetResult, Memory, Relation, RelationCounts
from recallite_core.plumbing import Plumbing
from recallite_core.policy import rules as policy
from recallite_core.policy.trust import is_flagged
from recallite_core.storage.codec import ts
from recallite_core.text.redaction import redact_text
from recallite_core.text.validation import check_source, clean_text, fmt_id, parse_id


class Lifecycle:
    """Status changes, relations and deletion."""

    def __init__(self, core: Plumbing, catalog: Catalog, turns: TurnStore):
        self.core = core
        self.catalog = catalog
        self.turns = turns

    # -- lifecycle --------------------------------------------------------------------------------------------------
    def _transition(self, memory_id, new_status: str, *, allow_unsafe: bool = False, reason: str | None = None,
                    by: Any = None) -> Memory:
        self.core.live()
        mid = parse_id(memory_id)
        actor = None if by is None else check_source(by)
        with self.core.store.transaction() as conn:
            row = conn.memories.state(mid)
            if row is None:
                raise MemoryNotFoundError(f"No memory mem_{mid}.")
            status, source_type, conf, metadata = row
            if actor is not None and not allow_unsafe:
                policy.check_actor(actor.type, new_status, effective_source(source_type, metadata), f"mem_{mid}",
                                   flagged=is_flagged(metadata))
            policy.check_transition(status, new_status, source_type, allow_unsafe)
            if new_status in ("validated", "active") and status in ("candidate", "deprecated"):
                conf = policy.confidence_after_validation(conf)
            meta = json.loads(metadata)
            if reason:
                meta[f"{new_status}_reason"] = check_optional_reason(reason)
            now = time.time()
            # Trust decays from the last validation.
            validated_at = now if new_status in ("validated", "active") else None
            conn.memories.set_status(mid, new_status, conf, json.dumps(meta, ensure_ascii=False), now, validated_at)
        return self.catalog.get(mid)

    # ``by`` (a source like ``"llm"`` or ``{"type": "agent", "id": ...}``) names who asks for a
    # lifecycle change; an untrusted actor may not retire or promote what it did not write
    # (policy.check_actor) unless ``allow_unsafe``. ``None``: the caller (you) is trusted.
    def validate(self, memory_id: str | int, reason: str | None = None, *, by: Any = None, allow_unsafe: bool = False) -> Memory:
        """Confirm a candidate (raises its confidence)."""
        return self._transition(memory_id, "validated", reason=reason, by=by, allow_unsafe=allow_unsafe)

    def activate(self, memory_id: str | int, reason: str | None = None, allow_unsafe: bool = False, *, by: Any = None) -> Memory:
        """Put a memory in force. Untrusted candidates must be validated first."""
        return self._transition(memory_id, "active", allow_unsafe=allow_unsafe, reason=reason, by=by)

    def deprecate(self, memory_id: str | int, reason: str | None = None, *, by: Any = None, allow_unsafe: bool = False) -> Memory:
        """Retire a memory: it leaves default recall but stays on record. An untrusted ``by``
        cannot deprecate a memory from a trusted or medium source without ``allow_unsafe``."""
        return self._transition(memory_id, "deprecated", reason=reason, by=by, allow_unsafe=allow_unsafe)

    def supersede(self, old_id: str | int, new_id: str | int, *, reason: str | None = None, allow_unsafe: bool = False,
                  by: Any = None) -> Memory:
        """Replace ``old_id`` by ``new_id``: the old one becomes superseded and points at the new one."""
        self.core.live()
        old, new = parse_id(old_id), parse_id(new_id)
        if old == new:
            raise InvalidInputError("A memory cannot supersede itself.")
        actor = None if by is None else check_source(by)
        with self.core.store.transaction() as conn:
            if actor is not None and not allow_unsafe:
                row = conn.memories.source_of(old)
                if row is not None:
                    policy.check_actor(actor.type, "superseded", effective_source(*row), f"mem_{old}")
            self.supersede_within(conn, old, new, reason, allow_unsafe)
            self.mark_stale(conn, self.team_copies(conn, old), new, time.time())
        return self.catalog.get(old)

    def supersede_within(self, conn, old: int, new: int, reason: str | None, allow_unsafe: bool, auto: bool = False) -> None:
        rows = {r[0]: r for r in conn.memories.states_of([old, new])}
        for i in (old, new):
            if i not in rows:
                raise MemoryNotFoundError(f"No memory mem_{i}.")
        _, old_status, old_src, meta = rows[old]
        _, new_status, new_src, new_meta = rows[new]
        if new_status in ("deprecated", "superseded"):
            raise InvalidTransitionError(f"mem_{new} is {new_status}; a retired memory cannot replace another.")
        if (
            policy.SOURCE_TRUST[effective_source(new_src, new_meta)] == policy.UNTRUSTED
            and policy.SOURCE_TRUST[old_src] != policy.UNTRUSTED
            and not allow_unsafe
        ):
            why = (f"comes from an untrusted source ({new_src})" if policy.SOURCE_TRUST[new_src] == policy.UNTRUSTED
                   else "is flagged as instruction-like text")
            raise TrustPolicyError(
                f"mem_{new} {why} and cannot replace mem_{old} "
                f"(from {old_src}). Validate it by a trusted source first, or pass allow_unsafe."
            )
        policy.check_transition(old_status, "superseded", old_src, True)
        m = json.loads(meta)
        if reason:
            m["superseded_reason"] = reason if auto else check_optional_reason(reason)
        m["superseded_from"] = old_status  # what undo_supersede restores
        now = time.time()
        conn.memories.mark_superseded(old, new, json.dumps(m, ensure_ascii=False), now)
        conn.relations.add(new, old, "supersedes", 0, now)

    # -- team copies (share) ------------------------------------------------------------------------------------------
    def team_copies(self, conn, old: int) -> list[Memory]:
        """The team copies of ``old`` or of a version before it, as they stand: the newest version
        of each (its team may have revised it), live ones only, in id order. share() links a copy
        derived_from its original and names the original in metadata shared_from."""
        chain = conn.memories.versions(old)[0]
        members = set(chain)
        sources = sorted({a for a, b, _ in conn.relations.edges(chain, ("derived_from",)) if b in members and a not in members})
        if not sources:
            return []
        names = {f"mem_{i}" for i in chain}
        home = {m.scope for m in conn.memories.load(chain[-1:]).values()}
        heads = set()
        for mid, m in conn.memories.load(sources).items():
            shared = m.metadata.get("shared_from")
            # the id in metadata is not renumbered by a restore into a store with other memories; the
            # derived_from link is, and the original's scope stays
            if isinstance(shared, dict) and (shared.get("id") in names or shared.get("scope") in home):
                newer = conn.memories.versions(mid)[1]
                heads.add(newer[-1] if newer else mid)
        # Locked (PostgreSQL: in id order, as corrections lock what they change) before they are read
        # to be changed: a concurrent write sees what this one did to them.
        conn.memories.states_of(sorted(heads))
        found = conn.memories.load(sorted(heads))
        return [found[i] for i in sorted(found) if found[i].status in policy.DEFAULT_RECALL_STATUSES]

    def mark_stale(self, conn, copies: list[Memory], new: int, now: float) -> None:
        """Note on each team copy that its original was replaced by ``new``: recall warns of it."""
        for m in copies:
            meta = {**m.metadata, policy.STALE_COPY_KEY: f"mem_{new}"}
            conn.memories.set_metadata(parse_id(m.id), json.dumps(meta, ensure_ascii=False), now)

    def _clear_stale(self, conn, copy: int, original: int) -> int:
        """Take the stale note naming ``original`` off a team copy (keep_both): 1 if it had one."""
        row = conn.memories.state(copy)
        meta = json.loads(row[3]) if row is not None else {}
        if meta.get(policy.STALE_COPY_KEY) != f"mem_{original}":
            return 0
        del meta[policy.STALE_COPY_KEY]
        conn.memories.set_metadata(copy, json.dumps(meta, ensure_ascii=False), time.time())
        return 1

    # -- relations ----------------------------------------------------------------------------------------------------
    def relate(self, from_id: str | int, to_id: str | int, relation: str, *, allow_unsafe: bool = False) -> Relation:
        """Link two memories: contradicts, supports, derived_from, supersedes, causes, requires.

        supports/derived_from raise the target's confidence and contradicts lowers both, unless
        the source memory is untrusted (then the link is kept without that effect).
        ``from supersedes to`` also retires ``to``. Linking twice returns the existing link.
        A pair cannot both support and contradict (either way round): ``contradicts`` replaces a
        ``supports`` link between them (listed in ``replaced``), and ``supports`` is refused while
        they are linked as contradicting (resolve_conflict ends a conflict).
        """
        self.core.live()
        if relation not in RELATION_TYPES:
            raise InvalidInputError(f"Unknown relation {relation!r}. Use one of: {', '.join(RELATION_TYPES)}.")
        a, b = parse_id(from_id), parse_id(to_id)
        if a == b:
            raise InvalidInputError("A memory cannot be related to itself; name two different memories.")
        with self.core.store.transaction(concurrent=True) as conn:
            rows = {r[0]: r for r in conn.memories.link_ends([a, b])}
            for i in (a, b):
                if i not in rows:
                    raise MemoryNotFoundError(f"No memory mem_{i}.")
            existing = conn.relations.find(a, b, relation)
            if existing is not None:
                return self._relation(conn, existing)
            replaced = self._settle_opposite(conn, a, b, relation)
            if relation == "supersedes":
                self.supersede_within(conn, b, a, None, allow_unsafe)
                self.mark_stale(conn, self.team_copies(conn, b), a, time.time())
                rid = conn.relations.find(a, b, "supersedes")
                assert rid is not None, "supersede_within just linked a supersedes b"
                return self._relation(conn, rid)
            _, a_src, a_sid, a_conf, a_meta = rows[a]
            _, b_src, b_sid, b_conf, _ = rows[b]
            # A flagged (instruction-like) memory is as untrusted as an llm one.
            untrusted = policy.SOURCE_TRUST[effective_source(a_src, a_meta)] == policy.UNTRUSTED
            self_endorsed = a_src == b_src and a_sid == b_sid and policy.SOURCE_TRUST[a_src] != policy.TRUSTED
            effect = allow_unsafe or not (untrusted or (relation in ("supports", "derived_from") and self_endorsed))
            now = time.time()
            if effect and relation in ("supports", "derived_from"):
                conn.memories.set_confidence(b, policy.confidence_after_support(b_conf, a_conf), now)
            elif effect and relation == "contradicts":
                for mid, c in ((a, a_conf), (b, b_conf)):
                    conn.memories.set_confidence(mid, policy.confidence_after_contradiction(c), now)
            rid = conn.relations.create(a, b, relation, int(effect and relation in ("supports", "derived_from", "contradicts")),
                                        now)
            return self._relation(conn, rid).model_copy(update={"replaced": replaced})

    @staticmethod
    def _settle_opposite(conn, a: int, b: int, relation: str) -> list[str]:
        """Keep one side of support/contradiction per pair of memories (either direction): a new
        contradiction removes the supports links, as the newer word and the one that warns; a new
        support while they contradict is refused, since ending a conflict clears both warnings and
        resolve_conflict checks who may do that. Returns the links removed ("rel_1: mem_1 supports mem_2")."""
        if relation == "supports":
            for x, y in ((a, b), (b, a)):
                rid = conn.relations.find(x, y, "contradicts")
                if rid is not None:
                    raise InvalidInputError(
                        f"mem_{x} contradicts mem_{y} ({fmt_id('rel', rid)}), so mem_{a} cannot also support mem_{b}. "
                        "If both hold, end the conflict first (keep both: recallite_update action=keep_both, or "
                        "recallite-mcp resolve --keep both), then link again. Nothing was linked.")
            return []
        removed = []
        if relation == "contradicts":
            for x, y in ((a, b), (b, a)):
                rid = conn.relations.find(x, y, "supports")
                if rid is not None and conn.relations.remove(x, y, "supports"):
                    removed.append(f"{fmt_id('rel', rid)}: mem_{x} supports mem_{y}")
        return removed

    def _relation(self, conn, rid: int) -> Relation:
        a, b, t, eff, created = conn.relations.get(rid)
        return Relation(id=fmt_id("rel", rid), from_id=f"mem_{a}", to_id=f"mem_{b}", type=t,
                        confidence_effect=bool(eff), created_at=ts(created))

    def relations(self, memory_id: str | int) -> list[Relation]:
        self.core.live()
        mid = parse_id(memory_id)
        with self.core.store.reading() as conn:
            ids = conn.relations.of_memory(mid)
            return [self._relation(conn, r) for r in ids]

    def relation_counts(self, memory_id: str | int) -> RelationCounts:
        self.core.live()
        mid = parse_id(memory_id)
        with self.core.store.reading() as conn:
            confidence = conn.memories.confidence_of(mid)
            if confidence is None:
                raise MemoryNotFoundError(f"No memory mem_{mid}.")
            evidence, contra = conn.relations.evidence_counts(mid)
        return RelationCounts(id=f"mem_{mid}", evidence_count=evidence, contradiction_count=contra, confidence=confidence)

    # -- deletion ---------------------------------------------------------------------------------------------------------
    def forget(self, memory_id: str | int, *, vacuum: bool = False, orphans: str = "report") -> ForgetResult:
        """Hard-delete a memory with its vector, FTS entry, relations, retrieval items and outcomes,
        its chunks and citations. The result is truthy and lists the memories that cited it and
        have no source left (``orphans="report"``), or deletes those too (``orphans="remove"``).
        The text of queries that surfaced it, and reasons given in feedback on them, are blanked
        in the retrieval log (they may quote it).

        ``vacuum=True`` also rewrites the file so the deleted text is gone from disk.
        """
        self.core.live()
        mid = parse_id(memory_id)
        check_orphans(orphans)
        with self.core.store.transaction() as conn:
            before = self.turns.before_forget(conn, mid)
            if not conn.memories.delete(mid):
                raise MemoryNotFoundError(f"No memory mem_{mid}.")
            result = self.turns.after_forget(conn, mid, before, orphans)
            self.prune_tombstones(conn)
        if vacuum:
            try:
                self.vacuum()
            except StoreError as exc:
                raise StoreError(
                    f"mem_{mid} was deleted, but the file could not be rewritten yet ({exc}) Its text stays in free "
                    "pages until a vacuum succeeds: run `recallite-mcp vacuum` when the other clients are idle."
                ) from exc
        return result

    def vacuum(self) -> None:
        """Merge the FTS index and rewrite the file, so deleted text leaves the disk."""
        self.core.live()
        with self.core.store.transaction() as conn:
            conn.keywords.optimize()
        if not self.core.store.vacuum():
            # The rewritten pages sit in the WAL; the old ones (deleted text included) stay in the
            # main file until a checkpoint can run, which waits for other processes' readers.
            raise StoreError(
                f"{self.core.store.path}: another process is reading the file, so the rewritten pages could not be "
                "copied into it yet. Retry when the other clients are idle."
            )

    def prune_tombstones(self, conn) -> None:
        conn.feed.prune_tombstones(self.core.config.max_tombstones)

    def undo_supersede(self, memory_id: str | int, *, by: Any = None) -> Memory:
        """Undo a supersede (detected or by hand): the memory returns to the status it had, its
        ``superseded_by`` and the supersedes link are removed. Returns it. ``by``: who asks, checked
        like any lifecycle change (an untrusted actor cannot put a memory back in force)."""
        self.core.live()
        mid = parse_id(memory_id)
        actor = None if by is None else check_source(by)
        with self.core.store.transaction() as conn:
            row = conn.memories.supersede_state(mid)
            if row is None:
                raise MemoryNotFoundError(f"No memory mem_{mid}.")
            status, by_id, meta, source_type = row
            if status != "superseded":
                raise InvalidTransitionError(f"mem_{mid} is {status}, not superseded; nothing to undo.")
            m = json.loads(meta)
            back = m.pop("superseded_from", "active")
            if actor is not None:
                policy.check_actor(actor.type, back, effective_source(source_type, meta), f"mem_{mid}")
            m.pop("superseded_reason", None)
            now = time.time()
            conn.memories.restore_status(mid, back, json.dumps(m, ensure_ascii=False), now)
            if by_id is not None:
                conn.relations.remove(by_id, mid, "supersedes")
                self.unfollow(conn, by_id, now)
                for copy in self.team_copies(conn, mid):  # a copy its team had changed: no longer stale
                    self._clear_stale(conn, parse_id(copy.id), by_id)
        return self.catalog.get(mid)

    def unfollow(self, conn, new: int, now: float) -> None:
        """Undo what a supersede by ``new`` did to team copies (the write that superseded made each
        copy its team had not changed follow as a new version derived from ``new``): each such
        version is retired and the copy it replaced is back, and so on down copies shared on."""
        versions = [a for a, b, _ in conn.relations.edges([new], ("derived_from",)) if b == new]
        for cid in versions:
            replaced = [b for a, b, _ in conn.relations.edges([cid], ("supersedes",)) if a == cid]
            for head in replaced:
                row = conn.memories.state(head)
                meta = json.loads(row[3]) if row is not None else {}
                if row is None or meta.get("superseded_reason") != f"its original was replaced by mem_{new}":
                    continue  # a version its team wrote, not one that followed
                self.unfollow(conn, cid, now)
                back = meta.pop("superseded_from", "active")
                meta.pop("superseded_reason", None)
                conn.memories.restore_status(head, back, json.dumps(meta, ensure_ascii=False), now)
                conn.relations.remove(cid, head, "supersedes")
                row = conn.memories.state(cid)
                cmeta = json.loads(row[3]) if row is not None else {}
                cmeta["deprecated_reason"] = f"its original's replacement mem_{new} was undone; mem_{head} holds again"
                conn.memories.restore_status(cid, "deprecated", json.dumps(cmeta, ensure_ascii=False), now)

    def resolve_conflict(self, memory_id: str | int, other_id: str | int, keep: str | int = "both", *,
                         by: Any = None) -> list[Memory]:
        """Settle a contradiction between two memories: ``keep`` names the one that holds (the other
        is superseded by it), or ``"both"`` when they state different things (the link is removed,
        with the warnings it gave; for a team copy whose original was replaced by the other, its
        stale warning). Returns both memories."""
        self.core.live()
        a, b = parse_id(memory_id), parse_id(other_id)
        if keep == "both":
            if by is not None:  # ending a conflict clears both warnings: it vouches, like validate
                policy.check_actor(check_source(by).type, "validated", "user", f"mem_{a} and mem_{b}")
            with self.core.store.transaction() as conn:
                gone = conn.relations.remove(a, b, "contradicts") + conn.relations.remove(b, a, "contradicts")
                gone += self._clear_stale(conn, a, b) + self._clear_stale(conn, b, a)  # a team copy keeps its text
            if not gone:
                raise InvalidInputError(f"mem_{a} and mem_{b} are not linked as contradicting; nothing to resolve.")
            return self.catalog.get_many([a, b])
        winner = parse_id(keep)
        if winner not in (a, b):
            raise InvalidInputError(f"keep must be 'both', mem_{a} or mem_{b}.")
        loser = b if winner == a else a
        self.supersede(loser, winner, reason="conflict resolved", by=by)
        return self.catalog.get_many([a, b])


def check_optional_reason(reason: Any) -> str:
    """A lifecycle reason: one or two sentences, secrets redacted."""
    text = clean_text(reason, "reason").strip()
    if len(text) > 2000:
        raise InvalidInputError("reason is longer than 2000 characters; keep it to a sentence or two.")
    return redact_text(text)[0]


def effective_source(source_type: str, metadata: str | None) -> str:
    """The source type a memory is trusted as: a flagged memory counts as ``llm`` (untrusted)."""
    if is_flagged(metadata):
        return "llm" if policy.SOURCE_TRUST[source_type] != policy.UNTRUSTED else source_type
    return source_type

