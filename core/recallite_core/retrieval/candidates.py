"""The values one recall passes between its steps: the filter it was asked for, the fused
candidates with what explains their scores, and the cache of query embeddings. Imports numpy,
storage's values, the vector index's filter and embedding."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from recallite_core.conversation.episodes import needs_id_list
from recallite_core.embedding.embedder import Embedder, embed_queries
from recallite_core.index.vector_index import ScanFilter
from recallite_core.models import Memory
from recallite_core.storage.base import MemoryFilter, Session


@dataclass(frozen=True)
class RecallFilter:
    scopes: tuple[str, ...] | None
    statuses: tuple[str, ...]
    types: tuple[str, ...] | None
    tags: tuple[str, ...] | None
    sessions: tuple[str | None, ...] | None  # None: a session name that was blank (check_optional_name)
    roles: tuple[str, ...] | None = None  # speakers of conversation turns (episodes.py)
    categories: tuple[str, ...] | None = None
    valid_at: float | None = None  # leave out memories whose valid_until is not after this moment

    def memory_filter(self) -> MemoryFilter:
        """The storage's filter of the same memories."""
        return MemoryFilter(scopes=self.scopes, statuses=self.statuses, types=self.types, sessions=self.sessions,
                            tags=self.tags, roles=self.roles, categories=self.categories, valid_at=self.valid_at)


@dataclass
class Fused:
    """The fused candidates of one recall, as parallel arrays: score, and what explains it
    (z of each channel, the neighbouring turn's share, the speaker boost; None: not computed)."""

    ids: np.ndarray
    score: np.ndarray
    kz: np.ndarray | None = None
    vz: np.ndarray | None = None
    share: np.ndarray | None = None
    boost: np.ndarray | None = None

    def about(self, ids: list[int]) -> tuple[dict, dict, dict, dict]:
        """(keyword z, vector z, neighbour share, speaker boost) of ``ids``, as dicts that hold
        only what applies (no share or boost where it is 0)."""
        where = {mid: k for k, mid in enumerate(self.ids.tolist())}
        out: tuple[dict, dict, dict, dict] = ({}, {}, {}, {})
        for mid in ids:
            k = where.get(mid)
            if k is None:
                continue
            for d, arr, sparse in zip(out, (self.kz, self.vz, self.share, self.boost), (False, False, True, True)):
                if arr is not None and (not sparse or arr[k] != 0):
                    d[mid] = float(arr[k])
        return out

    def worded(self, ids: list[int]) -> frozenset[int] | None:
        """Which of ``ids`` the request's words match better than the candidates' average (keyword z
        above 0); None when the keyword channel did not run."""
        if self.kz is None:
            return None
        kz = self.about(ids)[0]
        return frozenset(i for i in ids if kz.get(i, 0.0) > 0.0)


def flags_of(mem: Memory) -> list[str]:
    """The injection flags the engine recorded on a memory (metadata "flagged")."""
    flags = mem.metadata.get("flagged")
    if isinstance(flags, list):
        return [str(f) for f in flags]
    return [str(flags)] if flags else []


def scan_filter_for(session: Session, flt: RecallFilter) -> ScanFilter:
    """The filter a vector scan applies before its top-k (tags, roles and categories become an
    id list asked of the store). Shared by the inline scan and the worker processes, so both filter identically."""
    allowed = None
    if needs_id_list(flt):
        allowed = np.array(session.memories.matching(None, flt.memory_filter()), dtype=np.int64)
    return ScanFilter(scopes=flt.scopes, statuses=flt.statuses, types=flt.types, sessions=flt.sessions, allowed_ids=allowed)


class QueryVectorCache:
    """LRU of query embeddings: agents repeat their task descriptions."""

    def __init__(self, size: int):
        self.size = size
        self._data: OrderedDict[str, np.ndarray] = OrderedDict()

    def get(self, embedder: Embedder, text: str) -> np.ndarray:
        vec = self._data.get(text)
        if vec is not None:
            self._data.move_to_end(text)
            return vec
        vec = np.asarray(embed_queries(embedder, [text])[0], dtype=np.float32)
        self._data[text] = vec
        if len(self._data) > self.size:
            self._data.popitem(last=False)
        return vec
