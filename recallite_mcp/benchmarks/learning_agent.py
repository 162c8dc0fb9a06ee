"""The simulated agent of the learning benchmark (see learning.py) and one scenario played by it
through the Python API: the tasks of a round, the agent's turn (act on the first memory shown,
report it and its fallbacks), the per-round rates, and the targets a scenario is judged by.
Imports learning_tasks and the core; the benchmark run, its report and the CLI import this."""

from __future__ import annotations

import random
import time
import zlib
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from recallite_core.errors import InvalidInputError
from recallite_core.text.task_names import task_key

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
        if hasattr(inner, "vector_std_floor"):  # and the same fusion floor (read with getattr by the retriever)
            self.vector_std_floor = inner.vector_std_floor
        self._cache: dict[str, np.ndarray] = {}
        self._qcache: dict[str, np.ndarray] = {}  # queries, when the inner embedder embeds them apart
        self.calls = 0
        self.texts = 0

    def embed(self, texts: list[str]) -> np.ndarray:
        return self._cached(texts, self.inner.embed, self._cache)

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        """Queries, for an embedder with a query side of its own (e5); else the same as embed."""
        inner = getattr(self.inner, "embed_queries", None)
        return self.embed(texts) if not callable(inner) else self._cached(texts, inner, self._qcache)

    def _cached(self, texts: list[str], fn, cache: dict[str, np.ndarray]) -> np.ndarray:
        todo = list(dict.fromkeys(t for t in texts if t not in cache))
        if todo:
            self.calls += 1
            self.texts += len(todo)
            for t, v in zip(todo, np.asarray(fn(todo), dtype=np.float32)):
                cache[t] = v
        return np.stack([cache[t] for t in texts]) if texts else np.empty((0, self.dimensions), np.float32)

    def load(self) -> None:
        load = getattr(self.inner, "load", None)
        if callable(load):
            load()


def make_embedder(kind: str):
    from recallite_core import resolve_embedder

    from .e5_embedder import bench_embedder

    spec = bench_embedder(kind)  # "e5": the embedder object; other names pass through
    return CachingEmbedder(resolve_embedder("onnx" if spec == "default" else spec))


# -- the simulated agent ------------------------------------------------------------------------------


@dataclass
class Task:
    family: lt.TaskFamily
    query: str
    working: str  # key of the memory that works this round
    group: str  # "stable", "drifted", "A", "B", "rest"


