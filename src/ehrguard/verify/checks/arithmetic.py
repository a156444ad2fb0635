"""A share, rate or average computed by dividing integers: SQLite and PostgreSQL divide integers to an integer.

``100 * SUM(CASE WHEN died THEN 1 ELSE 0 END) / COUNT(*)`` gives 12, not 12.6: the fraction is cut off, silently. Found
by running the query with each division's dividend made a decimal (``* 1.0``): when the answer changes, the division
was cut. Only where the question asks for a share, a rate, a ratio or an average (a whole number of weeks may be
meant); repaired to the decimal division.

``fraction_for_percentage`` (error): the question asks for a percentage and the query divides without a factor of 100
anywhere, giving a fraction (0.12 read as 0.12% is a hundred times too small). Repaired by multiplying the dividend by
100.0 (which also makes the division a decimal one).
"""

from __future__ import annotations

import re

from sqlglot import exp

from ehrguard.errors import DatabaseError
from ehrguard.verify.checks.alignment import masked_question
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
    return isinstance(node.unnest(), exp.Literal)


def _decimal_dividend(div: exp.Expression) -> None:
    div.set("this", exp.Mul(this=exp.Paren(this=div.this.copy()), expression=exp.Literal.number("1.0")))


def _cut(whole: object, decimal: object) -> bool:
    """An integer result that the decimal division shows was cut (12 against 12.6)."""
    return isinstance(whole, int) and isinstance(decimal, float) and abs(decimal - whole) > 1e-9


# The words, not the sign: "%" also writes a threshold ("an A1c above 6.5%") or a strength ("0.9% saline").
_ASKS_PERCENT = re.compile(r"\bpercent(?:age)?s?\b", re.IGNORECASE)
_ASKS_SHARE = re.compile(r"\b(?:fraction|proportion|ratio|share)\b", re.IGNORECASE)


def check_percentage(ctx: SqlContext) -> CheckResult:
    """A percentage asked, a fraction computed: a division with no factor of 100 in the query, whose answers are
    between 0 and 1 (and not all 0, which reads the same either way) when it runs."""
    if ctx.tree is None or not _ASKS_PERCENT.search(masked_question(ctx)) or _ASKS_SHARE.search(ctx.question):
        return NOTHING
    divisions = [d for d in _divisions(ctx.tree) if d.find_ancestor(exp.Select) is ctx.tree]
    if not divisions or any(_hundred(lit) for lit in ctx.tree.find_all(exp.Literal) if not lit.is_string):
        return NOTHING  # a factor of 100 somewhere (100, 100.0, 0.01): the writer meant a percentage
    decimal = ctx.tree.copy()  # read with decimal dividends: a share cut to 0 by whole-number division is a share too
    for div in [d for d in _divisions(decimal) if d.find_ancestor(exp.Select) is decimal]:
        _decimal_dividend(div)
    try:
        rows = ctx.db.db.execute(decimal.sql(dialect=ctx.dialect), timeout_s=5, max_rows=50).rows
    except DatabaseError:
        return NOTHING
    positions = [i for i, e in enumerate(ctx.tree.expressions) if e.find(exp.Div) in divisions]
    values = [r[i] for r in rows for i in positions if i < len(r) and isinstance(r[i], int | float)]
    if not values or not all(0 <= v <= 1 for v in values) or not any(values):
        return NOTHING
    return found(Finding("fraction_for_percentage", "error", "The query gives a fraction (between 0 and 1); the question asks for a "
                         "percentage, a hundred times that.", ctx.span_of("/"), "multiply by 100"),
                 edits=[TreeEdit(_percent_dividend, target=div) for div in divisions])


def _hundred(lit: exp.Literal) -> bool:
    try:
        return float(lit.this) in (100.0, 0.01)
    except ValueError:
        return False


def _percent_dividend(div: exp.Expression) -> None:
    div.set("this", exp.Mul(this=exp.Literal.number("100.0"), expression=exp.Paren(this=div.this.copy())))
