"""Learning from outcomes: what feedback does to ranking, and to the size of a context.

Three parts (docs/learning.md):

* :class:`OutcomeModel` turns a memory's recorded outcomes into a Beta posterior for the
  query at hand: each outcome counts by its credit weight, its recency (older outcomes and
  outcomes followed by newer ones count less) and by how close its query was to this one
  (context-aware credit: a memory that works for task A and fails for task B rises for A and
  falls for B). Ranking multiplies the fused score by ``exp(gain * (u - 0.5))`` where ``u``
  is the posterior mean, plus an optimism bonus when exploring (recallite_context), so a
  memory nobody has tried yet gets its chance over ones that failed.
* :class:`~recallite_core.learning.tuner.ContextTuner` (tuner.py) is a per-scope bandit over a few
  (top-K, relative threshold) settings for recallite_context, rewarded by feedback minus a token cost.
* :class:`Learning` ties both to the store: task vectors of feedback, the cache, rebuilds.

The rows of ``memory_outcomes`` (with the query text in ``retrievals``) are the truth; the
query vectors in ``retrieval_vectors`` are a projection that :meth:`Learning.backfill`
rebuilds. The arithmetic lives in fitting.py; the store side below.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time
from collections import OrderedDict
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

import numpy as np

from recallite_core.embedding.embedder import embed_queries
from recallite_core.learning.fitting import (
    FULL_CREDIT,
    beta_mean_sd,
    blend_task,
    coverage,
    failed_here,
    failure_run,
    last_here,
    learned_factor,
    recency_weights,
    ridge_dual,
    searched_scopes,
    within,
)
from recallite_core.learning.tuner import ContextTuner
from recallite_core.models import OutcomeEvidence
from recallite_core.policy.rules import LEARNED_OUTCOME_GAIN
from recallite_core.storage.base import Session
from recallite_core.storage.codec import decode_many, encode_vector, ts

LEARNING_MODES = ("contextual", "global", "ema")


@dataclass
class LearningConfig:
    """Every number of the outcome learner, with its default (docs/learning.md)."""

    # contextual: per-query posterior from outcomes placed by their query vectors (default);
    # global: the same posterior with every outcome counting whatever its query (ablation);
    # ema: the usefulness column only (what ranking did before this learner).
    mode: str = "contextual"
    gain: float | None = LEARNED_OUTCOME_GAIN  # outcome factor exp(gain * (u - 0.5)); None = RecalliteConfig.outcome_gain
    prior: float = 0.75  # Beta(prior, prior) before any outcome: one success is not forty
    max_outcomes: int = 32  # most recent outcome rows used per memory
    decay: float = 0.9  # weight of an outcome per newer outcome of the same memory
    half_life_days: float = 30.0  # and per elapsed time
    ridge: float = 0.1  # regularisation of the per-memory regression of outcome on query vector
    direction_ridge: float | None = 0.5  # smoother, for the direction (one noisy label is not the truth); None: `ridge`
    # Change detection: a run of `change_after`+ failures, each one a surprise for the outcomes
    # before it (they predicted success there), multiplies the weight of everything older by
    # change_discount ** run. A failure that a newer memory's success on the same retrieval
    # confirms (a replacement worked) counts change_after on its own: drift is seen at once when
    # the replacement is found, within three failures otherwise. Two unconfirmed failures in a row
    # are not enough: with 15% of labels flipped, two in a row happen to some task in most runs of
    # the learning benchmark, and reading them as drift threw away everything the memory had
    # earned (voices-dev noise, mean r6-r10 .85-.88 with 2, .89 with 3; docs/learning.md, Session 7).
    change_after: int = 3
    change_discount: float = 0.3
    # ... counting only failures on the very task of the outcomes before them: where those reach
    # at least change_reach (the fit's prediction of 1 there, about the cosine of the task vectors:
    # `bench --learning --separation` prints how far apart tasks lie). A failure on a neighbouring
    # task that happened to retrieve this memory says nothing about whether it still works for its own.
    change_reach: float = 0.8
    # A failure on a retrieval where another memory, there all along (not newer), succeeded is read
    # as a different task (the agent needed that other memory), not as a change: it counts in the
    # posterior like any failure, but not towards the run.
    explained_failures: bool = True
    # Coverage: how much of a memory's evidence applies to a query is ramp(reach, *coverage),
    # reach = the regression's prediction of the constant 1 at the query (about 1 among the
    # queries it has outcomes for, falling towards 0 away from them); `uncovered_weight` at least.
    coverage: tuple[float, float] = (0.3, 0.7)
    uncovered_weight: float = 0.0
    # Success locality: a memory's success evidence counts exp((s - s*) / success_locality), where s
    # is how close its successes come to the query and s* the same for the best candidate. s is a
    # soft maximum over the memory's successes of cosine + success_locality * ln(weight), so that
    # many successes a little farther away add up (one flipped success of a rival on this very
    # query no longer erases five honest ones on the task's other phrasings). A memory that
    # worked on a task a little like this one does not outrank one that worked on this very task.
    # Failures are not discounted this way. 0 turns it off.
    success_locality: float = 0.05
    # Outcomes are placed by the TASK vector of their retrieval, not the bare query vector: the
    # query plus task_weight times the centroid of its top task_depth fused candidates (see
    # blend_task). Paraphrases of one task whose words share little still land together. On the
    # dev catalog, telling a task's own phrasings from other tasks that retrieve the same memory:
    # AUC .881 with query vectors, .960 at weight 2, .964 at weight 1 (`bench --learning
    # --separation`). Weight 1 over the top 10 puts a phrasing nearer its own task's phrasings more
    # often (--ceiling .963 against .934 on voices-dev) but moved the learning runs by about a family
    # either way and lowered agent-day precision, so the default stays (docs/learning.md, Session 8).
    task_weight: float = 2.0
    task_depth: int = 5
    explore_bonus: float = 0.35  # optimism when exploring: u = mean + explore_bonus * sd
    # ... for a memory never tried although it was shown where the task then succeeded, in full or
    # in part, with other memories (the agent needed something else): its chance came and went.
    # Shown beside a memory that failed, it keeps explore_bonus: the task is still open, and an
    # agent that acts on the first hit never tried the rest (issue loop via context, held out: r3
    # .80 -> .90 when this stopped counting failures; docs/learning.md, Session 14).
    passed_over_bonus: float = 0.0
    # A memory added after its rivals started being judged, and not passed over since, is likelier
    # to be the fix for what changed than one the agent was shown and passed over: it gets this
    # bonus (in sd) instead, until it is judged.
    newcomer_bonus: float = 1.2
    # Repeated mistakes: a memory whose `repeat_failures` outcomes nearest to this very task (task
    # cosine >= `same_task`) are failures it was acted on for, with no success of its own as near, is
    # not served first there again (usefulness capped at `failed_here_usefulness`). The smooth fit
    # let a memory proven on a task that reads like this one lead here after failing here every
    # time (docs/learning.md, Session 20). One failure may be a flipped label. 0 turns it off.
    repeat_failures: int = 2
    same_task: float = 0.9
    failed_here_usefulness: float = 0.05
    # What worked for another job (a success under another task name) counts at this share of its
    # credit for a named job that has a record and has not used the memory (OutcomeModel.elsewhere).
    # 0 dropped it: an agent naming its asks consistently gained most (the loop, voices-fresh-
    # dev named, one attempt, seeds 1-6: clean r10 .78 -> .83), but one that used a second name for
    # half of them lost what that name had proven (voices-dev --task-names 0.5: regressions .022 ->
    # .056); at .3, .022 -> .023 there, and voices-dev named noise r6-r10 .834 -> .850.
    other_names_weight: float = 0.3
    cache_size: int = 4096  # memories whose fitted outcome model is kept in memory
    cache_seconds: float = 3600.0  # refit after this long (time decay moves)
    # recallite_context auto-tuning: (limit, min score as a fraction of the best hit's score), the
    # first arm the default. The arms differ in the relative floor, not the count: what sits far
    # below the best hit is cut, and learning may cut only what it judged poor near this task
    # (retriever: a memory nobody judged keeps its place while its match is within the floor).
    tune_context: bool = True
    # The default floor is what every context without feedback gets. At 0.1 it serves the memories
    # the agent-day tasks need as often as 0.05 did and about two fewer off-task ones (`bench
    # --agent-day --seeds 7,11,23,31`, the twin without feedback: needed-memory recall .979 both,
    # precision .409 -> .561 on dev; docs/learning.md, Session 12); 0.15 already cut needed ones.
    arms: tuple[tuple[int, float], ...] = ((10, 0.1), (10, 0.15), (10, 0.3))
    arm_token_cost: float = 0.2  # reward = outcome - cost * tokens / max_tokens
    arm_decay: float = 0.98  # discount of older rewards (per update)
    # No arm but the default before this many judged contexts in the scope. Each judged context
    # scores every arm nested in the one served (what it would have served is in the log), and
    # one context whose used memory a smaller arm would have cut costs that arm a whole outcome:
    # with 20, a single miss (-1/20) outweighs the tokens a smaller context saves (at most
    # arm_token_cost), so an arm is chosen only when the used memories sat inside it every time.
    min_judged: int = 20

    def __post_init__(self) -> None:
        if self.repeat_failures < 0:
            raise ValueError(f"repeat_failures must be 0 (off) or more, got {self.repeat_failures}")
        if not 0.0 <= self.other_names_weight <= 1.0:
            raise ValueError(f"other_names_weight is a share of credit in [0, 1], got {self.other_names_weight}")
        if not 0.0 < self.same_task <= 1.0:
            raise ValueError(f"same_task is a cosine in (0, 1], got {self.same_task}")
        if not 0.0 <= self.failed_here_usefulness <= 0.5:
            raise ValueError(f"failed_here_usefulness must be in [0, 0.5], got {self.failed_here_usefulness}")


# -- what outcomes say about a memory ---------------------------------------------------------------


@dataclass
class Assessment:
    """What outcomes say about one memory for one query. ``factor`` multiplies the score."""

    outcomes: int = 0  # outcome rows considered
    successes: float = 0.0  # effective success evidence for this query
    failures: float = 0.0
    nearest: float | None = None  # cosine of the closest query with an outcome
    mean: float = 0.5  # posterior mean
    sd: float = 0.0
    bonus: float = 0.0  # exploration bonus added to the mean
    usefulness: float = 0.5  # what ranking used: mean + bonus
    factor: float = 1.0
    last_outcome_at: float | None = None
    explored: bool = False
    failure_run: int = 0  # most recent consecutive surprising failures (change detection)
    newcomer: bool = False  # added after its rivals were judged, not passed over since
    passed_over: bool = False  # never tried, but served where the task was done with other memories
    locality: float = 1.0  # share of its success evidence that applies here (success locality)
    failed_here: bool = False  # failed on this very task repeatedly, never worked there: capped
    helped_here: bool = False  # acted on with success on this very task, its latest outcome there
    misled_here: bool = False  # acted on on this very task, and its latest outcome there was a failure
    acted_failures: bool = False  # a failure the agent acted on it for (not only passed over or shared credit)
    # the posterior without failures credited on a guess (a report that named no memory, shared by rank);
    # None: not asked for (OutcomeModel.assess, unguessed)
    unguessed_mean: float | None = None
    unguessed_failures: float | None = None

    def evidence(self) -> OutcomeEvidence:
        """What a hit's breakdown shows of this assessment (rounded)."""
        return OutcomeEvidence(
            outcomes=self.outcomes, successes=round(self.successes, 4), failures=round(self.failures, 4),
            nearest_similarity=None if self.nearest is None else round(self.nearest, 4),
            posterior_mean=round(self.mean, 4), exploration_bonus=round(self.bonus, 4),
            usefulness=round(self.usefulness, 4), last_outcome_at=ts(self.last_outcome_at),
            failure_run=self.failure_run, newcomer=self.newcomer, success_locality=round(self.locality, 4),
            failed_here=self.failed_here, failed_last_here=self.misled_here,
        )


