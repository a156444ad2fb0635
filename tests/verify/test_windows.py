"""The period a question states against the period the query keeps, in wordings and SQL forms of our own: the
question side read alone, the query side asked of the real demo databases (SQLite, and DuckDB in MIMIC's layout)."""

from __future__ import annotations

from datetime import datetime

import pytest

from ehrguard.verify import verify
from ehrguard.verify.api import database_context
from ehrguard.verify.checks import repair, run_checks
from ehrguard.verify.checks.windows import stated_window

NOW = "2100-12-31 23:59:00"


def starts(question: str) -> set[datetime | None]:
    window = stated_window(question, NOW)
    assert window is not None, question
    return {start for start, _ in window.readings}


@pytest.mark.parametrize(("question", "start", "end"), [
    ("How many patients were admitted in the past 30 days?", datetime(2100, 12, 1, 23, 59), None),
    ("lab tests over the previous 24 hours", datetime(2100, 12, 30, 23, 59), None),
    ("How many admissions were there during March 2100?", datetime(2100, 3, 1), datetime(2100, 4, 1)),
    ("Which drugs were ordered on 2100-03-05?", datetime(2100, 3, 5), datetime(2100, 3, 6)),
    ("heart rates recorded on March 5th, 2100", datetime(2100, 3, 5), datetime(2100, 3, 6)),
    ("How many admissions before May 2100?", None, datetime(2100, 5, 1)),
    ("How many admissions were there between 2098 and 2099?", datetime(2098, 1, 1), datetime(2100, 1, 1)),
    ("cultures taken yesterday", datetime(2100, 12, 30), datetime(2100, 12, 31)),
    ("What was the intake on the 30th of this month?", datetime(2100, 12, 30), datetime(2100, 12, 31)),
    ("What was given on April 19 of last year?", datetime(2099, 4, 19), datetime(2099, 4, 20)),
])
def test_a_stated_period_is_read_with_its_plain_meaning(question, start, end):
    window = stated_window(question, NOW)
    assert window is not None and (start, end) in window.readings


def test_a_period_has_every_reading_a_person_may_mean():
    # "the past year": the twelve months up to now, from the start of that day, or the previous calendar year
    assert {datetime(2099, 12, 31, 23, 59), datetime(2099, 12, 31), datetime(2099, 1, 1)} <= starts("labs in the past year")
    # SQLite moves 22 months back from the 31st into March; Python and PostgreSQL stop at February's end
    assert {datetime(2099, 2, 28, 23, 59), datetime(2099, 3, 3, 23, 59)} <= starts("drugs given in the last 22 months")
    # 03/04/2100 is the 4th of March or the 3rd of April
    assert {datetime(2100, 3, 4), datetime(2100, 4, 3)} <= starts("since 03/04/2100")
    # "until May" takes May in, "before May" does not
    assert (None, datetime(2100, 6, 1)) in stated_window("admissions until May 2100", NOW).readings
    assert (None, datetime(2100, 6, 1)) not in stated_window("admissions before May 2100", NOW).readings


@pytest.mark.parametrize("question", [
    "What was the heart rate in the first 24 hours of the stay?",  # tied to an event, not to now
    "What was the heart rate in the last 3 days of her admission?",
    "What did the patient get in her last 2 days?",
    "What was the intake on the 30th?",  # a day this reading does not place
    "What was given on April 19?",
    "How many admissions in 2099 and how many since March 2100?",  # two periods
    "Was a dose of 2000 mg given?",  # a number, not a year
    "What was the last heart rate of patient 10000032?",  # an end of an order, not a period
])
def test_no_period_is_read_where_none_is_stated_plainly(question):
    assert stated_window(question, NOW) is None


def test_relative_periods_need_the_databases_own_now():
    assert stated_window("admissions in the past 30 days", None) is None
    assert stated_window("admissions in March 2150", None) is not None


