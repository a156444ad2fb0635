"""A duration in the unit the question asks for, on the real MIMIC-IV and eICU demo databases."""

from __future__ import annotations

import pytest

from ehrguard.verify.checks import repair, run_checks
from ehrguard.verify.checks.units import asked_unit

FIRST_STAY = "FROM admissions WHERE subject_id = 10000032 ORDER BY admittime LIMIT 1"
SINCE = "FROM admissions WHERE subject_id = 10018081 AND dischtime IS NULL"


def value(ctx, sql):
    return ctx.db.execute(sql).rows[0][0]


@pytest.mark.parametrize(("question", "unit"), [
    ("How many days did the stay last?", "day"), ("How long was the stay in hours?", "hour"),
    ("Length of stay (minutes) of patient 1?", "minute"), ("How long was the stay?", None),
    ("How many hours after admission, and how many days in all?", None),  # two units: not read
    ("How many patients were admitted in the past 30 days?", None),  # a period, not a duration's unit
])
def test_the_unit_a_question_asks_a_duration_in(question, unit):
    assert asked_unit(question) == unit


@pytest.mark.parametrize(("question", "wrong", "right"), [
    ("How many days did the first hospital stay of patient 10000032 last?",
     f"SELECT (julianday(dischtime) - julianday(admittime)) * 24 {FIRST_STAY}",
     f"SELECT julianday(dischtime) - julianday(admittime) {FIRST_STAY}"),
    ("How long was the first hospital stay of patient 10000032 in hours?",
     f"SELECT julianday(dischtime) - julianday(admittime) {FIRST_STAY}",
     f"SELECT 24 * (julianday(dischtime) - julianday(admittime)) {FIRST_STAY}"),
    ("How many hours has it been since patient 10018081 was admitted to the current hospital visit?",
     f"SELECT 1 * (strftime('%J', '2100-12-31 23:59:00') - strftime('%J', admittime)) {SINCE}",
     f"SELECT 24 * (strftime('%J', '2100-12-31 23:59:00') - strftime('%J', admittime)) {SINCE}"),
    ("How many minutes did the first hospital stay of patient 10000032 last?",
     f"SELECT (strftime('%s', dischtime) - strftime('%s', admittime)) / 3600.0 {FIRST_STAY}",
     f"SELECT (strftime('%s', dischtime) - strftime('%s', admittime)) / 60.0 {FIRST_STAY}"),
])
def test_a_duration_in_another_unit_is_rescaled(ctx, question, wrong, right):
    assert value(ctx, wrong) != pytest.approx(value(ctx, right))
    checked = run_checks(question, wrong, ctx)
    finding = next(f for f in checked.findings if f.check == "wrong_duration_unit")
    assert finding.severity == "error" and finding.suggestion
    fixed = repair(checked)
    assert fixed is not None and value(ctx, fixed) == pytest.approx(value(ctx, right))
    assert "wrong_duration_unit" not in {f.check for f in run_checks(question, right, ctx).findings}


def test_an_average_duration_in_eicu_is_rescaled_through_the_aggregate(eicu_ctx):
    question = "What was the average length of the unit stay in days?"
    wrong = "SELECT AVG(julianday(unitdischargetime) - julianday(unitadmittime)) * 24 FROM patient"
    right = "SELECT AVG(julianday(unitdischargetime) - julianday(unitadmittime)) FROM patient"
    fixed = repair(run_checks(question, wrong, eicu_ctx))
    assert fixed is not None and value(eicu_ctx, fixed) == pytest.approx(value(eicu_ctx, right))


def test_a_scale_that_is_not_a_number_or_a_unit_is_left_alone(ctx):
    # divided by the number of stays, or scaled by a factor no unit has: nothing is read, nothing said
    for sql in (f"SELECT (julianday(dischtime) - julianday(admittime)) / COUNT(*) {FIRST_STAY}",
                f"SELECT (julianday(dischtime) - julianday(admittime)) * 3 {FIRST_STAY}"):
        assert "wrong_duration_unit" not in {f.check for f in run_checks("How many hours did it last?", sql, ctx).findings}


FIRST_DAY = ("SELECT COUNT(*) FROM chartevents c JOIN icustays i ON c.stay_id = i.stay_id WHERE i.stay_id = 30757476 "
             "AND c.itemid = 220045 AND c.charttime <= ")


@pytest.mark.parametrize(("wrong", "right"), [
    (f"{FIRST_DAY}datetime(i.intime, '+24 days')", f"{FIRST_DAY}datetime(i.intime, '+24 hours')"),
    (f"{FIRST_DAY}datetime(i.intime, '+24 day')", f"{FIRST_DAY}datetime(i.intime, '+1 day')"),
])
def test_a_span_the_question_states_written_in_another_unit_is_repaired(ctx, wrong, right):
    from tests.verify.checking import found_and_repaired

    found_and_repaired(ctx, "How many heart rates were charted in the first 24 hours of ICU stay 30757476?", wrong, right,
                       "wrong_span_unit")


