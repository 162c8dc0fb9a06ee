"""Closed-loop learning benchmark: does the memory recall better next time?

A simulated agent plays rounds of tasks (``learning_tasks``: 48 families, each with one
working memory and 2-4 distractors worded alike) against a fresh store, through the public
API, and once through the MCP tools. Each round, for every family:

1. the agent asks for context with a paraphrased task (``build_context``, ``limit=3``; the
   engine's exploration is on there, as for ``recallite_context``);
2. it acts on the FIRST memory of the context. The round counts a success iff that memory is
   the family's working one (success rate and the working memory's reciprocal rank in the
   3 shown, MRR@3, are measured on this first choice only);
3. it reports the outcome: ``feedback(retrieval_id, success|failure, used_memory_ids=[that id])``.
   When the outcome it observed is a failure it falls back to the next memory it was shown, as
   an agent does, and reports that attempt too (at most ``attempts``, default 3 = everything
   shown). Fallbacks never count as the round's success; they only give feedback.
   With label noise, each reported outcome is flipped with that probability, and the agent
   acts on what it observed (a falsely failed attempt leads to a fallback).

Scenarios: ``clean``; ``noise`` (15% flipped labels); ``drift`` (after round 5 the working
memory of a quarter of the families stops working and a new one, never tried, is added);
``interference`` (10 pairs: B's queries pull A's working memory, which fails for B);
``none`` (no feedback at all: rankings must not move, whatever is read).

Catalogs (``--catalog``): ``ops`` (built in, 48 families), ``voices-dev`` and ``voices-holdout``
(``catalogs/*.txt``: paraphrases in different voices, far apart). ``--via recall`` asks with
``recall(query, limit=3)`` (no exploration) instead of ``build_context``. Besides success per
round, each scenario reports regressions: the share of family-rounds 2..N that fail although
the family succeeded in its previous round. The report starts with the distribution of the
cosine between paraphrases of a family, with the embedder in use.

``python -m recallite_mcp.benchmarks.learning --help`` or ``recallite-mcp bench --learning``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from . import learning_tasks as lt

SCENARIOS = ("clean", "noise", "drift", "interference", "none")
VIAS = ("context", "recall")

# The targets of the issue (rounds 1-based) and how each is read:
#   "at": the success rate at that round;  "first": the first round from `round` on whose rate
#   reaches the target must come within `within` rounds;  "min-from": every round from `round` on
#   (interference start when `round` is None);  "last": the final round;  "mean": the mean rate of rounds
#   `round`..`to` (or up to the last round);  "regressions": the scenario's regression share must stay <= target.
# Each target also reports the lowest rate from its round on ("stays"), for the record.
TARGETS: dict[str, list[dict[str, Any]]] = {
    "clean": [{"name": "round 3", "group": "all", "how": "at", "round": 3, "target": 0.90},
              {"name": "round 10", "group": "all", "how": "at", "round": 10, "target": 0.97},
              {"name": "regressions", "group": "all", "how": "regressions", "round": 2, "target": 0.02}],
    "noise": [{"name": "mean of rounds 6-10", "group": "all", "how": "mean", "round": 6, "to": 10, "target": 0.85}],
    "drift": [{"name": "back within 3 rounds of the change", "group": "all", "how": "first",
               "round": lt.DRIFT_AFTER_ROUND + 1, "within": 3, "target": 0.85},
              {"name": "drifted families alone, within 3 rounds", "group": "drifted", "how": "first",
               "round": lt.DRIFT_AFTER_ROUND + 1, "within": 3, "target": 0.85, "stricter": True}],
    "interference": [{"name": "family A stays, every round from B's interference on", "group": "A", "how": "min-from",
                      "round": None, "target": 0.90},
                     {"name": "family B recovers (last round)", "group": "B", "how": "last", "target": 0.85}],
    "none": [],
}


class CachingEmbedder:
    """Embeds each distinct text once for the whole benchmark (every scenario opens a fresh store)."""

    def __init__(self, inner):
        self.inner = inner
        self.name = inner.name
        self.dimensions = inner.dimensions
        self.relevance_floor = getattr(inner, "relevance_floor", 0.0)  # the same relevance floor as the real thing
        self._cache: dict[str, np.ndarray] = {}
        self.calls = 0
        self.texts = 0

    def embed(self, texts: list[str]) -> np.ndarray:
        todo = list(dict.fromkeys(t for t in texts if t not in self._cache))
        if todo:
            self.calls += 1
            self.texts += len(todo)
            for t, v in zip(todo, np.asarray(self.inner.embed(todo), dtype=np.float32)):
                self._cache[t] = v
        return np.stack([self._cache[t] for t in texts]) if texts else np.empty((0, self.dimensions), np.float32)

    def load(self) -> None:
        load = getattr(self.inner, "load", None)
        if callable(load):
            load()


def make_embedder(kind: str):
    from recallite_core import resolve_embedder

    return CachingEmbedder(resolve_embedder("onnx" if kind == "default" else kind))


# -- the simulated agent ------------------------------------------------------------------------------


@dataclass
class Task:
    family: lt.TaskFamily
    query: str
    working: str  # key of the memory that works this round
    group: str  # "stable", "drifted", "A", "B", "rest"


def agent_turn(
    shown: Sequence[str], key_of: dict[str, str], task: Task, rng: random.Random, noise: float, attempts: int,
    send: Callable[[str, str], None] | None, noise_mode: str = "label",
) -> tuple[bool, float, int]:
    """Act on the first shown memory; report it, and the fallbacks after a failure.

    ``noise_mode="label"``: the agent knows whether an attempt worked (it falls back after a
    real failure, stops after a real success) and the label it reports is flipped with
    probability ``noise``. ``"coupled"``: the agent itself believes the flipped label (a false
    failure sends it on to the next memory, a false success stops it).
    Returns (first choice worked, reciprocal rank of the working memory in ``shown``, feedback sent)."""
    keys = [key_of.get(i, "?") for i in shown]
    success = bool(keys) and keys[0] == task.working
    rr = 1.0 / (keys.index(task.working) + 1) if task.working in keys else 0.0
    sent = 0
    if send is not None:
        for mid, key in list(zip(shown, keys))[:attempts]:
            worked = key == task.working
            reported = worked != (rng.random() < noise)
            send(mid, "success" if reported else "failure")
            sent += 1
            if (reported if noise_mode == "coupled" else worked):
                break
    return success, rr, sent


def tasks_for_round(families: list[lt.TaskFamily], scenario: str, r: int, seed: int, drifted: set[str],
                    pairs: list[tuple[str, str]], interference_from: int = 1) -> list[Task]:
    """The tasks of round ``r`` (0-based). In the interference scenario, family B plays its
    interference queries from round ``interference_from`` (1-based) on, its own queries before."""
    role = {}
    for a, b in pairs:
        role[a], role[b] = "A", "B"
    out = []
    for fam in families:
        query = lt.query_for(fam, r, seed)
        if scenario == "drift":
            group = "drifted" if fam.key in drifted else "stable"
        elif scenario == "interference":
            group = role.get(fam.key, "rest")
            if group == "B" and r + 1 >= interference_from:
                a = next(a for a, b in pairs if b == fam.key)
                query = lt.interference_query_for((a, fam.key), r, seed)
        else:
            group = role.get(fam.key, "rest") if pairs else "all"  # A and B families without interference
        out.append(Task(fam, query, lt.working_key(fam, r, fam.key in drifted and scenario == "drift"), group))
    random.Random(f"learning-bench|order|{seed}|{scenario}|{r}").shuffle(out)
    return out


def _rate(values: list[bool | float]) -> float:
    return float(np.mean(values)) if values else float("nan")


# -- one scenario through the Python API ------------------------------------------------------------------


def run_scenario(
    scenario: str, families: list[lt.TaskFamily], rounds: int, seed: int, embedder, *, noise: float = 0.15,
    attempts: int = 3, limit: int = 3, config=None, interference_from: int = 4, noise_mode: str = "label",
    via: str = "context", pairs: list[tuple[str, str]] | None = None, keep_log: bool = False,
) -> dict[str, Any]:
    """One scenario on a fresh store. ``via="context"``: ``build_context`` (exploration on);
    ``via="recall"``: ``recall(query, limit)`` (no exploration). ``pairs`` defaults to the
    interference pairs of the families' catalog."""
    from recallite_core import Recallite

    if via not in VIAS:
        raise ValueError(f"via must be one of {', '.join(VIAS)}, got {via!r}")
    t0 = time.perf_counter()
    mem = Recallite.open(None, embedder=embedder, config=config)
    try:
        key_of: dict[str, str] = {}
        id_of: dict[str, str] = {}

        def insert(specs: list[lt.MemorySpec]) -> None:
            got = mem.remember_many([{"content": s.content, "title": s.title, "type": s.type} for s in specs])
            for s, m in zip(specs, got):
                key_of[m.id], id_of[s.key] = s.key, m.id

        insert(lt.store_memories(families, seed))
        drifted = set(lt.drift_families(families, seed)) if scenario == "drift" else set()
        if pairs is None:
            pairs = lt.interference_pairs(families)
        pairs = list(pairs) if scenario in ("interference", "clean") else []
        noise_rate = noise if scenario == "noise" else 0.0
        rng = random.Random(f"learning-bench|noise|{seed}|{scenario}")
        per_round = []
        seen_rankings: dict[tuple[str, str], list[str]] = {}
        repeats = changed = 0
        replacement_first_used: dict[str, int] = {}
        feedback_calls = 0
        prev_ok: dict[str, bool] = {}
        regressions = later_rounds = 0
        log: list[dict[str, Any]] = []
        for r in range(rounds):
            if scenario == "drift" and r == lt.DRIFT_AFTER_ROUND:
                insert([f.drift_replacement for f in families if f.key in drifted])
            results: dict[str, list[tuple[bool, float]]] = {}
            for task in tasks_for_round(families, scenario, r, seed, drifted, pairs, interference_from):
                if via == "recall":
                    got = mem.recall(task.query, limit=limit)
                    rid, shown = got.retrieval_id, [h.memory.id for h in got.memories]
                else:
                    ctx = mem.build_context(task.query, limit=limit, max_tokens=2000)
                    rid, shown = ctx.retrieval_id, ctx.memory_ids
                send = None if scenario == "none" else (
                    lambda mid, outcome, _rid=rid: mem.feedback(_rid, outcome, used_memory_ids=[mid]))
                ok, rr, sent = agent_turn(shown, key_of, task, rng, noise_rate, attempts, send, noise_mode)
                feedback_calls += sent
                if keep_log:
                    log.append({"round": r + 1, "family": task.family.key, "query": task.query, "retrieval_id": rid,
                                "ids": list(shown), "ok": ok})
                if task.family.key in prev_ok:
                    later_rounds += 1
                    regressions += prev_ok[task.family.key] and not ok
                prev_ok[task.family.key] = ok
                results.setdefault(task.group, []).append((ok, rr))
                if scenario == "drift" and task.group == "drifted" and r >= lt.DRIFT_AFTER_ROUND and task.working in [key_of.get(i) for i in shown[:sent or 1]]:
                    replacement_first_used.setdefault(task.family.key, r + 1)
                if scenario == "none":
                    ranking = [key_of[i] for i in shown]
                    prev = seen_rankings.setdefault((task.family.key, task.query), ranking)
                    if prev is not ranking:
                        repeats += 1
                        changed += prev != ranking
            everything = [x for v in results.values() for x in v]
            row = {
                "round": r + 1,
                "success": _rate([ok for ok, _ in everything]),
                "mrr": _rate([rr for _, rr in everything]),
                "n": len(everything),
                "groups": {g: {"success": _rate([ok for ok, _ in v]), "mrr": _rate([rr for _, rr in v]), "n": len(v)}
                           for g, v in sorted(results.items()) if g != "all"},
            }
            per_round.append(row)
        out: dict[str, Any] = {"scenario": scenario, "via": via, "rounds": per_round, "feedback_calls": feedback_calls,
                               "regressions": round(regressions / later_rounds, 4) if later_rounds else float("nan"),
                               "regression_count": regressions, "family_rounds_after_first": later_rounds}
        if keep_log:
            out["log"] = log
        if scenario == "none":
            out["repeated_queries"] = repeats
            out["rankings_changed_by_reads"] = changed
            out["access_counts"] = int(mem.store.conn.execute("SELECT coalesce(sum(access_count), 0) FROM memories").fetchone()[0])
        if scenario == "drift":
            out["drifted_families"] = sorted(drifted)
            out["replacement_first_used_round"] = replacement_first_used
        if scenario == "interference":
            out["interference_from"] = interference_from
        out["targets"] = evaluate(scenario, per_round, interference_from, regressions=out["regressions"])
        out["seconds"] = round(time.perf_counter() - t0, 2)
        return out
    finally:
        mem.close()


