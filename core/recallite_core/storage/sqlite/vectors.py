"""Stored vectors, read in bulk for the in-memory matrix and its worker shards."""

from __future__ import annotations

import sqlite3
from typing import Iterator, Sequence

from recallite_core.storage.base import Shard, VectorRow, chunked
from recallite_core.storage.sqlite.filters import marks

_VECTOR_SELECT = ("SELECT m.id, m.scope, m.status, m.type, m.session, v.vector FROM vectors v "
                  "JOIN memories m ON m.id = v.memory_id")


def _shard_sql(shard: Shard | None, column: str) -> tuple[str, list]:
    if shard is None:
        return "", []
    return f" AND {column} % ? = ?", [shard.count, shard.index]


class SqliteVectors:
    def __init__(self, conn: sqlite3.Connection):
        self._conn = conn

    def count(self, shard: Shard | None = None) -> int:
        where, params = _shard_sql(shard, "v.memory_id")
        return self._conn.execute(f"SELECT count(*) FROM vectors v WHERE 1{where}", params).fetchone()[0]

    def count_since(self, seq: int) -> int:
        return self._conn.execute("SELECT count(*) FROM vectors WHERE seq > ?", (seq,)).fetchone()[0]

    def all_rows(self, shard: Shard | None = None, batch: int = 8192) -> Iterator[list[VectorRow]]:
        where, params = _shard_sql(shard, "v.memory_id")
        cur = self._conn.execute(f"{_VECTOR_SELECT} WHERE 1{where}", params)
        while True:  # in batches: never hold every BLOB of a large store at once
            rows = cur.fetchmany(batch)
            if not rows:
                return
            yield rows

    def changed_rows(self, seq: int, shard: Shard | None = None) -> list[VectorRow]:
        """Rows whose vector, or whose memory's filter columns, changed after ``seq``."""
        where, params = _shard_sql(shard, "v.memory_id")
        return self._conn.execute(
            f"{_VECTOR_SELECT} WHERE v.seq > ?{where} UNION ALL {_VECTOR_SELECT} WHERE m.seq > ? AND v.seq <= ?{where}",
            (seq, *params, seq, seq, *params),
        ).fetchall()

    def blobs(self, ids: Sequence[int]) -> list[tuple[int, bytes]]:
        out: list[tuple[int, bytes]] = []
        for chunk in chunked(ids):
            out.extend(self._conn.execute(
                f"SELECT memory_id, vector FROM vectors WHERE memory_id IN ({marks(len(chunk))})", chunk))
        return out

    def add(self, rows: Sequence[tuple[int, bytes]]) -> None:
        """Store (memory id, vector bytes) rows."""
        self._conn.executemany("INSERT INTO vectors (memory_id, vector) VALUES (?, ?)", rows)

    def replace_all(self, rows: Sequence[tuple[int, bytes]]) -> None:
        """Every stored vector replaced by ``rows``; rows of memories deleted meanwhile are skipped."""
        self._conn.execute("DELETE FROM vectors")
        live = {r[0] for r in self._conn.execute("SELECT id FROM memories")}
        self._conn.executemany("INSERT INTO vectors (memory_id, vector) VALUES (?, ?)",
                               [(mid, blob) for mid, blob in rows if mid in live])

    def missing_texts(self) -> list[tuple[int, str, str]]:
        """(id, title, content) of the memories without a vector."""
        return self._conn.execute(
            "SELECT id, title, content FROM memories WHERE id NOT IN (SELECT memory_id FROM vectors)").fetchall()

    def put(self, rows: Sequence[tuple[int, bytes]]) -> None:
        """Store (memory id, vector bytes) rows, replacing a memory's vector if it has one."""
        self._conn.executemany(
            "INSERT INTO vectors (memory_id, vector) VALUES (?, ?) ON CONFLICT(memory_id) DO UPDATE SET vector = excluded.vector",
            rows)

    def delete(self, ids: Sequence[int]) -> None:
        self._conn.executemany("DELETE FROM vectors WHERE memory_id = ?", [(i,) for i in ids])