def test_a_span_in_another_unit_on_duckdb_and_what_is_left_alone(mimic_iv_raw_db):
    from ehrguard.db import open_database
    from ehrguard.verify.methods import DatabaseContext
    from tests.verify.checking import checks_of, found_and_repaired

    raw = DatabaseContext(open_database(mimic_iv_raw_db), "mimic_iv_raw", mimic_iv_raw_db)
    base = ("SELECT COUNT(*) FROM mimiciv_icu.chartevents c JOIN mimiciv_icu.icustays i ON c.stay_id = i.stay_id "
            "WHERE i.stay_id = 31316840 AND c.itemid = 220045 AND c.charttime <= i.intime + ")
    question = "Heart rates charted in the first 24 hours of ICU stay 31316840?"
    found_and_repaired(raw, question, f"{base}INTERVAL 24 DAY", f"{base}INTERVAL 24 HOUR", "wrong_span_unit")
    found_and_repaired(raw, question, f"{base}INTERVAL '24 days'", f"{base}INTERVAL '24 hours'", "wrong_span_unit")
    # the same span in other words (1 day), a number the question states in two units, or in none: left alone
    assert "wrong_span_unit" not in checks_of(raw, question, f"{base}INTERVAL 1 DAY")
    assert "wrong_span_unit" not in checks_of(raw, "Heart rates in the first 24 hours or 24 days of stay 31316840?",
                                              f"{base}INTERVAL 24 DAY")
    assert "wrong_span_unit" not in checks_of(raw, "Heart rates of ICU stay 31316840 before day 24?", f"{base}INTERVAL 24 DAY")


def test_a_unit_named_by_what_the_query_reads_against_the_unit_asked(ctx, mimic_iv_raw_db):
    from ehrguard.db import open_database
    from ehrguard.verify.methods import DatabaseContext
    from tests.verify.checking import checks_of, found_and_repaired

    celsius = ("SELECT MAX(valuenum) FROM chartevents WHERE subject_id = 10007818 AND itemid IN "
               "(SELECT itemid FROM d_items WHERE label = 'temperature celsius')")
    assert "wrong_measure_unit" in checks_of(ctx, "Highest temperature of patient 10007818 in degrees Fahrenheit?", celsius)
    assert "wrong_measure_unit" not in checks_of(ctx, "Highest temperature of patient 10007818 in degrees Celsius?", celsius)
    raw = DatabaseContext(open_database(mimic_iv_raw_db), "mimic_iv_raw", mimic_iv_raw_db)
    weights = ("FROM mimiciv_hosp.omr WHERE subject_id = 10003400 AND result_name = 'Weight (Lbs)' "
               "ORDER BY chartdate DESC, seq_num DESC LIMIT 1")
    found_and_repaired(raw, "Latest outpatient weight of patient 10003400 in kg?", f"SELECT CAST(result_value AS DOUBLE) {weights}",
                       f"SELECT CAST(result_value AS DOUBLE) / 2.204623 {weights}", "wrong_measure_unit")
    assert "wrong_measure_unit" not in checks_of(raw, "Latest outpatient weight of patient 10003400 in lbs?",
                                                 f"SELECT CAST(result_value AS DOUBLE) {weights}")


def test_a_duration_column_compared_with_a_span_in_another_unit(mimic_iv_raw_db):
    from ehrguard.db import open_database
    from ehrguard.verify.methods import DatabaseContext
    from tests.verify.checking import checks_of, found_and_repaired

    raw = DatabaseContext(open_database(mimic_iv_raw_db), "mimic_iv_raw", mimic_iv_raw_db)
    # the unit is read from the data: los is outtime - intime in days
    found_and_repaired(raw, "How many ICU stays lasted more than 36 hours?", "SELECT COUNT(*) FROM mimiciv_icu.icustays WHERE los > 36",
                       "SELECT COUNT(*) FROM mimiciv_icu.icustays WHERE los > 1.5", "wrong_span_unit")
    assert "wrong_span_unit" not in checks_of(raw, "How many ICU stays lasted more than 3 days?",
                                              "SELECT COUNT(*) FROM mimiciv_icu.icustays WHERE los > 3")
    # a number column that is no duration (an id) has no unit to compare
    assert "wrong_span_unit" not in checks_of(raw, "ICU stays of more than 36 hours with an id over 36?",
                                              "SELECT COUNT(*) FROM mimiciv_icu.icustays WHERE stay_id > 36")


def test_what_the_span_and_duration_checks_leave_alone(ctx, mimic_iv_raw_db):
    """An independent review's probes, each once a harmful repair or a false alarm."""
    from ehrguard.db import open_database
    from ehrguard.verify.methods import DatabaseContext
    from tests.verify.checking import checks_of

    # the number is also a day's ordinal ("on day 6"); a span that moves a date the query writes (the end of a day)
    assert "wrong_span_unit" not in checks_of(ctx, "Patients whose heart rate was above 100 for 6 hours on day 6 of their ICU stay?",
                                              "SELECT COUNT(DISTINCT c.subject_id) FROM chartevents c JOIN icustays i ON c.stay_id = "
                                              "i.stay_id WHERE c.itemid = 220045 AND c.valuenum > 100 AND c.charttime BETWEEN "
                                              "datetime(i.intime, '+5 days') AND datetime(i.intime, '+6 days')")
    assert "wrong_span_unit" not in checks_of(ctx, "Patients admitted from 2100-12-20 to 2100-12-26 with a lab within 1 hour of admission?",
                                              "SELECT COUNT(DISTINCT a.subject_id) FROM admissions a JOIN labevents l ON a.hadm_id = "
                                              "l.hadm_id WHERE l.charttime BETWEEN a.admittime AND datetime(a.admittime, '+1 hour') "
                                              "AND a.admittime >= '2100-12-20' AND a.admittime < datetime('2100-12-26', '+1 day')")
    # a value column with a unit column beside it keeps several units (procedureevents.value: min, hour, day)
    raw = DatabaseContext(open_database(mimic_iv_raw_db), "mimic_iv_raw", mimic_iv_raw_db)
    assert "wrong_span_unit" not in checks_of(raw, "How many plasma pheresis procedures lasted more than 2 hours?",
                                              "SELECT COUNT(*) FROM mimiciv_icu.procedureevents p JOIN mimiciv_icu.d_items d ON "
                                              "p.itemid = d.itemid WHERE d.label = 'Plasma Pheresis.' AND p.value > 2")
