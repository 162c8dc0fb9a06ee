"""Conversation memory (from memoLite): episodes with provenance, chunks, session memory.

A conversation turn (or an event) is a memory of type ``episode``: it shares the FTS index,
the vectors, the lifecycle, feedback and export with every other memory. Around it:

- ``episodes``: role, session, sequence number and event time of each turn;
- ``chunks``: sentence-level chunks of long turns with their own vectors, scanned by
  :class:`ChunkIndex` (a :class:`VectorIndex` over chunk rows, filtered by the parent
  memory's scope/status/type/session before the top-k); a chunk hit counts for its turn;
- ``citations``: which turns a fact or preference came from (``why``);
- ``session_summaries``: a running extractive summary per session (no LLM).

The methods live in :class:`ConversationMemory`, a mixin of ``Recallite``.
"""

from __future__ import annotations

import json
import math
import re
import sqlite3
import time
from typing import TYPE_CHECKING, Any, Iterable, Sequence

import numpy as np

from .codec import encode_vector
from .errors import InvalidInputError, MemoryNotFoundError
from .fts import STOPWORDS
from .models import Citation, ForgetResult, Memory, RecallHit, SessionContext
from .policy import DEFAULT_RECALL_STATUSES
from .rows import load_memories, ts
from .tokens import estimate_tokens, truncate_to_tokens
from .episode_windows import write_windows
from .validation import to_epoch, check_optional_name, clean_text, derive_title, parse_id
from .vector_index import ScanFilter, VectorIndex

if TYPE_CHECKING:  # pragma: no cover
    from .engine import Recallite

ROLE_MAX_CHARS = 64
CATEGORY_MAX_CHARS = 64
TURN_FIELDS = {"session", "role", "content", "timestamp", "scope", "metadata", "source", "category", "tags", "title",
               "importance"}

# -- text: sentences, chunks, summary scores ---------------------------------------------------------------

# A sentence ends at . ! ? … (plus closing quotes/brackets) followed by space, or at a line break.
_SENTENCE_END = re.compile(r"[.!?…]+[\"'”’)\]]*(?=\s)|\n")
_WORD = re.compile(r"\w+", re.UNICODE)
_SPACES = re.compile(r"\s+")


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, stop) offsets of the sentences of ``text``, whitespace trimmed, empty ones dropped."""
    spans: list[tuple[int, int]] = []
    start = 0
    for m in _SENTENCE_END.finditer(text):
        spans.append((start, m.end()))
        start = m.end()
    spans.append((start, len(text)))
    out = []
    for a, b in spans:
        while a < b and text[a].isspace():
            a += 1
        while b > a and text[b - 1].isspace():
            b -= 1
        if b > a:
            out.append((a, b))
    return out


def _split_long(text: str, a: int, b: int, max_chars: int) -> list[tuple[int, int]]:
    """Cut one over-long sentence at word boundaries into pieces of at most ``max_chars``."""
    out = []
    while b - a > max_chars:
        cut = text.rfind(" ", a + max_chars // 2, a + max_chars)
        if cut <= a:
            cut = a + max_chars
        out.append((a, cut))
        a = cut
        while a < b and text[a].isspace():
            a += 1
    if b > a:
        out.append((a, b))
    return out


def chunk_spans(text: str, max_chars: int = 240, min_chars: int = 40) -> list[tuple[int, int]]:
    """Sentence-level chunks: one sentence each, short sentences merged with the next until
    ``min_chars``, over-long ones cut at word boundaries. Deterministic (export regenerates them)."""
    pieces: list[tuple[int, int]] = []
    for a, b in sentence_spans(text):
        pieces.extend(_split_long(text, a, b, max_chars))
    chunks: list[tuple[int, int]] = []
    for a, b in pieces:
        if chunks and (chunks[-1][1] - chunks[-1][0] < min_chars) and (b - chunks[-1][0] <= max_chars):
            chunks[-1] = (chunks[-1][0], b)
        else:
            chunks.append((a, b))
    if len(chunks) > 1 and chunks[-1][1] - chunks[-1][0] < min_chars and chunks[-1][1] - chunks[-2][0] <= max_chars:
        last = chunks.pop()
        chunks[-1] = (chunks[-1][0], last[1])
    return chunks


_CUES = re.compile(
    r"\b(i|we)\s+(like|love|hate|prefer|want|need|use|work|live|moved|am|'m|was|will|have|had|decided|plan|started)\b"
    r"|\b(my|our)\s+\w+|\bfavou?rite\b|\ballergic\b|\bname is\b|\bbirthday\b|\bdeadline\b|\balways\b|\bnever\b"
    r"|\bremember\b|\bdon'?t\b|\bmust\b",
    re.IGNORECASE,
)


def sentence_score(sentence: str) -> float:
    """How much a sentence is worth keeping in a summary, without a model: distinct content
    words, names and numbers, and cues of facts about people (I like, my ..., always)."""
    words = _WORD.findall(sentence)
    lows = [w.lower() for w in words]
    content = {lw for w, lw in zip(words, lows) if len(w) > 2 and lw not in STOPWORDS}
    if len(content) < 3:
        return 0.0
    names = sum(1 for i in range(1, len(words)) if words[i][:1].isupper() and lows[i] not in STOPWORDS)
    numbers = sum(1 for w in words if any(map(str.isdigit, w)))
    score = math.sqrt(len(content)) + 0.6 * min(names, 4) + 0.8 * min(numbers, 3) + 1.5 * min(len(_CUES.findall(sentence)), 2)
    if sentence.rstrip().endswith("?"):
        score *= 0.6  # a question asks; the answer holds the fact
    return round(score, 4)


def _word_set(text: str, cache: dict[str, set[str]] | None = None) -> set[str]:
    if cache is not None:
        found = cache.get(text)
        if found is not None:
            return found
    words = {w.lower() for w in _WORD.findall(text)}
    if cache is not None:
        cache[text] = words
    return words


def _similar_sets(wa: set[str], wb: set[str]) -> bool:
    if not wa or not wb:
        return False
    return len(wa & wb) / len(wa | wb) >= 0.6


def _similar(a: str, b: str) -> bool:
    return _similar_sets(_word_set(a), _word_set(b))


def merge_pool(pool: list[dict], new: list[dict], size: int, words: dict[str, set[str]] | None = None) -> list[dict]:
    """Keep the ``size`` best sentences (ties: older first), skipping near-duplicates.
    ``words``: a cache of each sentence's word set, kept across calls on one session."""
    cache = {} if words is None else words
    out = list(pool)
    kept = [_word_set(e["t"], cache) for e in out]
    for entry in new:
        if entry["w"] <= 0:
            continue
        we = _word_set(entry["t"], cache)
        if we:  # _similar_sets, inlined: this loop runs for every sentence of every turn
            n, n3, n5 = len(we), 3 * len(we), 5 * len(we)
            # The overlap is at most the smaller set over the larger: below 3/5, no need to count.
            if any(wo and n5 >= 3 * len(wo) and 5 * len(wo) >= n3 and (i := len(we & wo)) and i / (n + len(wo) - i) >= 0.6
                   for wo in kept):
                continue
        out.append(entry)
        kept.append(we)
    out.sort(key=lambda e: (-e["w"], e["s"], e["o"]))
    return out[:size]


