"""A tiny synthetic database in the ``mimic_iv`` schema, generated from seeded code.

It serves unit tests (no real data needed) and is the fallback of ``ehrguard demo`` when
no real source is available. Every patient is invented; the database says so in a
``synthetic_notice`` table and every output that uses it is labelled SYNTHETIC.
"""

from __future__ import annotations

import itertools
import random
import zlib
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, NamedTuple

from ehrguard.db.builders.base import BuildReport, Progress
from ehrguard.db.builders.mimic_iv import TABLES, VITAL_ITEMIDS
from ehrguard.db.builders.writer import table, write_sqlite

SEED = 20261129
N_PATIENTS = 24
NOTICE = table("synthetic_notice", ["notice TEXT nn"])

DIAGNOSES = [
    ("icd10|i10", "essential (primary) hypertension"),
    ("icd10|e119", "type 2 diabetes mellitus without complications"),
    ("icd10|j189", "pneumonia, unspecified organism"),
    ("icd10|n179", "acute kidney failure, unspecified"),
    ("icd9|4019", "unspecified essential hypertension"),
    ("icd10|z8546", "personal history of malignant neoplasm of prostate"),
]
PROCEDURES = [
    ("icd10|02hv33z", "insertion of infusion device into superior vena cava, percutaneous approach"),
    ("icd9|3893", "venous catheterization, not elsewhere classified"),
    ("icd10|0bh17ez", "insertion of endotracheal airway into trachea, via natural or artificial opening"),
]
LABS = [(50912, "creatinine", "mg/dl", 0.9, 0.3), (50931, "glucose", "mg/dl", 120, 30), (51222, "hemoglobin", "g/dl", 11.5, 1.5),
        (50971, "potassium", "meq/l", 4.1, 0.4), (50983, "sodium", "meq/l", 139, 3)]
DRUGS = [("metoprolol tartrate", "mg", "po", 25), ("furosemide", "mg", "iv", 40), ("heparin", "unit", "sc", 5000),
         ("insulin", "unit", "sc", 10), ("acetaminophen", "mg", "po", 650), ("penicillin g potassium", "unit", "iv", 2000000)]
VITAL_LABELS = {223762: ("temperature celsius", "°c", 36.9, 0.5), 220277: ("o2 saturation pulseoxymetry", "%", 97, 2),
                220045: ("heart rate", "bpm", 82, 12), 220210: ("respiratory rate", "insp/min", 17, 3),
                220050: ("arterial blood pressure systolic", "mmhg", 118, 15), 220051: ("arterial blood pressure diastolic", "mmhg", 64, 8),
                220052: ("arterial blood pressure mean", "mmhg", 80, 10), 224639: ("daily weight", "kg", 80, 12),
                226730: ("height (cm)", "cm", 170, 9)}
INPUTS = [(220949, "dextrose 5%"), (225158, "nacl 0.9%")]
OUTPUTS = [(226559, "foley")]
UNITS = ["medical intensive care unit (micu)", "surgical intensive care unit (sicu)", "cardiac vascular intensive care unit (cvicu)"]


def _fmt(t: datetime) -> str:
    return t.strftime("%Y-%m-%d %H:%M:%S")


class _Ids(NamedTuple):
    """Running ids, shared by all patients."""

    hadm: Iterator[int]
    stay: Iterator[int]
    transfer: Iterator[int]


_Rows = dict[str, list[dict[str, Any]]]


def build(source: Path, out: Path, progress: Progress) -> BuildReport:
    """Generate the synthetic database (``source`` is ignored)."""
    rng = random.Random(SEED)
    report = BuildReport(name="synthetic", out=out, source="seeded code", synthetic=True)
    progress.step("generating synthetic patients")
    rows: _Rows = {t.name: [] for t in TABLES}
    _add_dictionaries(rows)
    now = datetime(2100, 12, 31, 23, 59)
    ids = _Ids(itertools.count(20_000_000), itertools.count(30_000_000), itertools.count(40_000_000))
    for p in range(N_PATIENTS):
        _add_patient(rows, rng, p, now, ids)
    _add_costs(rows)
    progress.step("writing SQLite")
    for spec in TABLES:
        for i, r in enumerate(rows[spec.name]):
            r["row_id"] = i
    notice = [{"notice": "SYNTHETIC: every patient in this database is invented by seeded code; not real data."}]
    report.tables = write_sqlite(out, (*TABLES, NOTICE), {**{t.name: rows[t.name] for t in TABLES}, NOTICE.name: notice})
    return report


