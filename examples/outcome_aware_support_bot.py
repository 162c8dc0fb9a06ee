"""Outcome-aware: a support bot whose answers get better as tickets succeed or fail.

Two fixes for "VPN keeps disconnecting" look alike; only one works. Each ticket, the bot
uses the top fix and reports the outcome. Watch the working fix take the top slot. The bot names
the job (``task="vpn drops"``): outcomes under one name count for each other however a ticket is worded.

Run: python examples/outcome_aware_support_bot.py
"""

from recallite_core import Recallite

mem = Recallite.open(None)  # in-memory store, default (MiniLM) embedder
wrong = mem.remember(type="procedure", title="VPN drops: reinstall the client",
                     content="If the VPN keeps disconnecting, uninstall and reinstall the VPN client.")
right = mem.remember(type="procedure", title="VPN drops: lower the MTU",
                     content="If the VPN keeps disconnecting, set the tunnel MTU to 1380 in the client settings.")
mem.remember(type="fact", content="The VPN gateway is vpn.corp.example and uses WireGuard.")

tickets = ["VPN keeps disconnecting every few minutes", "my vpn connection drops constantly",
           "VPN disconnects when I join a video call", "the VPN keeps dropping on hotel wifi",
           "VPN disconnecting again after the update"]
for n, ticket in enumerate(tickets, 1):
    r = mem.recall(ticket, limit=3, types=["procedure"], task="vpn drops")
    used = r.memories[0].memory
    solved = used.id == right.id
    mem.feedback(r.retrieval_id, "success" if solved else "failure", used_memory_ids=[used.id])
    print(f"ticket {n}: {ticket!r}\n   tried {used.title!r} -> {'solved' if solved else 'NOT solved'}")
    if not solved:  # the human agent escalates and the other fix works
        mem.feedback(r.retrieval_id, "success", used_memory_ids=[right.id])

final = mem.recall("VPN keeps disconnecting", limit=2, types=["procedure"], task="vpn drops")
print("\nranking now:")
for h in final.memories:
    print(f"  {h.rank}. {h.memory.title}  usefulness={h.memory.usefulness:.2f}  reasons={h.reasons}")
mem.close()
