"""``ehrguard mcp``: an MCP server (stdio) for AI agents querying EHR databases, with every query checked.

Tools: ``list_databases``, ``get_schema``, ``verify_sql``, ``run_sql`` (the query is verified
first; an ambiguous, unanswerable or refused query is not executed and the result says why;
a corrected one runs in its corrected form) and ``ask`` (when a model is configured). Every
call is written to the audit log with the caller ``mcp``.
"""

from __future__ import annotations

import time
from typing import Any

from mcp.server.fastmcp import FastMCP

from ehrguard.audit import AuditLog
from ehrguard.db.engine import built_databases, named_database
from ehrguard.errors import EhrguardError


def build_server(audit: AuditLog | None = None, method: str = "offline", model: str | None = None) -> FastMCP:
    server = FastMCP("ehrguard", instructions="EHR databases behind a safety layer: verify_sql before trusting any SQL; run_sql verifies for you.")
    log = audit or AuditLog()

    def _verify(db: str, question: str, sql: str) -> dict[str, Any]:
        from ehrguard.verify import verify

        start = time.perf_counter()
        verdict = verify(question, sql, db=named_database(db), method=method, model=model)
        log.record_verdict(verdict, caller="mcp", interface="mcp", db=db, question=question, sql=sql, started=start)
        return {"action": verdict.action, "sql": verdict.sql, "subtype": verdict.subtype, "message": verdict.message,
                "findings": [{"check": f.check, "severity": f.severity, "message": f.message} for f in verdict.findings]}

    @server.tool()
    def list_databases() -> dict[str, Any]:
        """The EHR databases on this machine."""
        return {"databases": [p.stem for p in built_databases()]}

    @server.tool()
    def get_schema(db: str) -> str:
        """CREATE TABLE statements of a database."""
        from ehrguard.verify.api import database_context

        return database_context(named_database(db)).schema.render_ddl()

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
            result = open_database(named_database(db)).execute(verdict["sql"], max_rows=min(max_rows, 10_000))
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

        path = named_database(db)
        gen = generate(question, open_database(path), LLM(model), mode="direct", refine=1, dialect="sqlite" if path.suffix == ".sqlite" else "duckdb")
        if gen.final_sql is None:
            return {"executed": False, "error": "The model wrote no SQL."}
        return {"generated_sql": gen.final_sql, **run_sql(db, question, gen.final_sql)}

    return server
