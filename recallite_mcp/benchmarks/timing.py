"""Timing helpers shared by the speed benchmarks (performance.py, backends.py)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any


def time_each(fn: Callable[[Any], Any], args: Sequence[Any]) -> list[float]:
    """Seconds each call ``fn(a)`` took, one per argument, in order."""
    out = []
    for a in args:
        t = time.perf_counter()
        fn(a)
        out.append(time.perf_counter() - t)
    return out


def concurrent_recalls(m, qs: list[str], rounds: int, threads: int = 10) -> list[float]:
    """Wall time for ``threads`` recalls started together, per round."""
    walls = []
    for r in range(rounds):
        batch = [qs[(r * threads + i) % len(qs)] for i in range(threads)]
        barrier = threading.Barrier(threads + 1)
        errors: list[BaseException] = []

        def work(q: str) -> None:
            barrier.wait()
            try:
                m.recall(q, limit=10)
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        ts = [threading.Thread(target=work, args=(q,)) for q in batch]
        for t in ts:
            t.start()
        barrier.wait()
        t0 = time.perf_counter()
        for t in ts:
            t.join()
        walls.append(time.perf_counter() - t0)
        if errors:
            raise errors[0]
    return walls
