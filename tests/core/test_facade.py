"""The facade composes services (issue 16): no mixins, no state in ``__dict__`` tricks, no
private calls across modules, no import cycle through the facade, every public method kept."""

import ast
import inspect
import pathlib

from recallite_core import Recallite
from recallite_core.features.working import WorkingMemory
from recallite_core.learning.behavior import BehaviorRecorder

CORE = pathlib.Path(__file__).resolve().parents[2] / "core" / "recallite_core"

# Service modules of the facade: each owns its state and talks to the others through public methods.
SERVICES = ["plumbing", "catalog", "conversation/turns", "policy/lifecycle", "writer", "conversation/conversations",
            "features/working_layer", "features/slm", "retrieval/search", "learning/feedback", "features/overview",
            "features/maintenance", "features/reconcile", "portability/jsonl", "conversation/episodes"]

# Private names a service still reaches for in a module it does not own: none (the fix goes
# there, as a public name).
KNOWN: set[tuple[str, str]] = set()

PUBLIC_API = [
    "activate", "add", "auto_context", "behavior_stats", "beliefs", "build_context", "capture_behavior", "chunks_of",
    "citations", "cite", "clean_expired", "clear_working", "close", "concepts", "consolidate", "context", "deprecate",
    "episode_window", "expand", "export_jsonl", "feedback", "flush", "forget", "format_context", "get", "get_many",
    "history", "import_jsonl", "inspection", "join_team", "leave_team", "limits", "list", "open", "promote",
    "promote_working", "recall", "reconcile", "record_turn", "record_turns", "reindex", "reinforce", "relate",
    "relation_counts", "relations", "remember", "remember_many", "remember_working", "resolve_conflict", "revise",
    "session_context", "session_turns", "share", "stats", "supersede", "teams", "trust", "undo_supersede", "vacuum",
    "validate", "why", "working", "working_entries", "working_entry",
]


def _tree(name: str) -> ast.Module:
    return ast.parse((CORE / f"{name}.py").read_text())


def _runtime_imports(name: str) -> set[str]:
    """Modules of the package ``name`` imports (dotted, below recallite_core), inside functions too;
    TYPE_CHECKING blocks are annotations only."""
    tree = _tree(name)
    skip = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
            for b in node.body for n in ast.walk(b)}
    out = set()
    for node in ast.walk(tree):
        if id(node) in skip or not isinstance(node, ast.ImportFrom) or not node.module:
            continue
        if node.module.startswith("recallite_core."):
            mod = node.module.split(".", 1)[1]
            out.add(mod)
            out.update(f"{mod}.{a.name}" for a in node.names)  # `from recallite_core.pkg import module`
    return out


def _modules() -> list[str]:
    return [str(p.relative_to(CORE).with_suffix("")).replace("/", ".") for p in CORE.rglob("*.py")
            if p.name != "__init__.py"]


def test_recallite_has_no_mixin_bases():
    assert Recallite.__bases__ == (object,)


def test_every_public_method_of_the_facade_is_still_there():
    missing = [n for n in PUBLIC_API if not hasattr(Recallite, n)]
    assert not missing
    # Served methods keep the service's signature and docstring.
    assert "content" in inspect.signature(Recallite.remember).parameters
    assert Recallite.recall.__doc__ and "Hybrid recall" in Recallite.recall.__doc__


def test_no_module_imports_the_facade():
    importers = [m for m in _modules() if m != "engine" and "engine" in _runtime_imports(m.replace(".", "/"))]
    assert importers == []


# No import cycle anywhere, through the facade and its services or not: tests/test_architecture.py.


def test_services_call_no_private_name_of_another_module():
    found = []
    for name in SERVICES:
        for node in ast.walk(_tree(name)):
            attr = None  # a private name this node reaches for
            if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
                if not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                    attr = node.attr
            elif isinstance(node, ast.ImportFrom):
                attr = next((a.name for a in node.names if a.name.startswith("_") and not a.name.startswith("__")), None)
            elif (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "getattr" and len(node.args) > 1
                  and isinstance(node.args[1], ast.Constant) and str(node.args[1].value).startswith("_")):
                attr = node.args[1].value
            if isinstance(node, ast.Attribute) and node.attr == "__dict__":
                attr = "__dict__"
            if attr and (name, attr) not in KNOWN:
                found.append(f"{name}.py:{node.lineno} {attr}")
    assert found == []


def test_service_modules_are_small_and_say_what_they_own():
    for name in [*SERVICES, "engine"]:
        text = (CORE / f"{name}.py").read_text()
        assert len(text.splitlines()) < 800, name
        doc = ast.get_docstring(ast.parse(text))
        assert doc, name
    for name in SERVICES:
        doc = ast.get_docstring(_tree(name)) or ""
        assert "import" in doc, f"{name}.py's docstring should say what it may import"


def test_lazy_state_lives_in_the_services_not_in_the_facade(mem):
    before = set(vars(mem))
    assert isinstance(mem.working, WorkingMemory) and mem.working is mem.layers.memory()
    mem.remember_working("Ticket 42 is flaky.", session="s1")
    assert mem.capture_behavior("agent-1", "tool_choice", "Use ripgrep to search.", tool="rg")
    assert mem.flush(10)
    assert isinstance(mem.slm.recorder(), BehaviorRecorder)
    assert set(vars(mem)) == before  # nothing was added to the facade's own attributes


def test_portability_writes_through_public_methods_only():
    calls = [ast.unparse(n) for n in ast.walk(_tree("portability/jsonl")) if isinstance(n, ast.Attribute)
             and isinstance(n.value, ast.Attribute) and n.attr.startswith("_")]
    assert calls == []
