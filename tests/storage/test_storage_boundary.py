"""The storage boundary (docs/storage.md): SQL lives in recallite_core.storage only, the
storage package imports nothing above it, the SQLite backend implements the interface as
written, and its sessions keep their promises (round trips, all-or-nothing writes)."""

from __future__ import annotations

import ast
import inspect
import pathlib
import re
import sys

import numpy as np
import pytest

import recallite_core
from recallite_core import Recallite
from recallite_core.storage import base
from recallite_core.storage.base import MemoryFilter, Shard
from recallite_core.storage.codec import decode_vector
from recallite_core.storage.sqlite import session as sqlite_session
from recallite_core.storage.sqlite.reader import SnapshotReader
from recallite_core.storage.sqlite.store import Store

CORE = pathlib.Path(recallite_core.__file__).parent

#: Modules outside storage/ allowed to hold SQL of their own: none. Every module of the core
#: asks the storage interface; no module joins this list.
NOT_YET_CONVERTED: set[str] = set()

_SQL = re.compile(
    r"\b(SELECT\b[\s\S]*\bFROM|INSERT\s+(OR\s+\w+\s+)?INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM"
    r"|CREATE\s+(VIRTUAL\s+)?(TABLE|INDEX|TRIGGER)|DROP\s+TABLE|PRAGMA\s+\w+|BEGIN\s+IMMEDIATE)\b",
    re.IGNORECASE,
)
_DRIVER_CALLS = {"execute", "executemany", "executescript"}


def _sql_sites(path: pathlib.Path) -> list[int]:
    """Lines with an SQL string or a driver call (execute/executemany/executescript)."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and _SQL.search(node.value):
            out.append(node.lineno)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr in _DRIVER_CALLS):
            out.append(node.lineno)
    return out


def _core_modules_outside_storage():
    for path in sorted(CORE.rglob("*.py")):
        rel = path.relative_to(CORE)
        if rel.parts[0] != "storage":
            yield rel.as_posix(), path


def test_sql_lives_in_storage_only():
    holding = {rel: lines for rel, path in _core_modules_outside_storage() if (lines := _sql_sites(path))}
    unexpected = {rel: lines[:5] for rel, lines in holding.items() if rel not in NOT_YET_CONVERTED}
    assert not unexpected, f"SQL outside recallite_core/storage (move it behind the storage interface): {unexpected}"
    converted = NOT_YET_CONVERTED - set(holding)
    assert not converted, f"{sorted(converted)} hold no SQL any more: take them off NOT_YET_CONVERTED"


def test_the_detector_sees_sql(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text('x = conn.execute("SELECT id FROM memories")\ny = "UPDATE memories SET a = 1"\n'
                     'z = "select the best of what you know"\n', encoding="utf-8")
    assert sorted(set(_sql_sites(probe))) == [1, 2]


_ALLOWED_CORE = {"recallite_core.models", "recallite_core.errors"}
#: the PostgreSQL backend's driver and adapter (the optional extra), loaded only when it is used
_ALLOWED_DRIVERS = {"psycopg", "pgvector"}


def _reaches_out(root: pathlib.Path) -> list[tuple[str, str]]:
    """(file, module) of every import under ``root`` that is not the stdlib, numpy, storage itself,
    recallite_core's models and errors, or (in the PostgreSQL backend) its driver."""
    stdlib = set(sys.stdlib_module_names)
    bad = []
    for path in sorted(root.rglob("*.py")):
        drivers = _ALLOWED_DRIVERS if "postgres" in path.relative_to(root).parts else set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [a.name.split(".")[0] for a in node.names]
                bad += [(path.name, n) for n in names if n not in stdlib and n != "numpy" and n not in drivers]
            elif isinstance(node, ast.ImportFrom):
                module = node.module or ""
                top = module.split(".")[0]
                if node.level or top in stdlib or top in ("numpy", "__future__") or top in drivers:
                    continue  # relative imports stay inside storage (imports are absolute elsewhere)
                if top != "recallite_core" or not (module.startswith("recallite_core.storage") or module in _ALLOWED_CORE):
                    bad.append((path.name, module))
    return bad


def test_storage_imports_only_what_sits_below_it():
    bad = _reaches_out(CORE / "storage")
    assert not bad, f"storage may import only the stdlib, numpy and recallite_core's {sorted(_ALLOWED_CORE)}: {bad}"


