"""Session 22 checks from the third blind set's analysed half, on the real MIMIC-IV and eICU demo databases: SQL that
means something else than its writer meant (a minute for a month, a count of NULLs, whole numbers divided, a HAVING on
a row's column), a pattern on the wrong column, visits counted over a join or by the patient's id, groups by another
column than the question's, a visit's first place read from its last, an unnamed one of several visits, a filter on
a category the question never mentions, a total of every item where one is named, staffing.

Each check is shown finding its mistake (and repairing it where the fix is certain, checked by running both), and
staying silent on the right query for the same question.
"""

from __future__ import annotations

import pytest

from ehrguard.verify.checks import run_checks
from tests.verify.checking import checks_of, found_and_repaired, found_not_repaired

# --- SQL that means something else ------------------------------------------------------------------------------------


def test_a_minute_read_for_a_month_is_repaired(ctx):
    year = "FROM icustays WHERE strftime('%Y', intime) = '2100' GROUP BY month"
    found_and_repaired(ctx, "ICU admissions per calendar month in 2100", f"SELECT strftime('%M', intime) AS month, COUNT(*) {year}",
                       f"SELECT strftime('%m', intime) AS month, COUNT(*) {year}", "minutes_for_month")
    assert "minutes_for_month" not in checks_of(ctx, "Charted minutes past the hour of patient 10018081's heart rates",
                                                "SELECT strftime('%M', charttime) FROM chartevents WHERE subject_id = 10018081 AND "
                                                "itemid = 220045")


def test_a_count_of_a_column_kept_null_is_repaired_to_count_rows(ctx):
    found_and_repaired(ctx, "Number of completed admissions with no discharge location documented",
                       "SELECT COUNT(discharge_location) FROM admissions WHERE discharge_location IS NULL AND dischtime IS NOT NULL",
                       "SELECT COUNT(*) FROM admissions WHERE discharge_location IS NULL AND dischtime IS NOT NULL", "count_of_nulls")


def test_whole_numbers_divided_are_repaired_to_a_decimal_division(ctx):
    found_and_repaired(ctx, "Tmax for ICU stay 38197705 in Fahrenheit please",
                       "SELECT MAX(valuenum) * (9 / 5) + 32 FROM chartevents WHERE stay_id = 38197705 AND itemid = 223762",
                       "SELECT MAX(valuenum) * (9.0 / 5) + 32 FROM chartevents WHERE stay_id = 38197705 AND itemid = 223762",
                       "whole_number_quotient")
    # 8 / 4 divides exactly
    assert "whole_number_quotient" not in checks_of(ctx, "half a day in hours", "SELECT 48 / 4")


def test_a_having_on_a_rows_column_moves_to_where(ctx):
    found_and_repaired(ctx, "Which drugs were ordered more than 100 times by the IV route?",
                       "SELECT drug, COUNT(*) FROM prescriptions GROUP BY drug HAVING COUNT(*) > 100 AND route = 'iv'",
                       "SELECT drug, COUNT(*) FROM prescriptions WHERE route = 'iv' GROUP BY drug HAVING COUNT(*) > 100",
                       "having_row_column")
    # beside MIN/MAX, SQLite takes the bare column from the row holding the extreme: the first diagnosis of each patient
    assert "having_row_column" not in checks_of(ctx, "first diagnosis time of each patient",
                                                "SELECT subject_id, charttime FROM diagnoses_icd GROUP BY subject_id "
                                                "HAVING MIN(charttime) = charttime")


def test_a_pattern_on_a_column_where_it_matches_nothing_while_another_matches_is_reported(eicu_ctx):
    # reported, not moved: the other column may hold the word for another reason (a test's name, not its result)
    found_not_repaired(eicu_ctx, "How many flowsheet entries for unit stay 603254?",
                       "SELECT COUNT(*) FROM intakeoutput WHERE patientunitstayid = 603254 AND celllabel LIKE '%flowsheet%'",
                       "SELECT COUNT(*) FROM intakeoutput WHERE patientunitstayid = 603254 AND cellpath LIKE '%flowsheet%'",
                       "pattern_matches_nothing")
    # nothing matches anywhere: a sample database may lack it, and nothing is said
    assert "pattern_matches_nothing" not in checks_of(eicu_ctx, "total input of unit stay 603254",
                                                      "SELECT SUM(cellvaluenumeric) FROM intakeoutput WHERE patientunitstayid = 603254 "
                                                      "AND cellpath LIKE '%input%'")


