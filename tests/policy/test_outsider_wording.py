"""Corrections (issue 20), session 29: wordings of a set written by people who had not read the
detection (`eval corrections --split outsider-dev`) that it missed or mistook. Sentences written
for these tests in the same forms, not taken from that set."""

import pytest

from recallite_core.policy.correction_ranking import named_first
from recallite_core.policy.corrections import compare, words
from recallite_core.policy.name_ranking import name_fits, proper_names

AGENT = {"type": "agent"}


def asked(question: str) -> set[str]:
    return {w.key for w in words(question)}


# -- updates the comparison left unlinked --------------------------------------------------------------------------
@pytest.mark.parametrize("old, new, why", [
    # a note under a label
    ("Crash reports: Bugsnag.", "Crash reports: Sentry.", "Bugsnag -> Sentry"),
    ("Payments repo: Django 4.2.", "Payments repo: Django 5.0.", "Django 4.2 -> Django 5.0"),
    # one plain word for another of a set that holds one at a time
    ("Amadou uses a dark theme.", "Amadou uses a light theme.", "dark -> light"),
    ("Backups are taken weekly.", "Backups are taken daily.", "weekly -> daily"),
    # what came instead of a retired tool, named only
    ("We alert through Opsgenie.", "Opsgenie got retired; alerting is PagerDuty and Grafana now.",
     "Opsgenie -> PagerDuty, Grafana"),
])
def test_an_outsiders_plain_update_was_left_unlinked(old, new, why):
    v = compare(old, new)
    assert v is not None and not v.sure and v.why == why


@pytest.mark.parametrize("old, new", [
    # a date after the change is when, not what about
    ("The design team talks on Discord.", "The design team switched from Discord to Slack in March."),
    # "Go" written as a name, not the verb
    ("Lena prefers Ruby for scripting.", "Lena switched to Go for her scripting work."),
    # "has moved to" a place, with more said after it
    ("Tomasz is based in Warsaw.", "Tomasz has moved to Gdansk and works remotely from there."),
    # "compiled" / "compiler", and why it changed ("now that ...")
    ("The admin app is compiled with TypeScript 5.0.",
     "TypeScript 5.4 is the compiler the admin app uses now that the upgrade PR landed."),
])
def test_an_outsiders_announced_update_was_left_unlinked(old, new):
    v = compare(old, new)
    assert v is not None and v.sure


@pytest.mark.parametrize("old, new", [
    # no verb the parser knows: a number after "after" is the value, not a name of the subject
    ("API keys expire after 90 days of disuse.", "API keys expire after 30 days of disuse."),
    # a name that holds a word both say ("AWS Secrets Manager")
    ("Build secrets are stored in AWS Secrets Manager.", "Build secrets are stored in Doppler."),
    # short forms ("prod", "Node.js") and when ("over the weekend") are not words of their own
    ("Production Redis is version 6.", "Prod Redis was upgraded to 7 over the weekend."),
    ("Our workers run on Node.js 16.", "Bumped all workers to Node 22."),
])
def test_a_second_outsiders_update_was_left_unlinked(old, new):
    assert compare(old, new) is not None


@pytest.mark.parametrize("old, new, why, sure", [
    # one holder of a role said with "our" / "the" (unannounced: unsure)
    ("Halvard is our release captain.", "Marisol is our release captain.", "Halvard -> Marisol", False),
    # a tool that is out, or killed, and what came instead
    ("Our API docs use Redoc.", "Redoc is out; the API docs use Scalar now.", "Redoc -> Scalar", True),
    ("We render API docs with Redoc.", "Killed Redoc; API docs are Scalar now.", "Redoc -> Scalar", False),
])
def test_a_second_outsiders_change_of_holder_or_tool_was_left_unlinked(old, new, why, sure):
    v = compare(old, new)
    assert v is not None and v.sure is sure and v.why == why


# -- look-alikes the same forms must not link -----------------------------------------------------------------------
@pytest.mark.parametrize("old, new", [
    ("Frontend on-call: Bogdan.", "Backend on-call: Yusuf."),  # two labels
    ("We changed the rule: hotfixes require two approvals.",  # a sentence before a colon is no label
     "We changed the rule: schema changes require a DBA's sign-off."),
    ("Tomasz is based in Warsaw.", "Tomasz moved to the platform team."),  # a team is no place
    ("Ilse is the product manager for the billing project.",  # two roles of one project
     "Noor is the engineering manager for the billing project."),
    ("Lena prefers Ruby for scripting.", "Lena prefers Rust for systems work."),
    ("Halvard is a backend engineer.", "Marisol is a backend engineer."),  # "a": one of many
    ("The incident on 2 May was caused by an expired certificate.",  # dates name two incidents
     "The incident on 9 May was caused by a full disk."),
    # a change of a part of the subject of its own, saying nothing of the old value
    ("The mobile app uses Expo 50.", "The mobile app's Sentry SDK was bumped to 7.2 yesterday."),
    # passive "used by": the API retired nothing
    ("The search API is traced with Jaeger.", "MySQL is no longer used by the search API."),
    # the name after the retired one is the subject of what follows, not what came instead
    ("Ngozi uses Zed as editor.", "Tomas no longer uses Zed; Tomas is on IntelliJ now."),
])
def test_look_alikes_in_the_outsiders_forms_stay_apart(old, new):
    assert compare(old, new) is None


