"""Conversation turns and their keyword windows."""

from __future__ import annotations

from typing import Any, Sequence

from recallite_core.storage.base import ChunkRow, MemoryFilter, TurnRow
from recallite_core.storage.postgres.filters import where_sql
from recallite_core.storage.postgres.locking import UnitLocks
from recallite_core.storage.postgres.snapshot import snapshot_fact
from recallite_core.storage.postgres.vectors import vector_array, vector_bytes

_TURN = "SELECT memory_id, scope, session, seq, role FROM episodes"
_CHUNK = ("SELECT c.id, m.scope, m.status, m.type, m.session, c.embedding, c.memory_id "
          "FROM chunks c JOIN memories m ON m.id = c.memory_id")


def _chunks(raw) -> list[ChunkRow]:
    return [(cid, scope, status, mtype, session, vector_bytes(v), mid)
            for cid, scope, status, mtype, session, v, mid in raw]


def _in_scopes(scopes: Sequence[str] | None, alias: str) -> tuple[str, list]:
    """An "AND alias.scope = ANY(...)" fragment, empty for None (every scope)."""
    if scopes is None:
        return "", []
    return f"AND {alias}.scope = ANY(%s)", [list(scopes)]


class PostgresEpisodes:
    def __init__(self, conn: Any, locks: UnitLocks | None = None):
        self._conn = conn
        self._locks = locks or UnitLocks(conn)

    def any(self) -> bool:
        known = snapshot_fact(self._conn, "episodes")
        if known is not None:
            return bool(known)
        return self._conn.execute("SELECT 1 FROM episodes LIMIT 1").fetchone() is not None

    def turns_of(self, ids: Sequence[int]) -> list[TurnRow]:
        return self._conn.execute(f"{_TURN} WHERE memory_id = ANY(%s)", (list(ids),)).fetchall()

    def turns_at(self, places: Sequence[tuple[str, str, int]]) -> list[TurnRow]:
        """The turns at these (scope, session, seq) places (three arrays, one round trip)."""
        if not places:
            return []
        scopes, sessions, seqs = (list(col) for col in zip(*places))
        return self._conn.execute(
            "SELECT e.memory_id, e.scope, e.session, e.seq, e.role FROM episodes e "
            "JOIN unnest(%s::text[], %s::text[], %s::int[]) AS p(scope, session, seq) "
            "ON e.scope = p.scope AND e.session = p.session AND e.seq = p.seq", (scopes, sessions, seqs)).fetchall()

    def all_turns(self) -> list[TurnRow]:
        return self._conn.execute(_TURN).fetchall()

    def turns_changed_since(self, seq: int) -> list[TurnRow]:
        return self._conn.execute(
            "SELECT e.memory_id, e.scope, e.session, e.seq, e.role FROM memories m "
            "JOIN episodes e ON e.memory_id = m.id WHERE m.seq > %s", (seq,)).fetchall()

    def turn_texts(self, scope: str, session: str, first: int, last: int) -> list[tuple[int, int, str, str]]:
        """(seq, memory id, role, content) of the turns of one session between two positions."""
        return self._conn.execute(
            "SELECT n.seq, n.memory_id, n.role, m.content FROM episodes n JOIN memories m ON m.id = n.memory_id "
            "WHERE n.scope = %s AND n.session = %s AND n.seq BETWEEN %s AND %s",
            (scope, session, first, last)).fetchall()

    def replace_windows(self, stale: Sequence[int], rows: Sequence[tuple[int, str]]) -> None:
        """Delete the window rows of ``stale`` turns, then write ``rows`` (turn id, text)."""
        if stale:
            self._conn.execute("DELETE FROM episode_windows WHERE memory_id = ANY(%s)", (list(stale),))
        if rows:
            # One statement: the keyword totals' statement trigger fires once for the batch. A
            # turn named twice keeps its last text (one statement may not update a row twice).
            last = dict(rows)
            ids, texts = list(last), list(last.values())
            self._conn.execute("INSERT INTO episode_windows (memory_id, text) "
                               "SELECT * FROM unnest(%s::bigint[], %s::text[]) "
                               "ON CONFLICT (memory_id) DO UPDATE SET text = excluded.text", (ids, texts))

    def clear_windows(self) -> None:
        self._conn.execute("DELETE FROM episode_windows")

    def places(self) -> list[tuple[str, str, int]]:
        return self._conn.execute("SELECT scope, session, seq FROM episodes").fetchall()

    # -- categories ----------------------------------------------------------------------------------
    def set_categories(self, rows: Sequence[tuple[int, str]]) -> None:
        """(memory id, category) rows; a memory's earlier category is replaced."""
        if rows:
            with self._conn.cursor() as cur:
                cur.executemany("INSERT INTO memory_categories (memory_id, category) VALUES (%s, %s) "
                                "ON CONFLICT (memory_id) DO UPDATE SET category = excluded.category", list(rows))

    def category_of(self, mid: int) -> str | None:
        row = self._conn.execute("SELECT category FROM memory_categories WHERE memory_id = %s", (mid,)).fetchone()
        return None if row is None else row[0]

    # -- sessions ------------------------------------------------------------------------------------
    def session_latest(self, session: str, scopes: Sequence[str] | None, statuses: Sequence[str],
                       limit: int | None) -> list[int]:
        """The turn ids of a session whose memory has one of ``statuses``, latest first (at
        most ``limit``)."""
        where, params = _in_scopes(scopes, "e")
        sql = (f"SELECT e.memory_id FROM episodes e JOIN memories m ON m.id = e.memory_id WHERE e.session = %s {where} "
               "AND m.status = ANY(%s) ORDER BY e.seq DESC, e.event_at DESC")
        args: list = [session, *params, list(statuses)]
        if limit is not None:
            sql += " LIMIT %s"
            args.append(limit)
        return [r[0] for r in self._conn.execute(sql, args)]

    def session_turns(self, session: str, scopes: Sequence[str] | None,
                      statuses: Sequence[str]) -> list[tuple[int, int]]:
        """(memory id, seq) of a session's turns whose memory has one of ``statuses``, in order."""
        where, params = _in_scopes(scopes, "e")
        return self._conn.execute(
            f"SELECT e.memory_id, e.seq FROM episodes e JOIN memories m ON m.id = e.memory_id WHERE e.session = %s {where} "
            "AND m.status = ANY(%s) ORDER BY e.seq, e.event_at", [session, *params, list(statuses)]).fetchall()

    def summary_pools(self, session: str, scopes: Sequence[str] | None) -> list[str]:
        """The summary sentence pools (JSON) of a session, one per scope it has turns in."""
        where, params = _in_scopes(scopes, "e")
        return [r[0] for r in self._conn.execute(
            f"SELECT pool FROM session_summaries e WHERE e.session = %s {where} ORDER BY e.scope", [session, *params])]

    def sources_of(self, mid: int) -> list[int]:
        """The turns a memory cites, and those cited by the memories it was derived from."""
        return [r[0] for r in self._conn.execute(
            "SELECT episode_id FROM citations WHERE memory_id = %s UNION "
            "SELECT c.episode_id FROM relations r JOIN citations c ON c.memory_id = r.to_id "
            "WHERE r.from_id = %s AND r.type = 'derived_from' ORDER BY 1", (mid, mid))]

    def last_seq(self, scope: str, session: str) -> int:
        """The last position taken in a session (0 for none); a concurrent write locks the
        session first, so two writers never take the same next position."""
        self._locks.session(scope, session)
        return self._conn.execute("SELECT coalesce(max(seq), 0) FROM episodes WHERE scope = %s AND session = %s",
                                  (scope, session)).fetchone()[0]

    def add_turns(self, rows: Sequence[tuple[int, str, str, str, int, float]]) -> None:
        """(memory id, scope, session, role, seq, event time) rows."""
        if rows:
            with self._conn.cursor() as cur:
                cur.executemany("INSERT INTO episodes (memory_id, scope, session, role, seq, event_at) "
                                "VALUES (%s, %s, %s, %s, %s, %b)", list(rows))

    def place_of(self, mid: int) -> tuple[str, str, int] | None:
        """(scope, session, seq) of a turn; None if the memory is not one."""
        return self._conn.execute("SELECT scope, session, seq FROM episodes WHERE memory_id = %s", (mid,)).fetchone()

    def window(self, scope: str, session: str, first: int, last: int, statuses: Sequence[str], mid: int) -> list[int]:
        """The turns of one session between two positions whose memory has one of ``statuses``
        (``mid`` whatever its status), in order."""
        return [r[0] for r in self._conn.execute(
            "SELECT e.memory_id FROM episodes e JOIN memories m ON m.id = e.memory_id WHERE e.scope = %s AND "
            "e.session = %s AND e.seq BETWEEN %s AND %s AND (m.status = ANY(%s) OR e.memory_id = %s) ORDER BY e.seq",
            (scope, session, first, last, list(statuses), mid))]

    def sessions(self) -> list[tuple[str, str]]:
        """Every (scope, session) that has turns."""
        return [tuple(r) for r in self._conn.execute("SELECT DISTINCT scope, session FROM episodes ORDER BY 1, 2")]

    def session_texts(self, scope: str, session: str) -> list[tuple[int, int, str, str]]:
        """(memory id, seq, role, content) of a session's turns, in order."""
        return self._conn.execute(
            "SELECT e.memory_id, e.seq, e.role, m.content FROM episodes e JOIN memories m ON m.id = e.memory_id "
            "WHERE e.scope = %s AND e.session = %s ORDER BY e.seq", (scope, session)).fetchall()

    # -- running summaries ---------------------------------------------------------------------------
    def summary(self, scope: str, session: str) -> tuple[str, int] | None:
        """(sentence pool JSON, turns folded in) of a session's running summary."""
        return self._conn.execute("SELECT pool, turns FROM session_summaries WHERE scope = %s AND session = %s",
                                  (scope, session)).fetchone()

    def put_summary(self, scope: str, session: str, pool: str, turns: int, now: float) -> None:
        self._conn.execute(
            "INSERT INTO session_summaries (scope, session, pool, turns, updated_at) VALUES (%s, %s, %s, %s, %s) "
            "ON CONFLICT (scope, session) DO UPDATE SET pool = excluded.pool, turns = excluded.turns, "
            "updated_at = excluded.updated_at", (scope, session, pool, turns, now))

    def drop_summary(self, scope: str, session: str) -> None:
        self._conn.execute("DELETE FROM session_summaries WHERE scope = %s AND session = %s", (scope, session))

    def clear_summaries(self) -> None:
        self._conn.execute("DELETE FROM session_summaries")

    # -- sentence chunks -----------------------------------------------------------------------------
    def all_chunks(self) -> list[ChunkRow]:
        return _chunks(self._conn.execute(_CHUNK, binary=True).fetchall())  # vectors: binary (vectors.py)

    def chunks_changed_since(self, seq: int) -> list[ChunkRow]:
        """Chunks written after ``seq``, and those of memories changed after it."""
        return _chunks(self._conn.execute(f"{_CHUNK} WHERE c.seq > %s UNION ALL {_CHUNK} WHERE m.seq > %s AND c.seq <= %s",
                                          (seq, seq, seq), binary=True).fetchall())

    def chunk_ids(self, flt: MemoryFilter) -> list[int]:
        """The chunks of the memories passing the filter."""
        where, params = where_sql(flt)
        return [r[0] for r in self._conn.execute(
            f"SELECT c.id FROM chunks c JOIN memories m ON m.id = c.memory_id WHERE {where} ORDER BY c.id", params)]

    def chunk_count(self) -> int:
        return self._conn.execute("SELECT count(*) FROM chunks").fetchone()[0]

    def chunk_sources(self, types: Sequence[str] | None, ids: Sequence[int] | None) -> list[tuple[int, str, str, str | None]]:
        """(id, type, content, role or None) of the memories among ``ids``, or (``ids`` None) of
        every memory of one of ``types``: what their chunks are cut from."""
        head = "SELECT m.id, m.type, m.content, e.role FROM memories m LEFT JOIN episodes e ON e.memory_id = m.id "
        if ids is None:
            return self._conn.execute(f"{head}WHERE m.type = ANY(%s) ORDER BY m.id", (list(types or ()),)).fetchall()
        return self._conn.execute(f"{head}WHERE m.id = ANY(%s) ORDER BY m.id", (list(ids),)).fetchall()

    def chunk_tombstone_floor(self) -> int:
        known = snapshot_fact(self._conn, "chunk_tombstone_floor")
        if known is not None:
            return known
        return self._conn.execute("SELECT value FROM counters WHERE name = 'chunk_tombstone_floor'").fetchone()[0]

    def chunk_tombstones_since(self, seq: int) -> list[int]:
        """The chunks deleted after ``seq``."""
        return [r[0] for r in self._conn.execute("SELECT chunk_id FROM chunk_tombstones WHERE seq > %s", (seq,))]

    def add_chunks(self, rows: Sequence[tuple[int, int, int, int, str, bytes]]) -> None:
        """(memory id, ord, start, stop, text, vector bytes) rows."""
        if rows:
            with self._conn.cursor() as cur:
                cur.executemany("INSERT INTO chunks (memory_id, ord, start, stop, text, embedding) "
                                "VALUES (%s, %s, %s, %s, %s, %b)",
                                [(mid, o, a, b, t, vector_array(blob)) for mid, o, a, b, t, blob in rows])

    def delete_chunks(self, ids: Sequence[int]) -> None:
        """The chunks of these memories."""
        if ids:
            self._conn.execute("DELETE FROM chunks WHERE memory_id = ANY(%s)", (list(ids),))

    def prune_chunk_tombstones(self, keep: int | None) -> None:
        """When more than ``keep`` chunk tombstones pile up (None: always), drop them and move
        their floor to the change counter: chunk readers reload."""
        count = self._conn.execute("SELECT count(*) FROM chunk_tombstones").fetchone()[0]
        if keep is None or count > keep:
            self._conn.execute("DELETE FROM chunk_tombstones")
            self._conn.execute("UPDATE counters SET value = recallite_bump() WHERE name = 'chunk_tombstone_floor'")

    # -- citations -----------------------------------------------------------------------------------
    def cite(self, mid: int, episode_ids: Sequence[int], now: float) -> None:
        """A memory came from these turns (citing twice keeps the first)."""
        if episode_ids:
            self._conn.execute(
                "INSERT INTO citations (memory_id, episode_id, created_at) "
                "SELECT %s, e, %s FROM unnest(%s::bigint[]) WITH ORDINALITY AS u(e, n) ORDER BY n "
                "ON CONFLICT DO NOTHING", (mid, now, list(episode_ids)))

    def citations(self, mid: int) -> list[tuple[int, int, float]]:
        """(memory id, episode id, created_at) of a memory's citations, by episode id."""
        return self._conn.execute(
            "SELECT memory_id, episode_id, created_at FROM citations WHERE memory_id = %s ORDER BY episode_id",
            (mid,)).fetchall()

    def cites_any(self, mid: int) -> bool:
        return self._conn.execute("SELECT 1 FROM citations WHERE memory_id = %s LIMIT 1", (mid,)).fetchone() is not None

    def links_of(self, mid: int) -> tuple[int, int, list[int]]:
        """(its chunks, citations it is on either end of, memories citing it): what deleting it takes along."""
        citing = [r[0] for r in self._conn.execute(
            "SELECT memory_id FROM citations WHERE episode_id = %s ORDER BY memory_id", (mid,))]
        chunks, citations = self._conn.execute(
            "SELECT (SELECT count(*) FROM chunks WHERE memory_id = %s), "
            "(SELECT count(*) FROM citations WHERE memory_id = %s OR episode_id = %s)", (mid, mid, mid)).fetchone()
        return chunks, citations, citing
