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


_ALLOWED_CORE = {"models", "errors", "policy"}


def test_storage_imports_only_what_sits_below_it():
    stdlib = set(sys.stdlib_module_names)
    bad = []
    for path in sorted((CORE / "storage").rglob("*.py")):
        pkg_depth = len(path.relative_to(CORE).parts) - 1  # storage/x.py: 1, storage/sqlite/x.py: 2
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [a.name.split(".")[0] for a in node.names]
                bad += [(path.name, n) for n in names if n not in stdlib and n != "numpy"]
            elif isinstance(node, ast.ImportFrom):
                if node.level == 0:
                    top = (node.module or "").split(".")[0]
                    if top not in stdlib and top != "numpy" and top != "__future__":
                        bad.append((path.name, node.module))
                elif node.level > pkg_depth:  # reaches out of storage into recallite_core
                    first = (node.module or "").split(".")[0]
                    if first not in _ALLOWED_CORE:
                        bad.append((path.name, "." * node.level + (node.module or "")))
    assert not bad, f"storage may import only the stdlib, numpy and recallite_core's {sorted(_ALLOWED_CORE)}: {bad}"


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
        rid = s.retrievals.add("api keys", "default", '["default"]', "recall", 1000.0, [(_id(a), 1, 0.75)])
        s.tuning.log_arm(rid, "default", "10:0.0", 2000)
        s.tuning.reward("default", "10:0.0", 0.5, 1000.0, 0.9)
    with mem.store.reading() as s:
        assert s.retrievals.get(rid)[:3] == (rid, "api keys", "recall")
        assert s.retrievals.items(rid) == [(_id(a), 1, 0.75, 1, 0)]
        assert s.retrievals.query_of(rid) == ("api keys", False)
        assert s.tuning.arm_of(rid) == ("default", "10:0.0", 2000)
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
            rid = s.retrievals.add("backups", "default", None, "recall", 1.0, [(_id(a), 1, 0.5)])
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
