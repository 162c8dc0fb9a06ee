"""Facts of a read snapshot fetched together: one round trip instead of one each.

A recall runs in one REPEATABLE READ READ ONLY snapshot and asks, one after another, for the
change-feed watermark, the two tombstone floors, whether any turn, link or outcome row exists
and the learner's outcome mark. Each was a statement of its own, so a round trip each (on a busy
machine, also a wait to be scheduled again). Inside such a snapshot none of them can change, so
the first one asked reads them all in one statement (sent with the BEGIN, lazy.py), and the
rest are answered from it until the unit ends. In a write transaction the unit itself may move
them (pruning, rebuilds, new rows), so there every one is read when asked, as before.
"""

from __future__ import annotations

from typing import Any

_FACTS = (
    "SELECT recallite_feed_mark(), "
    "(SELECT value FROM counters WHERE name = 'tombstone_floor'), "
    "(SELECT value FROM counters WHERE name = 'chunk_tombstone_floor'), "
    "EXISTS (SELECT 1 FROM episodes), EXISTS (SELECT 1 FROM relations), EXISTS (SELECT 1 FROM memory_outcomes), "
    "(SELECT max(row_id) FROM memory_outcomes), "
    "(SELECT value FROM counters WHERE name = 'learning_epoch')"
)
_NAMES = ("watermark", "tombstone_floor", "chunk_tombstone_floor", "episodes", "relations", "outcomes",
          "outcome_top", "learning_epoch")


def snapshot_fact(conn: Any, name: str) -> Any:
    """The fact ``name`` of the current read snapshot, or None outside one (read it yourself).
    ``conn`` is the store's LazyBegin: its ``facts`` is a dict only inside a reading() unit."""
    facts = getattr(conn, "facts", None)
    if facts is None:
        return None
    if _NAMES[0] not in facts:  # the unit's other readers (keywords.py) keep answers of their own here
        facts.update(zip(_NAMES, conn.execute(_FACTS).fetchone()))
    return facts[name]


__all__ = ["snapshot_fact"]
