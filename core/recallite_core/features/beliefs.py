"""The belief graph: memories linked by causes / contradicts / supports / requires.

A walk starts from seed memories (found by recall) and follows those relations in both
directions, one query per hop for the whole frontier. Each hop multiplies the belief
confidence by ``policy.BELIEF_HOP_DECAY`` (0.6); a node reached by several paths keeps the
best one. Only live (candidate/validated/active), unexpired memories within the caller's
scopes are visited, so the graph never leaks another scope's memory.
"""

from __future__ import annotations

from dataclasses import dataclass

from recallite_core.policy import rules as policy
from recallite_core.storage.base import MemoryFilter, Session

LIVE = ("candidate", "validated", "active")

# How a relation reads from the node we came from, in each direction.
FORWARD = {"causes": "causes", "contradicts": "contradicts", "supports": "supports", "requires": "requires"}
BACKWARD = {"causes": "caused_by", "contradicts": "contradicted_by", "supports": "supported_by", "requires": "required_by"}


@dataclass
class Reached:
    id: int
    hops: int
    confidence: float
    via: int | None
    relation: str | None


def walk(
    session: Session,
    seeds: dict[int, float],
    *,
    depth: int = 2,
    scopes: tuple[str, ...] | None = None,
    valid_at: float | None = None,
    relations: tuple[str, ...] = policy.BELIEF_RELATIONS,
    max_nodes: int = 200,
) -> tuple[dict[int, Reached], list[tuple[int, int, str]]]:
    """Nodes reached from ``seeds`` (id -> starting confidence) within ``depth`` hops, and the
    edges (from, to, type) among the nodes."""
    reached: dict[int, Reached] = {i: Reached(i, 0, c, None, None) for i, c in seeds.items()}
    frontier = list(seeds)
    edges: set[tuple[int, int, str]] = set()
    for hop in range(1, max(0, depth) + 1):
        if not frontier or len(reached) >= max_nodes:
            break
        rows = session.relations.edges(frontier, relations)
        fset = set(frontier)
        candidates: dict[int, tuple[int, str]] = {}
        for a, b, t in rows:
            for me, other, label in ((a, b, FORWARD[t]), (b, a, BACKWARD[t])):
                if me in fset:
                    edges.add((a, b, t))
                    if other not in reached:
                        best = candidates.get(other)
                        if best is None or reached[me].confidence > reached[best[0]].confidence:
                            candidates[other] = (me, label)
        if not candidates:
            break
        allowed = set(session.memories.matching(list(candidates), MemoryFilter(statuses=LIVE, scopes=scopes, valid_at=valid_at)))
        frontier = []
        for other in sorted(allowed):
            if len(reached) >= max_nodes:
                break
            parent, label = candidates[other]
            reached[other] = Reached(other, hop, policy.belief_confidence(reached[parent].confidence, 1), parent, label)
            frontier.append(other)
    kept = [(a, b, t) for a, b, t in sorted(edges) if a in reached and b in reached]
    return reached, kept
