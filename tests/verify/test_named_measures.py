"""Session 23 checks, on the real MIMIC-IV and eICU demo databases: superlatives that name their measure ("the longest
stay", "the oldest patient"), a median taken as a mean, rows skipped in no order, a pattern nothing in the records
matches, a table holding both intake and output read whole where one side is asked, a spacing that hid "how much"; and
the findings that now keep an answer from being verified.

Each check is shown finding its mistake (and repairing it where the fix is certain, checked by running both), and
staying silent on the right query for the same question.
"""

from __future__ import annotations

import pytest

from ehrguard import verify
from ehrguard.verify.checks import repair, run_checks
from tests.verify.checking import checks_of, found_and_repaired, found_not_repaired

_ICU_LOS = "julianday(outtime) - julianday(intime)"


@pytest.mark.parametrize(("question", "wrong", "right"), [
    ("Which patient had the longest ICU stay?",
     f"SELECT subject_id FROM icustays WHERE outtime IS NOT NULL ORDER BY {_ICU_LOS} ASC LIMIT 1",
     f"SELECT subject_id FROM icustays WHERE outtime IS NOT NULL ORDER BY {_ICU_LOS} DESC LIMIT 1"),
    # an alias the SELECT defines is read through its definition
    ("Which ICU stay was the shortest?",
     f"SELECT stay_id, {_ICU_LOS} AS days FROM icustays WHERE outtime IS NOT NULL ORDER BY days DESC LIMIT 1",
     f"SELECT stay_id, {_ICU_LOS} AS days FROM icustays WHERE outtime IS NOT NULL ORDER BY days ASC LIMIT 1"),
    ("How old was the oldest patient at admission?", "SELECT MIN(age) FROM admissions", "SELECT MAX(age) FROM admissions"),
    # written start minus end, the duration is negative: its highest is the shortest
    ("Which patient had the longest ICU stay?",
     "SELECT subject_id FROM icustays WHERE outtime IS NOT NULL ORDER BY julianday(intime) - julianday(outtime) DESC LIMIT 1",
     f"SELECT subject_id FROM icustays WHERE outtime IS NOT NULL ORDER BY {_ICU_LOS} DESC LIMIT 1"),
    # still-open stays have no length: the flipped order puts them last, not first
    ("Which patient had the longest ICU stay?", f"SELECT subject_id FROM icustays ORDER BY {_ICU_LOS} ASC LIMIT 1",
     f"SELECT subject_id FROM icustays WHERE outtime IS NOT NULL ORDER BY {_ICU_LOS} DESC LIMIT 1"),
])
def test_a_superlative_naming_its_measure_is_flipped(ctx, question, wrong, right):
    found_and_repaired(ctx, question, wrong, right, "wrong_direction")


def test_the_oldest_patient_in_eicu_is_the_highest_age(eicu_ctx):
    found_and_repaired(eicu_ctx, "What is the age of the oldest patient currently in hospital?",
                       "SELECT MIN(CAST(age AS INTEGER)) FROM patient WHERE hospitaldischargetime IS NULL",
                       "SELECT MAX(CAST(age AS INTEGER)) FROM patient WHERE hospitaldischargetime IS NULL", "wrong_direction")


@pytest.mark.parametrize(("question", "sql"), [
    # the oldest record is the earliest moment: a time is not a measure these words name
    ("When was the oldest lab test of patient 10000032?", "SELECT MIN(charttime) FROM labevents WHERE subject_id = 10000032"),
    # "longest" of something the query does not order by: a count is no duration
    ("Which drug was given for the longest?",
     "SELECT drug FROM prescriptions GROUP BY drug ORDER BY COUNT(*) DESC LIMIT 1"),
    # "highest" as well: the order reading of check_direction is the one that speaks
    ("Of the oldest patients, who had the highest age at admission?", "SELECT subject_id FROM admissions ORDER BY age DESC LIMIT 1"),
])
def test_a_superlative_is_left_alone_where_its_measure_is_not_ordered(ctx, question, sql):
    assert "wrong_direction" not in checks_of(ctx, question, sql)


