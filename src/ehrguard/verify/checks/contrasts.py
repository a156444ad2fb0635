"""The question asks about one side of a clinical contrast and the query reads the other: intake answered from
output, weight from a height item, systolic from diastolic, a lab test from charted vitals, marital status from
ethnicity.

What the query reads is taken from everything it names: its tables and columns, its text literals, and the
dictionary label of every item it selects by number (``itemid = 226730`` is 'Height (cm)' in ``d_items``). A side
counts only when the question names it and not the other, and the query names the other and not it.
"""

from __future__ import annotations

import re

from sqlglot import exp

from ehrguard.errors import DatabaseError
from ehrguard.verify.checks.base import NOTHING, CheckResult, SqlContext, found, quoted_names
from ehrguard.verify.verdict import Finding

# Pairs of opposite clinical notions, each side as the stems people and schemas write it (general clinical English).
CONTRASTS: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = (
    (("intake", "input", "infus"), ("output",)),
    (("weight",), ("height",)),
    (("systolic",), ("diastolic",)),
    (("lab(?!el)", "laborator"), ("chart", "vital")),
    (("marital", "married", "divorced", "widowed"), ("ethnic", "race")),
)
_NAMES = {"intake": "intake", "input": "intake", "infus": "intake", "output": "output", "weight": "weight",
          "height": "height", "systolic": "systolic", "diastolic": "diastolic", "lab(?!el)": "a lab test",
          "laborator": "a lab test", "chart": "charted values", "vital": "vital signs", "marital": "marital status",
          "married": "marital status", "divorced": "marital status", "widowed": "marital status", "ethnic": "ethnicity",
          "race": "race"}


def _split(name: str) -> str:
    return name.lower().replace("_", " ")


def item_labels(ctx: SqlContext, tree: exp.Expression) -> list[str]:
    """The dictionary labels of the items the query selects by number (``itemid = N`` / ``IN (...)``)."""
    numbers: dict[str, set[str]] = {}
    for node in tree.find_all(exp.EQ, exp.In):
        col = node.this
        if not isinstance(col, exp.Column) or not col.name.lower().endswith("itemid"):
            continue
        literals = node.expressions if isinstance(node, exp.In) else [node.expression]
        numbers.setdefault(col.name.lower(), set()).update(
            lit.this for lit in literals if isinstance(lit, exp.Literal) and not lit.is_string)
    labels: list[str] = []
    for column, values in numbers.items():
        for table in ctx.db.schema.tables:
            key_column, label_column = table.column(column), table.column("label")
            if not table.name.lower().startswith("d_") or key_column is None or label_column is None:
                continue
            listed = ", ".join(v for v in values if v.isdigit())
            if not listed:
                continue
            try:
                source, key = quoted_names(ctx, table.qualified_name, key_column.name)
                label = quoted_names(ctx, table.qualified_name, label_column.name)[1]
                rows = ctx.db.db.execute(f"SELECT {label} FROM {source} WHERE {key} IN ({listed})", timeout_s=5).rows
            except DatabaseError:
                continue
            labels.extend(str(r[0]) for r in rows if r[0] is not None)
    return labels


def _what_the_query_reads(ctx: SqlContext, tree: exp.Expression) -> list[str]:
    """The names the query reads by: tables, columns (not times: ``charttime``, ``chartdate`` say nothing of charts), text literals and
    the labels of the items it selects by number."""
    parts = [_split(t.name) for t in tree.find_all(exp.Table)]
    parts += [_split(c.name) for c in tree.find_all(exp.Column) if not c.name.lower().endswith(("time", "date"))]
    parts += [lit.this.lower() for lit in tree.find_all(exp.Literal) if lit.is_string]
    parts += [label.lower() for label in item_labels(ctx, tree)]
    return parts


# How a question writes a stem when the stem alone would start other words ("lab" starts labetalol and labor).
_IN_QUESTIONS = {"lab(?!el)": r"labs?\b"}


def _says(text: str, stems: tuple[str, ...], *, inside_words: bool = False) -> str | None:
    """The first stem the text holds at the start of a word, or anywhere in a word with ``inside_words`` (schema names
    run words together: ``outputevents``, ``admissionweight``)."""
    if inside_words:
        return next((s for s in stems if re.search(s, text)), None)
    return next((s for s in stems if re.search("(?<![a-z])" + _IN_QUESTIONS.get(s, s), text)), None)


def check_contrasts(ctx: SqlContext) -> CheckResult:
    """The question names one side of a contrast and the query reads only the other."""
    if ctx.tree is None:
        return NOTHING
    question = ctx.question.lower()
    reads = _what_the_query_reads(ctx, ctx.tree)
    findings = []
    for one, other in CONTRASTS:
        # A name holding both sides (eICU's ``intakeoutput``) says neither.
        sides = [(_says(part, one, inside_words=True), _says(part, other, inside_words=True)) for part in reads]
        sides = [(a, b) for a, b in sides if (a is None) != (b is None)]
        for asked, wrong, index in ((one, other, 0), (other, one, 1)):
            said, unsaid = _says(question, asked), _says(question, wrong)
            if said is None or unsaid is not None:
                continue
            took = next((s[1 - index] for s in sides if s[1 - index] is not None), None)
            if took is not None and not any(s[index] is not None for s in sides):
                findings.append(Finding("wrong_concept", "error",
                                        f"The question asks about {_NAMES[said]}; the query reads {_NAMES[took]} instead."))
    return found(*findings)