def findings(ctx, question, sql):
    return {f.check for f in run_checks(question, sql, ctx).findings}


@pytest.mark.parametrize(("question", "sql"), [
    ("How many patients were admitted in the past 30 days?",
     "SELECT COUNT(DISTINCT subject_id) FROM admissions WHERE admittime >= datetime('2100-12-31 23:59:00', '-30 day')"),
    ("How many patients were admitted in the past 30 days?",  # a month for 30 days, and whole days
     "SELECT COUNT(DISTINCT subject_id) FROM admissions WHERE date(admittime) >= date('2100-12-31 23:59:00', '-1 month')"),
    ("How many patients were admitted in the past year?",
     "SELECT COUNT(DISTINCT subject_id) FROM admissions WHERE julianday('2100-12-31 23:59:00') - julianday(admittime) <= 365"),
    ("How many admissions were there in March 2100?",  # the 31st's later hours left out by a date-only bound: tolerated
     "SELECT COUNT(*) FROM admissions WHERE admittime BETWEEN '2100-03-01' AND '2100-03-31'"),
    ("How many admissions were there in March 2100?", "SELECT COUNT(*) FROM admissions WHERE admittime LIKE '2100-03%'"),
    ("How many admissions were there before 2100?", "SELECT COUNT(*) FROM admissions WHERE admittime < '2100-01-01'"),
    ("How many admissions were there between 2098 and 2099?",
     "SELECT COUNT(*) FROM admissions WHERE strftime('%Y', admittime) BETWEEN '2098' AND '2099'"),
])
def test_the_stated_period_in_any_sql_form_is_not_a_finding(ctx, question, sql):
    assert not findings(ctx, question, sql) & {"wrong_time_window", "missing_time_window"}


@pytest.mark.parametrize(("question", "wrong", "right"), [
    ("How many patients were admitted in the past 30 days?",
     "SELECT COUNT(DISTINCT subject_id) FROM admissions WHERE admittime >= datetime('2100-12-31 23:59:00', '-3 day')",
     "SELECT COUNT(DISTINCT subject_id) FROM admissions WHERE admittime >= '2100-12-01 23:59:00'"),
    ("How many lab tests were done in the past year?",
     "SELECT COUNT(*) FROM labevents WHERE julianday('2100-12-31 23:59:00') - julianday(charttime) <= 30",
     "SELECT COUNT(*) FROM labevents WHERE charttime >= '2099-12-31 23:59:00'"),
    ("How many admissions were there in March 2100?",
     "SELECT COUNT(*) FROM admissions WHERE admittime LIKE '2100-04%'",
     "SELECT COUNT(*) FROM admissions WHERE admittime >= '2100-03-01' AND admittime < '2100-04-01'"),
    ("How many prescriptions were started since 2100?",
     "SELECT COUNT(*) FROM prescriptions WHERE starttime < '2100-01-01'",
     "SELECT COUNT(*) FROM prescriptions WHERE starttime >= '2100-01-01'"),
    # a period relative to now written as a literal month or year: this month is December 2100, not November
    ("How many patients were admitted this month?",
     "SELECT COUNT(DISTINCT subject_id) FROM admissions WHERE strftime('%Y-%m', admittime) = '2100-11'",
     "SELECT COUNT(DISTINCT subject_id) FROM admissions WHERE strftime('%Y-%m', admittime) = '2100-12'"),
    ("How many patients were admitted in the first half of 2100?",
     "SELECT COUNT(DISTINCT subject_id) FROM admissions WHERE strftime('%Y', admittime) = '2100'",
     "SELECT COUNT(DISTINCT subject_id) FROM admissions WHERE admittime < '2100-07-01' AND admittime >= '2100-01-01'"),
])
def test_another_period_is_an_error_repaired_to_the_stated_one(ctx, question, wrong, right):
    checked = run_checks(question, wrong, ctx)
    assert "wrong_time_window" in {f.check for f in checked.findings}
    fixed = repair(checked)
    assert fixed is not None
    assert sorted(ctx.db.execute(fixed).rows) == sorted(ctx.db.execute(right).rows) != sorted(ctx.db.execute(wrong).rows)
    assert "wrong_time_window" not in findings(ctx, question, fixed)