def test_a_median_taken_as_a_mean_is_an_error(ctx):
    found_not_repaired(ctx, "median length of hospital stay, days (discharged pts only)",
                       "SELECT AVG(julianday(dischtime) - julianday(admittime)) FROM admissions WHERE dischtime IS NOT NULL",
                       "WITH o AS (SELECT julianday(dischtime) - julianday(admittime) AS los, ROW_NUMBER() OVER (ORDER BY "
                       "julianday(dischtime) - julianday(admittime)) AS rn, COUNT(*) OVER () AS n FROM admissions WHERE "
                       "dischtime IS NOT NULL) SELECT AVG(los) FROM o WHERE rn IN ((n + 1) / 2, (n + 2) / 2)", "not_a_median")
    # the nerve, not the statistic
    assert "not_a_median" not in checks_of(ctx, "average age of patients with a median nerve injury",
                                           "SELECT AVG(age) FROM admissions")


def test_rows_skipped_in_no_order_are_an_error_and_not_repaired_by_dropping_the_limit(eicu_ctx):
    middle = "OFFSET (SELECT COUNT(*) / 2 FROM patient WHERE hospitaldischargetime IS NOT NULL)"
    los = "julianday(hospitaldischargetime) - julianday(hospitaladmittime)"
    question = "median hospital LOS (days) across unit stays of discharged patients"
    wrong = f"SELECT {los} FROM patient WHERE hospitaldischargetime IS NOT NULL LIMIT 1 {middle}"
    found_not_repaired(eicu_ctx, question, wrong,
                       f"SELECT {los} AS los FROM patient WHERE hospitaldischargetime IS NOT NULL ORDER BY los LIMIT 1 {middle}",
                       "offset_without_order")
    assert "limit_cuts_answer" not in checks_of(eicu_ctx, question, wrong)


def test_a_pattern_nothing_in_the_records_matches_keeps_a_no_from_being_verified(eicu_ctx):
    question = "Did patient 003-11972 have a chest x-ray?"
    pid = "JOIN patient ON {t}.patientunitstayid = patient.patientunitstayid WHERE patient.uniquepid = '003-11972'"
    wrong = f"SELECT COUNT(*) > 0 FROM lab {pid.format(t='lab')} AND lab.labname LIKE '%x-ray%'"
    found_not_repaired(eicu_ctx, question, wrong,
                       f"SELECT COUNT(*) > 0 FROM treatment {pid.format(t='treatment')} AND treatment.treatmentname LIKE '%x-ray%'",
                       "matches_no_record")
    verdict = verify(question, wrong, db=eicu_ctx.path, calibration="off")
    assert verdict.status != "verified" and "nothing in these records" in verdict.reason
    # spellings of one name joined by OR: the others may match
    assert "matches_no_record" not in checks_of(eicu_ctx, "How many patients got lasix?",
                                                "SELECT COUNT(DISTINCT patientunitstayid) FROM medication WHERE drugname LIKE "
                                                "'%lasix%' OR drugname LIKE '%furosemide%'")


def test_intake_asked_of_a_table_holding_intake_and_output_read_whole(eicu_ctx):
    found_not_repaired(eicu_ctx, "How much fluid did unit stay 603254 take in?",
                       "SELECT SUM(cellvaluenumeric) FROM intakeoutput WHERE patientunitstayid = 603254",
                       "SELECT SUM(cellvaluenumeric) FROM intakeoutput WHERE patientunitstayid = 603254 AND cellpath LIKE '%intake%'",
                       "side_not_chosen")
    # a drug's name chooses rows of one side
    assert "side_not_chosen" not in checks_of(eicu_ctx, "How much nicardipine did unit stay 965856 take in?",
                                              "SELECT SUM(cellvaluenumeric) FROM intakeoutput WHERE patientunitstayid = 965856 "
                                              "AND celllabel = 'nicardipine'")


def test_how_much_reads_through_a_masked_name(eicu_ctx):
    # the drug's name masked left two spaces, and "how much ... volume" was not read
    found_and_repaired(eicu_ctx, "How much nicardipine infusion volume did unit stay 965856 receive overall?",
                       "SELECT AVG(cellvaluenumeric) FROM intakeoutput WHERE patientunitstayid = 965856 AND celllabel = 'nicardipine'",
                       "SELECT SUM(cellvaluenumeric) FROM intakeoutput WHERE patientunitstayid = 965856 AND celllabel = 'nicardipine'",
                       "wrong_aggregate")


