"""The storage interface: what the engine may ask of a backend, grouped by noun.

A backend hands out a :class:`Session` (one unit of work) from :meth:`Storage.transaction` (a
write: all of it commits or none of it does) or :meth:`Storage.reading` (one consistent snapshot
for several reads). Every method below runs inside the session it was reached from; none opens,
commits or rolls back on its own. Ids are the integer row ids of memories (``mem_12`` is 12);
values cross the boundary as plain Python values, numpy arrays or the dataclasses here, never
as cursors or driver rows.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Collection, Iterable, Iterator, Protocol, Sequence

from ..models import Memory

#: One vector row with the columns the in-memory index filters on:
#: (memory id, scope, status, type, session, little-endian float32 bytes).
VectorRow = tuple[int, str, str, str, "str | None", bytes]
#: One conversation turn's place: (memory id, scope, session, seq, role).
TurnRow = tuple[int, str, str, int, str]


class StaleIndex(Exception):
    """An in-memory mirror of stored rows disagrees with the store: drop it and ask the store."""


# -- values ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Shard:
    """Rows whose memory id is ``index`` modulo ``count`` (a scan worker's share)."""

    index: int
    count: int


@dataclass(frozen=True)
class MemoryFilter:
    """Which memories a lookup may return; None leaves a column unfiltered."""

    scopes: tuple[str, ...] | None = None
    statuses: tuple[str, ...] | None = None
    types: tuple[str, ...] | None = None
    sessions: tuple[str, ...] | None = None
    sources: tuple[str, ...] | None = None  # source types
    tags: tuple[str, ...] | None = None  # any of them
    roles: tuple[str, ...] | None = None  # conversation turns spoken by any of them
    categories: tuple[str, ...] | None = None
    valid_at: float | None = None  # drop memories whose valid_until is at or before this time


@dataclass(frozen=True)
class TrustRow:
    """A memory's own fields that its trust score starts from."""

    id: int
    source_type: str
    source_id: str | None
    behavioral: bool
    created_at: float
    validated_at: float | None


@dataclass(frozen=True)
class LinkedPair:
    """A relation between two memories, with what ranking and trust read of both ends."""

    from_id: int
    to_id: int
    type: str
    from_status: str
    to_status: str
    from_created_at: float = 0.0
    to_created_at: float = 0.0
    from_failing: bool = False  # more failures than successes
    to_failing: bool = False


@dataclass(frozen=True)
class CreditRecord:
    """A candidate's outcome record, as promotion weighs it."""

    successes: int  # successful uses with at least the minimum weight
    retrievals: int  # distinct retrievals among them
    failures: int


@dataclass
class ProjectionCounts:
    """How the memories table and its projections (vectors, keyword index) agree."""

    memories: int = 0
    vectors: int = 0
    fts_rows: int = 0
    missing_vectors: list[int] = field(default_factory=list)
    orphan_vectors: list[int] = field(default_factory=list)
    bad_vectors: list[int] = field(default_factory=list)
    missing_fts: list[int] = field(default_factory=list)
    orphan_fts: list[int] = field(default_factory=list)
    fts_detail: str = "ok"


# -- nouns ----------------------------------------------------------------------------------------
class ChangeFeed(Protocol):
    """The change counter that in-memory projections (vector matrix, keyword mirror, episode map)
    follow: every write that they project bumps it; deletions leave tombstones."""

    def counter(self) -> int: ...
    def tombstone_floor(self) -> int: ...
    def tombstones_since(self, seq: int) -> list[int]: ...
    def tombstones_count_since(self, seq: int) -> int: ...
    def side_tables(self) -> tuple[bool, bool]: ...  # whether any relation, any outcome row exists


class Memories(Protocol):
    def load(self, ids: Sequence[int]) -> dict[int, Memory]: ...
    def matching(self, ids: Collection[int] | None, flt: MemoryFilter) -> list[int]: ...
    def expired(self, valid_at: float) -> set[int]: ...
    def trust_rows(self, ids: Sequence[int]) -> list[TrustRow]: ...
    def candidates(self, ids: Sequence[int]) -> dict[int, tuple[float, str]]: ...
    def mark_validated(self, mid: int, confidence: float, metadata: str, now: float) -> None: ...


class Vectors(Protocol):
    def count(self, shard: Shard | None = None) -> int: ...
    def count_since(self, seq: int) -> int: ...
    def all_rows(self, shard: Shard | None = None, batch: int = 8192) -> Iterator[list[VectorRow]]: ...
    def changed_rows(self, seq: int, shard: Shard | None = None) -> list[VectorRow]: ...
    def blobs(self, ids: Sequence[int]) -> list[tuple[int, bytes]]: ...


class Relations(Protocol):
    def edges(self, ids: Sequence[int], types: Sequence[str]) -> list[tuple[int, int, str]]: ...
    def pairs_among(self, ids: Sequence[int], types: Sequence[str]) -> list[LinkedPair]: ...
    def touching(self, ids: Sequence[int], type: str) -> list[LinkedPair]: ...
    def supporters(self, ids: Sequence[int], statuses: Sequence[str]) -> list[tuple[int, str, str | None]]: ...


class Outcomes(Protocol):
    """Outcome rows, feedback and the retrieval log."""

    def last_success(self, ids: Sequence[int], min_target: float) -> dict[int, float]: ...
    def credit_records(self, ids: Sequence[int], min_weight: float) -> dict[int, CreditRecord]: ...


class Episodes(Protocol):
    """Conversation turns (episodes) and their keyword windows."""

    def any(self) -> bool: ...
    def turns_of(self, ids: Sequence[int]) -> list[TurnRow]: ...
    def turns_at(self, places: Sequence[tuple[str, str, int]]) -> list[TurnRow]: ...
    def all_turns(self) -> list[TurnRow]: ...
    def turns_changed_since(self, seq: int) -> list[TurnRow]: ...
    def turn_texts(self, scope: str, session: str, first: int, last: int) -> list[tuple[int, int, str, str]]: ...
    def replace_windows(self, stale: Sequence[int], rows: Sequence[tuple[int, str]]) -> None: ...
    def clear_windows(self) -> None: ...
    def places(self) -> list[tuple[str, str, int]]: ...


class Integrity(Protocol):
    def projections(self, dimensions: int | None = None) -> ProjectionCounts: ...


class Session(Protocol):
    """One unit of work: the nouns, all reading and writing through the same transaction."""

    @property
    def feed(self) -> ChangeFeed: ...
    @property
    def memories(self) -> Memories: ...
    @property
    def vectors(self) -> Vectors: ...
    @property
    def relations(self) -> Relations: ...
    @property
    def outcomes(self) -> Outcomes: ...
    @property
    def episodes(self) -> Episodes: ...
    @property
    def integrity(self) -> Integrity: ...


class Storage(Protocol):
    """A store: opens sessions, knows its schema version, closes."""

    read_only: bool

    def transaction(self) -> AbstractContextManager[Session]: ...
    def reading(self) -> AbstractContextManager[Session]: ...
    def get_meta(self, key: str) -> str | None: ...
    def change_counter(self) -> int: ...
    def schema_version(self) -> int: ...
    def close(self) -> None: ...


def chunked(ids: Iterable[int], size: int = 500) -> Iterator[list[int]]:
    """``ids`` in lists of at most ``size`` (bound parameters per statement stay small)."""
    batch: list[int] = []
    for i in ids:
        batch.append(i)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch
