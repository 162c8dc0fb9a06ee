"""`recallite-mcp eval corrections`: does a memory that replaces an older one win, and do
look-alikes stay apart?

Our own set (data/corrections_*.jsonl, written by tests/benchmarks/make_corrections_set.py): update pairs (an old
statement, then a newer one changing its value, with change words or without) and look-alike pairs
(two statements about different subjects that share most words, both true). Each pair carries its
questions and its split (dev or holdout, drawn from the pair id before any tuning). The outsider
set (data/corrections_outsider_*.jsonl) was written by hand by three writers who had not read the
detection: outsider-dev and outsider-holdout are the first writer's pairs in halves,
outsider-dev2 the third's (both dev parts used to design), outsider-final the second's. Pairs share
scopes with a dozen other pairs of other subjects, so detection must also leave those alone.

Printed per split:
- updates: the newer memory ranks above the older for the update questions (and is found), and the
  pair is superseded or linked as contradicting;
- look-alikes: pairs linked, superseded or ranked under their twin for their own question;
- stray links (between memories of different pairs) and memories lost (written but not stored).
``--speed`` prints remember() p50 with detection off and on, on a store of short facts.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from importlib import resources
from typing import Any

BUCKET = 12  # pairs per scope


def load(name: str) -> list[dict]:
    data = resources.files("recallite_mcp.benchmarks").joinpath("data").joinpath(name)
    return [json.loads(line) for line in data.read_text(encoding="utf-8").splitlines() if line.strip()]


# The outsider-written set's parts: its first writer's pairs in halves drawn from the pair id
# (dev, used to design; holdout), a third writer's (dev2, used to design) and a second writer's
# (final: only its totals are read).
OUTSIDER = ("outsider-dev", "outsider-dev2", "outsider-holdout", "outsider-final")
SPLITS = {"both": ("dev", "holdout"), "outsider": OUTSIDER, "all": ("dev", "holdout", *OUTSIDER)}


def pairs_of(kind: str, split: str) -> list[dict]:
    """The ``kind`` pairs ("updates" or "lookalikes") of one part of our set or the outsiders'."""
    name = f"corrections_outsider_{kind}.jsonl" if split in OUTSIDER else f"corrections_{kind}.jsonl"
    return [p for p in load(name) if p["split"] == split]


def buckets(pairs: list[dict], prefix: str) -> dict[str, list[dict]]:
    """Pairs grouped into scopes of BUCKET pairs, no subject twice in one scope."""
    out: dict[str, list[dict]] = {}
    for p in pairs:
        for scope, members in out.items():
            if len(members) < BUCKET and not any(set(p["subjects"]) & set(m["subjects"]) for m in members):
                members.append(p)
                break
        else:
            out[f"{prefix}-{len(out)}"] = [p]
    return out


def _linked(conn, a: int, b: int) -> str | None:
    row = conn.execute(
        "SELECT type FROM relations WHERE type IN ('supersedes', 'contradicts') AND "
        "((from_id = ? AND to_id = ?) OR (from_id = ? AND to_id = ?)) ORDER BY type DESC LIMIT 1", (a, b, b, a)).fetchone()
    return row[0] if row else None


def _order(ids: list[str], first: str, second: str) -> bool:
    """``first`` is found and ranks above ``second``."""
    return first in ids and (second not in ids or ids.index(first) < ids.index(second))


