import math

import pytest

from recallite_core import (
    ContentTooLargeError,
    EmbedderMismatchError,
    InvalidInputError,
    InvalidTransitionError,
    MemoryNotFoundError,
    Recallite,
    RecalliteConfig,
    RetrievalNotFoundError,
    TrustPolicyError,
)
from recallite_core.text.validation import Limits


@pytest.fixture
def mem(backend_mem):
    """Every test of this module that takes `mem` runs on both backends (SQLite, PostgreSQL)."""
    return backend_mem


def on_postgres(mem) -> bool:
    return mem.store.path is None and getattr(mem.store, "where", None) is not None


def sql(mem, query, params=()):
    """One raw query on either backend (`?` placeholders; PostgreSQL's driver takes `%s`)."""
    if on_postgres(mem):
        query = query.replace("?", "%s")
    return mem.store.conn.execute(query, params)


def count(mem, table):
    return sql(mem, f"SELECT count(*) FROM {table}").fetchone()[0]


def test_lite_api(mem):
    m = mem.add("User prefers dark mode UI.")
    assert m.id.startswith("mem_") and m.type == "observation" and m.status == "active"
    text = mem.context("User preferences")
    assert "dark mode" in text and m.id in text


def test_remember_fields_round_trip(mem):
    m = mem.remember(
        type="lesson", title="Pin numpy", content="Pin numpy<2 for the legacy build.", tags=["Build", "numpy", "build"],
        metadata={"ticket": "OPS-12", "nested": {"a": [1, 2]}}, importance=0.9, scope="proj-a", session="s1",
        source={"type": "agent", "id": "coder"},
    )
    got = mem.get(m.id)
    assert got.title == "Pin numpy" and got.tags == ["build", "numpy"]
    assert got.metadata == {"ticket": "OPS-12", "nested": {"a": [1, 2]}}
    assert got.scope == "proj-a" and got.session == "s1" and got.importance == 0.9
    assert got.source.type == "agent" and got.source.id == "coder"
    assert got.status == "validated"  # medium trust lesson


def test_title_is_derived_when_missing(mem):
    m = mem.remember("Deploys to staging need the VPN. Ask ops for access if it fails.", type="fact")
    assert m.title == "Deploys to staging need the VPN"


def test_duplicate_in_scope_returns_existing(mem):
    a = mem.remember("Use ruff for linting.", scope="p")
    b = mem.remember("use   ruff for linting.", scope="p")
    c = mem.remember("Use ruff for linting.", scope="q")
    assert b.id == a.id and b.duplicate_of == a.id
    assert c.id != a.id and c.duplicate_of is None
    assert count(mem, "memories") == 2


def test_remember_many_is_one_batch_and_dedupes(mem):
    calls = []
    orig = mem.embedder.embed
    mem.embedder.embed = lambda texts: (calls.append(len(texts)), orig(texts))[1]
    out = mem.remember_many([
        {"content": "alpha fact", "type": "fact"},
        {"content": "beta fact", "type": "fact"},
        {"content": "alpha fact", "type": "fact"},
    ])
    assert calls == [2]
    assert out[2].duplicate_of == out[0].id
    assert count(mem, "memories") == 2


def test_remember_many_all_or_nothing(mem):
    with pytest.raises(InvalidInputError, match="Item 1"):
        mem.remember_many([{"content": "ok"}, {"content": "   "}])
    assert count(mem, "memories") == 0


@pytest.mark.parametrize(
    "kwargs, err, msg",
    [
        ({"content": ""}, InvalidInputError, "empty"),
        ({"content": "   \n\t"}, InvalidInputError, "empty"),
        ({"content": "x" * (64 * 1024 + 1)}, ContentTooLargeError, "limit"),
        ({"content": "x", "type": "dream"}, InvalidInputError, "Unknown memory type"),
        ({"content": "x", "status": "glorious"}, InvalidInputError, "Unknown status"),
        ({"content": "x", "source": {"type": "oracle"}}, InvalidInputError, "source"),
        ({"content": "x", "importance": float("nan")}, InvalidInputError, "finite"),
        ({"content": "x", "metadata": {"v": float("nan")}}, InvalidInputError, "JSON"),
        ({"content": "x", "metadata": "not a dict"}, InvalidInputError, "JSON object"),
        ({"content": "x", "tags": ["t"] * 1 + [str(i) for i in range(40)]}, ContentTooLargeError, "tags"),
        ({"content": 42}, InvalidInputError, "text"),
    ],
)
def test_bad_input_is_typed_and_writes_nothing(mem, kwargs, err, msg):
    with pytest.raises(err, match=msg):
        mem.remember(**kwargs)
    assert count(mem, "memories") == 0 and count(mem, "vectors") == 0


