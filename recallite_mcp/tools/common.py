"""What every tool group shares: the error edge (engine errors become one-line ToolErrors the
model reads), the hint annotations and the argument types used by more than one group. Imports
the core's errors and the SDK only, never a tool group or the server."""

import functools
import logging
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
            raise ToolError(str(exc)) from exc
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