# -- checks -------------------------------------------------------------------------------------------------


def check_role(role: Any) -> str:
    if role is None:
        raise InvalidInputError("role is required: who spoke (user, assistant, system, tool, a name) or 'event'.")
    text = re.sub(r"\s+", " ", clean_text(role, "role")).strip()
    if not text:
        raise InvalidInputError("role is empty: name who spoke (user, assistant, system, tool, a name) or 'event'.")
    if len(text) > ROLE_MAX_CHARS:
        raise InvalidInputError(f"role is longer than {ROLE_MAX_CHARS} characters.")
    return text


def check_category(category: Any) -> str | None:
    if category is None:
        return None
    text = re.sub(r"\s+", " ", clean_text(category, "category")).strip().lower()
    if len(text) > CATEGORY_MAX_CHARS:
        raise InvalidInputError(f"category is longer than {CATEGORY_MAX_CHARS} characters.")
    return text or None


def check_names(values: Any, name: str, check) -> tuple[str, ...] | None:
    if values is None:
        return None
    if isinstance(values, str):
        values = [values]
    if not isinstance(values, (list, tuple, set, frozenset)):
        raise InvalidInputError(f"{name} must be a list of strings.")
    out = tuple(dict.fromkeys(v for v in (check(x) for x in values) if v))
    return out or None


def check_timestamp(value: Any, default: float) -> float:
    """Epoch seconds of a turn's event time; None means ``default`` (now)."""
    return default if value is None else to_epoch(value, "timestamp")


# -- the chunk projection -----------------------------------------------------------------------------------

_CSELECT = (
    "SELECT c.id, m.scope, m.status, m.type, m.session, c.vector, c.memory_id "
    "FROM chunks c JOIN memories m ON m.id = c.memory_id"
)


class ChunkIndex(VectorIndex):
    """The chunk vectors as a cached matrix, filtered by their memory's columns in the scan.

    Rows are chunk ids; ``owner`` maps each to its memory. Refreshes from the same change
    counter as the memory vectors, with the chunk tombstones."""

    def __init__(self, dimensions: int, shard: tuple[int, int] | None = None):
        super().__init__(dimensions, shard)
        self.owner: dict[int, int] = {}

    def refresh(self, conn: sqlite3.Connection, counter: int | None = None) -> bool:
        if counter is None:
            counter = conn.execute("SELECT value FROM counters WHERE name = 'changes'").fetchone()[0]
        if counter == self.seq:
            return False
        floor = conn.execute("SELECT value FROM counters WHERE name = 'chunk_tombstone_floor'").fetchone()[0]
        if self.seq < 0 or self.seq < floor or counter < self.seq:
            self.reset()
            rows = conn.execute(_CSELECT).fetchall()
        else:
            for (cid,) in conn.execute("SELECT chunk_id FROM chunk_tombstones WHERE seq > ?", (self.seq,)):
                self._remove(cid)
                self.owner.pop(cid, None)
            rows = conn.execute(
                f"{_CSELECT} WHERE c.seq > ? UNION ALL {_CSELECT} WHERE m.seq > ? AND c.seq <= ?",
                (self.seq, self.seq, self.seq),
            ).fetchall()
        if rows:
            for r in rows:
                self.owner[r[0]] = r[6]
            self._upsert([r[:6] for r in rows])
        if self.dead > 1000 and self.dead * 4 > self.n:
            self._compact()
        self.seq = counter
        self._masks.clear()  # filter masks cached by VectorIndex.mask are stale now
        return True

    def search_memories(self, query: np.ndarray, depth: int, flt: ScanFilter | None) -> list[tuple[int, float]]:
        """The best chunk similarity of each memory, best first, at most ``depth`` memories."""
        ids, sims = self.search(query, depth * 3, flt)
        best: dict[int, float] = {}
        for cid, sim in zip(ids.tolist(), sims.tolist()):
            mid = self.owner.get(cid)
            if mid is not None and mid not in best:
                best[mid] = float(sim)
        return list(best.items())[:depth]


def needs_id_list(flt: Any) -> bool:
    """Filters the scan cannot apply from its own columns: tags, roles, categories."""
    return any(getattr(flt, name, None) is not None for name in ("tags", "roles", "categories"))


