"""Deterministic task generator for the closed-loop learning benchmark.

The benchmark built on top of this module lets a simulated agent play rounds of tasks
against a fresh memory store. Each round, for each task family, the agent asks the memory
for context with a paraphrased query (limit 3), acts on the top memory, succeeds iff that
memory is the family's WORKING memory, and sends feedback. Learning is visible when the
success rate climbs from the no-feedback baseline towards 1.

Task families
=============
A :class:`TaskFamily` is one recurring developer-agent task (deploy billing to staging, run
the orders migrations, fix a CrashLoopBackOff, ...). It carries:

* ``working``: the one memory whose advice works in this project;
* ``distractors`` (2-4): plausible memories on the same task, written with the same topic
  words and about the same length, that do not work here (an outdated procedure, the rule of
  another product or environment, a half-right fix);
* ``drift_replacement``: the memory that becomes the working one in the drift scenario;
* ``queries`` (8): neutral paraphrases of the TASK (never of the solution) as an agent would
  type them at task start. They never contain a token that only the working memory has
  (:func:`solution_tokens`).

All memories of a family share one ``type`` (families differ: procedure, lesson, fact,
constraint), so the type carries no hint of the role and type multipliers of a recall
profile cannot favour the working memory.

Distractors are balanced by wording: before any feedback, a hybrid retriever (FTS5 bm25 +
MiniLM cosine, fused by RRF k=60) over the whole store (all 48 families, 189 memories) ranks
the working memory first for about ``1/(1+d)`` of the queries of a family with ``d``
distractors (0.24-0.27 over seeds 1-8, expected 0.261), and the family's own memories fill
the top 3 for 93% of the queries; another family's memory comes first for 1%. Individual
families still lean one way or the other (a few never rank their working memory first
before feedback), but no family always does.
``/work/experiments/learning/check_balance.py`` (outside the repository) measures that.

Determinism
===========
Everything is pure data plus ``random.Random`` seeded with strings (``random`` hashes str
seeds with SHA-512, so results do not depend on ``PYTHONHASHSEED`` or the machine).

* :func:`generate_families` returns all 48 families (catalog order) or, for ``n < 48``, a
  seeded subset that keeps interference pairs whole where possible. Each family's query
  tuple is put in a seeded order.
* :func:`query_for` picks the query of a round: rounds are cut into blocks of ``len(queries)``
  and each block is a fresh seeded permutation, so every variant is played equally often and
  the sequence differs between seeds.
* :func:`store_memories` lists the memories to insert, in a seeded order so that insertion
  order (a common tie-breaker) does not favour working memories.

Drift scenario
==============
The first :data:`DRIFT_AFTER_ROUND` (5) rounds are played as usual. From round index 5 on
(0-based, i.e. after round 5) the working memory of a quarter of the families
(:func:`drift_families`) stops working and the family's ``drift_replacement`` is inserted;
success for those families then means using the replacement (:func:`working_key`). The
replacement is worded like the others (same lead phrase, same topic words, same length), so
it is retrievable; the learner must demote the old winner and promote the newcomer.

Interference scenario
=====================
Interference tests whether what a learner learned in one context leaks into another.
:data:`INTERFERENCE_PAIRS` lists 10 ordered pairs ``(A, B)`` of families with overlapping
topics; each family is in at most one pair:

* ``npm ci`` in the CI install  vs  adding a package to the frontend;
* Docker build cache in CI  vs  shrinking the Python image;
* CrashLoopBackOff diagnosis  vs  sizing memory of OOMKilled pods;
* ``rollout restart`` after a ConfigMap change  vs  rolling back a bad release;
* rebasing a feature branch on origin/main  vs  undoing a commit pushed to main;
* JWT validation in the gateway  vs  keeping the CRM client's OAuth token fresh;
* structlog JSON logging  vs  temporary debug level for one service;
* diagnosing a slow reporting query  vs  Postgres running out of connections;
* PyPI trusted publishing  vs  publishing the scoped npm package;
* large S3 uploads with ``aws s3 cp``  vs  direct browser uploads to S3.

A's working memory is wrong for B (``InterferencePair.rationale`` says why). Each pair
carries 6 extra query variants for B. They state B's task (B's own topic words, so B's
working memory stays the right answer and stays retrievable) in the vocabulary an agent
brings over from A, plus a *bridge*: words that occur in A's WORKING memory and not, or
rarely, in A's distractors ("registry", "exit code 137"/"OOMKilled", "restart" and
"environment variables", "force-with-lease"/"origin/main", "leeway"/"claims",
"structlog"/"stdlib", "see why ... slow", "trusted publishing"/"id-token", "multipart"/"GB",
"lockfile and package.json disagree"). So B's interference queries pull A's *working* memory
up, not just A's family, while A's own balance is untouched: A's queries never contain a
token that only A's working memory has. Measured with the hybrid retriever before any
feedback: A's working memory is in the top 3 of about 85% of the interference queries (first
in about half), and B's working memory is in the top 5 of about 80%.

Suggested protocol: every round play A with ``query_for(A, r, seed)`` and B with
``interference_query_for(pair, r, seed)`` (optionally alternating with B's own queries).
A learner that keeps one global usefulness score per memory promotes A's working memory
from A's successes, then serves it first on B's queries, where it fails; the negative
feedback demotes it for A as well, and A's success rate sags or oscillates. A learner whose
credit depends on the query context drives both A and B to success. Report A's success rate
with and without B's interference rounds, and B's success rate.
"""

