"""Profiles from files: the shipped TOML files are the built-in profiles, `ehrguard db profile` drafts one for a
schema ehrguard has never seen, and `--db-id FILE.toml` uses it."""

from __future__ import annotations

import json
import random
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from ehrguard.cli import cli
from ehrguard.db import open_database
from ehrguard.profile_draft import draft_profile
from ehrguard.profiles import PROFILE_FILES, PROFILES, load_profile


def test_the_shipped_profile_files_are_the_built_in_profiles():
    files = {p.stem: p for p in PROFILE_FILES.glob("*.toml")}
    assert set(files) >= {"mimic_iv", "eicu", "mimicsql", "mimic_iv_raw", "mimic_iv_postgres", "mimic_iv_bigquery"}
    for db_id, path in files.items():
        assert load_profile(path) == PROFILES[db_id], f"{path.name} differs from PROFILES[{db_id!r}]: regenerate it"
    assert PROFILES["mimic_iv_bigquery"].dialect == "bigquery" and PROFILES["mimic_iv_postgres"].dialect == "postgres"


@pytest.fixture(scope="module")
def riverside(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A clinic's own schema, unlike any ehrguard knows: persons / visits / observations / orders, dates in 2031."""
    path = tmp_path_factory.mktemp("riverside") / "riverside.sqlite"
    rng = random.Random(3)
    con = sqlite3.connect(path)
    con.executescript("""
        CREATE TABLE persons (row_no INTEGER PRIMARY KEY, person_key TEXT, sex TEXT, born TEXT);
        CREATE TABLE visits (row_no INTEGER PRIMARY KEY, visit_key INTEGER, person_key TEXT, arrived TEXT, left_at TEXT,
                             ward TEXT);
        CREATE TABLE observations (row_no INTEGER PRIMARY KEY, visit_key INTEGER, test TEXT, result REAL, unit TEXT,
                                   taken TEXT, note TEXT);
    """)
    for i in range(60):
        key = f"P{i:04d}"
        con.execute("INSERT INTO persons (person_key, sex, born) VALUES (?, ?, ?)",
                    (key, rng.choice("fm"), f"19{rng.randint(30, 99)}-05-01"))
        for k in range(2):
            visit = i * 10 + k
            con.execute("INSERT INTO visits (visit_key, person_key, arrived, left_at, ward) VALUES (?, ?, ?, ?, ?)",
                        (visit, key, f"2031-0{k + 3}-01 09:00:00", f"2031-0{k + 3}-04 11:00:00", rng.choice(["north", "south", "icu"])))
            for test, unit in (("creatinine", "mg/dl"), ("hemoglobin", "g/dl")):
                con.execute("INSERT INTO observations (visit_key, test, result, unit, taken, note) VALUES (?, ?, ?, ?, ?, ?)",
                            (visit, test, round(rng.uniform(0.5, 15), 1), unit, f"2031-0{k + 3}-02 07:30:00",
                             f"free text note number {rng.random()} about the sample"))
    con.commit()
    con.close()
    return path


def test_a_draft_of_a_schema_never_seen(riverside: Path):
    profile = draft_profile(open_database(riverside), "riverside")
    assert [(e.name, e.table, e.id_column) for e in profile.entities] == [("patient", "persons", "person_key"),
                                                                         ("admission", "visits", "visit_key")]
    assert profile.person_ids == ("person_key",)
    assert set(profile.time_columns) == {"persons.born", "visits.arrived", "visits.left_at", "observations.taken"}
    assert {"visits.ward", "observations.test", "observations.unit", "persons.sex"} <= set(profile.value_columns)
    assert "observations.note" not in profile.value_columns and "persons.person_key" not in profile.value_columns
    assert profile.now == "2031-04-04 11:00:00"  # the data's latest instant, past the clock: a shifted extract
    # the schema declares no keys; the data show what refers to what (the row numbers, unique everywhere, refer to nothing)
    assert set(profile.foreign_keys) == {"visits.person_key -> persons.person_key", "observations.visit_key -> visits.visit_key"}


def test_the_draft_of_the_demo_finds_the_shipped_entities(mimic_iv_db: Path):
    profile = draft_profile(open_database(mimic_iv_db), "mimic_iv")
    assert profile.entities == PROFILES["mimic_iv"].entities
    assert set(PROFILES["mimic_iv"].time_columns) <= set(profile.time_columns)
    assert {"d_labitems.label", "prescriptions.drug", "d_icd_diagnoses.long_title"} <= set(profile.value_columns)


def test_the_draft_of_the_module_layout_finds_the_keys_it_does_not_declare(mimic_iv_raw_db: Path):
    """mimic-code's DuckDB layout declares no foreign keys; both item dictionaries have an ``itemid``, and the data say
    which one each table of events refers to. The ICD dictionaries are keyed by code and version: no one-column key."""
    profile = draft_profile(open_database(mimic_iv_raw_db), "mimic_iv_raw")
    keys = set(profile.foreign_keys)
    assert {"mimiciv_hosp.labevents.itemid -> mimiciv_hosp.d_labitems.itemid",
            "mimiciv_icu.chartevents.itemid -> mimiciv_icu.d_items.itemid",
            "mimiciv_icu.chartevents.stay_id -> mimiciv_icu.icustays.stay_id",
            "mimiciv_icu.icustays.hadm_id -> mimiciv_hosp.admissions.hadm_id"} <= keys
    assert not [k for k in keys if "icd_code" in k or "labevents.itemid -> mimiciv_icu" in k]
    assert set(PROFILES["mimic_iv_raw"].foreign_keys) - keys <= {k for k in PROFILES["mimic_iv_raw"].foreign_keys if "icd_code" in k}


def test_a_table_with_one_row_per_stay_gives_the_person_the_stay_and_the_admission(eicu_db: Path):
    """eICU's ``patient`` table has one row per unit stay: its unique key is the stay's; the person is uniquepid."""
    profile = draft_profile(open_database(eicu_db), "eicu")
    assert profile.entities == PROFILES["eicu"].entities
    assert profile.person_ids == ("uniquepid",)


def test_db_profile_writes_a_file_that_verify_uses(riverside: Path, tmp_path: Path, monkeypatch):
    monkeypatch.setenv("EHRGUARD_AUDIT_PATH", str(tmp_path / "audit.sqlite"))
    runner = CliRunner()
    draft = tmp_path / "riverside.toml"
    r = runner.invoke(cli, ["db", "profile", "--db", str(riverside), "--out", str(draft)])
    assert r.exit_code == 0 and "2 entities" in r.output, r.output
    assert load_profile(draft).db_id == "riverside"
    r = runner.invoke(cli, ["verify", "--db", str(riverside), "--db-id", str(draft), "-q", "How many patients had a creatinine test?",
                            "-s", "SELECT COUNT(persons.person_key) FROM persons JOIN visits ON visits.person_key = persons.person_key "
                            "JOIN observations ON observations.visit_key = visits.visit_key WHERE observations.test = 'creatinine'",
                            "--json"])
    assert r.exit_code == 0, r.output
    verdict = json.loads(r.stdout)
    # the profile says persons.person_key identifies people: counting it without DISTINCT counts rows
    assert "count_without_distinct" in {f["check"] for f in verdict["findings"]}
    r = runner.invoke(cli, ["verify", "--db", str(riverside), "--db-id", str(tmp_path / "absent.toml"), "-q", "q", "-s", "SELECT 1"])
    assert r.exception is not None and "Cannot read the profile" in str(r.exception)


def test_a_profile_s_foreign_keys_are_checked_when_it_loads(tmp_path: Path):
    from ehrguard.errors import ConfigError

    path = tmp_path / "clinic.toml"
    path.write_text('db_id = "clinic"\nforeign_keys = ["labs.test_id -> lab_tests.test_id", " meds.drug_id->drugs.id "]\n')
    assert load_profile(path).foreign_keys == ("labs.test_id -> lab_tests.test_id", "meds.drug_id -> drugs.id")
    path.write_text('db_id = "clinic"\nforeign_keys = ["lab results.visit id -> visits.visit id"]\n')
    assert load_profile(path).foreign_keys == ("lab results.visit id -> visits.visit id",)  # names a draft may write
    path.write_text('db_id = "clinic"\nforeign_keys = ["labs.test_id = lab_tests.test_id"]\n')
    with pytest.raises(ConfigError, match="foreign_keys is a list of"):
        load_profile(path)
