"""The EHRSQL / SCARE eICU database (SQLite), built from the eICU demo v2.0.1.

The conventions are those of the original EHRSQL preprocessing (``glee4810/EHRSQL``,
``preprocess/preprocess_db_eicu.py``), re-implemented:

* patients with a known admission source, gender male/female, a numeric age over 10 and a
  hospital stay below the 95th percentile;
* per patient, one sampled first-admission year (2100 here, as SCARE's eICU answers all lie
  in 2100) and one sampled date per hospital visit in each discharge year; an ICU admission
  time is that date + ``hospitaladmittime24`` minus the admission offset; every event time is
  the ICU admission time plus the event's minute offset, dropped after "now";
* up to 10% currently admitted patients; diagnosis/treatment names from the last two levels
  of their path, keeping for each the most frequent top-level path; ``cost`` from the same
  seeded generator.

SCARE's eICU database was built from the *full* eICU (and values shuffled), so answers on
this demo-built database differ; the schema and conventions are the same. ``lab`` and
``vitalPeriodic`` are not in the demo copy here: a 169-stay lab subset and an intakeOutput
stand-in are used when the full files are absent, with loud warnings.
"""

from __future__ import annotations

import calendar
from collections import Counter
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from ehrguard.db.builders.base import BuildReport, Progress
from ehrguard.db.builders.sources import Row, find_table, iter_rows, read_rows
from ehrguard.db.builders.timeshift import NOW, sample_year, shift_offset
from ehrguard.db.builders.writer import table, write_sqlite

START_YEAR = 2100
TIME_SPAN = 0
NUM_PATIENTS = 1000  # EHRSQL samples 1,000 eICU patients
CURRENT_PATIENT_RATIO = 0.1

TABLES = (
    table("patient", [
        "uniquepid VARCHAR(10) nn", "patienthealthsystemstayid INT nn", "patientunitstayid INT pk", "gender VARCHAR(25) nn",
        "age VARCHAR(10) nn", "ethnicity VARCHAR(50)", "hospitalid INT nn", "wardid INT nn", "admissionheight NUMERIC(10,2)",
        "admissionweight NUMERIC(10,2)", "dischargeweight NUMERIC(10,2)", "hospitaladmittime TIMESTAMP(0) nn",
        "hospitaladmitsource VARCHAR(30) nn", "unitadmittime TIMESTAMP(0) nn", "unitdischargetime TIMESTAMP(0)",
        "hospitaldischargetime TIMESTAMP(0)", "hospitaldischargestatus VARCHAR(10)"]),
    table("diagnosis", ["diagnosisid INT pk", "patientunitstayid INT nn", "diagnosisname VARCHAR(200) nn", "diagnosistime TIMESTAMP(0) nn",
                        "icd9code VARCHAR(100)"], ["patientunitstayid -> patient.patientunitstayid"]),
    table("treatment", ["treatmentid INT pk", "patientunitstayid INT nn", "treatmentname VARCHAR(200) nn", "treatmenttime TIMESTAMP(0) nn"],
          ["patientunitstayid -> patient.patientunitstayid"]),
    table("lab", ["labid INT pk", "patientunitstayid INT nn", "labname VARCHAR(256) nn", "labresult NUMERIC(11,4) nn",
                  "labresulttime TIMESTAMP(0) nn"],
          ["patientunitstayid -> patient.patientunitstayid"]),
    table("medication", ["medicationid INT pk", "patientunitstayid INT nn", "drugname VARCHAR(220) nn", "dosage VARCHAR(60) nn",
                         "routeadmin VARCHAR(120) nn", "drugstarttime TIMESTAMP(0)", "drugstoptime TIMESTAMP(0)"],
          ["patientunitstayid -> patient.patientunitstayid"]),
    table("cost", ["costid INT pk", "uniquepid VARCHAR(10) nn", "patienthealthsystemstayid INT nn", "eventtype VARCHAR(20) nn",
                   "eventid INT nn", "chargetime TIMESTAMP(0) nn", "cost DOUBLE PRECISION nn"],
          ["patienthealthsystemstayid -> patient.patienthealthsystemstayid"]),
    table("allergy", ["allergyid INT pk", "patientunitstayid INT nn", "drugname VARCHAR(255)", "allergyname VARCHAR(255) nn",
                      "allergytime TIMESTAMP(0) nn"],
          ["patientunitstayid -> patient.patientunitstayid"]),
    table("intakeoutput", ["intakeoutputid INT pk", "patientunitstayid INT nn", "cellpath VARCHAR(500) nn", "celllabel VARCHAR(255) nn",
                           "cellvaluenumeric NUMERIC(12,4) nn", "intakeoutputtime TIMESTAMP(0) nn"],
          ["patientunitstayid -> patient.patientunitstayid"]),
    table("microlab", ["microlabid INT pk", "patientunitstayid INT nn", "culturesite VARCHAR(255) nn", "organism VARCHAR(255) nn",
                       "culturetakentime TIMESTAMP(0) nn"],
          ["patientunitstayid -> patient.patientunitstayid"]),
    table("vitalperiodic", ["vitalperiodicid BIGINT pk", "patientunitstayid INT nn", "temperature NUMERIC(11,4)", "sao2 INT",
                            "heartrate INT", "respiration INT", "systemicsystolic INT", "systemicdiastolic INT", "systemicmean INT",
                            "observationtime TIMESTAMP(0) nn"],
          ["patientunitstayid -> patient.patientunitstayid"]),
)
VITAL_COLUMNS = ("temperature", "sao2", "heartrate", "respiration", "systemicsystolic", "systemicdiastolic", "systemicmean")


