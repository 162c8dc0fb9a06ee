"""recallite_core: the memory engine behind recallite-mcp. Knows nothing of MCP."""

from importlib.metadata import PackageNotFoundError as _PackageNotFoundError
from importlib.metadata import version as _version

from recallite_core.config import RecalliteConfig
from recallite_core.embedding.embedder import CallableEmbedder, Embedder, HashEmbedder
from recallite_core.embedding.resolve import resolve_embedder
from recallite_core.engine import Recallite
from recallite_core.errors import (
    ClosedError,
    ContentTooLargeError,
    EmbedderError,
    EmbedderMismatchError,
    EmbedderUnavailableError,
    InvalidInputError,
    InvalidTransitionError,
    MemoryNotFoundError,
    NotFoundError,
    QueueFullError,
    RecalliteError,
    RetrievalNotFoundError,
    ScanAbortedError,
    ScanError,
    SchemaVersionError,
    StoreError,
    TrustPolicyError,
    WorkerCrashedError,
    WorkerTimeoutError,
)
from recallite_core.index.scan_workers import ScanPool, ScanResult, WorkerOptions
from recallite_core.learning.learner import LearningConfig
from recallite_core.models import (
    Citation,
    ContextResult,
    EpisodeInfo,
    FeedbackResult,
    ForgetResult,
    Memory,
    RecallHit,
    RecallResult,
    ReconcileReport,
    Relation,
    RelationCounts,
    ScoreBreakdown,
    SessionContext,
    Source,
    Stats,
)
from recallite_core.retrieval.rerank import RerankerUnavailableError
from recallite_core.text.validation import Limits

# The version lives in pyproject.toml only; the installed distribution's metadata carries it.
try:
    __version__ = _version("recallite-mcp")
except _PackageNotFoundError:  # a source tree on sys.path that was never installed
    __version__ = "0+unknown"

__all__ = [
    "Recallite", "RecalliteConfig", "LearningConfig", "Limits", "Embedder", "HashEmbedder", "CallableEmbedder", "resolve_embedder",
    "Memory", "Source", "RecallHit", "RecallResult", "ScoreBreakdown", "ContextResult", "FeedbackResult",
    "Relation", "RelationCounts", "Stats", "RecalliteError", "InvalidInputError", "ContentTooLargeError",
    "NotFoundError", "MemoryNotFoundError", "RetrievalNotFoundError", "InvalidTransitionError", "TrustPolicyError",
    "EmbedderError", "EmbedderUnavailableError", "EmbedderMismatchError", "StoreError", "SchemaVersionError",
    "ClosedError", "ScanError", "WorkerTimeoutError", "QueueFullError", "ScanAbortedError", "WorkerCrashedError",
    "ScanPool", "ScanResult", "WorkerOptions",
    # conversation memory
    "EpisodeInfo", "Citation", "ForgetResult", "SessionContext", "ReconcileReport", "RerankerUnavailableError",
]