def evaluate(split: str, embedder: str = "default", source: str = "agent", limit: int = 5,
             detection: bool = True) -> dict[str, Any]:
    from recallite_core import Recallite, RecalliteConfig

    ups, looks = (pairs_of(kind, split) for kind in ("updates", "lookalikes"))
    mem = Recallite.open(None, embedder=embedder, config=RecalliteConfig(corrections=detection))
    src = {"type": source}
    written = 0
    pair_of: dict[int, str] = {}
    res: dict[str, Any] = {"split": split + ("" if detection else " (off)"), "embedder": mem.embedder.name, "updates": len(ups), "lookalikes": len(looks)}

    # Updates: every scope gets its older statements first, then the newer ones one by one.
    upd_rows = []
    for scope, members in buckets(ups, f"u-{split}").items():
        olds = mem.remember_many([{"content": p["old"], "type": "fact", "scope": scope, "source": src} for p in members])
        news = [mem.remember(p["new"], type="fact", scope=scope, source=src) for p in members]
        written += len(olds) + len(news)
        for p, o, n in zip(members, olds, news):
            pair_of[int(o.id[4:])] = pair_of[int(n.id[4:])] = p["id"]
            upd_rows.append((scope, p, o.id, n.id))
    # Look-alikes: the first of each pair, then the second, one by one.
    look_rows = []
    for scope, members in buckets(looks, f"l-{split}").items():
        firsts = [mem.remember(p["first"], type="fact", scope=scope, source=src) for p in members]
        seconds = [mem.remember(p["second"], type="fact", scope=scope, source=src) for p in members]
        written += len(firsts) + len(seconds)
        for p, a, b in zip(members, firsts, seconds):
            pair_of[int(a.id[4:])] = pair_of[int(b.id[4:])] = p["id"]
            look_rows.append((scope, p, a.id, b.id))

    with mem.store.reading():
        conn = mem.store.conn
        stored = conn.execute("SELECT count(*) FROM memories").fetchone()[0]
        rels = conn.execute("SELECT from_id, to_id FROM relations WHERE type IN ('supersedes', 'contradicts')").fetchall()
        upd_links = [_linked(conn, int(o[4:]), int(n[4:])) for _, _, o, n in upd_rows]
        look_links = [_linked(conn, int(a[4:]), int(b[4:])) for _, _, a, b in look_rows]
    stray = [(a, b) for a, b in rels if pair_of.get(a) != pair_of.get(b)]
    res["stray_links"] = len(stray)
    stray_text = []
    for a, b in stray[:50]:
        x, y = mem.get_many([a, b])
        stray_text.append(f"stray link mem_{a} -> mem_{b}: {x.content} | {y.content}")
    res["lost"] = written - stored

    questions = newer_first = top1 = 0
    misses: list[str] = []
    by_form: dict[str, list[int]] = {}
    kept = kept_questions = 0
    for (scope, p, o, n), link in zip(upd_rows, upd_links):
        ok_pair = True
        for q in p["questions"]:
            ids = mem.recall(q, limit=limit, scope=scope).ids
            questions += 1
            good = _order(ids, n, o)
            newer_first += good
            top1 += bool(ids) and ids[0] == n
            ok_pair &= good
        for q in p.get("kept_questions", ()):  # the part of the older memory the newer leaves standing
            good = _order(mem.recall(q, limit=limit, scope=scope).ids, o, n)
            kept_questions += 1
            kept += good
            ok_pair &= good
        f = by_form.setdefault(p["form"], [0, 0, 0])
        f[0] += 1
        f[1] += link is not None
        f[2] += ok_pair
        if link is None or not ok_pair:
            misses.append(f"update {p['id']} ({p['form']}, {link or 'unlinked'}{'' if ok_pair else ', older first'}): "
                          f"{p['old']} => {p['new']}")
    res["update_questions"] = questions
    res["newer_first"] = newer_first / max(1, questions)
    res["newer_top1"] = top1 / max(1, questions)
    res["kept_questions"] = kept_questions
    res["kept_first"] = kept / max(1, kept_questions)
    res["linked"] = sum(link is not None for link in upd_links) / max(1, len(upd_rows))
    res["superseded"] = sum(link == "supersedes" for link in upd_links)
    res["contradicts"] = sum(link == "contradicts" for link in upd_links)
    res["by_form"] = {k: {"pairs": v[0], "linked": v[1] / v[0], "newer_first": v[2] / v[0]} for k, v in by_form.items()}

    bad = linked = under = 0
    for (scope, p, a, b), link in zip(look_rows, look_links):
        wrong = False
        for q in p["first_questions"]:
            wrong |= not _order(mem.recall(q, limit=limit, scope=scope).ids, a, b)
        for q in p["second_questions"]:
            wrong |= not _order(mem.recall(q, limit=limit, scope=scope).ids, b, a)
        linked += link is not None
        under += wrong
        bad += link is not None or wrong
        if link is not None or wrong:
            misses.append(f"look-alike {p['id']} ({link or 'unlinked'}{', under its twin' if wrong else ''}): "
                          f"{p['first']} | {p['second']}")
    n_look = max(1, len(look_rows))
    res["look_linked"] = linked / n_look
    res["look_under_twin"] = under / n_look
    res["look_failed"] = bad / n_look
    res["misses"] = misses + stray_text
    mem.close()
    return res


