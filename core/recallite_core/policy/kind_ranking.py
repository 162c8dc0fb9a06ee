"""Ranking by the kind of tool a question asks for: "Which web framework does the backend use?"
puts "The backend depends on Flask." above "The backend depends on httpx.", which the embedder
finds nearer (``text.kinds``). One step of ``correction_ranking.newer_first``; it writes nothing."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import Any

from recallite_core.storage.base import Session
from recallite_core.text.kinds import answers_kind, asked_kinds


def kind_fits(session: Session, loaded: Mapping[int, Any], ids: Sequence[int], query: str,
              flagged: AbstractSet[int] = frozenset()) -> dict[int, bool | None]:
    """For a question that asks for a kind of tool, whether each of the ranked ``ids`` names one of
    that kind (True), only tools of other kinds (False), or none it knows (None); empty when the
    question asks for no kind, or when it tells none of them apart. Texts not in ``loaded`` are
    read from the ``session``. A ``flagged`` memory (possible prompt injection) is never placed."""
    kinds = asked_kinds(query)
    if not kinds:
        return {}
    missing = [mid for mid in ids if mid not in loaded]
    texts = {mid: m.content for mid, m in {**loaded, **(session.memories.load(missing) if missing else {})}.items()}
    fits = {mid: None if mid in flagged else answers_kind(texts[mid], kinds) for mid in ids if mid in texts}
    values = set(fits.values())
    return fits if True in values and False in values else {}


# How much stronger a memory's other evidence may be for one of the kind asked to pass it: the
# kind of a tool decides between memories the question finds about as near, not against a clear
# lead (a tool the gazetteer files under another kind than the asker means stays first).
KIND_LEAD = 4.0


def kind_places(final: dict[int, float], fits: Mapping[int, bool | None],
                pinned: AbstractSet[int] = frozenset(), lead: float = KIND_LEAD) -> None:
    """Each memory of the kind asked passes those above it that name only other kinds, unless one
    scores more than ``lead`` times its score (the name step passes its own); both groups keep
    their own order, and the moved memories trade places (scores) among themselves. A memory naming no known tool keeps
    its place, and so does one ``pinned`` (placed by another step). Changes ``final`` in place."""
    order = [mid for mid in sorted(fits, key=lambda m: -final[m]) if fits[mid] is not None and mid not in pinned]
    if len(order) < 2:
        return
    slots = [final[mid] for mid in order]  # best first
    for mid in [m for m in order if fits[m]]:
        at = order.index(mid)
        while at and not fits[order[at - 1]] and final[order[at - 1]] <= final[mid] * lead:
            order[at - 1], order[at] = order[at], order[at - 1]
            at -= 1
    for mid, score in zip(order, slots):
        final[mid] = score
