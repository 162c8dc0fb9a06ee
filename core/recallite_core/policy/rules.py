"""Lifecycle, source trust, and score arithmetic. Pure functions: no I/O, no clock."""

from __future__ import annotations

import math

from recallite_core.errors import InvalidInputError, InvalidTransitionError
from recallite_core.models import MEMORY_TYPES, SOURCE_TYPES, STATUSES, TYPE_LAYER, MemoryType, is_memory_type

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
# Metadata of a team copy (share) whose original was replaced while the copy held its team's own
# text: the replacing memory's id. Recall and contexts warn with it; the team's revise or keep_both ends it.
STALE_COPY_KEY = "original_replaced_by"

# Multipliers on the fused score.
STATUS_FACTOR: dict[str, float] = {
    "active": 1.0,
    "validated": 0.95,
    "candidate": 0.75,
    "deprecated": 0.3,
    "superseded": 0.2,
}

# Text flagged as a possible prompt injection (metadata "flagged") is held under unflagged memories
# that match about as well, whatever its status (a user's own flagged words keep theirs): its status
# factor is multiplied by this, and no correction or question-aware step (correction_ranking.py)
# lifts it above an unflagged memory. It still leads on a clearly better match of its own.
FLAGGED_FACTOR = 0.5


def status_factor(status: str, flagged: bool = False) -> float:
    """The multiplier of a memory's status, and of its flag (FLAGGED_FACTOR)."""
    return STATUS_FACTOR[status] * (FLAGGED_FACTOR if flagged else 1.0)


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


def check_type(memory_type: str) -> MemoryType:
    if not is_memory_type(memory_type):
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
        allowed = ", ".join(sorted(TRANSITIONS[current])) or "none (revise the newer memory, or undo the supersede: restore)"
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


# Who may validate or activate a flagged memory: a person, outside the agent's tools (the CLI and the
# memory browser act as the user). The refusal and the MCP remember note both say it.
PERSON_VALIDATES = "`recallite-mcp validate {id}`, or the memory browser: `recallite-mcp ui`"


def check_actor(actor_source: str, new_status: str, target_source: str, target: str = "the memory",
                flagged: bool = False) -> None:
    """Raise TrustPolicyError when an actor asks for a lifecycle change it may not make: an
    untrusted one (llm, imported) promoting anything (validate/activate vouches for content) or
    retiring (deprecate/supersede) a memory from a trusted or medium source; any actor but a
    person (user, system) promoting a ``flagged`` memory (possible prompt injection: an agent that
    read it may be the one it steers, so it waits for a person). The unsafe override skips this
    check (the caller decides)."""
    from recallite_core.errors import TrustPolicyError

    if flagged and new_status in ("validated", "active") and trust_of(actor_source) != TRUSTED:
        raise TrustPolicyError(
            f"{target} is flagged as possible prompt injection: only a person can validate or activate it "
            f"({PERSON_VALIDATES.format(id=target)})."
        )
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


def quality(confidence: float, usefulness: float, importance: float) -> float:
    return 0.45 + 0.25 * confidence + 0.20 * usefulness + 0.10 * importance


# The outcome factor exp(gain * (u - 0.5)). These are the one home of both gains: config.py
# (RecalliteConfig.outcome_gain) and learning.py (LearningConfig.gain) take their defaults from here.
OUTCOME_GAIN = 3.0  # u = a memory's usefulness column (no learner, or LearningConfig(mode="ema"))
# u = the outcome learner's posterior mean, which its Beta prior and the coverage ramp keep close
# to 0.5, so the same evidence needs a steeper gain to move a memory as far (docs/learning.md).
LEARNED_OUTCOME_GAIN = 7.0


def outcome_factor(usefulness: float, gain: float = OUTCOME_GAIN) -> float:
    """exp(gain * (usefulness - 0.5)): what outcomes did to a memory, on the fused score's own
    scale (z-units after the exp), so a proven memory beats a close rival but not a clearly
    more relevant one. 1.0 for a memory with no feedback (usefulness 0.5)."""
    return math.exp(gain * (clamp01(usefulness) - 0.5))


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