def series(per_round: list[dict], group: str) -> list[float]:
    if group == "all":
        return [r["success"] for r in per_round]
    return [r["groups"].get(group, {}).get("success", float("nan")) for r in per_round]


def evaluate(scenario: str, per_round: list[dict], interference_from: int = 4,
             regressions: float | None = None) -> list[dict[str, Any]]:
    out = []
    for t in TARGETS.get(scenario, []):
        s = series(per_round, t["group"])
        start = t.get("round") or interference_from
        if not s or (t["how"] != "last" and start > len(s)):
            continue  # too few rounds to judge
        target = t["target"]
        row: dict[str, Any] = {"name": t["name"], "group": t["group"], "how": t["how"], "target": target,
                               "required": not t.get("stricter", False), "from": start}
        if t["how"] == "regressions":
            if regressions is None or regressions != regressions:
                continue
            row["value"] = round(regressions, 4)
            row["pass"] = regressions <= target + 1e-9
            row["lowest_after"] = row["value"]
            out.append(row)
            continue
        if t["how"] == "mean":
            end = min(len(s), t.get("to") or len(s))
            row["to"] = end
            row["value"] = round(float(np.mean(s[start - 1 : end])), 4)
            row["pass"] = row["value"] >= target - 1e-9
            row["lowest_after"] = round(min(s[start - 1 :]), 4)
            out.append(row)
            continue
        if t["how"] == "first":
            row["by"] = start + t["within"] - 1
        if t["how"] == "at":
            row["value"] = s[start - 1]
        elif t["how"] == "last":
            row["value"] = s[-1]
        elif t["how"] == "min-from":
            row["value"] = min(s[start - 1 :])
        else:  # first
            reached = next((r for r in range(start, len(s) + 1) if s[r - 1] >= target - 1e-9), None)
            row["first_round"] = reached
            row["value"] = s[min(len(s), start + t["within"] - 1) - 1] if reached is None else s[reached - 1]
            row["pass"] = reached is not None and reached <= start + t["within"] - 1
        row["value"] = round(row["value"], 4)
        row.setdefault("pass", row["value"] >= target - 1e-9)
        row["lowest_after"] = round(min(s[(start if t["how"] != "last" else len(s)) - 1 :]), 4)
        out.append(row)
    return out


