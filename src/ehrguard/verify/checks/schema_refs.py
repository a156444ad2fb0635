"""Every table and column the SQL names exists in the schema; an unknown one gets the nearest valid name."""

from __future__ import annotations

import difflib
from collections.abc import Callable

from sqlglot import exp

from ehrguard.verify.checks.base import CheckResult, Edit, SqlContext, TreeEdit, found
from ehrguard.verify.verdict import Finding

# How close a name must be to count as a misspelling of a schema name (difflib ratio).
NEAR_NAME = 0.75


def all_columns(ctx: SqlContext) -> dict[str, list[str]]:
    """Table -> its column names, lower-cased."""
    return {t.name.lower(): [c.name.lower() for c in t.columns] for t in ctx.db.schema.tables}


def aliases(tree: exp.Expression) -> tuple[dict[str, str], set[str]]:
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


def owner_table(ctx: SqlContext, table: str, column: str, tables: dict[str, str]) -> str:
    """The table an unqualified ``column`` belongs to: ``table`` when the query names it, else the one table of the
    query (``tables``: alias -> name) that has such a column; "" when none or several do."""
    if table:
        return table
    owners = {t for t in tables.values() if (info := ctx.db.schema.table(t)) is not None and info.column(column) is not None}
    return next(iter(owners)) if len(owners) == 1 else ""


def check_schema(ctx: SqlContext) -> CheckResult:
    """Every table and column exists; unknown ones get the nearest valid name."""
    if ctx.tree is None:
        return CheckResult()
    columns = all_columns(ctx)
    tables, defined = aliases(ctx.tree)
    findings: list[Finding] = []
    edits: list[Edit] = []
    named = {t.name.lower() for t in ctx.tree.find_all(exp.Table)}
    for t in sorted(named, key=lambda name: (_first_at(ctx, name), name)):  # in the order the query names them
        if t not in columns and t not in defined:
            near = difflib.get_close_matches(t, list(columns), n=1, cutoff=NEAR_NAME)
            findings.append(Finding("unknown_table", "error", f"No table {t!r}" + (f"; did you mean {near[0]!r}?" if near else "."),
                                    ctx.span_of(t), near[0] if near else None))
            if near:
                edits.append(TreeEdit(rename_table(t, near[0])))
    seen = set()
    scoped = _scoped_candidates(ctx.tree, columns)
    for col in ctx.tree.find_all(exp.Column):
        name, qual = col.name.lower(), col.table.lower()
        if not name or name in defined or (qual, name) in seen or isinstance(col.this, exp.Star):
            continue
        seen.add((qual, name))
        if scoped is not None:
            candidates = scoped.get(id(col))
            if candidates is None or name in candidates:
                continue
        elif qual:
            table = tables.get(qual, qual)
            if table not in columns or name in columns[table]:
                continue
            candidates = columns[table]
        else:
            scope = [tables[a] for a in tables if tables[a] in columns] or list(columns)
            if any(name in columns[t] for t in scope):
                continue
            candidates = sorted({c for t in scope for c in columns[t]})
        near = difflib.get_close_matches(name, candidates, n=1, cutoff=NEAR_NAME)
        where = f"{qual}.{name}" if qual else name
        findings.append(Finding("unknown_column", "error", f"No column {where!r}" + (f"; did you mean {near[0]!r}?" if near else "."),
                                ctx.span_of(col.sql(dialect="sqlite")) or ctx.span_of(name), near[0] if near else None))
        if near:
            edits.append(TreeEdit(rename_column(qual, name, near[0])))
    return found(*findings, edits=edits)


def _scoped_candidates(tree: exp.Expression, columns: dict[str, list[str]]) -> dict[int, list[str]] | None:
    """For each column of the query (by node id), the names it may take, read scope by scope: an alias names the table
    or the CTE/subquery it stands for *in that scope* (the same alias may stand for different tables in two CTEs), a
    CTE's or subquery's columns are its outputs, and a correlated reference is looked up in the enclosing scopes.
    Columns whose candidates cannot be known (a source with ``*`` or unnamed outputs) are left out; a table the schema
    lacks offers every schema column. None when
    sqlglot cannot build the scopes (the caller falls back to reading aliases over the whole query)."""
    from sqlglot.optimizer.scope import Scope, traverse_scope

    try:
        scopes = traverse_scope(tree)
    except Exception:  # noqa: BLE001 - sqlglot raises several kinds of error on queries it cannot scope
        return None

    def names(source: object) -> list[str] | None:
        if isinstance(source, exp.Table):
            # a table the schema lacks (itself a finding): its columns may be any table's, as a repair would read them
            return columns.get(source.name.lower()) or every
        if isinstance(source, Scope) and isinstance(source.expression, exp.Query):
            selects = source.expression.selects
            if any(isinstance(e, exp.Star) or isinstance(e, exp.Column) and isinstance(e.this, exp.Star) for e in selects):
                return None
            outputs = [n.lower() for n in source.expression.named_selects]
            return outputs if len(outputs) == len(selects) else None  # an unnamed output (UNNEST(...)): its names unknown
        return None

    every = sorted({c for names_ in columns.values() for c in names_})
    out: dict[int, list[str]] = {}
    for scope in scopes:
        for col in scope.columns:
            qual = col.table
            if qual:
                holder: Scope | None = scope
                while holder is not None and qual not in holder.sources:
                    holder = holder.parent
                if holder is None:
                    continue
                found_names = names(holder.sources[qual])
                if found_names is not None:
                    out[id(col)] = found_names
            else:
                pooled: list[str] = []
                for source in scope.sources.values():
                    source_names = names(source)
                    if source_names is None:
                        pooled = []
                        break
                    pooled += source_names
                if pooled:
                    # sqlglot also lists a subquery's unqualified columns among the enclosing scope's (they might be
                    # correlated): a name resolves when any scope that sees it has it, the nearest first.
                    out[id(col)] = sorted(set(pooled) | set(out.get(id(col), ())))
    return out


def _first_at(ctx: SqlContext, name: str) -> int:
    span = ctx.span_of(name)
    return span[0] if span else len(ctx.sql)


def rename_table(old: str, new: str) -> Callable[[exp.Expression], None]:
    def apply(tree: exp.Expression) -> None:
        for t in tree.find_all(exp.Table):
            if t.name.lower() == old:
                t.set("this", exp.to_identifier(new))
        for c in tree.find_all(exp.Column):
            if c.table.lower() == old:
                c.set("table", exp.to_identifier(new))

    return apply


def rename_column(qual: str, old: str, new: str) -> Callable[[exp.Expression], None]:
    def apply(tree: exp.Expression) -> None:
        for c in tree.find_all(exp.Column):
            if c.name.lower() == old and c.table.lower() == qual:
                c.set("this", exp.to_identifier(new))

    return apply
