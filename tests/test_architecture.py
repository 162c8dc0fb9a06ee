"""House rules on the shape of the code, checked from the source (nothing is imported):

- the core never imports mcp, click or recallite_mcp;
- no import cycles between modules, counting imports inside functions (TYPE_CHECKING blocks aside);
- no source file over 800 lines;
- every package says in its docstring what it owns and what it may import.
"""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORE = ROOT / "core" / "recallite_core"
MCP = ROOT / "recallite_mcp"
FORBIDDEN = {"mcp", "click", "recallite_mcp", "anyio", "starlette", "uvicorn"}
MAX_LINES = 800


def _modules(top: Path, package: str) -> dict[str, Path]:
    found = {}
    for path in top.rglob("*.py"):
        parts = list(path.relative_to(top).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join([package, *parts])] = path
    return found


def _is_type_checking(node: ast.AST) -> bool:
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and (
        (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
        or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"))


def _imports(name: str, path: Path, is_package: bool) -> list[tuple[str, int]]:
    """Absolute module names imported anywhere in the file, with line numbers."""
    tree = ast.parse(path.read_text(), filename=str(path))
    base = name.split(".") if is_package else name.split(".")[:-1]
    out: list[tuple[str, int]] = []

    def visit(node: ast.AST) -> None:
        if _is_type_checking(node):
            return
        if isinstance(node, ast.Import):
            out.extend((a.name, node.lineno) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = base[: len(base) - (node.level - 1)]
                mod = ".".join(anchor + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            out.append((mod, node.lineno))
            out.extend((f"{mod}.{a.name}", node.lineno) for a in node.names)  # `from pkg import module`
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return out


def _graph() -> dict[str, set[str]]:
    modules = {**_modules(CORE, "recallite_core"), **_modules(MCP, "recallite_mcp")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        deps = set()
        for target, _ in _imports(name, path, path.name == "__init__.py"):
            if target in modules and target != name:
                deps.add(target)
        graph[name] = deps
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def strong(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return found


def _is_package_init_edge(a: str, b: str) -> bool:
    # A package's __init__ re-exporting its own modules is not a cycle of design.
    return b.startswith(a + ".") or a.startswith(b + ".")


def test_core_has_no_mcp_imports():
    offenders = []
    for name, path in _modules(CORE, "recallite_core").items():
        for target, line in _imports(name, path, path.name == "__init__.py"):
            if target.split(".")[0] in FORBIDDEN:
                offenders.append(f"{path.relative_to(ROOT)}:{line} imports {target}")
    assert not offenders, offenders
    assert len(list(CORE.rglob("*.py"))) > 5


def test_no_import_cycles_counting_imports_inside_functions():
    graph = _graph()
    pruned = {a: {b for b in deps if not _is_package_init_edge(a, b)} for a, deps in graph.items()}
    cycles = _cycles(pruned)
    assert not cycles, "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)


def test_the_cycle_check_sees_imports_inside_functions(tmp_path):
    # the checker itself: a cycle closed by a function-level import is found
    (tmp_path / "a.py").write_text("import pkg.b\n")
    (tmp_path / "b.py").write_text("def f():\n    from pkg import a\n")
    graph = {}
    mods = {"pkg.a": tmp_path / "a.py", "pkg.b": tmp_path / "b.py"}
    for name, path in mods.items():
        graph[name] = {t for t, _ in _imports(name, path, False) if t in mods and t != name}
    assert _cycles(graph) == [["pkg.a", "pkg.b"]]


def test_no_source_file_over_800_lines():
    long = []
    for top in (CORE, MCP):
        for path in top.rglob("*.py"):
            n = len(path.read_text().splitlines())
            if n > MAX_LINES:
                long.append(f"{path.relative_to(ROOT)}: {n}")
    assert not long, long


def test_every_package_says_what_it_owns():
    missing = []
    for top in (CORE, MCP):
        for init in top.rglob("__init__.py"):
            doc = ast.get_docstring(ast.parse(init.read_text())) or ""
            if len(doc.split()) < 8:
                missing.append(str(init.relative_to(ROOT)))
    assert not missing, missing
