"""The MIMICSQL 5-table database (SQLite) from the MIMIC-III Clinical Database Demo v1.4.

MIMICSQL (Wang et al., WWW 2020) flattens MIMIC-III into five tables linked by
``SUBJECT_ID``/``HADM_ID``: DEMOGRAPHIC (one row per admission), DIAGNOSES, PROCEDURES,
PRESCRIPTIONS and LAB (events joined with their dictionaries). Its published database was
built from the full, credentialed MIMIC-III, so answers from this demo-built one differ; the
schema, column meanings and value formats are the same. Column meanings follow the MIMICSQL
README: AGE = admission year - birth year (MIMIC-III's shifted elderly keep their ~300-year
ages), DAYS_STAY = whole days between admission and discharge, EXPIRE_FLAG = the patient's
death flag, NAME a synthetic name (MIMICSQL assigns invented names; ours are drawn from a
seeded generator and never identify anyone), LAB.VALUE_UNIT = the test's recorded value.
"""

from __future__ import annotations

import random
from datetime import datetime
from pathlib import Path
from typing import Any

from ehrguard.db.builders.base import BuildReport, Progress
from ehrguard.db.builders.sources import find_table, iter_rows, read_rows
from ehrguard.db.builders.writer import table, write_sqlite

TABLES = (
    table("DEMOGRAPHIC", [
        "SUBJECT_ID INTEGER", "HADM_ID INTEGER", "NAME TEXT", "MARITAL_STATUS TEXT", "AGE INTEGER", "DOB TEXT", "GENDER TEXT",
        "LANGUAGE TEXT", "RELIGION TEXT", "ADMISSION_TYPE TEXT", "DAYS_STAY INTEGER", "INSURANCE TEXT", "ETHNICITY TEXT",
        "EXPIRE_FLAG INTEGER", "ADMISSION_LOCATION TEXT", "DISCHARGE_LOCATION TEXT", "DIAGNOSIS TEXT", "DOD TEXT", "DOB_YEAR INTEGER",
        "DOD_YEAR REAL", "ADMITTIME TEXT", "DISCHTIME TEXT", "ADMITYEAR INTEGER"]),
    table("DIAGNOSES", ["SUBJECT_ID INTEGER", "HADM_ID INTEGER", "ICD9_CODE TEXT", "SHORT_TITLE TEXT", "LONG_TITLE TEXT"]),
    table("PROCEDURES", ["SUBJECT_ID INTEGER", "HADM_ID INTEGER", "ICD9_CODE TEXT", "SHORT_TITLE TEXT", "LONG_TITLE TEXT"]),
    table("PRESCRIPTIONS", ["SUBJECT_ID INTEGER", "HADM_ID INTEGER", "ICUSTAY_ID REAL", "DRUG_TYPE TEXT", "DRUG TEXT",
                            "FORMULARY_DRUG_CD TEXT", "ROUTE TEXT", "DRUG_DOSE TEXT"]),
    table("LAB", ["SUBJECT_ID INTEGER", "HADM_ID INTEGER", "ITEMID INTEGER", "CHARTTIME TEXT", "FLAG TEXT", "VALUE_UNIT TEXT", "LABEL TEXT",
                  "FLUID TEXT", "CATEGORY TEXT"]),
)

_FIRST = ["James", "Mary", "Robert", "Patricia", "John", "Jennifer", "Michael", "Linda", "David", "Elizabeth", "William", "Barbara",
          "Richard", "Susan", "Joseph", "Jessica", "Thomas", "Sarah", "Charles", "Karen", "Maria", "Daniel", "Nancy", "Paul"]
_LAST = ["Smith", "Johnson", "Williams", "Brown", "Jones", "Garcia", "Miller", "Davis", "Rodriguez", "Martinez", "Hernandez",
         "Lopez", "Wilson", "Anderson", "Thomas", "Taylor", "Moore", "Jackson", "Martin", "Lee", "Perez", "Thompson", "White", "Harris"]

_TIME = "%Y-%m-%d %H:%M:%S"


def _year(value: str | None) -> int | None:
    return None if not value else int(value[:4])


