"""The PostgreSQL session, one unit of work on the store's connection: it hands out the nouns
(the change feed and the integrity check here, the others in their sibling modules)."""

from __future__ import annotations

from functools import cached_property
from typing import Any

from recallite_core.storage.base import ProjectionCounts
from recallite_core.storage.postgres.archive import PostgresArchive
from recallite_core.storage.postgres.drift import PostgresDrift
from recallite_core.storage.postgres.episodes import PostgresEpisodes
from recallite_core.storage.postgres.keywords import PostgresKeywords
from recallite_core.storage.postgres.locking import UnitLocks
from recallite_core.storage.postgres.memories import PostgresMemories
from recallite_core.storage.postgres.outcomes import PostgresOutcomes, PostgresRetrievals, PostgresTuning
from recallite_core.storage.postgres.relations import PostgresRelations
from recallite_core.storage.postgres.snapshot import snapshot_fact
from recallite_core.storage.postgres.stats import PostgresStats
from recallite_core.storage.postgres.teams import PostgresTeams
from recallite_core.storage.postgres.vectors import PostgresVectors


class PostgresChangeFeed:
    def __init__(self, conn: Any):
        self._conn = conn

    def counter(self) -> int:
        """The change feed's mark in this snapshot: the newest settled stamp (migration 0004).
        Stamps are the writing transaction's id (0003); every stamp at or below the watermark
        (the snapshot's oldest running transaction id minus one) is settled, committed and seen
        or never to be seen, and the mark is the largest such stamp a row or floor carries.
        Writers commit in any order, so a row may still appear with a stamp above it, never at
        or below: readers that ask next time for "changes after the mark" miss nothing, and
        re-reading a row is harmless. A transaction that stamps nothing (a recall's retrieval
        log, access counts, feedback) does not move it, so other processes' caches stay."""
        known = snapshot_fact(self._conn, "watermark")
        if known is not None:
            return known
        # In a write unit the mark is read once, with the floor (which refresh asks next): the
        # unit's own stamps stay above the watermark until it commits, so only other writers'
        # commits could move it, and a mark read a moment earlier is as good for what follows it
        # (changes after it are read again next time). A bulk write asks once per item otherwise.
        unit = getattr(self._conn, "unit", None)
        if unit is not None and "feed_mark" in unit:
            return unit["feed_mark"]
        mark, floor = self._conn.execute(
            "SELECT recallite_feed_mark(), (SELECT value FROM counters WHERE name = 'tombstone_floor')").fetchone()
        if unit is not None:
            unit["feed_mark"], unit["floor"] = mark, (floor, self._conn.sent)
        return mark

    def tombstone_floor(self) -> int:
        known = snapshot_fact(self._conn, "tombstone_floor")
        if known is not None:
            return known
        kept = (getattr(self._conn, "unit", None) or {}).get("floor")
        if kept is not None and kept[1] == getattr(self._conn, "sent", None):  # read with the mark, nothing since
            return kept[0]
        return self._conn.execute("SELECT value FROM counters WHERE name = 'tombstone_floor'").fetchone()[0]

    def prune_tombstones(self, keep: int) -> None:
        """When more than ``keep`` tombstones pile up, drop them all and move the floor past them:
        readers older than the floor reload instead of replaying."""
        count = self._conn.execute("SELECT count(*) FROM tombstones").fetchone()[0]
        if count > keep:
            top = self._conn.execute("SELECT max(seq) FROM tombstones").fetchone()[0]
            self._conn.execute("DELETE FROM tombstones WHERE seq <= %s", (top,))
            self._conn.execute("UPDATE counters SET value = %s WHERE name = 'tombstone_floor'", (top,))

    def reset_readers(self) -> None:
        """After a rebuild that stamps no row, move the tombstone floor to this transaction's
        stamp, so every reader whose watermark is below it reloads from scratch (as SQLite's)."""
        self._conn.execute("DELETE FROM tombstones")
        self._conn.execute("UPDATE counters SET value = recallite_bump() WHERE name = 'tombstone_floor'")

    def tombstones_since(self, seq: int) -> list[int]:
        return [r[0] for r in self._conn.execute("SELECT memory_id FROM tombstones WHERE seq > %s", (seq,))]

    def tombstones_count_since(self, seq: int) -> int:
        return self._conn.execute("SELECT count(*) FROM tombstones WHERE seq > %s", (seq,)).fetchone()[0]

    def side_tables(self) -> tuple[bool, bool]:
        if snapshot_fact(self._conn, "relations") is not None:
            return bool(snapshot_fact(self._conn, "relations")), bool(snapshot_fact(self._conn, "outcomes"))
        rel, out = self._conn.execute(
            "SELECT EXISTS (SELECT 1 FROM relations), EXISTS (SELECT 1 FROM memory_outcomes)").fetchone()
        return bool(rel), bool(out)


