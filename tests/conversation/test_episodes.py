"""Conversation memory through the public API: episodes, chunks, windows, citations, session
memory, filters before the scan, reconcile/repair, export/import, the rerank stage."""

import importlib.util
import json
from datetime import datetime, timezone

import numpy as np
import pytest

from recallite_core import (
    InvalidInputError,
    MemoryNotFoundError,
    Recallite,
    RecalliteConfig,
)
from recallite_core.conversation.episodes import chunk_spans, sentence_score, sentence_spans
from recallite_core.retrieval.rerank import RerankerUnavailableError
from recallite_core.text.tokens import estimate_tokens

LONG = (
    "We spent the whole weekend in the mountains with the kids and it rained most of Saturday. "
    "The cabin had a wood stove, so we played board games and cooked chili for everyone. "
    "On Sunday morning the clouds lifted and we hiked to the glacier viewpoint above the lake. "
    "My daughter Lena spotted a family of marmots sunbathing on the rocks near the trail. "
    "Next time I want to bring the good binoculars and leave earlier to avoid the crowds."
)


def count(mem, table, where="1", *args):
    return mem.store.conn.execute(f"SELECT count(*) FROM {table} WHERE {where}", args).fetchone()[0]


def chat(mem):
    """Two sessions: the answer to 'what pet' sits in the first."""
    s1 = mem.record_turns([
        {"role": "user", "content": "Hi! I just adopted a rescue greyhound called Biscuit."},
        {"role": "assistant", "content": "Congratulations! Greyhounds are gentle dogs."},
        {"role": "user", "content": "He sleeps twenty hours a day, it is hilarious."},
        {"role": "assistant", "content": "That is typical for the breed."},
    ], session="s1", scope="p")
    s2 = mem.record_turns([
        {"role": "user", "content": "Can you help me plan meals for the week?"},
        {"role": "assistant", "content": "Sure, any dietary restrictions?"},
        {"role": "user", "content": "I am vegetarian and I dislike mushrooms."},
    ], session="s2", scope="p")
    return s1, s2


# -- episodes ---------------------------------------------------------------------------------------


def test_record_turns_positions_roles_times(mem):
    t = mem.record_turn("s1", "user", "Hello there, I'm Ana.", timestamp="2024-05-08T13:56:00Z", scope="p",
                        metadata={"channel": "web"}, category="Greeting")
    assert t.type == "episode" and t.session == "s1" and t.scope == "p" and t.metadata == {"channel": "web"}
    assert t.episode.role == "user" and t.episode.seq == 1 and t.category == "greeting"
    assert t.episode.timestamp == datetime(2024, 5, 8, 13, 56, tzinfo=timezone.utc)
    assert t.title.startswith("user: Hello there")
    more = mem.record_turns([{"role": "assistant", "content": "Hi Ana!"}, {"role": "user", "content": "ok"},
                             {"role": "user", "content": "ok"}], session="s1", scope="p")
    assert [m.episode.seq for m in more] == [2, 3, 4]
    assert more[1].id != more[2].id and more[2].duplicate_of is None  # a conversation repeats itself
    other = mem.record_turn("s2", "user", "ok", scope="p", timestamp=1_700_000_000)
    assert other.episode.seq == 1 and other.episode.timestamp.timestamp() == 1_700_000_000
    assert mem.get(t.id).episode == t.episode and mem.list(session="s1", roles=["assistant"])[0].id == more[0].id
    # one transaction: a bad turn means nothing is written
    before = mem.stats().memories
    with pytest.raises(InvalidInputError, match="Turn 1"):
        mem.record_turns([{"role": "user", "content": "fine"}, {"role": "", "content": "bad"}], session="s3")
    with pytest.raises(InvalidInputError, match="session"):
        mem.record_turn("", "user", "no session")
    with pytest.raises(InvalidInputError, match="ISO 8601"):
        mem.record_turn("s3", "user", "when?", timestamp="yesterday-ish")
    with pytest.raises(InvalidInputError, match="unknown fields"):
        mem.record_turns([{"role": "user", "content": "x", "speaker": "me"}], session="s3")
    assert mem.stats().memories == before


def test_remember_episode_is_an_event_of_its_session(mem):
    e = mem.remember("Deployed v2.3 to production.", type="episode", session="ops", scope="p")
    assert e.episode.role == "event" and e.episode.seq == 1
    t = mem.record_turn("ops", "user", "Did the deploy work?", scope="p")
    assert t.episode.seq == 2
    assert [m.id for m in mem.episode_window(t.id, 1)] == [e.id, t.id]
    with pytest.raises(InvalidInputError, match="not a conversation turn"):
        mem.episode_window(mem.remember("a fact", type="fact").id)