# -- one short run through the MCP tools --------------------------------------------------------------------


async def _mcp_run(families: list[lt.TaskFamily], rounds: int, seed: int, embedder) -> dict[str, Any]:
    from mcp import Client

    from recallite_core import Recallite

    from ..server import build_server
    from ..settings import Settings

    mem = Recallite.open(None, embedder=embedder)
    settings = Settings(db=":memory:", embedder="hash", warm_embedder=False, scope="learning-bench")
    key_of: dict[str, str] = {}

    async def call(client, name: str, **args) -> dict:
        res = await client.call_tool(name, args)
        if res.is_error:
            raise RuntimeError(f"{name}: {res.content[0].text}")
        return res.structured_content

    per_round = []
    rng = random.Random(f"learning-bench|mcp|{seed}")
    try:
        async with Client(build_server(settings, memory=mem)) as c:
            for spec in lt.store_memories(families, seed):
                got = await call(c, "recallite_remember", content=spec.content, title=spec.title, type=spec.type)
                key_of[got["id"]] = spec.key
            for r in range(rounds):
                oks = []
                for task in tasks_for_round(families, "clean", r, seed, set(), []):
                    ctx = await call(c, "recallite_context", query=task.query)  # limit and cut-off: auto-tuned

                    def send(mid: str, outcome: str, _rid=ctx["retrieval_id"]) -> None:
                        pending.append((mid, outcome, _rid))

                    pending: list[tuple[str, str, str]] = []
                    ok, _, _ = agent_turn(ctx["memory_ids"], key_of, task, rng, 0.0, 3, send)
                    for mid, outcome, rid in pending:
                        await call(c, "recallite_feedback", retrieval_id=rid, outcome=outcome, used_memory_ids=[mid])
                    oks.append(ok)
                per_round.append({"round": r + 1, "success": _rate(oks), "n": len(oks)})
            stats = await call(c, "recallite_stats")
    finally:
        mem.close()
    return {"families": len(families), "rounds": per_round, "context_tuning": stats.get("context_tuning", {}),
            "feedback": stats.get("feedback", {})}


