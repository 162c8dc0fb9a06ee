"""Conversation memory: record turns over two sessions, ask a question whose answer sits in the
earlier session, and show where the answer came from.

Run: python examples/conversation_memory.py            (temporary database, default embedder)
     python examples/conversation_memory.py --embedder hash   (no model: keyword-like vectors)
"""

import argparse
import tempfile
from pathlib import Path

from recallite_core import Recallite

parser = argparse.ArgumentParser()
parser.add_argument("db", nargs="?", default=str(Path(tempfile.mkdtemp()) / "conversation.db"))
parser.add_argument("--embedder", default="default")
args = parser.parse_args()


def where(turn):
    ep = turn.episode
    return f"{ep.session}, turn {ep.seq} ({ep.role}, {ep.timestamp:%Y-%m-%d %H:%M})"


# Session 1, a week ago: the user talks about their new dog. The app records every turn verbatim.
with Recallite.open(args.db, embedder=args.embedder) as mem:
    turns = mem.record_turns([
        {"role": "user", "content": "Guess what, we adopted a retired racing greyhound last weekend!",
         "timestamp": "2025-03-01T10:00:00Z"},
        {"role": "assistant", "content": "Congratulations! What's the dog's name?", "timestamp": "2025-03-01T10:00:20Z"},
        {"role": "user", "content": "His name is Biscuit. He is six years old and sleeps most of the day. "
                                    "The shelter said he is scared of stairs, so we are teaching him slowly. "
                                    "He already loves the sofa more than we do.",
         "timestamp": "2025-03-01T10:01:00Z"},
        {"role": "assistant", "content": "Biscuit sounds lovely. Greyhounds are famous couch potatoes.",
         "timestamp": "2025-03-01T10:01:30Z"},
        {"role": "user", "content": "Also please remember I'm allergic to penicillin.", "timestamp": "2025-03-01T10:05:00Z"},
    ], session="session 1")
    # What the app (or an agent with recallite_remember) learned, with the turns it came from.
    mem.remember("The user's dog is a six-year-old retired racing greyhound named Biscuit.", type="fact",
                 cites=[turns[0].id, turns[2].id], category="pets")
    mem.remember("The user is allergic to penicillin.", type="fact", cites=[turns[4].id], category="health",
                 importance=0.9)
    print(f"session 1: recorded {len(turns)} turns in {args.db}")

# Session 2, today: a new process, the same file.
with Recallite.open(args.db, embedder=args.embedder) as mem:
    mem.record_turns([
        {"role": "user", "content": "I'm writing a birthday card for my dog.", "timestamp": "2025-03-08T18:00:00Z"},
        {"role": "assistant", "content": "How nice! What would you like it to say?", "timestamp": "2025-03-08T18:00:10Z"},
    ], session="session 2")
    question = "What is my dog's name again?"
    mem.record_turn("session 2", "user", question, timestamp="2025-03-08T18:01:00Z")
    print(f"\n>>> {question}\n")

    # What the agent puts in its prompt: this session's last turns, then what matters from before.
    ctx = mem.build_context(question, max_tokens=400, conversation="session 2", recent_turns=3)
    print(ctx.context)

    # The answer's memories, and why we believe them: the cited source turns.
    r = mem.recall(question, limit=3, types=["fact"], categories=["pets"])
    for hit in r.memories:
        print(f"answer memory {hit.memory.id}: {hit.memory.content}")
        print("  source turns:")
        for turn in mem.why(hit.memory.id):
            print(f"    [{where(turn)}] {turn.content}")

    # Raw turns can be found directly too: a hit comes back with its neighbouring turns, once.
    r = mem.recall("dog name Biscuit", limit=1, types=["episode"], expand_episodes=1)
    print("\nturns about it, with their neighbours:")
    for hit in r.memories:
        for turn in hit.window or [hit.memory]:
            mark = ">" if turn.id == hit.memory.id else " "
            print(f"  {mark} [{where(turn)}] {turn.content[:90]}")
