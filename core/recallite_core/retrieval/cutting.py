"""How much of a ranked list a context keeps: the relative cut, and what counts as judged poor.
Pure functions over the ranked tuples and the learner's assessments; imports policy and learning."""

from __future__ import annotations

from recallite_core.learning.learner import Assessment
from recallite_core.policy import rules as policy


def relative_cut(scored: list, cut_base: dict[int, float] | None, ratio: float, learned: dict) -> list:
    """Keep what is close enough to the best hit, or to the best match before learning unless
    feedback says it misled or went unused on tasks like this one: learning may cut what it knows
    to be noise, never what it has not judged (the lesson the next task needs). Scores are read
    from ``cut_base`` where given (the fusion before the keyword fade), with the same policy factors."""
    if cut_base is None:
        fused = {t[2]: t[3] for t in scored}
        final = {t[2]: t[0] for t in scored}
    else:
        fused = {t[2]: cut_base.get(t[2], t[3]) for t in scored}
        final = {t[2]: (t[0] / t[3] if t[3] else 0.0) * fused[t[2]] for t in scored}
    top, top_fused = max(final.values()), max(fused.values())
    first = scored[0][2]  # never cut: a correction ranked first may score below what it replaced
    return [t for t in scored if t[2] == first or final[t[2]] >= ratio * top or (
        fused[t[2]] >= ratio * top_fused and not judged_poor(learned.get(t[2])))]


def judged_poor(a: Assessment | None) -> bool:
    """Outcomes near this query say the memory misled or was not needed: a posterior mean below even,
    on enough failure evidence (policy.POOR_EVIDENCE)."""
    return a is not None and a.outcomes > 0 and a.mean < 0.5 and a.failures >= policy.POOR_EVIDENCE