from __future__ import annotations

import dataclasses

import json
import random
import re
from dataclasses import dataclass
from importlib import resources
from typing import Iterable, Sequence

__all__ = [
    "MemorySpec",
    "TaskFamily",
    "InterferencePair",
    "MEMORY_TYPES",
    "ROLES",
    "DRIFT_AFTER_ROUND",
    "INTERFERENCE_PAIRS",
    "CATALOGS",
    "Catalog",
    "load_catalog",
    "catalog_available",
    "catalog_pairs",
    "catalog_size",
    "generate_families",
    "query_for",
    "store_memories",
    "solution_tokens",
    "tokenize",
    "drift_families",
    "working_key",
    "interference_pairs",
    "interference_pair",
    "interference_query_for",
]

MEMORY_TYPES = ("lesson", "procedure", "fact", "constraint")
ROLES = ("working", "distractor", "drift_replacement")
DRIFT_AFTER_ROUND = 5


@dataclass(frozen=True)
class MemorySpec:
    """One memory to insert: ``key`` is unique across the catalog (``family:role[-n]``)."""

    key: str
    type: str
    title: str
    content: str
    role: str

    @property
    def family_key(self) -> str:
        return self.key.split(":", 1)[0]

    @property
    def text(self) -> str:
        """Title and content as one string (what an indexer would see)."""
        return f"{self.title}. {self.content}"


@dataclass(frozen=True)
class TaskFamily:
    """One recurring task with its working memory, distractors, drift replacement and queries."""

    key: str
    topic: str
    working: MemorySpec
    distractors: tuple[MemorySpec, ...]
    drift_replacement: MemorySpec
    queries: tuple[str, ...]
    catalog: str = "ops"

    @property
    def memories(self) -> tuple[MemorySpec, ...]:
        """The memories present from round 0: working first, then the distractors."""
        return (self.working, *self.distractors)

    @property
    def all_memories(self) -> tuple[MemorySpec, ...]:
        """Working, distractors and the drift replacement."""
        return (self.working, *self.distractors, self.drift_replacement)

    @property
    def n_distractors(self) -> int:
        return len(self.distractors)


@dataclass(frozen=True)
class InterferencePair:
    """Family ``a``'s working memory is pulled by ``queries`` (tasks of family ``b``) but fails there."""

    a: str
    b: str
    bridge: str
    queries: tuple[str, ...]
    rationale: str


# ---------------------------------------------------------------------------------------------
# Catalog files (package data under catalogs/, format in catalogs/README.md)
# ---------------------------------------------------------------------------------------------

_M = tuple  # (type, title, content)



