"""Secret redaction: find credentials in text before it is stored. Pure functions, no I/O.

Each finding is replaced by ``[REDACTED:<kind>]``. The rules aim at the secrets people paste
into chats (provider API keys, tokens, private keys, passwords in URLs and .env lines, and
credentials written as sentences: "the DB password is hunter2hunter2") and
leave alone what only looks random: git SHAs, UUIDs, base64 blobs in prose, documentation
placeholders (``sk-xxxx…``, ``AKIA…EXAMPLE``, ``<your-token>``, ``${DB_PASSWORD}``) and prose
about passwords ("the password reset flow").

Placeholder rule (documented in docs/security.md): a candidate value is *not* a secret when it is
empty, starts with ``$``, ``%``, ``<``, ``{{`` or ``[REDACTED``, contains ``example``, ``your``,
``placeholder``, ``dummy``, ``changeme``, ``replace_me``, ``redacted``, ``...`` or ``…``, is at
least a third a run of 6 or more identical characters (``sk-xxxxxxxxxxxx``), is a bare placeholder
word (``password``, ``secret``, ``token``, ``pass``, ``none``, ``null``, ``true``, ``false``,
``***``), or uses at most 4 distinct characters. An unquoted assignment value that names where
the secret comes from in code (``os.environ["X"]``, ``getenv(``, ``settings.SECRET_KEY``) is kept.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

MARK = "[REDACTED:{kind}]"

_PLACEHOLDER_WORDS = ("example", "your", "placeholder", "dummy", "changeme", "change_me", "change-me", "redacted", "...",
                      "…", "sample", "fake", "lorem", "replace_me", "replaceme", "replace-me", "replace_with",
                      "replace-with", "insert_", "insert-")
_BARE_PLACEHOLDERS = frozenset({
    "password", "passwd", "pass", "secret", "token", "apikey", "api_key", "key", "none", "null", "nil", "true",
    "false", "yes", "no", "on", "off", "undefined", "empty", "required", "optional", "string", "value", "xxx",
    "***", "****", "*****", "hunter2example", "test", "testing", "todo", "tbd", "n/a", "na",
})
_RUN = re.compile(r"(.)\1{5,}")
_PLACEHOLDER_WORD = re.compile("|".join(rf"(?<![a-z]){re.escape(w)}(?![a-z])" for w in _PLACEHOLDER_WORDS))


def looks_placeholder(value: str) -> bool:
    """True for values that document a secret's shape without being one."""
    v = value.strip().strip("\"'`")
    if not v:
        return True
    low = v.lower()
    if low.startswith(("$", "%", "<", "{{", "[redacted", "${", "#")):
        return True
    if low in _BARE_PLACEHOLDERS:
        return True
    if len(v) < 64:
        if any(w in low for w in _PLACEHOLDER_WORDS):
            return True
    elif _PLACEHOLDER_WORD.search(low):
        # a long random token holds "your" or "fake" now and then (about 1 in 2,500 of 200
        # characters): there the word must stand apart from the letters around it
        return True
    run = max((len(m.group(0)) for m in _RUN.finditer(v)), default=0)
    if run and 3 * run >= len(v):
        # sk-xxxxxxxxxxxxxxxx masks a key; a long real token may hold a run of its own (Fly.io's
        # macaroons begin fm2_lJPECAAAAAAAA…), so the run must be a large part of the value.
        return True
    return len(set(v)) <= 4


@dataclass(frozen=True)
class Finding:
    kind: str
    start: int
    end: int  # the span replaced by the marker


# -- rules ---------------------------------------------------------------------------------------------
# (kind, pattern, group of the secret part (0 = whole match), extra check on the secret part)
Rule = tuple[str, "re.Pattern[str]", int, Callable[[str], bool]]


def _has_digit_and_letter(s: str) -> bool:
    return any(c.isdigit() for c in s) and any(c.isalpha() for c in s)


def _always(_: str) -> bool:
    return True


# A whole block; a block pasted without its END line runs to the last base64 line.
_PRIVATE_KEY = re.compile(
    r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
    # (JSON, as in a GCP service-account file, writes the line breaks as the two characters \n)
    r"(?:.{0,16384}?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|(?:[ \t]*(?:\r?\n|\\n)?[ \t]*[A-Za-z0-9+/=]{4,})*)",
    re.S,
)

