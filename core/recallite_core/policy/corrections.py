"""Corrections: notice, when a memory is written, that it changes a value an older memory of the
same scope states ("the staging server moved to port 9090" after "... runs on port 8080").

Two steps, both offline:
1. candidates: the live memories of the scope nearest to the new memory's vector, from the
   in-memory matrix recall already scans (``nearest``), and earlier items of the same batch;
2. ``compare(old, new)``: both texts are cut into content words; the words they share are the
   subject, the words only one of them has are the values. A change is a difference in the value
   slot only: a typed value (number, version, name, identifier) replaced by another of its kind, a
   word after a relation verb ("prefers tabs" -> "prefers spaces"), a negation of the same
   statement, or any difference a change cue announces ("no longer", "replaced X with Y",
   "from X to Y"). A difference in the subject slot (staging vs production, web vs mobile, a
   permission error vs a connection reset) is a look-alike: nothing happens.

What the engine does with a finding (supersede or link as a contradiction) is decided by
``policy.correction_action`` from the finding's certainty and both sources' trust.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from recallite_core.policy import rules as policy
from recallite_core.policy.correction_words import (
    Word,
    choice,
    current,
    exclusive,
    has_cue,
    holder_voice,
    left_in,
    named_instead,
    negated,
    words,
)
from recallite_core.policy.named_changes import clauses, held_by_another, labelled, replaced, retired, succeeded
from recallite_core.policy.relations import first_relation, relation_before
from recallite_core.storage.base import Session
from recallite_core.text.kinds import other_kinds


# -- the comparison -------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Verdict:
    """What ``compare`` found: a changed value (``sure`` or not) and, in a few words, which."""

    sure: bool
    why: str


def _brief(ws: Sequence[Word]) -> str:
    return " ".join(w.text.strip(".,;:") for w in ws[:4]) or "-"


def _run(positions: list[int]) -> bool:
    """The positions follow each other: one place of the text."""
    return positions == list(range(positions[0], positions[0] + len(positions)))


def _tail(positions: list[int], n: int) -> bool:
    """The positions are the last ones of a sequence of ``n``."""
    return bool(positions) and sorted(positions) == list(range(n - len(positions), n))


def compare(old: str, new: str) -> Verdict | None:
    """Whether ``new`` states another value for what ``old`` states (None: it does not, or cannot tell).
    An old text of several statements changed in one of them while another one states a value of
    its own ("staging is Postgres 14; production is Postgres 16" -> "production was upgraded to
    Postgres 17") is only partly out of date: unsure, so both stay live and linked."""
    v = _compare(old, new)
    if v is not None and _turned_round(new, v.why):
        v = None
    found = [(part, None if x is None or _turned_round(new, x.why) else x) for part, x in _parts(old, new)]
    hits = [x for _, x in found if x is not None]
    if not hits:
        return v
    nset = {w.key for w in words(new)}
    if any(x is None and any(w.value and w.key not in nset for w in words(part)) for part, x in found):
        return Verdict(False, hits[0].why)
    return v or hits[0]


def _turned_round(new: str, why: str) -> bool:
    """The finding reads the change backwards: the new text still states the old text's value ("uses
    Python 3.11") and names the one found as new only as the value that was left ("3.10 is no longer
    supported", "moved from 8443"). The old text is then confirmed, not changed."""
    gone, _, came = why.partition(" -> ")
    return bool(came) and left_in(new, came) is True and left_in(new, gone) is False


def asks_untouched(old: str, new: str, asked: set[str]) -> bool:
    """The question (``asked``: its word keys) names something only a statement of ``old`` that
    ``new`` leaves as it is says ("Which Postgres does staging run?" of "staging is Postgres 14;
    production is Postgres 16" after "production was upgraded to Postgres 17")."""
    nset = {w.key for w in words(new)}
    return any(x is None and asked & ({w.key for w in words(part)} - nset) for part, x in _parts(old, new))


def _parts(old: str, new: str) -> list[tuple[str, Verdict | None]]:
    """Each statement of an old text of several (none for one) with what ``new`` changes in it. A
    statement answers for the new text only if it holds at least half its words: a short part
    compared with a long text finds a change in anything."""
    parts = [] if has_cue(old) else clauses(old)  # "no longer X; Y" states one change
    if len(parts) < 2:
        return []
    nset = {w.key for w in words(new)}
    return [(part, _compare(part, new) if len(nset & {w.key for w in words(part)}) * 2 >= len(nset) else None)
            for part in parts]


def _compare(old: str, new: str) -> Verdict | None:
    if not has_cue(new) and other_kinds(old, new) and first_relation(old) != first_relation(new):
        # "Zara writes code in Vim." / "Zara uses Chrome.": two relations, to tools of two kinds.
        # One relation to another kind's tool may be a migration ("Alerts go to Slack." ->
        # "Alerts go to PagerDuty."): compared as any other.
        return None
    label = labelled(old, new)  # "Error tracking: Rollbar." / "Error tracking: Sentry."
    if label is not False:
        return None if label is None else Verdict(*label)
    old, new = holder_voice(old, new)  # "is owned by Carol" against "Alice owns"
    new, replaced_value = named_instead(old, new)  # "Carol, not Alice" names the value it replaces
    if has_cue(old):
        old = current(old, new)  # "moved from 8080 to 9090" states 9090 now
    ow, nw = words(old), words(new)
    if not ow or not nw:
        return None
    for named in (replaced, retired):
        said = named(old, new, ow, nw)
        if said is not False:
            return None if said is None else Verdict(*said)
    swapped = _swapped(old, new, ow, nw)
    if swapped is not False:
        return swapped
    nw = _same_stems(ow, nw)
    if _another_of_many(old, new, ow, nw):
        return None  # the subject's other value, not a change of this one
    v = _decide(old, new, ow, nw)
    if v is None and has_cue(new) and has_cue(old) and _subject_within(ow, nw):
        # A correction of a correction ("moved to port 9090" -> "Staging now listens on 9443"): the
        # old text's own cue no longer hides the new one's, when the new text names no subject word
        # the old one lacks ("The team switched ..." / "The design team switched ..." stay apart).
        v = _decide(old, new, ow, nw, cue=True)
    if v is None:
        came = succeeded(old, new, ow)  # "Nagios got retired; monitoring is Prometheus now"
        return None if came is None else Verdict(*came)
    # What changed is worded only for a finding (most comparisons find nothing).
    if v.why:
        return v
    why = _why(ow, nw)
    return Verdict(v.sure, f"{replaced_value} -> {why.split(' -> ', 1)[1]}" if replaced_value else why)


def _swapped(old: str, new: str, ow: Sequence[Word], nw: Sequence[Word]) -> Verdict | Literal[False] | None:
    """Two choices ("prefers tabs over spaces", "likes X more than Y"): the same two options the
    other way round ("now prefers spaces over tabs") hold the same words, so only their order
    tells. With the rest said again that is a change. Two choices with any word of its own on
    either side ("in Python" / "in YAML", "for code reviews" / "for planning") are about two
    things: None, whichever their options. False: not two choices, or the rest said again with the
    same order or other options (the comparison decides)."""
    co = choice(old)
    cn = choice(new) if co else None
    if not co or not cn:
        return False
    options = co[0] | co[1] | cn[0] | cn[1]

    def rest(text: str, ws: Sequence[Word]) -> set[str]:
        said = {"day"} if "these days" in text.lower() else set()  # when, not what
        return {w.key for w in ws} - options - _CHOICE_WORDING - said
    if rest(old, ow) != rest(new, nw):
        return None
    if co[0] == cn[1] and co[1] == cn[0]:
        return Verdict(True, f"{co[2]} -> {cn[2]}")
    if co[1] == cn[1] and not co[0] & cn[0] and has_cue(new) and not has_cue(old):
        # Another option kept over the same one, announced ("prefers Slack over email" -> "now
        # prefers Teams over email"); unannounced, both may hold.
        return Verdict(True, f"{co[2]} -> {cn[2]}")
    return False


_CHOICE_WORDING = frozenset({"more"})  # "likes X more than Y" says a choice as "prefers X over Y" does


# Relations a subject holds with many values at once: a person prefers, likes and uses many things,
# a service uses many libraries. Another value of one of them adds to the old one unless the new
# text says which it replaces.
MANY_VALUED = frozenset({"prefer", "use", "depend", "enjoy", "speak", "read", "own", "maintain", "manage", "lead"})


def _another_of_many(old: str, new: str, ow: Sequence[Word], nw: Sequence[Word]) -> bool:
    """Both texts state a many-valued relation of one subject and share nothing but subject words
    ("The user prefers tabs." / "The user now prefers light mode.", "The API uses FastAPI." / "The API
    uses Pydantic."): no word says it is the same one of the subject's values, so it is another one.
    A text that names the old value ("switched from vim to emacs", "no longer prefers dark mode")
    shares it, and is compared."""
    if first_relation(old) not in MANY_VALUED or first_relation(new) not in MANY_VALUED:
        return False
    shared = {w.key for w in ow} & {w.key for w in nw}
    vo = [w for w in ow if w.key not in shared and w.value]
    vn = [w for w in nw if w.key not in shared and w.value]
    if vo and vn and all(w.digits for w in vo + vn) and {w.shape for w in vo} & {w.shape for w in vn}:
        return False  # numbers or versions of one kind: one value changed ("release/2.5" -> "release/2.4")
    shared -= HOLDERS  # "owns" is read as "is lead of": the relation, not a word of the value
    return all(w.lead for w in ow if w.key in shared) and all(w.lead for w in nw if w.key in shared)


def another_of_many(old: str, new: str) -> bool:
    """``_another_of_many`` on two texts: ranking asks it of two unlinked memories."""
    ow, nw = words(old), words(new)
    return bool(ow and nw) and _another_of_many(old, new, ow, _same_stems(ow, nw))


def _subject_within(ow: Sequence[Word], nw: Sequence[Word]) -> bool:
    """The new text's subject words (before its verb) are all among the old text's subject words."""
    subject = {w.key for w in nw if w.lead}
    return bool(subject) and subject <= {w.key for w in ow if w.lead}


def _decide(old: str, new: str, ow: tuple[Word, ...], nw: tuple[Word, ...], cue: bool | None = None) -> Verdict | None:
    """compare() on parsed words; a finding's ``why`` is left empty for compare() to word, unless
    it says something else ("negates it"). ``cue``: whether the new text announces the change
    (default: it has a change word and the old text has none)."""
    oset, nset = {w.key for w in ow}, {w.key for w in nw}
    shared = oset & nset
    if not shared:
        return None
    if cue is None:
        cue = has_cue(new) and not has_cue(old)
    flip = negated(new) != negated(old)
    diff_o = [i for i, w in enumerate(ow) if w.key not in nset]
    diff_n = [j for j, w in enumerate(nw) if w.key not in oset]
    cover = len(shared) / len(oset)  # how much of the old statement the new one repeats
    why = ""  # worded by compare()
    if not diff_o and not diff_n:
        # The same words: a restatement, unless one of them denies the other.
        return Verdict(True, "negates it") if flip else None
    # A word of its own where a text names its subject (before its verb): another subject
    # (staging vs production, Zara vs Omar). Both texts opening that way rule a change out even
    # when one is announced; without an announcement, one of them is enough.
    head_o = bool(diff_o) and diff_o[0] == 0 and ow[0].lead
    head_n = bool(diff_n) and diff_n[0] == 0 and nw[0].lead
    # Short statements share little besides their subject: the same opening word (before the
    # verb) in both counts as the same subject whatever the share.
    same_subject = ow[0].key == nw[0].key and ow[0].lead and nw[0].lead
    if head_o and head_n and not flip and held_by_another(old, new):
        return Verdict(cue, why)  # "Tariq is our DBA." -> "Amara is our DBA."
    if head_o and head_n and not flip:
        swap = _holder_swap(ow, nw, diff_o, diff_n, why)
        if swap is not None or not cue:  # announced ("Bob owns the staging database now"): sure
            return Verdict(True, why) if swap is not None and cue else swap
    # With a cue, two plain openers that qualify nothing both share are wording ("requests to the
    # ledger API are cut off" -> "the timeout for the ledger API was raised").
    worded = cue and not ow[0].value and not nw[0].value and ow[0].head not in oset & nset \
        and nw[0].head not in oset & nset
    # "The lead of the payments team is Priya" -> "Ines took over the payments team from Priya":
    # the role gives way to the one who now holds it.
    worded = worded or (cue and ow[0].key in HOLDERS and nw[0].value and not nw[0].digits)
    if cue:  # numbers and units say the value, not what it is about ("cut off after 90 seconds")
        plain = {w.key for w in ow if not w.digits}
        if len(shared & plain) >= 2:  # one shared word is no subject ("audit logs" / "audit events")
            cover = max(cover, len(shared & plain) / len(plain))
    if (head_o and head_n and not worded) or (cover < policy.CORRECTION_MIN_COVER and not same_subject):
        return None

    if cue:
        # "replaced Jenkins with GitHub Actions", "no longer PostgreSQL; it is now SQLite",
        # "from 3.9 to 3.12": the change is announced; the new text may quote the old value. It
        # must still be about the old one's subject: most of its subject words (those before its
        # verb, and plain words; not numbers) are repeated, and no plain word of the old subject
        # gives way to a plain word of another (the growth team vs the payments team).
        if not (_same_subject(old, new, ow, nw, oset, nset) or _role_named(ow, nw)) or _name_clash(ow, nw, oset, nset) \
                or _other_part(ow, nw, oset, nset):
            return None
        if _plain_clash(ow, nw, diff_o, diff_n) and (not _quoted(ow, nset) or qualifies(ow, diff_o, shared)
                                                     or qualifies(nw, diff_n, shared)):
            return None
        return Verdict(True, why) if diff_n or flip else None

    if flip:
        # The same statement with one side denying it, maybe with a word of its own.
        ok = cover >= policy.CORRECTION_NEGATION_COVER and len(diff_o) + len(diff_n) <= 1
        return Verdict(True, "negates it") if ok else None

    if not diff_o or not diff_n:
        return None  # words added or left out: more or less detail, not another value
    return _plain_change(old, new, ow, nw, diff_o, diff_n, head_o, head_n, why) \
        or _reworded(ow, nw, diff_o, diff_n, head_o, head_n, why)


_DERIVED = ("ation", "ing", "or", "ed", "er")  # "indentation" / "indents", "editing" / "editor", "compiled" / "compiler"


@functools.lru_cache(maxsize=8192)
def _stem(key: str) -> str:
    for suffix in _DERIVED:
        if key.endswith(suffix) and len(key) - len(suffix) >= 4:
            key = key[:-len(suffix)]
            break
    if len(key) > 4 and key[-1] == key[-2] and key[-1] not in "aeiouls":
        key = key[:-1]  # "running" -> "run"
    return key.removesuffix("e") if len(key) > 4 else key


def _same_stems(ow: Sequence[Word], nw: Sequence[Word]) -> tuple[Word, ...]:
    """``nw`` with a plain word of its own that derives from the same stem as a plain word only the
    old text has taking that word's key: "for editing" and "as editor" name one thing. Only
    between the two compared texts, so nothing else merges such words."""
    oset, nset = {w.key for w in ow}, {w.key for w in nw}
    stems = {_stem(w.key): w.key for w in ow if w.key not in nset and not w.value and not w.digits}
    if not stems:
        return tuple(nw)
    out = []
    for w in nw:
        k = stems.get(_stem(w.key)) if w.key not in oset and not w.value and not w.digits else None
        out.append(dataclasses.replace(w, key=k) if k else w)
    return tuple(out)


def _plain_change(old: str, new: str, ow, nw, diff_o: list[int], diff_n: list[int], head_o: bool, head_n: bool,
                  why: str) -> Verdict | None:
    """No change announced: one value for another in one place, the rest said again."""
    if len(diff_o) > policy.CORRECTION_MAX_SLOT or len(diff_n) > policy.CORRECTION_MAX_SLOT:
        return None
    vo = [ow[i] for i in diff_o if ow[i].value]
    vn = [nw[j] for j in diff_n if nw[j].value]
    po = [ow[i] for i in diff_o if not ow[i].value]
    pn = [nw[j] for j in diff_n if not nw[j].value]
    # Two places differ: the subject as well as the value (a number and its unit are one place:
    # "20 requests per second" -> "100 requests per minute").
    def one_place(ws: Sequence[Word], positions: list[int]) -> bool:
        span = ws[positions[0]: positions[-1] + 1]  # a name may hold a shared word: "AWS Secrets Manager"
        return _run(positions) or all(w.digits for w in span) or all(w.value for w in span)
    if not (one_place(ow, diff_o) and one_place(nw, diff_n)):
        return None
    tails = _tail(diff_o, len(ow)) and _tail(diff_n, len(nw))
    if any(w.digits and w.lead for w in vo + vn):
        return None  # a number before the verb names the thing ("note number 7", "build 1234 failed")
    if head_o or head_n:
        # One text opens with the value the other states after its verb ("Travis CI handles
        # deploys" after "we use Buildkite for deploys"): only typed values of one kind differ.
        typed = not po and not pn and {w.shape for w in vo} == {w.shape for w in vn} == {"name"}
        # Or one opens with a word of its own ("the timeout for the job is 60 seconds" after "the
        # job times out after 10 seconds") and only numbers differ besides: likely, not certain.
        worded = len(po) + len(pn) == 1 and vo and vn and all(w.digits for w in vo + vn)
        return Verdict(False, why) if typed or worded else None
    shapes_o, shapes_n = {w.shape for w in vo}, {w.shape for w in vn}
    if vo and vn and not (po and pn) and len(po) + len(pn) <= 1:
        # One typed value for another of its kind, the rest said again. Two kinds changing at
        # once ("Node 18 ... the SDK" vs "Node 20 ... the CLI") are a value and a subject. A
        # number changes wherever it stands; a name only in the value's place, after the verb
        # or at the end (elsewhere it names the subject: "the Pro plan" vs "the Basic plan").
        if shapes_o != shapes_n or len(shapes_o) != 1:
            return None
        digits = any(w.digits for w in vo + vn)
        if digits or tails or relation_before(old, vo[0]):
            # Maybe another relation of the subject ("Zara uses Chrome" / "Zara writes code in
            # Vim"): a conflict to resolve, not a supersede that hides a memory still true.
            # A subject word of one's own ("Production database backups are stored in ...") may
            # name another thing: unsure, so neither is hidden.
            sure = digits or not _other_relation(old, new, ow, nw, vo[0], vn[0], bool(po or pn))
            return Verdict(sure and not any(w.lead for w in po + pn), why)
        return None
    if not vo and not vn and len(po) == len(pn) == 1 and exclusive(po[0].key, pn[0].key):
        return Verdict(False, why)  # "uses a light theme" -> "uses a dark theme"
    verb = relation_before(old, ow[diff_o[0]])
    # The same plain words after the value in both ("prefers tabs for indentation" -> "prefers
    # spaces for indentation"): one occasion, said again, so the value is what changed. Not when
    # the rest holds the value ("keep application logs for 1 year" / "audit logs for 1 year") or
    # the words of their own qualify it ("the billing dashboard" / "the sales dashboard").
    rest = ow[diff_o[-1] + 1:]
    same_rest = [w.key for w in rest] == [w.key for w in nw[diff_n[-1] + 1:]] != [] \
        and not any(w.value or w.digits for w in rest) \
        and not any(w.head in {r.key for r in rest} for w in vo + vn + po + pn)
    if (tails or same_rest) and verb and verb == relation_before(new, nw[diff_n[0]]) \
            and not (verb == "prefer" and not same_rest
                     and (_occasion(old, ow[diff_o[0]]) or _occasion(new, nw[diff_n[0]]))):
        # Words at the end, right after the same relation in both ("prefers tabs" -> "prefers
        # spaces", "loves curry" -> "picks ramen"): likely a new value, but words in that place
        # also tell things apart. A preference said with its occasion ("likes standing meetings
        # before lunch", "prefers vegetarian meals at team dinners") is about that occasion, one
        # of a person's many: not a change of another one.
        return Verdict(False, why)
    return None


def _other_relation(old: str, new: str, ow: Sequence[Word], nw: Sequence[Word], vo: Word, vn: Word,
                    worded: bool) -> bool:
    """Two texts that share only their subject ("Zara") and state their values with relations of
    other kinds ("uses Chrome" / "writes code in Vim"): maybe two of the subject's things, not one
    changed; so are two whose shared words stand in other places when a plain word of their own
    names another slot. Texts that share more than the subject with nothing else of their own ("We
    use Buildkite for dependency scans" / "Dependency scans run on CircleCI") say one thing with
    other verbs."""
    shared = {w.key for w in ow} & {w.key for w in nw}
    lead_o = {w.key for w in ow if w.key in shared and w.lead}
    if lead_o != {w.key for w in nw if w.key in shared and w.lead}:
        # A shared word names the subject in one and stands after the verb in the other, and a
        # plain word of its own (``worded``) names another slot: "The billing API builds its
        # assets with Vite" / "The billing API runs its builds on Travis CI".
        return worded
    if lead_o != shared:
        return False
    ro = relation_before(old, vo) or first_relation(old)
    rn = relation_before(new, vn) or first_relation(new)
    return bool(ro and rn and ro != rn)


_OCCASION = re.compile(r"\b(?:on|at|for|before|after|during|over|with|when|while|in)\s+\S", re.IGNORECASE)


def _occasion(text: str, first: Word) -> bool:
    """Whether the value starting at ``first`` goes on with an occasion: a preposition after it."""
    m = re.search(rf"(?<![\w-]){re.escape(first.text)}(?![\w-])", text)
    return bool(m and _OCCASION.search(text, m.end()))





def _reworded(ow, nw, diff_o: list[int], diff_n: list[int], head_o: bool, head_n: bool, why: str) -> Verdict | None:
    """No change announced, the statement worded its own way ("Redis backs the analytics stack"
    after "the analytics stack stores its data in PostgreSQL", "we allow the sync job 45 seconds
    before timing out" after "requests to the sync job are cut off after 90 seconds"): a typed
    value gave way to another of its kind, the subject is said again, and the other words of
    their own are wording, not another subject (they qualify nothing both share and do not stand
    in the same part of both texts). Likely, not certain: a link, not a supersede."""
    vo = [ow[i] for i in diff_o if ow[i].value and not ow[i].unit]
    vn = [nw[j] for j in diff_n if nw[j].value and not nw[j].unit]
    if not vo or not vn:
        return None
    digits_o, digits_n = [w for w in vo if w.digits], [w for w in vn if w.digits]
    if bool(digits_o) != bool(digits_n):
        return None  # a number gave way to a name: another kind of thing
    if digits_o and {w.shape for w in digits_o} != {w.shape for w in digits_n} \
            and not (_versioned(vo) and _versioned(vn)):
        return None  # versions vs numbers (a product and its release number are one kind: "React 18",
        # "Spring Boot 2.7")
    if any(w.lead for w in vo) and any(w.lead for w in vn):
        return None  # values of their own before the verb in both name things: "the client from
        # Acme" vs "the client from Globex", "rule 3" vs "rule 4"
    if not digits_o and (len(vo) > 2 or len(vn) > 2 or any(w.shape != "name" for w in vo + vn)):
        return None
    if head_o and head_n:
        return None
    shared = {w.key for w in ow} & {w.key for w in nw}
    core = [w for w in ow if w.key in shared and not w.unit and not w.digits]
    if not any(not w.value for w in core) and len(core) < 2:
        return None  # only units, numbers or a name in common: nothing says it is the same subject
    po = [i for i in diff_o if not ow[i].value]
    pn = [j for j in diff_n if not nw[j].value]
    if len(po) > 2 or len(pn) > 2:
        return None
    if _plain_clash(ow, nw, diff_o, diff_n) or qualifies(ow, diff_o, shared) or qualifies(nw, diff_n, shared):
        return None
    if qualified(ow, nw, shared) or qualified(nw, ow, shared):
        return None
    return Verdict(False, why)


# Who holds a thing: one person at a time, so another name in that place is a change.
HOLDERS = frozenset("lead owner own on-call maintainer manager head responsible charge".split())


def _role_named(ow: Sequence[Word], nw: Sequence[Word]) -> bool:
    """"Priya Raman is the release manager for the mobile app" -> "The mobile app's release manager is
    now Daniel Okafor": the old text names the holder first and the role after its verb, the new one
    the role first (none of its words new) and a name after: the role gives way to its new holder."""
    o_lead = [w for w in ow if w.lead]
    o_role = {w.key for w in ow if not w.lead}
    n_role = {w.key for w in nw if w.lead}
    n_holder = [w for w in nw if not w.lead]
    return (bool(o_lead) and all(w.value and not w.digits for w in o_lead) and bool(HOLDERS & n_role)
            and n_role <= o_role and bool(n_holder) and all(w.value and not w.digits for w in n_holder))


def _versioned(ws) -> bool:
    """A named product with its release number: "React 18", "Spring Boot 2.7", "Python 3.12"."""
    return any(not w.digits for w in ws) and all(w.shape in ("number", "version") for w in ws if w.digits)


def _holder_swap(ow, nw, diff_o: list[int], diff_n: list[int], why: str) -> Verdict | None:
    """Two texts opening with different names that say the rest alike: two people's facts ("Zara is
    based in Berlin", "Omar is based in Berlin"), unless what they say is who holds one thing
    ("Maria owns the sales dashboard", "Tom owns the sales dashboard"): then likely a change."""
    if not (ow[0].value and nw[0].value and not ow[0].digits and not nw[0].digits):
        return None
    rest_o, rest_n = [i for i in diff_o if i != 0], [j for j in diff_n if j != 0]
    if any(ow[i].lead or ow[i].value for i in rest_o) or any(nw[j].lead and nw[j].value for j in rest_n) \
            or len(rest_o) > 1 or len(rest_n) > 1:
        return None
    keys_o, keys_n = {w.key for w in ow[1:]}, {w.key for w in nw[1:]}
    thing = (keys_o & keys_n) - HOLDERS
    holds = HOLDERS & keys_o & keys_n
    if not holds or len(thing) < 2:
        return None
    shared = keys_o & keys_n
    if rest_o and rest_n and qualifies(ow, rest_o, shared) and qualifies(nw, rest_n, shared):
        return None  # two roles: "the product manager" / "the engineering manager" of one project
    return Verdict(False, why)


def _quoted(ow, nset: set[str]) -> bool:
    """The new text repeats the old value it replaces: the old statement's typed values after its
    verb, or else its last word ("instead of three approvals", "no longer wants short emails")."""
    typed = [w for w in ow if not w.lead and w.value and not w.unit]
    if typed:
        return all(w.key in nset for w in typed)
    return not ow[-1].lead and ow[-1].key in nset


def qualified(ws, other, shared: set[str]) -> bool:
    """A shared word qualifies a plain word of its own in one text and not that word in the other:
    "the public API gateway" is not "the public API", "the worker pool" not "the worker"."""
    heads = {w.key: w.head for w in other}
    return any(w.key in shared and w.head and w.head not in shared and not nxt.value and heads.get(w.key) != w.head
               for w, nxt in zip(ws, ws[1:]))


def qualifies(ws, positions: list[int], shared: set[str]) -> bool:
    """A word of its own right before a word both share: it names which one (the staging server)."""
    return any(ws[i].head in shared and not ws[i].digits for i in positions)


def _same_subject(old: str, new: str, ow: Sequence[Word], nw: Sequence[Word], oset: set[str], nset: set[str]) -> bool:
    """An announced change is about the old statement when each text repeats most of the other's
    subject (its words before the verb, numbers aside) and the new one mentions something of the
    old one's predicate (the attribute, or the old value it replaces)."""
    lead = {w.key for w in ow if w.lead and not w.digits}
    if not lead:  # no subject before the verb ("we use X for release tagging"): its plain words are
        lead = {w.key for w in ow if not w.value}
    if lead and len(lead & nset) / len(lead) < policy.CORRECTION_SUBJECT_COVER:
        return False
    # The new text's own subject: someone or something the old one does not name at all is
    # another subject ("Aisha ... is on call for the inventory service" after "Chen is on call
    # for the database cluster").
    # Unless it repeats all the rest: then the one it names is the new value ("Aisha swapped with
    # Chen: Aisha is on call for the inventory service now").
    predicate = [w for w in ow if not w.lead]
    # What it holds, not only that someone holds something: "the lead of the data team is no
    # longer Maria" is not about "Maria is the lead of the mobile squad".
    held = {w.key for w in predicate if w.key not in HOLDERS}
    if held and not held & nset \
            and {w.key for w in predicate} & HOLDERS & nset and not any(w.digits for w in predicate):
        return False
    new_lead = {w.key for w in nw if w.lead and not w.digits}
    if new_lead and not new_lead & oset and not {w.key for w in predicate} - HOLDERS <= nset:
        return False
    if not predicate or {w.key for w in predicate} & nset:
        return True
    # Or it states the same relation with another value ("infrastructure changes need three
    # approvals" -> "we changed the rule: infrastructure changes require a lead's sign-off").
    # Only with the whole old subject said again and no word of its own before the verb: the
    # client from Globex is not the client from Acme, nor Zara's side project Zara.
    verb = relation_before(old, predicate[0])
    if verb and verb not in ("is", "be") and verb == first_relation(new) and lead <= nset \
            and not any(w.lead and w.key not in oset for w in nw):
        return True
    # The old number gave way to another ("region eu-central-1" -> "moved to us-east-1"); a name
    # does not count (a person's other facts name other things).
    gone = {w.shape for w in predicate if w.digits}
    came = [w for w in nw if w.value and w.key not in oset]
    if gone & {w.shape for w in came if w.digits}:
        return True
    # A product with its release number for another ("depends on React 17" -> "is now pinned to
    # Spring Boot 3.2").
    released_o = [w for w in predicate if w.value]
    if any(w.digits for w in released_o) and any(w.digits for w in came) \
            and _versioned(released_o) and _versioned(came):
        return True
    # A short announcement: the whole subject again (plain words, not only a name) and nothing of
    # its own but a typed value of the old one's kind ("audit events go through Pub/Sub" -> "we
    # switched audit events to Redis Streams").
    own = [w for w in nw if w.key not in oset]
    typed_o = {w.shape for w in predicate if w.value and not w.unit}
    return bool(came) and len(own) == len(came) and any(not w.value for w in ow if w.lead) \
        and typed_o == {w.shape for w in came} and lead <= nset


def _other_part(ow: Sequence[Word], nw: Sequence[Word], oset: set[str], nset: set[str]) -> bool:
    """"The web app's Storybook was bumped to 8.0" after "The web app uses React 18.2": the change
    names a part of the subject of its own (a name before its verb) and says nothing of the old
    text's value: another thing of the subject changed."""
    own_part = any(w.lead and w.value and not w.digits and w.key not in oset for w in nw)
    old_values = {w.key for w in ow if not w.lead and w.value}
    return own_part and bool(old_values) and not old_values & nset


def _name_clash(ow: Sequence[Word], nw: Sequence[Word], oset: set[str], nset: set[str]) -> bool:
    """A name of its own right before a shared plain word in both texts: "the CDN cache" vs "the
    Redis cache" name two things."""
    def qualifiers(ws: Sequence[Word], other: set[str]) -> bool:
        return any(w.value and not w.digits and w.key not in other and not nxt.value and nxt.key in other
                   and (w.lead or w.head == nxt.key) for w, nxt in zip(ws, ws[1:]))
    # After the verb only right before it in the text: "prefers Python for scripting" names no thing.
    return qualifiers(ow, nset) and qualifiers(nw, oset)


def _plain_clash(ow: Sequence[Word], nw: Sequence[Word], diff_o: list[int], diff_n: list[int]) -> bool:
    """Each text has plain words of its own in the same part (both in the subject, or both after
    the verb and not the final value words), or one qualifies a word both share (the growth team
    vs the payments team): two subjects, whatever else changed. Plain words of their own in
    different parts are wording ("requests to the checkout API are cut off" vs "the checkout API
    times out")."""
    po = [i for i in diff_o if not ow[i].value]
    pn = [j for j in diff_n if not nw[j].value]
    if not po or not pn:
        return False
    shared = {w.key for w in ow} & {w.key for w in nw}

    def value_slot(ws: Sequence[Word], positions: list[int]) -> bool:  # the end, after a verb
        return _tail(positions, len(ws)) and not any(ws[i].lead for i in positions)
    if any(ow[i].head in shared for i in po) or any(nw[j].head in shared for j in pn):
        return True
    if any(ow[i].lead for i in po) and any(nw[j].lead for j in pn):
        return True
    return any(not ow[i].lead for i in po) and any(not nw[j].lead for j in pn) \
        and not (value_slot(ow, po) and value_slot(nw, pn))


def _why(ow: Sequence[Word], nw: Sequence[Word]) -> str:
    """"old value -> new value" in a few words, for the note and the superseded reason."""
    nkeys, okeys = {x.key for x in nw}, {x.key for x in ow}
    gone = [w for w in ow if w.key not in nkeys]
    came = [w for w in nw if w.key not in okeys]
    if not gone:  # the new text quotes the old value ("replaced Jenkins with ...")
        gone = [w for w in ow if w.value][-1:] or list(ow[-1:])
    gone = [w for w in gone if w.value] or gone
    came = [w for w in came if w.value] or came
    # "the 4th floor of the Lisbon office" -> "the 6th floor": the number changed, not the place
    kinds = {w.shape for w in came}
    if not any(w.value for w in gone) and any(w.value for w in came):
        # Only plain words gone ("owns" is read as "lead of"): the new text quotes the old value
        # ("Bob took over ... from Alice", "replaced LaunchDarkly with Unleash").
        gone = [w for w in ow if w.value and w.shape in kinds and w.key in nkeys] or gone
    same = [w for w in gone if w.shape in kinds]
    if not same:  # the new value's kind is quoted, not gone ("moved to port 6543; 5432 is no longer ...")
        same = [w for w in ow if w.value and w.shape in kinds and w.key in nkeys]
    gone = same or gone
    return f"{_brief(gone)} -> {_brief(came)}"


# -- candidates and findings ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Finding:
    """A new memory changes what ``old_id`` states: ``action`` is "supersede" or "contradict"."""

    old_id: int
    action: str
    sure: bool
    why: str


@dataclass(frozen=True)
class Stored:
    """What a candidate needs for the comparison and the trust check."""

    id: int
    content: str
    source: str  # effective source type (a flagged memory counts as llm)
    type: str


LIVE = ("candidate", "validated", "active")
# Conversation turns are records of what was said, kept as said: neither compared nor retired.
COMPARED_TYPES = tuple(t for t in policy.TYPE_LAYER if t != "episode")


def nearest(retriever, session: Session, vec, scope: str, k: int, min_similarity: float) -> list[int]:
    """Ids of the live memories of ``scope`` nearest to a new memory's vector (top ``k`` at or above
    ``min_similarity``), from the in-memory matrix recall scans. A change restates most of the
    old memory, so it sits among its nearest vectors; the keyword channel would add little and
    cost a write more than the rest of detection (measured: eval corrections --speed). In a large
    store the float pass covers only the index's sign-agreement shortlist (near_rows), which holds
    a statement's close restatements at a fraction of the cost of reading the whole matrix. A
    partial sort follows, with no exact re-scoring or score statistics: recall needs those,
    candidates do not (a similarity off in the sixth digit picks the same candidates).
    The filter (scope, live, compared types) is checked on the shortlist, or on the NEAREST_POOL
    best rows of a plain scan: the whole filter mask is rebuilt after every write (each refresh
    invalidates it), which cost a write as much as a third of the pass. Only when too few of those
    pass (other scopes, retired rows near the top) is the whole matrix scanned under the whole
    mask; each way picks the same rows when the shortlist holds them."""
    import numpy as np

    from recallite_core.index import vector_index
    from recallite_core.index.vector_index import ScanFilter, dot_rows

    retriever.refresh_inline(session)
    index = retriever.index
    n = index.n
    if n == 0 or k <= 0:
        return []
    flt = ScanFilter(scopes=(scope,), statuses=LIVE, types=COMPARED_TYPES)
    q = np.ascontiguousarray(vec, dtype=np.float32)
    short = index.near_rows(q, vector_index.NEAR_SHORTLIST)
    if short is not None:
        scores = dot_rows(index.matrix[short], q)
        ok = index.passes(short, flt)  # a few hundred rows: no whole mask needed
        rows, kept = short[ok], scores[ok]
        picked = _best(kept, min(k, len(kept)))
        # Fewer than k pass and even the shortlist's farthest reach the threshold: rows outside
        # it might too, so the whole scan decides.
        if len(picked) == k or scores.min() < min_similarity:
            return [int(index.ids[rows[i]]) for i in picked.tolist() if kept[i] >= min_similarity]
    scores = dot_rows(index.matrix[:n], q)
    m = min(n, max(k, NEAREST_POOL))
    top = _best(scores, m)
    picked = top[index.passes(top, flt)][:k]
    if len(picked) < k and m < n and scores[top[-1]] >= min_similarity:
        # Rows further down may still pass and reach the threshold: the whole filtered scan.
        scores[~index.mask(flt)] = -np.inf  # cached per filter until the next refresh
        picked = _best(scores, min(k, n))
    return [int(index.ids[r]) for r in picked.tolist() if scores[r] >= min_similarity]


NEAREST_POOL = 32  # rows checked against the filter before the whole mask is built (see nearest)


def _best(scores, m: int):
    """Rows of the ``m`` highest scores, highest first (equal scores: the earlier row first)."""
    import numpy as np

    n = scores.shape[0]
    top = np.argpartition(scores, n - m)[n - m:] if m < n else np.arange(n)
    return top[np.lexsort((top, -scores[top]))]


def findings(new_text: str, new_source: str, new_type: str, candidates: list[Stored]) -> list[Finding]:
    """The candidates whose statement ``new_text`` changes, with what to do about each."""
    out = []
    for c in candidates:
        v = compare(c.content, new_text)
        if v is not None:
            action = policy.correction_action(v.sure, new_source, c.source, c.type == new_type)
            out.append(Finding(c.id, action, v.sure, v.why))
    return out


def note(new_id: str, found: list[Finding]) -> str | None:
    """The one line a write returns about what it changed (None: nothing)."""
    parts = []
    sup = [f for f in found if f.action == "supersede"]
    con = [f for f in found if f.action == "contradict"]
    if sup:
        parts.append("supersedes " + ", ".join(f"mem_{f.old_id} ({f.why})" for f in sup))
    if con:
        ids = ", ".join(f"mem_{f.old_id} ({f.why})" for f in con)
        first = f"mem_{con[0].old_id}"
        parts.append(f"conflicts with {ids}: if this replaces it, supersede {first} by {new_id}; "
                     f"if both hold, keep_both {new_id} with {first}")
    return "; ".join(parts) or None


# -- contexts -------------------------------------------------------------------------------------------------------
WAS_CHARS = 80  # the superseded text in a "was: ..." note is cut to about this many characters


def was_notes(session: Session, ids: list[str]) -> dict[str, str]:
    """For the memories among ``ids`` that superseded another one not itself among ``ids``, one
    short line naming what it replaced ("was: The staging server runs on port 8080. (mem_12)"):
    the most recent replaced memory for each."""
    nums = [int(i[4:]) for i in ids if isinstance(i, str) and i.startswith("mem_") and i[4:].isdigit()]
    if not nums:
        return {}
    shown = set(nums)
    replaced = {b: a for a, b, _ in session.relations.edges(nums, ("supersedes",)) if a in shown and b not in shown}
    olds = session.memories.load(list(replaced))
    out: dict[str, str] = {}
    # the most recently replaced first (a supersede stamps updated_at)
    for old_id, m in sorted(olds.items(), key=lambda kv: (kv[1].updated_at, kv[0]), reverse=True):
        key = f"mem_{replaced[old_id]}"
        if m.status != "superseded" or m.superseded_by != key or key in out:
            continue
        text = " ".join(m.content.split())
        if len(text) > WAS_CHARS:
            text = text[:WAS_CHARS].rsplit(" ", 1)[0] + " …"
        out[key] = f"was: {text} (mem_{old_id})"
    return out
