"""The shared parts every service of the facade works with: the store and its read-only
reader, the embedder, the configuration, the vector and chunk indexes, the retriever, the
learner and the scan-worker pool, plus the checks they all need (is it open, what a filter
means, what a batch of texts embeds to). Built once by ``Recallite`` and handed to each service.

May import the storage, index, retrieval, learning, validation and model modules; never a
service module or the facade.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from recallite_core.config import RecalliteConfig
from recallite_core.conversation.episodes import ChunkIndex, check_category, check_names, check_role
from recallite_core.embedding.embedder import Embedder
from recallite_core.errors import ClosedError, EmbedderMismatchError
from recallite_core.index.scan_workers import ScanPool, WorkerOptions
from recallite_core.index.vector_index import VectorIndex
from recallite_core.learning.learner import Learning
from recallite_core.policy import rules as policy
from recallite_core.retrieval.candidates import RecallFilter
from recallite_core.retrieval.retriever import Retriever
from recallite_core.storage import open_store
from recallite_core.storage.base import Storage
from recallite_core.text.validation import Limits, check_optional_name, check_scope, check_tags


class Plumbing:
    """Store, embedder, config, indexes, retriever and learner of one open ``Recallite``."""

    def __init__(self, store: Storage, embedder: Embedder, config: RecalliteConfig | None = None):
        self.store = store
        self.embedder = embedder
        self.config = config or RecalliteConfig()
        self.index = VectorIndex(embedder.dimensions)
        self.scan_pool: ScanPool | None = None
        options = WorkerOptions.parse(self.config.workers)
        if options is not None and store.path is not None:  # in-memory stores always scan inline
            # Lazy: no process starts until a recall is big enough for the pool.
            self.scan_pool = ScanPool(store.path, embedder.dimensions, options, busy_timeout_ms=store.busy_timeout_ms)
        self.retriever = Retriever(store, embedder, self.index, self.config, self.scan_pool)
        # The chunk channel (episodes.chunk_channel) scans this index, on the retriever it is given.
        self.retriever.chunk_index = ChunkIndex(embedder.dimensions)
        self.learning = Learning(store, embedder, self.config.learning, self.config.outcome_gain)
        self.retriever.learning = self.learning.outcomes
        self.closed = False
        self._read_store: Storage | None = None

    @property
    def limits(self) -> Limits:
        return self.config.limits

    def live(self) -> None:
        """Raise ClosedError once the facade is closed."""
        if self.closed:
            raise ClosedError("This Recallite is closed. Open it again with Recallite.open(path).")

    def embed(self, texts: list[str]) -> np.ndarray:
        """Vectors of ``texts`` in batches, checked against the embedder's dimensions."""
        if not texts:
            return np.empty((0, self.embedder.dimensions), dtype=np.float32)
        out = []
        bs = max(1, self.config.embed_batch_size) * 16
        for i in range(0, len(texts), bs):
            out.append(np.asarray(self.embedder.embed(texts[i : i + bs]), dtype=np.float32))
        vecs = np.vstack(out)
        if vecs.shape != (len(texts), self.embedder.dimensions):
            raise EmbedderMismatchError(
                f"The embedder returned shape {vecs.shape}; expected ({len(texts)}, {self.embedder.dimensions})."
            )
        return vecs

    def recall_filter(self, scope: Any, types: Any, statuses: Any, tags: Any, session: Any, roles: Any = None,
                      categories: Any = None) -> RecallFilter:
        """The checked filter of a list, recall or maintenance call."""
        lim = self.limits
        scopes = None
        if scope is not None:
            raw = [scope] if isinstance(scope, str) else list(scope)
            scopes = tuple(dict.fromkeys(check_scope(s, lim, self.config.default_scope) for s in raw))
        if types is not None:
            if isinstance(types, str):
                types = [types]
            types = tuple(policy.check_type(t) for t in types)
            if not types:
                types = None
        sts = tuple(policy.check_status(s) for s in ([statuses] if isinstance(statuses, str) else statuses))
        tg = tuple(check_tags(tags, lim)) if tags else None
        sessions = None
        if session is not None:
            sessions = (check_optional_name(session, "session", lim),)
        return RecallFilter(scopes=scopes, statuses=sts, types=types, tags=tg or None, sessions=sessions,
                            roles=check_names(roles, "roles", check_role), categories=check_names(categories, "categories", check_category))

    def reader(self) -> Storage:
        """A read-only connection of its own (file stores), so stats answer while a long recall
        or write holds the writer connection's lock. In-memory and server stores answer on their own."""
        if self.store.path is None:
            return self.store
        if self._read_store is None:
            self._read_store = open_store(self.store.path, read_only=True, busy_timeout_ms=self.config.busy_timeout_ms)
        return self._read_store

    def close(self, drain_timeout: float = 5.0) -> None:
        """Stop the worker pool (scans get ``drain_timeout`` seconds), then close the connections."""
        self.closed = True
        try:
            if self.scan_pool is not None:
                self.scan_pool.close(drain_timeout=drain_timeout)
            self.retriever.close()
        finally:
            if self._read_store is not None:
                self._read_store.close()
            self.store.close()
