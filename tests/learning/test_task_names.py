"""Task names (recall/context ``task``): outcomes under one name count for each other whatever the
query's words, and not for another name (issue 13: learning did not transfer across phrasings).

The hash embedder and ``task_weight=0`` make the unnamed case exact: two queries with no word in
common have task vectors at cosine 0, so no evidence passes between them without a name."""

import json

import pytest
from mcp import Client

from recallite_core import Recallite, RecalliteConfig
from recallite_core.errors import InvalidInputError
from recallite_core.learning.learner import LearningConfig
from recallite_core.text.task_names import task_key
from recallite_core.text.validation import parse_id
from recallite_mcp.server import build_server
from recallite_mcp.settings import Settings
from tests.mcp_helpers import call, error_text

CFG = RecalliteConfig(learning=LearningConfig(task_weight=0.0))


def _store(path=None):
    m = Recallite.open(path, embedder="hash", config=CFG)
    wrong = m.remember("alpha beta gamma", type="procedure")  # ranks first for both queries
    right = m.remember("alpha beta gamma delta", type="procedure")
    return m, wrong, right


def _teach(m, wrong, right, name):
    """Feedback on the first phrasing only: the first memory failed, the second worked."""
    r = m.recall("alpha gamma", limit=2, task=name)
    m.feedback(r.retrieval_id, "failure", used_memory_ids=[wrong.id])
    r = m.recall("alpha gamma", limit=2, task=name)
    m.feedback(r.retrieval_id, "success", used_memory_ids=[right.id])


def _stored_task(m, retrieval_id):
    """The task key the retrieval log holds for a retrieval."""
    rid = parse_id(retrieval_id, "ret") if isinstance(retrieval_id, str) else retrieval_id
    with m.core.store.reading() as s:
        return {row[0]: row[8] for row in s.archive.retrievals()}[rid]


def _first(m, query, name):
    return m.recall(query, limit=2, task=name).memories[0].memory.id


def test_task_keys_ignore_case_small_words_plurals_and_order():
    assert task_key("Deploy to staging") == task_key("staging deploys") == task_key("deploy-staging") == "deploy staging"
    assert task_key("Café builds") == task_key("cafe\u0301 build") == task_key("ＣＡＦＥ build")  # one key per spelling
    assert task_key("patch policies") == task_key("patch policy") and task_key("processes") == "process"
    for name in ("deploy others", "Istanbul releases", "statuses"):
        assert task_key(task_key(name)) == task_key(name)  # a key is its own key
    assert task_key("Rotate the DB password") != task_key("rotate the db passwords of prod")
    for bad in ("", "the to of", "x" * 200):
        with pytest.raises(InvalidInputError, match="task"):
            task_key(bad)


def test_learning_did_not_transfer_between_phrasings_of_one_task():
    m, wrong, right = _store()
    assert _first(m, "beta", None) == wrong.id
    _teach(m, wrong, right, None)
    assert _first(m, "beta", None) == wrong.id  # without a name: "beta" is another task

    m, wrong, right = _store()
    _teach(m, wrong, right, "deploy service")
    assert _first(m, "beta", "Deploy the services") == right.id


def test_one_wording_for_two_named_jobs_keeps_each_record_apart():
    """Interference: the same words asked for two jobs, where each needs the other memory."""
    m, wrong, right = _store()
    _teach(m, wrong, right, "deploy service")
    r = m.recall("alpha gamma", limit=2, task="rotate key")
    m.feedback(r.retrieval_id, "failure", used_memory_ids=[r.memories[0].memory.id])
    r = m.recall("alpha gamma", limit=2, task="rotate key")
    m.feedback(r.retrieval_id, "success", used_memory_ids=[wrong.id])
    assert _first(m, "alpha gamma", "deploy service") == right.id
    assert _first(m, "alpha gamma", "rotate key") == wrong.id


def test_a_name_never_used_before_ranks_as_an_unnamed_query():
    m, wrong, right = _store()
    _teach(m, wrong, right, None)
    assert [h.memory.id for h in m.recall("alpha gamma", limit=2, task="brand new job").memories] == \
        [h.memory.id for h in m.recall("alpha gamma", limit=2).memories] == [right.id, wrong.id]