RULES: list[Rule] = [
    # Anthropic before OpenAI: both start with sk-.
    ("anthropic_key", re.compile(r"(?<![\w-])sk-ant-[A-Za-z0-9_-]{20,}"), 0, _has_digit_and_letter),
    ("openai_key", re.compile(r"(?<![\w-])sk-(?!ant-)(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_-]{20,}"), 0,
     _has_digit_and_letter),
    ("github_token", re.compile(r"(?<![\w])(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})"), 0,
     _always),
    ("aws_access_key_id", re.compile(r"(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}(?![A-Za-z0-9])"), 0,
     _always),
    ("aws_secret_access_key",
     re.compile(r"(?i)aws.{0,24}?secret.{0,24}?[=:\s\"']+([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])"), 1,
     _has_digit_and_letter),
    ("slack_token", re.compile(r"(?<![\w-])xox[abposr]-[A-Za-z0-9-]{10,}"), 0, _has_digit_and_letter),
    ("slack_webhook", re.compile(r"https://hooks\.slack\.com/services/[A-Za-z0-9/_-]{20,}"), 0, _always),
    ("stripe_key", re.compile(r"(?<![\w])(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}"), 0, _has_digit_and_letter),
    ("google_api_key", re.compile(r"(?<![\w-])AIza[0-9A-Za-z_-]{35}(?![\w-])"), 0, _always),
    ("jwt", re.compile(r"(?<![\w-])eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"), 0, _always),
    ("private_key", _PRIVATE_KEY, 0, _always),
    ("bearer_token", re.compile(r"(?i)\bbearer\s+([A-Za-z0-9._~+/-]{16,}=*)"), 1, _has_digit_and_letter),
    ("basic_auth", re.compile(r"(?i)\bauthorization\s*:\s*basic\s+([A-Za-z0-9+/]{8,}={0,2})"), 1, _always),
    ("url_password", re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]{1,20}://[^\s:/@]{1,128}:([^\s/@]{1,256})@[\w.-]"), 1, _always),
    # Provider token formats below follow what the providers document and what public rule sets
    # (gitleaks, detect-secrets) know of them; the patterns are our own. A prefix, then a body
    # long enough that prose never matches; documentation placeholders are caught by looks_placeholder.
    # Fly.io: "FlyV1 fm2_…,fm2_…" (macaroons joined by commas) takes everything after FlyV1 with it.
    ("flyio_token", re.compile(
        r"\bFlyV1[ \t]+[A-Za-z0-9_+/=,.-]{16,}"
        r"|(?<![\w-])(?:fm1[ar]|fm2)_[A-Za-z0-9+/]{40,}={0,3}(?:,(?:fm1[ar]|fm2)_[A-Za-z0-9+/]{20,}={0,3})*"
        r"|(?<![\w-])fo1_[\w-]{30,}"), 0, _always),
    # GitLab: personal, project, group, deploy, runner, CI job, feed, mail, agent, OAuth, SCIM tokens;
    # the newer "routable" ones add dotted parts. GR1348941… is a runner registration token.
    ("gitlab_token", re.compile(
        r"(?<![\w-])(?:glpat|glptt|gldt|glrt|glcbt|glft|glimt|glagent|gloas|glsoat|glffct)-[A-Za-z0-9_-]{20,}"
        r"(?:\.[A-Za-z0-9_-]+)*|(?<![\w-])GR1348941[A-Za-z0-9_-]{20,}"), 0, _always),
    ("npm_token", re.compile(r"(?<![\w-])npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])"), 0, _has_digit_and_letter),
    # PyPI API tokens are macaroons whose base64 starts with the same header (pypi.org and TestPyPI).
    ("pypi_token", re.compile(r"(?<![\w-])pypi-AgE[A-Za-z0-9_-]{50,}"), 0, _always),
    # Azure: storage-account and Service Bus keys in connection strings, SAS signatures in URLs,
    # Entra ID (Azure AD) client secrets (three characters, a digit, "Q~", then 31-34 more).
    ("azure_storage_key", re.compile(r"(?i)\b(?:AccountKey|SharedAccessKey)[ \t]*=[ \t]*([A-Za-z0-9+/]{30,}={0,2})"), 1,
     _has_digit_and_letter),
    ("azure_sas_signature", re.compile(r"[?&;]sig=([A-Za-z0-9%+/]{30,}(?:%3D|=){0,2})"), 1, _has_digit_and_letter),
    ("azure_client_secret", re.compile(r"(?<![\w~.-])[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.-]{31,34}(?![\w~.-])"), 0,
     _always),
    ("huggingface_token", re.compile(r"(?<![\w-])(?:hf|api_org)_[A-Za-z]{34}(?![A-Za-z0-9])"), 0, _always),
    ("sendgrid_key", re.compile(r"(?<![\w.-])SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}(?![\w-])"), 0, _always),
    ("digitalocean_token", re.compile(r"(?<![\w-])do[opr]_v1_[a-f0-9]{64}(?![a-f0-9])"), 0, _always),
    ("dockerhub_token", re.compile(r"(?<![\w-])dckr_pat_[A-Za-z0-9_-]{27,}"), 0, _always),
    ("vault_token", re.compile(r"(?<![\w.-])hv[sb]\.[A-Za-z0-9_-]{24,}"), 0, _has_digit_and_letter),
    ("shopify_token", re.compile(r"(?<![\w-])shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}(?![a-fA-F0-9])"), 0, _always),
    ("stripe_webhook_secret", re.compile(r"(?<![\w-])whsec_[A-Za-z0-9+/]{24,}"), 0, _has_digit_and_letter),
]


