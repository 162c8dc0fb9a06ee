"""Agent-day benchmark: several working days of one agent in two projects, driven through real stdio servers.

What it simulates
-----------------
One agent works in two projects (``catalogs/agent-day-<set>.json``). Each project has recurring task kinds;
each kind has the memories the task NEEDS (a rule, fact, lesson or procedure), one or two on-topic memories
that MISLEAD (outdated or wrong here), sometimes a RELATED one (on topic, not required), plus general project
memories and UNRELATED ones ("Standup moved to 9:30"). Memories arrive over the days; some needed lessons
are not known at first: the agent writes them down (``recallite_remember``) the first time it meets the task.

Process model: like an MCP client opened in two workspaces, every day (a new session) the agent launches
two ``recallite-mcp`` processes over stdio, one per project (``--scope <project>``), both on ONE database
file (what a user gets by default: one per-user file, one scope per workspace). Scopes keep the projects
apart; user-level memories (preferences) are seen from both, as in real use.

The agent model (deterministic with --seed)
-------------------------------------------
- At task start: ``recallite_context`` with the day's phrasing of the task (several voices: terse, wordy,
  a pasted error); ``format`` markdown or ``compact`` (30 %), the default budget or a small explicit
  ``max_tokens`` (30 %, 350-700); ``limit`` is never passed (the server decides).
- It acts on what it was served. A needed rule/fact/lesson works if it is served anywhere. A needed
  procedure works if it is served and no misleading memory of the task is ranked above it (the agent
  follows the first procedure on the topic it reads). All needed -> success; some -> partial; none -> failure.
- Feedback (the "feedback" twin only): outcome as above; ``used_memory_ids`` in 60 % of tasks (the needed
  memories it relied on, or on failure the misleading ones it followed; omitted when it relied on none);
  ``retrieval_id`` always passed, except (40 %) when exactly one of its retrievals of this session awaits
  feedback; then it relies on the server's default, and if the server refuses (ToolError) it retries with the
  id. In 20 % of tasks the agent starts the next task of the same project before reporting the first, so
  two retrievals are pending.
- The TWIN runs the same days (same tasks, phrasings, formats, memories, on its own database) and never
  sends feedback, so "feedback never makes the context worse" can be read day by day.

Metrics per day and project: precision (mean over contexts of the share of served memories that belong to
the task: its needed, misleading or related memories), needed-memory recall (share of tasks whose needed
memories were all served, among tasks whose needed memories were already in the store), needed first (share
of those tasks whose context led with a memory the task needs), tokens served (mean
per context), success rate, and memories in the store this project reads (project scope + user scope).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from collections.abc import Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .seeds import seed_list

CATALOGS = Path(__file__).resolve().parent / "catalogs"
SETS = ("dev", "holdout", "fresh-dev", "fresh-holdout", "blind")
TARGET_FROM_DAY = 3
TARGET_PRECISION = 0.80
TARGET_RECALL = 0.95
TOLERANCE = 0.01

P_COMPACT = 0.30
P_SMALL_BUDGET = 0.30
P_USED_IDS = 0.60
P_DEFAULT_RID = 0.40
P_INTERLEAVE = 0.20


# -- the world ----------------------------------------------------------------------------------------------------


@dataclass
class Mem:
    key: str
    type: str
    content: str
    role: str  # needed | misleading | related | general | unrelated
    task: str | None = None
    day: int = 1
    learned: bool = False  # a needed lesson the agent writes down the first time it meets the task
    title: str | None = None
    level: str | None = None
    tags: list[str] | None = None


@dataclass
class TaskKind:
    kind: str
    phrasings: list[str]
    needed: list[Mem]
    misleading: list[Mem]
    related: list[Mem]

    @property
    def own_keys(self) -> set[str]:
        return {m.key for m in self.needed + self.misleading + self.related}


@dataclass
class Project:
    scope: str
    description: str
    tasks: list[TaskKind]
    memories: list[Mem]  # every memory of the project, in catalog order


def load_set(name: str, path: str | os.PathLike | None = None) -> dict[str, Any]:
    p = Path(path) if path else CATALOGS / f"agent-day-{name}.json"
    return json.loads(p.read_text(encoding="utf-8"))


def _mem(d: dict, role: str, task: str | None) -> Mem:
    return Mem(key=d["key"], type=d.get("type", "fact"), content=d["content"], role=role, task=task,
               day=int(d.get("day", 1)), learned=bool(d.get("learned", False)), title=d.get("title"),
               level=d.get("level"), tags=d.get("tags"))


def build_projects(data: dict[str, Any], kinds: int | None = None) -> list[Project]:
    """Projects from a catalog; ``kinds`` keeps only the first N task kinds of each (a small run)."""
    out = []
    for pd in data["projects"]:
        tasks, mems = [], []
        for td in pd["tasks"][:kinds] if kinds else pd["tasks"]:
            t = TaskKind(td["kind"], list(td["phrasings"]),
                         [_mem(m, "needed", td["kind"]) for m in td["needed"]],
                         [_mem(m, "misleading", td["kind"]) for m in td.get("misleading", [])],
                         [_mem(m, "related", td["kind"]) for m in td.get("related", [])])
            tasks.append(t)
            mems.extend(t.needed + t.misleading + t.related)
        mems.extend(_mem(m, "general", None) for m in pd.get("general", []))
        mems.extend(_mem(m, "unrelated", None) for m in pd.get("unrelated", []))
        keys = [m.key for m in mems]
        dup = {k for k in keys if keys.count(k) > 1}
        if dup:
            raise ValueError(f"{pd['scope']}: duplicate memory keys {sorted(dup)}")
        out.append(Project(pd["scope"], pd.get("description", ""), tasks, mems))
    return out


# -- the schedule (identical for both twins) ----------------------------------------------------------------------


@dataclass
class Task:
    project: int
    kind: TaskKind
    query: str
    format: str
    max_tokens: int | None
    used_ids: bool
    default_rid: bool
    interleave: bool


@dataclass
class Event:
    what: str  # "remember" | "task"
    project: int
    mem: Mem | None = None
    task: Task | None = None


def plan_day(projects: list[Project], day: int, tasks_per_day: int, seed: int,
             last_phrasing: dict[tuple[int, str], int]) -> list[Event]:
    """The day's events: scheduled memories arrive (unrelated ones at random moments), tasks of both projects
    interleaved as the agent switches windows. Depends only on the seed, never on outcomes."""
    rng = random.Random(f"agent-day|{seed}|day{day}")
    per_project: list[list[Event]] = []
    for pi, p in enumerate(projects):
        kinds: list[TaskKind] = []
        while len(kinds) < tasks_per_day:
            batch = list(p.tasks)
            rng.shuffle(batch)
            kinds.extend(batch)
        evs = []
        for k in kinds[:tasks_per_day]:
            choices = [i for i in range(len(k.phrasings)) if i != last_phrasing.get((pi, k.kind))] or [0]
            i = rng.choice(choices)
            last_phrasing[(pi, k.kind)] = i
            small = rng.random() < P_SMALL_BUDGET
            evs.append(Event("task", pi, task=Task(
                pi, k, k.phrasings[i], "compact" if rng.random() < P_COMPACT else "markdown",
                rng.choice([350, 450, 550, 700]) if small else None,
                rng.random() < P_USED_IDS, rng.random() < P_DEFAULT_RID, rng.random() < P_INTERLEAVE)))
        arrivals = [m for m in p.memories if m.day == day and not m.learned]
        first = [Event("remember", pi, mem=m) for m in arrivals if m.role != "unrelated"]
        for m in (m for m in arrivals if m.role == "unrelated"):
            evs.insert(rng.randint(0, len(evs)), Event("remember", pi, mem=m))
        per_project.append(first + evs)
    merged: list[Event] = []
    while any(per_project):
        live = [q for q in per_project if q]
        q = rng.choice(live)
        merged.append(q.pop(0))
    return merged


# -- the agent ----------------------------------------------------------------------------------------------------


class ToolFailed(Exception):
    pass


async def _call(client, name: str, **args) -> dict:
    res = await client.call_tool(name, {k: v for k, v in args.items() if v is not None})
    if res.is_error:
        raise ToolFailed(f"{name}: {res.content[0].text if res.content else '?'}")
    return res.structured_content


def judge(task: TaskKind, served: list[str], key_of: dict[str, str], prefix: str = "") -> tuple[str, list[str], list[str]]:
    """(outcome, needed ids that worked, misleading ids followed) for what was served, best first.
    ``key_of`` maps a memory id to its catalog key, written ``prefix + key``."""
    keys = [key_of.get(i) for i in served]
    mis = {prefix + m.key for m in task.misleading}
    ok, followed = [], []
    for m in task.needed:
        if prefix + m.key not in keys:
            continue
        pos = keys.index(prefix + m.key)
        if m.type == "procedure":
            above = [served[j] for j in range(pos) if keys[j] in mis]
            if above:
                followed.extend(above)
                continue
        ok.append(served[pos])
    if len(ok) == len(task.needed):
        outcome = "success"
    elif ok:
        outcome = "partial"
    else:
        outcome = "failure"
        if not followed:
            followed = [served[j] for j, k in enumerate(keys) if k in mis][:1]
    return outcome, ok, list(dict.fromkeys(followed))


@dataclass
class Tally:
    precision: list[float] = field(default_factory=list)
    first: list[int] = field(default_factory=list)  # the first memory served is one the task needs
    recall: list[int] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    served: list[int] = field(default_factory=list)
    outcomes: list[str] = field(default_factory=list)
    memories: int = 0
    unavailable: int = 0
    feedback_sent: int = 0
    default_rid: int = 0
    retried_with_id: int = 0
    off_task: dict[str, int] = field(default_factory=dict)  # served, not the task's: by what it is (diagnostic)

    def summary(self) -> dict[str, Any]:
        mean = lambda xs: round(sum(xs) / len(xs), 4) if xs else None
        return {
            "tasks": len(self.outcomes), "precision": mean(self.precision), "first": mean(self.first),
            "recall": mean(self.recall),
            "recall_each": list(self.recall),  # per task, in the schedule's order (the twins' line up)
            "recall_tasks": len(self.recall), "needed_not_yet_stored": self.unavailable,
            "tokens": mean(self.tokens), "served": mean(self.served),
            "success": mean([1.0 if o == "success" else 0.0 for o in self.outcomes]),
            "partial": sum(o == "partial" for o in self.outcomes), "memories": self.memories,
            "feedback_sent": self.feedback_sent, "feedback_default_rid": self.default_rid,
            "feedback_retried_with_id": self.retried_with_id,
            "off_task_served": dict(sorted(self.off_task.items())), "served_total": sum(self.served),
        }


class Agent:
    """One twin: the same days, with or without feedback, on its own database file."""

    def __init__(self, name: str, projects: list[Project], db: str, embedder: str, feedback: bool, seed: int):
        self.name, self.projects, self.db, self.embedder, self.feedback = name, projects, db, embedder, feedback
        self.key_of: dict[str, str] = {}  # memory id -> key (per project keys are unique; ids are global)
        self.stored: set[tuple[int, str]] = set()
        self.pending: list[dict[int, str]] = []  # per project: retrieval_id -> waiting
        self.seed = seed
        self.errors: list[str] = []
        self.day = 0
        self.trace: list[dict[str, Any]] | None = None  # per task, when asked for (--trace)
        self.task_names = False  # name each task by its kind (recallite_context task=), --task-names

    def params(self, scope: str):
        from mcp import StdioServerParameters

        env = dict(os.environ)
        root = Path(__file__).resolve().parents[2]
        env["PYTHONPATH"] = os.pathsep.join([str(root), str(root / "core"), env.get("PYTHONPATH", "")])
        env.setdefault("ORT_DISABLE_TELEMETRY", "1")
        return StdioServerParameters(command=sys.executable, env=env, args=[
            "-m", "recallite_mcp", "--db", self.db, "--embedder", self.embedder, "--scope", scope,
            "--log-level", "WARNING"])

    def off_task_kind(self, key: str | None) -> str:
        """What an off-task memory is: another task's (needed, misleading, related), a general project
        memory, an unrelated one, or from the other project (user-level memories are seen from both)."""
        if key is None:
            return "unknown"
        pi, k = key.split(":", 1)
        m = next((m for m in self.projects[int(pi)].memories if m.key == k), None)
        if m is None:
            return "unknown"
        return f"other task's {m.role}" if m.task else m.role

    async def remember(self, client, pi: int, m: Mem) -> None:
        if (pi, m.key) in self.stored:
            return
        got = await _call(client, "recallite_remember", content=m.content, type=m.type, title=m.title,
                          tags=m.tags, level=m.level)
        self.key_of[got.get("duplicate_of") or got["id"]] = f"{pi}:{m.key}"
        self.stored.add((pi, m.key))

    async def context(self, client, t: Task, tally: Tally) -> dict:
        named = {"task": t.kind.kind.replace("-", " ")} if self.task_names else {}
        ctx = await _call(client, "recallite_context", query=t.query, format=t.format, max_tokens=t.max_tokens, **named)
        served = ctx["memory_ids"]
        own = {f"{t.project}:{k}" for k in t.kind.own_keys}
        if served:
            tally.precision.append(sum(self.key_of.get(i) in own for i in served) / len(served))
        for i in served:
            if self.key_of.get(i) not in own:
                what = self.off_task_kind(self.key_of.get(i))
                tally.off_task[what] = tally.off_task.get(what, 0) + 1
        tally.tokens.append(int(ctx["tokens"]))
        tally.served.append(len(served))
        if all((t.project, m.key) in self.stored for m in t.kind.needed):
            need = {f"{t.project}:{m.key}" for m in t.kind.needed}
            tally.recall.append(int(need <= {self.key_of.get(i) for i in served}))
            tally.first.append(int(bool(served) and self.key_of.get(served[0]) in need))
        else:
            tally.unavailable += 1
        return ctx

    async def finish(self, client, t: Task, ctx: dict, tally: Tally) -> None:
        pi = t.project
        outcome, ok, followed = judge(t.kind, ctx["memory_ids"], self.key_of, f"{pi}:")
        tally.outcomes.append(outcome)
        used = (ok if outcome != "failure" else followed) if t.used_ids else None
        if self.trace is not None:
            key = lambda i: self.key_of.get(i, i).split(":", 1)[-1]
            self.trace.append({
                "day": self.day, "twin": self.name, "project": self.projects[pi].scope, "kind": t.kind.kind,
                "query": t.query, "format": t.format, "max_tokens": t.max_tokens, "retrieval_id": ctx["retrieval_id"],
                "served": [key(i) for i in ctx["memory_ids"]], "outcome": outcome,
                "used": None if used is None else [key(i) for i in used],
                "missing": [m.key for m in t.kind.needed if (pi, m.key) in self.stored
                            and f"{pi}:{m.key}" not in {self.key_of.get(i) for i in ctx["memory_ids"]}]})
        if self.feedback:
            rid = ctx["retrieval_id"]
            args = {"outcome": outcome, "used_memory_ids": used or None,
                    "reason": None if outcome == "success" else f"{t.kind.kind}: the needed memory was not followed"}
            pend = self.pending[pi]
            if t.default_rid and list(pend) == [rid]:
                tally.default_rid += 1
                try:
                    await _call(client, "recallite_feedback", **args)
                except ToolFailed:
                    tally.retried_with_id += 1
                    await _call(client, "recallite_feedback", retrieval_id=rid, **args)
            else:
                await _call(client, "recallite_feedback", retrieval_id=rid, **args)
            tally.feedback_sent += 1
        self.pending[pi].pop(ctx["retrieval_id"], None)
        for m in t.kind.needed:  # a lesson learned the hard way is written down after the task
            if m.learned and (pi, m.key) not in self.stored:
                await self.remember(client, pi, m)

    async def run_day(self, day: int, events: list[Event]) -> dict[str, dict[str, Any]]:
        from mcp import Client

        tallies = [Tally() for _ in self.projects]
        self.day = day
        self.pending = [{} for _ in self.projects]  # a new session: nothing awaits feedback
        async with AsyncExitStack() as stack:
            clients = [await stack.enter_async_context(Client(self.params(p.scope))) for p in self.projects]
            open_task: list[tuple[Task, dict] | None] = [None for _ in self.projects]
            for ev in events:
                c, tally = clients[ev.project], tallies[ev.project]
                if ev.what == "remember":
                    await self.remember(c, ev.project, ev.mem)
                    continue
                t = ev.task
                ctx = await self.context(c, t, tally)
                self.pending[ev.project][ctx["retrieval_id"]] = True
                held = open_task[ev.project]
                if held is not None:  # the task put aside earlier: report it now, the newer one still open
                    open_task[ev.project] = None
                    await self.finish(c, held[0], held[1], tally)
                if t.interleave and held is None:
                    open_task[ev.project] = (t, ctx)  # starts the next task before reporting this one
                else:
                    await self.finish(c, t, ctx, tally)
            for pi, held in enumerate(open_task):
                if held is not None:
                    await self.finish(clients[pi], held[0], held[1], tallies[pi])
            out = {}
            for pi, p in enumerate(self.projects):
                st = await _call(clients[pi], "recallite_stats", scope=p.scope)
                user = await _call(clients[pi], "recallite_stats", scope=st["user_scope"])
                tallies[pi].memories = int(st["memories"]) + int(user["memories"])
                out[p.scope] = tallies[pi].summary()
            whole = await _call(clients[0], "recallite_stats")
            out["_stats"] = {"feedback": whole.get("feedback", {}), "context_calls": whole.get("context_calls"),
                             "memories": whole.get("memories")}
        return out


# -- the benchmark ------------------------------------------------------------------------------------------------


def _diff(a, b):
    return None if a is None or b is None else round(a - b, 4)


def _snapshot(db: str, dest: str) -> None:
    """A consistent copy of a twin's database file (SQLite's backup API), for looking into a day afterwards."""
    import sqlite3

    src, out = sqlite3.connect(db), sqlite3.connect(dest)
    try:
        src.backup(out)
    finally:
        out.close()
        src.close()


async def _run(projects: list[Project], days: int, tasks_per_day: int, seed: int, embedder: str, workdir: str,
               progress, trace: list[dict[str, Any]] | None = None, keep: str | None = None,
               task_names: bool = False) -> dict[str, Any]:
    import anyio

    twins = {"feedback": Agent("feedback", projects, os.path.join(workdir, "with-feedback.db"), embedder, True, seed),
             "no_feedback": Agent("no_feedback", projects, os.path.join(workdir, "no-feedback.db"), embedder, False, seed)}
    for ag in twins.values():
        ag.trace, ag.task_names = trace, task_names
    last_phrasing: dict[tuple[int, str], int] = {}
    per_day: list[dict[str, Any]] = []
    for day in range(1, days + 1):
        events = plan_day(projects, day, tasks_per_day, seed, last_phrasing)
        got: dict[str, Any] = {}

        async def one(name: str, ag: Agent, day: int = day, events: list[Event] = events,
                      got: dict[str, Any] = got) -> None:
            got[name] = await ag.run_day(day, events)

        async with anyio.create_task_group() as tg:
            for name, ag in twins.items():
                tg.start_soon(one, name, ag)
        row = {"day": day, "projects": {}, "stats": {n: got[n].pop("_stats") for n in twins}}
        for p in projects:
            f, n = got["feedback"][p.scope], got["no_feedback"][p.scope]
            row["projects"][p.scope] = {"feedback": f, "no_feedback": n,
                                        "delta": {"precision": _diff(f["precision"], n["precision"]),
                                                  "recall": _diff(f["recall"], n["recall"])}}
        per_day.append(row)
        if keep:
            for name, ag in twins.items():
                _snapshot(ag.db, os.path.join(keep, f"{name}.day{day}.db"))
        if progress:
            progress(f"day {day}/{days} done")
    return {"days": per_day}


def check_targets(res: dict[str, Any]) -> list[dict[str, Any]]:
    checks = []
    for row in res["days"]:
        for scope, r in row["projects"].items():
            f, d = r["feedback"], r["delta"]
            if row["day"] >= TARGET_FROM_DAY:
                checks.append({"day": row["day"], "project": scope, "check": f"precision >= {TARGET_PRECISION:.2f}",
                               "value": f["precision"], "ok": f["precision"] is not None and f["precision"] >= TARGET_PRECISION})
                checks.append({"day": row["day"], "project": scope, "check": f"recall >= {TARGET_RECALL:.2f}",
                               "value": f["recall"], "ok": f["recall"] is not None and f["recall"] >= TARGET_RECALL})
            for k in ("precision", "recall"):
                checks.append({"day": row["day"], "project": scope, "check": f"{k} with feedback >= without - {TOLERANCE}",
                               "value": d[k], "ok": d[k] is None or d[k] >= -TOLERANCE})
    return checks


def run_agent_day(set_name: str = "dev", days: int = 5, seed: int = 7, embedder: str = "default",
                  tasks_per_day: int = 10, kinds: int | None = None, catalog: str | None = None,
                  progress=None, trace: bool = False, keep: str | None = None, task_names: bool = False) -> dict[str, Any]:
    """Run both twins over the days and return every number (the ``--json`` output). ``trace``: also
    return each task (what was served, by catalog key, the outcome, the needed memories missed) under
    "trace"; ``keep``: a folder that gets a copy of each twin's database at the end of every day;
    ``task_names``: the agent names each task by its kind (recallite_context ``task``)."""
    import anyio

    data = load_set(set_name, catalog)
    projects = build_projects(data, kinds)
    t0 = time.perf_counter()
    tasks: list[dict[str, Any]] | None = [] if trace else None
    if keep:
        os.makedirs(keep, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="recallite-agent-day-") as wd:
        res = anyio.run(_run, projects, days, tasks_per_day, seed, embedder, wd, progress, tasks, keep, task_names)
    if tasks is not None:
        res["trace"] = tasks
    res["config"] = {"set": data.get("name", set_name), "days": days, "seed": seed, "embedder": embedder,
                     "tasks_per_day_per_project": tasks_per_day, "projects": [p.scope for p in projects],
                     "task_kinds": {p.scope: len(p.tasks) for p in projects},
                     "catalog_memories": {p.scope: len(p.memories) for p in projects},
                     "task_names": task_names,
                     "process_model": "per day and twin: two stdio servers (one per project, --scope), one db file"}
    res["checks"] = check_targets(res)
    res["pass"] = all(c["ok"] for c in res["checks"])
    res["seconds"] = round(time.perf_counter() - t0, 1)
    return res


def _f(x, digits=2) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def _d(x) -> str:
    return "-" if x is None else f"{x:+.2f}"


def format_table(res: dict[str, Any]) -> str:
    from ..output import table

    rows = []
    for row in res["days"]:
        for scope, r in row["projects"].items():
            f, n, d = r["feedback"], r["no_feedback"], r["delta"]
            rows.append([row["day"], scope, f["memories"], f["tasks"],
                         f"{_f(f['precision'])}/{_f(n['precision'])}", _d(d["precision"]),
                         f"{_f(f['recall'])}/{_f(n['recall'])}", _d(d["recall"]),
                         f"{_f(f['tokens'], 0)}/{_f(n['tokens'], 0)}", f"{_f(f['served'], 1)}/{_f(n['served'], 1)}",
                         f"{_f(f['success'])}/{_f(n['success'])}"])
    return table(["day", "project", "mem", "tasks", "prec fb/no", "Δprec", "recall fb/no", "Δrec",
                  "tokens fb/no", "served fb/no", "success fb/no"], rows)


def off_task_line(res: dict[str, Any]) -> str:
    """What the off-task memories served with feedback from TARGET_FROM_DAY on were (a diagnostic)."""
    got: dict[str, int] = {}
    total = 0
    for row in res["days"]:
        if row["day"] < TARGET_FROM_DAY:
            continue
        for r in row["projects"].values():
            total += r["feedback"].get("served_total", 0)
            for k, v in r["feedback"].get("off_task_served", {}).items():
                got[k] = got.get(k, 0) + v
    parts = ", ".join(f"{k} {v}" for k, v in sorted(got.items(), key=lambda kv: -kv[1])) or "none"
    return f"off-task memories served with feedback from day {TARGET_FROM_DAY} (of {total} served): {parts}"


def miss_counts(results: list[dict[str, Any]]) -> dict[str, int]:
    """Tasks from TARGET_FROM_DAY whose needed memories were not all served, by which twin missed
    them: with feedback only (feedback cost them), both (retrieval never found them), or without
    feedback only (feedback found them). The twins run one schedule, so their tasks line up."""
    out = {"feedback_only": 0, "both": 0, "no_feedback_only": 0}
    for res in results:
        for row in res["days"]:
            if row["day"] < TARGET_FROM_DAY:
                continue
            for r in row["projects"].values():
                for f, n in zip(r["feedback"]["recall_each"], r["no_feedback"]["recall_each"]):
                    key = None if f and n else "both" if not f and not n else "feedback_only" if not f else "no_feedback_only"
                    if key:
                        out[key] += 1
    return out


def _misses_line(results: list[dict[str, Any]]) -> str:
    m = miss_counts(results)
    return (f"needed memories missed from day {TARGET_FROM_DAY}: with feedback only {m['feedback_only']}, "
            f"by both {m['both']}, without feedback only {m['no_feedback_only']}")


def seeds_summary(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Means over several seeds' runs of the days from TARGET_FROM_DAY (every project-day counts once):
    one seed's table moves by .10 when one task changes, too coarse to tell two versions apart."""
    acc: dict[str, list[float]] = {"precision": [], "recall": [], "twin_precision": [], "twin_recall": [], "tokens": [],
                                   "first": [], "twin_first": []}
    for res in results:
        for row in res["days"]:
            if row["day"] < TARGET_FROM_DAY:
                continue
            for r in row["projects"].values():
                f, n = r["feedback"], r["no_feedback"]
                for k, v in (("precision", f["precision"]), ("recall", f["recall"]), ("twin_precision", n["precision"]),
                             ("twin_recall", n["recall"]), ("tokens", f["tokens"]), ("first", f.get("first")),
                             ("twin_first", n.get("first"))):
                    if v is not None:
                        acc[k].append(v)
    out: dict[str, Any] = {k: round(sum(v) / len(v), 4) if v else None for k, v in acc.items()}
    out["seeds"] = [res["config"]["seed"] for res in results]
    out["checks_failed"] = sum(1 for res in results for c in res["checks"] if not c["ok"])
    out["checks"] = sum(len(res["checks"]) for res in results)
    out["misses"] = miss_counts(results)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="recallite-mcp bench --agent-day", description=__doc__.split("\n\n")[0])
    p.add_argument("--set", dest="set_name", choices=SETS, default="dev",
                   help="dev: for tuning; holdout: for the final report only; fresh-dev: a set written by a writer who never saw the engine, for checking; fresh-holdout: its held-out twin, for final reports only; blind: a third writer's, never run before its first report")
    p.add_argument("--days", type=int, default=5)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--seeds", type=seed_list, default=None, metavar="S1,S2,...",
                   help="run once per seed and print the means of days 3+ over all runs (no per-day table)")
    p.add_argument("--embedder", choices=["default", "hash"], default="default",
                   help="default: MiniLM ONNX (offline); hash: fast, no model")
    p.add_argument("--tasks-per-day", type=int, default=10, help="tasks per project per day (default 10)")
    p.add_argument("--kinds", type=int, default=None, help="keep only the first N task kinds per project (a quick run)")
    p.add_argument("--catalog", default=None, help="another catalog file in the same JSON shape")
    p.add_argument("--task-names", action="store_true",
                   help="the agent names each task by its kind (recallite_context task=), both twins")
    p.add_argument("--json", action="store_true", help="print everything as JSON")
    p.add_argument("--trace", default=None, metavar="FILE",
                   help="write every task (served memories by key, outcome, needed ones missed) as JSON lines")
    p.add_argument("--keep", default=None, metavar="DIR", help="copy each twin's database into DIR at the end of every day")
    args = p.parse_args(list(argv) if argv is not None else None)
    say = None if args.json else (lambda text: print(text, file=sys.stderr, flush=True))
    if args.seeds:
        return _main_seeds(args, say)
    res = run_agent_day(args.set_name, args.days, args.seed, args.embedder, args.tasks_per_day, args.kinds,
                        args.catalog, progress=say, trace=bool(args.trace), keep=args.keep, task_names=args.task_names)
    if args.trace:
        with open(args.trace, "w", encoding="utf-8") as fh:
            fh.writelines(json.dumps(t) + "\n" for t in res.pop("trace"))
    if args.json:
        print(json.dumps(res, indent=2))
        return 0
    c = res["config"]
    print(f"agent-day benchmark: set {c['set']}, {c['days']} days, seed {c['seed']}, embedder {c['embedder']}, "
          f"{c['tasks_per_day_per_project']} tasks/project/day, kinds {c['task_kinds']}")
    print("fb = with feedback, no = twin without feedback; Δ = fb - no; recall = needed-memory recall")
    print(format_table(res))
    fails = [ch for ch in res["checks"] if not ch["ok"]]
    groups: dict[str, list[dict]] = {}
    for ch in res["checks"]:
        groups.setdefault(ch["check"], []).append(ch)
    for name, chs in groups.items():
        bad = [f"d{ch['day']} {ch['project']} {_f(ch['value'])}" for ch in chs if not ch["ok"]]
        scope = f"from day {TARGET_FROM_DAY}" if ">= 0." in name else "every day"
        print(f"{'PASS' if not bad else 'FAIL'}  {name} ({scope})" + (f": {', '.join(bad)}" if bad else ""))
    print(off_task_line(res))
    print(_misses_line([res]))
    print(f"{'PASS' if not fails else 'FAIL'} overall; {res['seconds']} s")
    return 0


