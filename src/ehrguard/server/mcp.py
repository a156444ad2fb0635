"""``ehrguard mcp``: an MCP server (stdio) for AI agents querying EHR databases, with every query checked.

Tools: ``list_databases``, ``get_schema``, ``verify_sql``, ``run_sql`` (the query is verified
first; an ambiguous, unanswerable or refused query is not executed and the result says why;
a corrected one runs in its corrected form) and ``ask`` (the configured model writes the SQL; with none, the
offline reader does, or says why it cannot). Every
call is written to the audit log with the caller ``mcp``. The tools go through
:func:`ehrguard.answer` and only shape its :class:`~ehrguard.Answer` for agents.

A call that fails (an unknown database, SQL too large to check, a missing argument) is an MCP tool
error (``isError``) with a one-line message, never a success that carries an error text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mcp.server.fastmcp import FastMCP
from mcp.server.fastmcp.exceptions import ToolError
from pydantic import ValidationError

from ehrguard import Answer, answer
from ehrguard.audit import AuditLog
from ehrguard.db import built_databases, named_database
from ehrguard.errors import EhrguardError
from ehrguard.server.limits import MAX_SQL
from ehrguard.verify import database_context, method_uses_model


class _Server(FastMCP):
    """FastMCP whose argument errors read as one line: ``run_sql: missing argument 'sql'``; ``audit`` is where its
    tools' entries go (a rehearsal swaps in a scratch log before the server takes requests)."""

    audit: AuditLog

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> Sequence[Any] | dict[str, Any]:
        try:
            return await super().call_tool(name, arguments)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError):
                raise ToolError(f"{name}: {_argument_problems(cause)}") from None
            raise


def _argument_problems(error: ValidationError) -> str:
    problems = []
    for item in error.errors():
        where = ".".join(str(p) for p in item.get("loc", ())) or "arguments"
        problems.append(f"missing argument {where!r}" if item.get("type") == "missing" else f"argument {where!r}: {item.get('msg')}")
    return "; ".join(problems) + ". See the tool's input schema."


def _fail_on_error(reply: Answer) -> Answer:
    """The reply, or a tool error with its message when ehrguard could not do what was asked."""
    if reply.error is not None:
        raise ToolError(str(reply.error).splitlines()[0] if str(reply.error) else type(reply.error).__name__)
    return reply


def build_server(audit: AuditLog | None = None, method: str = "offline", model: str | None = None) -> FastMCP:
    server = _Server("ehrguard",
                     instructions="EHR databases behind a safety layer: verify_sql before trusting any SQL; run_sql verifies for you.")
    server.audit = audit or AuditLog()

    # The configured model writes SQL (ask) and, when the method takes one, serves the verification too: with the
    # offline method it writes SQL only (it used to be handed to the offline verifier, which refuses any model).
    verifier_model = model if method_uses_model(method) else None

    def checked(db: str, question: str, sql: str | None = None, *, execute: bool = True, max_rows: int = 200) -> Answer:
        if sql is not None and len(sql) > MAX_SQL:  # as over REST: the checks' time grows with the SQL
            raise ToolError(f"The SQL is {len(sql):,} characters; the limit is {MAX_SQL:,}. Send the query itself, not a script.")
        # Only the verification is audited, an executed query in an entry of its own (mcp-run).
        return answer(question, db=db, sql=sql, model=model, method=method, verifier_model=verifier_model, names_only=True,
                      execute=execute, max_rows=max_rows, audit=server.audit, caller="mcp", interface="mcp", audit_errors=False,
                      audit_execution="mcp-run")

    @server.tool()
    def list_databases() -> dict[str, Any]:
        """The EHR databases on this machine."""
        return {"databases": [p.stem for p in built_databases()]}

    @server.tool()
    def get_schema(db: str) -> str:
        """CREATE TABLE statements of a database."""
        try:
            return database_context(named_database(db)).schema.render_ddl()
        except EhrguardError as exc:
            raise ToolError(str(exc)) from None

    @server.tool()
    def verify_sql(db: str, question: str, sql: str) -> dict[str, Any]:
        """Check a SQL query written for a question: preserve, correct (with the fixed SQL), ambiguous or unanswerable."""
        return _fail_on_error(checked(db, question, sql, execute=False)).verdict_summary()

    @server.tool()
    def run_sql(db: str, question: str, sql: str, max_rows: int = 200, allow_unverified: bool = False) -> dict[str, Any]:
        """Verify the query for the question, then run it read-only if (and as) the verifier allows. A query the
        verifier cannot vouch for (status unverified) is not run unless allow_unverified is true."""
        return _run_result(_fail_on_error(checked(db, question, sql, max_rows=min(max_rows, 10_000))), allow_unverified)

    @server.tool()
    def ask(db: str, question: str, allow_unverified: bool = False) -> dict[str, Any]:
        """Answer a question: the configured model writes the SQL (with none, the offline reader writes it from the known
        question it paraphrases, or says why it cannot), it is verified, and run if allowed (an unverified query only
        with allow_unverified). When nothing can be answered, the reply says why (or asks the clarifying question)."""
        reply = checked(db, question)
        if reply.verdict is None:
            if reply.error is not None:
                _fail_on_error(reply)
            reading = reply.reading.to_dict() if reply.reading is not None else None
            return {"executed": False, "answered": False, "reason": reply.message, "reading": reading}
        reply = _fail_on_error(reply)
        reading = reply.reading.to_dict() if reply.reading is not None else None
        return {"generated_sql": reply.generated_sql, "reading": reading, "second_opinion": reply.second_opinion,
                **_run_result(reply, allow_unverified)}

    return server


def _run_result(reply: Answer, allow_unverified: bool = False) -> dict[str, Any]:
    """What ``run_sql`` returns: the verdict in brief and the rows, or why nothing ran."""
    verdict = reply.verdict_summary()
    rows = reply.result_dict()
    if rows is None:
        return {"executed": False, "verdict": verdict, "reason": verdict["message"]}
    if verdict["status"] != "verified" and not allow_unverified:
        return {"executed": False, "verdict": verdict, "reason": "Not verified: " + str(verdict["reason"]) +
                " Pass allow_unverified=true to run it anyway; its result is not checked."}
    return {"executed": True, "verdict": verdict, **rows}
