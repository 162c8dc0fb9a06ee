"""Many writers, nothing lost (issue 17): 8 processes (think 8 machines), each with its own
Recallite on one PostgreSQL database, run a seeded mix of remember / remember_many / recall /
feedback (with the ids the recall returned, client keys, retries) / relate at the same time.

Then the parent checks the database against what the children were told: no error in any child,
every acknowledged write there exactly once (found by its unique tag), no duplicated text, feedback
rows == acknowledged feedback keys, relations == acknowledged links (every machine also credits one
memory at the same moment, right after storing it: no increment lost), and the learning rows
consistent: each memory's success/failure counts equal the credit rows of successful/failed
feedback that name it, and its usefulness is the end of its chain of credit rows (no lost update).
Sized for CI (8 x 50 operations, well under a minute on 2 cores); bigger with
RECALLITE_STRESS_PG_PROCESSES / RECALLITE_STRESS_PG_OPS."""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import time
import traceback
from collections import Counter, defaultdict

import pytest

pytestmark = pytest.mark.slow

PROCESSES = int(os.environ.get("RECALLITE_STRESS_PG_PROCESSES", "8"))
OPS = int(os.environ.get("RECALLITE_STRESS_PG_OPS", "50"))
SHARED = [f"Shared rule {k}: every machine stores this exact text about queue {k}." for k in range(6)]


def writer(url: str, p: int, ops: int, seed: int, start, out) -> None:
    """One 'machine': its own Recallite on the shared database; reports what it was told."""
    from recallite_core import Recallite

    rng = random.Random(seed * 1000 + p)
    log: dict = {"p": p, "writes": [], "shared": [], "feedback": [], "relations": [], "errors": [], "ops": Counter()}
    mem = Recallite.open(url, embedder="hash")
    try:
        start.wait()
        last: tuple[str, list[str]] | None = None
        judged: set[str] = set()  # retrievals this machine reported on: a task takes one outcome per memory
        for j in range(ops):
            kind = rng.choices(["remember", "remember_many", "recall", "feedback", "relate"], weights=[3, 1, 3, 2, 1])[0]
            if kind == "feedback" and (last is None or last[0] in judged):  # one report per task
                kind = "recall"
            if kind == "relate" and last is None:
                kind = "remember"
            if j < 2:  # every machine stores the same text at the same moment: a deliberate race
                kind = "remember"
            if j == 2:  # ... then credits that same memory at the same moment: no increment may be lost
                kind = "feedback"
            tag = f"w-p{p}-o{j}"
            try:
                if j == 2:
                    same = log["shared"][0][1]
                    r = mem.recall(SHARED[0], limit=5)
                    key = f"fb-same-p{p}"
                    fb = mem.feedback(r.retrieval_id, "success", used_memory_ids=[same], client_key=key)
                    log["feedback"].append((key, fb.feedback_id, fb.duplicate, "success", [same]))
                elif kind == "remember":
                    if j < 2 or rng.random() < 0.15:  # the same text from many machines: stored once
                        text = SHARED[j] if j < 2 else rng.choice(SHARED)
                        m = mem.remember(text, type="fact")
                        log["shared"].append((text, m.id))
                    else:
                        m = mem.remember(f"Machine {p} op {j} learned fact {rng.getrandbits(40):x} about deploy "
                                         f"{rng.choice('abcdef')}.", type="fact", tags=[tag])
                        log["writes"].append((tag, [m.id]))
                elif kind == "remember_many":
                    n = rng.randint(2, 4)
                    ms = mem.remember_many([{"content": f"Machine {p} op {j} batch item {i} {rng.getrandbits(40):x} "
                                                        f"about deploy {rng.choice('abcdef')}.", "type": "fact", "tags": [tag]}
                                            for i in range(n)])
                    log["writes"].append((tag, [m.id for m in ms]))
                elif kind == "recall":
                    # Half the recalls hit the shared rules: feedback on the same few memories from
                    # every machine (read usefulness, write usefulness: lost updates would show).
                    query = "shared rule queue exact text" if rng.random() < 0.5 else f"deploy {rng.choice('abcdef')} fact"
                    r = mem.recall(query, limit=5)
                    if r.ids:
                        last = (r.retrieval_id, r.ids)
                elif kind == "feedback":
                    rid, shown = last  # type: ignore[misc]
                    used = rng.sample(shown, min(len(shown), rng.randint(1, 2)))
                    outcome = rng.choice(["success", "success", "failure"])
                    key = f"fb-p{p}-o{j}"
                    tries = 2 if rng.random() < 0.25 else 1  # a client retry: applied once
                    for _ in range(tries):
                        fb = mem.feedback(rid, outcome, used_memory_ids=used, client_key=key)
                        log["feedback"].append((key, fb.feedback_id, fb.duplicate, outcome, sorted(used)))
                    judged.add(rid)
                else:  # relate two memories another machine may be linking too
                    _, shown = last  # type: ignore[misc]
                    if len(shown) >= 2:
                        a, b = shown[0], shown[1]
                        rel = mem.relate(a, b, rng.choice(["supports", "causes"]))
                        log["relations"].append((rel.id, rel.from_id, rel.to_id, rel.type))
                log["ops"][kind] += 1
            except Exception:  # every error is a failure of the test, reported by the parent
                log["errors"].append(f"p{p} op {j} {kind}: {traceback.format_exc()[-1500:]}")
    finally:
        mem.close()
        log["ops"] = dict(log["ops"])
        out.put(json.dumps(log))