# --- what is counted and grouped --------------------------------------------------------------------------------------


def test_stays_counted_over_a_join_that_repeats_them_are_counted_once(eicu_ctx):
    join = ("FROM patient p JOIN diagnosis d ON d.patientunitstayid = p.patientunitstayid WHERE p.gender = 'female' "
            "AND d.diagnosisname LIKE '%sepsis%'")
    found_and_repaired(eicu_ctx, "How many female ICU stays carried a sepsis diagnosis?", f"SELECT COUNT(*) {join}",
                       f"SELECT COUNT(DISTINCT p.patientunitstayid) {join}", "count_repeated_rows")


def test_hospital_stays_counted_by_the_patients_id_are_repaired(eicu_ctx):
    found_and_repaired(eicu_ctx, "Admin: how many hospitalisations does the database contain?",
                       "SELECT COUNT(DISTINCT uniquepid) FROM patient", "SELECT COUNT(DISTINCT patienthealthsystemstayid) FROM patient",
                       "counts_other_visit")
    assert "counts_other_visit" not in checks_of(eicu_ctx, "How many patients had more than one hospitalisation?",
                                                 "SELECT COUNT(DISTINCT uniquepid) FROM patient WHERE uniquepid IN (SELECT uniquepid "
                                                 "FROM patient GROUP BY uniquepid HAVING COUNT(DISTINCT patienthealthsystemstayid) > 1)")


def test_groups_by_another_column_than_the_questions_are_repaired(eicu_ctx):
    found_and_repaired(eicu_ctx, "Deaths per hospital (hospital id, number of expired unit stays)",
                       "SELECT wardid, COUNT(*) FROM patient WHERE hospitaldischargestatus = 'expired' GROUP BY wardid",
                       "SELECT hospitalid, COUNT(*) FROM patient WHERE hospitaldischargestatus = 'expired' GROUP BY hospitalid",
                       "grouped_by_other")


def test_where_a_stay_began_read_from_where_it_ended_is_repaired(ctx):
    found_and_repaired(ctx, "How many ICU stays started in the MICU?",
                       "SELECT COUNT(*) FROM icustays WHERE last_careunit = 'medical intensive care unit (micu)'",
                       "SELECT COUNT(*) FROM icustays WHERE first_careunit = 'medical intensive care unit (micu)'", "first_or_last")
    # both ends named: which one the question means is not one word's
    assert "first_or_last" not in checks_of(ctx, "What was the first care unit of patient 10018081's last ICU stay?",
                                            "SELECT first_careunit FROM icustays WHERE subject_id = 10018081 ORDER BY intime DESC LIMIT 1")


# --- which visit, which items, which categories ------------------------------------------------------------------------


@pytest.mark.parametrize(("db", "question", "sql"), [
    ("mimic_iv", "How long was 10020740 in the ICU",
     "SELECT julianday(outtime) - julianday(intime) FROM icustays WHERE subject_id = 10020740 ORDER BY intime LIMIT 1"),
    ("eicu", "How long was patient 006-100497 in the ICU?",
     "SELECT (julianday(unitdischargetime) - julianday(unitadmittime)) * 24 FROM patient WHERE uniquepid = '006-100497' "
     "ORDER BY unitadmittime DESC LIMIT 1"),
])
def test_one_of_several_visits_answered_where_the_question_says_none_is_reported(ctx, eicu_ctx, db, question, sql):
    assert "unstated_visit" in checks_of(ctx if db == "mimic_iv" else eicu_ctx, question, sql)


def test_a_visit_the_question_names_or_a_patients_only_visit_is_no_guess(ctx):
    assert "unstated_visit" not in checks_of(ctx, "How long was 10020740's last ICU stay",
                                             "SELECT julianday(outtime) - julianday(intime) FROM icustays WHERE subject_id = 10020740 "
                                             "ORDER BY intime DESC LIMIT 1")


