"""Named, ordered schema migrations of the PostgreSQL backend. Never edit one that shipped: add one.

The tables mirror storage/sqlite/migrations.py as of its 0013 (same names, columns and meaning),
written the PostgreSQL way: identity ids (never reused, like AUTOINCREMENT), double precision
epoch seconds, jsonb tags and metadata, a pgvector column for embeddings, a stored tsvector
column (kept in step by the server, so it cannot drift like an external FTS index) and plpgsql
triggers for the change feed. Each statement runs inside one transaction that holds the
migration advisory lock (store.py).
"""

from __future__ import annotations

#: A text search configuration close to SQLite's ``porter unicode61``: English Snowball stemming
#: and no stop word list (FTS5 drops none either; fts.query_terms already drops them from
#: queries, but keeps them when the query holds nothing else).
TEXT_CONFIG = "recallite_english"

#: A memory as one tsvector (a generated column may not read another, so both use this text).
_DOCUMENT = (f"setweight(to_tsvector('{TEXT_CONFIG}', title), 'A') "
             f"|| setweight(to_tsvector('{TEXT_CONFIG}', content), 'B') "
             f"|| setweight(to_tsvector('{TEXT_CONFIG}', tags::text), 'C')")

#: Delta rows of the keyword statistics are folded into their base row about once per this many
#: writes (0003); readers sum what is not folded yet, so more means cheaper writes, slower reads.
FOLD_EVERY = 64
#: The advisory key of that fold (a try-lock: a writer never waits for it).
FOLD_LOCK = 0x7265_6361_6C6C_04

#: The keyword postings re-derived from the stored tsvectors (0007; PostgresKeywords.rebuild).
POSTINGS_REBUILD = (
    "DELETE FROM keyword_postings",
    "INSERT INTO keyword_postings SELECT p.lexeme, m.id, p.fa, p.fb, p.fc, p.fd, m.tsv_tokens "
    "FROM memories m CROSS JOIN LATERAL recallite_postings(m.tsv) p",
    "DELETE FROM window_postings",
    "INSERT INTO window_postings SELECT p.lexeme, w.memory_id, p.fa, p.fb, p.fc, p.fd, w.tsv_tokens "
    "FROM episode_windows w CROSS JOIN LATERAL recallite_postings(w.tsv) p",
)


def _postings_triggers(table: str, key: str, postings: str, text_columns: str) -> list[str]:
    """The index on ``postings``' memory ids and the triggers that keep it in step with ``table``
    (0007): statement triggers over transition tables for inserts and deletes, a row trigger for
    an edit of a text column that changed the tsvector. Static SQL per table: plpgsql plans it once."""
    rows = f"SELECT p.lexeme, n.{key}, p.fa, p.fb, p.fc, p.fd, n.tsv_tokens FROM {{}} CROSS JOIN LATERAL recallite_postings(n.tsv) p"
    bodies = {
        "i": f"INSERT INTO {postings} {rows.format('new_rows n')};",
        "d": f"DELETE FROM {postings} p USING old_rows o WHERE p.memory_id = o.{key};",
        "u": f"DELETE FROM {postings} WHERE memory_id = NEW.{key}; "
             f"INSERT INTO {postings} {rows.format('(SELECT NEW.*) n')};",
    }
    out = [f"CREATE INDEX {postings}_memory ON {postings} (memory_id)"]
    for op, body in bodies.items():
        out.append(f"CREATE FUNCTION recallite_{postings}_{op}() RETURNS trigger LANGUAGE plpgsql AS $$ "
                   f"BEGIN {body} RETURN NULL; END $$")
    out += [
        f"CREATE TRIGGER {table}_postings_i AFTER INSERT ON {table} REFERENCING NEW TABLE AS new_rows "
        f"FOR EACH STATEMENT EXECUTE FUNCTION recallite_{postings}_i()",
        f"CREATE TRIGGER {table}_postings_d AFTER DELETE ON {table} REFERENCING OLD TABLE AS old_rows "
        f"FOR EACH STATEMENT EXECUTE FUNCTION recallite_{postings}_d()",
        f"CREATE TRIGGER {table}_postings_u AFTER UPDATE OF {text_columns} ON {table} FOR EACH ROW "
        f"WHEN (OLD.tsv IS DISTINCT FROM NEW.tsv) EXECUTE FUNCTION recallite_{postings}_u()",
    ]
    return out


