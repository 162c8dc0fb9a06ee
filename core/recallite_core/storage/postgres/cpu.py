"""CPU time the PostgreSQL server has used, read from /proc: what benchmarks add to the clients'
own CPU time to get a cost per operation that does not move with the machine's load (a rate
does: on a shared machine it measures the other jobs as much as recallite).

The server's processes are the postmaster and its children (a backend per connection, the WAL
writer, the checkpointer, autovacuum...). A child that exited and was reaped has its CPU added to
the postmaster's ``cutime``/``cstime``, so the postmaster's own and children's times plus the
times of the children alive now cover everything the server ran. This only works when the server
runs on this machine and /proc is readable (Linux); elsewhere the answer is None.
"""

from __future__ import annotations

import os
from typing import Any

_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _stat(pid: int) -> list[str] | None:
    """Fields of /proc/<pid>/stat after the command name (field 3 onwards), or None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read().decode("ascii", "replace")
    except OSError:
        return None
    return raw[raw.rfind(")") + 2:].split()


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children", "rb") as f:
            return [int(x) for x in f.read().split()]
    except OSError:  # no children file (an older kernel): scan /proc for the parent
        out = []
        for name in os.listdir("/proc"):
            if name.isdigit() and (st := _stat(int(name))) is not None and int(st[1]) == pid:
                out.append(int(name))
        return out


def tree_cpu_seconds(postmaster: int) -> float | None:
    """User + system CPU seconds of ``postmaster``, its reaped children and its live children."""
    top = _stat(postmaster)
    if top is None:
        return None
    # Fields after the name: state(0) ppid(1) ... utime(11) stime(12) cutime(13) cstime(14).
    ticks = sum(int(top[i]) for i in (11, 12, 13, 14))
    for child in _children(postmaster):
        st = _stat(child)
        if st is not None:
            ticks += int(st[11]) + int(st[12])
    return ticks / _TICKS


def postmaster_of(conn: Any) -> int | None:
    """The pid of the postmaster behind this connection, when the server runs on this machine."""
    backend = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
    st = _stat(int(backend))
    return None if st is None else int(st[1])


__all__ = ["postmaster_of", "tree_cpu_seconds"]