def _parse_catalog(text: str, source: str = "catalog") -> tuple[dict, ...]:
    """Parse the catalog format (see ``catalogs/README.md``) into one dict per family.

    Each dict has ``key``, ``topic``, ``working``, ``distractors``, ``drift`` (as ``(type, title,
    content)``), ``queries`` and ``interference`` (``(other family key, query)`` from ``I`` lines).
    Lines starting with ``#`` are comments."""
    families: list[dict] = []
    cur: dict | None = None
    parts: list[str] | None = None
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        if line.startswith("  "):
            if parts is None:
                raise ValueError(f"{source} line {lineno}: continuation outside a memory")
            parts.append(line.strip())
            continue
        tag, _, rest = line.partition(" ")
        parts = None
        if tag == "@":
            cur = {"key": rest.strip(), "topic": "", "working": None, "distractors": [], "drift": None, "queries": [],
                   "interference": []}
            families.append(cur)
            continue
        if cur is None:
            raise ValueError(f"{source} line {lineno}: entry before the first family")
        if tag == "topic:":
            cur["topic"] = rest.strip()
        elif tag == "Q":
            cur["queries"].append(rest.strip())
        elif tag == "I":
            other, sep, query = rest.partition(" | ")
            if not sep or not other.strip() or not query.strip():
                raise ValueError(f"{source} line {lineno}: expected 'I <other-family-key> | <query>'")
            cur["interference"].append((other.strip(), query.strip()))
        elif tag in ("W", "D", "R"):
            mtype, sep, title = rest.partition(" | ")
            if not sep:
                raise ValueError(f"{source} line {lineno}: expected '<type> | <title>'")
            parts = []
            memory = [mtype.strip(), title.strip(), parts]
            if tag == "W":
                if cur["working"] is not None:
                    raise ValueError(f"{source} line {lineno}: second W in family {cur['key']!r}")
                cur["working"] = memory
            elif tag == "D":
                cur["distractors"].append(memory)
            else:
                if cur["drift"] is not None:
                    raise ValueError(f"{source} line {lineno}: second R in family {cur['key']!r}")
                cur["drift"] = memory
        else:
            raise ValueError(f"{source} line {lineno}: unknown tag {tag!r}")
    out = []
    seen: set[str] = set()
    for fam in families:
        if not re.fullmatch(r"[a-z0-9]+(?:-[a-z0-9]+)*", fam["key"]):
            raise ValueError(f"{source}: family key {fam['key']!r} is not lowercase words joined by dashes")
        if fam["key"] in seen:
            raise ValueError(f"{source}: family {fam['key']!r} appears twice")
        seen.add(fam["key"])
        if fam["working"] is None or fam["drift"] is None or not fam["distractors"]:
            raise ValueError(f"{source}: family {fam['key']!r} is incomplete")
        if not 1 <= len(fam["distractors"]) <= 4:
            raise ValueError(f"{source}: family {fam['key']!r} needs 1-4 distractors")
        if not fam["queries"]:
            raise ValueError(f"{source}: family {fam['key']!r} has no Q line")

        def done(m: list) -> _M:
            return (m[0], m[1], " ".join(m[2]))

        out.append(
            {
                "key": fam["key"],
                "topic": fam["topic"],
                "working": done(fam["working"]),
                "distractors": tuple(done(m) for m in fam["distractors"]),
                "drift": done(fam["drift"]),
                "queries": tuple(fam["queries"]),
                "interference": tuple(fam["interference"]),
            }
        )
    return tuple(out)


def _catalog_file(filename: str) -> str:
    """A file under catalogs/ (package data, so it ships in the wheel)."""
    try:
        return resources.files(__package__).joinpath("catalogs").joinpath(filename).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FileNotFoundError(f"no file catalogs/{filename} in {__package__}") from None


def _pairs_from_json(text: str) -> tuple[InterferencePair, ...]:
    """Interference pairs written out with their own bridge and rationale (ops-pairs.json)."""
    return tuple(InterferencePair(a=p["a"], b=p["b"], bridge=p["bridge"], queries=tuple(p["queries"]),
                                  rationale=p["rationale"]) for p in json.loads(text))


# The ops catalog's pairs: (A, B, bridge, extra queries for B, rationale).
INTERFERENCE_PAIRS: tuple[InterferencePair, ...] = _pairs_from_json(_catalog_file("ops-pairs.json"))


# ---------------------------------------------------------------------------------------------
# Building families
# ---------------------------------------------------------------------------------------------


def _memory(family_key: str, suffix: str, role: str, spec: _M) -> MemorySpec:
    mtype, title, content = spec
    if mtype not in MEMORY_TYPES:
        raise ValueError(f"{family_key}: unknown memory type {mtype!r}")
    return MemorySpec(key=f"{family_key}:{suffix}", type=mtype, title=title, content=content, role=role)