def test_a_total_of_every_item_where_the_question_names_one_is_reported(ctx):
    found_not_repaired(ctx, "Total foley catheter urine output over ICU stay 32391858 (mL)",
                       "SELECT SUM(value) FROM outputevents WHERE stay_id = 32391858",
                       "SELECT SUM(value) FROM outputevents WHERE stay_id = 32391858 AND itemid = 226559", "missing_item_filter")


@pytest.mark.parametrize(("db", "question", "sql", "flagged"), [
    ("eicu", "How many acetaminophen doses did stay 168726 receive?",
     "SELECT COUNT(*) FROM medication WHERE patientunitstayid = 168726 AND drugname LIKE '%acetaminophen%' AND routeadmin = 'po'", True),
    ("eicu", "How many oral acetaminophen doses did stay 168726 receive?",
     "SELECT COUNT(*) FROM medication WHERE patientunitstayid = 168726 AND drugname LIKE '%acetaminophen%' AND routeadmin = 'po'", False),
    ("mimic_iv", "how many pts got IV vanc this year?",
     "SELECT COUNT(DISTINCT subject_id) FROM prescriptions WHERE drug LIKE '%vancomycin%' AND route = 'iv'", False),
    ("eicu", "how many patients died in hospital",
     "SELECT COUNT(DISTINCT uniquepid) FROM patient WHERE hospitaldischargestatus = 'expired'", False),
    ("mimic_iv", "Has patient 10016742 come to the E.R.?",
     "SELECT COUNT(*) > 0 FROM admissions WHERE subject_id = 10016742 AND admission_location = 'emergency room'", False),
    ("mimic_iv", "Number of patients with E. coli in a urine culture",
     "SELECT COUNT(DISTINCT subject_id) FROM microbiologyevents WHERE org_name = 'escherichia coli' AND spec_type_desc = 'urine'", False),
])
def test_a_category_the_question_never_mentions(ctx, eicu_ctx, db, question, sql, flagged):
    assert ("unasked_filter" in checks_of(ctx if db == "mimic_iv" else eicu_ctx, question, sql)) == flagged


def test_a_category_the_question_never_mentions_is_reported_not_dropped(eicu_ctx):
    doses = "SELECT COUNT(*) FROM medication WHERE patientunitstayid = 168726 AND drugname LIKE '%acetaminophen%'"
    found_not_repaired(eicu_ctx, "How many acetaminophen doses did stay 168726 receive?", f"{doses} AND routeadmin = 'po'", doses,
                       "unasked_filter")
    checked = run_checks("How many acetaminophen doses did stay 168726 receive?", f"{doses} AND routeadmin = 'po'", eicu_ctx)
    assert not any(f.check == "unasked_filter" and f.suggestion for f in checked.findings)


def test_staffing_is_no_record_here(ctx):
    assert "not_in_records" in checks_of(ctx, "Nurse-to-patient ratio in the MICU during December 2100?",
                                         "SELECT COUNT(DISTINCT subject_id) FROM icustays WHERE intime >= '2100-12-01'")


# --- more of what runs and means something else ------------------------------------------------------------------------


def test_a_count_of_a_test_counts_only_the_rows_where_it_holds(eicu_ctx):
    found_and_repaired(eicu_ctx, "Data quality: fraction of medication orders with no stop time",
                       "SELECT COUNT(drugstoptime IS NULL) * 1.0 / COUNT(*) FROM medication",
                       "SELECT SUM(CASE WHEN drugstoptime IS NULL THEN 1 ELSE 0 END) * 1.0 / COUNT(*) FROM medication", "count_of_a_test")


def test_not_in_a_list_holding_null_is_repaired_to_leave_the_nulls_out(ctx):
    blood = "SELECT DISTINCT org_name FROM microbiologyevents WHERE spec_type_desc = 'blood culture' AND org_name IS NOT NULL"
    found_and_repaired(ctx, "Which organisms grew in blood cultures but never in any urine culture?",
                       f"{blood} AND org_name NOT IN (SELECT org_name FROM microbiologyevents WHERE spec_type_desc = 'urine')",
                       f"{blood} AND org_name NOT IN (SELECT org_name FROM microbiologyevents WHERE spec_type_desc = 'urine' "
                       "AND org_name IS NOT NULL)", "not_in_nulls")