def test_the_storage_rule_catches_a_reach_into_retrieval(tmp_path):
    # the checker itself: an absolute import of a module above storage is reported, a driver only in postgres/
    (tmp_path / "postgres").mkdir()
    (tmp_path / "x.py").write_text("from recallite_core.retrieval.fusion import ramp\nimport psycopg\n")
    (tmp_path / "postgres" / "y.py").write_text("import psycopg\nfrom recallite_core.models import Memory\n")
    assert sorted(_reaches_out(tmp_path)) == [("x.py", "psycopg"), ("x.py", "recallite_core.retrieval.fusion")]


_NOUNS = {
    "feed": (base.ChangeFeed, sqlite_session.SqliteChangeFeed),
    "memories": (base.Memories, sqlite_session.SqliteMemories),
    "vectors": (base.Vectors, sqlite_session.SqliteVectors),
    "keywords": (base.Keywords, sqlite_session.SqliteKeywords),
    "relations": (base.Relations, sqlite_session.SqliteRelations),
    "outcomes": (base.Outcomes, sqlite_session.SqliteOutcomes),
    "retrievals": (base.Retrievals, sqlite_session.SqliteRetrievals),
    "tuning": (base.Tuning, sqlite_session.SqliteTuning),
    "episodes": (base.Episodes, sqlite_session.SqliteEpisodes),
    "integrity": (base.Integrity, sqlite_session.SqliteIntegrity),
    "stats": (base.Stats, sqlite_session.SqliteStats),
    "teams": (base.Teams, sqlite_session.SqliteTeams),
    "drift": (base.Drift, sqlite_session.SqliteDrift),
    "archive": (base.Archive, sqlite_session.SqliteArchive),
}


def _methods(cls) -> dict[str, inspect.Signature]:
    return {n: inspect.signature(f) for n, f in vars(cls).items() if callable(f) and not n.startswith("_")}


@pytest.mark.parametrize("noun", sorted(_NOUNS))
def test_sqlite_implements_each_noun_exactly(noun):
    protocol, impl = _NOUNS[noun]
    wanted, have = _methods(protocol), _methods(impl)
    assert set(have) == set(wanted), f"{impl.__name__} vs {protocol.__name__}: the interface and docs/storage.md list the methods"
    for name, sig in wanted.items():
        assert list(have[name].parameters) == list(sig.parameters), (noun, name)


def test_the_session_offers_every_noun(tmp_path):
    session_nouns = {n for n, v in vars(base.Session).items() if isinstance(v, property)}
    assert session_nouns == set(_NOUNS)
    store = Store(str(tmp_path / "nouns.db"))
    try:
        with store.reading() as s:
            for noun, (_, impl) in _NOUNS.items():
                assert isinstance(getattr(s, noun), impl)
    finally:
        store.close()


# -- the contract, against the SQLite backend -------------------------------------------------------------
@pytest.fixture
def mem(tmp_path):
    m = Recallite.open(str(tmp_path / "contract.db"), embedder="hash")
    yield m
    m.close()


def _id(m) -> int:
    return int(m.id[4:])


def test_memories_round_trip_and_filter(mem):
    a = mem.remember("The deploy script needs the VPN up first", type="procedure", tags=["deploy"], scope="ops")
    b = mem.remember("Staging runs on port 8443", type="fact", scope="web")
    with mem.store.reading() as s:
        got = s.memories.load([_id(a), _id(b), 999_999])
        assert set(got) == {_id(a), _id(b)}
        assert got[_id(a)].content == a.content and got[_id(a)].tags == ["deploy"] and got[_id(a)].scope == "ops"
        assert s.memories.matching(None, MemoryFilter(scopes=("ops",))) == [_id(a)]
        assert s.memories.matching([_id(a), _id(b)], MemoryFilter(tags=("deploy",))) == [_id(a)]
        assert s.memories.matching([_id(a), _id(b)], MemoryFilter(types=("fact",), statuses=(b.status,))) == [_id(b)]
        page, total = s.memories.page(MemoryFilter(), limit=1, offset=0)
        assert total == 2 and [m.id for m in page] == [b.id]  # newest first
        assert s.memories.exists(_id(a)) and not s.memories.exists(999_999)
        assert s.memories.scope_counts() == {"ops": 1, "web": 1}


def test_vectors_round_trip_in_bulk(mem):
    ms = mem.remember_many([{"content": f"note {i} about topic {i % 3}"} for i in range(20)])
    ids = [_id(m) for m in ms]
    with mem.store.reading() as s:
        assert s.vectors.count() == 20
        blobs = dict(s.vectors.blobs(ids))
        want = np.asarray(mem.embedder.embed([ms[3].content])[0], dtype=np.float32)
        assert np.allclose(decode_vector(blobs[ids[3]], mem.embedder.dimensions), want, atol=1e-6)
        rows = [r for batch in s.vectors.all_rows(batch=7) for r in batch]
        assert sorted(r[0] for r in rows) == sorted(ids)
        shards = [s.vectors.count(Shard(i, 3)) for i in range(3)]
        assert sum(shards) == 20
        counter = s.feed.counter()
        assert s.vectors.changed_rows(counter) == []
    mem.forget(ms[0].id)
    with mem.store.reading() as s:
        assert set(s.feed.tombstones_since(counter)) == {ids[0]}  # one per projection the row left
        assert s.vectors.count() == 19


