"""The locks a PostgreSQL write takes (docs/postgres.md, "Isolation per write path").

Every write transaction holds the database-wide advisory lock ``WRITE_LOCK``: exclusively for a
plain ``transaction()`` (one writer at a time, SQLite's BEGIN IMMEDIATE), in shared mode for a
``transaction(concurrent=True)``, which the hot write paths (remember, remember_many, the
retrieval log, feedback, relate) ask for. Shared holders run side by side, so what they read
and then write is guarded here, as they go, by narrower locks, each held until COMMIT:

- the text of a new memory (its content hash): two writers storing the same text queue on it,
  and the second finds the first's row (no duplicate, no unique-violation retry);
- the learning lock: feedback (outcome rows, usefulness, promotion, the tuner) is read-then-write
  over many rows and its outcome row ids must grow in commit order (the learner's cache key), so
  feedback writers take one lock of their own; remembers do not wait for it;
- a memory row read to be changed (status, usefulness, confidence) is read ``FOR NO KEY UPDATE``,
  rows of one statement in id order;
- a relation (from, to, type) and a session's next turn position get a lock of their own.

Advisory keys: the one-bigint form for the database-wide locks, the two-int4 form (class,
hash) for the narrow ones; PostgreSQL keeps the two forms apart, so they never collide.
"""

from __future__ import annotations

from typing import Any, Sequence

#: Database-wide advisory lock keys (pg_advisory_xact_lock takes a bigint): the writer lock, the
#: migration lock and the learning lock. Fixed numbers, so every recallite process agrees on them.
WRITE_LOCK = 0x7265_6361_6C6C_01  # "recall" + 1
MIGRATE_LOCK = 0x7265_6361_6C6C_02
LEARN_LOCK = 0x7265_6361_6C6C_03
#: Classes of the narrow (class, hashtext(key)) locks.
TEXT_CLASS, RELATION_CLASS, SESSION_CLASS = 0x7263_0001, 0x7263_0002, 0x7263_0003


class UnitLocks:
    """What the open write unit of work has locked; the store resets it at BEGIN and at the end."""

    def __init__(self, conn: Any):
        self._conn = conn
        self.concurrent = False  # True inside transaction(concurrent=True)
        self._learning = False

    def begin(self, concurrent: bool) -> None:
        self.concurrent = concurrent
        self._learning = False

    def end(self) -> None:
        self.concurrent = False
        self._learning = False

    @property
    def for_update(self) -> str:
        """The clause that row-locks what a concurrent write reads to change ("" otherwise:
        an exclusive writer is alone, and a read-only snapshot may not lock). NO KEY UPDATE is
        the lock an UPDATE of non-key columns takes anyway; unlike FOR UPDATE it lets the
        foreign-key checks of rows that reference the memory (KEY SHARE) pass, which would
        otherwise deadlock against a recall logging the same memories in another order."""
        return " FOR NO KEY UPDATE" if self.concurrent else ""

    def texts(self, hashes: Sequence[str]) -> None:
        """Lock these content hashes (in one sorted order: no deadlock between two batches)
        before the duplicate check reads them; a later statement sees every commit before it."""
        if self.concurrent and hashes:
            self._conn.execute(
                "SELECT count(pg_advisory_xact_lock(%s, k)) FROM "
                "(SELECT DISTINCT hashtext(h) AS k FROM unnest(%s::text[]) AS h ORDER BY 1) s",
                (TEXT_CLASS, list(hashes)))

    def relation(self, from_id: int, to_id: int, type: str) -> None:
        if self.concurrent:
            self._conn.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))",
                               (RELATION_CLASS, f"{from_id}:{to_id}:{type}"))

    def session(self, scope: str, session: str) -> None:
        if self.concurrent:
            self._conn.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))",
                               (SESSION_CLASS, f"{scope}\x1f{session}"))

    def learning(self) -> None:
        """Once per unit of work: feedback writers queue on this (not on remembers)."""
        if self.concurrent and not self._learning:
            self._conn.execute("SELECT pg_advisory_xact_lock(%s)", (LEARN_LOCK,))
            self._learning = True


__all__ = ["LEARN_LOCK", "MIGRATE_LOCK", "WRITE_LOCK", "UnitLocks"]
