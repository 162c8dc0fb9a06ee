"""Deterministic, varied synthetic memories for the performance benchmark.

Every item is built from a seeded generator: a domain, a template, subjects, actions,
objects, numbers and made-up identifiers, so no two memories share one sentence and the
FTS and vector channels see realistic, overlapping vocabularies.
"""

from __future__ import annotations

import random
from typing import Iterator

DOMAINS = {
    "build": ["compiler", "linker", "wheel", "cache", "artifact", "toolchain", "makefile", "bazel", "cmake", "gradle"],
    "deploy": ["staging", "canary", "rollout", "cluster", "ingress", "helm", "terraform", "region", "vpn", "kubectl"],
    "database": ["postgres", "sqlite", "index", "migration", "vacuum", "replica", "transaction", "deadlock", "schema", "query"],
    "frontend": ["react", "webpack", "tailwind", "router", "hydration", "bundle", "css", "component", "storybook", "vite"],
    "testing": ["pytest", "fixture", "mock", "flaky", "coverage", "snapshot", "hypothesis", "tox", "assertion", "timeout"],
    "security": ["token", "secret", "oauth", "certificate", "rotation", "audit", "permission", "sandbox", "cve", "firewall"],
    "ml": ["embedding", "tokenizer", "checkpoint", "gradient", "batch", "onnx", "quantization", "dataset", "epoch", "inference"],
    "ops": ["alert", "pager", "dashboard", "latency", "throughput", "memory", "disk", "cron", "backup", "logrotate"],
    "python": ["asyncio", "typing", "pydantic", "numpy", "packaging", "venv", "uv", "ruff", "mypy", "pickle"],
    "team": ["review", "standup", "roadmap", "handoff", "oncall", "retro", "ticket", "estimate", "demo", "release"],
    "api": ["endpoint", "pagination", "ratelimit", "webhook", "graphql", "grpc", "schema", "versioning", "idempotency", "retry"],
    "data": ["parquet", "csv", "etl", "warehouse", "airflow", "spark", "partition", "dedupe", "join", "lineage"],
}
VERBS = ["breaks", "fixes", "slows down", "speeds up", "requires", "conflicts with", "replaces", "depends on",
         "times out on", "corrupts", "validates", "caches", "retries", "ignores", "duplicates", "locks"]
ADJECTIVES = ["stale", "flaky", "pinned", "legacy", "nightly", "encrypted", "sharded", "cold", "warm", "partial",
              "shared", "private", "optional", "deprecated", "experimental", "blocking"]
PEOPLE = ["alice", "bob", "carol", "dmitri", "erin", "farah", "guo", "hana", "ivan", "jules", "kemal", "lena"]
TEMPLATES = {
    "observation": [
        "The {adj} {a} {verb} the {b} when {person} runs it on {weekday}.",
        "Saw the {a} {verb} {b} again after build {num}; {person} noticed it first.",
    ],
    "preference": [
        "{person} prefers the {adj} {a} over the {b} for {domain} work.",
        "Keep the {a} {adj} by default; {person} dislikes a {b} that {verb} it.",
    ],
    "fact": [
        "The {a} in {domain} uses port {num} and {verb} the {adj} {b}.",
        "Version {num} of the {a} {verb} the {b}; the {adj} path is gone.",
    ],
    "constraint": [
        "Never let the {a} touch the {adj} {b}: it {verb} {domain} for everyone.",
        "The {a} must stay under {num} MB or the {b} {verb} it.",
    ],
    "lesson": [
        "When the {a} {verb} the {b}, clear the {adj} cache first; it cost {person} {num} minutes.",
        "Learned: a {adj} {a} {verb} the {b}; pin it before touching {domain}.",
    ],
    "procedure": [
        "To rebuild the {a}: stop the {b}, wipe the {adj} state, run step {num}, then ask {person}.",
        "Release steps for {domain}: tag {num}, publish the {a}, check that the {b} {verb} nothing.",
    ],
    "episode": [
        "{person} said the {a} {verb} the {b} during the {adj} incident {num} in {domain}.",
        "Chat with {person}: the {adj} {a} and the {b} were discussed; ticket {num} follows.",
    ],
}
WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday"]
SOURCES = ["user", "user", "agent", "tool", "system", "llm"]
SCOPES = ["default", "proj-alpha", "proj-beta", "proj-gamma", "proj-delta"]


def _token(rng: random.Random) -> str:
    """A made-up identifier (function, host, ticket), so the vocabulary keeps growing."""
    syll = ["ka", "lo", "mi", "ne", "ru", "ta", "vo", "zi", "pe", "so", "du", "fa", "gi", "ho", "xe", "qu"]
    return "".join(rng.choice(syll) for _ in range(rng.randint(2, 4))) + str(rng.randint(0, 99))


def memories(count: int, seed: int = 1234) -> Iterator[dict]:
    """``count`` remember() argument dicts, the same on every run and machine."""
    rng = random.Random(seed)
    domains = list(DOMAINS)
    types = list(TEMPLATES)
    for i in range(count):
        domain = rng.choice(domains)
        words = DOMAINS[domain]
        other = DOMAINS[rng.choice(domains)]
        mtype = rng.choice(types)
        text = rng.choice(TEMPLATES[mtype]).format(
            a=rng.choice(words), b=rng.choice(other if rng.random() < 0.3 else words), verb=rng.choice(VERBS),
            adj=rng.choice(ADJECTIVES), person=rng.choice(PEOPLE), num=rng.randint(2, 9999),
            domain=domain, weekday=rng.choice(WEEKDAYS),
        )
        extra = rng.random()
        if extra < 0.5:
            text += f" See {_token(rng)} in {rng.choice(words)}/{_token(rng)}.py."
        elif extra < 0.7:
            text += f" Related: {rng.choice(VERBS)} {rng.choice(other)} and {rng.choice(ADJECTIVES)} {rng.choice(words)}."
        yield {
            "content": text + f" (#{i})",  # unique, so dedupe never folds two items
            "type": mtype,
            "scope": SCOPES[min(len(SCOPES) - 1, int(rng.random() ** 2 * len(SCOPES)))],
            "tags": sorted({domain, rng.choice(words)}),
            "source": {"type": rng.choice(SOURCES)},
            "importance": round(rng.random(), 2),
        }


def queries(count: int, seed: int = 99) -> list[str]:
    """Task-like queries over the same vocabulary: some near a memory, some vague."""
    rng = random.Random(seed)
    domains = list(DOMAINS)
    out = []
    for _ in range(count):
        domain = rng.choice(domains)
        words = DOMAINS[domain]
        style = rng.random()
        if style < 0.4:
            q = f"why does the {rng.choice(words)} {rng.choice(VERBS)} the {rng.choice(words)}"
        elif style < 0.7:
            q = f"how to fix {rng.choice(ADJECTIVES)} {rng.choice(words)} in {domain}"
        elif style < 0.9:
            q = f"{rng.choice(PEOPLE)} {rng.choice(words)} {rng.choice(words)}"
        else:
            q = f"what did we learn about {domain}"
        out.append(q)
    return out