def test_content_limit_is_configurable(backend_url):
    m = Recallite.open(backend_url, embedder="hash", config=RecalliteConfig(limits=Limits(max_content_bytes=10)))
    with pytest.raises(ContentTooLargeError):
        m.add("more than ten bytes")
    m.close()


def test_nul_and_control_characters_are_stripped(mem):
    m = mem.add("bad\x00 byte\x07 here")
    assert m.content == "bad byte here"


def test_untrusted_sources_start_as_candidates(mem):
    llm = mem.remember("Always use tabs.", type="preference", source={"type": "llm"}, status="active")
    assert llm.status == "candidate"
    forced = mem.remember("Always use spaces.", type="preference", source="llm", status="active",
                          allow_unsafe_status_override=True)
    assert forced.status == "active"
    imported = mem.remember("Imported rule.", type="constraint", source="imported")
    assert imported.status == "candidate"
    agent = mem.remember("Agent thinks user likes vim.", type="preference", source="agent", status="active")
    assert agent.status == "validated"  # medium trust is capped at validated
    user = mem.remember("User likes emacs.", type="preference", source="user")
    assert user.status == "active"


def test_lifecycle_transitions(mem):
    m = mem.remember("Use poetry.", type="procedure", source="llm")
    with pytest.raises(InvalidTransitionError, match="validate it first"):
        mem.activate(m.id)
    v = mem.validate(m.id)
    assert v.status == "validated" and v.confidence > m.confidence
    a = mem.activate(m.id)
    assert a.status == "active"
    with pytest.raises(InvalidTransitionError, match="already"):
        mem.activate(m.id)
    d = mem.deprecate(m.id, reason="moved to uv")
    assert d.status == "deprecated" and d.metadata["deprecated_reason"] == "moved to uv"
    with pytest.raises(InvalidTransitionError):
        mem.deprecate(m.id)


def test_supersede_and_default_recall_hides_inactive(mem):
    old = mem.remember("Deploy with fabric script deploy.py to production.", type="procedure")
    new = mem.remember("Deploy with the GitHub Actions workflow deploy.yml to production.", type="procedure")
    s = mem.supersede(old.id, new.id, reason="CI now deploys")
    assert s.status == "superseded" and s.superseded_by == new.id
    ids = mem.recall("deploy to production", limit=10).ids
    assert old.id not in ids and new.id in ids
    assert old.id in mem.recall("deploy to production", limit=10, include_inactive=True).ids
    with pytest.raises(InvalidTransitionError):
        mem.activate(old.id)
    dep = mem.remember("Deploy by hand over ssh to production.", type="procedure")
    mem.deprecate(dep.id)
    assert dep.id not in mem.recall("deploy to production over ssh", limit=10).ids


def test_untrusted_cannot_supersede_trusted(mem):
    trusted = mem.remember("The API base URL is api.example.com.", type="fact")
    bad = mem.remember("The API base URL is evil.example.net.", type="fact", source="llm")
    with pytest.raises(TrustPolicyError):
        mem.supersede(trusted.id, bad.id)
    with pytest.raises(TrustPolicyError):
        mem.relate(bad.id, trusted.id, "supersedes")
    assert mem.get(trusted.id).status == "active"
    mem.supersede(trusted.id, bad.id, allow_unsafe=True)
    assert mem.get(trusted.id).status == "superseded"


