"""recallite_context auto-tuning: a per-scope bandit over a few (limit, relative floor) settings,
rewarded by feedback minus a token cost (docs/learning.md, "Context size"). Its numbers live in
``LearningConfig`` (``arms``, ``arm_token_cost``, ``arm_decay``, ``min_judged``)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from recallite_core.storage.base import Session

if TYPE_CHECKING:
    from recallite_core.learning.learner import LearningConfig


@dataclass(frozen=True)
class Arm:
    limit: int
    min_score_ratio: float

    @property
    def key(self) -> str:
        return f"{self.limit}:{self.min_score_ratio:g}"

    def serves(self, items: Sequence[tuple[int, int, float, int]], scale: int = 1) -> list[tuple[int, int, float, int]]:
        """The logged items (id, rank, score, tokens) this arm would have served, its limit times
        ``scale`` (a compact context serves twice its arm's limit)."""
        if not items:
            return []
        top = max(s for _, _, s, _ in items)
        return [it for it in items if it[1] <= self.limit * scale and it[2] >= self.min_score_ratio * top]

    def within(self, other: Arm) -> bool:
        """True if every item this arm serves is also served by ``other`` (so its reward can be computed)."""
        return self.limit <= other.limit and self.min_score_ratio >= other.min_score_ratio


@dataclass
class ArmStats:
    arm: Arm
    pulls: float = 0.0
    reward: float = 0.0

    @property
    def mean(self) -> float:
        return self.reward / self.pulls if self.pulls > 0 else 0.0


class ContextTuner:
    """Per-scope bandit over (limit, min score ratio) settings of recallite_context.

    Reads never change it. Feedback on a tuned context rewards the arm that served it with
    ``outcome - cost * tokens / max_tokens`` and, because the logged ranks and scores say what a
    stricter setting would have served, also every arm nested in it (a success whose used memory
    a stricter setting would have cut counts 0 for that setting). Only feedback that names the
    memories used (or opened) judges a context. The next context keeps the default arm until
    ``min_judged`` judged contexts, then takes the best mean reward (see decide).
    """

    def __init__(self, cfg: LearningConfig):
        self.cfg = cfg
        self.arm_list = [Arm(int(k), float(r)) for k, r in cfg.arms] or [Arm(10, 0.0)]

    def stats(self, session: Session, scope: str) -> list[ArmStats]:
        got = session.tuning.arms(scope)
        return [ArmStats(a, *got.get(a.key, (0.0, 0.0))) for a in self.arm_list]

    def choose(self, session: Session, scope: str) -> Arm:
        return self.decide(self.stats(session, scope))[0]

    def decide(self, st: list[ArmStats]) -> tuple[Arm, str]:
        """The arm to serve and why: the default arm until ``min_judged`` judged contexts, then the
        one with the best mean reward (the default on a tie). Deterministic."""
        default = st[0]
        judged = default.pulls
        d = self.cfg.arm_decay  # pulls are discounted: n judged contexts count (1 - d^n) / (1 - d)
        enough = self.cfg.min_judged if d >= 1 else (1 - d ** self.cfg.min_judged) / (1 - d)
        if judged < enough - 1e-9:
            return default.arm, f"default until {self.cfg.min_judged} contexts whose feedback named the memories used"
        best = max((s for s in st if s.pulls >= enough - 1e-9), key=lambda s: s.mean - 1e-9 * (s is not default))
        if best is default:
            return default.arm, "default: no stricter setting did better on the judged contexts"
        return best.arm, (f"{best.arm.key} (limit:relative floor): mean reward {best.mean:.3f} vs {default.mean:.3f} "
                          f"for the default {default.arm.key} on the judged contexts")

    def log(self, session: Session, retrieval_id: int, scope: str, arm: Arm, max_tokens: int,
            served_limit: int | None = None) -> None:
        session.tuning.log_arm(retrieval_id, scope, arm.key, int(max_tokens),
                               None if served_limit is None else int(served_limit))

    def on_feedback(self, session: Session, retrieval_id: int, target: float, used: Sequence[int] | None,
                    now: float) -> None:
        row = session.tuning.arm_of(retrieval_id)
        if row is None:
            return
        scope, arm_key, max_tokens, served_limit = row
        pulled = next((a for a in self.arm_list if a.key == arm_key), None)
        if pulled is None:  # the arms were reconfigured since
            return
        # Replayed at the scale it was served with (compact: twice the arm's limit).
        scale = max(1, round(served_limit / pulled.limit)) if served_limit else 1
        if not used:
            # Feedback that names no memory cannot tell the arms apart: nothing says whether what a
            # stricter arm would have cut was what the task needed. Counted as kept whatever the arm
            # cut, every such success was a vote for the strictest arm, which then cut needed
            # memories ranked second (`bench --agent-day --set dev --seeds 7,11,23,31`: needed-memory
            # recall days 3-5 .933 with it, .963 without; docs/learning.md, Session 11).
            return
        items = session.retrievals.served_items(retrieval_id)
        for arm in self.arm_list:
            if arm != pulled and not arm.within(pulled):
                continue
            served = arm.serves(items, scale)
            ids = {i for i, *_ in served}
            included = all(u in ids for u in used)
            tokens = sum(t for *_, t in served)
            reward = (target if included else 0.0) - self.cfg.arm_token_cost * min(1.0, tokens / max(1, max_tokens))
            session.tuning.reward(scope, arm.key, reward, now, self.cfg.arm_decay)

    def summary(self, session: Session, scopes: Iterable[str] | None = None) -> dict[str, dict[str, Any]]:
        if scopes is None:
            scopes = session.tuning.scopes()
        out = {}
        for sc in scopes:
            st = self.stats(session, sc)
            if not any(s.pulls for s in st):
                continue
            cur, why = self.decide(st)
            out[sc] = {
                "limit": cur.limit,
                "min_score_ratio": cur.min_score_ratio,
                "why": why,
                "arms": [{"limit": s.arm.limit, "min_score_ratio": s.arm.min_score_ratio, "pulls": round(s.pulls, 3),
                          "mean_reward": round(s.mean, 4)} for s in st],
            }
        return out


__all__ = ["Arm", "ArmStats", "ContextTuner"]
