"""eicu, mimicsql and mimic_iv_raw builders on the real demos: counts, invariants, determinism."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from ehrguard.db import Progress, build_database, open_database
from tests.helpers import assert_rebuild_identical


@pytest.fixture(scope="module")
def eicu(shared_data: Path, tmp_path_factory: pytest.TempPathFactory):
    out = tmp_path_factory.mktemp("eicu") / "eicu.sqlite"
    warnings: list[str] = []
    report = build_database("eicu", source=shared_data / "eicu-demo-2.0.1", out=out, progress=Progress(on_warning=warnings.append))
    return out, report, warnings


def test_eicu_schema_counts_and_warnings(eicu, shared_data: Path):
    out, report, warnings = eicu
    import re

    spec = (shared_data / "ehrsql" / "eicu" / "eicu.sql").read_text()
    expected = {m.group(1): [c for c in re.findall(r"^\s+(\w+) ", m.group(2), re.MULTILINE) if c != "FOREIGN"]
                for m in re.finditer(r"CREATE TABLE (\w+)\s*\((.*?)\n\)", spec, re.DOTALL)}
    conn = sqlite3.connect(out)
    actual = {t: [r[1] for r in conn.execute(f"PRAGMA table_info({t})")]
              for (t,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    conn.close()
    assert actual == expected
    assert 900 <= report.facts["patients"] <= 1000
    assert report.tables["patient"] > 1000 and report.tables["diagnosis"] > 5000 and report.tables["vitalperiodic"] == 0
    assert any("vitalPeriodic" in w and "EMPTY" in w for w in warnings)
    assert any("lab.csv is missing" in w for w in warnings)
    db = open_database(out)
    assert db.execute("SELECT count(*) FROM patient"
                      " WHERE unitadmittime > '2100-12-31 23:59:00' OR hospitaladmittime < '2099-01-01'").rows == [(0,)]
    assert db.execute("SELECT count(*) FROM cost").rows[0][0] == sum(report.tables[t] for t in ("diagnosis", "lab",
                                                                                                "treatment", "medication"))
    assert db.execute("SELECT count(*) FROM diagnosis WHERE diagnosisname <> lower(diagnosisname)").rows == [(0,)]


def test_eicu_is_deterministic(eicu, shared_data: Path, tmp_path: Path):
    out, _, _ = eicu
    assert_rebuild_identical("eicu", out, tmp_path, source=shared_data / "eicu-demo-2.0.1")


def test_mimicsql_tables_and_values(shared_data: Path, tmp_path: Path):
    out = tmp_path / "mimicsql.sqlite"
    report = build_database("mimicsql", source=shared_data / "mimic-iii-demo-1.4", out=out)
    assert report.tables["DEMOGRAPHIC"] == 129  # one row per demo admission
    db = open_database(out)
    # MIMICSQL-style queries (double-quoted identifiers and literals) run as published.
    n = db.execute('SELECT COUNT ( DISTINCT DEMOGRAPHIC."SUBJECT_ID" ) FROM DEMOGRAPHIC'
                   ' WHERE DEMOGRAPHIC."GENDER" = "F" AND DEMOGRAPHIC."AGE" < "83"').rows[0][0]
    assert 0 < n < 100
    joined = db.execute('SELECT COUNT(*) FROM DEMOGRAPHIC INNER JOIN LAB on DEMOGRAPHIC.HADM_ID = LAB.HADM_ID'
                        ' WHERE LAB."FLAG" = "abnormal"').rows[0][0]
    assert joined > 0
    assert db.execute("SELECT count(*) FROM DIAGNOSES WHERE SHORT_TITLE IS NULL").rows[0][0] < report.tables["DIAGNOSES"] * 0.05
    assert_rebuild_identical("mimicsql", out, tmp_path, source=shared_data / "mimic-iii-demo-1.4")


def test_mimic_iv_raw_layout_and_chartevents(shared_data: Path, tmp_path: Path):
    out = tmp_path / "raw.duckdb"
    warnings: list[str] = []
    report = build_database("mimic_iv_raw", source=shared_data / "mimic-iv-demo-2.2", out=out,
                            progress=Progress(on_warning=warnings.append))
    assert report.tables["mimiciv_hosp.patients"] == 100
    assert report.tables["mimiciv_icu.chartevents"] == 668862  # every stand-in row found a stay
    assert any("stand-in" in w for w in warnings)
    db = open_database(out)
    rows = db.execute(
        "SELECT count(DISTINCT p.subject_id) FROM mimiciv_hosp.patients p JOIN mimiciv_icu.chartevents c USING (subject_id)"
        " WHERE c.itemid = 220045"
    ).rows
    assert rows[0][0] > 50
    assert db.execute("SELECT count(*) FROM mimiciv_icu.chartevents c LEFT JOIN mimiciv_icu.icustays s USING (stay_id)"
                      " WHERE s.hadm_id <> c.hadm_id").rows == [(0,)]
    assert not list(tmp_path.glob(".raw.duckdb.*"))


def test_build_never_replaces_a_file_it_did_not_make(tmp_path: Path):
    from ehrguard.errors import ConfigError

    readme = tmp_path / "README.md"
    readme.write_text("not a database")
    with pytest.raises(ConfigError, match="is not a database; refusing to replace it.*--force"):
        build_database("synthetic", out=readme)
    assert readme.read_text() == "not a database"
    other = tmp_path / "audit.sqlite"  # a SQLite database of something else
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE entries (id INTEGER)")
    conn.commit()
    conn.close()
    with pytest.raises(ConfigError, match="ehrguard did not build as synthetic"):
        build_database("synthetic", out=other)
    assert [r[0] for r in sqlite3.connect(other).execute("SELECT name FROM sqlite_master")] == ["entries"]
    own = tmp_path / "synthetic.sqlite"
    build_database("synthetic", out=own)
    build_database("synthetic", out=own)  # its own database is rebuilt in place
    build_database("synthetic", out=readme, force=True)
    assert open_database(readme).execute("SELECT COUNT(*) FROM patients").rows[0][0] > 0


def test_the_cli_refuses_in_one_line(tmp_path: Path):
    from click.testing import CliRunner

    from ehrguard.cli import cli
    from ehrguard.errors import ConfigError

    notes = tmp_path / "notes.txt"
    notes.write_text("keep me")
    result = CliRunner().invoke(cli, ["db", "build", "synthetic", "--out", str(notes)])
    assert isinstance(result.exception, ConfigError) and "--force" in str(result.exception)
    assert notes.read_text() == "keep me"
