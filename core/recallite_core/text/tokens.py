"""Token estimate used for every budget.

We do not ship a model tokenizer for the client's LLM, so we estimate conservatively:
one token per 4 ASCII characters (rounded up) plus one token per non-ASCII character.
BPE tokenizers of current LLMs average 4+ characters per English token and rarely give
more than one token per CJK character, so a budget computed this way is not exceeded in
practice, and by construction it is never exceeded by our own count.
"""

from __future__ import annotations


def estimate_tokens(text: str) -> int:
    if not text:
        return 0
    ascii_chars = len(text.encode("ascii", "ignore"))
    other = len(text) - ascii_chars
    return -(-ascii_chars // 4) + other


def truncate_to_tokens(text: str, budget: int) -> str:
    """The longest prefix of ``text`` (cut at a word boundary when possible) within ``budget`` tokens."""
    if budget <= 0:
        return ""
    if estimate_tokens(text) <= budget:
        return text
    lo, hi = 0, len(text)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if estimate_tokens(text[:mid]) <= budget:
            lo = mid
        else:
            hi = mid - 1
    cut = text[:lo]
    space = cut.rfind(" ")
    if space > lo * 0.6:
        cut = cut[:space]
    return cut.rstrip()