def chunk_channel(retriever: Any, conn: sqlite3.Connection, qvec: np.ndarray, flt: Any, depth: int,
                  vec: list[tuple[int, float]]) -> list[tuple[int, float]]:
    """Merge chunk hits into the vector channel: a memory's similarity is the best of its own
    vector and its chunks'. The same filters apply inside the chunk scan, before its top-k."""
    index = retriever.__dict__.get("chunk_index")
    if index is None:
        index = retriever.chunk_index = ChunkIndex(retriever.index.dimensions)
    counter = getattr(retriever, "_counter", None)
    index.refresh(conn, counter(conn) if counter else None)
    if len(index) == 0:
        return vec
    allowed = None
    if needs_id_list(flt):
        where, params = flt.sql("m")
        allowed = np.array([r[0] for r in conn.execute(
            f"SELECT c.id FROM chunks c JOIN memories m ON m.id = c.memory_id WHERE {where}", params)], dtype=np.int64)
    hits = index.search_memories(
        qvec, depth, ScanFilter(scopes=flt.scopes, statuses=flt.statuses, types=flt.types, sessions=flt.sessions,
                                allowed_ids=allowed))
    expired = getattr(retriever, "expired_ids", None)  # memories past valid_until (SLM-Lite)
    if expired is not None and getattr(flt, "valid_at", None) is not None:
        gone = expired(conn, flt.valid_at)
        hits = [(m, s) for m, s in hits if m not in gone]
    if not hits:
        return vec
    best = dict(vec)
    for mid, sim in hits:
        if sim > best.get(mid, -math.inf):
            best[mid] = sim
    return sorted(best.items(), key=lambda kv: (-kv[1], kv[0]))[:depth]


# -- rendering the session block of a context ----------------------------------------------------------------


def _inline(text: str) -> str:
    return re.sub(r"\s*\n\s*", " ⏎ ", text).replace("```", "ʼʼʼ").strip()


def _xml(text: str) -> str:
    from xml.sax.saxutils import escape

    return escape(text)


def render_session(sc: SessionContext, budget: int, fmt: str) -> tuple[str, list[str]]:
    """The recent turns and the summary as prompt text within ``budget`` tokens; the ids shown.
    When it does not fit, summary lines go first, then the oldest turns; the newest turn is
    cut rather than dropped."""
    if budget <= 0 or (not sc.turns and not sc.summary):
        return "", []
    turns = list(sc.turns)
    summary = [line for line in sc.summary.split("\n") if line]

    def build(turns: list[Memory], summary: list[str], last_text: str | None = None) -> str:
        def body(m: Memory) -> str:
            return last_text if (last_text is not None and m is turns[-1]) else m.content

        role = lambda m: m.episode.role if m.episode else m.type  # noqa: E731
        if fmt == "xml":
            from xml.sax.saxutils import quoteattr

            parts = [f"<conversation session={quoteattr(sc.session)}>\n"]
            if summary:
                parts.append("<summary>" + _xml("\n".join(summary)) + "</summary>\n")
            for m in turns:
                seq = m.episode.seq if m.episode else 0
                parts.append(f"<turn id={quoteattr(m.id)} role={quoteattr(role(m))} seq=\"{seq}\">{_xml(body(m))}</turn>\n")
            parts.append("</conversation>\n")
            return "".join(parts)
        if fmt == "plain":
            parts = []
            if summary:
                parts.append("Earlier in this conversation (summary):\n" + "".join(f"  {_inline(s)}\n" for s in summary))
            if turns:
                parts.append("Recent conversation:\n" + "".join(f"{m.id} {role(m)}: {_inline(body(m))}\n" for m in turns))
            return "".join(parts)
        parts = []
        if summary:
            parts.append("## Earlier in this conversation (summary)\n" + "".join(f"- {_inline(s)}\n" for s in summary))
        if turns:
            parts.append("## Recent conversation\n" + "".join(f"- **{_inline(role(m))}**: {_inline(body(m))} · {m.id}\n" for m in turns))
        return "".join(parts)

    text = build(turns, summary)
    while estimate_tokens(text) > budget and (summary or len(turns) > 1):
        if summary:
            summary.pop(0)
        else:
            turns.pop(0)
        text = build(turns, summary)
    if estimate_tokens(text) > budget and turns:
        over = estimate_tokens(text) - budget
        cut = truncate_to_tokens(turns[-1].content, max(0, estimate_tokens(turns[-1].content) - over - 4))
        while cut:
            text = build(turns, summary, cut + " …[truncated]")
            if estimate_tokens(text) <= budget:
                break
            cut = truncate_to_tokens(cut, estimate_tokens(cut) - 4)
        if not cut:
            return "", []
    return text, [m.id for m in turns]


# -- the mixin --------------------------------------------------------------------------------------------------


