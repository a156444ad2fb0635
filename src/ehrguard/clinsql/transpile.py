"""Run ClinSQL's BigQuery SQL on MIMIC-IV in the mimic-code layout (``mimic_iv_raw``), in DuckDB or PostgreSQL: sqlglot
plus small rewrite rules.

Each rule is a function on the parse tree, for one gap sqlglot leaves between the dialects:

* :func:`local_tables`: ``physionet-data.mimiciv_3_1_hosp.patients`` -> ``mimiciv_hosp.patients``;
* :func:`safe_calls`: BigQuery's ``SAFE.f(x)`` (NULL instead of an error) -> DuckDB's ``TRY(f(x))``
  (or the plain call around aggregates, which DuckDB does not allow inside ``TRY``); PostgreSQL has no ``TRY``:
  :func:`plain_safe_calls` keeps the call (an error there is reported as one, never hidden);
* :func:`unnest_structs`: ``FROM t, UNNEST([STRUCT(... AS a, ...), ...])`` exposes the struct
  fields as columns in BigQuery; DuckDB needs ``(SELECT UNNEST([...], recursive := true))``, PostgreSQL
  a ``LATERAL (VALUES ...) AS alias(a, ...)`` list (:func:`values_structs`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import ErrorLevel

from ehrguard.errors import QueryExecutionError
from ehrguard.sqltree import clause

_DATASET = re.compile(r"^mimiciv(?:_\d+(?:_\d+)*)?_(hosp|icu|derived|ed|note)$", re.IGNORECASE)


def local_tables(tree: exp.Expression) -> exp.Expression:
    for table in tree.find_all(exp.Table):
        m = _DATASET.match(table.db or "")
        if m:
            table.set("db", exp.to_identifier(f"mimiciv_{m.group(1).lower()}"))
            table.set("catalog", None)
    return tree


def safe_calls(tree: exp.Expression) -> exp.Expression:
    for node in list(tree.find_all(exp.SafeFunc)):
        if node.this.find(exp.AggFunc):
            # DuckDB refuses aggregates inside TRY; the plain call is the closest (math functions
            # such as SQRT give NaN rather than an error there anyway).
            node.replace(node.this)
        else:
            node.replace(exp.Anonymous(this="TRY", expressions=[node.this]))
    return tree


def printf_formats(tree: exp.Expression) -> exp.Expression:
    """BigQuery's ``FORMAT('%.1f%%', x)`` is printf-style; DuckDB's ``FORMAT`` reads ``{}`` (it returned the template
    untouched) and its ``PRINTF`` reads BigQuery's."""
    for node in list(tree.find_all(exp.Format)):
        node.replace(exp.Anonymous(this="PRINTF", expressions=[node.this, *node.expressions]))
    return tree


def _struct_unnests(tree: exp.Expression) -> list[tuple[exp.Unnest, exp.Array]]:
    """``FROM t, UNNEST([STRUCT(...), ...])`` without an alias: each such UNNEST with its array of structs."""
    found = []
    for node in list(tree.find_all(exp.Unnest)):
        alias = node.args.get("alias")
        # BigQuery names the struct itself ("UNNEST([...]) AS m", then m.field): sqlglot holds that name as a column alias
        if not isinstance(node.parent, (exp.From, exp.Join)) or alias is not None and (alias.this or len(alias.columns) != 1):
            continue
        arrays = node.expressions
        if len(arrays) == 1 and isinstance(arrays[0], exp.Array) and all(isinstance(e, exp.Struct) for e in arrays[0].expressions):
            found.append((node, arrays[0]))
    return found


def unnest_structs(tree: exp.Expression) -> exp.Expression:
    for node, array in _struct_unnests(tree):
        if node.args.get("alias") is not None:
            continue  # DuckDB reads BigQuery's named struct as it is
        sub = sqlglot.parse_one(f"SELECT * FROM (SELECT UNNEST({array.sql(dialect='duckdb')}, recursive := true))", read="duckdb")
        node.replace(clause(sub, "from").this)
    return tree


def plain_safe_calls(tree: exp.Expression) -> exp.Expression:
    for node in list(tree.find_all(exp.SafeFunc)):
        node.replace(node.this)
    return tree


