"""How the learning benchmark's results are shown: a table per scenario while it runs, the MCP
check, the final markdown table with its targets, the plot (with matplotlib), and the
paraphrase-cosine and task-separation lines. Pure formatting of result dicts; imports the
targets from learning_agent only."""

from __future__ import annotations

from typing import Any

from . import learning_tasks as lt
from .learning_agent import TARGETS, series


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
    rows: list[list[Any]] = []
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


def format_cosine(pc: dict[str, Any], catalog: str) -> str:
    if not pc.get("pairs"):
        return f"paraphrase cosine ({catalog}): no paraphrase pairs"
    return (f"paraphrase cosine within a family ({catalog}, {pc['pairs']} pairs, embedder {pc['embedder']}): "
            f"min {pc['min']:.2f}  p10 {pc['p10']:.2f}  median {pc['median']:.2f}  mean {pc['mean']:.2f}  "
            f"p90 {pc['p90']:.2f}  max {pc['max']:.2f}")


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


def format_regressions(res: dict[str, Any]) -> str:
    """The regression cases of each scenario (``--explain``): counts by kind, then one line each."""
    lines = []
    for name, sc in res["scenarios"].items():
        cases = sc.get("regression_cases")
        if cases is None:
            continue
        kinds: dict[str, int] = {}
        for c in cases:
            kinds[c["kind"]] = kinds.get(c["kind"], 0) + 1
        lines.append(f"\nregressions in {name}: {len(cases)} of {sc['family_rounds_after_first']} family-rounds"
                     + "".join(f"; {k}: {n}" for k, n in kinds.items()))
        lines += [f"  r{c['round']} {c['family']}: {c['kind']}: {c['query'][:60]!r} -> {', '.join(c['shown'])}"
                  for c in cases]
    return "\n".join(lines)