class ConversationMemory:
    """Episodes, chunks, citations and session memory: methods of ``Recallite``."""

    # -- writing turns ----------------------------------------------------------------------------------------
    def record_turn(
        self: "Recallite",
        session: str,
        role: str,
        content: str,
        *,
        timestamp: Any = None,
        scope: str | None = None,
        metadata: dict | None = None,
        source: Any = None,
        category: str | None = None,
        tags: Sequence[str] | None = None,
        title: str | None = None,
        importance: float | None = None,
    ) -> Memory:
        """Record one conversation turn (or event) as an ``episode`` memory with its role, its
        position in the session (``episode.seq``, assigned in order) and its event time
        (``timestamp``: datetime, ISO 8601 or epoch seconds; now if omitted).

        Unlike remember(), identical turns are all kept: a conversation repeats itself.
        Long turns are split into sentence-level chunks with their own vectors."""
        return self.record_turns([{
            "session": session, "role": role, "content": content, "timestamp": timestamp, "scope": scope,
            "metadata": metadata, "source": source, "category": category, "tags": tags, "title": title,
            "importance": importance,
        }])[0]

    def record_turns(
        self: "Recallite",
        turns: Iterable[dict],
        *,
        session: str | None = None,
        scope: str | None = None,
        source: Any = None,
        progress: Any = None,
    ) -> list[Memory]:
        """Record many turns in one transaction with one embedding batch (all or nothing).

        Each item takes the keyword arguments of :meth:`record_turn` (``role`` and ``content``
        required); ``session``, ``scope`` and ``source`` given here are the defaults."""
        self._live()
        prepared = []
        now = time.time()
        for n, item in enumerate(turns):
            if not isinstance(item, dict):
                raise InvalidInputError(f"Turn {n} is not a dict with role and content.")
            unknown = set(item) - TURN_FIELDS
            if unknown:
                raise InvalidInputError(f"Turn {n} has unknown fields: {', '.join(sorted(unknown))}.")
            try:
                sess = check_optional_name(item.get("session") or session, "session", self.limits)
                if not sess:
                    raise InvalidInputError("session is required: the id of the conversation this turn belongs to.")
                role = check_role(item.get("role"))
                p = self._prepare(
                    content=item.get("content"), type="episode", title=item.get("title"),
                    source=item.get("source") if item.get("source") is not None else source,
                    tags=item.get("tags"), metadata=item.get("metadata"), importance=item.get("importance"),
                    scope=item.get("scope") or scope, session=sess,
                )
                if item.get("title") is None:
                    self._retitle(p, f"{role}: {derive_title(p.content, 80)}")
                event_at = check_timestamp(item.get("timestamp"), now)
                category = check_category(item.get("category"))
            except InvalidInputError as exc:
                raise type(exc)(f"Turn {n}: {exc}") from None
            prepared.append((p, role, event_at, category))
        if not prepared:
            return []
        plans = self._chunk_plans([p for p, *_ in prepared], [r for _, r, *_ in prepared])
        vecs = self._embed([p.embed_text for p, *_ in prepared])
        with self.store.transaction() as conn:
            ids = self._insert_many(conn, [(p, vec, None) for (p, *_), vec in zip(prepared, vecs)], now)
            self._register_episodes(conn, [(mid, p, role, event_at) for mid, (p, role, event_at, _) in zip(ids, prepared)])
            self._write_chunks_many(conn, list(zip(ids, plans)))
            categories = [(mid, category) for mid, (*_, category) in zip(ids, prepared) if category]
            if categories:
                conn.executemany(
                    "INSERT INTO memory_categories (memory_id, category) VALUES (?, ?) "
                    "ON CONFLICT(memory_id) DO UPDATE SET category = excluded.category", categories)
            if progress:
                for k in range(len(prepared)):
                    progress(k + 1, len(prepared))
            loaded = load_memories(conn, ids)
        return [loaded[i] for i in ids]

    def _retitle(self: "Recallite", p: Any, title: str) -> None:
        from .engine import embedding_text

        limit = self.limits.max_title_chars
        p.title = title if len(title) <= limit else title[: limit - 1].rstrip() + "…"
        p.tokens = estimate_tokens(p.content) + estimate_tokens(p.title)
        p.embed_text = embedding_text(p.title, p.content)

    def _register_episode(self: "Recallite", conn, mid: int, p: Any, role: str, event_at: float) -> int:
        """The episodes row (next seq in scope + session) and the session summary update."""
        return self._register_episodes(conn, [(mid, p, role, event_at)])[mid]

    def _register_episodes(self: "Recallite", conn, turns: Sequence[tuple[int, Any, str, float]]) -> dict[int, int]:
        """_register_episode for many new turns (memory id, prepared, role, event time), in
        order: the same rows as one call per turn, with a few statements per session."""
        sessions: dict[tuple[str, str], list[tuple[int, Any, str, float]]] = {}
        for turn in turns:
            sessions.setdefault((turn[1].scope, turn[1].session or ""), []).append(turn)
        seqs: dict[int, int] = {}
        rows = []
        for (scope, session), group in sessions.items():
            last = conn.execute(
                "SELECT coalesce(max(seq), 0) FROM episodes WHERE scope = ? AND session = ?", (scope, session)
            ).fetchone()[0]
            for k, (mid, p, role, event_at) in enumerate(group, start=1):
                seqs[mid] = last + k
                rows.append((mid, scope, session, role, last + k, event_at))
        conn.executemany(
            "INSERT INTO episodes (memory_id, scope, session, role, seq, event_at) VALUES (?, ?, ?, ?, ?, ?)", rows)
        for (scope, session), group in sessions.items():
            first = seqs[group[0][0]]
            # One fold per turn, as when turns arrive one by one.
            self._summarise(conn, scope, session, [(mid, seqs[mid], role, p.content) for mid, p, role, _ in group],
                            each=True)
            # The previous turn's row too; the new turns' ids are new, so they have no row to delete.
            write_windows(conn, scope, session, range(first - 1, first + len(group)), absent={t[0] for t in group})
        return seqs

    def _set_category(self, conn, mid: int, category: str | None) -> None:
        if category:
            conn.execute(
                "INSERT INTO memory_categories (memory_id, category) VALUES (?, ?) "
                "ON CONFLICT(memory_id) DO UPDATE SET category = excluded.category", (mid, category))

    # -- chunks ---------------------------------------------------------------------------------------------------
    def chunks_of(self: "Recallite", text: str) -> list[tuple[int, int]]:
        """The chunk spans a memory text gets; [] when it is short enough to be one chunk."""
        cfg = self.config
        if len(text) <= cfg.chunk_threshold_chars:
            return []
        spans = chunk_spans(text, cfg.chunk_max_chars, cfg.chunk_min_chars)
        return spans if len(spans) > 1 else []

    def _chunk_plans(self: "Recallite", prepared: Sequence[Any], roles: Sequence[str | None] | None = None) -> list[list]:
        """For each prepared memory: [(ord, start, stop, text, vector)], embedded in one batch."""
        plans: list[list] = []
        texts: list[str] = []
        for i, p in enumerate(prepared):
            spans = self.chunks_of(p.content) if p.type in self.config.chunk_types else []
            role = roles[i] if roles else None
            plan = []
            for o, (a, b) in enumerate(spans):
                plan.append([o, a, b, p.content[a:b]])
                texts.append(f"{role}: {p.content[a:b]}" if role else p.content[a:b])
            plans.append(plan)
        if texts:
            vecs = iter(self._embed(texts))
            for plan in plans:
                for entry in plan:
                    entry.append(next(vecs))
        return plans

    def _write_chunks(self: "Recallite", conn, mid: int, plan: list) -> int:
        return self._write_chunks_many(conn, [(mid, plan)])

    def _write_chunks_many(self: "Recallite", conn, plans: Sequence[tuple[int, list]]) -> int:
        """The chunk rows of several memories (id, plan), in order, in one statement."""
        dims = self.embedder.dimensions
        rows = [(mid, o, a, b, text, encode_vector(v, dims)) for mid, plan in plans for o, a, b, text, v in plan]
        if rows:
            conn.executemany("INSERT INTO chunks (memory_id, ord, start, stop, text, vector) VALUES (?, ?, ?, ?, ?, ?)", rows)
        return len(rows)

    def _rechunk(self: "Recallite", ids: Sequence[int] | None = None) -> int:
        """(Re)build the chunks of the given memories (all chunkable ones if None). Returns chunks written."""
        types = tuple(self.config.chunk_types)
        if not types:
            return 0
        marks = ",".join("?" * len(types))
        with self.store.reading() as conn:
            if ids is None:
                rows = conn.execute(
                    f"SELECT m.id, m.type, m.content, e.role FROM memories m LEFT JOIN episodes e ON e.memory_id = m.id "
                    f"WHERE m.type IN ({marks})", types).fetchall()
            else:
                rows = []
                for i in range(0, len(ids), 500):
                    part = list(ids[i : i + 500])
                    rows += conn.execute(
                        f"SELECT m.id, m.type, m.content, e.role FROM memories m LEFT JOIN episodes e ON e.memory_id = m.id "
                        f"WHERE m.id IN ({','.join('?' * len(part))})", part).fetchall()

        class _P:  # what _chunk_plans reads
            def __init__(self, t, c):
                self.type, self.content = t, c

        plans = self._chunk_plans([_P(t, c) for _, t, c, _ in rows], [r for *_, r in rows])
        written = 0
        with self.store.transaction() as conn:
            for (mid, *_), plan in zip(rows, plans):
                conn.execute("DELETE FROM chunks WHERE memory_id = ?", (mid,))
                if conn.execute("SELECT 1 FROM memories WHERE id = ?", (mid,)).fetchone():
                    written += self._write_chunks(conn, mid, plan)
            self._prune_chunk_tombstones(conn)
        return written

    def _prune_chunk_tombstones(self: "Recallite", conn, force: bool = False) -> None:
        count = conn.execute("SELECT count(*) FROM chunk_tombstones").fetchone()[0]
        if force or count > self.config.max_tombstones:
            top = conn.execute("SELECT value FROM counters WHERE name = 'changes'").fetchone()[0]
            conn.execute("DELETE FROM chunk_tombstones")
            conn.execute("UPDATE counters SET value = ? WHERE name = 'chunk_tombstone_floor'", (top,))

    # -- reading episodes -------------------------------------------------------------------------------------------
    def episode_window(
        self: "Recallite", memory_id: str | int, window: int = 2, *, statuses: Sequence[str] | None = None
    ) -> list[Memory]:
        """The turn and its neighbours in the same session (seq ± ``window``), in order."""
        self._live()
        mid = parse_id(memory_id)
        w = _check_window(window)
        with self.store.reading() as conn:
            ids = self._window_ids(conn, mid, w, tuple(statuses or DEFAULT_RECALL_STATUSES))
            if ids is None:
                row = conn.execute("SELECT type FROM memories WHERE id = ?", (mid,)).fetchone()
                if row is None:
                    raise MemoryNotFoundError(f"No memory mem_{mid}.")
                raise InvalidInputError(f"mem_{mid} is a {row[0]}, not a conversation turn (episode); it has no window.")
            found = load_memories(conn, ids)
        return [found[i] for i in ids if i in found]

    @staticmethod
    def _window_ids(conn, mid: int, w: int, statuses: tuple[str, ...]) -> list[int] | None:
        row = conn.execute("SELECT scope, session, seq FROM episodes WHERE memory_id = ?", (mid,)).fetchone()
        if row is None:
            return None
        scope, session, seq = row
        marks = ",".join("?" * len(statuses))
        ids = [r[0] for r in conn.execute(
            f"SELECT e.memory_id FROM episodes e JOIN memories m ON m.id = e.memory_id WHERE e.scope = ? AND "
            f"e.session = ? AND e.seq BETWEEN ? AND ? AND (m.status IN ({marks}) OR e.memory_id = ?) ORDER BY e.seq",
            (scope, session, seq - w, seq + w, *statuses, mid))]
        return ids

    def session_turns(
        self: "Recallite", session: str, *, scope: str | Sequence[str] | None = None, limit: int | None = None,
        statuses: Sequence[str] | None = None,
    ) -> list[Memory]:
        """The turns of a session in order (the last ``limit`` if given)."""
        self._live()
        sess = check_optional_name(session, "session", self.limits)
        if not sess:
            raise InvalidInputError("session is required.")
        sts = tuple(statuses or DEFAULT_RECALL_STATUSES)
        where, params = self._scope_clause(scope, "e")
        with self.store.reading() as conn:
            sql = (f"SELECT e.memory_id FROM episodes e JOIN memories m ON m.id = e.memory_id WHERE e.session = ? {where} "
                   f"AND m.status IN ({','.join('?' * len(sts))}) ORDER BY e.seq DESC, e.event_at DESC")
            args: list = [sess, *params, *sts]
            if limit is not None:
                sql += " LIMIT ?"
                args.append(max(0, int(limit)))
            ids = [r[0] for r in conn.execute(sql, args)][::-1]
            found = load_memories(conn, ids)
        return [found[i] for i in ids]

    def _scope_clause(self: "Recallite", scope, alias: str) -> tuple[str, list]:
        if scope is None:
            return "", []
        flt = self._filter(scope, None, DEFAULT_RECALL_STATUSES, None, None)
        return f"AND {alias}.scope IN ({','.join('?' * len(flt.scopes))})", list(flt.scopes)

    # -- session memory ---------------------------------------------------------------------------------------------
    def _summarise(self, conn, scope: str, session: str, turns: list[tuple[int, int, str, str]], *,
                   each: bool = False) -> None:
        """Fold new turns (id, seq, role, text) into the session's running summary pool: all
        in one merge, or (``each``) one merge per turn, as if they had come one at a time."""
        row = conn.execute("SELECT pool, turns FROM session_summaries WHERE scope = ? AND session = ?",
                           (scope, session)).fetchone()
        pool = json.loads(row[0]) if row else []
        count = row[1] if row else 0
        words: dict[str, set[str]] = {}
        for part in ([[t] for t in turns] if each else [turns]):
            new = []
            for mid, seq, role, text in part:
                for o, (a, b) in enumerate(sentence_spans(text)):
                    sentence = _SPACES.sub(" ", text[a:b])
                    if len(sentence) > 400:
                        sentence = sentence[:400].rsplit(" ", 1)[0] + "…"
                    new.append({"m": mid, "s": seq, "o": o, "r": role, "w": sentence_score(sentence), "t": sentence})
            pool = merge_pool(pool, new, self.config.summary_pool, words)
        conn.execute(
            "INSERT INTO session_summaries (scope, session, pool, turns, updated_at) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT(scope, session) DO UPDATE SET pool = excluded.pool, turns = excluded.turns, updated_at = excluded.updated_at",
            (scope, session, json.dumps(pool, ensure_ascii=False), count + len(turns), time.time()),
        )

    def _rebuild_summaries(self: "Recallite", conn, keys: Iterable[tuple[str, str]] | None = None) -> int:
        """Recompute session summaries from the turns (all sessions if ``keys`` is None)."""
        if keys is None:
            conn.execute("DELETE FROM session_summaries")
            keys = [tuple(r) for r in conn.execute("SELECT DISTINCT scope, session FROM episodes")]
        n = 0
        for scope, session in keys:
            conn.execute("DELETE FROM session_summaries WHERE scope = ? AND session = ?", (scope, session))
            rows = conn.execute(
                "SELECT e.memory_id, e.seq, e.role, m.content FROM episodes e JOIN memories m ON m.id = e.memory_id "
                "WHERE e.scope = ? AND e.session = ? ORDER BY e.seq", (scope, session)).fetchall()
            if rows:
                self._summarise(conn, scope, session, rows)
                n += 1
        return n

    def session_context(
        self: "Recallite", session: str, *, last_n: int = 8, scope: str | Sequence[str] | None = None,
        summary_sentences: int | None = None,
    ) -> SessionContext:
        """Short-term memory of a session: its last ``last_n`` turns and a running extractive
        summary (the most informative sentences of the turns before those, in order)."""
        self._live()
        sess = check_optional_name(session, "session", self.limits)
        if not sess:
            raise InvalidInputError("session is required.")
        if isinstance(last_n, bool) or not isinstance(last_n, int) or last_n < 0:
            raise InvalidInputError(f"last_n must be a whole number >= 0, got {last_n!r}.")
        k = self.config.summary_sentences if summary_sentences is None else max(0, int(summary_sentences))
        where, params = self._scope_clause(scope, "e")
        sts = DEFAULT_RECALL_STATUSES
        with self.store.reading() as conn:
            rows = conn.execute(
                f"SELECT e.memory_id, e.seq FROM episodes e JOIN memories m ON m.id = e.memory_id WHERE e.session = ? {where} "
                f"AND m.status IN ({','.join('?' * len(sts))}) ORDER BY e.seq, e.event_at", [sess, *params, *sts]).fetchall()
            recent = rows[-last_n:] if last_n else []
            first_recent = recent[0][1] if recent else math.inf
            live = {r[0] for r in rows}
            pool: list[dict] = []
            for (p,) in conn.execute(f"SELECT pool FROM session_summaries e WHERE e.session = ? {where}", [sess, *params]):
                pool.extend(json.loads(p))
            found = load_memories(conn, [r[0] for r in recent])
        older = [e for e in pool if e["m"] in live and e["s"] < first_recent]
        older.sort(key=lambda e: (-e["w"], e["s"], e["o"]))
        chosen = sorted(older[:k], key=lambda e: (e["s"], e["o"]))
        return SessionContext(
            session=sess,
            turns=[found[i] for i, _ in recent if i in found],
            summary="\n".join(f"{e.get('r', '')}: {e['t']}" if e.get("r") else e["t"] for e in chosen),
            summary_ids=list(dict.fromkeys(f"mem_{e['m']}" for e in chosen)),
            total_turns=len(rows),
        )

    def _conversation_context(self: "Recallite", query: str, max_tokens: int, format: str, limit: int,
                              conversation: str, recent_turns: int, recall_kwargs: dict):
        """build_context(conversation=...): the session block, then recalled memories, one budget."""
        from .models import ContextResult

        sc = self.session_context(conversation, last_n=recent_turns, scope=recall_kwargs.get("scope"))
        cap = max(0, min(max_tokens, int(max_tokens * self.config.conversation_share)))
        block, shown = render_session(sc, cap, format)
        used = estimate_tokens(block)
        exclude = {parse_id(i) for i in shown}
        result = self.recall(query, limit=limit, _kind="context", _exclude=exclude, **recall_kwargs)
        rest = max_tokens - used
        if rest >= 1:
            r = self._render(result, rest, format)
        else:
            r = ContextResult(context="", retrieval_id=result.retrieval_id, memory_ids=[], tokens=0, max_tokens=0,
                              format=format, truncated=False, omitted=len(result.memories))
        text = block + r.context if r.memory_ids or not block else block
        tokens = estimate_tokens(text)
        with self.store.transaction() as conn:
            conn.execute("UPDATE retrievals SET kind = 'context', tokens_served = ? WHERE id = ?",
                         (tokens, parse_id(result.retrieval_id, "ret")))
        return ContextResult(context=text, retrieval_id=result.retrieval_id, memory_ids=r.memory_ids, tokens=tokens,
                             max_tokens=max_tokens, format=format, truncated=r.truncated, omitted=r.omitted)

    # -- recall post-processing ---------------------------------------------------------------------------------------
    def _post_rank(self: "Recallite", query: str, hits: list[RecallHit], limit: int, expand: int | None,
                   exclude: set[int] | None) -> list[RecallHit]:
        """After ranking: drop excluded ids, rerank (if configured), expand episode windows, trim."""
        if exclude:
            hits = [h for h in hits if _mid(h) not in exclude]
        reranker = self._reranker()
        if reranker is not None and hits:
            from .rerank import rerank_hits

            hits = rerank_hits(reranker, query, hits, self.config.rerank_depth, self.config.rrf_k)
        if expand:
            hits = self._expand_hits(hits, expand, limit, exclude or set())
        hits = hits[:limit]
        for r, h in enumerate(hits, start=1):
            h.rank = r
        return hits

    def _reranker(self: "Recallite"):
        spec = self.config.rerank
        if spec is None or spec is False:
            return None
        cached = self.__dict__.get("_reranker_cache")
        if cached is not None and cached[0] is spec:
            return cached[1]
        from .rerank import resolve_reranker

        fn = resolve_reranker(spec, self.config.rerank_model)
        self.__dict__["_reranker_cache"] = (spec, fn)
        return fn

    def _expand_hits(self: "Recallite", hits: list[RecallHit], w: int, limit: int, exclude: set[int]) -> list[RecallHit]:
        """Give each episode hit its window; an episode already shown (as a hit or in an
        earlier window) is not shown again: the later hit is folded into the earlier one."""
        out: list[RecallHit] = []
        seen: set[int] = set()
        with self.store.reading() as conn:
            windows: dict[int, list[int]] = {}
            for h in hits:
                mid = _mid(h)
                if mid is None:  # not a stored memory (e.g. a working-memory entry): no window
                    out.append(h)
                    if len(out) >= limit:
                        break
                    continue
                if mid in seen:
                    continue  # already inside an earlier hit's window
                ids = self._window_ids(conn, mid, w, DEFAULT_RECALL_STATUSES) if h.memory.type == "episode" else None
                if ids:
                    ids = [i for i in ids if i == mid or (i not in seen and i not in exclude)]
                    windows[mid] = ids
                    seen.update(ids)
                else:
                    seen.add(mid)
                out.append(h)
                if len(out) >= limit:
                    break
            found = load_memories(conn, sorted({i for ids in windows.values() for i in ids}))
        for h in out:
            ids = windows.get(_mid(h))
            if ids:
                h.window = [found[i] if i != _mid(h) else h.memory for i in ids if i in found]
                if len(h.window) > 1:
                    h.reasons.append(f"episode-window:{len(h.window)}")
        return out

    # -- provenance -------------------------------------------------------------------------------------------------
    def cite(self: "Recallite", memory_id: str | int, episode_ids: Sequence[str | int]) -> list[Citation]:
        """Record that a memory (a fact, a preference, ...) came from these conversation turns.
        Citing twice is harmless. Returns every citation of the memory."""
        self._live()
        mid = parse_id(memory_id)
        if isinstance(episode_ids, (str, int)):
            episode_ids = [episode_ids]
        eids = list(dict.fromkeys(parse_id(e) for e in episode_ids))
        if not eids:
            raise InvalidInputError("Name at least one episode id to cite.")
        with self.store.transaction() as conn:
            self._cite(conn, mid, eids)
            return self._citations(conn, mid)

    def _cite(self, conn, mid: int, eids: list[int]) -> None:
        if mid in eids:
            raise InvalidInputError(f"mem_{mid} cannot cite itself.")
        if conn.execute("SELECT 1 FROM memories WHERE id = ?", (mid,)).fetchone() is None:
            raise MemoryNotFoundError(f"No memory mem_{mid}.")
        marks = ",".join("?" * len(eids))
        types = dict(conn.execute(f"SELECT id, type FROM memories WHERE id IN ({marks})", eids).fetchall())
        missing = [f"mem_{e}" for e in eids if e not in types]
        if missing:
            raise MemoryNotFoundError(f"Cannot cite {', '.join(missing)}: no such memory.")
        wrong = [f"mem_{e} ({types[e]})" for e in eids if types[e] != "episode"]
        if wrong:
            raise InvalidInputError(
                f"Citations point to conversation turns (type episode); {', '.join(wrong)} is not one. "
                "Link other memories with relate()."
            )
        now = time.time()
        conn.executemany("INSERT OR IGNORE INTO citations (memory_id, episode_id, created_at) VALUES (?, ?, ?)",
                         [(mid, e, now) for e in eids])

    @staticmethod
    def _citations(conn, mid: int) -> list[Citation]:
        return [Citation(memory_id=f"mem_{m}", episode_id=f"mem_{e}", created_at=ts(c))
                for m, e, c in conn.execute(
                    "SELECT memory_id, episode_id, created_at FROM citations WHERE memory_id = ? ORDER BY episode_id", (mid,))]

    def citations(self: "Recallite", memory_id: str | int) -> list[Citation]:
        """The citations of a memory (its source turns' ids)."""
        self._live()
        mid = parse_id(memory_id)
        with self.store.reading() as conn:
            return self._citations(conn, mid)

    def why(self: "Recallite", memory_id: str | int, *, window: int = 0) -> list[Memory]:
        """"Why do you think that?": the conversation turns a memory came from, in conversation
        order — its citations, and those of the memories it was derived_from (e.g. by
        consolidate). ``window`` adds that many neighbouring turns around each source."""
        self._live()
        mid = parse_id(memory_id)
        w = _check_window(window)
        with self.store.reading() as conn:
            if conn.execute("SELECT 1 FROM memories WHERE id = ?", (mid,)).fetchone() is None:
                raise MemoryNotFoundError(f"No memory mem_{mid}.")
            sources = [r[0] for r in conn.execute(
                "SELECT episode_id FROM citations WHERE memory_id = ? UNION "
                "SELECT c.episode_id FROM relations r JOIN citations c ON c.memory_id = r.to_id "
                "WHERE r.from_id = ? AND r.type = 'derived_from'", (mid, mid))]
            ids: list[int] = []
            for s in sources:
                ids.extend(self._window_ids(conn, s, w, DEFAULT_RECALL_STATUSES) or [s] if w else [s])
            ids = list(dict.fromkeys(ids))
            found = load_memories(conn, ids)
        mems = [found[i] for i in ids if i in found]
        mems.sort(key=lambda m: (m.episode.timestamp if m.episode else m.created_at, m.scope,
                                 m.episode.session or "" if m.episode else "", m.episode.seq if m.episode else 0))
        return mems

    # -- deletion -----------------------------------------------------------------------------------------------------
    def _before_forget(self, conn, mid: int) -> dict:
        return {
            "citing": [r[0] for r in conn.execute("SELECT memory_id FROM citations WHERE episode_id = ?", (mid,))],
            "chunks": conn.execute("SELECT count(*) FROM chunks WHERE memory_id = ?", (mid,)).fetchone()[0],
            "citations": conn.execute("SELECT count(*) FROM citations WHERE memory_id = ? OR episode_id = ?",
                                      (mid, mid)).fetchone()[0],
            "session": conn.execute("SELECT scope, session FROM episodes WHERE memory_id = ?", (mid,)).fetchone(),
        }

    def _after_forget(self: "Recallite", conn, mid: int, before: dict, orphans: str) -> ForgetResult:
        res = ForgetResult(id=f"mem_{mid}", chunks=before["chunks"], citations=before["citations"])
        if before["session"] is not None:
            scope, session = before["session"]
            row = conn.execute("SELECT pool, turns FROM session_summaries WHERE scope = ? AND session = ?",
                               (scope, session)).fetchone()
            if row:
                pool = [e for e in json.loads(row[0]) if e["m"] != mid]
                conn.execute("UPDATE session_summaries SET pool = ?, turns = ?, updated_at = ? WHERE scope = ? AND session = ?",
                             (json.dumps(pool, ensure_ascii=False), max(0, row[1] - 1), time.time(), scope, session))
        left = [m for m in dict.fromkeys(before["citing"])
                if conn.execute("SELECT 1 FROM citations WHERE memory_id = ?", (m,)).fetchone() is None]
        res.orphans = [f"mem_{m}" for m in left]
        if orphans == "remove" and left:
            for m in left:  # as forget() does: the log may quote them too
                shown_in = "SELECT retrieval_id FROM retrieval_items WHERE memory_id = ?"
                conn.execute(f"UPDATE retrievals SET query = '[forgotten]' WHERE id IN ({shown_in})", (m,))
                conn.execute(f"UPDATE feedback SET reason = NULL WHERE retrieval_id IN ({shown_in}) OR used_ids LIKE ?",
                             (m, f'%"mem_{m}"%'))
                conn.execute("DELETE FROM memories WHERE id = ?", (m,))
            res.removed = list(res.orphans)
        self._prune_chunk_tombstones(conn)
        return res


def _mid(hit: RecallHit) -> int | None:
    """The stored memory id of a hit (None for entries that live elsewhere, e.g. working memory)."""
    mid = hit.memory.id
    return int(mid[4:]) if mid.startswith("mem_") and mid[4:].isdigit() else None


def check_orphans(value: Any) -> str:
    if value not in ("report", "remove"):
        raise InvalidInputError("orphans must be 'report' (list the memories left without a source) or 'remove' (delete them too).")
    return value


def _check_window(window: Any) -> int:
    if isinstance(window, bool) or not isinstance(window, int) or window < 0 or window > 50:
        raise InvalidInputError(f"window must be a whole number from 0 to 50, got {window!r}.")
    return window


__all__ = ["ConversationMemory", "ChunkIndex", "chunk_channel", "chunk_spans", "sentence_spans", "sentence_score",
           "check_role", "check_category", "check_timestamp", "render_session", "needs_id_list"]
