"""A share, rate or average computed by dividing integers: SQLite and PostgreSQL divide integers to an integer.

``100 * SUM(CASE WHEN died THEN 1 ELSE 0 END) / COUNT(*)`` gives 12, not 12.6: the fraction is cut off, silently. Found
by running the query with each division's dividend made a decimal (``* 1.0``): when the answer changes, the division
was cut. Only where the question asks for a share, a rate, a ratio or an average (a whole number of weeks may be
meant); repaired to the decimal division.
"""

from __future__ import annotations

import re

from sqlglot import exp

from ehrguard.errors import DatabaseError
from ehrguard.verify.checks.base import NOTHING, CheckResult, SqlContext, TreeEdit, found
from ehrguard.verify.verdict import Finding

_ASKS_FRACTION = re.compile(r"%|\b(?:percent(?:age)?s?|proportion|ratio|rate|fraction|share|average|mean|per)\b", re.IGNORECASE)


def check_integer_division(ctx: SqlContext) -> CheckResult:
    """A division whose answer changes when its dividend is a decimal."""
    if ctx.tree is None or not _ASKS_FRACTION.search(ctx.question) or not _divisions(ctx.tree):
        return NOTHING
    decimal = ctx.tree.copy()
    for div in _divisions(decimal):
        _decimal_dividend(div)
    try:
        before = ctx.db.db.execute(ctx.tree.sql(dialect=ctx.dialect), timeout_s=5, max_rows=50).rows
        after = ctx.db.db.execute(decimal.sql(dialect=ctx.dialect), timeout_s=5, max_rows=50).rows
    except DatabaseError:
        return NOTHING
    if len(before) != len(after) or not any(_cut(a, b) for r, s in zip(before, after, strict=True) for a, b in zip(r, s, strict=True)):
        return NOTHING
    return found(Finding("integer_division", "error", "The query divides whole numbers, and the database keeps only the whole part "
                         "of the result; the share asked for has a fraction.", ctx.span_of("/"), "a decimal division (* 1.0)"),
                 edits=[TreeEdit(_decimal_dividend, target=div) for div in _divisions(ctx.tree)])


def _divisions(tree: exp.Expression) -> list[exp.Div]:
    """The outermost divisions a result is computed by: not one inside another, an aggregate's argument
    (``COUNT(DISTINCT age / 10)`` groups by decade), a condition, a grouping, an order or a CASE."""
    return [div for div in tree.find_all(exp.Div)
            if div.find_ancestor(exp.Div, exp.AggFunc, exp.Where, exp.Having, exp.Group, exp.Order, exp.Join, exp.Case) is None
            and not (_literal(div.this) and _literal(div.expression))]  # two numbers: idioms.whole_number_quotient


def _literal(node: exp.Expression) -> bool:
    while isinstance(node, exp.Paren):
        node = node.this
    return isinstance(node, exp.Literal)


def _decimal_dividend(div: exp.Expression) -> None:
    div.set("this", exp.Mul(this=exp.Paren(this=div.this.copy()), expression=exp.Literal.number("1.0")))


def _cut(whole: object, decimal: object) -> bool:
    """An integer result that the decimal division shows was cut (12 against 12.6)."""
    return isinstance(whole, int) and isinstance(decimal, float) and abs(decimal - whole) > 1e-9
