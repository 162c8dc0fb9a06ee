"""Names for the job (issue 13: nothing helped an agent name its tasks consistently, so a job asked
under a new name started its record from nothing): a result lists the names its memories worked
under when the agent's own name is new to them, and feedback can report an outcome under one."""

import pytest
from mcp import Client

from recallite_core import Recallite, RecalliteConfig
from recallite_core.errors import InvalidInputError
from recallite_core.learning.learner import LearningConfig
from recallite_core.text.validation import parse_id
from recallite_mcp.server import build_server
from recallite_mcp.settings import Settings
from tests.learning.test_task_names import CFG, _restored_as, _store, _stored_task
from tests.mcp_helpers import call, error_text


def _worked(m, query, memory, name):
    r = m.recall(query, limit=2, task=name)
    m.feedback(r.retrieval_id, "success", used_memory_ids=[memory.id])


def test_a_name_new_to_the_results_was_told_nothing_of_the_names_they_worked_under():
    m, _, right = _store()
    _worked(m, "alpha gamma", right, "deploy service")
    assert m.recall("beta", limit=2, task="ship build").task_names == ["deploy service"]
    assert m.recall("beta", limit=2).task_names == ["deploy service"]  # no name given: the same
    assert m.build_context("beta", limit=2, task="ship build").task_names == ["deploy service"]
    assert m.recall("beta", limit=2, task="Deploy the services").task_names == []  # its own name is known here


def test_task_names_come_nearest_first_and_only_from_successes():
    m, wrong, right = _store()
    _worked(m, "alpha gamma", right, "deploy service")
    _worked(m, "delta", right, "release app")
    r = m.recall("beta", limit=2, task="rotate key")
    m.feedback(r.retrieval_id, "failure", used_memory_ids=[wrong.id])
    assert m.recall("alpha gamma", limit=2).task_names == ["deploy service", "release app"]
    assert m.recall("delta", limit=2).task_names == ["release app", "deploy service"]  # "rotate key" only failed


def test_listed_names_were_keys_the_agent_never_wrote():
    """A new user's trial: jobs named "debug staging db" and "prod migration" came back as
    "db debug staging" and "migration prod" (their keys, words sorted). A name is listed as the
    agent last wrote it, and passing that back is the same job."""
    m, _, right = _store()
    _worked(m, "alpha gamma", right, "Debug the  staging DB")
    listed = m.recall("beta", limit=2).task_names
    assert listed == ["Debug the staging DB"]  # spaces collapsed, nothing else changed
    r = m.recall("beta", limit=2, task=listed[0])
    assert r.task_names == [] and m.recall("beta", limit=2, task="staging db debug").task_names == []  # one job
    m.feedback(r.retrieval_id, "success", used_memory_ids=[right.id])
    other = m.recall("alpha", limit=2, task="ship build")
    m.feedback(other.retrieval_id, "success", used_memory_ids=[right.id], task="debug staging db")  # adopted later
    assert m.recall("beta", limit=2).task_names == ["debug staging db"]  # the newest wording of the name


def test_a_global_learner_lists_no_task_names():
    m = Recallite.open(None, embedder="hash", config=RecalliteConfig(learning=LearningConfig(mode="global")))
    right = m.remember("alpha beta gamma delta", type="procedure")
    _worked(m, "alpha gamma", right, "deploy service")
    assert m.recall("beta", limit=2).task_names == []


def test_an_outcome_reported_under_a_name_counts_for_that_name():
    """The agent asked without a name (or a new one), then reported under the name it was listed."""
    m, wrong, right = _store()
    r = m.recall("alpha gamma", limit=2)
    m.feedback(r.retrieval_id, "failure", used_memory_ids=[wrong.id], task="deploy service")
    r = m.recall("alpha gamma", limit=2, task="ship build")
    m.feedback(r.retrieval_id, "success", used_memory_ids=[right.id], task="Deploy the services")
    assert _stored_task(m, r.retrieval_id) == "deploy service"
    assert m.recall("beta", limit=2, task="deploy service").memories[0].memory.id == right.id
    assert m.recall("beta", limit=2).memories[0].memory.id == wrong.id  # unnamed: "beta" is another task