def _field_value(field: exp.Expression) -> exp.Expression:
    """The value of a ``STRUCT(value AS name)`` field (sqlglot holds ``name := value`` as a PropertyEQ)."""
    if isinstance(field, exp.PropertyEQ):
        return field.expression
    return field.this if isinstance(field, exp.Alias) else field


def values_structs(tree: exp.Expression) -> exp.Expression:
    for node, array in _struct_unnests(tree):
        structs = array.expressions
        names = [f.alias_or_name for f in structs[0].expressions]
        if not names or any(not n for n in names):
            continue
        rows = [exp.Tuple(expressions=[_field_value(f) for f in st.expressions])
                for st in structs]
        named = node.args.get("alias")
        alias = exp.TableAlias(this=exp.to_identifier(named.columns[0].name if named is not None else "_struct"),
                               columns=[exp.to_identifier(n) for n in names])
        values = exp.Values(expressions=rows)
        # LATERAL: the fields may name columns of the tables before it, as BigQuery's correlated UNNEST does
        node.replace(exp.Lateral(this=exp.Subquery(this=values), view=False, outer=False, alias=alias)
                     if isinstance(node.parent, exp.Join) else exp.Subquery(this=values, alias=alias))
    return tree


def boundary_diffs(tree: exp.Expression) -> exp.Expression:
    """``DATETIME_DIFF``/``TIMESTAMP_DIFF`` count unit boundaries crossed, as ``DATE_DIFF`` does: one node that sqlglot
    writes for PostgreSQL with ``DATE_TRUNC`` (it leaves the other two as calls PostgreSQL does not have)."""
    for node in list(tree.find_all(exp.DatetimeDiff, exp.TimestampDiff)):
        node.replace(exp.DateDiff(this=node.this, expression=node.expression, unit=node.args.get("unit"), date_part_boundary=True))
    return tree


def _indexed_quantiles(tree: exp.Expression, engine: str) -> list[tuple[exp.Expression, exp.Expression, int, int | None]]:
    """Each ``APPROX_QUANTILES(x, n)`` with what it is read through: (the node to replace, x, n, the quantile k when it
    is indexed by a literal ``[OFFSET(k)]`` — the bracket is then the node — else None)."""
    out: list[tuple[exp.Expression, exp.Expression, int, int | None]] = []
    for node in list(tree.find_all(exp.ApproxQuantiles)):
        n = node.expression
        if not isinstance(n, exp.Literal) or n.is_string or not str(n.this).isdigit() or int(n.this) < 1:
            raise QueryExecutionError(f"Cannot transpile to {engine}: APPROX_QUANTILES needs a whole number of quantiles.")
        count = int(n.this)
        target: exp.Expression = node
        while isinstance(target.parent, (exp.IgnoreNulls, exp.Paren)):
            target = target.parent
        bracket = target.parent
        if isinstance(bracket, exp.Bracket) and bracket.this is target and len(bracket.expressions) == 1 \
                and isinstance(bracket.expressions[0], exp.Literal) and str(bracket.expressions[0].this).isdigit():
            index = int(bracket.expressions[0].this) - int(bracket.args.get("offset") or 0)
            if not 0 <= index <= count:
                raise QueryExecutionError(f"Cannot transpile to {engine}: quantile {index} of APPROX_QUANTILES(..., {count}).")
            out.append((bracket, node.this, count, index))
        else:
            out.append((target, node.this, count, None))
    return out


def percentile_quantiles(tree: exp.Expression) -> exp.Expression:
    """``APPROX_QUANTILES(x, n)[OFFSET(k)]`` -> ``PERCENTILE_DISC(k/n) WITHIN GROUP (ORDER BY x)``, and a whole
    ``APPROX_QUANTILES(x, n)`` (the n+1 boundaries, nulls left out) -> ``PERCENTILE_DISC(ARRAY[0, 1/n, ..., 1]) ...``,
    an array indexed like BigQuery's once sqlglot has shifted the offsets: the exact values at the same fractions."""
    for target, value, count, index in _indexed_quantiles(tree, "PostgreSQL"):
        order = value.sql(dialect="postgres")
        fractions = f"{index / count:.10g}" if index is not None else \
            "ARRAY[" + ", ".join(f"{k / count:.10g}" for k in range(count + 1)) + "]"
        target.replace(sqlglot.parse_one(f"PERCENTILE_DISC({fractions}) WITHIN GROUP (ORDER BY {order})", read="postgres"))
    return tree