def run_mcp_check(families: list[lt.TaskFamily], rounds: int, seed: int, embedder) -> dict[str, Any]:
    import anyio

    t0 = time.perf_counter()
    out = anyio.run(_mcp_run, families, rounds, seed, embedder)
    out["seconds"] = round(time.perf_counter() - t0, 2)
    return out


# -- the whole benchmark ------------------------------------------------------------------------------------------


def learner_name(config) -> str:
    if config is None:
        return "contextual"
    lc = config.learning
    if lc.mode == "contextual" and lc.explore_bonus == 0 and lc.newcomer_bonus == 0:
        return "no-explore"
    if lc.mode == "contextual" and lc.success_locality == 0 and not lc.explained_failures:
        return "no-locality"
    return lc.mode


def paraphrase_cosine(families: Sequence[lt.TaskFamily], emb) -> dict[str, Any]:
    """Distribution of the cosine between paraphrases (Q lines) of one family, over all families."""
    values: list[float] = []
    for f in families:
        v = np.asarray(emb.embed(list(f.queries)), dtype=np.float64)
        v /= np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)
        sims = v @ v.T
        iu = np.triu_indices(len(f.queries), k=1)
        values.extend(float(x) for x in sims[iu])
    if not values:
        return {"embedder": emb.name, "pairs": 0}
    a = np.asarray(values)
    return {"embedder": emb.name, "pairs": int(a.size), "min": round(float(a.min()), 4),
            "p10": round(float(np.percentile(a, 10)), 4), "median": round(float(np.median(a)), 4),
            "mean": round(float(a.mean()), 4), "p90": round(float(np.percentile(a, 90)), 4),
            "max": round(float(a.max()), 4)}


def format_cosine(pc: dict[str, Any], catalog: str) -> str:
    if not pc.get("pairs"):
        return f"paraphrase cosine ({catalog}): no paraphrase pairs"
    return (f"paraphrase cosine within a family ({catalog}, {pc['pairs']} pairs, embedder {pc['embedder']}): "
            f"min {pc['min']:.2f}  p10 {pc['p10']:.2f}  median {pc['median']:.2f}  mean {pc['mean']:.2f}  "
            f"p90 {pc['p90']:.2f}  max {pc['max']:.2f}")


