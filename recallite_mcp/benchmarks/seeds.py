"""Runs over several seeds: the ``--seeds`` option of the benchmarks, and the means they print."""

from __future__ import annotations

import argparse


def seed_list(text: str) -> list[int]:
    """argparse type of ``--seeds``: whole numbers separated by commas."""
    try:
        seeds = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--seeds takes whole numbers separated by commas, got {text!r}") from None
    if not seeds:
        raise argparse.ArgumentTypeError("--seeds needs at least one seed, e.g. --seeds 7,8,9")
    return seeds


__all__ = ["seed_list"]
