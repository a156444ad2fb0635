"""The offline verifier on every database the builders make: eICU, MIMICSQL (SQLite) and the raw MIMIC-IV (DuckDB)."""

from __future__ import annotations

from pathlib import Path

import pytest

import ehrguard
from ehrguard.db import build_database


@pytest.fixture(scope="module")
def built(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("dbs")
    out = {}
    for name, source, file in (("eicu", "eicu-demo-2.0.1", "eicu.sqlite"), ("mimicsql", "mimic-iii-demo-1.4", "mimicsql.sqlite"),
                               ("mimic_iv_raw", "mimic-iv-demo-2.2", "mimic_iv_raw.duckdb")):
        build_database(name, source=shared_data / source, out=d / file)
        out[name] = d / file
    return out


@pytest.mark.parametrize(("db", "question", "wrong", "right"), [
    ("eicu", "What is the gender of patient 002-10122?", "SELECT gendr FROM patient WHERE uniquepid = '002-10122'",
     "SELECT gender FROM patient WHERE uniquepid = '002-10122'"),
    ("mimicsql", "What is the gender of subject 10006?", "SELECT GENDR FROM DEMOGRAPHIC WHERE SUBJECT_ID = '10006'",
     "SELECT GENDER FROM DEMOGRAPHIC WHERE SUBJECT_ID = '10006'"),
    ("mimic_iv_raw", "What is the gender of patient 10000032?", "SELECT gendr FROM mimiciv_hosp.patient WHERE subject_id = 10000032",
     "SELECT gender FROM mimiciv_hosp.patients WHERE subject_id = 10000032"),
])
def test_repairs_and_refusals_on_every_database(built, db, question, wrong, right):
    v = ehrguard.verify(question, wrong, db=built[db])
    assert v.action == "correct" and v.sql.lower().replace('"', "") == right.lower(), v
    assert ehrguard.verify(question, right, db=built[db]).action == "preserve"
    v = ehrguard.verify("Train a neural network to predict mortality from vitals.", right, db=built[db])
    assert v.action == "unanswerable" and v.subtype == "out-of-scope"


def test_a_known_question_that_only_resembles_the_question_does_not_replace_a_sound_candidate(eicu_db: Path, monkeypatch):
    """The shipped form bank reads "how many patients were intubated this year" as its nearest known question, "how many
    patients who have been hospitalized [period]" (a third of the words shared), which answers otherwise. No check
    faults the candidate: the verdict keeps it, not verified, and names the known question, never swapping in an
    answer to another question."""
    monkeypatch.setenv("EHRGUARD_TEMPLATE_BANK", "on")  # the banks that ship, as a fresh install has them
    monkeypatch.delenv("EHRGUARD_DATA_DIR", raising=False)
    sql = ("SELECT COUNT(DISTINCT p.uniquepid) FROM treatment t JOIN patient p ON t.patientunitstayid = p.patientunitstayid "
           "WHERE t.treatmentname LIKE '%intubation%' AND strftime('%Y', t.treatmenttime) = '2100'")
    v = ehrguard.verify("How many patients were intubated this year?", sql, db=eicu_db)
    assert (v.action, v.sql, v.status) == ("preserve", sql, "unverified")
    assert "hospitalized" in v.details.get("disputed_by", ""), (v.reason, v.details)
    assert "hospitalized" in v.reason


def test_a_certain_local_repair_comes_before_a_loose_known_question(eicu_db: Path, monkeypatch):
    """The same question with a count that misses DISTINCT: the candidate is faulted, and the nearest known question
    (a third of the words shared) answers otherwise; the repair of what the check found is returned, not the known
    question's answer to another question."""
    monkeypatch.setenv("EHRGUARD_TEMPLATE_BANK", "on")
    monkeypatch.delenv("EHRGUARD_DATA_DIR", raising=False)
    sql = ("SELECT COUNT(p.uniquepid) FROM treatment t JOIN patient p ON t.patientunitstayid = p.patientunitstayid "
           "WHERE t.treatmentname LIKE '%intubation%' AND strftime('%Y', t.treatmenttime) = '2100'")
    v = ehrguard.verify("How many patients were intubated this year?", sql, db=eicu_db)
    assert v.action == "correct" and "COUNT(DISTINCT p.uniquepid)" in v.sql and "intubation" in v.sql
