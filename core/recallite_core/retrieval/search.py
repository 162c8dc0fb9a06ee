"""Search and context: hybrid recall (the retriever's ranking, then working memory, the
optional reranker, episode windows and belief expansion), rendering a result within a token
budget, ``build_context`` with its conversation block and auto-tuned limit, the belief graph of
a topic and ``auto_context``. Every recall is logged in the transaction that returns its id.

May import the plumbing, the turn store, the conversations, the working layer, the SLM
features, rerank, context, policy, storage, models and validation; never the write path's
internals, the facade or another service.
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
from collections import Counter
from typing import Any, Sequence

from recallite_core.conversation.conversations import Conversations
from recallite_core.conversation.episodes import check_window, render_session, stored_id
from recallite_core.conversation.turns import TurnStore
from recallite_core.errors import InvalidInputError
from recallite_core.features.beliefs import walk
from recallite_core.features.slm import SlmFeatures, Summarizer
from recallite_core.features.working_layer import WorkingLayer
from recallite_core.learning.fitting import searched_scopes, within
from recallite_core.models import (
    CONTEXT_FORMATS,
    STATUSES,
    AutoContextResult,
    BeliefEdge,
    BeliefGraph,
    BeliefNode,
    ContextFormat,
    ContextResult,
    Memory,
    RecallHit,
    RecallResult,
    ScoreBreakdown,
    is_context_format,
)
from recallite_core.plumbing import Plumbing
from recallite_core.policy import corrections
from recallite_core.policy import rules as policy
from recallite_core.policy.rules import DEFAULT_RECALL_STATUSES
from recallite_core.policy.trust import trust_scores
from recallite_core.retrieval.candidates import RecallFilter
from recallite_core.retrieval.context import render
from recallite_core.retrieval.rerank import rerank_hits, resolve_reranker
from recallite_core.storage.base import Session
from recallite_core.text.concepts import concepts_query
from recallite_core.text.redaction import redact_text
from recallite_core.text.task_names import is_task_key, key_or_none, optional_key, written
from recallite_core.text.tokens import estimate_tokens
from recallite_core.text.validation import check_limit, check_query, check_scope, check_unit, fmt_id, parse_id


class Searcher:
    """recall, contexts and the belief graph of a topic."""

    def __init__(self, core: Plumbing, turns: TurnStore, conversations: Conversations, layers: WorkingLayer,
                 slm: SlmFeatures):
        self.core = core
        self.turns = turns
        self.conversations = conversations
        self.layers = layers
        self.slm = slm
        self._reranker_cache: tuple[Any, Any] | None = None  # (config.rerank, the reranker it resolved to)

    # -- recall -----------------------------------------------------------------------------------------------
    def recall(
        self,
        query: str,
        limit: int = 5,
        types: Sequence[str] | None = None,
        profile: str = "default",
        scope: str | Sequence[str] | None = None,
        include_inactive: bool = False,
        min_score: float | None = None,
        *,
        tags: Sequence[str] | None = None,
        session: str | None = None,
        statuses: Sequence[str] | None = None,
        roles: Sequence[str] | None = None,
        categories: Sequence[str] | None = None,
        expand_episodes: int | None = None,
        min_trust: float | None = None,
        include_teams: bool = False,
        include_expired: bool = False,
        expand_beliefs: bool = False,
        working_session: str | None = None,
        explore: bool = False,
        min_score_ratio: float | None = None,
        task: str | None = None,
        _kind: str = "recall",
        _exclude: set[int] | None = None,
        _tuning: tuple[str, Any, int] | None = None,
    ) -> RecallResult:
        """Hybrid recall: keyword + vector channels fused by RRF, then policy multipliers.

        Filters apply before scoring. Deprecated and superseded memories are left out unless
        ``include_inactive`` (or ``statuses``) asks for them. Every call is logged as a
        retrieval whose id feedback() refers to.

        ``roles`` / ``categories`` keep only turns of these speakers / memories with these
        categories. ``expand_episodes=w`` gives every episode hit its window (the turn and w
        neighbours each side, ``hit.window``); each episode is returned once. With
        ``RecalliteConfig(rerank=...)`` the top hits are reranked.
        SLM-Lite options: ``min_trust`` drops memories whose trust score is lower (before the
        top-k); ``include_teams`` also searches the team scopes of ``scope``; expired memories
        (``valid_until`` passed) are left out unless ``include_expired`` or ``include_inactive``;
        ``expand_beliefs`` appends up to ``limit`` memories one relation away (reason
        ``belief-expansion``); ``working_session`` merges that session's working memory.
        Learning: ``explore`` adds the learner's optimism bonus
        (memories with little evidence get their chance; build_context turns it on);
        ``min_score_ratio`` drops hits scoring below that fraction of the best hit. ``task``: the
        caller's short name for the job ("deploy staging"); outcomes under one name count for each
        other whatever the query's words (OutcomeModel.named).
        """
        self.core.live()
        q = check_query(query, self.core.limits)
        q_redacted: list[str] = []
        if self.core.config.redact_secrets:
            q, q_redacted = redact_text(q)  # the retrieval log keeps the query text
            if isinstance(task, str):  # and the task's name as written
                task, named = redact_text(task)
                q_redacted += named
        n = check_limit(limit, self.core.limits)
        policy.check_profile(profile, self.core.config.profiles)
        if statuses is None:
            statuses = STATUSES if include_inactive else policy.DEFAULT_RECALL_STATUSES
        flt = self.core.recall_filter(scope, types, statuses, tags, session, roles, categories)
        flt = self.slm.widen_filter(flt, include_teams, include_expired or include_inactive)
        if min_score is not None:
            min_score = float(min_score)
            if not math.isfinite(min_score):
                raise InvalidInputError("min_score must be a finite number.")
        ratio = None if min_score_ratio is None else check_unit("min_score_ratio", min_score_ratio, 0.0)
        task_name = optional_key(task)
        mt = None if min_trust is None else check_unit("min_trust", min_trust, 0.0)
        if expand_episodes is not None:
            expand_episodes = check_window(expand_episodes)
        depth = n + len(_exclude or ()) + (n if expand_episodes else 0)
        if self.core.config.rerank is not None:
            depth = max(depth, self.core.config.rerank_depth)
        qvec = self.core.retriever.query_vector(q)  # embedding needs no lock
        # One hold of the store lock for the read and the log write: under concurrent
        # recalls every lock hand-off costs a thread wake-up, so take it once.
        with self.core.store.lock:
            hits = self.core.retriever.rank(q, flt, depth, profile, min_score, mt, qvec=qvec,
                                       explore=bool(explore), min_score_ratio=ratio, task_name=task_name)
            if len(hits) < n and "superseded" not in flt.statuses and self.core.index.holds("superseded"):
                hits = self._replacements(q, flt, hits, n, profile, min_score, mt, qvec, task_name)
            if working_session is not None:
                hits = self.layers.merge_working(hits, q, flt, depth, profile, working_session, mt, min_score)
            hits = self._post_rank(q, hits, n, expand_episodes, _exclude)
            if expand_beliefs:
                hits = hits + self.slm.belief_neighbours(hits, flt, n, mt)
            with self.core.store.transaction(concurrent=True) as conn:
                rid = self.core.retriever.log(conn, q, profile, flt.scopes, [h for h in hits if h.memory.layer != "working"], _kind,
                                              task_name, written(task))
                if q_redacted:
                    conn.stats.count_redactions(Counter(q_redacted))
                if _tuning is not None:  # build_context: which auto-tuned setting served this retrieval
                    self.core.learning.tuner.log(conn, rid, *_tuning)
                names = self._names_near(conn, rid, task_name, flt.scopes,
                                         [h.memory.id for h in hits if h.memory.layer != "working"])
        result = RecallResult(retrieval_id=fmt_id("ret", rid), query=q, profile=profile, memories=hits,
                              task_names=names)
        self.layers.after_recall(result.retrieval_id, hits)
        return result

    def _names_near(self, session: Session, rid: int, task_name: str | None, scopes: Sequence[str] | None,
                    ids: list[str]) -> list[str]:
        """Names under which these memories worked before (OutcomeModel.names_near), for an agent
        whose name for this job is new to them, or who gave none: reusing one keeps the job's record
        whole. Each in the words the agent last wrote it (Retrievals.labels; its key where none was
        kept; read in the caller's transaction). Only names the agent can pass back as they are (a key
        restored from an older export may not be its own key)."""
        outcomes = self.core.learning.outcomes
        keys = [n for n in outcomes.names_near([int(i[4:]) for i in ids], outcomes.task_of(rid), task_name, scopes)
                if is_task_key(n)]
        if not keys:
            return []
        labels: dict[str, str] = {}
        for key, label, where in session.retrievals.labels(keys):  # newest first: the wording last judged within these scopes
            if key not in labels and key_or_none(label) == key and within(searched_scopes(where), scopes):
                labels[key] = label
        return [labels.get(k, k) for k in keys]

    def format_context(self, result: RecallResult, max_tokens: int = 2000, format: str = "markdown") -> str:
        """Render a recall result as prompt text; the budget (see tokens.py) is never exceeded."""
        return self.render(result, max_tokens, format).context

    def render(self, result: RecallResult, max_tokens: int, format: str) -> ContextResult:
        self.core.live()
        was: dict[str, str] = {}
        if format == "markdown" and result.memories:  # a replaced value as a one-line "was: ..." note
            with self.core.store.reading() as s:
                was = corrections.was_notes(s, [h.memory.id for h in result.memories])
        r = render(result.memories, max_tokens, format, was=was)
        matched = sum(h.memory.tokens for h in result.memories)
        names = result.task_names
        try:
            rid = parse_id(result.retrieval_id, "ret")
            # The hits the budget or limit left out were logged but never shown: feedback that
            # names no memory must not credit them (retrieval_items.served, migration 0012).
            shown = set(r.memory_ids)
            unserved = [parse_id(h.memory.id) for h in result.memories
                        if h.memory.layer != "working" and h.memory.id not in shown]
            with self.core.store.transaction(concurrent=True) as s:
                s.retrievals.mark_context(rid, r.tokens, matched)
                if unserved:
                    s.retrievals.mark_unserved(rid, unserved)
                    row = s.retrievals.get(rid) if names else None
                    if row is not None:  # the names of what was served, not of what the budget left out
                        names = self._names_near(s, rid, row[7], json.loads(row[4]) if row[4] else None, r.memory_ids)
        except InvalidInputError:
            pass
        return ContextResult(
            context=r.text, retrieval_id=result.retrieval_id, memory_ids=r.memory_ids, tokens=r.tokens,
            max_tokens=max_tokens, format=format, truncated=r.truncated, omitted=r.omitted,  # type: ignore[arg-type]  # render() above rejected any other format
            task_names=names,
        )

    def build_context(
        self, query: str, max_tokens: int = 2000, format: str = "markdown", limit: int | None = None, *,
        conversation: str | None = None, recent_turns: int = 8, **recall_kwargs: Any
    ) -> ContextResult:
        """recall() + format_context() in one call, with the ids and token count of what was served.

        ``conversation``: a session id whose short-term memory (its last ``recent_turns`` turns
        and running summary) comes first, then the recalled memories, all within ``max_tokens``.
        Exploration is on (``explore=True``) unless the caller says otherwise. Without ``limit``
        (and ``min_score``), the limit and relative threshold come from the scope's auto-tuning
        bandit (10 hits, 20 in compact format, until feedback says otherwise)."""
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            raise InvalidInputError(f"max_tokens must be a positive whole number, got {max_tokens!r}.")
        if not is_context_format(format):
            raise InvalidInputError(f"Unknown context format {format!r}. Use one of: {', '.join(CONTEXT_FORMATS)}.")
        recall_kwargs.setdefault("explore", True)
        if limit is None:
            limit = 20 if format == "compact" else 10
            if self.core.config.learning.tune_context and recall_kwargs.get("min_score") is None \
                    and recall_kwargs.get("min_score_ratio") is None:
                tuning_scope = self._tuning_scope(recall_kwargs.get("scope"))
                with self.core.store.reading() as conn:
                    arm = self.core.learning.tuner.choose(conn, tuning_scope)
                limit = arm.limit * (2 if format == "compact" else 1)
                recall_kwargs["min_score_ratio"] = arm.min_score_ratio or None
                recall_kwargs["_tuning"] = (tuning_scope, arm, max_tokens, limit)  # logged with the retrieval
        if conversation is not None:
            return self._conversation_context(query, max_tokens, format, limit, conversation, recent_turns, recall_kwargs)
        result = self.recall(query, limit=limit, _kind="context", **recall_kwargs)
        return self.render(result, max_tokens, format)

    def _tuning_scope(self, scope: Any) -> str:
        """The scope whose bandit tunes a context: the first (project) scope searched, '*' for all."""
        if scope is None:
            return "*"
        first = scope if isinstance(scope, str) else next(iter(scope), None)
        return "*" if first is None else check_scope(first, self.core.limits, self.core.config.default_scope)

    def _conversation_context(self, query: str, max_tokens: int, format: ContextFormat, limit: int,
                              conversation: str, recent_turns: int, recall_kwargs: dict):
        """build_context(conversation=...): the session block, then recalled memories, one budget."""
        sc = self.conversations.session_context(conversation, last_n=recent_turns, scope=recall_kwargs.get("scope"))
        cap = max(0, min(max_tokens, int(max_tokens * self.core.config.conversation_share)))
        block, shown = render_session(sc, cap, format)
        used = estimate_tokens(block)
        exclude = {parse_id(i) for i in shown}
        result = self.recall(query, limit=limit, _kind="context", _exclude=exclude, **recall_kwargs)
        rest = max_tokens - used
        if rest >= 1:
            r = self.render(result, rest, format)
        else:
            r = ContextResult(context="", retrieval_id=result.retrieval_id, memory_ids=[], tokens=0, max_tokens=0,
                              format=format, truncated=False, omitted=len(result.memories))
        text = block + r.context if r.memory_ids or not block else block
        tokens = estimate_tokens(text)
        with self.core.store.transaction(concurrent=True) as s:
            s.retrievals.mark_context(parse_id(result.retrieval_id, "ret"), tokens, None)
        return ContextResult(context=text, retrieval_id=result.retrieval_id, memory_ids=r.memory_ids, tokens=tokens,
                             max_tokens=max_tokens, format=format, truncated=r.truncated, omitted=r.omitted,
                             conversation_turns=sc.total_turns, turn_ids=shown, task_names=r.task_names)

    # -- recall post-processing ---------------------------------------------------------------------------------------
    def _replacements(self, query: str, flt: RecallFilter, hits: list[RecallHit], limit: int, profile: str,
                      min_score: float | None, min_trust: float | None, qvec: Any,
                      task_name: str | None = None) -> list[RecallHit]:
        """A question worded like a memory that was replaced finds what replaced it: "Which CI
        system does the team use?" matches "The team uses Jenkins." (superseded, left out) and not
        "We replaced Jenkins with GitHub Actions.". When the recall found fewer than ``limit``
        memories, the superseded ones that match the question closer than any of them (by cosine)
        lend their place, just under their match (weighed by the replacement's status), to their
        live replacement (the end of the supersedes chain), when it is not found already and passes
        the filter. Only then: a full result needs no second look."""
        old = self.core.retriever.rank(query, dataclasses.replace(flt, statuses=("superseded",)), limit - len(hits),
                                       profile, min_score, min_trust, qvec=qvec, aside=True, task_name=task_name)
        # Only a replaced memory the question matches better than all it found: the cosine,
        # which (unlike the fused score) means the same in both passes.
        best = max((h.breakdown.vector_similarity or 0.0 for h in hits), default=-1.0)
        old = [h for h in old if (h.breakdown.vector_similarity or 0.0) > best]
        if not old:
            return hits
        with self.core.store.reading() as s:
            live = _live_replacements(s, {parse_id(h.memory.id): h.memory for h in old})
            found = {parse_id(m.id) for m in live.values()} - {stored_id(h) for h in hits}
            # The recall's own filter (scopes, types, tags, sessions, expiry ...), read by the store.
            allowed = set(s.memories.matching(sorted(found), flt.memory_filter())) if found else set()
            trust = trust_scores(s, sorted(allowed), half_life_days=self.core.config.trust_half_life_days)
        out = list(hits)
        for h in old:
            m = live.get(parse_id(h.memory.id))
            new_id = parse_id(m.id) if m is not None else None
            if m is None or new_id not in allowed or (min_trust is not None and trust.get(new_id, 0.0) < min_trust):
                continue
            allowed.discard(new_id)  # one place each, the best of the memories it replaced
            # The old one's match, weighed by the replacement's status instead of "superseded".
            score = h.score / (h.breakdown.status_factor or 1.0) * policy.STATUS_FACTOR.get(m.status, 1.0) \
                * policy.CORRECTION_YIELD
            out.append(RecallHit(memory=m, score=score, rank=0, trust=trust.get(new_id),
                                 reasons=["replacement", f"replaces:{h.memory.id}", f"{m.status}-memory"],
                                 breakdown=ScoreBreakdown(fusion=0.0, final=score)))
        out.sort(key=lambda h: -h.score)
        return out

    def _post_rank(self, query: str, hits: list[RecallHit], limit: int, expand: int | None,
                   exclude: set[int] | None) -> list[RecallHit]:
        """After ranking: drop excluded ids, rerank (if configured), expand episode windows, trim."""
        if exclude:
            hits = [h for h in hits if stored_id(h) not in exclude]
        reranker = self._reranker()
        if reranker is not None and hits:
            hits = rerank_hits(reranker, query, hits, self.core.config.rerank_depth, self.core.config.rrf_k)
        if expand:
            hits = self._expand_hits(hits, expand, limit, exclude or set())
        hits = hits[:limit]
        for r, h in enumerate(hits, start=1):
            h.rank = r
        return hits

    def _reranker(self):
        spec = self.core.config.rerank
        if spec is None or spec is False:
            return None
        cached = self._reranker_cache
        if cached is not None and cached[0] is spec:
            return cached[1]
        fn = resolve_reranker(spec, self.core.config.rerank_model)
        self._reranker_cache = (spec, fn)
        return fn

    def _expand_hits(self, hits: list[RecallHit], w: int, limit: int, exclude: set[int]) -> list[RecallHit]:
        """Give each episode hit its window; an episode already shown (as a hit or in an
        earlier window) is not shown again: the later hit is folded into the earlier one."""
        out: list[RecallHit] = []
        seen: set[int] = set()
        with self.core.store.reading() as conn:
            windows: dict[int, list[int]] = {}
            for h in hits:
                mid = stored_id(h)
                if mid is None:  # not a stored memory (e.g. a working-memory entry): no window
                    out.append(h)
                    if len(out) >= limit:
                        break
                    continue
                if mid in seen:
                    continue  # already inside an earlier hit's window
                ids = self.turns.window_ids(conn, mid, w, DEFAULT_RECALL_STATUSES) if h.memory.type == "episode" else None
                if ids:
                    ids = [i for i in ids if i == mid or (i not in seen and i not in exclude)]
                    windows[mid] = ids
                    seen.update(ids)
                else:
                    seen.add(mid)
                out.append(h)
                if len(out) >= limit:
                    break
            found = conn.memories.load(sorted({i for ids in windows.values() for i in ids}))
        for h in out:
            mid = stored_id(h)
            ids = None if mid is None else windows.get(mid)  # None: not a stored memory, no window
            if ids:
                h.window = [found[i] if i != mid else h.memory for i in ids if i in found]
                if len(h.window) > 1:
                    h.reasons.append(f"episode-window:{len(h.window)}")
        return out

    # == belief graph ====================================================================================================
    def beliefs(self, topic: str, depth: int = 2, *, scope: str | Sequence[str] | None = None, limit: int = 5,
                include_teams: bool = False, min_trust: float | None = None) -> BeliefGraph:
        """The belief neighbourhood of a topic: seed memories from recall, then every memory
        linked to them by causes / contradicts / supports / requires (both directions) within
        ``depth`` hops (at most 3), each with a belief confidence decayed x0.6 per hop. Only
        live, unexpired memories of the searched scopes take part."""
        self.core.live()
        if isinstance(depth, bool) or not isinstance(depth, int) or not 0 <= depth <= 3:
            raise InvalidInputError(f"depth must be 0, 1, 2 or 3, got {depth!r}.")
        r = self.recall(topic, limit=limit, scope=scope, include_teams=include_teams, min_trust=min_trust,
                        _kind="beliefs")
        flt = self.core.recall_filter(scope, None, policy.DEFAULT_RECALL_STATUSES, None, None)
        scopes = self.slm.team_scopes(flt.scopes) if include_teams else flt.scopes
        seeds = {parse_id(h.memory.id): h.memory.confidence for h in r.memories}
        with self.core.store.reading() as conn:
            reached, edges = walk(conn, seeds, depth=depth, scopes=scopes, valid_at=time.time())
            mems = conn.memories.load(list(reached))
            trust = trust_scores(conn, list(reached), half_life_days=self.core.config.trust_half_life_days)
        nodes = []
        for mid, node in sorted(reached.items(), key=lambda kv: (kv[1].hops, -kv[1].confidence, kv[0])):
            if mid not in mems:
                continue
            if min_trust is not None and trust.get(mid, 0.0) < min_trust:
                continue
            nodes.append(BeliefNode(memory=mems[mid], hops=node.hops, confidence=round(node.confidence, 4),
                                    trust=trust.get(mid), via=None if node.via is None else f"mem_{node.via}",
                                    relation=node.relation))
        kept = {parse_id(n.memory.id) for n in nodes}
        return BeliefGraph(topic=r.query, retrieval_id=r.retrieval_id, nodes=nodes,
                           edges=[BeliefEdge(from_id=f"mem_{a}", to_id=f"mem_{b}", type=t)  # type: ignore[arg-type]  # a stored relation type, checked when written
                                  for a, b, t in edges if a in kept and b in kept])

    def auto_context(self, text: str, max_tokens: int = 2000, *, k: int = 8, format: str = "markdown",
                     summarizer: Summarizer | None = None, **recall_kwargs: Any) -> AutoContextResult:
        """Auto-recall for a long message or conversation: extract its concepts (sampling or the
        local extractor), recall with a query built from them, render the context."""
        c = self.slm.concepts(text, k, summarizer=summarizer)
        query = concepts_query(c.concepts) or c.summary or text[:2000]
        r = self.build_context(query, max_tokens=max_tokens, format=format, **recall_kwargs)
        return AutoContextResult(context=r.context, retrieval_id=r.retrieval_id, memory_ids=r.memory_ids,
                                 tokens=r.tokens, query=query, concepts=c.concepts, summary=c.summary, method=c.method)


# How many supersedes in a row the replacement step follows (a replaced b replaced c ...).
REPLACEMENT_CHAIN = 5


def _live_replacements(session: Session, old: dict[int, Memory]) -> dict[int, Memory]:
    """For each superseded memory of ``old`` (id -> memory), the memory at the end of its
    supersedes chain, when that one is no longer superseded."""
    heads = dict(old)
    out: dict[int, Memory] = {}
    for _ in range(REPLACEMENT_CHAIN):
        nxt = {oid: parse_id(m.superseded_by) for oid, m in heads.items()
               if m.status == "superseded" and m.superseded_by}
        if not nxt:
            break
        loaded = session.memories.load(sorted(set(nxt.values())))
        heads = {}
        for oid, nid in nxt.items():
            m = loaded.get(nid)
            if m is None:
                continue
            if m.status == "superseded":
                heads[oid] = m
            else:
                out[oid] = m
    return out
