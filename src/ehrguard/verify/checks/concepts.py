"""The things the question names are the things the SQL looks for, read against the database's own values.

Two directions of one principle, both grounded in the data rather than in word lists:

- **substitution**: the SQL compares a column with a value the question does not mention, while the question
  names another value of that same column ("heart rate" asked, ``label = 'respiratory rate'`` queried);
- **a dropped constraint**: the question names a value of one of the database's name columns (a drug, a lab test,
  a diagnosis) and the SQL never looks for it.

A value "is named" when its words appear in the question at word boundaries; the name columns are the profile's
value columns with many distinct values (categorical columns such as gender hold plain words and are left out).
"""

from __future__ import annotations

import re

from sqlglot import exp

from ehrguard.db.lexicon import normal_form
from ehrguard.errors import DatabaseError
from ehrguard.verify.checks.base import NOTHING, CheckResult, Edit, SqlContext, TreeEdit, found
from ehrguard.verify.checks.schema_refs import aliases, owner_table
from ehrguard.verify.checks.values import _replace_with, literal_comparisons
from ehrguard.verify.verdict import Finding

# A column with at least this many distinct values holds names (drugs, tests, diagnoses), not categories.
NAME_COLUMN_MIN_VALUES = 50
# Longest value, in words, looked for in a question.
MAX_WORDS = 12
# Words too common to stand for a value on their own.
_PLAIN = frozenset((
    "a", "an", "the", "of", "for", "to", "in", "on", "at", "by", "with", "and", "or", "not", "no", "other", "unknown",
    "is", "was", "be", "patient", "patients", "time", "date", "day", "value", "values", "total", "count", "number",
    "type", "name", "level", "rate", "test", "result", "all", "any", "none", "yes", "last", "first", "left", "right",
))


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


_normal = normal_form
_HAS_LETTER = re.compile(r"[a-z]")


def _stem(word: str) -> str:
    return word[:5] if len(word) > 5 else word


def supported(literal: str, question: str) -> bool:
    """Does the question mention the literal: its words in order, or every content word of it (stems compared)?"""
    lit, q = _normal(literal.replace("%", " ")), _normal(question)
    if not lit or f" {lit} " in f" {q} ":
        return True
    content = [w for w in lit.split() if w not in _PLAIN and not w.isdigit()]
    if not content:
        return True
    stems = {_stem(w) for w in q.split()}
    return all(_stem(w) in stems for w in content)


class _Names:
    """The values of one column, by their normal form, and which of them a text names."""

    def __init__(self, values: list[str], normals: list[str]) -> None:
        self.by_normal: dict[str, str] = {}
        for v, n in zip(values, normals, strict=True):
            if len(n) >= 3 and n.count(" ") < MAX_WORDS and n not in _PLAIN and _HAS_LETTER.search(n):
                self.by_normal.setdefault(n, v)
        self.count = len(values)

    def named_in(self, text: str) -> list[str]:
        """The values the text names, longest first, none inside another one found."""
        words = _words(text)
        spans: list[tuple[int, int, str]] = []
        for i in range(len(words)):
            for j in range(min(len(words), i + MAX_WORDS), i, -1):
                hit = self.by_normal.get(" ".join(words[i:j]))
                if hit is not None:
                    spans.append((i, j, hit))
                    break
        spans.sort(key=lambda s: (-(s[1] - s[0]), s[0]))
        kept: list[tuple[int, int, str]] = []
        for a, b, v in spans:
            if all(b <= x or y <= a for x, y, _ in kept):
                kept.append((a, b, v))
        return list(dict.fromkeys(v for _, _, v in sorted(kept)))


def _names(ctx: SqlContext, table: str, column: str) -> _Names:
    def build() -> _Names:
        try:
            return _Names(ctx.db.values.values(table, column), ctx.db.values.normals(table, column))
        except DatabaseError:  # a column too slow or too large to index: no names, and not asked again
            return _Names([], [])

    return ctx.db.derived(("names", table, column), build)


