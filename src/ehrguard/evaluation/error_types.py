"""What kind of error a wrong candidate SQL makes, read by aligning its sqlglot tree with the gold's.

SCARE's Table 4 reports the correction rate by error type. The five types, as this module reads them
(one per candidate: the smallest kind of edit that would make it answer like the gold):

* ``TC`` table/column reference: only table or column names differ (the query's shape and values are the gold's);
* ``JG`` join/group-by: the tables joined or linked, the join conditions or the GROUP BY keys differ;
* ``PV`` predicate value: only literal values differ (a drug name, a number, a date), or ``=`` became LIKE on a value;
* ``OL`` other local: one clause differs in some other way (an aggregate, a comparison, ORDER BY, LIMIT, DISTINCT,
  one condition more or less, the selected expression);
* ``OG`` other global: several clauses differ in different ways, the query's structure differs, or it does not parse.

How: both queries are parsed (SQLite dialect by default) and normalised (identifiers lower-cased, table qualifiers,
table aliases and output aliases dropped). The difference is located: when the queries differ in one clause only
and that clause holds subqueries in the same places, the search descends into the one subquery pair that differs
(EHRSQL's gold SQL links tables through nested ``IN (SELECT ...)``). At the scope where the difference sits, each
clause is compared twice: as written, and as a *skeleton* with every table, column and literal replaced by a
placeholder. Equal skeletons mean only names or values differ (``TC`` / ``PV``); otherwise the clauses whose skeletons
differ say which type it is. ``none`` means the normalised queries are equal (the difference is elsewhere, e.g. in a
tie's order).

The reading was written from these definitions alone and checked against a hand-labelled sample of SCARE dev
candidates (``ehrguard bench error-types``; the agreement is in docs/benchmarks.md).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection
from dataclasses import dataclass

import sqlglot
from sqlglot import exp

ERROR_TYPES = ("TC", "JG", "PV", "OL", "OG")
NAMES = {"TC": "table/column reference", "JG": "join/group-by", "PV": "predicate value", "OL": "other local",
         "OG": "other global", "none": "no difference found"}
# The clauses of one SELECT, in the order they are compared.
CLAUSES = ("with", "distinct", "expressions", "from", "joins", "where", "group", "having", "order", "limit", "offset")
_JOINING = ("from", "joins", "group")


@dataclass(frozen=True)
class ErrorReading:
    """One candidate's error type and where it was found (``scope``: how many subqueries deep; ``clauses``: the
    clauses that differ there)."""

    type: str
    scope: int = 0
    clauses: tuple[str, ...] = ()


def _normalise(tree: exp.Expr) -> exp.Expr:
    tree = tree.copy()
    for node in list(tree.walk()):
        if isinstance(node, exp.Identifier):
            node.set("this", node.name.lower())
            node.set("quoted", False)
        elif isinstance(node, exp.Column):
            node.set("table", None)
            node.set("db", None)
        elif isinstance(node, exp.Table):
            node.set("alias", None)
    for alias in list(tree.find_all(exp.Alias)):
        if isinstance(alias.parent, exp.Select) or isinstance(alias.parent, exp.Subquery):
            alias.replace(alias.this)
    for sub in list(tree.find_all(exp.Subquery)):
        sub.set("alias", None)
    return tree


def _placeholder(n: exp.Expr) -> exp.Expr:
    if isinstance(n, exp.Table):
        return exp.to_table("t")
    if isinstance(n, exp.Column):
        return exp.column("c")
    if isinstance(n, exp.Literal):
        return exp.Literal.string("v")
    return n


def _skeleton(node: exp.Expr) -> exp.Expr:
    return node.transform(_placeholder)


def _text(value: object, skeleton: bool = False) -> str:
    """A clause (an expression, a list of them, or nothing) as comparable text."""
    if value is None:
        return ""
    if isinstance(value, list):
        return " | ".join(_text(v, skeleton) for v in value)
    if isinstance(value, exp.Expr):
        return (_skeleton(value) if skeleton else value).sql(dialect="sqlite")
    return str(value)


def _names(node: object) -> Counter[str]:
    out: Counter[str] = Counter()
    for n in _nodes(node):
        if isinstance(n, exp.Table):
            out["table:" + n.name] += 1
        elif isinstance(n, exp.Column):
            out["column:" + n.name] += 1
    return out


def _literals(node: object) -> Counter[str]:
    return Counter(n.sql() for n in _nodes(node) if isinstance(n, exp.Literal))


def _nodes(value: object) -> list[exp.Expr]:
    if isinstance(value, list):
        return [n for v in value for n in _nodes(v)]
    if isinstance(value, exp.Expr):
        return list(value.walk())
    return []


def _subqueries(value: object) -> list[exp.Expr]:
    """The outermost queries nested in a clause, in order."""
    found: list[exp.Expr] = []

    def visit(node: exp.Expr) -> None:
        for child in node.iter_expressions():
            if isinstance(child, (exp.Select, exp.Union, exp.Intersect, exp.Except)):
                found.append(child)
            else:
                visit(child)

    for item in value if isinstance(value, list) else [value]:
        if isinstance(item, (exp.Select, exp.Union, exp.Intersect, exp.Except)):
            found.append(item)
        elif isinstance(item, exp.Expr):
            visit(item)
    return found


def _without_subqueries(value: object) -> str:
    """A clause's text with each nested query replaced by one placeholder."""
    if value is None:
        return ""
    items = value if isinstance(value, list) else [value]
    out = []
    for item in items:
        if not isinstance(item, exp.Expr):
            out.append(str(item))
            continue
        copy = item.copy()
        for sub in _subqueries(copy):
            sub.replace(exp.column("q"))
        out.append(copy.sql(dialect="sqlite"))
    return " | ".join(out)


