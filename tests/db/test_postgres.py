"""PostgreSQL on a real server (a throwaway cluster) holding the MIMIC-IV demo in the mimic-code layout: loading,
read-only execution, limits, the pool, a least-privilege role, the adversarial corpus, and the verifier through it."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner

from ehrguard import answer
from ehrguard.benchmarks.hostile import run_hostile
from ehrguard.cli import cli
from ehrguard.db import PostgresDatabase, connect_database, read_schema
from ehrguard.errors import (
    DatabaseNotFoundError,
    QueryExecutionError,
    QueryRefusedError,
    QueryTimeoutError,
    ReadOnlyViolationError,
)


@pytest.fixture(scope="module")
def db(postgres_url: str):
    database = PostgresDatabase(postgres_url)
    yield database
    database.close()


def test_the_demo_is_loaded_in_the_mimic_code_layout(db: PostgresDatabase, postgres_url: str, shared_data: Path):
    schema = read_schema(db)
    names = {t.qualified_name for t in schema.tables}
    assert {"mimiciv_hosp.patients", "mimiciv_hosp.admissions", "mimiciv_icu.icustays", "mimiciv_derived.charlson"} <= names
    patients = schema.require_table("mimiciv_hosp.patients")
    assert [c.name for c in patients.columns][:3] == ["subject_id", "gender", "anchor_age"]
    assert db.execute("SELECT count(*) FROM mimiciv_hosp.patients").rows == [(100,)]
    first = db.execute("SELECT subject_id, admittime FROM mimiciv_hosp.admissions ORDER BY subject_id, admittime LIMIT 1").rows
    assert first[0][0] == 10000032 and isinstance(first[0][1], str) and first[0][1].startswith("21")  # timestamps as text
    with psycopg.connect(postgres_url) as admin:  # the join and filter columns are indexed, as mimic-code indexes them
        indexed = {r[0] for r in admin.execute("SELECT indexdef FROM pg_indexes WHERE schemaname = 'mimiciv_icu' "
                                               "AND tablename = 'chartevents'").fetchall()}
    assert {"stay_id", "itemid", "charttime"} <= {d.rsplit("(", 1)[1].rstrip(")") for d in indexed}


def test_writes_are_refused_before_they_run_and_by_the_server(db: PostgresDatabase, postgres_url: str):
    with pytest.raises(ReadOnlyViolationError):
        db.execute("DELETE FROM mimiciv_hosp.patients")
    with pytest.raises(ReadOnlyViolationError):  # a data-modifying CTE passes the SELECT check; the server refuses it
        db.execute("WITH gone AS (DELETE FROM mimiciv_hosp.patients RETURNING *) SELECT count(*) FROM gone")
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        admin.execute("CREATE SEQUENCE IF NOT EXISTS public.s")
    with pytest.raises(ReadOnlyViolationError, match="read-only"):  # a function that writes, inside a SELECT
        db.execute("SELECT nextval('public.s')")
    for sql in ("SELECT pg_read_file('/etc/passwd')", "SELECT lo_import('/etc/passwd')", "SELECT * FROM pg_ls_dir('.')",
                "SELECT PG_READ_FILE ('/etc/hostname')", "SELECT set_config('default_transaction_read_only', 'off', false)"):
        with pytest.raises(QueryRefusedError, match="reaches outside"):
            db.execute(sql)
    with pytest.raises(QueryRefusedError, match="NUL"):
        db.execute("SELECT 1\x00; DELETE FROM mimiciv_hosp.patients")
    assert db.execute("SELECT count(*) FROM mimiciv_hosp.patients").rows == [(100,)]


def test_limits_time_rows_and_bytes(db: PostgresDatabase):
    with pytest.raises(QueryTimeoutError, match="1 s"):
        db.execute("SELECT pg_sleep(5)", timeout_s=1)
    capped = db.execute("SELECT * FROM mimiciv_hosp.labevents", max_rows=7)
    assert len(capped.rows) == 7 and capped.truncated and "row cap" in capped.truncated_reason
    wide = db.execute("SELECT repeat('x', 5000000) AS v")
    assert wide.truncated and len(wide.rows[0][0]) < 5_000_000
    with pytest.raises(QueryExecutionError, match="does not exist"):
        db.execute("SELECT * FROM mimiciv_hosp.no_such_table")
    assert db.execute("SELECT 1").rows == [(1,)]  # the connection is usable after each failure


def test_the_pool_is_shared_and_bounded(db: PostgresDatabase, postgres_url: str):
    errors: list[Exception] = []

    def work() -> None:
        try:
            for _ in range(5):
                assert db.execute("SELECT count(*) FROM mimiciv_icu.icustays, pg_sleep(0.02)").rows == [(140,)]
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    with psycopg.connect(postgres_url) as admin:
        (n,) = admin.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'ehrguard'").fetchone()
    assert 1 <= n <= 4  # max_concurrent_queries (4): the pool never opened more


def test_a_least_privilege_role(postgres_url: str):
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        admin.execute("DROP ROLE IF EXISTS reader")
        admin.execute("CREATE ROLE reader LOGIN")
        for schema in ("mimiciv_hosp", "mimiciv_icu", "mimiciv_derived"):
            admin.execute(f"GRANT USAGE ON SCHEMA {schema} TO reader")
            admin.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA {schema} TO reader")
    reader = PostgresDatabase(postgres_url.replace("postgres@", "reader@"))
    try:
        assert reader.execute("SELECT count(*) FROM mimiciv_hosp.patients").rows == [(100,)]
        with pytest.raises(QueryRefusedError, match="role"):
            reader.execute("SELECT rolpassword FROM pg_authid")
    finally:
        reader.close()
    with pytest.raises(DatabaseNotFoundError, match="Cannot connect"):
        PostgresDatabase(postgres_url.replace("postgres@", "nobody@"))


def test_the_adversarial_corpus_changes_nothing(db: PostgresDatabase):
    report = run_hostile(db, timeout_s=1.0)
    assert len(report.outcomes) >= 300 and report.file_unchanged and not report.new_files
    assert not report.failures, [(f.id, f.outcome, f.message[:80]) for f in report.failures]
    assert not any(o.outcome.startswith("crash") for o in report.outcomes)


def test_the_cli_and_the_verifier_work_through_a_url(postgres_url: str, tmp_path: Path, monkeypatch):
    monkeypatch.setenv("EHRGUARD_AUDIT_PATH", str(tmp_path / "audit.sqlite"))
    runner = CliRunner()
    r = runner.invoke(cli, ["sql", "run", "--db", postgres_url, "SELECT gender, count(*) FROM mimiciv_hosp.patients GROUP BY gender "
                            "ORDER BY gender", "--format", "json"])
    assert r.exit_code == 0, r.output
    assert sum(n for _, n in json.loads(r.stdout)["rows"]) == 100
    r = runner.invoke(cli, ["db", "schema", "--db", postgres_url, "--table", "mimiciv_icu.icustays"])
    assert r.exit_code == 0 and r.output.startswith("mimiciv_icu.icustays(subject_id, hadm_id, stay_id")
    r = runner.invoke(cli, ["verify", "--db", postgres_url, "-q", "How many patients are there?", "-s",
                            "SELECT COUNT(DISTINCT subject_id) FROM mimiciv_hosp.patients", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["action"] == "preserve"
    reply = answer("How many ICU stays are there?", db=postgres_url, sql="SELECT COUNT(*) FROM mimiciv_icu.icustays")
    assert reply.error is None and reply.result is not None and reply.result.rows == [(140,)]
    assert reply.receipt is not None and reply.receipt["database"]["dialect"] == "postgres"
    assert reply.receipt["database"]["profile"] == "mimic_iv_postgres" and reply.receipt["database"]["sha256"] is None
    wrong = answer("How many ICU stays are there?", db=postgres_url, sql="SELECT COUNT(*) FROM mimiciv_icu.icustay")
    assert wrong.verdict is not None and wrong.verdict.action != "preserve"


def test_a_password_never_reaches_the_audit_log(postgres_url: str, tmp_path: Path):
    from ehrguard.audit import AuditLog

    with psycopg.connect(postgres_url, autocommit=True) as admin:
        admin.execute("DROP ROLE IF EXISTS secretive")
        admin.execute("CREATE ROLE secretive LOGIN PASSWORD 'hunter2'")
        admin.execute("GRANT USAGE ON SCHEMA mimiciv_hosp TO secretive")
        admin.execute("GRANT SELECT ON ALL TABLES IN SCHEMA mimiciv_hosp TO secretive")
    url = postgres_url.replace("postgres@", "secretive:hunter2@")
    log = AuditLog(tmp_path / "audit.sqlite")
    reply = answer("How many patients are there?", db=url, sql="SELECT COUNT(DISTINCT subject_id) FROM mimiciv_hosp.patients", audit=log)
    assert reply.verdict is not None
    entry = log.entries(limit=1)[0]
    assert "hunter2" not in json.dumps(entry) and ":***@" in entry["db"]
    assert connect_database(url).execute("SELECT 1").rows == [(1,)]


def test_db_build_target_loads_a_database_through_the_cli(postgres_url: str, mimic_iv_raw_db: Path):
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        admin.execute("DROP DATABASE IF EXISTS mimic_cli")
        admin.execute("CREATE DATABASE mimic_cli")
    target = postgres_url.replace("/mimic?", "/mimic_cli?")
    # the session's DuckDB build, loaded as it is (without --out, the command builds one first: the fixture's path)
    r = CliRunner().invoke(cli, ["db", "build", "mimic_iv_raw", "--out", str(mimic_iv_raw_db), "--target", target, "--json"])
    assert r.exit_code == 0, r.output
    tables = json.loads(r.stdout)["tables"]
    assert tables["mimiciv_hosp.patients"] == 100 and tables["mimiciv_icu.icustays"] == 140 and len(tables) >= 30
    loaded = PostgresDatabase(target)
    try:
        assert loaded.execute("SELECT count(*) FROM mimiciv_hosp.labevents").rows == [(tables["mimiciv_hosp.labevents"],)]
    finally:
        loaded.close()
    r = CliRunner().invoke(cli, ["db", "build", "mimic_iv", "--target", target])
    assert r.exception is not None and "use mimic_iv_raw" in str(r.exception)


def test_a_profile_drafted_from_the_server_names_the_mimic_code_entities(db: PostgresDatabase):
    from ehrguard.profile_draft import draft_profile
    from ehrguard.profiles import PROFILES

    profile = draft_profile(db, "my_mimic")
    assert profile.dialect == "postgres" and profile.entities == PROFILES["mimic_iv_postgres"].entities
    assert "mimiciv_hosp.admissions.admittime" in profile.time_columns and "mimiciv_hosp.d_labitems.label" in profile.value_columns


def test_a_link_names_the_server_for_the_server_mcp_and_the_benchmarks(postgres_url: str, tmp_path: Path, monkeypatch,
                                                                          shared_data: Path):
    from fastapi.testclient import TestClient

    from ehrguard.audit import AuditLog
    from ehrguard.server import build_server
    from ehrguard.server.app import create_app
    from ehrguard.server.rehearsal import rehearse_mcp

    monkeypatch.setenv("EHRGUARD_DB_DIR", str(tmp_path / "dbs"))
    monkeypatch.setenv("EHRGUARD_AUDIT_PATH", str(tmp_path / "audit.sqlite"))
    runner = CliRunner()
    r = runner.invoke(cli, ["db", "link", "mimic_pg", postgres_url])
    assert r.exit_code == 0, r.output
    link = tmp_path / "dbs" / "mimic_pg.postgres"
    assert link.stat().st_mode & 0o777 == 0o600 and "conventions mimic_iv_postgres" in " ".join(r.output.split())
    # a server that cannot be reached is one line, and no link is written
    r = runner.invoke(cli, ["db", "link", "nowhere", "postgresql://nobody@127.0.0.1:1/none?connect_timeout=2"])
    assert r.exit_code != 0 and "Traceback" not in r.output and not (tmp_path / "dbs" / "nowhere.postgres").exists()

    # every --db NAME reaches it: the CLI, the REST API, MCP, the benchmarks
    r = runner.invoke(cli, ["sql", "run", "--db", "mimic_pg", "SELECT COUNT(*) FROM mimiciv_hosp.patients", "--format", "json"])
    assert r.exit_code == 0 and json.loads(r.stdout)["rows"] == [[100]]
    client = TestClient(create_app(tokens=["t"], audit=AuditLog(tmp_path / "api.sqlite"), rate_limit=1000))
    auth = {"Authorization": "Bearer t"}
    assert client.get("/v1/databases", headers=auth).json()["databases"] == [{"name": "mimic_pg", "file": "mimic_pg.postgres"}]
    assert client.get("/healthz").json()["value_lexicons"] == {"in memory": 1}
    reply = client.post("/v1/verify", headers=auth, json={"db": "mimic_pg", "question": "How many ICU stays are there?",
                                                          "sql": "SELECT COUNT(*) FROM mimiciv_icu.icustays", "execute": True})
    assert reply.status_code == 200, reply.text
    assert reply.json()["result"]["rows"] == [[140]] and reply.json()["action"] == "preserve"
    assert "mimiciv_hosp.patients" in client.get("/v1/databases/mimic_pg/schema", headers=auth).text
    assert rehearse_mcp(build_server("offline")) == []  # list_databases and verify_sql on the link, over an MCP session
    r = runner.invoke(cli, ["bench", "hostile", "--db", "mimic_pg", "--category", "write", "--json"])
    assert r.exit_code == 0, r.output
    assert all(not report["failures"] for report in json.loads(r.stdout))
    r = runner.invoke(cli, ["doctor", "--json"])
    check = next(c for c in json.loads(r.stdout)["checks"] if c["name"] == "mimic_pg")
    assert check["state"] == "ok" and check["detail"].startswith("postgres, postgresql://") and "in memory" in check["detail"]


def test_clinsql_bigquery_sql_runs_transpiled_on_postgresql(postgres_url: str, db: PostgresDatabase, shared_data: Path):
    from ehrguard.clinsql import to_postgres

    def one(bigquery: str) -> tuple:
        return tuple(db.execute(to_postgres(bigquery)).rows[0])

    # BigQuery's *_DIFF count the unit boundaries crossed; quantiles at the fractions asked; RE2's word boundary
    assert one("SELECT DATETIME_DIFF(DATETIME '2020-01-02 00:10:00', DATETIME '2020-01-01 23:50:00', DAY), "
               "TIMESTAMP_DIFF(TIMESTAMP '2020-01-01 10:05:00', TIMESTAMP '2020-01-01 09:55:00', HOUR), "
               "DATE_DIFF(DATE '2021-01-01', DATE '2020-12-31', YEAR)") == (1, 1, 1)
    assert one("SELECT APPROX_QUANTILES(x, 4)[OFFSET(2)], APPROX_QUANTILES(x, 2 IGNORE NULLS)[OFFSET(2)], "
               "ROUND(AVG(x) / 3, 2) FROM UNNEST([1, 2, 3, 4, 5, NULL]) AS x") == (3, 5, pytest.approx(1.0))
    assert one(r"SELECT REGEXP_CONTAINS('take 40 mg', r'\b40\b'), REGEXP_CONTAINS('take 400 mg', r'\b40\b')") == (True, False)
    assert one("SELECT label, n FROM (SELECT 1 AS x, 2 AS y), UNNEST([STRUCT('a' AS label, x AS n), STRUCT('b' AS label, y AS n)]) "
               "ORDER BY n") == ("a", 1)
    assert one("SELECT DATETIME(2150, 1, 1, 0, 0, 0) < DATETIME '2150-01-02 00:00:00'") == (True,)
    assert one("SELECT subject_id, COUNT(*) AS n FROM `physionet-data.mimiciv_3_1_hosp.admissions` GROUP BY subject_id "
               "HAVING n > 3 ORDER BY n DESC, subject_id LIMIT 1")[1] > 3
    assert one("SELECT COUNT(*) FROM (SELECT subject_id FROM `physionet-data.mimiciv_3_1_hosp.patients`)") == (100,)
    # a windowed percentile (PostgreSQL has none) read from the partition's sorted values, as BigQuery and DuckDB read it
    rows = "SELECT 1 AS g, 1.0 AS x UNION ALL SELECT 1, 2.0 UNION ALL SELECT 1, 4.0 UNION ALL SELECT 1, NULL UNION ALL SELECT 2, 3.0"
    windowed = (f"SELECT PERCENTILE_CONT(x, 0.5) OVER (PARTITION BY g), PERCENTILE_CONT(x, 0.9) OVER (PARTITION BY g), "
                f"PERCENTILE_DISC(x, 0.5) OVER (PARTITION BY g), PERCENTILE_DISC(x, 0.25) OVER () FROM ({rows}) ORDER BY g, x")
    assert one(windowed) == pytest.approx((2.0, 3.6, 2.0, 1.0))
    assert tuple(db.execute(to_postgres(windowed)).rows[-1]) == pytest.approx((3.0, 3.0, 3.0, 1.0))
    # printf-style FORMAT, REGEXP_EXTRACT, SPLIT(...)[OFFSET(i)], DATETIME_TRUNC, a named struct, a NULL typed by its union
    assert one(r"SELECT FORMAT('%.1f%%', 12.345), FORMAT('%d patients (%s)', 12, 'x'), REGEXP_EXTRACT('dose 40-80 mg', r'(\d+)-'), "
               r"REGEXP_EXTRACT('no dose', r'\d+'), SPLIT('40-80', '-')[OFFSET(1)], "
               "DATETIME_TRUNC(DATETIME '2150-01-01 13:45:00', HOUR) = DATETIME '2150-01-01 13:00:00'") == (
        "12.3%", "12 patients (x)", "40", None, "80", True)
    assert one("SELECT m.v FROM (SELECT 1 AS x) CROSS JOIN UNNEST([STRUCT(1 AS k, 'a' AS v)]) AS m") == ("a",)
    assert one("SELECT COUNT(*), SUM(hi) FROM (SELECT 'a' AS n, NULL AS hi UNION ALL SELECT 'b', 4.0 UNION ALL SELECT 'c', NULL)") == (
        3, pytest.approx(4.0))
    # a NULL typed by literals of its union: whole numbers, decimals with them, typed dates
    assert one("SELECT SUM(n), MAX(d) FROM (SELECT NULL AS n, NULL AS d UNION ALL SELECT 2, DATE '2150-01-02' "
               "UNION ALL SELECT 1.5, NULL)") == (pytest.approx(3.5), "2150-01-02")
    # halves rounded away from zero as BigQuery rounds them (PostgreSQL's doubles round them to even); a condition counted
    assert one("SELECT ROUND(45 / 10) * 10, CAST(5 / 2 AS INT64), ROUND(-2.5), SUM(CAST(x > 1 AS INT64)) "
               "FROM UNNEST([1, 2, 3]) AS x") == (50, 3, -3, 2)
    # ... and a NULL a CTE writes, typed by the aggregate of the CTE another branch of the union reads
    assert one("WITH a AS (SELECT 'all' AS s, COUNT(*) AS n, NULL AS m FROM UNNEST([1, 2]) AS x), "
               "b AS (SELECT 'top' AS s, COUNT(*) AS n, AVG(x) AS m FROM UNNEST([1, 2]) AS x) "
               "SELECT * FROM a UNION ALL SELECT * FROM b ORDER BY s DESC") == ("top", 2, pytest.approx(1.5))
    # ANY_VALUE of any type (MIN has no boolean form), NULLs passed over as BigQuery passes them
    assert one("SELECT ANY_VALUE(b), ANY_VALUE(x) FROM (SELECT NULL AS x, TRUE AS b UNION ALL SELECT 'a', TRUE)") == (True, "a")
    assert one("SELECT ANY_VALUE(b) OVER (PARTITION BY g), ANY_VALUE(x) OVER (PARTITION BY g) FROM "
               "(SELECT 1 AS g, NULL AS x, TRUE AS b UNION ALL SELECT 1, 'a', NULL)") == (True, "a")  # over a window too
    assert one("SELECT ANY_VALUE(MAX(x)) OVER (), ANY_VALUE(ANY_VALUE(x)) OVER () FROM UNNEST([3, 3]) AS x GROUP BY x") == (3, 3)
    # numbers of several kinds type a union's NULL as the widest; a CTE read twice is read twice; COUNTIF and ROUND count
    assert one("SELECT 'x', NULL UNION ALL SELECT 'z', CAST(0.5 AS FLOAT64) UNION ALL SELECT 'w', COUNT(*) FROM UNNEST([1]) "
               "ORDER BY 1 DESC") == ("z", pytest.approx(0.5))
    assert one("WITH c AS (SELECT x, NULL AS n FROM UNNEST([1, 2]) AS x), a AS (SELECT * FROM c WHERE x = 1), "
               "b AS (SELECT * FROM c WHERE x = 2) SELECT * FROM a UNION ALL SELECT * FROM b "
               "UNION ALL SELECT 0, COUNTIF(x > 1) FROM UNNEST([1, 2]) AS x ORDER BY 1") == (0, 1)
    assert one("WITH m AS (SELECT 'none' AS g, NULL AS r) SELECT 'all', ROUND(AVG(x), 1) FROM UNNEST([1, 2]) AS x "
               "UNION ALL SELECT * FROM m ORDER BY 1") == ("all", pytest.approx(1.5))
    with pytest.raises(QueryExecutionError, match="HAVING"):
        to_postgres("SELECT ANY_VALUE(x HAVING MAX y) FROM t")
    # weeks: ISO weeks start on Monday, BigQuery's WEEK on Sunday, WEEK(SATURDAY) on Saturday (2150-01-01 is a Thursday)
    weeks = one("SELECT DATETIME_TRUNC(DATETIME '2150-01-01 13:45:00', ISOWEEK), DATETIME_TRUNC(DATETIME '2150-01-01 13:45:00', WEEK), "
                "DATETIME_TRUNC(DATETIME '2150-01-01 13:45:00', WEEK(SATURDAY)), DATETIME_TRUNC(DATETIME '2150-01-04 08:00:00', WEEK)")
    assert [str(w)[:10] for w in weeks] == ["2149-12-29", "2149-12-28", "2149-12-27", "2150-01-04"]
    with pytest.raises(QueryExecutionError, match="ISOYEAR"):
        to_postgres("SELECT DATETIME_TRUNC(t, ISOYEAR) FROM x")
    # BigQuery's / divides as decimals; a denominator the demo leaves at zero gives NULL, not a failed query; a written
    # 0 is the query's own mistake and fails as on BigQuery
    assert one("SELECT 10 / 4, 1 / MIN(x), COUNT(*) / SUM(x), SAFE_DIVIDE(1, 0) FROM UNNEST([0, 0]) AS x") == (
        pytest.approx(2.5), None, None, None)
    with pytest.raises(QueryExecutionError, match="division by zero"):
        one("SELECT 1 / 0.00")
    # the validation split's gold queries (the CLI picks the transpiler from the database's dialect)
    r = CliRunner().invoke(cli, ["clinsql", "execcheck", "--split", str(shared_data / "clinsql" / "validation"), "--db",
                                 postgres_url, "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["n"] == 190 and out["executed"] == 190, out["errors"]


def test_the_verifier_reads_postgresql_sql_in_its_own_dialect(postgres_url: str):
    from ehrguard import verify

    sql = ("SELECT PERCENTILE_DISC(0.5) WITHIN GROUP (ORDER BY anchor_age)::numeric AS median_age "
           "FROM mimiciv_hosp.patients WHERE gender = 'F'")
    v = verify("What is the median age of the female patients?", sql, db=postgres_url)
    assert not [f for f in v.findings if f.check in ("parse", "execution")], v.findings
    assert v.action == "preserve"


def test_bench_scale_measures_postgresql_too(postgres_url: str, shared_data: Path, tmp_path: Path):
    from ehrguard.benchmarks.scale import run_scale

    report = run_scale(tmp_path / "work", shared_data / "mimic-iv-demo-2.2", shared_data / "clinsql" / "validation",
                       factors=(1,), postgres_url=postgres_url, patients=1, clinsql=3, timeout_s=30)
    pg = report["factors"][0]["engines"]["postgres"]
    assert pg["ehrsql"]["ran"] == pg["ehrsql"]["queries"] == 5 + 3 and pg["clinsql"]["ran"] == 3
    assert pg["size_mib"] > 10 and pg["build_s"] > 0
    assert connect_database(postgres_url).execute("SELECT count(*) FROM mimiciv_hosp.patients").rows == [(100,)]


def test_the_period_check_asks_postgresql_itself(postgres_url: str):
    from ehrguard.verify.api import database_context
    from ehrguard.verify.checks import repair, run_checks

    ctx = database_context(postgres_url)
    question = "How many admissions were there in March 2148?"
    right = ("SELECT COUNT(*) FROM mimiciv_hosp.admissions WHERE EXTRACT(YEAR FROM admittime) = 2148 "
             "AND EXTRACT(MONTH FROM admittime) = 3")
    assert "wrong_time_window" not in {f.check for f in run_checks(question, right, ctx).findings}
    wrong = "SELECT COUNT(*) FROM mimiciv_hosp.admissions WHERE admittime >= DATE '2148-04-01' AND admittime < DATE '2148-05-01'"
    checked = run_checks(question, wrong, ctx)
    assert "wrong_time_window" in {f.check for f in checked.findings}
    fixed = repair(checked)
    assert fixed is not None and ctx.db.execute(fixed).rows == ctx.db.execute(right).rows
