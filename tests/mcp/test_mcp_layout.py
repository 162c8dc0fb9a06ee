"""The MCP layer's shape: app state and tool groups that register themselves, no import cycle
between its modules (imports inside functions count too), every group says what it owns."""

import ast
import importlib
from pathlib import Path

import anyio
from mcp import Client

from recallite_mcp import tools
from recallite_mcp.server import build_server
from recallite_mcp.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "recallite_mcp"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, known: set[str]) -> set[str]:
    """The recallite_mcp modules one module imports, anywhere in it."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            found.add(base)
            found |= {f"{base}.{a.name}" for a in node.names}
    return {m for m in found if m in known and m != name}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def test_mcp_layer_has_no_import_cycles():
    paths = list(PACKAGE.rglob("*.py"))
    known = {module_name(p) for p in paths}
    graph = {module_name(p): imports_of(p, known) for p in paths}
    assert graph["recallite_mcp.server"] >= {"recallite_mcp.tools", "recallite_mcp.app"}
    assert not cycles(graph)


def test_tool_groups_say_what_they_own():
    for group in tools.CORE_GROUPS + tools.EXTRA_GROUPS + (importlib.import_module("recallite_mcp.tools.common"),):
        doc = group.__doc__ or ""
        assert len(doc.split()) > 20, group.__name__
        assert "import" in doc.lower(), f"{group.__name__}: say what it may import"


def test_tool_groups_name_what_they_register():
    """TOOLS of each group is what it registers, in tools/list order; EXTRA_TOOLS (the pointer to
    --tools all) are exactly the extra groups' tools."""

    async def names(mode: str) -> list[str]:
        async with Client(build_server(Settings(db=":memory:", embedder="hash", warm_embedder=False, tools=mode))) as c:
            return [t.name for t in (await c.list_tools()).tools]

    core = [n for g in tools.CORE_GROUPS for n in g.TOOLS]
    extra = [n for g in tools.EXTRA_GROUPS for n in g.TOOLS]
    assert anyio.run(names, "core") == core
    assert anyio.run(names, "all") == core + extra
    assert list(tools.EXTRA_TOOLS) == extra
    assert set(tools.ADVANCED) <= set(core)


def test_no_source_file_over_800_lines():
    """Long data lives in package data files (benchmarks/catalogs, benchmarks/data), not in code."""
    long = {str(p.relative_to(ROOT)): n for p in PACKAGE.rglob("*.py") if (n := len(p.read_text().splitlines())) > 800}
    assert not long, long
