"""Session 22 checks, on the real MIMIC-IV demo database: an item read by its code where the question names another
item of the same dictionary, and a list of names that repeats each name once per record.

Each check is shown finding its mistake (and repairing it where the fix is certain, checked by running both), and
staying silent on the right query for the same question.
"""

from __future__ import annotations

import pytest

from ehrguard.verify.checks import run_checks
from tests.verify.checking import checks_of, found_and_repaired, found_not_repaired

# --- the code of another item ---------------------------------------------------------------------------------------


def test_a_code_whose_name_is_not_the_one_asked_for_is_repaired_to_the_named_items_code(ctx):
    # 220210 is the respiratory rate; the heart rate is 220045 (d_items), and chartevents has rows of it
    found_and_repaired(ctx, "latest heart rate of patient 10018081",
                       "SELECT valuenum FROM chartevents WHERE subject_id = 10018081 AND itemid = 220210 ORDER BY charttime DESC LIMIT 1",
                       "SELECT valuenum FROM chartevents WHERE subject_id = 10018081 AND itemid = 220045 ORDER BY charttime DESC LIMIT 1",
                       "wrong_code")
    # a lab item: 51222 is hemoglobin, the question asks for the hematocrit (a name five lab items share: reported, not
    # repaired, since which of them was meant is not certain)
    checked = run_checks("Latest hematocrit on patient 10004733?",
                         "SELECT valuenum FROM labevents WHERE subject_id = 10004733 AND itemid = 51222 ORDER BY charttime DESC LIMIT 1",
                         ctx)
    finding = next(f for f in checked.findings if f.check == "wrong_code")
    assert "hemoglobin" in finding.message and "hematocrit" in finding.message


@pytest.mark.parametrize(("question", "sql"), [
    # the code's own name is in the question
    ("What was the last respiratory rate of patient 10018081?",
     "SELECT valuenum FROM chartevents WHERE subject_id = 10018081 AND itemid = 220210 ORDER BY charttime DESC LIMIT 1"),
    # two items, each named: the heart rate is read by the other comparison
    ("Heart rate of patient 10018081 when the respiratory rate was last charted",
     "SELECT valuenum FROM chartevents WHERE subject_id = 10018081 AND itemid IN (220045, 220210) ORDER BY charttime DESC LIMIT 2"),
    # a name the question gives in other words ("hr") names no item: nothing to compare
    ("latest hr of patient 10018081",
     "SELECT valuenum FROM chartevents WHERE subject_id = 10018081 AND itemid = 220045 ORDER BY charttime DESC LIMIT 1"),
])
def test_codes_whose_items_the_question_names_or_does_not_name_are_left_alone(ctx, question, sql):
    assert "wrong_code" not in checks_of(ctx, question, sql)


# --- each name once --------------------------------------------------------------------------------------------------

LAST_VISIT = "(SELECT hadm_id FROM admissions WHERE subject_id = 10018081 ORDER BY admittime DESC LIMIT 1)"


def test_a_list_of_names_read_once_per_record_is_repaired_to_each_name_once(ctx):
    found_and_repaired(ctx, "Which drugs were prescribed to patient 10018081 in their last hospital visit?",
                       f"SELECT drug FROM prescriptions WHERE hadm_id = {LAST_VISIT}",
                       f"SELECT DISTINCT drug FROM prescriptions WHERE hadm_id = {LAST_VISIT}", "repeated_names")


@pytest.mark.parametrize(("question", "sql"), [
    # how often: the repeats are the answer
    ("List each time a drug was prescribed to patient 10018081 in their last hospital visit",
     f"SELECT drug FROM prescriptions WHERE hadm_id = {LAST_VISIT}"),
    # not names: doses repeat because they were given again
    ("What doses of insulin were prescribed to patient 10018081 in their last hospital visit?",
     f"SELECT dose_val_rx FROM prescriptions WHERE hadm_id = {LAST_VISIT} AND drug = 'insulin'"),
    # the names with when they were given: rows, not a list of names
    ("Which drugs were prescribed to patient 10018081 in their last hospital visit, and when?",
     f"SELECT drug, starttime FROM prescriptions WHERE hadm_id = {LAST_VISIT}"),
])
def test_lists_whose_repeats_mean_something_are_left_alone(ctx, question, sql):
    assert "repeated_names" not in checks_of(ctx, question, sql)


