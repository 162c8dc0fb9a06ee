"""recallite_core: the memory engine behind recallite-mcp. Knows nothing of MCP."""

from .config import RecalliteConfig
from .embedder import CallableEmbedder, Embedder, HashEmbedder
from .embedder_resolve import resolve_embedder
from .engine import Recallite
from .learning import LearningConfig
from .errors import (
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
from .models import (
    Citation,
    ContextResult,
    EpisodeInfo,
    ForgetResult,
    ReconcileReport,
    SessionContext,
    FeedbackResult,
    Memory,
    RecallHit,
    RecallResult,
    Relation,
    RelationCounts,
    ScoreBreakdown,
    Source,
    Stats,
)
from .scan_workers import ScanPool, ScanResult, WorkerOptions
from .rerank import RerankerUnavailableError
from .validation import Limits

__version__ = "0.1.0"

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
