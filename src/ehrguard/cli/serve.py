"""``ehrguard serve`` (REST API + web app) and ``ehrguard audit``."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from datetime import datetime
from typing import Any

import click

from ehrguard.cli.options import console
from ehrguard.errors import ConfigError

LOOPBACK = ("127.0.0.1", "localhost", "::1")


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", type=int, default=8000, show_default=True)
@click.option("--no-auth", is_flag=True, help="No bearer token (allowed only on a loopback address).")
@click.option("--workers", type=int, default=1, show_default=True, help="Only 1: the server's limits live in its one process.")
def serve_command(host: str, port: int, no_auth: bool, workers: int) -> None:
    """Serve the REST API (/v1/verify, /v1/ask, /v1/sql, /v1/databases, /healthz; OpenAPI at /docs) and the web app at /."""
    if workers != 1:  # uvicorn cannot fork an app object, and rate limits, query slots and the model budget are per process
        raise ConfigError(f"--workers {workers}: ehrguard serve runs one process (its rate limits and query slots are that "
                          "process's); to serve more, run several servers on other ports behind a proxy.")
    if no_auth and host not in LOOPBACK:
        raise ConfigError(f"--no-auth is only allowed on a loopback address, not {host}: set EHRGUARD_API_TOKENS instead.")
    _check_port_free(host, port)  # before seconds of loading, not after
    warming = _WarmUp()
    import uvicorn

    from ehrguard.server import create_app, rehearse_app

    app = create_app(auth=not no_auth)
    warming.join()
    _rehearse(rehearse_app, app)
    console.print(f"ehrguard on http://{host}:{port}/ ({'no auth, loopback only' if no_auth else 'bearer tokens required'})")
    uvicorn.run(app, host=host, port=port, log_level="warning")


def _check_port_free(host: str, port: int) -> None:
    """Fail in one line when something already listens on ``host:port``."""
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise ConfigError(f"Cannot listen on {host}:{port} ({exc.strerror or exc}): stop what is using it, or pass --port N.") from None


@click.command("mcp")
@click.option("--method", default="offline", show_default=True, help="Verification method behind every tool.")
@click.option("--model", default=None, help="provider/model for LLM methods and the ask tool.")
def mcp_command(method: str, model: str | None) -> None:
    """Serve MCP over stdio for agents (Claude Desktop, Cursor, ...): list_databases, get_schema, verify_sql, run_sql, ask."""
    warming = _WarmUp(method, quiet=True)  # stdout is the protocol
    from ehrguard.server import build_server, rehearse_mcp
    from ehrguard.verify import method_uses_model

    server = build_server(method=method, model=model)
    warming.join()
    # Its problems go to stderr (stdout is the protocol); a method that calls a model is not rehearsed on it.
    _rehearse(lambda s: rehearse_mcp(s, verify=not method_uses_model(method)), server)
    server.run("stdio")


class _WarmUp:
    """Load the embedding model, a query worker per built database and then everything a first verification of each
    needs, in the background, while the server's libraries (FastAPI, the MCP SDK; about a second) import. In a daemon
    thread: a start that fails elsewhere exits at once, without waiting for it. The server calls :meth:`join`, which
    waits for it and raises what it raised, before it answers anything."""

    def __init__(self, method: str = "offline", *, quiet: bool = False) -> None:
        from ehrguard.db import built_databases
        from ehrguard.verify import prefetch

        prefetch(built_databases(), method=method)
        self.error: BaseException | None = None
        self.quiet = quiet
        self.thread = threading.Thread(target=self._run, name="ehrguard-warm-up", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            _warm_up(self.quiet)
        except BaseException as exc:  # noqa: BLE001 - handed to the main thread by join()
            self.error = exc

    def join(self) -> None:
        self.thread.join()
        if self.error is not None:
            raise self.error


def _warm_up(quiet: bool = False) -> None:
    """Load models and banks for every built database before the first request."""
    from ehrguard.db import built_databases
    from ehrguard.verify import warm_up

    took = warm_up(built_databases())
    if not quiet and took:
        console.print("ready: " + ", ".join(f"{name} {t if isinstance(t, str) else f'{t:.1f} s'}" for name, t in took.items()))


def _rehearse(rehearsal: Callable[[Any], list[str]], server: Any) -> None:
    """Send a server's first requests through it in-process (:mod:`ehrguard.server.rehearsal`) and settle what the start
    loaded, so that a client's first request is no slower than its tenth; what went wrong goes to stderr, and the
    server still starts."""
    import gc

    for problem in rehearsal(server):
        print(f"ehrguard: {problem}", file=sys.stderr)
    # What the start loaded lives as long as the server: frozen out of the collector's generations, it is not walked
    # again by a full collection under a request (on the three demo databases: 92,000 objects, 47 ms for the first).
    gc.collect()
    gc.freeze()


@click.group("audit")
def audit_group() -> None:
    """The audit log of every decision (API, web app, MCP, `ehrguard verify`)."""


@audit_group.command("export")
@click.option("--since", default=None, help="Only entries from this date/time on (ISO 8601, e.g. 2026-11-01 or 2026-11-01T12:00).")
@click.option("--format", "fmt", type=click.Choice(["jsonl", "csv"]), default="jsonl", show_default=True)
def export_command(since: str | None, fmt: str) -> None:
    """Write the audit log to stdout."""
    from ehrguard.audit import AuditLog

    start = None
    if since:
        try:
            start = datetime.fromisoformat(since).timestamp()
        except ValueError:
            raise ConfigError(f"--since takes an ISO date or date-time (2026-11-01, 2026-11-01T12:00), got {since!r}.") from None
    sys.stdout.write(AuditLog().export(fmt, since=start))


@audit_group.command("receipt")
@click.argument("entry_id", type=int)
@click.option("--out", "out", type=click.Path(dir_okay=False), default=None, help="Write it to this file (default: stdout).")
def receipt_command(entry_id: int, out: str | None) -> None:
    """Export the receipt of one decision (its audit entry's id, as /v1/verify returns it in audit_id)."""
    import json
    from pathlib import Path

    from ehrguard.audit import AuditLog

    receipt = AuditLog().receipt(entry_id)
    if receipt is None:
        raise ConfigError(f"Audit entry {entry_id} has no receipt (no such entry, or it records an error or a raw SQL run): "
                          "list entries with `ehrguard audit export`.")
    text = json.dumps(receipt, indent=2, ensure_ascii=False) + "\n"
    if out:
        Path(out).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)