def _clauses(query: exp.Expr) -> dict[str, object]:
    if isinstance(query, exp.Select):
        return {k: query.args.get(k) for k in CLAUSES}
    return {"expressions": query}  # a set operation: compared whole


def _differing(g: dict[str, object], p: dict[str, object], skeleton: bool) -> list[str]:
    return [k for k in CLAUSES if _text(g.get(k), skeleton) != _text(p.get(k), skeleton)]


def _locate(gold: exp.Expr, pred: exp.Expr, depth: int = 0) -> tuple[exp.Expr, exp.Expr, int]:
    """The innermost pair of corresponding queries that holds every difference."""
    g, p = _clauses(gold), _clauses(pred)
    diff = _differing(g, p, skeleton=False)
    if len(diff) != 1 or not isinstance(gold, exp.Select) or not isinstance(pred, exp.Select):
        return gold, pred, depth
    clause = diff[0]
    gs, ps = _subqueries(g[clause]), _subqueries(p[clause])
    if not gs or len(gs) != len(ps) or _without_subqueries(g[clause]) != _without_subqueries(p[clause]):
        return gold, pred, depth
    pairs = [(a, b) for a, b in zip(gs, ps, strict=True) if a.sql(dialect="sqlite") != b.sql(dialect="sqlite")]
    if len(pairs) != 1:
        return gold, pred, depth
    return _locate(pairs[0][0], pairs[0][1], depth + 1)


def _join_conditions_only(g: object, p: object) -> bool:
    """Whether two WHERE clauses differ only in column = column conditions (the join conditions of a comma join)."""

    def strip(value: object) -> str:
        if not isinstance(value, exp.Expr):
            return ""
        copy = value.copy()
        for eq in list(copy.find_all(exp.EQ)):
            if isinstance(eq.this, exp.Column) and isinstance(eq.expression, exp.Column):
                eq.replace(exp.true())
        return _text(copy, skeleton=True)

    return strip(g) == strip(p)


def _value_operator_only(g: object, p: object) -> bool:
    """Whether two clauses differ only where ``=`` and LIKE/GLOB compare a column with a literal."""

    def unify(value: object) -> str:
        if not isinstance(value, exp.Expr):
            return ""
        copy = value.copy()
        for node in list(copy.find_all(exp.Like, exp.ILike, exp.Glob)):
            node.replace(exp.EQ(this=node.this, expression=node.expression))
        return _text(copy, skeleton=True)

    return unify(g) == unify(p)


_MATCH = (exp.EQ, exp.Like, exp.ILike, exp.Glob)
_COMPARISONS = (*_MATCH, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Is)
_OPERATOR: dict[type, str] = {exp.EQ: "match", exp.Like: "match", exp.ILike: "match", exp.Glob: "match", exp.NEQ: "ne", exp.GT: "gt",
             exp.GTE: "ge", exp.LT: "lt", exp.LTE: "le", exp.Is: "is"}


