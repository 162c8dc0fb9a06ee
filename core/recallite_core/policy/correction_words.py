"""The words of a statement as corrections compare them (``words``): content words in order, stop
words, change cues, moments and relation verbs left out, a unit kept with its number, each marked
as a typed value or not, as naming the subject (before the verb) or not, and with the word it
qualifies. Also whether a text announces a change (``has_cue``) or denies something (``negated``).

Parsed once per text and kept (``words`` is cached, bounded by policy.CORRECTION_PARSE_WORDS):
the same stored memories come back as candidates of many writes.
"""

from __future__ import annotations

import functools
import re
import sys
import threading
from dataclasses import dataclass

from recallite_core.policy import rules as policy

_TOKEN = re.compile(r"\$?\d[\w.,:/%+-]*\w%?|\$?\d|[^\W\d][\w'’.+#/-]*[\w+#]|[^\W\d]", re.UNICODE)

STOP = frozenset("""
a an the of to in on at for with by as from into onto about over under per via and or but so than then
is are was were be been being am it its it's this that these those there here which who whom whose what
we our ours us i my me mine you your yours he his him she her hers they their theirs them ones
has have had having do does did doing will would shall should can could may might must also just still
all any some each every both either neither other another such same own very too quite really
if when while where because since until after before during up down out off
i'm i've i'll i'd we're we've we'll we'd you're you've you'll you'd they're they've they'll it'll let's
""".split())

# Words that announce a change: they carry no value of their own.
CUES = frozenset("""
now nowadays currently anymore longer instead replaced replace replacing switched switch
switching moved move moves moving upgraded upgrade upgrading downgraded downgrade deprecated deprecate
changed changing migrated migrate migrating renamed rename retired retire dropped
stopped stop left leave leaving quit took taken take takes became become becomes transferred
relocated updated correction corrected actually newer newest latest revised replacement
successor superseded supersedes rather raised lowered increased decreased bumped reduced swapped swap
handed went reverted revert rolled extended relaxed tightened shortened lengthened expanded doubled halved
""".split())

# Whole phrases that announce a change (checked on the lower-cased words of the text).
CUE_PHRASES = ("no longer", "not anymore", "any more", "anymore", "instead of", "rather than", "switched",
               "moved", "changed", "replaced", "from now on", "as of", "took over", "taken over", "left",
               "is now", "are now", "now", "upgraded", "downgraded", "deprecated", "migrated", "renamed",
               "no more", "stopped", "instead", "updated", "correction", "actually", "went from", "went up",
               "went down", "bumped", "swapped", "scaled", "relocated", "handed", "not any", "raised", "lowered",
               "increased", "decreased", "reduced", "reverted", "rolled back", "back to", "going forward", "extended",
               "relaxed", "tightened", "shortened", "lengthened", "expanded", "doubled", "halved")
_FROM_TO = re.compile(r"\bfrom\s+(.{1,40}?)\s+to\s+(.{1,40}?)(?:[.;,!]|\s+(?:and|but|because|since|for|on|in)\b|$)", re.I)

# Moments that say when, not what (weekdays and months are values: "no deploys on Fridays").
TIME = frozenset("""
today yesterday tomorrow week weeks last next ago recently lately earlier later soon since morning evening
tonight again weekend overnight
""".split())

NEGATIONS = frozenset("not no never n't cannot can't don't doesn't isn't aren't won't shouldn't mustn't "
                      "didn't wasn't weren't".split())

# Verbs of a statement: compared texts may say "runs on" or "listens on", "owns" or "maintains" for
# the same relation, so they are left out of the comparison; a value right after one of them is the
# statement's value ("prefers tabs").
RELATION_VERBS = frozenset("""
is are was were be uses use using used runs run running prefers prefer preferred likes like liked loves love
lives live living works work working owns own manages manage handles handle set sets default
defaults points point located based hosted host hosts stored store keeps keep kept holds hold held costs cost
needs need wants want requires require required calls call speaks speak drives drive reads read writes write
targets target listens listen listening goes go serves serve favourite favorite maintained
maintain maintains happens happen takes depends depend pinned pin built talks talk comes come
publish publishes published monitor monitors monitored follow follows followed retained retain sits sit
reachable charge charges pay pays gives give allow allows block blocks blocked get gets find picks pick
has have had
send sends sent runs times timed limited throttled scaled sign signs cut
backs carries watches sits start starts starting begins opens closes ends
""".split())

# Words that belong to the number before them ("30 seconds", "20 requests per minute").
UNITS = frozenset("""
second seconds minute minutes hour hours day days week weeks month months year years ms s m h gb mb kb tb
instance instances request requests replica replicas node nodes worker workers core cores percent approvals
approval
""".split())