def _add_dictionaries(rows: _Rows) -> None:
    """The code and item dictionaries (d_icd_*, d_labitems, d_items)."""
    rows["d_icd_diagnoses"] = [{"icd_code": c, "long_title": t} for c, t in DIAGNOSES]
    rows["d_icd_procedures"] = [{"icd_code": c, "long_title": t} for c, t in PROCEDURES]
    rows["d_labitems"] = [{"itemid": i, "label": label} for i, label, *_ in LABS]
    rows["d_items"] = [{"itemid": i, "label": v[0], "abbreviation": v[0].split()[0], "linksto": "chartevents"}
                       for i, v in VITAL_LABELS.items()]
    rows["d_items"] += [{"itemid": i, "label": label, "abbreviation": label, "linksto": "inputevents"} for i, label in INPUTS]
    rows["d_items"] += [{"itemid": i, "label": label, "abbreviation": label, "linksto": "outputevents"} for i, label in OUTPUTS]


def _add_patient(rows: _Rows, rng: random.Random, p: int, now: datetime, ids: _Ids) -> None:
    """Patient ``p`` and their one to three admissions, each with its events and perhaps an ICU stay."""
    subject_id = 10_000_000 + p * 37
    age0 = rng.randint(20, 89)
    first = datetime(2100, 1, 1) + timedelta(minutes=rng.randint(0, 300 * 24 * 60))
    dob = datetime(first.year - age0, 7, 16)
    died = rng.random() < 0.15
    patient = {"subject_id": subject_id, "gender": rng.choice(["m", "f"]), "dob": _fmt(dob), "dod": None}
    rows["patients"].append(patient)
    admit = first
    for a in range(rng.randint(1, 3)):
        if admit > now:
            break
        hadm_id = next(ids.hadm)
        los = timedelta(hours=rng.randint(30, 24 * 12))
        disch = admit + los
        current = disch > now or (p % 6 == 0 and a == 0)  # a few patients are still in hospital
        rows["admissions"].append({
            "subject_id": subject_id, "hadm_id": hadm_id, "admittime": _fmt(admit), "dischtime": None if current else _fmt(disch),
            "admission_type": rng.choice(["ew emer.", "urgent", "elective"]),
            "admission_location": rng.choice(["emergency room", "physician referral"]),
            "discharge_location": None if current else rng.choice(["home", "skilled nursing facility"]),
            "insurance": rng.choice(["medicare", "other"]),
            "language": "english", "marital_status": rng.choice(["married", "single", "widowed", None]), "age": admit.year - dob.year,
        })
        _add_hospital_events(rows, rng, subject_id, hadm_id, admit, now if current else disch, current)
        if rng.random() < 0.7:
            _add_icu_stay(rows, rng, ids, subject_id, hadm_id, admit, disch, now, current)
        if current:
            break
        if died and a > 0:
            patient["dod"] = _fmt(disch.replace(hour=0, minute=0, second=0))
            break
        admit = disch + timedelta(days=rng.randint(20, 200))