# -- outcome rows, fitted and cached per memory ------------------------------------------------------


@dataclass
class _Model:
    """A memory's recent outcomes, newest first, with what can be computed before the query."""

    targets: np.ndarray
    weights: np.ndarray  # credit x recency x change discount
    times: np.ndarray
    vectors: np.ndarray  # (m, d): the rows that have a query vector
    dual: np.ndarray  # ridge coefficients of those rows (targets - 0.5)
    support: np.ndarray  # ridge coefficients for constant 1: how much the rows say about a query
    dir_support: np.ndarray  # the same with the direction's regularisation
    vec_weights: np.ndarray
    vec_targets: np.ndarray
    vec_full: np.ndarray  # rows with FULL_CREDIT: the agent acted on the memory
    novec_weight: float  # total weight of rows without a query vector (counted for every query)
    novec_target: float  # their weighted mean target
    run: int
    built_at: float
    # per row, for a refit under a task name (OutcomeModel.named)
    credit: np.ndarray
    rival: np.ndarray
    explained: np.ndarray | None
    keys: tuple[str | None, ...]  # the task key its retrieval was named with
    has: np.ndarray  # per row: whether it has a query vector (its row in ``vectors``)
    vec_keys: tuple[str | None, ...] = ()  # the keys of the rows in ``vectors``
    vec_scopes: tuple[frozenset[str] | None, ...] = ()  # the scopes their retrievals searched (None: all)
    guessed: np.ndarray | None = None  # per row: a failure credited on a guess (None: none is)
    unguessed: _Model | None = None  # the same record without those rows, once fitted
    fit_unguessed: Callable[[], _Model] | None = None  # fits it (OutcomeModel.unguessed_of)

    @property
    def n(self) -> int:
        return int(self.targets.shape[0])