def run_learning_benchmark(
    families: int | None = None, rounds: int = 10, seed: int = 7, embedder: Any = "default",
    scenarios: Sequence[str] = SCENARIOS, *, noise: float = 0.15, attempts: int = 3, limit: int = 3,
    mcp: bool = True, mcp_families: int = 8, mcp_rounds: int = 4, config=None, interference_from: int = 4,
    noise_mode: str = "label", progress: Callable[[str], None] | None = None, catalog: str = "ops",
    via: str = "context", keep_log: bool = False,
) -> dict[str, Any]:
    """Run the scenarios and return every number (the ``--json`` output).

    ``families=None`` plays every family of ``catalog`` (``ops``: 48)."""
    unknown = [s for s in scenarios if s not in SCENARIOS]
    if unknown:
        raise ValueError(f"unknown scenarios {unknown}; choose from {', '.join(SCENARIOS)}")
    if via not in VIAS:
        raise ValueError(f"via must be one of {', '.join(VIAS)}, got {via!r}")
    t0 = time.perf_counter()
    emb = make_embedder(embedder) if isinstance(embedder, str) else (
        embedder if isinstance(embedder, CachingEmbedder) else CachingEmbedder(embedder))
    fams = lt.generate_families(families, seed=seed, catalog=catalog)
    pairs = lt.interference_pairs(fams, catalog=catalog)
    # Embed every text once, up front (memories, replacements, queries): later calls hit the cache.
    texts = []
    from recallite_core.engine import embedding_text

    for f in fams:
        texts.extend(embedding_text(m.title, m.content) for m in f.all_memories)
        texts.extend(f.queries)
    for a, b in pairs:
        texts.extend(lt.interference_pair(a, b, catalog=catalog).queries)
    emb.embed(texts)
    embed_s = time.perf_counter() - t0
    cosine = paraphrase_cosine(fams, emb)
    if progress:
        progress(format_cosine(cosine, catalog))
    result: dict[str, Any] = {
        "catalog": catalog,
        "via": via,
        "paraphrase_cosine": cosine,
        "config": {"catalog": catalog, "via": via, "families": len(fams), "rounds": rounds, "seed": seed,
                   "embedder": emb.name, "noise": noise, "interference_pairs": len(pairs),
                   "attempts": attempts, "limit": limit, "memories": sum(len(f.memories) for f in fams),
                   "interference_from": interference_from, "noise_mode": noise_mode,
                   "learner": learner_name(config)},
        "scenarios": {},
        "skipped": {},
    }
    for sc in scenarios:
        if sc == "interference" and not pairs:
            note = f"interference scenario skipped: no interference pairs among the {len(fams)} families of {catalog}"
            result["skipped"][sc] = note
            if progress:
                progress(f"== interference: {note}")
            continue
        res = run_scenario(sc, fams, rounds, seed, emb, noise=noise, attempts=attempts, limit=limit, config=config,
                           interference_from=interference_from, noise_mode=noise_mode, via=via, pairs=pairs,
                           keep_log=keep_log)
        result["scenarios"][sc] = res
        if progress:
            progress(format_scenario(res))
    if mcp:
        sub = (lt.generate_families(min(mcp_families, len(fams)), seed=seed, catalog=catalog)
               if mcp_families < len(fams) else fams)
        result["mcp"] = run_mcp_check(sub, mcp_rounds, seed, emb)
        if progress:
            progress(format_mcp(result["mcp"]))
    result["embed_seconds"] = round(embed_s, 2)
    result["seconds"] = round(time.perf_counter() - t0, 2)
    result["passed"] = all(t["pass"] for s in result["scenarios"].values() for t in s["targets"] if t["required"])
    return result


# -- printing ------------------------------------------------------------------------------------------------------


def _f(x: float) -> str:
    return "  -  " if x != x else f"{x:.3f}"


def format_scenario(res: dict[str, Any]) -> str:
    groups = sorted({g for r in res["rounds"] for g in r["groups"]})
    head = ["round", "success", "MRR@3"] + [f"{g}" for g in groups]
    lines = [f"== {res['scenario']} (via {res.get('via', 'context')}, {res['seconds']}s, {res['feedback_calls']} feedback calls)",
             "  ".join(f"{h:>8}" for h in head)]
    for r in res["rounds"]:
        cells = [f"{r['round']:>8}", f"{_f(r['success']):>8}", f"{_f(r['mrr']):>8}"]
        cells += [f"{_f(r['groups'].get(g, {}).get('success', float('nan'))):>8}" for g in groups]
        lines.append("  ".join(cells))
    if "regressions" in res:
        lines.append(f"   regressions (failed after a success in the previous round): {_f(res['regressions'])} "
                     f"({res['regression_count']} of {res['family_rounds_after_first']} family-rounds 2..N)")
    for t in res["targets"]:
        extra = f" (first at round {t['first_round']})" if "first_round" in t else ""
        verdict = ("PASS" if t["pass"] else "FAIL") if t["required"] else ("met" if t["pass"] else "not met") + " (stricter reading)"
        if t["how"] == "regressions":
            lines.append(f"   target {t['name']}: {t['value']:.3f} <= {t['target']:.2f}  {verdict}")
            continue
        lines.append(f"   target {t['name']}: {t['value']:.3f} >= {t['target']:.2f}{extra}  {verdict}"
                     f"; lowest from then on {t['lowest_after']:.3f}")
    if res["scenario"] == "none":
        lines.append(f"   reads moved no ranking: {res['rankings_changed_by_reads']} of {res['repeated_queries']} repeated "
                     f"queries ranked differently ({res['access_counts']} accesses counted)")
    if res["scenario"] == "drift":
        used = res["replacement_first_used_round"]
        lines.append(f"   replacements first used (round): {dict(sorted(used.items()))}; "
                     f"never: {sorted(set(res['drifted_families']) - set(used))}")
    return "\n".join(lines)


