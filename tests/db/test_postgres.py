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
