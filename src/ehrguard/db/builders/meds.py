"""chartevents from the MEDS stand-in, shared by the ``mimic_iv`` and ``mimic_iv_raw`` builders.

The demo copy here lacks ``icu/chartevents.csv.gz``; ``derived_meds/`` holds every one of its
rows in MEDS form (``code`` = ``LAB//<itemid>//<valueuom>``, ``time``, float32 ``value``,
``subject_id``) but without ``hadm_id``/``stay_id``. They are recovered from the ICU stays: the
stay whose [intime, outtime] window holds the time, else the patient's nearest stay.
"""

from __future__ import annotations

from pathlib import Path

MEDS_EVENTS = Path("derived_meds") / "mimic_iv_demo_meds_events.parquet"


def meds_events(source: Path) -> Path | None:
    """The MEDS stand-in inside a MIMIC-IV demo folder, if present."""
    path = source / MEDS_EVENTS
    return path if path.is_file() else None


def chartevents_sql(icustays: str, item_filter: str) -> str:
    """A query over the MEDS file (its one ``?`` parameter) yielding chartevents rows.

    Args:
        icustays: a relation with ``subject_id, hadm_id, stay_id, intime, outtime`` (timestamps).
        item_filter: a predicate on ``itemid`` choosing the chartevents items to keep.

    Columns: ``subject_id, hadm_id, stay_id, charttime, itemid, valuenum, valueuom, outside``,
    where ``valuenum`` is the float32 value at its shortest decimal, ``valueuom`` is NULL when MEDS
    has none (``UNK``), and ``outside`` tells that no stay window held the time.
    Rows are ordered by ``subject_id, stay_id, charttime, itemid``.
    """
    return f"""
        WITH ev AS (
            SELECT row_number() OVER () AS n, subject_id, CAST(time AS TIMESTAMP) AS charttime, itemid,
                   nullif(nullif(split_part(code, '//', 3), 'UNK'), '') AS valueuom,
                   CAST(CAST(CAST("value" AS FLOAT) AS VARCHAR) AS DOUBLE) AS valuenum
            FROM (SELECT *, TRY_CAST(split_part(code, '//', 2) AS BIGINT) AS itemid FROM read_parquet(?) WHERE code LIKE 'LAB//%')
            WHERE {item_filter}
        ),
        ranked AS (
            SELECT ev.*, s.hadm_id, s.stay_id,
                   ev.charttime NOT BETWEEN s.intime AND coalesce(s.outtime, TIMESTAMP '9999-12-31') AS outside,
                   row_number() OVER (PARTITION BY ev.n ORDER BY
                       CASE WHEN ev.charttime BETWEEN s.intime AND coalesce(s.outtime, TIMESTAMP '9999-12-31') THEN 0
                            WHEN ev.charttime < s.intime THEN epoch(s.intime) - epoch(ev.charttime)
                            ELSE epoch(ev.charttime) - epoch(s.outtime) END, s.stay_id) AS k
            FROM ev JOIN {icustays} s USING (subject_id)
        )
        SELECT subject_id, hadm_id, stay_id, charttime, itemid, valuenum, valueuom, outside
        FROM ranked WHERE k = 1 ORDER BY subject_id, stay_id, charttime, itemid
    """