# -- Earned validation ----------------------------------------------------------------------------------------------
# A candidate is validated by evidence from use, whoever wrote it (llm and imported text included:
# that is how untrusted text earns trust), when, over its whole outcome record:
#   - at least PROMOTION_SUCCESSES successes credited to it, from at least PROMOTION_RETRIEVALS
#     distinct retrievals (one task reported twice is one piece of evidence; feedback now takes one
#     outcome per memory per retrieval, so the successes come from as many tasks, and the count of
#     retrievals guards logs written before that);
#   - a success counts only with weight >= PROMOTION_MIN_WEIGHT: the agent named or opened the
#     memory, or it was among the first two it was shown; a faint rank-decayed credit is not use;
#   - no failure was ever credited to it (any weight);
#   - no contradicts link with a validated or active memory (either direction);
#   - it is not flagged as possible prompt injection (those wait for a person).
# Applied in the feedback transaction (engine._feedback); recorded like validate(), with the reason.
PROMOTION_SUCCESSES = 3
PROMOTION_RETRIEVALS = 2
PROMOTION_MIN_WEIGHT = 0.5

# A task that succeeded and named the memories it used did not need the others it was shown:
# each of those gets an 'unused' outcome of this weight (a failure's is 1), which the learner
# reads near that task only. Light, because an agent does not always name every rule it kept.
UNUSED_WEIGHT = 0.3
RULE_TYPES = ("constraint", "preference")  # hold for a task whether or not the agent names them
# A relative floor drops a memory that learning judged poor for the query only on this much
# failure evidence (effective weight near the query): one real failure, or two tasks like this
# one that succeeded without it; one unused showing alone never cuts it.
POOR_EVIDENCE = 0.55
# Success evidence below this near a query is none: a memory that never worked there.
NO_SUCCESS = 0.05


def earns_validation(successes: int, retrievals: int, failures: int, contradicted: bool, flagged: bool) -> bool:
    """Whether a candidate's outcome record validates it (see the rule above)."""
    return (
        successes >= PROMOTION_SUCCESSES
        and retrievals >= PROMOTION_RETRIEVALS
        and failures == 0
        and not contradicted
        and not flagged
    )


def earned_reason(successes: int, retrievals: int) -> str:
    """The reason recorded with an earned validation (metadata validated_reason)."""
    return f"earned: {successes} successes in {retrievals} retrievals, no failures"


# -- SLM-Lite: layers ---------------------------------------------------------------------------------------------
# Working memory is per session and in process only; the other three layers are stored, and a
# stored memory's layer follows from its type.
LAYERS: tuple[str, ...] = ("working", "episodic", "semantic", "procedural")
STORED_LAYERS: tuple[str, ...] = LAYERS[1:]
# TYPE_LAYER (type -> layer) lives in models.py, beside the types it maps: a Memory derives its layer from it.
# The type a memory takes when it is promoted into a layer its own type does not belong to.
LAYER_DEFAULT_TYPE: dict[str, str] = {"episodic": "episode", "semantic": "fact", "procedural": "procedure"}
LAYER_RANK: dict[str, int] = {name: i for i, name in enumerate(LAYERS)}


def check_layer(layer: str, stored_only: bool = False) -> str:
    allowed = STORED_LAYERS if stored_only else LAYERS
    if layer not in allowed:
        raise InvalidInputError(f"Unknown layer {layer!r}. Use one of: {', '.join(allowed)}.")
    return layer


def layer_of(memory_type: str) -> str:
    """The stored layer of a memory type: episode -> episodic; fact, preference, observation ->
    semantic; procedure, lesson, constraint -> procedural."""
    return TYPE_LAYER[check_type(memory_type)]