def scalar_quantiles(tree: exp.Expression) -> exp.Expression:
    """``APPROX_QUANTILES(x, n)[OFFSET(k)]`` -> DuckDB's ``APPROX_QUANTILE(x, k/n)``, the same value. sqlglot writes
    the list form ``APPROX_QUANTILE(x, [0, ...])[k + 1]``, which runs but which sqlglot itself cannot read back (it
    casts the list to DOUBLE): a repair of such a query then failed to run, and was lost."""
    for target, value, count, index in _indexed_quantiles(tree, "DuckDB"):
        if index is not None:
            target.replace(exp.ApproxQuantile(this=value, quantile=exp.Literal.number(f"{index / count:.10g}")))
    return tree


def word_boundaries(tree: exp.Expression) -> exp.Expression:
    """BigQuery's regular expressions (RE2) write a word boundary ``\\b``; PostgreSQL's write ``\\y`` (``\\b`` is a
    backspace there)."""
    for node in tree.find_all(exp.RegexpLike, exp.RegexpExtract, exp.RegexpReplace):
        pattern = node.expression
        if (isinstance(pattern, exp.RawString) or isinstance(pattern, exp.Literal) and pattern.is_string) and "\\b" in pattern.this:
            node.set("expression", exp.Literal.string(re.sub(r"(?<!\\)\\b", r"\\y", pattern.this)))
    return tree


def numeric_rounding(tree: exp.Expression) -> exp.Expression:
    """PostgreSQL rounds to decimal places only a NUMERIC, and rounds a DOUBLE's half to even (``ROUND(2.5)`` is 2)
    where BigQuery rounds it away from zero (3), as PostgreSQL's NUMERIC does: ``ROUND(x[, d])`` -> ``ROUND(CAST(x AS
    NUMERIC)[, d])``, and a fraction made a whole number (``CAST(age / 10 AS INT64)``, an average) through NUMERIC, so
    that an age of 45 falls in the decade BigQuery puts it in. A condition made a number (``CAST(x > 1 AS INT64)``,
    to count it) goes through INTEGER, the only whole number PostgreSQL casts a boolean to."""
    for node in list(tree.find_all(exp.Round)):
        node.set("this", exp.cast(node.this, "NUMERIC"))
    for cast in list(tree.find_all(exp.Cast)):
        if not cast.to.is_type(*exp.DataType.INTEGER_TYPES):
            continue
        if isinstance(cast.this, (exp.Predicate, exp.Connector, exp.Not, exp.Boolean)):
            cast.set("this", exp.cast(cast.this, "INT"))
        elif cast.this.find(exp.Div, exp.Avg) is not None:
            cast.set("this", exp.cast(cast.this, "NUMERIC"))
    return tree


def timestamp_parts(tree: exp.Expression) -> exp.Expression:
    """``DATETIME(y, m, d, h, mi, s)`` -> ``MAKE_TIMESTAMP`` with the integer and double arguments PostgreSQL requires."""
    for node in tree.find_all(exp.TimestampFromParts):
        for part in ("year", "month", "day", "hour", "min"):
            if node.args.get(part) is not None:
                node.set(part, exp.cast(node.args[part], "INT"))
        if node.args.get("sec") is not None:
            node.set("sec", exp.cast(node.args["sec"], "DOUBLE PRECISION"))
    return tree


def subquery_aliases(tree: exp.Expression) -> exp.Expression:
    """PostgreSQL 15 wants a name on every subquery in FROM (BigQuery and PostgreSQL 16 do not)."""
    for i, node in enumerate(list(tree.find_all(exp.Subquery))):
        if isinstance(node.parent, (exp.From, exp.Join)) and not node.alias:
            node.set("alias", exp.TableAlias(this=exp.to_identifier(f"_subquery{i + 1}")))
    return tree