@functools.lru_cache(maxsize=8192)
def _shape(token: str) -> str:
    """The kind of a typed value: a change from one kind to another is not a substitution."""
    if re.fullmatch(r"v?\d+(\.\d+)+\w*", token, re.I):
        return "version"
    if any(c.isdigit() for c in token) or token.lower() in NUMBER_WORDS:
        return "number"
    if token[:1].isupper():
        return "name"
    return "code"


@dataclass(frozen=True, slots=True)
class Word:
    text: str  # as written
    key: str  # lower-cased, light stem: what is compared
    value: bool  # a typed value: number, version, name, identifier (or the unit of a number)
    lead: bool = False  # no relation verb before it in its sentence: it names the subject
    unit: bool = False  # the unit of the number before it
    head: str = ""  # the key of the content word right after it, nothing between: the noun it qualifies
    digits: bool = False  # a number (digits or a number word) or the unit of one

    @property
    def shape(self) -> str:
        return "number" if self.unit else _shape(self.text)


def _word(text: str, key: str, value: bool, lead: bool, unit: bool, head: str = "") -> Word:
    # Interned: kept parses share the strings of the words they repeat.
    digits = unit or bool(_DIGIT.search(text)) or key in NUMBER_WORDS
    return Word(sys.intern(text), key, value, lead, unit, head, digits)


_DIGIT = re.compile(r"\d")


@functools.lru_cache(maxsize=16384)
def key_of(token: str) -> str:
    k = _key(token)
    return _SHORT.get(k, k)


# Short forms teams write for one word: compared as the word.
_SHORT = {"prod": "production", "k8s": "kubernetes", "repo": "repository", "db": "database", "config": "configuration",
          "infra": "infrastructure", "env": "environment", "dep": "dependency"}


def _key(token: str) -> str:
    t = token.lower().strip(".'’").replace("’", "'")
    if t.endswith("'s"):
        t = t[:-2]
    if t.endswith(".js") and len(t) > 4:
        t = t[:-3]  # "Node.js" is Node
    if any(c.isdigit() for c in t):
        return t.rstrip(".,")
    if len(t) > 4 and t.endswith("ies"):
        return t[:-3] + "y"
    if len(t) > 3 and t.endswith("s") and not t.endswith(("ss", "us", "is")):
        return t[:-1]
    return t


_VERB_KEYS = frozenset(key_of(v) for v in RELATION_VERBS)


_MARKED = re.compile(r"[._/#+]")


def _is_value(token: str, first: bool, following: str) -> bool:
    if _DIGIT.search(token) or token.lower() in NUMBER_WORDS:
        return True
    if _MARKED.search(token.strip(".")) or (token[1:] != token[1:].lower()):
        return True  # an identifier, a path, CamelCase, an acronym
    if token[:1].isupper():
        # A capital opening a sentence is grammar, unless a capitalised word follows ("Travis CI").
        return not first or following[:1].isupper()
    return False


class _Parsed:
    """Parsed texts, least recently used dropped first, bounded by their number of words (not of
    texts: one long memory weighs as much as many short ones). Locked: recall reads it too."""

    def __init__(self, budget: int):
        self.budget, self.size = budget, 0
        self.texts: dict[str, tuple[Word, ...]] = {}  # oldest use first
        self.lock = threading.Lock()

    def get(self, text: str) -> tuple[Word, ...] | None:
        with self.lock:
            hit = self.texts.pop(text, None)
            if hit is not None:
                self.texts[text] = hit
            return hit

    def put(self, text: str, ws: tuple[Word, ...]) -> None:
        with self.lock:
            if text in self.texts:
                return
            self.texts[text] = ws
            self.size += len(ws) + 1
            while self.size > self.budget and self.texts:
                self.size -= len(self.texts.pop(next(iter(self.texts)))) + 1


_PARSED = _Parsed(policy.CORRECTION_PARSE_WORDS)


def words(text: str) -> tuple[Word, ...]:
    """The content words of a text, in order: stop words, change cues, moments and relation verbs
    left out; a unit after a number is part of the value. Kept once parsed: the same stored
    memories come back as candidates of many writes, and parsing costs a write more than
    comparing (about 150-200 µs a short text against 50 µs a comparison)."""
    hit = _PARSED.get(text)
    if hit is None:
        hit = _parse(text)
        _PARSED.put(text, hit)
    return hit


# Before a number, words that make it a value even when no verb was recognised (not "on": "the
# incident on 4 March" names the incident).
_VALUE_PREPS = frozenset({"after", "to", "at", "within", "every", "than", "under", "over", "for"})

_REDACTED = re.compile(r"\[REDACTED:[\w-]+\]")


