"""Feedback: a task's outcome moves the usefulness of the memories it used (or opened, or
was shown), may validate candidates that earned it, and feeds the learner (the outcome model
and the context tuner, in learning.py); ``reinforce`` nudges one memory by hand. Working-memory
ids in the feedback credit those entries. One transaction per call; a repeated client key is
applied once.

May import the plumbing, the catalog, the working layer, policy, promotion, learning (through
the plumbing), models, validation and task names; never the facade or another service.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence

from recallite_core.catalog import Catalog
from recallite_core.errors import InvalidInputError, MemoryNotFoundError, RetrievalNotFoundError
from recallite_core.features.working_layer import WorkingLayer
from recallite_core.models import OUTCOMES, FeedbackResult, Memory, UsefulnessChange, is_outcome
from recallite_core.plumbing import Plumbing
from recallite_core.policy import rules as policy
from recallite_core.policy.lifecycle import check_optional_reason
from recallite_core.policy.promotion import promote_earned
from recallite_core.storage.base import MemoryFilter
from recallite_core.text.redaction import redact_text
from recallite_core.text.task_names import optional_key, written
from recallite_core.text.validation import check_optional_name, check_unit, fmt_id, parse_id


class FeedbackRecorder:
    """Outcomes of tasks, applied to the memories behind them."""

    def __init__(self, core: Plumbing, catalog: Catalog, layers: WorkingLayer):
        self.core = core
        self.catalog = catalog
        self.layers = layers

    def feedback(
        self,
        retrieval_id: str,
        outcome: str = "success",
        score: float | None = None,
        used_memory_ids: Sequence[str] | None = None,
        reason: str | None = None,
        *,
        client_key: str | None = None,
        task: str | None = None,
    ) -> FeedbackResult:
        """Report how the task went. Used memories (or, if none are named, the ones the agent
        opened, else every memory it was shown, with rank-decayed weight; hits a context left
        out for its budget were not shown) move their usefulness toward the outcome. A 'partial'
        that names and opened none credits no memory: it does not say which shown one fell short.
        A success may validate candidates that earned it (policy.earns_validation; listed in
        ``promoted``); nothing else changes status.
        A repeated ``client_key`` is applied once. Working-memory ids (``wm_…``) in
        ``used_memory_ids`` credit those entries (and count toward their promotion).
        ``task``: the job's name, when the retrieval had none or another one (e.g. a name the
        context listed in ``task_names``): this outcome, and any later one on it, counts under it."""
        used_memory_ids, working_used = self.layers.split_working_ids(used_memory_ids)
        result = self.record(retrieval_id, outcome, score, used_memory_ids, reason, client_key=client_key, task=task)
        if not result.duplicate:
            self.layers.credit_working(result.retrieval_id, outcome, score, working_used)
        return result

    def record(
        self,
        retrieval_id: str,
        outcome: str = "success",
        score: float | None = None,
        used_memory_ids: Sequence[str] | None = None,
        reason: str | None = None,
        *,
        client_key: str | None = None,
        task: str | None = None,
    ) -> FeedbackResult:
        """Apply an outcome to the stored memories of a retrieval (``feedback`` without the
        working-memory ids), in one transaction."""
        self.core.live()
        if not is_outcome(outcome):
            raise InvalidInputError(f"outcome must be one of {', '.join(OUTCOMES)}, got {outcome!r}.")
        sc = None if score is None else check_unit("score", score, 0.0)
        rid = parse_id(retrieval_id, "ret")
        used = None if used_memory_ids is None else list(dict.fromkeys(parse_id(i) for i in used_memory_ids))
        reason_text = None if reason is None else check_optional_reason(reason)
        key = None if client_key is None else check_optional_name(client_key, "client_key", self.core.limits)
        if isinstance(task, str) and self.core.config.redact_secrets:
            task = redact_text(task)[0]  # stored beside the retrieval's redacted query
        name = optional_key(task)
        target = policy.outcome_target(outcome, sc)
        recorded_score = target if sc is None else sc
        qvec = self.core.learning.query_vector(rid)  # embedded outside the write lock
        now = time.time()
        # concurrent: on PostgreSQL feedback queues on its own lock, not on remembers (locking.py).
        with self.core.store.transaction(concurrent=True) as conn:
            conn.outcomes.serialise_feedback()  # what the checks below read stays as read until COMMIT
            logged = conn.retrievals.get(rid)
            if logged is None:
                raise RetrievalNotFoundError(
                    f"No retrieval ret_{rid}. Pass the retrieval_id returned by recall/context in this database."
                )
            if key is not None:
                prev = conn.outcomes.feedback_with_key(key)
                if prev is not None:
                    return self._feedback_result(conn, prev, duplicate=True)
            shown = conn.retrievals.shown(rid)
            if name is not None:
                _name_task(conn, rid, logged[7], name, shown, written(task))
            opened = [mid for mid, _, e, _ in shown if e]
            seen = {mid for mid, _, e, s in shown if e or s}
            if not used:
                _refuse_another_guess(conn, rid, outcome)
            if used is not None:
                if used:
                    found = set(conn.memories.matching(used, MemoryFilter()))
                    missing = [f"mem_{i}" for i in used if i not in found]
                    if missing:
                        raise MemoryNotFoundError(f"used_memory_ids names unknown memories: {', '.join(missing)}.")
                    _refuse_other_scopes(conn, rid, [i for i in used if i not in seen])
                credits = [(i, 1.0) for i in used]
            elif opened:
                credits = [(mid, 1.0) for mid in opened]  # the ones the agent opened
            elif outcome == "partial":
                # Some of what the task needed was missing, and nothing says which of what was
                # shown worked: crediting 'partial' to every memory shown marked a needed rule,
                # shown in each such task, as poor for gaps it did not cause. No memory is credited.
                credits = []
            else:
                # Only what the agent was shown, weighted by its place in what it saw.
                credits = [(mid, policy.rank_weight(place))
                           for place, mid in enumerate(mid for mid, _, _, s in shown if s)]
            # One outcome per memory per retrieval: a memory an earlier feedback on this retrieval
            # credited is not credited again. Four identical success reports on one retrieval had
            # lifted its memory from 0.5 to 0.91, ahead of what one task proved (a new user's trial);
            # the fallback (failure naming the first memory, then success naming the second) is
            # unaffected, each memory is judged once.
            before = credited_on(conn, rid)
            repeated = [mid for mid, _ in credits if mid in before]
            if repeated and len(repeated) == len(credits):
                return FeedbackResult(
                    feedback_id=fmt_id("fb", before[repeated[0]]), retrieval_id=fmt_id("ret", rid), outcome=outcome,
                    score=recorded_score, changes=[], duplicate=True, already_judged=[f"mem_{m}" for m in repeated])
            credits = [(mid, w) for mid, w in credits if mid not in before]
            fid = conn.outcomes.add_feedback(rid, outcome, recorded_score,
                                             json.dumps([f"mem_{i}" for i in (used or [])]), reason_text, key, now)
            olds: dict[int, float] = {}
            candidates: list[int] = []
            for mid, usefulness, status in conn.memories.usefulness_of([mid for mid, _ in credits]):
                olds[mid] = usefulness
                if status == "candidate":
                    candidates.append(mid)
            succ = 1 if target >= 0.5 and outcome != "failure" else 0
            fail = 1 if outcome == "failure" else 0
            updates, outcomes = [], []
            for mid, weight in credits:
                old = olds[mid]
                new = policy.updated_usefulness(old, target, weight, self.core.config.learning_rate)
                updates.append((new, succ, fail, now, mid))
                outcomes.append((fid, mid, weight, target, old, new, now))
            conn.memories.apply_outcomes(updates)
            conn.outcomes.add(outcomes)
            if used and outcome == "success":
                # Served but not named by a task that succeeded: not what this task needed. Not after
                # a partial outcome: what the task lacked may be among them (a procedure the agent
                # passed by for a misleading one above it was marked unused on its own task, then cut).
                # Rules (constraints, preferences) hold whether or not the agent names them: never marked.
                # A memory already judged on this retrieval (tried first, failed, and the agent
                # fell back to this one) has its outcome: a second, 'unused' row would count that
                # failure twice and push its older evidence one step further down the decay.
                named = set(used) | judged_on(conn, rid)
                unused = [mid for mid, _, _, served in shown if served and mid not in named]
                if unused:
                    conn.outcomes.add_unused(fid, unused, policy.UNUSED_WEIGHT, now, policy.RULE_TYPES)
            # Candidates that keep helping earn validation (policy.earns_validation).
            promoted = promote_earned(conn, candidates, now) if outcome == "success" and candidates else []
            # The tuner learns from what the agent named (or opened), never from rank-decayed guesses.
            self.core.learning.on_feedback(conn, rid, qvec, target, used if used is not None else opened, now)
        # What was just written, without reading it back.
        return FeedbackResult(
            feedback_id=fmt_id("fb", fid), retrieval_id=fmt_id("ret", rid), outcome=outcome, score=recorded_score,
            changes=[UsefulnessChange(id=f"mem_{m}", weight=w, old_usefulness=o, new_usefulness=n)
                     for _f, m, w, _t, o, n, _c in outcomes],
            promoted=[f"mem_{m}" for m in promoted], already_judged=[f"mem_{m}" for m in repeated],
            not_shown=[f"mem_{m}" for m in used or () if m not in seen and m not in repeated], task=name,
        )

    def _feedback_result(self, conn, fid: int, duplicate: bool = False) -> FeedbackResult:
        rid, outcome, score = conn.outcomes.feedback(fid)
        changes = [UsefulnessChange(id=f"mem_{m}", weight=w, old_usefulness=o, new_usefulness=n)
                   for m, w, o, n in conn.outcomes.credits_of(fid)]
        return FeedbackResult(
            feedback_id=fmt_id("fb", fid), retrieval_id=fmt_id("ret", rid) if rid else "", outcome=outcome,
            score=score, changes=changes, duplicate=duplicate,
        )

    def reinforce(self, memory_id: str | int, delta: float) -> Memory:
        """Nudge usefulness directly by ``delta`` (-1..1); the result stays in [0, 1]."""
        self.core.live()
        mid = parse_id(memory_id)
        try:
            d = float(delta)
        except (TypeError, ValueError):
            raise InvalidInputError(f"delta must be a number between -1 and 1, got {delta!r}.") from None
        if not math.isfinite(d):
            raise InvalidInputError("delta must be a finite number between -1 and 1.")
        d = max(-1.0, min(1.0, d))
        with self.core.store.transaction() as conn:
            row = conn.memories.usefulness_of([mid])
            if not row:
                raise MemoryNotFoundError(f"No memory mem_{mid}.")
            conn.memories.set_usefulness(mid, policy.clamp01(row[0][1] + d), time.time())
        return self.catalog.get(mid)


def credited_on(conn, rid: int) -> dict[int, int]:
    """Memories that earlier feedback on retrieval ``rid`` credited -> the feedback that did."""
    out: dict[int, int] = {}
    for fid, *_ in conn.retrievals.feedback_of([rid]):
        for mid, *_rest in conn.outcomes.credits_of(fid):
            out.setdefault(mid, fid)
    return out


def judged_on(conn, rid: int) -> set[int]:
    """Memories that earlier feedback on retrieval ``rid`` named in ``used_memory_ids``."""
    out: set[int] = set()
    for _fid, _rid, _outcome, _score, used, *_ in conn.retrievals.feedback_of([rid]):
        out.update(parse_id(i) for i in json.loads(used or "[]"))
    return out


def _name_task(conn, rid: int, old: str | None, name: str, shown: list[tuple[int, int, int, int]],
               label: str | None = None) -> None:
    """Name the retrieval's task before its outcome is written: an unnamed one, or one asked under
    a name that has no outcome yet, or under another name when ``name`` worked last for a memory
    it served (the agent found its job among the names listed). Refused when the retrieval has
    feedback already (renaming under its outcomes would move evidence the caches fitted and split
    one retrieval across two jobs), and otherwise for a name with a record: a slip, a deploy
    reported as a release, put the deploy procedure into release contexts (a new user's trial).
    ``old``: the retrieval's name; ``shown``: its items (retrievals.shown); ``label``: the name as written."""
    if old == name:
        if label is not None:
            conn.retrievals.name_task(rid, name, label)  # the newest wording of the same name
        return
    if conn.retrievals.feedback_of([rid]):
        was = f"task '{old}'" if old else "no task name"
        raise InvalidInputError(f"ret_{rid} already has feedback under {was}: report this outcome without task.")
    if old is not None and conn.retrievals.judged_under(old):
        served = {mid for mid, _, _, s in shown if s}
        if not served & {row[0] for row in conn.outcomes.proven_under(name)}:
            raise InvalidInputError(f"ret_{rid} was asked as task '{old}', a job with outcomes, and nothing it served "
                                    f"worked as '{name}': report under '{old}' (or without task).")
    conn.retrievals.name_task(rid, name, label)


def _refuse_another_guess(conn, rid: int, outcome: str) -> None:
    """A retrieval with feedback already: another outcome that names no memory would be credited
    to what it served by rank, a guess against what the first report said (a new user's trial: a
    success naming mem_15, then a failure on the same retrieval lowered the two memories the
    success had passed over); so would the same outcome after one that named its memories. Naming
    the memories is still taken (a fallback that worked); the same report again is a duplicate."""
    earlier = [(fid, out) for fid, _rid, out, _score, used, *_ in conn.retrievals.feedback_of([rid])
               if out != outcome or json.loads(used or "[]")]
    if earlier:
        fid, out = earlier[0]
        raise InvalidInputError(
            f"ret_{rid} already has feedback {out} (fb_{fid}): name the memories this {outcome} is about in "
            f"used_memory_ids, or report a new task on its own retrieval.")


def _refuse_other_scopes(conn, rid: int, unseen: list[int]) -> None:
    """Memories named that the retrieval neither served nor opened must be of a scope it searched:
    feedback on a billing context raised a webshop memory (a new user's trial)."""
    row = conn.retrievals.get(rid) if unseen else None
    searched = json.loads(row[4]) if row and row[4] else None
    if not searched:
        return  # searched every scope
    outside = [(mid, m.scope) for mid, m in conn.memories.load(unseen).items() if m.scope not in searched]
    if outside:
        named = ", ".join(f"mem_{mid} ({scope})" for mid, scope in sorted(outside))
        raise InvalidInputError(
            f"used_memory_ids names memories of scopes ret_{rid} did not search: {named}; leave them out, or "
            f"report them on a retrieval of their scope.")