def types_of_layers(layers) -> tuple[str, ...]:
    """Memory types whose layer is among ``layers`` (working has none: it is not stored)."""
    wanted = {check_layer(x) for x in layers}
    return tuple(t for t in MEMORY_TYPES if TYPE_LAYER[t] in wanted)


def promotion_type(memory_type: str, target_layer: str, requested_type: str | None = None) -> str:
    """The type a memory gets when promoted to ``target_layer``: its own if it already belongs
    there, the requested one if that belongs there, else the layer's default type.
    Promotion only moves up (episodic -> semantic -> procedural)."""
    check_layer(target_layer, stored_only=True)
    if requested_type is not None:
        check_type(requested_type)
        if TYPE_LAYER[requested_type] != target_layer:
            raise InvalidInputError(
                f"type {requested_type!r} belongs to the {TYPE_LAYER[requested_type]} layer, not {target_layer}."
            )
        return requested_type
    return memory_type if TYPE_LAYER.get(memory_type) == target_layer else LAYER_DEFAULT_TYPE[target_layer]


def check_promotion(current_layer: str, target_layer: str) -> None:
    check_layer(target_layer, stored_only=True)
    if LAYER_RANK[target_layer] <= LAYER_RANK[current_layer]:
        raise InvalidTransitionError(
            f"A memory in the {current_layer} layer cannot be promoted to {target_layer}: promotion moves up "
            f"(working -> episodic -> semantic -> procedural). To replace its text, revise it."
        )


# -- SLM-Lite: trust score ----------------------------------------------------------------------------------------
# How far a memory is believed, from who wrote it and what happened to it since. It is not a
# ranking multiplier (confidence already is); it is shown in results and stats and filters recall
# with min_trust.
SOURCE_CREDIBILITY: dict[str, float] = {
    "user": 1.0,
    "system": 0.9,
    "tool": 0.8,
    "agent": 0.7,
    "behavioral": 0.6,  # an agent's recorded habits (capture_behavior)
    "llm": 0.4,
    "imported": 0.3,
}
TRUST_FLOOR = 0.1
TRUST_CEILING = 1.0
CORROBORATION_STEP = 0.3  # each independent supporting source closes 30% of the gap to 1
TRUST_HALF_LIFE_DAYS = 180.0
TRUST_DECAY_FLOOR = 0.5  # decay alone never takes more than half


def credibility_key(source_type: str, behavioral: bool = False) -> str:
    """Which credibility row applies: behaviour captured from an agent counts as "behavioral"."""
    return "behavioral" if behavioral and source_type in ("agent", "tool", "system") else source_type


def contradiction_penalty(count: int) -> float:
    """Share of trust lost to live contradictions: 0.2 per contradiction, at most 0.8."""
    return min(0.8, 0.2 * max(0, int(count)))


def trust_decay(days_since_validation: float, half_life_days: float = TRUST_HALF_LIFE_DAYS) -> float:
    """1.0 when just written or validated, sliding toward 0.5: the part above 0.5 halves every half-life."""
    d = max(0.0, float(days_since_validation))
    if half_life_days <= 0:
        return 1.0
    return TRUST_DECAY_FLOOR + (1.0 - TRUST_DECAY_FLOOR) * 0.5 ** (d / half_life_days)


def trust_score(
    source: str,
    contradictions: int = 0,
    days_since_validation: float = 0.0,
    independent_sources: int = 0,
    half_life_days: float = TRUST_HALF_LIFE_DAYS,
) -> float:
    """Trust in [0.1, 1]:

        t = credibility(source)                            user 1.0 ... imported 0.3
        t = t + (1 - t) * (1 - 0.7 ** independent_sources) cross-validation
        t = t * (1 - min(0.8, 0.2 * contradictions))       contradictions
        t = t * decay(days since written / validated)      1.0 -> 0.5, half-life 180 days
        clamp to [0.1, 1]
    """
    if source not in SOURCE_CREDIBILITY:
        raise InvalidInputError(f"Unknown source {source!r}. Use one of: {', '.join(SOURCE_CREDIBILITY)}.")
    t = SOURCE_CREDIBILITY[source]
    k = max(0, int(independent_sources))
    t = t + (1.0 - t) * (1.0 - (1.0 - CORROBORATION_STEP) ** k)
    t = t * (1.0 - contradiction_penalty(contradictions))
    t = t * trust_decay(days_since_validation, half_life_days)
    if math.isnan(t):
        return TRUST_FLOOR
    return max(TRUST_FLOOR, min(TRUST_CEILING, t))


