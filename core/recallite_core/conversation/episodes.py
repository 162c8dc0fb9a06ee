"""Conversation memory (from memoLite): episodes with provenance, chunks, session memory.

A conversation turn (or an event) is a memory of type ``episode``: it shares the FTS index,
the vectors, the lifecycle, feedback and export with every other memory. Around it:

- ``episodes``: role, session, sequence number and event time of each turn;
- ``chunks``: sentence-level chunks of long turns with their own vectors, scanned by
  :class:`ChunkIndex` (a :class:`VectorIndex` over chunk rows, filtered by the parent
  memory's scope/status/type/session before the top-k); a chunk hit counts for its turn;
- ``citations``: which turns a fact or preference came from (``why``);
- ``session_summaries``: a running extractive summary per session (no LLM).

This module holds the text side (sentences, chunks, summary scores, checks), the chunk
projection and the rendering of a session block: plain functions and :class:`ChunkIndex`.
The services that read and write turns are in turns.py (projections written inside a write
transaction) and conversations.py (the public calls). May import the text, model, index and
validation modules; never a service module or the facade.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np

from recallite_core.errors import InvalidInputError
from recallite_core.index.vector_index import ScanFilter, VectorIndex
from recallite_core.models import Memory, RecallHit, SessionContext
from recallite_core.storage.base import Session
from recallite_core.storage.fts import STOPWORDS
from recallite_core.text.tokens import estimate_tokens, truncate_to_tokens
from recallite_core.text.validation import clean_text, to_epoch

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


def summary_entries(mid: int, seq: int, role: str, text: str) -> list[dict]:
    """The sentences of one turn as entries of a session's summary pool (see merge_pool)."""
    new = []
    for o, (a, b) in enumerate(sentence_spans(text)):
        sentence = _SPACES.sub(" ", text[a:b])
        if len(sentence) > 400:
            sentence = sentence[:400].rsplit(" ", 1)[0] + "…"
        new.append({"m": mid, "s": seq, "o": o, "r": role, "w": sentence_score(sentence), "t": sentence})
    return new


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

class ChunkIndex(VectorIndex):
    """The chunk vectors as a cached matrix, filtered by their memory's columns in the scan.

    Rows are chunk ids; ``owner`` maps each to its memory. Refreshes from the same change
    counter as the memory vectors, with the chunk tombstones."""

    def __init__(self, dimensions: int, shard: tuple[int, int] | None = None):
        super().__init__(dimensions, shard)
        self.owner: dict[int, int] = {}

    def refresh(self, conn: Session, counter: int | None = None) -> bool:
        if counter is None:
            counter = conn.feed.counter()
        if counter == self.seq:
            return False
        floor = conn.episodes.chunk_tombstone_floor()
        if self.seq < 0 or self.seq < floor or counter < self.seq:
            self.reset()
            rows = conn.episodes.all_chunks()
        else:
            for cid in conn.episodes.chunk_tombstones_since(self.seq):
                self._remove(cid)
                self.owner.pop(cid, None)
            rows = conn.episodes.chunks_changed_since(self.seq)
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


def chunk_channel(retriever: Any, conn: Session, qvec: np.ndarray, flt: Any, depth: int,
                  vec: list[tuple[int, float]]) -> list[tuple[int, float]]:
    """Merge chunk hits into the vector channel: a memory's similarity is the best of its own
    vector and its chunks'. The same filters apply inside the chunk scan, before its top-k."""
    index = getattr(retriever, "chunk_index", None)
    if index is None:  # a Retriever built without the facade's plumbing
        index = retriever.chunk_index = ChunkIndex(retriever.index.dimensions)
    counter = getattr(retriever, "counter", None)
    index.refresh(conn, counter(conn) if counter else None)
    if len(index) == 0:
        return vec
    allowed = None
    if needs_id_list(flt):
        allowed = np.array(conn.episodes.chunk_ids(flt.memory_filter()), dtype=np.int64)
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


def stored_id(hit: RecallHit) -> int | None:
    """The stored memory id of a hit (None for entries that live elsewhere, e.g. working memory)."""
    mid = hit.memory.id
    return int(mid[4:]) if mid.startswith("mem_") and mid[4:].isdigit() else None


def check_orphans(value: Any) -> str:
    if value not in ("report", "remove"):
        raise InvalidInputError("orphans must be 'report' (list the memories left without a source) or 'remove' (delete them too).")
    return value


def check_window(window: Any) -> int:
    if isinstance(window, bool) or not isinstance(window, int) or window < 0 or window > 50:
        raise InvalidInputError(f"window must be a whole number from 0 to 50, got {window!r}.")
    return window


__all__ = ["ChunkIndex", "chunk_channel", "chunk_spans", "sentence_spans", "sentence_score",
           "check_role", "check_category", "check_timestamp", "render_session", "needs_id_list",
           "check_window", "check_orphans", "check_names", "stored_id", "merge_pool",
           "summary_entries", "TURN_FIELDS"]