def _build(raw: dict, seed: int, catalog: str = "ops") -> TaskFamily:
    key = raw["key"]
    working = _memory(key, "working", "working", raw["working"])
    distractors = tuple(
        _memory(key, f"distractor-{i + 1}", "distractor", spec) for i, spec in enumerate(raw["distractors"])
    )
    drift = _memory(key, "drift", "drift_replacement", raw["drift"])
    queries = list(raw["queries"])
    random.Random(f"learning-tasks|queries|{seed}|{key}").shuffle(queries)
    return TaskFamily(
        key=key,
        topic=raw["topic"],
        working=working,
        distractors=distractors,
        drift_replacement=drift,
        queries=tuple(queries),
        catalog=catalog,
    )


# ---------------------------------------------------------------------------------------------
# Catalogs: "ops" (with INTERFERENCE_PAIRS) and the voices catalogs, all files under catalogs/
# ---------------------------------------------------------------------------------------------

CATALOGS = ("ops", "voices-dev", "voices-holdout", "voices-fresh-dev", "voices-fresh-holdout")


@dataclass(frozen=True)
class Catalog:
    """A parsed catalog: its families (in catalog order, queries in seeded order) and pairs."""

    name: str
    families: tuple[TaskFamily, ...]
    pairs: tuple[InterferencePair, ...]

    def __len__(self) -> int:
        return len(self.families)


_RAW_CACHE: dict[str, tuple[tuple[dict, ...], tuple[InterferencePair, ...]]] = {}


def _pairs_from_lines(raw: tuple[dict, ...], source: str) -> tuple[InterferencePair, ...]:
    keys = {f["key"] for f in raw}
    grouped: dict[tuple[str, str], list[str]] = {}
    for fam in raw:
        for other, query in fam.get("interference", ()):
            if other not in keys:
                raise ValueError(f"{source}: family {fam['key']!r} has an I line for unknown family {other!r}")
            if other == fam["key"]:
                raise ValueError(f"{source}: family {fam['key']!r} has an I line pointing at itself")
            grouped.setdefault((other, fam["key"]), []).append(query)
    return tuple(
        InterferencePair(
            a=a,
            b=b,
            bridge=f"wording of {a} (from the I lines of {b})",
            queries=tuple(qs),
            rationale=f"{a}'s working memory answers {a}'s task, not {b}'s.",
        )
        for (a, b), qs in grouped.items()
    )


def _catalog_text(name: str) -> str:
    try:
        return _catalog_file(f"{name}.txt")
    except FileNotFoundError:
        raise FileNotFoundError(f"catalog {name!r}: no file catalogs/{name}.txt in {__package__}") from None


def _raw(catalog: str) -> tuple[tuple[dict, ...], tuple[InterferencePair, ...]]:
    if catalog not in CATALOGS:
        raise ValueError(f"unknown catalog {catalog!r}; choose from {', '.join(CATALOGS)}")
    if catalog not in _RAW_CACHE:
        raw = _parse_catalog(_catalog_text(catalog), source=f"catalogs/{catalog}.txt")
        pairs = INTERFERENCE_PAIRS if catalog == "ops" else _pairs_from_lines(raw, f"catalogs/{catalog}.txt")
        _RAW_CACHE[catalog] = (raw, pairs)
    return _RAW_CACHE[catalog]


def catalog_available(catalog: str) -> bool:
    """Whether ``catalog`` can be loaded (a data file may not exist yet)."""
    try:
        _raw(catalog)
    except FileNotFoundError:
        return False
    return True


def load_catalog(name: str = "ops", seed: int = 7) -> Catalog:
    """All families of catalog ``name`` (``ops``, ``voices-dev``, ``voices-holdout``) and its pairs.

    Every catalog is read from ``catalogs/<name>.txt`` (package data). The pairs of ``ops`` are
    :data:`INTERFERENCE_PAIRS` (``catalogs/ops-pairs.json``); those of the others come from
    their ``I`` lines."""
    raw, pairs = _raw(name)
    return Catalog(name=name, families=tuple(_build(r, seed, name) for r in raw), pairs=pairs)


def catalog_pairs(catalog: str = "ops") -> tuple[InterferencePair, ...]:
    """The interference pairs of ``catalog``."""
    return _raw(catalog)[1]


def catalog_size(catalog: str = "ops") -> int:
    """Number of families in ``catalog`` (48 for ops)."""
    return len(_raw(catalog)[0])


