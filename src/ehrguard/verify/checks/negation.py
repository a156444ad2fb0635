"""Who never had something is found by leaving out everyone who had it, not by keeping the rows of other things.

"How many patients never received aspirin?" answered with ``WHERE drug <> 'aspirin'`` counts every patient with any
other order, including those who also received aspirin: the negation is applied to rows, the question applies it to
people. ``row_negation`` (error, no repair: whether the people with no record at all belong is the asker's to say)
speaks when the question negates the value right before naming it ("never received aspirin", "without a heparin
order", "did not get vancomycin"), the query excludes that value row by row (``<>``, ``NOT LIKE``, ``NOT IN`` a list,
``NOT col = ...``) in a table holding several rows per person, returns or counts people or visits, and leaving the
people out instead (``person NOT IN (SELECT person ... WHERE col = value)``) changes the answer on this database.
"""

from __future__ import annotations

import re

from sqlglot import exp

from ehrguard.errors import DatabaseError
from ehrguard.verify.checks.base import NOTHING, CheckResult, SqlContext, found, stored_table
from ehrguard.verify.checks.concepts import supported
from ehrguard.verify.checks.conventions import one_row_per_person, visit_ids
from ehrguard.verify.checks.schema_refs import aliases, owner_table
from ehrguard.verify.verdict import Finding

# A negation of having, receiving or being given something, and the words that follow it (general English).
_NEGATED = re.compile(r"\b(?:never|not|no|without|didn't|hasn't|haven't|hadn't|wasn't|weren't|none of)\b((?:\W+\w+){1,6})",
                      re.IGNORECASE)


def _negated_phrases(question: str) -> list[str]:
    return [m.group(1) for m in _NEGATED.finditer(question)]


def _row_exclusions(select: exp.Select) -> list[tuple[exp.Expression, exp.Column, list[exp.Literal]]]:
    """The select's own conditions that drop rows holding some values: (the condition, its column, the values)."""
    where = select.args.get("where")
    if where is None:
        return []
    out = []
    for node in where.find_all(exp.NEQ, exp.Not, exp.Like, exp.In):
        if node.find_ancestor(exp.Select) is not select:
            continue
        if isinstance(node, exp.Like | exp.In) and not node.args.get("negate"):  # sqlglot's ``x NOT LIKE y``
            continue
        inner = node.this if isinstance(node, exp.Not) else node
        if isinstance(node, exp.Not) and not isinstance(inner, exp.EQ | exp.Like | exp.In):
            continue
        column = inner.this if isinstance(inner.this, exp.Column) else None
        values = inner.expressions if isinstance(inner, exp.In) else [inner.args.get("expression")]
        literals = [v for v in values if isinstance(v, exp.Literal) and v.is_string]
        if column is not None and literals and len(literals) == len(values):
            out.append((node, column, literals))
    return out


def _returned_ids(select: exp.Select, ids: set[str]) -> list[str]:
    """The people's or visits' ids the select returns or counts."""
    return list(dict.fromkeys(c.name.lower() for e in select.expressions for c in e.find_all(exp.Column) if c.name.lower() in ids))


def _answer(ctx: SqlContext, tree: exp.Expression) -> list[tuple[object, ...]] | None:
    try:
        return sorted((tuple(r) for r in ctx.db.db.execute(tree.sql(dialect=ctx.dialect), timeout_s=5, max_rows=10_000).rows), key=repr)
    except DatabaseError:
        return None


def check_row_negation(ctx: SqlContext) -> CheckResult:
    """The question's "never had X" read as "had something other than X"."""
    if ctx.tree is None or not ctx.db.profile.person_ids:
        return NOTHING
    phrases = _negated_phrases(ctx.question)
    if not phrases:
        return NOTHING
    ids = {ctx.db.profile.person_ids[0].lower(), *visit_ids(ctx)}
    tables, _ = aliases(ctx.tree)
    for select in ctx.tree.find_all(exp.Select):
        returned = _returned_ids(select, ids)
        for node, column, literals in _row_exclusions(select):
            table = owner_table(ctx, tables.get(column.table.lower(), column.table.lower()), column.name.lower(), tables)
            info = ctx.db.schema.table(table) if table else None
            person = next((i for i in returned if info is not None and info.column(i) is not None), None)
            if info is None or person is None or one_row_per_person(ctx, table, person):
                continue
            named = [lit.this.replace("%", " ").strip() for lit in literals]
            if not any(supported(v, phrase) for v in named if v for phrase in phrases):
                continue
            holders = exp.select(exp.column(person)).from_(stored_table(ctx, table)).where(
                exp.or_(*(exp.Like(this=exp.column(column.name), expression=lit.copy()) if "%" in lit.this
                          else exp.column(column.name).eq(lit.copy()) for lit in literals)))
            people = exp.column(person, table=column.table or None)
            left_out = ctx.tree.copy()
            target = next((n for n in left_out.find_all(type(node)) if n == node), None)
            if target is None:
                continue
            target.replace(exp.Not(this=exp.In(this=people, query=exp.Subquery(this=holders))))
            before, after = _answer(ctx, ctx.tree), _answer(ctx, left_out)
            if before is None or after is None or before == after:
                continue
            what = " or ".join(f"'{v}'" for v in named[:3])
            return found(Finding("row_negation", "error",
                                 f"The query drops only the rows of {what} ({table}.{column.name.lower()}), so anyone who had "
                                 f"{what} and anything else are still counted; the question asks for those who never had it "
                                 f"(leave them out: {person} NOT IN (SELECT {person} ... WHERE {column.name.lower()} = ...)).",
                                 ctx.span_of(node.sql(dialect="sqlite"))))
    return NOTHING
