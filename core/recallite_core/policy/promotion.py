"""Earned validation: candidates that keep helping are validated by the feedback that shows it.

The rule and its numbers live in policy.py (``earns_validation``); this module only reads a
candidate's outcome record and relations, and records the transition the way
``Recallite.validate`` does (status, confidence, ``validated_reason``, ``validated_at``), so
its history says why. Called by the engine inside the feedback transaction, after the outcome
rows are written."""

from __future__ import annotations

import json
from typing import Sequence

from recallite_core.policy import rules as policy
from recallite_core.storage.base import Session


def promote_earned(session: Session, candidate_ids: Sequence[int], now: float) -> list[int]:
    """Validate the candidates among ``candidate_ids`` whose record earns it; returns their ids.
    The caller holds the write transaction (a candidate is checked again here)."""
    ids = list(dict.fromkeys(int(i) for i in candidate_ids))
    if not ids:
        return []
    rows = session.memories.candidates(ids)
    if not rows:
        return []
    record = {mid: (r.successes, r.retrievals, r.failures)
              for mid, r in session.outcomes.credit_records(list(rows), policy.PROMOTION_MIN_WEIGHT).items()}
    earned = [mid for mid, (succ, rets, fails) in record.items()
              if policy.earns_validation(succ, rets, fails, False, False)]
    if not earned:
        return []
    contradicted = {me for link in session.relations.touching(earned, "contradicts")
                    for me, other_status in ((link.from_id, link.to_status), (link.to_id, link.from_status))
                    if other_status in ("validated", "active")}
    promoted = []
    for mid in earned:
        conf, metadata = rows[mid]
        meta = json.loads(metadata) if metadata else {}
        succ, rets, fails = record[mid]
        if not policy.earns_validation(succ, rets, fails, mid in contradicted, bool(meta.get("flagged"))):
            continue
        meta["validated_reason"] = policy.earned_reason(succ, rets)
        session.memories.mark_validated(mid, policy.confidence_after_validation(conf),
                                        json.dumps(meta, ensure_ascii=False), now)
        promoted.append(mid)
    return promoted