def test_a_month_without_its_year_is_another_period(ctx):
    # every admission of the demo in March is in 2100, so the answer is the same here; the query is still wrong
    assert "wrong_time_window" in findings(ctx, "How many admissions were there in March 2100?",
                                           "SELECT COUNT(*) FROM admissions WHERE strftime('%m', admittime) = '03'")


def test_a_period_the_query_never_keeps_is_a_finding(ctx):
    question = "How many lab tests were done in the past 30 days?"
    assert "missing_time_window" in findings(ctx, question, "SELECT COUNT(*) FROM labevents")
    assert "missing_time_window" not in findings(
        ctx, question, "SELECT COUNT(*) FROM labevents WHERE charttime >= datetime('2100-12-31 23:59:00', '-30 day')")
    # a period kept through a derived table's alias still counts as kept (the probe cannot read it: no finding)
    derived = ("SELECT COUNT(*) FROM (SELECT charttime AS t FROM labevents) AS x "
               "WHERE x.t >= datetime('2100-12-31 23:59:00', '-3 day')")
    assert not findings(ctx, question, derived) & {"wrong_time_window", "missing_time_window"}
    # an age computed from the birth date reads a time too
    assert "missing_time_window" not in findings(ctx, "How old was patient 10000032 in 2100?",
                                                 "SELECT 2100 - CAST(strftime('%Y', dob) AS INT) FROM patients WHERE subject_id = 10000032")


def test_a_period_kept_under_or_is_left_alone(ctx):
    sql = ("SELECT COUNT(*) FROM admissions WHERE admittime >= datetime('2100-12-31 23:59:00', '-3 day') "
           "OR admission_type = 'elective'")
    assert "wrong_time_window" not in findings(ctx, "How many admissions were there in the past 30 days?", sql)


def test_the_verdict_corrects_the_period_and_says_so(ctx):
    verdict = verify("How many lab tests were done in the past year?",
                     "SELECT COUNT(*) FROM labevents WHERE julianday('2100-12-31 23:59:00') - julianday(charttime) <= 30",
                     db=ctx, method="offline")
    assert verdict.action == "correct" and "another period" in verdict.message
    assert ctx.db.execute(verdict.sql).rows == ctx.db.execute(
        "SELECT COUNT(*) FROM labevents WHERE charttime >= datetime('2100-12-31 23:59:00', '-1 year')").rows


def test_dates_on_duckdb_timestamps_in_mimics_layout(mimic_iv_raw_db):
    ctx = database_context(mimic_iv_raw_db, "mimic_iv_raw")
    question = "How many admissions were there in March 2148?"
    for right in ("SELECT COUNT(*) FROM mimiciv_hosp.admissions WHERE admittime >= '2148-03-01' AND admittime < '2148-04-01'",
                  "SELECT COUNT(*) FROM mimiciv_hosp.admissions WHERE EXTRACT(YEAR FROM admittime) = 2148 "
                  "AND EXTRACT(MONTH FROM admittime) = 3"):
        assert "wrong_time_window" not in findings(ctx, question, right)
    wrong = "SELECT COUNT(*) FROM mimiciv_hosp.admissions WHERE EXTRACT(YEAR FROM admittime) = 2148"
    checked = run_checks(question, wrong, ctx)
    assert "wrong_time_window" in {f.check for f in checked.findings}
    fixed = repair(checked)
    assert fixed is not None
    assert ctx.db.execute(fixed).rows == ctx.db.execute(
        "SELECT COUNT(*) FROM mimiciv_hosp.admissions WHERE strftime(admittime, '%Y-%m') = '2148-03'").rows


