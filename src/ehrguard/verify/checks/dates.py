"""Dates written so that a time column compares with them otherwise than the writer meant.

Times are compared as text in SQLite (and a date literal is midnight everywhere):

- ``date_format`` (error): '2100-12-1' is not an ISO date; as text it sorts after '2100-12-10', so ``>= '2100-12-1'``
  drops the first nine days of the month. Repaired to the zero-padded date.
- ``day_bound`` (error): ``charttime <= '2100-12-29'`` or ``BETWEEN '2100-12-27' AND '2100-12-29'`` ends at midnight
  when Dec 29 begins: the rest of that day, which the writer meant to keep, is left out. Only where the data has
  rows later that day; repaired to the day's last second.
"""

from __future__ import annotations

import re
from datetime import date, timedelta

from sqlglot import exp

from ehrguard.errors import DatabaseError
from ehrguard.verify.checks.base import NOTHING, CheckResult, Edit, SqlContext, TreeEdit, found, stored_table
from ehrguard.verify.checks.keys import table_of
from ehrguard.verify.checks.schema_refs import aliases
from ehrguard.verify.checks.values import _replace_with
from ehrguard.verify.verdict import Finding

_LOOSE_DATE = re.compile(r"^(\d{4})-(\d{1,2})-(\d{1,2})((?:[ T].*)?)$")
_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_COMPARED = (exp.EQ, exp.GT, exp.GTE, exp.LT, exp.LTE)
_EXCLUSIVE = re.compile(r"\b(?:before|prior to|earlier than|up to but not)\b", re.IGNORECASE)


def check_dates(ctx: SqlContext) -> CheckResult:
    """Date literals a time column is compared with: written without leading zeros, or a day as an inclusive end."""
    if ctx.tree is None:
        return NOTHING
    tables = aliases(ctx.tree)[0]
    findings: list[Finding] = []
    edits: list[Edit] = []
    for lit in ctx.tree.find_all(exp.Literal) if ctx.dialect == "sqlite" else ():  # elsewhere a timestamp reads it as a date
        m = _LOOSE_DATE.match(lit.this) if lit.is_string else None
        if m is None or _DAY.match(lit.this[:10]) or not isinstance(lit.parent, (*_COMPARED, exp.Between)):
            continue
        year, month, day = (int(g) for g in m.groups()[:3])
        try:
            padded = date(year, month, day).isoformat() + m.group(4)
        except ValueError:
            continue
        findings.append(Finding("date_format", "error", f"'{lit.this}' is not written as a date the records compare with "
                                f"(YYYY-MM-DD): compared as text it falls among other days. Meant: '{padded}'.",
                                ctx.span_of(f"'{lit.this}'"), f"'{padded}'"))
        edits.append(TreeEdit(_replace_with(padded), target=lit))
    # "before the 17th", "prior to": the day is the first one left out, and midnight is where it starts
    ends = [] if _EXCLUSIVE.search(ctx.question) else _inclusive_day_ends(ctx.tree)
    for column, lit in ends:
        table = table_of(ctx, column, tables)
        if not table or not _later_that_day(ctx, table, column.name, lit.this):
            continue
        end = f"{lit.this} 23:59:59"
        findings.append(Finding("day_bound", "error", f"'{lit.this}' as the last time kept is midnight when that day begins: the "
                                f"rest of {lit.this} is left out of {column.name}.", ctx.span_of(f"'{lit.this}'"), f"'{end}'"))
        edits.append(TreeEdit(_replace_with(end), target=lit))
    return found(*findings, edits=edits)


def _inclusive_day_ends(tree: exp.Expression) -> list[tuple[exp.Column, exp.Literal]]:
    """A bare column (not wrapped in a date function) whose kept range ends with a day written without a time:
    ``col <= 'day'``, ``'day' >= col``, ``col BETWEEN x AND 'day'``."""
    out = []
    for node in tree.find_all(exp.LTE, exp.GTE, exp.Between):
        if node.find_ancestor(exp.Not) is not None:
            continue
        if isinstance(node, exp.Between):
            col, lit = node.this, node.args.get("high")
        elif isinstance(node, exp.LTE):
            col, lit = node.this, node.expression
        else:
            col, lit = node.expression, node.this
        if isinstance(col, exp.Column) and isinstance(lit, exp.Literal) and lit.is_string and _DAY.match(lit.this):
            out.append((col, lit))
    return out


def _later_that_day(ctx: SqlContext, table: str, column: str, day: str) -> bool:
    """Does the table have times after the day's midnight on that day?"""
    try:
        following = (date.fromisoformat(day) + timedelta(days=1)).isoformat()
    except ValueError:
        return False
    col = exp.column(column)
    query = exp.select("1").from_(stored_table(ctx, table)).where(
        exp.and_(exp.GT(this=col, expression=exp.Literal.string(day)), exp.LT(this=col.copy(), expression=exp.Literal.string(following)))
    ).limit(1)
    try:
        return bool(ctx.db.db.execute(query.sql(dialect=ctx.dialect), timeout_s=5).rows)
    except DatabaseError:
        return False
