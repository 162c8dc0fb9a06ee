"""recallite-mcp: outcome-aware agent memory served over MCP (stdio) from one SQLite file."""

__version__ = "0.1.0"