def format_mcp(m: dict[str, Any]) -> str:
    rounds = ", ".join(f"r{r['round']} {r['success']:.2f}" for r in m["rounds"])
    tuning = "; ".join(f"{sc}: limit {v['limit']}, min_score_ratio {v['min_score_ratio']}" for sc, v in m["context_tuning"].items())
    return (f"== MCP tools ({m['families']} families, {m['seconds']}s): success {rounds}; "
            f"feedback {m['feedback']}; auto-tuned context: {tuning or 'no feedback yet'}")


def target_label(t: dict[str, Any]) -> str:
    """A short form of a target for the final table."""
    if t["how"] == "at":
        core = f"r{TARGETS_ROUND[t['name']]} >= {t['target']:.2f}"
    elif t["how"] == "last":
        core = f"last round >= {t['target']:.2f}"
    elif t["how"] == "mean":
        core = f"mean r{t['from']}-r{t.get('to', '?')} >= {t['target']:.2f}"
    elif t["how"] == "regressions":
        core = f"regressions {t['value']:.3f} <= {t['target']:.2f}"
    elif t["how"] == "min-from":
        core = f">= {t['target']:.2f} every round from r{t.get('from', '?')}"
    else:
        core = f">= {t['target']:.2f} by r{t.get('by', '?')}"
        if t.get("first_round"):
            core += f" (r{t['first_round']})"
    return core + ("" if t["required"] else " [stricter, not an issue target]")


TARGETS_ROUND = {t["name"]: t["round"] for ts in TARGETS.values() for t in ts if t["how"] == "at"}


def final_table(result: dict[str, Any]) -> str:
    """Markdown: success per round (first choice) for each scenario and group, with its targets."""
    sc = result["scenarios"]
    rounds = result["config"]["rounds"]
    head = ["scenario", "group"] + [f"r{r}" for r in range(1, rounds + 1)] + ["regr.", "target (rounds 1-based)", "met"]
    rows = []
    spec = [("clean", "all"), ("noise", "all"), ("drift", "all"), ("drift", "drifted"), ("interference", "A"),
            ("interference", "B"), ("none", "all")]
    for name, group in spec:
        if name not in sc:
            continue
        s = series(sc[name]["rounds"], group)
        targets = [t for t in sc[name]["targets"] if t["group"] == group]
        tt = "; ".join(target_label(t) for t in targets)
        if name == "none":
            n, moved = sc[name]["repeated_queries"], sc[name]["rankings_changed_by_reads"]
            tt = f"no learning from reads: {moved} of {n} repeated queries re-ranked"
            met = "yes" if moved == 0 else "NO"
        else:
            met = ("yes" if all(t["pass"] for t in targets) else "NO") if targets else ""
            if targets and all(not t["required"] for t in targets):
                met = met.lower()
        first_row = not rows or rows[-1][0] != name
        reg = sc[name].get("regressions", float("nan")) if first_row and name != "none" else float("nan")
        rows.append([name, group] + [f"{x:.2f}" if x == x else "-" for x in s] + [_f(reg).strip(), tt, met])
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    fmt = lambda cells: "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths)) + " |"  # noqa: E731
    return "\n".join([fmt(head), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *map(fmt, rows)])