def test_a_filter_the_question_never_asked_for_keeps_the_answer_unverified(eicu_ctx):
    verdict = verify("How many acetaminophen doses did stay 168726 receive?",
                     "SELECT COUNT(*) FROM medication WHERE patientunitstayid = 168726 AND drugname LIKE '%acetaminophen%' "
                     "AND routeadmin = 'po'", db=eicu_ctx.path, calibration="off")
    assert "unasked_filter" in {f.check for f in verdict.findings} and verdict.status != "verified"


def test_lab_items_chosen_by_a_pattern_over_blood_and_urine_are_reported(ctx):
    question = "Lowest sodium for 10021487 this admission?"
    found_not_repaired(ctx, question,
                       "SELECT MIN(valuenum) FROM labevents WHERE hadm_id = 28998349 AND itemid IN "
                       "(SELECT itemid FROM d_labitems WHERE label LIKE '%sodium%')",
                       "SELECT MIN(valuenum) FROM labevents WHERE hadm_id = 28998349 AND itemid = 50983", "mixed_specimens")
    # a pattern whose items are all measured in one fluid reads one test
    assert "mixed_specimens" not in checks_of(ctx, "Lowest urine sodium for 10021487 this admission?",
                                              "SELECT MIN(valuenum) FROM labevents WHERE hadm_id = 28998349 AND itemid IN "
                                              "(SELECT itemid FROM d_labitems WHERE label LIKE '%sodium, urine%')")


def test_a_length_of_stay_with_no_kind_of_visit_named_is_read_of_the_visits_the_query_reads(ctx):
    sql = ("SELECT julianday(dischtime) - julianday(admittime) FROM admissions WHERE subject_id = {p} "
           "ORDER BY admittime DESC LIMIT 1")
    # five admissions: which one is not said
    assert "unstated_visit" in checks_of(ctx, "What's the length of stay for patient 10007795?", sql.format(p=10007795))
    # one admission: there is nothing to choose
    assert "unstated_visit" not in checks_of(ctx, "What's the length of stay for patient 10001217?", sql.format(p=10001217))


def test_a_visit_the_query_picks_by_its_own_times_is_one_the_question_never_named(eicu_ctx):
    sql = "SELECT admissionweight FROM patient WHERE uniquepid = '006-100497' ORDER BY unitadmittime DESC LIMIT 1"
    # seven ICU stays, and the query answers for the latest without the question saying so
    assert "unstated_visit" in checks_of(eicu_ctx, "What was the weight of patient 006-100497?", sql)
    assert "unstated_visit" not in checks_of(eicu_ctx, "What was the weight of patient 006-100497 at their last ICU admission?", sql)


def test_an_outcome_known_is_no_side_of_survival(eicu_ctx):
    # "IS NOT NULL" on a discharge status keeps both outcomes; and "survivors vs non-survivors" asks about both
    question = "Mean ICU LOS in hours, survivors vs non-survivors (closed unit stays with a known outcome)"
    sql = ("SELECT hospitaldischargestatus, AVG((julianday(unitdischargetime) - julianday(unitadmittime)) * 24) FROM patient "
           "WHERE unitdischargetime IS NOT NULL AND hospitaldischargestatus IS NOT NULL GROUP BY hospitaldischargestatus")
    assert "reversed_survival" not in checks_of(eicu_ctx, question, sql)
    assert "reversed_survival" not in checks_of(eicu_ctx, "Mean ICU LOS of survivors (known outcome only)",
                                                "SELECT AVG(julianday(unitdischargetime) - julianday(unitadmittime)) FROM patient "
                                                "WHERE hospitaldischargestatus IS NOT NULL AND hospitaldischargestatus = 'alive'")


