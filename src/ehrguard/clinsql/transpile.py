"""Run ClinSQL's BigQuery SQL on the DuckDB MIMIC-IV (``mimic_iv_raw``): sqlglot plus small rewrite rules.

Each rule is a function on the parse tree, for one gap sqlglot leaves between the dialects:

* :func:`local_tables`: ``physionet-data.mimiciv_3_1_hosp.patients`` -> ``mimiciv_hosp.patients``;
* :func:`safe_calls`: BigQuery's ``SAFE.f(x)`` (NULL instead of an error) -> DuckDB's ``TRY(f(x))``
  (or the plain call around aggregates, which DuckDB does not allow inside ``TRY``);
* :func:`unnest_structs`: ``FROM t, UNNEST([STRUCT(... AS a, ...), ...])`` exposes the struct
  fields as columns in BigQuery; DuckDB needs ``(SELECT UNNEST([...], recursive := true))``.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import sqlglot
from sqlglot import exp
from sqlglot.errors import ErrorLevel

from ehrguard.errors import QueryExecutionError

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


def unnest_structs(tree: exp.Expression) -> exp.Expression:
    for node in list(tree.find_all(exp.Unnest)):
        if not isinstance(node.parent, (exp.From, exp.Join)) or node.args.get("alias") is not None:
            continue
        arrays = node.expressions
        if len(arrays) != 1 or not isinstance(arrays[0], exp.Array) or not all(isinstance(e, exp.Struct) for e in arrays[0].expressions):
            continue
        sub = sqlglot.parse_one(f"SELECT * FROM (SELECT UNNEST({arrays[0].sql(dialect='duckdb')}, recursive := true))", read="duckdb")
        node.replace(sub.args["from_"].this if "from_" in sub.args else sub.args["from"].this)
    return tree


RULES: tuple[Callable[[exp.Expression], exp.Expression], ...] = (local_tables, safe_calls, unnest_structs)


def to_duckdb(sql: str) -> str:
    """BigQuery SQL -> DuckDB SQL over ``mimic_iv_raw``'s schemas.

    Raises:
        QueryExecutionError: sqlglot cannot parse it, or has no DuckDB equivalent for a construct
            (the message says which).
    """
    try:
        tree = sqlglot.parse_one(sql, read="bigquery")
    except sqlglot.errors.SqlglotError as exc:
        raise QueryExecutionError(f"Cannot parse the BigQuery SQL: {exc}") from exc
    # sqlglot >= 30 types parse_one as its Expr base class; every node it parses is an Expression.
    assert isinstance(tree, exp.Expression)
    for rule in RULES:
        tree = rule(tree)
    try:
        # Raise instead of logging a warning and emitting SQL that means something else.
        return tree.sql(dialect="duckdb", unsupported_level=ErrorLevel.RAISE)
    except sqlglot.errors.SqlglotError as exc:
        raise QueryExecutionError(f"Cannot transpile to DuckDB: {exc}") from exc


def error_class(message: str) -> str:
    """A short class of an engine error: 'Catalog Error: missing mimiciv_derived.charlson', 'Binder Error', ..."""
    head = message.split(":", 1)[0].strip()
    m = re.search(r'Table with name "?([\w.]+)"? does not exist', message)
    if m:
        return f"{head}: missing table {m.group(1)}"
    m = re.search(r'schema "?(\w+)"? does not exist', message)
    if m:
        return f"{head}: missing schema {m.group(1)}"
    return head[:60]
