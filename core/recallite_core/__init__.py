"""recallite_core: the memory engine behind recallite-mcp. Knows nothing of MCP."""

__version__ = "0.1.0"