def test_a_fraction_where_a_percentage_is_asked_is_multiplied_by_100(ctx):
    female = "COUNT(CASE WHEN gender = 'f' THEN 1 END)"
    found_and_repaired(ctx, "What percentage of patients are female?", f"SELECT {female} * 1.0 / COUNT(*) FROM patients",
                       f"SELECT 100.0 * {female} / COUNT(*) FROM patients", "fraction_for_percentage")
    # a percentile is no percentage
    assert "fraction_for_percentage" not in checks_of(ctx, "What percentile is the stay of patient 10007795 among all stays?",
                                                      f"SELECT {female} * 1.0 / COUNT(*) FROM patients")


def test_moments_subtracted_as_text_in_sqlite_are_repaired_to_days(ctx):
    found_and_repaired(ctx, "What is the average ICU length of stay in days?", "SELECT AVG(outtime - intime) FROM icustays",
                       "SELECT AVG(julianday(outtime) - julianday(intime)) FROM icustays", "time_text_arithmetic")


def test_the_hours_of_the_day_subtracted_are_not_a_duration(ctx):
    question = "How many hours did the first ICU stay of patient 10007795 last?"
    order = "FROM icustays WHERE subject_id = 10007795 ORDER BY intime ASC LIMIT 1"
    found_and_repaired(ctx, question, f"SELECT strftime('%H', outtime) - strftime('%H', intime) {order}",
                       f"SELECT (julianday(outtime) - julianday(intime)) * 24 {order}", "field_difference")
    # the day of the month starts again too (a stay from February 25 to March 3): named, repaired to calendar days
    across = order.replace("10007795", "10029291")
    found_and_repaired(ctx, question.replace("hours", "days").replace("10007795", "10029291"),
                       f"SELECT strftime('%d', outtime) - strftime('%d', intime) {across}",
                       f"SELECT julianday(date(outtime)) - julianday(date(intime)) {across}", "field_difference")
    # one term of days * 24 + hours, and a moment against a constant (a time of day): left alone
    assert "field_difference" not in checks_of(
        ctx, question, f"SELECT 24 * (strftime('%j', outtime) - strftime('%j', intime)) + (strftime('%H', outtime) - "
                       f"strftime('%H', intime)) {order}")
    assert "field_difference" not in checks_of(ctx, "How many hours after midnight was patient 10007795 first admitted to the ICU?",
                                               f"SELECT strftime('%H', intime) - strftime('%H', '2100-01-01 00:00:00') {order}")
    # EHRSQL's calendar days within a year, and a field that is not a duration asked: left alone
    assert "field_difference" not in checks_of(ctx, question.replace("hours", "days"),
                                               f"SELECT strftime('%j', outtime) - strftime('%j', intime) {order}")
    assert "field_difference" not in checks_of(ctx, "At what hour was patient 10007795 first admitted to the ICU?",
                                               f"SELECT strftime('%H', intime) {order}")


def test_a_moment_compared_with_a_bare_number_is_an_error(eicu_ctx):
    question = "How many unit stays lasted more than 48 hours?"
    assert "time_compared_with_number" in checks_of(eicu_ctx, question, "SELECT COUNT(*) FROM patient WHERE unitdischargetime > 48")
    assert "time_compared_with_number" not in checks_of(
        eicu_ctx, question, "SELECT COUNT(*) FROM patient WHERE (julianday(unitdischargetime) - julianday(unitadmittime)) * 24 > 48")
    # the query a misspelt column was renamed to is not verified: what it compares is not a duration
    # (without the calibration, whose bar alone would keep it unverified)
    verdict = verify(question, "SELECT COUNT(*) FROM patient WHERE unitdischargeoffset > 48", db=eicu_ctx.path, calibration="off")
    assert verdict.status != "verified"


def test_offset_zero_skips_nothing(eicu_ctx):
    assert "offset_without_order" not in checks_of(eicu_ctx, "the age of one patient of hospital 73",
                                                   "SELECT age FROM patient WHERE hospitalid = 73 LIMIT 1 OFFSET 0")


def test_a_group_named_after_the_word_its_column_is_named_for(ctx):
    question = "How many patients were discharged home?"
    found_and_repaired(ctx, question, "SELECT COUNT(DISTINCT subject_id) FROM admissions",
                       "SELECT COUNT(DISTINCT subject_id) FROM admissions WHERE discharge_location = 'home'", "missing_group_filter")


def test_a_moment_compared_with_a_word_is_an_error(eicu_ctx):
    assert "time_compared_with_text" in checks_of(eicu_ctx, "How many patients were discharged home?",
                                                  "SELECT COUNT(DISTINCT uniquepid) FROM patient WHERE hospitaldischargetime = 'home'")
    assert "time_compared_with_text" not in checks_of(eicu_ctx, "How many patients were discharged on 2104-05-01?",
                                                      "SELECT COUNT(DISTINCT uniquepid) FROM patient WHERE "
                                                      "date(hospitaldischargetime) = '2104-05-01'")


# --- what an independent review of these checks found, each left alone now --------------------------------------------

@pytest.mark.parametrize(("db", "question", "sql", "check"), [
    # 100.0 is a factor of 100: a percentage under 1 is a percentage
    ("mimic_iv", "What percentage of prescriptions were for warfarin?",
     "SELECT 100.0 * SUM(CASE WHEN drug LIKE '%warfarin%' THEN 1 ELSE 0 END) / COUNT(*) FROM prescriptions", "fraction_for_percentage"),
    # a "%" in a threshold asks for no percentage
    ("mimic_iv", "What fraction of ICU stays had an SpO2 below 90%?",
     "SELECT COUNT(DISTINCT stay_id) * 1.0 / (SELECT COUNT(*) FROM icustays) FROM chartevents WHERE itemid = 220277 AND valuenum < 90",
     "fraction_for_percentage"),
    # a number the query computes under a name ending in _time is no moment
    ("mimic_iv", "How many patients waited more than 6 hours from hospital admission to ICU admission?",
     "WITH w AS (SELECT i.subject_id, (julianday(i.intime) - julianday(a.admittime)) * 24 AS wait_time FROM icustays i JOIN "
     "admissions a ON i.hadm_id = a.hadm_id) SELECT COUNT(DISTINCT subject_id) FROM w WHERE wait_time > 6", "time_compared_with_number"),
    ("mimic_iv", "What was the ICU stay length in hours for stay 32359580?",
     "WITH s AS (SELECT CAST(strftime('%s', intime) AS INTEGER) AS start_time, CAST(strftime('%s', outtime) AS INTEGER) AS end_time "
     "FROM icustays WHERE stay_id = 32359580) SELECT (end_time - start_time) / 3600.0 FROM s", "time_text_arithmetic"),
    # a duration written start minus end: its lowest is the longest
    ("mimic_iv", "Which patient had the longest ICU stay?",
     "SELECT subject_id FROM icustays WHERE outtime IS NOT NULL ORDER BY julianday(intime) - julianday(outtime) ASC LIMIT 1",
     "wrong_direction"),
    # the same on every visit: the visit the query takes changes nothing
    ("mimic_iv", "What insurance does patient 10007795 have?",
     "SELECT insurance FROM admissions WHERE subject_id = 10007795 ORDER BY admittime DESC LIMIT 1", "unstated_visit"),
    ("eicu", "What is the gender of patient 006-100497?",
     "SELECT gender FROM patient WHERE uniquepid = '006-100497' ORDER BY unitadmittime DESC LIMIT 1", "unstated_visit"),
    # exclusions keep the urine items out; a label shown says which item each value is
    ("mimic_iv", "What was the last serum creatinine of patient 10020740?",
     "SELECT l.valuenum FROM labevents l JOIN d_labitems d ON l.itemid = d.itemid WHERE l.subject_id = 10020740 AND d.label LIKE "
     "'%creatinine%' AND d.label NOT LIKE '%urine%' AND d.label NOT LIKE '%ratio%' ORDER BY l.charttime DESC LIMIT 1", "mixed_specimens"),
    ("mimic_iv", "What sodium tests has patient 10020740 had, with their results?",
     "SELECT d.label, l.charttime, l.valuenum FROM labevents l JOIN d_labitems d ON l.itemid = d.itemid "
     "WHERE l.subject_id = 10020740 AND d.label LIKE '%sodium%'", "mixed_specimens"),
    # NOT LIKE keeps every row where nothing matches; a CASE counts what matches, 0 included
    ("mimic_iv", "How many prescriptions were not for placebo?", "SELECT COUNT(*) FROM prescriptions WHERE drug NOT LIKE '%placebo%'",
     "matches_no_record"),
    ("mimic_iv", "How many patients got vancomycin and how many got remdesivir?",
     "SELECT COUNT(DISTINCT CASE WHEN drug LIKE '%vancomycin%' THEN subject_id END), "
     "COUNT(DISTINCT CASE WHEN drug LIKE '%remdesivir%' THEN subject_id END) FROM prescriptions", "matches_no_record"),
    # a median taken from an ordered subquery's middle row
    ("mimic_iv", "What is the median age of admitted patients?",
     "SELECT age FROM (SELECT age FROM admissions ORDER BY age) LIMIT 1 OFFSET (SELECT COUNT(*) / 2 FROM admissions)",
     "offset_without_order"),
])
def test_what_the_review_of_these_checks_found_is_left_alone(ctx, eicu_ctx, db, question, sql, check):
    assert check not in checks_of(ctx if db == "mimic_iv" else eicu_ctx, question, sql)


