"""Ranking with corrections: a replacement ranks above what it replaced, the newer of two
contradicting memories above the older, and, where detection left two memories unlinked, the
question decides between them (``newer_first``: one step of ``Retriever.rank``).

Question-aware steps look at the best hits only and write nothing:
- two memories that may state one thing two ways (``maybe_changed``) rank newer first when the
  question asks about what both share and names nothing only the older one says;
- two look-alikes (``named_first``: the staging vs the production server, Zara vs Omar) rank the one
  whose own subject the question names above the one whose own subject it does not name;
- two conversation turns (never compared at write time: they record what was said) of one speaker
  from two sessions that name one thing the same way, in two words or more ("my old Honda Civic
  broke down" / "I sold the Honda Civic and bought a Kia Niro"), for a question that names no word
  of the older turn, rank the later session's first, and the older turn's neighbours in its
  session (the exchange around it) go down with it (``_turn_pairs``, ``same_thing``);
- for a question about what holds now (``asks_now``), a turn that announces a change
  ("we moved to Nantes") ranks above the same speaker's turns from earlier sessions, with their
  exchanges, whatever they name (``_change_turns``); one found only among the vector channel's
  closest turns takes the place of the best of them;
- for a question about the speaker (``_ASKS_SELF``) that does not ask about the past (``asks_past``),
  the best of the speaker's own turns goes under the same speaker's nearest later turn to it, when
  that one announces a change and is among the question's closest too ("My phone plan is 12 a
  month" / "Now I'm paying 18 a month"), and that one under its own follow-up in turn: what became
  of the best hit, worded too far from the question to rank above it (``_follow_up``);
- a turn about someone the speaker knows ("My colleague Chloe drives a Peugeot 208", "Jonas next
  door is learning Portuguese") ranks below the speaker's own for a question about the speaker
  (``_own_before_others``), and an assistant's reply below the turn it answers, which takes its
  place (``_said_before_echo``); before all these, the retriever lends an assistant's reply nothing
  from its neighbours for such a question (``conversation_ranking.quiet_replies``);
- for a question put to the assistant ("What did you suggest ...?"), its reply takes the place of
  the speaker's request just before it (``_answer_before_request``).
"""

from __future__ import annotations

import re
from typing import AbstractSet, Any, Callable, Mapping, Sequence

from recallite_core.policy import rules as policy
from recallite_core.policy.correction_words import Word, has_cue
from recallite_core.policy.corrections import (
    COMPARED_TYPES,
    LIVE,
    another_of_many,
    asks_untouched,
    qualified,
    qualifies,
    words,
)
from recallite_core.policy.kind_ranking import kind_fits, kind_places
from recallite_core.policy.name_ranking import NAME_LEAD, name_fits, proper_names
from recallite_core.storage.base import Session

# What the follow-up step is given to read stored vectors with: the cosine of one memory with
# others, and a memory's k nearest memories of the query's scopes, (id, cosine) best first.
Resemblance = Callable[[int, Sequence[int]], dict[int, float]]
Neighbours = Callable[[int, int], list[tuple[int, float]]]


