"""Hybrid recall: FTS5 bm25 + exact vector scan, fused, then weighted by policy."""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import logging
import math
import time
from collections.abc import Set as AbstractSet
from typing import TYPE_CHECKING, Callable, Sequence

import numpy as np

from recallite_core.config import RecalliteConfig
from recallite_core.conversation.episodes import ChunkIndex, chunk_channel, needs_id_list
from recallite_core.embedding.embedder import Embedder
from recallite_core.errors import ScanError, WorkerTimeoutError
from recallite_core.index.vector_index import ScanFilter, VectorIndex, exact_scores, stats_moments, unexpired
from recallite_core.learning.fitting import blend_task
from recallite_core.learning.learner import Assessment, OutcomeModel, outcome_reasons
from recallite_core.models import RecallHit, ScoreBreakdown
from recallite_core.policy import rules as policy
from recallite_core.policy.correction_ranking import FOLLOW_UP_REACH, asks_about_speaker
from recallite_core.policy.correction_ranking import newer_first as corrections_first
from recallite_core.policy.trust import flagged_among, side_tables, trust_scores
from recallite_core.retrieval.candidates import Fused, QueryVectorCache, RecallFilter, flags_of, scan_filter_for
from recallite_core.retrieval.context import CONTRADICTED, own_warnings
from recallite_core.retrieval.conversation_ranking import (
    NO_TURN,
    EpisodeMap,
    SqlTurnLinks,
    expand,
    named_speakers,
    quiet_replies,
)
from recallite_core.retrieval.cutting import keep_ratios, kinship, known_job
from recallite_core.retrieval.distinct import distinct_texts
from recallite_core.retrieval.fusion import (
    VECTOR_STD_FLOOR,
    keyword_moments,
    keyword_weight,
    margin_ramp,
    reciprocal_rank_fusion,
    vector_margin,
    zscore_arrays,
)
from recallite_core.retrieval.hit_reasons import hit_reasons
from recallite_core.storage import DRIVER_ERRORS, Storage
from recallite_core.storage.base import Session, StaleIndex, chunked
from recallite_core.storage.codec import decode_vector
from recallite_core.storage.fts import query_terms
from recallite_core.storage.order import top_order

if TYPE_CHECKING:
    from recallite_core.index.scan_workers import ScanPool
    from recallite_core.storage.sqlite.keyword_mirror import KeywordIndexes

log = logging.getLogger("recallite.retriever")

#: Column weights of the memories' bm25 (title, content, tags): content decides, the title
#: helps a little, tags a bit more (they are chosen words).
KEYWORD_WEIGHTS = (0.3, 1.0, 0.5)

#: What drops the keyword mirror for one recall (FTS5 answers it instead).
_KEYWORD_CACHE_ERRORS: tuple[type[Exception], ...] = (StaleIndex, *DRIVER_ERRORS)