def agent_turn(
    shown: Sequence[str], key_of: dict[str, str], task: Task, rng: random.Random, noise: float, attempts: int,
    send: Callable[[str, str], object] | None, noise_mode: str = "label",
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


def mean_rate(values: Sequence[bool | float]) -> float:
    return float(np.mean(values)) if values else float("nan")


# -- one scenario through the Python API ------------------------------------------------------------------


class KnownTasks:
    """Tells the learner each retrieval's true task: the retriever's task vector becomes one axis
    per family, so evidence transfers fully between a family's phrasings and not at all between
    families. A bound (``--known-tasks``): what the learner reaches when telling tasks apart is
    solved, set against the run without it, which must tell them apart from the query and what it
    retrieves."""

    def __init__(self, mem):
        self.retriever = mem.core.retriever
        self.blend = self.retriever.task_vector
        self.axis: dict[bytes, int] = {}  # query vector -> its family's axis
        self.family_axis: dict[str, int] = {}
        self.retriever.task_vector = self.task_vector

    def ask(self, query: str, family: str) -> None:
        """Register the family of a query before it is asked."""
        qvec = np.asarray(self.retriever.query_vector(query), dtype=np.float32)
        axis = self.family_axis.setdefault(family, len(self.family_axis))
        if axis >= qvec.shape[0]:
            raise ValueError(f"--known-tasks gives each family an axis: {qvec.shape[0]} dimensions hold at most "
                             f"{qvec.shape[0]} families; play fewer (--families)")
        self.axis[qvec.tobytes()] = axis

    def task_vector(self, session, qvec, ordered):
        i = self.axis.get(np.asarray(qvec, dtype=np.float32).tobytes())
        if i is None:  # a query the run did not register: placed as the learner would place it
            return self.blend(session, qvec, ordered)
        v = np.zeros(np.asarray(qvec).shape[0], dtype=np.float32)
        v[i] = 1.0
        return v


def run_scenario(
    scenario: str, families: list[lt.TaskFamily], rounds: int, seed: int, embedder, *, noise: float = 0.15,
    attempts: int = 3, limit: int = 3, config=None, interference_from: int = 4, noise_mode: str = "label",
    via: str = "context", pairs: list[tuple[str, str]] | None = None, keep_log: bool = False,
    known_tasks: bool = False, task_names: float | None = None, adopt_names: str | None = None,
) -> dict[str, Any]:
    """One scenario on a fresh store. ``via="context"``: ``build_context`` (exploration on);
    ``via="recall"``: ``recall(query, limit)`` (no exploration). ``pairs`` defaults to the
    interference pairs of the families' catalog. ``known_tasks``: the learner is told each
    query's family (KnownTasks, a bound). ``task_names``: the agent names its task (recall/context
    ``task``) with its family's key on this share of its asks, and with a name of that phrasing's
    own on the rest (an agent that does not always reuse its names); None: no names.
    ``adopt_names``: an agent that used a name of its own reads the result's ``task_names`` and
    reports the outcome under one (feedback ``task``): "own", its family's name when listed (an
    agent that recognises its job by its name); "first", the first listed whatever job it names."""
    from recallite_core import Recallite

    if via not in VIAS:
        raise ValueError(f"via must be one of {', '.join(VIAS)}, got {via!r}")
    t0 = time.perf_counter()
    mem = Recallite.open(None, embedder=embedder, config=config)
    told = KnownTasks(mem) if known_tasks else None
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
        naming = random.Random(f"learning-bench|names|{seed}|{scenario}")
        per_round = []
        seen_rankings: dict[tuple[str, str], list[str]] = {}
        repeats = changed = 0
        replacement_first_used: dict[str, int] = {}
        feedback_calls = 0
        prev_ok: dict[str, bool] = {}
        regressions = later_rounds = 0
        log: list[dict[str, Any]] = []
        own_names = listed = first = 0  # asks under a name of their own; own family's name listed; listed first
        for r in range(rounds):
            if scenario == "drift" and r == lt.DRIFT_AFTER_ROUND:
                insert([f.drift_replacement for f in families if f.key in drifted])
            results: dict[str, list[tuple[bool, float]]] = {}
            for task in tasks_for_round(families, scenario, r, seed, drifted, pairs, interference_from):
                if told is not None:
                    told.ask(task.query, task.family.key)
                name = None
                if task_names is not None:
                    name = task.family.key if naming.random() < task_names else f"{task.family.key} {zlib.crc32(task.query.encode()):x}"
                if via == "recall":
                    got = mem.recall(task.query, limit=limit, task=name)
                    rid, shown, names = got.retrieval_id, [h.memory.id for h in got.memories], got.task_names
                else:
                    ctx = mem.build_context(task.query, limit=limit, max_tokens=2000, task=name)
                    rid, shown, names = ctx.retrieval_id, ctx.memory_ids, ctx.task_names
                report_as = None
                if name is not None and name != task.family.key:
                    own = task_key(task.family.key)
                    own_names += 1
                    keys = [task_key(n) for n in names]  # names come as the agent wrote them
                    listed += own in keys
                    first += bool(keys) and keys[0] == own
                    if adopt_names == "own" and own in keys:
                        report_as = task.family.key
                    elif adopt_names == "first" and names:
                        report_as = names[0]
                send = None if scenario == "none" else (
                    lambda mid, outcome, _rid=rid, _as=report_as: report(mem, _rid, outcome, mid, _as))
                ok, rr, sent = agent_turn(shown, key_of, task, rng, noise_rate, attempts, send, noise_mode)
                feedback_calls += sent
                if keep_log:
                    log.append({"round": r + 1, "family": task.family.key, "query": task.query, "retrieval_id": rid,
                                "ids": list(shown), "keys": [key_of.get(i, "?") for i in shown], "working": task.working,
                                "ok": ok})
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
                "success": mean_rate([ok for ok, _ in everything]),
                "mrr": mean_rate([rr for _, rr in everything]),
                "n": len(everything),
                "groups": {g: {"success": mean_rate([ok for ok, _ in v]), "mrr": mean_rate([rr for _, rr in v]), "n": len(v)}
                           for g, v in sorted(results.items()) if g != "all"},
            }
            per_round.append(row)
        out: dict[str, Any] = {"scenario": scenario, "via": via, "rounds": per_round, "feedback_calls": feedback_calls,
                               "regressions": round(regressions / later_rounds, 4) if later_rounds else float("nan"),
                               "regression_count": regressions, "family_rounds_after_first": later_rounds}
        if task_names is not None:
            out["own_names"] = {"asks": own_names, "family_listed": listed, "family_first": first, "adopted": adopt_names or ""}
        if keep_log:
            out["log"] = log
            out["regression_cases"] = regression_cases(log)
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


def report(mem, rid: str, outcome: str, mid: str, name: str | None) -> None:
    """Feedback naming the memory used, under ``name`` when given; where the engine refuses that
    name for this retrieval (its own name has a record), the agent reports without one, as its
    error says."""
    try:
        mem.feedback(rid, outcome, used_memory_ids=[mid], task=name)
    except InvalidInputError:
        if name is None:
            raise
        mem.feedback(rid, outcome, used_memory_ids=[mid])


REGRESSION_KINDS = ("working not shown", "another task's memory first", "own distractor first")


def regression_cases(log: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each family-round that failed right after its family succeeded, with what was served first:
    the working memory not among the memories shown (ranked below the limit, or not retrieved at
    all: below the relevance floor), a memory of another task first (evidence leaked between tasks), or one of the family's own
    distractors first. A diagnostic for the regressions share (``--explain``)."""
    prev: dict[str, bool] = {}
    out = []
    for e in log:
        fam = e["family"]
        if prev.get(fam) and not e["ok"]:
            keys = e.get("keys", [])
            first = keys[0] if keys else None
            if e.get("working") not in keys:
                kind = REGRESSION_KINDS[0]
            elif first is not None and first.split(":", 1)[0] != fam:
                kind = REGRESSION_KINDS[1]
            else:
                kind = REGRESSION_KINDS[2]
            out.append({"round": e["round"], "family": fam, "query": e["query"], "shown": keys, "kind": kind})
        prev[fam] = e["ok"]
    return out


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
