"""Does the SQL run on the database, and does it return anything?"""

from __future__ import annotations

from ehrguard.errors import DatabaseError, QueryResourceError, QueryTimeoutError, QueryWorkerError
from ehrguard.verify.checks.base import NOTHING, CheckResult, SqlContext, found
from ehrguard.verify.verdict import Finding


def check_executes(ctx: SqlContext) -> CheckResult:
    """A query the engine rejects is wrong; one stopped by a limit could not be checked (on a busy server a sound query
    can overrun), which keeps its answer from being verified without calling the SQL wrong."""
    result = ctx.execution
    if isinstance(result, (QueryTimeoutError, QueryResourceError)):
        what = ("ran past the checks' time limit" if isinstance(result, QueryTimeoutError) else
                "found no query worker free to run it" if isinstance(result, QueryWorkerError) else "needed more memory than the limit")
        return found(Finding("not_checked", "warning", f"The query could not be checked: it {what}. Its answer is not verified."))
    if isinstance(result, DatabaseError):
        return found(Finding("execution", "error", f"The query fails on the database: {result}"))
    return NOTHING


def check_result(ctx: SqlContext) -> CheckResult:
    """An empty or all-NULL result, where the question expects an answer."""
    result = ctx.execution
    if isinstance(result, DatabaseError):
        return NOTHING
    if not result.rows:
        return found(Finding("empty_result", "warning", "The query returns no rows."))
    if all(v is None for row in result.rows for v in row):
        return found(Finding("null_result", "warning", "The query returns only NULL."))
    return NOTHING