def _parse(text: str) -> tuple[Word, ...]:
    out: list[Word] = []
    first = True
    after_number = False
    verb_seen = False
    after_modal = False
    text = ON_CALL.sub("on-call", text)  # a duty, not the verb "call"
    text = _REDACTED.sub(" ", text)  # a secret taken out: its kind is no value to compare
    if _WORDING_HINT.search(text):
        for pattern, repl in _SAME_WORDING:
            text = pattern.sub(repl, text)
    tokens = list(_TOKEN.finditer(text))
    n = len(text)
    prev_end = -1  # where the last content word ended (-1: a word left out came after it)
    for k, m in enumerate(tokens):
        tok = m.group()
        following = tokens[k + 1].group() if k + 1 < len(tokens) else ""
        if following.lower() in _ADVERBS and k + 2 < len(tokens):
            following = tokens[k + 2].group()  # "Bob now owns": the verb after the adverb
        low = tok.lower().replace("’", "'")
        acronym = len(tok) > 1 and tok.isupper()  # "US" is a place, not "us"
        skip = not acronym and (low in STOP or low in CUES or low in TIME or low in NEGATIONS or low in _SAID)
        if (low in CUES and low not in _ADVERBS) or low in RELATION_VERBS:
            verb_seen = True  # "is", "moved", "replaced", "left": what follows is the value
        emitted = False
        if after_modal and not skip:
            # The word after "may", "can", "must" is a verb ("signed-in users may make at most
            # 1000 requests"): what follows is the value, and the verb itself is wording.
            after_modal, skip, verb_seen = False, True, True
        elif low in _MODALS:
            after_modal = True
        if not skip:
            key = key_of(tok)
            unit = after_number and low in UNITS
            # A verb's word written capitalised past a sentence's start is a name ("switched to Go").
            if key not in _VERB_KEYS or unit or (tok[:1].isupper() and not first):
                value = unit or _is_value(tok, first, following) or (first and _named(tok, following))
                if out and prev_end >= 0 and text[prev_end:m.start()].strip() in ("", "-") and not out[-1].digits:
                    out[-1] = _word(out[-1].text, out[-1].key, out[-1].value, out[-1].lead, out[-1].unit, key)
                if not verb_seen and k and _DIGIT.search(tok) and tokens[k - 1].group().lower() in _VALUE_PREPS:
                    verb_seen = True  # "Sessions expire after 30 minutes": no verb known, the number is the value
                out.append(_word(tok, key, value, not verb_seen, unit))
                emitted = True
            else:
                verb_seen = True
            after_number = bool(_DIGIT.search(tok)) or low in NUMBER_WORDS or (unit and low in ("request", "requests"))
        elif low != "per":
            after_number = False
        prev_end = m.end() if emitted else -1
        # A capital after . ; : ! ? is grammar, not a name.
        e = m.end()
        while e < n and text[e] == " ":
            e += 1
        nxt = text[e] if e < n else ""
        first = nxt in ";:!?" and nxt != "" or (nxt == "." and (e + 1 >= n or text[e + 1].isspace())) \
            or (tok.endswith(".") and not _DIGIT.search(tok))
        if first:
            verb_seen = after_modal = False
            prev_end = -1
    return tuple(out)


def _named(token: str, following: str) -> bool:
    """A capitalised word opening a sentence is a name when a verb of one subject follows it
    ("Maria owns", "Redis backs", "Lucas left"): a plural noun takes "are", a name "is"."""
    if not token[:1].isupper() or token.lower() in STOP:
        return False
    nxt = following.lower()
    return nxt in ("is", "was") or (nxt not in _BE and (nxt in RELATION_VERBS or nxt in _SINGULAR_VERBS
                                                         or (nxt in CUES and nxt not in _ADVERBS)))


_BE = frozenset("is are was were be am".split())
_MODALS = frozenset({"may", "can", "must", "should", "will", "would", "could", "might", "shall", "cannot"})
# Verbs of one subject that say who holds or carries something ("Redis backs the analytics stack").
_SINGULAR_VERBS = frozenset("""
backs carries watches leads owns runs handles hosts picks indents reads answers sits left took
""".split())
# Words that say how a statement is put, not what it states.
_SAID = frozenset({"most", "least", "always", "usually", "often", "mostly", "generally", "typically", "normally"})
# One relation worded two ways: "times out after" and "the timeout is", "rate limited" and "the
# rate limit", "are retained for" and "the retention is", "costs" and "the price is".
# Only texts with one of these go through the rewordings below (most writes have none).
_WORDING_HINT = re.compile(r"tim(?:e|es|ed|ing)[ -]out|rate[ -]limit|price|cost|retention|lead|owns|manages|heads|as of|"
                           r"these days|going forward|now that|"
                           r"(?:changed?|updated?|correction)\b[^:;.]{0,20}:", re.I)
