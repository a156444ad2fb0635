"""Is there one read-only statement that parses? Run first: the other checks read the parse tree or execute."""

from __future__ import annotations

from ehrguard.db.engine import check_select_only
from ehrguard.errors import DatabaseError
from ehrguard.evaluation.execution_match import is_abstention
from ehrguard.verify.checks.base import NOTHING, CheckResult, SqlContext, found
from ehrguard.verify.verdict import Finding


def check_abstained(ctx: SqlContext) -> CheckResult:
    """The upstream model produced no SQL (``null``, empty, ``N/A``)."""
    if is_abstention(ctx.sql) or not ctx.sql.strip() or ctx.sql.strip().lower() in ("n/a", "none"):
        return found(Finding("abstained", "error", "The text-to-SQL model returned no query."))
    return NOTHING


def check_read_only(ctx: SqlContext) -> CheckResult:
    """Only a single SELECT/WITH statement may run (the engine enforces it too; this says so before running)."""
    try:
        check_select_only(ctx.sql)
    except DatabaseError as exc:
        return found(Finding("read_only", "error", str(exc)))
    return NOTHING


def check_parses(ctx: SqlContext) -> CheckResult:
    if ctx.tree is None:
        return found(Finding("parse", "error", "The SQL does not parse as a single statement."))
    return NOTHING
