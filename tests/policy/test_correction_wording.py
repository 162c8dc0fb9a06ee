"""Corrections (issue 20), session 7: updates worded with another verb of one kind, look-alikes
ranked under their twin, and one person's many preferences. Sentences written for these tests,
not taken from the evaluation set."""

import pytest

from recallite_core.policy.correction_ranking import named_first
from recallite_core.policy.corrections import compare, words

AGENT = {"type": "agent"}


def asked(question: str) -> set[str]:
    return {w.key for w in words(question)}


# -- detection ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("old, new, sure", [
    # another verb of one kind, with a word of the value's own said again
    ("Kenji loves pho for lunch.", "Kenji usually picks udon for lunch.", False),
    # "as editor" and "for editing" name one thing
    ("Ines uses Sublime Text as editor.", "Ines prefers Helix for editing.", True),
    # the word after a modal is a verb: what follows it is the value
    ("The rate limit on trial accounts is 200 requests per minute.",
     "Trial accounts may send at most 400 requests per minute.", False),
])
def test_an_update_worded_with_another_verb_was_left_unlinked(old, new, sure):
    v = compare(old, new)
    assert v is not None and v.sure is sure


def test_an_announced_rule_change_with_another_verb_was_left_unlinked():
    """'need' then 'require': the change is announced and the subject said again, but neither the
    attribute nor the old value is repeated."""
    v = compare("Database migrations need two reviews.",
                "We changed the rule: database migrations require a DBA's sign-off.")
    assert v is not None and v.sure


@pytest.mark.parametrize("old, new", [
    # one person's two preferences, each with its occasion: both hold
    ("Ines prefers green tea.", "Ines likes quiet mornings before standup."),
    ("Kenji loves hiking on weekends.", "Kenji prefers phone calls for urgent issues."),
    ("Rafael likes aisle seats on short flights.", "Rafael prefers spicy food at team lunches."),
    # another client named before the verb, whatever the cue and the verb say
    ("The client from Initech loves pizza.", "The client from Hooli's favourite food is no longer pasta; it is sushi now."),
])
def test_one_persons_two_preferences_with_two_verbs_were_linked(old, new):
    assert compare(old, new) is None


# -- ranking --------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("a, b, question, side", [
    ("No canary deploys on Fridays.", "Blue-green deploys are not allowed on Fridays.",
     "When are canary deploys not allowed?", -1),
    ("The frontend repo uses merge commits.", "The data repo uses squash commits.",
     "Which commits does the data repo use?", 1),
    ("Noor prefers dark mode.", "Lucas wants updates as short videos.", "How does Noor want updates?", -1),
    # the question names neither subject, or both: it cannot tell them apart
    ("The frontend repo uses merge commits.", "The data repo uses squash commits.", "Which commits do we use?", 0),
    ("The frontend repo uses merge commits.", "The data repo uses squash commits.",
     "Do the frontend and data repos differ?", 0),
    # a near miss that shares a word of the question is no twin of the memory that answers it
    ("Paracetamol upsets her stomach unless she eats first.", "Sleep apps make the user anxious.",
     "Which app upsets the user?", 0),
])
def test_named_first_reads_the_subject_the_question_names(a, b, question, side):
    assert named_first(a, b, asked(question)) == side


def test_a_look_alike_ranked_under_its_twin_for_its_own_question(mem):
    """What broke: 'When are canary deploys not allowed?' ranked 'Blue-green deploys are not
    allowed on Fridays' first: it shares more of the question's words than its twin does."""
    a = mem.remember("No canary deploys on Fridays.", type="fact", scope="s", source=AGENT)
    b = mem.remember("Blue-green deploys are not allowed on Fridays.", type="fact", scope="s", source=AGENT)
    assert not mem.relations(a.id) and mem.get(a.id).status == mem.get(b.id).status
    assert mem.recall("When are canary deploys not allowed?", scope="s").ids[0] == a.id
    assert mem.recall("When are blue-green deploys not allowed?", scope="s").ids[0] == b.id


def test_a_named_look_alike_does_not_lift_a_stale_value_above_its_replacement(mem):
    """The newer-first caps come after the lift: the question names Maria, which both of Maria's
    memories carry, and the older of the two never ends up above the newer one. (Before session
    24 this used "Omar prefers PDF reports." / "Omar reads Notion pages.": two values of relations a
    person holds with many, which the question's own evidence now orders.)"""
    old = mem.remember("Maria works from the Toronto office.", type="fact", scope="s", source=AGENT)
    new = mem.remember("Maria sits in Austin these days.", type="fact", scope="s", source=AGENT)
    twin = mem.remember("Zara works from the Toronto office.", type="fact", scope="s", source=AGENT)
    ids = mem.recall("Where does Maria work from?", scope="s").ids
    assert ids.index(new.id) < ids.index(old.id) < ids.index(twin.id)