def generate_families(n_families: int | None = None, seed: int = 7, catalog: str = "ops") -> list[TaskFamily]:
    """Return ``n_families`` task families of ``catalog``, deterministically for a given ``seed``.

    ``None`` (or the catalog size) returns every family in catalog order. With fewer, a seeded
    subset is chosen: interference pairs count as one unit of two families and are kept whole
    whenever they fit, so ``interference_pairs`` still finds pairs in a subset. The subset is
    returned in catalog order. Each family's queries are in a seeded order.
    """
    raw, pairs = _raw(catalog)
    total = len(raw)
    if n_families is None:
        n_families = total
    if not isinstance(n_families, int) or isinstance(n_families, bool):
        raise TypeError("n_families must be an int")
    if n_families < 1 or n_families > total:
        raise ValueError(f"n_families must be between 1 and {total}, got {n_families}")
    index = {r["key"]: i for i, r in enumerate(raw)}
    if n_families == total:
        chosen = list(range(total))
    else:
        paired: dict[str, tuple[int, ...]] = {}
        for pair in pairs:
            if pair.a in paired or pair.b in paired:
                continue  # a family in two pairs: the first pair makes the unit
            unit = (index[pair.a], index[pair.b])
            paired[pair.a] = unit
            paired[pair.b] = unit
        units: list[tuple[int, ...]] = []
        seen: set[tuple[int, ...]] = set()
        for i, r in enumerate(raw):
            unit = paired.get(r["key"], (i,))
            if unit not in seen:
                seen.add(unit)
                units.append(unit)
        rng = random.Random(f"learning-tasks|subset|{seed}|{n_families}")
        rng.shuffle(units)
        picked: list[int] = []
        for unit in units:
            if len(picked) + len(unit) <= n_families:
                picked.extend(unit)
            if len(picked) == n_families:
                break
        if len(picked) < n_families:  # only pairs left: split the first one that is not used
            for unit in units:
                for i in unit:
                    if i not in picked and len(picked) < n_families:
                        picked.append(i)
        chosen = sorted(picked)
    return [_build(raw[i], seed, catalog) for i in chosen]


def trimmed(families: Sequence[TaskFamily], distractors: int | None = None,
            phrasings: int | None = None) -> list[TaskFamily]:
    """The families with at most ``distractors`` distractors and ``phrasings`` phrasings each (the
    first ones; None keeps all): a smaller closed loop, e.g. three candidate procedures and three
    phrasings per task as an agent meets them."""
    for name, n in (("distractors", distractors), ("phrasings", phrasings)):
        if n is not None and n < 1:
            raise ValueError(f"{name} must be at least 1, got {n}")
    return [dataclasses.replace(f, distractors=f.distractors[:distractors] if distractors else f.distractors,
                                queries=f.queries[:phrasings] if phrasings else f.queries) for f in families]


def _cycle_pick(items: Sequence[str], tag: str, key: str, round_index: int, seed: int) -> str:
    if round_index < 0:
        raise ValueError("round_index must be >= 0")
    n = len(items)
    block, offset = divmod(round_index, n)
    order = sorted(items)  # independent of the (seeded) order of the tuple
    random.Random(f"learning-tasks|{tag}|{seed}|{key}|{block}").shuffle(order)
    return order[offset]


def query_for(family: TaskFamily, round_index: int, seed: int) -> str:
    """The query variant played for ``family`` in ``round_index`` (0-based).

    Rounds come in blocks of ``len(family.queries)``; each block is a seeded permutation of
    the variants, so every variant is played equally often and no variant repeats within a
    block. Depends only on (seed, family key, round).
    """
    return _cycle_pick(family.queries, "query", family.key, round_index, seed)


def store_memories(families: Iterable[TaskFamily], seed: int, include_drift: bool = False) -> list[MemorySpec]:
    """All memories of ``families`` in a seeded insertion order (working memories not first)."""
    out: list[MemorySpec] = []
    for fam in families:
        out.extend(fam.all_memories if include_drift else fam.memories)
    out.sort(key=lambda m: m.key)
    random.Random(f"learning-tasks|store|{seed}|{int(include_drift)}").shuffle(out)
    return out


# ---------------------------------------------------------------------------------------------
# Solution tokens (used by the tests to keep queries neutral)
# ---------------------------------------------------------------------------------------------

_TOKEN = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    """a an and are as at be been before by can do does for from has have how i if in into is it its me my no not of on
    once one or our so that the their them then there these this those to too up us was we what when which while who
    why will with within you your all any every each only own same than very just also after again per out off over
    under other another both few more most some such nor""".split()
)


