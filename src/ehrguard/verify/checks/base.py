"""What every check shares: the candidate SQL with its parse tree and execution, and what a check returns.

A check is a plain function ``(ctx) -> CheckResult``: the findings it makes and the edits it
proposes. It never changes the context, the parse tree or another check's result; the
parse tree and the execution result are computed once, on first use, and only read after.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import sqlglot
from sqlglot import exp

from ehrguard.db.engine import Result
from ehrguard.errors import DatabaseError
from ehrguard.lazy import cached_property
from ehrguard.verify.verdict import Finding

if TYPE_CHECKING:
    from ehrguard.db.schema import TableInfo
    from ehrguard.profiles import DatabaseProfile
    from ehrguard.verify.methods import DatabaseContext

# A check executes the candidate at most once, under this limit: verification answers in milliseconds, and a query
# that runs longer than this is itself worth a finding rather than a minute's wait.
EXECUTION_TIMEOUT_S = 10.0
EXECUTION_MAX_ROWS = 1000
# Ids a check looks up one by one in the database: a question names a handful of patients or stays; a query that
# compares thousands of ids (a pasted list) is checked on its first ones rather than with thousands of lookups.
MAX_IDS_LOOKED_UP = 50
# A column named for a moment: "...time", "...date", a birth or death date (the profile names others).
TIME_NAME = re.compile(r"(?:time|date)$|^(?:dob|dod)$")


@dataclass
class SqlContext:
    """A candidate SQL and what the checks read of it: its parse tree and its execution result (each computed once)."""

    question: str
    sql: str
    db: DatabaseContext
    _own_tables: dict[int, dict[str, str]] = field(default_factory=dict, init=False, repr=False)  # id(SELECT) -> own_tables

    @cached_property
    def tree(self) -> exp.Expression | None:
        try:
            trees = sqlglot.parse(self.sql, read=self.dialect)
        except (sqlglot.errors.SqlglotError, RecursionError):  # too deep for the parser: read as unparsable
            return None
        trees = [t for t in trees if t is not None]
        return cast("exp.Expression", trees[0]) if len(trees) == 1 else None

    @property
    def profile(self) -> DatabaseProfile:
        """The database's profile with its tables named as queries name them (see ``DatabaseProfile.as_queried``)."""
        return self.db.derived(("profile as queried",), self.db.profile.as_queried)

    @property
    def dialect(self) -> str:
        """The sqlglot dialect the SQL is read and written in: the database's (SQLite, DuckDB, PostgreSQL), else SQLite's."""
        return self.db.schema.dialect if self.db.schema.dialect in ("sqlite", "duckdb", "postgres") else "sqlite"

    @cached_property
    def execution(self) -> Result | DatabaseError:
        try:
            return self.db.db.execute(self.sql, timeout_s=EXECUTION_TIMEOUT_S, max_rows=EXECUTION_MAX_ROWS)
        except DatabaseError as exc:
            return exc

    def own_tables(self, select: exp.Select) -> dict[str, str]:
        """The tables a SELECT reads itself (not its subqueries'), alias or name -> name; read once per SELECT (a column
        looked up in every condition of a long WHERE would otherwise walk the whole query each time)."""
        key = id(select)
        if key not in self._own_tables:
            self._own_tables[key] = {t.alias_or_name.lower(): t.name.lower() for t in select.find_all(exp.Table)
                                     if t.find_ancestor(exp.Select) is select}
        return self._own_tables[key]

    def span_of(self, text: str) -> tuple[int, int] | None:
        i = self.sql.lower().find(text.lower())
        return (i, i + len(text)) if i >= 0 else None


@dataclass(frozen=True)
class TreeEdit:
    """A change a check proposes to the parse tree. ``apply`` receives the node of a *copy* of the tree that
    corresponds to ``target`` (a node of the context's tree), or the copy's root when ``target`` is None,
    and edits it in place; the context's own tree is never changed."""

    apply: Callable[[exp.Expression], None]
    target: exp.Expression | None = None