def test_a_retrieval_with_feedback_was_not_renamed_under_it():
    m, wrong, right = _store()
    r = m.recall("alpha gamma", limit=2, task="deploy service")
    m.feedback(r.retrieval_id, "failure", used_memory_ids=[wrong.id])
    with pytest.raises(InvalidInputError, match="already has feedback under task 'deploy service'"):
        m.feedback(r.retrieval_id, "success", used_memory_ids=[right.id], task="rotate key")
    assert _stored_task(m, r.retrieval_id) == "deploy service"
    with m.core.store.reading() as s:
        assert len(s.retrievals.feedback_of([parse_id(r.retrieval_id, "ret")])) == 1  # nothing half-written
    fb = m.feedback(r.retrieval_id, "success", used_memory_ids=[right.id], task="deploy services")  # its own name
    assert [c.id for c in fb.changes] == [right.id]


def test_another_projects_task_names_were_listed():
    """A user-level memory proven in project A listed A's job names to project B (a review)."""
    m = Recallite.open(None, embedder="hash", config=CFG)
    shared = m.remember("alpha beta gamma delta", type="procedure", scope="user")
    r = m.recall("alpha gamma", limit=2, task="acme payroll migration", scope=["acme", "user"])
    m.feedback(r.retrieval_id, "success", used_memory_ids=[shared.id])
    assert m.recall("alpha gamma", limit=2, scope=["acme", "user"]).task_names == ["acme payroll migration"]
    assert m.recall("alpha gamma", limit=2, scope=["globex", "user"]).task_names == []
    assert m.recall("zeta omega", limit=2, task="acme payroll migration", scope=["globex", "user"]).memories == []


def test_a_listed_name_was_worded_by_another_project_or_an_unjudged_ask():
    """A review: the newest wording of a key was read from any retrieval, so acme's job was listed
    as 'NOT the ACME payroll migration!!', from one globex ask that never had feedback."""
    m = Recallite.open(None, embedder="hash", config=CFG)
    shared = m.remember("alpha beta gamma delta", type="procedure", scope="user")
    r = m.recall("alpha gamma", limit=2, task="ACME payroll migration", scope=["acme", "user"])
    m.feedback(r.retrieval_id, "success", used_memory_ids=[shared.id])
    m.recall("alpha gamma", limit=2, task="NOT the ACME payroll migration!!", scope=["globex", "user"])
    m.recall("alpha gamma", limit=2, task="acme: the payroll migration", scope=["acme", "user"])  # never judged
    assert m.recall("alpha gamma", limit=2, scope=["acme", "user"]).task_names == ["ACME payroll migration"]


def test_a_secret_in_a_task_name_was_kept_where_the_query_was_redacted():
    """A review: redaction removed a token from the logged query but kept it in the name as written,
    which export carried and results listed."""
    m, _, right = _store()
    token = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"
    r = m.recall("alpha gamma", limit=2, task=f"deploy with {token}")
    m.feedback(r.retrieval_id, "success", used_memory_ids=[right.id], task=f"deploy with {token}")
    with m.core.store.reading() as s:
        assert token not in repr(s.archive.retrievals())
    assert all(token not in n for n in m.recall("beta", limit=2).task_names)


def test_a_restored_wording_without_words_failed_every_recall(tmp_path):
    """A review: a name as written whose words are all small words ('the'), restored from an export,
    made every recall that listed its key raise; it is dropped on restore, and the key is listed."""
    dst = _restored_as("deploy service", tmp_path, label="the")
    assert dst.recall("alpha gamma", limit=2).task_names == ["deploy service"]


def test_a_context_listed_the_names_of_memories_its_budget_left_out():
    m, wrong, right = _store()
    _worked(m, "alpha gamma", wrong, "rotate key")
    _worked(m, "alpha gamma", right, "deploy service")
    both = m.build_context("alpha gamma", limit=2, max_tokens=2000)
    one = m.build_context("alpha gamma", limit=2, max_tokens=40)  # room for one of the two
    assert sorted(both.task_names) == ["deploy service", "rotate key"]
    assert one.omitted == 1 and len(one.memory_ids) == 1
    assert one.task_names == (["deploy service"] if one.memory_ids == [right.id] else ["rotate key"])


def test_a_listed_name_could_not_be_passed_back(tmp_path):
    """A key restored from an older export is kept as written ("deploy other"); passed back, it
    names another job ("deploy"), so it is not listed."""
    assert _restored_as("deploy other", tmp_path).recall("alpha gamma", limit=2).task_names == []


