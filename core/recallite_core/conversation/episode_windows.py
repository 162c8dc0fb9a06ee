"""The keyword index of conversation turns with their neighbours (migration 0007)."""

from __future__ import annotations

from typing import Collection, Iterable, Literal

from recallite_core.storage.base import Session


def write_windows(session: Session, scope: str, session_name: str, seqs: Iterable[int],
                  absent: Collection[int] | Literal[True] = ()) -> None:
    """(Re)write the window rows of the turns at these positions of one session.

    A window is the turn with its neighbours (seq - 1, seq, seq + 1) as "role: content" joined
    by spaces, read with one query per run of nearby positions; the old rows are deleted before
    any new one is written (the storage does it in that order).
    ``absent``: memory ids that have no window row yet (turns inserted in this transaction:
    ids are never reused), or True for all of them; their rows are not looked up to delete."""
    wanted = sorted(set(seqs))
    if not wanted:
        return
    runs: list[list[int]] = [[wanted[0]]]
    for seq in wanted[1:]:
        if seq - runs[-1][-1] <= 3:
            runs[-1].append(seq)
        else:
            runs.append([seq])
    rows: list[tuple[int, str]] = []
    for run in runs:
        turns = {seq: (mid, f"{role}: {content}") for seq, mid, role, content
                 in session.episodes.turn_texts(scope, session_name, run[0] - 1, run[-1] + 1)}
        for seq in run:
            if seq in turns:
                rows.append((turns[seq][0], " ".join(turns[s][1] for s in (seq - 1, seq, seq + 1) if s in turns)))
    if not rows:
        return
    old = [] if absent is True else [mid for mid, _ in rows if mid not in absent]
    session.episodes.replace_windows(old, rows)


def rebuild_windows(session: Session) -> int:
    session.episodes.clear_windows()
    rows = session.episodes.places()
    by_session: dict[tuple[str, str], list[int]] = {}
    for scope, name, seq in rows:
        by_session.setdefault((scope, name), []).append(seq)
    for (scope, name), seqs in by_session.items():
        write_windows(session, scope, name, seqs, absent=True)  # every row was deleted above
    return len(rows)
