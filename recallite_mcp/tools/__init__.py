"""The MCP tools, in groups by what they do. Every group module has a ``register(server)``
that adds its tools, a ``TOOLS`` tuple naming them and, when it has any, an ``ADVANCED`` map of
parameters (and ``ADVANCED_CHOICES``, values of a parameter) advertised only with ``--tools all``. The core set is the memory loop and curation;
``--tools all`` adds conversation memory and the SLM-Lite extras. Groups import the app state
(recallite_mcp.app), tools.common, schemas and the core; nothing here imports the server
module, so the server can import this package without a cycle."""

from mcp.server import MCPServer

from . import conversation, curation, memory_loop, slm

CORE_GROUPS = (memory_loop, curation)
EXTRA_GROUPS = (conversation, slm)

EXTRA_TOOLS = tuple(name for group in EXTRA_GROUPS for name in group.TOOLS)
ADVANCED: dict[str, set[str]] = {name: params for group in CORE_GROUPS + EXTRA_GROUPS
                                 for name, params in getattr(group, "ADVANCED", {}).items()}
ADVANCED_CHOICES: dict[str, dict[str, set[str]]] = {
    name: choices for group in CORE_GROUPS + EXTRA_GROUPS for name, choices in getattr(group, "ADVANCED_CHOICES", {}).items()}


def register_tools(server: MCPServer, all_tools: bool) -> None:
    """The core groups always, the extra groups with --tools all; in this order, which is the
    order of tools/list."""
    for group in CORE_GROUPS + (EXTRA_GROUPS if all_tools else ()):
        group.register(server)


__all__ = ["register_tools", "EXTRA_TOOLS", "ADVANCED", "ADVANCED_CHOICES", "CORE_GROUPS", "EXTRA_GROUPS"]