@pytest.mark.anyio
async def test_mcp_context_lists_task_names_and_feedback_reports_under_one():
    async with Client(build_server(Settings(db=":memory:", embedder="hash", warm_embedder=False))) as c:
        got = await call(c, "recallite_remember", content="Deploy with make release.", type="procedure")
        first = await call(c, "recallite_context", query="deploy with make", task="deploy service")
        await call(c, "recallite_feedback", outcome="success", retrieval_id=first["retrieval_id"],
                   used_memory_ids=[got["id"]])
        second = await call(c, "recallite_context", query="ship it with make release")
        assert second["task_names"] == ["deploy service"]
        text = (await c.call_tool("recallite_context", {"query": "ship it with make release"})).content[0].text
        assert "worked before as task 'deploy service'" in text
        fb = await call(c, "recallite_feedback", outcome="success", retrieval_id=second["retrieval_id"],
                        used_memory_ids=[got["id"]], task="deploy service")
        assert fb["outcome"] == "success"
        again = await call(c, "recallite_context", query="ship it with make release", task="deploy service")
        assert "task_names" not in again  # empty lists are left out of results
        plain = await call(c, "recallite_recall", query="ship it with make release")
        assert "task_names" not in plain  # a search without a name lists none (tokens; a rename of the context)
        named = await call(c, "recallite_recall", query="ship it with make release", task="ship build")
        assert named["task_names"] == ["deploy service"]
        bad = await error_text(c, "recallite_feedback", outcome="success", retrieval_id=second["retrieval_id"],
                               used_memory_ids=[got["id"]], task="other job")
        assert "already has feedback" in bad and "\n" not in bad.strip()


def test_a_name_found_what_worked_under_it_when_the_words_did_not():
    """A job worded with none of its memory's words (an outsider's phrasings: 15% never retrieved
    their working memory) got nothing, though the agent named the job that memory had done."""
    m, _, right = _store()
    assert m.recall("zeta omega", limit=2, task="deploy service").memories == []
    _worked(m, "alpha gamma", right, "deploy service")
    assert [h.memory.id for h in m.recall("zeta omega", limit=2, task="Deploy the services").memories] == [right.id]
    assert m.recall("zeta omega", limit=2).memories == []  # without the name: no evidence, nothing served
    assert m.recall("zeta omega", limit=2, task="rotate key").memories == []  # another job's name
    r = m.recall("alpha gamma", limit=2, task="deploy service")
    m.feedback(r.retrieval_id, "failure", used_memory_ids=[right.id])  # it stopped working for the job
    assert m.recall("zeta omega", limit=2, task="deploy service").memories == []


def test_a_proven_memory_of_another_scope_stays_out():
    m = Recallite.open(None, embedder="hash", config=CFG)
    right = m.remember("alpha beta gamma delta", type="procedure", scope="web")
    r = m.recall("alpha gamma", limit=2, task="deploy service", scope="web")
    m.feedback(r.retrieval_id, "success", used_memory_ids=[right.id])
    assert m.recall("zeta omega", limit=2, task="deploy service", scope="mobile").memories == []
    assert [h.memory.id for h in m.recall("zeta omega", limit=2, task="deploy service", scope="web").memories] == [right.id]


def test_a_slip_of_name_filed_a_deploy_under_release():
    """A context asked as one job with a record, reported as another: the deploy procedure then
    came into release contexts (a new user's trial). Refused; a new name may still be corrected."""
    m, wrong, right = _store()
    _worked(m, "alpha gamma", right, "deploy service")
    r = m.recall("alpha gamma", limit=2, task="deploy service")
    with pytest.raises(InvalidInputError, match="asked as task 'deploy service', a job with outcomes"):
        m.feedback(r.retrieval_id, "success", used_memory_ids=[right.id], task="cut release")
    assert _stored_task(m, r.retrieval_id) == "deploy service"
    _worked(m, "alpha gamma", wrong, "ship build")  # 'ship build' worked for a memory r served
    fb = m.feedback(r.retrieval_id, "success", used_memory_ids=[wrong.id], task="ship build")
    assert fb.task == "build ship" and _stored_task(m, r.retrieval_id) == "build ship"
    fresh = m.recall("alpha gamma", limit=2, task="new name")  # a name with no record yet
    fb = m.feedback(fresh.retrieval_id, "success", used_memory_ids=[right.id], task="deploy service")
    assert fb.task == "deploy service" and _stored_task(m, fresh.retrieval_id) == "deploy service"


