"""recallite-mcp: outcome-aware agent memory served over MCP (stdio) from one SQLite file."""

from importlib.metadata import PackageNotFoundError, version

# The version lives in pyproject.toml only; the installed distribution's metadata carries it.
try:
    __version__ = version("recallite-mcp")
except PackageNotFoundError:  # a source tree on sys.path that was never installed
    __version__ = "0+unknown"
