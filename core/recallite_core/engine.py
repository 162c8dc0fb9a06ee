"""The public facade: ``Recallite``. Plain synchronous Python, safe to call from threads.

``Recallite`` owns no behaviour of its own: it builds the shared plumbing and the services
(write path, lifecycle, catalog, conversations, search, feedback, working layer, SLM features,
maintenance, reconcile, portability, stats) and serves each public method from one of them.
May import every service module; no service imports this module.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Concatenate, Generic, ParamSpec, TypeVar, overload

from recallite_core.catalog import Catalog
from recallite_core.config import RecalliteConfig
from recallite_core.conversation.conversations import Conversations
from recallite_core.conversation.turns import TurnStore
from recallite_core.embedding.embedder import Embedder
from recallite_core.embedding.resolve import resolve_embedder
from recallite_core.errors import EmbedderMismatchError
from recallite_core.features.maintenance import Maintenance
from recallite_core.features.overview import Overview
from recallite_core.features.reconcile import Reconciler
from recallite_core.features.slm import SlmFeatures
from recallite_core.features.working import WorkingMemory
from recallite_core.features.working_layer import WorkingLayer
from recallite_core.index.scan_workers import WorkerOptions
from recallite_core.learning.feedback import FeedbackRecorder
from recallite_core.models import Memory
from recallite_core.plumbing import Plumbing
from recallite_core.policy.lifecycle import Lifecycle
from recallite_core.portability.jsonl import Portability
from recallite_core.retrieval.search import Searcher
from recallite_core.storage import is_postgres_url, open_store
from recallite_core.storage.base import Storage
from recallite_core.text.validation import Limits
from recallite_core.writer import Writer, embedding_text

__all__ = ["Recallite", "embedding_text"]

P = ParamSpec("P")
R = TypeVar("R")


class _Served(Generic[P, R]):
    """A public method of the facade served by one of its services: ``mem.remember`` is
    ``mem.writer.remember`` (same signature, docstring and static type). On the class it is the
    service's function, so ``help(Recallite.remember)`` reads the real thing."""

    def __init__(self, service: str, func: Callable[Concatenate[Any, P], R]):
        self.service, self.func = service, func
        self.__doc__ = func.__doc__

    def __set_name__(self, cls: type, name: str) -> None:
        if name != self.func.__name__:
            raise TypeError(f"Recallite.{name} must be served by a method of the same name, not {self.func.__qualname__}.")
        self.name = name

    @overload
    def __get__(self, obj: None, cls: type | None = None) -> Callable[Concatenate[Any, P], R]: ...

    @overload
    def __get__(self, obj: object, cls: type | None = None) -> Callable[P, R]: ...

    def __get__(self, obj: Any, cls: type | None = None) -> Any:
        if obj is None:
            return self.func
        return getattr(getattr(obj, self.service), self.name)


