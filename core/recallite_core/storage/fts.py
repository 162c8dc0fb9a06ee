"""The one place user text becomes an FTS5 query."""

from __future__ import annotations

import re

_WORD = re.compile(r"\w+", re.UNICODE)

STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have
    having he her here hers herself him himself his how i if in into is it its itself just me more most my
    myself no nor not now of off on once only or other our ours ourselves out over own same she should so
    some such than that the their theirs them themselves then there these they this those through to too
    under until up very was we were what when where which while who whom why will with would you your
    yours yourself yourselves
    s t d ll m re ve y o ma ain don doesn didn isn aren wasn weren hasn haven hadn won wouldn shouldn
    couldn mustn needn mightn shan""".split()  # the pieces \w+ makes of contractions ("don't" -> don, t)
)


# Words that say when a question is asked about rather than what it is about: "Which holiday did
# they take this year?" matched every "I've lived here for six years" by its "year". Left out only
# when two other words still say what it is about: in "What have I got on this week?" the week is
# the topic.
_WHEN_ASKED = re.compile(r"\b(?:these days|this (?:week|month|year)|at the moment|at present|right now|nowadays)\b", re.I)
_TOPIC_WORDS = 2


def query_terms(text: str, max_terms: int = 32) -> list[str]:
    """Lower-cased word tokens, stop words dropped (unless nothing else is left), deduplicated; the
    words of when it is asked ("these days", "this year") too, if ``_TOPIC_WORDS`` others remain."""
    words = [w.lower() for w in _WORD.findall(text)]
    if _WHEN_ASKED.search(text):
        untimed = [w.lower() for w in _WORD.findall(_WHEN_ASKED.sub(" ", text))]
        if sum(w not in STOPWORDS for w in untimed) >= _TOPIC_WORDS:
            words = untimed
    words = [w.replace("_", " ").strip() or w for w in words]
    kept = [w for w in words if w not in STOPWORDS] or words
    out: list[str] = []
    seen: set[str] = set()
    for w in kept:
        for part in w.split():
            if part and part not in seen:
                seen.add(part)
                out.append(part)
    return out[:max_terms]


def fts_query(text: str, max_terms: int = 32) -> str | None:
    """A safe FTS5 MATCH expression: every term double-quoted, OR-ed.

    Quoting makes operators (NEAR, AND, *, -, ^, column filters, parentheses) plain words;
    \\w+ tokens never contain a double quote, so no escape is needed. None when the text has
    no word at all.
    """
    terms = query_terms(text, max_terms)
    if not terms:
        return None
    return " OR ".join(f'"{t}"' for t in terms)