class Retriever:
    def __init__(self, store: Storage, embedder: Embedder, index: VectorIndex, config: RecalliteConfig,
                 pool: ScanPool | None = None):
        self.store = store
        self.embedder = embedder
        self.index = index
        self.config = config
        self.pool = pool
        self._counted: tuple[int, int] | None = None  # (vectors, change counter) last seen
        self._scan_thread: concurrent.futures.ThreadPoolExecutor | None = None
        self.query_cache = QueryVectorCache(config.query_cache_size)
        self._df_cache: dict[str, int] = {}
        self._df_counter = -1
        # In-memory mirrors that spare a recall most of its SQL; each follows the change counter.
        self.keywords = store.keyword_mirror(KEYWORD_WEIGHTS) if config.keyword_cache else None
        self.episode_map = EpisodeMap() if config.keyword_cache else None
        self._memo: dict | None = None  # per-snapshot facts, see _snapshot
        # The outcome learner (set by the engine); None ranks by the usefulness column alone.
        self.learning: OutcomeModel | None = None
        self._task_pending: tuple[str, np.ndarray] | None = None  # (query, task vector) of the last rank
        # (query, id -> its keep ratio) of the last rank whose context was cut: log() keeps these as scores
        self._cut_pending: tuple[str, dict[int, float]] | None = None
        # The chunk channel's index (episodes.chunk_channel): the facade's plumbing sets it, else the first recall.
        self.chunk_index: ChunkIndex | None = None

    # -- channels -------------------------------------------------------------------------------
    def _keyword_cache(self, session: Session) -> KeywordIndexes | None:
        """The in-memory bm25 mirror, caught up with this snapshot (None: ask FTS5)."""
        kx = self.keywords
        if kx is None:
            return None
        try:  # one cheap read of the change counter when nothing changed
            kx.sync(session, self._counter(session))
        except _KEYWORD_CACHE_ERRORS as exc:
            log.warning("keyword cache dropped, FTS5 answers this recall: %s", exc)
            kx.reset()
            return None
        return kx

    def _mirror(self, session: Session, ask):
        """``ask(mirror)`` on the keyword mirror caught up with this snapshot. None when there is
        none or it cannot answer; a mirror found stale is dropped (FTS5 answers instead)."""
        kx = self._keyword_cache(session)
        if kx is None:
            return None
        try:
            return ask(kx)
        except StaleIndex as exc:
            log.warning("keyword cache dropped, FTS5 answers this recall: %s", exc)
            kx.reset()
            return None

    def passing_mask(self, session: Session, ids: np.ndarray, flt: RecallFilter) -> np.ndarray:
        """Whether each of ``ids`` passes the filter: from the inline matrix's own columns (status, scope,
        type, session) when it is current, else (and for tags, roles, categories) the store."""
        idx = self.index
        out = np.zeros(len(ids), dtype=bool)
        rest = np.arange(len(ids))
        if idx.n and not needs_id_list(flt) and idx.seq == self._counter(session):
            mask = idx.mask(ScanFilter(scopes=flt.scopes, statuses=flt.statuses, types=flt.types, sessions=flt.sessions))
            rows = idx.rows_of(ids)
            have = rows >= 0
            out[have] = mask[rows[have]]
            expired = self.expired_ids(session, flt.valid_at)
            if expired:
                out &= ~np.isin(ids, np.fromiter(expired, dtype=np.int64, count=len(expired)))
            rest = np.flatnonzero(~have)  # no vector (yet): ask the store
        if len(rest):
            todo = ids[rest].tolist()
            ok = set(session.memories.matching(todo, flt.memory_filter()))
            out[rest] = np.fromiter((i in ok for i in todo), dtype=bool, count=len(todo))
        return out

    def _once(self, key, read):
        """``read()``, once per recall snapshot: what it reads cannot change inside it."""
        memo = self._memo
        if memo is None:
            return read()
        if key not in memo:
            memo[key] = read()
        return memo[key]

    def _side_tables(self, session: Session) -> tuple[bool, bool]:
        """Whether relations / outcome rows exist."""
        return self._once("side", lambda: side_tables(session))

    def _counter(self, session: Session) -> int:
        """The store's change counter in this snapshot."""
        return self._once("counter", session.feed.counter)

    @property
    def counter(self) -> Callable[[Session], int]:
        """Reads the store's change counter in a session, once per recall snapshot (the chunk
        channel follows the same counter as the vector matrix)."""
        return self._counter

    @contextlib.contextmanager
    def _snapshot(self):
        """While one recall holds its read snapshot (and the store lock), facts that cannot
        change inside it (the change counter, the expired ids) are read once."""
        self._memo = {}
        try:
            yield
        finally:
            self._memo = None

    def _filtered_top(self, session, ids: np.ndarray, scores: np.ndarray, flt: RecallFilter, depth: int) -> list[tuple[int, float]]:
        """The best ``depth`` rows passing the filter; the cut widens until it holds enough."""
        inner = depth + max(20, depth // 4)
        while True:
            k = inner if inner < len(ids) else None
            order = top_order(ids, scores, k)
            order = order[self.passing_mask(session, ids[order], flt)]
            if len(order) >= depth or k is None:
                order = order[:depth]
                return list(zip(ids[order].tolist(), scores[order].tolist()))
            inner *= 8

    def keyword_channel(self, session: Session, query: str, flt: RecallFilter, depth: int) -> list[tuple[int, float]]:
        """bm25 top-``depth`` among the memories passing the filter, ties by id."""
        cached = self._mirror(session, lambda kx: kx.memories.bm25(session, query_terms(query)))
        if cached is not None:
            return self._filtered_top(session, cached[0], cached[1], flt, depth)
        return self._fts_keyword_channel(session, query, flt, depth)

    def _fts_keyword_channel(self, session: Session, query: str, flt: RecallFilter, depth: int) -> list[tuple[int, float]]:
        """The same answer from the store's own keyword search."""
        return session.keywords.top(query, flt.memory_filter(), depth, KEYWORD_WEIGHTS)

    def episodes_present(self, session: Session) -> bool:
        """Whether the store holds any conversation turn; re-checked only when it changed."""
        counter = self._counted[1] if self._counted else None
        cached = self.__dict__.get("_episodes_cache")
        if counter is None or cached is None or cached[0] != counter:
            present = session.episodes.any()
            self._episodes_cache = (counter, present)
            return present
        return cached[1]

    def window_channel(self, session: Session, query: str, flt: RecallFilter, depth: int) -> list[tuple[int, float]]:
        """bm25 of conversation turns indexed together with their neighbouring turns."""
        if not query_terms(query) or not self.config.window_keyword_weight or not self.episodes_present(session):
            return []
        cached = self._mirror(session, lambda kx: kx.windows.bm25(session, query_terms(query)))
        if cached is not None:
            return self._filtered_top(session, cached[0], cached[1], flt, depth)
        return session.keywords.windows_top(query, flt.memory_filter(), depth)

    def vector_channel(
        self, session: Session, qvec: np.ndarray, flt: RecallFilter, depth: int
    ) -> tuple[list[tuple[int, float]], tuple[int, int, int]]:
        """The inline scan: top-depth (id, cosine) from the cached matrix in this process, and
        (count, sum, sum of squares) of the cosine over the filtered scope."""
        self.refresh_inline(session)
        expired = self.expired_ids(session, flt.valid_at)
        ids, sims, stats = self.index.search_with_stats(qvec, depth + len(expired), scan_filter_for(session, flt))
        return unexpired(ids, sims, expired, depth), stats

    def refresh_inline(self, session: Session) -> None:
        """Bring the in-memory matrix up to date with the store (corrections scan it on writes)."""
        self.index.refresh(session, self._counter(session))
        self._counted = (len(self.index), self.index.seq)

    # Inline matrices at least this large (rows x dims) are scanned in a helper thread
    # while the keyword channel runs. Below it the hand-off and the two threads' turns at the
    # GIL cost more than the overlap saves (measured on 2 cores: at 10k x 384 the threaded
    # recall was slower, most of all on a busy machine).
    PARALLEL_SCAN_OPS = 16_000_000

    def _inline_channels(self, session, query: str, qvec: np.ndarray, flt: RecallFilter, depth: int):
        """Keyword and inline vector channels; a large matrix is scanned in a helper thread
        while FTS runs here (numpy and SQLite both release the GIL). Safe: the caller holds
        the store lock throughout, and every other user of the index takes it first."""
        self.refresh_inline(session)
        sflt = scan_filter_for(session, flt)
        expired = self.expired_ids(session, flt.valid_at)
        k = depth + len(expired)  # expired rows are dropped below, so the top-k stays exact
        if self.index.n * self.index.dimensions < self.PARALLEL_SCAN_OPS:
            kw = self.keyword_channel(session, query, flt, depth)
            ids, sims, stats = self.index.search_with_stats(qvec, k, sflt)
        else:
            if self._scan_thread is None:
                self._scan_thread = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="recallite-scan")
            # Build the filter's mask here first: then both threads only read the index's mask
            # cache (the keyword channel filters with the same mask). One-off filters (an id
            # list) are not cached, and the keyword channel asks the store for them.
            if sflt.key() is not None:
                self.index.mask(sflt)
            future = self._scan_thread.submit(self.index.search_with_stats, qvec, k, sflt)
            kw = self.keyword_channel(session, query, flt, depth)
            ids, sims, stats = future.result()
        return kw, unexpired(ids, sims, expired, depth), stats

    def close(self) -> None:
        if self._scan_thread is not None:
            self._scan_thread.shutdown(wait=True)
            self._scan_thread = None
        if self.keywords is not None:
            self.keywords.close()  # their private in-memory tokenizer databases

    # -- routing between the inline scan and the worker pool --------------------------------------
    def vector_count(self, session: Session) -> int:
        """How many vectors the store holds, cheaply: the last exact count (from whichever
        engine scanned) plus the vectors written and minus those deleted since."""
        counter = self._counter(session)
        if self._counted is not None and self._counted[1] == counter:
            return self._counted[0]
        floor = session.feed.tombstone_floor()
        if self._counted is None or counter < self._counted[1] or floor > self._counted[1]:
            count = session.vectors.count()
        else:
            base, seq = self._counted
            added = session.vectors.count_since(seq)
            removed = session.feed.tombstones_count_since(seq)
            count = max(0, base + added - removed)
        self._counted = (count, counter)
        return count

    def _submit_scan(self, session: Session, qvec: np.ndarray, flt: RecallFilter, depth: int):
        """A pool future when this store is large enough for the workers, else None (inline)."""
        pool = self.pool
        if pool is None or not pool.wants(self.vector_count(session)):
            return None
        try:
            pool.start(wait=True)  # once: the workers load their shards
            return pool.submit(qvec, depth + len(self.expired_ids(session, flt.valid_at)), flt)
        except ScanError as exc:
            if pool.options.fallback != "inline":
                raise
            log.warning("vector scan falls back inline: %s", exc)
            return None

    def _pool_result(
        self, future, session: Session, qvec: np.ndarray, flt: RecallFilter, depth: int
    ) -> tuple[list[tuple[int, float]], tuple[int, int, int]]:
        pool = self.pool
        assert pool is not None, "a future comes only from _submit_scan, which needs the pool"
        try:
            try:
                res = future.result(timeout=pool.options.task_timeout + 5.0)  # the pool's watchdog fails it first
            except concurrent.futures.TimeoutError:
                future.cancel()
                raise WorkerTimeoutError(
                    f"The vector scan took longer than {pool.options.task_timeout:.1f} s. Retry, or raise task_timeout."
                ) from None
        except ScanError as exc:
            if pool.options.fallback != "inline":
                raise
            log.warning("vector scan falls back inline: %s", exc)
            return self.vector_channel(session, qvec, flt, depth)
        except BaseException:
            future.cancel()
            raise
        self._counted = (res.vector_count, res.seq)
        if self.index.seq >= 0:
            self.index.reset()  # the workers hold the vectors now: free the inline copy
        return unexpired(res.ids, res.sims, self.expired_ids(session, flt.valid_at), depth), res.stats

    def similarities(self, session: Session, qvec: np.ndarray, ids: list[int]) -> dict[int, float]:
        """Exact cosine for candidates the vector top-k did not include (keyword-only hits)."""
        out: dict[int, float] = {}
        arr = np.asarray(ids, dtype=np.int64)
        rows = self.index.rows_of(arr)
        have = rows >= 0
        missing = arr[~have].tolist()
        q64 = qvec.astype(np.float64)
        if have.any():  # one gather for all of them; exact_scores gives each row the same bits anywhere
            out.update(zip(arr[have].tolist(), exact_scores(self.index.matrix[rows[have]], q64).tolist()))
        for chunk in chunked(missing):
            got = session.vectors.blobs(chunk)
            if got:
                mat = np.stack([decode_vector(blob, self.embedder.dimensions) for _, blob in got])
                out.update(zip((r[0] for r in got), exact_scores(mat, q64).tolist()))
        return out

    # -- keyword confidence ----------------------------------------------------------------------
    def _document_frequency(self, session: Session, term: str, n: int) -> int:
        df = self._mirror(session, lambda kx: kx.memories.document_frequency(session, term))
        if df is not None:
            return df
        counter = self._counter(session)
        if counter != self._df_counter:  # exact, like the cache: any write may move a count
            self._df_cache.clear()
            self._df_counter = counter
        df = self._df_cache.get(term)
        if df is None:
            df = session.keywords.document_frequency(term)
            if len(self._df_cache) > 4096:
                self._df_cache.clear()
            self._df_cache[term] = df
        return df

    def keyword_coverage(self, session: Session, terms: list[str], top_ids: list[int]) -> float:
        """Share of the query's IDF mass matched by its best keyword hit (0..1)."""
        return max(self.keyword_shares(session, terms, top_ids).values(), default=0.0)

    def keyword_shares(self, session: Session, terms: list[str], top_ids: list[int],
                       known_only: bool = False) -> dict[int, float]:
        """Share of the query's IDF mass that each of ``top_ids`` holds (ids holding no term are absent).
        ``known_only``: of the mass of the words some memory holds (a word no memory has is no
        evidence against any of them)."""
        if not terms or not top_ids:
            return {}
        # Whichever engine scanned (inline or workers), the store's vector count is the collection size.
        n = max(1, self.vector_count(session))
        idf = {}
        for t in terms:
            df = self._document_frequency(session, t, n)
            if df or not known_only:
                idf[t] = math.log(1 + (n - df + 0.5) / (df + 0.5)) if df else math.log(1 + (n + 0.5) / 0.5)
        terms = list(idf)
        total = sum(idf.values())
        if total <= 0:
            return {}
        matched: dict[int, float] = {}
        for t in terms:
            holding = self._mirror(session, lambda kx: kx.memories.containing(session, t, top_ids))
            if holding is not None:
                for rowid in holding:
                    matched[rowid] = matched.get(rowid, 0.0) + idf[t]
                continue
            for rowid in session.keywords.holding(t, top_ids):
                matched[rowid] = matched.get(rowid, 0.0) + idf[t]
        return {i: v / total for i, v in matched.items()}

    # -- relevance and the task a query is about -------------------------------------------------
    @property
    def semantic_floor(self) -> float:
        """Cosine from which a memory counts as related to a query (config, else the embedder's)."""
        floor = self.config.relevance_floor
        return float(getattr(self.embedder, "relevance_floor", 0.0) if floor is None else floor)

    @property
    def vector_std_floor(self) -> float:
        """Floor of the scope's cosine spread in the vector z-score: the embedder's own if it names
        one (e5's cosines crowd into a band a quarter as wide as MiniLM's), else the fusion's."""
        return float(getattr(self.embedder, "vector_std_floor", VECTOR_STD_FLOOR))

    def vectors_of(self, session: Session, ids: list[int]) -> dict[int, np.ndarray]:
        """Stored vectors of ``ids`` (from the inline matrix where it holds them, else the store)."""
        out: dict[int, np.ndarray] = {}
        arr = np.asarray(ids, dtype=np.int64)
        rows = self.index.rows_of(arr) if len(self.index) else np.full(len(arr), -1, dtype=np.int64)
        have = rows >= 0
        if have.any():
            out.update(zip(arr[have].tolist(), self.index.matrix[rows[have]]))
        missing = arr[~have].tolist()
        for mid, blob in session.vectors.blobs(missing):
            out[mid] = decode_vector(blob, self.embedder.dimensions)
        return out

    def resemblance(self, session: Session, mid: int, others: Sequence[int]) -> dict[int, float]:
        """Cosine of memory ``mid``'s stored vector with each of ``others``' ({} when it has none)."""
        vec = self.vectors_of(session, [mid]).get(mid)
        return {} if vec is None else self.similarities(session, vec, list(others))

    def neighbours(self, session: Session, mid: int, flt: RecallFilter, depth: int) -> list[tuple[int, float]]:
        """The ``depth`` memories passing ``flt`` nearest to memory ``mid`` (itself among them),
        (id, cosine) best first: one more scan, by the workers when they hold the vectors."""
        vec = self.vectors_of(session, [mid]).get(mid)
        if vec is None:
            return []
        vec = vec.astype(np.float32)
        future = self._submit_scan(session, vec, flt, depth)
        if future is None:
            return self.vector_channel(session, vec, flt, depth)[0]
        return self._pool_result(future, session, vec, flt, depth)[0]

    def relevant(self, session: Session, query: str, ids: list[int], cos: dict[int, float],
                 keyword_hits: AbstractSet[int], vouched: AbstractSet[int] = frozenset()) -> set[int]:
        """The candidates with evidence for the query: cosine at the semantic floor, or words that
        hold ``keyword_relevance`` of the IDF mass of the query words the store knows (asked only of
        keyword hits below the floor), or ``vouched`` for by another signal (a neighbouring turn, a
        named speaker)."""
        cfg = self.config
        floor = self.semantic_floor if cfg.channels != "keyword" else math.inf
        out = {i for i in ids if cos.get(i, -1.0) >= floor or i in vouched}
        rest = [i for i in ids if i not in out and i in keyword_hits]
        if rest and cfg.channels != "vector":
            shares = self.keyword_shares(session, query_terms(query), rest, known_only=True)
            out.update(i for i in rest if shares.get(i, 0.0) >= cfg.keyword_relevance)
        return out

    def evident(self, ids: list[int], cos: dict[int, float], keyword: AbstractSet[int]) -> set[int]:
        """Of ``ids``, those with evidence of their own for the query: cosine at the semantic floor,
        or a hit of the keyword channel (not a neighbouring turn's score lent to them)."""
        floor = self.semantic_floor
        return {i for i in ids if cos.get(i, -1.0) >= floor or i in keyword}

    def task_vector(self, session: Session, qvec: np.ndarray, ordered: list[tuple[int, float]]) -> np.ndarray:
        """The query placed among the memories it retrieves: its vector plus ``task_weight`` times the
        score-weighted centroid of the top ``task_depth`` fused candidates, normalised. Paraphrases of one
        task retrieve the same memories, so their task vectors stay close even when their words differ; the
        outcome learner compares tasks with it (every ranked recall has one, so its feedback is placed)."""
        lc = self.config.learning
        top = ordered[: lc.task_depth]
        if lc.task_weight <= 0 or not top:
            return qvec
        vecs = self.vectors_of(session, [i for i, _ in top])
        got = [(vecs[i], s) for i, s in top if i in vecs]
        if not got:
            return qvec
        return blend_task(qvec, np.stack([v for v, _ in got]), np.array([s for _, s in got]), lc.task_weight)

    def expired_ids(self, session: Session, valid_at: float | None) -> set[int]:
        """Memories past their valid_until (a partial index keeps this cheap; clean_expired empties it)."""
        if valid_at is None:
            return set()
        return self._once(("expired", valid_at), lambda: session.memories.expired(valid_at))

    # -- contradictions -----------------------------------------------------------------------------
    def contradictions(
        self, session: Session, ids: list[int], scopes: tuple[str, ...] | None
    ) -> dict[int, list[tuple[int, str, str, bool]]]:
        """For each id: the live memories (id, title, status, effective) that contradict it, within
        the scopes. ``effective`` is False for links the trust policy stored without effect (an
        untrusted contradiction warns but does not demote); the title is left out ("") when the
        other memory is untrusted or flagged, so its text never leaves its quarantine."""
        if not ids or not self._side_tables(session)[0]:
            return {}
        links = session.relations.effects(ids, "contradicts")
        effective = {(a, b): bool(e) for a, b, e in links}
        rows = [(a, b) for a, b, _ in links]
        if not rows:
            return {}
        idset = set(ids)
        others = {b if a in idset else a for a, b in rows} | {a for a, b in rows if b in idset} | {b for a, b in rows if a in idset}
        info: dict[int, tuple[str, str, str]] = {}
        for oid, title, status, scope, src, meta in session.memories.summaries(list(others)):
            quarantined = policy.SOURCE_TRUST.get(src) == policy.UNTRUSTED or '"flagged"' in meta
            info[oid] = ("" if quarantined else title, status, scope)
        out: dict[int, list[tuple[int, str, str, bool]]] = {}
        for a, b in rows:
            for me, other in ((a, b), (b, a)):
                if me not in idset or other not in info:
                    continue
                title, status, scope = info[other]
                if status in ("deprecated", "superseded"):
                    continue
                if scopes is not None and scope not in scopes:
                    continue  # never leak another scope's memory through a warning
                lst = out.setdefault(me, [])
                if all(o[0] != other for o in lst):
                    lst.append((other, title, status, effective[(a, b)]))
        return out

    def _turn_links(self, session: Session, ids: np.ndarray):
        """Where the turns among ``ids`` sit: the episode map (kept in memory), else the store."""
        em = self.episode_map
        if em is not None:
            try:
                em.sync(session, self._counter(session))
                if em.usable:
                    return em
            except DRIVER_ERRORS as exc:
                log.warning("episode map dropped, the store answers this recall: %s", exc)
                em.reset()
        return SqlTurnLinks(session, ids.tolist())

    # -- the whole recall -------------------------------------------------------------------------------
    def conversation_signals(self, session, query, qvec, flt, kscore, sims, kmoments, vmoments, alpha, fz: "Fused",
                             use_vec) -> "Fused":
        """Neighbouring turns and named speakers (conversation_ranking.py). Neighbours of scored
        turns are scored too: they lend their score, and those passing the filter compete."""
        cfg = self.config
        if (not cfg.neighbour_gain and not cfg.speaker_boost) or not self.episodes_present(session) or not len(fz.ids):
            return fz
        links = self._turn_links(session, fz.ids)
        prev, nxt, role = links.links(fz.ids)
        turn = role >= 0
        if not turn.any():
            return fz
        near = set(prev[turn].tolist()) | set(nxt[turn].tolist())
        near.discard(NO_TURN)
        outside = np.array(sorted(near.difference(fz.ids.tolist())), dtype=np.int64)
        n = len(fz.ids)
        ids, score, kz, vz = fz.ids, fz.score, fz.kz, fz.vz
        assert kz is not None and vz is not None, "only the z-score fusion calls this, with both channels' z"
        keep = np.ones(n, dtype=bool)
        if len(outside):
            if use_vec:
                sims.update(self.similarities(session, qvec, outside.tolist()))
            # Only the new candidates: the others' values would come out the same.
            ofused, okz, ovz = zscore_arrays(outside, kscore, sims, kmoments, vmoments, alpha,
                                             vector_std_floor=self.vector_std_floor)
            oprev, onxt, orole = links.links(outside)
            ids, score = np.concatenate((ids, outside)), np.concatenate((score, ofused))
            kz, vz = np.concatenate((kz, okz)), np.concatenate((vz, ovz))
            prev, nxt, role = np.concatenate((prev, oprev)), np.concatenate((nxt, onxt)), np.concatenate((role, orole))
            keep = np.concatenate((keep, self.passing_mask(session, outside, flt)))
        core = np.arange(len(ids)) < n
        expanded = expand(ids, score, prev, nxt, core, cfg.neighbour_gain)
        lent = expanded - score
        expanded, quiet = quiet_replies(expanded, score, role, links.role_names, query)
        lent[quiet] = 0.0  # a quietened reply is lent nothing: it needs evidence of its own to be kept
        boost = np.zeros(len(ids))
        if cfg.speaker_boost:
            codes = np.unique(role[keep & (role >= 0)]).tolist()
            named = named_speakers(query, [links.role_names[c] for c in codes])
            if named:
                hit = keep & np.isin(role, [c for c in codes if links.role_names[c] in named])
                boost[hit] = cfg.speaker_boost
        return Fused(ids[keep], (expanded + boost)[keep], kz[keep], vz[keep], lent[keep], boost[keep])

    def query_vector(self, query: str) -> np.ndarray:
        return self.query_cache.get(self.embedder, query)

    def rank(
        self, query: str, flt: RecallFilter, limit: int, profile: str, min_score: float | None,
        min_trust: float | None = None, qvec: np.ndarray | None = None, explore: bool = False,
        min_score_ratio: float | None = None, aside: bool = False, task_name: str | None = None,
    ) -> list[RecallHit]:
        cfg = self.config
        self._cut_pending = self._cut_pending if aside else None  # aside: a second look; the first one is logged
        if qvec is None:
            qvec = self.query_vector(query)
        depth = max(cfg.candidate_depth, limit * 4)
        use_kw = cfg.channels in ("hybrid", "keyword")
        use_vec = cfg.channels in ("hybrid", "vector")
        if min_trust is not None:
            depth *= 3  # candidates below the trust floor are dropped: look deeper so the limit still fills
        with self.store.reading() as session, self._snapshot():
            future = self._submit_scan(session, qvec, flt, depth)  # the workers scan while FTS runs here
            if future is None:
                kw, vec, vstats = self._inline_channels(session, query, qvec, flt, depth)
            else:
                kw = self.keyword_channel(session, query, flt, depth)
                vec, vstats = self._pool_result(future, session, qvec, flt, depth)
            if not use_kw:
                kw = []
            vec = chunk_channel(self, session, qvec, flt, depth, vec)  # sentence chunks of long episodes (inline)
            if not use_vec:
                vec = []
            alpha: float | None = None
            alpha0: float | None = None  # the keyword weight before the margin fade (both channels only)
            cut_base: dict[int, float] | None = None  # fused scores the relative cut reads, when not `base`
            if cfg.fusion == "rrf":
                rrf = reciprocal_rank_fusion(
                    [[i for i, _ in kw], [i for i, _ in vec]], [cfg.keyword_weight, cfg.vector_weight], cfg.rrf_k
                )
                fz = Fused(np.fromiter(rrf, dtype=np.int64, count=len(rrf)),
                           np.fromiter(rrf.values(), dtype=np.float64, count=len(rrf)))
                base = fz.score
            else:
                sims = dict(vec)
                if use_vec:
                    extra = [i for i, _ in kw if i not in sims]
                    sims.update(self.similarities(session, qvec, extra))
                vmoments = stats_moments(vstats)
                kscore = dict(kw)
                if use_kw:
                    wk = cfg.window_keyword_weight
                    for i, w in self.window_channel(session, query, flt, depth):
                        kscore[i] = kscore.get(i, 0.0) + wk * w
                if use_kw and use_vec:
                    coverage = self.keyword_coverage(session, query_terms(query), [i for i, _ in kw[: cfg.coverage_docs]])
                    margin = vector_margin([c for _, c in vec], vmoments, cfg.vector_margin_rank, self.vector_std_floor)
                    ramp = margin_ramp(vec, kscore, cfg.vector_margin_ramp, cfg.vector_margin_ramp_unmatched)
                    alpha = keyword_weight(coverage, cfg.keyword_alpha_max, *cfg.keyword_coverage_ramp,
                                           margin=margin, margin_ramp=ramp)
                    alpha0 = keyword_weight(coverage, cfg.keyword_alpha_max, *cfg.keyword_coverage_ramp)
                else:
                    alpha = 1.0 if use_kw else 0.0
                kmoments = keyword_moments(kscore, vstats[0])
                ids = np.array(list(kscore.keys() | sims.keys()), dtype=np.int64)
                fused, kz, vz = zscore_arrays(ids, kscore, sims, kmoments, vmoments, alpha,
                                              vector_std_floor=self.vector_std_floor)
                fz = self.conversation_signals(session, query, qvec, flt, kscore, sims, kmoments, vmoments, alpha,
                                               Fused(ids, fused, kz, vz), use_vec)
                # exp keeps the score positive, so policy factors scale it the same way whatever its sign.
                base = np.array([math.exp(min(50.0, s)) for s in fz.score.tolist()])
                if alpha0 is not None and alpha0 != alpha and fz.kz is not None and fz.vz is not None:
                    # The fade orders the list; a context's relative cut reads the fusion before it.
                    # Without the keyword channel the scores are flatter, so the same ratio kept more
                    # off-task memories (agent day, docs/ranking.md).
                    unfaded = fz.score + (alpha0 - alpha) * (fz.kz - fz.vz)
                    cut_base = dict(zip(fz.ids.tolist(), (math.exp(min(50.0, s)) for s in unfaded.tolist())))
            order = np.lexsort((fz.ids, -base))
            ordered = list(zip(fz.ids[order].tolist(), base[order].tolist()))
            trust: dict[int, float] = {}
            if min_trust is not None:  # filter every fused candidate before the pool is cut
                trust = trust_scores(session, [i for i, _ in ordered], half_life_days=cfg.trust_half_life_days,
                                     present=self._side_tables(session))
                ordered = [(i, s) for i, s in ordered if trust.get(i, 0.0) >= min_trust]
            pool = ordered[: max(cfg.rerank_pool, limit * 3)]
            # A name vouches for what worked the last time under it, however far down the channels found it.
            proven, named = self.learning.proven(session, task_name, flt.scopes) if task_name and self.learning \
                else (frozenset(), frozenset())
            pool += [(i, s) for i, s in ordered[len(pool):] if i in proven]
            # The relevance floor: what has no evidence for the query is not returned, nor explored.
            cos = dict(sims) if alpha is not None and use_vec else dict(vec)
            if use_vec:
                unseen = [i for i, _ in pool if i not in cos]
                if unseen:
                    cos.update(self.similarities(session, qvec, unseen))
            _, _, nshare, sboost = fz.about([i for i, _ in pool])
            kw_hits = kscore.keys() if alpha is not None else {i for i, _ in kw}
            keep = self.relevant(session, query, [i for i, _ in pool], cos, kw_hits, sboost.keys() | proven)
            if keep:  # a neighbour vouches only when something matched (else a whole session came back, password
                # too), and only above the scope's average (share > 0) unless the question is about the speaker
                keep |= {i for i, _ in pool if nshare.get(i, 0.0) > 0.0 or (i in nshare and asks_about_speaker(query))}
            pool = [(i, s) for i, s in pool if i in keep]
            pool_ids = [i for i, _ in pool]
            pooled = dict(pool)
            contra = self.contradictions(session, pool_ids, flt.scopes)
            # The policy factors need a few columns of each pooled memory; whole memories
            # (and their explanations) are built only for the hits that are returned.
            weights = cfg.profiles[profile]
            columns = session.memories.policy_columns(pool_ids)  # (id, type, status, confidence, usefulness, importance)
            flagged = flagged_among(session, pool_ids)
            task = None
            if self.learning is not None and self.learning.enabled and use_vec:
                task = self.task_vector(session, qvec, pool)
                self._task_pending = self._task_pending if aside else (query, task)  # log() hands it to the learner
            # A job with a success under its name explores no further: a newcomer's bonus led it (docs/learning.md, Session 34).
            known = known_job(named, proven)
            learned = self._assess(session, qvec if task is None else task, columns, explore and not proven, flagged, task_name, bool(known))
            scored: list[tuple[float, str, int, float, tuple]] = []
            for mid, mtype, status, confidence, usefulness, importance in columns:
                judged = learned.get(mid)
                factors = (
                    policy.status_factor(status, mid in flagged),
                    weights.get(mtype, 1.0),
                    policy.quality(confidence, judged.mean if judged else usefulness, importance),
                    judged.factor if judged else policy.outcome_factor(usefulness, cfg.outcome_gain),
                    policy.contradiction_factor(sum(1 for a in contra.get(mid, []) if a[3])),
                )
                fusion_score = pooled[mid]
                final = fusion_score * factors[0] * factors[1] * factors[2] * factors[3] * factors[4]
                scored.append((final, f"mem_{mid}", mid, fusion_score, factors))
            scored.sort(key=lambda t: (-t[0], t[1]))
            turns = self.episodes_present(session)  # the turn step's inputs only for a store with turns
            spread = max(stats_moments(vstats)[1], self.vector_std_floor)
            scored = corrections_first(session, scored, query, links=self._side_tables(session)[0], turns=turns, flagged=flagged, cosine=cos, spread=spread,
                                       close=[i for i, _ in vec[:FOLLOW_UP_REACH]] if turns else (),
                                       evident=self.evident(pool_ids, cos, {i for i, _ in kw}) if turns else frozenset(),
                                       resemblance=(lambda mid, others: self.resemblance(session, mid, others)) if turns else None,
                                       neighbours=(lambda mid, k: self.neighbours(session, mid, flt, k)) if turns else None)
            if min_score is not None:
                scored = [t for t in scored if t[0] >= min_score]
            if min_score_ratio and scored:
                gain = self.learning.gain if learned and self.learning is not None else None
                job = known or frozenset(i for i, a in learned.items() if a.helped_here)  # cutting.NEAR_KNOWN
                asked = [c[0] for c in columns if c[1] not in policy.RULE_TYPES] if job else []
                late = self.learning.arrivals(session, task_name if known else None, job, asked, qvec if task is None else task) \
                    if asked and self.learning is not None else []
                floors = keep_ratios(scored, cut_base, learned, gain, proven, named, known, fz.worded(pool_ids) if use_kw else None,
                                     kinship(self.vectors_of(session, list(job)).values(), self.vectors_of(session, late)) if late else None)
                self._cut_pending = (query, floors)
                scored = [t for t in scored if floors[t[2]] >= min_score_ratio]
            scored, memories = distinct_texts(scored, limit, session.memories.load)
            final_ids = [t[2] for t in scored]
            if min_trust is None:  # shown on each hit; nothing else needs it
                trust = trust_scores(session, final_ids, half_life_days=cfg.trust_half_life_days,
                                     present=self._side_tables(session))
        kw_rank = {i: (r, s) for r, (i, s) in enumerate(kw, start=1)}
        vec_rank = {i: (r, s) for r, (i, s) in enumerate(vec, start=1)}
        kz_of, vz_of, nshare, sboost = fz.about([t[2] for t in scored])
        hits: list[RecallHit] = []
        for final, _, mid, fusion_score, factors in scored:
            mem = memories.get(mid)
            if mem is None:
                continue
            kr = kw_rank.get(mid)
            vr = vec_rank.get(mid)
            against = contra.get(mid, [])
            judged = learned.get(mid)
            bd = ScoreBreakdown(
                keyword_rank=kr[0] if kr else None,
                keyword_score=round(kr[1], 6) if kr else None,
                vector_rank=vr[0] if vr else None,
                vector_similarity=round(vr[1], 6) if vr else None,
                keyword_z=round(kz_of[mid], 4) if mid in kz_of else None,
                vector_z=round(vz_of[mid], 4) if mid in vz_of else None,
                keyword_alpha=None if alpha is None else round(alpha, 4),
                neighbour_share=round(nshare[mid], 4) if nshare.get(mid) else None,
                speaker_boost=sboost.get(mid),
                fusion=fusion_score,
                status_factor=factors[0],
                profile_factor=factors[1],
                quality=factors[2],
                outcome_factor=factors[3],
                contradiction_factor=factors[4],
                learning=judged.evidence() if judged else None,
            )
            bd.final = final
            hits.append(
                RecallHit(
                    memory=mem,
                    score=final,
                    rank=len(hits) + 1,
                    reasons=hit_reasons(mem, bd, profile, self.config.semantic_match_threshold)
                    + (outcome_reasons(judged, cfg.learning.change_after) if judged else []),
                    warnings=[
                        f"{CONTRADICTED} {f'mem_{oid}'}" + (f' "{title}"' if title else "") + f" ({status})"
                        + ("" if eff else ", an untrusted claim")
                        for oid, title, status, eff in against
                    ] + own_warnings(mem, flags_of(mem)),
                    breakdown=bd,
                    trust=trust.get(mid),
                )
            )
        return hits

    def _assess(self, session: Session, qvec: np.ndarray, columns: list[tuple], explore: bool,
                flagged: set[int], task_name: str | None = None, known: bool = False) -> dict[int, Assessment]:
        """What outcomes say about each candidate for this query (empty: rank by the usefulness column;
        ``known``: a known job, whose cut reads records without guesses). Text flagged as a possible prompt
        injection is never explored into a context: it comes first only on its own match and record."""
        if self.learning is None or not self.learning.enabled:
            return {}
        return self.learning.assess(session, qvec, {c[0]: c[4] for c in columns}, explore, unexplored=flagged, task_key=task_name,
                                     unguessed=known)

    def log(self, session: Session, query: str, profile: str, scopes, hits: list[RecallHit], kind: str,
            task_name: str | None = None, task_label: str | None = None) -> int:
        now = time.time()
        ids = [int(h.memory.id[4:]) for h in hits]
        # A context that was cut logs beside each score the largest floor at which its cut keeps the
        # memory: the tuner replays stricter floors on these (cutting.keep_ratios).
        cut, self._cut_pending = self._cut_pending, None
        floors = cut[1] if cut is not None and cut[0] == query else {}
        rid = session.retrievals.add(
            query, profile, None if scopes is None else json.dumps(list(scopes)), kind, now,
            [(mid, h.rank, h.score, floors.get(mid)) for mid, h in zip(ids, hits)], task_name, task_label)
        pending, self._task_pending = self._task_pending, None
        if pending is not None and pending[0] == query and self.learning is not None:
            self.learning.note_task(rid, pending[1])
        if ids:
            session.memories.record_access(ids, now)
        return rid
