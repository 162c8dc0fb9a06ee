"""Checks on caller input. Each failure is a typed error that says what to do next."""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass
from typing import Any

from recallite_core.errors import ContentTooLargeError, InvalidInputError
from recallite_core.models import Source, SourceType

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_SPACE = re.compile(r"\s+")
ID_PATTERN = re.compile(r"^(mem|ret|fb|rel)_(\d{1,18})$")


@dataclass(frozen=True)
class Limits:
    max_content_bytes: int = 64 * 1024
    max_title_chars: int = 300
    max_tags: int = 32
    max_tag_chars: int = 64
    max_metadata_bytes: int = 16 * 1024
    max_metadata_depth: int = 8
    max_scope_chars: int = 200
    max_query_bytes: int = 16 * 1024
    max_limit: int = 100


def clean_text(value: Any, name: str) -> str:
    """A string with control characters (NUL included) removed; newlines and tabs kept."""
    if not isinstance(value, str):
        raise InvalidInputError(f"{name} must be text, got {type(value).__name__}.")
    return _CONTROL.sub("", value)


def check_content(content: Any, limits: Limits, name: str = "content", purpose: str = "store") -> str:
    text = clean_text(content, name).strip()
    if not text:
        raise InvalidInputError(f"{name} is empty. Pass the text you want to {purpose}.")
    size = len(text.encode("utf-8"))
    if size > limits.max_content_bytes:
        raise ContentTooLargeError(
            f"{name} is {size} bytes; the limit is {limits.max_content_bytes}. "
            "Store a summary, or split it into several memories."
        )
    return text


def check_title(title: Any, limits: Limits) -> str:
    if title is None:
        return ""
    text = _SPACE.sub(" ", clean_text(title, "title")).strip()
    if len(text) > limits.max_title_chars:
        raise ContentTooLargeError(f"title has {len(text)} characters; the limit is {limits.max_title_chars}. Shorten it.")
    return text


# Where the first sentence or line ends: the first position that follows .!? and is white
# space, or is a line break (re.split(r"(?<=[.!?])\s|\n", ..., maxsplit=1) cuts there).
# Searched as "[.!?]\s" (cut one later) or "\n", without a look-behind at every position.
_FIRST_END = re.compile(r"[.!?]\s|\n")


