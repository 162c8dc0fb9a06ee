"""Prompt-injection heuristics for memory text, and visible escaping of hidden characters.
Pure functions, no I/O.

A memory is recalled into an agent's prompt later, so text that talks *to the agent*
("ignore previous instructions", "system:", a tool-call block, invisible characters) is a
poisoning attempt until a person says otherwise. The detector returns named findings; the
engine decides what they mean for each source (see docs/security.md).

Categories:
- ``instruction-override`` (strong): ignore/disregard/forget previous instructions, "you are
  now a ...", "new instructions:", "do not tell the user", "reveal your system prompt".
- ``role-marker`` (strong): chat-template tokens (``<|im_start|>``, ``[INST]``, ``<<SYS>>``),
  ``<system>`` tags; (weak) ``System:`` / ``Assistant:`` at a line start, which is also how
  people write notes.
- ``tool-call-syntax`` (strong): ``<tool_call>``, ``<function_calls>``, ``<invoke``,
  ``"tool_calls":``, ``{"name": ..., "arguments": ...}``, ``recallite_forget(...)``.
- ``hidden-unicode`` (strong): zero-width characters, bidi overrides and isolates, Unicode
  tag characters, supplementary variation selectors.
- ``imperative`` (weak): "always run/execute/call", "never ask/tell", "you must always",
  "run ... curl | sh", jailbreak / pretend-to-be phrasing.
  Weak findings count only for untrusted sources: agents legitimately store procedures such
  as "always run the migrations first".
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from recallite_core.text.redaction import Literals, Screen, literal_pattern

STRONG = "strong"
WEAK = "weak"

# Invisible or direction-changing code points. ZWJ/ZWNJ (U+200C/D) are left alone: emoji
# sequences and Persian/Indic text need them.
_HIDDEN_RANGES = [
    (0x00AD, 0x00AD),  # soft hyphen
    (0x061C, 0x061C),  # Arabic letter mark
    (0x180E, 0x180E),  # Mongolian vowel separator
    (0x200B, 0x200B),  # zero width space
    (0x200E, 0x200F),  # LRM, RLM
    (0x202A, 0x202E),  # bidi embeddings and overrides
    (0x2060, 0x2064),  # word joiner, invisible operators
    (0x2066, 0x2069),  # bidi isolates
    (0xFEFF, 0xFEFF),  # zero width no-break space (BOM)
    (0xE0000, 0xE007F),  # tag characters (ASCII smuggling)
    (0xE0100, 0xE01EF),  # variation selectors supplement
]
# Shown escaped when rendering (never flagged on their own): C1 controls and non-characters,
# which XML 1.0 cannot carry and terminals may interpret.
_ESCAPE_ONLY_RANGES = [(0x0080, 0x009F), (0xFDD0, 0xFDEF), (0xFFFE, 0xFFFF)]


def _class(ranges: list[tuple[int, int]]) -> str:
    return "".join(f"\\U{a:08x}" if a == b else f"\\U{a:08x}-\\U{b:08x}" for a, b in ranges)


HIDDEN = re.compile(f"[{_class(_HIDDEN_RANGES)}]")
_ESCAPE = re.compile(f"[{_class(_HIDDEN_RANGES + _ESCAPE_ONLY_RANGES)}]")


def escape_hidden(text: str) -> str:
    """Make invisible and direction-changing characters visible: U+202E becomes ``[U+202E]``."""
    if not text:
        return text
    return _ESCAPE.sub(lambda m: f"[U+{ord(m.group()):04X}]", text)


_OVERRIDE = [
    r"\b(?:ignore|disregard|forget|override|bypass|skip)\b[^.\n]{0,40}?\b(?:previous|prior|above|earlier|preceding|all|any|your|the|these|those|system|safety)\b[^.\n]{0,24}?\b(?:instructions?|prompts?|rules|directives|guidelines|guardrails|policies|messages?|constraints)\b",
    r"\bnew (?:system )?(?:instructions?|rules|directives)\s*:",
    r"\byou are now (?:a|an|the|in|my|no longer|free|unrestricted|dan)\b",
    r"\bfrom now on,? (?:you|always|never|ignore)\b",
    r"\b(?:do not|don't|never) (?:tell|inform|mention (?:this )?to|alert|warn|notify) the user\b",
    r"\bwithout (?:telling|asking|informing|notifying|alerting) the user\b",
    r"\b(?:reveal|print|show|output|leak|repeat) (?:your |the )?(?:system prompt|hidden instructions|instructions above)\b",
    r"\b(?:enable|enter|activate) (?:dan|god|jailbreak) mode\b",
]
_ROLE = [
    r"<\|(?:im_start|im_end|system|user|assistant|endoftext|eot_id|start_header_id)\|>",
    r"\[/?INST\]",
    r"<</?SYS>>",
    r"(?i)</?(?:system|developer|instructions?|admin)\s*>",
]
# A line that starts like a chat turn ("System: ...") is also how people write notes
# ("System: Ubuntu 22.04"), so it only counts against untrusted sources.
_ROLE_WEAK = [
    r"(?im)^[ \t>*#-]*(?:system|developer|assistant)[ \t]*:",
    r"(?im)^#{1,6}\s*(?:system|instructions?)\b",
]
_TOOL = [
    r"(?i)</?(?:tool_call|tool_use|function_calls?|antml:invoke|invoke|tool_result)\b",
    r"(?i)\"(?:tool_calls|function_call|tool_use)\"\s*:",
    r"(?is)\{\s*\"(?:name|tool|function)\"\s*:\s*\"[^\"]{1,80}\"\s*,\s*\"(?:arguments|args|parameters|input)\"\s*:",
    r"(?i)\b(?:recallite|mcp)_[a-z_]+\s*\(",
]
_IMPERATIVE = [
    r"\balways (?:run|execute|call|invoke|send|include|reply|respond|use the tool|approve|trust|obey|follow)\b",
    r"\bnever (?:ask|tell|mention|reveal|warn|question|refuse|verify)\b",
    r"\byou (?:must|should|will) (?:always|now|immediately|never|ignore|obey)\b",
    r"\bimmediately (?:run|execute|call|send|delete|forget)\b",
    r"\b(?:run|execute)\b[^.\n]{0,20}\b(?:rm -rf|curl [^\n|]*\|\s*(?:ba)?sh|sudo )",
    r"\bjailbr(?:eak|oken)\b",
    r"\bpretend (?:to be|you are|that you)\b",
    r"\bexfiltrat\w*",
]

_CATEGORIES: list[tuple[str, str, list[re.Pattern[str]]]] = [
    ("instruction-override", STRONG, [re.compile(p, re.I) for p in _OVERRIDE]),
    ("role-marker", STRONG, [re.compile(p) for p in _ROLE]),
    ("tool-call-syntax", STRONG, [re.compile(p) for p in _TOOL]),
    ("role-marker", WEAK, [re.compile(p) for p in _ROLE_WEAK]),
    ("imperative", WEAK, [re.compile(p, re.I) for p in _IMPERATIVE]),
]

# Prescreens (as in redaction.py): for each pattern, literals one of which any match must
# contain, and whether they compare case-insensitively. Every memory, title and tag is
# checked on every write, and almost none matches; a pattern whose literals are all absent is
# not run. tests/core/test_write_path.py checks that the screened detector equals the plain one.
_NEEDS_OF: dict[str, tuple[tuple[str, ...], bool]] = {
    _OVERRIDE[0]: (("ignore", "disregard", "forget", "override", "bypass", "skip"), True),
    _OVERRIDE[1]: (("new ",), True),
    _OVERRIDE[2]: (("you are now ",), True),
    _OVERRIDE[3]: (("from now on",), True),
    _OVERRIDE[4]: ((" the user",), True),
    _OVERRIDE[5]: ((" the user",), True),
    _OVERRIDE[6]: (("system prompt", "hidden instructions", "instructions above"), True),
    _OVERRIDE[7]: ((" mode",), True),
    _ROLE[0]: (("<|",), False),
    _ROLE[1]: (("INST]",), False),
    _ROLE[2]: (("SYS>>",), False),
    _ROLE[3]: (("<",), False),
    _TOOL[0]: (("<",), False),
    _TOOL[1]: (('"',), False),
    _TOOL[2]: (("{",), False),
    _TOOL[3]: (("recallite_", "mcp_"), True),
    _ROLE_WEAK[0]: (("system", "developer", "assistant"), True),
    _ROLE_WEAK[1]: (("system", "instruction"), True),
    _IMPERATIVE[0]: (("always ",), True),
    _IMPERATIVE[1]: (("never ",), True),
    _IMPERATIVE[2]: (("you ",), True),
    _IMPERATIVE[3]: (("immediately ",), True),
    _IMPERATIVE[4]: (("rm -rf", "curl ", "sudo "), True),
    _IMPERATIVE[5]: (("jailbr",), True),
    _IMPERATIVE[6]: (("pretend ",), True),
    _IMPERATIVE[7]: (("exfiltrat",), True),
}
_NEEDS: dict["re.Pattern[str]", tuple[tuple[str, ...], bool]] = {
    p: _NEEDS_OF[p.pattern] for _, _, ps in _CATEGORIES for p in ps if p.pattern in _NEEDS_OF
}
_ALL_SCREENED = all(p in _NEEDS for _, _, ps in _CATEGORIES for p in ps)
_WEAK_PATTERNS = frozenset(p for _, severity, ps in _CATEGORIES if severity == WEAK for p in ps)
_ANY_CS = literal_pattern(lit for lits, ci in _NEEDS.values() if not ci for lit in lits)
_ANY_CI = Literals(lit for lits, ci in _NEEDS.values() if ci for lit in lits)


@dataclass(frozen=True)
class InjectionFinding:
    category: str
    severity: str
    excerpt: str


def _screen(text: str) -> tuple[frozenset | None, bool]:
    """The patterns that may match ``text`` (None: all of them) and whether it may hold a
    hidden character. For text joined from several, what may match any of the parts."""
    screen = Screen(text)
    hidden = not screen.ascii and HIDDEN.search(text) is not None  # every hidden code point is > U+007F
    if not _ALL_SCREENED:
        return None, hidden
    if _ANY_CS.search(text) is None and not screen.has_any(_ANY_CI):
        return frozenset(), hidden
    return frozenset(p for p, needs in _NEEDS.items() if screen.has(*needs)), hidden


def detect(text: str) -> list[InjectionFinding]:
    """Findings, one per category at most, strongest categories first."""
    if not text:
        return []
    return _detect(text, *_screen(text))


def _detect(text: str, candidates: frozenset | None = None, hidden: bool = True) -> list[InjectionFinding]:
    """detect() trying only ``candidates`` (None: every pattern), and HIDDEN only if ``hidden``."""
    out: list[InjectionFinding] = []
    if not text or candidates is not None and not candidates and not hidden:
        return out
    for category, severity, patterns in _CATEGORIES:
        if any(f.category == category for f in out):
            continue
        for p in patterns:
            if candidates is not None and p not in candidates:
                continue
            m = p.search(text)
            if m:
                out.append(InjectionFinding(category, severity, m.group()[:80]))
                break
    m = HIDDEN.search(text) if hidden else None
    if m:
        out.insert(0, InjectionFinding("hidden-unicode", STRONG, f"U+{ord(m.group()):04X}"))
    return out


def flags_for(texts: list[str], trust: str) -> list[str]:
    """The categories that flag a memory written by a source of ``trust`` (trusted, medium,
    untrusted): untrusted sources are flagged on any finding, others on strong ones only."""
    cats: list[str] = []
    # One screen for all: a literal (or hidden character) of any text is one of the join.
    candidates, hidden = _screen("\n".join(texts))
    if candidates and trust != "untrusted":
        # Weak findings count only against untrusted sources, and weak patterns come after
        # the strong ones of their category: not trying them changes no strong finding.
        candidates -= _WEAK_PATTERNS
    if candidates is not None and not candidates and not hidden:
        return cats
    for t in texts:
        mine = candidates
        if candidates:  # only the patterns whose literals this text holds
            screen = Screen(t)
            mine = frozenset(p for p in candidates if screen.has(*_NEEDS[p]))
        for f in _detect(t, mine, hidden and not t.isascii()):
            if f.severity == WEAK and trust != "untrusted":
                continue
            if f.category not in cats:
                cats.append(f.category)
    return cats


__all__ = ["detect", "flags_for", "escape_hidden", "InjectionFinding", "HIDDEN", "STRONG", "WEAK"]