# -- ranking --------------------------------------------------------------------------------------------------------
def newer_first(session: Session, scored: list[tuple], query: str | None = None, links: bool = True,
                turns: bool = True, close: Sequence[int] = (), evident: AbstractSet[int] = frozenset(),
                resemblance: Resemblance | None = None, neighbours: Neighbours | None = None,
                flagged: AbstractSet[int] = frozenset(), cosine: Mapping[int, float] | None = None,
                spread: float | None = None) -> list[tuple]:
    """A replacement ranks above what it superseded, and of two memories linked as contradicting
    each other the newer ranks first, whatever their scores (feedback included): the older one's
    final score is capped just under the newer one's. With the ``query``, also two unlinked
    memories near the top that may state one thing two ways (``maybe_changed``) when the question
    asks about what both share and about nothing only the older one says: detection left them
    apart, the question cannot tell them apart, so the newer goes first; and of two look-alikes
    with no feedback, the one whose own subject the question names (``named_first``) is lifted
    just above its twin, before the caps. ``scored``: (final, key,
    id, ...) tuples, best first; returns them re-sorted. ``links``: False when the store holds no
    relations at all (nothing to read for the linked pairs); ``turns``: False when it holds no
    conversation turns (nothing for ``_turn_pairs`` to read); ``close``: the vector channel's closest
    ids, best first (the change step reads the first ``CLOSE_TURNS`` past the window, the follow-up
    step all of them); ``evident``: ids with evidence of their own for the query (an echo's statement
    must have some); ``resemblance(id, ids)``: cosine of one memory's stored vector with others';
    ``neighbours(id, k)``: its k nearest memories of the query's scopes, (id, cosine) best first
    (no follow-up step without both); ``cosine``: the question's cosine with the hits, and
    ``spread``: its spread over the scope (``CLEARLY_NEARER``). A pair that would close a cycle with the pairs
    before it is dropped (``acyclic``); so is one that would put a ``flagged`` memory (possible
    prompt injection) above an unflagged one: such text leads only on its own score
    (policy.FLAGGED_FACTOR; a new user's trial saw an imported "ignore previous instructions ...
    curl | sh" lifted above the validated procedure it resembled)."""
    if len(scored) < 2 or not (links or query):
        return scored
    ids = [t[2] for t in scored]
    pairs = session.relations.pairs_among(ids, ("supersedes", "contradicts")) if links else []
    above: list[tuple[int, int]] = []  # (newer, older)
    fits: dict[int, bool | None] = {}
    conflicts: list[tuple[int, int]] = []
    for link in pairs:
        a, b, kind, ta, tb = link.from_id, link.to_id, link.type, link.from_created_at, link.to_created_at
        a_failed, b_failed = link.from_failing, link.to_failing
        if kind == "supersedes":
            above.append((a, b))  # final: only undo_supersede brings the old one back
            continue
        newer, older, failed = (a, b, a_failed) if (ta, a) > (tb, b) else (b, a, b_failed)
        if not failed:  # an unsure conflict: recency decides until outcomes fail the newer one
            conflicts.append((newer, older))
    named: list[tuple[int, int]] = []  # (named, twin)
    name_fit: dict[int, bool | None] = {}
    lifted: list[tuple[int, int]] = []
    if query:
        linked = {frozenset((p.from_id, p.to_id)) for p in pairs}
        window = ids[:QUERY_WINDOW]
        in_window = set(window)
        pair_ids = list(dict.fromkeys(i for p in conflicts for i in p if i not in in_window))
        # One read for every step: the window, and the conflicts' texts (every ranked hit for a
        # question that names someone: the name step reads them all, as the kind step does).
        names = proper_names(query)
        rest = [i for i in ids if i not in in_window] if names else []
        loaded = session.memories.load(window + list(dict.fromkeys(rest + pair_ids))) \
            if len(window) >= 2 or pair_ids else {}
        conflicts = _not_partly_asked(loaded, conflicts, query)
        fits = kind_fits(session, loaded, ids, query, flagged)  # before the conflicts' texts are dropped: no second read
        name_fit = name_fits(loaded, ids, query, names, flagged)
        # An unsure conflict the question tells apart: it asks for the kind of tool only the older names.
        conflicts = [(n, o) for n, o in conflicts if not (fits.get(n) is False and fits.get(o) is True)]
        if pair_ids or rest:
            loaded = {mid: m for mid, m in loaded.items() if mid in in_window}
        unsure, named = _question_pairs(loaded, window, query, linked, cosine or {}, spread, fits, names)
        above += unsure
        if turns:
            # Turns the vector channel puts closest to the question join the window below its
            # last place: a turn that says what changed often shares no word with the question
            # ("How do they earn a living these days?" / "I changed jobs, I'm now a pharmacist").
            seen, every = set(window), set(ids)
            # Only the change step reads them, and only for a question about what holds now.
            extra = [i for i in close[:CLOSE_TURNS] if i not in seen and i in every] if asks_now(query) else []
            if extra:
                loaded.update(session.memories.load(extra))
            readers = ((resemblance, neighbours) if resemblance is not None and neighbours is not None
                       and _ASKS_SELF.search(query) and not asks_past(query) else None)
            near = [i for i in close if i in every] if readers else []
            # One read of where the turns were said, for both steps.
            place = {mid: (scope, name, seq, role)
                     for mid, scope, name, seq, role in session.episodes.turns_of(list(dict.fromkeys(window + extra + near)))}
            pairs_t, lifted = _turn_pairs(session, loaded, place, window + extra, query, set(extra), set(evident) & every)
            above += pairs_t
            if readers:
                follow = _follow_up(session, loaded, place, window, near, {w.key for w in words(query)}, *readers)
                above += follow
                lifted += follow
    above += conflicts
    if flagged:
        above, named, lifted = ([(a, b) for a, b in ps if a not in flagged or b in flagged]
                                for ps in (above, named, lifted))
    if not above and not named and not fits and not name_fit:
        return scored
    above = acyclic(above)
    kept = set(above)
    final = {t[2]: t[0] for t in scored}
    # A memory that caps another keeps its place: moved down, it would carry the other with it.
    kind_places(final, fits, {newer for newer, _ in above if fits.get(newer) is False})
    kind_places(final, name_fit, {newer for newer, _ in above if name_fit.get(newer) is False}, NAME_LEAD)
    for newer_id, older_id in lifted:  # a turn the window missed takes the place of the one it answers for
        if (newer_id, older_id) in kept and final[older_id] >= final[newer_id]:
            final[newer_id] = final[older_id] / policy.CORRECTION_YIELD
    # A look-alike the question names takes its twin's place, just above it: lifted, not the twin
    # pushed down, so nothing else it ranked above moves (capping would carry the twin, and any
    # chain behind it, under unrelated hits). The newer-first caps come after and win.
    for mine, twin in named:
        if final[mine] <= final[twin]:
            final[mine] = final[twin] / policy.CORRECTION_YIELD
    for _ in range(len(above)):  # chains (a replaced b replaced c) settle in as many passes
        moved = False
        for newer_id, older_id in above:
            if final[older_id] >= final[newer_id]:
                final[older_id] = final[newer_id] * policy.CORRECTION_YIELD
                moved = True
        if not moved:
            break
    out = [(final[t[2]], *t[1:]) for t in scored]
    out.sort(key=lambda t: (-t[0], t[1]))
    return out