def test_keywords_and_relations(mem):
    a = mem.remember("zebrafish tank heater set to 26 degrees", type="fact")
    b = mem.remember("the zebrafish heater failed twice", type="fact")
    mem.relate(a.id, b.id, "supports")
    with mem.store.reading() as s:
        top = s.keywords.top("zebrafish heater", MemoryFilter(statuses=(a.status,)), 5, (0.3, 1.0, 0.5))
        assert {i for i, _ in top} == {_id(a), _id(b)}
        assert all(score > 0 for _, score in top)
        assert s.keywords.document_frequency("zebrafish") == 2
        assert s.keywords.holding("tank", [_id(a), _id(b)]) == [_id(a)]
        assert s.relations.edges([_id(a)], ("supports",)) == [(_id(a), _id(b), "supports")]
        assert s.relations.totals([_id(a), _id(b)]) == {_id(a): 1, _id(b): 1}
        assert s.feed.side_tables() == (True, False)


def test_retrieval_log_and_tuning_round_trip(mem):
    a = mem.remember("rotate the API keys every 90 days", type="procedure")
    with mem.store.transaction() as s:
        rid = s.retrievals.add("api keys", "default", '["default"]', "recall", 1000.0, [(_id(a), 1, 0.75, None)])
        s.tuning.log_arm(rid, "default", "10:0.0", 2000)
        s.tuning.reward("default", "10:0.0", 0.5, 1000.0, 0.9)
    with mem.store.reading() as s:
        assert s.retrievals.get(rid)[:3] == (rid, "api keys", "recall")
        assert s.retrievals.items(rid) == [(_id(a), 1, 0.75, 1, 0)]
        assert s.retrievals.query_of(rid) == ("api keys", False)
        assert s.tuning.arm_of(rid) == ("default", "10:0.0", 2000, None)
        assert s.tuning.arms("default") == {"10:0.0": (1.0, 0.5)}


def _counts(store) -> tuple:
    with store.reading() as s:
        return (s.feed.counter(), s.vectors.count(), len(s.retrievals.page(None, 1000, 0)), s.tuning.scopes(),
                s.memories.scope_counts())


def test_a_failed_transaction_leaves_nothing_half_written(mem):
    a = mem.remember("backups run nightly at 02:00", type="fact")
    before = _counts(mem.store)
    access_before = mem.get(a.id).access_count

    class Boom(Exception):
        pass

    with pytest.raises(Boom):
        with mem.store.transaction() as s:
            rid = s.retrievals.add("backups", "default", None, "recall", 1.0, [(_id(a), 1, 0.5, None)])
            s.memories.record_access([_id(a)], 2.0)
            s.tuning.reward("default", "10:0.0", 1.0, 2.0, 0.9)
            s.memories.mark_validated(_id(a), 0.99, "{}", 2.0)
            assert s.retrievals.get(rid) is not None  # visible inside its own transaction
            raise Boom
    assert _counts(mem.store) == before
    after = mem.get(a.id)
    assert after.access_count == access_before and after.status == a.status and after.confidence == a.confidence
    with mem.store.reading() as s:
        assert s.retrievals.get(rid) is None


def test_a_nested_transaction_joins_the_outer_one(mem):
    a = mem.remember("the cache lives in /var/cache/app", type="fact")

    with pytest.raises(RuntimeError):
        with mem.store.transaction() as outer:
            with mem.store.transaction() as inner:
                inner.memories.record_access([_id(a)], 5.0)
            outer.retrievals.add("cache", "default", None, "recall", 5.0, [])
            raise RuntimeError("the outer one fails")
    assert mem.get(a.id).access_count == a.access_count
    with mem.store.reading() as s:
        assert s.retrievals.page(None, 10, 0) == []


def test_a_read_only_store_refuses_a_transaction(tmp_path):
    path = str(tmp_path / "ro.db")
    Store(path).close()
    ro = Store(path, read_only=True)
    try:
        with pytest.raises(Exception, match="read-only"):
            with ro.transaction():
                pass
        with ro.reading() as s:
            assert s.vectors.count() == 0
    finally:
        ro.close()