_SUBJECTS = ["the api", "the worker", "staging", "prod", "billing", "search", "the cache", "auth", "the cron job", "ci"]
_ATTRS = ["timeout", "port", "retry limit", "owner", "region", "log level", "batch size", "queue", "version", "budget"]


def _fact(rng: random.Random, i: int) -> str:
    """A short filler fact of the speed and shortlist stores: many subjects share most words."""
    return (f"{rng.choice(_SUBJECTS)} {rng.choice(_ATTRS)} note {i}: value {rng.randint(1, 99999)} "
            f"set by team {rng.choice('abcdefgh')}")


def speed(embedder: str = "default", store_size: int = 2000, writes: int = 150, seed: int = 7) -> dict[str, float]:
    """remember() p50 / p90 in ms on a store of ``store_size`` short facts, with detection off and
    on in turns (write by write, so both see the same store and the same load on the machine)."""
    from recallite_core import Recallite

    rng = random.Random(seed)
    mem = Recallite.open(None, embedder=embedder)
    mem.remember_many([{"content": _fact(rng, i), "type": "fact", "scope": "b"} for i in range(store_size)])
    mem.embedder.embed(["warm up"])
    times: dict[bool, list[float]] = {False: [], True: []}
    cpu: dict[bool, list[float]] = {False: [], True: []}
    for i in range(2 * writes):
        on = bool(i % 2)
        mem.config.corrections = on
        c, t = time.process_time(), time.perf_counter()
        mem.remember(_fact(rng, store_size + i), type="fact", scope="b")
        times[on].append(time.perf_counter() - t)
        cpu[on].append(time.process_time() - c)
    mem.close()
    out: dict[str, float] = {}
    for on, ts in times.items():
        ts.sort()
        key = "on" if on else "off"
        out[f"{key}_p50_ms"] = statistics.median(ts) * 1000
        out[f"{key}_p90_ms"] = ts[int(0.9 * len(ts))] * 1000
        # CPU time of the process: on a loaded machine a write that takes longer than the scheduler's
        # slice waits for other processes' turns, so wall time says more about the load than the code.
        out[f"{key}_cpu_p50_ms"] = statistics.median(cpu[on]) * 1000
    out["ratio_p50"] = out["on_p50_ms"] / out["off_p50_ms"]
    out["ratio_cpu_p50"] = out["on_cpu_p50_ms"] / out["off_cpu_p50_ms"]
    return out