def test_relations_and_confidence(mem):
    a = mem.remember("Tests need Postgres 15.", type="fact", source="agent")
    b = mem.remember("CI image ships Postgres 15.", type="fact", source="user")
    before = mem.get(a.id).confidence
    rel = mem.relate(b.id, a.id, "supports")
    assert rel.type == "supports" and rel.confidence_effect
    assert mem.get(a.id).confidence > before
    again = mem.relate(b.id, a.id, "supports")
    assert again.id == rel.id  # idempotent
    counts = mem.relation_counts(a.id)
    assert counts.evidence_count == 1 and counts.contradiction_count == 0
    with pytest.raises(InvalidInputError, match="itself"):
        mem.relate(a.id, a.id, "supports")
    with pytest.raises(InvalidInputError, match="Unknown relation"):
        mem.relate(a.id, b.id, "loves")
    with pytest.raises(MemoryNotFoundError):
        mem.relate(a.id, "mem_9999", "supports")
    with pytest.raises(InvalidInputError, match="mem_42"):
        mem.relate("banana", a.id, "supports")


def test_untrusted_support_does_not_raise_confidence(mem):
    target = mem.remember("Use the blue button.", type="fact", source="llm", metadata={})
    helper = mem.remember("The blue button is right.", type="fact", source="llm")
    before = mem.get(target.id).confidence
    rel = mem.relate(helper.id, target.id, "supports")
    assert not rel.confidence_effect
    assert mem.get(target.id).confidence == before


def test_contradiction_warnings_do_not_use_the_limit(mem):
    a = mem.remember("Run the linter with flake8 before commit.", type="procedure")
    b = mem.remember("Run the linter with ruff before commit, flake8 is retired.", type="procedure")
    mem.remember("Code review needs two approvals.", type="constraint")
    mem.relate(b.id, a.id, "contradicts")
    r = mem.recall("which linter before commit", limit=1)
    assert len(r.memories) == 1
    hit = r.memories[0]
    assert hit.warnings and "Contradicted by" in hit.warnings[0]
    assert "contradicted" in hit.reasons and hit.breakdown.contradiction_factor < 1
    ctx = mem.format_context(r, max_tokens=500)
    assert "Contradicted by" in ctx


def test_contradiction_from_other_scope_is_not_leaked(mem):
    a = mem.remember("Port is 8080.", type="fact", scope="A")
    b = mem.remember("Port is 9090.", type="fact", scope="B")
    mem.relate(b.id, a.id, "contradicts")
    r = mem.recall("which port", scope="A")
    assert r.ids == [a.id]
    assert r.memories[0].warnings == []


def test_recall_filters_apply_before_scoring(mem):
    for i in range(30):
        mem.remember(f"Noise memory number {i} about deployment pipelines", scope="noise")
    t = mem.remember("Deployment pipelines run on Fridays only", scope="target", type="constraint", tags=["ops"])
    mem.remember("Deployment pipelines run on Mondays", scope="target", type="fact")
    r = mem.recall("deployment pipelines", scope="target", types=["constraint"], limit=5)
    assert r.ids == [t.id]
    r2 = mem.recall("deployment pipelines", tags=["ops"], limit=5)
    assert r2.ids == [t.id]
    r3 = mem.recall("deployment pipelines", scope=["target", "noise"], limit=50)
    assert len(r3.ids) == 32


def test_fts_syntax_in_queries_is_safe(mem):
    mem.add('He said "NEAR" (maybe) -not * AND OR title:x')
    for q in ['"unbalanced', "NEAR(a b)", "* -x", "title:foo", "a AND OR NOT", "((()", "'; DROP TABLE memories; --", "^start"]:
        mem.recall(q)
    assert count(mem, "memories") == 1


def test_recall_is_logged_and_reasons_explain(mem):
    m = mem.remember("The staging database is read-only on weekends.", type="fact")
    r = mem.recall("staging database weekends")
    assert r.retrieval_id.startswith("ret_")
    hit = r.memories[0]
    assert hit.memory.id == m.id and "keyword-match" in hit.reasons and "active-memory" in hit.reasons
    b = hit.breakdown
    assert math.isclose(b.final, b.fusion * b.status_factor * b.profile_factor * b.quality * b.outcome_factor * b.contradiction_factor)
    rows = mem.store.conn.execute("SELECT memory_id, rank FROM retrieval_items").fetchall()
    assert rows == [(int(m.id[4:]), 1)]
    assert mem.get(m.id).access_count == 1


