"""Lite: a personal chatbot that remembers its user across sessions.

Run: python examples/lite_chatbot.py   (uses a temporary database; pass a path to keep it)
"""

import sys
import tempfile
from pathlib import Path

from recallite_core import Recallite

db = sys.argv[1] if len(sys.argv) > 1 else str(Path(tempfile.mkdtemp()) / "chatbot.db")

# Session 1: the user tells the bot about themselves.
with Recallite.open(db) as mem:
    mem.add("User prefers dark mode UI.")
    mem.add("User's name is Priya and she lives in Lisbon.")
    mem.add("User is allergic to peanuts.", type="fact", importance=0.9)
    mem.add("User likes short answers with a code sample first.", type="preference")
    print(f"session 1 stored {mem.stats().memories} memories in {db}")

# Session 2, days later: a new process, the same file.
with Recallite.open(db) as mem:
    for question in ["What theme should the app use?", "Suggest a snack for the user", "Where does the user live?"]:
        print(f"\n>>> {question}")
        print(mem.context(question, max_tokens=120).strip())