@audit_group.command("verify-receipt")
@click.argument("path", type=click.Path(dir_okay=False))
@click.option("--key-file", default=None, type=click.Path(dir_okay=False),
              help="The signing key (default: the receipt_key / receipt_key_file settings).")
@click.option("--db", "db_path", default=None, help="Also check the answer against this database: same file, same rows.")
def verify_receipt_command(path: str, key_file: str | None, db_path: str | None) -> None:
    """Check a receipt: its digest, its HMAC signature, and with --db that the database is the same and the final
    SQL still gives the same rows. Exits 1 when any check fails or the receipt is unsigned."""
    from ehrguard.db import connect_database
    from ehrguard.receipt import check_receipt, read_key_file, read_receipt, receipt_key

    receipt = read_receipt(path)
    key = read_key_file(key_file, "fix --key-file") if key_file else receipt_key()
    found = check_receipt(receipt, key, connect_database(db_path) if db_path else None)
    for step in found.passed:
        console.print(f"[green]ok[/green] {step}", highlight=False)
    for problem in found.problems:
        console.print(f"[red]FAIL[/red] {problem}", highlight=False)
    verdict = receipt.get("verdict") or {}
    console.print(f"{'VALID' if found.ok else 'NOT VALID'}: receipt {receipt.get('receipt_id')} of {receipt.get('issued_at')}, "
                  f"{verdict.get('action')} ({verdict.get('status')}) for {str(receipt.get('question'))[:80]!r}", highlight=False)
    if not found.ok:
        sys.exit(1)


__all__ = ["audit_group", "mcp_command", "serve_command"]
