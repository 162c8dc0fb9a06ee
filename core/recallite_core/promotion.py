"""Earned validation: candidates that keep helping are validated by the feedback that shows it.

The rule and its numbers live in policy.py (``earns_validation``); this module only reads a
candidate's outcome record and relations, and records the transition the way
``Recallite.validate`` does (status, confidence, ``validated_reason``, ``validated_at``), so
its history says why. Called by the engine inside the feedback transaction, after the outcome
rows are written."""

from __future__ import annotations

import json
import sqlite3
from typing import Sequence

from . import policy


def _marks(ids: Sequence[int]) -> str:
    return ",".join("?" * len(ids))


def promote_earned(conn: sqlite3.Connection, candidate_ids: Sequence[int], now: float) -> list[int]:
    """Validate the candidates among ``candidate_ids`` whose record earns it; returns their ids.
    The caller holds the write transaction (a candidate is checked again here)."""
    ids = list(dict.fromkeys(int(i) for i in candidate_ids))
    if not ids:
        return []
    marks = _marks(ids)
    rows = {mid: (conf, meta) for mid, conf, meta in conn.execute(
        f"SELECT id, confidence, metadata FROM memories WHERE status = 'candidate' AND id IN ({marks})", ids)}
    if not rows:
        return []
    ids = list(rows)
    marks = _marks(ids)
    record = {mid: (succ or 0, rets or 0, fails or 0) for mid, succ, rets, fails in conn.execute(
        "SELECT mo.memory_id, "
        "sum(f.outcome = 'success' AND mo.weight >= ?), "
        "count(DISTINCT CASE WHEN f.outcome = 'success' AND mo.weight >= ? THEN f.retrieval_id END), "
        "sum(f.outcome = 'failure') "
        f"FROM memory_outcomes mo JOIN feedback f ON f.id = mo.feedback_id WHERE mo.kind = 'credit' AND mo.memory_id IN ({marks}) "
        "GROUP BY mo.memory_id",
        [policy.PROMOTION_MIN_WEIGHT, policy.PROMOTION_MIN_WEIGHT, *ids])}
    earned = [mid for mid, (succ, rets, fails) in record.items()
              if policy.earns_validation(succ, rets, fails, False, False)]
    if not earned:
        return []
    marks = _marks(earned)
    contradicted = {me for a, b, sa, sb in conn.execute(
        "SELECT r.from_id, r.to_id, ma.status, mb.status FROM relations r "
        "JOIN memories ma ON ma.id = r.from_id JOIN memories mb ON mb.id = r.to_id "
        f"WHERE r.type = 'contradicts' AND (r.from_id IN ({marks}) OR r.to_id IN ({marks}))",
        [*earned, *earned])
        for me, other_status in ((a, sb), (b, sa)) if other_status in ("validated", "active")}
    promoted = []
    for mid in earned:
        conf, metadata = rows[mid]
        meta = json.loads(metadata) if metadata else {}
        succ, rets, fails = record[mid]
        if not policy.earns_validation(succ, rets, fails, mid in contradicted, bool(meta.get("flagged"))):
            continue
        meta["validated_reason"] = policy.earned_reason(succ, rets)
        conn.execute(
            "UPDATE memories SET status = 'validated', confidence = ?, metadata = ?, updated_at = ?, validated_at = ? "
            "WHERE id = ?",
            (policy.confidence_after_validation(conf), json.dumps(meta, ensure_ascii=False), now, now, mid),
        )
        promoted.append(mid)
    return promoted
