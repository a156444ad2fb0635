"""A rehearsal of the first requests, in-process, before a server takes real ones.

The verifier is warm after :func:`ehrguard.verify.warm_up`, but a new server's first request also pays for what the
web and MCP layers build on first use: Starlette's middleware stack, FastAPI's per-route state, anyio's thread pool
backend, the MCP SDK's tool argument models, the JSON of a reply. Measured on the demo databases that was 30-40 ms on
the first ``/v1/verify`` and nothing on the tenth. A rehearsal sends the requests a client would send through the
application itself (no socket), once, with an audit log of its own that is thrown away: the real log records only
what people asked.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ehrguard.audit import AuditLog
from ehrguard.db import built_databases

# The verification rehearsed: an answerable question and a count over MIMIC's admissions table (on a database without
# that table, eICU's, the checks' unknown-table path). The first-against-tenth figures of docs/verifier.md were
# measured with it.
QUESTION = "How many patients were admitted this year?"
SQL = "SELECT COUNT(*) FROM admissions"


@contextmanager
def scratch_audit() -> Iterator[AuditLog]:
    """An audit log in memory, closed afterwards."""
    log = AuditLog(":memory:", retention_days=0)
    try:
        yield log
    finally:
        log.close()


def rehearse_app(app: Any) -> list[str]:
    """Send ``GET /healthz`` and a ``POST /v1/verify`` on the first built database through ``app`` (an ASGI app from
    :func:`ehrguard.server.create_app`), as an authorised caller, with a scratch audit log. Returns what went wrong
    (one line each; the server still serves)."""
    from ehrguard.server.auth import caller
    from ehrguard.server.routes import audit_log

    requests: list[tuple[str, str, dict[str, Any] | None]] = [("GET", "/healthz", None)]
    databases = built_databases()
    if databases:
        requests.append(("POST", "/v1/verify", {"db": databases[0].stem, "question": QUESTION, "sql": SQL}))
    with scratch_audit() as log:
        app.dependency_overrides[audit_log] = lambda: log
        app.dependency_overrides[caller] = lambda: "rehearsal"
        try:
            statuses = asyncio.run(_send_all(app, requests))
        finally:
            app.dependency_overrides.pop(audit_log, None)
            app.dependency_overrides.pop(caller, None)
    return [f"rehearsal {method} {path} answered {status}" for (method, path, _), status in zip(requests, statuses, strict=True)
            if status != 200]


async def _send_all(app: Any, requests: list[tuple[str, str, dict[str, Any] | None]]) -> list[int]:
    return [await _send(app, method, path, body) for method, path, body in requests]


async def _send(app: Any, method: str, path: str, body: dict[str, Any] | None) -> int:
    """One HTTP request through an ASGI app; returns the response's status."""
    payload = json.dumps(body).encode() if body is not None else b""
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method, "scheme": "http",
             "path": path, "raw_path": path.encode(), "query_string": b"", "root_path": "",
             "headers": [(b"host", b"127.0.0.1"), (b"content-type", b"application/json"),
                         (b"content-length", str(len(payload)).encode())],
             "client": ("127.0.0.1", 0), "server": ("127.0.0.1", 0)}
    incoming = [{"type": "http.request", "body": payload, "more_body": False}]
    status = [0]

    async def receive() -> dict[str, Any]:
        return incoming.pop(0) if incoming else {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            status[0] = int(message["status"])

    await app(scope, receive, send)
    return status[0]


def rehearse_mcp(server: Any, *, verify: bool = True) -> list[str]:
    """Open an MCP session with ``server`` (from :func:`ehrguard.server.build_server`) over in-memory streams, as an
    agent would over stdio (initialised, then list the tools, call ``list_databases`` and ``verify_sql`` on the first built
    database; ``verify=False`` leaves that out, for a method that would call a model), with a scratch audit log.
    Returns what went wrong, one line each; the server still serves."""
    databases = built_databases()
    calls: list[tuple[str, dict[str, Any]]] = [("list_databases", {})]
    if databases and verify:
        calls.append(("verify_sql", {"db": databases[0].stem, "question": QUESTION, "sql": SQL}))
    real = server.audit
    with scratch_audit() as log:
        server.audit = log
        try:
            return asyncio.run(_session(server, calls))
        except Exception as exc:  # noqa: BLE001 - reported in one line; the server still serves
            return [f"rehearsal: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"]
        finally:
            server.audit = real


async def _session(server: Any, calls: list[tuple[str, dict[str, Any]]]) -> list[str]:
    from mcp.shared.memory import create_connected_server_and_client_session

    problems = []
    async with create_connected_server_and_client_session(server) as session:
        await session.list_tools()
        for name, arguments in calls:
            result = await session.call_tool(name, arguments)
            if result.isError:
                text = " ".join(getattr(part, "text", "") for part in result.content)
                problems.append(f"rehearsal {name}: {text.splitlines()[0] if text else 'an error'}")
    return problems
