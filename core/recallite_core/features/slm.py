"""SLM-Lite features on stored memories: trust scores, team scopes and sharing, expiry,
immutable versions (revise, history), the belief graph's one-hop expansion, behaviour capture
(a bounded queue and one writer thread) and concept extraction; plus the recall hooks the
search applies (team scopes, expiry). Working memory is in working_layer.py; ``beliefs`` and
``auto_context`` (which recall) are in search.py.

May import the plumbing, the write path, the lifecycle, the catalog, policy, behavior,
beliefs, concepts, trust, storage, models and validation; never the search, the facade or
another service.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Sequence

from recallite_core.catalog import Catalog
from recallite_core.errors import InvalidInputError, InvalidTransitionError, MemoryNotFoundError
from recallite_core.features.beliefs import walk
from recallite_core.learning.behavior import BEHAVIOR_KINDS, BEHAVIOR_OUTCOMES, BehaviorEvent, BehaviorRecorder
from recallite_core.models import Concepts, Memory, RecallHit, ScoreBreakdown
from recallite_core.plumbing import Plumbing
from recallite_core.policy import rules as policy
from recallite_core.policy.lifecycle import Lifecycle
from recallite_core.policy.trust import trust_scores
from recallite_core.storage.fts import fts_query
from recallite_core.text.concepts import extract_concepts, summarize
from recallite_core.text.validation import (
    check_content,
    check_optional_name,
    check_scope,
    check_source,
    content_hash,
    derive_title,
    parse_id,
)
from recallite_core.writer import Writer

if TYPE_CHECKING:
    from recallite_core.retrieval.candidates import RecallFilter

log = logging.getLogger("recallite.slm")

Summarizer = Callable[[str], "Concepts | None"]


class SlmFeatures:
    """Trust, teams, expiry, versions, belief expansion, behaviour capture and concepts."""

    def __init__(self, core: Plumbing, catalog: Catalog, writer: Writer, lifecycle: Lifecycle,
                 behavior_writer: Callable[[BehaviorEvent], None] | None = None):
        self.core = core
        self.catalog = catalog
        self.writer = writer
        self.lifecycle = lifecycle
        # Who writes a behaviour event on the recorder's thread (default: write_behavior).
        self.behavior_writer = behavior_writer or self.write_behavior
        self._lock = threading.Lock()
        self._recorder: BehaviorRecorder | None = None

    def recorder(self) -> BehaviorRecorder:
        """The behaviour queue and its writer thread, started on first use."""
        if self._recorder is None:
            with self._lock:
                if self._recorder is None:
                    self._recorder = BehaviorRecorder(self.behavior_writer, self.core.config.behavior_queue_size)
        return self._recorder

    def close(self) -> None:
        """Drain queued behaviour events (called before the store closes)."""
        if self._recorder is not None:
            self._recorder.close()

    # == trust ===========================================================================================================
    def trust(self, memory_ids: Sequence[str | int]) -> dict[str, float]:
        """Trust score in [0.1, 1] of each memory (see policy.trust_score), computed now."""
        self.core.live()
        ids = [parse_id(i) for i in memory_ids]
        with self.core.store.reading() as conn:
            scores = trust_scores(conn, ids, half_life_days=self.core.config.trust_half_life_days)
        missing = [f"mem_{i}" for i in ids if i not in scores]
        if missing:
            raise MemoryNotFoundError(f"No memory {', '.join(missing)}.")
        return {f"mem_{i}": scores[i] for i in ids}

    # == teams ===========================================================================================================
    def join_team(self, scope: str, team_scope: str) -> list[str]:
        """Make ``scope`` a member of ``team_scope``: recall with include_teams searches both.
        Returns the scope's team scopes."""
        self.core.live()
        s, t = self._team_pair(scope, team_scope)
        with self.core.store.transaction() as conn:
            conn.teams.join(s, t, time.time())
        return self.teams(s)

    def leave_team(self, scope: str, team_scope: str) -> list[str]:
        self.core.live()
        s, t = self._team_pair(scope, team_scope)
        with self.core.store.transaction() as conn:
            conn.teams.leave(s, t)
        return self.teams(s)

    def teams(self, scope: str) -> list[str]:
        """The team scopes ``scope`` belongs to."""
        self.core.live()
        s = check_scope(scope, self.core.limits, self.core.config.default_scope)
        with self.core.store.reading() as conn:
            return conn.teams.of_scopes([s])

    def _team_pair(self, scope: str, team_scope: str) -> tuple[str, str]:
        s = check_scope(scope, self.core.limits, self.core.config.default_scope)
        if not isinstance(team_scope, str) or not team_scope.strip():
            # check_scope reads an empty name as the default scope: the team would be every unscoped memory
            raise InvalidInputError("team_scope is empty: name the team scope, e.g. team-web.")
        t = check_scope(team_scope, self.core.limits, self.core.config.default_scope)
        if s == t:
            raise InvalidInputError("A scope cannot be its own team; name a separate team scope.")
        return s, t

    def team_scopes(self, scopes: tuple[str, ...] | None) -> tuple[str, ...] | None:
        if scopes is None:
            return None
        with self.core.store.reading() as conn:
            teams = conn.teams.of_scopes(scopes)
        return tuple(dict.fromkeys([*scopes, *teams]))

    def share(self, memory_id: str | int, team_scope: str, *, join: bool = True) -> Memory:
        """Copy a memory from its (private) scope into ``team_scope``, linked ``derived_from`` the
        original (metadata ``shared_from``). The copy keeps type, title, tags, source and status
        policy; the original stays private. ``join`` (default) also makes the original's scope a
        member of the team, so its recall with include_teams sees the team's memories."""
        self.core.live()
        m = self.catalog.get(memory_id)
        s, t = self._team_pair(m.scope, team_scope)
        if m.status in ("deprecated", "superseded"):
            raise InvalidTransitionError(f"{m.id} is {m.status}; share a live memory.")
        meta = {**m.metadata, "shared_from": {"id": m.id, "scope": s}}
        copy = self.writer.remember(
            m.content, type=m.type, title=m.title, source=m.source.model_dump(), tags=m.tags, metadata=meta,
            importance=m.importance, scope=t, valid_until=m.valid_until,
        )
        if copy.duplicate_of is None:
            with self.core.store.transaction() as conn:
                conn.relations.add(parse_id(copy.id), parse_id(m.id), "derived_from", 0, time.time())
        if join:
            self.join_team(s, t)
        return copy

    # == expiry ==========================================================================================================
    def clean_expired(self, action: str = "deprecate", *, scope: str | Sequence[str] | None = None,
                      now: float | None = None) -> list[str]:
        """Retire memories past their ``valid_until``: ``deprecate`` (default; they stay on record,
        reason "expired") or ``delete`` (hard delete, like forget). Returns the ids handled."""
        self.core.live()
        if action not in ("deprecate", "delete"):
            raise InvalidInputError("action must be 'deprecate' or 'delete'.")
        at = time.time() if now is None else float(now)
        flt = self.core.recall_filter(scope, None, policy.DEFAULT_RECALL_STATUSES if action == "deprecate" else
                           ("candidate", "validated", "active", "deprecated", "superseded"), None, None)
        with self.core.store.reading() as conn:
            ids = conn.memories.expired_among(flt.memory_filter(), at)
        if not ids:
            return []
        if action == "delete":
            with self.core.store.transaction() as conn:
                conn.memories.purge(ids)
                self.lifecycle.prune_tombstones(conn)
        else:
            with self.core.store.transaction() as conn:
                for mid in ids:
                    state = conn.memories.state(mid)
                    if state is None:  # deleted since the read above
                        continue
                    meta = json.loads(state[3])
                    meta["deprecated_reason"] = "expired"
                    conn.memories.mark_deprecated(mid, json.dumps(meta, ensure_ascii=False), at)
        return [f"mem_{i}" for i in ids]

    # == versions ========================================================================================================
    def revise(self, memory_id: str | int, new_content: str, *, title: str | None = None, source: Any = None,
               reason: str | None = None, tags: Sequence[str] | None = None, allow_unsafe: bool = False) -> Memory:
        """A new version of a memory. Versions are immutable: the new text becomes a new memory
        (same type, scope, session, tags, importance, expiry; metadata ``version`` and
        ``previous_id``) and the old one is marked superseded with ``superseded_by`` pointing at
        it. ``source`` defaults to the old version's. Team copies (share) follow in the same
        transaction: one that still says what the old version said gets the new text too (listed
        in ``team_copies``); one its team changed is kept and warns in recall (``stale_copies``);
        ``correction`` says which. Returns the new version."""
        self.core.live()
        old = self.catalog.get(memory_id)
        if old.status == "superseded":
            raise InvalidTransitionError(
                f"{old.id} is already superseded by {old.superseded_by}; revise the newest version "
                f"(history({old.id}) lists them).")
        text = check_content(new_content, self.core.limits)
        if content_hash(text) == old.content_hash:
            raise InvalidInputError("The new content is the same as the current version; nothing to revise.")
        # A revise by its team settles a team copy's stale note (policy.STALE_COPY_KEY).
        meta = {k: v for k, v in old.metadata.items() if not k.endswith("_reason") and k != policy.STALE_COPY_KEY}
        meta.update({"version": int(old.metadata.get("version", 1)) + 1, "previous_id": old.id})
        src = check_source(source) if source is not None else old.source
        new_title = title if title is not None else (None if old.title == derive_title(old.content) else old.title)
        return self.writer.replace(
            parse_id(old.id), reason or "revised", allow_unsafe,
            content=text, type=old.type, title=new_title, source=src.model_dump(), tags=old.tags if tags is None else tags,
            metadata=meta, importance=old.importance, scope=old.scope, session=old.session, valid_until=old.valid_until,
        )

    def history(self, memory_id: str | int) -> list[Memory]:
        """Every version of a memory, oldest first, from any version's id (follows superseded_by
        both ways)."""
        self.core.live()
        mid = parse_id(memory_id)
        with self.core.store.reading() as conn:
            if not conn.memories.exists(mid):
                raise MemoryNotFoundError(f"No memory mem_{mid}.")
            older, newer = conn.memories.versions(mid)
            chain = list(dict.fromkeys([*older, *newer]))
            found = conn.memories.load(chain)
        return [found[i] for i in chain if i in found]

    # == belief graph ====================================================================================================
    def belief_neighbours(self, hits: list[RecallHit], flt: "RecallFilter", limit: int,
                           min_trust: float | None = None) -> list[RecallHit]:
        """One hop along the belief graph from the stored hits; added after them, at most ``limit``."""
        seeds = {parse_id(h.memory.id): h.score for h in hits if h.memory.layer != "working"}
        if not seeds:
            return []
        with self.core.store.reading() as conn:
            reached, _ = walk(conn, seeds, depth=1, scopes=flt.scopes, valid_at=flt.valid_at)
            new = sorted((n for n in reached.values() if n.hops == 1), key=lambda n: (-n.confidence, n.id))
            mems = conn.memories.load([n.id for n in new])
            trust = trust_scores(conn, [n.id for n in new], half_life_days=self.core.config.trust_half_life_days)
        out: list[RecallHit] = []
        start = len(hits)
        for n in new:
            m = mems.get(n.id)
            if m is None or (flt.types is not None and m.type not in flt.types):
                continue
            if min_trust is not None and trust.get(n.id, 0.0) < min_trust:
                continue
            if len(out) >= limit:
                break
            out.append(RecallHit(
                memory=m, score=n.confidence, rank=start + len(out) + 1, trust=trust.get(n.id),
                reasons=["belief-expansion", f"{n.relation}:mem_{n.via}", f"{m.status}-memory"],
                breakdown=ScoreBreakdown(fusion=0.0, final=n.confidence),
            ))
        return out

    # == behaviour capture ===============================================================================================
    def capture_behavior(self, agent_id: str, kind: str, description: str, *, outcome: str | None = None,
                         tool: str | None = None, scope: str | None = None, context: str | None = None) -> bool:
        """Record an agent's behaviour without blocking: ``kind`` is tool_choice, error_recovery
        or success_pattern. Arguments are checked now; the write happens on a background thread
        (``flush()`` waits for it). Each distinct (kind, tool, description) in a scope becomes one
        procedural memory, source agent ``agent_id``, metadata ``behavioral: true``; repeats add to
        its ``occurrences`` and ``outcomes`` counts instead of duplicating it. Returns False if the
        queue was full and the event was dropped."""
        self.core.live()
        lim = self.core.limits
        if kind not in BEHAVIOR_KINDS:
            raise InvalidInputError(f"kind must be one of {', '.join(BEHAVIOR_KINDS)}, got {kind!r}.")
        if outcome is not None and outcome not in BEHAVIOR_OUTCOMES:
            raise InvalidInputError(f"outcome must be one of {', '.join(BEHAVIOR_OUTCOMES)}, got {outcome!r}.")
        agent = check_optional_name(agent_id, "agent_id", lim)
        if not agent:
            raise InvalidInputError("agent_id is required: name the agent whose behaviour this is.")
        desc = check_content(description, lim, "description")
        event = BehaviorEvent(
            agent_id=agent, kind=kind, description=desc, outcome=outcome,
            tool=check_optional_name(tool, "tool", lim), scope=check_scope(scope, lim, self.core.config.default_scope),
            context=None if context is None else check_content(context, lim, "context")[:2000],
        )
        return self.recorder().submit(event)

    def flush(self, timeout: float | None = 10.0) -> bool:
        """Wait until queued behaviour events are written. True if everything was written in time."""
        rec = self._recorder
        return True if rec is None else rec.flush(timeout)

    def behavior_stats(self) -> dict[str, int]:
        """Behaviour events queued, written, failed and dropped in this process, and still pending."""
        rec = self._recorder
        if rec is None:
            return {"queued": 0, "written": 0, "failed": 0, "dropped": 0, "pending": 0}
        return {**rec.counts, "pending": rec.pending()}

    def write_behavior(self, ev: BehaviorEvent) -> None:
        if self.core.closed:
            return
        label = BEHAVIOR_KINDS[ev.kind]
        content = f"{label}{f' ({ev.tool})' if ev.tool else ''}: {ev.description}"
        h = content_hash(content)
        now = ev.at
        with self.core.store.reading() as conn:
            found = conn.memories.live_duplicate_of(h, ev.scope)
        if found is None:
            meta = {"behavioral": True, "kind": ev.kind, "tool": ev.tool, "agent_id": ev.agent_id, "occurrences": 1,
                    "outcomes": {o: int(ev.outcome == o) for o in BEHAVIOR_OUTCOMES}, "last_seen": now}
            if ev.context:
                meta["context"] = ev.context
            m = self.writer.remember(content, type="procedure", source={"type": "agent", "id": ev.agent_id}, metadata=meta,
                              scope=ev.scope, status="candidate", tags=["behavior", ev.kind.replace("_", "-")])
            if m.duplicate_of is None:
                return
            found = parse_id(m.id)
        with self.core.store.transaction() as conn:
            state = conn.memories.state(found)
            if state is None:  # forgotten since the read above: nothing to count
                return
            status, _, _, meta_text = state
            meta = json.loads(meta_text)
            meta["occurrences"] = int(meta.get("occurrences", 1)) + 1
            outcomes = meta.setdefault("outcomes", {o: 0 for o in BEHAVIOR_OUTCOMES})
            if ev.outcome:
                outcomes[ev.outcome] = int(outcomes.get(ev.outcome, 0)) + 1
            meta["last_seen"] = now
            meta["behavioral"] = True
            new_status = status
            # A pattern seen three times that works more often than not is confirmed.
            if status == "candidate" and meta["occurrences"] >= 3 and outcomes.get("success", 0) > outcomes.get("failure", 0):
                new_status = "validated"
            importance = min(0.9, 0.5 + 0.04 * (meta["occurrences"] - 1))
            conn.memories.record_behaviour(found, json.dumps(meta, ensure_ascii=False), new_status, importance, now)

    # == concepts and auto-recall ========================================================================================
    def concepts(self, text: str, k: int = 8, *, summarizer: Summarizer | None = None) -> Concepts:
        """Key phrases and a short summary of ``text``. ``summarizer`` (e.g. an LLM through MCP
        sampling) is tried first; if it is missing, fails or returns nothing, the local
        extractor (RAKE-like phrases weighted by idf over the store's FTS index) answers."""
        self.core.live()
        body = check_content(text, self.core.limits, "text", purpose="find the memories that matter for")
        if summarizer is not None:
            try:
                got = summarizer(body)
                if got is not None and got.concepts:
                    got.concepts = [c for c in got.concepts if c.strip()][:k]
                    return got
            except Exception as exc:  # never a hard dependency on an LLM
                log.info("Summarizer failed (%s); using the local extractor", exc)
        found = extract_concepts(body, k, self._doc_freq, self._doc_count())
        return Concepts(concepts=found, summary=summarize(body, found), method="local")

    def _doc_count(self) -> int:
        with self.core.store.reading() as conn:
            return conn.memories.count()

    def _doc_freq(self, terms: list[str]) -> dict[str, int]:
        """How many memories contain each term (FTS applies the same stemming as recall), one statement."""
        pairs: list[tuple[str, str]] = [(t, q) for t in terms if (q := fts_query(t))]
        if not pairs:
            return {}
        with self.core.store.reading() as conn:
            counts = conn.keywords.match_counts([q for _, q in pairs])
        return {t: n for (t, _), n in zip(pairs, counts)}

    # == recall hooks (called by the search) ==============================================================================
    def widen_filter(self, flt: "RecallFilter", include_teams: bool, include_expired: bool) -> "RecallFilter":
        if include_teams:
            flt = dataclasses.replace(flt, scopes=self.team_scopes(flt.scopes))
        if not include_expired:
            flt = dataclasses.replace(flt, valid_at=time.time())
        return flt
