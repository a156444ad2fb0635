"""The REST API and the web app (``ehrguard serve``), and the MCP server for agents (``ehrguard mcp``).

The names below are the API (``from ehrguard.server import create_app``). The modules are
internal: :mod:`.app` wires the application, :mod:`.routes` holds the routes, :mod:`.auth` the
tokens and rate limit, :mod:`.errors` the one error shape; :mod:`.mcp` is the MCP server.
:mod:`.openapi` and :mod:`.loadtest` are scripts (``python -m ehrguard.server.openapi``).

Every name is imported on first use (PEP 562): the application loads fastapi and the MCP
server loads mcp (hundreds of milliseconds each), which neither ``import ehrguard.server`` nor the
command line pays for until a server starts.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ehrguard.server.app import create_app
    from ehrguard.server.errors import ERRORS, ApiError, status_and_code
    from ehrguard.server.mcp import build_server

_LAZY = {name: module for module, names in {
    ".app": ("create_app",),
    ".errors": ("ERRORS", "ApiError", "status_and_code"),
    ".mcp": ("build_server",),
}.items() for name in names}


def __getattr__(name: str) -> object:
    """Import a lazily exported name on first use (PEP 562)."""
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name], __name__), name)
    globals()[name] = value  # bound now: later lookups do not come back here
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = ["ERRORS", "ApiError", "build_server", "create_app", "status_and_code"]