MIGRATIONS: list[tuple[str, list[str]]] = [
    (
        "0001_initial",
        [
            "CREATE TABLE meta (key text PRIMARY KEY, value text NOT NULL)",
            # One change counter for everything the projections follow (see the change feed).
            "CREATE TABLE counters (name text PRIMARY KEY, value bigint NOT NULL)",
            "INSERT INTO counters (name, value) VALUES ('changes', 0), ('tombstone_floor', 0), "
            "('chunk_tombstone_floor', 0), ('learning_epoch', 0), "
            # BM25's collection statistics (keywords.py): documents and tokens of each index.
            "('keyword_docs', 0), ('keyword_tokens', 0), ('window_docs', 0), ('window_tokens', 0)",
            "CREATE TEXT SEARCH DICTIONARY recallite_english_stem (TEMPLATE = snowball, Language = english)",
            f"CREATE TEXT SEARCH CONFIGURATION {TEXT_CONFIG} (COPY = pg_catalog.english)",
            f"ALTER TEXT SEARCH CONFIGURATION {TEXT_CONFIG} ALTER MAPPING FOR asciiword, asciihword, "
            "hword_asciipart, word, hword, hword_part WITH recallite_english_stem",
            # A document's length in tokens (BM25's |D|): every position of every lexeme. The
            # configuration has no stop words, so this counts what FTS5's docsize counts.
            """
            CREATE FUNCTION recallite_tokens(tsvector) RETURNS integer LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
                SELECT coalesce(sum(cardinality(positions)), 0)::integer FROM pg_catalog.unnest($1)
            $$
            """,
            f"""
            CREATE TABLE memories (
                id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
                type text NOT NULL,
                title text NOT NULL DEFAULT '',
                content text NOT NULL,
                status text NOT NULL,
                source_type text NOT NULL,
                source_id text,
                scope text NOT NULL DEFAULT 'default',
                session text,
                tags jsonb NOT NULL DEFAULT '[]',
                metadata jsonb NOT NULL DEFAULT '{{}}',
                confidence double precision NOT NULL,
                usefulness double precision NOT NULL DEFAULT 0.5,
                importance double precision NOT NULL DEFAULT 0.5,
                success_count integer NOT NULL DEFAULT 0,
                failure_count integer NOT NULL DEFAULT 0,
                access_count integer NOT NULL DEFAULT 0,
                last_accessed_at double precision,
                created_at double precision NOT NULL,
                updated_at double precision NOT NULL,
                superseded_by bigint REFERENCES memories(id) ON DELETE SET NULL,
                content_hash text NOT NULL,
                tokens integer NOT NULL DEFAULT 0,
                seq bigint NOT NULL DEFAULT 0,
                valid_until double precision,
                validated_at double precision,
                -- title, content, tags labelled A, B, C: a query weighs the columns (keywords.py).
                tsv tsvector GENERATED ALWAYS AS ({_DOCUMENT}) STORED,
                tsv_tokens integer GENERATED ALWAYS AS (recallite_tokens({_DOCUMENT})) STORED
            )
            """,
            "CREATE INDEX memories_stats ON memories (scope, status, type, source_type, tokens)",
            "CREATE INDEX memories_hash ON memories (content_hash, scope)",
            "CREATE INDEX memories_seq ON memories (seq)",
            "CREATE INDEX memories_superseded_by ON memories (superseded_by)",
            "CREATE INDEX memories_valid_until ON memories (valid_until) WHERE valid_until IS NOT NULL",
            "CREATE INDEX memories_tsv ON memories USING gin (tsv)",
            # BM25 needs the collection's size and mean length: kept per write, not scanned per
            # query. Statement triggers over transition tables: a bulk insert (COPY, INSERT ...
            # SELECT) moves the totals once, not once per row (repeated updates of one row inside
            # one transaction make PostgreSQL walk an ever longer version chain).
            """
            CREATE FUNCTION recallite_keyword_totals() RETURNS trigger LANGUAGE plpgsql AS $$
            DECLARE
                prefix text := CASE WHEN TG_TABLE_NAME = 'memories' THEN 'keyword' ELSE 'window' END;
                docs bigint;
                tokens bigint;
            BEGIN
                IF TG_OP = 'INSERT' THEN
                    SELECT count(*), coalesce(sum(tsv_tokens), 0) INTO docs, tokens FROM new_rows;
                ELSIF TG_OP = 'DELETE' THEN
                    SELECT -count(*), -coalesce(sum(tsv_tokens), 0) INTO docs, tokens FROM old_rows;
                ELSE
                    docs := 0;
                    tokens := coalesce((SELECT sum(tsv_tokens) FROM new_rows), 0)
                              - coalesce((SELECT sum(tsv_tokens) FROM old_rows), 0);
                END IF;
                UPDATE counters SET value = value + docs WHERE name = prefix || '_docs' AND docs <> 0;
                UPDATE counters SET value = value + tokens WHERE name = prefix || '_tokens' AND tokens <> 0;
                RETURN NULL;
            END
            $$
            """,
            *(f"CREATE TRIGGER {table}_keyword_totals_{op[0].lower()} AFTER {op} ON {table} "
              f"REFERENCING {rows} FOR EACH STATEMENT EXECUTE FUNCTION recallite_keyword_totals()"
              for table in ("memories",)
              for op, rows in (("INSERT", "NEW TABLE AS new_rows"), ("DELETE", "OLD TABLE AS old_rows"),
                               ("UPDATE", "OLD TABLE AS old_rows NEW TABLE AS new_rows"))),
            "CREATE INDEX memories_tags ON memories USING gin (tags)",
            # Dimensions follow the embedder, so the column is untyped; store.ensure_vector_index
            # adds an HNSW index over a cast to the store's dimension once it is known.
            """
            CREATE TABLE vectors (
                memory_id bigint PRIMARY KEY REFERENCES memories(id) ON DELETE CASCADE,
                embedding vector NOT NULL,
                seq bigint NOT NULL DEFAULT 0
            )
            """,
            "CREATE INDEX vectors_seq ON vectors (seq)",
            "CREATE TABLE tombstones (memory_id bigint NOT NULL, seq bigint NOT NULL)",
            "CREATE INDEX tombstones_seq ON tombstones (seq)",
            # The change feed: SQLite's AFTER triggers stamp the row with a second UPDATE; here a
            # BEFORE trigger sets NEW.seq directly. A bulk insert that stamped its rows itself
            # (seq > 0, one bump per batch) is left alone, as in SQLite's 0006.
            """
            CREATE FUNCTION recallite_bump() RETURNS bigint LANGUAGE sql AS $$
                UPDATE counters SET value = value + 1 WHERE name = 'changes' RETURNING value
            $$
            """,
            """
            CREATE FUNCTION recallite_stamp() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                IF TG_OP = 'INSERT' AND NEW.seq <> 0 THEN
                    RETURN NEW;
                END IF;
                NEW.seq := recallite_bump();
                RETURN NEW;
            END
            $$
            """,
            """
            CREATE FUNCTION recallite_tombstone() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                IF TG_TABLE_NAME = 'memories' THEN
                    INSERT INTO tombstones (memory_id, seq) VALUES (OLD.id, recallite_bump());
                ELSIF TG_TABLE_NAME = 'vectors' THEN
                    INSERT INTO tombstones (memory_id, seq) VALUES (OLD.memory_id, recallite_bump());
                ELSE
                    INSERT INTO chunk_tombstones (chunk_id, seq) VALUES (OLD.id, recallite_bump());
                END IF;
                RETURN OLD;
            END
            $$
            """,
            "CREATE TRIGGER memories_seq_bi BEFORE INSERT ON memories FOR EACH ROW EXECUTE FUNCTION recallite_stamp()",
            # Filter columns and text (SQLite 0001 and 0010): every reader's projection follows.
            "CREATE TRIGGER memories_seq_bu BEFORE UPDATE OF type, status, scope, session, title, content, tags "
            "ON memories FOR EACH ROW EXECUTE FUNCTION recallite_stamp()",
            "CREATE TRIGGER memories_seq_ad AFTER DELETE ON memories FOR EACH ROW EXECUTE FUNCTION recallite_tombstone()",
            "CREATE TRIGGER vectors_seq_bi BEFORE INSERT ON vectors FOR EACH ROW EXECUTE FUNCTION recallite_stamp()",
            "CREATE TRIGGER vectors_seq_bu BEFORE UPDATE OF embedding ON vectors "
            "FOR EACH ROW EXECUTE FUNCTION recallite_stamp()",
            "CREATE TRIGGER vectors_seq_ad AFTER DELETE ON vectors FOR EACH ROW EXECUTE FUNCTION recallite_tombstone()",
            """
            CREATE TABLE relations (
                id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
                from_id bigint NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
                to_id bigint NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
                type text NOT NULL,
                confidence_effect integer NOT NULL DEFAULT 1,
                created_at double precision NOT NULL,
                UNIQUE (from_id, to_id, type)
            )
            """,
            "CREATE INDEX relations_to ON relations (to_id, type)",
            """
            CREATE TABLE retrievals (
                id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
                query text NOT NULL,
                profile text NOT NULL,
                scope text,
                kind text NOT NULL DEFAULT 'recall',
                tokens_served integer,
                tokens_matched integer,
                created_at double precision NOT NULL
            )
            """,
            """
            CREATE TABLE retrieval_items (
                retrieval_id bigint NOT NULL REFERENCES retrievals(id) ON DELETE CASCADE,
                memory_id bigint NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
                rank integer NOT NULL,
                score double precision NOT NULL,
                expanded integer NOT NULL DEFAULT 0,
                served integer NOT NULL DEFAULT 1,
                PRIMARY KEY (retrieval_id, memory_id)
            )
            """,
            "CREATE INDEX retrieval_items_memory ON retrieval_items (memory_id)",
            """
            CREATE TABLE feedback (
                id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
                retrieval_id bigint REFERENCES retrievals(id) ON DELETE SET NULL,
                outcome text NOT NULL,
                score double precision NOT NULL,
                used_ids text NOT NULL DEFAULT '[]',
                reason text,
                client_key text UNIQUE,
                created_at double precision NOT NULL
            )
            """,
            "CREATE INDEX feedback_retrieval_id ON feedback (retrieval_id)",
            # row_id stands in for SQLite's rowid: the learner's cache key is "the last outcome row".
            # Writers hold the write lock (store.py), so ids grow in commit order.
            """
            CREATE TABLE memory_outcomes (
                row_id bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
                feedback_id bigint NOT NULL REFERENCES feedback(id) ON DELETE CASCADE,
                memory_id bigint NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
                weight double precision NOT NULL,
                target double precision NOT NULL,
                old_usefulness double precision NOT NULL,
                new_usefulness double precision NOT NULL,
                created_at double precision NOT NULL,
                kind text NOT NULL DEFAULT 'credit',
                PRIMARY KEY (feedback_id, memory_id)
            )
            """,
            "CREATE INDEX memory_outcomes_memory ON memory_outcomes (memory_id)",
            """
            CREATE FUNCTION recallite_learning_epoch() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                UPDATE counters SET value = value + 1 WHERE name = 'learning_epoch';
                RETURN NULL;
            END
            $$
            """,
            "CREATE TRIGGER memory_outcomes_learning_ad AFTER DELETE ON memory_outcomes "
            "FOR EACH STATEMENT EXECUTE FUNCTION recallite_learning_epoch()",
            "CREATE TABLE redactions (kind text PRIMARY KEY, count integer NOT NULL DEFAULT 0)",
            """
            CREATE TABLE episodes (
                memory_id bigint PRIMARY KEY REFERENCES memories(id) ON DELETE CASCADE,
                scope text NOT NULL,
                session text NOT NULL DEFAULT '',
                role text NOT NULL,
                seq integer NOT NULL,
                event_at double precision NOT NULL
            )
            """,
            "CREATE UNIQUE INDEX episodes_order ON episodes (scope, session, seq)",
            "CREATE INDEX episodes_role ON episodes (role)",
            """
            CREATE TABLE memory_categories (
                memory_id bigint PRIMARY KEY REFERENCES memories(id) ON DELETE CASCADE,
                category text NOT NULL
            )
            """,
            "CREATE INDEX memory_categories_category ON memory_categories (category)",
            """
            CREATE TABLE chunks (
                id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
                memory_id bigint NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
                ord integer NOT NULL,
                start integer NOT NULL,
                stop integer NOT NULL,
                text text NOT NULL,
                embedding vector NOT NULL,
                seq bigint NOT NULL DEFAULT 0,
                UNIQUE (memory_id, ord)
            )
            """,
            "CREATE INDEX chunks_seq ON chunks (seq)",
            "CREATE TABLE chunk_tombstones (chunk_id bigint NOT NULL, seq bigint NOT NULL)",
            "CREATE INDEX chunk_tombstones_seq ON chunk_tombstones (seq)",
            "CREATE TRIGGER chunks_seq_bi BEFORE INSERT ON chunks FOR EACH ROW EXECUTE FUNCTION recallite_stamp()",
            "CREATE TRIGGER chunks_seq_bu BEFORE UPDATE OF embedding ON chunks "
            "FOR EACH ROW EXECUTE FUNCTION recallite_stamp()",
            "CREATE TRIGGER chunks_seq_ad AFTER DELETE ON chunks FOR EACH ROW EXECUTE FUNCTION recallite_tombstone()",
            """
            CREATE TABLE citations (
                memory_id bigint NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
                episode_id bigint NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
                created_at double precision NOT NULL,
                PRIMARY KEY (memory_id, episode_id)
            )
            """,
            "CREATE INDEX citations_episode ON citations (episode_id)",
            """
            CREATE TABLE session_summaries (
                scope text NOT NULL,
                session text NOT NULL,
                pool text NOT NULL DEFAULT '[]',
                turns integer NOT NULL DEFAULT 0,
                updated_at double precision NOT NULL,
                PRIMARY KEY (scope, session)
            )
            """,
            """
            CREATE TABLE scope_links (
                scope text NOT NULL,
                team_scope text NOT NULL,
                created_at double precision NOT NULL,
                PRIMARY KEY (scope, team_scope)
            )
            """,
            # A turn indexed with its neighbours (SQLite's episode_windows FTS5 table); the
            # foreign key does what SQLite's episode_windows_ad trigger does.
            f"""
            CREATE TABLE episode_windows (
                memory_id bigint PRIMARY KEY REFERENCES memories(id) ON DELETE CASCADE,
                text text NOT NULL,
                tsv tsvector GENERATED ALWAYS AS (to_tsvector('{TEXT_CONFIG}', text)) STORED,
                tsv_tokens integer GENERATED ALWAYS AS (recallite_tokens(to_tsvector('{TEXT_CONFIG}', text))) STORED
            )
            """,
            "CREATE INDEX episode_windows_tsv ON episode_windows USING gin (tsv)",
            *(f"CREATE TRIGGER episode_windows_keyword_totals_{op[0].lower()} AFTER {op} ON episode_windows "
              f"REFERENCING {rows} FOR EACH STATEMENT EXECUTE FUNCTION recallite_keyword_totals()"
              for op, rows in (("INSERT", "NEW TABLE AS new_rows"), ("DELETE", "OLD TABLE AS old_rows"),
                               ("UPDATE", "OLD TABLE AS old_rows NEW TABLE AS new_rows"))),
            """
            CREATE TABLE retrieval_vectors (
                retrieval_id bigint PRIMARY KEY REFERENCES retrievals(id) ON DELETE CASCADE,
                vector bytea NOT NULL
            )
            """,
            """
            CREATE TABLE context_tuning (
                scope text NOT NULL,
                arm text NOT NULL,
                pulls double precision NOT NULL DEFAULT 0,
                reward double precision NOT NULL DEFAULT 0,
                updated_at double precision NOT NULL,
                PRIMARY KEY (scope, arm)
            )
            """,
            """
            CREATE TABLE retrieval_tuning (
                retrieval_id bigint PRIMARY KEY REFERENCES retrievals(id) ON DELETE CASCADE,
                scope text NOT NULL,
                arm text NOT NULL,
                max_tokens integer NOT NULL
            )
            """,
        ],
    ),
    (
        # Export lists citations in the order they were written (SQLite: rowid order).
        "0002_citation_order",
        ["ALTER TABLE citations ADD COLUMN row_id bigint GENERATED ALWAYS AS IDENTITY"],
    ),
    (
        # Writers no longer queue on shared counter rows (docs/postgres.md, "Throughput"): a row
        # updated by every write is locked by each writer until its COMMIT, so 0001's counters
        # let one write commit at a time whatever lock the store takes.
        "0003_concurrent_writers",
        [
            # The change feed's stamp is the writing transaction's id (xid8, 64 bits, never
            # wraps); a reader's watermark is its snapshot's oldest running id minus one, below
            # which every stamp is settled (session.py, PostgresChangeFeed.counter).
            "CREATE OR REPLACE FUNCTION recallite_bump() RETURNS bigint LANGUAGE sql VOLATILE AS $$ "
            "SELECT pg_current_xact_id()::text::bigint $$",
            "CREATE FUNCTION recallite_watermark() RETURNS bigint LANGUAGE sql STABLE AS $$ "
            "SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint - 1 $$",
            # Stamps of the old counter mean nothing now: every row counts as old, and (for a
            # store with data) the tombstone floors move to this transaction: every reader reloads once.
            "UPDATE memories SET seq = 0 WHERE seq <> 0",
            "UPDATE vectors SET seq = 0 WHERE seq <> 0",
            "UPDATE chunks SET seq = 0 WHERE seq <> 0",
            "DELETE FROM tombstones",
            "DELETE FROM chunk_tombstones",
            "UPDATE counters SET value = recallite_bump() WHERE name IN ('tombstone_floor', 'chunk_tombstone_floor') "
            "AND (EXISTS (SELECT 1 FROM memories) OR value <> 0)",
            # BM25's collection statistics: each write adds a delta row (no shared row to lock);
            # readers add the deltas to the base row; now and then a writer folds them in.
            "CREATE TABLE counter_deltas (name text NOT NULL, value bigint NOT NULL)",
            "CREATE INDEX counter_deltas_name ON counter_deltas (name)",
            f"""
            CREATE FUNCTION recallite_add(counter text, delta bigint) RETURNS void LANGUAGE plpgsql AS $$
            BEGIN
                IF delta = 0 THEN
                    RETURN;
                END IF;
                INSERT INTO counter_deltas (name, value) VALUES (counter, delta);
                -- About once in {FOLD_EVERY} writes, and only if no other writer is folding (no wait).
                IF random() < {1 / FOLD_EVERY} AND pg_try_advisory_xact_lock({FOLD_LOCK}) THEN
                    WITH gone AS (DELETE FROM counter_deltas RETURNING name, value),
                         sums AS (SELECT name, sum(value) AS v FROM gone GROUP BY name)
                    UPDATE counters c SET value = c.value + sums.v FROM sums WHERE c.name = sums.name;
                END IF;
            END
            $$
            """,
            """
            CREATE FUNCTION recallite_counter(counter text) RETURNS bigint LANGUAGE sql STABLE AS $$
                SELECT (SELECT value FROM counters WHERE name = counter)
                       + coalesce((SELECT sum(value) FROM counter_deltas WHERE name = counter), 0)::bigint
            $$
            """,
            """
            CREATE OR REPLACE FUNCTION recallite_keyword_totals() RETURNS trigger LANGUAGE plpgsql AS $$
            DECLARE
                prefix text := CASE WHEN TG_TABLE_NAME = 'memories' THEN 'keyword' ELSE 'window' END;
                docs bigint;
                tokens bigint;
            BEGIN
                IF TG_OP = 'INSERT' THEN
                    SELECT count(*), coalesce(sum(tsv_tokens), 0) INTO docs, tokens FROM new_rows;
                ELSIF TG_OP = 'DELETE' THEN
                    SELECT -count(*), -coalesce(sum(tsv_tokens), 0) INTO docs, tokens FROM old_rows;
                ELSE
                    docs := 0;
                    tokens := coalesce((SELECT sum(tsv_tokens) FROM new_rows), 0)
                              - coalesce((SELECT sum(tsv_tokens) FROM old_rows), 0);
                END IF;
                PERFORM recallite_add(prefix || '_docs', docs);
                PERFORM recallite_add(prefix || '_tokens', tokens);
                RETURN NULL;
            END
            $$
            """,
        ],
    ),
    (
        # The change feed's counter moves only when something a reader follows changed (docs/postgres.md,
        # "The change feed"): 0003's watermark moved with every transaction anywhere, a recall's
        # retrieval log and access counts included, so each recall made every process (itself too)
        # re-read the feed and drop its counter-keyed caches (document frequencies, the episode map).
        # The mark is the newest settled stamp: the largest stamp at or below the watermark among the
        # stamped rows and the tombstone floors. No row can still appear with a stamp between it and
        # the watermark (those are settled), so "changes after the mark" is the same set of rows as
        # "changes after the watermark"; each max() is one backward step of the seq index.
        "0004_feed_mark",
        [
            """
            CREATE FUNCTION recallite_feed_mark() RETURNS bigint LANGUAGE plpgsql STABLE AS $$
            DECLARE
                w bigint := recallite_watermark();
            BEGIN
                -- plpgsql keeps these plans per connection, and "seq <= w" with w a variable is an
                -- index bound (a SQL function's CTE cross join was a scan: 30 ms at 13k rows).
                RETURN coalesce(greatest(
                    (SELECT max(seq) FROM memories WHERE seq <= w),
                    (SELECT max(seq) FROM vectors WHERE seq <= w),
                    (SELECT max(seq) FROM chunks WHERE seq <= w),
                    (SELECT max(seq) FROM tombstones WHERE seq <= w),
                    (SELECT max(seq) FROM chunk_tombstones WHERE seq <= w),
                    (SELECT max(value) FROM counters
                     WHERE name IN ('tombstone_floor', 'chunk_tombstone_floor') AND value <= w)), 0);
            END
            $$
            """,
        ],
    ),
    (
        # As SQLite's 0014: a cut context's keep ratio per memory, which the context tuner replays
        # stricter floors on; NULL where nothing was cut.
        "0005_retrieval_keep_ratio",
        ["ALTER TABLE retrieval_items ADD COLUMN keep double precision"],
    ),
    (
        # As SQLite's 0015: the limit a tuned context was served with, which the tuner replays at.
        "0006_tuning_served_limit",
        ["ALTER TABLE retrieval_tuning ADD COLUMN served_limit integer"],
    ),
    (
        # BM25 from postings: one row per (lexeme, document) with the lexeme's occurrences per
        # column label and the document's length, so a query reads the rows of its own lexemes
        # (index-only, on the primary key) instead of unnesting the whole tsvector of every
        # document that matches (at 100k memories that unnesting cost a recall ~230 ms). Derived
        # from tsv, in the writing transaction, by triggers: statement ones over transition tables
        # for inserts and deletes, a row one for the rare update of a text column.
        "0007_keyword_postings",
        [
            """
            CREATE FUNCTION recallite_postings(tsvector)
                RETURNS TABLE (lexeme text, fa smallint, fb smallint, fc smallint, fd smallint)
                LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
                SELECT u.lexeme,
                       cardinality(array_positions(u.weights, 'A'))::smallint,
                       cardinality(array_positions(u.weights, 'B'))::smallint,
                       cardinality(array_positions(u.weights, 'C'))::smallint,
                       cardinality(array_positions(u.weights, 'D'))::smallint
                FROM pg_catalog.unnest($1) u
            $$
            """,
            *(f"""
            CREATE TABLE {postings} (
                lexeme text NOT NULL,
                memory_id bigint NOT NULL,
                fa smallint NOT NULL, fb smallint NOT NULL, fc smallint NOT NULL, fd smallint NOT NULL,
                len integer NOT NULL,
                PRIMARY KEY (lexeme, memory_id) INCLUDE (fa, fb, fc, fd, len)
            )
            """ for postings in ("keyword_postings", "window_postings")),
            *_postings_triggers("memories", "id", "keyword_postings", "title, content, tags"),
            *_postings_triggers("episode_windows", "memory_id", "window_postings", "text"),
            *POSTINGS_REBUILD,
        ],
    ),
    (
        # As SQLite's 0016: a restore looks each restored retrieval up by query, kind and time
        # (archive.same_retrieval); the near-unique time makes that an index lookup, not a scan
        # of the whole retrieval log per restored retrieval.
        "0008_retrievals_created_at",
        ["CREATE INDEX retrievals_created_at ON retrievals (created_at)"],
    ),
    (
        # As SQLite's 0017: the caller's name for the task, read with each outcome row.
        "0009_retrievals_task",
        ["ALTER TABLE retrievals ADD COLUMN task text"],
    ),
    (
        # As SQLite's 0018: the named recall's lookup of what worked under its name.
        "0010_retrievals_task_index",
        ["CREATE INDEX retrievals_task ON retrievals (task) WHERE task IS NOT NULL"],
    ),
    (
        # As SQLite's 0019: the task's name as the caller wrote it, beside its key.
        "0011_retrievals_task_label",
        ["ALTER TABLE retrievals ADD COLUMN task_label text"],
    ),
]

SCHEMA_VERSION = len(MIGRATIONS)

#: recallite's tables (what store.vacuum rewrites and store.file_sizes counts).
TABLES = ("meta", "counters", "counter_deltas", "memories", "vectors", "tombstones", "relations", "retrievals", "retrieval_items",
          "feedback", "memory_outcomes", "redactions", "episodes", "memory_categories", "chunks", "chunk_tombstones",
          "citations", "session_summaries", "scope_links", "episode_windows", "retrieval_vectors", "context_tuning",
          "retrieval_tuning", "keyword_postings", "window_postings", "schema_migrations")