@dataclass(frozen=True)
class _Frame:
    """What a query asks for, whatever its form (a JOIN or a nested IN, a WITH or a derived table): the tables it
    reads, its conditions on values, how it links tables, what it aggregates, groups, ranks and returns."""

    tables: frozenset[str]
    filters: frozenset[tuple[str, str, str]]  # (the tested expression, the operator, the value)
    links: frozenset[str]
    aggregates: tuple[str, ...]
    group: frozenset[str]
    ranking: tuple[str, ...]
    outputs: frozenset[str]


def _value(node: exp.Expr) -> str:
    """A compared value as text; a quoted number and the number are one value (SQLite compares them alike here)."""
    return node.name if isinstance(node, exp.Literal) else node.sql()


def _conditions(tree: exp.Expr, ranks: set[str]) -> tuple[set[tuple[str, str, str]], set[str], list[str]]:
    """A query's conditions on values, its links (the id columns it joins or nests on) and its rank cut-offs."""
    filters: set[tuple[str, str, str]] = set()
    links: set[str] = set()
    ranking: list[str] = []
    for node in tree.find_all(*_COMPARISONS, exp.In):
        left = node.this
        if isinstance(node, exp.In):
            if node.args.get("query") is not None and isinstance(left, exp.Column):
                links.add(left.name)  # linked through a nested query: the same link as a join on that column
            elif node.expressions and not any(e.find(exp.Column) for e in node.expressions):
                filters.add((left.sql(), "in", ",".join(sorted(e.sql() for e in node.expressions))))
            continue
        right = node.expression
        if isinstance(left, exp.Column) and isinstance(right, (exp.Subquery, exp.Select)):
            links.add(left.name)  # col = (SELECT col ...): a lookup, the same link as a join on it
        elif isinstance(left, exp.Column) and isinstance(right, exp.Column):
            if left.name == right.name:
                links.add(left.name)
        elif isinstance(left, exp.Column) and left.name in ranks and isinstance(right, exp.Literal):
            ranking.append(f"top {right.sql()}")
        elif left.find(exp.Column) and not right.find(exp.Column, exp.Select):
            filters.add((left.sql(), _OPERATOR[type(node)], _value(right)))
        elif right.find(exp.Column) and not left.find(exp.Column, exp.Select):
            filters.add((right.sql(), _OPERATOR[type(node)], _value(left)))
    return filters, links, ranking


def _frame(tree: exp.Expr) -> _Frame:
    ctes = {cte.alias_or_name for cte in tree.find_all(exp.CTE)}
    tables = frozenset(t.name for t in tree.find_all(exp.Table) if t.name not in ctes)
    # The names given to a rank (DENSE_RANK() OVER (...) AS c1): a condition on one is the ranking's cut-off.
    ranks = {a.alias for a in tree.find_all(exp.Alias) if isinstance(a.this, exp.Window)}
    filters, links, ranking = _conditions(tree, ranks)
    aggregates = []
    for a in tree.find_all(exp.AggFunc):
        if isinstance(a.parent, exp.Window) and a.arg_key == "this":
            continue  # the ranking function itself
        name = type(a).__name__.lower()
        aggregates.append({"max": "largest", "min": "smallest"}.get(name, name) + ("-distinct" if a.find(exp.Distinct) else ""))
    for select in tree.find_all(exp.Select):
        order, limit = select.args.get("order"), select.args.get("limit")
        if order is None or limit is None or limit.expression is None:
            continue
        first = order.expressions[0] if order.expressions else None
        if limit.expression.sql() == "1" and first is not None:
            aggregates.append("largest" if first.args.get("desc") else "smallest")  # ORDER BY x DESC LIMIT 1 = MAX(x)
        else:
            ranking.append(f"top {limit.expression.sql()}")
    group = frozenset(e.sql() for g in tree.find_all(exp.Group) for e in g.expressions)
    outer = tree if isinstance(tree, exp.Select) else tree.find(exp.Select)
    outputs = frozenset(c.name for e in (outer.expressions if outer is not None else []) for c in e.find_all(exp.Column)
                        if c.name not in ranks and not c.find_ancestor(exp.Count))
    return _Frame(tables, frozenset(filters), frozenset(links), tuple(sorted(set(aggregates))), group, tuple(sorted(set(ranking))),
                  outputs)