# KEY=value / KEY: value where the key names a secret.
_ASSIGN = re.compile(
    r"""(?x)
    (?P<q>["']?)(?P<key>[A-Za-z_][A-Za-z0-9_.-]{0,80})(?P=q)   # the key, maybe quoted (JSON / YAML)
    [ \t]*(?P<sep>:=|=|:)[ \t]*
    (?P<val>"[^"\n]{1,512}"|'[^'\n]{1,512}'|[^\s"',;)}\]]{1,512})
    """
)
# ("tokens", plural, is left out: in agent notes it counts LLM tokens, as in max_tokens=…)
_SECRET_WORDS = frozenset({"password", "passwd", "pass", "passphrase", "pwd", "secret", "secrets", "token",
                           "apikey", "credential", "credentials", "privatekey", "secretkey"})
_PASSWORD_WORDS = frozenset({"password", "passwd", "pass", "passphrase", "pwd"})
_SECRET_PAIRS = frozenset({("api", "key"), ("access", "key"), ("private", "key"), ("client", "secret"), ("auth", "key"),
                           ("signing", "key"), ("encryption", "key"), ("secret", "key"), ("master", "key"),
                           ("session", "key"), ("app", "secret"), ("auth", "token"), ("access", "token"),
                           ("refresh", "token")})
# A key ending in one of these names a property of a secret, not the secret itself.
_NOT_SECRET_TAIL = frozenset({"url", "uri", "endpoint", "host", "expiry", "expires", "expiration", "ttl", "length",
                              "len", "min", "max", "file", "path", "dir", "name", "id", "type", "policy", "reset",
                              "hint", "prompt", "field", "header", "env", "var", "count", "size", "timeout", "format",
                              "required", "enabled", "rotation", "version", "label", "mode", "strength", "hash",
                              "ids", "counts", "limit", "budget", "usage", "used", "remaining"})
# A key starting with one of these names a count or a tokenizer's special token: max_tokens,
# pad_token, id-token (a CI permission; an OIDC id_token's value is caught as a JWT).
_NOT_SECRET_HEAD = frozenset({"max", "min", "num", "n", "total", "pad", "unk", "bos", "eos", "cls", "sep", "mask", "id",
                              "input", "output", "prompt", "completion", "served", "matched", "stored", "cached"})
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def _key_parts(key: str) -> list[str]:
    return [p for p in re.split(r"[_.\-\s]+", _CAMEL.sub("_", key).lower()) if p]


_ENV_NAME = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\Z")


def _names_itself(key: str, val: str) -> bool:
    """tokens_matched=matched, redact_secrets=redact_secrets: the value is the key's own name."""
    low = val.lower().rstrip(".:")
    parts = _key_parts(key)
    return low == key.lower() or (bool(parts) and low in (parts[-1], "_".join(parts)))


def key_names_secret(key: str) -> bool:
    """True when an assignment's key names a credential: DB_PASSWORD, apiKey, "client_secret"."""
    parts = _key_parts(key)
    if not parts or parts[-1] in _NOT_SECRET_TAIL or (len(parts) > 1 and parts[0] in _NOT_SECRET_HEAD):
        return False
    if any(p in _SECRET_WORDS for p in parts):
        return True
    return any((a, b) in _SECRET_PAIRS for a, b in zip(parts, parts[1:]))