def test_a_task_name_survived_a_restart_between_context_and_feedback(tmp_path):
    path = str(tmp_path / "m.db")
    m, wrong, right = _store(path)
    r1 = m.recall("alpha gamma", limit=2, task="deploy service")
    m.close()
    m = Recallite.open(path, embedder="hash", config=CFG)  # the task vector is rebuilt from the log
    m.feedback(r1.retrieval_id, "failure", used_memory_ids=[wrong.id])
    r2 = m.build_context("alpha gamma", limit=2, task="deploy service")
    m.feedback(r2.retrieval_id, "success", used_memory_ids=[right.id])
    m.close()
    m = Recallite.open(path, embedder="hash", config=CFG)
    assert _first(m, "beta", "deploy service") == right.id
    assert _stored_task(m, r1.retrieval_id) == "deploy service"


def test_a_restore_stored_keys_as_written_not_normalised_again(tmp_path):
    """An exported key went through task_key once more on import: "other" (a stop word once its
    plural s is gone) failed the whole restore, "deploy other" quietly became "deploy"."""
    dst = _restored_as("deploy other", tmp_path)
    with dst.core.store.reading() as s:
        assert [row[8] for row in s.archive.retrievals()] == ["deploy other"]


def _restored_as(key, tmp_path, label=None):
    """A store restored from an export whose success under "deploy service" was written as ``key``
    (an export from an older version, whose keys may not be keys any more), and its wording as
    ``label`` (None: as written)."""
    m, _, right = _store()
    r = m.recall("alpha gamma", limit=2, task="deploy service")
    m.feedback(r.retrieval_id, "success", used_memory_ids=[right.id])
    out = tmp_path / "dump.jsonl"
    m.export_jsonl(str(out))
    out.write_text(out.read_text().replace('"task": "deploy service"', f'"task": "{key}"')
                   .replace('"task_label": "deploy service"', f'"task_label": "{label or "deploy service"}"'))
    dst = Recallite.open(None, embedder="hash", config=CFG)
    dst.import_jsonl(str(out), trust="restore")
    return dst


def test_an_empty_task_name_is_no_name():
    m = _store()[0]
    r = m.recall("alpha gamma", limit=2, task="  ")
    assert _stored_task(m, r.retrieval_id) is None


def test_export_and_restore_keep_task_names(tmp_path):
    m, wrong, right = _store()
    _teach(m, wrong, right, "Deploy the services")
    out = tmp_path / "dump.jsonl"
    m.export_jsonl(str(out))
    assert '"task": "deploy service"' in out.read_text() and '"task_label": "Deploy the services"' in out.read_text()
    dst = Recallite.open(None, embedder="hash", config=CFG)
    dst.import_jsonl(str(out), trust="restore")
    assert dst.recall("beta", limit=2).task_names == ["Deploy the services"]  # listed as the agent wrote it
    moved = {h.memory.content: h.memory.id for h in dst.recall("beta", limit=2, task="deploy service").memories}
    assert next(iter(moved)) == "alpha beta gamma delta"


@pytest.mark.anyio
async def test_context_takes_a_task_name_and_says_what_a_bad_one_needs():
    async with Client(build_server(Settings(db=":memory:", embedder="hash", warm_embedder=False))) as c:
        await call(c, "recallite_remember", content="Deploy with make release.", type="procedure")
        got = await call(c, "recallite_context", query="ship it", task="deploy service")
        assert got["retrieval_id"].startswith("ret_")
        text = await error_text(c, "recallite_context", query="ship it", task="the")
        assert "task" in text and "\n" not in text.strip()


def test_the_cli_context_takes_a_task_name(tmp_path):
    from click.testing import CliRunner

    from recallite_mcp.cli import main

    db = str(tmp_path / "cli.db")
    runner = CliRunner()
    assert runner.invoke(main, ["add", "Deploy with make release.", "--db", db, "--embedder", "hash"]).exit_code == 0
    ok = runner.invoke(main, ["context", "ship it", "--task", "deploy service", "--db", db, "--embedder", "hash", "--json"])
    assert ok.exit_code == 0, ok.output
    rid = parse_id(json.loads(ok.stdout)["retrieval_id"], "ret")
    m = Recallite.open(db, embedder="hash")
    assert _stored_task(m, rid) == "deploy service"
    bad = runner.invoke(main, ["context", "ship it", "--task", "the", "--db", db, "--embedder", "hash"])
    assert bad.exit_code != 0 and "task" in bad.output