def test_stats_of_a_scope_counted_none_of_its_retrievals(mem):
    # a new user's trial: stats(scope=<the active scope>) said "retrievals 0 · context calls 0 · tokens served 0"
    # and no feedback, as a project's searches also search the user scope (logged as ["p1", "user"])
    m = mem.remember("Run npm ci before the build.", type="lesson", scope="p1")
    ctx = mem.build_context("fix the npm build", scope=["p1", "user"])
    mem.feedback(ctx.retrieval_id, "success", used_memory_ids=[m.id])
    mem.recall("npm", scope="p2")
    for scope in ("p1", ["p1", "user"]):
        s = mem.stats(scope=scope)
        assert (s.retrievals, s.context_calls, s.feedback["success"]) == (1, 1, 1), scope
        assert s.tokens_served == ctx.tokens > 0
    assert mem.stats(scope="p2").retrievals == 1 and mem.stats(scope="user").retrievals == 0
    assert mem.stats().retrievals == 2


@pytest.mark.parametrize("kwargs", [{"limit": 0}, {"limit": 1000}, {"limit": "five"}, {"profile": "wizard"}, {"types": ["dream"]}])
def test_recall_rejects_bad_arguments(mem, kwargs):
    with pytest.raises(InvalidInputError):
        mem.recall("anything", **kwargs)


def test_empty_query_is_an_error(mem):
    with pytest.raises(InvalidInputError, match="empty"):
        mem.recall("   ")


def test_feedback_moves_usefulness_and_is_bounded(mem):
    good = mem.remember("Fix flaky test by seeding random.", type="lesson")
    r = mem.recall("flaky test")
    res = mem.feedback(r.retrieval_id, "success", score=7.5, used_memory_ids=[good.id])
    assert res.changes[0].new_usefulness > res.changes[0].old_usefulness
    for _ in range(50):
        mem.feedback(mem.recall("flaky test").retrieval_id, "success", score=1.0, used_memory_ids=[good.id])
    assert 0.0 <= mem.get(good.id).usefulness <= 1.0
    for _ in range(50):
        mem.feedback(mem.recall("flaky test").retrieval_id, "failure", score=-3, used_memory_ids=[good.id])
    u = mem.get(good.id).usefulness
    assert 0.0 <= u < 0.1
    assert mem.get(good.id).status == "active"  # feedback never changes status


def test_feedback_without_used_ids_credits_shown_by_rank(mem):
    mem.remember("Cache npm in CI with actions/cache.", type="lesson")
    mem.remember("Cache pip in CI with actions/cache.", type="lesson")
    r = mem.recall("cache in CI", limit=2)
    res = mem.feedback(r.retrieval_id, "success")
    weights = [c.weight for c in res.changes]
    assert weights == sorted(weights, reverse=True) and weights[0] == 1.0 and weights[1] == 0.5


def test_feedback_errors(mem):
    mem.add("something")
    r = mem.recall("something")
    with pytest.raises(RetrievalNotFoundError):
        mem.feedback("ret_999", "success")
    with pytest.raises(InvalidInputError):
        mem.feedback(r.retrieval_id, "meh")
    with pytest.raises(InvalidInputError, match="finite"):
        mem.feedback(r.retrieval_id, "success", score=float("nan"))
    with pytest.raises(MemoryNotFoundError):
        mem.feedback(r.retrieval_id, "success", used_memory_ids=["mem_777"])
    assert count(mem, "feedback") == 0


def test_feedback_client_key_is_idempotent(mem):
    m = mem.add("retry me")
    r = mem.recall("retry me")
    a = mem.feedback(r.retrieval_id, "success", used_memory_ids=[m.id], client_key="k1")
    b = mem.feedback(r.retrieval_id, "success", used_memory_ids=[m.id], client_key="k1")
    assert b.duplicate and b.feedback_id == a.feedback_id
    assert count(mem, "feedback") == 1
    assert mem.get(m.id).success_count == 1