_SAME_WORDING = [(re.compile(p, re.I), r) for p, r in (
    (r"\btim(?:es|ed|ing)[ -]out\b", "has timeout"),
    (r"\btime[ -]out\b", "timeout"),
    (r"\brate[ -](limit(?:ed|s)?)\b", r"\1"),
    (r"\bthe\s+(?:price|cost)\s+of\b", "the"),
    (r"\bthe\s+retention\s+(?:period\s+)?of\b", "the"),
    (r"\bteam\s+lead\b", "lead"),
    (r"\b(?:leads|owns|manages|heads)\b", "is lead of"),
    (r"^[^:;.]{0,40}\b(?:changed?|updated?|correction)\b[^:;.]{0,20}:\s*", ""),
    (r"\bas of (?:this|the|today's|next|last) \w+,?\s*", ""),  # when, not what: "as of this release"
    (r"\bthese\s+days\b", "nowadays"),  # when, not "days" of a value
    (r"\bgoing\s+forward\b", "from now on"),
    # why it changed, not what ("... uses now that the upgrade PR landed"); not opening the text,
    # where the statement follows it ("Now that Maria left, the lead is Omar")
    (r"(?<=\w),?\s+now\s+that\b[^.;]*", " now"),
)]


_ADVERBS = frozenset("now nowadays currently anymore longer instead actually rather new newer newest latest".split())
ON_CALL = re.compile(r"\bon\s+call\b", re.I)


@functools.lru_cache(maxsize=8192)
def has_cue(text: str) -> bool:
    low = " " + " ".join(re.findall(r"[\w'’]+", text.lower())) + " "
    return any(f" {p} " in low for p in CUE_PHRASES) or any(_moves(m) for m in _FROM_TO.finditer(text))


def _moves(m: re.Match) -> bool:
    """Whether a from ... to ... says that something moved: not "from street to street", "from time
    to time" or "from one team to another", which say it varies."""
    a, b = m.group(1).lower().strip(), m.group(2).lower().strip()
    return a != b and not (a.startswith("one ") and b.startswith("another"))


_NEGATION = re.compile(r"(?<![\w'])(?:" + "|".join(re.escape(w) for w in sorted(NEGATIONS, key=len, reverse=True))
                       + r")(?![\w'])|n't")


@functools.lru_cache(maxsize=8192)
def negated(text: str) -> bool:
    return bool(_NEGATION.search(text.lower().replace("’", "'")))


NUMBER_WORDS = frozenset("""
one two three four five six seven eight nine ten eleven twelve fifteen twenty thirty forty fifty hundred
""".split())


# A choice between two options, the first one kept: "prefers tabs over spaces", "likes X more than
# Y", "uses X rather than / instead of Y", "wants X, not Y". Both texts hold the same words when a
# preference is reversed, so only the order says which one is kept.
_CHOOSES = re.compile(r"(?<![\w-])(?:prefer|prefers|preferred|like|likes|liked|love|loves|want|wants|favou?rs?|"
                      r"picks?|chooses?|chose|uses?|using)(?![\w-])", re.IGNORECASE)
_OVER = re.compile(r"(?<![\w-])(?:over|rather\s+than|instead\s+of|more\s+than|to)(?![\w-])|,\s*not(?![\w-])",
                   re.IGNORECASE)
_OPTION_END = re.compile(r"[.;,:!?]|(?<![\w-])(?:in|for|on|at|with|when|while|during|as|because|now|these)(?![\w-])",
                         re.IGNORECASE)
_OPTION_WORDS = 3  # a longer run is no option but a clause
_NOW = re.compile(r"(?<![\w-])now(?![\w-])", re.IGNORECASE)  # when, not part of the option


def _option(fragment: str) -> frozenset[str]:
    keys = [key_of(m.group()) for m in _TOKEN.finditer(fragment)
            if m.group().lower() not in STOP and m.group().lower() not in CUES]
    return frozenset(keys) if 0 < len(keys) <= _OPTION_WORDS else frozenset()


@functools.lru_cache(maxsize=8192)
def choice(text: str) -> tuple[frozenset[str], frozenset[str], str] | None:
    """The option a text keeps and the one it puts after it (their keys), and the kept one as
    written; None when it states no such choice."""
    for verb in _CHOOSES.finditer(text):
        end = re.search(r"[.;!?](?:\s|$)", text[verb.end():])
        sentence = text[verb.end(): verb.end() + end.start()] if end else text[verb.end():]
        for over in _OVER.finditer(sentence):
            kept, put = sentence[:over.start()], sentence[over.end():]
            stop = _OPTION_END.search(put)
            a, b = _option(kept), _option(put[:stop.start()] if stop else put)
            if a and b and a != b:
                return a, b, " ".join(_NOW.sub(" ", kept).split()).strip(", ")
    return None


