"""Stored vectors in a pgvector column: bulk reads for in-memory projections, and the nearest
neighbours answered in the server (exact for small candidate sets, HNSW for large ones)."""

from __future__ import annotations

import itertools
from typing import Any, Iterator, Sequence

import numpy as np

from recallite_core.storage.base import MemoryFilter, Shard, VectorRow
from recallite_core.storage.postgres.filters import where_sql

_LE_F4 = np.dtype("<f4")
# Vectors travel in pgvector's binary format, both ways (``binary=True`` for rows read, ``%b`` for
# vectors sent): its text format prints and parses every float, which cost the client 20x more
# (20 rows of 384-d read: 3.9 ms as text, 0.19 ms binary; one array of one vector sent: 0.87 ms
# against 0.17 ms), and a writer reads the other writers' new vectors on every remember.
_cursor_ids = itertools.count()
_VECTOR_SELECT = ("SELECT m.id, m.scope, m.status, m.type, m.session, v.embedding FROM vectors v "
                  "JOIN memories m ON m.id = v.memory_id")
#: At most this many candidates (after the filter) are ranked exactly, by a scan in the server;
#: more go through the HNSW index. The exact answer is the true top-k, which an index only
#: estimates; its cost grows with the candidates (20k 384-d vectors: 130-390 ms measured on two
#: busy shared cores, docs/postgres.md), so past 10k the index pays.
EXACT_BELOW = 10_000


def vector_bytes(value: Any) -> bytes:
    """A pgvector value as read by the adapter (numpy array, or a Vector in newer adapters) in
    the storage format: little-endian float32 bytes (codec.py)."""
    if hasattr(value, "to_numpy"):
        value = value.to_numpy()
    return np.asarray(value, dtype=_LE_F4).tobytes()


def _rows(raw: Sequence[tuple]) -> list[VectorRow]:
    return [(mid, scope, status, mtype, session, vector_bytes(v)) for mid, scope, status, mtype, session, v in raw]


def _shard_sql(shard: Shard | None, column: str) -> tuple[str, list]:
    if shard is None:
        return "", []
    return f" AND {column} %% %s = %s", [shard.count, shard.index]


def index_name(dimensions: int) -> str:
    return f"vectors_hnsw_{int(dimensions)}"


