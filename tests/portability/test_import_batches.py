"""Import in batches (importer.py) and migrate's vector copy (issue 17): a file is read a batch at a
time, yet a failure in any batch, in either pass, leaves the target as it was; vectors exported
with the store are copied when the target's embedder is the same and recomputed when it is not;
the progress callback moves once per batch. On both backends where a store is written."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from recallite_core import InvalidInputError, Recallite
from recallite_core.plumbing import Plumbing
from recallite_mcp.cli import main

LONG = ("We moved the deploy pipeline to the new runners last week. The old runners are gone for good. "
        "Every deploy now waits for the migration job, which takes about four minutes on a cold cache. "
        "If the migration job fails, the deploy stops and pages whoever is on call that week. "
        "Rollbacks use the previous image tag, and the runbook for them lives in the ops repository.")


def fill(m, n: int = 7) -> None:
    for i in range(n):
        m.remember(type="fact", content=f"Service {i} listens on port {8000 + i}.", scope="p")
    m.record_turns([{"role": "user", "content": LONG}, {"role": "assistant", "content": "Noted."}], session="s1", scope="p")
    r = m.recall("which port", scope="p")
    m.feedback(r.retrieval_id, "success", reason="worked")


def vectors_of(m) -> dict[str, bytes]:
    """content -> stored vector bytes, plus content#k -> the k-th chunk vector."""
    with m.store.reading() as s:
        ids = [x.id for x in m.list(limit=1000, scope=["p"])]
        nums = [int(i[4:]) for i in ids]
        by_id = {f"mem_{mid}": bytes(b) for mid, b in s.vectors.blobs(nums)}
        chunks: dict[int, list[tuple[int, bytes]]] = {}
        for cid, *_, blob, mid in s.episodes.all_chunks():
            chunks.setdefault(mid, []).append((cid, bytes(blob)))
    out = {m.get(i).content: v for i, v in by_id.items()}
    for mid, rows in chunks.items():
        for k, (_, b) in enumerate(sorted(rows)):
            out[f"{m.get(f'mem_{mid}').content}#{k}"] = b
    return out


@pytest.fixture
def exported(tmp_path):
    path = tmp_path / "dump.jsonl"
    with Recallite.open(str(tmp_path / "src.db"), embedder="hash") as m:
        fill(m)
        m.export_jsonl(str(path), vectors=True)
        want = vectors_of(m)
    return path, want


def embedded_texts(monkeypatch) -> list[str]:
    seen: list[str] = []
    real = Plumbing.embed

    def spy(self, texts):
        seen.extend(texts)
        return real(self, texts)

    monkeypatch.setattr(Plumbing, "embed", spy)
    return seen


def test_vectors_of_the_same_embedder_are_copied_not_recomputed(exported, backend_location, monkeypatch):
    path, want = exported
    assert any("#" in k for k in want), "the long turn should have sentence chunks"
    seen = embedded_texts(monkeypatch)
    with Recallite.open(backend_location, embedder="hash") as dst:
        got = dst.import_jsonl(str(path), trust="restore", batch=3)
        assert got["memories"] == 9 and got["vectors_copied"] == 9
        assert vectors_of(dst) == want
    assert seen == []  # no memory or chunk text was embedded


def test_another_embedders_vectors_are_recomputed(exported, tmp_path, monkeypatch):
    path, want = exported
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    rows[0]["embedder"] = "some-other-model-384"  # same dimensions, another model: the vectors mean other things
    other = tmp_path / "other.jsonl"
    other.write_text("".join(json.dumps(r) + "\n" for r in rows))
    seen = embedded_texts(monkeypatch)
    with Recallite.open(str(tmp_path / "dst.db"), embedder="hash") as dst:
        got = dst.import_jsonl(str(other), trust="restore", batch=4)
        assert got["memories"] == 9 and got["vectors_copied"] == 0
        assert vectors_of(dst) == want  # the hash embedder is deterministic: recomputed, the same
    assert len(seen) >= 9


def test_a_bad_line_in_a_late_batch_writes_nothing(exported, backend_location):
    path, _ = exported
    lines = path.read_text().splitlines()
    last = max(i for i, line in enumerate(lines) if json.loads(line)["kind"] == "memory")
    bad = json.loads(lines[last])
    bad["type"] = "no-such-type"
    lines[last] = json.dumps(bad)
    broken = path.with_name("broken.jsonl")
    broken.write_text("\n".join(lines) + "\n")
    with Recallite.open(backend_location, embedder="hash") as dst:
        with pytest.raises(InvalidInputError, match=f"line {last + 1}"):
            dst.import_jsonl(str(broken), trust="restore", batch=2)
        assert dst.stats().memories == 0