# --- the specimen a lab value was measured in ----------------------------------------------------------------------


def test_a_lab_item_of_another_specimen_than_the_one_named_is_repaired_to_the_named_one(ctx):
    # 50809 is glucose from the blood gas analyser, 50931 the chemistry (serum) glucose: both labelled 'glucose'
    found_and_repaired(ctx, "Most recent serum glucose for 10018081?",
                       "SELECT valuenum FROM labevents WHERE subject_id = 10018081 AND itemid = 50809 ORDER BY charttime DESC LIMIT 1",
                       "SELECT valuenum FROM labevents WHERE subject_id = 10018081 AND itemid = 50931 ORDER BY charttime DESC LIMIT 1",
                       "wrong_specimen")
    found_and_repaired(ctx, "last abg glucose of patient 10018081",
                       "SELECT valuenum FROM labevents WHERE subject_id = 10018081 AND itemid = 50931 ORDER BY charttime DESC LIMIT 1",
                       "SELECT valuenum FROM labevents WHERE subject_id = 10018081 AND itemid = 50809 ORDER BY charttime DESC LIMIT 1",
                       "wrong_specimen")


def test_a_urine_item_where_no_specimen_is_named_is_reported(ctx):
    # 51981 is urine glucose; "glucose" alone is a blood value (three blood items: which one is not certain)
    assert "other_specimen" in checks_of(ctx, "last glucose of patient 10018081",
                                         "SELECT valuenum FROM labevents WHERE subject_id = 10018081 AND itemid = 51981")


@pytest.mark.parametrize(("question", "code"), [
    ("last glucose of patient 10018081", 50931),  # a blood item where none is named
    ("last blood glucose of patient 10018081", 50809),  # the blood gas item is a blood item too
    ("white blood cells of patient 10018081", 51301),  # "blood" inside the item's own name names no specimen
    ("last urine glucose of patient 10018081", 51981),
])
def test_items_measured_in_what_the_question_names_are_left_alone(ctx, question, code):
    sql = f"SELECT valuenum FROM labevents WHERE subject_id = 10018081 AND itemid = {code}"
    assert not {"wrong_specimen", "other_specimen"} & checks_of(ctx, question, sql)


def test_the_shipped_specimens_are_read_only_where_the_databases_dictionary_agrees(ctx, eicu_ctx):
    from ehrguard.verify.checks.lab_items import lab_items

    assert lab_items()["50809"] == ("glucose", "blood", "blood gas")
    # eICU has no d_labitems: its numbers are never read as MIMIC-IV lab items
    assert "wrong_specimen" not in checks_of(eicu_ctx, "serum glucose of patient 002-34744",
                                             "SELECT labresult FROM lab WHERE labname = 'glucose' AND labid = 50809")


# --- a subquery compared as one value --------------------------------------------------------------------------------


def test_a_name_looked_up_as_one_value_where_several_items_carry_it_is_repaired_to_in(ctx):
    # two lab items are labelled 'potassium, whole blood'; '=' compares with whichever row SQLite meets first
    found_and_repaired(ctx, "most recent k for 10039831?",
                       "SELECT valuenum FROM labevents WHERE subject_id = 10039831 AND itemid = (SELECT itemid FROM d_labitems "
                       "WHERE label = 'potassium, whole blood') ORDER BY charttime DESC LIMIT 1",
                       "SELECT valuenum FROM labevents WHERE subject_id = 10039831 AND itemid IN (SELECT itemid FROM d_labitems "
                       "WHERE label = 'potassium, whole blood') ORDER BY charttime DESC LIMIT 1", "scalar_subquery_rows")
    # one row: nothing to say
    assert "scalar_subquery_rows" not in checks_of(ctx, "latest heart rate of patient 10039831",
                                                   "SELECT valuenum FROM chartevents WHERE subject_id = 10039831 AND itemid = "
                                                   "(SELECT itemid FROM d_items WHERE label = 'heart rate') "
                                                   "ORDER BY charttime DESC LIMIT 1")