def test_sentence_chunks_are_deterministic_and_cover_the_text():
    spans = chunk_spans(LONG, 240, 40)
    assert len(spans) == len(sentence_spans(LONG)) == 5
    assert " ".join(LONG[a:b] for a, b in spans) == LONG
    merged = chunk_spans("Ok. Yes. Sure thing, the meeting moved to Tuesday at nine.", 240, 40)
    assert len(merged) == 1  # short sentences merge
    long_sentence = "word " * 200
    assert all(b - a <= 240 for a, b in chunk_spans(long_sentence, 240, 40))
    assert sentence_score("ok thanks") == 0
    assert sentence_score("My daughter Lena was born in 2015 in Porto.") > sentence_score("That is a good idea for the trip.")


def test_chunk_hit_returns_whole_episode_with_window_once(mem):
    mem.record_turns([
        {"role": "user", "content": "Let me tell you about the trip."},
        {"role": "user", "content": LONG},
        {"role": "assistant", "content": "Marmots are adorable; binoculars help."},
        {"role": "user", "content": "Anyway, back to work stuff."},
    ], session="trip", scope="p")
    long_id = mem.list(scope="p", session="trip", limit=10)[2].id
    assert count(mem, "chunks", "memory_id = ?", int(long_id[4:])) == 5
    # A misspelt query: no keyword match, so only vectors find it, and the chunk is far closer
    # than the whole turn.
    q = "marmotz sunbathingg rockz"
    r = mem.recall(q, scope="p", limit=3, types=["episode"])
    top = r.memories[0]
    assert top.memory.id == long_id and top.memory.content == LONG and top.breakdown.keyword_rank is None
    whole = mem.embedder.embed([q])[0] @ mem.embedder.embed([mem.get(long_id).title + ". " + LONG])[0]
    assert top.breakdown.vector_similarity > whole + 0.05
    # expanded: the hit with its neighbours in order, each episode once across the result
    r = mem.recall("marmots binoculars", scope="p", limit=5, expand_episodes=1)
    shown = [m.id for h in r.memories for m in (h.window or [h.memory])]
    assert len(shown) == len(set(shown))
    hit = next(h for h in r.memories if h.memory.id == long_id or long_id in [m.id for m in h.window])
    assert [m.episode.seq for m in hit.window] == sorted(m.episode.seq for m in hit.window)
    assert long_id in [m.id for m in hit.window] and len(hit.window) == 3
    assert [h.rank for h in r.memories] == list(range(1, len(r.memories) + 1))


def test_filters_apply_before_the_vector_scan(tmp_path):
    mem = Recallite.open(None, embedder="hash", config=RecalliteConfig(candidate_depth=5))
    mem.record_turns([{"role": "user", "content": f"the red kite flies over the hill number {i}"} for i in range(60)],
                     session="a", scope="p")
    target = mem.record_turn("b", "assistant", "a red kite was seen near the farm", scope="p", category="birds",
                             tags=["nature"])
    long_target = mem.record_turn("c", "narrator", LONG.replace("marmots", "red kites"), scope="p")
    # Filtered after a top-5 the assistant turn would be lost among 60 closer user turns.
    for kwargs in ({"roles": ["assistant"]}, {"categories": ["birds"]}, {"tags": ["nature"]}, {"session": "b"}):
        r = mem.recall("red kite flies over the hill", scope="p", limit=3, **kwargs)
        assert [h.memory.id for h in r.memories] == [target.id], kwargs
    r = mem.recall("kites sunbathing on rocks", scope="p", limit=3, roles=["narrator"])
    assert [h.memory.id for h in r.memories] == [long_target.id]
    assert mem.recall("red kite", scope="other", limit=3).memories == []
    assert mem.retriever.chunk_index.search_memories(
        mem.embedder.embed(["kites sunbathing"])[0], 5, None)[0][0] == int(long_target.id[4:])
    mem.close()


# -- provenance ---------------------------------------------------------------------------------------


