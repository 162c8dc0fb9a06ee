"""The PostgreSQL backend (issue 17): a server database with the pgvector extension.

It owns, for a PostgreSQL database: the schema and its named migrations (``migrations``), the
connection, the `vector` extension and transactions (``store``), the change feed and the
integrity check (``session``), one module per noun (``memories``, ``vectors``, ``keywords``,
``relations``, ``outcomes``, ``episodes``), the MemoryFilter as SQL (``filters``) and the row ->
model mapping (``rows``, shared with SQLite's). Keyword search (stored tsvector + GIN) and
nearest-vector search (pgvector, exact or HNSW) run in the server, so it keeps no in-memory
mirror and no scan workers (docs/postgres.md).

It may import what storage may (the standard library, numpy, recallite_core's models, errors and
policy; storage's own base, codec, fts and sqlite.rows) and, lazily and only through ``driver``,
psycopg 3 and the pgvector adapter: the core imports without them, and opening a store without
them says to `pip install "recallite-mcp[postgres]"`.
"""

from __future__ import annotations

from recallite_core.storage.postgres.store import PostgresStore  # loads no driver until a store is opened

__all__ = ["PostgresStore"]