def test_a_name_proven_memory_was_cut_from_its_jobs_context():
    """A new wording sharing few words with the job's proven memory put its match under the
    context's MATCH_FLOOR, behind an unjudged look-alike, and the relative cut dropped it (a new
    user's trial: 'is the branch green?' as 'run tests' served only the brand-colour fact)."""
    from recallite_core.retrieval.cutting import MATCH_FLOOR, keep_ratios

    factors = (1.0, 1.0, 1.0, 1.0, 1.0)
    look_alike, proven = (10.0, "mem_1", 1, 10.0, factors), (5.0, "mem_2", 2, 10.0 * MATCH_FLOOR / 2, factors)
    assert keep_ratios([look_alike, proven], None, {})[2] < MATCH_FLOOR  # a tuned ratio of .1 or more cut it
    assert keep_ratios([look_alike, proven], None, {}, vouched={2})[2] == 1.0  # the name vouches for it
    second = (4.0, "mem_3", 3, 10.0 * MATCH_FLOOR / 2, factors)  # proven too, for another task of the kind
    keep = keep_ratios([look_alike, proven, second], None, {}, vouched={2, 3})
    assert keep[2] == 1.0 and keep[3] < MATCH_FLOOR  # the best of them only: the others' precision cost


def _promote_store():
    m = Recallite.open(None, embedder="hash", config=CFG)
    alias = m.remember("Promote with the registry alias champion: registry promote --version N.", type="procedure")
    announce = m.remember("Announce every model change in the relevance channel and wait for an approval.",
                          type="constraint")
    return m, alias, announce


def test_a_partial_outcome_did_not_vouch_for_the_memory_that_worked():
    """A job done in part (a rule it needed was missing) said nothing for the procedure the agent
    named as what it relied on: asked again in other words under the same name, the procedure was
    not found (agent day, outsider's set: the second memory of a two-memory job missed for days)."""
    m, alias, _ = _promote_store()
    r = m.recall("promote the model with the registry alias", limit=3, task="promote model")
    m.feedback(r.retrieval_id, "partial", used_memory_ids=[alias.id])
    got = m.recall("put run 4f2a9c live", limit=3, task="promote model")
    assert alias.id in [h.memory.id for h in got.memories]
    r = m.recall("promote the model with the registry alias", limit=3, task="promote model")
    m.feedback(r.retrieval_id, "partial", score=0.2, used_memory_ids=[alias.id])  # it did not work, in part
    assert alias.id not in [h.memory.id for h in m.recall("put run 4f2a9c live", limit=3, task="promote model").memories]


def test_the_second_memory_a_job_needs_was_cut_when_a_new_wording_missed_it():
    """Both memories of a job named as used; a new wording matched one of them: the context kept
    only the best of what the name vouched for and cut the other (its match under MATCH_FLOOR)."""
    from recallite_core.learning.learner import Assessment
    from recallite_core.retrieval.cutting import MATCH_FLOOR, keep_ratios

    factors, low = (1.0, 1.0, 1.0, 1.0, 1.0), 10.0 * MATCH_FLOOR / 2
    announce, alias = (10.0, "mem_1", 1, 10.0, factors), (5.0, "mem_2", 2, low, factors)
    helped = {2: Assessment(outcomes=2, nearest=1.0, mean=0.8, helped_here=True)}
    assert keep_ratios([announce, alias], None, helped, vouched={1, 2})[2] < MATCH_FLOOR  # credited on a guess
    assert keep_ratios([announce, alias], None, helped, vouched={1, 2}, named={1, 2})[2] == 1.0  # named by the agent
    assert keep_ratios([announce, alias], None, {}, vouched={1, 2}, named={1, 2})[2] < MATCH_FLOOR  # not helped here


