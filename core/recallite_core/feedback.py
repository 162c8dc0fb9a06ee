"""Feedback: a task's outcome moves the usefulness of the memories it used (or opened, or
was shown), may validate candidates that earned it, and feeds the learner (the outcome model
and the context tuner, in learning.py); ``reinforce`` nudges one memory by hand. Working-memory
ids in the feedback credit those entries. One transaction per call; a repeated client key is
applied once.

May import the plumbing, the catalog, the working layer, policy, promotion, learning (through
the plumbing), models and validation; never the facade or another service.
"""

from __future__ import annotations

import json
import math
import time
from typing import Sequence

from . import policy
from .catalog import Catalog
from .errors import InvalidInputError, MemoryNotFoundError, RetrievalNotFoundError
from .lifecycle import check_optional_reason
from .models import OUTCOMES, FeedbackResult, Memory, UsefulnessChange
from .plumbing import Plumbing
from .promotion import promote_earned
from .validation import check_optional_name, check_unit, fmt_id, parse_id
from .working_layer import WorkingLayer


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
    ) -> FeedbackResult:
        """Report how the task went. Used memories (or, if none are named, the ones the agent
        opened, else every memory it was shown, with rank-decayed weight; hits a context left
        out for its budget were not shown) move their usefulness toward the outcome.
        A success may validate candidates that earned it (policy.earns_validation; listed in
        ``promoted``); nothing else changes status.
        A repeated ``client_key`` is applied once. Working-memory ids (``wm_…``) in
        ``used_memory_ids`` credit those entries (and count toward their promotion)."""
        used_memory_ids, working_used = self.layers.split_working_ids(used_memory_ids)
        result = self.record(retrieval_id, outcome, score, used_memory_ids, reason, client_key=client_key)
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
    ) -> FeedbackResult:
        """Apply an outcome to the stored memories of a retrieval (``feedback`` without the
        working-memory ids), in one transaction."""
        self.core.live()
        if outcome not in OUTCOMES:
            raise InvalidInputError(f"outcome must be one of {', '.join(OUTCOMES)}, got {outcome!r}.")
        sc = None if score is None else check_unit("score", score, 0.0)
        rid = parse_id(retrieval_id, "ret")
        used = None if used_memory_ids is None else list(dict.fromkeys(parse_id(i) for i in used_memory_ids))
        reason_text = None if reason is None else check_optional_reason(reason)
        key = None if client_key is None else check_optional_name(client_key, "client_key", self.core.limits)
        target = policy.outcome_target(outcome, sc)
        recorded_score = target if sc is None else sc
        qvec = self.core.learning.query_vector(rid)  # embedded outside the write lock
        now = time.time()
        with self.core.store.transaction() as conn:
            if conn.execute("SELECT 1 FROM retrievals WHERE id = ?", (rid,)).fetchone() is None:
                raise RetrievalNotFoundError(
                    f"No retrieval ret_{rid}. Pass the retrieval_id returned by recall/context in this database."
                )
            if key is not None:
                prev = conn.execute("SELECT id FROM feedback WHERE client_key = ?", (key,)).fetchone()
                if prev is not None:
                    return self._feedback_result(conn, prev[0], duplicate=True)
            shown = conn.execute(
                "SELECT memory_id, rank, expanded, served FROM retrieval_items WHERE retrieval_id = ? ORDER BY rank",
                (rid,),
            ).fetchall()
            if used is not None:
                if used:
                    marks = ",".join("?" * len(used))
                    found = {r[0] for r in conn.execute(f"SELECT id FROM memories WHERE id IN ({marks})", used)}
                    missing = [f"mem_{i}" for i in used if i not in found]
                    if missing:
                        raise MemoryNotFoundError(f"used_memory_ids names unknown memories: {', '.join(missing)}.")
                credits = [(i, 1.0) for i in used]
            elif any(e for _, _, e, _ in shown):
                credits = [(mid, 1.0) for mid, _, e, _ in shown if e]  # the ones the agent opened
            else:
                # Only what the agent was shown, weighted by its place in what it saw.
                credits = [(mid, policy.rank_weight(place))
                           for place, mid in enumerate(mid for mid, _, _, s in shown if s)]
            cur = conn.execute(
                "INSERT INTO feedback (retrieval_id, outcome, score, used_ids, reason, client_key, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (rid, outcome, recorded_score, json.dumps([f"mem_{i}" for i in (used or [])]), reason_text, key, now),
            )
            fid = cur.lastrowid
            olds: dict[int, float] = {}
            candidates: list[int] = []
            cids = [mid for mid, _ in credits]
            for i in range(0, len(cids), 500):
                chunk = cids[i : i + 500]
                for mid, usefulness, status in conn.execute(
                        f"SELECT id, usefulness, status FROM memories WHERE id IN ({','.join('?' * len(chunk))})", chunk):
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
            conn.executemany(
                "UPDATE memories SET usefulness = ?, success_count = success_count + ?, "
                "failure_count = failure_count + ?, updated_at = ? WHERE id = ?",
                updates,
            )
            conn.executemany(
                "INSERT INTO memory_outcomes (feedback_id, memory_id, weight, target, old_usefulness, new_usefulness, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                outcomes,
            )
            if used and succ:
                # Served but not named by a task that succeeded: not what this task needed.
                # Rules (constraints, preferences) hold whether or not the agent names them: never marked.
                named = set(used)
                unused = [mid for mid, _, _, served in shown if served and mid not in named]
                if unused:
                    conn.executemany(
                        "INSERT INTO memory_outcomes (feedback_id, memory_id, weight, target, old_usefulness, "
                        "new_usefulness, created_at, kind) SELECT ?, id, ?, 0.0, usefulness, usefulness, ?, 'unused' "
                        f"FROM memories WHERE id = ? AND type NOT IN ({','.join('?' * len(policy.RULE_TYPES))})",
                        [(fid, policy.UNUSED_WEIGHT, now, mid, *policy.RULE_TYPES) for mid in unused])
            # Candidates that keep helping earn validation (policy.earns_validation).
            promoted = promote_earned(conn, candidates, now) if outcome == "success" and candidates else []
            self.core.learning.on_feedback(conn, rid, qvec, target, used, now)
        # What was just written, without reading it back.
        return FeedbackResult(
            feedback_id=fmt_id("fb", fid), retrieval_id=fmt_id("ret", rid), outcome=outcome, score=recorded_score,
            changes=[UsefulnessChange(id=f"mem_{m}", weight=w, old_usefulness=o, new_usefulness=n)
                     for _f, m, w, _t, o, n, _c in outcomes],
            promoted=[f"mem_{m}" for m in promoted],
        )

    def _feedback_result(self, conn, fid: int, duplicate: bool = False) -> FeedbackResult:
        rid, outcome, score = conn.execute("SELECT retrieval_id, outcome, score FROM feedback WHERE id = ?", (fid,)).fetchone()
        changes = [
            UsefulnessChange(id=f"mem_{m}", weight=w, old_usefulness=o, new_usefulness=n)
            for m, w, o, n in conn.execute(
                "SELECT memory_id, weight, old_usefulness, new_usefulness FROM memory_outcomes "
                "WHERE feedback_id = ? AND kind = 'credit' ORDER BY rowid",
                (fid,),
            )
        ]
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
            row = conn.execute("SELECT usefulness FROM memories WHERE id = ?", (mid,)).fetchone()
            if row is None:
                raise MemoryNotFoundError(f"No memory mem_{mid}.")
            conn.execute(
                "UPDATE memories SET usefulness = ?, updated_at = ? WHERE id = ?",
                (policy.clamp01(row[0] + d), time.time(), mid),
            )
        return self.catalog.get(mid)