def acyclic(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """``pairs`` (above, below) in order of precedence, without those that would close a cycle with
    the ones kept before them: links outrank the question-aware steps, and among the turn steps the
    earlier one wins ("I live in Lyon" / "My husband's company relocated us to Berlin" must not be
    both above and below each other, which left their order to whichever cap ran last)."""
    below: dict[int, set[int]] = {}
    out: list[tuple[int, int]] = []
    for a, b in dict.fromkeys(pairs):
        if a == b or _reaches(below, b, a):
            continue
        below.setdefault(a, set()).add(b)
        out.append((a, b))
    return out


def _reaches(below: dict[int, set[int]], start: int, goal: int) -> bool:
    seen, todo = {start}, [start]
    while todo:
        for nxt in below.get(todo.pop(), ()):
            if nxt == goal:
                return True
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return False


# How many of the best hits the question-aware step looks at (pairs among them: at most 28).
QUERY_WINDOW = 8
# ... and how many of the vector channel's closest matches join them for the turn step.
CLOSE_TURNS = 3


def _not_partly_asked(loaded: Mapping[int, Any], conflicts: list[tuple[int, int]], query: str) -> list[tuple[int, int]]:
    """The (newer, older) conflicts whose older memory the question does not ask about for a
    statement of it the newer one leaves standing (``asks_untouched``): of "staging is Postgres 14;
    production is Postgres 16" and "production was upgraded to Postgres 17", a question about
    staging keeps its own score order."""
    if not conflicts:
        return conflicts
    texts = {mid: m.content for mid, m in loaded.items()}
    asked = {w.key for w in words(query)}
    return [(n, o) for n, o in conflicts if not asks_untouched(texts.get(o, ""), texts.get(n, ""), asked)]


MANY_MARGIN = 0.05  # how much nearer the question the older of two values must be to stay first
# How much nearer the question the older of any two must be, in units of the cosine's spread over
# the scope (``spread``), to keep its place: the question is about what only it says, in other
# words ("Which editor does Priya use?" / "Priya does all editing in Emacs", not "Priya swapped
# her laptop"). One unit: chosen on the dev half of `eval corrections`.
CLEARLY_NEARER = 1.0


def _question_pairs(loaded: dict[int, Any], ids: list[int], query: str, linked: set[frozenset],
                    cosine: Mapping[int, float], spread: float | None = None,
                    fits: Mapping[int, bool | None] | None = None,
                    names: AbstractSet[str] = frozenset()) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """Among ``ids``, unlinked memories of one scope: (newer, older) pairs of two that may state one
    thing two ways, for a question that asks nothing only the older one says; and (named, twin)
    pairs of look-alikes whose own subject the question names for one only (``named_first``).
    Memories written in one batch (one ``remember_many``: the same created_at) state one state of
    things, not a change of it. Two values of a relation a subject holds with many ("Zara uses
    pytest" / "Zara uses tabs": ``another_of_many``) may be one changed or two held at once: the
    newer goes first only when the question's vector is not clearly nearer the older's (``cosine``,
    by ``MANY_MARGIN``): "Which test runner does Zara use?" keeps pytest first. Any older memory
    ``CLEARLY_NEARER`` the question than the newer (in units of the cosine's ``spread``) keeps its
    place too. Only the vectors: the keyword score counts the verb a question happens to share
    ("prefer"). A newer one that names only tools of kinds the question does not ask for goes
    first only over an older one that does the same (``fits``; ``kind_places`` orders the rest)."""
    if len(ids) < 2:
        return [], []
    fits = fits or {}
    rows = [(mid, m.content, m.created_at, m.scope, m.failure_count > m.success_count)
            for mid, m in loaded.items() if m.type in COMPARED_TYPES and m.status in LIVE]
    # Outcomes outrank wording: a memory with feedback is never lifted or passed over by it.
    judged = {mid for mid, m in loaded.items() if m.success_count or m.failure_count}
    if len(rows) < 2:
        return [], []
    asked = {w.key for w in words(query)}
    out: list[tuple[int, int]] = []
    named: list[tuple[int, int]] = []
    rows.sort(key=lambda r: (r[2], r[0]))  # oldest first
    for n, (old_id, old_text, old_at, scope, _) in enumerate(rows):
        for new_id, new_text, new_at, new_scope, new_failed in rows[n + 1:]:
            if new_scope != scope or frozenset((old_id, new_id)) in linked:
                continue
            if fits.get(new_id) is False and fits.get(old_id) is not False:
                continue  # the newer names only tools of kinds not asked: no answer to put first
            if not new_failed and new_at != old_at and maybe_changed(old_text, new_text, asked) \
                    and not _asks_older(cosine.get(old_id, 0.0) - cosine.get(new_id, 0.0), spread, old_text, new_text):
                out.append((new_id, old_id))
                continue
            side = 0 if old_id in judged or new_id in judged else named_first(old_text, new_text, asked, names)
            if side:
                named.append((new_id, old_id) if side > 0 else (old_id, new_id))
    return out, named


def _asks_older(gap: float, spread: float | None, old: str, new: str) -> bool:
    """Whether the question's vector is nearer the older of two memories by ``gap`` enough to keep
    it first: ``CLEARLY_NEARER`` units of the cosine's ``spread`` for any two, ``MANY_MARGIN`` for
    two values of a relation a subject holds with many (``another_of_many``)."""
    return (spread is not None and gap > CLEARLY_NEARER * spread) or (gap > MANY_MARGIN and another_of_many(old, new))


def _turn_pairs(session: Session, loaded: dict[int, Any], where: dict[int, tuple], ids: list[int], query: str,
                extra: AbstractSet[int] = frozenset(),
                evident: AbstractSet[int] = frozenset()) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """Conversation turns are records of what was said, so detection never links them; among
    ``ids``, two turns of one speaker and scope from different sessions that speak of one named
    thing (``same_thing``) and that the question cannot tell apart: the later session's says what
    became of it, so it goes first, and with the older turn the turns next to it in its session
    (the exchange around what was said then) that rank above the newer one. For a question about
    what holds now, also ``_change_turns``, which alone also reads the ``extra`` turns (the vector
    channel's closest, below the window); then ``_own_before_others`` and ``_said_before_echo``.
    ``where``: (scope, session, seq, role) of the turns among ``ids`` (and maybe others). Returns
    ((newer, older) pairs to cap, (turn, turn it takes the place of) pairs to lift first)."""
    if len(ids) < 2:
        return [], []
    place = {mid: where[mid] for mid in ids if mid in where}
    turns = []
    for mid in ids:
        m = loaded.get(mid)
        if m is None or mid not in place or m.status not in LIVE or m.failure_count > m.success_count:
            continue
        at = m.episode.timestamp if m.episode else m.created_at
        turns.append((at, mid, m.content, place[mid]))
    if len(turns) < 2:
        return [], []
    asked = {w.key for w in words(query)}
    # Who takes part is not what they talk about: "Thanks, Caroline!" and "Hey Mel" name no thing.
    people = {k for *_, role in place.values() for k in (w.key for w in words(role))}
    rank = {mid: n for n, mid in enumerate(ids)}
    out: list[tuple[int, int]] = []
    turns.sort(key=lambda t: (t[0], t[1]))  # oldest first
    # Only the change step reads the turns that joined from the vector channel.
    inside = [t for t in turns if t[1] not in extra]
    place_in = {k: v for k, v in place.items() if k not in extra}
    for n, (old_at, old_id, old_text, (scope, name, seq, role)) in enumerate(inside):
        for new_at, new_id, new_text, (new_scope, new_name, _, new_role) in inside[n + 1:]:
            if new_scope != scope or new_name == name or new_role != role or new_at == old_at:
                continue
            if not same_thing(old_text, new_text, asked, people):
                continue
            out.append((new_id, old_id))
            out += _exchange(new_id, (scope, name, seq), place_in)
    lifts: list[tuple[int, int]] = []
    if asks_now(query):
        changed = _change_turns(turns, place_in)
        out += changed
        lifts += [(a, b) for a, b in changed if a in extra]
    out += _own_before_others(inside, rank, place_in, query)
    echoes = _said_before_echo(session, inside, rank, place_in, query, evident)
    echoes += _answer_before_request(session, inside, rank, place_in, query, evident)
    out += echoes
    lifts += echoes
    return out, lifts


# A question put to the assistant about what it said ("What did you recommend ...?"), once the
# ways of asking it to look something up are set aside ("Do you remember where I moved?").
_ASKS_ASSISTANT = re.compile(r"\b(?:you|your|yours|yourself|assistant)\b", re.I)
_POLITE = re.compile(r"\b(?:(?:do|can|could|would|will)\s+you\s+(?:please\s+)?(?:remember|know|recall|remind|tell|find|"
                     r"check|look\s+up|say)|thank\s+you|thanks)\b", re.I)
ASSISTANT_ROLES = frozenset({"assistant", "system", "tool", "agent", "bot", "ai", "model"})
_ASKING = re.compile(r"\?\s*$|^\W*(?:what|which|who|whom|whose|where|when|why|how|should|shall|can|could|would|will|"
                     r"do|does|did|is|are|am|was|were|any|anyone)\b", re.I)


def asks_assistant(query: str) -> bool:
    """Whether a question is put to the assistant about what it said."""
    return bool(_ASKS_ASSISTANT.search(_POLITE.sub(" ", query)))


def _turns_at(session: Session, place: dict[int, tuple], wanted: list[tuple[str, str, int]]) -> dict[tuple, tuple]:
    """(scope, session, seq) -> (id, role) of the turns in ``place`` and of those ``wanted`` there
    are (one read of the store for the ones ``place`` lacks)."""
    at = {(p[0], p[1], p[2]): (mid, p[3]) for mid, p in place.items()}
    missing = [w for w in wanted if w not in at]
    if missing:
        at.update({(sc, se, q): (mid, role) for mid, sc, se, q, role in session.episodes.turns_at(missing)})
    return at


def _said_before_echo(session: Session, turns: list[tuple], rank: dict[int, int], place: dict[int, tuple],
                      query: str, evident: AbstractSet[int]) -> list[tuple[int, int]]:
    """An assistant's reply restates what it answers in fewer words ("Glad Leo is settling in" after
    "Leo settled in fast at Hillcrest School"), so it often outranks it; for a question that does not
    ask about the assistant, the turn it replies to (the one just before it) takes its place when
    that turn has evidence of its own for the question (``evident``: not only a neighbour's score;
    a reply to a question about sourdough is no echo of it). (statement, reply) pairs, applied as
    lifts."""
    if asks_assistant(query):
        return []
    replies = [(mid, p) for _at, mid, _text, p in turns if p[3].lower() in ASSISTANT_ROLES and p[2] > 0]
    if not replies:
        return []
    # The turn before each reply: from the window when it is there, else one read of the store.
    at = _turns_at(session, place, [(p[0], p[1], p[2] - 1) for _, p in replies])
    before = {key: mid for key, (mid, role) in at.items()
              if role.lower() not in ASSISTANT_ROLES and mid in evident}
    # A reply to a question is its answer, not an echo ("Which laptop should I buy?" / "A MacBook Pro
    # with 32 GB of RAM"), unless the question asks about the speaker, whose own question may hold the
    # fact ("With a salary of 33,000, how much should I put into my pension?"): only then is the text read.
    about_speaker = bool(_ASKS_SELF.search(query))
    pairs = [(said, mid) for mid, p in replies if (said := before.get((p[0], p[1], p[2] - 1))) is not None
             and not (said in rank and rank[said] < rank[mid])]
    if not pairs or about_speaker:
        return pairs
    text = {mid: t for _at, mid, t, _p in turns}
    unread = [said for said, _ in pairs if said not in text]
    if unread:
        text.update((mid, m.content) for mid, m in session.memories.load(unread).items())
    return [(said, mid) for said, mid in pairs if said in text and not _ASKING.search(text[said])]


def _answer_before_request(session: Session, turns: list[tuple], rank: dict[int, int], place: dict[int, tuple],
                           query: str, evident: AbstractSet[int]) -> list[tuple[int, int]]:
    """For a question put to the assistant about what it said ("What did you suggest when my
    sourdough came out dense?"), the speaker's turn that asked for it repeats the question's words
    and outranks the answer; the assistant's reply just after it takes its place when the reply has
    evidence of its own for the question (``evident``). (reply, request) pairs, applied as lifts."""
    if not asks_assistant(query):
        return []
    asks = [(mid, p) for _at, mid, _text, p in turns if p[3].lower() not in ASSISTANT_ROLES]
    if not asks:
        return []
    at = _turns_at(session, place, [(p[0], p[1], p[2] + 1) for _, p in asks])
    out = []
    for mid, p in asks:
        reply, role = at.get((p[0], p[1], p[2] + 1), (None, ""))
        if reply is not None and role.lower() in ASSISTANT_ROLES and reply in evident \
                and not (reply in rank and rank[reply] < rank[mid]):
            out.append((reply, mid))
    return out


# Words for someone the speaker knows.
_RELATION = (r"(?:colleague|co-?worker|cousin|friend|neighbou?r|brother|sister|sibling|boss|manager|mum|mom|mother|dad|"
             r"father|wife|husband|partner|son|daughter|uncle|aunt|nephew|niece|roommate|flatmate|housemate|girlfriend|"
             r"boyfriend|fianc[eé]e?|grandma|grandmother|grandpa|grandfather|kid|teammate|classmate|landlord|landlady)")
# What may come before the subject: "So my sister ...", "Funny thing, my dad ...", "Big news: my brother ...".
_OPENER = (r"^\W*(?:(?:so|well|oh|also|and|btw|by the way|anyway|funny thing|guess what|big news|news|fun fact|"
           r"apparently|honestly|update)[,:!]?\s+)?")
# A turn whose subject is someone the speaker knows, not the speaker ("My colleague Chloe drives a
# Peugeot 208", "my sister just moved to Porto"): the relation word, then maybe the person's name.
_OTHER_PERSON = re.compile(
    _OPENER + r"(?:my|our)\s+(?:best\s+|old\s+|new\s+|older\s+|younger\s+|little\s+|big\s+)?"
    r"(" + _RELATION + r"(?:-in-law)?)s?\b"
    r"(?!(?:\s+[\w'-]+)?,?\s+(?:and|&)\s+(?:i|me|we)\b)"  # not "my wife and I": the speaker takes part
    r"(?:\s+((?-i:[A-Z])[\w'-]+)\b)?", re.I)
# A turn about someone the speaker knows by name, marked as a person: "Jonas next door is learning
# Portuguese", "Tariq from work got a Galaxy A54", "Ayesha's boss just quit". A capitalised word and
# a verb alone is not enough: "Salary got bumped to 60k", "Verizon switched me to the unlimited
# plan", "Biscuit got his stitches out" are the speaker's own news with another subject.
_NAMED_OTHER = re.compile(
    _OPENER + r"((?-i:[A-Z][a-z]+(?:-[A-Z][a-z]+)?))"
    r"(?:\s+next\s+door|\s+from\s+(?:work|the\s+office|uni|school|the\s+gym)|'s\s+" + _RELATION + r"s?)\b", re.I)
# "my" in a turn led by a name: "Jonas next door said my car is too loud" is the speaker's news.
_MY = re.compile(r"\bmy\b", re.I)
# Capitalised words that open a turn before "'s" or "next door" and are no one's name ("It's mum's
# birthday", "Monday's boss meeting").
_NOT_A_NAME = frozenset(
    "it we i you they he she this that there here these those what who which when where why how everyone "
    "everybody everything nothing nobody someone somebody something today yesterday tonight tomorrow "
    "monday tuesday wednesday thursday friday saturday sunday january february march april may june july "
    "august september october november december spring summer autumn fall winter weekend morning evening "
    "night life work traffic weather dinner lunch breakfast rent money one each all both".split())
# A question about the speaker: the user, or I/me/my (first person), or they/their (the user
# spoken of), not about a person it names.
_ASKS_SELF = re.compile(r"\b(?:the user|user's|i|i'm|i've|me|my|mine|myself|they|their|them|themselves)\b", re.I)


# The speaker in the turn too ("My boss fired me", "... relocated us", "... I was the maid of honour").
_SPEAKER_TOO = re.compile(r"\b(?:i|i'm|i've|i'd|i'll|me|my\s+own|myself|we|we're|we've|us|our|ours|ourselves)\b", re.I)
# One relation, several words: a question may name it by any of them.
_SAME_RELATION = [frozenset(g) for g in (("colleague", "coworker", "co-worker"), ("mum", "mom", "mother"),
                                          ("dad", "father"), ("grandma", "grandmother"), ("grandpa", "grandfather"),
                                          ("neighbour", "neighbor"), ("kid", "child", "son", "daughter"))]


def about_other(text: str) -> tuple[str | None, str | None] | None:
    """(relation word or None, name or None) when a turn opens with someone the speaker knows as its
    subject and the speaker is not in it ("My cousin Sofia got a job at Harbor Works", "Ayesha's boss
    just quit", "Jonas next door is learning Portuguese"); None when the speaker is in it ("My boss
    fired me", "Jonas next door said my car is too loud") or it opens otherwise ("Tariq got a new
    Galaxy A54": a name with no mark of a person may be a brand or a pet)."""
    m = _OTHER_PERSON.match(text)
    if m:
        return None if _SPEAKER_TOO.search(text, m.end()) else (m.group(1).lower(), m.group(2))
    m = _NAMED_OTHER.match(text)
    if not m:
        return None
    name = m.group(1)
    if name.lower() in _NOT_A_NAME or _SPEAKER_TOO.search(text, m.end()) or _MY.search(text, m.end()):
        return None
    return None, name


def asks_about_speaker(query: str) -> bool:
    """Whether a question asks about the speaker (``_ASKS_SELF``) and is not put to the assistant
    about what it said."""
    return bool(_ASKS_SELF.search(query)) and not asks_assistant(query)


def _own_before_others(turns: list[tuple], rank: dict[int, int], place: dict[int, tuple], query: str) -> list[tuple[int, int]]:
    """For a question about the speaker (``_ASKS_SELF``) that names neither the relation nor the
    person: a turn about someone the speaker knows ranks below the best turn among ``turns`` in which
    the same speaker speaks of themself, with the turns next to it in its session (its exchange).
    "What car does the user drive now?" is not answered by "My colleague Chloe drives a Peugeot
    208". (own, other) pairs."""
    if not _ASKS_SELF.search(query):
        return []
    asked = {w.key for w in words(query)} | {t.lower() for t in re.findall(r"[\w'-]+", query)}
    others, own = [], []
    for _at, mid, text, (scope, name, seq, role) in turns:
        if role.lower() in ASSISTANT_ROLES:
            continue
        who = about_other(text)
        if who is None:
            own.append(mid)
            continue
        relation, person = who
        named = {*(w.key for w in words(" ".join(x for x in who if x)))}
        if relation:
            named |= {relation} | {w for group in _SAME_RELATION if relation in group for w in group}
        if person:
            named.add(person.lower())
        if not named & asked:
            others.append((mid, (scope, name, seq), role))
    replies = {mid: p for mid, p in place.items() if p[3].lower() in ASSISTANT_ROLES}
    out: list[tuple[int, int]] = []
    for mid, where, role in others:
        best = min((o for o in own if place[o][3] == role and place[o][0] == where[0]), key=rank.__getitem__, default=None)
        if best is None:
            continue
        out.append((best, mid))
        out += _exchange(best, where, replies)  # its reply goes with it; another speaker's turn does not
    return out


# Words of a question that asks what holds now rather than what was said once: the present, or a
# change ("after relocating", "which car replaced ..."). Not "after" alone ("what did she do after
# the race?") nor "as of <date>" (the state at a moment past): those ask about a time, not now.
_NOW_ASKED = re.compile(r"\b(?:now|nowadays|currently|current|these days|at the moment|at present|still|"
                        r"any ?more|today|latest|relocat\w*|moved|switch\w*|replaced|changed)\b", re.I)


def asks_now(query: str) -> bool:
    """Whether a question asks what holds now (``_NOW_ASKED``)."""
    return bool(_NOW_ASKED.search(query))


# Words of a question that asks about a state of the past: "What phone did I have before?", "Who was
# my first mobile provider?", "When did I take up running?".
_PAST_ASKED = re.compile(r"\b(?:before|used to|originally|previous|previously|formerly|former|first|old|earlier|"
                         r"back then|in the past|did|was|were|had)\b", re.I)
_AFTER = re.compile(r"\bafter\b", re.I)


def asks_past(query: str) -> bool:
    """Whether a question asks about the past rather than what holds now: a word of the past
    (``_PAST_ASKED``) and none of the present, nor "after" ("What sport did I start after I quit
    squash?" asks what followed)."""
    return bool(_PAST_ASKED.search(query)) and not asks_now(query) and not _AFTER.search(query)


# A turn that says a state began or was swapped without a change word of write-time detection:
# "I've gone fully vegetarian since last month", "I sold the Mazda and bought a Leaf", "I gave up
# coffee". Only this step reads them: a stored fact worded so is compared by its values instead.
_STARTED = re.compile(
    r"\bsince (?:last|this) (?:week|month|year|spring|summer|autumn|fall|winter)\b"
    r"|\b(?:i|we)(?:'ve| have)? (?:gone|become|turned)\b"
    r"|\bsold (?:the|my|our)\b.{1,60}\b(?:bought|got)\b"
    r"|\b(?:i|we)(?:'ve| have)? (?:quit|gave up|given up)\b", re.I)


def announces_change(text: str) -> bool:
    """Whether a conversation turn says that something changed: a change word (``has_cue``) or a
    state said to have begun or been swapped (``_STARTED``)."""
    return has_cue(text) or bool(_STARTED.search(text.replace("’", "'")))


def _change_turns(turns: list[tuple], place: dict[int, tuple]) -> list[tuple[int, int]]:
    """For a question about what holds now: a turn among the best hits that announces a change
    ("I changed jobs, I'm now ...", "we moved to ...") ranks above the turns of the same speaker
    from earlier sessions, and with each the turns of ``place`` next to it in its session (the
    exchange around it): it says what became of what they said then, which the same words of the
    question cannot tell apart. (newer, older) pairs; ``turns`` oldest first."""
    out: list[tuple[int, int]] = []
    for new_at, new_id, new_text, (scope, name, _, role) in turns:
        if not announces_change(new_text) or about_other(new_text):
            continue  # "My sister just moved to Porto" is no change of the speaker's
        for old_at, old_id, _, (old_scope, old_name, old_seq, old_role) in turns:
            if old_at >= new_at or old_name == name or old_scope != scope or old_role != role:
                continue
            # Also when it already ranks above: a later lift must not carry the older one back over it.
            out.append((new_id, old_id))
            out += _exchange(new_id, (old_scope, old_name, old_seq), place)
    return out


# How close to the best hit a later turn must be to be read as its follow-up: the cosine of their
# stored vectors. A turn is embedded with its speaker's name, so even unrelated turns of one speaker
# lie close; this is above most such pairs in our two conversation sets (`eval history`, `eval updates`).
FOLLOW_UP_RESEMBLANCE = 0.35
# ... how many of the vector channel's closest matches to the question it must be among,
FOLLOW_UP_REACH = 20
# ... how many of the best hit's own nearest memories of its scope are searched for its nearest later turn,
FOLLOW_UP_NEIGHBOURS = 50
# ... and how many follow-ups of follow-ups are looked for (a value that changed more than once).
FOLLOW_UP_CHAIN = 3

def _follow_up(session: Session, loaded: dict[int, Any], place: dict[int, tuple], window: list[int], close: list[int],
               asked: set[str], resemblance: Resemblance, neighbours: Neighbours) -> list[tuple[int, int]]:
    """What became of the best hit. When the best speaker's turn of ``window`` (an assistant's reply
    yields its place to the turn it answers) says something of the speaker's own, the same
    speaker's nearest turn to it from a later session says what became of it, if that turn is
    also among ``close`` (the question's closest) and announces a change, as a statement about the
    speaker: "My phone plan is 12 a month for 20GB" / "Now I'm paying 18 a month, but the data's
    unlimited" for "What does the user's mobile contract cost?". Nearest of all the later turns (of
    the best hit's ``FOLLOW_UP_NEIGHBOURS`` nearest memories), not of the question's closest only,
    and of two at least: a change that is not the next word on the best hit's subject, or the only
    later turn there is, may be about anything ("Our internet went down" after "I finished the
    10K"). Not when the question (content words ``asked``) names a word of the best hit that the
    later turn does not say: it asks about what was said then ("What do I usually eat for
    breakfast?": "porridge for breakfast", not "I switched to the night shift, so my lunch is at
    2am now"). The follow-up's own follow-up goes above it in turn (Vodafone, then
    Three, then giffgaff), up to ``FOLLOW_UP_CHAIN`` steps. ``place``: (scope, session, seq, role) of
    the turns among ``window`` and ``close``. [(follow-up, what it follows), ...]."""
    best = next((i for i in window if i in place and place[i][3].lower() not in ASSISTANT_ROLES), None)
    if best is None or best not in loaded or about_other(loaded[best].content):
        return []
    out: list[tuple[int, int]] = []
    head = best
    for _ in range(FOLLOW_UP_CHAIN):
        nxt = _next_word(session, loaded, place, head, close, asked, resemblance, neighbours)
        if nxt is None:
            break
        out.append((nxt, head))
        head = nxt
    return out


def _next_word(session: Session, loaded: dict[int, Any], place: dict[int, tuple], head_id: int, close: list[int],
               asked: set[str], resemblance: Resemblance, neighbours: Neighbours) -> int | None:
    """The turn of ``close`` that says what became of turn ``head_id`` (``_follow_up``), or None."""
    head = loaded[head_id]
    scope, name, _, role = place[head_id]
    said = {w.key for w in words(head.content)}

    def later(mid: int, where: dict[int, tuple], have: dict[int, Any]) -> bool:
        m, p = have.get(mid), where.get(mid)
        return (m is not None and p is not None and p[0] == scope and p[3] == role and p[1] != name
                and _at(m) > _at(head) and m.status in LIVE)

    def follows(m: Any) -> bool:
        return (not asked & (said - {w.key for w in words(m.content)})
                and announces_change(m.content) and not about_other(m.content)
                and m.failure_count <= m.success_count)

    # Loaded only once their place says they may be later turns of the same speaker.
    missing = [i for i in close if i not in loaded and i in place and place[i][0] == scope and place[i][3] == role
               and place[i][1] != name]
    if missing:
        loaded.update(session.memories.load(missing))
    candidates = [i for i in close if later(i, place, loaded) and follows(loaded[i])]
    near = resemblance(head_id, candidates) if candidates else {}
    if max(near.values(), default=-1.0) < FOLLOW_UP_RESEMBLANCE:
        return None
    # Only now, with a candidate, the one more scan: the head's nearest later turns of all.
    found = [i for i, _ in neighbours(head_id, FOLLOW_UP_NEIGHBOURS) if i != head_id]
    where = {mid: (sc, se, sq, ro) for mid, sc, se, sq, ro in session.episodes.turns_of(found)}
    # Loaded only where their place says they are the speaker's turns of another session.
    found = [i for i in found if i in where and where[i][0] == scope and where[i][3] == role and where[i][1] != name]
    have = session.memories.load([i for i in found if i not in loaded])
    have.update({i: loaded[i] for i in found if i in loaded})
    after = [i for i in found if later(i, where, have)]
    if len(after) < 2 or near.get(after[0], -1.0) < FOLLOW_UP_RESEMBLANCE:
        return None
    return after[0]


def _at(m: Any) -> float:
    """When a memory was said: its turn's timestamp, else when it was written."""
    return m.episode.timestamp if m.episode else m.created_at


def _exchange(new_id: int, old: tuple, place: dict[int, tuple]) -> list[tuple[int, int]]:
    """(new_id, turn) pairs for the turns of ``place`` next to the older turn ``old`` (scope, session,
    seq) in its session: the exchange around what was said then follows it down (a no-op cap for
    those already below ``new_id``, kept so that no later lift carries them back over it)."""
    scope, name, seq = old
    return [(new_id, mid) for mid, (sc, se, q, _) in place.items()
            if (sc, se) == (scope, name) and abs(q - seq) == 1 and mid != new_id]


def same_thing(old: str, new: str, asked: set[str], people: set[str] | frozenset[str] = frozenset()) -> bool:
    """Whether two turns may say what one named thing was and what became of it, as far as a
    question with the content words ``asked`` can tell: both name one thing the same way, in two
    words or more ("my old Honda Civic broke down" / "I sold the Honda Civic"), not a participant
    (``people``: the speakers' names), both say something of their own, the question names no
    word of the older turn (it asks for a value, not about what was said then), and no words of
    their own name another subject on both sides (``maybe_changed``'s guards)."""
    sides = _sides(old, new)
    if sides is None:
        return False
    ow, nw, shared, own_o, own_n = sides
    if not own_o or not own_n or asked & (shared | own_o):
        return False  # the question names what the older turn says: it asks about that, not what holds now
    # A named thing of two words or more, named the same way by both (a make and model, a full
    # name, a product and its version): one capitalised word is often a greeting or a vocative.
    heads = {w.key: w.head for w in nw}
    if not any(w.key in shared and w.value and not w.digits and w.head and w.head in shared
               and heads.get(w.key) == w.head and not any(p.startswith(w.key) for p in people) for w in ow):
        return False  # no named thing in common (a participant's name, or the start of it, is not one)
    diff_o = [i for i, w in enumerate(ow) if w.key in own_o]
    diff_n = [j for j, w in enumerate(nw) if w.key in own_n]
    # Said in passing, one side may describe the thing more ("my old Honda Civic"); only both
    # naming which one, each its own way, is two things.
    if (qualifies(ow, diff_o, shared) and qualifies(nw, diff_n, shared)) \
            or (qualified(ow, nw, shared) and qualified(nw, ow, shared)):
        return False
    return not (_leads(ow, diff_o) and _leads(nw, diff_n))


def _sides(old: str, new: str) -> tuple[tuple[Word, ...], tuple[Word, ...], set[str], set[str], set[str]] | None:
    """Both texts' words, the keys they share, and the keys each has of its own (None: one of them
    has no word)."""
    ow, nw = words(old), words(new)
    if not ow or not nw:
        return None
    oset, nset = {w.key for w in ow}, {w.key for w in nw}
    return ow, nw, oset & nset, oset - nset, nset - oset


def _leads(ws: tuple[Word, ...], own: list[int]) -> bool:
    """Whether words of a text's own, at positions ``own``, open it with a name or a number (they
    name its subject: two texts each led by their own are about two things)."""
    return any(ws[i].lead and (ws[i].value or ws[i].digits) for i in own)


def maybe_changed(old: str, new: str, asked: set[str]) -> bool:
    """Whether ``new`` may state another value for what ``old`` states, as far as a question with
    the content words ``asked`` can tell: the question names words both share and none that only
    the older one has, both say something of their own, and nothing of their own names another
    subject (a word qualifying a shared one, another opening name or number)."""
    sides = _sides(old, new)
    if sides is None:
        return False
    ow, nw, shared, own_o, own_n = sides
    if not own_o or not own_n or not (asked & shared) or asked & own_o:
        return False
    if not any(w.key in shared and not w.unit and not w.digits for w in ow):
        return False  # only numbers or units in common
    diff_o = [i for i, w in enumerate(ow) if w.key in own_o]
    diff_n = [j for j, w in enumerate(nw) if w.key in own_n]
    if qualifies(ow, diff_o, shared) or qualifies(nw, diff_n, shared) \
            or qualified(ow, nw, shared) or qualified(nw, ow, shared):
        return False
    return not (_leads(ow, diff_o) and _leads(nw, diff_n))


def _marks(ws, own: set[str], shared: set[str]) -> set[str]:
    """The words of its own that name which thing a memory is about: before its verb (the backend
    repo, Omar), or right before a word both share (the web client, production deploys)."""
    return {w.key for w in ws if w.key in own and not w.digits and (w.lead or w.head in shared)}


# Share of the words of the shorter of two memories the other one repeats, for them to be
# twins that differ in their subject only.
TWIN_SHARE = 0.5


def _twins(aw, bw) -> bool:
    """Two statements of one kind about two subjects: each opens with a name that is all of its
    subject ("Omar prefers ...", "Zara wants ..."), or they repeat half the words of the shorter
    one (two at least, numbers aside, one of them plain). Two memories that only share a word or two of a question (a near miss and the
    memory that answers it in other words) are not twins: the question's words must not decide."""
    def opener(ws) -> bool:
        return ws[0].lead and ws[0].value and not ws[0].digits and sum(w.lead for w in ws) == 1
    if opener(aw) and opener(bw):
        return True
    # "The backend repo uses ..." / "The infra repo uses ...": one kind of subject, told apart by
    # the word before it.
    sa, sb = [w.key for w in aw if w.lead], [w.key for w in bw if w.lead]
    if len(sa) > 1 and len(sb) > 1 and sa[-1] == sb[-1] and set(sa) != set(sb):
        return True
    keys_a = {w.key for w in aw if not w.digits}
    keys_b = {w.key for w in bw if not w.digits}
    common = keys_a & keys_b
    return any(not w.value for w in aw if w.key in common) \
        and len(common) >= max(2, TWIN_SHARE * min(len(keys_a), len(keys_b)))


def named_first(a: str, b: str, asked: set[str], names: AbstractSet[str] = frozenset()) -> int:
    """Of two look-alikes (they share a plain word, or both open with a name: "Zara wants ...", "Omar
    prefers ..."), the one whose own subject the question names goes first when the question names
    nothing of the other's own subject: 1 for ``b``, -1 for ``a``, 0 when the question cannot tell
    them apart. "When are production deploys not allowed?" puts "No production deploys on Mondays"
    above "Staging deploys are not allowed on Mondays", whatever the wording shared with the other.
    When it names something of both, a name of one (``names``: the question's ``proper_names``)
    outweighs a plain word of the other: "What does Zara drink?" puts "Zara traded filter coffee for
    oat latte." above "The user drinks filter coffee every morning." (whose verb is its own word)."""
    aw, bw = words(a), words(b)
    if not aw or not bw or not asked:
        return 0
    aset, bset = {w.key for w in aw}, {w.key for w in bw}
    shared = aset & bset
    ma, mb = _marks(aw, aset - bset, shared), _marks(bw, bset - aset, shared)
    if not ma or not mb or not _twins(aw, bw):
        return 0
    hit_a, hit_b = bool(asked & ma), bool(asked & mb)
    if hit_a and hit_b:
        hit_a, hit_b = bool(names & ma), bool(names & mb)
    return 0 if hit_a == hit_b else (1 if hit_b else -1)