class PostgresIntegrity:
    def __init__(self, conn: Any):
        self._conn = conn

    def projections(self, dimensions: int | None = None) -> ProjectionCounts:
        """How memories, vectors and the keyword index agree. The keyword index is a stored
        generated column of the memories themselves, so it can be neither missing nor orphaned:
        only a memory whose text yields no lexeme at all has an empty one, which is not damage."""
        conn = self._conn
        r = ProjectionCounts()

        def one(sql: str) -> int:
            return conn.execute(sql).fetchone()[0]

        def col(sql: str) -> list[int]:
            return [row[0] for row in conn.execute(sql)]

        r.memories = one("SELECT count(*) FROM memories")
        r.vectors = one("SELECT count(*) FROM vectors")
        r.fts_rows = r.memories
        r.missing_vectors = col("SELECT id FROM memories m WHERE NOT EXISTS "
                                "(SELECT 1 FROM vectors v WHERE v.memory_id = m.id) ORDER BY id")
        # The foreign key keeps this empty; counted anyway, as doctor reports it per backend.
        r.orphan_vectors = col("SELECT memory_id FROM vectors v WHERE NOT EXISTS "
                               "(SELECT 1 FROM memories m WHERE m.id = v.memory_id) ORDER BY 1")
        if dimensions:
            r.bad_vectors = col(f"SELECT memory_id FROM vectors WHERE vector_dims(embedding) <> {int(dimensions)} ORDER BY 1")
        return r

    def file_check(self) -> str:
        """The server keeps its own files consistent (WAL, checksums where enabled); what this
        checks is what recallite's schema relies on: every index valid and ready (a failed
        CREATE INDEX CONCURRENTLY leaves an invalid one) and the counters' rows present.
        "ok", or what it found."""
        problems = [f"index {name} is not valid" for (name,) in self._conn.execute(
            "SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = current_schema() AND NOT (i.indisvalid AND i.indisready) ORDER BY 1")]
        have = {r[0] for r in self._conn.execute("SELECT name FROM counters")}
        problems += [f"counter {name} is missing" for name in
                     ("changes", "tombstone_floor", "chunk_tombstone_floor", "learning_epoch") if name not in have]
        return "; ".join(problems) or "ok"


class PostgresSession:
    """One unit of work on a PostgreSQL connection: the nouns of storage.base.Session."""

    def __init__(self, conn: Any, locks: UnitLocks | None = None):
        self._conn = conn
        self._locks = locks or UnitLocks(conn)

    @cached_property
    def feed(self) -> PostgresChangeFeed:
        return PostgresChangeFeed(self._conn)

    @cached_property
    def memories(self) -> PostgresMemories:
        return PostgresMemories(self._conn, self._locks)

    @cached_property
    def vectors(self) -> PostgresVectors:
        return PostgresVectors(self._conn)

    @cached_property
    def relations(self) -> PostgresRelations:
        return PostgresRelations(self._conn, self._locks)

    @cached_property
    def outcomes(self) -> PostgresOutcomes:
        return PostgresOutcomes(self._conn, self._locks)

    @cached_property
    def retrievals(self) -> PostgresRetrievals:
        return PostgresRetrievals(self._conn)

    @cached_property
    def episodes(self) -> PostgresEpisodes:
        return PostgresEpisodes(self._conn, self._locks)

    @cached_property
    def tuning(self) -> PostgresTuning:
        return PostgresTuning(self._conn, self._locks)

    @cached_property
    def keywords(self) -> PostgresKeywords:
        return PostgresKeywords(self._conn)

    @cached_property
    def integrity(self) -> PostgresIntegrity:
        return PostgresIntegrity(self._conn)

    @cached_property
    def stats(self) -> PostgresStats:
        return PostgresStats(self._conn)

    @cached_property
    def teams(self) -> PostgresTeams:
        return PostgresTeams(self._conn)

    @cached_property
    def drift(self) -> PostgresDrift:
        return PostgresDrift(self._conn)

    @cached_property
    def archive(self) -> PostgresArchive:
        return PostgresArchive(self._conn)


__all__ = [
    "PostgresArchive", "PostgresChangeFeed", "PostgresDrift", "PostgresEpisodes", "PostgresIntegrity",
    "PostgresKeywords", "PostgresMemories", "PostgresOutcomes", "PostgresRelations", "PostgresRetrievals",
    "PostgresSession", "PostgresStats", "PostgresTeams", "PostgresTuning", "PostgresVectors",
]