def test_a_count_of_a_column_with_gaps_where_rows_are_counted_is_repaired(ctx):
    found_and_repaired(ctx, "Pharmacy: total number of medication orders written for patient 10021487",
                       "SELECT COUNT(stoptime) FROM prescriptions WHERE subject_id = 10021487",
                       "SELECT COUNT(*) FROM prescriptions WHERE subject_id = 10021487", "count_skips_nulls")
    # the question names the column: its filled-in rows are what it counts
    assert "count_skips_nulls" not in checks_of(ctx, "How many of patient 10021487's orders have a stop time?",
                                                 "SELECT COUNT(stoptime) FROM prescriptions WHERE subject_id = 10021487")


def test_the_nth_taken_at_another_offset_is_repaired(ctx):
    labs = "SELECT valuenum FROM labevents WHERE subject_id = 10018081 AND itemid = 50912 ORDER BY charttime DESC"
    found_and_repaired(ctx, "2nd most recent creatinne for patient 10018081", f"{labs} LIMIT 1 OFFSET 2", f"{labs} LIMIT 1 OFFSET 1",
                       "missing_place")


def test_the_first_taken_as_the_lowest_is_repaired_to_the_first_in_time(ctx):
    found_and_repaired(ctx, "First heart rate charted for ICU stay 34100191?",
                       "SELECT MIN(valuenum) FROM chartevents WHERE stay_id = 34100191 AND itemid = 220045",
                       "SELECT valuenum FROM chartevents WHERE stay_id = 34100191 AND itemid = 220045 ORDER BY charttime LIMIT 1",
                       "wrong_order_kind")


def test_only_ended_visits_where_the_question_says_nothing_of_an_end_is_repaired(eicu_ctx):
    december = "FROM patient WHERE unitadmittime >= '2100-12-01' AND unitadmittime < '2101-01-01'"
    found_and_repaired(eicu_ctx, "Number of ICU admissions in December 2100",
                       f"SELECT COUNT(*) {december} AND unitdischargetime IS NOT NULL", f"SELECT COUNT(*) {december}", "unasked_ended")
    found_and_repaired(eicu_ctx, "How many unit stays began from July through December 2100?",
                       "SELECT COUNT(*) FROM patient WHERE (unitdischargetime IS NOT NULL) AND unitadmittime >= '2100-07-01' "
                       "AND unitadmittime < '2101-01-01'",
                       "SELECT COUNT(*) FROM patient WHERE unitadmittime >= '2100-07-01' AND unitadmittime < '2101-01-01'",
                       "unasked_ended")
    # under OR the test is part of another condition: reported, not dropped
    checked = run_checks("Number of ICU admissions in December 2100",
                         f"SELECT COUNT(*) {december} AND (unitdischargetime IS NOT NULL OR hospitaldischargestatus = 'alive')", eicu_ctx)
    assert not any(f.check == "unasked_ended" and f.suggestion for f in checked.findings)
    assert "unasked_ended" not in checks_of(eicu_ctx, "How many patients were discharged from the unit in December 2100?",
                                            f"SELECT COUNT(*) {december} AND unitdischargetime IS NOT NULL")


