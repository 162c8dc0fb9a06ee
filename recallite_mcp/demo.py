"""`recallite-mcp demo`: the main job in one command. Remember, recall, act, report, and see
the ranking change. It works in its own scope and clears only what it wrote before."""

from __future__ import annotations

import click

from .output import shorten, table
from .render import counted
from .settings import Settings

DEMO_SCOPE = "recallite-demo"
DEMO_SOURCE = "recallite-demo"

MEMORIES = [
    dict(type="preference", title="Concise answers",
         content="The user wants short answers: code first, then at most three sentences of explanation."),
    dict(type="constraint", title="Never deploy on Fridays",
         content="Production deploys are frozen from Friday 12:00 to Monday 08:00."),
    dict(type="procedure", title="Deploy the web app with fab",
         content="To deploy the web app to production, run `fab deploy:prod` from the ops laptop."),
    dict(type="procedure", title="Deploy the web app by tagging a release",
         content="To deploy the web app to production, push a tag like v1.4.2; the release workflow builds and ships it."),
    dict(type="lesson", title="Migrations before deploy",
         content="A deploy failed because the database migration had not run; run `make migrate` against production first."),
]
TASKS = [
    "How do I deploy the web app to production?",
    "Ship the new web app release to prod",
    "Deploy the latest web app build to production",
    "Push the web app to production today",
]
WORKS = "Deploy the web app by tagging a release"  # the fab script was retired: using it fails


def run_demo(settings: Settings, rounds: int = 3) -> None:
    from .app import open_memory

    settings.scope = DEMO_SCOPE
    with open_memory(settings) as mem:
        old = _clear(mem)
        start = mem.stats(scope=DEMO_SCOPE)  # earlier runs' retrievals and feedback stay in the log
        click.echo(f"database: {mem.store.path or ':memory:'}   scope: {DEMO_SCOPE}   embedder: {mem.embedder.name}")
        if old:
            click.echo(f"(cleared {counted(len(old), 'memory', 'memories')} from an earlier demo run)")
        click.echo("\n1. remember: five memories an agent wrote down earlier")
        stored = [mem.remember(source={"type": "user", "id": DEMO_SOURCE}, scope=DEMO_SCOPE, **m) for m in MEMORIES]
        click.echo(table(["id", "type", "status", "title"], [[m.id, m.type, m.status, m.title] for m in stored]))
        works = next(m.id for m in stored if m.title == WORKS)
        procedures = [m.id for m in stored if m.type == "procedure"]

        first = mem.build_context(TASKS[0], max_tokens=400, scope=DEMO_SCOPE)
        click.echo(f"\n2. context for the task {TASKS[0]!r} ({first.tokens} tokens):\n")
        click.echo(first.context)
        before = _procedure_ranks(mem, procedures)

        click.echo("3. the agent acts on the first deploy procedure it sees and reports the outcome:")
        for rnd in range(rounds):
            task = TASKS[rnd % len(TASKS)]
            r = mem.recall(task, limit=5, scope=DEMO_SCOPE)
            used = next(h.memory for h in r.memories if h.memory.id in procedures)
            ok = used.id == works
            fb = mem.feedback(r.retrieval_id, "success" if ok else "failure", used_memory_ids=[used.id],
                              reason="deployed" if ok else "fab script no longer exists")
            ch = fb.changes[0]
            click.echo(f"   task {rnd + 1}: {task!r}\n      used {used.id} ({shorten(used.title, 45)}) -> "
                       f"{'success' if ok else 'FAILURE'}; usefulness {ch.old_usefulness:.2f} -> {ch.new_usefulness:.2f}")
            if not ok:
                # the agent falls back to the other procedure, which works
                other = next(p for p in procedures if p != used.id)
                fb2 = mem.feedback(r.retrieval_id, "success", used_memory_ids=[other], reason="tagging a release worked")
                c2 = fb2.changes[0]
                click.echo(f"      then used {other} -> success; usefulness {c2.old_usefulness:.2f} -> {c2.new_usefulness:.2f}")

        after = _procedure_ranks(mem, procedures)
        click.echo("\n4. ranking of the two deploy procedures, before and after feedback:")
        click.echo(table(["memory", "rank before", "rank after", "usefulness now"],
                         [[f"{p} {shorten(mem.get(p).title, 40)}", before[p], after[p], f"{mem.get(p).usefulness:.2f}"]
                          for p in procedures]))
        final = mem.build_context(TASKS[0], max_tokens=400, scope=DEMO_SCOPE)
        click.echo(f"\n5. context for the same task now:\n\n{final.context}")
        s = mem.stats(scope=DEMO_SCOPE)
        fb_counts = ", ".join(f"{n - start.feedback.get(k, 0)} {k}" for k, n in s.feedback.items()
                              if n - start.feedback.get(k, 0)) or "none"
        click.echo(f"this run: {s.memories} memories, {s.retrievals - start.retrievals} retrievals, feedback ({fb_counts}), "
                   f"{s.tokens_served - start.tokens_served} tokens served in {s.context_calls - start.context_calls} context calls")
        moved = after[works] < before[works] or after[works] == 1
        click.echo("\nThe working procedure " + ("now ranks first." if after[works] == 1 else
                                                  "moved up." if moved else "did not move (see reasons with `recallite-mcp recall`)."))
        click.echo(f"Its memories stay in scope {DEMO_SCOPE} of this database: `recallite-mcp demo --clear` removes them.")


def clear_demo(settings: Settings) -> None:
    """Forget what earlier demo runs stored (their scope's memories written by the demo), nothing else."""
    from .app import open_memory

    settings.scope = DEMO_SCOPE
    with open_memory(settings) as mem:
        old = _clear(mem)
        click.echo(f"Cleared {counted(len(old), 'demo memory', 'demo memories')} from {mem.store.path or ':memory:'}.")


def _clear(mem) -> list[str]:
    old = [m.id for m in mem.list(scope=DEMO_SCOPE, limit=1000) if m.source.id == DEMO_SOURCE]
    for mid in old:
        mem.forget(mid)
    return old


def _procedure_ranks(mem, ids: list[str]) -> dict[str, int]:
    r = mem.recall(TASKS[0], limit=10, scope=DEMO_SCOPE)
    order = [h.memory.id for h in r.memories if h.memory.id in ids]
    return {i: (order.index(i) + 1 if i in order else 99) for i in ids}
