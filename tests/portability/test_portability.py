import json

import pytest

from recallite_core import InvalidInputError, Recallite


def build(m):
    a = m.remember(type="lesson", title="A", content="Use uv for installs.", tags=["py"], metadata={"k": 1}, scope="p")
    b = m.remember(type="fact", content="CI runs on two cores.", source={"type": "agent", "id": "bot"}, scope="p")
    c = m.remember(type="procedure", content="Old release steps with setup.py.", scope="p")
    d = m.remember(type="procedure", content="Release with hatch build and twine.", scope="p")
    m.supersede(c.id, d.id)
    m.relate(b.id, a.id, "supports")
    m.relate(a.id, d.id, "contradicts")
    r = m.recall("install release", scope="p")
    m.feedback(r.retrieval_id, "success", used_memory_ids=[a.id], reason="worked", client_key="ck-1")
    return a, b, c, d


def built_export(tmp_path) -> str:
    """The export of a store ``build`` filled (a.db), for the import commands to read."""
    out = str(tmp_path / "a.jsonl")
    with Recallite.open(str(tmp_path / "a.db"), embedder="hash") as m:
        build(m)
        m.export_jsonl(out)
    return out


def snapshot(m):
    mems = sorted(
        (x.content, x.type, x.title, x.status, x.source.type, x.source.id, x.scope, tuple(x.tags), json.dumps(x.metadata),
         round(x.confidence, 9), round(x.usefulness, 9), x.importance, x.success_count, x.failure_count,
         None if x.superseded_by is None else m.get(x.superseded_by).content)
        for x in m.list(limit=1000)
    )
    conn = m.store.conn
    rels = sorted(
        (m.get(f"mem_{a}").content, m.get(f"mem_{b}").content, t)
        for a, b, t in conn.execute("SELECT from_id, to_id, type FROM relations")
    )
    fb = conn.execute("SELECT outcome, score, reason, client_key FROM feedback").fetchall()
    return mems, rels, fb


def test_export_import_round_trip(tmp_path):
    src = Recallite.open(str(tmp_path / "a.db"), embedder="hash")
    build(src)
    out = tmp_path / "dump.jsonl"
    n = src.export_jsonl(str(out))
    assert n == len(out.read_text().splitlines())
    dst = Recallite.open(str(tmp_path / "b.db"), embedder="hash")
    counts = dst.import_jsonl(str(out), trust="restore")
    assert counts["memories"] == 4 and counts["relations"] == 3 and counts["feedback"] == 1
    assert snapshot(dst) == snapshot(src)
    # and exporting the copy gives the same records (ids aside)
    out2 = tmp_path / "dump2.jsonl"
    dst.export_jsonl(str(out2))

    def strip(path):
        rows = [json.loads(l) for l in path.read_text().splitlines()]
        return [{k: v for k, v in r.items() if k not in ("id", "exported_at", "created_at", "updated_at", "content_hash")}
                for r in rows if r["kind"] == "memory"]

    assert sorted(map(json.dumps, strip(out))) == sorted(map(json.dumps, strip(out2)))
    # importing again only finds duplicates
    again = dst.import_jsonl(str(out), trust="restore")
    assert again["memories"] == 0 and again["duplicates"] == 4


def test_a_backup_restored_twice_doubled_its_retrievals_and_feedback(tmp_path):
    """Memories were found as duplicates the second time, but every logged retrieval and feedback
    (without a client key) was written again, so outcomes counted twice (a new user's trial)."""
    src = Recallite.open(str(tmp_path / "a.db"), embedder="hash")
    x = src.remember("The staging server runs on port 9090.", scope="p")
    for outcome in ("failure", "success", "success"):
        got = src.recall("which port does staging use", scope="p")
        src.feedback(got.retrieval_id, outcome, used_memory_ids=[x.id])
    out = tmp_path / "backup.jsonl"
    src.export_jsonl(str(out))
    dst = Recallite.open(str(tmp_path / "b.db"), embedder="hash")
    first = dst.import_jsonl(str(out), trust="restore")
    again = dst.import_jsonl(str(out), trust="restore")
    assert (first["retrievals"], first["feedback"]) == (3, 3)
    assert (again["retrievals"], again["feedback"], again["duplicates"]) == (0, 0, 1)
    conn = dst.store.conn
    assert conn.execute("SELECT count(*) FROM retrievals").fetchone()[0] == 3
    assert conn.execute("SELECT count(*) FROM feedback").fetchone()[0] == 3
    assert conn.execute("SELECT count(*) FROM memory_outcomes").fetchone()[0] == 3
    src.close()
    dst.close()


