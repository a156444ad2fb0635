"""The REST API and the web app (``ehrguard serve``), and the MCP server for agents (``ehrguard mcp``).

The names below are the API (``from ehrguard.server import create_app``). The modules are
internal: :mod:`.app` wires the application, :mod:`.routes` holds the routes, :mod:`.auth` the
tokens and rate limit, :mod:`.errors` the one error shape; :mod:`.mcp` is the MCP server; :mod:`.rehearsal`
sends a new server's first requests through it before it listens.
:mod:`.openapi` and :mod:`.loadtest` are scripts (``python -m ehrguard.server.openapi``).

Every name is imported on first use (PEP 562): the application loads fastapi and the MCP
server loads mcp (hundreds of milliseconds each), which neither ``import ehrguard.server`` nor the
command line pays for until a server starts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ehrguard.lazy import by_module, lazy_exports

if TYPE_CHECKING:
    from ehrguard.server.app import create_app
    from ehrguard.server.errors import ERRORS, ApiError, status_and_code
    from ehrguard.server.mcp import build_server
    from ehrguard.server.rehearsal import rehearse_app, rehearse_mcp

_LAZY = by_module({
    ".app": ("create_app",),
    ".errors": ("ERRORS", "ApiError", "status_and_code"),
    ".mcp": ("build_server",),
    ".rehearsal": ("rehearse_app", "rehearse_mcp"),
})


__getattr__, __dir__ = lazy_exports(__name__, globals(), _LAZY)


__all__ = ["ERRORS", "ApiError", "build_server", "create_app", "rehearse_app", "rehearse_mcp", "status_and_code"]
