"""An average or a total of one table's values, taken after a join that repeats its rows.

``SELECT AVG(p.admissionweight) FROM patient p JOIN diagnosis d ON d.patientunitstayid = p.patientunitstayid WHERE
d.diagnosisname = '...'``: a stay with the diagnosis entered three times weighs three times in the average. The join
was only meant to choose which stays count. Found from the data: the query's own rows, counted with and without
repeats of the averaged table's key, differ. Reported, not repaired (the rewrite keeps the join's conditions as a
subquery, and which of them belong there is not always certain).
"""

from __future__ import annotations

import re

from sqlglot import exp

from ehrguard.sqltree import clause
from ehrguard.verify.checks.base import NOTHING, CheckResult, SqlContext, TreeEdit, found, rows_and
from ehrguard.verify.checks.conventions import count_distinct, one_row_per_person
from ehrguard.verify.checks.schema_refs import aliases, owner_table
from ehrguard.verify.verdict import Finding


def check_fanout(ctx: SqlContext) -> CheckResult:
    """AVG or SUM of a column of a table whose rows the query's join repeats."""
    if not isinstance(ctx.tree, exp.Select) or not ctx.tree.args.get("joins") or ctx.tree.args.get("group"):
        return NOTHING
    tables = aliases(ctx.tree)[0]
    source = clause(ctx.tree, "from")
    if source is None or not isinstance(source.this, exp.Table):
        return NOTHING
    first = source.this.alias_or_name.lower()
    for agg in ctx.tree.find_all(exp.Avg, exp.Sum):
        col = agg.this
        if not isinstance(col, exp.Column) or agg.find_ancestor(exp.Select) is not ctx.tree:
            continue
        owner = "" if col.table else owner_table(ctx, "", col.name, tables)
        alias = col.table.lower() or next((a for a, t in tables.items() if owner and t == owner), "")
        table = tables.get(alias)
        if alias != first or table is None:
            continue  # the averaged table is joined to the rows the query is about ("the average age over all ICU stays")
        key = _row_key(ctx, table) or _joined_key(ctx, alias)
        if key is None or not one_row_per_person(ctx, table, key):
            continue
        figures = rows_and(ctx, ctx.tree, exp.Count(this=exp.Distinct(expressions=[exp.column(key, table=source.this.alias_or_name)])))
        if figures is not None and figures[0] > figures[1]:
            name = "average" if isinstance(agg, exp.Avg) else "total"
            return found(Finding("repeated_rows", "error", f"The {name} of {col.sql()} is taken over {figures[0]} joined rows of "
                                 f"{figures[1]} {table} rows: the join repeats some of them, and each repeat counts again.",
                                 ctx.span_of(agg.sql(dialect=ctx.dialect))))
    return NOTHING


def _row_key(ctx: SqlContext, table: str) -> str | None:
    """The column the schema declares as the table's primary key, when it is one column: each row's own id."""
    info = ctx.db.schema.table(table)
    keys = [c.name for c in info.columns if c.primary_key] if info is not None else []
    return keys[0] if len(keys) == 1 else None


def _joined_key(ctx: SqlContext, alias: str) -> str | None:
    """The column of ``alias`` the query joins on (``ON other.k = alias.k``), when it joins on exactly one."""
    assert isinstance(ctx.tree, exp.Select)
    keys = set()
    for join in ctx.tree.args.get("joins") or ():
        on = join.args.get("on")
        for eq in on.find_all(exp.EQ) if on is not None else ():
            for side, other in ((eq.this, eq.expression), (eq.expression, eq.this)):
                if isinstance(side, exp.Column) and isinstance(other, exp.Column) and side.table.lower() == alias \
                        and other.table.lower() != alias:
                    keys.add(side.name)
    return next(iter(keys)) if len(keys) == 1 else None


# The visits a question counts, by the name it gives them: which entity of the profile that is.
_COUNTED_VISITS = (("stay", re.compile(r"\bhow many (?:[\w-]+ ){0,4}?(?:icu |unit )?stays\b"
                                       r"|\bnumber of (?:[\w-]+ ){0,3}?(?:icu |unit )?stays\b", re.IGNORECASE)),
                   ("admission", re.compile(r"\bhow many (?:[\w-]+ ){0,4}?(?:admissions|hospitali[sz]ations|hospital stays|encounters)\b"
                                            r"|\bnumber of (?:[\w-]+ ){0,3}?(?:admissions|hospitali[sz]ations|hospital stays|encounters)\b",
                                            re.IGNORECASE)))


def check_counted_join(ctx: SqlContext) -> CheckResult:
    """Visits counted with COUNT(*) over a join that repeats them ("how many female ICU stays carried a sepsis
    diagnosis": a stay with the diagnosis entered five times counts five times). Found from the data: the query's
    rows and its distinct visit ids differ. Repaired to count each visit once."""
    if not isinstance(ctx.tree, exp.Select) or not ctx.tree.args.get("joins") or ctx.tree.args.get("group"):
        return NOTHING
    counts = [c for c in ctx.tree.expressions if isinstance(c, exp.Count) and isinstance(c.this, exp.Star)]
    source = clause(ctx.tree, "from")
    if len(counts) != 1 or source is None or not isinstance(source.this, exp.Table):
        return NOTHING
    kind = next((k for k, pattern in _COUNTED_VISITS if pattern.search(ctx.question)), None)
    entity = next((e for e in ctx.profile.entities if e.name == kind), None)
    info = ctx.db.schema.table(source.this.name)
    if entity is None or info is None or info.column(entity.id_column) is None or info.name.lower() != entity.table.lower():
        return NOTHING  # the query counts the rows of the visits' own table: events counted "during admissions" are events
    visit = exp.column(entity.id_column, table=source.this.alias_or_name if ctx.tree.args.get("joins") else None)
    figures = rows_and(ctx, ctx.tree, exp.Count(this=exp.Distinct(expressions=[visit.copy()])))
    if figures is None or figures[0] == figures[1]:
        return NOTHING
    return found(Finding("count_repeated_rows", "error", f"The question counts {kind}s; the query counts {figures[0]} joined rows of "
                         f"{figures[1]} {kind}s (the join repeats each one once per matching row).", None,
                         f"COUNT(DISTINCT {visit.sql()})"),
                 edits=[TreeEdit(count_distinct(visit), target=counts[0])])
