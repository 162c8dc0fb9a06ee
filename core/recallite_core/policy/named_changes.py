"""Changes a text names outright, compared with an older text: a replacement ("We replaced Jenkins
with GitHub Actions"), a value gone with nothing in its place ("We no longer use Jenkins", "Jenkins
was retired") or a person who left ("Maria left; the lead is now Tom"). Also where a text holds
several statements (``clauses``), so that a change of one of them is told from a change of all.

Each check answers (sure, why) for a change of the old text's value, None for no change (the two
texts are about different things), or False when the wording does not decide (compare as usual).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

from recallite_core.policy.correction_words import RELATION_VERBS, Word, has_cue, key_of, replacement, retirement, words

_WHEN = re.compile(r"\b(?:last|this|next|every)\s+(?:week|month|year|sprint|quarter|release|night|time)\b|"
                   # a month written as one (case-sensitive): not "in Marketing", "by Maria"
                   r"\b(?:in|on|by|since)\s+(?-i:(?:January|February|March|April|May|June|July|August|September|"
                   r"October|November|December|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept?|Oct|Nov|Dec))\b\.?(?:\s+\d+)?|"
                   r"\b(?:in|by)\s+(?:Q[1-4]|(?:19|20)\d\d)\b|"
                   r"\b\w+\s+ago\b|"
                   # why or since when, not what about: "because of the new time zone split", "after the merger"
                   r"\b(?:because|due\s+to|after|starting|as\s+of|since|following)\b[^;.]*", re.IGNORECASE)
_HOLDING = frozenset({"ownership", "owner", "maintainer"})  # "Ownership of X moved from Priya to Maria": X's holder
_VERBS = frozenset(key_of(v) for v in RELATION_VERBS)  # how the old text states its value, not what about
_GROUPS = frozenset({"team", "company", "org", "organisation", "organization", "engineering", "everyone"})
# Words that make a person's statement a role someone holds: gone when the person leaves.
_ROLES = frozenset(key_of(w) for w in (
    "lead", "owner", "own", "owns", "on-call", "maintainer", "maintains", "manager", "manages", "head",
    "heads", "responsible", "charge", "contact", "ask", "ping", "approve", "approves", "approver",
    "reviewer", "reviews", "point", "go-to", "handles", "runs"))


def _own_words(old: str, rest: str) -> set[str]:
    """Words of the new text's own besides the change; one the old text says in another form
    ("rate limited" / "the rate limit") or when it happened ("last sprint") is none."""
    said = {key_of(t) for t in re.findall(r"[\w'’-]+", old)}  # verbs too: "rate limited"
    return {k for k in {w.key for w in words(_WHEN.sub(" ", rest))} - said - _HOLDING
            if not (len(k) >= 5 and any(len(o) >= 5 and (k.startswith(o) or o.startswith(k)) for o in said))}


def _old_own(ow: Sequence[Word], nw: Sequence[Word], gone: set[str], own_n: set[str]) -> set[str]:
    """Words of the old text's own. A team may come back as "we" (no subject of the new text's
    own); any other word of the old text's own is another subject or use."""
    we = not any(w.lead and w.key in own_n for w in nw)
    return {w.key for w in ow} - {w.key for w in nw} - gone - _VERBS - (_GROUPS if we else frozenset())


def replaced(old: str, new: str, ow: Sequence[Word], nw: Sequence[Word]) -> tuple[bool, str] | Literal[False] | None:
    """The new text names the value it replaces ("replaced espresso with green tea"). When the old
    text states it, a change of it: sure unless the new text adds words the old one lacks (the
    change may hold "for deploys" only); None when both have words of their own, two subjects ("The
    web team moved from Jira to Linear" after "The mobile team uses Jira") or two uses ("Nightly
    tests switched from Travis CI to CircleCI" after "We use Travis CI for release tagging"). When
    the old text does not state it, None: another value changed, and so when it states the new
    value but not the replaced one. False (compare as usual): no replacement is named, or the old
    text states both values (a change told back, or told again)."""
    said = replacement(new)
    if said is None:
        return False
    gone, came, rest = said
    oset = {w.key for w in ow}
    gk, ck = {w.key for w in words(gone)}, {w.key for w in words(came)}
    if not gk or not ck:
        return False
    if ck <= oset:
        # The old text states the new value already: the same change told again, or a change
        # told back (both values in it, compared as usual); without the old value, a change of
        # something else ("swapped CockroachDB for MongoDB in Omar's project" after "Zara's
        # project stores its data in MongoDB").
        return False if gk <= oset else None
    if not gk <= oset:
        # It names what it replaces, and that is not what the old text states; a number may be
        # the old one written another way ("30s" / "30 seconds"): compared as usual.
        return False if gk & oset or any(c.isdigit() for c in gone) else None
    own_n = _own_words(old, rest)
    if _old_own(ow, nw, gk, own_n) and own_n:
        return None
    return not own_n, f"{gone} -> {came}"