def tokenize(text: str) -> list[str]:
    """Lowercase alphanumeric tokens, crude-stemmed (plural and -ing/-ed endings), stopwords removed."""
    out = []
    for tok in _TOKEN.findall(text.lower()):
        if tok in _STOP:
            continue
        out.append(_stem(tok))
    return out


def _stem(tok: str) -> str:
    if len(tok) > 5 and tok.endswith("ing"):
        return tok[:-3]
    if len(tok) > 4 and tok.endswith("ed"):
        return tok[:-2]
    if len(tok) > 4 and tok.endswith(("sses", "xes", "ches", "shes", "zes")):
        return tok[:-2]
    if len(tok) > 3 and tok.endswith("s") and not tok.endswith("ss"):
        return tok[:-1]
    return tok


def solution_tokens(family: TaskFamily) -> frozenset[str]:
    """Tokens of the working memory (title + content) that no distractor of the family has.

    These are the specifics of the working solution (flags, commands, versions, file names).
    A query containing one would point at the answer; the family's queries contain none.
    """
    working = set(tokenize(family.working.text))
    others: set[str] = set()
    for d in family.distractors:
        others.update(tokenize(d.text))
    return frozenset(working - others)


# ---------------------------------------------------------------------------------------------
# Drift
# ---------------------------------------------------------------------------------------------


def drift_families(families: Sequence[TaskFamily], seed: int, fraction: float = 0.25) -> list[str]:
    """Keys of the families whose working memory goes stale after :data:`DRIFT_AFTER_ROUND`.

    ``round(len(families) * fraction)`` families (at least one), chosen by seed, returned in
    the order of ``families``.
    """
    if not 0 < fraction <= 1:
        raise ValueError("fraction must be in (0, 1]")
    keys = sorted(f.key for f in families)
    if not keys:
        return []
    k = max(1, round(len(keys) * fraction))
    chosen = set(random.Random(f"learning-tasks|drift|{seed}").sample(keys, k))
    return [f.key for f in families if f.key in chosen]


def working_key(family: TaskFamily, round_index: int, drifted: bool, drift_after: int = DRIFT_AFTER_ROUND) -> str:
    """Key of the memory that succeeds for ``family`` in ``round_index`` (0-based).

    For a drifted family, the original working memory works in rounds ``0 .. drift_after-1``
    and the drift replacement from round ``drift_after`` on (i.e. after round 5, counting
    from 1). Insert the replacement into the store before playing round ``drift_after``.
    """
    if drifted and round_index >= drift_after:
        return family.drift_replacement.key
    return family.working.key


# ---------------------------------------------------------------------------------------------
# Interference
# ---------------------------------------------------------------------------------------------


def _pairs_for(catalog: str | None, keys: Iterable[str] = ()) -> tuple[InterferencePair, ...]:
    if catalog is not None:
        return catalog_pairs(catalog)
    keys = set(keys)
    for name in CATALOGS:  # ops first; a data file that does not exist (yet) is skipped
        if not catalog_available(name):
            continue
        raw, pairs = _raw(name)
        if keys & {r["key"] for r in raw}:
            return pairs
    return ()


def interference_pairs(families: Iterable[TaskFamily], catalog: str | None = None) -> list[tuple[str, str]]:
    """Ordered pairs (A, B) of the catalog's interference pairs whose two families are both present.

    ``catalog`` defaults to the catalog the families come from."""
    families = list(families)
    if catalog is None and families:
        catalog = families[0].catalog
    present = {f.key for f in families}
    return [(p.a, p.b) for p in _pairs_for(catalog, present) if p.a in present and p.b in present]


def interference_pair(a: str, b: str, catalog: str | None = None) -> InterferencePair:
    """The :class:`InterferencePair` for ``(a, b)``; ``KeyError`` if there is none.

    ``catalog=None`` looks in the catalog that has family ``a`` (family keys are unique across catalogs)."""
    for p in _pairs_for(catalog, (a, b)):
        if p.a == a and p.b == b:
            return p
    raise KeyError(f"no interference pair ({a!r}, {b!r})")


def interference_query_for(
    pair: "InterferencePair | tuple[str, str]", round_index: int, seed: int, catalog: str | None = None
) -> str:
    """B's interference query for ``round_index``, picked like :func:`query_for`."""
    if not isinstance(pair, InterferencePair):
        pair = interference_pair(*pair, catalog=catalog)
    return _cycle_pick(pair.queries, "interference", f"{pair.a}>{pair.b}", round_index, seed)
