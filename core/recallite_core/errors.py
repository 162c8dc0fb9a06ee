"""Typed errors of the engine. Every message says what went wrong and what to do next."""

from __future__ import annotations


class RecalliteError(Exception):
    """Base class of every error the engine raises on purpose."""

    code = "recallite_error"


class InvalidInputError(RecalliteError, ValueError):
    """An argument is empty, malformed, out of range or of an unknown kind."""

    code = "invalid_input"


class ContentTooLargeError(InvalidInputError):
    """Content, title, metadata or tags exceed a configured size limit."""

    code = "content_too_large"


class NotFoundError(RecalliteError, LookupError):
    """A referenced object does not exist."""

    code = "not_found"


class MemoryNotFoundError(NotFoundError):
    code = "memory_not_found"


class RetrievalNotFoundError(NotFoundError):
    code = "retrieval_not_found"


class InvalidTransitionError(RecalliteError):
    """A lifecycle change that the policy does not allow."""

    code = "invalid_transition"


class TrustPolicyError(RecalliteError):
    """An untrusted source tried something only a trusted source (or the unsafe override) may do."""

    code = "trust_policy"


class EmbedderError(RecalliteError):
    code = "embedder_error"


class EmbedderUnavailableError(EmbedderError):
    """The requested embedder cannot run here (package missing, model file damaged)."""

    code = "embedder_unavailable"


class EmbedderMismatchError(EmbedderError):
    """The database was embedded with another model or dimension count."""

    code = "embedder_mismatch"


class StoreError(RecalliteError):
    """The database file cannot be opened, read or written."""

    code = "store_error"


class SchemaVersionError(StoreError):
    """The database was written by a newer version of recallite."""

    code = "schema_version"


class ClosedError(RecalliteError):
    code = "closed"


class ScanError(RecalliteError):
    """A vector scan in the worker pool did not complete. ``Recallite`` falls back to the
    in-process scan when the pool is configured with ``fallback="inline"``."""

    code = "scan_error"


class WorkerTimeoutError(ScanError):
    """A scan took longer than ``task_timeout`` (queue wait included)."""

    code = "worker_timeout"


class QueueFullError(ScanError):
    """``max_queue`` scans are already waiting; the scan was refused at once."""

    code = "queue_full"


class ScanAbortedError(ScanError):
    """The caller cancelled the scan (queued or running), or the pool was closed under it."""

    code = "scan_aborted"


class WorkerCrashedError(ScanError):
    """A worker process died while holding part of the scan. It is replaced automatically."""

    code = "worker_crashed"
