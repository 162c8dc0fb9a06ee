"""One place per text in a ranked list: the same words stored twice are shown once."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from recallite_core.models import Memory


def distinct_texts(scored: Sequence[tuple], limit: int,
                   load: Callable[[list[int]], Mapping[int, Memory]]) -> tuple[list[tuple], dict[int, Memory]]:
    """The first ``limit`` of ``scored`` (ranked tuples, the id third) whose texts differ, with
    their memories. A text said again (the same greeting opening every session, one memory kept in
    two scopes) takes one place, the best-scored copy's: a second copy tells the agent nothing and
    costs tokens and a place another memory could fill. Equal texts are those with one content hash
    (case and spacing ignored). Memories are loaded a limit's worth at a time, so a list without
    repeats costs one load as before; a memory gone since ranking is skipped and its place filled."""
    kept: list[tuple] = []
    memories: dict[int, Memory] = {}
    seen: set[str] = set()
    start = 0
    while len(kept) < limit and start < len(scored):
        chunk = scored[start:start + limit - len(kept)]
        start += len(chunk)
        loaded = load([t[2] for t in chunk])
        for t in chunk:
            mem = loaded.get(t[2])
            if mem is None or mem.content_hash in seen:
                continue
            seen.add(mem.content_hash)
            kept.append(t)
            memories[t[2]] = mem
    return kept, memories
