"""mimiciv_derived.charlson on hand-made admissions with known codes, and on the demo build."""

from __future__ import annotations

import duckdb
import pytest

from ehrguard.db.builders.charlson import charlson_sql


@pytest.fixture
def con():
    c = duckdb.connect()
    c.execute("CREATE SCHEMA mimiciv_hosp; CREATE SCHEMA mimiciv_derived")
    c.execute("CREATE TABLE mimiciv_hosp.patients AS SELECT * FROM (VALUES (1, 70, 2150), (2, 45, 2150), (3, 85, 2150))"
              " t(subject_id, anchor_age, anchor_year)")
    c.execute("CREATE TABLE mimiciv_hosp.admissions AS SELECT * FROM (VALUES (1, 11, TIMESTAMP '2155-01-01'),"
              " (2, 22, TIMESTAMP '2150-06-01'), (3, 33, TIMESTAMP '2150-01-01')) t(subject_id, hadm_id, admittime)")
    rows = [(11, "4280", 9), (11, "25040", 9), (11, "25000", 9), (11, "5710", 9), (11, "5722", 9), (11, "1970", 9), (11, "1530", 9),
            (22, "I5020", 10), (22, "E1122", 10), (22, "J449", 10), (22, "I10", 10)]
    c.execute("CREATE TABLE mimiciv_hosp.diagnoses_icd (hadm_id INT, icd_code VARCHAR, icd_version INT)")
    c.executemany("INSERT INTO mimiciv_hosp.diagnoses_icd VALUES (?, ?, ?)", rows)
    c.execute(charlson_sql())
    return c


def test_weights_hierarchy_and_age_score(con):
    got = {r[0]: r[1:] for r in con.execute(
        "SELECT hadm_id, age_score, congestive_heart_failure, diabetes_with_cc, diabetes_without_cc, severe_liver_disease, "
        "metastatic_solid_tumor, chronic_pulmonary_disease, charlson_comorbidity_index FROM mimiciv_derived.charlson").fetchall()}
    # 75 years: 3; CHF 1; diabetes with cc 2 (replaces without); severe liver 3 (replaces mild); metastasis 6 (replaces cancer)
    assert got[11] == (3, 1, 1, 1, 1, 1, 0, 3 + 1 + 2 + 3 + 6)
    # ICD-10: 45 years: 0; CHF I50 1; diabetes E11.2 2; COPD J44 1; hypertension alone scores nothing
    assert got[22] == (0, 1, 1, 0, 0, 0, 1, 1 + 2 + 1)
    # no diagnoses at all: the age score alone (85 -> 4)
    assert got[33][0] == 4 and got[33][-1] == 4
