"""Reading stored memories back: by id, many ids, the ids a compact retrieval showed
(``expand``), newest first by filter (``list``), and the read-only views for people
(``inspection``).

May import the plumbing, storage, models, validation and inspection; never a service module
or the facade.
"""

from __future__ import annotations

from typing import Sequence

from recallite_core.errors import MemoryNotFoundError, RetrievalNotFoundError
from recallite_core.features.inspection import Inspection
from recallite_core.models import STATUSES, Memory
from recallite_core.plumbing import Plumbing
from recallite_core.text.validation import check_scope, parse_id


class Catalog:
    """Memories by id and by filter."""

    def __init__(self, core: Plumbing):
        self.core = core

    def get(self, memory_id: str | int) -> Memory:
        self.core.live()
        mid = parse_id(memory_id)
        with self.core.store.reading() as s:
            found = s.memories.load([mid])
        if mid not in found:
            raise MemoryNotFoundError(f"No memory mem_{mid}. List memories with list() or recall() to find ids.")
        return found[mid]

    def get_many(self, memory_ids: Sequence[str | int]) -> list[Memory]:
        self.core.live()
        ids = [parse_id(i) for i in memory_ids]
        with self.core.store.reading() as s:
            found = s.memories.load(ids)
        missing = [f"mem_{i}" for i in ids if i not in found]
        if missing:
            raise MemoryNotFoundError(f"No memory {', '.join(missing)}.")
        return [found[i] for i in ids]

    def expand(self, retrieval_id: str, memory_ids: Sequence[str | int]) -> list[Memory]:
        """Full memories for ids shown by a (compact) retrieval; marks them as opened, so a later
        feedback without ``used_memory_ids`` credits exactly these."""
        self.core.live()
        rid = parse_id(retrieval_id, "ret")
        mems = self.get_many(memory_ids)
        with self.core.store.transaction() as s:
            if not s.retrievals.exists(rid):
                raise RetrievalNotFoundError(f"No retrieval ret_{rid}. Pass the retrieval_id that listed these memories.")
            s.retrievals.mark_expanded(rid, [parse_id(m.id) for m in mems])
        return mems

    def list(
        self,
        *,
        scope: str | Sequence[str] | None = None,
        types: Sequence[str] | None = None,
        statuses: Sequence[str] | None = None,
        tags: Sequence[str] | None = None,
        session: str | None = None,
        limit: int = 50,
        offset: int = 0,
        roles: Sequence[str] | None = None,
        categories: Sequence[str] | None = None,
    ) -> list[Memory]:
        """Memories newest first, filtered. ``statuses`` defaults to every status."""
        self.core.live()
        flt = self.core.recall_filter(scope, types, statuses or STATUSES, tags, session, roles, categories)
        lim = max(1, min(int(limit), 10_000))
        with self.core.store.reading() as s:
            return s.memories.newest(flt.memory_filter(), lim, max(0, int(offset)))

    def empty_scope(self, scope: str) -> dict[str, int] | None:
        """None when ``scope`` holds a memory (of any status); else every scope that does, with its
        number of memories, most first. A recall in a scope that holds nothing finds nothing: this
        tells that apart from "nothing matched" and names the scopes the caller may have meant."""
        self.core.live()
        name = check_scope(scope, self.core.limits, self.core.config.default_scope)
        with self.core.store.reading() as s:
            if s.memories.scope_holds_any(name):
                return None
            return s.memories.scope_counts()  # a pass over the scope index, only for an empty scope

    def inspection(self) -> Inspection:
        """Read-only views for people (the local browser): pages of memories by any filter, the
        retrieval log with feedback, each memory's outcome history, success over time, open
        contradictions. File stores read on a read-only connection of their own: never blocked
        by a write, and every call sees what other processes have committed."""
        self.core.live()
        return Inspection(self.core.reader(), self.core.limits, self.core.config.default_scope)