def test_a_known_jobs_context_kept_other_tasks_memories_on_their_match():
    """Agent day, outsider's set, tasks named: 453 of 799 memories served on days 3-5 were other
    tasks' rules, project facts and chit-chat, kept by the relative cut near a weak best (its match
    leg, or a small score) though the job's record said what it used. A known job keeps anything
    else only on a score of KNOWN_JOB_SCORE of the best."""
    from recallite_core.learning.learner import Assessment
    from recallite_core.retrieval.cutting import KNOWN_JOB_SCORE, keep_ratios

    factors = (1.0, 1.0, 1.0, 1.0, 1.0)
    used = (10.0, "mem_1", 1, 8.0, factors)
    look_alike = (10.0 * KNOWN_JOB_SCORE / 2, "mem_2", 2, 8.0, factors)  # matches as well, scores low
    close = (10.0 * KNOWN_JOB_SCORE * 1.5, "mem_3", 3, 6.0, factors)
    ranked = [used, close, look_alike]
    judged = {i: Assessment(outcomes=1, nearest=0.5, mean=0.5) for i in (1, 2, 3)}
    assert keep_ratios(ranked, None, judged)[2] == 1.0  # an unknown job: its match keeps it
    keep = keep_ratios(ranked, None, judged, vouched={1}, named={1})
    assert keep[1] == 1.0 and keep[2] == 0.0 and keep[3] >= KNOWN_JOB_SCORE
    # the exemptions: the first hit, and a named memory that is not first, however low they score
    low_first = (10.0 * KNOWN_JOB_SCORE / 4, "mem_4", 4, 8.0, factors)
    keep = keep_ratios([low_first, used, look_alike], None, judged, vouched={1, 2}, named={1, 2})
    assert keep[4] == 1.0 and keep[1] == 1.0 and keep[2] > 0.0


def test_a_known_job_cut_a_new_rule_that_matched_it_well():
    """A review: a rule stored after the job's last report (no outcome yet) that matched the job's
    words well scored under KNOWN_JOB_SCORE of the proven leader (its learned factor) and was cut
    from the job's context, though learning had never judged it."""
    m = Recallite.open(None, embedder="hash", config=CFG)
    proc = m.remember("Deploy the api service with the release script: make release.", type="procedure")
    m.remember("Rotate the database password every quarter.", type="procedure")
    for q in ("deploy the api service", "deploy api service now", "deploy the api service please"):
        r = m.build_context(q, task="deploy api", min_score_ratio=0.15, limit=10)
        m.feedback(r.retrieval_id, "success", used_memory_ids=[proc.id])
    rule = m.remember("Before you deploy the api service, announce the deploy in the api service channel.",
                      type="constraint")
    got = m.recall("deploy the api service to staging", task="deploy api", min_score_ratio=0.15, limit=10)
    assert [h.memory.id for h in got.memories] == [proc.id, rule.id]


def test_a_known_jobs_context_served_what_it_had_passed_over_on_its_match():
    """End to end, through the retriever: once the job's record names what it used, the next
    context under its name leaves out a memory it passed over (before the known-job cut, its match
    kept it beside the procedure)."""
    m = Recallite.open(None, embedder="hash", config=CFG)
    proc = m.remember("Deploy the api service with the release script: make release.", type="procedure")
    dash = m.remember("The api service dashboard for deploy lives in Grafana.", type="fact")
    first = m.build_context("deploy the api service", task="deploy api", min_score_ratio=0.05, limit=10)
    assert set(first.memory_ids) == {proc.id, dash.id}
    m.feedback(first.retrieval_id, "success", used_memory_ids=[proc.id])
    assert m.build_context("deploy the api service now", task="deploy api", min_score_ratio=0.05, limit=10).memory_ids == [proc.id]


def test_an_untried_newcomer_led_a_known_jobs_context():
    """Agent day, outsider's set, tasks named: a note stored after the job had worked under its name
    (the data team's Airflow move, never judged) matched a wordy request better than the job's
    procedure, and its exploration bonus put it first, ahead of what had worked under the name."""
    m = Recallite.open(None, embedder="hash", config=CFG)
    proc = m.remember("Deploy the api service with the release script: make release.", type="procedure")
    r = m.build_context("deploy the api service", task="deploy api", min_score_ratio=0.1, limit=10)
    m.feedback(r.retrieval_id, "success", used_memory_ids=[proc.id])
    note = m.remember("The api service team meets on Monday about the new gateway for the service.", type="fact")
    ask = "could the api service get the new gateway deployed before Monday"
    assert m.recall(ask, limit=10, explore=True).memories[0].memory.id == note.id  # an unknown job explores
    got = m.recall(ask, task="deploy api", limit=10, explore=True)
    assert [h.memory.id for h in got.memories][:2] == [proc.id, note.id]  # a known one keeps it, second