# --- dates -----------------------------------------------------------------------------------------------------------


def test_a_day_as_the_inclusive_end_of_a_time_range_is_repaired_to_the_end_of_that_day(ctx):
    found_and_repaired(ctx, "How many labs did 10018081 have from Dec 27 through Dec 29?",
                       "SELECT COUNT(*) FROM labevents WHERE subject_id = 10018081 AND charttime BETWEEN '2100-12-27' AND '2100-12-29'",
                       "SELECT COUNT(*) FROM labevents WHERE subject_id = 10018081 AND date(charttime) BETWEEN '2100-12-27' AND "
                       "'2100-12-29'", "day_bound")
    # a day as an excluded end is midnight, as meant
    assert "day_bound" not in checks_of(ctx, "How many labs did 10018081 have before Dec 29?",
                                        "SELECT COUNT(*) FROM labevents WHERE subject_id = 10018081 AND charttime < '2100-12-29'")


def test_a_date_written_without_leading_zeros_is_repaired(eicu_ctx):
    found_and_repaired(eicu_ctx, "How many potassium results since December 1st?",
                       "SELECT COUNT(*) FROM lab WHERE labname = 'potassium' AND labresulttime >= '2100-12-1'",
                       "SELECT COUNT(*) FROM lab WHERE labname = 'potassium' AND labresulttime >= '2100-12-01'", "date_format")


# --- ranges, shares, rankings, repeated rows ---------------------------------------------------------------------------


@pytest.mark.parametrize(("question", "wrong", "right"), [
    ("How many patients are aged 50 to 60?", "SELECT COUNT(DISTINCT subject_id) FROM admissions WHERE age > 50 AND age < 60",
     "SELECT COUNT(DISTINCT subject_id) FROM admissions WHERE age BETWEEN 50 AND 60"),
    ("How many patients are in their 70s?", "SELECT COUNT(DISTINCT subject_id) FROM admissions WHERE age BETWEEN 70 AND 80",
     "SELECT COUNT(DISTINCT subject_id) FROM admissions WHERE age >= 70 AND age < 80"),
])
def test_a_range_whose_ends_the_query_keeps_otherwise_is_repaired(ctx, question, wrong, right):
    found_and_repaired(ctx, question, wrong, right, "wrong_range_end")


def test_a_share_computed_by_dividing_whole_numbers_is_repaired_to_a_decimal_division(ctx):
    found_and_repaired(ctx, "What percentage of admissions ended in death?",
                       "SELECT 100 * SUM(CASE WHEN discharge_location = 'died' THEN 1 ELSE 0 END) / COUNT(*) FROM admissions",
                       "SELECT 100.0 * SUM(CASE WHEN discharge_location = 'died' THEN 1 ELSE 0 END) / COUNT(*) FROM admissions",
                       "integer_division")


def test_a_ranking_by_patients_done_by_rows_is_repaired(ctx):
    found_and_repaired(ctx, "Which 3 drugs were given to the most patients?",
                       "SELECT drug FROM prescriptions GROUP BY drug ORDER BY COUNT(*) DESC LIMIT 3",
                       "SELECT drug FROM prescriptions GROUP BY drug ORDER BY COUNT(DISTINCT subject_id) DESC LIMIT 3", "ranked_by_rows")
    # ranked by how often: rows are what is counted
    assert "ranked_by_rows" not in checks_of(ctx, "Which 3 drugs were prescribed the most?",
                                             "SELECT drug FROM prescriptions GROUP BY drug ORDER BY COUNT(*) DESC LIMIT 3")


