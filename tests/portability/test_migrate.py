"""`recallite-mcp migrate`: SQLite -> SQLite, SQLite -> PostgreSQL -> SQLite, refusals, masking."""

import re

from click.testing import CliRunner

from recallite_core import Recallite
from recallite_mcp.cli import main
from tests.portability.test_portability import build, snapshot


def migrate(*args):
    return CliRunner().invoke(main, ["migrate", *args, "--embedder", "hash"], catch_exceptions=False)


def source(tmp_path):
    path = str(tmp_path / "src.db")
    with Recallite.open(path, embedder="hash") as m:
        a, *_ = build(m)
        turns = m.record_turns([{"role": "user", "content": "We deploy from CI only, never by hand."},
                                {"role": "assistant", "content": "Noted: deploys go through CI."}], session="s1", scope="p")
        m.cite(a.id, [turns[0].id])
        m.recall("two cores", scope="p")
        m.join_team("p", "team-p")
    return path


def top_ids(path):
    with Recallite.open(path, embedder="hash") as m:
        return [(h.memory.id, h.memory.content) for h in m.recall("release install cores", scope="p", limit=4).memories]


SECRET = "s3cret-pw"
NOUNS = (("memories", 6), ("relations", 3), ("citations", 1), ("session_summaries", 1), ("retrievals", 2), ("feedback", 1),
         ("team_links", 1))


def with_password(url):
    head, rest = url.split("://", 1)
    user, _, tail = rest.partition("@")
    return f"{head}://{user.split(':')[0]}:{SECRET}@{tail}"  # the test server's socket login ignores it


def conversation(path):
    with Recallite.open(path, embedder="hash") as m:
        return [(t.episode.role, t.episode.seq, t.content) for t in m.session_turns("s1", scope="p")]


def counted(output, noun, n):
    line = next(l for l in output.splitlines() if l.strip().startswith(noun + " "))
    assert line.split()[2] == str(n) and line.split()[4] == str(n) and line.endswith("ok"), line


def test_sqlite_to_sqlite(tmp_path):
    src = source(tmp_path)
    dst = str(tmp_path / "dst.db")
    res = migrate("--from", src, "--to", dst)
    assert res.exit_code == 0, res.output
    for noun, n in NOUNS:
        counted(res.output, noun, n)
    with Recallite.open(src, embedder="hash") as a, Recallite.open(dst, embedder="hash") as b:
        assert snapshot(a) == snapshot(b)
    assert top_ids(src) == top_ids(dst)
    assert conversation(src) == conversation(dst) and len(conversation(dst)) == 2


def test_refusals(tmp_path):
    src = source(tmp_path)
    same = migrate("--from", src, "--to", str(tmp_path / "." / "src.db"))
    assert same.exit_code == 2 and "same store" in same.output
    other = str(tmp_path / "other.db")
    assert migrate("--from", src, "--to", other).exit_code == 0
    again = migrate("--from", src, "--to", other)
    assert again.exit_code == 1 and "not empty" in again.output and "--into-nonempty" in again.output
    with Recallite.open(other, embedder="hash") as m:
        assert len(m.list(limit=100)) == 6  # nothing was added
    extra = str(tmp_path / "extra.db")
    with Recallite.open(extra, embedder="hash") as m:
        m.remember(type="fact", content="The staging database is rebuilt every night.", scope="q")
    added = migrate("--from", extra, "--to", other, "--into-nonempty")
    assert added.exit_code == 0, added.output
    counted(added.output, "memories", 1)
    with Recallite.open(other, embedder="hash") as m:
        assert len(m.list(limit=100, scope=["p", "q"])) == 7
    missing = migrate("--from", str(tmp_path / "nope.db"), "--to", str(tmp_path / "x.db"))
    assert missing.exit_code == 2 and "No store" in missing.output
    memory = migrate("--from", src, "--to", ":memory:")
    assert memory.exit_code == 2


def test_masked_url_in_output(tmp_path):
    url = "postgresql://alice:s3cret@127.0.0.1:1/recallite"
    res = migrate("--from", url, "--to", url)
    assert res.exit_code == 2 and "***" in res.output and "s3cret" not in res.output


def test_sqlite_to_postgres_and_back(tmp_path, postgres_db_url):
    src = source(tmp_path)
    url = with_password(postgres_db_url)
    res = migrate("--from", src, "--to", url)
    assert res.exit_code == 0, res.output
    assert SECRET not in res.output and ":***@" in res.output
    for noun, n in NOUNS:
        counted(res.output, noun, n)
    refused = migrate("--from", src, "--to", url)
    assert refused.exit_code == 1 and "not empty" in refused.output and SECRET not in refused.output
    back = str(tmp_path / "back.db")
    res2 = migrate("--from", url, "--to", back)
    assert res2.exit_code == 0, res2.output
    assert SECRET not in res2.output
    for noun, n in NOUNS:
        counted(res2.output, noun, n)
    assert conversation(src) == conversation(back)
    with Recallite.open(src, embedder="hash") as a, Recallite.open(back, embedder="hash") as b:
        assert snapshot(a) == snapshot(b)
    assert top_ids(src) == top_ids(back)
    with Recallite.open(postgres_db_url, embedder="hash") as pg:
        assert [h.memory.content for h in pg.recall("release install cores", scope="p", limit=4).memories] == \
            [c for _, c in top_ids(src)]