def test_failing_memory_falls_and_succeeding_one_rises(mem):
    # Two rivals that the retriever scores almost alike.
    bad = mem.remember("To reset the cache run make clean-cache then restart the worker.", type="procedure")
    good = mem.remember("To reset the cache run make flush-cache then restart the worker.", type="procedure")
    first = mem.recall("reset the cache", limit=2)
    assert set(first.ids) == {bad.id, good.id}
    for _ in range(6):
        r = mem.recall("how do I reset the cache", limit=2)
        top = r.memories[0].memory.id
        mem.feedback(r.retrieval_id, "success" if top == good.id else "failure", used_memory_ids=[top])
        other = r.memories[1].memory.id
        if top == bad.id:
            # the agent then tried the other one, and it worked
            mem.feedback(r.retrieval_id, "success", used_memory_ids=[other])
    final = mem.recall("reset the cache please", limit=2)
    assert final.ids[0] == good.id
    assert mem.get(good.id).usefulness > 0.8 > mem.get(bad.id).usefulness
    assert "reinforced" in final.memories[0].reasons


def test_reinforce_is_bounded(mem):
    m = mem.add("nudge me")
    assert mem.reinforce(m.id, 0.3).usefulness == pytest.approx(0.8)
    assert mem.reinforce(m.id, 5).usefulness == 1.0
    assert mem.reinforce(m.id, -5).usefulness == 0.0
    with pytest.raises(InvalidInputError):
        mem.reinforce(m.id, float("inf"))


def test_forget_removes_every_projection(mem):
    a = mem.remember("secret project codename bluebird", type="fact")
    b = mem.add("other")
    mem.relate(a.id, b.id, "supports")
    r = mem.recall("bluebird")
    mem.feedback(r.retrieval_id, "success", used_memory_ids=[a.id])
    mem.forget(a.id)
    aid = int(a.id[4:])
    for table, col in [("memories", "id"), ("vectors", "memory_id"), ("retrieval_items", "memory_id"),
                       ("memory_outcomes", "memory_id")]:
        assert sql(mem, f"SELECT count(*) FROM {table} WHERE {col} = ?", (aid,)).fetchone()[0] == 0
    assert count(mem, "relations") == 0
    if on_postgres(mem):  # the keyword index is the row's own tsvector column: it went with the row
        assert sql(mem, "SELECT count(*) FROM memories WHERE tsv @@ to_tsquery('recallite_english', 'bluebird')").fetchone()[0] == 0
    else:
        assert sql(mem, "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH 'bluebird'").fetchone()[0] == 0
    assert mem.recall("bluebird codename").ids == [b.id] or a.id not in mem.recall("bluebird codename").ids
    with pytest.raises(MemoryNotFoundError):
        mem.get(a.id)
    with pytest.raises(MemoryNotFoundError):
        mem.forget(a.id)


def test_forget_with_vacuum_removes_bytes_from_file(file_mem, db_path):
    m = file_mem.remember("zanzibar-unique-marker-9f3 must vanish", type="fact")
    file_mem.add("keep this one")
    file_mem.store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    file_mem.forget(m.id, vacuum=True)
    data = open(db_path, "rb").read()
    assert b"zanzibar-unique-marker-9f3" not in data


def test_list_and_get_many(mem):
    a = mem.add("one", scope="x")
    b = mem.add("two", scope="y")
    assert [m.id for m in mem.list(scope="x")] == [a.id]
    assert [m.id for m in mem.get_many([b.id, a.id])] == [b.id, a.id]
    with pytest.raises(MemoryNotFoundError):
        mem.get_many([a.id, "mem_404"])


def test_stats_counts(mem):
    mem.add("a")
    mem.remember("b", type="lesson", source="llm")
    r = mem.build_context("a b")
    mem.feedback(r.retrieval_id, "failure")
    s = mem.stats()
    assert s.memories == 2 and s.by_type == {"observation": 1, "lesson": 1}
    assert s.by_status == {"active": 1, "candidate": 1} or s.by_status == {"candidate": 1, "active": 1}
    assert s.by_source["llm"] == 1 and s.vectors == 2 and s.feedback["failure"] == 1
    assert s.context_calls == 1 and s.tokens_served == r.tokens and s.db_bytes > 0