def having_aliases(tree: exp.Expression) -> exp.Expression:
    """BigQuery's HAVING may name a column alias of its SELECT; PostgreSQL's cannot: the aliased expression instead."""
    for select in tree.find_all(exp.Select):
        having = select.args.get("having")
        if having is None:
            continue
        aliases = {a.alias: a.this for a in select.expressions if isinstance(a, exp.Alias)}
        for column in list(having.find_all(exp.Column)):
            if not column.table and column.name in aliases and not column.find_ancestor(exp.Subquery, exp.Select) is not select:
                column.replace(aliases[column.name].copy())
    return tree


def _union_branches(node: exp.Expression, ctes: dict[str, exp.Expression] | None = None,
                    path: frozenset[str] = frozenset()) -> list[exp.Select]:
    """The SELECTs a UNION joins; a branch that is ``SELECT * FROM cte`` is read as the CTE's own SELECT (its columns,
    in order, are the branch's), so that a NULL written in the CTE is typed with the other branches. ``path``: the
    CTEs being followed, so that one that reads itself is not followed round (one read twice is read twice)."""
    if isinstance(node, exp.Union):
        return _union_branches(node.this, ctes, path) + _union_branches(node.expression, ctes, path)
    if isinstance(node, exp.Subquery):
        return _union_branches(node.this, ctes, path)
    if not isinstance(node, exp.Select):
        return []
    source = clause(node, "from")
    if ctes and len(node.expressions) == 1 and isinstance(node.expressions[0], exp.Star) and not node.args.get("joins") \
            and source is not None and isinstance(source.this, exp.Table) and not source.this.db:
        name = source.this.name.lower()
        if name in ctes and name not in path:
            return _union_branches(ctes[name], ctes, path | {name})
    return [node]


# PostgreSQL's number types, narrowest first: a union of several is typed as the widest (as PostgreSQL resolves them).
_NUMBER_TYPES = ("SMALLINT", "INT", "INTEGER", "BIGINT", "DECIMAL", "NUMERIC", "REAL", "DOUBLE PRECISION")
_NUMERIC_AGGREGATES = (exp.Avg, exp.Sum, exp.Stddev, exp.StddevPop, exp.StddevSamp, exp.Variance,
                       exp.VariancePop)


def _literal_type(cell: exp.Expression) -> str | None:
    """The PostgreSQL type a literal gives a column: a whole number BIGINT, a decimal NUMERIC (PostgreSQL's own choice
    for such literals), text TEXT, a typed literal (``DATE '2150-01-01'``, ``CAST('...' AS TIMESTAMP)``) its type; a
    count BIGINT, a sum, an average or a rounded number NUMERIC."""
    while isinstance(cell, exp.Paren):
        cell = cell.this
    if isinstance(cell, exp.Literal):
        if cell.is_string:
            return "TEXT"
        return "BIGINT" if re.fullmatch(r"-?\d+", cell.this) else "NUMERIC"
    if isinstance(cell, exp.Neg) and isinstance(cell.this, exp.Literal) and not cell.this.is_string:
        return _literal_type(cell.this)
    if isinstance(cell, exp.Cast) and isinstance(cell.this, exp.Literal):
        return cell.to.sql(dialect="postgres")
    if isinstance(cell, (exp.Count, exp.CountIf)):
        return "BIGINT"  # PostgreSQL's type of a count
    if isinstance(cell, (*_NUMERIC_AGGREGATES, exp.Round)):
        return "NUMERIC"  # a sum or average: a number of some kind, to which PostgreSQL widens NUMERIC as needed
    return None


def typed_union_nulls(tree: exp.Expression) -> exp.Expression:
    """A bare ``NULL`` in one branch of a UNION and a literal in another: BigQuery types the column from every branch,
    PostgreSQL takes the NULL as text ("UNION types text and numeric cannot be matched"). The NULL is cast to the type
    the other branches' literals or aggregates give the column (NUMERIC when whole and decimal numbers meet); branches
    that disagree otherwise are left to the database's own error. A branch ``SELECT * FROM cte`` is read as the CTE's
    SELECT: a NULL a CTE writes is typed text as soon as the CTE is read, so it is cast there."""
    for union in list(tree.find_all(exp.Union)):
        if isinstance(union.parent, exp.Union):
            continue  # the outermost union of a chain reads every branch
        scopes: list[Any] = [union]
        while scopes[0].parent is not None:
            scopes.insert(0, scopes[0].parent)  # the outermost first: a nearer CTE of a name wins
        ctes = {cte.alias_or_name.lower(): cte.this for scope in scopes if (with_ := clause(scope, "with")) is not None
                for cte in with_.expressions}
        branches = _union_branches(union, ctes)
        if len(branches) < 2 or len({len(b.expressions) for b in branches}) != 1:
            continue
        for i in range(len(branches[0].expressions)):
            kinds = {kind for b in branches if (kind := _literal_type(b.expressions[i].unalias())) is not None}
            if kinds and all(k in _NUMBER_TYPES for k in kinds):  # numbers of several kinds: the widest holds them all
                kinds = {max(kinds, key=_NUMBER_TYPES.index)}
            if len(kinds) != 1:
                continue
            kind = kinds.pop()
            for branch in branches:
                cell = branch.expressions[i]
                null = cell.this if isinstance(cell, exp.Alias) else cell
                if isinstance(null, exp.Null):
                    null.replace(exp.cast(exp.Null(), kind))
    return tree


