"""A number read from text keeps all its digits.

Text columns that hold amounts write some of them with a thousands separator ('2,000 mg'): a CAST to a number stops
at the comma and reads 2. ``comma_cut_number`` (error) speaks when the query casts a text column to a number and the
column holds values with a digit group after a comma (read from the data, not from a list of columns), and reading
them without the commas changes the answer. The repair casts ``REPLACE(column, ',', '')``.
"""

from __future__ import annotations

import re

from sqlglot import exp

from ehrguard.errors import DatabaseError
from ehrguard.verify.checks.base import NOTHING, CheckResult, SqlContext, TreeEdit, answers_differently, found, quoted_names, rewritten
from ehrguard.verify.checks.schema_refs import aliases, owner_table
from ehrguard.verify.verdict import Finding

_NUMBER_TYPES = re.compile(r"real|int|numeric|decimal|double|float", re.IGNORECASE)


def _holds_grouped_digits(ctx: SqlContext, table: str, column: str) -> bool:
    """Does some value of the column start with a number written with a thousands separator ('2,000 mg')?"""
    info = ctx.db.schema.table(table)
    col = info.column(column) if info is not None else None
    if info is None or col is None or not re.search(r"char|text|string", col.type.lower()):
        return False
    try:
        source, name = quoted_names(ctx, info.qualified_name, column)
        rows = ctx.db.db.execute(f"SELECT {name} FROM {source} WHERE {name} LIKE '%,___%' LIMIT 200", timeout_s=5).rows
    except DatabaseError:
        return False
    return any(re.match(r"\s*\d{1,3}(?:,\d{3})+(?!\d)", str(r[0])) for r in rows if r[0] is not None)


def _without_commas(column: exp.Column) -> exp.Expression:
    return exp.Anonymous(this="REPLACE", expressions=[column.copy(), exp.Literal.string(","), exp.Literal.string("")])


def check_comma_cut(ctx: SqlContext) -> CheckResult:
    """CAST(text AS number) over a column that writes some numbers with a thousands separator."""
    if ctx.tree is None or isinstance(ctx.execution, DatabaseError):
        return NOTHING
    tables, _ = aliases(ctx.tree)
    for cast in ctx.tree.find_all(exp.Cast):
        column = cast.this
        if not isinstance(column, exp.Column) or not _NUMBER_TYPES.search(cast.to.sql()):
            continue
        table = owner_table(ctx, tables.get(column.table.lower(), column.table.lower()), column.name, tables)
        if not table or not _holds_grouped_digits(ctx, table, column.name):
            continue
        whole = cast.copy()
        whole.set("this", _without_commas(column))
        if not answers_differently(ctx, rewritten(ctx.tree, cast, whole)):
            continue
        shown = whole.sql(dialect=ctx.dialect)
        return found(Finding("comma_cut_number", "error",
                             f"{table}.{column.name} writes some amounts with a thousands separator ('2,000'): the cast "
                             f"reads them up to the comma (2). Read as {shown}.", ctx.span_of(cast.sql(dialect=ctx.dialect)),
                             shown),
                     edits=[TreeEdit(lambda node: node.set("this", _without_commas(node.this)), target=cast)])
    return NOTHING
