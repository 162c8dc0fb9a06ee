"""The relation a statement states its value with: the verb before the value ("is based in
Dublin", "prefers tabs"), read as its kind (``VERB_KINDS``: "loves" and "picks" are one relation)."""

from __future__ import annotations

import functools
import re

from recallite_core.policy.correction_words import ON_CALL, RELATION_VERBS, Word, key_of

_LINKS = "the|a|an|on|in|at|to|for|with|as|by|of|from|into|its|their|our|his|her"
# A change of place: compared as "based in", "lives in" ("moved to" only before a name: "moved to
# the platform team" is no place).
_MOVES = frozenset({"relocated", "relocates", "moved", "moves"})


def relation_before(text: str, word: Word) -> str | None:
    """The relation verb right before ``word`` (an article or preposition or two between), as
    compared (its kind: ``VERB_KINDS``); None when there is none."""
    for m in _RELATION.finditer(ON_CALL.sub("on-call", text)):
        if m.group(2).lower() == word.text.lower():
            return _verb_kind(m.group(1))
    return None


@functools.lru_cache(maxsize=8192)  # a new text is compared with each of its candidates, and they with many
def first_relation(text: str) -> str | None:
    """The kind of the first relation verb of ``text`` (None: it has none)."""
    text = ON_CALL.sub("on-call", text)
    for m in _RELATION.finditer(text):
        if m.group(2).lower() in _RELATED:
            continue  # an auxiliary: "has moved to Lisbon"
        if m.group(1).lower() in ("moved", "moves") and not m.group(2)[:1].isupper():
            continue
        return _verb_kind(m.group(1))
    return None


# Relation verbs that state one relation in other words (written for this comparison): someone
# who "loves curry" and then "picks ramen", a rule that "needs" and then "requires".
VERB_KINDS = {
    **dict.fromkeys(("prefer", "like", "love", "want", "pick", "favourite", "favorite"), "prefer"),
    **dict.fromkeys(("need", "require"), "need"),
    **dict.fromkeys(("based", "located", "live", "relocated", "relocate", "relocates", "moved", "moves"), "place"),
    **dict.fromkeys(("use", "follow"), "use"),  # a way of working: "we follow GitFlow", "uses release branches"
}


def _verb_kind(verb: str) -> str:
    key = key_of(verb)
    return VERB_KINDS.get(key, key)


_RELATED = frozenset(RELATION_VERBS | _MOVES)


# A lookahead, so that in "is based in Dublin" both "is" and "based" are found, each with what follows.
_RELATION = re.compile(
    rf"(?<![\w-])({'|'.join(sorted(RELATION_VERBS | _MOVES, key=len, reverse=True))})"
    rf"(?=\s+(?:(?:{_LINKS})\s+){{0,2}}([^\s,.;:!?]+))", re.IGNORECASE)
