"""Conventions of the database and of counting: the database's own "now", and DISTINCT when counting people."""

from __future__ import annotations

import re
from functools import partial

from sqlglot import exp

from ehrguard.verify.checks.base import NOTHING, CheckResult, SqlContext, TextEdit, TreeEdit, found
from ehrguard.verify.verdict import Finding

_NOW_CALL = re.compile(r"""(?:datetime|date|strftime\s*\([^,]+,)\s*\(\s*['"]now['"]|current_(?:timestamp|date|time)\b""", re.IGNORECASE)
_PEOPLE = re.compile(r"\b(patients|people|persons|individuals|subjects)\b", re.IGNORECASE)
_COUNTING = re.compile(r"\bhow many|\bcount|\bnumber of", re.IGNORECASE)


def check_now(ctx: SqlContext) -> CheckResult:
    """A database with its own "now" (EHRSQL-style ones fix it at 2100-12-31 23:59:00): the machine clock is wrong there."""
    now = ctx.db.profile.now
    if now is None:
        return NOTHING
    m = _NOW_CALL.search(ctx.sql)
    if not m:
        return NOTHING
    return found(Finding("wrong_now", "error", f"'now' in this database is {now}, not the machine clock.",
                         (m.start(), m.end()), f"'{now}'"),
                 edits=[TextEdit(partial(anchor_now, now=now))])


def anchor_now(sql: str, now: str) -> str:
    """``sql`` with the machine clock ('now', CURRENT_TIMESTAMP, CURRENT_DATE, ...) replaced by the database's ``now``."""
    sql = re.sub(r"""(['"])now\1""", f"'{now}'", sql, flags=re.IGNORECASE)
    sql = re.sub(r"\bcurrent_timestamp\b|\bcurrent_time\b", f"'{now}'", sql, flags=re.IGNORECASE)
    return re.sub(r"\bcurrent_date\b", f"'{now[:10]}'", sql, flags=re.IGNORECASE)


def _distinct_argument(count: exp.Expression) -> None:
    count.set("this", exp.Distinct(expressions=[count.this.copy()]))


def check_count_distinct(ctx: SqlContext) -> CheckResult:
    """Counting patients needs DISTINCT: one patient has many rows."""
    if ctx.tree is None or not _PEOPLE.search(ctx.question) or not _COUNTING.search(ctx.question):
        return NOTHING
    person_ids = ctx.db.profile.person_ids
    findings = []
    edits = []
    for count in ctx.tree.find_all(exp.Count):
        arg = count.this
        if isinstance(arg, exp.Column) and arg.name.lower() in person_ids:
            text = count.sql(dialect="sqlite")
            findings.append(Finding("count_without_distinct", "warning", "Counting patients without DISTINCT counts rows, not people.",
                                    ctx.span_of(text), f"COUNT(DISTINCT {arg.sql(dialect='sqlite')})"))
            edits.append(TreeEdit(_distinct_argument, target=count))
    return found(*findings, edits=edits)
