"""The engine's messages in the browser's own terms. The engine speaks to Python callers and MCP
clients: its errors and warnings name calls and arguments (``list() or recall()``,
``history(mem_1)``, ``allow_unsafe``, ``keep_both``) a person at the browser cannot use. Here
each such phrase becomes the page, button or field that does it, or the CLI command."""

from __future__ import annotations

import re

from recallite_core import MemoryNotFoundError

OVERRIDE = 'tick "override the trust policy"'  # the checkbox of the Status, Supersede and Relate forms

# (the engine's wording, the browser's), in the order tried; each names what the person can do here.
_PHRASES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"revise the newest version \(history\((mem_\d+)\) lists them\)"),
     r"edit the newest version (listed under Versions on \1's page)"),
    (re.compile(r"revise the newer memory"), "edit the newest version instead"),
    (re.compile(r"undo the supersede: restore\b"), "undo the supersede: `recallite-mcp restore`"),
    (re.compile(r"Validate it by a trusted source first, or pass allow_unsafe"), f"Validate it first, or {OVERRIDE}"),
    (re.compile(r"pass allow_unsafe"), OVERRIDE),
    (re.compile(r"(mem_\d+) contradicts (mem_\d+)(.*?)\(keep both: recallite_update action=keep_both, or "
                r"recallite-mcp resolve --keep both\)", re.DOTALL),
     (r'\1 contradicts \2\3("both hold" under Contradictions to resolve on the Learning page, or '
      r'`recallite-mcp resolve \1 \2 --keep both`)')),
    (re.compile(r"keep must be 'both', (mem_\d+) or (mem_\d+)\."), r'Choose "\1 holds", "\2 holds" or "both hold".'),
    (re.compile(r"content is empty\. Pass the text you want to [\w ]+\."), "The text box is empty: type the memory's text."),
    (re.compile(r"run reindex"), "run `recallite-mcp reindex`"),
    (re.compile(r"\bFTS index\b"), "keyword index"),
]
# A team copy's warning (retrieval.context.own_warnings) ends with what to do, in the MCP tool's words.
_STALE_COPY_ACTION = re.compile(r"revise this copy, or keep_both it with (mem_\d+)")


def in_browser_terms(text: str, memory_id: str | None = None) -> str:
    """An engine message or warning, said with the browser's pages and buttons (``memory_id``: the
    memory a warning is about, for the command it names)."""
    for pattern, said in _PHRASES:
        text = pattern.sub(said, text)
    if memory_id is not None:
        text = _STALE_COPY_ACTION.sub(
            lambda m: f"edit this copy, or keep it: recallite-mcp resolve {memory_id} {m.group(1)} --keep both", text)
    return text


def said(exc: Exception) -> str:
    """The line an engine error shows in the page."""
    if isinstance(exc, MemoryNotFoundError):  # its second sentence names list() and recall()
        return str(exc).split(". ")[0].rstrip(".") + ". Find it on the Memories page: search, or filter the list."
    return in_browser_terms(str(exc))