def retired(old: str, new: str, ow: Sequence[Word], nw: Sequence[Word]) -> tuple[bool, str] | Literal[False] | None:
    """The new text says a value the old one states is gone with nothing in its place ("We no
    longer use Jenkins" after "CI runs on Jenkins", "Maria left the company" after "Maria is the
    tech lead"): sure unless the old text states another value besides ("uses requests and httpx":
    unsure). A person who left ends only a role they held ("is the lead", "ask Maria"): anything
    else said of them still holds. None when the old text does not state the value, or holds no
    role of the person; False (compare as usual): nothing is retired, or the new text says more
    ("upgraded to Python 3.12; do not use 3.9 anymore")."""
    said = retirement(new)
    if said is None:
        return False
    gone, rest, person = said
    oset = {w.key for w in ow}
    gws = words(gone)
    core = {w.key for w in gws if w.value} or {w.key for w in gws}  # "the old VPN": the VPN
    if not core or not core <= oset or (person and not oset & _ROLES):
        return None
    if _own_words(old, rest):
        return False
    others = {w.key for w in ow if w.value and not w.lead} - {w.key for w in gws} - {w.key for w in nw}
    return person or not others, f"no longer {gone}"


_PREPOSITION_FIRST = re.compile(r"(?:by|for|in|at|on|from|with)\b", re.IGNORECASE)


def succeeded(old: str, new: str, ow: Sequence[Word]) -> tuple[bool, str] | None:
    """"Nagios got retired; monitoring is Prometheus and Grafana now" after "We monitor everything
    with Nagios": a value the old text states is gone, and the new text names only what came
    instead (names after a verb): a change, unsure (they may take over a part of its job). For
    what the usual comparison leaves undecided; None when it is not that."""
    said = retirement(new)
    if said is None or said[2]:
        return None
    gone, rest, _ = said
    if _PREPOSITION_FIRST.match(gone):
        return None  # "PostgreSQL is no longer used by the billing API": the API retired nothing
    oset = {w.key for w in ow}
    core = {w.key for w in words(gone) if w.value} or {w.key for w in words(gone)}
    own = _own_words(old, rest)
    came = [w for w in words(rest) if w.key in own]
    # Names after a verb: one before it is a subject ("Kenji no longer uses Zed; Kenji is on IntelliJ").
    if not core or not core <= oset or not came or not all(w.value and not w.lead for w in came):
        return None
    return False, f"{gone} -> {', '.join(w.text for w in came)}"


# "<Name> is the/our/<team>'s <role>": one holder of a role said with a definite article.
_HELD = re.compile(r"^\s*(?P<who>[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)?)\s+(?:is|are)\s+(?:now\s+)?"
                   r"(?P<role>(?:the|our|their|\w+'s)\s+[^.;!?]+?)(?:\s+now)?\s*[.!]?\s*$")


def held_by_another(old: str, new: str) -> bool:
    """"Tariq is our DBA." / "Amara is our DBA.": the same role with "the", "our" or a team's, said
    of two people: one holds it now ("a backend engineer" may be many; "our friend" is no role)."""
    mo, mn = _HELD.match(old), _HELD.match(new)
    return bool(mo and mn and mo["who"].lower() != mn["who"].lower()
                and " ".join(mo["role"].lower().split()) == " ".join(mn["role"].lower().split())
                and {w.key for w in words(mo["role"])} & _ROLE_NOUNS)


