"""Wrong arguments in one line: what was wrong and what to send instead (never a pydantic dump).

Also the advertised input schemas: titles and `null` branches of optional parameters removed,
so tools/list costs fewer tokens. Arguments are still validated by each tool's pydantic model."""

from __future__ import annotations

import json
import re
from typing import Any, Iterable, Optional

from pydantic import ValidationError


def _resolve(schema: dict, root: dict) -> dict:
    ref = schema.get("$ref")
    if ref and ref.startswith("#/$defs/"):
        return root.get("$defs", {}).get(ref.rsplit("/", 1)[1], {})
    return schema


def _non_null(schema: dict) -> dict:
    arms = [a for a in schema.get("anyOf", []) if a.get("type") != "null"]
    return arms[0] if len(arms) == 1 else schema


def expected(schema: dict, root: dict) -> str:
    """What a value of this JSON schema looks like, in words."""
    s = _resolve(_non_null(schema), root)
    if "enum" in s:
        return "one of " + ", ".join(json.dumps(v) for v in s["enum"])
    if "const" in s:
        return json.dumps(s["const"])
    kind = s.get("type")
    lo, hi = s.get("minimum", s.get("exclusiveMinimum")), s.get("maximum", s.get("exclusiveMaximum"))
    rng = f" from {lo} to {hi}" if lo is not None and hi is not None else f" ≥ {lo}" if lo is not None else f" ≤ {hi}" if hi is not None else ""
    if kind == "integer":
        return f"an integer{rng}"
    if kind == "number":
        return f"a number{rng}"
    if kind == "boolean":
        return "true or false"
    if kind == "string":
        return "a non-empty string" if s.get("minLength") else "a string"
    if kind == "array":
        item = expected(s.get("items", {}), root)
        lo, hi = s.get("minItems"), s.get("maxItems")
        size = f" ({lo} to {hi} items)" if lo and hi else f" (at least {lo})" if lo else f" (at most {hi})" if hi else ""
        return f"a list of {_plural(item)}{size}" if item.startswith(("a ", "an ")) else f"a list, each {item}{size}"
    if kind == "object":
        req = s.get("required")
        return "an object with " + " and ".join(req) if req else "a JSON object"
    if "anyOf" in s:
        return " or ".join(expected(a, root) for a in s["anyOf"])
    return "a valid value"


_QUALIFIER = re.compile(r" (?:with|from|≥|≤) ")


def _plural(item: str) -> str:
    """"an object with role and content" -> "objects with role and content": the noun takes the s,
    not the phrase's last word ("a list of object with role and contents")."""
    bare = item.removeprefix("an ").removeprefix("a ")
    qualifier = _QUALIFIER.search(bare)
    cut = qualifier.start() if qualifier else len(bare)
    return f"{bare[:cut]}s{bare[cut:]}"


def _at(schema: dict, root: dict, loc: Iterable[Any]) -> Optional[dict]:
    """The sub-schema at a pydantic error location (None when it cannot be followed)."""
    s: Optional[dict] = root
    for part in loc:
        if s is None:
            return None
        s = _resolve(_non_null(s), root)
        if isinstance(part, int):
            s = s.get("items")
        else:
            s = s.get("properties", {}).get(part)
    return s


def _shown(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 40 else text[:39] + "…"


def _path(loc: Iterable[Any]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def one_line(tool: str, exc: ValidationError, schema: dict) -> str:
    """`tool`: each wrong argument, what it must be, what was sent; one line."""
    parts = []
    for err in exc.errors(include_url=False):
        loc = [p for p in err["loc"] if not (isinstance(p, str) and p.endswith(("[key]",)))]
        name = _path(loc) or "arguments"
        sub = _at(schema, schema, loc)
        want = expected(sub, schema) if sub else err["msg"].removeprefix("Input should be ").rstrip(".")
        if err["type"] == "missing":
            parts.append(f"`{name}` is required: {want}")
        elif err["type"] in ("too_long", "too_short") and sub and _non_null(sub).get("type") == "string":
            parts.append(f"`{name}` is too {'long' if err['type'] == 'too_long' else 'short'} ({err['msg'].lower()})")
        else:
            parts.append(f"`{name}` must be {want}; got {_shown(err.get('input'))}")
    return f"{tool}: " + "; ".join(dict.fromkeys(parts)) + "."


def unknown(tool: str, names: Iterable[str], allowed: Iterable[str]) -> str:
    bad = ", ".join(f"`{n}`" for n in sorted(names))
    return f"{tool}: unknown argument {bad}; it takes {', '.join(allowed)}."


def compact_schema(schema: Any, nulls: bool = False) -> Any:
    """The advertised form of a schema: no titles; for an input schema (nulls=False) an optional
    parameter shows its type without the `null` branch and `default: null` (leaving it out is
    how to send nothing). Output schemas keep their null branches: clients validate against them."""
    if isinstance(schema, list):
        return [compact_schema(s, nulls) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: compact_schema(v, nulls) for k, v in schema.items()
           if not (k == "title" and isinstance(v, str)) and not (k == "additionalProperties" and v is True)}
    for key in ("properties", "$defs"):  # names here ("title" among them) are not keywords: keep them all
        if isinstance(schema.get(key), dict):
            out[key] = {k: compact_schema(v, nulls) for k, v in schema[key].items()}
    arms = out.get("anyOf")
    if not nulls and isinstance(arms, list) and any(a == {"type": "null"} for a in arms) and out.get("default", 0) is None:
        rest = [a for a in arms if a != {"type": "null"}]
        out.pop("anyOf")
        out.pop("default")
        if len(rest) == 1:
            out = {**rest[0], **out}
        else:
            out["anyOf"] = rest
    return out
