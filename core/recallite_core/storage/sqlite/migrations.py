"""Named, ordered schema migrations. Never edit one that shipped: add a new one."""

from __future__ import annotations

MIGRATIONS: list[tuple[str, str]] = [
    (
        "0001_initial",
        """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);

        -- One change counter for everything the vector index projects (vectors, and the
        -- scope/status/type/session it filters on). Readers compare it to what they saw.
        CREATE TABLE counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
        INSERT INTO counters (name, value) VALUES ('changes', 0), ('tombstone_floor', 0);

        CREATE TABLE memories (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            type TEXT NOT NULL,
            title TEXT NOT NULL DEFAULT '',
            content TEXT NOT NULL,
            status TEXT NOT NULL,
            source_type TEXT NOT NULL,
            source_id TEXT,
            scope TEXT NOT NULL DEFAULT 'default',
            session TEXT,
            tags TEXT NOT NULL DEFAULT '[]',
            metadata TEXT NOT NULL DEFAULT '{}',
            confidence REAL NOT NULL,
            usefulness REAL NOT NULL DEFAULT 0.5,
            importance REAL NOT NULL DEFAULT 0.5,
            success_count INTEGER NOT NULL DEFAULT 0,
            failure_count INTEGER NOT NULL DEFAULT 0,
            access_count INTEGER NOT NULL DEFAULT 0,
            last_accessed_at REAL,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL,
            superseded_by INTEGER REFERENCES memories(id) ON DELETE SET NULL,
            content_hash TEXT NOT NULL,
            tokens INTEGER NOT NULL DEFAULT 0,
            seq INTEGER NOT NULL DEFAULT 0
        );
        CREATE INDEX memories_scope_status ON memories(scope, status, type);
        CREATE INDEX memories_hash ON memories(content_hash, scope);
        CREATE INDEX memories_seq ON memories(seq);
        CREATE INDEX memories_superseded_by ON memories(superseded_by);

        CREATE VIRTUAL TABLE memories_fts USING fts5(
            title, content, tags, content='memories', content_rowid='id', tokenize='porter unicode61'
        );
        CREATE TRIGGER memories_fts_ai AFTER INSERT ON memories BEGIN
            INSERT INTO memories_fts(rowid, title, content, tags) VALUES (new.id, new.title, new.content, new.tags);
        END;
        CREATE TRIGGER memories_fts_ad AFTER DELETE ON memories BEGIN
            INSERT INTO memories_fts(memories_fts, rowid, title, content, tags)
            VALUES ('delete', old.id, old.title, old.content, old.tags);
        END;
        CREATE TRIGGER memories_fts_au AFTER UPDATE OF title, content, tags ON memories BEGIN
            INSERT INTO memories_fts(memories_fts, rowid, title, content, tags)
            VALUES ('delete', old.id, old.title, old.content, old.tags);
            INSERT INTO memories_fts(rowid, title, content, tags) VALUES (new.id, new.title, new.content, new.tags);
        END;

        CREATE TABLE vectors (
            memory_id INTEGER PRIMARY KEY REFERENCES memories(id) ON DELETE CASCADE,
            vector BLOB NOT NULL,
            seq INTEGER NOT NULL DEFAULT 0
        );
        CREATE INDEX vectors_seq ON vectors(seq);
        CREATE TABLE tombstones (memory_id INTEGER NOT NULL, seq INTEGER NOT NULL);
        CREATE INDEX tombstones_seq ON tombstones(seq);

        CREATE TRIGGER memories_seq_ai AFTER INSERT ON memories BEGIN
            UPDATE counters SET value = value + 1 WHERE name = 'changes';
            UPDATE memories SET seq = (SELECT value FROM counters WHERE name = 'changes') WHERE id = new.id;
        END;
        CREATE TRIGGER memories_seq_au AFTER UPDATE OF type, status, scope, session ON memories BEGIN
            UPDATE counters SET value = value + 1 WHERE name = 'changes';
            UPDATE memories SET seq = (SELECT value FROM counters WHERE name = 'changes') WHERE id = new.id;
        END;
        CREATE TRIGGER memories_seq_ad AFTER DELETE ON memories BEGIN
            UPDATE counters SET value = value + 1 WHERE name = 'changes';
            INSERT INTO tombstones(memory_id, seq) VALUES (old.id, (SELECT value FROM counters WHERE name = 'changes'));
        END;
        CREATE TRIGGER vectors_seq_ai AFTER INSERT ON vectors BEGIN
            UPDATE counters SET value = value + 1 WHERE name = 'changes';
            UPDATE vectors SET seq = (SELECT value FROM counters WHERE name = 'changes') WHERE memory_id = new.memory_id;
        END;
        CREATE TRIGGER vectors_seq_au AFTER UPDATE OF vector ON vectors BEGIN
            UPDATE counters SET value = value + 1 WHERE name = 'changes';
            UPDATE vectors SET seq = (SELECT value FROM counters WHERE name = 'changes') WHERE memory_id = new.memory_id;
        END;
        CREATE TRIGGER vectors_seq_ad AFTER DELETE ON vectors BEGIN
            UPDATE counters SET value = value + 1 WHERE name = 'changes';
            INSERT INTO tombstones(memory_id, seq) VALUES (old.memory_id, (SELECT value FROM counters WHERE name = 'changes'));
        END;

        CREATE TABLE relations (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            from_id INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
            to_id INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
            type TEXT NOT NULL,
            confidence_effect INTEGER NOT NULL DEFAULT 1,
            created_at REAL NOT NULL,
            UNIQUE (from_id, to_id, type)
        );
        CREATE INDEX relations_to ON relations(to_id, type);

        CREATE TABLE retrievals (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            query TEXT NOT NULL,
            profile TEXT NOT NULL,
            scope TEXT,
            kind TEXT NOT NULL DEFAULT 'recall',
            tokens_served INTEGER,
            tokens_matched INTEGER,
            created_at REAL NOT NULL
        );
        CREATE TABLE retrieval_items (
            retrieval_id INTEGER NOT NULL REFERENCES retrievals(id) ON DELETE CASCADE,
            memory_id INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
            rank INTEGER NOT NULL,
            score REAL NOT NULL,
            PRIMARY KEY (retrieval_id, memory_id)
        );
        CREATE INDEX retrieval_items_memory ON retrieval_items(memory_id);

        CREATE TABLE feedback (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            retrieval_id INTEGER REFERENCES retrievals(id) ON DELETE SET NULL,
            outcome TEXT NOT NULL,
            score REAL NOT NULL,
            used_ids TEXT NOT NULL DEFAULT '[]',
            reason TEXT,
            client_key TEXT UNIQUE,
            created_at REAL NOT NULL
        );
        -- What each feedback did to each memory: the evidence behind usefulness.
        CREATE TABLE memory_outcomes (
            feedback_id INTEGER NOT NULL REFERENCES feedback(id) ON DELETE CASCADE,
            memory_id INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
            weight REAL NOT NULL,
            target REAL NOT NULL,
            old_usefulness REAL NOT NULL,
            new_usefulness REAL NOT NULL,
            created_at REAL NOT NULL,
            PRIMARY KEY (feedback_id, memory_id)
        );
        CREATE INDEX memory_outcomes_memory ON memory_outcomes(memory_id);
        """,
    ),
    (
        "0002_retrieval_expansions",
        """
        -- Which shown memories the agent opened in full after a compact context (progressive
        -- disclosure); feedback without explicit ids credits those.
        ALTER TABLE retrieval_items ADD COLUMN expanded INTEGER NOT NULL DEFAULT 0;
        """,
    ),
    (
        "0003_redactions",
        """
        -- Secrets kept off disk, by kind (see redaction.py): a count, never the secret.
        CREATE TABLE redactions (kind TEXT PRIMARY KEY, count INTEGER NOT NULL DEFAULT 0);
        """,
    ),
    (
        "0004_episodes",
        """
        -- Conversation memory. A turn or event is a memory of type 'episode' (so it shares FTS,
        -- vectors, lifecycle and feedback); this side table holds where it sits in its session.
        -- scope/session are copied from the memory (they never change) so that a window
        -- (same session, seq +- w) is one index range.
        CREATE TABLE episodes (
            memory_id INTEGER PRIMARY KEY REFERENCES memories(id) ON DELETE CASCADE,
            scope TEXT NOT NULL,
            session TEXT NOT NULL DEFAULT '',
            role TEXT NOT NULL,
            seq INTEGER NOT NULL,
            event_at REAL NOT NULL
        );
        CREATE UNIQUE INDEX episodes_order ON episodes(scope, session, seq);
        CREATE INDEX episodes_role ON episodes(role);

        -- An optional free label of any memory (recall(categories=...) filters on it).
        CREATE TABLE memory_categories (
            memory_id INTEGER PRIMARY KEY REFERENCES memories(id) ON DELETE CASCADE,
            category TEXT NOT NULL
        );
        CREATE INDEX memory_categories_category ON memory_categories(category);

        -- Sentence-level chunks of long memories, each with its own vector: a projection of
        -- memories.content (reconcile/reindex rebuild it). Same change counter as the vectors,
        -- own tombstones, so the in-memory chunk matrix refreshes incrementally too.
        CREATE TABLE chunks (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            memory_id INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
            ord INTEGER NOT NULL,
            start INTEGER NOT NULL,
            stop INTEGER NOT NULL,
            text TEXT NOT NULL,
            vector BLOB NOT NULL,
            seq INTEGER NOT NULL DEFAULT 0,
            UNIQUE (memory_id, ord)
        );
        CREATE INDEX chunks_seq ON chunks(seq);
        CREATE TABLE chunk_tombstones (chunk_id INTEGER NOT NULL, seq INTEGER NOT NULL);
        CREATE INDEX chunk_tombstones_seq ON chunk_tombstones(seq);
        INSERT INTO counters (name, value) VALUES ('chunk_tombstone_floor', 0);
        CREATE TRIGGER chunks_seq_ai AFTER INSERT ON chunks BEGIN
            UPDATE counters SET value = value + 1 WHERE name = 'changes';
            UPDATE chunks SET seq = (SELECT value FROM counters WHERE name = 'changes') WHERE id = new.id;
        END;
        CREATE TRIGGER chunks_seq_au AFTER UPDATE OF vector ON chunks BEGIN
            UPDATE counters SET value = value + 1 WHERE name = 'changes';
            UPDATE chunks SET seq = (SELECT value FROM counters WHERE name = 'changes') WHERE id = new.id;
        END;
        CREATE TRIGGER chunks_seq_ad AFTER DELETE ON chunks BEGIN
            UPDATE counters SET value = value + 1 WHERE name = 'changes';
            INSERT INTO chunk_tombstones(chunk_id, seq) VALUES (old.id, (SELECT value FROM counters WHERE name = 'changes'));
        END;

        -- Provenance: a fact/preference cites the conversation turns it came from.
        CREATE TABLE citations (
            memory_id INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
            episode_id INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
            created_at REAL NOT NULL,
            PRIMARY KEY (memory_id, episode_id)
        );
        CREATE INDEX citations_episode ON citations(episode_id);

        -- Running extractive summary per session: a bounded pool of the most informative
        -- sentences seen so far (JSON list of {m: memory id, s: seq, o: order, w: score, t: text}).
        CREATE TABLE session_summaries (
            scope TEXT NOT NULL,
            session TEXT NOT NULL,
            pool TEXT NOT NULL DEFAULT '[]',
            turns INTEGER NOT NULL DEFAULT 0,
            updated_at REAL NOT NULL,
            PRIMARY KEY (scope, session)
        );
        """,
    ),
    (
        "0005_layers_trust",
        """
        -- SLM-Lite: expiry, the time a memory was last validated (trust decays from it) and
        -- team scopes. Layers need no column: a memory's layer follows from its type
        -- (policy.TYPE_LAYER); the working layer lives in process memory only.
        ALTER TABLE memories ADD COLUMN valid_until REAL;
        ALTER TABLE memories ADD COLUMN validated_at REAL;
        CREATE INDEX memories_valid_until ON memories(valid_until) WHERE valid_until IS NOT NULL;
        -- A scope's team scopes: recall(scope=X, include_teams=True) also searches them.
        CREATE TABLE scope_links (
            scope TEXT NOT NULL,
            team_scope TEXT NOT NULL,
            created_at REAL NOT NULL,
            PRIMARY KEY (scope, team_scope)
        );
        """,
    ),
    (
        # Bulk inserts stamp their rows with one counter bump per transaction (seq > 0);
        # the per-row triggers then stay out of the way. Any other insert (seq left at 0)
        # is stamped by the trigger as before, so every reader still sees every change.
        "0006_batch_seq_on_insert",
        """
        DROP TRIGGER memories_seq_ai;
        CREATE TRIGGER memories_seq_ai AFTER INSERT ON memories WHEN new.seq = 0 BEGIN
            UPDATE counters SET value = value + 1 WHERE name = 'changes';
            UPDATE memories SET seq = (SELECT value FROM counters WHERE name = 'changes') WHERE id = new.id;
        END;
        DROP TRIGGER vectors_seq_ai;
        CREATE TRIGGER vectors_seq_ai AFTER INSERT ON vectors WHEN new.seq = 0 BEGIN
            UPDATE counters SET value = value + 1 WHERE name = 'changes';
            UPDATE vectors SET seq = (SELECT value FROM counters WHERE name = 'changes') WHERE memory_id = new.memory_id;
        END;
        """,
    ),
    (
        "0007_episode_windows",
        """
        -- Keyword index of each conversation turn together with its neighbouring turns (same
        -- session, seq +- 1): an answer split over adjacent turns still matches as a whole.
        -- A projection of episodes + memories (reindex rebuilds it); rowid = memory id.
        CREATE VIRTUAL TABLE episode_windows USING fts5(text, tokenize='porter unicode61');
        CREATE TRIGGER episode_windows_ad AFTER DELETE ON memories BEGIN
            DELETE FROM episode_windows WHERE rowid = old.id;
        END;
        INSERT INTO episode_windows (rowid, text)
            SELECT e.memory_id, (
                SELECT group_concat(t, ' ') FROM (
                    SELECT n.role || ': ' || m.content AS t FROM episodes n JOIN memories m ON m.id = n.memory_id
                    WHERE n.scope = e.scope AND n.session = e.session AND n.seq BETWEEN e.seq - 1 AND e.seq + 1
                    ORDER BY n.seq))
            FROM episodes e;
        """,
    ),
    (
        "0008_learning",
        """
        -- Learning from outcomes (learning.py). The query embedding of each retrieval that got
        -- feedback: context-aware credit compares a new query with the ones where a memory
        -- succeeded or failed. A projection of retrievals.query; reindex rebuilds it.
        CREATE TABLE retrieval_vectors (
            retrieval_id INTEGER PRIMARY KEY REFERENCES retrievals(id) ON DELETE CASCADE,
            vector BLOB NOT NULL
        );
        -- Which memories were ever offered in a retrieval that got feedback (exploration: a memory
        -- never offered yet is new and gets its chance).
        CREATE INDEX IF NOT EXISTS feedback_retrieval_id ON feedback(retrieval_id);
        -- Bumped when outcome rows disappear or query vectors are rebuilt: readers drop their caches.
        INSERT INTO counters (name, value) VALUES ('learning_epoch', 0);
        CREATE TRIGGER memory_outcomes_learning_ad AFTER DELETE ON memory_outcomes BEGIN
            UPDATE counters SET value = value + 1 WHERE name = 'learning_epoch';
        END;
        -- recallite_context auto-tuning: a bandit per scope over (limit, min score ratio) arms,
        -- and which arm served each tuned context.
        CREATE TABLE context_tuning (
            scope TEXT NOT NULL,
            arm TEXT NOT NULL,
            pulls REAL NOT NULL DEFAULT 0,
            reward REAL NOT NULL DEFAULT 0,
            updated_at REAL NOT NULL,
            PRIMARY KEY (scope, arm)
        );
        CREATE TABLE retrieval_tuning (
            retrieval_id INTEGER PRIMARY KEY REFERENCES retrievals(id) ON DELETE CASCADE,
            scope TEXT NOT NULL,
            arm TEXT NOT NULL,
            max_tokens INTEGER NOT NULL
        );
        """,
    ),
    (
        # A bulk insert (rows stamped with the batch's seq, migration 0006) fills the keyword
        # index itself with one INSERT ... SELECT over its id range: FTS5 fed row by row from
        # this trigger costs about twice as much (100 rows: ~4.5 ms instead of ~2 ms).
        # Any other insert (seq left at 0) is indexed by the trigger as before.
        "0009_bulk_fts_insert",
        """
        DROP TRIGGER memories_fts_ai;
        CREATE TRIGGER memories_fts_ai AFTER INSERT ON memories WHEN new.seq = 0 BEGIN
            INSERT INTO memories_fts(rowid, title, content, tags) VALUES (new.id, new.title, new.content, new.tags);
        END;
        """,
    ),
    (
        # The in-memory keyword and episode caches follow the change counter. No API edits a
        # memory's text (new versions are new rows), but a hand-made UPDATE of title, content
        # or tags must still reach every reader rather than leave a stale keyword index.
        "0010_text_updates_bump_seq",
        """
        CREATE TRIGGER memories_seq_text_au AFTER UPDATE OF title, content, tags ON memories BEGIN
            UPDATE counters SET value = value + 1 WHERE name = 'changes';
            UPDATE memories SET seq = (SELECT value FROM counters WHERE name = 'changes') WHERE id = new.id;
        END;
        """,
    ),
    (
        # stats() counts memories by scope, status, type and source and sums their tokens:
        # from this covering index that is one pass over small entries, not a scan of the
        # table and its texts (hundreds of ms at 100k memories). Its first three columns are
        # memories_scope_status, which it replaces: one index to maintain per write, not two.
        "0011_stats_index",
        """
        CREATE INDEX memories_stats ON memories(scope, status, type, source_type, tokens);
        DROP INDEX memories_scope_status;
        """,
    ),
    (
        # Which logged hits the agent was actually shown: a context rendered within its token
        # budget leaves some ranked hits out (served = 0), and feedback that names no memory
        # credits only the served ones. A plain recall serves every hit (the default).
        "0012_retrieval_items_served",
        """
        ALTER TABLE retrieval_items ADD COLUMN served INTEGER NOT NULL DEFAULT 1;
        """,
    ),
    (
        # What a task that succeeded did not need: feedback that names the memories it used marks
        # the other served ones as 'unused', a weak sign (policy.UNUSED_WEIGHT) that they do not
        # belong to that task. The learner reads them like a light failure near that task; nothing
        # else counts them (no usefulness change, no promotion, no failure count).
        "0013_unused_outcomes",
        """
        ALTER TABLE memory_outcomes ADD COLUMN kind TEXT NOT NULL DEFAULT 'credit';
        """,
    ),
    (
        # What the context tuner replays a stricter floor on: for a context whose list was cut, the
        # largest relative floor at which the cut keeps each memory (retrieval.cutting.keep_ratios).
        # NULL where nothing was cut (a recall, an explicit limit): the tuner then reads the score.
        "0014_retrieval_keep_ratio",
        """
        ALTER TABLE retrieval_items ADD COLUMN keep REAL;
        """,
    ),
    (
        # The limit a tuned context was served with: a compact context serves twice its arm's
        # limit, and the tuner must replay it (and the arms nested in it) at that scale, or a
        # success used at rank 11-20 counts as a miss for the very arm that served it. NULL on
        # older rows: replayed at the arm's own limit, as before.
        "0015_tuning_served_limit",
        """
        ALTER TABLE retrieval_tuning ADD COLUMN served_limit INTEGER;
        """,
    ),
    (
        # A restore into a store that already logged retrievals looks each restored one up by its
        # query, kind and time (archive.same_retrieval) so a backup restored twice is not logged
        # twice; without an index that was a scan of the whole log per restored retrieval. The
        # time is near unique, so it alone narrows the lookup to a row or two; entries for one
        # time sit in id order (the rowid ends each entry), which serves the ORDER BY id too.
        "0016_retrievals_created_at",
        """
        CREATE INDEX retrievals_created_at ON retrievals(created_at);
        """,
    ),
    (
        # The caller's name for the task (recall/context ``task``, its key: text/task_names.task_key):
        # the outcome history reads it with each row (learner.OutcomeModel.named). NULL: no name given.
        "0017_retrievals_task",
        """
        ALTER TABLE retrievals ADD COLUMN task TEXT;
        """,
    ),
    (
        # A named recall asks which memories worked the last time under its name
        # (outcomes.proven_under): without an index, a scan of the whole log once per new outcome.
        "0018_retrievals_task_index",
        """
        CREATE INDEX retrievals_task ON retrievals(task) WHERE task IS NOT NULL;
        """,
    ),
    (
        # The task's name as the caller wrote it ("Deploy to staging"), beside its key ("deploy
        # staging"): a result lists names the agent used in its own words (Retrievals.labels).
        "0019_retrievals_task_label",
        """
        ALTER TABLE retrievals ADD COLUMN task_label TEXT;
        """,
    ),
]

SCHEMA_VERSION = len(MIGRATIONS)
