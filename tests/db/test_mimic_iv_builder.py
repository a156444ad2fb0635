"""The mimic_iv builder on the real MIMIC-IV demo: counts, invariants, determinism, fidelity."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from ehrguard.db import build_database, check_fidelity, open_database
from ehrguard.db.builders.mimic_iv import TABLES
from ehrguard.errors import DatasetError


def _dump_digest(path: Path) -> dict[str, str]:
    conn = sqlite3.connect(path)
    try:
        digests = {}
        for t in TABLES:
            h = hashlib.sha256()
            for row in conn.execute(f"SELECT * FROM {t.name} ORDER BY row_id"):
                h.update(repr(row).encode())
            digests[t.name] = h.hexdigest()
        return digests
    finally:
        conn.close()


def test_schema_is_exactly_the_ehrsql_2024_one(mimic_iv_db: Path, shared_data: Path):
    import re

    spec = (shared_data / "ehrsql-2024" / "mimic_iv" / "mimic_iv.sql").read_text()
    expected = {m.group(1): re.findall(r"^\s+(\w+) ", m.group(2), re.MULTILINE)
                for m in re.finditer(r"CREATE TABLE (\w+)\s*\((.*?)\n\);", spec, re.DOTALL)}
    expected = {t: [c for c in cols if c != "FOREIGN"] for t, cols in expected.items()}
    conn = sqlite3.connect(mimic_iv_db)
    actual = {t: [r[1] for r in conn.execute(f"PRAGMA table_info({t})")]
              for (t,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    conn.close()
    assert actual == expected


def test_row_counts_and_cohort(mimic_iv_db: Path):
    db = open_database(mimic_iv_db)

    def one(sql: str) -> Any:
        return db.execute(sql).rows[0][0]

    assert one("SELECT count(*) FROM patients") == 94  # 4 current + 90 sampled others: fewer than 10 stays cross "now"
    assert one("SELECT count(DISTINCT subject_id) FROM admissions WHERE dischtime IS NULL") == 4
    assert one("SELECT count(*) FROM admissions") == 119
    assert one("SELECT count(*) FROM d_icd_diagnoses") == 106308
    assert one("SELECT count(*) FROM labevents") == 26426
    assert one("SELECT count(*) FROM chartevents") > 30000
    assert one("SELECT count(*) FROM cost") == sum(one(f"SELECT count(*) FROM {t}") for t in ("diagnoses_icd", "labevents",
                                                                                              "procedures_icd", "prescriptions"))


def test_time_shift_invariants(mimic_iv_db: Path):
    db = open_database(mimic_iv_db)

    def one(sql: str) -> Any:
        return db.execute(sql).rows[0][0]

    # Every patient's first admission is in 2100 and nothing lies after "now".
    assert one("SELECT count(*) FROM (SELECT subject_id, min(admittime) m FROM admissions GROUP BY subject_id)"
               " WHERE m NOT LIKE '2100-%'") == 0
    for table, column in [("admissions", "admittime"), ("labevents", "charttime"), ("chartevents", "charttime"),
                          ("prescriptions", "starttime"), ("inputevents", "starttime"), ("outputevents", "charttime"),
                          ("microbiologyevents", "charttime"), ("cost", "chargetime")]:
        assert one(f"SELECT count(*) FROM {table} WHERE {column} > '2100-12-31 23:59:00' OR {column} < '2100-01-01'") == 0, table
    # Text is lower-cased; ICD codes carry their version.
    assert one("SELECT count(*) FROM d_labitems WHERE label <> lower(label)") == 0
    assert one("SELECT count(*) FROM diagnoses_icd WHERE icd_code NOT LIKE 'icd9|%' AND icd_code NOT LIKE 'icd10|%'") == 0
    # A discharge location only for discharged admissions.
    assert one("SELECT count(*) FROM admissions WHERE dischtime IS NULL AND discharge_location IS NOT NULL") == 0
    # age = admission year - anchor year + anchor age, never negative.
    assert one("SELECT min(age) FROM admissions") >= 18
    # Every chartevent sits in a known ICU stay of its admission.
    assert one("SELECT count(*) FROM chartevents c LEFT JOIN icustays i ON c.stay_id = i.stay_id"
               " WHERE i.hadm_id IS NULL OR i.hadm_id <> c.hadm_id") == 0


def test_build_is_deterministic(mimic_iv_db: Path, shared_data: Path, tmp_path: Path):
    again = tmp_path / "again.sqlite"
    build_database("mimic_iv", source=shared_data / "mimic-iv-demo-2.2", out=again)
    assert _dump_digest(again) == _dump_digest(mimic_iv_db)


def test_fidelity_on_ehrsql_2024_valid(mimic_iv_db: Path, shared_data: Path):
    report = check_fidelity(open_database(mimic_iv_db), shared_data / "ehrsql-2024" / "mimic_iv" / "valid")
    assert report.total == 931
    assert report.without_table["chartevents"][0] / report.without_table["chartevents"][1] >= 0.95
    assert report.share >= 0.95


def test_missing_source_table_is_a_clear_error_and_leaves_no_file(shared_data: Path, tmp_path: Path):
    import shutil

    src = tmp_path / "src"
    shutil.copytree(shared_data / "mimic-iv-demo-2.2", src, ignore=shutil.ignore_patterns("labevents.csv.gz", "derived_meds"))
    out = tmp_path / "out.sqlite"
    with pytest.raises(DatasetError, match=r"hosp/labevents\.csv\.gz"):
        build_database("mimic_iv", source=src, out=out)
    assert not out.exists() and not list(tmp_path.glob(".out.sqlite.*"))


def test_corrupt_source_is_a_clear_error(shared_data: Path, tmp_path: Path):
    import shutil

    src = tmp_path / "src"
    shutil.copytree(shared_data / "mimic-iv-demo-2.2", src, ignore=shutil.ignore_patterns("derived_meds"))
    (src / "hosp" / "patients.csv.gz").write_bytes(b"\x1f\x8b\x08\x00garbage")
    with pytest.raises(DatasetError, match="patients.csv.gz"):
        build_database("mimic_iv", source=src, out=tmp_path / "o.sqlite")


def test_missing_chartevents_stand_in_warns_loudly(shared_data: Path, tmp_path: Path):
    import shutil

    from ehrguard.db import Progress

    src = tmp_path / "src"
    shutil.copytree(shared_data / "mimic-iv-demo-2.2", src, ignore=shutil.ignore_patterns("derived_meds"))
    warnings: list[str] = []
    report = build_database("mimic_iv", source=src, out=tmp_path / "o.sqlite", progress=Progress(on_warning=warnings.append))
    assert report.tables["chartevents"] == 0
    assert any("EMPTY" in w for w in warnings)


def test_real_chartevents_csv_is_preferred(shared_data: Path, tmp_path: Path):
    import gzip
    import shutil

    src = tmp_path / "src"
    shutil.copytree(shared_data / "mimic-iv-demo-2.2", src, ignore=shutil.ignore_patterns("derived_meds"))
    # A minimal chartevents.csv.gz in the real file's layout: one heart-rate row inside a real ICU stay.
    with gzip.open(src / "icu" / "icustays.csv.gz", "rt") as fh:
        header, first = fh.readline().strip().split(","), fh.readline().strip().split(",")
    s = dict(zip(header, first, strict=False))
    with gzip.open(src / "icu" / "chartevents.csv.gz", "wt") as fh:
        fh.write("subject_id,hadm_id,stay_id,caregiver_id,charttime,storetime,itemid,value,valuenum,valueuom,warning\n")
        fh.write(f"{s['subject_id']},{s['hadm_id']},{s['stay_id']},1,{s['intime']},{s['intime']},220045,88,88,bpm,0\n")
    warnings: list[str] = []
    from ehrguard.db import Progress

    report = build_database("mimic_iv", source=src, out=tmp_path / "o.sqlite", progress=Progress(on_warning=warnings.append))
    assert not warnings
    db = open_database(tmp_path / "o.sqlite")
    rows = db.execute("SELECT subject_id, stay_id, valuenum, valueuom FROM chartevents").rows
    assert report.tables["chartevents"] == len(rows)
    assert all(r[2] == 88.0 and r[3] == "bpm" for r in rows)
