"""An average over patients counts each patient once.

"The mean age of the patients who died" is an average over people. A query that averages a column of a table of visits
(MIMIC-IV's admissions, eICU's unit stays) averages over visits: a patient with three stays weighs three times.
``averaged_over_visits`` (blocking warning, no repair: which visit's value stands for the patient, the first, the
last or their mean, is the asker's) speaks when the question averages over patients, the query is one SELECT of
``AVG(column)`` over a visit table with no grouping, and averaging each patient's visits first answers differently on
the database. A question about the visits themselves ("the mean age at admission over all admissions", "per stay")
is left alone.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from sqlglot import exp

from ehrguard.errors import DatabaseError
from ehrguard.verify.checks.base import NOTHING, CheckResult, SqlContext, TreeEdit, answers_differently, found, rewritten
from ehrguard.verify.verdict import Finding

# An average taken over people: "mean age of the patients who ...", "average weight of female pts" (general English).
_OVER_PATIENTS = re.compile(r"\b(?:mean|average|avg)\s+(?:[\w-]+\s+){0,3}?(?:of|among|across|for)\s+(?:the\s+|all\s+|our\s+|those\s+)?"
                            r"(?:[\w-]+\s+){0,2}?(?:patients|pts|people|persons|individuals)\b", re.IGNORECASE)
# ... and words that make it an average over visits after all.
_OVER_VISITS = re.compile(r"\b(?:per|each|every|all|over|across)\s+(?:hospital\s+|icu\s+|unit\s+)?(?:admissions?|stays?|visits?|"
                          r"encounters?|hospitali[sz]ations?)\b|\blength of (?:the )?stay|\blos\b|\bduration|\bhow long\b"
                          r"|\bat (?:their |all |the )?(?:admissions|visits|stays)\b|\bat each (?:admission|visit|stay)\b", re.IGNORECASE)


def check_average_over_patients(ctx: SqlContext) -> CheckResult:
    """The question averages over patients; the query averages a visit table's column over its visits."""
    tree = ctx.tree
    if not isinstance(tree, exp.Select) or isinstance(ctx.execution, DatabaseError) or not _OVER_PATIENTS.search(ctx.question) \
            or _OVER_VISITS.search(ctx.question) or any(tree.args.get(k) for k in ("group", "having", "order", "limit")):
        return NOTHING
    if len(tree.expressions) != 1 or not isinstance(tree.expressions[0].unalias(), exp.Avg):
        return NOTHING
    average = tree.expressions[0].unalias()
    patient = next((e for e in ctx.profile.entities if e.name == "patient"), None)
    visits = {e.table.lower() for e in ctx.profile.entities if e.name != "patient"}
    own = ctx.own_tables(tree)
    visit_aliases = [a for a, t in own.items() if t in visits]
    if patient is None or len(visit_aliases) != 1 or isinstance(average.this, exp.Distinct):
        return NOTHING
    alias = visit_aliases[0]
    columns = list(average.this.find_all(exp.Column))
    if not columns or any(c.table and c.table.lower() != alias for c in columns):
        return NOTHING  # the averaged value is not the visit table's own
    info = ctx.db.schema.table(own[alias])
    if info is None or info.column(patient.id_column) is None:
        return NOTHING
    # each patient's visits averaged first, then the patients
    inner = tree.copy()
    inner.set("expressions", [average.this.copy().as_("v"), exp.column(patient.id_column, table=alias if alias != own[alias] or
                                                                      len(own) > 1 else None).as_("p")])
    per_patient = exp.select(exp.Avg(this=exp.column("v")).as_("v"), "p").from_(inner.subquery("visits")).group_by("p")
    by_patient = exp.select(exp.Avg(this=exp.column("v"))).from_(per_patient.subquery("patients"))
    if not answers_differently(ctx, by_patient):
        return NOTHING
    return found(Finding("averaged_over_visits", "warning",
                         f"The question averages over patients; the query averages {own[alias]} rows, one per visit, so a "
                         "patient with several visits counts several times. Say which visit's value stands for each patient "
                         "(the first, the last, their mean) or average each patient's visits first.", None))


