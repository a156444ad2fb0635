"""Synthetic MIMIC-IV at K times the demo's size (``mimic_iv_raw_x10``, ``mimic_iv_raw_x50``), for measuring what size
costs: never for answers, and never mixed with real rows.

The demo is built in the mimic-code layout first (:mod:`.mimic_iv_raw`); every table that holds patients' rows then
receives K seeded copies of each patient, and the demo's own rows are left out:

* ids: ``subject_id``, ``hadm_id``, ``stay_id`` and the event and order ids gain ``k * ID_STRIDE`` (copy k = 1..K);
  text ids that embed them (``poe_id``, ``emar_id``) gain the prefix ``sK-``; dictionary ids (``itemid``) and
  codes stay, so every join and every dictionary lookup works as in the demo;
* time: all of a copy's times move by one whole number of days in [-365, 365], drawn from a hash of the patient,
  the copy and the seed (so intervals, stays and the order of events are the patient's own);
* measurements: every DOUBLE measure of a copy (``valuenum``, ``amount``, ``rate``, ...) is scaled by one factor in
  [0.95, 1.05] per patient and copy; ``anchor_age`` moves by -2..2 (18..91);
* dictionaries (``d_*``, ``provider``, ``caregiver``) are copied once.

The distributions are the demo's, resampled patient by patient: K copies of 100 real trajectories, not new ones.
``main.synthetic_notice`` says so, and every report that uses the database labels it SYNTHETIC.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from ehrguard.db.builders.base import BuildReport, Progress
from ehrguard.db.builders.mimic_iv_raw import build as build_raw
from ehrguard.db.builders.writer import atomic_output

SEED = 20261202
ID_STRIDE = 1_000_000_000
# Integer ids that belong to one patient's rows (the event and order ids too, so that they stay unique).
OFFSET_IDS = frozenset({"subject_id", "hadm_id", "stay_id", "labevent_id", "specimen_id", "microevent_id", "micro_specimen_id",
                        "pharmacy_id", "transfer_id", "orderid", "linkorderid"})
PREFIXED_IDS = frozenset({"poe_id", "emar_id", "discontinue_of_poe_id", "discontinued_by_poe_id"})
# Measures scaled per copy; durations derived from shifted times (los) and reference ranges are not.
MEASURES = frozenset({"valuenum", "amount", "rate", "totalamount", "originalamount", "originalrate", "patientweight",
                      "product_amount_given", "infusion_rate", "prior_infusion_rate", "value", "dilution_value"})
NOTICE = ("SYNTHETIC: {k} seeded copies of each MIMIC-IV demo patient (ids offset, times shifted, measures jittered); "
          "for measuring cost at size only. Seed {seed}.")


def _expression(column: str, data_type: str, k: str, seed: int) -> str:
    """The SELECT expression of ``column`` in copy ``k`` (a SQL expression)."""
    name = column.lower()
    quoted = f'"{column}"'
    shift = f"(CAST(hash(subject_id, {k}, {seed}) % 731 AS INTEGER) - 365)"
    if name in OFFSET_IDS and data_type in ("BIGINT", "INTEGER"):
        return f"{quoted} + {k} * {ID_STRIDE} AS {quoted}"
    if name in PREFIXED_IDS and data_type == "VARCHAR":
        return f"CASE WHEN {quoted} IS NULL THEN NULL ELSE 's' || {k} || '-' || {quoted} END AS {quoted}"
    if data_type.startswith("TIMESTAMP"):
        return f"{quoted} + to_days({shift}) AS {quoted}"
    if data_type == "DATE":
        return f"CAST({quoted} + {shift} AS DATE) AS {quoted}"
    if name in MEASURES and data_type == "DOUBLE":
        return f"{quoted} * (0.95 + CAST(hash(subject_id, {k}, {seed}, 1) % 1001 AS DOUBLE) / 10000.0) AS {quoted}"
    if name == "anchor_age":
        return f"LEAST(91, GREATEST(18, {quoted} + CAST(hash(subject_id, {k}, {seed}, 2) % 5 AS INTEGER) - 2)) AS {quoted}"
    if name == "anchor_year":
        return f"{quoted} + CAST(round({shift} / 365.25) AS INTEGER) AS {quoted}"
    return quoted


def scale(source_db: Path, out: Path, factor: int, seed: int = SEED, progress: Progress | None = None) -> BuildReport:
    """Write ``out`` (DuckDB): ``factor`` synthetic copies of every patient of the ``mimic_iv_raw`` file ``source_db``."""
    import duckdb

    report = BuildReport(name=f"mimic_iv_raw_x{factor}", out=out, source=str(source_db), synthetic=True)
    with atomic_output(out) as tmp:
        con = duckdb.connect(str(tmp))
        try:
            con.execute(f"ATTACH '{source_db}' AS demo (READ_ONLY)")
            tables = con.execute("SELECT schema_name, table_name FROM duckdb_tables() WHERE database_name = 'demo' "
                                 "ORDER BY schema_name, table_name").fetchall()
            for schema, table in tables:
                if progress is not None:
                    progress.step(f"{schema}.{table}")
                columns = con.execute("SELECT column_name, data_type FROM duckdb_columns() WHERE database_name = 'demo' AND "
                                      "schema_name = ? AND table_name = ? ORDER BY column_index", [schema, table]).fetchall()
                con.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
                source = f'demo."{schema}"."{table}"'
                if any(c.lower() == "subject_id" for c, _ in columns):
                    exprs = ", ".join(_expression(c, t, "copy.k", seed) for c, t in columns)
                    con.execute(f'CREATE TABLE "{schema}"."{table}" AS SELECT {exprs} FROM {source}, '
                                f"range(1, {factor + 1}) AS copy(k)")
                else:
                    con.execute(f'CREATE TABLE "{schema}"."{table}" AS SELECT * FROM {source}')
                row = con.execute(f'SELECT count(*) FROM "{schema}"."{table}"').fetchone()
                report.tables[f"{schema}.{table}"] = int(row[0]) if row else 0
            con.execute("CREATE TABLE main.synthetic_notice (notice VARCHAR)")
            con.execute("INSERT INTO main.synthetic_notice VALUES (?)", [NOTICE.format(k=factor, seed=seed)])
            con.execute("DETACH demo")
            con.execute("CHECKPOINT")
        finally:
            con.close()
    return report


def _build(source: Path, out: Path, progress: Progress, factor: int) -> BuildReport:
    with tempfile.TemporaryDirectory(prefix="ehrguard-scale-") as scratch:
        demo = Path(scratch) / "mimic_iv_raw.duckdb"
        base = build_raw(source, demo, progress)
        report = scale(demo, out, factor, progress=progress)
        report.warnings = [*base.warnings, *report.warnings]
        return report


def build_x10(source: Path, out: Path, progress: Progress) -> BuildReport:
    return _build(source, out, progress, 10)


def build_x50(source: Path, out: Path, progress: Progress) -> BuildReport:
    return _build(source, out, progress, 50)