# A value a text names as the one that was left: "moved from 8443", "migrated from Postgres 14",
# "3.10 is no longer supported", "instead of Jenkins", "was on port 8080", "used to listen on 8443",
# "8080 was the old port". Not "3.11 is no longer in beta": that one holds.
_LEAVING_BEFORE = re.compile(r"(?:\b(?:moved|changed|migrated|switched|went|upgraded|downgraded|relocated|bumped|up|down|"
                          r"raised|lowered|renamed)\s+from|\b(?:was|were|previously|formerly|instead of|rather than|"
                          r"used to be|used to \w+))\s+(?:(?:on|at|in|the|port|version|v|(?-i:[A-Z][\w.+#-]*))\s+){0,2}$"
                          r"|\b(?:no longer|stopped)\s+(?:\S+\s+){0,2}$", re.IGNORECASE)
_LEAVING_AFTER = re.compile(r"^\s*(?:(?:(?:is|are|was|were|has been|have been|got)\s+)?(?:no longer(?!\s+(?:in\s+)?(?:an?\s+)?"
                         r"(?:beta|alpha|preview|experimental|behind|pending|new))|not supported|unsupported|deprecated|"
                         r"retired|dropped|removed)|(?:was|were|has been|have been|got)\s+replaced|(?:is|was) the old)\b",
                         re.IGNORECASE)


def left_in(text: str, value: str) -> bool | None:
    """How ``text`` names ``value`` (as written): True only as the value that was left ("moved from
    8443", "3.10 is no longer supported"), False as one that holds somewhere, None not at all."""
    found = None
    for m in re.finditer(r"(?<![\w.])" + re.escape(value) + r"(?!\w)", text, re.IGNORECASE):
        if not (_LEAVING_BEFORE.search(text[max(0, m.start() - 40):m.start()]) or _LEAVING_AFTER.match(text[m.end():])):
            return False
        found = True
    return found


_NO_LONGER = re.compile(r"\bno longer\s+(?P<gone>[^;,.]+)[;,]\s*", re.IGNORECASE)


def current(old: str, new: str) -> str:
    """``old`` as what it states now: "moved from port 8080 to port 9090" states 9090, "no longer
    prefers dark mode; they prefer light mode" states light mode; the side it left is left out
    unless ``new`` names it again (then the two may be about that change)."""
    for m in _FROM_TO.finditer(old):
        if _moves(m) and m.group(1).lower() not in new.lower():
            return old[:m.start()] + old[m.end(1):].lstrip()
    left = _NO_LONGER.search(old)
    if left:  # unless the new text names the left value again: a name or a number of it
        named = {key_of(t.group()) for t in _TOKEN.finditer(left.group("gone"))
                 if t.group()[:1].isupper() or any(c.isdigit() for c in t.group())}
        if not named & {key_of(t.group()) for t in _TOKEN.finditer(new)}:
            return old[:left.start()] + old[left.end():]
    return old


# Who holds a thing, said in the passive ("The staging database is owned by Carol"): compared in the
# active voice when the other text names its holder first ("Alice owns the staging database"). One
# verb for all of them: which word says "holds" is wording, who holds it is the value.
_PASSIVE = re.compile(r"^(?P<thing>.+?)\s+(?:is|are)\s+(?P<when>(?:now|currently)\s+)?(?:owned|maintained|"
                      r"managed|led|run)\s+by\s+(?P<holder>[A-Z][\w'’-]*(?:\s+[A-Z][\w'’-]*)?)(?P<rest>.*)$")
_HOLDS = re.compile(r"^(?P<holder>[A-Z][\w'’-]*(?:\s+[A-Z][\w'’-]*)?)\s+(?P<when>(?:now|currently)\s+)?"
                    r"(?:owns|maintains|manages|leads|runs)\b(?P<rest>.*)$")


def holder_voice(old: str, new: str) -> tuple[str, str]:
    """Both texts in the active voice with one verb when one of them says who holds a thing in the
    passive and the other names the holder first; otherwise as they are."""
    po, pn = _PASSIVE.match(old.strip()), _PASSIVE.match(new.strip())
    ao, an = _HOLDS.match(old.strip()), _HOLDS.match(new.strip())
    if not ((po and an) or (pn and ao)):
        return old, new

    def said(m: re.Match | None, passive: bool) -> str:
        assert m is not None  # one of each pair matched
        if not passive:
            return f"{m.group('holder')} {m.group('when') or ''}owns{m.group('rest')}"
        thing = m.group("thing")
        thing = thing[:1].lower() + thing[1:] if thing[:4] in ("The ", "Our ") else thing
        return f"{m.group('holder')} {m.group('when') or ''}owns {thing}{m.group('rest')}"
    return said(po or ao, bool(po)), said(pn or an, bool(pn))


_NOT_NAMED = re.compile(r",\s*not\s+(?P<named>[^,.;!?]+)")