def test_a_snapshot_reader_sees_committed_writes_only(mem):
    a = mem.remember("workers read through their own connection", type="fact")
    reader = SnapshotReader(mem.store.path, 5000)
    try:
        with reader.snapshot() as s:
            assert s.vectors.count() == 1 and s.memories.exists(_id(a))
            with pytest.raises(Exception):
                s.memories.record_access([_id(a)], 1.0)  # query_only: a reader never writes
    finally:
        reader.close()


# -- the nouns added when the services moved behind the interface -------------------------------------------
def _new_row(content: str, scope: str = "default", type: str = "fact", status: str = "active", session: str = "") -> tuple:
    """A NewMemoryRow (storage/base.py gives the column order)."""
    return (type, content[:40], content, status, "user", None, scope, session, "[]", "{}", 0.7, 0.5, 0.5, 0, 0, 0,
            None, 100.0, 100.0, f"h-{content}", 5, None)


def _blob(mem, text: str) -> bytes:
    from recallite_core.storage.codec import encode_vector

    return encode_vector(mem.embedder.embed([text])[0], mem.embedder.dimensions)


def test_memory_writes_round_trip(mem):
    with mem.store.transaction() as s:
        a, b = s.memories.insert_many([_new_row("alpha note"), _new_row("beta note", scope="ops")],
                                      [_blob(mem, "alpha note"), _blob(mem, "beta note")])
        assert b == a + 1
    with mem.store.reading() as s:
        got = s.memories.load([a, b])
        assert got[a].content == "alpha note" and got[b].scope == "ops" and s.vectors.count() == 2
        assert s.keywords.document_frequency("alpha") == 1  # the batch is in the keyword index
        assert s.memories.duplicate_of("h-alpha note", "default") == a
        assert s.memories.with_hashes(["h-beta note"]) == [(b, "h-beta note", "ops", False)]
        assert s.memories.state(a) == ("active", "user", 0.7, "{}")
    with mem.store.transaction() as s:
        s.memories.mark_superseded(a, b, '{"superseded_from": "active"}', 200.0)
        s.relations.add(b, a, "supersedes", 0, 200.0)
    with mem.store.reading() as s:
        assert s.memories.versions(b) == ([a, b], [])
        assert s.memories.supersede_state(a)[:2] == ("superseded", b)
        assert s.relations.find(b, a, "supersedes") is not None
    with mem.store.transaction() as s:
        s.memories.restore_status(a, "active", "{}", 300.0)
        assert s.relations.remove(b, a, "supersedes") == 1
        rid = s.retrievals.add("alpha note", "default", None, "recall", 300.0, [(a, 1, 0.9, None)])
        assert s.memories.delete(a) and not s.memories.delete(a)
    with mem.store.reading() as s:
        assert s.memories.all_ids() == [b]
        assert s.retrievals.get(rid)[1] == "[forgotten]"  # the log no longer quotes it


def test_teams_stats_and_episodes_round_trip(mem):
    a = mem.remember("the on-call rota lives in the wiki", type="fact", scope="ops")
    with mem.store.transaction() as s:
        s.teams.join("ops", "eng", 1.0)
        s.teams.join("ops", "eng", 2.0)  # joining twice keeps one link
        s.stats.count_redactions({"aws_key": 2})
        s.stats.count_redactions({"aws_key": 1, "password": 1})
        t1, t2 = s.memories.insert_many([_new_row("user: hi", type="episode", session="s1"),
                                         _new_row("assistant: hello", type="episode", session="s1")],
                                        [_blob(mem, "hi"), _blob(mem, "hello")])
        s.episodes.add_turns([(t1, "default", "s1", "user", 1, 10.0), (t2, "default", "s1", "assistant", 2, 11.0)])
        s.episodes.put_summary("default", "s1", "[]", 2, 12.0)
        s.episodes.add_chunks([(t2, 0, 0, 5, "hello", _blob(mem, "hello"))])
        s.episodes.cite(_id(a), [t1, t2], 13.0)
        s.episodes.set_categories([(_id(a), "runbooks")])
    with mem.store.reading() as s:
        assert s.teams.of_scopes(["ops"]) == ["eng"]
        assert s.stats.redactions() == {"aws_key": 3, "password": 1}
        assert s.episodes.last_seq("default", "s1") == 2 and s.episodes.place_of(t2) == ("default", "s1", 2)
        assert s.episodes.window("default", "s1", 0, 3, ("active",), t1) == [t1, t2]
        assert s.episodes.summary("default", "s1") == ("[]", 2)
        assert s.episodes.chunk_count() == 1 and [c[0] for c in s.episodes.all_chunks()] != []
        assert [(m, e) for m, e, _ in s.episodes.citations(_id(a))] == [(_id(a), t1), (_id(a), t2)]
        assert s.episodes.links_of(t1) == (0, 1, [_id(a)])
        assert s.episodes.category_of(_id(a)) == "runbooks"
        assert s.drift.stray_turns() == [] and s.drift.bad_citations() == []
    with mem.store.transaction() as s:
        s.teams.leave("ops", "eng")
    with mem.store.reading() as s:
        assert s.teams.of_scopes(["ops"]) == []