class OutcomeModel:
    """Posterior per (memory, query) from the memory's most recent outcome rows.

    Fitted models are cached per memory and refreshed from ``max(rowid)`` of ``memory_outcomes``
    (new rows name the memories to drop) and the ``learning_epoch`` counter (deletions,
    re-embedded query vectors: drop everything). One store query per recall at most.
    """

    def __init__(self, dimensions: int, cfg: LearningConfig, gain: float):
        self.dimensions = dimensions
        self.cfg = cfg
        self.gain = cfg.gain if cfg.gain is not None else gain
        self._cache: OrderedDict[int, _Model] = OrderedDict()
        self._named: OrderedDict[tuple[int, str], tuple[_Model, _Model]] = OrderedDict()  # (source, fit under a name)
        self._elsewhere: OrderedDict[tuple[int, str], tuple[_Model, _Model]] = OrderedDict()  # (source, elsewhere())
        self._offered: set[int] = set()  # memories known to have been passed over (offered())
        # task key -> (outcome mark, (memory id, scopes searched, named) of what worked last under it)
        self._proven: OrderedDict[str, tuple[tuple[int, int | None], tuple[tuple[int, frozenset[str] | None, bool], ...]]] \
            = OrderedDict()
        self._seen_rowid = -1
        self._epoch: int | None = None
        self._empty = self._fit([], 0.0)
        # Task vectors of recent retrievals (ret id -> vector), kept until their feedback arrives.
        self._tasks: OrderedDict[int, np.ndarray] = OrderedDict()

    @property
    def enabled(self) -> bool:
        return self.cfg.mode in ("contextual", "global")

    TASKS_KEPT = 1024

    def note_task(self, retrieval_id: int, vector: np.ndarray) -> None:
        """Remember the task vector a retrieval was ranked with (its feedback stores it)."""
        self._tasks[retrieval_id] = vector
        while len(self._tasks) > self.TASKS_KEPT:
            self._tasks.popitem(last=False)

    def task_of(self, retrieval_id: int) -> np.ndarray | None:
        return self._tasks.get(retrieval_id)

    def invalidate(self) -> None:
        self._cache.clear()
        self._named.clear()
        self._elsewhere.clear()
        self._proven.clear()
        self._offered.clear()
        self._seen_rowid = -1
        self._epoch = None

    def _sync(self, session: Session) -> None:
        top, epoch = session.outcomes.outcome_mark()
        if epoch != self._epoch or top < self._seen_rowid:
            self._cache.clear()
            self._named.clear()
            self._offered.clear()
        elif top > self._seen_rowid:
            for mid in session.outcomes.judged_since(self._seen_rowid):
                self._cache.pop(mid, None)
        self._seen_rowid, self._epoch = top, epoch

    def models(self, session: Session, ids: Sequence[int], now: float) -> dict[int, _Model]:
        self._sync(session)
        if self._seen_rowid == 0:  # no outcome recorded yet: nothing to read or fit
            return {i: self._empty for i in ids}
        out: dict[int, _Model] = {}
        missing = []
        for i in ids:
            m = self._cache.get(i)
            if m is None or now - m.built_at > self.cfg.cache_seconds:
                missing.append(i)
            else:
                self._cache.move_to_end(i)
                out[i] = m
        if missing:
            fetched: dict[int, list] = {i: [] for i in missing}
            for row in session.outcomes.history(missing, self.cfg.max_outcomes):
                fetched[row[0]].append(row[1:])
            for mid, rs in fetched.items():
                m = self._fit(rs, now) if rs else self._empty
                self._cache[mid] = m
                out[mid] = m
            while len(self._cache) > self.cfg.cache_size:
                self._cache.popitem(last=False)
        return out

    def _fit(self, rs: list, now: float) -> _Model:
        """Rows newest first: (target, credit, time, newer rival succeeded, older rival succeeded, vector[,
        task key, scopes searched, credited on a guess]) as ``Outcomes.history`` returns them."""
        cfg, d = self.cfg, self.dimensions
        n = len(rs)
        targets = np.array([r[0] for r in rs], dtype=np.float64)
        credit = np.array([r[1] for r in rs], dtype=np.float64)
        times = np.array([r[2] for r in rs], dtype=np.float64)
        rival = np.array([bool(r[3]) for r in rs], dtype=bool)
        explained = np.array([bool(r[4]) for r in rs], dtype=bool) if cfg.explained_failures else None
        has = np.array([r[5] is not None and len(r[5]) == 4 * d for r in rs], dtype=bool)
        if cfg.mode != "contextual":
            has[:] = False
        allvecs = np.zeros((n, d))
        if has.any():
            allvecs[has] = decode_many([r[5] for r, h in zip(rs, has) if h], d)
        guessed = np.array([r[0] < 0.5 and len(r) > 8 and bool(r[8]) for r in rs], dtype=bool)
        return self._fit_rows(targets, credit, times, rival, explained, has, allvecs,
                              tuple(r[6] if len(r) > 6 else None for r in rs), now,
                              tuple(searched_scopes(r[7] if len(r) > 7 else None) for r in rs), guessed)

    def named(self, mid: int, m: _Model, key: str, q: np.ndarray, now: float) -> _Model:
        """The model of memory ``mid`` as seen by a query named ``key``. Where it has outcomes under
        that name, they alone are its record for this job, whatever their words: all at the query's
        own task vector (cosine 1); its other outcomes (unnamed, other names) are other jobs or
        guesses about this one. A memory with no outcome under the name is seen as by an unnamed
        query: a name the agent has not used before costs nothing. (Keeping the unnamed outcomes
        beside the named ones meant a refit per candidate per query; leaving
        other names out of every memory once the name is known cost voices-dev .94 -> .81 at round
        3 via recall: a memory proven under another name then ranks on its usefulness column.)"""
        if self.cfg.mode != "contextual" or key not in m.keys:
            return m
        hit = self._named.get((mid, key))
        if hit is None or hit[0] is not m:
            # Rows at one point: the kernel is all ones, so the fit holds wherever that point is.
            mine = np.array([k == key for k in m.keys], dtype=bool)
            point = np.zeros((int(mine.sum()), self.dimensions))
            point[:, 0] = 1.0
            hit = (m, self._fit_rows(m.targets[mine], m.credit[mine], m.times[mine], m.rival[mine],
                                     None if m.explained is None else m.explained[mine], np.ones(len(point), dtype=bool),
                                     point, (key,) * len(point), now, guessed=None if m.guessed is None else m.guessed[mine]))
            self.unguessed_of(hit[1])  # before the rows are placed at the query: fitted at their own point
            self._named[(mid, key)] = hit
            while len(self._named) > self.cfg.cache_size:
                self._named.popitem(last=False)
        return _placed(hit[1], q)

    def elsewhere(self, mid: int, m: _Model, key: str, now: float) -> _Model:
        """The model of memory ``mid``, which has no outcome under task name ``key``, as seen by a job of
        that name that has a record: its successes under other names at ``other_names_weight`` of their
        credit. What worked for another job is weak evidence it does this one (it led this job's asks:
        the issue's loop, voices-fresh-dev named, one attempt, seeds 1-6: 66 of the family-rounds the
        oracle won and we lost); what it failed or was passed over for there, and its unnamed
        outcomes, count in full."""
        hit = self._elsewhere.get((mid, key))
        if hit is None or hit[0] is not m:
            other = (m.targets >= 0.5) & np.array([k is not None for k in m.keys], dtype=bool)
            fit = m
            if other.any() and self.cfg.other_names_weight < 1.0:
                allvecs = np.zeros((m.n, self.dimensions))
                allvecs[m.has] = m.vectors
                where = iter(m.vec_scopes)  # scopes matter only where a row has a vector
                credit = np.where(other, m.credit * self.cfg.other_names_weight, m.credit)
                fit = self._fit_rows(m.targets, credit, m.times, m.rival, m.explained, m.has, allvecs, m.keys, now,
                                     tuple(next(where) if h else None for h in m.has), m.guessed)
            hit = (m, fit)
            self._elsewhere[(mid, key)] = hit
            while len(self._elsewhere) > self.cfg.cache_size:
                self._elsewhere.popitem(last=False)
        return hit[1]

    def proven(self, session: Session, key: str, scopes: Sequence[str] | None) -> tuple[frozenset[int], frozenset[int]]:
        """(memories whose latest outcome under task name ``key``, in a retrieval within ``scopes``,
        was a success (outcomes.proven_under), those of them a feedback named), read again only
        after new outcomes. Recall lets them past the relevance floor for a query of that name: the
        agent says this is the job they worked for, whatever its words this time."""
        if self.cfg.mode != "contextual":
            return frozenset(), frozenset()
        self._sync(session)
        mark = (self._seen_rowid, self._epoch)
        hit = self._proven.get(key)
        if hit is None or hit[0] != mark:
            rows = session.outcomes.proven_under(key) if self._seen_rowid > 0 else []
            hit = (mark, tuple((mid, searched_scopes(raw), by_name) for mid, raw, by_name in rows))
            self._proven[key] = hit
            while len(self._proven) > self.cfg.cache_size:
                self._proven.popitem(last=False)
        here = [(mid, by_name) for mid, where, by_name in hit[1] if within(where, scopes)]
        return frozenset(mid for mid, _ in here), frozenset(mid for mid, by_name in here if by_name)

    def arrivals(self, session: Session, key: str | None, job: AbstractSet[int], ids: Sequence[int],
                 q: np.ndarray | None = None, now: float | None = None) -> list[int]:
        """Which of ``ids``, nobody judged yet, were written after the job first worked with the memories
        that did it (``job``): after the earliest success (named or shared by rank) in their outcome
        rows, under task name ``key`` or, when ``key`` is None, at task cosine ``same_task`` or more
        to ``q``. Only the rows a model keeps count (``max_outcomes`` per memory): for a long-used job
        "first" is the earliest success still on record. Empty without such a success."""
        now = time.time() if now is None else now
        models = self.models(session, list(job), now)
        if key is not None:
            worked = [float(t) for m in models.values() for t, k, y in zip(m.times, m.keys, m.targets) if k == key and y >= 0.5]
        else:
            at = None if q is None else np.asarray(q, dtype=np.float32)
            worked = [float(t) for m in models.values() if at is not None and m.vectors.shape[0] for t, s, y in
                      zip(m.times[m.has], (m.vectors @ at).tolist(), m.vec_targets) if s >= self.cfg.same_task and y >= 0.5]
        fresh = [i for i, m in self.models(session, ids, now).items() if m.n == 0] if worked else []
        created = created_at(session, fresh) if fresh else {}
        return [i for i in fresh if created.get(i, 0.0) > min(worked)]

    def names_near(self, ids: Sequence[int], q: np.ndarray | None, key: str | None, scopes: Sequence[str] | None,
                   limit: int = 3) -> list[str]:
        """Task names under which memories ``ids`` worked in retrievals within ``scopes`` (another
        project's names stay its own), the name whose success lies nearest to task vector ``q``
        first: what the agent may already call the job it is doing. Empty when ``key`` has
        outcomes on one of them (the agent's own name is known here), or in mode "global".
        Read from the models the ranking of these ids just fitted (no store query: a recall on
        PostgreSQL makes no extra round trip for it)."""
        if self.cfg.mode != "contextual" or q is None or not ids:
            return []
        best: dict[str, float] = {}
        for m in (self._cache.get(i) for i in ids):
            if m is None:
                continue
            if key is not None and key in m.keys:
                return []
            if not any(m.vec_keys):
                continue
            sims = m.vectors @ np.asarray(q, dtype=np.float32)
            for k, sim, target, where in zip(m.vec_keys, sims.tolist(), m.vec_targets.tolist(), m.vec_scopes):
                if k is not None and target > 0.5 and sim > best.get(k, -2.0) and within(where, scopes):
                    best[k] = sim
        return sorted(best, key=lambda k: (-best[k], k))[:limit]

    def _fit_rows(self, targets: np.ndarray, credit: np.ndarray, times: np.ndarray, rival: np.ndarray,
                  explained: np.ndarray | None, has: np.ndarray, allvecs: np.ndarray, keys: tuple[str | None, ...],
                  now: float, scopes: tuple[frozenset[str] | None, ...] = (), guessed: np.ndarray | None = None) -> _Model:
        """Weights (credit x recency x change discount) and the fit. With failures credited on a guess
        (``guessed``), the record without them, with the same weights, is fitted when first asked for
        (unguessed_of: the known-job cut in retrieval/cutting.py; a report that named nothing blames
        whatever led the context)."""
        cfg = self.cfg
        n = len(targets)
        weights = credit * recency_weights(n, now - times, cfg.decay, cfg.half_life_days)
        run, rows = failure_run(allvecs, targets, weights, has, cfg.ridge, min_reach=cfg.change_reach, confirmed=rival,
                                explained=explained, confirmed_count=cfg.change_after) if n else (0, 0)
        if run >= cfg.change_after:
            weights = weights.copy()
            weights[rows:] *= cfg.change_discount ** run
        m = self._model(targets, weights, times, credit, rival, explained, has, allvecs, keys, scopes, run, now)
        if guessed is not None and guessed.any():
            k = ~guessed
            m.guessed = guessed
            m.fit_unguessed = functools.partial(
                self._model, targets[k], weights[k], times[k], credit[k], rival[k],
                None if explained is None else explained[k], has[k], allvecs[k],
                tuple(x for x, y in zip(keys, k) if y), tuple(x for x, y in zip(scopes, k) if y), run, now)
        return m

    def unguessed_of(self, m: _Model) -> _Model | None:
        """The fit of ``m``'s record without its guessed failures (None: it has none); fitted once."""
        if m.unguessed is None and m.fit_unguessed is not None:
            m.unguessed = m.fit_unguessed()
        return m.unguessed

    def _model(self, targets: np.ndarray, weights: np.ndarray, times: np.ndarray, credit: np.ndarray,
               rival: np.ndarray, explained: np.ndarray | None, has: np.ndarray, allvecs: np.ndarray,
               keys: tuple[str | None, ...], scopes: tuple[frozenset[str] | None, ...], run: int, now: float) -> _Model:
        cfg = self.cfg
        vecs = allvecs[has]
        vw = weights[has]
        lam_dir = cfg.ridge if cfg.direction_ridge is None else cfg.direction_ridge
        dual = ridge_dual(vecs, targets[has] - 0.5, vw, lam_dir) if has.any() else np.zeros(0)
        support = ridge_dual(vecs, np.ones(int(has.sum())), vw, cfg.ridge) if has.any() else np.zeros(0)
        dir_support = support if lam_dir == cfg.ridge else (
            ridge_dual(vecs, np.ones(int(has.sum())), vw, lam_dir) if has.any() else np.zeros(0))
        nw = float(weights[~has].sum())
        nt = float(np.dot(weights[~has], targets[~has]) / nw) if nw > 0 else 0.5
        return _Model(targets=targets, weights=weights, times=times, vectors=vecs.astype(np.float32), dual=dual,
                      support=support, dir_support=dir_support,
                      vec_weights=vw, vec_targets=targets[has], vec_full=credit[has] >= FULL_CREDIT, novec_weight=nw,
                      novec_target=nt, run=run, built_at=now, credit=credit, rival=rival, explained=explained, keys=keys,
                      vec_keys=tuple(k for k, h in zip(keys, has) if h),
                      vec_scopes=tuple(s for s, h in zip(scopes, has) if h), has=has)

    def success_closeness(self, m: _Model, sims: np.ndarray) -> float | None:
        """How close the memory's successes come to the query: a soft maximum (log-sum-exp at
        temperature success_locality) over its successes of cosine + success_locality * ln(weight),
        i.e. success_locality * ln(sum of weight * exp(cosine / success_locality)). A faded or
        discounted success counts as farther; several successes at one distance count as nearer
        than one."""
        ok = m.vec_targets >= 0.5
        if not ok.any():
            return None
        lam = self.cfg.success_locality
        x = sims[ok] + lam * np.log(np.maximum(m.vec_weights[ok], 1e-12))
        top = float(x.max())
        return top + lam * math.log(float(np.exp((x - top) / lam).sum()))

    def closest_success(self, models: Iterable[_Model], q: np.ndarray | None) -> float | None:
        """The best success closeness among the candidates of a recall (None: no success anywhere,
        or locality off). Memories flagged as stopped working are left out: their old successes
        are no evidence any more, and must not discount the memory that replaced them."""
        if q is None or self.cfg.success_locality <= 0:
            return None
        near = [c for m in models if m.vectors.shape[0] and m.run < self.cfg.change_after
                and (c := self.success_closeness(m, (m.vectors @ q).astype(np.float64))) is not None]
        return max(near) if near else None

    def assess_model(self, m: _Model, qvec: np.ndarray | None, prior_mean: float, explore: bool,
                     untried: str | None = None, closest: float | None = None, key: str | None = None,
                     unguessed: bool = False) -> Assessment:
        """The posterior of one memory for one query (pure given the fitted model).

        With the query's cosines s to the outcome queries: reach = s . support, raw = s . dual.
        Direction p = 0.5 + raw / reach (the outcomes' success rate as seen from this query),
        mass = total weight x coverage(reach); outcomes without a query vector count for every
        query with their plain mean. alpha = prior + locality mass p, beta = prior + mass (1 - p),
        where locality = exp((closeness - closest) / success_locality) and ``closest`` is the
        best success closeness among the candidates of this recall (None: no discount). ``unguessed``:
        also the posterior without failures credited on a guess."""
        cfg, nearest, locality = self.cfg, None, 1.0
        repeated, last, misled, acted = False, None, False, bool(((m.targets < 0.5) & (m.credit >= FULL_CREDIT)).any())
        if m.n == 0:
            alpha, beta = 2 * cfg.prior * prior_mean, 2 * cfg.prior * (1 - prior_mean)
            succ = fail = 0.0
        else:
            mass_v, p_v = 0.0, 0.5
            if m.vectors.shape[0] and qvec is not None:
                sims = (m.vectors @ qvec).astype(np.float64)
                nearest = float(sims.max())
                if closest is not None and cfg.success_locality > 0:
                    mine = self.success_closeness(m, sims)
                    if mine is not None:
                        locality = math.exp(min(0.0, mine - closest) / cfg.success_locality)
                repeated = failed_here(sims, m.vec_targets, m.vec_full, cfg.same_task, cfg.repeat_failures)
                last = last_here(sims, m.vec_targets, m.vec_full, cfg.same_task)
                # the latest acted-on outcome here, under this name or none (another name is another job)
                mine = m.vec_full & np.array([key is None or k in (None, key) for k in m.vec_keys], dtype=bool)
                misled = last_here(sims, m.vec_targets, mine, cfg.same_task, newest=True) is False
                acted = bool(((m.vec_targets < 0.5) & m.vec_full & (sims >= cfg.coverage[0])).any())  # near here
                raw = float(sims @ m.dual)
                reach = float(sims @ m.support)
                mass_v = float(m.vec_weights.sum()) * coverage(reach, cfg.coverage, cfg.uncovered_weight)
                dreach = float(sims @ m.dir_support)
                p_v = min(0.98, max(0.02, 0.5 + (raw / dreach if dreach > 0.02 else raw)))
            elif m.vectors.shape[0]:  # no query vector: count them like the rest
                mass_v = float(m.vec_weights.sum())
                p_v = float(np.dot(m.vec_weights, m.vec_targets) / mass_v) if mass_v > 0 else 0.5
            succ = mass_v * p_v * locality + m.novec_weight * m.novec_target
            fail = mass_v * (1 - p_v) + m.novec_weight * (1 - m.novec_target)
            alpha, beta = cfg.prior + succ, cfg.prior + fail
        mean, sd = beta_mean_sd(alpha, beta)
        without = self.unguessed_of(m) if unguessed else None
        clean = None if without is None else self.assess_model(without, qvec, prior_mean, False, None, closest, key)
        scale = {"newcomer": cfg.newcomer_bonus, "passed-over": cfg.passed_over_bonus}.get(untried or "", cfg.explore_bonus)
        bonus = scale * sd if explore else 0.0
        u = min(1.0, mean + bonus)
        if repeated:  # after the bonus: exploring must not bring it back first either
            u = min(u, cfg.failed_here_usefulness)
        return Assessment(
            outcomes=m.n, successes=succ, failures=fail, nearest=nearest, mean=mean, sd=sd, bonus=bonus, usefulness=u,
            factor=learned_factor(u, self.gain), last_outcome_at=float(m.times.max()) if m.n else None,
            explored=explore and m.n == 0 and bonus > 0, failure_run=m.run, newcomer=untried == "newcomer",
            passed_over=untried == "passed-over", locality=locality, failed_here=repeated,
            helped_here=not repeated and bool(last) and mean >= 0.5, misled_here=repeated or misled, acted_failures=acted,
            unguessed_mean=(mean if clean is None else clean.mean) if unguessed else None,
            unguessed_failures=(fail if clean is None else clean.failures) if unguessed else None,
        )

    def assess(
        self, session: Session, qvec: np.ndarray | None, candidates: dict[int, float],
        explore: bool, now: float | None = None, unexplored: AbstractSet[int] = frozenset(),
        task_key: str | None = None, unguessed: bool = False,
    ) -> dict[int, Assessment]:
        """Assessment of each candidate: id -> its usefulness column (the prior of a memory
        without outcome rows). ``unexplored``: ids that get no exploration bonus (flagged text).
        ``task_key``: the caller's name for the task; rows logged under it count as this very task.
        ``unguessed``: each judged memory is also assessed on its record without guessed failures
        (a second posterior: asked for by a known job's cut alone)."""
        if not self.enabled or not candidates:
            return {}
        now = time.time() if now is None else now
        models = self.models(session, list(candidates), now)
        q = None if qvec is None else np.asarray(qvec, dtype=np.float32)
        if task_key is not None and q is not None:
            if any(task_key in m.keys for m in models.values()):  # the name has a record here
                models = {mid: self.elsewhere(mid, m, task_key, now) if m.n and task_key not in m.keys else m
                          for mid, m in models.items()}
            models = {mid: self.named(mid, m, task_key, q, now) for mid, m in models.items()}
        # Never tried: a newcomer (created after its rivals started being judged, never offered in
        # a retrieval that succeeded since), passed over (shown where other memories did the job), or
        # just untried.
        judged = [float(m.times.min()) for m in models.values() if m.n]
        since = min(judged) if judged else None
        untried = [mid for mid in candidates if models.get(mid, self._empty).n == 0]
        # (no outcome row in the store: no feedback credited anything, nothing was passed over)
        offered = self.offered(session, untried) if explore and untried and self._seen_rowid > 0 else set()
        created = created_at(session, [i for i in untried if i not in offered]) if explore and since is not None else {}
        closest = self.closest_success(models.values(), q)
        out = {}
        # Without outcome rows an assessment depends on the prior and the status alone, and most
        # candidates share them: build each once per recall (assessments are never mutated).
        unjudged: dict[tuple[float, str | None, bool], Assessment] = {}
        for mid, u in candidates.items():
            m = models.get(mid, self._empty)
            status = None
            ex = explore and mid not in unexplored
            if m.n == 0:
                if ex:
                    if mid in offered:
                        status = "passed-over"
                    elif since is not None and created.get(mid, since) > since:
                        status = "newcomer"
                a = unjudged.get((u, status, ex))
                if a is None:
                    a = unjudged[(u, status, ex)] = self.assess_model(m, q, u, ex, status, closest)
                out[mid] = a
            else:
                out[mid] = self.assess_model(m, q, 0.5, ex, status, closest, task_key, unguessed)
        return out

    def offered(self, session: Session, ids: Sequence[int]) -> set[int]:
        """Which of ``ids`` were shown in some retrieval whose feedback was a success or a partial
        one (monotonic: cached once true). Reads alone never change it, nor does a failure: only
        a task done with other memories marks what was offered and not needed."""
        unknown = [i for i in ids if i not in self._offered]
        self._offered.update(session.outcomes.offered(unknown))
        return {i for i in ids if i in self._offered}


