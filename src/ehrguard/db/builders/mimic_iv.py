"""The EHRSQL-2024 / SCARE MIMIC-IV database, built from the MIMIC-IV Clinical Database Demo v2.2.

This re-implements the organisers' preprocessing (public in ``glee4810/ehrsql-2024``,
``preprocess/``) so that their published answers can be reproduced:

* every text value lower-cased and stripped; ICD codes written ``icd<version>|<code>``;
* a name that exists in several of d_items / d_labitems / prescriptions.drug is kept in
  only one of them (``data/mimic_iv_label_owner.json``);
* the time shift of :mod:`.timeshift` with every first admission in 2100 and "now" at
  ``2100-12-31 23:59:00``; 10 currently admitted patients and 90 others sampled with
  numpy's PCG64 seeded 0 (``--num_patient 100 --cur_patient_ratio 0.1``);
* ``dob`` = anchor year - anchor age, on day 197 of that year (the original seeds
  Python's ``random`` with 0 before every draw, so every patient gets the same day);
  ``admissions.age`` = admission year - anchor year + anchor age;
* ``prescriptions`` keeps integer doses in each drug's most frequent unit;
* ``cost`` gives each diagnosis code, lab item, procedure code and drug a price drawn from
  a normal distribution around a Poisson(10) mean per event type, same generator;
* ``chartevents`` keeps nine vital-sign items. The demo release here lacks
  ``icu/chartevents.csv.gz``; when it is absent the table is rebuilt from the MEDS
  stand-in (``derived_meds/``), recovering ``hadm_id``/``stay_id`` from ICU stay windows.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from ehrguard.db.builders.base import BuildReport, Progress
from ehrguard.db.builders.meds import MEDS_EVENTS, chartevents_sql, meds_events
from ehrguard.db.builders.sources import Row, find_table, iter_rows, read_rows
from ehrguard.db.builders.timeshift import NOW, TIME_FORMAT, shift, year_offset_minutes
from ehrguard.db.builders.writer import table, write_sqlite
from ehrguard.errors import DatasetError

START_YEAR = 2100
TIME_SPAN = 0
NUM_PATIENTS = 100
CURRENT_PATIENT_RATIO = 0.1
PIVOT = "2100-01-01 00:00:00"  # records shifted before the start year are dropped
DOB_DAY_OFFSET = 197  # random.seed(0); random.randint(0, 365|366) == 197 in CPython

# The nine chartevents items EHRSQL-2024 keeps (vital signs, weight, height).
VITAL_ITEMIDS = (223762, 220277, 220045, 220210, 220050, 220051, 220052, 224639, 226730)

# Diagnosis titles dropped because the same title is also a procedure.
DIAGNOSIS_TITLES_DROPPED = ("artificial insemination", "dental examination", "insertion of intrauterine contraceptive device")

TABLES = (
    table("patients", ["row_id INT pk", "subject_id INT nn uq", "gender VARCHAR(5) nn", "dob TIMESTAMP(0) nn", "dod TIMESTAMP(0)"]),
    table(
        "admissions",
        [
            "row_id INT pk", "subject_id INT nn", "hadm_id INT nn uq", "admittime TIMESTAMP(0) nn",
            "dischtime TIMESTAMP(0)", "admission_type VARCHAR(50) nn", "admission_location VARCHAR(50) nn",
            "discharge_location VARCHAR(50)", "insurance VARCHAR(255) nn", "language VARCHAR(10)",
            "marital_status VARCHAR(50)", "age INT nn",
        ],
        ["subject_id -> patients.subject_id"],
    ),
    table("d_icd_diagnoses", ["row_id INT pk", "icd_code VARCHAR(10) nn uq", "long_title VARCHAR(255) nn"]),
    table("d_icd_procedures", ["row_id INT pk", "icd_code VARCHAR(10) nn uq", "long_title VARCHAR(255) nn"]),
    table("d_labitems", ["row_id INT pk", "itemid INT nn uq", "label VARCHAR(200)"]),
    table("d_items",
          ["row_id INT pk", "itemid INT nn uq", "label VARCHAR(200) nn", "abbreviation VARCHAR(200) nn", "linksto VARCHAR(50) nn"]),
    table(
        "diagnoses_icd",
        ["row_id INT pk", "subject_id INT nn", "hadm_id INT nn", "icd_code VARCHAR(10) nn", "charttime TIMESTAMP(0) nn"],
        ["hadm_id -> admissions.hadm_id", "icd_code -> d_icd_diagnoses.icd_code"],
    ),
    table(
        "procedures_icd",
        ["row_id INT pk", "subject_id INT nn", "hadm_id INT nn", "icd_code VARCHAR(10) nn", "charttime TIMESTAMP(0) nn"],
        ["hadm_id -> admissions.hadm_id", "icd_code -> d_icd_procedures.icd_code"],
    ),
    table(
        "labevents",
        ["row_id INT pk", "subject_id INT nn", "hadm_id INT nn", "itemid INT nn", "charttime TIMESTAMP(0)",
         "valuenum DOUBLE PRECISION", "valueuom VARCHAR(20)"],
        ["hadm_id -> admissions.hadm_id", "itemid -> d_labitems.itemid"],
    ),
    table(
        "prescriptions",
        [
            "row_id INT pk", "subject_id INT nn", "hadm_id INT nn", "starttime TIMESTAMP(0) nn", "stoptime TIMESTAMP(0)",
            "drug VARCHAR(255) nn", "dose_val_rx VARCHAR(100) nn", "dose_unit_rx VARCHAR(50) nn", "route VARCHAR(50) nn",
        ],
        ["hadm_id -> admissions.hadm_id"],
    ),
    table(
        "cost",
        ["row_id INT pk", "subject_id INT nn", "hadm_id INT nn", "event_type VARCHAR(20) nn", "event_id INT nn",
         "chargetime TIMESTAMP(0) nn", "cost DOUBLE PRECISION nn"],
        [
            "hadm_id -> admissions.hadm_id", "event_id -> diagnoses_icd.row_id", "event_id -> procedures_icd.row_id",
            "event_id -> labevents.row_id", "event_id -> prescriptions.row_id",
        ],
    ),
    table(
        "chartevents",
        ["row_id INT pk", "subject_id INT nn", "hadm_id INT nn", "stay_id INT nn", "itemid INT nn", "charttime TIMESTAMP(0) nn",
         "valuenum DOUBLE PRECISION", "valueuom VARCHAR(50)"],
        ["hadm_id -> admissions.hadm_id", "stay_id -> icustays.stay_id", "itemid -> d_items.itemid"],
    ),
    table(
        "inputevents",
        ["row_id INT pk", "subject_id INT nn", "hadm_id INT nn", "stay_id INT nn", "starttime TIMESTAMP(0) nn", "itemid INT nn",
         "totalamount DOUBLE PRECISION", "totalamountuom VARCHAR(50)"],
        ["hadm_id -> admissions.hadm_id", "stay_id -> icustays.stay_id", "itemid -> d_items.itemid"],
    ),
    table(
        "outputevents",
        ["row_id INT pk", "subject_id INT nn", "hadm_id INT nn", "stay_id INT nn", "charttime TIMESTAMP(0) nn", "itemid INT nn",
         "value DOUBLE PRECISION", "valueuom VARCHAR(50)"],
        ["hadm_id -> admissions.hadm_id", "stay_id -> icustays.stay_id", "itemid -> d_items.itemid"],
    ),
    table(
        "microbiologyevents",
        ["row_id INT pk", "subject_id INT nn", "hadm_id INT nn", "charttime TIMESTAMP(0) nn", "spec_type_desc VARCHAR(100)",
         "test_name VARCHAR(100)", "org_name VARCHAR(100)"],
        ["hadm_id -> admissions.hadm_id"],
    ),
    table(
        "icustays",
        ["row_id INT pk", "subject_id INT nn", "hadm_id INT nn", "stay_id INT nn uq", "first_careunit VARCHAR(20) nn",
         "last_careunit VARCHAR(20) nn", "intime TIMESTAMP(0) nn", "outtime TIMESTAMP(0)"],
        ["hadm_id -> admissions.hadm_id"],
    ),
    table(
        "transfers",
        ["row_id INT pk", "subject_id INT nn", "hadm_id INT nn", "transfer_id INT nn", "eventtype VARCHAR(20) nn", "careunit VARCHAR(20)",
         "intime TIMESTAMP(0) nn", "outtime TIMESTAMP(0)"],
        ["hadm_id -> admissions.hadm_id"],
    ),
)
TABLE_BY_NAME = {t.name: t for t in TABLES}
# Insertion order of the original build (it affects only row order on disk).
INSERT_ORDER = (
    "patients", "admissions", "d_icd_diagnoses", "d_icd_procedures", "d_items", "d_labitems", "diagnoses_icd",
    "procedures_icd", "labevents", "prescriptions", "cost", "chartevents", "inputevents", "outputevents",
    "microbiologyevents", "icustays", "transfers",
)


def label_owners() -> dict[str, str]:
    """Name → the one table that keeps it (see ``data/mimic_iv_label_owner.json``)."""
    text = resources.files("ehrguard.db.builders").joinpath("data/mimic_iv_label_owner.json").read_text()
    owners: dict[str, str] = {}
    for owner, names in json.loads(text).items():
        if not owner.startswith("_"):
            owners.update({name: owner for name in names})
    return owners


def _int(value: str | None) -> int | None:
    return None if value is None else int(float(value))


def _float(value: str | None) -> float | None:
    return None if value is None else float(value)


def _number(value: str | None) -> int | float | None:
    """A number read the way pandas reads a numeric column (ints stay ints)."""
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        return float(value)


def _renumber(rows: list[Row]) -> list[Row]:
    for i, row in enumerate(rows):
        row["row_id"] = i  # type: ignore[assignment]
    return rows


def _icd(version: str | None, code: str | None) -> str:
    return f"icd{version}|{code}"


class _Build:
    def __init__(self, source: Path, progress: Progress, report: BuildReport) -> None:
        self.source = source
        self.progress = progress
        self.report = report
        self.rng = np.random.default_rng(0)
        self.owners = label_owners()
        self.offsets: dict[int, int] = {}
        self.tables: dict[str, list[Row]] = {}

    # -- patients, admissions, icustays, transfers ------------------------------------
    def admissions(self) -> None:
        self.progress.step("patients, admissions, icustays, transfers")
        patients = read_rows(self.source, "hosp/patients.csv", ["subject_id", "gender", "anchor_age", "anchor_year", "dod"])
        admissions = read_rows(
            self.source,
            "hosp/admissions.csv",
            ["subject_id", "hadm_id", "admittime", "dischtime", "admission_type", "admission_location",
             "discharge_location", "insurance", "language", "marital_status"],
        )
        icustays = read_rows(
            self.source, "icu/icustays.csv", ["subject_id", "hadm_id", "stay_id", "first_careunit", "last_careunit", "intime", "outtime"]
        )
        transfers = read_rows(self.source, "hosp/transfers.csv",
                              ["subject_id", "hadm_id", "transfer_id", "eventtype", "careunit", "intime", "outtime"])
        transfers = [t for t in transfers if t["intime"] is not None]

        anchor = {int(p["subject_id"]): (int(p["anchor_year"]), int(p["anchor_age"])) for p in patients}  # type: ignore[arg-type]
        for p in patients:
            sid = int(p["subject_id"])  # type: ignore[arg-type]
            year = anchor[sid][0] - anchor[sid][1]
            dob = datetime(year, 1, 1).toordinal() + DOB_DAY_OFFSET
            p["dob"] = datetime.fromordinal(dob).strftime("%Y-%m-%d 00:00:00")
            p["dod"] = None if p["dod"] is None else datetime.strptime(p["dod"][:10], "%Y-%m-%d").strftime("%Y-%m-%d 00:00:00")
        for a in admissions:
            sid = int(a["subject_id"])  # type: ignore[arg-type]
            if sid not in anchor:
                raise DatasetError(f"admissions.csv names subject {sid}, who is not in patients.csv; the source is inconsistent.")
            a["age"] = datetime.strptime(a["admittime"], TIME_FORMAT).year - anchor[sid][0] + anchor[sid][1]  # type: ignore[arg-type,assignment]
        self.admit_original = {int(a["hadm_id"]): a["admittime"] for a in admissions}  # type: ignore[arg-type]
        self.disch_original = {int(a["hadm_id"]): a["dischtime"] for a in admissions}  # type: ignore[arg-type]

        earliest: dict[int, str] = {}
        for a in admissions:
            sid = int(a["subject_id"])  # type: ignore[arg-type]
            if sid not in earliest or a["admittime"] < earliest[sid]:  # type: ignore[operator]
                earliest[sid] = a["admittime"]  # type: ignore[assignment]
        for sid, first in earliest.items():  # order of first appearance, one draw each
            self.offsets[sid] = year_offset_minutes(self.rng, START_YEAR, TIME_SPAN, int(first[:4]))

        for p in patients:
            off = self.offsets.get(int(p["subject_id"]))  # type: ignore[arg-type]
            p["dob"], p["dod"] = shift(p["dob"], off), shift(p["dod"], off)
        patients = [p for p in patients if p["dob"] is not None]
        for a in admissions:
            off = self.offsets.get(int(a["subject_id"]))  # type: ignore[arg-type]
            a["admittime"] = shift(a["admittime"], off)
        admissions = [a for a in admissions if a["admittime"] is not None]
        for a in admissions:
            a["dischtime"] = shift(a["dischtime"], self.offsets.get(int(a["subject_id"])))  # type: ignore[arg-type]
            if a["dischtime"] is None:
                a["discharge_location"] = None
        for rows, columns in ((icustays, ("intime", "outtime")), (transfers, ("intime", "outtime"))):
            for r in rows:
                off = self.offsets.get(int(r["subject_id"]))  # type: ignore[arg-type]
                for c in columns:
                    r[c] = shift(r[c], off)
        icustays = [r for r in icustays if r["intime"] is not None]
        transfers = [r for r in transfers if r["intime"] is not None]

        current = list(dict.fromkeys(int(a["subject_id"]) for a in admissions if a["dischtime"] is None))  # type: ignore[arg-type]
        n_current = int(NUM_PATIENTS * CURRENT_PATIENT_RATIO)
        chosen_current = self._sample(current, n_current)
        others = list(
            dict.fromkeys(
                int(a["subject_id"])  # type: ignore[arg-type]
                for a in admissions
                if a["dischtime"] is not None and int(a["subject_id"]) not in set(chosen_current)  # type: ignore[arg-type]
            )
        )
        chosen_others = self._sample(others, NUM_PATIENTS - n_current)
        keep = set(chosen_current + chosen_others)
        self.patient_ids = keep

        patients = [p for p in patients if int(p["subject_id"]) in keep]  # type: ignore[arg-type]
        admissions = [a for a in admissions if int(a["subject_id"]) in keep]  # type: ignore[arg-type]
        self.hadm_ids = {int(a["hadm_id"]) for a in admissions}  # type: ignore[arg-type]
        icustays = [r for r in icustays if r["hadm_id"] is not None and int(r["hadm_id"]) in self.hadm_ids]
        transfers = [r for r in transfers if r["hadm_id"] is not None and _int(r["hadm_id"]) in self.hadm_ids]
        self.tables.update(
            patients=_renumber(patients), admissions=_renumber(admissions), icustays=_renumber(icustays), transfers=_renumber(transfers)
        )
        self.report_current = len({a["subject_id"] for a in admissions if a["dischtime"] is None})

    def _sample(self, population: list[int], k: int) -> list[int]:
        if len(population) < k:
            # The original falls back to everyone when the population is too small.
            return list(population)
        return [int(x) for x in self.rng.choice(np.array(population, dtype=np.int64), k, replace=False)]

    # -- dictionaries -------------------------------------------------------------------
    def dictionaries(self) -> None:
        self.progress.step("d_icd_diagnoses, d_icd_procedures, d_labitems, d_items")
        diagnoses = read_rows(self.source, "hosp/d_icd_diagnoses.csv", ["icd_code", "icd_version", "long_title"])
        diagnoses = [r for r in diagnoses if r["long_title"] not in DIAGNOSIS_TITLES_DROPPED]
        self.tables["d_icd_diagnoses"] = self._icd_dictionary(diagnoses)
        procedures = read_rows(self.source, "hosp/d_icd_procedures.csv", ["icd_code", "icd_version", "long_title"])
        self.tables["d_icd_procedures"] = self._icd_dictionary(procedures)

        labitems = read_rows(self.source, "hosp/d_labitems.csv", ["itemid", "label"])
        labitems = [r for r in labitems if r["label"] is not None and self.owners.get(r["label"], "labevents") == "labevents"]
        self.tables["d_labitems"] = _renumber(labitems)

        items = read_rows(self.source, "icu/d_items.csv", ["itemid", "label", "abbreviation", "linksto"])
        items = [
            r
            for r in items
            if r["label"] is not None
            and r["linksto"] in ("inputevents", "outputevents", "chartevents")
            and self.owners.get(r["label"], "inputevents") == "inputevents"
        ]
        self.tables["d_items"] = _renumber(items)
        self.labitem_ids = {int(r["itemid"]) for r in labitems}  # type: ignore[arg-type]
        self.item_ids = {int(r["itemid"]) for r in items}  # type: ignore[arg-type]
        self.diagnosis_codes = {r["icd_code"] for r in self.tables["d_icd_diagnoses"]}
        self.procedure_codes = {r["icd_code"] for r in self.tables["d_icd_procedures"]}

    @staticmethod
    def _icd_dictionary(rows: list[Row]) -> list[Row]:
        out: list[Row] = []
        seen_codes: set[str] = set()
        seen_titles: set[str] = set()
        for r in rows:
            code = _icd(r["icd_version"], r["icd_code"])
            if r["long_title"] is None or code in seen_codes:
                continue
            seen_codes.add(code)
            # Titles are de-duplicated after codes, over the code-deduplicated rows.
            out.append({"icd_code": code, "long_title": r["long_title"]})
        unique: list[Row] = []
        for r in out:
            if r["long_title"] in seen_titles:
                continue
            seen_titles.add(r["long_title"])  # type: ignore[arg-type]
            unique.append(r)
        return _renumber(unique)

    # -- event tables -------------------------------------------------------------------
    def _in_cohort(self, r: Row) -> bool:
        return r["hadm_id"] is not None and _int(r["hadm_id"]) in self.hadm_ids

    def _shift_and_pivot(self, rows: list[Row], column: str, also: tuple[str, ...] = ()) -> list[Row]:
        kept = []
        for r in rows:
            off = self.offsets.get(int(r["subject_id"]))  # type: ignore[arg-type]
            r[column] = shift(r[column], off)
            for c in also:
                r[c] = shift(r[c], off)
            value = r[column]
            if value is not None and value >= PIVOT:
                kept.append(r)
        return _renumber(kept)

    def diagnoses(self) -> None:
        self.progress.step("diagnoses_icd")
        rows = read_rows(self.source, "hosp/diagnoses_icd.csv", ["subject_id", "hadm_id", "icd_version", "icd_code"])
        out = []
        for r in rows:
            code = _icd(r["icd_version"], r["icd_code"])
            if code not in self.diagnosis_codes or not self._in_cohort(r):
                continue
            out.append({"subject_id": r["subject_id"], "hadm_id": r["hadm_id"], "icd_code": code,
                        "charttime": self.admit_original.get(_int(r["hadm_id"]))})  # type: ignore[arg-type]
        self.tables["diagnoses_icd"] = self._shift_and_pivot(out, "charttime")

    def procedures(self) -> None:
        self.progress.step("procedures_icd")
        rows = read_rows(self.source, "hosp/procedures_icd.csv", ["subject_id", "hadm_id", "icd_code", "icd_version", "chartdate"])
        out = []
        for r in rows:
            code = _icd(r["icd_version"], r["icd_code"])
            if code not in self.procedure_codes or not self._in_cohort(r):
                continue
            hadm = _int(r["hadm_id"])
            charttime = None if r["chartdate"] is None else r["chartdate"][:10] + " 00:00:00"
            admit, disch = self.admit_original.get(hadm), self.disch_original.get(hadm)  # type: ignore[arg-type]
            # A procedure dated outside its admission is moved to the discharge time.
            if charttime is not None and ((admit is not None and charttime < admit) or (disch is not None and charttime > disch)):
                charttime = disch
            out.append({"subject_id": r["subject_id"], "hadm_id": r["hadm_id"], "icd_code": code, "charttime": charttime})
        self.tables["procedures_icd"] = self._shift_and_pivot(out, "charttime")

    def labevents(self) -> None:
        self.progress.step("labevents")
        path = find_table(self.source, "hosp/labevents.csv")
        assert path is not None
        rows = [
            r
            for r in iter_rows(path, ["subject_id", "hadm_id", "itemid", "charttime", "valuenum", "valueuom"])
            if r["hadm_id"] is not None and r["valuenum"] is not None and r["valueuom"] is not None
            and int(r["itemid"]) in self.labitem_ids and self._in_cohort(r)  # type: ignore[arg-type]
        ]
        self.tables["labevents"] = self._shift_and_pivot(rows, "charttime")

    def prescriptions(self) -> None:
        self.progress.step("prescriptions")
        rows = read_rows(
            self.source, "hosp/prescriptions.csv",
            ["subject_id", "hadm_id", "starttime", "stoptime", "drug", "dose_val_rx", "dose_unit_rx", "route"],
        )
        rows = [r for r in rows if self.owners.get(r["drug"] or "", "prescriptions") == "prescriptions"]
        kept = []
        for r in rows:
            if any(r[c] is None for c in ("starttime", "stoptime", "dose_val_rx", "dose_unit_rx", "route")):
                continue
            dose = r["dose_val_rx"].replace(",", "")  # type: ignore[union-attr]
            if not dose.isnumeric():  # only whole-number doses are kept
                continue
            r["dose_val_rx"] = str(int(dose))
            kept.append(r)
        units: dict[str, Counter[str]] = defaultdict(Counter)
        for r in kept:
            units[r["drug"]][r["dose_unit_rx"]] += 1  # type: ignore[index]
        main_unit = {drug: counter.most_common(1)[0][0] for drug, counter in units.items()}
        kept = [r for r in kept if r["dose_unit_rx"] == main_unit[r["drug"]] and self._in_cohort(r)]  # type: ignore[index]
        self.tables["prescriptions"] = self._shift_and_pivot(kept, "starttime", also=("stoptime",))

    def cost(self) -> None:
        self.progress.step("cost")
        means = self.rng.poisson(lam=10, size=4)
        sources = (
            ("diagnoses_icd", "icd_code", "charttime", str),
            ("labevents", "itemid", "charttime", int),
            ("procedures_icd", "icd_code", "charttime", str),
            ("prescriptions", "drug", "starttime", str),
        )
        rows: list[Row] = []
        for (name, key, time_col, key_type), mean in zip(sources, means, strict=True):
            events = self.tables[name]
            keys = sorted({key_type(e[key]) for e in events})
            price = {k: round(self.rng.normal(loc=mean, scale=1.0), 2) for k in keys}
            for e in events:
                rows.append({"subject_id": e["subject_id"], "hadm_id": e["hadm_id"], "event_type": name,
                             "event_id": e["row_id"], "chargetime": e[time_col], "cost": price[key_type(e[key])]})
        self.tables["cost"] = _renumber(rows)

    def chartevents(self) -> None:
        self.progress.step("chartevents")
        path = find_table(self.source, "icu/chartevents.csv", required=False)
        if path is not None:
            rows = [
                r
                for r in iter_rows(path, ["subject_id", "hadm_id", "stay_id", "charttime", "itemid", "valuenum", "valueuom"])
                if int(r["itemid"]) in VITAL_ITEMIDS and int(r["subject_id"]) in self.patient_ids  # type: ignore[arg-type]
                and all(v is not None for v in r.values())
            ]
        else:
            rows = self._chartevents_from_meds()
        rows = [r for r in rows if self._in_cohort(r)]
        self.tables["chartevents"] = self._shift_and_pivot(rows, "charttime")

    def _chartevents_from_meds(self) -> list[Row]:
        meds = meds_events(self.source)
        if meds is None:
            self.progress.warn(
                self.report,
                f"No icu/chartevents.csv(.gz) and no MEDS stand-in at {self.source / MEDS_EVENTS}: the chartevents table will be EMPTY, "
                "so every vital-sign question will return nothing. Add chartevents.csv.gz to the source to fix this.",
            )
            return []
        import duckdb

        self.progress.warn(
            self.report,
            "icu/chartevents.csv.gz is missing; chartevents is rebuilt from the MEDS stand-in "
            "(hadm_id/stay_id recovered from ICU stay windows, values at float32 precision).",
        )
        icustays = find_table(self.source, "icu/icustays.csv")
        con = duckdb.connect()
        try:
            con.execute("CREATE TABLE icustays AS SELECT subject_id, hadm_id, stay_id, intime, outtime FROM read_csv(?, header = true)",
                        [str(icustays)])
            events = con.execute(chartevents_sql("icustays", f"itemid IN ({', '.join(map(str, VITAL_ITEMIDS))})"), [str(meds)]).fetchall()
        except duckdb.Error as exc:
            raise DatasetError(f"Cannot read the chartevents stand-in {meds}: {exc}") from exc
        finally:
            con.close()
        rows: list[Row] = []
        outside = 0
        for subject_id, hadm_id, stay_id, charttime, itemid, valuenum, valueuom, out_of_window in events:
            # The original drops rows with any missing field (pandas dropna), unit included.
            if subject_id not in self.patient_ids or valuenum is None or valueuom is None:
                continue
            outside += out_of_window
            rows.append({"subject_id": subject_id, "hadm_id": hadm_id, "stay_id": stay_id, "itemid": itemid,
                         "charttime": charttime.strftime(TIME_FORMAT), "valuenum": valuenum, "valueuom": valueuom.lower()})
        if outside:
            self.progress.warn(self.report,
                               f"{outside} stand-in chartevents fell outside every ICU stay window and were assigned to the nearest stay.")
        return rows

    def microbiology(self) -> None:
        self.progress.step("microbiologyevents")
        rows = read_rows(
            self.source, "hosp/microbiologyevents.csv",
            ["subject_id", "hadm_id", "chartdate", "charttime", "spec_type_desc", "test_name", "org_name"],
        )
        for r in rows:
            if r["charttime"] is None:
                r["charttime"] = r["chartdate"]
        self.tables["microbiologyevents"] = self._shift_and_pivot([r for r in rows if self._in_cohort(r)], "charttime")

    def io_events(self) -> None:
        self.progress.step("inputevents, outputevents")
        rows = read_rows(self.source, "icu/inputevents.csv",
                         ["subject_id", "hadm_id", "stay_id", "starttime", "itemid", "totalamount", "totalamountuom"])
        rows = [
            r for r in rows
            if all(r[c] is not None for c in ("hadm_id", "stay_id", "totalamount", "totalamountuom"))
            and r["totalamountuom"] == "ml" and int(r["itemid"]) in self.item_ids and self._in_cohort(r)  # type: ignore[arg-type]
        ]
        self.tables["inputevents"] = self._shift_and_pivot(rows, "starttime")
        rows = read_rows(self.source, "icu/outputevents.csv",
                         ["subject_id", "hadm_id", "stay_id", "charttime", "itemid", "value", "valueuom"])
        rows = [
            r for r in rows
            if all(r[c] is not None for c in ("hadm_id", "stay_id", "value", "valueuom"))
            and r["valueuom"] == "ml" and int(r["itemid"]) in self.item_ids and self._in_cohort(r)  # type: ignore[arg-type]
        ]
        self.tables["outputevents"] = self._shift_and_pivot(rows, "charttime")


# Values are typed on insert so the file holds what the original holds (integers, reals, text).
_CASTS: dict[str, Any] = {"INT": _number, "DOUBLE": _float}


def _typed(t_name: str, rows: list[Row]) -> list[dict[str, Any]]:
    t = TABLE_BY_NAME[t_name]
    casts = {c.name: _CASTS.get(c.type.split("(")[0].split()[0]) for c in t.columns}
    out = []
    for r in rows:
        typed: dict[str, Any] = {}
        for name, cast in casts.items():
            v = r.get(name)
            typed[name] = cast(v) if cast is not None and isinstance(v, str) else v
        out.append(typed)
    return out


def build(source: Path, out: Path, progress: Progress) -> BuildReport:
    """Build ``out`` (SQLite) from the MIMIC-IV demo at ``source``."""
    report = BuildReport(name="mimic_iv", out=out, source=str(source))
    b = _Build(source, progress, report)
    b.admissions()
    b.dictionaries()
    b.diagnoses()
    b.procedures()
    b.labevents()
    b.prescriptions()
    b.cost()
    b.chartevents()
    b.io_events()
    b.microbiology()
    progress.step("writing SQLite")
    report.tables = write_sqlite(out, TABLES, {name: _typed(name, b.tables[name]) for name in INSERT_ORDER})
    report.facts["currently_admitted_patients"] = b.report_current
    report.facts["patients"] = len(b.patient_ids)
    return report


__all__ = ["NOW", "TABLES", "build"]
