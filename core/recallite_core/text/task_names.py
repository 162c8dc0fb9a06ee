"""Task names: the caller's own name for the kind of job it is doing ("deploy staging"), as a key.

Names are compared as keys: case, accents, punctuation, small words, plurals and word order ignored
("Deploy to staging" = "staging deploys"), so an agent that reuses its names gets one key every
time. What a key does to learning: learner.OutcomeModel.named (the outcomes logged under one name
count as this very task whatever their words).
"""

from __future__ import annotations

import re
import unicodedata

from recallite_core.errors import InvalidInputError
from recallite_core.storage.fts import STOPWORDS

MAX_NAME_CHARS = 120
_WORD = re.compile(r"[^\W_]+")


def task_key(name: str) -> str:
    """The comparable form of a task name: its content words, singular, sorted, space-separated."""
    if not isinstance(name, str):
        raise InvalidInputError(f"task must be a short name of the job (a string), got {type(name).__name__}.")
    if len(name) > MAX_NAME_CHARS:
        raise InvalidInputError(f"task is a short name of the kind of job (at most {MAX_NAME_CHARS} characters, "
                                "e.g. 'deploy staging'); put the details in query.")
    folded = "".join(c for c in unicodedata.normalize("NFKD", name.casefold()) if not unicodedata.combining(c))
    words = {_singular(w) for w in _WORD.findall(folded)}
    key = " ".join(sorted(w for w in words if w not in STOPWORDS))
    if not key:
        raise InvalidInputError(f"task {name!r} has no words to tell it by: name the job, e.g. 'deploy staging'.")
    return key


def optional_key(task: str | None) -> str | None:
    """The key of an optional task name: None, "" and whitespace are no name."""
    return None if task is None or not str(task).strip() else task_key(task)


def written(task: str | None) -> str | None:
    """An optional task name as the caller wrote it (spaces collapsed), shown back in its own words;
    None for no name."""
    return None if optional_key(task) is None else " ".join(str(task).split())


def stored_key(key: object) -> str | None:
    """A key read back from an export: kept as it was written (keys are not normalised twice), if
    it is a short string; anything else is no name."""
    return key if isinstance(key, str) and 0 < len(key) <= MAX_NAME_CHARS else None


def key_or_none(name: str) -> str | None:
    """The key of a stored name, or None where it has none any more (no words left to tell it by)."""
    try:
        return task_key(name)
    except InvalidInputError:
        return None


def is_task_key(key: str) -> bool:
    """Whether ``key`` is its own key, so that passing it back names the same job (a key restored
    from an older export may not be)."""
    return key_or_none(key) == key


def _singular(word: str) -> str:
    if len(word) <= 3 or not word.endswith("s") or word.endswith(("ss", "us", "is")):
        return word
    if word.endswith(("sses", "ches", "shes", "xes")):
        return word[:-2]
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    return word[:-1]


__all__ = ["MAX_NAME_CHARS", "is_task_key", "key_or_none", "optional_key", "stored_key", "task_key", "written"]