def _main_seeds(args: argparse.Namespace, say) -> int:
    if args.trace or args.keep:
        raise SystemExit("--trace and --keep go with one --seed, not --seeds.")
    results = [run_agent_day(args.set_name, args.days, seed, args.embedder, args.tasks_per_day, args.kinds,
                             args.catalog, progress=say, task_names=args.task_names) for seed in args.seeds]
    summary = seeds_summary(results)
    if args.json:
        print(json.dumps({"summary": summary, "runs": results}, indent=2))
        return 0
    print(f"agent-day benchmark: set {results[0]['config']['set']}, seeds {','.join(map(str, summary['seeds']))}, "
          f"{args.days} days, embedder {args.embedder}; means of days {TARGET_FROM_DAY}-{args.days} over every project-day")
    for res in results:
        bad = sum(1 for c in res["checks"] if not c["ok"])
        print(f"seed {res['config']['seed']}: {bad} of {len(res['checks'])} checks failed")
    print(f"precision fb/no {_f(summary['precision'], 3)}/{_f(summary['twin_precision'], 3)}  "
          f"recall fb/no {_f(summary['recall'], 3)}/{_f(summary['twin_recall'], 3)}  "
          f"needed first fb/no {_f(summary['first'], 3)}/{_f(summary['twin_first'], 3)}  "
          f"tokens fb {_f(summary['tokens'], 0)}  checks failed {summary['checks_failed']} of {summary['checks']}")
    print(_misses_line(results))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