def test_a_date_that_names_a_visit_looked_up_by_its_id_is_no_missing_period(ctx):
    question = "Which care units did patient 10004235 pass through during the admission that started on 2100-03-19?"
    sql = "SELECT DISTINCT careunit FROM transfers WHERE hadm_id = 24181354"
    assert "missing_time_window" not in findings(ctx, question, sql)
    assert "missing_time_window" in findings(ctx, question, "SELECT DISTINCT careunit FROM transfers WHERE subject_id = 10004235")


def test_a_date_and_a_time_of_day_name_one_minute(ctx):
    question = "What was patient 10000032's heart rate at 2100-08-12 18:00?"
    assert stated_window(question, NOW).readings == ((datetime(2100, 8, 12, 18), datetime(2100, 8, 12, 18, 1)),)
    exact = "SELECT valuenum FROM chartevents WHERE subject_id = 10000032 AND itemid = 220045 AND charttime = '2100-08-12 18:00:00'"
    assert "wrong_time_window" not in findings(ctx, question, exact)
    assert "wrong_time_window" in findings(ctx, question, exact.replace("18:00:00", "19:00:00"))
    assert stated_window("What was the heart rate at 18:00 on 2100-08-12?", NOW) is None  # a time this reading does not place


def test_a_span_before_or_after_a_date_reaches_from_it():
    assert (datetime(2100, 8, 13), datetime(2100, 8, 27)) in stated_window("labs in the 2 weeks before 2100-08-27", NOW).readings
    assert (datetime(2100, 8, 27), datetime(2100, 8, 30)) in stated_window("drugs in the 3 days after 2100-08-27", NOW).readings


@pytest.mark.parametrize(("question", "start", "end"), [
    ("drugs given since last month", datetime(2100, 11, 1), None),
    ("drugs given since yesterday", datetime(2100, 12, 30), None),
    ("labs drawn 3 days ago", datetime(2100, 12, 28), datetime(2100, 12, 29)),
    ("admissions in the current year", datetime(2100, 1, 1), None),
    ("heart rate on 03/05/this year", datetime(2100, 3, 5), datetime(2100, 3, 6)),
    # halves and quarters of a year
    ("admissions in the first half of 2100", datetime(2100, 1, 1), datetime(2100, 7, 1)),
    ("admissions in the last quarter of 2100", datetime(2100, 10, 1), datetime(2101, 1, 1)),
    ("admissions in Q2 2100", datetime(2100, 4, 1), datetime(2100, 7, 1)),
    ("admissions in 2099 Q3", datetime(2099, 7, 1), datetime(2099, 10, 1)),
])
def test_more_ways_to_name_a_period(question, start, end):
    window = stated_window(question, NOW)
    assert window is not None and (start, end) in window.readings
    if "since" in question:  # "since yesterday" is not yesterday alone
        assert all(e is None for _, e in window.readings)


@pytest.mark.parametrize("question", ["labs in the past 9999 years", "admissions between 2199 and 1900", "drugs in the last 0 days"])
def test_a_period_no_calendar_holds_is_not_read(question):
    assert stated_window(question, NOW) is None


def test_a_period_on_the_machine_clock_is_read_with_the_databases_now(ctx):
    question = "How many prescriptions were written in the past 30 days?"
    # the clock anchored, the period is the stated one: the now check speaks, not this one
    clock = "SELECT COUNT(*) FROM prescriptions WHERE starttime >= datetime('now', '-30 day')"
    assert "wrong_time_window" not in findings(ctx, question, clock)
    # anchored, it still leaves out the last day (date() cuts 23:59 to midnight): another period than "the past 2 days"
    cut = "SELECT COUNT(*) FROM prescriptions WHERE starttime BETWEEN date('now', '-2 day') AND date('now')"
    assert "wrong_time_window" in findings(ctx, "How many prescriptions were written in the past 2 days?", cut)
