"""`recallite-mcp eval chats`: see evalsets.py (the set, its dev and holdout parts, the report)."""

from __future__ import annotations

import sys

from .evalsets import main as _main


def main(argv: list[str] | None = None) -> int:
    return _main(argv, name="chats")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