def window_percentiles(tree: exp.Expression) -> exp.Expression:
    """``PERCENTILE_CONT(x, p) OVER (PARTITION BY g)``: PostgreSQL has no window form of its ordered-set aggregates.
    The partition's values, sorted, come from a plain window aggregate (``ARRAY_AGG`` over the partition ordered by
    ``x``, the whole partition as its frame, NULLs removed), and the percentile is read from that array as
    ``PERCENTILE_CONT`` reads it (interpolated between the two nearest ranks) or ``PERCENTILE_DISC`` (the first value
    whose cumulative share reaches p)."""
    for window in list(tree.find_all(exp.Window)):
        func = window.this
        if not isinstance(func, (exp.PercentileCont, exp.PercentileDisc)) or window.args.get("order") is not None:
            continue
        if window.args.get("alias") is not None:  # OVER w ... WINDOW w AS (PARTITION BY g): its partition is elsewhere
            raise QueryExecutionError("Cannot transpile to PostgreSQL: a windowed percentile over a named window.")
        value, fraction = func.this, func.expression
        if not isinstance(fraction, exp.Literal) or fraction.is_string:
            raise QueryExecutionError("Cannot transpile to PostgreSQL: a windowed percentile needs a literal fraction.")
        partition = ", ".join(e.sql(dialect="postgres") for e in window.args.get("partition_by") or [])
        column = value.sql(dialect="postgres")
        over = f"OVER ({'PARTITION BY ' + partition + ' ' if partition else ''}ORDER BY {column} " \
               "ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)"
        p = float(fraction.this)
        # PERCENTILE_DISC returns a value of the column, of its type; PERCENTILE_CONT interpolates, in double precision
        item = column if isinstance(func, exp.PercentileDisc) else f"CAST({column} AS DOUBLE PRECISION)"
        values = f"ARRAY_REMOVE(ARRAY_AGG({item}) {over}, NULL)"
        if isinstance(func, exp.PercentileDisc):
            text = f"({values})[GREATEST(CAST(CEIL({p!r} * CARDINALITY({values})) AS INT), 1)]"
        else:
            rank = f"(1 + {p!r} * (CARDINALITY({values}) - 1))"
            low, high = f"({values})[CAST(FLOOR({rank}) AS INT)]", f"({values})[CAST(CEIL({rank}) AS INT)]"
            text = f"({low} + ({rank} - FLOOR({rank})) * ({high} - {low}))"
        window.replace(sqlglot.parse_one(text, read="postgres"))
    return tree


def regexp_extracts(tree: exp.Expression) -> exp.Expression:
    """``REGEXP_EXTRACT(s, re)`` (the capture group, else the whole match) -> ``(REGEXP_MATCH(s, re))[1]``, which reads
    the same; a position or an occurrence has no PostgreSQL counterpart."""
    for node in list(tree.find_all(exp.RegexpExtract)):
        if node.args.get("position") is not None or node.args.get("occurrence") is not None:
            raise QueryExecutionError("Cannot transpile to PostgreSQL: REGEXP_EXTRACT with a position or an occurrence.")
        text, pattern = node.this.sql(dialect="postgres"), node.expression.sql(dialect="postgres")
        node.replace(sqlglot.parse_one(f"(REGEXP_MATCH({text}, {pattern}))[1]", read="postgres"))
    return tree


