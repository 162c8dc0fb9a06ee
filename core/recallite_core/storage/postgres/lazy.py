"""The store's connection, with a unit of work's BEGIN sent together with its first statement.

A round trip to the server is the unit of cost for a small write: on a busy machine each one is
also a wait to be scheduled again. ``store.transaction()`` / ``reading()`` do not send BEGIN
(and the write lock) on their own: they leave it pending here, and the first statement of the
unit goes out with it in one pipeline (psycopg's pipeline mode: one sync, one round trip). A
unit that ran no statement sends nothing at all, not even its COMMIT or ROLLBACK.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator, Sequence


class LazyBegin:
    """Wraps a psycopg connection: ``execute`` and ``cursor`` first send a pending BEGIN."""

    def __init__(self, raw: Any, reconnect: Callable[[], None]):
        self.raw = raw
        self.pending: Sequence[str] = ()  # the statements that open the unit of work, not sent yet
        self._reconnect = reconnect  # replaces self.raw with a new connection
        # Inside a read snapshot, what snapshot.py fetched of it (empty until first asked); None otherwise.
        self.facts: dict[str, Any] | None = None
        # Inside any unit of work, what its nouns keep until it ends (the change feed's mark); None outside.
        self.unit: dict[str, Any] | None = None
        self.sent = 0  # statements sent so far: "nothing was sent since" is sent == the number kept

    def begin(self, statements: Sequence[str], snapshot: bool = False) -> None:
        """``snapshot``: the unit is one read-only snapshot, whose facts snapshot.py may keep."""
        self.pending = tuple(statements)
        self.facts = {} if snapshot else None
        self.unit = {}

    def started(self) -> bool:
        """Whether the unit of work reached the server (False: nothing to COMMIT or ROLLBACK)."""
        return not self.pending

    def drop(self) -> None:
        self.pending = ()

    def end(self) -> None:
        """The unit of work is over: what was kept of its snapshot no longer holds."""
        self.facts = None
        self.unit = None

    def flush(self) -> None:
        """Send the pending BEGIN on its own (before a server-side cursor or executemany)."""
        if self.pending:
            self._opening(lambda: None)

    def execute(self, query: Any, params: Any = None, **kwargs: Any) -> Any:
        self.sent += 1
        if not self.pending:
            return self.raw.execute(query, params, **kwargs)
        return self._opening(lambda: self.raw.execute(query, params, **kwargs))

    def _opening(self, first: Callable[[], Any]) -> Any:
        """BEGIN and the unit's first statement in one round trip. A connection the server
        dropped (restart, failover, idle timeout) fails here before anything of the unit ran,
        so it is replaced and the whole opening sent again, once."""
        statements, self.pending = self.pending, ()
        for attempt in (1, 2):
            try:
                with self.raw.pipeline():
                    for statement in statements:
                        self.raw.execute(statement)
                    return first()
            except Exception:
                if attempt == 2 or not self.raw.broken:
                    raise
                self._reconnect()
        raise AssertionError("unreachable")  # pragma: no cover

    @contextlib.contextmanager
    def pipeline(self) -> Iterator[Any]:
        """Statements sent together, the pending BEGIN first: one round trip for all of them."""
        statements, self.pending = self.pending, ()
        with self.raw.pipeline() as p:
            for statement in statements:
                self.raw.execute(statement)
            yield p

    def cursor(self, *args: Any, **kwargs: Any) -> Any:
        self.sent += 1  # what the cursor runs counts as sent
        self.flush()
        return self.raw.cursor(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:  # broken, closed, close, pipeline, transaction...
        return getattr(self.raw, name)


__all__ = ["LazyBegin"]