def test_an_age_in_whole_years_from_text_moments_is_not_made_days(ctx):
    # admittime - dob in SQLite is the difference of the years: the crude age people mean, not this mistake
    assert "time_text_arithmetic" not in checks_of(ctx, "How many patients were older than 65 at admission?",
                                                   "SELECT COUNT(DISTINCT a.subject_id) FROM admissions a JOIN patients p ON "
                                                   "a.subject_id = p.subject_id WHERE a.admittime - p.dob > 65")
    # compared with a number, what the number means is not known: reported, not repaired
    checked = run_checks("How many ICU stays lasted over 2?", "SELECT COUNT(*) FROM icustays WHERE outtime - intime > 2", ctx)
    assert any(f.check == "time_text_arithmetic" and not f.suggestion for f in checked.findings)
    assert repair(checked) is None


@pytest.mark.parametrize(("db", "question", "sql", "check"), [
    # a gap between two events (a discharge, then the next admission) is no event's length read backwards
    ("mimic_iv", "What was the longest time between a hospital discharge and a later readmission for patient 10007795?",
     "SELECT MAX(julianday(a2.admittime) - julianday(a1.dischtime)) FROM admissions a1 JOIN admissions a2 ON a1.subject_id = "
     "a2.subject_id AND a2.admittime > a1.dischtime WHERE a1.subject_id = 10007795", "wrong_direction"),
    ("mimic_iv", "Which patient had the longest gap between admissions?",
     "SELECT subject_id FROM (SELECT subject_id, julianday(LEAD(admittime) OVER (PARTITION BY subject_id ORDER BY admittime)) - "
     "julianday(dischtime) AS gap FROM admissions) WHERE gap IS NOT NULL ORDER BY gap DESC LIMIT 1", "wrong_direction"),
    # "the oldest admission" is the earliest, no age; "the shortest ICU stay" is no height
    ("mimic_iv", "Which of patient 10020740's admissions was the oldest?",
     "SELECT hadm_id, age FROM admissions WHERE subject_id = 10020740 ORDER BY age ASC LIMIT 1", "wrong_direction"),
    ("eicu", "What was the height of the patient with the shortest ICU stay?",
     "SELECT MAX(admissionheight) FROM patient WHERE uniquepid = (SELECT uniquepid FROM patient WHERE unitdischargetime IS NOT NULL "
     "ORDER BY julianday(unitdischargetime) - julianday(unitadmittime) ASC LIMIT 1)", "wrong_direction"),
    # a pattern that only takes rows away removes none when it matches nothing
    ("mimic_iv", "How many patients received vancomycin but never remdesivir?",
     "SELECT COUNT(*) FROM (SELECT subject_id FROM prescriptions WHERE drug LIKE '%vancomycin%' EXCEPT "
     "SELECT subject_id FROM prescriptions WHERE drug LIKE '%remdesivir%')", "matches_no_record"),
    ("mimic_iv", "How many patients were given vancomycin and not remdesivir?",
     "SELECT COUNT(DISTINCT p.subject_id) FROM prescriptions p LEFT JOIN prescriptions r ON r.subject_id = p.subject_id AND "
     "r.drug LIKE '%remdesivir%' WHERE p.drug LIKE '%vancomycin%' AND r.subject_id IS NULL", "matches_no_record"),
    # '' is how many loads write "missing"
    ("mimic_iv", "How many patients have been discharged from the hospital?",
     "SELECT COUNT(DISTINCT subject_id) FROM admissions WHERE dischtime != ''", "time_compared_with_text"),
    # a median from an ordered CTE
    ("mimic_iv", "What is the median age of admitted patients?",
     "WITH s AS (SELECT age FROM admissions ORDER BY age) SELECT age FROM s LIMIT 1 OFFSET (SELECT COUNT(*) / 2 FROM admissions)",
     "offset_without_order"),
    # the present can only be the latest visit
    ("eicu", "Has patient 016-10131 left the ICU?",
     "SELECT unitdischargetime IS NOT NULL FROM patient WHERE uniquepid = '016-10131' ORDER BY unitadmittime DESC LIMIT 1",
     "unstated_visit"),
    # each value shown with its item
    ("mimic_iv", "For each lab item measuring potassium, what is the average value?",
     "SELECT l.itemid, AVG(l.valuenum) FROM labevents l WHERE l.itemid IN (SELECT itemid FROM d_labitems WHERE label LIKE "
     "'%potassium%') GROUP BY l.itemid", "mixed_specimens"),
    # a GLOB on the path chooses the side
    ("eicu", "How much fluid did unit stay 603254 take in?",
     "SELECT SUM(cellvaluenumeric) FROM intakeoutput WHERE patientunitstayid = 603254 AND cellpath GLOB '*ntake*'", "side_not_chosen"),
])
def test_what_the_second_review_of_these_checks_found_is_left_alone(ctx, eicu_ctx, db, question, sql, check):
    assert check not in checks_of(ctx if db == "mimic_iv" else eicu_ctx, question, sql)