def named_instead(old: str, new: str) -> tuple[str, str]:
    """``new`` with ", not X" said as "instead of X" when X is what ``old`` says ("... owned by
    Carol, not Alice" after "Alice owns ..."): it names the replaced value, it denies nothing.
    Also X ("" when ``new`` is returned as it is)."""
    m = _NOT_NAMED.search(new)
    if not m:
        return new, ""
    named = {key_of(t.group()) for t in _TOKEN.finditer(m.group("named")) if t.group().lower() not in STOP}
    said = {key_of(t.group()) for t in _TOKEN.finditer(old)}
    if not named or not named <= said:
        return new, ""
    shown = m.group("named").split()
    while len(shown) > 1 and shown[0].lower() in STOP:  # "not on Mondays" replaced "Mondays"
        shown.pop(0)
    return new[:m.start()] + " instead of " + m.group("named") + new[m.end():], " ".join(shown)


# Where the replacing value ends: punctuation, or a word that opens what it is for or where.
# A person: "Maria", "Priya Raman" ("We retired the old VPN" names no one).
_NAME = r"(?!(?:We|They|It|He|She|I|You|The|Our|Their|This|That|These|Those)\b)[A-Z][\w'’-]*(?:\s+[A-Z][\w'’-]*)?"
_UNTIL = r"(?=\s+(?:for|in|on|at|as|across|because|since|after|when|last|this|and|but|now)\b|\s*[.;,!?](?!\w)|\s*$)"
_FRAGMENT = r"(?:[^.;,!?]|\.(?=\w)){1,40}?"  # "Python 3.12", "Fly.io" are one value
# Ways a text names the value it replaces and the one that replaces it, in the order tried.
_REPLACEMENTS = (
    # "The user replaced espresso with green tea", "replacing Memcached by Redis"
    re.compile(rf"\breplac(?:ed|es|e|ing)\s+(?P<gone>{_FRAGMENT})\s+(?:with|by)\s+(?P<came>{_FRAGMENT}){_UNTIL}", re.IGNORECASE),
    # "CircleCI was replaced by Buildkite"
    re.compile(rf"^\W*(?P<gone>{_FRAGMENT})\s+(?:was|were|is|are|has\s+been|have\s+been|got|is\s+being)\s+"
               rf"replaced\s+(?:with|by)\s+(?P<came>{_FRAGMENT}){_UNTIL}", re.IGNORECASE),
    # "We swapped webpack for Vite", "swapped out Jest for Vitest"
    # ("Kong has been swapped out for Envoy" is the passive form below; "Chen swapped with Kenji"
    # is a trade of turns, compared as usual)
    re.compile(rf"\bswap(?:ped|s)?\s+(?!out\s+for\b|with\b)(?:out\s+)?(?P<gone>{_FRAGMENT})\s+for\s+(?P<came>{_FRAGMENT}){_UNTIL}",
               re.IGNORECASE),
    # "switched from espresso to green tea", "migrated from Datadog to Grafana Cloud"
    re.compile(rf"\b(?:switched|switches|moved|moves|migrated|migrates|changed|went|converted|upgraded|downgraded|"
               rf"shifted|tightened|loosened|extended|shortened)"
               rf"\s+(?:\w+\s+){{0,3}}?from\s+(?P<gone>{_FRAGMENT})\s+to\s+(?P<came>{_FRAGMENT}){_UNTIL}", re.IGNORECASE),
    # "traded a ThinkPad for a MacBook", "ditched Jest for Vitest"
    re.compile(rf"\b(?:ditched|ditches|traded|trades|exchanged|abandoned|gave\s+up)\s+"
               rf"(?P<gone>{_FRAGMENT})\s+(?:for|in\s+favou?r\s+of)\s+(?P<came>{_FRAGMENT}){_UNTIL}", re.IGNORECASE),
    # "dropped Vim in favour of Zed" ("dropped support for Python 3.8" names no new value)
    re.compile(rf"\b(?:dropped|drops)\s+(?P<gone>{_FRAGMENT})\s+in\s+favou?r\s+of\s+(?P<came>{_FRAGMENT}){_UNTIL}", re.IGNORECASE),
    # "migrated off CircleCI onto GitHub Actions", "moved off Heroku to Fly.io"
    re.compile(rf"\b(?:migrated|migrates|moved|moves|switched|switches)\s+(?:\w+\s+){{0,3}}?off\s+(?P<gone>{_FRAGMENT})"
               rf"\s+(?:onto|to)\s+(?P<came>{_FRAGMENT}){_UNTIL}", re.IGNORECASE),
    # "Parcel is gone from the docs site; it is Vite now", "Heroku is out, we use Fly.io now"
    re.compile(rf"^\W*(?P<gone>{_FRAGMENT})\s+(?:is|are|was|were)\s+(?:gone|out|retired|history)\b(?P<where>[^;,.]*)[;,]\s*"
               rf"(?:it\s+is|it's|they\s+are|we\s+use|now\s+it\s+is)\s+(?:now\s+)?(?P<came>{_FRAGMENT}){_UNTIL}",
               re.IGNORECASE),
    # "Prisma has taken over from Sequelize", "Marcus took over from Priya as on-call lead"
    re.compile(rf"^\W*(?P<came>{_FRAGMENT})\s+(?:has\s+|have\s+)?(?:taken|took|takes)\s+over\s+from\s+"
               rf"(?P<gone>{_FRAGMENT}){_UNTIL}", re.IGNORECASE),
    # "Kong has been swapped out for Envoy", "AnyConnect has been phased out in favor of Tailscale"
    re.compile(rf"^\W*(?P<gone>{_FRAGMENT})\s+(?:has\s+been|have\s+been|was|were|got|is\s+being)\s+"
               rf"(?:swapped\s+out\s+for|phased\s+out\s+(?:for|in\s+favou?r\s+of)|dropped\s+in\s+favou?r\s+of)\s+"
               rf"(?P<came>{_FRAGMENT}){_UNTIL}", re.IGNORECASE),
    # "LaunchDarkly was dropped and Unleash took its place"
    re.compile(rf"^\W*(?P<gone>{_FRAGMENT})\s+(?:was|were|got|has\s+been)\s+(?:dropped|retired|removed|replaced)"
               rf"\s*,?\s+and\s+(?P<came>{_FRAGMENT})\s+(?:took|has\s+taken|takes)\s+(?:its|their)\s+place\b",
               re.IGNORECASE),
    # "Sofia passed quarterly planning over to Ravi", "Ben handed the on-call rota to Ines"
    re.compile(rf"^\W*(?P<gone>{_NAME})\s+(?:has\s+)?(?:passed|handed|hands|passes)\s+(?P<what>(?:[\w'’-]+\s+){{0,4}}?)"
               rf"(?:over\s+)?to\s+(?P<came>{_NAME}){_UNTIL}"),
    # "Maria left; the lead is now Tom", "Maria has left, and Tom is the lead now"
    re.compile(rf"^\W*(?P<gone>{_NAME})\s+(?:has\s+)?(?:left|quit|retired|moved\s+on)\b(?P<where>[^;,.]*)[;,]\s*(?:and\s+|so\s+)?"
               rf"(?:(?P<role>(?:the\s+)?(?:[\w-]+\s+){{0,3}}?)(?:is|are)\s+now\s+(?P<came>{_FRAGMENT}){_UNTIL}|"
               rf"(?P<came2>{_NAME})\s+(?:is|has\s+taken\s+over|took\s+over|takes\s+over)\b)"),
)
# "Vault replaced AWS Secrets Manager": tried last, and only with a name before the verb ("The team
# replaced the old laptops" says who did it, not what came instead).
_NAME_REPLACED = re.compile(rf"^\W*(?P<came>{_FRAGMENT})\s+(?:has\s+|have\s+)?(?:replaced|replaces)\s+"
                            rf"(?P<gone>{_FRAGMENT}){_UNTIL}", re.IGNORECASE)