@dataclass(frozen=True)
class TextEdit:
    """A change a check proposes to the SQL text, applied after the tree edits."""

    apply: Callable[[str], str]


Edit = TreeEdit | TextEdit


@dataclass(frozen=True)
class CheckResult:
    """What one check returns: its findings, and the edits that would answer them (for :func:`repair`)."""

    findings: tuple[Finding, ...] = ()
    edits: tuple[Edit, ...] = ()


NOTHING = CheckResult()


@dataclass(frozen=True)
class Check:
    """A named check. ``stops``: when it finds anything, no later check runs (with no query there is nothing to
    check; a statement that could write is never executed or inspected further)."""

    name: str
    run: Callable[[SqlContext], CheckResult]
    stops: bool = False


def data_fact(ctx: SqlContext, key: tuple[Any, ...], sql: str, read: Callable[[list[tuple[Any, ...]]], bool]) -> bool:
    """A fact about the data (``read`` of the rows ``sql`` returns), asked once per open database; False when the
    query fails."""

    def ask() -> bool:
        try:
            return read(ctx.db.db.execute(sql, timeout_s=5).rows)
        except DatabaseError:
            return False

    return ctx.db.derived(key, ask)


# A category column: at most this many distinct values (sex, admission type, marital status, route, care unit).
CATEGORY_MAX_VALUES = 30


def few_values(ctx: SqlContext, table: str, column: str) -> bool:
    """A category column of ``table`` (a qualified name): at most :data:`CATEGORY_MAX_VALUES` distinct values, read
    from the data once per open database."""
    source, name = quoted_names(ctx, table, column)
    return data_fact(ctx, ("few_values", table.lower(), column.lower()), f"SELECT COUNT(DISTINCT {name}) FROM {source}",
                     lambda rows: bool(rows) and rows[0][0] is not None and 0 < rows[0][0] <= CATEGORY_MAX_VALUES)


def add_condition(condition: exp.Expression) -> Callable[[exp.Expression], None]:
    """A tree edit that ANDs ``condition`` (a copy of it) into the WHERE of the SELECT it is applied to."""
    def apply(select: exp.Expression) -> None:
        if isinstance(select, exp.Select):
            select.where(condition.copy(), copy=False)

    return apply


def ids_compared(tree: exp.Expression, columns: Iterable[str]) -> list[tuple[exp.Column, exp.Literal]]:
    """``column = value`` comparisons of the query on the id ``columns`` (lower case names): the first
    :data:`MAX_IDS_LOOKED_UP` of them, the ones a check looks up one by one."""
    names = set(columns)
    return [(node.this, node.expression) for node in tree.find_all(exp.EQ)
            if isinstance(node.this, exp.Column) and isinstance(node.expression, exp.Literal)
            and node.this.name.lower() in names][:MAX_IDS_LOOKED_UP]


def drop_conjunct(node: exp.Expression) -> None:
    """A tree edit: remove one condition from the AND it sits in (the WHERE becomes TRUE when it was the only one)."""
    parent = node.parent
    while isinstance(parent, exp.Paren):
        node, parent = parent, parent.parent
    if isinstance(parent, exp.And):
        parent.replace(parent.right if parent.left is node else parent.left)
    else:
        node.replace(exp.true())


def top_condition(node: exp.Expression, select: exp.Select) -> bool:
    """Is ``node`` one of the conditions ANDed at the top of ``select``'s WHERE, so that dropping it only lets more rows
    in (not under OR, NOT, CASE or a function, not in a join's ON)?"""
    parent = node.parent
    while isinstance(parent, (exp.And, exp.Paren)):
        parent = parent.parent
    return parent is not None and parent is select.args.get("where")


def found(*findings: Finding, edits: Sequence[Edit] = ()) -> CheckResult:
    return CheckResult(tuple(findings), tuple(edits))


