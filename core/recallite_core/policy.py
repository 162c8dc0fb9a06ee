"""Lifecycle, source trust, and score arithmetic. Pure functions: no I/O, no clock."""

from __future__ import annotations

import math

from .errors import InvalidInputError, InvalidTransitionError
from .models import MEMORY_TYPES, SOURCE_TYPES, STATUSES

TRUSTED, MEDIUM, UNTRUSTED = "trusted", "medium", "untrusted"

SOURCE_TRUST: dict[str, str] = {
    "user": TRUSTED,
    "system": TRUSTED,
    "tool": MEDIUM,
    "agent": MEDIUM,
    "llm": UNTRUSTED,
    "imported": UNTRUSTED,
}

# Starting confidence by source: what we believe before any evidence.
SOURCE_CONFIDENCE: dict[str, float] = {
    "user": 0.9,
    "system": 0.85,
    "tool": 0.75,
    "agent": 0.7,
    "llm": 0.5,
    "imported": 0.5,
}

# Initial status by trust level and memory type. Medium-trust sources may record what
# happened (observations, episodes) as active but their rules about the user or the code
# (preferences, constraints) wait as candidates for someone to confirm them.
INITIAL_STATUS: dict[str, dict[str, str]] = {
    TRUSTED: {t: "active" for t in MEMORY_TYPES},
    MEDIUM: {
        "observation": "active",
        "episode": "active",
        "fact": "validated",
        "lesson": "validated",
        "procedure": "validated",
        "preference": "candidate",
        "constraint": "candidate",
    },
    UNTRUSTED: {t: "candidate" for t in MEMORY_TYPES},
}

STATUS_RANK = {"candidate": 0, "validated": 1, "active": 2}

TRANSITIONS: dict[str, frozenset[str]] = {
    "candidate": frozenset({"validated", "active", "deprecated", "superseded"}),
    "validated": frozenset({"active", "deprecated", "superseded"}),
    "active": frozenset({"deprecated", "superseded"}),
    "deprecated": frozenset({"candidate", "validated", "active"}),
    "superseded": frozenset(),
}

DEFAULT_RECALL_STATUSES = ("candidate", "validated", "active")

# Multipliers on the fused score.
STATUS_FACTOR: dict[str, float] = {
    "active": 1.0,
    "validated": 0.95,
    "candidate": 0.75,
    "deprecated": 0.3,
    "superseded": 0.2,
}

PROFILES: dict[str, dict[str, float]] = {
    "default": {},
    "planner": {"procedure": 1.2, "constraint": 1.2, "lesson": 1.1, "observation": 0.85, "episode": 0.8},
    "coder": {"lesson": 1.2, "procedure": 1.15, "constraint": 1.15, "fact": 1.05, "episode": 0.8},
    "debugger": {"lesson": 1.25, "procedure": 1.1, "observation": 1.05, "preference": 0.85, "episode": 0.9},
    "assistant": {"preference": 1.25, "fact": 1.1, "episode": 1.05, "procedure": 0.9},
}


def trust_of(source_type: str) -> str:
    check_source_type(source_type)
    return SOURCE_TRUST[source_type]


def check_type(memory_type: str) -> str:
    if memory_type not in MEMORY_TYPES:
        raise InvalidInputError(f"Unknown memory type {memory_type!r}. Use one of: {', '.join(MEMORY_TYPES)}.")
    return memory_type


def check_status(status: str) -> str:
    if status not in STATUSES:
        raise InvalidInputError(f"Unknown status {status!r}. Use one of: {', '.join(STATUSES)}.")
    return status


def check_source_type(source_type: str) -> str:
    if source_type not in SOURCE_TYPES:
        raise InvalidInputError(f"Unknown source type {source_type!r}. Use one of: {', '.join(SOURCE_TYPES)}.")
    return source_type


def check_profile(profile: str, profiles: dict[str, dict[str, float]] = PROFILES) -> str:
    if profile not in profiles:
        raise InvalidInputError(f"Unknown profile {profile!r}. Use one of: {', '.join(profiles)}.")
    return profile


def initial_status(
    memory_type: str, source_type: str, requested: str | None = None, allow_unsafe_status_override: bool = False
) -> str:
    """The status a new memory starts in.

    Without a request: the table above. A request may always lower the status; raising it
    above what the source's trust allows needs ``allow_unsafe_status_override``: trusted
    sources may ask for anything, medium ones up to ``validated``, untrusted ones get
    ``candidate``.
    """
    check_type(memory_type)
    trust = trust_of(source_type)
    default = INITIAL_STATUS[trust][memory_type]
    if requested is None:
        return default
    check_status(requested)
    if requested not in STATUS_RANK:
        raise InvalidInputError(
            f"A new memory cannot start as {requested!r}; use candidate, validated or active, "
            "then deprecate or supersede it later."
        )
    if allow_unsafe_status_override or trust == TRUSTED:
        return requested
    ceiling = "validated" if trust == MEDIUM else "candidate"
    return requested if STATUS_RANK[requested] <= STATUS_RANK[ceiling] else ceiling