def test_citations_why_and_forget_orphans(mem):
    s1, s2 = chat(mem)
    fact = mem.remember("The user has a greyhound named Biscuit.", type="fact", scope="p", cites=[s1[0].id])
    pref = mem.remember("The user is vegetarian and dislikes mushrooms.", type="preference", scope="p",
                        cites=[s2[2].id, s2[0].id])
    assert [m.id for m in mem.why(fact.id)] == [s1[0].id]
    assert [m.id for m in mem.why(pref.id)] == [s2[0].id, s2[2].id]  # conversation order
    assert [m.id for m in mem.why(fact.id, window=1)] == [s1[0].id, s1[1].id]
    again = mem.remember("The user has a greyhound named Biscuit.", type="fact", scope="p", cites=[s1[2].id])
    assert again.duplicate_of == fact.id and len(mem.citations(fact.id)) == 2
    with pytest.raises(InvalidInputError, match="not one"):
        mem.cite(fact.id, [pref.id])
    with pytest.raises(MemoryNotFoundError):
        mem.cite(fact.id, ["mem_999"])
    # deleting one of two sources: not an orphan; the last one: reported, kept
    res = mem.forget(s1[0].id)
    assert res and res.orphans == [] and res.citations == 1
    res = mem.forget(s1[2].id)
    assert res.orphans == [fact.id] and res.removed == [] and mem.get(fact.id)
    assert mem.why(fact.id) == []
    # orphans="remove" deletes the fact left without any source
    res = mem.forget(s2[2].id, orphans="remove")
    assert res.orphans == [] and mem.get(pref.id)  # s2[0] still backs it
    res = mem.forget(s2[0].id, orphans="remove")
    assert res.removed == [pref.id]
    with pytest.raises(MemoryNotFoundError):
        mem.get(pref.id)
    with pytest.raises(InvalidInputError):
        mem.forget(s2[1].id, orphans="ignore")
    # derived memories (consolidate) inherit their members' sources
    a = mem.remember("User walks the dog every morning at seven.", type="fact", scope="p", cites=[s1[1].id])
    b = mem.remember("User walks the dog every morning at 7am.", type="fact", scope="p", cites=[s1[3].id])
    merged = mem.remember("User walks the dog every morning at seven (7am).", type="fact", scope="p")
    mem.relate(merged.id, a.id, "derived_from")
    mem.relate(merged.id, b.id, "derived_from")
    assert [m.id for m in mem.why(merged.id)] == [s1[1].id, s1[3].id]


def test_forget_episode_removes_chunks_vectors_citations_and_index_rows(mem):
    t = mem.record_turn("trip", "user", LONG, scope="p")
    fact = mem.remember("Lena likes marmots.", type="fact", scope="p", cites=[t.id])
    tid = int(t.id[4:])
    assert mem.recall("marmots sunbathing", scope="p").memories[0].memory.id in (t.id, fact.id)
    assert len(mem.retriever.chunk_index) == 5
    res = mem.forget(t.id)
    assert res.chunks == 5 and res.orphans == [fact.id]
    for table, col in [("chunks", "memory_id"), ("vectors", "memory_id"), ("citations", "episode_id"), ("episodes", "memory_id")]:
        assert count(mem, table, f"{col} = ?", tid) == 0, table
    assert t.id not in mem.recall("marmotz sunbathingg", scope="p").ids
    assert len(mem.retriever.chunk_index) == 0
    assert "marmots" not in mem.session_context("trip", last_n=0, scope="p").summary


def test_deprecated_episode_leaves_the_chunk_scan(mem):
    t = mem.record_turn("trip", "user", LONG, scope="p")
    mem.record_turn("trip", "user", "short one about dinner", scope="p")
    assert mem.recall("marmotz sunbathingg", scope="p").ids[0] == t.id
    mem.deprecate(t.id)
    assert t.id not in mem.recall("marmotz sunbathingg", scope="p").ids
    assert t.id in mem.recall("marmotz sunbathingg", scope="p", include_inactive=True).ids


# -- session memory -------------------------------------------------------------------------------------


