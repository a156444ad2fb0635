"""A subquery compared as one value that returns several rows.

``itemid = (SELECT itemid FROM d_labitems WHERE label = 'potassium, whole blood')`` reads as "the item with that name",
but two items carry it: SQLite compares with whichever row it meets first and says nothing (PostgreSQL refuses the
query), so the answer depends on the order of a dictionary's rows. Found by running the subquery (an uncorrelated one:
a subquery that reads the outer query's rows cannot run alone and is left alone).

When the subquery looks a name up (one equality on a text column), every row it returns carries that name and the
comparison meant all of them: repaired to ``IN``. Otherwise which row was meant is not certain, and it is reported.
"""

from __future__ import annotations

from sqlglot import exp

from ehrguard.errors import DatabaseError
from ehrguard.sqltree import clause
from ehrguard.verify.checks.base import NOTHING, CheckResult, Edit, SqlContext, TreeEdit, found
from ehrguard.verify.checks.concepts import name_columns
from ehrguard.verify.verdict import Finding

MAX_SHOWN = 5


def check_scalar_subqueries(ctx: SqlContext) -> CheckResult:
    """``column = (SELECT ...)`` where the subquery returns more than one row."""
    if ctx.tree is None:
        return NOTHING
    findings: list[Finding] = []
    edits: list[Edit] = []
    for node in ctx.tree.find_all(exp.EQ):
        sub = node.expression if isinstance(node.expression, exp.Subquery) else None
        if sub is None or not isinstance(sub.this, exp.Select) or len(sub.this.expressions) != 1 or sub.this.args.get("limit") \
                or sub.this.args.get("order"):
            continue  # with LIMIT, or an ORDER BY whose first row SQLite takes: one row is meant
        try:
            rows = ctx.db.db.execute(sub.this.sql(dialect=ctx.dialect), timeout_s=5, max_rows=100).rows
        except DatabaseError:
            continue  # correlated (it reads the outer query's row), or too slow: not judged
        values = list(dict.fromkeys(r[0] for r in rows))
        if len(values) < 2:
            continue
        shown = ", ".join(str(v) for v in values[:MAX_SHOWN]) + (", ..." if len(values) > MAX_SHOWN else "")
        lookup = _name_lookup(ctx, sub.this)
        findings.append(Finding("scalar_subquery_rows", "error",
                                f"The subquery compared as one value returns {len(values)} different values ({shown}); '=' keeps only "
                                "the first the database meets" + (f", though every one is {lookup}." if lookup else "."),
                                ctx.span_of(sub.sql(dialect=ctx.dialect)), "IN (...)" if lookup else None))
        if lookup:
            edits.append(TreeEdit(_to_in, target=node))
    return found(*findings, edits=edits)


def _name_lookup(ctx: SqlContext, select: exp.Select) -> str | None:
    """The name a subquery looks up by one equality on a column of names (``WHERE label = 'x'``: the profile's name
    columns, not an id), as shown to the reader."""
    where = select.args.get("where")
    source = clause(select, "from")
    if select.args.get("joins") or select.args.get("group") or where is None or not isinstance(where.this, exp.EQ) \
            or source is None or not isinstance(source.this, exp.Table):
        return None
    left, right = where.this.this, where.this.expression
    names = {(t.lower(), c.lower()) for t, c in name_columns(ctx)}
    if isinstance(left, exp.Column) and isinstance(right, exp.Literal) and right.is_string \
            and (source.this.name.lower(), left.name.lower()) in names:
        return f"{left.name} '{right.this}'"
    return None


def _to_in(node: exp.Expression) -> None:
    sub = node.expression
    assert isinstance(sub, exp.Subquery)
    node.replace(exp.In(this=node.this, query=sub))