def test_archive_round_trip(mem):
    a = mem.remember("restore me from the backup", type="fact")
    b = mem.remember("the backup runs nightly", type="fact")
    with mem.store.transaction() as s:
        rid = s.archive.add_retrieval("backup", "default", '["default"]', "context", 10, 12, 5.0, "restore backup",
                                      "Restore the backups")
        s.archive.add_items(rid, [(_id(a), 1, 0.8, 1, 0.5)])
        fid = s.outcomes.add_feedback(rid, "success", 1.0, "[]", None, "k1", 6.0)
        s.archive.add_effects(fid, [(_id(a), 1.0, 1.0, 0.5, 0.6, 6.0, "credit")])
        assert s.archive.add_relation(_id(a), _id(b), "supports", 1, 7.0) == 1
        assert s.archive.add_relation(_id(a), _id(b), "supports", 1, 8.0) == 0  # there already
        assert s.archive.add_citation(_id(a), _id(b), 9.0) == 1
    with mem.store.reading() as s:
        assert s.archive.retrievals()[-1] == (rid, "backup", "default", '["default"]', "context", 10, 12, 5.0,
                                              "restore backup", "Restore the backups")
        assert s.archive.items_of(rid) == [(_id(a), 1, 0.8, 1, 0.5)]
        assert s.archive.feedback()[-1][:3] == (fid, rid, "success")
        assert s.archive.effects_of(fid) == [(_id(a), 1.0, 1.0, 0.5, 0.6, "credit")]
        assert s.outcomes.feedback_with_key("k1") == fid and s.archive.memory_ids("default") == [_id(a), _id(b)]
        assert s.archive.relations() == [(_id(a), _id(b), "supports", 1, 7.0)]
        assert s.drift.bad_citations() == [_id(a)]  # b is no conversation turn


def test_drift_finds_and_repairs_stray_rows(mem):
    a = mem.remember("a plain fact, not a turn", type="fact")
    with mem.store.transaction() as s:
        s.episodes.add_turns([(_id(a), "default", "", "user", 1, 1.0)])  # a fact placed in a session: stray
    with mem.store.reading() as s:
        assert s.drift.stray_turns() == [_id(a)] and s.drift.turn_counts() == {("default", ""): 1}
    with mem.store.transaction() as s:
        s.drift.drop_turns([_id(a)])
    with mem.store.reading() as s:
        assert s.drift.stray_turns() == [] and s.episodes.sessions() == []


def _everything(store) -> tuple:
    with store.reading() as s:
        return (s.feed.counter(), s.memories.count(), s.vectors.count(), s.teams.of_scopes(["ops"]),
                s.stats.redactions(), s.archive.retrievals(), s.archive.relations(), s.episodes.sessions(),
                s.episodes.chunk_count(), s.drift.summaries(), s.archive.citations())


def test_a_failed_transaction_over_the_new_nouns_leaves_nothing(mem):
    a = mem.remember("the release train leaves on Tuesdays", type="fact", scope="ops")
    before = _everything(mem.store)

    class Boom(Exception):
        pass

    with pytest.raises(Boom):
        with mem.store.transaction() as s:
            (t,) = s.memories.insert_many([_new_row("user: when?", type="episode", session="s9")], [_blob(mem, "when")])
            s.episodes.add_turns([(t, "default", "s9", "user", 1, 1.0)])
            s.episodes.put_summary("default", "s9", "[]", 1, 1.0)
            s.episodes.add_chunks([(t, 0, 0, 4, "when", _blob(mem, "when"))])
            s.episodes.cite(_id(a), [t], 1.0)
            s.teams.join("ops", "eng", 1.0)
            s.stats.count_redactions({"token": 1})
            s.archive.add_retrieval("q", "default", None, "recall", None, None, 1.0)
            s.relations.create(_id(a), t, "supports", 1, 1.0)
            s.memories.set_status(_id(a), "deprecated", 0.1, "{}", 1.0, None)
            s.feed.reset_readers()
            assert s.memories.count() == before[1] + 1  # visible inside its own transaction
            raise Boom
    assert _everything(mem.store) == before
    assert mem.get(a.id).status == a.status