def shortlist_agreement(embedder: str = "default", store_size: int = 10000, seed: int = 7) -> dict[str, int]:
    """Does the candidate search of a large store (the index's sign-agreement shortlist) find what
    the whole scan finds? Every update's older and every look-alike's first statement (both parts)
    among ``store_size`` short facts in one scope; for each newer / second statement, the 5
    candidates nearest() returns against those of a scan of every row."""
    from recallite_core import Recallite
    from recallite_core.index import vector_index
    from recallite_core.policy import corrections as detection

    rng = random.Random(seed)
    ups, looks = load("corrections_updates.jsonl"), load("corrections_lookalikes.jsonl")
    stored = [u["old"] for u in ups] + [lk["first"] for lk in looks]
    probes = [u["new"] for u in ups] + [lk["second"] for lk in looks]
    mem = Recallite.open(None, embedder=embedder)
    try:
        mem.config.corrections = False
        cfg = mem.config
        filler = [{"content": _fact(rng, i), "type": "fact", "scope": "b"} for i in range(store_size)]
        written = mem.remember_many(filler + [{"content": t, "type": "fact", "scope": "b"} for t in stored])
        partner = [int(m.id[4:]) for m in written[store_size:]]
        vecs = mem.core.embed(probes)
        k, floor = max(1, cfg.correction_candidates), cfg.correction_min_similarity
        out = {"probes": len(probes), "differ": 0, "pair_found_by_scan": 0, "pair_missed": 0}
        shortlist = vector_index.NEAR_SHORTLIST
        with mem.store.reading() as conn:
            for i, vec in enumerate(vecs):
                try:
                    vector_index.NEAR_SHORTLIST = 1 << 40  # no shortlist: every row scanned
                    whole = detection.nearest(mem.retriever, conn, vec, "b", k, floor)
                finally:
                    vector_index.NEAR_SHORTLIST = shortlist
                got = detection.nearest(mem.retriever, conn, vec, "b", k, floor)
                out["differ"] += got != whole
                out["pair_found_by_scan"] += partner[i] in whole
                out["pair_missed"] += partner[i] in whole and partner[i] not in got
        return out
    finally:
        mem.close()


def history_updates(embedder: str = "default", name: str = "history") -> dict[str, dict[str, float]]:
    """The knowledge-update questions of the long-history set (`eval history`): conversation turns
    stored with record_turns, each question's evidence a turn of an earlier session and one of a
    later session that changes it. Per part: the newest evidence ranks above the older evidence
    (``newest_first``, found in the top 10 and above every older one), ranks first (``@1``), and how
    many questions have it outside the top 10 (``outside``).
    Turns are records of what was said, so detection leaves them alone: this is recall's order."""
    from recallite_core import Recallite

    from .evalsets import HISTORY_FILES, history_set, load_history

    when = {t["id"]: t["timestamp"] for u in load_history(HISTORY_FILES[name]) for t in u["turns"]}
    es = history_set(name)
    mem = Recallite.open(None, embedder=embedder)
    key_of = es.store(mem)
    out: dict[str, dict[str, float]] = {}
    for q in es.questions:
        if q.kind != "update":
            continue
        ids = [key_of.get(i, i) for i in mem.recall(q.text, limit=10, scope=q.scope).ids]
        newest = max(q.gold, key=lambda g: when[g])
        older = [g for g in q.gold if g != newest]
        row = out.setdefault(q.part, {"questions": 0, "newest_first": 0, "at1": 0, "outside": 0})
        row["questions"] += 1
        row["outside"] += newest not in ids
        row["newest_first"] += all(_order(ids, newest, g) for g in older)
        row["at1"] += bool(ids) and ids[0] == newest
    mem.close()
    for row in out.values():
        row["newest_first"] /= max(1, row["questions"])
        row["at1"] /= max(1, row["questions"])
    return out


def _pct(x: float) -> str:
    return f"{100 * x:5.1f}%"


