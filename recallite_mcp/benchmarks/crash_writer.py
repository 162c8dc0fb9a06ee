"""The child of the crash test: writes to a database in a loop until it is killed.

Each operation is remember_many (a batch of 1-8), a feedback on a fresh recall, or an import of
a JSONL file (4-12 memories). Every memory carries a tag that names its operation and the
operation's size (``batch-<uid>-of-<n>``), so the parent can tell a whole operation from half of
one. After an operation commits, one JSON line goes to the log (--log): what the parent must find.
Run: python -m recallite_mcp.benchmarks.crash_writer --db X --log Y --seed N
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--db", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-ops", type=int, default=10_000)
    args = ap.parse_args(argv)
    from recallite_core import Recallite

    rng = random.Random(args.seed)
    mem = Recallite.open(args.db, embedder="hash")
    log = open(args.log, "a", encoding="utf-8")
    prefix = f"s{args.seed}"
    workdir = os.path.dirname(os.path.abspath(args.log))  # killed before any cleanup: no temp dirs of its own
    print("ready", flush=True)
    words = "deploy cache kettle port token build flaky release vault proxy queue index shard lease".split()

    def text(uid: str, k: int) -> str:
        return f"{uid} item {k}: " + " ".join(rng.choice(words) for _ in range(rng.randint(20, 120)))

    for n in range(args.max_ops):
        uid = f"{prefix}n{n}"
        op = rng.choices(["batch", "feedback", "import"], weights=[5, 3, 1])[0]
        if op == "batch":
            size = rng.randint(1, 8)
            tag = f"batch-{uid}-of-{size}"
            out = mem.remember_many([{"content": text(uid, k), "type": "fact", "tags": [tag]} for k in range(size)])
            entry = {"op": "batch", "tag": tag, "ids": [m.id for m in out]}
        elif op == "feedback":
            r = mem.recall(rng.choice(words) + " " + rng.choice(words), limit=5)
            if not r.memories:
                continue
            used = [h.memory.id for h in r.memories[: rng.randint(1, len(r.memories))]]
            key = f"fb-{uid}-n{len(used)}"
            res = mem.feedback(r.retrieval_id, rng.choice(["success", "failure", "partial"]), used_memory_ids=used,
                               client_key=key)
            entry = {"op": "feedback", "key": key, "feedback_id": res.feedback_id, "used": used}
        else:
            size = rng.randint(4, 12)
            tag = f"import-{uid}-of-{size}"
            path = os.path.join(workdir, f"{uid}.jsonl")
            with open(path, "w", encoding="utf-8") as f:
                f.write(json.dumps({"kind": "header", "format": "recallite-jsonl", "version": 1}) + "\n")
                for k in range(size):
                    f.write(json.dumps({"kind": "memory", "id": f"mem_{k + 1}", "type": "fact", "content": text(uid, k),
                                        "tags": [tag]}) + "\n")
            counts = mem.import_jsonl(path)
            os.unlink(path)
            entry = {"op": "import", "tag": tag, "memories": counts["memories"]}
        log.write(json.dumps(entry) + "\n")  # only after the commit returned
        log.flush()
    mem.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
