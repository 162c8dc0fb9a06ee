"""`recallite-mcp migrate`: SQLite -> SQLite, SQLite -> PostgreSQL -> SQLite, refusals, masking."""

from click.testing import CliRunner

from recallite_core import Recallite
from recallite_mcp.cli import main
from tests.portability.test_portability import build, snapshot


def migrate(*args):
    return CliRunner().invoke(main, ["migrate", *args, "--embedder", "hash"], catch_exceptions=False)


def source(tmp_path):
    path = str(tmp_path / "src.db")
    with Recallite.open(path, embedder="hash") as m:
        build(m)
        m.recall("two cores", scope="p")
    return path


def top_ids(path):
    with Recallite.open(path, embedder="hash") as m:
        return [(h.memory.id, h.memory.content) for h in m.recall("release install cores", scope="p", limit=4).memories]


def counted(output, noun, n):
    line = next(l for l in output.splitlines() if l.strip().startswith(noun + " "))
    assert line.split()[2] == str(n) and line.split()[4] == str(n) and line.endswith("ok"), line


def test_sqlite_to_sqlite(tmp_path):
    src = source(tmp_path)
    dst = str(tmp_path / "dst.db")
    res = migrate("--from", src, "--to", dst)
    assert res.exit_code == 0, res.output
    for noun, n in (("memories", 4), ("relations", 3), ("retrievals", 2), ("feedback", 1)):
        counted(res.output, noun, n)
    with Recallite.open(src, embedder="hash") as a, Recallite.open(dst, embedder="hash") as b:
        assert snapshot(a) == snapshot(b)
    assert top_ids(src) == top_ids(dst)


def test_refusals(tmp_path):
    src = source(tmp_path)
    same = migrate("--from", src, "--to", str(tmp_path / "." / "src.db"))
    assert same.exit_code == 2 and "same store" in same.output
    other = str(tmp_path / "other.db")
    assert migrate("--from", src, "--to", other).exit_code == 0
    again = migrate("--from", src, "--to", other)
    assert again.exit_code == 1 and "not empty" in again.output and "--into-nonempty" in again.output
    with Recallite.open(other, embedder="hash") as m:
        assert len(m.list(limit=100)) == 4  # nothing was added
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
    res = migrate("--from", src, "--to", postgres_db_url)
    assert res.exit_code == 0, res.output
    for noun, n in (("memories", 4), ("relations", 3), ("retrievals", 2), ("feedback", 1)):
        counted(res.output, noun, n)
    back = str(tmp_path / "back.db")
    res2 = migrate("--from", postgres_db_url, "--to", back)
    assert res2.exit_code == 0, res2.output
    for noun, n in (("memories", 4), ("relations", 3), ("retrievals", 2), ("feedback", 1)):
        counted(res2.output, noun, n)
    with Recallite.open(src, embedder="hash") as a, Recallite.open(back, embedder="hash") as b:
        assert snapshot(a) == snapshot(b)
    assert top_ids(src) == top_ids(back)
    with Recallite.open(postgres_db_url, embedder="hash") as pg:
        assert [h.memory.content for h in pg.recall("release install cores", scope="p", limit=4).memories] == \
            [c for _, c in top_ids(src)]