# A bound the question puts on each reading, not on their summary: "the average of their glucose readings that were
# above 200", "mean of the values over 100" (general English: the relative clause or the participle qualifies the rows).
_ROWS_BOUNDED = re.compile(r"\b(?:readings|values|results|measurements|levels|doses|labs|records|ones)\s+(?:that\s+|which\s+)?"
                           r"(?:were\s+|was\s+|are\s+|is\s+)?(above|over|greater than|more than|higher than|exceeding|below|under|"
                           r"less than|lower than)\s+(\d+(?:\.\d+)?)\b", re.IGNORECASE)
_UPWARD = ("above", "over", "greater than", "more than", "higher than", "exceeding")
_SUMMARY_WORD = re.compile(r"\b(?:average|avg|mean|median|in total|total|sum)\b(?! of\b)", re.IGNORECASE)


def check_rows_bounded_in_having(ctx: SqlContext) -> CheckResult:
    """The question bounds the readings ("the average of their glucose readings that were above 200") and the query
    bounds the groups' summary (``HAVING AVG(valuenum) > 200``): it averages every reading of the patients whose mean
    is above 200, not the readings above 200. Repaired by moving the bound to the rows (WHERE ``valuenum > 200``)."""
    if ctx.tree is None:
        return NOTHING
    # "mean glucose levels above 150", "values over 120 on average": the bound is the summary's after all
    # ("... readings that were above 200" qualifies the readings whatever is taken of them)
    bounds = [(m.group(1).lower(), float(m.group(2))) for m in _ROWS_BOUNDED.finditer(ctx.question)
              if re.search(r"\b(?:that|which)\b", m.group(0), re.IGNORECASE)
              or not _SUMMARY_WORD.search(ctx.question[max(0, m.start() - 30):m.end() + 20])]
    if len(bounds) != 1:
        return NOTHING
    word, number = bounds[0]
    upward = word in _UPWARD
    for having in ctx.tree.find_all(exp.Having):
        select = having.find_ancestor(exp.Select)
        compared = having.this
        if select is None or not isinstance(compared, exp.GT | exp.GTE | exp.LT | exp.LTE):
            continue
        aggregate, literal = compared.this, compared.expression
        # (MIN / MAX over a bound say "all" / "any" of the readings, which no bound on the rows says)
        if not isinstance(aggregate, exp.Avg | exp.Sum) or not isinstance(literal, exp.Literal) \
                or literal.is_string or float(literal.this) != number or isinstance(compared, exp.GT | exp.GTE) != upward:
            continue
        value = aggregate.this
        where = select.args.get("where")
        if not isinstance(value, exp.Column) or (where is not None and any(c.name == value.name for c in where.find_all(exp.Column))):
            continue  # the rows are bounded already
        row_bound = type(compared)(this=value.copy(), expression=literal.copy())
        moved = select.copy()
        _bound_rows(row_bound)(moved)
        if not answers_differently(ctx, rewritten(ctx.tree, select, moved)):
            continue
        return found(Finding("rows_bounded_in_having", "error", f"The question bounds each reading ({word} {literal.this}); the query "
                             f"bounds the groups' {aggregate.key.upper()} instead, so it takes every reading of the groups that pass.",
                             ctx.span_of(having.sql(dialect="sqlite")), row_bound.sql(dialect="sqlite")),
                     edits=[TreeEdit(_bound_rows(row_bound), target=select)])
    return NOTHING


def _bound_rows(row_bound: exp.Expression) -> Callable[[exp.Expression], None]:
    def apply(select: exp.Expression) -> None:
        if isinstance(select, exp.Select):
            select.set("having", None)
            select.where(row_bound.copy(), copy=False)

    return apply