def _sample_dates(rng: np.random.Generator, year: int, n: int) -> list[str]:
    """``n`` dates spread over ``year``, one per equal slice, jittered (the original's stratified draw)."""
    start = calendar.timegm((year, 1, 1, 0, 0, 0))
    end = calendar.timegm((year, 12, 31, 0, 0, 0))
    out = []
    for k in range(n):
        seed = k / n + rng.random() / n
        moment = datetime.fromtimestamp(start + seed * (end - start), tz=UTC)
        out.append(moment.strftime("%Y-%m-%d"))
    return out


def _filtered_paths(paths: list[str]) -> set[str]:
    """For each (level 3, level 4) of a path keep only its most frequent (level 1, level 2)."""
    by_tail: dict[str, list[str]] = {}
    for p in paths:
        parts = p.split("|")
        by_tail.setdefault("|".join(parts[2:4]), []).append("|".join(parts[:2]))
    # Ties go to the head seen first, as Counter.most_common does.
    return {Counter(heads).most_common(1)[0][0] + "|" + tail for tail, heads in by_tail.items()}


def _name_from_path(path: str) -> str:
    parts = path.split("|")
    if len(parts) > 3:
        return " - ".join(parts[2:4])
    return parts[2] if len(parts) > 2 else parts[-1]