def split_parts(tree: exp.Expression) -> exp.Expression:
    """``SPLIT(s, sep)`` -> ``STRING_TO_ARRAY(s, sep)``; an element of it, ``SPLIT(s, sep)[OFFSET(0)]``, is read from the
    parenthesised call (PostgreSQL indexes only a parenthesised function result)."""
    for node in list(tree.find_all(exp.Split)):
        bracket = node.parent if isinstance(node.parent, exp.Bracket) and node.parent.this is node else None
        if bracket is not None and not all(isinstance(e, exp.Literal) for e in bracket.expressions):
            # sqlglot shifts only a literal offset to PostgreSQL's 1-based arrays: a computed one would read the next element
            raise QueryExecutionError("Cannot transpile to PostgreSQL: SPLIT(...)[OFFSET(i)] with a computed offset.")
        call = exp.Anonymous(this="STRING_TO_ARRAY", expressions=[node.this, node.expression])
        node.replace(exp.Paren(this=call) if bracket is not None else call)
    return tree


def struct_objects(tree: exp.Expression) -> exp.Expression:
    """A ``STRUCT(a, b AS name)`` left as a value (an element of ``ARRAY_AGG``, a column) -> ``JSON_BUILD_OBJECT('a',
    a, 'name', b)``: its fields by name, as BigQuery returns them."""
    for node in list(tree.find_all(exp.Struct)):
        args: list[exp.Expression] = []
        for field in node.expressions:
            name = field.this.name if isinstance(field, exp.PropertyEQ) else field.alias_or_name
            if not name:
                raise QueryExecutionError("Cannot transpile to PostgreSQL: a STRUCT field without a name.")
            args += [exp.Literal.string(name), _field_value(field)]
        node.replace(exp.Anonymous(this="JSON_BUILD_OBJECT", expressions=args))
    return tree


_WEEKDAYS = ("MONDAY", "TUESDAY", "WEDNESDAY", "THURSDAY", "FRIDAY", "SATURDAY", "SUNDAY")


def datetime_truncs(tree: exp.Expression) -> exp.Expression:
    """``DATETIME_TRUNC(t, HOUR)`` -> ``DATE_TRUNC('HOUR', t)`` (sqlglot writes the TIMESTAMP form, not this one).
    PostgreSQL's weeks start on Monday, as ISOWEEK's do; a week that starts on another day (``WEEK`` is Sunday's,
    ``WEEK(SATURDAY)``) is the Monday week of the moment shifted by the days between, shifted back. ISOYEAR has no
    counterpart and is refused."""
    for node in list(tree.find_all(exp.DatetimeTrunc)):
        unit, value = node.args.get("unit"), node.this.sql(dialect="postgres")
        if isinstance(unit, exp.WeekStart) and unit.this.name.upper() in _WEEKDAYS:
            days = (7 - _WEEKDAYS.index(unit.this.name.upper())) % 7
            node.replace(sqlglot.parse_one(f"(DATE_TRUNC('WEEK', {value} + INTERVAL '{days} days') - INTERVAL '{days} days')",
                                           read="postgres"))
        elif isinstance(unit, exp.Var) and unit.name.upper() != "ISOYEAR":
            node.replace(exp.TimestampTrunc(this=node.this, unit=exp.var("WEEK" if unit.name.upper() == "ISOWEEK" else unit.name.upper())))
        else:
            raise QueryExecutionError(f"Cannot transpile to PostgreSQL: DATETIME_TRUNC to {unit.sql(dialect='bigquery') if unit else '?'}.")
    return tree