_NAMED_VALUE = re.compile(r"[A-Z0-9._/#+-]")
_ARTICLE = re.compile(r"^(?:the|a|an|our|their|its|his|her|my)\s+", re.IGNORECASE)


@functools.lru_cache(maxsize=4096)  # one new text is compared with each of its candidates
def replacement(text: str) -> tuple[str, str, str] | None:
    """(replaced value, new value) when a text says outright which value gave way to which
    ("replaced espresso with green tea", "CircleCI was replaced by Buildkite", "swapped webpack for
    Vite", "switched from Jira to Linear", "dropped Vim in favour of Zed", "migrated off CircleCI
    onto GitHub Actions", "Parcel is gone; it is Vite now", "uv has replaced Poetry"), and the
    rest of the text (what the change is said of: "We ... for deploys"); None otherwise."""
    for pattern in (*_REPLACEMENTS, _NAME_REPLACED):
        m = pattern.search(text)
        if m:
            groups = m.groupdict()
            gone, came = (_ARTICLE.sub("", (groups[g] or groups.get(g + "2") or "").strip()) for g in ("gone", "came"))
            if pattern is _NAME_REPLACED and not _NAMED_VALUE.search(came):
                continue
            if gone and came and gone.lower() != came.lower():
                # what the person held, where; what was handed over
                return gone, came, _rest(text, m, _place(groups.get("where")), groups.get("role"), groups.get("what"))
    return None