def check_transition(current: str, new: str, source_type: str, allow_unsafe: bool = False) -> None:
    """Raise InvalidTransitionError unless current -> new is legal.

    Memories from untrusted sources must be validated before they can become active.
    """
    check_status(new)
    if new == current:
        raise InvalidTransitionError(f"The memory is already {current}; nothing to change.")
    if new not in TRANSITIONS[current]:
        allowed = ", ".join(sorted(TRANSITIONS[current])) or "none (superseded is final; revise the newer memory)"
        raise InvalidTransitionError(f"Cannot move a memory from {current} to {new}. Allowed from {current}: {allowed}.")
    if (
        current == "candidate"
        and new == "active"
        and SOURCE_TRUST.get(source_type) == UNTRUSTED
        and not allow_unsafe
    ):
        raise InvalidTransitionError(
            f"This memory comes from an untrusted source ({source_type}); validate it first, then activate it."
        )


def check_actor(actor_source: str, new_status: str, target_source: str, target: str = "the memory") -> None:
    """Raise TrustPolicyError when an untrusted actor (llm, imported) asks for a lifecycle change
    it may not make: promoting anything (validate/activate vouches for content), or retiring
    (deprecate/supersede) a memory that came from a trusted or medium source. The unsafe
    override skips this check (the caller decides)."""
    from .errors import TrustPolicyError

    if trust_of(actor_source) != UNTRUSTED:
        return
    if new_status in ("validated", "active"):
        raise TrustPolicyError(
            f"An untrusted actor ({actor_source}) cannot {'validate' if new_status == 'validated' else 'activate'} "
            f"{target}: only a user, system, tool or agent can vouch for a memory."
        )
    if new_status in ("deprecated", "superseded") and trust_of(target_source) != UNTRUSTED:
        raise TrustPolicyError(
            f"An untrusted actor ({actor_source}) cannot retire {target}, which comes from a "
            f"{trust_of(target_source)} source ({target_source}). Ask the user, or pass allow_unsafe."
        )


def clamp01(x: float) -> float:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return 0.0
    return 0.0 if x < 0 else 1.0 if x > 1 else float(x)


def finite_unit(name: str, value: float | None, default: float) -> float:
    """Validate a caller's 0..1 number: None -> default, NaN/inf -> error, else clamped."""
    if value is None:
        return default
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise InvalidInputError(f"{name} must be a number between 0 and 1, got {value!r}.") from None
    if not math.isfinite(v):
        raise InvalidInputError(f"{name} must be a finite number between 0 and 1, got {value!r}.")
    return clamp01(v)


def quality(confidence: float, usefulness: float, importance: float) -> float:
    return 0.45 + 0.25 * confidence + 0.20 * usefulness + 0.10 * importance


def contradiction_factor(count: int) -> float:
    """Each live contradiction costs 15% of the score, at most half."""
    return 1.0 - min(0.5, 0.15 * max(0, count))


def outcome_target(outcome: str, score: float | None) -> float:
    """What a feedback says a used memory was worth, in [0, 1]."""
    if outcome == "success":
        return max(0.5, score) if score is not None else 1.0
    if outcome == "failure":
        return min(0.5, score) if score is not None else 0.0
    if outcome == "partial":
        return score if score is not None else 0.5
    raise InvalidInputError("outcome must be success, failure or partial.")


def rank_weight(rank: int) -> float:
    """Credit for a memory that was shown at ``rank`` (0-based) when the caller did not say which it used."""
    return 1.0 / (1.0 + rank)


def updated_usefulness(current: float, target: float, weight: float, rate: float = 0.35) -> float:
    return clamp01(current + rate * clamp01(weight) * (target - current))


def confidence_after_validation(c: float) -> float:
    return clamp01(max(c, 0.8) + 0.1 * (1 - max(c, 0.8)))


def confidence_after_support(c: float, supporter_confidence: float) -> float:
    return clamp01(c + 0.15 * supporter_confidence * (1 - c))


def confidence_after_contradiction(c: float) -> float:
    return clamp01(max(0.05, c - 0.1))