class PostgresVectors:
    def __init__(self, conn: Any):
        self._conn = conn

    def count(self, shard: Shard | None = None) -> int:
        where, params = _shard_sql(shard, "v.memory_id")
        return self._conn.execute(f"SELECT count(*) FROM vectors v WHERE true{where}", params).fetchone()[0]

    def count_since(self, seq: int) -> int:
        return self._conn.execute("SELECT count(*) FROM vectors WHERE seq > %s", (seq,)).fetchone()[0]

    def all_rows(self, shard: Shard | None = None, batch: int = 8192) -> Iterator[list[VectorRow]]:
        where, params = _shard_sql(shard, "v.memory_id")
        # A server-side cursor: the client never holds every vector of a large store at once.
        # Named uniquely: two of these may be open in one transaction.
        with self._conn.cursor(name=f"recallite_vectors_{next(_cursor_ids)}") as cur:
            cur.itersize = batch
            cur.execute(f"{_VECTOR_SELECT} WHERE true{where}", params, binary=True)
            while True:
                rows = cur.fetchmany(batch)
                if not rows:
                    return
                yield _rows(rows)

    def changed_rows(self, seq: int, shard: Shard | None = None) -> list[VectorRow]:
        """Rows whose vector, or whose memory's filter columns, changed after ``seq``."""
        where, params = _shard_sql(shard, "v.memory_id")
        return _rows(self._conn.execute(
            f"{_VECTOR_SELECT} WHERE v.seq > %s{where} UNION ALL {_VECTOR_SELECT} WHERE m.seq > %s AND v.seq <= %s{where}",
            (seq, *params, seq, seq, *params), binary=True).fetchall())

    def blobs(self, ids: Sequence[int]) -> list[tuple[int, bytes]]:
        return [(mid, vector_bytes(v)) for mid, v in self._conn.execute(
            "SELECT memory_id, embedding FROM vectors WHERE memory_id = ANY(%s)", (list(ids),), binary=True)]

    # -- PostgreSQL only: the vector channel in the server (no in-memory matrix, no workers) ----------
    def nearest(self, query: np.ndarray, flt: MemoryFilter, k: int,
                exact_below: int = EXACT_BELOW) -> list[tuple[int, float]]:
        """The ``k`` memories passing ``flt`` whose vectors are nearest to ``query`` by cosine,
        as (id, cosine similarity), best first, ties by id. The filter runs inside the query.

        Up to ``exact_below`` candidates are ranked exactly; beyond, the HNSW index of this
        dimension (store.ensure_vector_index) with pgvector's iterative scan, which keeps
        walking the graph until ``k`` rows pass the filter instead of returning fewer."""
        q = np.asarray(query, dtype=np.float32)
        dims = int(q.shape[0])
        if k <= 0 or dims == 0:
            return []
        where, params = where_sql(flt)
        # Rows of another dimension (an embedder switch before reindex) are never compared.
        fits = f"vector_dims(v.embedding) = {dims}"
        source = f"FROM vectors v JOIN memories m ON m.id = v.memory_id WHERE {fits} AND {where}"
        capped = self._conn.execute(f"SELECT count(*) FROM (SELECT 1 {source} LIMIT %s) c",
                                    [*params, exact_below + 1]).fetchone()[0]
        if capped <= exact_below:
            # The bare column (not the index's cast expression): the planner cannot pick the index.
            rows = self._conn.execute(f"SELECT v.memory_id, v.embedding <=> %b AS d {source} "
                                      "ORDER BY d, v.memory_id LIMIT %s", [q, *params, k]).fetchall()
        else:
            self._conn.execute("SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true), "
                               "set_config('hnsw.ef_search', %s, true)", (str(max(40, 2 * k)),))
            # relaxed_order may return neighbours slightly out of order: rank the k again.
            rows = self._conn.execute(
                f"WITH c AS MATERIALIZED (SELECT v.memory_id, v.embedding::vector({dims}) <=> %b::vector({dims}) AS d "
                f"{source} ORDER BY d LIMIT %s) SELECT memory_id, d FROM c ORDER BY d, memory_id",
                [q, *params, k]).fetchall()
        return [(mid, 1.0 - float(d)) for mid, d in rows]

    # -- writes (reindex, reconcile) ----------------------------------------------------------------
    def add(self, rows: Sequence[tuple[int, bytes]]) -> None:
        """Store (memory id, vector bytes) rows; the seq trigger stamps them with this
        transaction's id (a reindex writes every vector)."""
        if rows:
            with self._conn.cursor() as cur:
                cur.executemany("INSERT INTO vectors (memory_id, embedding) VALUES (%s, %b)",
                                [(mid, vector_array(blob)) for mid, blob in rows])

    def put(self, rows: Sequence[tuple[int, bytes]]) -> None:
        """Store (memory id, vector bytes) rows, replacing a memory's vector if it has one."""
        if rows:
            with self._conn.cursor() as cur:
                cur.executemany("INSERT INTO vectors (memory_id, embedding) VALUES (%s, %b) "
                                "ON CONFLICT (memory_id) DO UPDATE SET embedding = excluded.embedding",
                                [(mid, vector_array(blob)) for mid, blob in rows])

    def delete(self, ids: Sequence[int]) -> None:
        if ids:
            self._conn.execute("DELETE FROM vectors WHERE memory_id = ANY(%s)", (list(ids),))

    def replace_all(self, rows: Sequence[tuple[int, bytes]]) -> None:
        """Every stored vector replaced by ``rows``; rows of memories deleted meanwhile are skipped."""
        self._conn.execute("DELETE FROM vectors")
        live = {r[0] for r in self._conn.execute("SELECT id FROM memories")}
        self.add([(mid, blob) for mid, blob in rows if mid in live])

    def missing_texts(self) -> list[tuple[int, str, str]]:
        """(id, title, content) of the memories without a vector."""
        return self._conn.execute(
            "SELECT id, title, content FROM memories m WHERE NOT EXISTS "
            "(SELECT 1 FROM vectors v WHERE v.memory_id = m.id) ORDER BY id").fetchall()


def vector_array(blob: bytes) -> np.ndarray:
    """Stored little-endian float32 bytes as the array the pgvector adapter sends."""
    return np.frombuffer(blob, dtype=_LE_F4)
