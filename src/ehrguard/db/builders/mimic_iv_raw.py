"""MIMIC-IV in its original module layout, as a DuckDB database, for cohort queries (ClinSQL).

Tables keep PhysioNet's names and columns, under the schemas BigQuery uses for
``physionet-data.mimiciv_3_1_hosp`` / ``mimiciv_3_1_icu``: ``mimiciv_hosp.*`` and
``mimiciv_icu.*``. DuckDB reads each ``.csv.gz`` directly (no pandas round trip), so the same
command works on the 100-patient demo and on a full MIMIC-IV download.

The demo copy here lacks ``icu/chartevents.csv.gz``; when it is absent, ``mimiciv_icu.chartevents``
is rebuilt from the MEDS stand-in (``derived_meds/``) with ``hadm_id``/``stay_id`` recovered
from ICU stay windows (the nearest stay of the patient when no window contains the time).

``mimiciv_derived.charlson`` (the Charlson comorbidity index per admission) is computed from
``diagnoses_icd`` (:mod:`.charlson`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ehrguard.db.builders.base import BuildReport, Progress
from ehrguard.db.builders.charlson import charlson_sql
from ehrguard.db.builders.meds import chartevents_sql, meds_events
from ehrguard.db.builders.writer import atomic_output
from ehrguard.errors import BuildError, DatasetError

if TYPE_CHECKING:
    import duckdb

MODULES = ("hosp", "icu")
REQUIRED = {"hosp": ("patients", "admissions", "diagnoses_icd", "labevents", "d_labitems"), "icu": ("icustays", "d_items")}


def _tables(folder: Path) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for p in sorted(folder.iterdir()) if folder.is_dir() else []:
        for suffix in (".csv.gz", ".csv"):
            if p.name.endswith(suffix):
                found.setdefault(p.name[: -len(suffix)].lower(), p)
    return found


def build(source: Path, out: Path, progress: Progress) -> BuildReport:
    """Build ``out`` (DuckDB) from a MIMIC-IV folder with ``hosp/`` and ``icu/``."""
    import duckdb

    report = BuildReport(name="mimic_iv_raw", out=out, source=str(source))
    plan = {m: _tables(source / m) for m in MODULES}
    for module, names in REQUIRED.items():
        missing = [n for n in names if n not in plan[module]]
        if missing:
            raise DatasetError(
                f"{source / module} lacks {', '.join(n + '.csv.gz' for n in missing)}. "
                "Point --source at an unpacked MIMIC-IV (demo or full) with hosp/ and icu/."
            )
    with atomic_output(out) as tmp:
        con = duckdb.connect(str(tmp))
        try:
            for module in MODULES:
                con.execute(f"CREATE SCHEMA mimiciv_{module}")
                for name, path in plan[module].items():
                    progress.step(f"mimiciv_{module}.{name}")
                    try:
                        con.execute(
                            f"CREATE TABLE mimiciv_{module}.{name} AS SELECT * FROM read_csv(?, header = true, sample_size = 100000)",
                            [str(path)],
                        )
                    except duckdb.Error as exc:
                        raise DatasetError(f"Cannot load {path}: {exc}. The file looks corrupt; re-download it.") from exc
                    report.tables[f"mimiciv_{module}.{name}"] = _count(con, f"mimiciv_{module}.{name}")
            if "chartevents" not in plan["icu"]:
                _chartevents_from_meds(con, source, progress, report)
            progress.step("mimiciv_derived.charlson")
            con.execute("CREATE SCHEMA mimiciv_derived")
            con.execute(charlson_sql())
            report.tables["mimiciv_derived.charlson"] = _count(con, "mimiciv_derived.charlson")
            con.execute("CHECKPOINT")
        finally:
            con.close()
    return report


def _count(con: duckdb.DuckDBPyConnection, table: str) -> int:
    row = con.execute(f"SELECT count(*) FROM {table}").fetchone()
    assert row is not None  # count(*) always returns one row
    return row[0]


def _chartevents_from_meds(con: duckdb.DuckDBPyConnection, source: Path, progress: Progress, report: BuildReport) -> None:
    meds = meds_events(source)
    if meds is None:
        progress.warn(report, "icu/chartevents.csv.gz is missing and there is no MEDS stand-in: mimiciv_icu.chartevents will be absent, "
                              "so queries on vital signs and charted values fail. Add chartevents.csv.gz to the source.")
        return
    progress.warn(report, "icu/chartevents.csv.gz is missing; mimiciv_icu.chartevents is rebuilt from the MEDS stand-in "
                          "(hadm_id/stay_id from ICU stay windows; caregiver, storetime, text value and warning are NULL).")
    progress.step("mimiciv_icu.chartevents (stand-in)")
    rows = chartevents_sql("mimiciv_icu.icustays", "itemid IN (SELECT itemid FROM mimiciv_icu.d_items)")
    try:
        con.execute(
            f"""CREATE TABLE mimiciv_icu.chartevents AS
                SELECT subject_id, hadm_id, stay_id, CAST(NULL AS BIGINT) AS caregiver_id, charttime, CAST(NULL AS TIMESTAMP) AS storetime,
                       itemid, CAST(valuenum AS VARCHAR) AS value, valuenum, valueuom, CAST(NULL AS BIGINT) AS warning
                FROM ({rows})""",
            [str(meds)],
        )
    except Exception as exc:  # duckdb.Error, kept generic to avoid importing duckdb at module load
        raise BuildError(f"Rebuilding chartevents from {meds} failed: {exc}") from exc
    report.tables["mimiciv_icu.chartevents"] = _count(con, "mimiciv_icu.chartevents")