def test_session_context_and_merged_build_context(mem):
    s1, s2 = chat(mem)
    mem.record_turns([{"role": "user", "content": f"Filler message number {i} about nothing much."} for i in range(6)],
                     session="s2", scope="p")
    sc = mem.session_context("s2", last_n=3, scope="p")
    assert [m.episode.seq for m in sc.turns] == [7, 8, 9] and sc.total_turns == 9
    assert "vegetarian" in sc.summary and "user:" in sc.summary and s2[2].id in sc.summary_ids
    assert mem.session_context("nope").turns == []
    # context for session s2: recent turns + summary + a memory recalled from session s1
    ctx = mem.build_context("what is the name of my dog?", max_tokens=600, conversation="s2", recent_turns=3, scope="p")
    text = ctx.context
    assert "## Recent conversation" in text and "## Earlier in this conversation" in text and "## Relevant memory" in text
    assert "Biscuit" in text and s1[0].id in ctx.memory_ids
    assert text.index("Earlier in this") < text.index("Recent conversation") < text.index("Relevant memory")
    assert not set(ctx.memory_ids) & {m.id for m in sc.turns}  # recent turns are not repeated
    assert ctx.tokens == estimate_tokens(text) <= 600
    for fmt in ("markdown", "xml", "plain", "compact"):
        for budget in (1, 5, 20, 40, 80, 150, 300, 1000):
            c = mem.build_context("dog name", max_tokens=budget, format=fmt, conversation="s2", recent_turns=4, scope="p")
            assert c.tokens == estimate_tokens(c.context) <= budget, (fmt, budget)
    assert "<conversation" in mem.build_context("dog", format="xml", conversation="s2", scope="p").context
    # the running summary is incremental: it follows new turns without recomputing
    mem.record_turn("s2", "user", "Remember that my sister Marta arrives on 14 June.", scope="p")
    assert "Marta" in mem.session_context("s2", last_n=1, scope="p").summary or \
        "Marta" in mem.session_context("s2", last_n=0, scope="p").summary


# -- reconcile / repair ------------------------------------------------------------------------------------


class CountingEmbedder:
    def __init__(self):
        from recallite_core import HashEmbedder

        self.inner = HashEmbedder(64)
        self.name, self.dimensions, self.texts = "counting-64", 64, 0

    def embed(self, texts):
        self.texts += len(texts)
        return self.inner.embed(texts)


def test_reconcile_finds_and_repairs_drift_re_embedding_only_what_is_missing(tmp_path):
    emb = CountingEmbedder()
    mem = Recallite.open(str(tmp_path / "r.db"), embedder=emb)
    turns = mem.record_turns([{"role": "user", "content": LONG}, {"role": "assistant", "content": "Nice trip!"},
                              {"role": "user", "content": "My dog Biscuit came along."}], session="s", scope="p")
    mem.remember("Biscuit is a greyhound.", type="fact", scope="p", cites=[turns[2].id])
    others = [mem.add(f"plain memory {i}") for i in range(5)]
    clean = mem.reconcile()
    assert clean.ok and clean.drift == [] and clean.chunks == 5
    c = mem.store.conn
    c.execute("DELETE FROM vectors WHERE memory_id = ?", (int(others[0].id[4:]),))
    c.execute("UPDATE vectors SET vector = zeroblob(8) WHERE memory_id = ?", (int(others[1].id[4:]),))
    c.execute("DELETE FROM chunks WHERE memory_id = ? AND ord = 2", (int(turns[0].id[4:]),))
    c.execute("DELETE FROM episodes WHERE memory_id = ?", (int(turns[1].id[4:]),))
    c.execute("UPDATE session_summaries SET turns = 99")
    c.execute("INSERT INTO memories_fts(memories_fts, rowid, title, content, tags) VALUES "
              "('delete', ?, ?, ?, ?)", (int(others[2].id[4:]), others[2].title, others[2].content, "[]"))
    report = mem.reconcile()
    kinds = {d.kind: d for d in report.drift}
    assert not report.ok and set(kinds) >= {"missing_vectors", "bad_vector_dimensions", "stale_chunks",
                                             "unregistered_episodes", "session_summaries", "fts_drift"}
    assert kinds["missing_vectors"].ids == [others[0].id] and kinds["stale_chunks"].ids == [turns[0].id]
    assert mem.reconcile().drift == report.drift  # reporting changes nothing
    emb.texts = 0
    fixed = mem.reconcile(repair=True)
    assert fixed.ok and fixed.repaired
    assert emb.texts == 2 + 5  # two memory vectors and one turn's chunks, nothing else
    assert mem.reconcile().drift == []
    assert mem.recall("plain memory 0").memories[0].memory.id == others[0].id
    assert mem.get(turns[1].id).episode.role == "event"
    mem.close()


# -- export / import ---------------------------------------------------------------------------------------


