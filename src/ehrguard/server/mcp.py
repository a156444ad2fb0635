"""``ehrguard mcp``: an MCP server (stdio) for AI agents querying EHR databases, with every query checked.

Tools: ``list_databases``, ``get_schema``, ``verify_sql``, ``run_sql`` (the query is verified
first; an ambiguous, unanswerable or refused query is not executed and the result says why;
a corrected one runs in its corrected form) and ``ask`` (when a model is configured). Every
call is written to the audit log with the caller ``mcp``.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from mcp.server.fastmcp import FastMCP

from ehrguard.audit import AuditLog
from ehrguard.config import db_dir
from ehrguard.errors import DatabaseNotFoundError, EhrguardError


def _db_path(name: str) -> Path:
    if not name or any(c in name for c in "/\\") or name.startswith("."):
        raise DatabaseNotFoundError(f"Name a built database (see list_databases), not a path: {name!r}.")
    for suffix in (".sqlite", ".duckdb"):
        path = db_dir() / f"{name}{suffix}"
        if path.is_file():
            return path
    raise DatabaseNotFoundError(f"No database named {name!r} (see list_databases).")


def build_server(audit: AuditLog | None = None, method: str = "offline", model: str | None = None) -> FastMCP:
    server = FastMCP("ehrguard", instructions="EHR databases behind a safety layer: verify_sql before trusting any SQL; run_sql verifies for you.")
    log = audit or AuditLog()

    def _verify(db: str, question: str, sql: str) -> dict[str, Any]:
        from ehrguard.verify import verify

        start = time.perf_counter()
        verdict = verify(question, sql, db=_db_path(db), method=method, model=model)
        log.record_verdict(verdict, caller="mcp", interface="mcp", db=db, question=question, sql=sql, started=start)
        return {"action": verdict.action, "sql": verdict.sql, "subtype": verdict.subtype, "message": verdict.message,
                "findings": [{"check": f.check, "severity": f.severity, "message": f.message} for f in verdict.findings]}

    @server.tool()
    def list_databases() -> dict[str, Any]:
        """The EHR databases on this machine."""
        found = sorted(p.stem for p in db_dir().glob("*") if p.suffix in (".sqlite", ".duckdb")) if db_dir().is_dir() else []
        return {"databases": found}

    @server.tool()
    def get_schema(db: str) -> str:
        """CREATE TABLE statements of a database."""
        from ehrguard.verify.api import database_context

        return database_context(_db_path(db)).schema.render_ddl()

    @server.tool()
    def verify_sql(db: str, question: str, sql: str) -> dict[str, Any]:
        """Check a SQL query written for a question: preserve, correct (with the fixed SQL), ambiguous or unanswerable."""
        try:
            return _verify(db, question, sql)
        except EhrguardError as exc:
            return {"error": str(exc)}

    @server.tool()
    def run_sql(db: str, question: str, sql: str, max_rows: int = 200) -> dict[str, Any]:
        """Verify the query for the question, then run it read-only if (and as) the verifier allows."""
        from ehrguard.db import open_database

        try:
            verdict = _verify(db, question, sql)
            if verdict["action"] not in ("preserve", "correct"):
                return {"executed": False, "verdict": verdict, "reason": verdict["message"]}
            result = open_database(_db_path(db)).execute(verdict["sql"], max_rows=min(max_rows, 10_000))
        except EhrguardError as exc:
            return {"executed": False, "error": str(exc)}
        log.record(caller="mcp", interface="mcp-run", db=db, question=question, candidate_sql=sql, executed_sql=verdict["sql"],
                   action=verdict["action"], row_count=len(result.rows), result_values=result.rows)
        return {"executed": True, "verdict": verdict, "columns": result.columns, "rows": result.rows, "truncated": result.truncated}

    @server.tool()
    def ask(db: str, question: str) -> dict[str, Any]:
        """Write SQL for a question with the configured model, verify it, and run it if allowed."""
        if model is None:
            return {"executed": False, "error": "No model is configured: start `ehrguard mcp --model provider/model`."}
        from ehrguard.clinsql.generate import generate
        from ehrguard.db import open_database
        from ehrguard.llm import LLM

        path = _db_path(db)
        gen = generate(question, open_database(path), LLM(model), mode="direct", refine=1, dialect="sqlite" if path.suffix == ".sqlite" else "duckdb")
        if gen.final_sql is None:
            return {"executed": False, "error": "The model wrote no SQL."}
        return {"generated_sql": gen.final_sql, **run_sql(db, question, gen.final_sql)}

    return server
