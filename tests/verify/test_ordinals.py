"""The place in an order the question states, on the real MIMIC-IV demo database."""

from __future__ import annotations

import pytest

from ehrguard.verify.checks import repair, run_checks
from ehrguard.verify.checks.ordinals import stated_places

HR = ("SELECT c.charttime FROM chartevents c JOIN d_items d ON c.itemid = d.itemid WHERE c.subject_id = 10000032 "
      "AND d.label = 'heart rate' ORDER BY c.charttime DESC LIMIT 1")
VISITS = "SELECT admittime FROM admissions WHERE subject_id = 10000032 ORDER BY admittime LIMIT 1"


@pytest.mark.parametrize(("question", "places"), [
    ("What was the second most recent heart rate?", [2]), ("the second-highest dose", [2]),
    ("When was he admitted the third time?", [3]), ("the 2nd and the 4th visits", [2, 4]),
    ("How long, in seconds?", []), ("a 30 second interval", []), ("Did he get a second opinion?", []),
    ("one third of the patients", []), ("second-line therapy", []), ("a second-degree burn", []),
])
def test_the_places_a_question_states(question, places):
    assert stated_places(question) == places


def test_an_ordinal_inside_a_name_the_query_looks_for_is_masked():
    question = "How many patients had a malignant neoplasm of lower third of esophagus?"
    assert stated_places(question.replace("lower third of", "the third"), None) == [3]
    sql = "SELECT COUNT(*) FROM d_icd_diagnoses WHERE long_title = 'malignant neoplasm of the third part of duodenum'"
    assert stated_places("How many had malignant neoplasm of the third part of duodenum?", sql) == []


def value(ctx, sql):
    return ctx.db.execute(sql).rows[0][0]


@pytest.mark.parametrize(("question", "wrong"), [
    ("When was the second most recent heart rate of patient 10000032 charted?", HR),
    ("When was patient 10000032 admitted for the second time?", VISITS),
])
def test_the_first_where_the_second_is_asked_is_repaired_with_an_offset(ctx, question, wrong):
    checked = run_checks(question, wrong, ctx)
    [finding] = [f for f in checked.findings if f.check == "missing_place"]
    assert finding.severity == "error" and finding.suggestion == "LIMIT 1 OFFSET 1"
    fixed = repair(checked)
    right = wrong + " OFFSET 1"
    assert fixed is not None and value(ctx, fixed) == value(ctx, right) != value(ctx, wrong)
    assert "missing_place" not in {f.check for f in run_checks(question, right, ctx).findings}


def test_a_place_taken_by_a_rank_or_an_sqlite_offset_is_taken(ctx):
    ranked = ("SELECT drug FROM (SELECT drug, DENSE_RANK() OVER (ORDER BY COUNT(*) DESC) AS r FROM prescriptions "
              "GROUP BY drug) WHERE r = 3")
    assert "missing_place" not in {f.check for f in run_checks("What was the third most prescribed drug?", ranked, ctx).findings}
    comma = VISITS.replace("LIMIT 1", "LIMIT 1, 1")
    assert "missing_place" not in {f.check for f in run_checks("When was patient 10000032 admitted the second time?", comma, ctx).findings}


def test_a_place_asked_of_a_query_with_no_order_is_a_blocking_warning_without_repair(ctx):
    sql = ("SELECT MAX(c.valuenum) FROM chartevents c JOIN d_items d ON c.itemid = d.itemid WHERE c.subject_id = 10000032 "
           "AND d.label = 'heart rate'")
    checked = run_checks("What was the second-highest heart rate of patient 10000032?", sql, ctx)
    [finding] = [f for f in checked.findings if f.check == "missing_place"]
    assert finding.severity == "warning" and finding.suggestion is None
    from ehrguard.verify.offline.policy import blocking, plain_reason

    assert blocking([finding]) and "second" in plain_reason(finding) and "OFFSET" not in plain_reason(finding)


@pytest.mark.parametrize("sql", [
    # the first two, the later of them taken outside; the first left out by a comparison with it
    "SELECT admittime FROM (SELECT admittime FROM admissions WHERE subject_id = 10000032 ORDER BY admittime LIMIT 2) "
    "ORDER BY admittime DESC LIMIT 1",
    "SELECT admittime FROM admissions WHERE subject_id = 10000032 AND hadm_id NOT IN (SELECT hadm_id FROM admissions "
    "WHERE subject_id = 10000032 ORDER BY admittime LIMIT 1) ORDER BY admittime LIMIT 1",
    "SELECT MIN(admittime) FROM admissions WHERE subject_id = 10000032 AND admittime > (SELECT MIN(admittime) "
    "FROM admissions WHERE subject_id = 10000032)",
])
def test_other_ways_to_take_the_second_are_read(ctx, sql):
    checked = run_checks("When was patient 10000032 admitted for the second time?", sql, ctx)
    assert "missing_place" not in {f.check for f in checked.findings}


def test_two_firsts_compared_with_each_other_take_no_second_place(ctx):
    # "last > second to last" written with the same first on both sides: no repair (which side is meant is not known)
    last = f"({HR})"
    checked = run_checks("Was the last heart rate of patient 10000032 charted later than the second to last one?",
                         f"SELECT {last} > {last}", ctx)
    [finding] = [f for f in checked.findings if f.check == "missing_place"]
    assert finding.severity == "error" and finding.suggestion is None