def test_untrusted_import_makes_candidates(tmp_path):
    src = Recallite.open(None, embedder="hash")
    build(src)
    out = tmp_path / "dump.jsonl"
    src.export_jsonl(str(out))
    dst = Recallite.open(None, embedder="hash")
    dst.import_jsonl(str(out))
    for m in dst.list(limit=100, statuses=["candidate", "validated", "active", "superseded"]):
        # what the file retired stays retired (test_untrusted_import_revived_...)
        assert m.status == ("superseded" if m.content.startswith("Old release") else "candidate")
        assert m.source.type == "imported"
    assert dst.stats().feedback["success"] == 0


def test_bad_import_writes_nothing(tmp_path):
    m = Recallite.open(None, embedder="hash")
    p = tmp_path / "bad.jsonl"
    p.write_text('{"kind": "header", "format": "recallite-jsonl", "version": 1}\n'
                 '{"kind": "memory", "id": "mem_1", "content": "fine", "type": "fact"}\n'
                 '{"kind": "memory", "id": "mem_2", "content": "", "type": "fact"}\n')
    with pytest.raises(InvalidInputError, match="line 3"):
        m.import_jsonl(str(p))
    assert m.stats().memories == 0
    p.write_text("not json\n")
    with pytest.raises(InvalidInputError):
        m.import_jsonl(str(p))
    with pytest.raises(InvalidInputError, match="No file"):
        m.import_jsonl(str(tmp_path / "missing.jsonl"))


def _ids(m, scope):
    with m.core.store.reading() as conn:
        return set(conn.archive.memory_ids(scope))


def _log(m):
    """Relations, retrievals (searched scope, item ids) and feedback (used ids, effect ids) of a store."""
    with m.core.store.reading() as conn:
        a = conn.archive
        rels = [(x, y, t) for x, y, t, _e, _c in a.relations()]
        rets = {rid: (searched, {row[0] for row in a.items_of(rid)}) for rid, _q, _p, searched, *_ in a.retrievals()}
        fbs = [(judged, json.loads(used), {row[0] for row in a.effects_of(fid)}, key)
               for fid, judged, _o, _s, used, _r, key, _c in a.feedback()]
    return rels, rets, fbs


@pytest.mark.parametrize("trust", ["restore", "untrusted"])
def test_import_scope_moves_every_memory_and_what_hangs_off_it(backend_mem, tmp_path, trust):
    """import --scope was ignored: memories kept their exported scope. Now they go to the given
    scope, into the store that still holds the originals, with relations, retrievals and feedback
    on the copies only; a second import into that scope finds everything already there."""
    m = backend_mem
    build(m)
    out = tmp_path / "p.jsonl"
    m.export_jsonl(str(out))
    before = _log(m)
    p_ids = _ids(m, "p")
    got = m.import_jsonl(str(out), trust=trust, scope="q")
    assert got["memories"] == 4 and got["duplicates"] == 0
    q_ids = _ids(m, "q")
    assert len(q_ids) == 4 and not q_ids & p_ids and _ids(m, None) == p_ids | q_ids  # the originals stay
    assert {x.scope for x in m.list(limit=100, scope="q")} == {"q"}
    rels, rets, fbs = _log(m)
    new_rels = [r for r in rels if r not in before[0]]
    assert len(new_rels) == 3 and all({x, y} <= q_ids for x, y, _t in new_rels)
    new_rets = {rid: v for rid, v in rets.items() if rid not in before[1]}
    new_fbs = [f for f in fbs if f not in before[2]]
    if trust == "restore":
        assert len(new_rets) == 1 and all(s == json.dumps(["q"]) and items and items <= q_ids
                                          for s, items in new_rets.values())
        (judged, used, effects, key), = new_fbs
        assert judged in new_rets and {int(u[4:]) for u in used} <= q_ids and effects and effects <= q_ids
        assert key == "ck-1@q"
    else:
        assert not new_rets and not new_fbs
    again = m.import_jsonl(str(out), trust=trust, scope="q")
    assert again["memories"] == 0 and again["duplicates"] == 4
    assert _log(m) == (rels, rets, fbs)


def test_import_scope_refuses_a_blank_scope(mem, tmp_path):
    build(mem)
    out = tmp_path / "p.jsonl"
    mem.export_jsonl(str(out))
    with pytest.raises(InvalidInputError, match="non-empty"):
        mem.import_jsonl(str(out), scope="  ")


