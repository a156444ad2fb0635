"""Static and execution checks of a candidate SQL, one small function each.

Every check takes a :class:`SqlContext` and returns findings; a finding may carry a
``suggestion`` (a replacement for its span) that :mod:`repair` can try. Checks never
raise on bad SQL: a query that does not parse is itself a finding.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import sqlglot
from sqlglot import exp

from ehrguard.db.engine import Result, check_select_only
from ehrguard.errors import DatabaseError
from ehrguard.evaluation.execution_match import NOW, is_abstention
from ehrguard.verify.methods import DatabaseContext
from ehrguard.verify.verdict import Finding

EXECUTION_TIMEOUT_S = 10.0
_NOW_CALL = re.compile(r"""(?:datetime|date|strftime\s*\([^,]+,)\s*\(\s*['"]now['"]|current_(?:timestamp|date|time)\b""", re.IGNORECASE)
_PEOPLE = re.compile(r"\b(patients|people|persons|individuals|subjects)\b", re.IGNORECASE)
_ID_COLUMNS = ("subject_id", "uniquepid", "patienthealthsystemstayid")


@dataclass
class SqlContext:
    """A candidate SQL with what the checks share: its parse tree and its execution result."""

    question: str
    sql: str
    db: DatabaseContext
    findings: list[Finding] = field(default_factory=list)
    # Repairs the checks know, applied by repair(): each mutates the parse tree in place.
    fixes: list[Callable[[], None]] = field(default_factory=list)
    text_fixes: list[Callable[[str], str]] = field(default_factory=list)

    @cached_property
    def tree(self) -> exp.Expression | None:
        try:
            trees = sqlglot.parse(self.sql, read=self.db.schema.dialect if self.db.schema.dialect in ("sqlite", "duckdb") else "sqlite")
        except sqlglot.errors.SqlglotError:
            return None
        trees = [t for t in trees if t is not None]
        return trees[0] if len(trees) == 1 else None

    @cached_property
    def execution(self) -> Result | DatabaseError:
        try:
            return self.db.db.execute(self.sql, timeout_s=EXECUTION_TIMEOUT_S, max_rows=1000)
        except DatabaseError as exc:
            return exc

    def span_of(self, text: str) -> tuple[int, int] | None:
        i = self.sql.lower().find(text.lower())
        return (i, i + len(text)) if i >= 0 else None


def check_abstained(ctx: SqlContext) -> list[Finding]:
    """The upstream model produced no SQL (``null``, empty, ``N/A``)."""
    if is_abstention(ctx.sql) or not ctx.sql.strip() or ctx.sql.strip().lower() in ("n/a", "none"):
        return [Finding("abstained", "error", "The text-to-SQL model returned no query.")]
    return []


def check_parses(ctx: SqlContext) -> list[Finding]:
    if ctx.tree is None:
        return [Finding("parse", "error", "The SQL does not parse as a single statement.")]
    return []


def check_read_only(ctx: SqlContext) -> list[Finding]:
    try:
        check_select_only(ctx.sql)
    except DatabaseError as exc:
        return [Finding("read_only", "error", str(exc))]
    return []


def _all_columns(ctx: SqlContext) -> dict[str, list[str]]:
    return {t.name.lower(): [c.name.lower() for c in t.columns] for t in ctx.db.schema.tables}


def _aliases(tree: exp.Expression) -> tuple[dict[str, str], set[str]]:
    """Table aliases -> table names, and every name a query defines itself (CTEs, subquery and column aliases)."""
    tables: dict[str, str] = {}
    defined: set[str] = set()
    for t in tree.find_all(exp.Table):
        tables[(t.alias or t.name).lower()] = t.name.lower()
    for node in tree.find_all(exp.CTE, exp.Subquery, exp.Alias, exp.TableAlias):
        if node.alias:
            defined.add(node.alias.lower())
        if isinstance(node, exp.TableAlias):
            defined.update(c.name.lower() for c in node.columns)
    return tables, defined


def check_schema(ctx: SqlContext) -> list[Finding]:
    """Every table and column exists; unknown ones get the nearest valid name."""
    if ctx.tree is None:
        return []
    columns = _all_columns(ctx)
    tables, defined = _aliases(ctx.tree)
    out = []
    for t in {t.name.lower() for t in ctx.tree.find_all(exp.Table)}:
        if t not in columns and t not in defined:
            near = difflib.get_close_matches(t, list(columns), n=1, cutoff=0.75)
            out.append(Finding("unknown_table", "error", f"No table {t!r}" + (f"; did you mean {near[0]!r}?" if near else "."),
                               ctx.span_of(t), near[0] if near else None))
            if near:
                ctx.fixes.append(_rename_tables(ctx.tree, t, near[0]))
    seen = set()
    for col in ctx.tree.find_all(exp.Column):
        name, qual = col.name.lower(), col.table.lower()
        if not name or name in defined or (qual, name) in seen or isinstance(col.this, exp.Star):
            continue
        seen.add((qual, name))
        if qual:
            table = tables.get(qual, qual)
            if table not in columns or name in columns[table]:
                continue
            candidates = columns[table]
        else:
            scope = [tables[a] for a in tables if tables[a] in columns] or list(columns)
            if any(name in columns[t] for t in scope):
                continue
            candidates = sorted({c for t in scope for c in columns[t]})
        near = difflib.get_close_matches(name, candidates, n=1, cutoff=0.75)
        where = f"{qual}.{name}" if qual else name
        out.append(Finding("unknown_column", "error", f"No column {where!r}" + (f"; did you mean {near[0]!r}?" if near else "."),
                           ctx.span_of(col.sql(dialect="sqlite")) or ctx.span_of(name), near[0] if near else None))
        if near:
            ctx.fixes.append(_rename_columns(ctx.tree, qual, name, near[0]))
    return out


def check_executes(ctx: SqlContext) -> list[Finding]:
    result = ctx.execution
    if isinstance(result, DatabaseError):
        return [Finding("execution", "error", f"The query fails on the database: {result}")]
    return []


def check_result(ctx: SqlContext) -> list[Finding]:
    """An empty or all-NULL result, where the question expects an answer."""
    result = ctx.execution
    if isinstance(result, DatabaseError):
        return []
    if not result.rows:
        return [Finding("empty_result", "warning", "The query returns no rows.")]
    if all(v is None for row in result.rows for v in row):
        return [Finding("null_result", "warning", "The query returns only NULL.")]
    return []


def check_now(ctx: SqlContext) -> list[Finding]:
    """EHRSQL-style databases fix "now" at 2100-12-31 23:59:00; the machine clock is wrong there."""
    if ctx.db.db_id not in ("mimic_iv", "eicu"):
        return []
    m = _NOW_CALL.search(ctx.sql)
    if not m:
        return []
    ctx.text_fixes.append(_anchor_now)
    return [Finding("wrong_now", "error", f"'now' in this database is {NOW}, not the machine clock.", (m.start(), m.end()), f"'{NOW}'")]


def _literal_comparisons(tree: exp.Expression, tables: dict[str, str]) -> list[tuple[str, str, exp.Literal]]:
    out = []
    for node in tree.find_all(exp.EQ, exp.In, exp.Like):
        col = node.this if isinstance(node.this, exp.Column) else None
        if col is None:
            continue
        literals = node.expressions if isinstance(node, exp.In) else [node.expression]
        for lit in literals:
            if isinstance(lit, exp.Literal) and lit.is_string:
                out.append((tables.get(col.table.lower(), col.table.lower()), col.name.lower(), lit))
    return out


def check_values(ctx: SqlContext) -> list[Finding]:
    """A string literal compared with a text column must be one of its values; else the nearest value is suggested."""
    if ctx.tree is None:
        return []
    tables, _ = _aliases(ctx.tree)
    columns = _all_columns(ctx)
    out = []
    for table, column, lit in _literal_comparisons(ctx.tree, tables):
        if not table:
            owners = [t for t in set(tables.values()) if t in columns and column in columns[t]]
            if len(owners) != 1:
                continue
            table = owners[0]
        if column.endswith("id"):
            continue  # identifiers are exact: never "nearest" a patient or stay id (check_patient_ids covers them)
        info = ctx.db.schema.table(table)
        col = info.column(column) if info else None
        if col is None or "char" not in col.type.lower() and "text" not in col.type.lower() and col.type:
            continue
        value = lit.this
        if "%" in value or "_" in value and isinstance(lit.parent, exp.Like):
            continue
        lookup = ctx.db.values.lookup(table, column, value, k=2)
        if not lookup.indexed or lookup.exists:
            continue
        best = lookup.nearest[0] if lookup.nearest else None
        # A value the question states word for word is what the user asked for: when the data lacks it, that is
        # a finding, not a typo to fix.
        stated = value.lower() in ctx.question.lower()
        clear = (not stated and best is not None and best.score >= 0.85
                 and (len(lookup.nearest) < 2 or best.score - lookup.nearest[1].score >= 0.05))
        message = f"{value!r} is not a value of {table}.{column}" + (f"; nearest: {best.value!r}" if best else "")
        out.append(Finding("unknown_value", "error", message, ctx.span_of(f"'{value}'"), f"'{best.value}'" if clear and best else None))
        if clear and best:
            ctx.fixes.append(lambda lit=lit, new=best.value: lit.replace(exp.Literal.string(new)))
    return out


def check_patient_ids(ctx: SqlContext) -> list[Finding]:
    """Patient ids compared in the query exist."""
    if ctx.tree is None:
        return []
    out = []
    for node in ctx.tree.find_all(exp.EQ):
        col, lit = node.this, node.expression
        if not (isinstance(col, exp.Column) and isinstance(lit, exp.Literal) and col.name.lower() in ("subject_id", "uniquepid")):
            continue
        table = "patients" if col.name.lower() == "subject_id" else "patient"
        if ctx.db.schema.table(table) is None:
            continue
        quoted = lit.this if not lit.is_string else lit.this.replace("'", "''")
        value = quoted if not lit.is_string else f"'{quoted}'"
        try:
            hit = ctx.db.db.execute(f"SELECT 1 FROM {table} WHERE {col.name} = {value} LIMIT 1", timeout_s=5)
        except DatabaseError:
            continue
        if not hit.rows:
            out.append(Finding("unknown_patient", "error", f"No patient with {col.name} = {lit.this}.", ctx.span_of(lit.this)))
    return out


def check_count_distinct(ctx: SqlContext) -> list[Finding]:
    """Counting patients needs DISTINCT: one patient has many rows."""
    if ctx.tree is None or not _PEOPLE.search(ctx.question) or not re.search(r"\bhow many|\bcount|\bnumber of", ctx.question, re.IGNORECASE):
        return []
    out = []
    for count in ctx.tree.find_all(exp.Count):
        arg = count.this
        if isinstance(arg, exp.Column) and arg.name.lower() in _ID_COLUMNS:
            text = count.sql(dialect="sqlite")
            out.append(Finding("count_without_distinct", "warning", "Counting patients without DISTINCT counts rows, not people.",
                               ctx.span_of(text), f"COUNT(DISTINCT {arg.sql(dialect='sqlite')})"))
            ctx.fixes.append(lambda count=count, arg=arg: count.set("this", exp.Distinct(expressions=[arg.copy()])))
    return out


def _rename_tables(tree: exp.Expression, old: str, new: str) -> Callable[[], None]:
    def fix() -> None:
        for t in tree.find_all(exp.Table):
            if t.name.lower() == old:
                t.set("this", exp.to_identifier(new))
        for c in tree.find_all(exp.Column):
            if c.table.lower() == old:
                c.set("table", exp.to_identifier(new))

    return fix


def _rename_columns(tree: exp.Expression, qual: str, old: str, new: str) -> Callable[[], None]:
    def fix() -> None:
        for c in tree.find_all(exp.Column):
            if c.name.lower() == old and c.table.lower() == qual:
                c.set("this", exp.to_identifier(new))

    return fix


def _anchor_now(sql: str) -> str:
    sql = re.sub(r"""(['"])now\1""", f"'{NOW}'", sql, flags=re.IGNORECASE)
    sql = re.sub(r"\bcurrent_timestamp\b|\bcurrent_time\b", f"'{NOW}'", sql, flags=re.IGNORECASE)
    return re.sub(r"\bcurrent_date\b", f"'{NOW[:10]}'", sql, flags=re.IGNORECASE)


CHECKS: tuple[Callable[[SqlContext], list[Finding]], ...] = (
    check_abstained, check_read_only, check_parses, check_schema, check_executes, check_result, check_now,
    check_values, check_patient_ids, check_count_distinct,
)


def run_checks(question: str, sql: str, db: DatabaseContext) -> tuple[SqlContext, list[Finding]]:
    """Run every check; returns the shared context (parse tree, execution) and the findings."""
    ctx = SqlContext(question, sql, db)
    findings = check_abstained(ctx)  # CHECKS[0]: with no query there is nothing else to check
    if not findings:
        for check in CHECKS[1:]:
            findings += check(ctx)
            if findings and findings[-1].check == "read_only":
                break  # never execute or inspect a statement that could write
    ctx.findings = findings
    return ctx, findings


def repair(ctx: SqlContext) -> str | None:
    """Apply every known fix; the repaired SQL, or None when there is nothing to fix.

    The caller decides whether to keep it (it must execute and pass the checks).
    """
    if not ctx.fixes and not ctx.text_fixes:
        return None
    sql = ctx.sql
    if ctx.fixes and ctx.tree is not None:
        for fix in ctx.fixes:
            fix()
        sql = ctx.tree.sql(dialect="duckdb" if ctx.db.schema.dialect == "duckdb" else "sqlite")
    for text_fix in ctx.text_fixes:
        sql = text_fix(sql)
    return sql if sql != ctx.sql else None


def summary(findings: list[Finding]) -> dict[str, Any]:
    return {"errors": sum(f.severity == "error" for f in findings), "warnings": sum(f.severity == "warning" for f in findings),
            "checks": sorted({f.check for f in findings})}
