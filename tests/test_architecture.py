"""House rule: the core never imports mcp, click or recallite_mcp."""

import ast
from pathlib import Path

CORE = Path(__file__).resolve().parents[1] / "core" / "recallite_core"
FORBIDDEN = {"mcp", "click", "recallite_mcp", "anyio", "starlette", "uvicorn"}


def test_core_has_no_mcp_imports():
    offenders = []
    for path in CORE.rglob("*.py"):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            for n in names:
                if n.split(".")[0] in FORBIDDEN:
                    offenders.append(f"{path.name}:{node.lineno} imports {n}")
    assert not offenders, offenders
    assert len(list(CORE.rglob("*.py"))) > 5