def test_a_share_cut_to_zero_where_a_percentage_is_asked_is_repaired_to_the_percentage(ctx):
    emergency = "SUM(CASE WHEN admission_type LIKE '%emer%' THEN 1 ELSE 0 END)"
    found_and_repaired(ctx, "What percentage of admissions were emergencies?", f"SELECT {emergency} / COUNT(*) FROM admissions",
                       f"SELECT 100.0 * {emergency} / COUNT(*) FROM admissions", "fraction_for_percentage")


def test_a_median_by_approx_quantiles_is_a_median(ctx):
    # BigQuery's APPROX_QUANTILES(x, 2)[OFFSET(1)] and DuckDB's approx_quantile compute it
    assert "not_a_median" not in checks_of(ctx, "median and mean age at admission",
                                           "SELECT AVG(age), approx_quantiles(age, 2) FROM admissions")


def test_events_that_did_not_happen_are_counted_only_where_the_question_allows(mimic_iv_raw_db):
    from ehrguard.db import open_database
    from ehrguard.verify.methods import DatabaseContext
    from tests.verify.checking import checks_of

    raw = DatabaseContext(open_database(mimic_iv_raw_db), "mimic_iv_raw", mimic_iv_raw_db)
    doses = "SELECT COUNT(*) FROM mimiciv_hosp.emar WHERE subject_id = 10039708 AND medication = 'Heparin'"
    # emar.event_txt holds 'Not Given' and 'Hold Dose' beside 'Administered' (read from the data)
    assert "unhappened_events" in checks_of(raw, "How many heparin doses was patient 10039708 given?", doses)
    assert "unhappened_events" not in checks_of(raw, "How many heparin doses was patient 10039708 given?",
                                                f"{doses} AND event_txt = 'Administered'")
    assert "unhappened_events" not in checks_of(raw, "How many heparin entries does the eMAR hold for patient 10039708?", doses)
    verdict = verify("How many heparin doses was patient 10039708 given?", doses, db=str(mimic_iv_raw_db))
    assert verdict.status != "verified"