TRUST_BUCKETS: tuple[tuple[str, float, float], ...] = (
    ("0.1-0.3", 0.0, 0.3),
    ("0.3-0.5", 0.3, 0.5),
    ("0.5-0.7", 0.5, 0.7),
    ("0.7-0.9", 0.7, 0.9),
    ("0.9-1.0", 0.9, 1.01),
)


def trust_bucket(t: float) -> str:
    for name, lo, hi in TRUST_BUCKETS:
        if lo <= t < hi:
            return name
    return TRUST_BUCKETS[-1][0]


# -- SLM-Lite: belief graph ---------------------------------------------------------------------------------------
BELIEF_RELATIONS: tuple[str, ...] = ("causes", "contradicts", "supports", "requires")
BELIEF_HOP_DECAY = 0.6  # a neighbour's belief confidence = its parent's x 0.6 per hop


def belief_confidence(parent: float, hops: int = 1) -> float:
    return clamp01(parent * BELIEF_HOP_DECAY ** max(0, hops))


# -- Corrections (corrections.py) ---------------------------------------------------------------------------------
# compare(old, new): how much of the old statement the new one must repeat to be about the same
# subject. With a change cue ("no longer", "replaced", "from X to Y") half of the old subject words
# suffice (the new text is phrased its own way); without one, half of all its words, and the
# difference must sit in one place of at most CORRECTION_MAX_SLOT words. A negation ("does not run
# on port 8080") must repeat nearly everything.
CORRECTION_SUBJECT_COVER = 0.5
CORRECTION_MIN_COVER = 0.5
CORRECTION_NEGATION_COVER = 0.8
CORRECTION_MAX_SLOT = 4
# Parsed statements kept between writes (correction_words.words), counted in words: about 130 bytes
# a word (measured, strings shared) plus the texts, so ~20-25 MB at most; 150k words hold every short
# memory (~10 words) of a 15k-memory store.
CORRECTION_PARSE_WORDS = 150_000
TRUST_RANK = {UNTRUSTED: 0, MEDIUM: 1, TRUSTED: 2}
# An older memory that scores above its replacement, or above the newer of two contradicting
# memories, is put just under it: its score times this.
CORRECTION_YIELD = 0.99
# For a question about the speaker (not one put to the assistant), an assistant's turn keeps its
# own fused score (its neighbours lend it nothing) less this many z-units (x0.30 on the exp scale):
# replies lifted by the turns they answer ("A good boss makes all the difference", "Morning! Go
# ahead.") filled the best ten, and the speaker's own answer sat below them ("Who is my boss?" /
# "My new boss Marta wants the quarterly review"). `eval history` and `eval corrections --history`
# read the same from 1.0 to 2.5 (docs/corrections.md, Session 19).
REPLY_DISCOUNT = 1.2


def correction_action(sure: bool, new_source: str, old_source: str, same_type: bool = True) -> str:
    """What a detected change does: "supersede" the old memory when the detection is sure, the new
    memory's (effective) source is at least as trusted as the old one's and both are of one type
    (a fact does not retire a constraint by itself); else "contradict" (a link and a warning on
    both until someone resolves it). Nothing is ever deleted or refused."""
    if sure and same_type and TRUST_RANK[SOURCE_TRUST[new_source]] >= TRUST_RANK[SOURCE_TRUST[old_source]]:
        return "supersede"
    return "contradict"