def _columns_of(test: str) -> frozenset[str]:
    """The column names an expression (as text) tests: ``DATETIME(charttime, 'start of year')`` tests charttime."""
    try:
        return frozenset(c.name for c in sqlglot.parse_one(test, read="sqlite").find_all(exp.Column))
    except (sqlglot.errors.ParseError, sqlglot.errors.TokenError, ValueError):
        return frozenset({test})


def _by_columns(filters: frozenset[tuple[str, str, str]]) -> dict[frozenset[str], frozenset[tuple[str, str, str]]]:
    out: dict[frozenset[str], set[tuple[str, str, str]]] = {}
    for f in filters:
        out.setdefault(_columns_of(f[0]), set()).add(f)
    return {cols: frozenset(conds) for cols, conds in out.items()}


def _op_class(op: str) -> str:
    return "order" if op in ("gt", "ge", "lt", "le") else op


def _frame_kinds(gold: exp.Expr, pred: exp.Expr, entity_tables: frozenset[str] = frozenset(),
                 entity_ids: frozenset[str] = frozenset()) -> set[tuple[str, str]]:
    """The kinds of difference between what two queries ask for (:class:`_Frame`), whatever their forms.

    The entity tables (patients, admissions, stays: the database profile's) are how queries link events to a person;
    reaching the person through one of them or through an id column the event table has is the same question, so
    they and their id columns (``entity_ids``) are left out of the comparison of tables and links, and a link path
    that contains the other (one step more) is no error.

    Returns:
        (kind, where) pairs: ``where`` is the part of the query (``tables``, ``links``, ``aggregates``, ``outputs``,
        ``conditions``), so that local errors in two places read as a global one.
    """
    g, p = _frame(gold), _frame(pred)
    kinds: set[tuple[str, str]] = set()
    tables_g, tables_p = g.tables - entity_tables, p.tables - entity_tables
    if tables_g != tables_p:
        kinds.add(("TC" if tables_g - tables_p and tables_p - tables_g else "JG", "tables"))
    links_g, links_p = g.links - entity_ids, p.links - entity_ids
    if (links_g != links_p and not (links_g <= links_p or links_p <= links_g)) or g.group != p.group:
        kinds.add(("JG", "links"))
    if g.aggregates != p.aggregates or g.ranking != p.ranking:
        kinds.add(("OL", "aggregates"))
    if g.outputs != p.outputs and ("TC", "tables") not in kinds:
        kinds.add(("TC" if g.outputs and p.outputs else "OL", "outputs"))
    # The conditions, grouped by the columns they test: a group that differs in its values only is a value error
    # (also when a date is tested in two steps on one side and one on the other); a group one side lacks is a
    # condition more or less, unless the other side tests the same value on another column (the wrong column).
    groups_g, groups_p = _by_columns(g.filters), _by_columns(p.filters)
    unmatched_p = {cols: conds for cols, conds in groups_p.items() if cols not in groups_g}
    for cols, conds in groups_g.items():
        other = groups_p.get(cols)
        if other is not None:
            if other != conds:
                ops_g, ops_p = {_op_class(op) for _, op, _ in conds}, {_op_class(op) for _, op, _ in other}
                kinds.add(("PV" if ops_g == ops_p else "OL", "conditions"))
            continue
        values = {(_op_class(op), value.strip("%")) for _, op, value in conds}
        twin = next((c for c, o in unmatched_p.items() if values & {(_op_class(op), value.strip("%")) for _, op, value in o}), None)
        if twin is not None:
            kinds.add(("TC", "conditions"))
            del unmatched_p[twin]
        else:
            kinds.add(("OL", "conditions"))  # conditions the candidate lacks
    if unmatched_p:
        kinds.add(("OL", "conditions"))  # conditions the gold does not have
    return kinds