def _placed(m: _Model, q: np.ndarray) -> _Model:
    """A model fitted at one point (OutcomeModel.named), its rows placed at query ``q`` (its fit without
    guesses too: fitted before, never refitted from the placed rows)."""
    at = np.asarray(q, dtype=np.float32)
    unguessed = None if m.unguessed is None else _placed(m.unguessed, q)
    return dataclasses.replace(m, vectors=np.tile(at, (m.vectors.shape[0], 1)), unguessed=unguessed, fit_unguessed=None)


def created_at(session: Session, ids: Sequence[int]) -> dict[int, float]:
    """Creation time of each of ``ids`` (epoch seconds)."""
    return session.memories.created_at(ids)


def outcome_reasons(a: Assessment, change_after: int = 3) -> list[str]:
    """Reason tags saying what feedback did to a hit."""
    if a.outcomes == 0:
        if a.newcomer:
            return ["new:explored-first"]
        if a.passed_over:
            return ["untried:passed-over"]
        return ["untried:exploration-bonus"] if a.explored else []
    out = []
    if a.successes + a.failures < 0.3:
        out.append("no-outcomes-on-similar-tasks")
    elif a.mean >= 0.6:
        out.append("helped-on-similar-tasks")
    elif a.mean <= 0.4:
        # Only a failure it was acted on for misled anyone; served and left unused is not that.
        out.append("misled-on-similar-tasks" if a.acted_failures else "passed-over-on-similar-tasks")
    else:
        out.append("mixed-outcomes-on-similar-tasks")
    if a.failure_run >= change_after:
        out.append("stopped-working-recently")
    if a.failed_here:
        out.append("failed-repeatedly-on-this-task")
    return out


