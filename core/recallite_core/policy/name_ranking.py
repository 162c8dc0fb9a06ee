"""Ranking by the name a question asks about: "What does Omar drink in the morning?" puts "Omar
replaced espresso with oat latte." above "Priya drinks espresso every morning.", which shares
more of the question's words. One step of ``correction_ranking.newer_first``; it writes nothing."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import Any

from recallite_core.policy.correction_words import CUES, RELATION_VERBS, words

_FIRST = re.compile(r"\W*([\w'-]+)")
# "Who leads payments now that Maria left?" is answered by another name than the one it asks with.
_ASKS_WHO = re.compile(r"\bwho(?:m|se)?\b", re.IGNORECASE)

# How much stronger a memory's other evidence may be for one naming what the question names to
# pass it: the name decides between memories found about as near (twice, not the kind step's
# four: a name is often said once in a question that is about something else).
NAME_LEAD = 2.0


def proper_names(query: str) -> set[str]:
    """Keys of the words a question writes capitalised past its first word: names ("Zara", "Redis");
    not acronyms ("API", "CI": things more often than someone)."""
    first = _FIRST.match(query)
    return {w.key for w in words(query) if w.text[:1].isupper() and not w.text.isupper()
            and not (first and w.text == first.group(1))}


_OPENER = re.compile(r"\W*([A-Z][\w'-]*)\s+([a-z][\w'-]*)")


def _opens_with_name(text: str) -> bool:
    """"Priya drinks ...", "Omar replaced ...": a capitalised word and a verb after it. Not a
    plural ("Deploys happen ...") nor a word before a noun ("Coffee machine on floor 3 ...")."""
    m = _OPENER.match(text)
    if not m or m.group(1).lower().endswith("s"):
        return False
    verb = m.group(2)
    return verb.endswith(("s", "ed")) or verb in RELATION_VERBS or verb in CUES


def name_fits(loaded: Mapping[int, Any], ids: Sequence[int], query: str, names: AbstractSet[str],
              flagged: AbstractSet[int] = frozenset()) -> dict[int, bool | None]:
    """For a question that names something (``names``: its ``proper_names``), whether each of the ranked ``ids``
    (texts in ``loaded``) names it too (True), or opens with another name and names none of the
    question's (False: "Priya drinks ..." for a question about Omar); None for the rest (a memory
    about "the user", a conversation turn, a ``flagged`` one). Empty for a "who" question, or when
    the names tell none of them apart."""
    if not names or _ASKS_WHO.search(query):
        return {}
    fits: dict[int, bool | None] = {}
    for mid in ids:
        m = loaded.get(mid)
        if m is None:
            continue
        if mid in flagged or m.episode is not None:
            fits[mid] = None
        elif names & {w.key for w in words(m.content)}:
            fits[mid] = True
        else:
            fits[mid] = False if _opens_with_name(m.content) else None
    values = set(fits.values())
    return fits if True in values and False in values else {}