# An unquoted value that names where the secret comes from, in code: a call or subscript
# (getenv(, os.environ[, Optional[str), or a dotted name without digits (settings.SECRET_KEY).
_CODE_REFERENCE = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*[(\[]|[A-Za-z_$][A-Za-z_$]*(?:\.[A-Za-z_$][A-Za-z_$]*)+\Z")


_SCHEMES = frozenset({"flyv1", "bearer", "basic"})
_NEXT_WORD = re.compile(r"[ \t]+([^\s\"',;)}\]]{1,512})")


def _assignment_findings(text: str) -> list[Finding]:
    out: list[Finding] = []
    for m in _ASSIGN.finditer(text):
        key, sep, raw = m.group("key"), m.group("sep"), m.group("val")
        if not key_names_secret(key):
            continue
        quoted = raw[:1] in "\"'"
        val = raw[1:-1] if quoted and len(raw) >= 2 and raw[-1] == raw[0] else raw
        start = m.start("val") + (1 if quoted else 0)
        if not quoted and val.lower() in _SCHEMES:
            # FLY_API_TOKEN=FlyV1 <token>, AUTH=Bearer <token>: the secret is the word after the scheme
            nxt = _NEXT_WORD.match(text, m.end("val"))
            if nxt is None:
                continue
            val, start = nxt.group(1), nxt.start(1)
        if looks_placeholder(val) or val.startswith("[REDACTED"):
            continue
        if not quoted and (_CODE_REFERENCE.match(val.lstrip("`")) or val[:1] in "[(" or _names_itself(key, val)):
            # password = os.environ["DB_PASSWORD"], apiKey: process.env.API_KEY, token: Optional[str],
            # secrets: [docs](security.md), redact_secrets=redact_secrets (a keyword argument passed on)
            continue
        if _ENV_NAME.match(val):
            continue  # "api_key": "OPENAI_API_KEY": the name of the variable that holds it
        if val.isdigit() and len(val) <= 6 and not _PASSWORD_WORDS.intersection(_key_parts(key)):
            continue  # "token": 19204 (a vocabulary id), a count
        if sep == ":" and not (quoted or m.group("q") or key.isupper()):
            # Prose ("Password: must be 12 characters", "Second pass: superseded_by pointers") vs YAML
            # ("password: hunter2"): an unquoted value after a lower-case key counts only when it
            # looks like a credential: a digit, both cases, or a symbol other than _ and -.
            if len(val) < 6 or not (any(c.isdigit() or not (c.isalnum() or c in "_-") for c in val)
                                    or (any(c.islower() for c in val) and any(c.isupper() for c in val))):
                continue
        out.append(Finding("env_secret", start, start + len(val)))
    return out


# -- secrets in sentences ----------------------------------------------------------------------------------
# "The staging DB password is hunter2hunter2", "Use API key 7f3a…", "log in with admin / Xk9#…": how
# people write a credential in chat (a new user's trial). A word naming a credential, maybe a place
# ("for Grafana", "of the staging DB"), a connector (is, was, :, =, as, set to), then the value; or
# a high-entropy token right after the word; or <user> / <password> after a login word. Only the
# value is replaced, so the sentence still reads ("the DB password is [REDACTED:prose_secret]").
_PROSE_WORD = (r"(?:pass(?:word|phrase|wd)|pwd|secret|token"
               r"|(?:api|access|secret|private|signing|encryption|master|license|licence|auth)[ _-]?key|apikey)")
_PROSE_PLACE = r"(?:[ \t]+(?:for|of|on|to|in|at)(?:[ \t]+[\w.@'-]+){1,4}?)"
_PROSE_LINK = (r"(?:[ \t]*(?::=|=|:|->)[ \t]*"
               r"|[ \t]+(?:is|was)(?:[ \t]+(?:now|still|currently|just|(?:set|changed|reset)[ \t]+to))?[ \t]*:?[ \t]+"
               r"|[ \t]+(?:as|(?:set|changed|reset)[ \t]+to)[ \t]+)")
_PROSE_VALUE = r"(?P<val>\"[^\"\n]{1,200}\"|'[^'\n]{1,200}'|`[^`\n]{1,200}`|[^\s\"'`<>]{1,256})"
_PROSE_NAMED = re.compile(rf"(?i)(?<![\w-]){_PROSE_WORD}(?![\w-])(?P<place>{_PROSE_PLACE})??{_PROSE_LINK}{_PROSE_VALUE}")
# "Set the password to Passw0rd!234" (a bare "to" after the word is a place: "the password to the panel is …")
_PROSE_SET_TO = re.compile(rf"(?i)(?<![\w-])(?:set|change|reset|update)[ \t]+(?:(?:the|my|our|a)[ \t]+)?(?:[\w-]+[ \t]+){{0,2}}?"
                           rf"{_PROSE_WORD}(?![\w-])[ \t]+to[ \t]+{_PROSE_VALUE}")
_PROSE_NEXT = re.compile(rf"(?i)(?<![\w-]){_PROSE_WORD}(?![\w-])[ \t]+(?P<val>[^\s\"'`<>]{{8,256}})")
# "Use Xk9#mP2$vL7q as the admin password"
_PROSE_AS = re.compile(rf"(?i)(?<![^\s\"'`(])(?P<val>[^\s\"'`<>]{{6,256}})[ \t]+as[ \t]+(?:(?:the|my|our|a|an)[ \t]+)?"
                       rf"(?:[\w-]+[ \t]+){{0,2}}?{_PROSE_WORD}(?![\w-])(?:[ \t]+(?P<after>[\w-]+))?")
# "Log in to the router with admin / Xk9#…", "credentials: deploy/D3pl0y!Key", "login root:Tr0ub…"
_PROSE_PAIR = re.compile(
    r"(?i)(?<![\w-])(?:log(?:ged)?[ \t]?in|log[ \t]?on|sign(?:ed)?[ \t]?in|credentials?|creds)(?![\w-])[^.!?\n]{0,60}?"
    r"(?<![\w/.:@~+-])[A-Za-z][\w.@+-]{1,63}(?:[ \t]*/[ \t]*|:)(?P<val>[^\s\"'`<>/]{6,128})")
# "my password: correct horse battery staple": a passphrase of plain words, which no shape rule
# sees (a new user's trial). Three to six lower-case words ending the sentence, after "password" or
# "passphrase" with its owner and a colon or "is"; none of them a word prose puts there ("the
# password is stored in the vault", "our password is never logged", "the password is required").
_PROSE_PASSPHRASE = re.compile(
    r"(?i)(?<![\w-])(?:my|our|the|his|her|their|your)[ \t]+(?:[\w-]+[ \t]+){0,2}?pass(?:word|phrase)(?![\w-])"
    r"[ \t]*(?::|[ \t]is:?)[ \t]+(?P<val>(?-i:[a-z]{2,12}(?:[ \t]+[a-z]{2,12}){2,5}))(?=[ \t]*(?:[.;,!?\n]|$)|[ \t]+(?:and|but)(?![\w-]))")
_PROSE_WORDING = frozenset("""
a an the of to in on at for with by as from and or but not no never always only also just still now then so too very
is are be been being was were must should can could will would may might shall has have had do does did
required needed stored kept saved used set changed reset rotated logged shown sent shared hashed encrypted expired
every each all any some this that these those there here when where which who whom how why what
""".split())
_AS_FOLLOWERS = frozenset({"", "for", "of", "on", "in", "to", "at", "and", "with", "from", "here", "there", "now", "please",
                           "too", "then", "instead", "until", "so", "but"})
_PROSE_LITERALS = ("pass", "pwd", "secret", "token", "key", "log", "sign", "cred")
_PUNCT_END = ".,;:?)]}"
_SYMBOLS = frozenset("!#$%&*+=?@^~|\\/")
# Words and shapes that follow a credential word in ordinary prose: algorithms, versions, dates,
# sizes and compounds ("HS256-signed", "2048-bit", "base64-encoded", "3600s", "2024-05-01").
_NOT_A_VALUE = re.compile(
    r"(?i)(?:sha-?\d+|md5|[hrep]s\d{3}|aes-?\d*|rsa-?\d*|ed25519|x25519|argon2\w*|pbkdf2\w*|base\d+|utf-?\d+|x\.?509|"
    r"crc\d+|blake\d\w*|cl\d+k\w*|v?\d+(?:\.\d+)+\w*|v\d+|\d+(?:[a-z]{1,5})?|\d+-[a-z]+|(?-i:[A-Za-z\d]+(?:-[a-z]{2,})+)"
    r"|\d[\d:.tTzZ+-]*|[\w-]*(?:\.[A-Za-z_]\w*)+\(?\)?)")
_LETTER_WORD = re.compile(r"[A-Z]?[a-z]{4,}|[A-Z]{4,}(?![a-z])")


def _word_share(v: str) -> float:
    """How much of ``v`` is made of letter runs of four or more (words, not random characters)."""
    return sum(len(m.group(0)) for m in _LETTER_WORD.finditer(v)) / len(v)


def _credential_like(v: str, quoted: bool) -> bool:
    """A value after "password is": quoted, or with a digit or a symbol, and not an ordinary word or shape."""
    if looks_placeholder(v) or "[REDACTED" in v.upper() or _ENV_NAME.match(v) or _CODE_REFERENCE.match(v):
        return False
    if quoted:
        return len(v) >= 4
    if len(v) < 6 or not v[0].isalnum() or "://" in v or _NOT_A_VALUE.fullmatch(v):
        return False
    return any(c.isdigit() for c in v) or any(c in _SYMBOLS for c in v)


def _high_entropy(v: str, password_word: bool) -> bool:
    """A value right after the word, with no "is": it must look random (digits among letters, few words)."""
    if not _credential_like(v, quoted=False) or not (any(c.isdigit() for c in v) and any(c.isalpha() for c in v)):
        return False
    if password_word:
        return _word_share(v) <= 0.5 or any(c in _SYMBOLS for c in v)
    return len(v) >= 16 and _word_share(v) <= 0.4


def _trim(text: str, start: int, raw: str) -> tuple[int, int, bool] | None:
    """The value's span without its quotes or the sentence's closing punctuation; whether it was quoted."""
    if raw[:1] in "\"'`" and len(raw) >= 2 and raw[-1] == raw[0]:
        return start + 1, start + len(raw) - 1, True
    end = start + len(raw)
    while end > start and text[end - 1] in _PUNCT_END:
        end -= 1
    return (start, end, False) if end > start else None


def _prose_findings(text: str) -> list[Finding]:
    out: list[Finding] = []

    def keep(m: re.Match[str], strict: bool | None) -> None:
        span = _trim(text, m.start("val"), m.group("val"))
        if span is None:
            return
        start, end, quoted = span
        val = text[start:end]
        word = text[m.start() : m.start("val")].lower()
        ok = (_credential_like(val, quoted) if strict is None
              else not quoted and _high_entropy(val, any(w in word for w in ("pass", "pwd"))))
        if ok:
            out.append(Finding("prose_secret", start, end))

    for m in _PROSE_NAMED.finditer(text):
        keep(m, None)
    for m in _PROSE_SET_TO.finditer(text):
        keep(m, None)
    for m in _PROSE_NEXT.finditer(text):
        keep(m, True)
    for m in _PROSE_AS.finditer(text):
        if (m.group("after") or "").lower() in _AS_FOLLOWERS:  # not "as the password hash", "… key algorithm"
            keep(m, None)
    for m in _PROSE_PAIR.finditer(text):
        keep(m, None)
    for m in _PROSE_PASSPHRASE.finditer(text):
        said = m.group("val").lower().split()
        if not any(w in _PROSE_WORDING or w.endswith(("ed", "ly", "ing")) for w in said):
            out.append(Finding("prose_secret", m.start("val"), m.end("val")))
    return out


def _may_be_prose(screen: Screen) -> bool:
    return screen.has(_PROSE_LITERALS, True)


# -- prescreens ------------------------------------------------------------------------------------------
# Every write runs every rule over its text, so each rule first asks for a literal that any
# match of its pattern must contain (a plain substring test, far cheaper than a regex scan).
# A rule whose literals are all absent cannot match: skipping it changes no finding
# (tests/core/test_write_path.py compares with the unscreened scan). (literals, case-insensitive)
_NEEDS: dict[str, tuple[tuple[str, ...], bool]] = {
    "anthropic_key": (("sk-ant-",), False),
    "openai_key": (("sk-",), False),
    "github_token": (("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"), False),
    "aws_access_key_id": (("AKIA", "ASIA", "ABIA", "ACCA"), False),
    "aws_secret_access_key": (("aws",), True),
    "slack_token": (("xox",), False),
    "slack_webhook": (("https://hooks.slack.com/services/",), False),
    "stripe_key": (("_live_", "_test_"), False),
    "google_api_key": (("AIza",), False),
    "jwt": (("eyJ",), False),
    "private_key": (("-----BEGIN ",), False),
    "bearer_token": (("bearer",), True),
    "basic_auth": (("authorization",), True),
    "url_password": (("://",), False),
    "flyio_token": (("FlyV1", "fm1a_", "fm1r_", "fm2_", "fo1_"), False),
    "gitlab_token": (("glpat-", "glptt-", "gldt-", "glrt-", "glcbt-", "glft-", "glimt-", "glagent-", "gloas-", "glsoat-",
                      "glffct-", "GR1348941"), False),
    "npm_token": (("npm_",), False),
    "pypi_token": (("pypi-AgE",), False),
    "azure_storage_key": (("accountkey", "sharedaccesskey"), True),
    "azure_sas_signature": (("sig=",), False),
    "azure_client_secret": (("Q~",), False),
    "huggingface_token": (("hf_", "api_org_"), False),
    "sendgrid_key": (("SG.",), False),
    "digitalocean_token": (("_v1_",), False),
    "dockerhub_token": (("dckr_pat_",), False),
    "vault_token": (("hvs.", "hvb."), False),
    "shopify_token": (("shpat_", "shpca_", "shppa_", "shpss_"), False),
    "stripe_webhook_secret": (("whsec_",), False),
}
# An assignment counts only when its (ASCII) key names a secret, and every such key contains
# one of these (see _SECRET_WORDS and _SECRET_PAIRS).
_KEY_PARTS = ("pass", "pwd", "secret", "token", "key", "credential")


# The only characters above U+007F that re.IGNORECASE matches to an ASCII character, or whose
# lower case holds one: İ ı ſ K (tests/core/test_write_path.py recomputes this on the running Python).
FOLDS_TO_ASCII = "\u0130\u0131\u017f\u212a"


class Screen:
    """Literal tests on one text. Case-insensitive ones look in the lower-cased text, which
    is exact unless the text holds one of FOLDS_TO_ASCII (re.IGNORECASE matches ſ to s and K
    to k); such text is searched with re.IGNORECASE itself."""

    __slots__ = ("text", "ascii", "plain", "_low")

    def __init__(self, text: str):
        self.text = text
        self.ascii = text.isascii()
        self.plain = self.ascii or not any(c in text for c in FOLDS_TO_ASCII)
        self._low: str | None = None

    @property
    def low(self) -> str:
        if self._low is None:
            self._low = self.text.lower()
        return self._low

    def has(self, literals: tuple[str, ...], ignore_case: bool = False) -> bool:
        if not ignore_case:
            text = self.text
            return any(lit in text for lit in literals)
        if self.plain:
            low = self.low
            return any(lit in low for lit in literals)
        return _ci_pattern(literals).search(self.text) is not None


    def has_any(self, literals: "Literals") -> bool:
        """has() for many literals at once (one regex pass instead of one search each)."""
        if self.plain:
            return literals.lower_pattern.search(self.low) is not None
        return literals.ci_pattern.search(self.text) is not None


def literal_pattern(literals, flags: int = 0) -> "re.Pattern[str]":
    """A regex matching any of ``literals``, as a trie (a(?:bc|x)) so that the regex engine
    tries each position once instead of once per literal."""
    trie: dict = {}
    for lit in literals:
        node = trie
        for ch in lit:
            node = node.setdefault(ch, {})
        node[""] = {}

    def build(node: dict) -> str:
        alts = [re.escape(ch) + build(node[ch]) for ch in sorted(k for k in node if k)]
        if not alts:
            return ""
        body = alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"
        return f"(?:{body})?" if "" in node else body

    return re.compile(build(trie) or "(?!)", flags)


class Literals:
    """A set of case-insensitive literals for Screen.has_any."""

    def __init__(self, literals):
        self.literals = tuple(dict.fromkeys(literals))
        self.lower_pattern = literal_pattern(self.literals)
        self.ci_pattern = literal_pattern(self.literals, re.IGNORECASE)


_CI_PATTERNS: dict[tuple[str, ...], "re.Pattern[str]"] = {}


def _ci_pattern(literals: tuple[str, ...]) -> "re.Pattern[str]":
    pat = _CI_PATTERNS.get(literals)
    if pat is None:
        pat = _CI_PATTERNS[literals] = re.compile("|".join(map(re.escape, literals)), re.IGNORECASE)
    return pat


_ANY_CS = literal_pattern(lit for lits, ci in _NEEDS.values() if not ci for lit in lits)
_ANY_CI = Literals(lit for lits, ci in _NEEDS.values() if ci for lit in lits)
_ALL_SCREENED = all(kind in _NEEDS for kind, *_ in RULES)  # a rule added without literals disables the shortcut


def _may_assign(screen: Screen) -> bool:
    text = screen.text
    return ("=" in text or ":" in text) and any(part in screen.low for part in _KEY_PARTS)


def may_hold_secrets(text: str) -> bool:
    """False when no rule can match ``text`` (nor any part of it, if it joins several)."""
    if not _ALL_SCREENED:
        return True
    screen = Screen(text)
    return _ANY_CS.search(text) is not None or screen.has_any(_ANY_CI) or _may_assign(screen) or _may_be_prose(screen)


_LATE_KINDS = {"env_secret": 1, "prose_secret": 2}


def find_secrets(text: str) -> list[Finding]:
    """Non-overlapping findings, in text order."""
    return _find(text, screened=True)


def _find(text: str, screened: bool) -> list[Finding]:
    if not text:
        return []
    screen = Screen(text) if screened else None
    if (screen is not None and _ALL_SCREENED and _ANY_CS.search(text) is None and not screen.has_any(_ANY_CI)
            and not _may_assign(screen) and not _may_be_prose(screen)):
        return []  # the common case: no rule can match
    found: list[Finding] = []
    for kind, pattern, group, check in RULES:
        if screen is not None:
            needs = _NEEDS.get(kind)
            if needs is not None and not screen.has(*needs):
                continue
        for m in pattern.finditer(text):
            secret = m.group(group)
            if not secret or looks_placeholder(secret) or not check(secret):
                continue
            found.append(Finding(kind, m.start(group), m.end(group)))
    if screen is None or _may_assign(screen):
        found.extend(_assignment_findings(text))
    if screen is None or _may_be_prose(screen):
        found.extend(_prose_findings(text))
    # Earliest first; at one start a named format before a KEY=value finding before a sentence's, then the longest.
    # Overlapping spans are merged, so no part of a secret that two rules saw differently stays
    # behind (FLY_API_TOKEN=FlyV1 fm2_…: the assignment sees "FlyV1", the Fly rule the body).
    found.sort(key=lambda f: (f.start, _LATE_KINDS.get(f.kind, 0), -(f.end - f.start)))
    kept: list[Finding] = []
    for f in found:
        if kept and f.start < kept[-1].end:
            if f.end > kept[-1].end:
                kept[-1] = Finding(kept[-1].kind, kept[-1].start, f.end)
            continue
        kept.append(f)
    return kept


def redact_text(text: str) -> tuple[str, list[str]]:
    """``text`` with every secret replaced by ``[REDACTED:kind]``, and the kinds found."""
    findings = find_secrets(text)
    if not findings:
        return text, []
    parts: list[str] = []
    pos = 0
    for f in findings:
        parts.append(text[pos : f.start])
        parts.append(MARK.format(kind=f.kind))
        pos = f.end
    parts.append(text[pos:])
    return "".join(parts), [f.kind for f in findings]


def redact_value(value: Any, kinds: list[str], key: str | None = None) -> Any:
    """Redact every string inside a JSON value; a string under a key that names a secret
    (``{"password": "..."}``) is redacted whole."""
    if isinstance(value, str):
        if key is not None and key_names_secret(key) and not looks_placeholder(value) and not value.startswith("[REDACTED"):
            kinds.append("named_secret")
            return MARK.format(kind="named_secret")
        text, found = redact_text(value)
        kinds.extend(found)
        return text
    if isinstance(value, dict):
        return {k: redact_value(v, kinds, k if isinstance(k, str) else None) for k, v in value.items()}
    if isinstance(value, list):
        if all(isinstance(v, str) for v in value) and not may_hold_secrets("\n".join(value)):
            return list(value)  # (tags, mostly) one screen for the list: a literal of an item is one of the join
        return [redact_value(v, kinds) for v in value]
    return value


__all__ = ["Finding", "Screen", "Literals", "literal_pattern", "may_hold_secrets", "RULES", "find_secrets", "redact_text", "redact_value", "looks_placeholder", "key_names_secret", "MARK"]