def test_an_average_over_a_join_that_repeats_the_averaged_rows_is_reported(eicu_ctx):
    found_not_repaired(eicu_ctx, "Average admission weight of stays diagnosed with acute respiratory failure?",
                       "SELECT AVG(p.admissionweight) FROM patient p JOIN diagnosis d ON d.patientunitstayid = p.patientunitstayid "
                       "WHERE d.diagnosisname = 'acute respiratory failure'",
                       "SELECT AVG(admissionweight) FROM patient WHERE patientunitstayid IN (SELECT patientunitstayid FROM diagnosis "
                       "WHERE diagnosisname = 'acute respiratory failure')", "repeated_rows")


def test_a_total_repeated_by_a_join_on_a_key_the_table_repeats_is_reported(ctx):
    # cost rows share their admission: joined to its diagnoses on it, each cost counts once per diagnosis
    found_not_repaired(ctx, "What was the total cost of hospital admission 20199380?",
                       "SELECT SUM(c.cost) FROM cost c JOIN diagnoses_icd d ON c.hadm_id = d.hadm_id WHERE c.hadm_id = 20199380",
                       "SELECT SUM(cost) FROM cost WHERE hadm_id = 20199380", "repeated_rows")
    assert "repeated_rows" not in checks_of(ctx, "What was the total cost of hospital admission 20199380?",
                                            "SELECT SUM(c.cost) FROM cost c JOIN admissions a ON c.hadm_id = a.hadm_id "
                                            "WHERE a.hadm_id = 20199380")


def test_the_latest_taken_by_value_is_repaired_to_the_tables_one_time(ctx):
    found_and_repaired(ctx, "What's 10018081's most recent creatinine?",
                       "SELECT valuenum FROM labevents WHERE subject_id = 10018081 AND itemid = 50912 ORDER BY valuenum DESC LIMIT 1",
                       "SELECT valuenum FROM labevents WHERE subject_id = 10018081 AND itemid = 50912 ORDER BY charttime DESC LIMIT 1",
                       "wrong_order_kind")


def test_how_much_answered_by_an_average_is_repaired_to_the_total(eicu_ctx):
    found_and_repaired(eicu_ctx, "How much urine did 006-100205 make yesterday?",
                       "SELECT AVG(cellvaluenumeric) FROM intakeoutput WHERE patientunitstayid = 733082 AND cellpath LIKE '%output%' "
                       "AND celllabel LIKE '%urin%' AND date(intakeoutputtime) = '2100-12-30'",
                       "SELECT SUM(cellvaluenumeric) FROM intakeoutput WHERE patientunitstayid = 733082 AND cellpath LIKE '%output%' "
                       "AND celllabel LIKE '%urin%' AND date(intakeoutputtime) = '2100-12-30'", "wrong_aggregate")
    # '%urin%' is the start of "urine": the pattern is the question's word
    assert "wrong_value" not in checks_of(eicu_ctx, "How much urine did 006-100205 make yesterday?",
                                          "SELECT SUM(cellvaluenumeric) FROM intakeoutput WHERE patientunitstayid = 733082 AND "
                                          "celllabel LIKE '%urin%' AND date(intakeoutputtime) = '2100-12-30'")


# --- a patient named by one of their stays ----------------------------------------------------------------------------


def test_a_stay_of_the_named_patient_stands_for_the_patient(eicu_ctx):
    # 2859392 is a unit stay of 027-102233: the patient is in the query, through the stay
    assert "missing_stated_number" not in checks_of(eicu_ctx, "Any treatments documented for 027-102233 yet?",
                                                    "SELECT COUNT(*) FROM treatment WHERE patientunitstayid = 2859392")
    assert "missing_stated_number" in checks_of(eicu_ctx, "Any treatments documented for 027-102233 yet?",
                                                "SELECT COUNT(*) FROM treatment WHERE patientunitstayid = 2859393")


