"""Ranking signals of conversation turns: neighbouring turns and named speakers.

An answer in a conversation is often spread over adjacent turns ("Did you go?" / "Yes, on
Friday"), and a question that names a participant is usually about what that person said.
Measured on LoCoMo (decided on half the conversations, confirmed on the other), both lift
recall clearly, and neither touches memories that are not episodes, nor episodes whose
roles are generic ("user", "assistant").
"""

from __future__ import annotations

import re
import sqlite3
from typing import Iterable

ROLE_WORDS = frozenset({"user", "assistant", "agent", "system", "bot", "ai", "human", "me", "i", "you", "tool", "model"})
_WORD = re.compile(r"\w+", re.UNICODE)


def episode_structure(
    conn: sqlite3.Connection, ids: Iterable[int]
) -> tuple[dict[int, list[int]], dict[int, str]]:
    """For the episodes among ``ids``: their neighbouring turns (same scope and session, seq ± 1)
    and the role of every turn involved. Non-episodes are absent from both maps."""
    ids = list(ids)
    if not ids:
        return {}, {}
    pos: dict[int, tuple[str, str, int]] = {}
    roles: dict[int, str] = {}
    for i in range(0, len(ids), 500):
        chunk = ids[i : i + 500]
        for mid, scope, session, seq, role in conn.execute(
            f"SELECT memory_id, scope, session, seq, role FROM episodes WHERE memory_id IN ({','.join('?' * len(chunk))})",
            chunk,
        ):
            pos[mid] = (scope, session, seq)
            roles[mid] = role
    if not pos:
        return {}, {}
    wanted = {(sc, se, q + d) for sc, se, q in pos.values() for d in (-1, 1)}
    at: dict[tuple[str, str, int], int] = {p: m for m, p in pos.items()}
    missing = [w for w in wanted if w not in at]
    for i in range(0, len(missing), 300):
        chunk = missing[i : i + 300]
        params = [x for w in chunk for x in w]
        for mid, scope, session, seq, role in conn.execute(
            "SELECT memory_id, scope, session, seq, role FROM episodes WHERE (scope, session, seq) IN "
            f"(VALUES {','.join(['(?, ?, ?)'] * len(chunk))})",
            params,
        ):
            at[(scope, session, seq)] = mid
            roles[mid] = role
    adjacency: dict[int, list[int]] = {}
    for mid, (sc, se, q) in pos.items():
        for d in (-1, 1):
            other = at.get((sc, se, q + d))
            if other is not None:  # both directions: a neighbour learns of its scored neighbour too
                adjacency.setdefault(mid, []).append(other)
                if mid not in adjacency.get(other, ()):
                    adjacency.setdefault(other, []).append(mid)
    return adjacency, roles


class EpisodeMap:
    """Where every conversation turn sits (scope, session, seq) and who spoke it, in memory.

    ``episode_structure`` answers from SQL; this answers the same from dicts, kept in step
    with the store's change counter (turns arrive with their memory row, which the counter
    stamps, and leave with its tombstone; reconcile, the one other writer of positions, makes
    every reader reload). Call ``sync`` inside the snapshot you then query."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.seq = -1
        self.pos: dict[int, tuple[str, str, int]] = {}
        self.at: dict[tuple[str, str, int], int] = {}
        self.roles: dict[int, str] = {}

    def _put(self, mid: int, scope: str, session: str, seq: int, role: str) -> None:
        self._drop(mid)
        self.pos[mid] = (scope, session, seq)
        self.at[(scope, session, seq)] = mid
        self.roles[mid] = role

    def _drop(self, mid: int) -> None:
        where = self.pos.pop(mid, None)
        if where is not None:
            if self.at.get(where) == mid:
                del self.at[where]
            self.roles.pop(mid, None)

    def sync(self, conn: sqlite3.Connection, counter: int) -> None:
        if counter == self.seq:
            return
        floor = conn.execute("SELECT value FROM counters WHERE name = 'tombstone_floor'").fetchone()[0]
        if self.seq >= 0 and floor <= self.seq <= counter:
            for (mid,) in conn.execute("SELECT memory_id FROM tombstones WHERE seq > ?", (self.seq,)):
                self._drop(mid)
            for row in conn.execute(
                "SELECT e.memory_id, e.scope, e.session, e.seq, e.role FROM memories m "
                "JOIN episodes e ON e.memory_id = m.id WHERE m.seq > ?", (self.seq,)
            ):
                self._put(*row)
            self.seq = counter
            return
        self.reset()  # first use, a reindex, or out of step: read the whole table
        for row in conn.execute("SELECT memory_id, scope, session, seq, role FROM episodes"):
            self._put(*row)
        self.seq = counter

    def structure(self, ids: Iterable[int]) -> tuple[dict[int, list[int]], dict[int, str]]:
        """What ``episode_structure`` returns, without SQL."""
        pos_of, at, role_of = self.pos, self.at, self.roles
        adjacency: dict[int, list[int]] = {}
        roles: dict[int, str] = {}
        for mid in ids:
            p = pos_of.get(mid)
            if p is None:
                continue
            roles[mid] = role_of[mid]
            sc, se, q = p
            for other in (at.get((sc, se, q - 1)), at.get((sc, se, q + 1))):
                if other is not None:
                    roles[other] = role_of[other]
                    adjacency.setdefault(mid, []).append(other)
                    back = adjacency.setdefault(other, [])
                    if mid not in back:
                        back.append(mid)
        return adjacency, roles


def named_speakers(query: str, roles: Iterable[str]) -> set[str]:
    """The roles the query names: a role matches when one of its words (not a generic role
    word, at least 3 letters) is a word of the query."""
    words = {w.lower() for w in _WORD.findall(query)}
    named = set()
    for role in set(roles):
        parts = [p.lower() for p in _WORD.findall(role)]
        if any(len(p) >= 3 and p not in ROLE_WORDS and p in words for p in parts):
            named.add(role)
    return named


def expand(
    fused: dict[int, float], adjacency: dict[int, list[int]], gain: float
) -> dict[int, float]:
    """s'_i = s_i + gain * max(s of its neighbouring turns that were scored)."""
    if gain == 0 or not adjacency:
        return dict(fused)
    out = dict(fused)
    for mid, near in adjacency.items():  # only turns have neighbours: the rest stay as they are
        s = fused.get(mid)
        if s is None:
            continue
        vals = [fused[j] for j in near if j in fused]
        if vals:
            out[mid] = s + gain * max(vals)
    return out
