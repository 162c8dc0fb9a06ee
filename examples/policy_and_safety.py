"""Policy & safety: trust levels, candidates, contradiction warnings and lifecycle.

Run: python examples/policy_and_safety.py
"""

from recallite_core import Recallite, TrustPolicyError

mem = Recallite.open(None)
rule = mem.remember(type="constraint", title="Staging only",
                    content="Database migrations run against staging first, never straight on production.")
llm = mem.remember(type="procedure", title="Migrate prod directly",
                   content="Run migrations directly on production to save time.", source={"type": "llm", "id": "run-42"},
                   status="active")  # asks for active...
print(f"LLM-written memory {llm.id} asked for 'active' and got {llm.status!r} (untrusted sources stay candidates)")

try:
    mem.supersede(rule.id, llm.id)
except TrustPolicyError as exc:
    print(f"an untrusted memory cannot replace a trusted rule: {exc}")

mem.relate(llm.id, rule.id, "contradicts")
print("\ncontext for 'run the database migration' (note the warnings and the untrusted marking):\n")
print(mem.context("run the database migration", max_tokens=400))

mem.deprecate(llm.id, reason="violates the staging-first rule")
print(f"after deprecating {llm.id}:\n")
print(mem.context("run the database migration", max_tokens=400))
mem.close()