def derive_title(content: str, max_chars: int = 80) -> str:
    """A short title from the content: its first sentence or line, cut at a word boundary."""
    text = content.strip()
    m = _FIRST_END.search(text)
    first = text if m is None else text[: m.end() - 1 if m.group() != "\n" else m.start()]
    first = " ".join(first.split()).rstrip(".")  # str.split() and \s know the same white space
    if len(first) <= max_chars:
        return first
    cut = first[:max_chars]
    if " " in cut[max_chars // 2 :]:
        cut = cut[: cut.rfind(" ")]
    return cut.rstrip(",;:- ") + "…"


def check_tags(tags: Any, limits: Limits) -> list[str]:
    if tags is None:
        return []
    if isinstance(tags, str):
        tags = [t for t in re.split(r"[,\s]+", tags) if t]
    if not isinstance(tags, (list, tuple)):
        raise InvalidInputError("tags must be a list of short strings.")
    out: list[str] = []
    for t in tags:
        if not isinstance(t, str):
            raise InvalidInputError(f"Each tag must be a string, got {type(t).__name__}.")
        t = _SPACE.sub(" ", clean_text(t, "tag")).strip().lower()
        if not t:
            continue
        if len(t) > limits.max_tag_chars:
            raise ContentTooLargeError(f"Tag {t[:20]!r}… is longer than {limits.max_tag_chars} characters.")
        if t not in out:
            out.append(t)
    if len(out) > limits.max_tags:
        raise ContentTooLargeError(f"{len(out)} tags given; at most {limits.max_tags} are allowed.")
    return out


def _too_deep(value: Any, limit: int) -> bool:
    """True when containers nest deeper than ``limit``. Iterative: a hostile 100 000-level
    document must not hit Python's recursion limit."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        v, level = stack.pop()
        if isinstance(v, (dict, list)):
            level += 1
            if level > limit:
                return True
            stack.extend((c, level) for c in (v.values() if isinstance(v, dict) else v))
    return False


def check_metadata(metadata: Any, limits: Limits) -> dict[str, Any]:
    if metadata is None:
        return {}
    if not isinstance(metadata, dict):
        raise InvalidInputError("metadata must be a JSON object (a dict of string keys).")
    if _too_deep(metadata, limits.max_metadata_depth):
        raise InvalidInputError(f"metadata nests deeper than {limits.max_metadata_depth} levels. Flatten it.")
    try:
        encoded = json.dumps(metadata, allow_nan=False, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"metadata must be plain JSON (no NaN, no objects of other kinds): {exc}.") from None
    if len(encoded.encode("utf-8")) > limits.max_metadata_bytes:
        raise ContentTooLargeError(
            f"metadata is {len(encoded.encode())} bytes as JSON; the limit is {limits.max_metadata_bytes}."
        )
    return json.loads(encoded)


def check_scope(scope: Any, limits: Limits, default: str) -> str:
    if scope is None:
        return default
    text = clean_text(scope, "scope").strip()
    if not text:
        return default
    if len(text) > limits.max_scope_chars:
        raise InvalidInputError(f"scope is longer than {limits.max_scope_chars} characters.")
    return text


def check_optional_name(value: Any, name: str, limits: Limits) -> str | None:
    if value is None:
        return None
    text = clean_text(value, name).strip()
    if len(text) > limits.max_scope_chars:
        raise InvalidInputError(f"{name} is longer than {limits.max_scope_chars} characters.")
    return text or None


def check_source(source: Any, default: SourceType = "user") -> Source:
    if source is None:
        return Source(type=default)
    if isinstance(source, Source):
        return source
    if isinstance(source, str):
        source = {"type": source}
    if not isinstance(source, dict):
        raise InvalidInputError('source must look like {"type": "user", "id": "..."}')
    try:
        return Source(**source)
    except Exception:
        from recallite_core.models import SOURCE_TYPES

        raise InvalidInputError(
            f"source {source!r} is not valid: type must be one of {', '.join(SOURCE_TYPES)}, id an optional string."
        ) from None


def check_unit(name: str, value: Any, default: float) -> float:
    if value is None:
        return default
    if isinstance(value, bool):
        raise InvalidInputError(f"{name} must be a number between 0 and 1, got {value!r}.")
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise InvalidInputError(f"{name} must be a number between 0 and 1, got {value!r}.") from None
    if not math.isfinite(v):
        raise InvalidInputError(f"{name} must be a finite number between 0 and 1, got {value!r}.")
    return min(1.0, max(0.0, v))


def check_limit(limit: Any, limits: Limits) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int):
        try:
            if isinstance(limit, float) and limit.is_integer():
                limit = int(limit)
            else:
                raise TypeError
        except TypeError:
            raise InvalidInputError(f"limit must be a whole number from 1 to {limits.max_limit}, got {limit!r}.") from None
    if limit < 1 or limit > limits.max_limit:
        raise InvalidInputError(f"limit must be from 1 to {limits.max_limit}, got {limit}.")
    return limit


def check_query(query: Any, limits: Limits) -> str:
    text = _SPACE.sub(" ", clean_text(query, "query")).strip()
    if not text:
        raise InvalidInputError("query is empty. Describe the task or question to recall memories for.")
    if len(text.encode("utf-8")) > limits.max_query_bytes:
        raise ContentTooLargeError(f"query is longer than {limits.max_query_bytes} bytes. Summarise the task first.")
    return text


def content_hash(content: str) -> str:
    normal = " ".join(content.split()).lower()  # == _SPACE.sub(" ", content).strip().lower()
    return hashlib.sha256(normal.encode("utf-8")).hexdigest()


def parse_id(value: Any, prefix: str = "mem") -> int:
    """'mem_42' (or 42) -> 42. Anything else is an InvalidInputError."""
    if isinstance(value, bool):
        raise InvalidInputError(f"Ids look like {prefix}_42, got {value!r}.")
    if isinstance(value, int):
        if value <= 0:
            raise InvalidInputError(f"Ids look like {prefix}_42, got {value!r}.")
        return value
    if isinstance(value, str):
        m = ID_PATTERN.match(value.strip())
        if m and m.group(1) == prefix:
            return int(m.group(2))
    raise InvalidInputError(f"Ids look like {prefix}_42, got {value!r}.")


def fmt_id(prefix: str, n: int) -> str:
    return f"{prefix}_{n}"


def to_epoch(value: Any, name: str, *, negative: bool = True) -> float:
    """Epoch seconds from a number, a datetime or date, or an ISO 8601 string ("2030-01-31",
    "2024-05-08T13:56:00Z"); a naive date/time is taken as UTC. The one parser of moments."""
    from datetime import date, datetime, timezone

    if isinstance(value, bool):
        raise InvalidInputError(f"{name} must be a date/time or epoch seconds, got {value!r}.")
    if isinstance(value, (int, float)):
        v = float(value)
        if not math.isfinite(v) or (v < 0 and not negative):
            raise InvalidInputError(f"{name} must be a finite{'' if negative else ', positive'} epoch time, got {value!r}.")
        return v
    if isinstance(value, str):
        text = value.strip()
        try:
            value = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text)
        except ValueError:
            raise InvalidInputError(
                f"{name} {text!r} is not ISO 8601; use e.g. 2030-01-31 or 2024-05-08T13:56:00Z, or epoch seconds."
            ) from None
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=timezone.utc)
        return value.timestamp()
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=timezone.utc).timestamp()
    raise InvalidInputError(f"{name} must be a date/time, an ISO 8601 string or epoch seconds, got {type(value).__name__}.")


def check_valid_until(value: Any) -> float | None:
    """An expiry moment as epoch seconds (see to_epoch); None or "" for no expiry."""
    if value is None or value == "":
        return None
    return to_epoch(value, "valid_until", negative=False)