class Recallite:
    """Persistent, outcome-aware agent memory in one SQLite file.

    Open with :meth:`open`. Every public write is one transaction; every method is safe to
    call from several threads (calls are serialised on one connection).
    """

    def __init__(self, store: Storage, embedder: Embedder, config: RecalliteConfig | None = None):
        self.core = core = Plumbing(store, embedder, config)
        self.store, self.embedder, self.config = core.store, core.embedder, core.config
        self.index, self.scan_pool, self.retriever, self.learning = core.index, core.scan_pool, core.retriever, core.learning
        self.catalog = Catalog(core)
        self.turns = TurnStore(core)
        self.lifecycle = Lifecycle(core, self.catalog, self.turns)
        self.writer = Writer(core, self.catalog, self.turns, self.lifecycle)
        self.conversations = Conversations(core, self.turns, self.writer)
        self.layers = WorkingLayer(core, self.catalog, self.writer)
        self.slm = SlmFeatures(core, self.catalog, self.writer, self.lifecycle)
        self.searcher = Searcher(core, self.turns, self.conversations, self.layers, self.slm)
        self.feedback_recorder = FeedbackRecorder(core, self.catalog, self.layers)
        self.maintenance = Maintenance(core, self.catalog, self.writer, self.turns)
        self.reconciler = Reconciler(core, self.turns)
        self.portability = Portability(core, self.writer, self.turns)
        self.overview = Overview(core, self.layers)

    # -- opening and closing ----------------------------------------------------------------
    @classmethod
    def open(
        cls,
        path: str | None = None,
        *,
        embedder: "str | Embedder | Callable | None" = "default",
        dims: int | None = None,
        config: RecalliteConfig | None = None,
        on_embedder_mismatch: str = "error",
        workers: Any = None,
    ) -> "Recallite":
        """Open (creating if needed) the store at ``path``; ``None`` or ":memory:" is a private in-memory store.

        A ``postgresql://`` or ``postgres://`` URL opens a PostgreSQL + pgvector database instead
        of a SQLite file (``pip install "recallite-mcp[postgres]"``; docs/postgres.md). There the
        keyword and vector searches run through the server and scan workers are off.

        ``embedder``: "default" (MiniLM ONNX, offline; hash fallback with a warning),
        "hash", "onnx", an Embedder object, or a callable ``texts -> vectors`` with ``dims``.
        ``on_embedder_mismatch``: "error" (default) or "reindex" when the file was embedded
        with another model.
        ``workers``: vector scans in worker processes for large file stores: False, True,
        "auto" or a dict of options (see ``scan_workers.WorkerOptions``); None keeps
        ``config.workers`` (default False).
        """
        config = config or RecalliteConfig()
        if workers is not None:
            config = dataclasses.replace(config, workers=workers)
        WorkerOptions.parse(config.workers)  # a typo fails here, before the file is touched
        if is_postgres_url(path) and config.workers not in (False, None):
            # Scan workers read a SQLite file; a server store answers its own searches.
            config = dataclasses.replace(config, workers=False)
        emb = resolve_embedder(embedder, dims)
        store = open_store(path, busy_timeout_ms=config.busy_timeout_ms)
        try:
            mem = cls(store, emb, config)
            mem._check_embedder(on_embedder_mismatch)
            mem.learning.ensure_task_vectors()
        except BaseException:
            store.close()
            raise
        return mem

    def _check_embedder(self, on_mismatch: str) -> None:
        name, dims = self.store.get_meta("embedder"), self.store.get_meta("dimensions")
        ours = (self.embedder.name, str(self.embedder.dimensions))
        if (name, dims) == ours:
            return
        with self.store.reading() as s:
            vectors = s.vectors.count()
        if name is None or vectors == 0:
            with self.store.transaction() as conn:
                self.store.set_meta(conn, "embedder", ours[0])
                self.store.set_meta(conn, "dimensions", ours[1])
            return
        if on_mismatch == "reindex":
            self.reindex()
            return
        where = self.store.path or getattr(self.store, "where", None)  # a server URL without its password
        raise EmbedderMismatchError(
            f"{where or 'This store'} was embedded with {name} ({dims} dimensions); this process uses "
            f"{ours[0]} ({ours[1]} dimensions). Open it with the same embedder, or re-embed every memory with "
            f"the new one: `recallite-mcp reindex --db {where or '<db>'}` "
            "(Python: Recallite.open(path, embedder=..., on_embedder_mismatch='reindex'))."
        )

    def close(self, drain_timeout: float = 5.0) -> None:
        """Close the store. Scans in the worker pool get up to ``drain_timeout`` seconds to
        finish (later ones raise ScanAbortedError), then the workers stop."""
        if not self.core.closed:
            self.slm.close()  # drain queued behaviour events first
            self.core.close(drain_timeout)

    def __enter__(self) -> "Recallite":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def limits(self) -> Limits:
        return self.core.limits

    @property
    def working(self) -> WorkingMemory:
        """This process's working memory (per session, never written unless promoted)."""
        return self.layers.memory()

    # -- aliases (kept for callers; see docs/python-api.md, "Aliases") ----------------------------
    def add(self, text: str, **kwargs: Any) -> Memory:
        """Remember a plain observation: ``mem.add("User prefers dark mode UI.")``. Alias of :meth:`remember`."""
        return self.remember(text, **kwargs)

    def context(self, query: str, max_tokens: int = 2000, format: str = "markdown", **recall_kwargs: Any) -> str:
        """Prompt-ready text of the memories that matter for ``query``: ``build_context(...).context``."""
        return self.build_context(query, max_tokens=max_tokens, format=format, **recall_kwargs).context

    # -- served by the services -------------------------------------------------------------------
    # writing
    remember = _Served("writer", Writer.remember)
    remember_many = _Served("writer", Writer.remember_many)
    # reading
    get = _Served("catalog", Catalog.get)
    get_many = _Served("catalog", Catalog.get_many)
    expand = _Served("catalog", Catalog.expand)
    list = _Served("catalog", Catalog.list)
    empty_scope = _Served("catalog", Catalog.empty_scope)
    inspection = _Served("catalog", Catalog.inspection)
    stats = _Served("overview", Overview.stats)
    # search and context
    recall = _Served("searcher", Searcher.recall)
    format_context = _Served("searcher", Searcher.format_context)
    build_context = _Served("searcher", Searcher.build_context)
    beliefs = _Served("searcher", Searcher.beliefs)
    auto_context = _Served("searcher", Searcher.auto_context)
    # feedback
    feedback = _Served("feedback_recorder", FeedbackRecorder.feedback)
    reinforce = _Served("feedback_recorder", FeedbackRecorder.reinforce)
    # lifecycle, relations, deletion
    validate = _Served("lifecycle", Lifecycle.validate)
    activate = _Served("lifecycle", Lifecycle.activate)
    deprecate = _Served("lifecycle", Lifecycle.deprecate)
    supersede = _Served("lifecycle", Lifecycle.supersede)
    undo_supersede = _Served("lifecycle", Lifecycle.undo_supersede)
    resolve_conflict = _Served("lifecycle", Lifecycle.resolve_conflict)
    relate = _Served("lifecycle", Lifecycle.relate)
    relations = _Served("lifecycle", Lifecycle.relations)
    relation_counts = _Served("lifecycle", Lifecycle.relation_counts)
    forget = _Served("lifecycle", Lifecycle.forget)
    vacuum = _Served("lifecycle", Lifecycle.vacuum)
    # maintenance
    reindex = _Served("maintenance", Maintenance.reindex)
    consolidate = _Served("maintenance", Maintenance.consolidate)
    reconcile = _Served("reconciler", Reconciler.reconcile)
    export_jsonl = _Served("portability", Portability.export_jsonl)
    import_jsonl = _Served("portability", Portability.import_jsonl)
    # conversations
    record_turn = _Served("conversations", Conversations.record_turn)
    record_turns = _Served("conversations", Conversations.record_turns)
    episode_window = _Served("conversations", Conversations.episode_window)
    session_turns = _Served("conversations", Conversations.session_turns)
    session_context = _Served("conversations", Conversations.session_context)
    cite = _Served("conversations", Conversations.cite)
    citations = _Served("conversations", Conversations.citations)
    why = _Served("conversations", Conversations.why)
    chunks_of = _Served("turns", TurnStore.chunks_of)
    # working layer
    remember_working = _Served("layers", WorkingLayer.remember_working)
    working_entries = _Served("layers", WorkingLayer.working_entries)
    working_entry = _Served("layers", WorkingLayer.working_entry)
    clear_working = _Served("layers", WorkingLayer.clear_working)
    promote = _Served("layers", WorkingLayer.promote)
    promote_working = _Served("layers", WorkingLayer.promote_working)
    # SLM-Lite features
    trust = _Served("slm", SlmFeatures.trust)
    join_team = _Served("slm", SlmFeatures.join_team)
    leave_team = _Served("slm", SlmFeatures.leave_team)
    teams = _Served("slm", SlmFeatures.teams)
    share = _Served("slm", SlmFeatures.share)
    clean_expired = _Served("slm", SlmFeatures.clean_expired)
    revise = _Served("slm", SlmFeatures.revise)
    history = _Served("slm", SlmFeatures.history)
    capture_behavior = _Served("slm", SlmFeatures.capture_behavior)
    flush = _Served("slm", SlmFeatures.flush)
    behavior_stats = _Served("slm", SlmFeatures.behavior_stats)
    concepts = _Served("slm", SlmFeatures.concepts)