# Nouns of roles one person holds at a time.
_ROLE_NOUNS = frozenset(key_of(w) for w in (
    "lead", "owner", "manager", "maintainer", "dba", "admin", "administrator", "captain", "champion", "contact",
    "mentor", "approver", "reviewer", "coordinator", "host", "chair", "sponsor", "head", "director", "on-call",
    "steward", "liaison", "master", "officer", "architect", "buddy", "point"))


# A note that names what it is about before a colon: "Error tracking: Sentry.", "CI: Jenkins".
_LABEL_WORDS = 5
_LABEL_VALUE_WORDS = 6
_OPENERS = frozenset({"we", "i", "you", "they", "he", "she", "it", "our", "my", "note", "update", "fyi"})
# Headings under which notes are items of a list, not one value.
_LISTS = frozenset({"todo", "to-do", "reminder", "action", "item", "issue", "blocker", "question", "agenda", "goal",
                    "value", "idea", "tip", "lesson", "learned", "warning", "caveat", "gotcha", "risk", "decision",
                    "fix", "bug", "done", "next", "lunch", "step", "task", "example", "rule"})
_LABEL = re.compile(r"^\s*([^:;.!?]{2,60}?)\s*:\s+(\S.*?)\s*[.!]?\s*$")


def _is_label(text: str) -> bool:
    """A few words that name a thing, not a sentence leading up to a colon ("We changed the rule:")
    nor a heading of a list ("TODO:", "Known issue:", "Action item:")."""
    tokens = text.split()
    return len(tokens) <= _LABEL_WORDS and not has_cue(text) \
        and not any(t.lower() in RELATION_VERBS or t.lower() in _OPENERS for t in tokens) \
        and not {w.key for w in words(text)} & _LISTS


def _names(text: str) -> bool:
    """Whether a value names something: a capitalised word or a number (after a colon a capital
    is no sentence's start)."""
    return any(t[:1].isupper() or any(c.isdigit() for c in t) for t in text.split())


def labelled(old: str, new: str) -> tuple[bool, str] | Literal[False] | None:
    """Two notes under one label ("Infra repo: Terraform 1.3." / "Infra repo: Terraform 1.6."):
    another value under it is a change, unsure (a label may hold a list); under two labels, two
    things (None). False: not two labelled notes, or the labels differ only in wording (compare
    as usual)."""
    mo, mn = _LABEL.match(old), _LABEL.match(new)
    if not (mo and mn) or not (_is_label(mo.group(1)) and _is_label(mn.group(1))):
        return False
    lo, ln = {w.key for w in words(mo.group(1))}, {w.key for w in words(mn.group(1))}
    if not lo or not ln:
        return False
    if lo != ln:
        # "Frontend on-call: Magnus" / "Backend on-call: Nkechi": a word of each label's own.
        return None if (lo - ln) and (ln - lo) else False
    if max(len(mo.group(2).split()), len(mn.group(2).split())) > _LABEL_VALUE_WORDS:
        return False  # a sentence after a colon ("Learned: ...") is no value under a label
    vo, vn = {w.key for w in words(mo.group(2))}, {w.key for w in words(mn.group(2))}
    if not vo or not vn or vo == vn or has_cue(mo.group(2)) or has_cue(mn.group(2)) \
            or not (_names(mo.group(2)) and _names(mn.group(2))):
        return False  # a value under a label names something (a tool, a person, a number)
    return False, f"{mo.group(2).strip()} -> {mn.group(2).strip()}"


_SPLIT = re.compile(r"\s*;\s*|(?<=[.!?])\s+(?=[A-Z])|,?\s+(?:and|while|whereas|but)\s+(?=\w)")
_CLAUSE_WORDS = 3  # a shorter part is a list item of the part before ("requests and httpx")


def clauses(text: str) -> list[str]:
    """The statements a text holds ("The staging database is Postgres 14; production is Postgres
    16" holds two); a text holding one gives a list of one."""
    spans, pos = [], 0
    for m in _SPLIT.finditer(text):
        spans.append((pos, m.start()))
        pos = m.end()
    spans.append((pos, len(text)))
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        if merged and len(text[start:end].split()) < _CLAUSE_WORDS:
            merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    if len(merged) > 1 and len(text[merged[0][0]:merged[0][1]].split()) < _CLAUSE_WORDS:
        merged[:2] = [(merged[0][0], merged[1][1])]
    return [text[s:e].strip() for s, e in merged if text[s:e].strip()]
