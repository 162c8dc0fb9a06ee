"""Working memory: short-lived entries per session, held in this process only.

Nothing here touches SQLite. An entry reaches the database only when it is promoted (by
``Recallite.promote`` or by the automatic pass once it has been used often enough) or, when a
session goes over its RAM cap and ``working_overflow="archive"``, as a candidate episode.
"""

from __future__ import annotations

import re
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

import numpy as np

from recallite_core.errors import MemoryNotFoundError

if TYPE_CHECKING:  # annotations only
    from recallite_core.models import MemoryType, SourceType

_WORD = re.compile(r"\w+", re.UNICODE)
STOPWORDS = frozenset(
    """a an and are as at be but by for from has have how i if in into is it its me my not of on or our so that the
    their them then there these they this to was we were what when where which who why will with you your do does
    did can could should would may might must shall about after before over under again also just than too very""".split()
)


def words(text: str) -> set[str]:
    """Lower-case content words with a crude plural fold (enough to match a query to an entry)."""
    out = set()
    for w in _WORD.findall(text.lower()):
        if len(w) < 2 or w in STOPWORDS:
            continue
        out.add(w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w)
    return out


@dataclass
class WorkingEntry:
    id: str
    session: str
    scope: str
    type: MemoryType
    title: str
    content: str
    tags: list[str]
    metadata: dict
    importance: float
    source_type: SourceType
    source_id: str | None
    confidence: float
    vector: np.ndarray
    words: set[str]
    nbytes: int
    created_at: float = field(default_factory=time.time)
    last_used_at: float | None = None
    uses: int = 0
    usefulness: float = 0.5


class WorkingMemory:
    """Entries per session, oldest first. Thread-safe. Over a session's cap (entries or content
    bytes) the oldest entries leave through ``on_overflow`` (archive) or are dropped."""

    def __init__(self, max_entries: int, max_bytes: int, on_overflow: Callable[[WorkingEntry], None] | None = None):
        self.max_entries = max(1, int(max_entries))
        self.max_bytes = max(1, int(max_bytes))
        self.on_overflow = on_overflow
        self._lock = threading.RLock()
        self._sessions: dict[str, OrderedDict[str, WorkingEntry]] = {}
        self._bytes: dict[str, int] = {}
        self._next = 0
        # wm_<n> -> mem_<n> for entries that were promoted or archived, so later feedback still lands.
        self.moved: OrderedDict[str, str] = OrderedDict()

    def new_id(self) -> str:
        with self._lock:
            self._next += 1
            return f"wm_{self._next}"

    def add(self, entry: WorkingEntry) -> list[WorkingEntry]:
        """Store an entry; returns the entries evicted to make room (already archived or dropped)."""
        evicted: list[WorkingEntry] = []
        with self._lock:
            sess = self._sessions.setdefault(entry.session, OrderedDict())
            for other in sess.values():  # the same text twice in a session is one entry
                if other.content == entry.content and other.scope == entry.scope:
                    return []
            sess[entry.id] = entry
            self._bytes[entry.session] = self._bytes.get(entry.session, 0) + entry.nbytes
            while len(sess) > 1 and (len(sess) > self.max_entries or self._bytes[entry.session] > self.max_bytes):
                _, old = sess.popitem(last=False)
                self._bytes[entry.session] -= old.nbytes
                evicted.append(old)
        for old in evicted:
            if self.on_overflow is not None:
                self.on_overflow(old)
        return evicted

    def get(self, entry_id: str) -> WorkingEntry:
        with self._lock:
            for sess in self._sessions.values():
                if entry_id in sess:
                    return sess[entry_id]
        raise MemoryNotFoundError(
            f"No working entry {entry_id} in this process (working memory is per process and session; "
            "it may have been promoted, archived or dropped)."
        )

    def find(self, entry_id: str) -> WorkingEntry | None:
        try:
            return self.get(entry_id)
        except MemoryNotFoundError:
            return None

    def remove(self, entry_id: str, moved_to: str | None = None) -> WorkingEntry | None:
        with self._lock:
            if moved_to:  # also for an entry already evicted (archived) from its session
                self.moved[entry_id] = moved_to
                while len(self.moved) > 10_000:
                    self.moved.popitem(last=False)
            for name, sess in self._sessions.items():
                e = sess.pop(entry_id, None)
                if e is not None:
                    self._bytes[name] -= e.nbytes
                    return e
        return None

    def entries(self, session: str | None = None) -> list[WorkingEntry]:
        with self._lock:
            if session is not None:
                return list(self._sessions.get(session, {}).values())
            return [e for sess in self._sessions.values() for e in sess.values()]

    def clear(self, session: str) -> int:
        with self._lock:
            n = len(self._sessions.pop(session, {}))
            self._bytes.pop(session, None)
            return n

    def touch(self, ids, now: float | None = None) -> None:
        now = time.time() if now is None else now
        with self._lock:
            for i in ids:
                e = self.find(i)
                if e is not None:
                    e.uses += 1
                    e.last_used_at = now

    def stats(self) -> dict[str, int]:
        with self._lock:
            return {
                "sessions": sum(1 for s in self._sessions.values() if s),
                "entries": sum(len(s) for s in self._sessions.values()),
                "bytes": sum(self._bytes.values()),
            }


def rank_entries(
    entries: list[WorkingEntry], query_words: set[str], qvec: np.ndarray, *, rrf_k: int, keyword_weight: float,
    vector_weight: float, semantic_threshold: float,
) -> list[tuple[WorkingEntry, float, int | None, int, float]]:
    """Working entries that match the query, with the same reciprocal rank fusion as stored
    memories, ranks taken among the session's entries: (entry, fusion, keyword_rank, vector_rank,
    similarity). An entry must share a content word with the query or reach the semantic-match
    threshold: unlike the stored channels, working memory never fills the list with non-matches."""
    if not entries:
        return []
    sims = np.array([float(e.vector @ qvec) for e in entries], dtype=np.float32)
    overlap = [len(e.words & query_words) / max(1, len(query_words)) for e in entries]
    vec_order = sorted(range(len(entries)), key=lambda i: (-sims[i], entries[i].id))
    vec_rank = {i: r for r, i in enumerate(vec_order, start=1)}
    kw_order = [i for i in sorted(range(len(entries)), key=lambda i: (-overlap[i], entries[i].id)) if overlap[i] > 0]
    kw_rank = {i: r for r, i in enumerate(kw_order, start=1)}
    out = []
    for i, e in enumerate(entries):
        if i not in kw_rank and sims[i] < semantic_threshold:
            continue
        fusion = vector_weight / (rrf_k + vec_rank[i])
        if i in kw_rank:
            fusion += keyword_weight / (rrf_k + kw_rank[i])
        out.append((e, fusion, kw_rank.get(i), vec_rank[i], float(sims[i])))
    return out
