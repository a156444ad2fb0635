"""A table that records several kinds of event, told apart by a column that names the kind, is read for the kind the
question names.

Some tables hold rows about other tables' records: a cost row is the charge of a diagnosis, a procedure, a lab test or
a prescription, and its kind column says which by the name of the table the event is recorded in (MIMIC-IV's
``cost.event_type``: 'diagnoses_icd', 'labevents'; eICU's ``cost.eventtype``: 'medication', 'lab'). "The total cost of
diagnoses coded for admission 22595853" reads the diagnoses' rows of that table; a query that sums every row of the
admission answers for all kinds together.

``missing_kind`` (error, repaired by ``column = 'kind'``) speaks when a table the query reads has such a column (a
text column whose values, at least two of them, are names of the schema's own tables: found from the schema and the
data, not from a list), the query never reads that column nor the table of the kind, the question names exactly one
of the kinds (a word of it: "diagnoses", "lab", "medication charges"), and keeping to that kind changes the answer.
"""

from __future__ import annotations

import re

from sqlglot import exp

from ehrguard.errors import DatabaseError
from ehrguard.verify.checks.base import NOTHING, CheckResult, SqlContext, TreeEdit, add_condition, answers_differently, found
from ehrguard.verify.verdict import Finding

# A table of kinds has few of them: a column of more values is a name or a label, not a kind.
MAX_KINDS = 12
# Parts of a table's name that say how it is stored, not what it records ('diagnoses_icd': diagnoses; 'labevents': lab).
_STORAGE = re.compile(r"_?(?:icd|events?|items?|data|table)$")


def _kind_words(value: str) -> set[str]:
    """The words a question names a kind by: the table name's parts that say what it records ('diagnoses_icd' ->
    diagnoses; 'labevents' -> lab), each with its first five letters (diagnosis, diagnosed)."""
    words = set()
    for part in re.split(r"[_\s]+", _STORAGE.sub("", value.lower())):
        if len(part) >= 3:
            words.add(part[:5] if len(part) > 5 else part)
    return words


def _question_names(question: str, stems: set[str]) -> bool:
    return any(w[:5] in stems or (len(w) <= 5 and w in stems) for w in re.findall(r"[a-z]+", question.lower()))


def _kind_column(ctx: SqlContext, table: str, read: set[str]) -> tuple[str, list[str]] | None:
    """The column of ``table`` whose values name tables of the schema (the kinds), with those values; None if none."""
    info = ctx.db.schema.table(table)
    tables = {t.name.lower() for t in ctx.db.schema.tables}
    for column in info.columns if info is not None else ():
        name = column.name.lower()
        if name in read or name.endswith("id") or not re.search(r"char|text|string", column.type.lower()):
            continue
        try:
            if not 2 <= ctx.db.values.distinct_count(table, column.name) <= MAX_KINDS:
                continue
            values = ctx.db.values.values(table, column.name)
        except DatabaseError:
            continue
        kinds = [v for v in values if v and v.lower() in tables]
        if len(kinds) >= 2:
            return column.name, kinds
    return None


def check_kind(ctx: SqlContext) -> CheckResult:
    """The question names one kind of event; the query reads a table of several kinds and keeps all of them."""
    if not isinstance(ctx.tree, exp.Select) or isinstance(ctx.execution, DatabaseError):
        return NOTHING
    read_tables = {t.name.lower() for t in ctx.tree.find_all(exp.Table)}
    read_columns = {c.name.lower() for c in ctx.tree.find_all(exp.Column)}
    own = ctx.own_tables(ctx.tree)
    for alias, table in own.items():
        kind_column = _kind_column(ctx, table, read_columns)
        if kind_column is None:
            continue
        column, kinds = kind_column
        named = [k for k in kinds if _question_names(ctx.question, _kind_words(k))]
        if len(named) != 1 or named[0].lower() in read_tables:
            continue  # no kind named, several, or the kind's own table is read (its rows choose the events)
        kind = named[0]
        qualifier = alias if len(own) > 1 or alias != table else None
        condition = exp.EQ(this=exp.column(column, table=qualifier), expression=exp.Literal.string(kind))
        tested = ctx.tree.copy()
        add_condition(condition)(tested)
        if not answers_differently(ctx, tested):
            continue
        shown = condition.sql(dialect="sqlite")
        return found(Finding("missing_kind", "error",
                             f"The question asks only about the '{kind}' rows of {table}, which holds several kinds "
                             f"({column}: {', '.join(repr(k) for k in kinds)}); the query keeps them all. Added {shown}.",
                             None, shown),
                     edits=[TreeEdit(add_condition(condition))])
    return NOTHING