def plot(result: dict[str, Any], path: str) -> bool:
    """PNG of success per round per scenario; False when matplotlib is not installed."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, ax = plt.subplots(figsize=(7, 4))
    for name, res in result["scenarios"].items():
        xs = [r["round"] for r in res["rounds"]]
        ax.plot(xs, [r["success"] for r in res["rounds"]], marker="o", label=name)
        if name == "drift":
            ax.plot(xs, series(res["rounds"], "drifted"), ls="--", label="drift (drifted families)")
        if name == "interference":
            ax.plot(xs, series(res["rounds"], "B"), ls=":", label="interference (B)")
    ax.axvline(lt.DRIFT_AFTER_ROUND + 0.5, color="grey", lw=0.5)
    ax.set_xlabel("round")
    ax.set_ylabel("success (first memory used)")
    ax.set_ylim(0, 1.02)
    ax.legend(fontsize=7, loc="lower right")
    ax.set_title(f"recallite learning benchmark ({result['config']['families']} families, {result['config']['embedder']})")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def separation(catalog: str, embedder: Any = "default", seed: int = 7) -> dict[str, Any]:
    """How well a catalog's tasks are told apart before any feedback: for each family, pairs of its
    own phrasings (should share evidence) against pairs of one of its phrasings and a phrasing of
    another task whose top 5 holds this family's working memory (should not). Cosine medians and
    AUC for bare query vectors and for task vectors (what the learner uses); and the relevance
    floor: share of a task's own memories at or above it, and of other tasks' memories below it."""
    from recallite_core import Recallite

    emb = make_embedder(embedder) if isinstance(embedder, str) else embedder
    fams = lt.generate_families(None, seed=seed, catalog=catalog)
    mem = Recallite.open(None, embedder=emb)
    try:
        specs = lt.store_memories(fams, seed)
        got = mem.remember_many([{"content": m.content, "title": m.title, "type": m.type} for m in specs])
        key_of = {m.id: s.key for s, m in zip(specs, got)}
        rows = []  # (family, query vector, task vector, top-5 keys)
        for f in fams:
            for q in f.queries:
                r = mem.recall(q, limit=5)
                task = mem.learning.outcomes.task_of(int(r.retrieval_id[4:]))
                rows.append((f.key, emb.embed([q])[0], task, [key_of[h.memory.id] for h in r.memories]))
        texts = {s.key: f"{s.title}. {s.content}" for s in specs}
        mvecs = dict(zip(texts, emb.embed(list(texts.values()))))
    finally:
        mem.close()
    working = {f.key: f.working.key for f in fams}
    out: dict[str, Any] = {"catalog": catalog, "embedder": emb.name}
    for name, col in (("query", 1), ("task", 2)):
        pos, neg = [], []
        for i, a in enumerate(rows):
            for j, b in enumerate(rows):
                if j <= i and a[0] == b[0]:
                    continue
                sim = float(np.dot(a[col], b[col]))
                if a[0] == b[0]:
                    pos.append(sim)
                elif working[a[0]] in b[3]:
                    neg.append(sim)
        p_, n_ = np.array(pos), np.array(neg)
        auc = float((p_[:, None] > n_[None, :]).mean() + 0.5 * (p_[:, None] == n_[None, :]).mean()) if len(n_) else float("nan")
        out[name] = {"same_task_median": round(float(np.median(p_)), 3), "other_task_median": round(float(np.median(n_)), 3),
                     "auc": round(auc, 3), "pairs": [len(pos), len(neg)]}
    floor = float(getattr(emb, "relevance_floor", 0.0))
    own = other = own_above = other_below = 0
    for fam, qv, _, _ in rows:
        for key, v in mvecs.items():
            above = float(np.dot(qv, v)) >= floor
            if key.split(":", 1)[0] == fam:
                own += 1
                own_above += above
            else:
                other += 1
                other_below += not above
    out["floor"] = {"cosine": floor, "own_memories_above": round(own_above / own, 3),
                    "other_memories_below": round(other_below / other, 3)}
    return out


def oracle(catalog: str, attempts: int = 3, rounds: int = 10, embedder: Any = "default", seed: int = 7) -> list[float]:
    """Success per round of an agent with a perfect memory of its own task and none of others': it
    never retries what failed for this family, goes straight back to what worked, and otherwise
    follows the retrieval order (no learning). A bound on any learner that keeps evidence local
    to the task; with one attempt it cannot reach 1 while other tasks' memories fill the top 3."""
    from recallite_core import Recallite, RecalliteConfig
    from recallite_core.learning import LearningConfig

    emb = make_embedder(embedder) if isinstance(embedder, str) else embedder
    fams = lt.generate_families(None, seed=seed, catalog=catalog)
    mem = Recallite.open(None, embedder=emb, config=RecalliteConfig(learning=LearningConfig(mode="ema")))
    try:
        specs = lt.store_memories(fams, seed)
        got = mem.remember_many([{"content": m.content, "title": m.title, "type": m.type} for m in specs])
        key_of = {m.id: s.key for s, m in zip(specs, got)}
        failed: dict[str, set[str]] = {f.key: set() for f in fams}
        won: dict[str, str] = {}
        curve = []
        for r in range(rounds):
            oks = []
            for f in fams:
                ranked = [key_of[h.memory.id] for h in mem.recall(lt.query_for(f, r, seed), limit=40).memories]
                tries = [k for k in ranked if k not in failed[f.key]]
                if won.get(f.key) in ranked:
                    tries = [won[f.key]] + [k for k in tries if k != won[f.key]]
                oks.append(bool(tries) and tries[0] == f.working.key)
                for k in tries[:attempts]:
                    if k == f.working.key:
                        won[f.key] = k
                        break
                    failed[f.key].add(k)
            curve.append(float(np.mean(oks)))
        return curve
    finally:
        mem.close()