@pytest.mark.parametrize(("db", "question", "sql", "check"), [
    # a second review's probes: each once a harmful repair or a blocking false alarm
    ("mimic_iv", "how many patients have died?", "SELECT COUNT(dod) FROM patients", "count_skips_nulls"),
    ("mimic_iv", "average number of hospital admissions per patient?",
     "SELECT COUNT(*) * 1.0 / COUNT(DISTINCT subject_id) FROM admissions", "counts_other_visit"),
    ("mimic_iv", "what is the discharge care unit of the initial icu stay of patient 10004235?",
     "SELECT last_careunit FROM icustays WHERE subject_id = 10004235 ORDER BY intime LIMIT 1", "first_or_last"),
    ("mimic_iv", "how many lab tests during admissions of female patients?",
     "SELECT COUNT(*) FROM labevents l JOIN patients p ON l.subject_id = p.subject_id WHERE p.gender = 'f'", "count_repeated_rows"),
    ("eicu", "top 5 drugs by dosage given to patients in hospital 73?",
     "SELECT drugname FROM medication m JOIN patient p ON m.patientunitstayid = p.patientunitstayid WHERE p.hospitalid = 73 "
     "GROUP BY drugname ORDER BY COUNT(*) DESC LIMIT 5", "grouped_by_other"),
    ("mimic_iv", "list the times patient 10007795 had a chart event recorded on may 1 2100",
     "SELECT DISTINCT strftime('%Y-%m-%d %H:%M', charttime) FROM chartevents WHERE subject_id = 10007795 "
     "AND date(charttime) = '2100-05-01'", "minutes_for_month"),
    ("mimic_iv", "how long was patient 10020740 in the icu during hospital admission 25826145?",
     "SELECT julianday(outtime) - julianday(intime) FROM icustays WHERE subject_id = 10020740 AND hadm_id = 25826145 "
     "ORDER BY intime LIMIT 1", "unstated_visit"),
    ("mimic_iv", "how many patients never had an ICU stay",
     "SELECT COUNT(DISTINCT p.subject_id) FROM patients p LEFT JOIN icustays i ON p.subject_id = i.subject_id "
     "WHERE i.subject_id IS NULL", "count_of_nulls"),
    ("eicu", "how many women died in hospital?",
     "SELECT COUNT(DISTINCT uniquepid) FROM patient WHERE gender = 'female' AND hospitaldischargestatus = 'expired'",
     "unasked_filter"),
])
def test_what_the_second_review_found_is_left_alone(ctx, eicu_ctx, db, question, sql, check):
    assert check not in checks_of(ctx if db == "mimic_iv" else eicu_ctx, question, sql)


def test_the_nadir_is_no_first_in_time_to_rewrite(ctx):
    from ehrguard.verify.checks import repair, run_checks

    checked = run_checks("what was the nadir heart rate of patient 10004720 in icu stay 35009126, their first icu stay?",
                         "SELECT MIN(valuenum) FROM chartevents WHERE stay_id = 35009126 AND itemid = 220045", ctx)
    assert repair(checked) is None


def test_a_nadir_is_the_lowest_and_a_day_of_a_month_is_no_place(ctx):
    # "nadir" asks for the lowest value: MIN is right, whatever "first" says of the stay
    assert "wrong_order_kind" not in checks_of(ctx, "what was the nadir heart rate of patient 10004720 in icu stay 35009126, "
                                               "their first icu stay?",
                                               "SELECT MIN(valuenum) FROM chartevents WHERE stay_id = 35009126 AND itemid = 220045")
    # "december 3rd" is a date; the place asked is the second
    assert "missing_place" not in checks_of(ctx, "second most recent heart rate of patient 10004720 on december 3rd 2100",
                                            "SELECT valuenum FROM chartevents WHERE subject_id = 10004720 AND itemid = 220045 AND "
                                            "date(charttime) = '2100-12-03' ORDER BY charttime DESC LIMIT 1 OFFSET 1")
    assert "missing_place" in checks_of(ctx, "what was the third heart rate of patient 10004720?",
                                        "SELECT valuenum FROM chartevents WHERE subject_id = 10004720 AND itemid = 220045 "
                                        "ORDER BY charttime LIMIT 1")


def test_an_ordinal_visit_is_one_that_has_ended(ctx):
    """"the initial hospital visit", "the 1st": EHRSQL reads a visit named by its place as one that has ended, so the
    test of its end is not dropped (a review found it dropped: no rows became 'urgent')."""
    for question in ("what was the admission type of patient 10004733 on the initial hospital visit?",
                     "what was the admission type of patient 10004733 on the 1st hospital visit?"):
        assert "unasked_ended" not in checks_of(ctx, question, "SELECT admission_type FROM admissions WHERE subject_id = 10004733 "
                                                "AND dischtime IS NOT NULL ORDER BY admittime ASC LIMIT 1"), question