def test_cli_import_scope_moves_memories_and_env_scope_does_not(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from recallite_mcp.cli import main

    dst, out = str(tmp_path / "b.db"), built_export(tmp_path)
    run = CliRunner().invoke
    monkeypatch.setenv("RECALLITE_SCOPE", "env-scope")
    assert run(main, ["import", out, "--db", dst, "--embedder", "hash"]).exit_code == 0
    moved = run(main, ["--scope", "otherproj", "import", out, "--db", dst, "--embedder", "hash"])
    assert moved.exit_code == 0 and "memories 4" in moved.output, moved.output
    also = run(main, ["import", out, "--db", dst, "--embedder", "hash", "--scope", "third"])
    assert also.exit_code == 0 and "memories 4" in also.output, also.output
    with Recallite.open(dst, embedder="hash") as m:
        assert m.stats().by_scope == {"p": 4, "otherproj": 4, "third": 4}


def test_import_scope_moves_a_conversation_and_rebuilds_its_summary(tmp_path):
    from tests.portability.test_migrate import source

    path = source(tmp_path)
    out = str(tmp_path / "s.jsonl")
    with Recallite.open(path, embedder="hash") as m:
        m.export_jsonl(out)
        turns = [(t.episode.role, t.episode.seq, t.content) for t in m.session_turns("s1", scope="p")]
        got = m.import_jsonl(out, trust="restore", scope="r")
        assert got["memories"] == 6 and got["citations"] == 1
        assert [(t.episode.role, t.episode.seq, t.content) for t in m.session_turns("s1", scope="r")] == turns
        with m.core.store.reading() as conn:
            assert {(sc, se) for sc, se, *_ in conn.archive.summaries()} == {("p", "s1"), ("r", "s1")}
        again = m.import_jsonl(out, trust="restore", scope="r")
        assert again["memories"] == 0 and again["duplicates"] == 6


def teams_store(m):
    """The trial's two projects sharing into one team, and a membership with nothing shared yet."""
    web = m.remember("Run npm ci before the build.", type="lesson", scope="web")
    api = m.remember("Run go mod tidy before the build.", type="lesson", scope="api")
    m.share(web.id, "team-x")
    m.share(api.id, "team-x")
    m.join_team("ops", "team-y")


def team_view(m):
    """Each scope's teams, and what api finds of web's shared lesson with include_teams."""
    hits = m.recall("npm ci before the build", scope="api", include_teams=True).memories
    return ({s: m.teams(s) for s in ("web", "api", "ops")},
            "Run npm ci before the build." in [h.memory.content for h in hits])


def test_restore_lost_team_membership(tmp_path, backend_url):
    """export + import --trust restore reported success but teams(api) came back [] and api's
    recall with include_teams no longer found web's shared lesson (a new user's trial): the export
    had no record of scope links. Now `team_link` records carry them (format version unchanged:
    an older importer skips a kind it does not know), restore joins them, and says how many."""
    src = Recallite.open(str(tmp_path / "a.db"), embedder="hash")
    teams_store(src)
    out = tmp_path / "backup.jsonl"
    src.export_jsonl(str(out))
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows[0]["version"] == 1
    assert sorted((r["scope"], r["team_scope"]) for r in rows if r["kind"] == "team_link") == \
        [("api", "team-x"), ("ops", "team-y"), ("web", "team-x")]
    dst = Recallite.open(backend_url, embedder="hash")
    got = dst.import_jsonl(str(out), trust="restore")
    assert got["team_links"] == 3
    assert team_view(dst) == team_view(src) == ({"web": ["team-x"], "api": ["team-x"], "ops": ["team-y"]}, True)
    again = dst.import_jsonl(str(out), trust="restore")
    assert again["team_links"] == 0 and again["team_links_already_there"] == 3
    src.close()
    dst.close()


def test_team_links_of_a_scoped_export_follow_import_scope(tmp_path):
    """export --this-scope carries that scope's own memberships; import --scope moves them to
    the new scope, as it moves the memories."""
    src = Recallite.open(None, embedder="hash")
    teams_store(src)
    out = tmp_path / "web.jsonl"
    src.export_jsonl(str(out), scope="web")
    assert [r["scope"] for r in map(json.loads, out.read_text().splitlines()) if r["kind"] == "team_link"] == ["web"]
    got = src.import_jsonl(str(out), trust="restore", scope="web2")
    assert got["team_links"] == 1 and src.teams("web2") == ["team-x"]
    assert src.import_jsonl(str(out), trust="restore", scope="team-x")["team_links"] == 0  # never its own team
    assert src.teams("team-x") == []


def test_untrusted_import_joins_no_team(tmp_path):
    """Someone else's file does not widen what a scope recalls (with --isolate-scopes, team
    links decide what a project may read): its links are counted as skipped."""
    src = Recallite.open(None, embedder="hash")
    teams_store(src)
    out = tmp_path / "shared.jsonl"
    src.export_jsonl(str(out))
    dst = Recallite.open(None, embedder="hash")
    got = dst.import_jsonl(str(out))
    assert got["team_links"] == 0 and got["team_links_skipped"] == 3
    assert [dst.teams(s) for s in ("web", "api", "ops")] == [[], [], []]


def test_a_file_without_team_links_imports_as_before(tmp_path):
    p = tmp_path / "old.jsonl"
    p.write_text('{"kind": "header", "format": "recallite-jsonl", "version": 1}\n'
                 '{"kind": "memory", "id": "mem_1", "content": "fine", "type": "fact", "scope": "web"}\n')
    m = Recallite.open(None, embedder="hash")
    got = m.import_jsonl(str(p), trust="restore")
    assert got["memories"] == 1 and got["team_links"] == 0 and "team_links_skipped" not in got
    assert m.teams("web") == []


def test_untrusted_import_revived_deprecated_and_superseded_memories(tmp_path, backend_url):
    """A default import brought the deprecated `Run npm ci before the build` and the superseded
    `Deploy from the main branch` back as candidates, and both showed in recall (the deprecated one
    first for "npm ci build"; a new user's trial). Retired memories now arrive retired: status and
    superseded_by kept, source imported, out of recall, and the import says how many."""
    src = Recallite.open(str(tmp_path / "a.db"), embedder="hash")
    npm = src.remember("Run npm ci before the build.", type="lesson", scope="web")
    main = src.remember("Deploy from the main branch.", type="procedure", scope="web")
    src.deprecate(npm.id, reason="we moved to pnpm")
    src.revise(main.id, "Deploy from a release tag.")
    out = tmp_path / "shared.jsonl"
    src.export_jsonl(str(out))
    dst = Recallite.open(backend_url, embedder="hash")
    got = dst.import_jsonl(str(out))
    by_text = {m.content: m for m in dst.list(limit=100, statuses=["candidate", "deprecated", "superseded"])}
    tag = by_text["Deploy from a release tag."]
    assert by_text["Run npm ci before the build."].status == "deprecated"
    assert by_text["Deploy from the main branch."].status == "superseded"
    assert by_text["Deploy from the main branch."].superseded_by == tag.id and tag.status == "candidate"
    assert {m.source.type for m in by_text.values()} == {"imported"}
    assert got["memories"] == 3 and got["retired"] == 2
    for query in ("npm ci build", "deploy from the main branch"):
        assert {h.memory.content for h in dst.recall(query, scope="web").memories} <= {tag.content}
    assert [m.content for m in dst.history(tag.id)] == ["Deploy from the main branch.", "Deploy from a release tag."]
    again = dst.import_jsonl(str(out))
    assert again["duplicates"] == 3 and "retired" not in again
    src.close()
    dst.close()


def test_cli_untrusted_import_says_what_stayed_retired(tmp_path):
    from click.testing import CliRunner

    from recallite_mcp.cli import main

    dst, out = str(tmp_path / "b.db"), built_export(tmp_path)
    res = CliRunner().invoke(main, ["import", out, "--db", dst, "--embedder", "hash"])
    assert res.exit_code == 0 and "retired 1" in res.output, res.output
    assert "1 memory deprecated or superseded in the file stayed so; the others are candidates." in res.output
    restored = CliRunner().invoke(main, ["import", out, "--db", str(tmp_path / "c.db"), "--embedder", "hash",
                                         "--trust", "restore"])
    assert restored.exit_code == 0 and "stayed so" not in restored.output, restored.output
    assert "skipped" not in restored.output and "feedback 1" in restored.output


def test_a_default_import_dropped_retrievals_and_feedback_without_a_word(tmp_path):
    """A new user's trial: an export of 63 lines (23 retrievals, 3 feedback) imported as "memories
    31, ... retrievals 0, feedback 0", with nothing said of the 26 records left out. The summary now
    counts them and says how to bring them back."""
    from click.testing import CliRunner

    from recallite_mcp.cli import main

    dst, out = str(tmp_path / "b.db"), built_export(tmp_path)
    res = CliRunner().invoke(main, ["import", out, "--db", dst, "--embedder", "hash"])
    assert res.exit_code == 0 and "history_skipped 2" in res.output, res.output
    assert ("2 retrieval and feedback records skipped: outcome history comes back only with --trust restore"
            in res.output)


@pytest.mark.parametrize("batch", [1, 500])
@pytest.mark.parametrize("retired_first", [False, True])
def test_an_imported_retired_memory_is_not_corrected_again(tmp_path, batch, retired_first):
    """What the file retired is not compared with anything: written after a live memory it reads
    as that memory's correction (the live one came in superseded; set retired first, the import
    failed: "a retired memory cannot replace another"); written before, a live memory of a later
    batch must not take it for live."""
    live = ('{"kind": "memory", "id": "mem_1", "content": "The staging server now runs on port 9090.", '
            '"type": "fact", "scope": "web", "status": "active"}\n')
    gone = ('{"kind": "memory", "id": "mem_2", "content": "The staging server runs on port 8080.", '
            '"type": "fact", "scope": "web", "status": "deprecated"}\n')
    out = tmp_path / "f.jsonl"
    out.write_text('{"kind": "header", "format": "recallite-jsonl", "version": 1}\n'
                   + (gone + live if retired_first else live + gone))
    dst = Recallite.open(None, embedder="hash")
    got = dst.import_jsonl(str(out), batch=batch)
    assert (got["memories"], got["retired"], got["relations"]) == (2, 1, 0)
    states = {m.content: (m.status, m.superseded_by) for m in dst.list(limit=10, statuses=["candidate", "deprecated"])}
    assert states == {"The staging server runs on port 8080.": ("deprecated", None),
                      "The staging server now runs on port 9090.": ("candidate", None)}
    with dst.core.store.reading() as conn:
        assert conn.archive.relations() == []


@pytest.mark.parametrize("batch", [1, 100])
def test_an_untrusted_import_superseded_a_memory_a_person_restored(tmp_path, batch):
    """A new user's trial: "runs on port 8080" was superseded by "moved to port 9090", restored by
    hand (both hold), exported, then imported with the default trust: the import's copy of the newer
    one superseded the older again. A file is one state of things: its memories are compared with
    what was stored before the import, never with each other (one batch or several)."""
    src = Recallite.open(None, embedder="hash")
    old = src.remember("The staging server runs on port 8080.", type="fact", scope="s")
    new = src.remember("The staging server moved to port 9090.", type="fact", scope="s")
    assert new.supersedes == [old.id]
    src.undo_supersede(old.id)
    out = tmp_path / "x.jsonl"
    src.export_jsonl(str(out))
    src.close()
    dst = Recallite.open(None, embedder="hash")
    try:
        dst.import_jsonl(str(out), batch=batch)
        stored = dst.list(scope="s")
        assert len(stored) == 2 and all(m.status == "candidate" for m in stored)
        assert not any(dst.relations(m.id) for m in stored)
    finally:
        dst.close()


def test_restoring_a_backup_renumbered_its_memory_ids(tmp_path, backend_url):
    """A new user's trial: `import --trust restore` of an export into a fresh database gave the
    memories new ids, closing the gap a forgotten memory had left, so "mem_26" (a billing secret
    note) named a webshop memory afterwards. Ids are what agents, notes and feedback refer to: a
    restore into an empty store keeps them, links and feedback included, and new memories
    continue after them. Into a store holding memories, the import gives new ids."""
    src = Recallite.open(str(tmp_path / "a.db"), embedder="hash")
    ids = [src.remember(f"Billing fact number {i}: invoices go out on day {i}.", type="fact", scope="billing").id
           for i in range(6)]
    src.forget(ids[2])
    r = src.recall("invoices", scope="billing")
    src.feedback(r.retrieval_id, "success", used_memory_ids=[ids[3]])
    src.relate(ids[0], ids[5], "supports")
    out = str(tmp_path / "backup.jsonl")
    src.export_jsonl(out)
    want = {m.id: m.content for m in src.list(scope="billing", limit=50)}
    dst = Recallite.open(backend_url, embedder="hash")
    try:
        dst.import_jsonl(out, trust="restore")
        assert {m.id: m.content for m in dst.list(scope="billing", limit=50)} == want
        assert dst.get(ids[3]).success_count == 1
        assert dst.remember("A memory written after the restore.", type="fact", scope="billing").id == "mem_7"
        other = Recallite.open(str(tmp_path / "c.db"), embedder="hash")
        other.remember("Something already here.", type="fact")
        other.import_jsonl(out, trust="restore")
        assert other.get("mem_2").content == "Billing fact number 0: invoices go out on day 0."
        other.close()
    finally:
        src.close()
        dst.close()