def check_substitution(ctx: SqlContext) -> CheckResult:
    """The SQL looks for a value the question never mentions, in a column of which the question names another value."""
    if ctx.tree is None:
        return NOTHING
    tables, _ = aliases(ctx.tree)
    compared = literal_comparisons(ctx.tree, tables)
    everything = " ".join(lit.this for _, _, lit in compared)
    findings: list[Finding] = []
    edits: list[Edit] = []
    for table, column, lit in compared:
        table = owner_table(ctx, table, column, tables)
        if not table or column.endswith("id") or supported(lit.this, ctx.question):
            continue
        names = _names(ctx, table, column)
        if not names.by_normal:
            continue
        instead = [v for v in names.named_in(ctx.question) if not supported(v, everything) and _normal(v) not in _normal(lit.this)]
        if not instead:
            continue
        alternatives = " or ".join(f"'{v}'" for v in instead[:3])
        findings.append(Finding("wrong_value", "error",
                                f"The query looks for '{lit.this}' ({table}.{column}); the question names {alternatives}.",
                                ctx.span_of(f"'{lit.this}'"), f"'{instead[0]}'" if len(instead) == 1 else None))
        if len(instead) == 1 and "%" not in lit.this:
            edits.append(TreeEdit(_replace_with(instead[0]), target=lit))
    return found(*findings, edits=edits)


def _name_columns(ctx: SqlContext) -> list[tuple[str, str]]:
    """The profile's value columns that hold names (many distinct values) in this database."""

    def build() -> list[tuple[str, str]]:
        out = []
        for qualified in ctx.db.profile.value_columns:
            table, column = qualified.rsplit(".", 1)
            if ctx.db.schema.table(table) is not None and _names(ctx, table, column).count >= NAME_COLUMN_MIN_VALUES:
                out.append((table, column))
        return out

    return ctx.db.derived(("name_columns",), build)


def _item_labels(ctx: SqlContext) -> list[str]:
    """The labels of the items the SQL names by number (``itemid = 220045``), read from the dictionary tables."""
    assert ctx.tree is not None
    ids = sorted({lit.this for node in ctx.tree.find_all(exp.EQ, exp.In) if isinstance(node.this, exp.Column)
                  and node.this.name.lower() == "itemid"
                  for lit in ([node.expression] if isinstance(node, exp.EQ) else node.expressions)
                  if isinstance(lit, exp.Literal) and not lit.is_string and lit.this.isdigit()})
    if not ids:
        return []
    labels = []
    for table in ctx.db.schema.tables:
        if table.column("itemid") is not None and table.column("label") is not None:
            try:
                rows = ctx.db.db.execute(f"SELECT label FROM {table.name} WHERE itemid IN ({', '.join(ids)})", timeout_s=5).rows
            except DatabaseError:
                continue
            labels += [str(r[0]) for r in rows if r[0] is not None]
    return labels


def _identifiers(ctx: SqlContext) -> set[str]:
    """The schema's table and column names as words ("admission_type" -> "admission type")."""

    def build() -> set[str]:
        names = {t.name for t in ctx.db.schema.tables} | {c.name for t in ctx.db.schema.tables for c in t.columns}
        return {_normal(n.replace("_", " ")) for n in names}

    return ctx.db.derived(("identifiers",), build)


def check_stated_values(ctx: SqlContext) -> CheckResult:
    """A drug, test or diagnosis the question names must be something the SQL looks for."""
    if ctx.tree is None:
        return NOTHING
    literals = [lit.this for lit in ctx.tree.find_all(exp.Literal)
                if lit.is_string and any(w not in _PLAIN and not w.isdigit() for w in _words(lit.this))]
    literals += _item_labels(ctx)
    in_sql = " ".join(literals)
    findings = []
    identifiers = _identifiers(ctx)
    for table, column in _name_columns(ctx):
        for value in _names(ctx, table, column).named_in(ctx.question):
            words = [w for w in _words(value) if w not in _PLAIN]
            if not words or (len(words) == 1 and (len(words[0]) < 6 or re.search(r"(?:ed|ing|ly|ment|ness)$", words[0]))):
                continue  # a short or inflected single word ("referred") is as likely a plain word of the question as a name
            if _normal(value) in identifiers:
                continue  # "gender", "admission type": the name of a field, which the query reads as a column
            if supported(value, in_sql) or any(supported(lit, value) for lit in literals):
                continue
            findings.append(Finding("missing_value_filter", "warning",
                                    f"The question names '{value}' ({table}.{column}); the query never looks for it."))
    return found(*findings[:3])