class _Build:
    def __init__(self, source: Path, progress: Progress, report: BuildReport) -> None:
        self.source, self.progress, self.report = source, progress, report
        self.rng = np.random.default_rng(0)
        self.tables: dict[str, list[Row]] = {}

    def patients(self) -> None:
        self.progress.step("patient")
        rows = read_rows(self.source, "patient.csv", [
            "uniquepid", "patienthealthsystemstayid", "patientunitstayid", "gender", "age", "ethnicity", "hospitalid", "wardid",
            "admissionheight", "admissionweight", "dischargeweight", "hospitaladmitsource", "hospitaldischargestatus",
            "hospitaladmitoffset", "hospitaladmittime24", "unitdischargeoffset", "hospitaldischargeoffset", "hospitaldischargeyear"])
        rows = [r for r in rows if r["hospitaladmitsource"] is not None and r["gender"] in ("male", "female")]
        rows = [r for r in rows if r["age"] not in (None, "> 89") and int(r["age"]) > 10]
        stays = np.array([int(r["hospitaldischargeoffset"]) - int(r["hospitaladmitoffset"]) for r in rows])  # type: ignore[arg-type]
        threshold = np.percentile(stays, q=95)
        rows = [r for r, s in zip(rows, stays, strict=True) if s < threshold]

        self.unit_time: dict[int, str] = {}
        self.unit_hadm: dict[int, int] = {}
        self.unit_pid: dict[int, str] = {}
        age: dict[int, int] = {}
        by_pid: dict[str, list[Row]] = {}
        for r in rows:
            by_pid.setdefault(r["uniquepid"], []).append(r)  # type: ignore[arg-type]
        for pid, visits in by_pid.items():
            self._anchor_patient(pid, visits, age)

        kept = []
        for r in rows:
            unit = int(r["patientunitstayid"])  # type: ignore[arg-type]
            if unit not in age:
                continue
            anchor = self.unit_time.get(unit)
            r["age"] = str(age[unit])
            r["hospitaladmittime"] = shift_offset(anchor, int(r["hospitaladmitoffset"]))  # type: ignore[arg-type]
            r["unitadmittime"] = shift_offset(anchor, 0)  # type: ignore[arg-type]
            r["unitdischargetime"] = shift_offset(anchor, int(r["unitdischargeoffset"]))  # type: ignore[arg-type]
            r["hospitaldischargetime"] = shift_offset(anchor, int(r["hospitaldischargeoffset"]))  # type: ignore[arg-type]
            if r["hospitaladmittime"] is None or r["unitadmittime"] is None:
                continue
            if r["hospitaldischargetime"] is None:
                r["hospitaldischargestatus"] = None
                r["dischargeweight"] = None
            kept.append(r)

        current = list(dict.fromkeys(r["uniquepid"] for r in kept if r["hospitaldischargetime"] is None))
        n_current = int(NUM_PATIENTS * CURRENT_PATIENT_RATIO)
        chosen = self._sample(current, n_current)
        if len(current) < n_current:
            self.progress.warn(self.report, f"Only {len(current)} patients are still admitted at 'now' (wanted {n_current}); all are kept.")
        others = list(dict.fromkeys(r["uniquepid"] for r in kept
                                    if r["hospitaldischargetime"] is not None and r["uniquepid"] not in set(chosen)))
        chosen += self._sample(others, NUM_PATIENTS - n_current)
        keep = set(chosen)
        self.tables["patient"] = [r for r in kept if r["uniquepid"] in keep]
        self.units = {int(r["patientunitstayid"]) for r in self.tables["patient"]}  # type: ignore[arg-type]
        self.report.facts["patients"] = len(keep)
        self.report.facts["currently_admitted_patients"] = len({r["uniquepid"] for r in self.tables["patient"]
                                                                if r["hospitaldischargetime"] is None})

    def _anchor_patient(self, pid: str, visits: list[Row], age: dict[int, int]) -> None:
        """Sample the patient's dates and anchor each ICU stay in time, stopping at the first stay
        whose offsets are inconsistent (its later stays get no time and are dropped)."""
        years = sorted({int(r["hospitaldischargeyear"]) for r in visits})  # type: ignore[arg-type]
        first_year, first_age = years[0], min(int(r["age"]) for r in visits)  # type: ignore[arg-type]
        sampled = sample_year(self.rng, START_YEAR, TIME_SPAN)
        for year in years:
            in_year = [r for r in visits if int(r["hospitaldischargeyear"]) == year]  # type: ignore[arg-type]
            hadm_ids = list(dict.fromkeys(int(r["patienthealthsystemstayid"]) for r in in_year))  # type: ignore[arg-type]
            dates = _sample_dates(self.rng, sampled + (year - first_year), len(hadm_ids))
            for hadm, date in zip(hadm_ids, dates, strict=True):
                for r in (v for v in in_year if int(v["patienthealthsystemstayid"]) == hadm):  # type: ignore[arg-type]
                    unit = int(r["patientunitstayid"])  # type: ignore[arg-type]
                    self.unit_hadm.setdefault(unit, hadm)
                    self.unit_pid.setdefault(unit, pid)
                    age[unit] = first_age + (year - first_year)
                    h_in, u_out, h_out = (int(r[c]) for c in ("hospitaladmitoffset", "unitdischargeoffset", "hospitaldischargeoffset"))  # type: ignore[arg-type]
                    if not h_in <= 0 < u_out <= h_out:
                        return
                    hosp_admit = datetime.strptime(f"{date} {r['hospitaladmittime24']}", "%Y-%m-%d %H:%M:%S")
                    self.unit_time[unit] = str(hosp_admit - timedelta(minutes=h_in))

    def _sample(self, population: list[str | None], k: int) -> list[str]:
        if len(population) <= k:
            return [p for p in population if p is not None]
        return [str(x) for x in self.rng.choice(np.array(population, dtype=object), k, replace=False)]

    def _events(self, rows: Iterable[Row], offset: str, time_col: str, *, also: tuple[tuple[str, str], ...] = (), id_col: str) -> list[Row]:
        """Rows of the sampled stays with each minute offset turned into a time; rows past "now" dropped; ids renumbered."""
        out = []
        for r in rows:
            unit = int(r["patientunitstayid"])  # type: ignore[arg-type]
            if unit not in self.units:
                continue
            anchor = self.unit_time.get(unit)
            for source_col, target_col in ((offset, time_col), *also):
                minutes = r[source_col]
                r[target_col] = None if minutes is None else shift_offset(anchor, int(float(minutes)))  # type: ignore[arg-type]
            if r[time_col] is not None:
                out.append(r)
        for i, r in enumerate(out):
            r[id_col] = i  # type: ignore[assignment]
        return out

    def _named_paths(self, file: str, id_col: str, offset: str, path_col: str, name_col: str, extra: list[str]) -> list[Row]:
        rows = read_rows(self.source, file, [id_col, "patientunitstayid", offset, path_col, *extra])
        rows = [r for r in rows if r[path_col] is not None]
        keep = _filtered_paths([r[path_col] for r in rows])  # type: ignore[misc]
        out = []
        for r in rows:
            parts = r[path_col].split("|")  # type: ignore[union-attr]
            if "|".join(parts[:2]) + "|" + "|".join(parts[2:4]) in keep:
                r[name_col] = _name_from_path(r[path_col])  # type: ignore[arg-type]
                out.append(r)
        return out

    def _table_or_stand_in(self, relative: str, table_name: str, stand_in: str | None = None, stand_in_note: str = "") -> Path | None:
        """The full source table, else its stand-in, else None; every fallback is a loud warning."""
        path = find_table(self.source, relative, required=False)
        if path is not None:
            return path
        path = find_table(self.source, stand_in, required=False) if stand_in else None
        if path is not None:
            self.progress.warn(self.report, f"{relative} is missing: using {stand_in_note}.")
        else:
            self.progress.warn(self.report, f"{relative} is missing: the {table_name} table will be EMPTY, "
                                            "so questions that use it return nothing. "
                                            f"Add {relative}.gz to the source to fix this.")
        return path

    def events(self) -> None:
        self.progress.step("diagnosis, treatment")
        rows = self._named_paths("diagnosis.csv", "diagnosisid", "diagnosisoffset", "diagnosisstring", "diagnosisname", ["icd9code"])
        self.tables["diagnosis"] = self._events(rows, "diagnosisoffset", "diagnosistime", id_col="diagnosisid")
        rows = self._named_paths("treatment.csv", "treatmentid", "treatmentoffset", "treatmentstring", "treatmentname", [])
        self.tables["treatment"] = self._events(rows, "treatmentoffset", "treatmenttime", id_col="treatmentid")

        self.progress.step("lab")
        lab_path = self._table_or_stand_in(
            "lab.csv", "lab", "partial_subset_pyhealth/lab.subset.csv",
            "the 169-stay subset in partial_subset_pyhealth/ (most stays will have no labs)")
        rows = [] if lab_path is None else [
            r for r in iter_rows(lab_path, ["labid", "patientunitstayid", "labresultoffset", "labname", "labresult"])
            if r["labresult"] is not None]
        self.tables["lab"] = self._events(rows, "labresultoffset", "labresulttime", id_col="labid")

        self.progress.step("medication, allergy, microlab")
        rows = read_rows(self.source, "medication.csv", ["medicationid", "patientunitstayid", "drugstartoffset", "drugstopoffset",
                                                         "drugname", "dosage", "routeadmin", "drugordercancelled"])
        rows = [r for r in rows if r["drugname"] and r["dosage"] and r["routeadmin"] and r["drugordercancelled"] == "no"]
        self.tables["medication"] = self._events(rows, "drugstartoffset", "drugstarttime",
                                                 also=(("drugstopoffset", "drugstoptime"),), id_col="medicationid")
        rows = read_rows(self.source, "allergy.csv", ["allergyid", "patientunitstayid", "allergyoffset", "drugname", "allergyname"])
        self.tables["allergy"] = self._events(rows, "allergyoffset", "allergytime", id_col="allergyid")
        rows = read_rows(self.source, "microLab.csv", ["microlabid", "patientunitstayid", "culturetakenoffset", "culturesite", "organism"])
        self.tables["microlab"] = self._events(rows, "culturetakenoffset", "culturetakentime", id_col="microlabid")

        self.progress.step("intakeoutput")
        io_path = self._table_or_stand_in(
            "intakeOutput.csv", "intakeoutput", "derived_from_ricu_fst/intakeOutput.csv", "the stand-in in derived_from_ricu_fst/")
        rows = [] if io_path is None else list(
            iter_rows(io_path, ["intakeoutputid", "patientunitstayid", "intakeoutputoffset", "cellpath", "celllabel", "cellvaluenumeric"]))
        labels = {r["celllabel"] for r in rows if r["cellpath"] and ("intake (ml)" in r["cellpath"] or "output (ml)" in r["cellpath"])}
        kept = []
        for r in rows:
            label = r["celllabel"]
            if label not in labels or label in ("intake", "output") or r["cellvaluenumeric"] is None:
                continue
            words = label.split()  # type: ignore[union-attr]
            if words and words[-1] in ("intake", "output"):
                r["celllabel"] = " ".join(words[:-1])
            kept.append(r)
        self.tables["intakeoutput"] = self._events(kept, "intakeoutputoffset", "intakeoutputtime", id_col="intakeoutputid")

        self.progress.step("vitalperiodic")
        vp_path = self._table_or_stand_in("vitalPeriodic.csv", "vitalperiodic")
        # Streamed: the full vitalPeriodic has ~146M rows; only the sampled stays' rows are kept.
        vitals = () if vp_path is None else iter_rows(vp_path,
                                                      ["vitalperiodicid", "patientunitstayid", "observationoffset", *VITAL_COLUMNS])
        self.tables["vitalperiodic"] = self._events(vitals, "observationoffset", "observationtime", id_col="vitalperiodicid")

    def cost(self) -> None:
        self.progress.step("cost")
        means = self.rng.poisson(lam=10, size=4)
        rows: list[Row] = []
        # The original prices labs around the diagnosis mean (index 0); kept for fidelity.
        for name, key, id_col, time_col, mean in (("diagnosis", "diagnosisname", "diagnosisid", "diagnosistime", means[0]),
                                                  ("lab", "labname", "labid", "labresulttime", means[0]),
                                                  ("treatment", "treatmentname", "treatmentid", "treatmenttime", means[2]),
                                                  ("medication", "drugname", "medicationid", "drugstarttime", means[3])):
            events = self.tables[name]
            price = {k: round(self.rng.normal(loc=mean, scale=1.0), 2) for k in dict.fromkeys(e[key] for e in events)}
            for e in events:
                unit = int(e["patientunitstayid"])  # type: ignore[arg-type]
                rows.append({"uniquepid": self.unit_pid[unit], "patienthealthsystemstayid": self.unit_hadm[unit], "eventtype": name,  # type: ignore[dict-item]
                             "eventid": e[id_col], "chargetime": e[time_col], "cost": price[e[key]]})
        for i, r in enumerate(rows):
            r["costid"] = i  # type: ignore[assignment]
        self.tables["cost"] = rows


def build(source: Path, out: Path, progress: Progress) -> BuildReport:
    """Build ``out`` (SQLite) from the eICU demo at ``source``."""
    report = BuildReport(name="eicu", out=out, source=str(source))
    b = _Build(source, progress, report)
    b.patients()
    b.events()
    b.cost()
    progress.step("writing SQLite")
    report.tables = write_sqlite(out, TABLES, {t.name: b.tables[t.name] for t in TABLES})
    report.facts["now"] = NOW
    return report
