"""The belief graph: memories linked by causes / contradicts / supports / requires.

A walk starts from seed memories (found by recall) and follows those relations in both
directions, one query per hop for the whole frontier. Each hop multiplies the belief
confidence by ``policy.BELIEF_HOP_DECAY`` (0.6); a node reached by several paths keeps the
best one. Only live (candidate/validated/active), unexpired memories within the caller's
scopes are visited, so the graph never leaks another scope's memory.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from . import policy

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
    conn: sqlite3.Connection,
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
    rel_marks = ",".join("?" * len(relations))
    for hop in range(1, max(0, depth) + 1):
        if not frontier or len(reached) >= max_nodes:
            break
        marks = ",".join("?" * len(frontier))
        rows = conn.execute(
            f"SELECT from_id, to_id, type FROM relations WHERE type IN ({rel_marks}) "
            f"AND (from_id IN ({marks}) OR to_id IN ({marks}))",
            [*relations, *frontier, *frontier],
        ).fetchall()
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
        ids = list(candidates)
        cmarks = ",".join("?" * len(ids))
        where = [f"id IN ({cmarks})", f"status IN ({','.join('?' * len(LIVE))})"]
        params: list = [*ids, *LIVE]
        if scopes is not None:
            where.append(f"scope IN ({','.join('?' * len(scopes))})")
            params.extend(scopes)
        if valid_at is not None:
            where.append("(valid_until IS NULL OR valid_until > ?)")
            params.append(valid_at)
        allowed = {r[0] for r in conn.execute(f"SELECT id FROM memories WHERE {' AND '.join(where)}", params)}
        frontier = []
        for other in sorted(allowed):
            if len(reached) >= max_nodes:
                break
            parent, label = candidates[other]
            reached[other] = Reached(other, hop, policy.belief_confidence(reached[parent].confidence, 1), parent, label)
            frontier.append(other)
    kept = [(a, b, t) for a, b, t in sorted(edges) if a in reached and b in reached]
    return reached, kept
