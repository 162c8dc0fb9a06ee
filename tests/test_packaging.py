"""What the wheel promises: every third-party package the code imports is declared, both packages
are typed (py.typed), and the version is written in pyproject.toml alone."""

import ast
import re
import sys
from importlib.metadata import packages_distributions, version
from pathlib import Path

import tomllib

import recallite_mcp

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {"recallite_mcp": ROOT / "recallite_mcp", "recallite_core": ROOT / "core" / "recallite_core"}
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def declared() -> set[str]:
    project = PYPROJECT["project"]
    reqs = list(project["dependencies"]) + [r for extra in project["optional-dependencies"].values() for r in extra]
    return {normalise(re.split(r"[<>=!~;\[ ]", r, maxsplit=1)[0]) for r in reqs}


def imported_top_levels() -> dict[str, str]:
    """Third-party top-level modules imported anywhere in the two packages -> a file importing it."""
    found: dict[str, str] = {}
    for root in PACKAGES.values():
        for path in root.rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                else:
                    continue
                for name in names:
                    top = name.split(".")[0]
                    if top not in sys.stdlib_module_names and top not in PACKAGES:
                        found.setdefault(top, str(path.relative_to(ROOT)))
    return found


def test_every_imported_package_is_declared():
    dists = packages_distributions()
    wanted = declared()
    missing = {}
    for top, where in imported_top_levels().items():
        names = {normalise(d) for d in dists.get(top, [top])}  # an optional package may not be installed
        if not names & wanted:
            missing[top] = where
    assert not missing, f"imported but not in pyproject dependencies: {missing}"


def test_both_packages_are_typed():
    for name, root in PACKAGES.items():
        assert (root / "py.typed").is_file(), name
    assert PYPROJECT["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"] == ["recallite_mcp", "core/recallite_core"]


def test_version_is_written_in_pyproject_only():
    assert PYPROJECT["project"]["version"]
    assert recallite_mcp.__version__ in (version("recallite-mcp"), "0+unknown")
    offenders = [str(p.relative_to(ROOT)) for p in PACKAGES["recallite_mcp"].rglob("*.py")
                 if re.search(r"__version__\s*=\s*['\"]\d+\.\d+", p.read_text())]
    assert not offenders, offenders
