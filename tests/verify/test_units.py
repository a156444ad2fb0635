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