def test_one_row_repeated_is_not_cut_by_a_limit(eicu_ctx):
    # hospital stay 1981400 has two unit-stay rows with the same hospital times: LIMIT 1 loses nothing
    assert "limit_cuts_answer" not in checks_of(eicu_ctx, "How long was 022-103873's December hospitalization, in days?",
                                                "SELECT ROUND(julianday(hospitaldischargetime) - julianday(hospitaladmittime), 1) "
                                                "FROM patient WHERE patienthealthsystemstayid = 1981400 LIMIT 1")


def test_what_language_a_patient_speaks_is_held_only_where_the_schema_has_it(ctx, eicu_ctx):
    question = "What language does {} speak, do we need an interpreter?"
    assert "not_in_records" in checks_of(eicu_ctx, question.format("010-11444"),
                                         "SELECT ethnicity FROM patient WHERE uniquepid = '010-11444'")
    assert "not_in_records" not in checks_of(ctx, question.format("patient 10018081"),
                                             "SELECT language FROM admissions WHERE subject_id = 10018081")


# --- the visit a question names by its place, repaired ----------------------------------------------------------------


def test_every_visits_events_where_the_first_or_last_is_named_are_kept_to_that_visit(ctx, eicu_ctx):
    found_and_repaired(ctx, "How many lab results were recorded during 10007795's most recent admission?",
                       "SELECT COUNT(*) FROM labevents WHERE subject_id = 10007795",
                       "SELECT COUNT(*) FROM labevents WHERE hadm_id = (SELECT hadm_id FROM admissions WHERE subject_id = 10007795 "
                       "ORDER BY admittime DESC LIMIT 1)", "missing_visit_scope")
    # eICU: the person is read through the patient table; the unit stay is the medication table's own
    found_and_repaired(eicu_ctx, "How many medication orders were there during 006-100716's most recent unit stay?",
                       "SELECT COUNT(*) FROM medication m JOIN patient p ON p.patientunitstayid = m.patientunitstayid "
                       "WHERE p.uniquepid = '006-100716'",
                       "SELECT COUNT(*) FROM medication WHERE patientunitstayid = 603253", "missing_visit_scope")


def test_a_visit_named_otherwise_than_by_one_end_is_reported_not_repaired(ctx):
    checked = run_checks("How many lab results were recorded during the second admission of 10007795?",
                         "SELECT COUNT(*) FROM labevents WHERE subject_id = 10007795", ctx)
    finding = next(f for f in checked.findings if f.check == "missing_visit_scope")
    assert finding.suggestion is None


def test_each_name_once_is_shown_but_vouches_for_nothing_else(ctx):
    """A list repaired to name each drug once says what the candidate said: its confidence is the candidate's, not a
    correction's (which would show it verified when another mistake in it went unseen)."""
    from ehrguard.verify import verify

    verdict = verify("Which drugs were prescribed to patient 10018081 in their last hospital visit?",
                     f"SELECT drug FROM prescriptions WHERE hadm_id = {LAST_VISIT}", db=ctx.db.path)
    assert verdict.action == "correct" and "DISTINCT" in (verdict.sql or "")
    assert verdict.status == "unverified"


# --- what an independent review of these checks found (each once a harmful repair or a false alarm) -------------------