def summary(findings: list[Finding] | tuple[Finding, ...]) -> dict[str, Any]:
    return {"errors": sum(f.severity == "error" for f in findings), "warnings": sum(f.severity == "warning" for f in findings),
            "checks": sorted({f.check for f in findings})}


@dataclass
class Checked:
    """The outcome of running every check on one SQL: the context (parse tree, execution), the findings in
    check order, and every proposed edit in the same order."""

    ctx: SqlContext
    findings: list[Finding] = field(default_factory=list)
    edits: list[Edit] = field(default_factory=list)

    @property
    def has_rows(self) -> bool:
        """Ran and returned at least one non-NULL value."""
        result = self.ctx.execution
        return isinstance(result, Result) and bool(result.rows) and not all(v is None for r in result.rows for v in r)

    @property
    def outcome(self) -> str:
        """``rows``, ``empty`` (ran; nothing or only NULL), or ``failed`` (did not run, or no query)."""
        if self.has_rows:
            return "rows"
        return "empty" if isinstance(self.ctx.execution, Result) else "failed"


def visits_by_id(ctx: SqlContext, tree: exp.Expression) -> list[tuple[exp.Column, exp.Literal, str]]:
    """Every ``visit_id = literal`` in the tree (an admission or a stay named by its number; the profile's entities
    other than the patient): the column, the literal and the table of that kind of visit."""
    visits = {e.id_column.lower(): e.table for e in ctx.profile.entities if e.name != "patient"}
    out = []
    for eq in tree.find_all(exp.EQ):
        column, literal = eq.this, eq.expression
        if isinstance(column, exp.Column) and isinstance(literal, exp.Literal) and column.name.lower() in visits:
            out.append((column, literal, visits[column.name.lower()]))
    return out


def negated(node: Any, *also: type[exp.Expression]) -> bool:
    """Is the condition ``node`` (or one it sits in) negated: under NOT, or a ``NOT LIKE`` (sqlglot keeps that as a
    LIKE with ``negate``)? ``also``: other enclosing kinds that count the same (CASE, OR, ...)."""
    current = node
    while current is not None:
        if isinstance(current, exp.Not | exp.Like | exp.ILike) and (isinstance(current, exp.Not) or current.args.get("negate")):
            return True
        if also and isinstance(current, also) and current is not node:
            return True
        current = current.parent
    return False


def copy_with_map(tree: exp.Expression) -> tuple[exp.Expression, dict[int, exp.Expression]]:
    """A deep copy of ``tree`` and, for every node of ``tree`` (by id), its counterpart in the copy."""
    copy = tree.copy()
    originals: list[exp.Expression] = list(tree.walk())  # type: ignore[arg-type]
    copies: list[exp.Expression] = list(copy.walk())  # type: ignore[arg-type]
    if len(originals) != len(copies):  # copy() keeps the structure; anything else is a sqlglot change to notice
        raise AssertionError("sqlglot copy() changed the tree's shape")
    return copy, {id(a): b for a, b in zip(originals, copies, strict=True)}


def replaced_by(new: exp.Expression) -> Callable[[exp.Expression], None]:
    """A tree edit that replaces the node it is applied to by (a copy of) ``new``."""
    def apply(node: exp.Expression) -> None:
        node.replace(new.copy())

    return apply


def rewritten(tree: exp.Expression, node: exp.Expression, replacement: exp.Expression) -> exp.Expression:
    """A copy of ``tree`` with ``node`` (one of its own nodes, not an equal one elsewhere) replaced by ``replacement``
    (the whole tree, when ``node`` is the tree itself)."""
    if node is tree:
        return replacement.copy()
    copy, counterpart = copy_with_map(tree)
    counterpart[id(node)].replace(replacement)
    return copy


def changes_the_answer(ctx: SqlContext, condition: exp.Expression) -> bool:
    """Does the query with ``condition`` ANDed into its WHERE answer otherwise on this database
    (:func:`answers_differently`)?"""
    assert ctx.tree is not None
    tested = ctx.tree.copy()
    add_condition(condition)(tested)
    return answers_differently(ctx, tested)