# Ways a text says a value is gone with nothing in its place ("We no longer use Jenkins", "Jenkins was
# retired", "stopped using Jenkins"), in the order tried; a person who left is a value gone too.
_RETIREMENTS = (
    re.compile(rf"\bno\s+longer\s+(?:use|uses|using|used|run\s+on|runs\s+on|rely\s+on|relies\s+on|depend\s+on|"
               rf"depends\s+on|need|needs|have|has|deploy\s+(?:to|on)|deploys\s+(?:to|on)|host\s+on|hosts\s+on)\s+"
               rf"(?P<gone>{_FRAGMENT}){_UNTIL}", re.IGNORECASE),
    re.compile(rf"\b(?:stopped|stop|stops|quit)\s+using\s+(?P<gone>{_FRAGMENT}){_UNTIL}", re.IGNORECASE),
    re.compile(rf"\b(?:do|does|did)\s*(?:not|n't)\s+use\s+(?P<gone>{_FRAGMENT})\s+any\s*(?:more|longer)\b", re.IGNORECASE),
    re.compile(rf"^\W*(?P<gone>{_FRAGMENT})\s+(?:is|are|was|were|has\s+been|have\s+been|got)\s+(?:now\s+)?"
               rf"(?:retired|decommissioned|deprecated|removed|shut\s+down|turned\s+off|sunset|sunsetted|"
               rf"discontinued|dropped|abandoned|gone|killed|scrapped|out|no\s+longer\s+(?:used|in\s+use|needed|maintained|supported))"
               rf"(?P<where>\s+(?:for|from|in|at|on|by|across)\s+(?:[^.;,!?]|\.(?=\w))+?)?"
               rf"(?:\s+(?:now|yesterday|today|recently|(?:last|this)\s+\w+|\w+\s+ago))?(?=\s*[.;,!](?!\w)|\s*$)",
               re.IGNORECASE),
    re.compile(rf"\b(?:retired|decommissioned|removed|dropped|abandoned|shut\s+down|got\s+rid\s+of|killed|scrapped|"
               rf"ditched)\s+"
               rf"(?!(?:and|then|so|but|in|on|at|for|last|this|now)\b)(?P<gone>{_FRAGMENT}){_UNTIL}", re.IGNORECASE),
)
_LEFT = re.compile(rf"^\W*(?P<gone>{_NAME})\s+(?:has\s+)?(?:left|quit|retired|moved\s+on)\b"
                   rf"(?P<where>\s+{_FRAGMENT})?(?=\s*[.;,!](?!\w)|\s*$)")
# Where someone left from, when it names no place of its own ("left the company").
_ANYWHERE = re.compile(r"^\s*(?:the\s+|our\s+)?(?:company|team|org|organi[sz]ation|job|firm|business)?\s*$", re.IGNORECASE)


def _rest(text: str, m: re.Match, *kept: str | None) -> str:
    """``text`` without the words ``m`` read as the change, keeping the ``kept`` parts of them
    (where a person left, the role they held): compared with the old text's words."""
    return " ".join((text[:m.start()], *(k for k in kept if k), text[m.end():]))


def _place(where: str | None) -> str:
    """What a departure names as the place left ("left the webshop": "the webshop"; "left the
    company": nothing, the person is gone from every role)."""
    return "" if not where or _ANYWHERE.match(where) else where


@functools.lru_cache(maxsize=4096)
def retirement(text: str) -> tuple[str, str, bool] | None:
    """(the value gone, the rest of the text, whether it is a person who left) when a text says a
    value is gone with nothing named in its place ("We no longer use Jenkins", "Jenkins was
    retired", "Maria left the company"); None otherwise."""
    m = _LEFT.search(text)
    if m:
        return m.group("gone").strip(), _rest(text, m, _place(m.group("where"))), True
    for pattern in _RETIREMENTS:
        m = pattern.search(text)
        if m:
            gone = _ARTICLE.sub("", m.group("gone").strip())
            if any(t.lower() not in STOP and t.lower() not in TIME for t in gone.split()):
                # "retired from the docs site": what it is said of
                return gone, _rest(text, m, m.groupdict().get("where")), False
    return None


# Plain words of which a thing holds one at a time: one in the place of another is a new value
# ("uses a light theme" -> "a dark theme", "batched monthly" -> "weekly"), where two other plain
# words in that place may name two things ("the billing dashboard" / "the sales dashboard").
_EXCLUSIVE = tuple(frozenset(key_of(w) for w in group.split()) for group in (
    "light dark",
    "hourly daily nightly weekly biweekly fortnightly monthly quarterly yearly annually",
    "tabs spaces",
    "sync async synchronous asynchronous",
    "remote onsite on-site hybrid",
    "formal casual informal",
    "concise brief short detailed verbose long",
    "metric imperial",
    "celsius fahrenheit",
    "squash rebase",
    "enabled disabled",
    "mandatory optional",
    "manual manually automatic automatically automated",
    "public private internal",
    "ascending descending",
))


def exclusive(a: str, b: str) -> bool:
    """Whether two word keys are two values of one thing that holds one at a time."""
    return a != b and any(a in group and b in group for group in _EXCLUSIVE)
