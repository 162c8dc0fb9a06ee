"""Which project scope is active, and why.

Rules, first match wins: the MCP client's roots (its workspace folders), then --scope /
RECALLITE_SCOPE, then the git repository of the working directory, then "default".
A folder becomes a scope name like ``myproj-1a2b3c4d``: the folder name for people, plus a
short hash (of the git remote URL when there is one, else of the absolute path) so two
checkouts of one repository share memories and two unrelated "app" folders do not.
"""

from __future__ import annotations

import configparser
import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

USER_SCOPE = "user"


@dataclass(frozen=True)
class ScopeDecision:
    scope: str
    rule: str  # roots | flag | env | git | default
    reason: str


def _slug(name: str) -> str:
    s = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-._").lower()
    return s[:60] or "project"


def find_git_root(start: Path) -> Path | None:
    for folder in [start, *start.parents]:
        if (folder / ".git").exists():
            return folder
    return None


def git_remote_url(root: Path) -> str | None:
    """The origin (or first) remote URL, read from .git/config without running git."""
    git = root / ".git"
    if git.is_file():  # worktree or submodule: "gitdir: <path>"
        text = git.read_text(errors="replace").strip()
        if text.startswith("gitdir:"):
            gitdir = (root / text[7:].strip()).resolve()
            common = gitdir / "commondir"
            git = (gitdir / common.read_text().strip()).resolve() if common.exists() else gitdir
    cfg = git / "config"
    if not cfg.is_file():
        return None
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    try:
        parser.read(cfg, encoding="utf-8")
    except (configparser.Error, UnicodeDecodeError):
        return None
    remotes = [s for s in parser.sections() if s.startswith('remote "')]
    remotes.sort(key=lambda s: s != 'remote "origin"')
    for section in remotes:
        url = parser.get(section, "url", fallback=None)
        if url:
            return url.strip()
    return None


def _normalise_remote(url: str) -> str:
    # git@github.com:org/repo.git and https://github.com/org/repo are one repository.
    u = url.strip().lower()
    u = re.sub(r"^[a-z+]+://", "", u)
    u = re.sub(r"^[^@/]+@", "", u)
    u = u.replace(":", "/")
    return u.removesuffix(".git").rstrip("/")


def scope_for_folder(folder: str | os.PathLike) -> tuple[str, str]:
    """(scope name, human reason) for a workspace folder."""
    path = Path(folder).expanduser().resolve()
    root = find_git_root(path)
    if root is not None:
        remote = git_remote_url(root)
        key = _normalise_remote(remote) if remote else str(root)
        digest = hashlib.sha1(key.encode()).hexdigest()[:8]
        why = f"git repository {root}" + (f" (remote {remote})" if remote else " (no remote: path hash)")
        return f"{_slug(root.name)}-{digest}", why
    digest = hashlib.sha1(str(path).encode()).hexdigest()[:8]
    return f"{_slug(path.name)}-{digest}", f"folder {path} (not a git repository: path hash)"


def root_uri_to_path(uri: str) -> str | None:
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    return unquote(parsed.path) or None


RULE = ("the client's first workspace root (a local folder), else --scope, else RECALLITE_SCOPE, else the git "
        "repository of the server's working directory, else 'default'")
DEFAULT_NOTE = ("No client root, --scope or git repository chose a project, so memories go to the shared scope "
                "'default'. To keep projects apart, open the project folder in the client, or start the server with "
                "--scope NAME (or from inside the project's git repository).")


def decide_scope(
    roots: list[str] | None, flag_scope: str | None, env_scope: str | None, cwd: str | None,
    roots_offered: bool = False,
) -> ScopeDecision:
    """The active project scope by RULE, first match wins, with the reason in words."""
    if roots:
        for uri in roots:
            path = root_uri_to_path(uri)
            if path:
                scope, why = scope_for_folder(path)
                extra = f" (first of {len(roots)} roots)" if len(roots) > 1 else ""
                return ScopeDecision(scope, "roots", f"client root {uri}{extra}: {why}")
    if roots:
        no_root = f"the client's roots are not local folders ({roots[0]})"
    elif roots is not None or roots_offered:
        no_root = "the client offers roots but has no folder open"
    else:
        no_root = "no client roots"
    if flag_scope:
        return ScopeDecision(flag_scope, "flag", f"--scope given ({no_root})")
    if env_scope:
        return ScopeDecision(env_scope, "env", f"RECALLITE_SCOPE set ({no_root})")
    if cwd:
        root = find_git_root(Path(cwd).resolve())
        if root is not None:
            scope, why = scope_for_folder(root)
            return ScopeDecision(scope, "git", f"working directory is in {why} ({no_root})")
    return ScopeDecision("default", "default",
                         f"{no_root}, no --scope or RECALLITE_SCOPE, and the working directory {cwd} is in no git repository")


# Memories about the person follow them into every project; everything else stays in the project.
USER_LEVEL_TYPES = frozenset({"preference"})


def level_for(memory_type: str, level: str | None = None) -> str:
    """'user' or 'project': the caller's choice, else the type's default."""
    if level in ("user", "project"):
        return level
    return "user" if memory_type in USER_LEVEL_TYPES else "project"
