"""ClinSQL's BigQuery SQL on the DuckDB MIMIC-IV demo: the rewrite rules, and the share of gold queries that run."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from ehrguard.cli import cli
from ehrguard.clinsql.transpile import error_class, to_duckdb
from ehrguard.db import build_database
from ehrguard.errors import QueryExecutionError


def test_bigquery_tables_map_to_the_local_schemas():
    sql = to_duckdb("SELECT COUNT(*) FROM `physionet-data.mimiciv_3_1_hosp.patients` p "
                    "JOIN `physionet-data.mimiciv_3_1_icu.icustays` i USING (subject_id)")
    assert 'mimiciv_hosp."patients"' in sql and 'mimiciv_icu."icustays"' in sql and "physionet" not in sql


def test_safe_calls_become_try_except_around_aggregates():
    con = duckdb.connect()
    sql = to_duckdb("SELECT SAFE.PARSE_DATE('%Y-%m-%d', 'not a date') AS d")
    assert "TRY(" in sql and con.execute(sql).fetchall() == [(None,)]
    sql = to_duckdb("SELECT SAFE.SQRT(SUM(x)) AS s FROM UNNEST([4, 5]) AS x")
    assert "TRY(" not in sql and con.execute(sql).fetchall() == [(3.0,)]


def test_unnest_of_structs_exposes_their_fields_as_columns():
    con = duckdb.connect()
    con.execute("CREATE TABLE agg AS SELECT 1 AS x, 2 AS y")
    sql = to_duckdb("SELECT label, n FROM agg, UNNEST([STRUCT('a' AS label, x AS n), STRUCT('b' AS label, y AS n)]) ORDER BY n")
    assert con.execute(sql).fetchall() == [("a", 1), ("b", 2)]


def test_printf_formats_and_indexed_quantiles_read_as_bigquery_reads_them():
    import sqlglot

    # DuckDB's FORMAT reads {} (it returned the template untouched); PRINTF reads BigQuery's %-specifiers
    assert duckdb.sql(to_duckdb("SELECT FORMAT('%.1f%%', 12.345), FORMAT('%d of %s', 3, 'x')")).fetchall() == [("12.3%", "3 of x")]
    # a quantile read by its index is DuckDB's scalar APPROX_QUANTILE, which sqlglot reads back as it wrote it (the list
    # form came back cast to DOUBLE and failed to run, so a repair of such a query was lost)
    sql = to_duckdb("SELECT APPROX_QUANTILES(x, 4)[OFFSET(2)], APPROX_QUANTILES(x, 2 IGNORE NULLS)[OFFSET(2)] "
                    "FROM UNNEST([1, 2, 3, 4, 5, NULL]) AS x")
    again = sqlglot.parse_one(sql, read="duckdb").sql(dialect="duckdb")
    assert duckdb.sql(sql).fetchall() == duckdb.sql(again).fetchall() == [(3, 5)]


def test_postgresql_rewrites_refuse_what_they_would_read_wrongly():
    from ehrguard.clinsql.transpile import to_postgres

    # a named window's partition is elsewhere; a computed offset is not shifted to 1-based arrays by sqlglot
    with pytest.raises(QueryExecutionError, match="named window"):
        to_postgres("SELECT PERCENTILE_CONT(x, 0.5) OVER w FROM t WINDOW w AS (PARTITION BY g)")
    with pytest.raises(QueryExecutionError, match="computed offset"):
        to_postgres("SELECT SPLIT(s, ',')[OFFSET(i)] FROM t")
    assert "(STRING_TO_ARRAY(s, ','))[1]" in to_postgres("SELECT SPLIT(s, ',')[OFFSET(0)] FROM t")
    # ANY_VALUE: of a group, its first non-NULL value (any type); over a window, the window's aggregate indexed (an
    # aggregate's value over a window without the FILTER, which PostgreSQL refuses around an aggregate)
    assert "(ARRAY_AGG(b) FILTER(WHERE b IS NOT NULL))[1]" in to_postgres("SELECT ANY_VALUE(b) FROM t GROUP BY g")
    assert "(ARRAY_AGG(x) FILTER(WHERE x IS NOT NULL) OVER (PARTITION BY g))[1]" in to_postgres(
        "SELECT ANY_VALUE(x) OVER (PARTITION BY g) FROM t")
    assert "(ARRAY_REMOVE(ARRAY_AGG(MAX(x)) OVER (), NULL))[1]" in to_postgres("SELECT ANY_VALUE(MAX(x)) OVER () FROM t GROUP BY g")
    # a ratio's denominator guarded, a written number not: dividing by a written 0 is the query's own mistake
    assert to_postgres("SELECT a / b, a / 0 FROM t") == (
        "SELECT CAST(a AS DOUBLE PRECISION) / NULLIF(b, 0), CAST(a AS DOUBLE PRECISION) / 0 FROM t")
    with pytest.raises(QueryExecutionError, match="HAVING"):
        to_postgres("SELECT ANY_VALUE(x HAVING MAX y) FROM t")
    with pytest.raises(QueryExecutionError, match="ISOYEAR"):
        to_postgres("SELECT DATETIME_TRUNC(t, ISOYEAR) FROM x")
    # a NULL typed as its union's literals type the column: whole numbers, decimals with them, a typed date
    assert "CAST(NULL AS BIGINT)" in to_postgres("SELECT NULL AS n UNION ALL SELECT 2")
    assert "CAST(NULL AS DECIMAL)" in to_postgres("SELECT NULL AS n UNION ALL SELECT 2 UNION ALL SELECT 1.5")
    assert "CAST(NULL AS DATE)" in to_postgres("SELECT NULL AS d UNION ALL SELECT DATE '2150-01-02'")


def test_constructs_without_a_duckdb_equivalent_are_errors_not_warnings():
    with pytest.raises(QueryExecutionError, match="Cannot transpile"):
        to_duckdb("SELECT ARRAY_AGG(x LIMIT 2) FROM t")
    with pytest.raises(QueryExecutionError, match="Cannot parse"):
        to_duckdb("SELECT FROM WHERE (")
    assert (error_class('Catalog Error: Table with name "mimiciv_derived.charlson" does not exist!')
            == "Catalog Error: missing table mimiciv_derived.charlson")


def test_gold_queries_execute_on_the_demo(shared_data: Path, tmp_path_factory):
    db = tmp_path_factory.mktemp("raw") / "mimic_iv_raw.duckdb"
    build_database("mimic_iv_raw", source=shared_data / "mimic-iv-demo-2.2", out=db)
    r = CliRunner().invoke(cli, ["clinsql", "execcheck", "--split", str(shared_data / "clinsql" / "validation"), "--db", str(db), "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["n"] == 190 and out["executed"] / out["n"] >= 0.97
    assert out["executed"] == 190 and out["errors"] == {}  # with mimiciv_derived.charlson, every gold query runs
