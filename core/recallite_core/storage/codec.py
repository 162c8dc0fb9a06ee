"""The one owner of stored value formats: vectors as little-endian float32 BLOBs, times as
epoch seconds (UTC)."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import overload

import numpy as np

from recallite_core.errors import InvalidInputError

_DTYPE = np.dtype("<f4")


def encode_vector(vector: np.ndarray, dimensions: int | None = None) -> bytes:
    arr = np.asarray(vector, dtype=_DTYPE)
    if arr.ndim != 1:
        raise InvalidInputError(f"A vector must be one-dimensional, got shape {arr.shape}.")
    return encode_many(arr[None, :], dimensions)[0]


def encode_many(matrix: np.ndarray, dimensions: int | None = None) -> list[bytes]:
    """encode_vector for each row of an (n, dimensions) matrix, checked once for the whole batch."""
    arr = np.ascontiguousarray(matrix, dtype=_DTYPE)
    if arr.ndim != 2:
        raise InvalidInputError(f"Vectors must form a two-dimensional array, got shape {arr.shape}.")
    if dimensions is not None and arr.shape[1] != dimensions:
        raise InvalidInputError(f"Vector has {arr.shape[1]} dimensions; this store uses {dimensions}.")
    if not np.all(np.isfinite(arr)):
        raise InvalidInputError("A vector must not contain NaN or infinite values.")
    raw = arr.tobytes()
    step = arr.shape[1] * 4
    return [raw[i : i + step] for i in range(0, len(raw), step)] if step else [b""] * arr.shape[0]


def decode_vector(blob: bytes, dimensions: int | None = None) -> np.ndarray:
    if len(blob) % 4:
        raise InvalidInputError(f"A vector BLOB must be a multiple of 4 bytes, got {len(blob)}.")
    arr = np.frombuffer(blob, dtype=_DTYPE)
    if dimensions is not None and arr.shape[0] != dimensions:
        raise InvalidInputError(f"Stored vector has {arr.shape[0]} dimensions; expected {dimensions}. Run reindex.")
    return arr.astype(np.float32, copy=False)


def decode_many(blobs: list[bytes], dimensions: int) -> np.ndarray:
    """Decode many same-length BLOBs into one (n, dimensions) float32 matrix."""
    if not blobs:
        return np.empty((0, dimensions), dtype=np.float32)
    joined = b"".join(blobs)
    if len(joined) != len(blobs) * dimensions * 4:
        raise InvalidInputError(f"Stored vectors do not all have {dimensions} dimensions. Run reindex.")
    return np.frombuffer(joined, dtype=_DTYPE).reshape(len(blobs), dimensions).astype(np.float32, copy=False)


@overload
def ts(value: float) -> datetime: ...
@overload
def ts(value: None) -> None: ...
@overload
def ts(value: float | None) -> datetime | None: ...


def ts(value: float | None) -> datetime | None:
    """A stored time (epoch seconds) as an aware UTC datetime (None stays None: a time never set)."""
    return None if value is None else datetime.fromtimestamp(value, tz=timezone.utc)
