"""Local concept extraction and extractive summaries: no model, no network.

Key phrases are found RAKE-style (runs of content words between stop words and punctuation,
scored by word degree / frequency) and weighted by inverse document frequency against the
store's own FTS index, so words every memory uses count for less than the words that
discriminate. The summary keeps the sentences that carry the most concept words, in their
original order. Used to turn a long message into an auto-recall query; MCP sampling can
replace it when the client offers an LLM (see recallite_mcp.server).
"""

from __future__ import annotations

import math
import re
from typing import Callable

from recallite_core.features.working import STOPWORDS as WM_STOPWORDS
from recallite_core.storage.fts import STOPWORDS as FTS_STOPWORDS

STOPWORDS = FTS_STOPWORDS | WM_STOPWORDS | frozenset(
    "also etc e.g i.e please thanks thank okay ok yes let lets get gets got getting make made use used using need needs "
    "want wants keep keeps kept everything anything something nothing fine help really still thing things stuff "
    "way tried try trying seems seem like maybe".split()
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_SPLIT = re.compile(r"[^\w\-./#+]+", re.UNICODE)  # keep file names, flags, versions, c++ together
_MAX_PHRASE = 4


_TECHNICAL = re.compile(r".[A-Z]|[_./#+]|\d")  # CamelCase, snake_case, paths, versions: specific words


def _tokens(fragment: str) -> list[str]:
    return [t.strip("-./").lower() for t in _SPLIT.split(fragment) if t.strip("-./")]


def technical_words(text: str) -> set[str]:
    return {t.strip("-./").lower() for t in _SPLIT.split(text) if len(t) > 2 and _TECHNICAL.search(t.strip("-./"))}


def phrases(text: str) -> list[list[str]]:
    """Runs of content words (at most 4), split at stop words and punctuation."""
    out: list[list[str]] = []
    for part in re.split(r"[,;:!?()\[\]{}\"'`]|\.(?:\s|$)|\n", text):
        run: list[str] = []
        for tok in _tokens(part):
            if tok in STOPWORDS or len(tok) < 2 or tok.isdigit():
                if run:
                    out.append(run)
                run = []
                continue
            run.append(tok)
            if len(run) == _MAX_PHRASE:
                out.append(run)
                run = []
        if run:
            out.append(run)
    return out


def extract_concepts(
    text: str, k: int = 8, doc_freq: Callable[[list[str]], dict[str, int]] | None = None, n_docs: int = 0
) -> list[str]:
    """The ``k`` best key phrases of ``text``, best first.

    ``doc_freq(words) -> {word: documents containing it}`` and ``n_docs`` weight words by
    idf = ln((n_docs + 1) / (df + 1)) + 1 when the store has them, and by 0.75 when it has
    none (such a word cannot match a memory's text; it may still help the semantic channel).
    Without them every word weighs 1.
    """
    runs = phrases(text)
    if not runs:
        return []
    freq: dict[str, int] = {}
    degree: dict[str, int] = {}
    for run in runs:
        for w in run:
            freq[w] = freq.get(w, 0) + 1
            degree[w] = degree.get(w, 0) + len(run)
    idf = {w: 1.0 for w in freq}
    if doc_freq is not None and n_docs > 0:
        df = doc_freq(sorted(freq, key=lambda w: -freq[w])[:64])
        for w in idf:
            if df.get(w):
                idf[w] = math.log((n_docs + 1) / (df[w] + 1)) + 1.0
            elif w in df:
                idf[w] = 0.75
    tech = technical_words(text)
    # RAKE's degree/frequency, damped so long runs do not win on length alone; repeated,
    # rare (high idf) and technical words weigh more.
    word_score = {
        w: (degree[w] / freq[w]) ** 0.25 * idf[w] * (1.0 + math.log(freq[w])) * (2.0 if w in tech else 1.0)
        for w in freq
    }
    scored: dict[str, float] = {}
    first: dict[str, int] = {}
    for n, run in enumerate(runs):
        key = " ".join(run)
        scored[key] = max(scored.get(key, 0.0), sum(word_score[w] for w in run) / math.sqrt(len(run)))
        first.setdefault(key, n)
    ranked = sorted(scored, key=lambda p: (-scored[p], first[p]))
    out: list[str] = []
    for p in ranked:
        # A phrase inside a better one adds nothing.
        if any(f" {p} " in f" {q} " for q in out):
            continue
        out.append(p)
        if len(out) >= k:
            break
    return out


def summarize(text: str, concepts: list[str], max_sentences: int = 2, max_chars: int = 400) -> str:
    """The sentences that carry the most concept words, in their original order."""
    sentences = [s.strip() for s in _SENTENCE.split(text.strip()) if s.strip()]
    if not sentences:
        return ""
    if len(sentences) <= max_sentences:
        chosen = sentences
    else:
        weights: dict[str, float] = {}
        for rank, c in enumerate(concepts):
            for w in c.split():
                weights[w] = max(weights.get(w, 0.0), 1.0 / (1 + rank))
        def score(s: str) -> float:
            toks = [t for t in _tokens(s) if t not in STOPWORDS]
            return sum(weights.get(t, 0.0) for t in set(toks)) / math.sqrt(max(4, len(toks)))

        best = sorted(range(len(sentences)), key=lambda i: (-score(sentences[i]), i))[:max_sentences]
        chosen = [sentences[i] for i in sorted(best)]
    out = " ".join(chosen)
    if len(out) > max_chars:
        cut = out[:max_chars]
        out = (cut[: cut.rfind(" ")] if " " in cut[max_chars // 2 :] else cut).rstrip(",;: ") + "…"
    return out


def concepts_query(concepts: list[str], max_terms: int = 24) -> str:
    """A recall query from concepts: their words, best concepts first."""
    words: list[str] = []
    for c in concepts:
        for w in c.split():
            if w not in words:
                words.append(w)
    return " ".join(words[:max_terms])