def test_export_import_round_trips_conversation_memory(tmp_path):
    src = Recallite.open(str(tmp_path / "a.db"), embedder="hash")
    s1, s2 = chat(src)
    long_turn = src.record_turn("s1", "user", LONG, scope="p", timestamp="2024-01-02T03:04:05Z", category="trip")
    fact = src.remember("User's dog is Biscuit.", type="fact", scope="p", cites=[s1[0].id], category="pets")
    out = tmp_path / "dump.jsonl"
    src.export_jsonl(str(out))
    kinds = [json.loads(line)["kind"] for line in out.read_text().splitlines()]
    assert kinds.count("citation") == 1 and kinds.count("session_summary") == 2
    dst = Recallite.open(str(tmp_path / "b.db"), embedder="hash")
    counts = dst.import_jsonl(str(out), trust="restore")
    assert counts["memories"] == 9 and counts["citations"] == 1

    def view(m):
        rows = []
        for x in sorted(m.list(limit=100), key=lambda x: (x.session or "", x.episode.seq if x.episode else 0, x.content)):
            ep = x.episode.model_dump() if x.episode else None
            rows.append((x.content, x.type, x.title, x.session, x.category, ep, [w.content for w in m.why(x.id)]))
        chunks = sorted(m.store.conn.execute("SELECT text, start, stop FROM chunks").fetchall())
        ctx = m.session_context("s1", last_n=2, scope="p")
        return rows, chunks, ctx.summary, [t.content for t in ctx.turns]

    assert view(dst) == view(src)
    assert dst.reconcile().ok
    again = dst.import_jsonl(str(out), trust="restore")
    assert again["memories"] == 0 and again["duplicates"] == 9
    # untrusted import: candidates, but still turns with their positions and chunks
    third = Recallite.open(None, embedder="hash")
    third.import_jsonl(str(out))
    t = [m for m in third.list(limit=100) if m.content == LONG][0]
    assert t.status == "candidate" and t.episode.seq == long_turn.episode.seq and t.category == "trip"
    assert third.reconcile().ok
    for m in (src, dst, third):
        m.close()
    del fact


# -- rerank ---------------------------------------------------------------------------------------------


def test_rerank_is_off_by_default_and_a_callable_reorders(mem, tmp_path):
    for i, text in enumerate(["alpha beta gamma", "alpha beta", "alpha"]):
        mem.add(text)
    plain = mem.recall("alpha beta gamma", limit=3)
    assert all(h.breakdown.rerank_score is None for h in plain.memories)
    calls = []

    def shortest_first(query, texts):
        calls.append(len(texts))
        return [-len(t) for t in texts]

    rr = Recallite.open(None, embedder="hash", config=RecalliteConfig(rerank=shortest_first, rerank_depth=10))
    for text in ["alpha beta gamma", "alpha beta", "alpha"]:
        rr.add(text)
    r = rr.recall("alpha beta gamma", limit=3)
    assert [h.memory.content for h in r.memories] == ["alpha", "alpha beta", "alpha beta gamma"]
    assert calls == [3] and all("reranked" in h.reasons for h in r.memories)
    assert [h.rank for h in r.memories] == [1, 2, 3]
    rr.close()
    bad = Recallite.open(None, embedder="hash", config=RecalliteConfig(rerank=lambda q, t: [1.0]))
    bad.add("one")
    bad.add("two one")
    with pytest.raises(RerankerUnavailableError, match="scores"):
        bad.recall("one")
    bad.close()
    ce = Recallite.open(None, embedder="hash", config=RecalliteConfig(rerank="cross-encoder"))
    ce.add("x")
    with pytest.raises(RerankerUnavailableError, match="local model directory"):
        ce.recall("x")
    ce.close()
    if importlib.util.find_spec("sentence_transformers") is None:
        ce = Recallite.open(None, embedder="hash", config=RecalliteConfig(rerank="cross-encoder", rerank_model=str(tmp_path)))
        ce.add("x")
        with pytest.raises(RerankerUnavailableError, match="pip install sentence-transformers"):
            ce.recall("x")
        ce.close()


def test_reindex_rebuilds_chunk_vectors(file_mem):
    t = file_mem.record_turn("s", "user", LONG)
    before = file_mem.store.conn.execute("SELECT id FROM chunks ORDER BY id").fetchall()
    file_mem.reindex()
    after = file_mem.store.conn.execute("SELECT text FROM chunks ORDER BY ord").fetchall()
    assert len(after) == len(before) == 5
    assert file_mem.recall("marmotz sunbathingg").ids[0] == t.id
    assert np.isfinite(file_mem.retriever.chunk_index.matrix[: file_mem.retriever.chunk_index.n]).all()


def test_forgetting_every_turn_of_a_session_left_its_summary_as_drift(backend_mem):
    """A new user's trial: after forget() of every turn of a session, reconcile reported
    session_summaries drift (the summary row was emptied, not removed) and doctor failed."""
    m = backend_mem
    turns = m.record_turns([{"session": "s1", "role": "user", "content": f"turn {i} about the deploy"} for i in range(3)]
                           + [{"session": "s2", "role": "user", "content": "another session stays"}])
    for t in turns[:3]:
        m.forget(t.id)
    report = m.reconcile()
    assert report.ok, report.drift
