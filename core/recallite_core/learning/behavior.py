"""Behaviour capture off the caller's path: a bounded queue and one writer thread.

``submit`` returns at once; the writer stores each event as a procedural memory (see
``Recallite.capture_behavior``). ``flush`` waits until everything queued is written;
``close`` flushes and stops the thread. A full queue drops the event and counts it: capture
must never slow the agent down.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from dataclasses import dataclass, field
from typing import Callable

log = logging.getLogger("recallite.behavior")

BEHAVIOR_KINDS: dict[str, str] = {
    "tool_choice": "Tool choice",
    "error_recovery": "Error recovery",
    "success_pattern": "Success pattern",
}
BEHAVIOR_OUTCOMES = ("success", "failure", "partial")


@dataclass
class BehaviorEvent:
    agent_id: str
    kind: str
    description: str
    outcome: str | None
    tool: str | None
    scope: str
    context: str | None
    at: float = field(default_factory=time.time)


class BehaviorRecorder:
    def __init__(self, write: Callable[[BehaviorEvent], None], maxsize: int = 1000):
        self._write = write
        self._queue: queue.Queue[BehaviorEvent | None] = queue.Queue(maxsize=max(1, maxsize))
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self._closed = False
        self.counts = {"queued": 0, "written": 0, "failed": 0, "dropped": 0}

    def _ensure_thread(self) -> None:
        with self._start_lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="recallite-behavior-writer", daemon=True)
                self._thread.start()

    def submit(self, event: BehaviorEvent) -> bool:
        if self._closed:
            return False
        try:
            self._queue.put_nowait(event)
        except queue.Full:
            self.counts["dropped"] += 1
            log.warning("Behaviour queue full; dropped a %s event", event.kind)
            return False
        self.counts["queued"] += 1
        self._ensure_thread()
        return True

    def _run(self) -> None:
        while True:
            event = self._queue.get()
            try:
                if event is None:
                    return
                self._write(event)
                self.counts["written"] += 1
            except Exception:  # one bad event must not stop the writer
                self.counts["failed"] += 1
                log.exception("Could not record a %s behaviour event", getattr(event, "kind", "?"))
            finally:
                self._queue.task_done()

    def pending(self) -> int:
        return self._queue.unfinished_tasks

    def flush(self, timeout: float | None = 10.0) -> bool:
        """Wait until every queued event is written. True if the queue drained in time."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._queue.all_tasks_done:
            while self._queue.unfinished_tasks:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                self._queue.all_tasks_done.wait(remaining)
        return True

    def close(self, timeout: float = 10.0) -> None:
        if self._closed:
            return
        self.flush(timeout)
        self._closed = True
        if self._thread is not None and self._thread.is_alive():
            try:
                self._queue.put(None, timeout=1.0)
            except queue.Full:
                return
            self._thread.join(timeout)
