"""The reasons shown with each recall hit: which channels matched, and what status, trust, feedback
and the profile did to its score."""

from __future__ import annotations

from recallite_core.models import Memory, ScoreBreakdown
from recallite_core.policy import rules as policy
from recallite_core.retrieval.candidates import flags_of


def hit_reasons(mem: Memory, bd: ScoreBreakdown, profile: str, semantic_match_threshold: float) -> list[str]:
    """Why a hit ranks where it does, as short tags ("keyword-match", "reinforced", "contradicted", ...)."""
    out: list[str] = []
    if bd.keyword_rank is not None:
        out.append("keyword-match")
    if bd.vector_similarity is not None and bd.vector_similarity >= semantic_match_threshold:
        out.append("semantic-match")
    out.append(f"{mem.status}-memory")
    if policy.SOURCE_TRUST.get(mem.source.type) == policy.UNTRUSTED:
        out.append(f"untrusted-source:{mem.source.type}")
    if mem.success_count and mem.usefulness >= 0.6:
        out.append("reinforced")
    if mem.failure_count and mem.usefulness <= 0.4:
        out.append("penalized-by-feedback")
    if mem.confidence >= 0.85:
        out.append("high-confidence")
    elif mem.confidence < 0.5:
        out.append("low-confidence")
    if mem.importance >= 0.8:
        out.append("important")
    if bd.profile_factor > 1.0:
        out.append(f"profile-boost:{profile}")
    elif bd.profile_factor < 1.0:
        out.append(f"profile-penalty:{profile}")
    if bd.contradiction_factor < 1.0:
        out.append("contradicted")
    out.extend(f"flagged:{f}" for f in flags_of(mem))
    return out
