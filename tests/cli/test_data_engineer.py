"""The command line for a data engineer: SQL from files and standard input, results as table/JSON/CSV/Parquet, and
clear non-zero exits for an unknown table, column or profile (real CLI, real demo database)."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import duckdb
from click.testing import CliRunner

from ehrguard.cli import cli
from ehrguard.errors import ConfigError, SchemaLookupError

SQL = "SELECT subject_id, gender FROM patients ORDER BY subject_id LIMIT 3"


def rows(db: Path) -> list[tuple]:
    import sqlite3

    with sqlite3.connect(db) as conn:
        return conn.execute(SQL).fetchall()


def test_sql_from_a_file_and_standard_input_in_every_format(mimic_iv_db: Path, tmp_path: Path):
    runner = CliRunner()
    expected = rows(mimic_iv_db)
    query = tmp_path / "q.sql"
    query.write_text(SQL + "\n")
    r = runner.invoke(cli, ["sql", "run", "--db", str(mimic_iv_db), "--file", str(query), "--format", "csv"])
    assert r.exit_code == 0, r.output
    body = [line for line in r.stdout.splitlines() if line]
    assert list(csv.reader(io.StringIO("\n".join(body)))) == [["subject_id", "gender"], *[[str(a), b] for a, b in expected]]
    r = runner.invoke(cli, ["sql", "run", "--db", str(mimic_iv_db), "-", "--format", "json"], input=SQL)
    assert r.exit_code == 0 and json.loads(r.stdout)["rows"] == [list(x) for x in expected], r.output
    out = tmp_path / "rows.parquet"
    r = runner.invoke(cli, ["sql", "run", "--db", str(mimic_iv_db), SQL, "--format", "parquet", "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert duckdb.sql(f"SELECT * FROM '{out}'").fetchall() == expected
    assert [c[1] for c in duckdb.sql(f"DESCRIBE SELECT * FROM '{out}'").fetchall()] == ["BIGINT", "VARCHAR"]
    text = tmp_path / "rows.txt"
    r = runner.invoke(cli, ["sql", "run", "--db", str(mimic_iv_db), SQL, "--out", str(text)])
    assert r.exit_code == 0 and text.read_text().splitlines()[0].split() == ["subject_id", "gender"]
    # an empty result is still a Parquet file with the columns
    empty = tmp_path / "empty.parquet"
    r = runner.invoke(cli, ["sql", "run", "--db", str(mimic_iv_db), "SELECT subject_id FROM patients WHERE 0", "--format", "parquet",
                            "--out", str(empty)])
    assert r.exit_code == 0 and duckdb.sql(f"SELECT count(*) FROM '{empty}'").fetchall() == [(0,)]


def test_bad_sql_input_is_one_clear_error(mimic_iv_db: Path, tmp_path: Path):
    runner = CliRunner()
    for args, words in ((["sql", "run", "--db", str(mimic_iv_db)], "No SQL"),
                        (["sql", "run", "--db", str(mimic_iv_db), "SELECT 1", "--format", "parquet"], "pass --out"),
                        (["sql", "run", "--db", str(mimic_iv_db), "SELECT 1", "--file", str(tmp_path / "q.sql")], "Give the SQL once"),
                        (["sql", "run", "--db", str(mimic_iv_db), "--file", str(tmp_path / "absent.sql")], "Cannot read the SQL file")):
        r = runner.invoke(cli, args)
        assert isinstance(r.exception, ConfigError) and words in str(r.exception), (args, r.exception)


def test_unknown_tables_columns_and_profiles_exit_non_zero(mimic_iv_db: Path):
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "ehrguard", *args], capture_output=True, text=True, timeout=120, check=False)

    r = run("db", "values", "--db", str(mimic_iv_db), "patients", "gendr", "m")
    assert r.returncode == 1 and "No column 'gendr' in patients. Did you mean 'gender'?" in r.stderr and "Traceback" not in r.stderr
    r = run("db", "schema", "--db", str(mimic_iv_db), "--table", "labevent")
    assert r.returncode == 1 and "Did you mean 'labevents'" in r.stderr
    r = run("verify", "--db", str(mimic_iv_db), "-q", "q", "-s", "SELECT 1", "--db-id", "mimic_iv4")
    assert r.returncode == 1 and "Unknown database profile 'mimic_iv4'. Did you mean 'mimic_iv'?" in r.stderr
    r = CliRunner().invoke(cli, ["db", "values", "--db", str(mimic_iv_db), "patient", "gender", "m"])
    assert isinstance(r.exception, SchemaLookupError) and "Did you mean 'patients'" in str(r.exception)
    r = CliRunner().invoke(cli, ["db", "schema", "--db", str(mimic_iv_db), "--table", "patients"])
    assert r.exit_code == 0 and r.output.startswith("patients(") and r.output.count("\n") == 1


def test_what_a_careless_user_types_is_one_line_and_the_data_stay_as_they_are(mimic_iv_db: Path, tmp_path: Path):
    """Found by an independent new-user review: a missing output folder, an audit path that is a folder, a data value
    that looks like rich markup, a JSON number JSON cannot hold, an unknown table and a penalty past any bar."""
    def run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
        import os

        return subprocess.run([sys.executable, "-m", "ehrguard", *args], capture_output=True, text=True, timeout=180, check=False,
                              env={**os.environ, **env})

    missing = tmp_path / "no" / "such" / "folder"
    for args in (("sql", "run", "--db", str(mimic_iv_db), "SELECT 1", "--format", "csv", "--out", str(missing / "x.csv")),
                 ("db", "profile", "--db", str(mimic_iv_db), "--out", str(missing / "p.toml"))):
        r = run(*args)
        assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
        assert f"cannot read or write {missing}" in r.stderr and "Check that the folder exists" in r.stderr
    r = run("verify", "--db", str(mimic_iv_db), "-q", "What is the gender of patient 10004235?",
            "-s", "SELECT gender FROM patients WHERE subject_id = 10004235", EHRGUARD_AUDIT_PATH=str(tmp_path))
    assert r.returncode == 1 and "Cannot open the audit log" in r.stderr and "Traceback" not in r.stderr, r.stderr
    r = run("ask", "--db", str(tmp_path / "absent.sqlite"), "-q", "x")  # no abort from a model thread still loading
    assert r.returncode == 1 and "No database" in r.stderr and "db build NAME builds one of" in r.stderr
    r = run("ask", "--db", str(mimic_iv_db), "-q", "What is the gender of patient 10004235?", "--penalty", "inf")
    assert r.returncode == 2 and "not in the range" in r.stderr
    # the table goes to standard output, its cells as they are
    r = run("sql", "run", "--db", str(mimic_iv_db), "SELECT '[/bold]' AS x, 'dose [red] 5mg' AS \"[b]c\"")
    assert r.returncode == 0 and "[/bold]" in r.stdout and "dose [red] 5mg" in r.stdout and "[b]c" in r.stdout, r.stderr
    r = CliRunner().invoke(cli, ["sql", "run", "--db", str(mimic_iv_db), "SELECT 1e999 AS x, 1 AS y", "--format", "json"])
    assert r.exit_code == 0 and json.loads(r.stdout)["rows"] == [[None, 1]]
    r = CliRunner().invoke(cli, ["sql", "run", "--db", str(mimic_iv_db), "SELECT * FROM nope"])
    assert r.exception is not None and "ehrguard db schema --db" in str(r.exception)