def format_report(results: list[dict[str, Any]], verbose: bool = False) -> str:
    head = results[0]
    lines = [f"Corrections set, embedder {head['embedder']} (targets: newer first >= 95%, linked >= 90%, "
             "look-alikes failed <= 2%, nothing lost)", "",
             f"{'split':<17}{'updates':>8}{'questions':>10}{'newer 1st':>10}{'@1':>8}{'linked':>8}{'sup/con':>9}"
             f"{'look-alikes':>12}{'linked':>8}{'under':>8}{'failed':>8}{'stray':>7}{'lost':>6}"]
    for r in results:
        lines.append(
            f"{r['split']:<17}{r['updates']:>8}{r['update_questions']:>10}{_pct(r['newer_first']):>10}{_pct(r['newer_top1']):>8}"
            f"{_pct(r['linked']):>8}{str(r['superseded']) + '/' + str(r['contradicts']):>9}{r['lookalikes']:>12}"
            f"{_pct(r['look_linked']):>8}{_pct(r['look_under_twin']):>8}{_pct(r['look_failed']):>8}"
            f"{r['stray_links']:>7}{r['lost']:>6}")
    for r in results:
        forms = ", ".join(f"{k} {v['pairs']} pairs linked {_pct(v['linked']).strip()}" for k, v in sorted(r["by_form"].items()))
        kept = (f"; partial updates: older first for the part left standing {_pct(r['kept_first']).strip()} "
                f"of {r['kept_questions']} questions") if r.get("kept_questions") else ""
        lines.append(f"{r['split']} by form: {forms}{kept}")
    if verbose:
        for r in results:
            lines.append(f"\n{r['split']} misses ({len(r['misses'])}):")
            lines.extend(f"  {m}" for m in r["misses"])
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="recallite-mcp eval corrections", description=__doc__.split("\n\n")[0])
    ap.add_argument("--split", choices=["dev", "holdout", *OUTSIDER, *SPLITS], default="all",
                    help="both: dev and holdout of our set; outsider: the four parts of the set written by "
                         "others; all (default): the six")
    ap.add_argument("--embedder", default="default", help="default (MiniLM), hash, onnx")
    ap.add_argument("--source", default="agent", help="source type of every write (agent: what MCP clients are recorded as)")
    ap.add_argument("--verbose", action="store_true", help="list every miss")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--off", action="store_true", help="with detection turned off: the figures before it")
    ap.add_argument("--speed", action="store_true", help="remember() p50 with detection off and on, instead")
    ap.add_argument("--history", action="store_true",
                    help="the knowledge-update questions of `eval history`: does the newest session's answer rank first")
    ap.add_argument("--shortlist", action="store_true",
                    help="does the candidate shortlist of a large store (--store-size) find what a whole scan finds")
    ap.add_argument("--store-size", type=int, default=2000)
    ap.add_argument("--writes", type=int, default=150)
    args = ap.parse_args(argv)
    if args.speed:
        s = speed(args.embedder, args.store_size, args.writes)
        if args.json:
            print(json.dumps(s))
        else:
            print(f"remember() on {args.store_size} facts, {args.writes} writes: p50 {s['off_p50_ms']:.1f} ms without "
                  f"detection, {s['on_p50_ms']:.1f} ms with it ({s['ratio_p50']:.2f}x); "
                  f"p90 {s['off_p90_ms']:.1f} / {s['on_p90_ms']:.1f} ms; CPU p50 {s['off_cpu_p50_ms']:.1f} / "
                  f"{s['on_cpu_p50_ms']:.1f} ms ({s['ratio_cpu_p50']:.2f}x)")
        return 0
    if args.shortlist:
        a = shortlist_agreement(args.embedder, args.store_size)
        if args.json:
            print(json.dumps(a))
        else:
            print(f"candidates on {args.store_size} facts + the set's statements, {a['probes']} newer statements: "
                  f"shortlist and whole scan differ for {a['differ']}; the pair's older statement among the whole "
                  f"scan's candidates {a['pair_found_by_scan']} times, missed by the shortlist {a['pair_missed']}")
        return 0
    if args.history:
        sets = {name: history_updates(args.embedder, name) for name in ("history", "updates")}
        if args.json:
            print(json.dumps(sets))
        else:
            for name, h in sets.items():
                for part, row in sorted(h.items()):
                    print(f"{name} {part}: {row['questions']} knowledge-update questions, newest evidence above the "
                          f"older {_pct(row['newest_first']).strip()}, first {_pct(row['at1']).strip()}, "
                          f"newest outside the top 10: {row['outside']}")
        return 0
    splits = list(SPLITS.get(args.split, (args.split,)))
    results = [evaluate(s, args.embedder, args.source, detection=not args.off) for s in splits]
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        print(format_report(results, args.verbose))
    return 0


if __name__ == "__main__":
    sys.exit(main())