def _add_hospital_events(rows: _Rows, rng: random.Random, subject_id: int, hadm_id: int, admit: datetime, end: datetime,
                         current: bool) -> None:
    """One admission's diagnoses, procedure, labs, prescriptions and culture, between ``admit`` and ``end``."""
    for code, _ in rng.sample(DIAGNOSES, 3):
        rows["diagnoses_icd"].append({"subject_id": subject_id, "hadm_id": hadm_id, "icd_code": code, "charttime": _fmt(admit)})
    if rng.random() < 0.6:
        code = rng.choice(PROCEDURES)[0]
        rows["procedures_icd"].append({"subject_id": subject_id, "hadm_id": hadm_id, "icd_code": code,
                                       "charttime": _fmt(admit + timedelta(hours=6))})
    for _ in range(rng.randint(6, 14)):
        itemid, _, unit, mean, sd = rng.choice(LABS)
        t = admit + timedelta(minutes=rng.randint(0, int((end - admit).total_seconds() // 60)))
        rows["labevents"].append({"subject_id": subject_id, "hadm_id": hadm_id, "itemid": itemid, "charttime": _fmt(t),
                                  "valuenum": round(rng.gauss(mean, sd), 1), "valueuom": unit})
    for drug, unit, route, dose in rng.sample(DRUGS, 3):
        start = admit + timedelta(hours=rng.randint(1, 24))
        rows["prescriptions"].append({"subject_id": subject_id, "hadm_id": hadm_id, "starttime": _fmt(start),
                                      "stoptime": None if current else _fmt(min(end, start + timedelta(days=2))),
                                      "drug": drug, "dose_val_rx": str(dose), "dose_unit_rx": unit, "route": route})
    rows["microbiologyevents"].append({"subject_id": subject_id, "hadm_id": hadm_id, "charttime": _fmt(admit + timedelta(hours=3)),
                                       "spec_type_desc": rng.choice(["blood culture", "urine"]), "test_name": "culture",
                                       "org_name": rng.choice([None, "escherichia coli", "staph aureus coag +"])})


def _add_icu_stay(rows: _Rows, rng: random.Random, ids: _Ids, subject_id: int, hadm_id: int, admit: datetime, disch: datetime,
                  now: datetime, current: bool) -> None:
    """One ICU stay starting two hours into the admission: the stay, its vitals, inputs, output and transfer."""
    stay_id = next(ids.stay)
    unit = rng.choice(UNITS)
    intime = admit + timedelta(hours=2)
    outtime = None if current else min(disch, intime + timedelta(hours=rng.randint(20, 120)))
    rows["icustays"].append({"subject_id": subject_id, "hadm_id": hadm_id, "stay_id": stay_id, "first_careunit": unit,
                             "last_careunit": unit, "intime": _fmt(intime), "outtime": None if outtime is None else _fmt(outtime)})
    icu_end = outtime or now
    for itemid in VITAL_ITEMIDS:
        _label, unit_v, mean, sd = VITAL_LABELS[itemid]
        for _ in range(3 if itemid in (224639, 226730) else 8):
            t = intime + timedelta(minutes=rng.randint(0, int((icu_end - intime).total_seconds() // 60)))
            rows["chartevents"].append({"subject_id": subject_id, "hadm_id": hadm_id, "stay_id": stay_id, "itemid": itemid,
                                        "charttime": _fmt(t), "valuenum": round(rng.gauss(mean, sd), 1), "valueuom": unit_v})
    for itemid, _ in INPUTS:
        rows["inputevents"].append({"subject_id": subject_id, "hadm_id": hadm_id, "stay_id": stay_id,
                                    "starttime": _fmt(intime + timedelta(hours=1)), "itemid": itemid,
                                    "totalamount": float(rng.choice([50, 100, 250, 500, 1000])), "totalamountuom": "ml"})
    rows["outputevents"].append({"subject_id": subject_id, "hadm_id": hadm_id, "stay_id": stay_id,
                                 "charttime": _fmt(intime + timedelta(hours=4)), "itemid": OUTPUTS[0][0],
                                 "value": float(rng.randint(50, 900)), "valueuom": "ml"})
    rows["transfers"].append({"subject_id": subject_id, "hadm_id": hadm_id, "transfer_id": next(ids.transfer), "eventtype": "admit",
                              "careunit": unit, "intime": _fmt(intime), "outtime": None if outtime is None else _fmt(outtime)})


def _add_costs(rows: _Rows) -> None:
    """A cost row per diagnosis, lab, procedure and prescription, its price fixed by the event type and the charged code."""
    prices = {"diagnoses_icd": 10.0, "labevents": 9.0, "procedures_icd": 11.0, "prescriptions": 8.0}
    for event_type, key, time_col in (("diagnoses_icd", "icd_code", "charttime"), ("labevents", "itemid", "charttime"),
                                      ("procedures_icd", "icd_code", "charttime"), ("prescriptions", "drug", "starttime")):
        for i, e in enumerate(rows[event_type]):
            rows["cost"].append({"subject_id": e["subject_id"], "hadm_id": e["hadm_id"], "event_type": event_type, "event_id": i,
                                 "chargetime": e[time_col],
                                 "cost": round(prices[event_type] + (zlib.crc32(str(e[key]).encode()) % 100) / 100, 2)})