# -- the store side ------------------------------------------------------------------------------------


class Learning:
    """Outcome model + context tuner, wired to the store and the query-vector cache."""

    def __init__(self, store, embedder, cfg: LearningConfig, gain: float):
        self.store = store
        self.embedder = embedder
        self.cfg = cfg
        self.outcomes = OutcomeModel(embedder.dimensions, cfg, gain)
        self.tuner = ContextTuner(cfg)

    # What retrieval_vectors hold (meta "retrieval_vectors"); stores from before task vectors hold
    # bare query vectors, which ensure_task_vectors rebuilds once.
    VECTORS = "task-v1"

    def ensure_task_vectors(self) -> None:
        """Rebuild the stored vectors of judged retrievals once if they predate task vectors (a
        bare query vector lies elsewhere than a task vector, so old and new evidence would not meet)."""
        if not self.outcomes.enabled or self.store.get_meta("retrieval_vectors") == self.VECTORS:
            return
        with self.store.reading() as session:
            old = session.retrievals.has_task_vectors()
        if old:
            self.backfill(rebuild=True)
        with self.store.transaction() as session:
            self.store.set_meta(session, "retrieval_vectors", self.VECTORS)

    def query_vector(self, retrieval_id: int) -> np.ndarray | None:
        """The task vector of a retrieval (the one it was ranked with, when this process served it;
        else rebuilt from its query and logged items). Call outside a transaction."""
        if not self.outcomes.enabled:
            return None
        with self.store.reading() as session:
            row = session.retrievals.query_of(retrieval_id)
        if row is None or row[1]:
            return None
        task = self.outcomes.task_of(retrieval_id)
        return task if task is not None else self.rebuild_tasks([(retrieval_id, row[0])])[0]

    def rebuild_tasks(self, rows: Sequence[tuple[int, str]]) -> list[np.ndarray]:
        """Task vectors of logged retrievals (id, query), from their query and top logged items: close
        to what ranking used (the log holds the served order, after learning). Embeds outside the lock."""
        depth, d = self.cfg.task_depth, self.embedder.dimensions
        with self.store.reading() as session:
            items = [session.retrievals.served_vectors(rid, depth) for rid, _ in rows]
        out: list[np.ndarray] = []
        for start in range(0, len(rows), 256):
            chunk = rows[start : start + 256]
            # embedded as recall embedded them (an embedder may have a query side of its own)
            out.extend(np.asarray(embed_queries(self.embedder, [q for _, q in chunk]), dtype=np.float32))
        return [blend_task(q, decode_many([b for b, _ in got], d), np.array([sc for _, sc in got]), self.cfg.task_weight)
                if got else q for q, got in zip(out, items)]

    def on_feedback(self, session: Session, retrieval_id: int, qvec: np.ndarray | None, target: float,
                    used: Sequence[int] | None, now: float) -> None:
        if qvec is not None:
            session.retrievals.add_task_vector(retrieval_id, encode_vector(qvec, self.embedder.dimensions))
        self.tuner.on_feedback(session, retrieval_id, target, used, now)

    def backfill(self, rebuild: bool = False) -> int:
        """Embed the queries of retrievals that have feedback but no stored vector (all of them
        with ``rebuild``, e.g. after the embedder changed). Returns how many were embedded."""
        with self.store.reading() as session:
            rows = session.retrievals.judged(without_vector=not rebuild)
        if not rows and not rebuild:
            return 0
        vecs = self.rebuild_tasks(rows)
        with self.store.transaction() as session:
            session.retrievals.replace_task_vectors(
                [(rid, encode_vector(v, self.embedder.dimensions)) for (rid, _), v in zip(rows, vecs)], clear=rebuild)
        with self.store.lock:
            self.outcomes.invalidate()
        return len(rows)


__all__ = ["LEARNING_MODES", "LearningConfig", "Assessment", "OutcomeModel", "Learning", "outcome_reasons"]
