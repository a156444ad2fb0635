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
