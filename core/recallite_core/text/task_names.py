"""Task names: the caller's own name for the kind of job it is doing ("deploy staging"), as a key.

Names are compared as keys: lower case, punctuation, small words, plural s and word order ignored
("Deploy to staging" = "staging deploys"), so an agent that reuses its names gets one key every
time. What a key does to learning: learner.OutcomeModel.named (the outcomes logged under one name
count as this very task whatever their words).
"""

from __future__ import annotations

import re

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
    words = [w for w in _WORD.findall(name.lower()) if w not in STOPWORDS]
    key = " ".join(sorted({_singular(w) for w in words}))
    if not key:
        raise InvalidInputError(f"task {name!r} has no words to tell it by: name the job, e.g. 'deploy staging'.")
    return key


def _singular(word: str) -> str:
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


__all__ = ["MAX_NAME_CHARS", "task_key"]