def test_eight_writers_one_postgres_database(postgres_db_url):
    from recallite_core import Recallite

    Recallite.open(postgres_db_url, embedder="hash").close()  # schema in place before the writers race
    ctx = multiprocessing.get_context("spawn")
    start, out = ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=writer, args=(postgres_db_url, p, OPS, 17, start, out)) for p in range(PROCESSES)]
    for pr in procs:
        pr.start()
    time.sleep(0.5)
    t0 = time.perf_counter()
    start.set()
    logs = [json.loads(out.get(timeout=300)) for _ in procs]
    seconds = time.perf_counter() - t0  # includes the children's close
    for pr in procs:
        pr.join(timeout=60)
        assert pr.exitcode == 0

    errors = [e for lg in logs for e in lg["errors"]]
    assert errors == [], "\n".join(errors[:5])
    ops = Counter()
    for lg in logs:
        ops.update(lg["ops"])
    assert sum(ops.values()) == PROCESSES * OPS

    import psycopg

    with psycopg.connect(postgres_db_url) as conn:
        rows = conn.execute("SELECT id, content, tags FROM memories").fetchall()
        fb_rows = conn.execute("SELECT id, client_key, outcome FROM feedback").fetchall()
        credits = conn.execute(
            "SELECT o.memory_id, f.outcome, o.old_usefulness, o.new_usefulness FROM memory_outcomes o "
            "JOIN feedback f ON f.id = o.feedback_id WHERE o.kind = 'credit' ORDER BY o.row_id").fetchall()
        counts = {i: (s, f, u) for i, s, f, u in conn.execute(
            "SELECT id, success_count, failure_count, usefulness FROM memories")}
        rels = conn.execute("SELECT id, from_id, to_id, type FROM relations").fetchall()

    # every acknowledged write exactly once, under its tag; nothing else stored
    by_tag: dict[str, set[str]] = defaultdict(set)
    for i, _content, tags in rows:
        for t in (tags if isinstance(tags, list) else json.loads(tags)):
            by_tag[t].add(f"mem_{i}")
    writes = [w for lg in logs for w in lg["writes"]]
    lost = sum(len(set(ids) - by_tag.get(tag, set())) for tag, ids in writes)
    extra = sum(len(by_tag.get(tag, set()) - set(ids)) for tag, ids in writes)
    by_content = Counter(c for _, c, _ in rows)
    duplicated = sum(n - 1 for n in by_content.values() if n > 1)
    shared = [s for lg in logs for s in lg["shared"]]
    shared_ids = defaultdict(set)
    for text, mid in shared:
        shared_ids[text].add(mid)
    duplicated += sum(len(ids) - 1 for ids in shared_ids.values())
    acknowledged = sum(len(ids) for _, ids in writes) + len(shared_ids)
    assert lost == 0 and extra == 0 and duplicated == 0
    assert len(rows) == acknowledged

    # feedback: one row per acknowledged key, retries answered with the same row
    fbs = [f for lg in logs for f in lg["feedback"]]
    per_key = defaultdict(list)
    for key, fid, dup, outcome, used in fbs:
        per_key[key].append((fid, dup))
    assert all(len({fid for fid, _ in v}) == 1 and [d for _, d in v].count(False) == 1 for v in per_key.values())
    assert sorted(k for _, k, _ in fb_rows) == sorted(per_key)

    # learning rows consistent: counts == credit rows; usefulness == the end of its credit chain
    expected_s, expected_f = Counter(), Counter()
    for key, fid, dup, outcome, used in fbs:
        if not dup:
            for m in used:
                (expected_s if outcome == "success" else expected_f)[int(m[4:])] += 1
    row_s, row_f, chain_breaks, last_new = Counter(), Counter(), 0, {}
    for mid, outcome, old, new in credits:
        (row_s if outcome == "success" else row_f)[mid] += 1
        if mid in last_new and abs(last_new[mid] - old) > 1e-12:
            chain_breaks += 1  # a feedback computed from a stale usefulness: a lost update
        last_new[mid] = new
    mismatches = sum(1 for i, (s, f, _u) in counts.items() if (s, f) != (row_s[i], row_f[i]) or
                     (s, f) != (expected_s[i], expected_f[i]))
    mismatches += sum(1 for i, new in last_new.items() if abs(counts[i][2] - new) > 1e-12)
    assert chain_breaks == 0 and mismatches == 0
    # every machine credited SHARED[0] at the same moment (op 2): each increment is there
    same = {mid for text, mid in shared if text == SHARED[0]}
    assert len(same) == 1
    assert counts[int(next(iter(same))[4:])][0] >= PROCESSES

    # relations: every acknowledged link there, one per (from, to, type)
    acked_rels = {r[0]: (r[1], r[2], r[3]) for lg in logs for r in lg["relations"]}
    stored_rels = {f"rel_{i}": (f"mem_{a}", f"mem_{b}", t) for i, a, b, t in rels}
    assert all(stored_rels.get(i) == v for i, v in acked_rels.items())
    assert len(set(stored_rels.values())) == len(stored_rels)

    writes_total = len(writes) + len(shared) + len(fbs) + ops["relate"]
    print(f"\npostgres writers: {PROCESSES} processes x {OPS} ops = {sum(ops.values())} ops ({dict(ops)}) in "
          f"{seconds:.1f} s; {writes_total} write calls, {writes_total / seconds:.0f} writes/s, "
          f"{sum(ops.values()) / seconds:.0f} ops/s in total; memories {len(rows)}, feedback rows {len(fb_rows)}, "
          f"credit rows {len(credits)}, relations {len(rels)}; errors 0, lost 0, duplicated 0, learning mismatches 0")