def test_embedder_mismatch_names_reindex(backend_location):
    db_path = backend_location
    m = Recallite.open(db_path, embedder="hash")
    m.add("embedded with 384 dims")
    m.close()
    with pytest.raises(EmbedderMismatchError, match="reindex"):
        Recallite.open(db_path, embedder="hash", dims=64)
    m2 = Recallite.open(db_path, embedder="hash", dims=64, on_embedder_mismatch="reindex")
    assert m2.recall("embedded dims").memories
    assert m2.store.get_meta("dimensions") == "64"
    m2.close()


def test_callable_embedder(backend_url):
    def embed(texts):
        return [[len(t), 1.0, 0.0] for t in texts]

    m = Recallite.open(backend_url, embedder=embed, dims=3)
    m.add("hello")
    assert m.recall("hello").memories
    bad = Recallite.open(None, embedder=lambda t: [[1.0]] * len(t), dims=3)
    with pytest.raises(Exception, match="shape"):
        bad.add("x")
    assert bad.store.conn.execute("SELECT count(*) FROM memories").fetchone()[0] == 0


def test_reindex_is_equivalent(file_mem):
    for i in range(40):
        file_mem.remember(f"memory {i} about topic {i % 7} and tool {i % 3}", type="fact", tags=[f"t{i % 4}"])
    before_vec = dict(file_mem.store.conn.execute("SELECT memory_id, vector FROM vectors").fetchall())
    before_fts = file_mem.store.conn.execute(
        "SELECT rowid FROM memories_fts WHERE memories_fts MATCH 'topic' ORDER BY rowid").fetchall()
    ranking = file_mem.recall("topic 3 tool 1", limit=10).ids
    # damage the projections, then rebuild
    file_mem.store.conn.execute("DELETE FROM vectors WHERE memory_id % 2 = 0")
    file_mem.store.conn.execute("INSERT INTO memories_fts(memories_fts) VALUES ('delete-all')")
    assert file_mem.reindex() == 40
    after_vec = dict(file_mem.store.conn.execute("SELECT memory_id, vector FROM vectors").fetchall())
    assert after_vec == before_vec
    after_fts = file_mem.store.conn.execute(
        "SELECT rowid FROM memories_fts WHERE memories_fts MATCH 'topic' ORDER BY rowid").fetchall()
    assert after_fts == before_fts
    assert file_mem.recall("topic 3 tool 1", limit=10).ids == ranking


def test_second_process_writes_are_seen(backend_location):
    db_path = backend_location
    a = Recallite.open(db_path, embedder="hash")
    b = Recallite.open(db_path, embedder="hash")
    a.add("written by a about kettles")
    assert b.recall("kettles").memories  # warm b's index
    new = a.add("written by a later about teapots")
    assert new.id in b.recall("teapots").ids
    a.deprecate(new.id)
    assert new.id not in b.recall("teapots").ids
    a.forget(new.id)
    assert new.id not in b.recall("teapots", include_inactive=True).ids
    a.close()
    b.close()


def test_consolidate_makes_candidates_never_silent(mem):
    a = mem.remember("Use black with line length 100 for formatting.", type="constraint")
    b = mem.remember("Use black with line length 100 for formatting!", type="constraint")
    c = mem.remember("Deploys happen on Tuesday.", type="fact")
    dry = mem.consolidate(threshold=0.9, dry_run=True)
    assert [sorted(g.member_ids) for g in dry] == [sorted([a.id, b.id])]
    assert mem.stats().memories == 3
    groups = mem.consolidate(threshold=0.9)
    merged = mem.get(groups[0].merged_id)
    assert merged.status == "candidate" and merged.metadata["consolidated_from"] == groups[0].member_ids
    assert mem.get(a.id).status == "active" and mem.get(b.id).status == "active" and mem.get(c.id).status == "active"
    assert mem.relation_counts(a.id).evidence_count == 1
    assert mem.consolidate(threshold=0.9) == []  # not merged twice


def test_closed_store_raises(backend_location):
    db_path = backend_location
    m = Recallite.open(db_path, embedder="hash")
    m.close()
    with pytest.raises(Exception, match="closed"):
        m.add("x")