def any_values(tree: exp.Expression) -> exp.Expression:
    """``ANY_VALUE(x)`` (PostgreSQL 16 and later) -> the first of the group's non-NULL values,
    ``(ARRAY_AGG(x) FILTER (WHERE x IS NOT NULL))[1]``: a value of the group as BigQuery's ANY_VALUE returns it (NULLs
    ignored), for a value of any type (``MIN`` has no boolean or JSON form); over a window, the same aggregate over the
    window, indexed. ``ANY_VALUE(x HAVING MAX y)`` (the value of the row with the largest y) is refused."""
    # the innermost first: a node's copy (the FILTER's) is then taken of its already rewritten argument
    for node in reversed(list(tree.find_all(exp.AnyValue))):
        if node.args.get("max") is not None or node.args.get("min") is not None or isinstance(node.this, exp.HavingMax):
            raise QueryExecutionError("Cannot transpile to PostgreSQL: ANY_VALUE(... HAVING MAX/MIN ...).")
        window = node.parent if isinstance(node.parent, exp.Window) else None
        if window is not None and node.this.find(exp.AggFunc) is not None:
            # an aggregate's value over a window (``ANY_VALUE(MAX(x)) OVER ()``): PostgreSQL takes no aggregate in a
            # FILTER; the window's values without their NULLs instead (ARRAY_REMOVE, which JSON values would not take)
            values = sqlglot.parse_one("ARRAY_REMOVE(ARRAY_AGG(v_), NULL)", read="postgres")
            _slot(values).replace(node.this)
            node.replace(values.this)  # the window holds ARRAY_AGG(x); ARRAY_REMOVE goes round the window
            window.replace(values)
            values.set("this", window)
        else:
            values = sqlglot.parse_one("ARRAY_AGG(v_) FILTER (WHERE v_ IS NOT NULL)", read="postgres")
            first_v, second_v = list(values.find_all(exp.Column))
            second_v.replace(node.this.copy())
            first_v.replace(node.this)
            node.replace(values)
            if window is not None:  # the window's aggregate is indexed, not the aggregate inside it
                values = window
        first = sqlglot.parse_one("(v_)[1]", read="postgres")  # PostgreSQL's arrays count from 1
        slot = _slot(first)
        values.replace(first)
        slot.replace(values)
    return tree


def _slot(template: Any) -> exp.Column:
    """The placeholder column ``v_`` of a parsed template."""
    slot = template.find(exp.Column)
    assert slot is not None, template.sql()
    return slot


_FORMAT_SPEC = re.compile(r"%(?:(%)|(-?\d*)(?:\.(\d+))?([dfsi]))")


def format_calls(tree: exp.Expression) -> exp.Expression:
    """BigQuery's printf-style ``FORMAT('%.1f%%', x)`` -> text joined with ``||``: a number with d decimals is
    ``ROUND(x, d)`` as text (``TO_CHAR`` would pad), ``%d`` the whole number, ``%s`` the text; other specifiers (width,
    thousands separators) have no plain counterpart and are refused."""
    for node in list(tree.find_all(exp.Format)):
        template = node.this
        if not (isinstance(template, exp.Literal) and template.is_string):
            raise QueryExecutionError("Cannot transpile to PostgreSQL: FORMAT with a computed format string.")
        args, last = list(node.expressions), 0
        parts: list[exp.Expression] = []
        for m in _FORMAT_SPEC.finditer(template.this):
            if m.start() > last:
                parts.append(exp.Literal.string(template.this[last:m.start()]))
            last = m.end()
            if m.group(1):
                parts.append(exp.Literal.string("%"))
                continue
            if m.group(2) or not args:
                raise QueryExecutionError(f"Cannot transpile to PostgreSQL: FORMAT specifier {m.group(0)!r}.")
            value = args.pop(0)
            kind, digits = m.group(4), m.group(3)
            if kind == "f":
                value = exp.Round(this=exp.cast(value, "NUMERIC"), decimals=exp.Literal.number(int(digits) if digits else 6))
            elif kind in "di":
                value = exp.cast(value, "BIGINT")
            parts.append(exp.cast(value, "TEXT"))
        if last < len(template.this):
            parts.append(exp.Literal.string(template.this[last:]))
        if args:
            raise QueryExecutionError("Cannot transpile to PostgreSQL: FORMAT with more values than specifiers.")
        joined: exp.Expression = parts[0] if parts else exp.Literal.string("")
        for part in parts[1:]:
            joined = exp.DPipe(this=joined, expression=part)
        node.replace(exp.Paren(this=joined))
    return tree