def test_a_count_mismatch_exits_1(tmp_path, monkeypatch):
    import recallite_mcp.migrate as mig

    real, calls = mig.counts, []

    def short(mem):  # the third count is the target after the import: pretend a memory went missing
        got = real(mem)
        calls.append(1)
        return dict(got, memories=got["memories"] - 1) if len(calls) == 3 else got

    monkeypatch.setattr(mig, "counts", short)
    res = migrate("--from", source(tmp_path), "--to", str(tmp_path / "dst.db"))
    assert res.exit_code == 1 and "MISMATCH" in res.output and "counts differ" in res.output


def test_into_nonempty_again_counts_rows_already_there_not_mismatch(tmp_path):
    """The second --into-nonempty copy of the same store: nothing is added, every row is already
    there, and that is the right result (it printed MISMATCH, a negative recomputed count, exit 1)."""
    src, dst = source(tmp_path), str(tmp_path / "dst.db")
    assert migrate("--from", src, "--to", dst).exit_code == 0
    again = migrate("--from", src, "--to", dst, "--into-nonempty")
    assert again.exit_code == 0, again.output
    assert "MISMATCH" not in again.output and "counts differ" not in again.output, again.output
    assert not re.search(r"(?<![\w-])-\d", again.output), again.output  # no negative count
    for noun, n in NOUNS:
        line = next(l for l in again.output.splitlines() if l.strip().startswith(noun + " "))
        assert line.split()[2:] == [str(n), "copied", "0", "already", "there", str(n), "ok"], line
    assert "vectors copied" in again.output and "left as they were" in again.output
    with Recallite.open(src, embedder="hash") as a, Recallite.open(dst, embedder="hash") as b:
        assert snapshot(a) == snapshot(b)  # nothing duplicated


def test_into_nonempty_with_some_new_rows_counts_both(tmp_path):
    src, dst = source(tmp_path), str(tmp_path / "dst.db")
    assert migrate("--from", src, "--to", dst).exit_code == 0
    with Recallite.open(src, embedder="hash") as m:
        m.remember(type="fact", content="The staging database is rebuilt every night.", scope="p")
    again = migrate("--from", src, "--to", dst, "--into-nonempty")
    assert again.exit_code == 0, again.output
    line = next(l for l in again.output.splitlines() if l.strip().startswith("memories "))
    assert line.split()[2:] == ["7", "copied", "1", "already", "there", "6", "ok"], line


def test_into_nonempty_missing_row_is_still_a_mismatch(tmp_path, monkeypatch):
    import recallite_mcp.migrate as mig

    src, dst = source(tmp_path), str(tmp_path / "dst.db")
    assert migrate("--from", src, "--to", dst).exit_code == 0
    real, calls = mig.counts, []

    def short(mem):  # the target after the import lost a relation
        got = real(mem)
        calls.append(1)
        return dict(got, relations=got["relations"] - 1) if len(calls) == 3 else got

    monkeypatch.setattr(mig, "counts", short)
    res = migrate("--from", src, "--to", dst, "--into-nonempty")
    assert res.exit_code == 1 and "MISMATCH" in res.output and "counts differ" in res.output


def test_migrate_lost_team_membership(tmp_path, backend_location):
    """migrate printed ok for every noun, yet teams(api) was [] in the target and api's recall
    with include_teams no longer found web's shared lesson (a new user's trial; README's team
    path to PostgreSQL is migrate). Team links are copied now, and counted like the other nouns."""
    from tests.portability.test_portability import team_view, teams_store

    src = str(tmp_path / "src.db")
    with Recallite.open(src, embedder="hash") as m:
        teams_store(m)
        before = team_view(m)
    res = migrate("--from", src, "--to", backend_location)
    assert res.exit_code == 0, res.output
    counted(res.output, "team_links", 3)
    with Recallite.open(backend_location, embedder="hash") as m:
        assert team_view(m) == before == ({"web": ["team-x"], "api": ["team-x"], "ops": ["team-y"]}, True)


def test_migrate_reports_a_lost_team_link(tmp_path, monkeypatch):
    import recallite_mcp.migrate as mig

    real, calls = mig.counts, []

    def short(mem):  # the target after the import lost a team link
        got = real(mem)
        calls.append(1)
        return dict(got, team_links=got["team_links"] - 1) if len(calls) == 3 else got

    monkeypatch.setattr(mig, "counts", short)
    res = migrate("--from", source(tmp_path), "--to", str(tmp_path / "dst.db"))
    assert res.exit_code == 1 and "MISMATCH" in res.output, res.output