def classify_error(gold_sql: str, pred_sql: str, dialect: str = "sqlite", entity_tables: Collection[str] = (),
                   entity_ids: Collection[str] = ()) -> ErrorReading:
    """The error type of ``pred_sql`` against ``gold_sql`` (one of :data:`ERROR_TYPES`, or ``none``); ``entity_tables``
    and ``entity_ids``: the database profile's patient, admission and stay tables and id columns (see
    :func:`_frame_kinds`).

    Examples:
        >>> classify_error("SELECT COUNT(*) FROM t WHERE drug = 'aspirin'", "SELECT COUNT(*) FROM t WHERE drug = 'asa'").type
        'PV'
        >>> classify_error("SELECT MAX(x) FROM t", "SELECT MIN(x) FROM t").type
        'OL'
        >>> classify_error("SELECT x FROM a WHERE id = 1", "SELECT y FROM b WHERE id = 1").type
        'TC'
        >>> classify_error("SELECT x FROM a", "SELEC x FROM").type
        'OG'
    """
    try:
        gold = _normalise(sqlglot.parse_one(gold_sql, read=dialect))
        pred = _normalise(sqlglot.parse_one(pred_sql, read=dialect))
    except (sqlglot.errors.ParseError, sqlglot.errors.TokenError, ValueError, RecursionError):
        return ErrorReading("OG")
    if not isinstance(pred, (exp.Select, exp.Union, exp.Intersect, exp.Except)):
        return ErrorReading("OG")
    if gold.sql(dialect="sqlite") == pred.sql(dialect="sqlite"):
        return ErrorReading("none")
    g_scope, p_scope, depth = _locate(gold, pred)
    g, p = _clauses(g_scope), _clauses(p_scope)
    diff = tuple(_differing(g, p, skeleton=False))
    shape = _differing(g, p, skeleton=True)

    def reading(kind: str) -> ErrorReading:
        return ErrorReading(kind, depth, diff)

    if type(g_scope) is not type(p_scope):
        return _by_frames(gold, pred, reading, frozenset(entity_tables), frozenset(entity_ids))
    if not shape:
        return reading(_same_shape(g, p, diff))
    if len(diff) == 1:
        clause = diff[0]
        if clause in _JOINING:
            return reading("JG")
        if clause == "where":
            if _value_operator_only(g[clause], p[clause]):
                return reading("PV")
            # The conditions differ in shape: what they ask for says which kind (a lookup more or less is a join, ...).
            kind = _one_kind(_frame_kinds(g_scope, p_scope, frozenset(entity_tables), frozenset(entity_ids)))
            if kind not in ("OG", "none"):
                return reading(kind)
        return reading("OL")
    # Several clauses differ: a join (FROM, its conditions, GROUP BY) and nothing else, or a global error.
    if set(shape) & set(_JOINING) and set(shape) <= {*_JOINING, "where"} and _join_conditions_only(g.get("where"), p.get("where")):
        return reading("JG")
    return _by_frames(gold, pred, reading, frozenset(entity_tables), frozenset(entity_ids))


def _same_shape(g: dict[str, object], p: dict[str, object], diff: tuple[str, ...]) -> str:
    """Two queries of one shape, differing only in names or values (``diff``: the clauses where)."""
    if set(diff) <= set(_JOINING):
        return "JG"  # the same query joined or grouped on other columns
    if set(diff) <= {"order", "limit", "offset"}:
        return "OL"  # another count of rows, or ordered on another column
    names = _names(list(g.values())) != _names(list(p.values()))
    values = _literals(list(g.values())) != _literals(list(p.values()))
    if names and values:
        return "OG" if len(diff) > 1 else "TC"
    return "TC" if names else "PV"


def _by_frames(gold: exp.Expr, pred: exp.Expr, reading: Callable[[str], ErrorReading],
               entity_tables: frozenset[str], entity_ids: frozenset[str]) -> ErrorReading:
    """Queries of different forms: the one kind in which what they ask for differs, else ``OG`` (also when what they
    ask for reads the same: the difference is one the frames do not see)."""
    kind = _one_kind(_frame_kinds(gold, pred, entity_tables, entity_ids))
    return reading("OG" if kind == "none" else kind)


def _one_kind(found: set[tuple[str, str]]) -> str:
    """One type for the differences found: their kind when they are all of one kind (a local one in one place only),
    else ``OG``; ``none`` when nothing differs in what the queries ask."""
    kinds = {kind for kind, _ in found}
    if not kinds:
        return "none"
    if len(kinds) > 1 or (kinds == {"OL"} and len({where for _, where in found}) > 1):
        return "OG"
    return kinds.pop()


__all__ = ["CLAUSES", "ERROR_TYPES", "NAMES", "ErrorReading", "classify_error"]