def test_a_subject_word_of_its_own_made_a_plain_update_sure():
    """"Production database backups" may be another thing than "the production database": linked
    at most as unsure, so neither is hidden."""
    v = compare("The production database lives in us-east-1.", "Production database backups are stored in us-west-2.")
    assert v is None or not v.sure


# -- ranking --------------------------------------------------------------------------------------------------------
def test_a_question_about_zara_put_the_users_drink_above_hers():
    """Both share a word of the question ("drink" of the user's, "Zara" of hers): the name decides."""
    a, b = "The user drinks green tea every morning.", "Zara traded green tea for cold brew."
    q = "What does Zara drink in the morning?"
    assert proper_names(q) == {"zara"}
    assert named_first(a, b, asked(q), proper_names(q)) == 1
    assert named_first(a, b, asked("What does the user drink in the morning?"),
                       proper_names("What does the user drink in the morning?")) == -1


def _fits(loaded, ids, question):
    return name_fits(loaded, ids, question, proper_names(question))


class _Memory:
    def __init__(self, content, episode=None):
        self.content, self.episode = content, episode


def test_the_name_a_question_asks_about_is_read_from_each_memory():
    loaded = {1: _Memory("Kenji drinks filter coffee every morning."), 2: _Memory("Omar replaced espresso with oat latte."),
              3: _Memory("The user drinks tea."), 4: _Memory("Kenji: I drink tea.", episode=object())}
    fits = _fits(loaded, [1, 2, 3, 4], "What does Omar drink in the morning?")
    assert fits == {1: False, 2: True, 3: None, 4: None}  # another person's; his; the user's; a turn
    assert _fits(loaded, [1, 2, 3], "Who drinks coffee now that Omar left?") == {}  # the answer is another name
    assert _fits(loaded, [1, 3], "What does Omar drink?") == {}  # nothing names him: nothing to tell apart


@pytest.mark.parametrize("pair_id", ["l-replace-10", "l-replace-21"])
def test_another_persons_memory_outranked_the_one_a_question_names(pair_id):
    """Two held-out look-alikes of our set, in their scope of twelve pairs with the default
    embedder: "Which editor does Priya use?" found "Omar does all editing in Emacs." first, and
    "What does Omar drink in the morning?" two other people's coffee."""
    from recallite_core import Recallite
    from recallite_mcp.benchmarks.corrections import buckets, pairs_of

    scope, members = next((s, ms) for s, ms in buckets(pairs_of("lookalikes", "holdout"), "l").items()
                          if any(p["id"] == pair_id for p in ms))
    mem = Recallite.open(None)
    try:
        firsts = [mem.remember(p["first"], type="fact", scope=scope, source=AGENT) for p in members]
        seconds = [mem.remember(p["second"], type="fact", scope=scope, source=AGENT) for p in members]
        at = next(i for i, p in enumerate(members) if p["id"] == pair_id)
        pair = members[at]
        a, b = firsts[at].id, seconds[at].id
        for question, want, twin in [(q, a, b) for q in pair["first_questions"]] + \
                                    [(q, b, a) for q in pair["second_questions"]]:
            ids = mem.recall(question, scope=scope, limit=5).ids
            assert want in ids and (twin not in ids or ids.index(want) < ids.index(twin)), question
    finally:
        mem.close()


# -- what a review of the session-29 rules found (each linked two things, or missed a change) ---------------------
@pytest.mark.parametrize("old, new", [
    ("We use Jira for tickets.", "Jira was replaced with Linear in Marketing."),  # a team, not a month
    ("TODO: fix the login bug.", "TODO: update the docs."),  # a heading of a list
    ("Known issue: login is slow.", "Known issue: search times out."),
    ("Tariq is our friend.", "Amara is our friend."),  # "our" without a role
    ("Tariq is the best engineer.", "Amara is the best engineer."),
])
def test_a_month_pattern_a_list_heading_or_a_friend_linked_two_facts(old, new):
    assert compare(old, new) is None


def test_a_reason_clause_opening_the_text_swallowed_the_change():
    v = compare("The team lead is Maria.", "Now that Maria left, the team lead is Omar.")
    assert v is not None and v.why == "Maria -> Omar"


def test_a_capitalised_noun_opening_a_memory_was_read_as_another_persons_name():
    loaded = {1: _Memory("Deploys happen on Fridays."), 2: _Memory("Coffee machine on floor 3 is broken."),
              3: _Memory("Sessions expire after 30 minutes."), 4: _Memory("Omar drinks oat latte.")}
    assert _fits(loaded, [1, 2, 3, 4], "What does Omar drink in the morning?") == {}
    assert proper_names("How does the API handle Auth?") == {"auth"}  # an acronym is no one's name
