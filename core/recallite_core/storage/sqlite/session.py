"""The SQLite session, one unit of work on one connection: it hands out the nouns (the change
feed and the integrity check here, the others in their sibling modules)."""

from __future__ import annotations

import sqlite3
from functools import cached_property

from recallite_core.storage.base import ProjectionCounts
from recallite_core.storage.sqlite.archive import SqliteArchive
from recallite_core.storage.sqlite.drift import SqliteDrift
from recallite_core.storage.sqlite.episodes import SqliteEpisodes
from recallite_core.storage.sqlite.keywords import SqliteKeywords
from recallite_core.storage.sqlite.memories import SqliteMemories
from recallite_core.storage.sqlite.outcomes import SqliteOutcomes, SqliteRetrievals, SqliteTuning
from recallite_core.storage.sqlite.relations import SqliteRelations
from recallite_core.storage.sqlite.stats import SqliteStats
from recallite_core.storage.sqlite.teams import SqliteTeams
from recallite_core.storage.sqlite.vectors import SqliteVectors


class SqliteChangeFeed:
    def __init__(self, conn: sqlite3.Connection):
        self._conn = conn

    def counter(self) -> int:
        return self._conn.execute("SELECT value FROM counters WHERE name = 'changes'").fetchone()[0]

    def tombstone_floor(self) -> int:
        return self._conn.execute("SELECT value FROM counters WHERE name = 'tombstone_floor'").fetchone()[0]

    def tombstones_since(self, seq: int) -> list[int]:
        return [r[0] for r in self._conn.execute("SELECT memory_id FROM tombstones WHERE seq > ?", (seq,))]

    def tombstones_count_since(self, seq: int) -> int:
        return self._conn.execute("SELECT count(*) FROM tombstones WHERE seq > ?", (seq,)).fetchone()[0]

    def prune_tombstones(self, keep: int) -> None:
        """When more than ``keep`` tombstones pile up, drop them all and move the floor past them:
        readers older than the floor reload instead of replaying."""
        count = self._conn.execute("SELECT count(*) FROM tombstones").fetchone()[0]
        if count > keep:
            top = self._conn.execute("SELECT max(seq) FROM tombstones").fetchone()[0]
            self._conn.execute("DELETE FROM tombstones WHERE seq <= ?", (top,))
            self._conn.execute("UPDATE counters SET value = ? WHERE name = 'tombstone_floor'", (top,))

    def reset_readers(self) -> None:
        """After a rebuild that stamps no row (FTS, windows, episode positions), move the change
        counter and the tombstone floor together: every reader's in-memory copy (the matrix,
        the keyword mirror, the episode map) then reloads from scratch."""
        self._conn.execute("UPDATE counters SET value = value + 1 WHERE name = 'changes'")
        self._conn.execute("DELETE FROM tombstones")
        self._conn.execute("UPDATE counters SET value = (SELECT value FROM counters WHERE name = 'changes') "
                           "WHERE name = 'tombstone_floor'")

    def side_tables(self) -> tuple[bool, bool]:
        rel, out = self._conn.execute(
            "SELECT EXISTS (SELECT 1 FROM relations), EXISTS (SELECT 1 FROM memory_outcomes)").fetchone()
        return bool(rel), bool(out)


class SqliteIntegrity:
    def __init__(self, conn: sqlite3.Connection):
        self._conn = conn

    def projections(self, dimensions: int | None = None) -> ProjectionCounts:
        conn = self._conn
        r = ProjectionCounts()

        def one(sql: str) -> int:
            return conn.execute(sql).fetchone()[0]

        def col(sql: str) -> list[int]:
            return [row[0] for row in conn.execute(sql)]

        r.memories = one("SELECT count(*) FROM memories")
        r.vectors = one("SELECT count(*) FROM vectors")
        r.fts_rows = one("SELECT count(*) FROM memories_fts_docsize")
        r.missing_vectors = col("SELECT id FROM memories WHERE id NOT IN (SELECT memory_id FROM vectors) ORDER BY id")
        r.orphan_vectors = col("SELECT memory_id FROM vectors WHERE memory_id NOT IN (SELECT id FROM memories) ORDER BY 1")
        if dimensions:
            r.bad_vectors = col(f"SELECT memory_id FROM vectors WHERE length(vector) != {4 * int(dimensions)} ORDER BY 1")
        r.missing_fts = col("SELECT id FROM memories WHERE id NOT IN (SELECT id FROM memories_fts_docsize) ORDER BY id")
        r.orphan_fts = col("SELECT id FROM memories_fts_docsize WHERE id NOT IN (SELECT id FROM memories) ORDER BY id")
        try:
            # rank = 1 also compares the index with the content of the memories table.
            conn.execute("INSERT INTO memories_fts(memories_fts, rank) VALUES ('integrity-check', 1)")
        except sqlite3.Error as exc:
            r.fts_detail = str(exc)
        return r

    def file_check(self) -> str:
        """SQLite's own check of the file's pages and indexes: "ok" or what it found."""
        return self._conn.execute("PRAGMA integrity_check").fetchone()[0]


class SqliteSession:
    """One unit of work on an SQLite connection: the nouns of storage.base.Session."""

    def __init__(self, conn: sqlite3.Connection):
        self._conn = conn

    @cached_property
    def feed(self) -> SqliteChangeFeed:
        return SqliteChangeFeed(self._conn)

    @cached_property
    def memories(self) -> SqliteMemories:
        return SqliteMemories(self._conn)

    @cached_property
    def vectors(self) -> SqliteVectors:
        return SqliteVectors(self._conn)

    @cached_property
    def relations(self) -> SqliteRelations:
        return SqliteRelations(self._conn)

    @cached_property
    def outcomes(self) -> SqliteOutcomes:
        return SqliteOutcomes(self._conn)

    @cached_property
    def retrievals(self) -> SqliteRetrievals:
        return SqliteRetrievals(self._conn)

    @cached_property
    def episodes(self) -> SqliteEpisodes:
        return SqliteEpisodes(self._conn)

    @cached_property
    def tuning(self) -> SqliteTuning:
        return SqliteTuning(self._conn)

    @cached_property
    def keywords(self) -> SqliteKeywords:
        return SqliteKeywords(self._conn)

    @cached_property
    def integrity(self) -> SqliteIntegrity:
        return SqliteIntegrity(self._conn)

    @cached_property
    def stats(self) -> SqliteStats:
        return SqliteStats(self._conn)

    @cached_property
    def teams(self) -> SqliteTeams:
        return SqliteTeams(self._conn)

    @cached_property
    def drift(self) -> SqliteDrift:
        return SqliteDrift(self._conn)

    @cached_property
    def archive(self) -> SqliteArchive:
        return SqliteArchive(self._conn)


def connection_of(session: SqliteSession) -> sqlite3.Connection:
    """The connection a session runs on, for this backend's own caches (the keyword mirror)
    that read its FTS5 tables directly; nothing outside storage/sqlite asks for it."""
    return session._conn


__all__ = [
    "SqliteArchive", "SqliteChangeFeed", "SqliteDrift", "SqliteEpisodes", "SqliteIntegrity", "SqliteKeywords", "SqliteMemories", "SqliteOutcomes",
    "SqliteRelations", "SqliteRetrievals", "connection_of", "SqliteSession", "SqliteStats", "SqliteTeams", "SqliteTuning", "SqliteVectors",
]