@pytest.mark.parametrize(("db", "question", "sql", "check"), [
    # a bound on another column is no end of the question's range
    ("mimic_iv", "How many patients aged 18-65 had a heart rate of at least 65?",
     "SELECT COUNT(DISTINCT a.subject_id) FROM admissions a JOIN chartevents c ON a.hadm_id = c.hadm_id WHERE a.age BETWEEN 18 "
     "AND 65 AND c.itemid = 220045 AND c.valuenum >= 65", "wrong_range_end"),
    # an eICU patient id is no range
    ("eicu", "Has patient 003-10465 been diagnosed more than 3 times?",
     "SELECT COUNT(*) > 3 FROM diagnosis d JOIN patient p ON p.patientunitstayid = d.patientunitstayid WHERE p.uniquepid = '003-10465'",
     "wrong_range_end"),
    # "rbc" / "wbc" also label the urine items: the blood count is not another item
    ("mimic_iv", "What was the last RBC count of patient 10000032?",
     "SELECT valuenum FROM labevents WHERE subject_id = 10000032 AND itemid = 51279 ORDER BY charttime DESC LIMIT 1", "wrong_code"),
    # a weight and a price are no amounts given or put out
    ("eicu", "How much did patient 003-10799 weigh at admission?",
     "SELECT AVG(admissionweight) FROM patient WHERE uniquepid = '003-10799'", "wrong_aggregate"),
    ("eicu", "How much does a hemoglobin lab test cost?", "SELECT AVG(cost) FROM cost WHERE eventtype = 'lab'", "wrong_aggregate"),
    # the first row of an ordered subquery is meant
    ("eicu", "Admission weight of patient 002-10148 at their first unit stay",
     "SELECT admissionweight FROM patient WHERE patientunitstayid = (SELECT patientunitstayid FROM patient WHERE uniquepid = "
     "'002-10148' ORDER BY unitadmittime ASC)", "scalar_subquery_rows"),
    # "at least ten patients" bounds the drugs; the ranking is by how often
    ("mimic_iv", "Among drugs given to at least ten patients, which 3 were prescribed most often?",
     "SELECT drug FROM prescriptions GROUP BY drug HAVING COUNT(DISTINCT subject_id) >= 10 ORDER BY COUNT(*) DESC LIMIT 3",
     "ranked_by_rows"),
    # "before" a day: its midnight is the first moment left out
    ("mimic_iv", "How many lab tests did patient 10000032 have before 2100-07-17?",
     "SELECT COUNT(*) FROM labevents WHERE subject_id = 10000032 AND charttime <= '2100-07-17'", "day_bound"),
    # a specimen word about something else in the question
    ("mimic_iv", "What was the last glucose value of patient 10000032, who was treated for a urinary tract infection?",
     "SELECT valuenum FROM labevents WHERE subject_id = 10000032 AND itemid = 50931 ORDER BY charttime DESC LIMIT 1",
     "wrong_specimen"),
    # the averaged table is joined to the rows the question is about
    ("mimic_iv", "What is the average patient age over all ICU stays?",
     "SELECT AVG(a.age) FROM icustays i JOIN admissions a ON i.hadm_id = a.hadm_id", "repeated_rows"),
    # the records asked for are the rows
    ("mimic_iv", "List all prescriptions written for patient 10000032.", "SELECT drug FROM prescriptions WHERE subject_id = 10000032",
     "repeated_names"),
])
def test_what_the_review_found_is_left_alone(ctx, eicu_ctx, db, question, sql, check):
    assert check not in checks_of(ctx if db == "mimic_iv" else eicu_ctx, question, sql)


def test_only_the_division_a_result_is_computed_by_is_made_decimal(ctx):
    # the division inside COUNT(DISTINCT ...) groups ages by decade: it stays whole
    found_and_repaired(ctx, "What is the average number of admissions per age decade?",
                       "SELECT COUNT(*) / COUNT(DISTINCT age / 10) FROM admissions",
                       "SELECT COUNT(*) * 1.0 / COUNT(DISTINCT age / 10) FROM admissions", "integer_division")


def test_a_size_the_order_reading_does_not_know_keeps_the_order_unrepaired(ctx):
    checked = run_checks("What was the heaviest daily weight of the patient in hospital visit 21027282, their last visit?",
                         "SELECT valuenum FROM chartevents WHERE hadm_id = 21027282 AND itemid = 224639 ORDER BY valuenum DESC LIMIT 1",
                         ctx)
    assert not any(f.suggestion for f in checked.findings if f.check == "wrong_order_kind")


def test_a_pattern_reads_as_the_start_of_a_word_and_as_its_stem():
    from ehrguard.verify.checks.concepts import supported

    assert supported("%urin%", "How much urine did she make?")
    assert supported("%diabetes%", "How many diabetic patients are there?")