def quoted_list(values: Sequence[str], shown: int = 3) -> str:
    """The first values quoted, and how many more there are: "'a', 'b', 'c' and 4 more"."""
    more = f" and {len(values) - shown} more" if len(values) > shown else ""
    return ", ".join(f"'{v}'" for v in values[:shown]) + more


def answers_differently(ctx: SqlContext, other: exp.Expression) -> bool:
    """Does ``other`` (a rewrite of the query) answer otherwise than the query itself on this database? The query's
    own result is the one already run; both are read with the same row limit, compared as multisets. False when
    either fails or is cut at the limit (partial results say nothing)."""
    mine = ctx.execution
    if isinstance(mine, DatabaseError) or mine.truncated:
        return False
    try:
        theirs = ctx.db.db.execute(other.sql(dialect=ctx.dialect), timeout_s=EXECUTION_TIMEOUT_S, max_rows=EXECUTION_MAX_ROWS)
    except DatabaseError:
        return False
    if theirs.truncated:
        return False
    return sorted(map(tuple, mine.rows), key=repr) != sorted(map(tuple, theirs.rows), key=repr)


def rows_and(ctx: SqlContext, select: exp.Select, count: exp.Expression) -> tuple[int, int] | None:
    """How many rows the SELECT keeps (its FROM, joins and conditions; no order or limit), and ``count`` of them
    (``COUNT(DISTINCT key)``, ``COUNT(column)``): the two figures that show rows repeated or left out. None when it
    cannot run (or runs too long)."""
    probe = select.copy()
    probe.set("expressions", [exp.Count(this=exp.Star()), count])
    probe.set("order", None)
    probe.set("limit", None)
    try:
        rows = ctx.db.db.execute(probe.sql(dialect=ctx.dialect), timeout_s=10).rows
    except DatabaseError:
        return None
    return (rows[0][0], rows[0][1]) if rows and rows[0][0] is not None and rows[0][1] is not None else None


def stored_info(ctx: SqlContext, name: str) -> TableInfo | None:
    """The schema's table ``name`` names: a name without its schema is the profile's table of that name first (a
    database holding ``mimiciii.admissions`` beside ``mimiciv_hosp.admissions`` is read where the profile says)."""
    return ctx.db.schema.table(_profile_tables(ctx).get(name.lower(), name)) or ctx.db.schema.table(name)


def stored_table(ctx: SqlContext, name: str) -> exp.Table:
    """A table of the schema as a query reads it: with its schema (``mimiciv_hosp.d_labitems``) where it has one (the
    table :func:`stored_info` finds)."""
    info = stored_info(ctx, name)
    return exp.to_table(info.qualified_name if info is not None else name)


def _profile_tables(ctx: SqlContext) -> dict[str, str]:
    """The tables the profile names with their schema, by their own name (a name two schemas share is left out)."""

    def read() -> dict[str, str]:
        profile = ctx.db.profile
        named = [e.table for e in profile.entities] + [c.rsplit(".", 1)[0] for c in (*profile.time_columns, *profile.value_columns)]
        named += [table for pair in profile.key_pairs() for table, _ in pair]
        by_name: dict[str, set[str]] = {}
        for table in named:
            if "." in table:
                by_name.setdefault(table.rsplit(".", 1)[1].lower(), set()).add(table)
        return {name: next(iter(tables)) for name, tables in by_name.items() if len(tables) == 1}

    return ctx.db.derived(("profile tables",), read)


def quoted_names(ctx: SqlContext, table: str, column: str) -> tuple[str, str]:
    """A table and a column as the database's dialect writes them, quoted (mixed-case or reserved names stay valid)."""
    source = stored_table(ctx, table)
    for part in ("this", "db", "catalog"):
        if isinstance(ident := source.args.get(part), exp.Identifier):
            ident.set("quoted", True)
    return source.sql(dialect=ctx.dialect), exp.to_identifier(column, quoted=True).sql(dialect=ctx.dialect)
