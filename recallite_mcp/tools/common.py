"""What every tool group shares: the error edge (engine errors become one-line ToolErrors the
model reads), the hint annotations and the argument types used by more than one group. Imports
the core's errors and the SDK only, never a tool group or the server."""

import functools
import logging
import re
from typing import Any, Callable, Literal, TypeVar

from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations

from recallite_core import RecalliteError
from recallite_core.errors import MemoryNotFoundError
from recallite_core.storage.postgres.errors import explain, is_driver_error

log = logging.getLogger("recallite.server")

T = TypeVar("T")

MemoryTypeArg = Literal["observation", "preference", "fact", "constraint", "lesson", "procedure", "episode"]
ProfileArg = Literal["default", "planner", "coder", "debugger", "assistant"]
SourceArg = Literal["agent", "llm", "tool", "imported", "user", "system"]
StatusArg = Literal["candidate", "validated", "active", "deprecated", "superseded"]

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
WRITES = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
DESTRUCTIVE = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False)


def not_found(exc: MemoryNotFoundError) -> str:
    """The core's message names its Python methods; an MCP client has tools."""
    return str(exc).split(". ")[0].rstrip(".") + ". Find ids with recallite_list or recallite_recall."


# The core's messages are right for Python callers, but these name calls and arguments an MCP client
# does not have (recallite_history is not in the core tool set; no tool takes allow_unsafe): each
# becomes what the client can do instead. Tried in order; one home for the MCP wording of the core.
_PYTHON_TERMS: list[tuple[re.Pattern[str], str]] = [
    # a newer version that was itself revised says so when it is revised in turn: one step at a time
    (re.compile(r"superseded by (mem_\d+); revise the newest version \(history\(mem_\d+\) lists them\)"),
     r"superseded by \1; revise \1 instead"),
    (re.compile(r"Validate it by a trusted source first, or pass allow_unsafe"),
     "If the user confirms it, validate it first (recallite_update action=validate)"),
    (re.compile(r"Ask the user, or pass allow_unsafe"), "Ask the user"),
]


def in_tool_terms(message: str) -> str:
    """A core error message said with the MCP tools instead of Python calls."""
    for pattern, said in _PYTHON_TERMS:
        message = pattern.sub(said, message)
    return message


def edge(fn: Callable[..., T]) -> Callable[..., T]:
    """Map engine errors to ToolError (the model sees the message); never let anything else
    through as a bare failure."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> T:
        try:
            return fn(*args, **kwargs)
        except ToolError:
            raise
        except MemoryNotFoundError as exc:
            raise ToolError(not_found(exc)) from exc
        except RecalliteError as exc:
            raise ToolError(in_tool_terms(str(exc))) from exc
        except Exception as exc:
            if is_driver_error(exc):  # a PostgreSQL error the store did not wrap: still one line, masked
                log.warning("PostgreSQL error in %s: %s", fn.__name__, type(exc).__name__)
                raise ToolError(str(explain(exc, None, fn.__name__.removeprefix("recallite_")))) from exc
            log.exception("Unexpected error in %s", fn.__name__)
            raise ToolError(
                f"Internal error in {fn.__name__} ({type(exc).__name__}); nothing was changed. "
                "The server is still running; retry, or report it with the server's stderr log."
            ) from exc

    return wrapper