def build(source: Path, out: Path, progress: Progress) -> BuildReport:
    """Build ``out`` from the MIMIC-III demo at ``source`` (CSV names in upper or lower case)."""
    report = BuildReport(name="mimicsql", out=out, source=str(source))
    progress.step("DEMOGRAPHIC")
    patients = {
        r["subject_id"]: r
        for r in read_rows(source, "PATIENTS.csv", ["subject_id", "gender", "dob", "dod", "expire_flag"], lower=False)
    }
    admissions = read_rows(source, "ADMISSIONS.csv", [
        "subject_id", "hadm_id", "admittime", "dischtime", "admission_type", "admission_location", "discharge_location", "insurance",
        "language", "religion", "marital_status", "ethnicity", "diagnosis"], lower=False)
    rng = random.Random(20200420)  # synthetic names only; fixed so builds are identical
    # _FIRST alternates men's and women's names; pick within the patient's recorded sex.
    names = {
        sid: f"{rng.choice(_FIRST[patients[sid]['gender'] == 'F'::2])} {rng.choice(_LAST)}"
        for sid in sorted(patients, key=int)  # type: ignore[arg-type]
    }
    demographic = []
    for a in admissions:
        p = patients.get(a["subject_id"])
        if p is None:
            continue
        admit, disch = datetime.strptime(a["admittime"], _TIME), datetime.strptime(a["dischtime"], _TIME)  # type: ignore[arg-type]
        demographic.append({
            "SUBJECT_ID": int(a["subject_id"]), "HADM_ID": int(a["hadm_id"]), "NAME": names[a["subject_id"]],  # type: ignore[arg-type]
            "MARITAL_STATUS": a["marital_status"], "AGE": admit.year - _year(p["dob"]),  # type: ignore[operator]
            "DOB": p["dob"], "GENDER": p["gender"], "LANGUAGE": a["language"], "RELIGION": a["religion"],
            "ADMISSION_TYPE": a["admission_type"], "DAYS_STAY": (disch - admit).days, "INSURANCE": a["insurance"],
            "ETHNICITY": a["ethnicity"], "EXPIRE_FLAG": int(p["expire_flag"]), "ADMISSION_LOCATION": a["admission_location"],  # type: ignore[arg-type]
            "DISCHARGE_LOCATION": a["discharge_location"], "DIAGNOSIS": a["diagnosis"], "DOD": p["dod"],
            "DOB_YEAR": _year(p["dob"]), "DOD_YEAR": None if not p["dod"] else float(_year(p["dod"])),  # type: ignore[arg-type]
            "ADMITTIME": a["admittime"], "DISCHTIME": a["dischtime"], "ADMITYEAR": admit.year,
        })

    def coded(events: str, dictionary: str) -> list[dict]:
        titles = {r["icd9_code"]: r for r in read_rows(source, dictionary, ["icd9_code", "short_title", "long_title"], lower=False)}
        out = []
        for r in read_rows(source, events, ["subject_id", "hadm_id", "icd9_code"], lower=False):
            t = titles.get(r["icd9_code"])
            out.append({"SUBJECT_ID": int(r["subject_id"]), "HADM_ID": int(r["hadm_id"]), "ICD9_CODE": r["icd9_code"],  # type: ignore[arg-type]
                        "SHORT_TITLE": t["short_title"] if t else None, "LONG_TITLE": t["long_title"] if t else None})
        return out

    progress.step("DIAGNOSES, PROCEDURES")
    diagnoses = coded("DIAGNOSES_ICD.csv", "D_ICD_DIAGNOSES.csv")
    procedures = coded("PROCEDURES_ICD.csv", "D_ICD_PROCEDURES.csv")

    progress.step("PRESCRIPTIONS")
    prescriptions = [
        {"SUBJECT_ID": int(r["subject_id"]), "HADM_ID": int(r["hadm_id"]),  # type: ignore[arg-type]
         "ICUSTAY_ID": None if r["icustay_id"] is None else float(r["icustay_id"]),
         "DRUG_TYPE": r["drug_type"], "DRUG": r["drug"], "FORMULARY_DRUG_CD": r["formulary_drug_cd"], "ROUTE": r["route"],
         "DRUG_DOSE": r["dose_val_rx"]}
        for r in read_rows(source, "PRESCRIPTIONS.csv", ["subject_id", "hadm_id", "icustay_id", "drug_type", "drug", "formulary_drug_cd",
                                                         "route", "dose_val_rx"], lower=False)
    ]

    progress.step("LAB")
    labitems = {r["itemid"]: r for r in read_rows(source, "D_LABITEMS.csv", ["itemid", "label", "fluid", "category"], lower=False)}
    lab_path = find_table(source, "LABEVENTS.csv", required=False) or find_table(source,
                                                                                 "derived_from_ricu_fst/LABEVENTS.csv", required=False)
    if lab_path is None:
        progress.warn(report, "LABEVENTS.csv is missing: the LAB table will be EMPTY.")
    elif "derived_from_ricu_fst" in str(lab_path):
        progress.warn(report, "LABEVENTS.csv is taken from derived_from_ricu_fst/ (whitespace trimmed, NA turned into empty values).")
    lab = []
    for r in [] if lab_path is None else iter_rows(lab_path,
                                                   ["subject_id", "hadm_id", "itemid", "charttime", "flag", "value"], lower=False):
        if r["hadm_id"] is None:
            continue  # MIMICSQL links every table through HADM_ID; outpatient labs have none
        item = labitems.get(r["itemid"], {})
        lab.append({"SUBJECT_ID": int(r["subject_id"]), "HADM_ID": int(float(r["hadm_id"])), "ITEMID": int(r["itemid"]),  # type: ignore[arg-type]
                    "CHARTTIME": r["charttime"], "FLAG": r["flag"], "VALUE_UNIT": r["value"], "LABEL": item.get("label"),
                    "FLUID": item.get("fluid"), "CATEGORY": item.get("category")})

    progress.step("writing SQLite")
    contents: tuple[list[dict[str, Any]], ...] = (demographic, diagnoses, procedures, prescriptions, lab)
    report.tables = write_sqlite(out, TABLES, {t.name: rows for t, rows in zip(TABLES, contents, strict=True)})
    return report