def guarded_divisions(tree: exp.Expression) -> exp.Expression:
    """``a / b`` -> ``a / NULLIF(b, 0)``. A ratio whose denominator the 100-patient demo leaves at zero (a group with no
    rows of its kind) is an artefact of the sample: PostgreSQL would fail the whole query on it, as BigQuery would,
    where DuckDB answers Infinity; NULL is what BigQuery's SAFE_DIVIDE gives for it and lets the other rows through
    (so a row whose ratio is undefined drops out of ``WHERE a / b > k`` and out of an average of ratios). A number
    written as the denominator is left alone: a division by a written 0 is a mistake of the query, not of the sample."""
    for node in list(tree.find_all(exp.Div)):
        denominator = node.expression
        if not isinstance(denominator, (exp.Nullif, exp.Literal)):
            node.set("expression", exp.Nullif(this=denominator, expression=exp.Literal.number(0)))
    return tree


RULES: tuple[Callable[[exp.Expression], exp.Expression], ...] = (local_tables, safe_calls, unnest_structs, printf_formats,
                                                                 scalar_quantiles)
POSTGRES_RULES: tuple[Callable[[exp.Expression], exp.Expression], ...] = (
    local_tables, plain_safe_calls, values_structs, boundary_diffs, percentile_quantiles, window_percentiles, word_boundaries,
    regexp_extracts, split_parts, struct_objects, datetime_truncs, any_values, format_calls, typed_union_nulls, numeric_rounding,
    timestamp_parts, guarded_divisions,
    subquery_aliases, having_aliases)
TARGETS = {"duckdb": RULES, "postgres": POSTGRES_RULES}


def to_duckdb(sql: str) -> str:
    """BigQuery SQL -> DuckDB SQL over ``mimic_iv_raw``'s schemas.

    Raises:
        QueryExecutionError: sqlglot cannot parse it, or has no DuckDB equivalent for a construct
            (the message says which).
    """
    return transpile_bigquery(sql, "duckdb")


def to_postgres(sql: str) -> str:
    """BigQuery SQL -> PostgreSQL SQL over the mimic-code schemas (``mimiciv_hosp``, ...); raises as :func:`to_duckdb`."""
    return transpile_bigquery(sql, "postgres")


def transpile_bigquery(sql: str, target: str) -> str:
    """BigQuery SQL -> the SQL of ``target`` (``duckdb`` or ``postgres``) over the mimic-code schemas."""
    if target not in TARGETS:
        raise QueryExecutionError(f"No transpiler from BigQuery to {target}; the targets are {', '.join(TARGETS)}.")
    name = {"duckdb": "DuckDB", "postgres": "PostgreSQL"}[target]
    try:
        tree = sqlglot.parse_one(sql, read="bigquery")
    except sqlglot.errors.SqlglotError as exc:
        raise QueryExecutionError(f"Cannot parse the BigQuery SQL: {exc}") from exc
    # sqlglot >= 30 types parse_one as its Expr base class; every node it parses is an Expression.
    assert isinstance(tree, exp.Expression)
    for rule in TARGETS[target]:
        tree = rule(tree)
    try:
        # Raise instead of logging a warning and emitting SQL that means something else.
        return tree.sql(dialect=target, unsupported_level=ErrorLevel.RAISE)
    except sqlglot.errors.SqlglotError as exc:
        raise QueryExecutionError(f"Cannot transpile to {name}: {exc}") from exc


def transpiler_for(dialect: str) -> Callable[[str], str]:
    """The BigQuery transpiler into a database's dialect (``duckdb``, ``postgres``).

    Raises:
        QueryExecutionError: no transpiler into that dialect (ClinSQL's schemas are the mimic-code layout).
    """
    if dialect not in TARGETS:
        raise QueryExecutionError(f"ClinSQL's BigQuery SQL runs on DuckDB or PostgreSQL (mimic_iv_raw), not on {dialect}.")
    return lambda sql: transpile_bigquery(sql, dialect)


def error_class(message: str) -> str:
    """A short class of an engine error: 'Catalog Error: missing mimiciv_derived.charlson', 'Binder Error', ..."""
    head = message.split(":", 1)[0].strip()
    m = re.search(r'Table with name "?([\w.]+)"? does not exist', message)
    if m:
        return f"{head}: missing table {m.group(1)}"
    m = re.search(r'relation "?([\w.]+)"? does not exist', message)
    if m:
        return f"{head}: missing table {m.group(1)}"
    m = re.search(r'schema "?(\w+)"? does not exist', message)
    if m:
        return f"{head}: missing schema {m.group(1)}"
    return head[:60]