def test_a_failure_in_the_write_pass_after_several_batches_rolls_everything_back(exported, backend_location):
    path, _ = exported
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    fb = next(r for r in rows if r["kind"] == "feedback")
    fb["score"] = "not a number"  # found only while writing, after every memory batch was inserted
    broken = path.with_name("late.jsonl")
    broken.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with Recallite.open(backend_location, embedder="hash") as dst:
        with pytest.raises(InvalidInputError, match="malformed feedback"):
            dst.import_jsonl(str(broken), trust="restore", batch=2)
        st = dst.stats()
        assert st.memories == 0 and st.vectors == 0 and st.retrievals == 0


def test_progress_moves_once_per_batch(exported, tmp_path):
    path, _ = exported
    calls: list[tuple[int, int]] = []
    with Recallite.open(str(tmp_path / "dst.db"), embedder="hash") as dst:
        dst.import_jsonl(str(path), trust="restore", progress=lambda d, t: calls.append((d, t)), batch=4)
    # 9 memories in batches of 4: 3 steps to check/copy, 3 to write, over a total of 2 x 9.
    assert calls[-1] == (18, 18) and all(t == 18 for _, t in calls)
    assert [d for d, _ in calls] == sorted(d for d, _ in calls)
    assert {d for d, _ in calls} == {4, 8, 9, 13, 17, 18}


def test_migrate_says_it_copied_the_vectors(tmp_path, backend_location):
    src = str(tmp_path / "src.db")
    with Recallite.open(src, embedder="hash") as m:
        fill(m)
    res = CliRunner().invoke(main, ["migrate", "--from", src, "--to", backend_location, "--embedder", "hash",
                                    "--batch", "2"])
    assert res.exit_code == 0, res.output
    assert "vectors copied (hash-v1-384), none recomputed" in res.output
    with Recallite.open(src, embedder="hash") as a, Recallite.open(backend_location, embedder="hash") as b:
        assert vectors_of(a) == vectors_of(b)
        top = [h.memory.content for h in a.recall("port of service 3", scope="p", limit=3).memories]
        assert top == [h.memory.content for h in b.recall("port of service 3", scope="p", limit=3).memories]


def test_an_export_without_vectors_still_imports(tmp_path):
    with Recallite.open(str(tmp_path / "a.db"), embedder="hash") as m:
        fill(m)
        m.export_jsonl(str(tmp_path / "plain.jsonl"))
    assert '"vector"' not in (tmp_path / "plain.jsonl").read_text()
    with Recallite.open(str(tmp_path / "b.db"), embedder="hash") as dst:
        got = dst.import_jsonl(str(tmp_path / "plain.jsonl"), trust="restore", batch=5)
        assert got["memories"] == 9 and "vectors_copied" not in got
        vec = np.frombuffer(vectors_of(dst)["Service 3 listens on port 8003."], dtype="<f4")
        assert vec.shape == (384,)


def window_hits(m, query: str) -> list[int]:
    from recallite_core.storage.base import MemoryFilter

    with m.store.reading() as s:
        return [mid for mid, _ in s.keywords.windows_top(query, MemoryFilter(scopes=("p",)), 10)]


def test_import_writes_the_keyword_windows_of_imported_turns(tmp_path, backend_location):
    """Import wrote turns without their keyword windows (a turn with its neighbours), so a migrated
    conversation lost that channel: LoCoMo R@5 on a migrated store fell from .673 to .628."""
    src = str(tmp_path / "src.db")
    with Recallite.open(src, embedder="hash") as m:
        m.record_turns([{"role": "user", "content": "Where did you go last summer?"},
                        {"role": "assistant", "content": "We hiked the Dolomites."},
                        {"role": "user", "content": "Nice, bring photos."}], session="trip", scope="p")
        m.export_jsonl(str(tmp_path / "d.jsonl"), vectors=True)
        want = sorted(m.get(f"mem_{i}").content for i in window_hits(m, "summer Dolomites"))
    assert want  # the source finds the turns through their windows
    with Recallite.open(backend_location, embedder="hash") as dst:
        dst.import_jsonl(str(tmp_path / "d.jsonl"), trust="restore", batch=2)
        assert sorted(dst.get(f"mem_{i}").content for i in window_hits(dst, "summer Dolomites")) == want