def format_separation(s: dict[str, Any]) -> str:
    lines = [f"task separation before feedback ({s['catalog']}, {s['embedder']}): same-task vs other-task pairs "
             "(other task: its top 5 holds this task's working memory)"]
    for name in ("query", "task"):
        r = s[name]
        lines.append(f"  {name + ' vectors':13s} median cosine {r['same_task_median']:.2f} vs {r['other_task_median']:.2f}, "
                     f"AUC {r['auc']:.3f} ({r['pairs'][0]} / {r['pairs'][1]} pairs)")
    f = s["floor"]
    lines.append(f"  relevance floor {f['cosine']:g}: {f['own_memories_above']:.0%} of a task's own memories at or above it, "
                 f"{f['other_memories_below']:.0%} of other tasks' memories below it")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="recallite-mcp bench --learning", description=__doc__.split("\n\n")[0])
    p.add_argument("--catalog", choices=list(lt.CATALOGS), default="ops",
                   help="task catalog: ops (built-in, 48 families), voices-dev (24, paraphrases in different voices), "
                        "voices-holdout (held out; catalogs/*.txt)")
    p.add_argument("--via", choices=list(VIAS), default="context",
                   help="context: build_context(limit=3), exploration on (default); recall: recall(limit=3), no exploration")
    p.add_argument("--families", type=int, default=None, help="task families (default: all of the catalog)")
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--embedder", choices=["default", "hash"], default="default",
                   help="default: MiniLM ONNX (offline); hash: fast, no model")
    p.add_argument("--scenarios", default=",".join(SCENARIOS), help=f"comma-separated subset of {','.join(SCENARIOS)}")
    p.add_argument("--noise", type=float, default=0.15, help="label noise of the noise scenario")
    p.add_argument("--noise-mode", choices=["label", "coupled"], default="label",
                   help="label: the agent knows what worked, the label it reports is flipped; "
                        "coupled: the agent believes the flipped label too (falls back after a false failure)")
    p.add_argument("--attempts", type=int, default=3, help="memories the agent tries per task after observed failures (1 = first only)")
    p.add_argument("--interference-from", type=int, default=4, metavar="ROUND",
                   help="round (1-based) from which family B plays the queries that pull A's working memory; "
                        "before it, B plays its own (default 4: A's memory works first, then it is tempted away)")
    p.add_argument("--learner", choices=["contextual", "no-explore", "no-locality", "global", "ema"], default="contextual",
                   help="ablation: contextual (default); no-explore (no optimism or newcomer bonus); no-locality (no "
                        "success locality, every failure may count as a change); global (one posterior per memory, "
                        "whatever the query); ema (the usefulness column, the ranking before)")
    p.add_argument("--no-mcp", action="store_true", help="skip the short run through the MCP tools")
    p.add_argument("--json", action="store_true", help="print the whole result as JSON")
    p.add_argument("--oracle", action="store_true",
                   help="only print the success per round of a perfect task-local learner (a bound) for --catalog and --attempts")
    p.add_argument("--separation", action="store_true",
                   help="only print how well the catalog's tasks are told apart before feedback (query vs task vectors, relevance floor)")
    p.add_argument("--plot", metavar="PATH", help="write a PNG of success per round (needs matplotlib)")
    args = p.parse_args(list(argv) if argv is not None else None)
    os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
    if args.oracle:
        curve = oracle(args.catalog, args.attempts, args.rounds, args.embedder, args.seed)
        print(f"oracle ({args.catalog}, {args.attempts} attempt{'s' if args.attempts != 1 else ''}): "
              + " ".join(f"r{i + 1} {x:.2f}" for i, x in enumerate(curve)))
        return 0
    if args.separation:
        sep = separation(args.catalog, args.embedder, args.seed)
        print(json.dumps(sep, indent=2) if args.json else format_separation(sep))
        return 0
    config = None
    if args.learner != "contextual":
        from recallite_core import RecalliteConfig
        from recallite_core.learning import LearningConfig

        lc = {"no-explore": dict(explore_bonus=0.0, newcomer_bonus=0.0),
              "no-locality": dict(success_locality=0.0, explained_failures=False)}.get(args.learner, dict(mode=args.learner))
        config = RecalliteConfig(learning=LearningConfig(**lc))
    scenarios = [s.strip() for s in args.scenarios.split(",") if s.strip()]
    say = None if args.json else (lambda text: print(text, flush=True))
    res = run_learning_benchmark(args.families, args.rounds, args.seed, args.embedder, scenarios, noise=args.noise,
                                 attempts=args.attempts, mcp=not args.no_mcp, config=config,
                                 interference_from=args.interference_from, noise_mode=args.noise_mode, progress=say,
                                 catalog=args.catalog, via=args.via)
    if args.plot:
        res["plot"] = args.plot if plot(res, args.plot) else None
        if res["plot"] is None:
            print("matplotlib is not installed: no plot (pip install matplotlib)", file=sys.stderr)
    if args.json:
        print(json.dumps(res, indent=2))
    else:
        c = res["config"]
        print(f"\nFinal table: catalog {c['catalog']}, via {c['via']}, {c['families']} families, {c['memories']} memories, "
              f"{c['rounds']} rounds, seed {c['seed']}, {c['embedder']}, learner {c['learner']}, agent acts on memory 1 "
              f"of {c['limit']} (up to {c['attempts']} attempt{'s' if c['attempts'] != 1 else ''} for feedback); regr. = share of family-rounds 2..N "
              f"failing after a success")
        print(format_cosine(res["paraphrase_cosine"], c["catalog"]))
        print(final_table(res))
        for note in res["skipped"].values():
            print(note)
        print(f"\n{'all targets met' if res['passed'] else 'SOME TARGETS MISSED'}; {res['seconds']}s "
              f"(embedding {res['embed_seconds']}s)")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
