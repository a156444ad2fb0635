"""What the question states is in the SQL, ids are used as what they identify, and the query reads the side of a
clinical contrast the question asks about: on the real MIMIC-IV and eICU demo databases.

Each check is shown finding its mistake (and repairing it where the fix is certain, checked by running both), and
staying silent on the right query for the same question.
"""

from __future__ import annotations

import pytest

from ehrguard.verify import verify
from ehrguard.verify.checks import repair, run_checks
from tests.verify.checking import checks_of, found_and_repaired, rows


@pytest.mark.parametrize(("question", "wrong", "right", "check"), [
    # the patient's number dropped from the query
    ("How many prescriptions did patient 10000032 get?", "SELECT COUNT(*) FROM prescriptions",
     "SELECT COUNT(*) FROM prescriptions WHERE subject_id = 10000032", "missing_stated_number"),
    # another number than the one asked
    ("How many patients are older than 70?", "SELECT COUNT(*) FROM admissions WHERE age > 60",
     "SELECT COUNT(*) FROM admissions WHERE age > 70", "missing_stated_number"),
    # a group the question names, never filtered
    ("How many female patients are there?", "SELECT COUNT(DISTINCT subject_id) FROM patients",
     "SELECT COUNT(DISTINCT subject_id) FROM patients WHERE gender = 'f'", "missing_group_filter"),
    ("How many elective admissions were there?", "SELECT COUNT(*) FROM admissions",
     "SELECT COUNT(*) FROM admissions WHERE admission_type = 'elective'", "missing_group_filter"),
    # a route the question names, with the route column never read
    ("How many times was heparin given subcutaneously to patient 10002495?",
     "SELECT COUNT(*) FROM prescriptions WHERE subject_id = 10002495 AND drug = 'heparin'",
     "SELECT COUNT(*) FROM prescriptions WHERE subject_id = 10002495 AND drug = 'heparin' AND route = 'sc'", "missing_route_filter"),
    # an age bound with no age read at all
    ("How many patients in their 60s were admitted?", "SELECT COUNT(DISTINCT subject_id) FROM admissions",
     "SELECT COUNT(DISTINCT subject_id) FROM admissions WHERE age BETWEEN 60 AND 69", "missing_age_filter"),
    # one part of the query picks the last visit among every patient's
    ("What was the first diagnosis of patient 10000032 on their last hospital visit?",
     "SELECT icd_code FROM diagnoses_icd WHERE hadm_id IN (SELECT hadm_id FROM admissions ORDER BY admittime DESC LIMIT 1) "
     "AND subject_id = 10000032 ORDER BY charttime LIMIT 1",
     "SELECT icd_code FROM diagnoses_icd WHERE hadm_id IN (SELECT hadm_id FROM admissions WHERE subject_id = 10000032 "
     "ORDER BY admittime DESC LIMIT 1) ORDER BY charttime LIMIT 1", "unscoped_read"),
    # a join on two different entities' ids
    ("How many ICU stays did patient 10000032 have?",
     "SELECT COUNT(*) FROM icustays JOIN admissions ON icustays.hadm_id = admissions.subject_id WHERE admissions.subject_id = 10000032",
     "SELECT COUNT(*) FROM icustays JOIN admissions ON icustays.hadm_id = admissions.hadm_id WHERE admissions.subject_id = 10000032",
     "join_key_mismatch"),
    ("What drugs were prescribed to patient 10000032?",
     "SELECT drug FROM prescriptions WHERE hadm_id IN (SELECT subject_id FROM admissions WHERE subject_id = 10000032)",
     "SELECT drug FROM prescriptions WHERE hadm_id IN (SELECT hadm_id FROM admissions WHERE subject_id = 10000032)",
     "join_key_mismatch"),
    # another field of the same table returned
    ("When was patient 10000032 last discharged from the hospital?",
     "SELECT admittime FROM admissions WHERE subject_id = 10000032 ORDER BY admittime DESC LIMIT 1",
     "SELECT dischtime FROM admissions WHERE subject_id = 10000032 ORDER BY admittime DESC LIMIT 1", "wrong_column"),
    # the other side of a contrast: output for intake, a height item for weight
    ("What was the total intake of patient 10000032?", "SELECT SUM(value) FROM outputevents WHERE subject_id = 10000032",
     "SELECT SUM(totalamount) FROM inputevents WHERE subject_id = 10000032", "wrong_concept"),
    ("What was the admission weight of patient 10001725?",
     "SELECT valuenum FROM chartevents WHERE subject_id = 10001725 AND itemid = 226730",
     "SELECT valuenum FROM chartevents WHERE subject_id = 10001725 AND itemid = 226512", "wrong_concept"),
])
def test_the_mistake_is_found_and_the_right_query_is_not_flagged(ctx, question, wrong, right, check):
    assert rows(ctx, wrong) != rows(ctx, right)  # the mistake changes the answer on this database
    assert check in checks_of(ctx, question, wrong)
    assert check not in checks_of(ctx, question, right)


def test_an_id_of_the_wrong_kind_is_named_and_repaired(ctx):
    question = "How many admissions does patient 10000032 have?"
    wrong = "SELECT COUNT(*) FROM admissions WHERE hadm_id = 10000032"
    right = "SELECT COUNT(*) FROM admissions WHERE subject_id = 10000032"
    checked = run_checks(question, wrong, ctx)
    finding = next(f for f in checked.findings if f.check == "wrong_id_kind")
    assert finding.severity == "error" and "patient id (subject_id)" in finding.message
    fixed = repair(checked)
    assert fixed is not None and rows(ctx, fixed) == rows(ctx, right)
    assert "wrong_id_kind" not in checks_of(ctx, question, right)


def test_restated_windows_and_computed_constants_count_as_the_stated_number(ctx):
    # 24 hours written as one day, six months as 365/2 days: the question's numbers are there
    assert "missing_stated_number" not in checks_of(
        ctx, "How many lab tests did patient 10000032 have in the first 24 hours of their last admission?",
        "SELECT COUNT(*) FROM labevents JOIN admissions ON labevents.hadm_id = admissions.hadm_id WHERE admissions.subject_id = 10000032 "
        "AND labevents.charttime <= datetime(admissions.admittime, '+1 day')")
    assert "missing_stated_number" not in checks_of(
        ctx, "How many patients died within 6 months of admission?",
        "SELECT COUNT(DISTINCT p.subject_id) FROM patients p JOIN admissions a ON p.subject_id = a.subject_id "
        "WHERE julianday(p.dod) - julianday(a.admittime) < 1 * 365 / 2")


def test_a_number_inside_a_stated_range_the_query_uses_is_the_case_the_range_is_drawn_around(ctx):
    # "a 71-year-old man ... patients aged 66-76": the query filters 66-76; 71 is the case in front, not a filter
    question = ("I am seeing a 71-year-old man. Among male patients aged 66-76, how many admissions were emergencies?")
    cohort = ("SELECT COUNT(*) FROM admissions JOIN patients ON admissions.subject_id = patients.subject_id "
              "WHERE patients.gender = 'm' AND admissions.age BETWEEN 66 AND 76 AND admissions.admission_type LIKE '%emer%'")
    assert "missing_stated_number" not in checks_of(ctx, question, cohort)
    # a number outside the range the query uses is still missing
    outside = question.replace("71-year-old", "81-year-old")
    assert "missing_stated_number" in checks_of(ctx, outside, cohort)


def test_a_group_word_inside_a_value_the_query_looks_for_is_not_a_group(ctx):
    # 'oral' is part of the drug's name here, not a route the question restricts to
    found = checks_of(ctx, "How many times was vancomycin oral liquid prescribed?",
                      "SELECT COUNT(*) FROM prescriptions WHERE drug = 'vancomycin oral liquid'")
    assert "missing_group_filter" not in found


def test_eicu_contrast_and_groups(eicu_ctx):
    question = "What was the total intake of patient 002-12289?"
    wrong = ("SELECT SUM(cellvaluenumeric) FROM intakeoutput WHERE cellpath LIKE '%output%' AND patientunitstayid IN "
             "(SELECT patientunitstayid FROM patient WHERE uniquepid = '002-12289')")
    right = wrong.replace("%output%", "%intake%")
    assert "wrong_concept" in checks_of(eicu_ctx, question, wrong)
    assert "wrong_concept" not in checks_of(eicu_ctx, question, right)
    assert "missing_group_filter" in checks_of(eicu_ctx, "How many male patients were admitted?",
                                                "SELECT COUNT(DISTINCT uniquepid) FROM patient")
    assert "missing_group_filter" not in checks_of(eicu_ctx, "How many male patients were admitted?",
                                                    "SELECT COUNT(DISTINCT uniquepid) FROM patient WHERE gender = 'male'")


def test_a_verdict_on_such_a_mistake_is_never_verified_as_it_stands(ctx):
    # a nested query the repair does not touch: named, not verified
    verdict = verify("How many female patients are there?",
                     "SELECT COUNT(DISTINCT subject_id) FROM patients WHERE subject_id IN (SELECT subject_id FROM admissions)", db=ctx)
    assert verdict.status != "verified"
    assert "female" in verdict.reason and "gender" in verdict.reason
    # a plain one is corrected, and the message says what was wrong
    verdict = verify("How many female patients are there?", "SELECT COUNT(DISTINCT subject_id) FROM patients", db=ctx)
    assert verdict.action == "correct" and "gender = 'f'" in verdict.sql and "female" in verdict.message


def test_a_question_that_names_neither_field_says_nothing_about_which_is_right(ctx):
    assert "wrong_column" not in checks_of(ctx, "What was the diagnosis of patient 10000032?",
                                           "SELECT icd_code FROM diagnoses_icd WHERE subject_id = 10000032")


@pytest.mark.parametrize(("question", "sql"), [
    # everyday words that are also category values ('other' insurance, 'single' marital status) are not groups
    ("Which other drugs were prescribed to patient 10000032?", "SELECT DISTINCT drug FROM prescriptions WHERE subject_id = 10000032"),
    ("Did patient 10000032 get more than a single dose of heparin?",
     "SELECT COUNT(*) > 1 FROM prescriptions WHERE subject_id = 10000032 AND drug = 'heparin'"),
    # a value two columns hold is read when either is read
    ("How many stays started in the medical intensive care unit (micu)?",
     "SELECT COUNT(*) FROM icustays WHERE first_careunit = 'medical intensive care unit (micu)'"),
    # a roman numeral after a classifier noun is not the route IV; a number after one names a category
    ("How many patients with stage iv cancer got heparin?",
     "SELECT COUNT(DISTINCT subject_id) FROM prescriptions WHERE drug = 'heparin'"),
    ("How many patients have type 2 diabetes?",
     "SELECT COUNT(DISTINCT subject_id) FROM diagnoses_icd WHERE icd_code LIKE 'E11%'"),
    # thousands separators: 1,000 is one number
    ("Which stays had more than 1,000 ml of output?",
     "SELECT stay_id FROM outputevents GROUP BY stay_id HAVING SUM(value) > 1000"),
    # labetalol is a drug, not a lab test
    ("What was the last heart rate of patient 10000032 after labetalol?",
     "SELECT valuenum FROM chartevents WHERE subject_id = 10000032 AND itemid = 220045 ORDER BY charttime DESC LIMIT 1"),
    # a CTE that carries a table's name, restricted to the patient
    ("When was patient 10000032 last admitted?",
     "WITH admissions AS (SELECT * FROM main.admissions WHERE subject_id = 10000032) "
     "SELECT admittime FROM admissions ORDER BY admittime DESC LIMIT 1"),
    # comparing the patient with everyone reads everyone on purpose
    ("Was patient 10000032's last heart rate above the average of all patients?",
     "SELECT (SELECT valuenum FROM chartevents WHERE subject_id = 10000032 AND itemid = 220045 ORDER BY charttime DESC LIMIT 1) "
     "> (SELECT AVG(valuenum) FROM chartevents WHERE itemid = 220045)"),
])
def test_no_false_alarm_from_the_new_checks(ctx, question, sql):
    new = {"missing_stated_number", "missing_group_filter", "missing_route_filter", "missing_age_filter", "unscoped_read",
           "join_key_mismatch", "wrong_id_kind", "wrong_concept", "wrong_column"}
    assert not checks_of(ctx, question, sql) & new


@pytest.mark.parametrize(("question", "wrong", "right", "check"), [
    # the one number the question states and the query never uses, written where the query compares another
    ("How many prescriptions did patient 10000032 get?", "SELECT COUNT(*) FROM prescriptions WHERE subject_id = 10000033",
     "SELECT COUNT(*) FROM prescriptions WHERE subject_id = 10000032", "missing_stated_number"),
    ("How many heart rate values above 100 did patient 10000032 have?",
     "SELECT COUNT(*) FROM chartevents WHERE subject_id = 10000032 AND itemid = 220045 AND valuenum > 120",
     "SELECT COUNT(*) FROM chartevents WHERE subject_id = 10000032 AND itemid = 220045 AND valuenum > 100", "missing_stated_number"),
    # a window written in a smaller unit is converted: 2 weeks are '-14 day'
    ("How many lab tests did patient 10000032 have in the 2 weeks before 2100-08-27?",
     "SELECT COUNT(*) FROM labevents WHERE subject_id = 10000032 AND charttime BETWEEN datetime('2100-08-27', '-7 day') AND '2100-08-27'",
     "SELECT COUNT(*) FROM labevents WHERE subject_id = 10000032 AND charttime BETWEEN datetime('2100-08-27', '-14 day') AND '2100-08-27'",
     "missing_stated_number"),
    # the patient the question names, dropped: the condition is added on the table the query reads
    ("How many prescriptions did patient 10000032 get?", "SELECT COUNT(*) FROM prescriptions",
     "SELECT COUNT(*) FROM prescriptions WHERE subject_id = 10000032", "missing_stated_number"),
    # a join on two entities' ids: the key the schema declares between the tables
    ("How many ICU stays did patient 10000032 have?",
     "SELECT COUNT(*) FROM icustays JOIN admissions ON icustays.hadm_id = admissions.subject_id WHERE admissions.subject_id = 10000032",
     "SELECT COUNT(*) FROM icustays JOIN admissions ON icustays.hadm_id = admissions.hadm_id WHERE admissions.subject_id = 10000032",
     "join_key_mismatch"),
    # two tables joined by their own row numbers: joined by their foreign key instead
    ("What diagnoses were coded for admission 22595853?",
     "SELECT d_icd_diagnoses.long_title FROM diagnoses_icd JOIN d_icd_diagnoses ON diagnoses_icd.row_id = d_icd_diagnoses.row_id "
     "WHERE diagnoses_icd.hadm_id = 22595853",
     "SELECT d_icd_diagnoses.long_title FROM diagnoses_icd JOIN d_icd_diagnoses ON diagnoses_icd.icd_code = d_icd_diagnoses.icd_code "
     "WHERE diagnoses_icd.hadm_id = 22595853", "row_key_join"),
    # joined on the patient while the stay is kept on one side only: every stay's heart rates come in
    ("What was the average heart rate of patient 10016742 during ICU stay 30425410?",
     "SELECT AVG(chartevents.valuenum) FROM chartevents JOIN icustays ON chartevents.subject_id = icustays.subject_id "
     "WHERE icustays.stay_id = 30425410 AND chartevents.itemid = 220045",
     "SELECT AVG(valuenum) FROM chartevents WHERE stay_id = 30425410 AND itemid = 220045", "coarse_join"),
    # output read for intake: the intake table, its columns matched by kind
    ("What was the total intake of patient 10000032?",
     "SELECT SUM(outputevents.value) FROM outputevents WHERE outputevents.subject_id = 10000032",
     "SELECT SUM(totalamount) FROM inputevents WHERE subject_id = 10000032", "wrong_concept"),
    # a diagnosis code read with the procedures' titles: the dictionary its foreign key refers to
    ("What diagnoses were coded for patient 10000032?",
     "SELECT DISTINCT d.long_title FROM diagnoses_icd di JOIN d_icd_procedures d ON di.icd_code = d.icd_code "
     "WHERE di.subject_id = 10000032",
     "SELECT DISTINCT d.long_title FROM diagnoses_icd di JOIN d_icd_diagnoses d ON di.icd_code = d.icd_code "
     "WHERE di.subject_id = 10000032",
     "wrong_reference"),
    ("How many patients had a procedure named with 'catheter'?",
     "SELECT COUNT(DISTINCT subject_id) FROM procedures_icd WHERE icd_code IN (SELECT d_icd_diagnoses.icd_code "
     "FROM d_icd_diagnoses WHERE d_icd_diagnoses.long_title LIKE '%catheter%')",
     "SELECT COUNT(DISTINCT subject_id) FROM procedures_icd WHERE icd_code IN (SELECT icd_code FROM d_icd_procedures "
     "WHERE long_title LIKE '%catheter%')", "wrong_reference"),
    # a key shared by several kinds of row linked to one kind without saying which: other events' costs come in
    ("What did the drugs of patient 10007058 cost in total?",
     "SELECT SUM(c.cost) FROM cost c JOIN prescriptions p ON c.event_id = p.row_id WHERE p.subject_id = 10007058",
     "SELECT SUM(c.cost) FROM cost c JOIN prescriptions p ON c.event_id = p.row_id WHERE p.subject_id = 10007058 "
     "AND c.event_type = 'prescriptions'", "missing_key_kind"),
    # codes returned where the question asks which procedures: what they are called is in the dictionary
    ("Which procedures were done on patient 10007058?",
     "SELECT DISTINCT d_icd_procedures.icd_code FROM d_icd_procedures WHERE d_icd_procedures.icd_code IN "
     "(SELECT procedures_icd.icd_code FROM procedures_icd WHERE procedures_icd.subject_id = 10007058)",
     "SELECT DISTINCT d_icd_procedures.long_title FROM d_icd_procedures WHERE d_icd_procedures.icd_code IN "
     "(SELECT procedures_icd.icd_code FROM procedures_icd WHERE procedures_icd.subject_id = 10007058)", "code_for_name"),
    # the table an item's records are kept in, returned for the name of the item
    ("What is the name of the output recorded first for patient 10007058?",
     "SELECT d_items.linksto FROM d_items WHERE d_items.itemid IN (SELECT outputevents.itemid FROM outputevents "
     "WHERE outputevents.subject_id = 10007058 ORDER BY outputevents.charttime LIMIT 1)",
     "SELECT d_items.label FROM d_items WHERE d_items.itemid IN (SELECT outputevents.itemid FROM outputevents "
     "WHERE outputevents.subject_id = 10007058 ORDER BY outputevents.charttime LIMIT 1)", "code_for_name"),
    # a count of different kinds answered by counting rows: a drug given twice counted twice
    ("How many different drugs were prescribed to patient 10007058?",
     "SELECT COUNT(*) FROM prescriptions WHERE subject_id = 10007058",
     "SELECT COUNT(DISTINCT drug) FROM prescriptions WHERE subject_id = 10007058", "count_not_distinct"),
    ("What is the number of unique drugs patient 10007058 was prescribed?",
     "SELECT COUNT(drug) FROM prescriptions WHERE subject_id = 10007058",
     "SELECT COUNT(DISTINCT drug) FROM prescriptions WHERE subject_id = 10007058", "count_not_distinct"),
])
def test_a_certain_mistake_is_repaired_to_the_right_answer(ctx, question, wrong, right, check):
    found_and_repaired(ctx, question, wrong, right, check)


def test_the_eicu_pattern_for_the_other_side_is_rewritten_with_the_questions_word(eicu_ctx):
    question = "What was the total intake of patient 002-12289?"
    wrong = ("SELECT SUM(cellvaluenumeric) FROM intakeoutput WHERE cellpath LIKE '%output%' AND patientunitstayid IN "
             "(SELECT patientunitstayid FROM patient WHERE uniquepid = '002-12289')")
    fixed = repair(run_checks(question, wrong, eicu_ctx))
    assert fixed is not None and "'%intake%'" in fixed
    assert rows(eicu_ctx, fixed) == rows(eicu_ctx, wrong.replace("%output%", "%intake%"))


@pytest.mark.parametrize(("question", "sql"), [
    # two numbers the query compares that the question does not state: which one is wrong is a guess
    ("How many heart rate values above 100 did patient 10000032 have?",
     "SELECT COUNT(*) FROM chartevents WHERE subject_id = 10000031 AND itemid = 220045 AND valuenum > 120"),
    # a window in days where the question counts months: no exact conversion
    ("How many lab tests did patient 10000032 have in the 2 months before 2180-07-01?",
     "SELECT COUNT(*) FROM labevents WHERE subject_id = 10000032 AND charttime BETWEEN datetime('2180-07-01', '-7 day') AND '2180-07-01'"),
    # a stated number with a unit against a plain threshold: not the same kind of slot
    ("Which stays lasted more than 3 days?", "SELECT stay_id FROM icustays WHERE los > 5"),
    # a limit is not a comparison: "top 3" against LIMIT 5 is left alone
    ("What were the top 3 drugs prescribed?", "SELECT drug FROM prescriptions GROUP BY drug ORDER BY COUNT(*) DESC LIMIT 5"),
])
def test_an_uncertain_mistake_is_named_but_not_repaired(ctx, question, sql):
    checked = run_checks(question, sql, ctx)
    assert "missing_stated_number" in {f.check for f in checked.findings}
    assert not any(f.suggestion for f in checked.findings if f.check == "missing_stated_number")


def test_counting_patients_through_a_join_counts_distinct_patients(ctx):
    question = "How many patients had enteral infusion of concentrated nutritional substances?"
    title = "enteral infusion of concentrated nutritional substances"
    wrong = ("SELECT COUNT(*) FROM procedures_icd JOIN d_icd_procedures ON procedures_icd.icd_code = d_icd_procedures.icd_code "
             f"WHERE d_icd_procedures.long_title = '{title}'")
    right = wrong.replace("COUNT(*)", "COUNT(DISTINCT procedures_icd.subject_id)")
    found_and_repaired(ctx, question, wrong, right, "counts_rows_not_patients")


EMERGENCY = "admission_type = 'ew emer.'"


@pytest.mark.parametrize("wrong", [
    f"WITH t AS (SELECT * FROM admissions WHERE {EMERGENCY}) SELECT COUNT(*) FROM t",  # a CTE's rows
    f"SELECT SUM(CASE WHEN {EMERGENCY} THEN 1 ELSE 0 END) FROM admissions",  # rows added up
    f"SELECT SUM(IIF({EMERGENCY}, 1, 0)) FROM admissions",
])
def test_rows_counted_in_other_shapes_are_counted_as_patients(ctx, wrong):
    question = "How many patients had an emergency admission?"
    right = f"SELECT COUNT(DISTINCT subject_id) FROM admissions WHERE {EMERGENCY}"
    assert rows(ctx, wrong) != rows(ctx, right)
    checked = run_checks(question, wrong, ctx)
    assert "counts_rows_not_patients" in {f.check for f in checked.findings}
    fixed = repair(checked)
    assert fixed is not None and rows(ctx, fixed) == rows(ctx, right)


def test_visits_returned_by_a_subquery_are_not_patients(ctx):
    question = "How many patients had an emergency admission?"
    wrong = f"SELECT COUNT(*) FROM (SELECT hadm_id FROM admissions WHERE {EMERGENCY}) AS t"
    assert "counts_visits_not_patients" in checks_of(ctx, question, wrong)
    assert "counts_visits_not_patients" not in checks_of(ctx, "How many emergency admissions were there?", wrong)
    # one row per patient, however it is written: no finding
    for right in (f"WITH t AS (SELECT DISTINCT subject_id FROM admissions WHERE {EMERGENCY}) SELECT COUNT(*) FROM t",
                  f"SELECT COUNT(*) FROM (SELECT subject_id FROM admissions WHERE {EMERGENCY} GROUP BY subject_id) AS t",
                  f"SELECT COUNT(*) FROM patients WHERE subject_id IN (SELECT subject_id FROM admissions WHERE {EMERGENCY})"):
        assert not checks_of(ctx, question, right) & {"counts_rows_not_patients", "counts_visits_not_patients"}, right


def test_counting_patients_from_eicu_events_joins_the_patients_table(eicu_ctx):
    # eICU's events carry the unit stay, not the patient: the patient is read through the declared key
    question = "How many patients received propofol?"
    wrong = "SELECT COUNT(*) FROM medication WHERE drugname LIKE '%propofol%'"
    right = ("SELECT COUNT(DISTINCT patient.uniquepid) FROM medication JOIN patient ON medication.patientunitstayid = "
             "patient.patientunitstayid WHERE drugname LIKE '%propofol%'")
    assert rows(eicu_ctx, wrong) != rows(eicu_ctx, right)
    checked = run_checks(question, wrong, eicu_ctx)
    assert "counts_rows_not_patients" in {f.check for f in checked.findings}
    fixed = repair(checked)
    assert fixed is not None and rows(eicu_ctx, fixed) == rows(eicu_ctx, right)
    assert "counts_rows_not_patients" not in checks_of(eicu_ctx, question, right)


def test_a_value_in_other_letter_case_is_fixed_a_drug_named_several_ways_is_asked_about(ctx, eicu_ctx):
    checked = run_checks("How many female patients are there?", "SELECT COUNT(*) FROM patients WHERE gender = 'F'", ctx)
    finding = next(f for f in checked.findings if f.check == "unknown_value")
    assert finding.clarify is None and finding.suggestion == "'f'"
    assert rows(ctx, repair(checked)) == rows(ctx, "SELECT COUNT(*) FROM patients WHERE gender = 'f'")
    # a drug the records name in several ways: which of them the user meant is theirs to say
    checked = run_checks("How many patients received Propofol?",
                         "SELECT COUNT(DISTINCT patientunitstayid) FROM medication WHERE drugname = 'Propofol'", eicu_ctx)
    finding = next(f for f in checked.findings if f.check == "unknown_value")
    assert finding.clarify is not None and finding.suggestion is None
    # a drug the records name one way only: the same name in their letter case
    checked = run_checks("How many patients were prescribed Furosemide?",
                         "SELECT COUNT(DISTINCT subject_id) FROM prescriptions WHERE drug = 'Furosemide'", ctx)
    assert next(f for f in checked.findings if f.check == "unknown_value").suggestion == "'furosemide'"
    assert rows(ctx, repair(checked)) == rows(ctx, "SELECT COUNT(DISTINCT subject_id) FROM prescriptions WHERE drug = 'furosemide'")


@pytest.mark.parametrize(("question", "wrong", "right"), [
    # the group's table is read: the condition goes on it, with the code as the column writes it
    ("How many elective admissions were there?", "SELECT COUNT(*) FROM admissions",
     "SELECT COUNT(*) FROM admissions WHERE admission_type = 'elective'"),
    # it is not: joined by the patient id it holds once per row, the query's bare columns qualified
    ("How many female patients were prescribed heparin?",
     "SELECT COUNT(DISTINCT subject_id) FROM prescriptions WHERE drug = 'heparin'",
     "SELECT COUNT(DISTINCT prescriptions.subject_id) FROM prescriptions JOIN patients ON patients.subject_id = "
     "prescriptions.subject_id WHERE drug = 'heparin' AND patients.gender = 'f'"),
])
def test_a_named_group_the_query_never_keeps_to_is_added(ctx, question, wrong, right):
    assert rows(ctx, wrong) != rows(ctx, right)
    checked = run_checks(question, wrong, ctx)
    assert any(f.check == "missing_group_filter" and f.suggestion for f in checked.findings)
    fixed = repair(checked)
    assert fixed is not None and rows(ctx, fixed) == rows(ctx, right)


def test_an_eicu_group_is_read_through_the_stay_the_events_belong_to(eicu_ctx):
    wrong = "SELECT COUNT(DISTINCT patientunitstayid) FROM medication WHERE drugname LIKE '%propofol%'"
    right = ("SELECT COUNT(DISTINCT medication.patientunitstayid) FROM medication JOIN patient ON patient.patientunitstayid = "
             "medication.patientunitstayid WHERE drugname LIKE '%propofol%' AND patient.gender = 'male'")
    assert rows(eicu_ctx, wrong) != rows(eicu_ctx, right)
    fixed = repair(run_checks("How many male patients' stays had propofol?", wrong, eicu_ctx))
    assert fixed is not None and rows(eicu_ctx, fixed) == rows(eicu_ctx, right)


def test_a_group_in_a_nested_query_is_named_but_not_repaired(ctx):
    sql = ("SELECT COUNT(*) FROM admissions WHERE subject_id IN (SELECT subject_id FROM prescriptions WHERE drug = 'heparin')")
    checked = run_checks("How many admissions of female patients had heparin?", sql, ctx)
    finding = next(f for f in checked.findings if f.check == "missing_group_filter")
    assert finding.suggestion is None


def test_a_field_of_the_other_side_becomes_the_same_tables_field_of_the_asked_side(eicu_ctx):
    question = "What was the admission weight of patient 002-12289?"
    wrong = "SELECT admissionheight FROM patient WHERE uniquepid = '002-12289'"
    right = "SELECT admissionweight FROM patient WHERE uniquepid = '002-12289'"
    assert rows(eicu_ctx, wrong) != rows(eicu_ctx, right)
    checked = run_checks(question, wrong, eicu_ctx)
    assert any(f.check == "wrong_concept" and f.suggestion for f in checked.findings)
    fixed = repair(checked)
    assert fixed is not None and rows(eicu_ctx, fixed) == rows(eicu_ctx, right)
    assert "wrong_concept" not in checks_of(eicu_ctx, question, right)


def test_a_visit_named_by_its_id_stands_for_its_patient_and_a_date_is_a_period(ctx):
    question = "Which care units did patient 10004235 pass through during the admission that started on 2100-03-19?"
    # the admission the date chose, looked up by its id: the patient is accounted for, the date's parts are no numbers
    assert "missing_stated_number" not in checks_of(ctx, question, "SELECT DISTINCT careunit FROM transfers WHERE hadm_id = 24181354")
    # another patient's admission: the stated patient is still missing
    assert "missing_stated_number" in checks_of(ctx, question, "SELECT DISTINCT careunit FROM transfers WHERE hadm_id = 22595853")


def test_a_join_on_the_patient_is_right_when_the_question_names_no_patient(ctx):
    # "the patient of stay ..." may mean all of that patient's records: no finding without a stated patient
    sql = ("SELECT AVG(chartevents.valuenum) FROM chartevents JOIN icustays ON chartevents.subject_id = icustays.subject_id "
           "WHERE icustays.stay_id = 39553978 AND chartevents.itemid = 220045")
    assert "coarse_join" not in checks_of(ctx, "What is the average heart rate of the patient of ICU stay 39553978?", sql)


def test_a_repaired_verdict_says_what_was_done_not_what_to_do(ctx):
    verdict = verify("How many female patients are there?", "SELECT COUNT(DISTINCT subject_id) FROM patients", db=ctx, method="offline")
    assert verdict.action == "correct" and "The query was changed to fix this" in verdict.message
    assert "Add a condition" not in verdict.message


@pytest.mark.parametrize(("db", "question", "wrong", "right"), [
    # eICU: a unit stay is not a patient; the patient is read through the stay's declared key
    ("eicu", "How many patients had a potassium test?",
     "SELECT COUNT(DISTINCT lab.patientunitstayid) FROM lab WHERE lab.labname = 'potassium'",
     "SELECT COUNT(DISTINCT patient.uniquepid) FROM lab JOIN patient ON lab.patientunitstayid = patient.patientunitstayid "
     "WHERE lab.labname = 'potassium'"),
    ("eicu", "How many patients were admitted from the emergency department?",
     "SELECT COUNT(DISTINCT patientunitstayid) FROM patient WHERE hospitaladmitsource = 'emergency department'",
     "SELECT COUNT(DISTINCT uniquepid) FROM patient WHERE hospitaladmitsource = 'emergency department'"),
    # MIMIC-IV: hospital admissions of the same patient
    ("mimic_iv", "How many patients were admitted as an emergency?",
     "SELECT COUNT(DISTINCT hadm_id) FROM admissions WHERE admission_type = 'ew emer.'",
     "SELECT COUNT(DISTINCT subject_id) FROM admissions WHERE admission_type = 'ew emer.'"),
])
def test_counting_patients_by_their_stays_counts_a_patient_per_stay(ctx, eicu_ctx, db, question, wrong, right):
    context = ctx if db == "mimic_iv" else eicu_ctx
    found_and_repaired(context, question, wrong, right, "counts_visits_not_patients")
    # counting the stays is what a question about stays asks
    assert "counts_visits_not_patients" not in checks_of(context, "How many hospital stays did the patients have?", wrong)


def test_amounts_with_units_in_text_are_not_ordered_as_amounts(eicu_ctx):
    question = "What was the highest dosage of aspirin given?"
    checked = run_checks(question, "SELECT MAX(dosage) FROM medication WHERE drugname LIKE '%aspirin%'", eicu_ctx)
    finding = next(f for f in checked.findings if f.check == "text_compared_as_text")
    assert finding.severity == "error" and finding.suggestion is None and "'81 mg'" in finding.message
    assert rows(eicu_ctx, "SELECT MAX(dosage) FROM medication WHERE drugname LIKE '%aspirin%'") == [("81 mg",)]  # not the largest
    # the number of years in eICU's age column is always two digits: text order is number order, nothing to say
    assert "text_compared_as_text" not in checks_of(eicu_ctx, "How old is the oldest patient?", "SELECT MAX(age) FROM patient")


@pytest.mark.parametrize(("db", "question", "wrong", "right"), [
    ("eicu", "What was the discharge weight of stay 176730?", "SELECT admissionweight FROM patient WHERE patientunitstayid = 176730",
     "SELECT dischargeweight FROM patient WHERE patientunitstayid = 176730"),
    ("eicu", "When was stay 176730 admitted to the hospital?", "SELECT unitadmittime FROM patient WHERE patientunitstayid = 176730",
     "SELECT hospitaladmittime FROM patient WHERE patientunitstayid = 176730"),
    ("mimic_iv", "When was patient 10000032 discharged for the first time?",
     "SELECT admittime FROM admissions WHERE subject_id = 10000032 ORDER BY admittime LIMIT 1",
     "SELECT dischtime FROM admissions WHERE subject_id = 10000032 ORDER BY dischtime LIMIT 1"),
    # the visit picked by its admission (ORDER BY), its discharge returned
    ("mimic_iv", "When was the last time patient 10000032 was admitted to the hospital?",
     "SELECT dischtime FROM admissions WHERE subject_id = 10000032 ORDER BY admittime DESC LIMIT 1",
     "SELECT admittime FROM admissions WHERE subject_id = 10000032 ORDER BY admittime DESC LIMIT 1"),
])
def test_admission_and_discharge_icu_and_hospital_are_sides_of_a_visit(ctx, eicu_ctx, db, question, wrong, right):
    found_and_repaired(ctx if db == "mimic_iv" else eicu_ctx, question, wrong, right, "wrong_concept")


@pytest.mark.parametrize(("db", "question", "sql"), [
    # whether the discharge time is set says whether the visit is over
    ("mimic_iv", "How many patients are currently admitted?", "SELECT COUNT(DISTINCT subject_id) FROM admissions WHERE dischtime IS NULL"),
    # the current hospital visit, its weights ordered by unit admission
    ("eicu", "What was the first weight of patient 002-1195 during the current hospital visit?",
     "SELECT admissionweight FROM patient WHERE uniquepid = '002-1195' AND hospitaldischargetime IS NULL AND admissionweight IS NOT NULL "
     "ORDER BY unitadmittime LIMIT 1"),
    # "the admission that began on ..." names the visit, not its start
    ("mimic_iv", "When was patient 10004235 discharged from the hospital during the admission that began on 2100-03-19?",
     "SELECT dischtime FROM admissions WHERE hadm_id = 24181354"),
    # a care unit is a ward, not the ICU stay as against the hospital stay
    ("mimic_iv", "How many hours since patient 10004733 last stayed in the careunit neurology in the current hospital encounter?",
     "SELECT 24 * (strftime('%J', '2100-12-31 23:59:00') - strftime('%J', transfers.intime)) FROM transfers WHERE transfers.hadm_id IN "
     "(SELECT hadm_id FROM admissions WHERE subject_id = 10004733 AND dischtime IS NULL) AND careunit = 'neurology' "
     "ORDER BY transfers.intime DESC LIMIT 1"),
    # a value that holds 'icu' inside a word is no ICU stay
    ("eicu", "How many patients in the hospital had a biventricular failure diagnosis?",
     "SELECT COUNT(DISTINCT patient.uniquepid) FROM patient JOIN diagnosis ON diagnosis.patientunitstayid = patient.patientunitstayid "
     "WHERE diagnosis.diagnosisname LIKE '%biventricular%'"),
])
def test_visit_sides_stay_silent_on_right_queries(ctx, eicu_ctx, db, question, sql):
    assert "wrong_concept" not in checks_of(ctx if db == "mimic_iv" else eicu_ctx, question, sql)


def test_urine_is_an_output(ctx):
    question = "How much urine did patient 10000032 produce in total?"
    assert "wrong_concept" in checks_of(ctx, question, "SELECT SUM(totalamount) FROM inputevents WHERE subject_id = 10000032")
    assert "wrong_concept" not in checks_of(ctx, question, "SELECT SUM(value) FROM outputevents WHERE subject_id = 10000032")


@pytest.mark.parametrize(("db", "question", "wrong", "right"), [
    ("eicu", "How many patients died in the hospital?",
     "SELECT COUNT(DISTINCT uniquepid) FROM patient WHERE hospitaldischargestatus = 'alive'",
     "SELECT COUNT(DISTINCT uniquepid) FROM patient WHERE hospitaldischargestatus = 'expired'"),
    ("eicu", "How many patients survived their hospital stay?",
     "SELECT COUNT(DISTINCT uniquepid) FROM patient WHERE hospitaldischargestatus = 'expired'",
     "SELECT COUNT(DISTINCT uniquepid) FROM patient WHERE hospitaldischargestatus = 'alive'"),
    ("mimic_iv", "How many patients have died?", "SELECT COUNT(DISTINCT subject_id) FROM patients WHERE dod IS NULL",
     "SELECT COUNT(DISTINCT subject_id) FROM patients WHERE dod IS NOT NULL"),
    ("mimic_iv", "How many patients are alive?", "SELECT COUNT(DISTINCT subject_id) FROM patients WHERE dod IS NOT NULL",
     "SELECT COUNT(DISTINCT subject_id) FROM patients WHERE dod IS NULL"),
])
def test_the_living_for_the_dead_is_reversed(ctx, eicu_ctx, db, question, wrong, right):
    found_and_repaired(ctx if db == "mimic_iv" else eicu_ctx, question, wrong, right, "reversed_survival")


def test_a_total_answered_by_the_largest_value(ctx):
    question = "What was the total cost of the hospital stays of patient 10000032?"
    wrong, right = ("SELECT MAX(cost) FROM cost WHERE subject_id = 10000032", "SELECT SUM(cost) FROM cost WHERE subject_id = 10000032")
    assert rows(ctx, wrong) != rows(ctx, right)
    checked = run_checks(question, wrong, ctx)
    assert any(f.check == "wrong_aggregate" for f in checked.findings)
    assert rows(ctx, repair(checked)) == rows(ctx, right)
    # the highest of the totals is asked for; a test named "total" is a name
    assert "wrong_aggregate" not in checks_of(ctx, "What was the highest total cost of a stay of patient 10000032?", wrong)
    bilirubin = ("SELECT MAX(valuenum) FROM labevents WHERE subject_id = 10000032 AND itemid IN "
                 "(SELECT itemid FROM d_labitems WHERE label = 'bilirubin, total')")
    assert "wrong_aggregate" not in checks_of(ctx, "What was the total bilirubin of patient 10000032 at its peak?", bilirubin)


def test_a_short_name_made_of_the_questions_initials(ctx):
    question = "What is the date of birth of patient 10000032?"
    assert "wrong_column" in checks_of(ctx, question, "SELECT dod FROM patients WHERE subject_id = 10000032")
    assert "wrong_column" not in checks_of(ctx, question, "SELECT dob FROM patients WHERE subject_id = 10000032")


def test_a_kind_of_record_the_schema_holds_must_be_read(ctx, eicu_ctx):
    question = "Which allergies does patient 003-11756 have?"
    stays = "(SELECT patientunitstayid FROM patient WHERE uniquepid = '003-11756')"
    assert "kind_not_read" in checks_of(eicu_ctx, question, f"SELECT drugname FROM medication WHERE patientunitstayid IN {stays}")
    assert "kind_not_read" not in checks_of(eicu_ctx, question, f"SELECT allergyname FROM allergy WHERE patientunitstayid IN {stays}")
    question = "What insurance did patient 10000032 have?"
    assert "kind_not_read" in checks_of(ctx, question, "SELECT admission_type FROM admissions WHERE subject_id = 10000032")
    assert "kind_not_read" not in checks_of(ctx, question, "SELECT insurance FROM admissions WHERE subject_id = 10000032")


def test_a_date_within_a_stay_the_question_names_is_a_period(eicu_ctx):
    question = "What was the total intake of stay 176730 on 2104-05-01?"
    sql = "SELECT SUM(cellvaluenumeric) FROM intakeoutput WHERE patientunitstayid = 176730 AND cellpath LIKE '%intake%'"
    assert "missing_time_window" in checks_of(eicu_ctx, question, sql)


# Found in review (session 17): right queries the new checks must leave alone.
@pytest.mark.parametrize(("db", "question", "sql", "check"), [
    ("mimic_iv", "How many patients with a sepsis diagnosis survived?",
     "SELECT COUNT(DISTINCT subject_id) FROM diagnoses_icd WHERE subject_id NOT IN (SELECT subject_id FROM patients WHERE dod IS NOT NULL)",
     "reversed_survival"),
    ("mimic_iv", "How many patients had more than 2 ICU stays?",
     "SELECT COUNT(*) FROM patients p WHERE (SELECT COUNT(DISTINCT i.stay_id) FROM icustays i WHERE i.subject_id = p.subject_id) > 2",
     "counts_visits_not_patients"),
    ("eicu", "What is the average hospital length of stay in days for patients with an ICU stay over 48 hours?",
     "SELECT AVG(julianday(hospitaldischargetime) - julianday(hospitaladmittime)) FROM patient "
     "WHERE (julianday(unitdischargetime) - julianday(unitadmittime)) * 24 > 48", "wrong_duration_unit"),
    ("mimic_iv", "When did patient 10004235 undergo a total gastrectomy?",
     "SELECT MAX(charttime) FROM procedures_icd WHERE subject_id = 10004235", "wrong_aggregate"),
    ("mimic_iv", "What was the discharge location of patient 10004235 during the first hospital visit?",
     "SELECT discharge_location FROM admissions WHERE subject_id = 10004235 AND dischtime IS NOT NULL ORDER BY admittime LIMIT 1",
     "wrong_concept"),
    ("mimic_iv", "What dose of aspirin did patient 10004235 receive during the hospital stay?",
     "SELECT dose_val_rx, dose_unit_rx FROM prescriptions WHERE subject_id = 10004235 AND drug = 'aspirin'", "wrong_concept"),
    ("eicu", "How many patients received smoking cessation counseling?",
     "SELECT COUNT(DISTINCT patient.uniquepid) FROM patient JOIN treatment ON treatment.patientunitstayid = patient.patientunitstayid "
     "WHERE treatment.treatmentname LIKE '%smoking cessation%'", "not_in_records"),
    ("mimic_iv", "What was the total amount billed to patient 10004235?", "SELECT SUM(cost) FROM cost WHERE subject_id = 10004235",
     "not_in_records"),
    ("mimic_iv", "How many patients had an echocardiogram? Find the count.",
     "SELECT COUNT(DISTINCT subject_id) FROM procedures_icd WHERE icd_code IN "
     "(SELECT icd_code FROM d_icd_procedures WHERE long_title LIKE '%echocardiog%')", "not_in_records"),
    ("eicu", "How many patients had bronchospasm due to anaphylaxis?",
     "SELECT COUNT(DISTINCT patient.uniquepid) FROM patient JOIN diagnosis ON diagnosis.patientunitstayid = patient.patientunitstayid "
     "WHERE diagnosis.diagnosisname LIKE '%anaphylaxis%'", "kind_not_read"),
])
def test_right_queries_the_new_checks_leave_alone(ctx, eicu_ctx, db, question, sql, check):
    assert check not in checks_of(ctx if db == "mimic_iv" else eicu_ctx, question, sql)


def test_a_limit_one_is_not_stated_by_a_year_ago(ctx):
    sql = ("SELECT icd_code FROM diagnoses_icd WHERE subject_id = 10004235 AND charttime >= datetime('2100-12-31 23:59:00', '-1 year') "
           "LIMIT 1")
    assert "limit_cuts_answer" in checks_of(ctx, "List every diagnosis of patient 10004235 since 1 year ago.", sql)


def test_a_column_that_refers_to_several_tables_or_two_siblings_is_no_wrong_reference(ctx):
    # cost.event_id refers to rows of several tables; two coded-event tables linked on the code share one dictionary
    for sql in ("SELECT cost.cost FROM cost WHERE cost.event_type = 'procedures_icd' AND cost.event_id IN "
                "(SELECT procedures_icd.row_id FROM procedures_icd)",
                "SELECT COUNT(*) FROM diagnoses_icd d JOIN icustays i ON d.hadm_id = i.hadm_id"):
        assert "wrong_reference" not in checks_of(ctx, "How much did it cost?", sql)


def test_a_question_kept_to_the_icu_answered_from_the_whole_hospital_stay(ctx, eicu_ctx):
    question = "Which drugs did patient 10000032 receive in the ICU?"
    hospital = "SELECT DISTINCT drug FROM prescriptions WHERE subject_id = 10000032"
    finding = next(f for f in run_checks(question, hospital, ctx).findings if f.check == "missing_icu_scope")
    from ehrguard.verify.offline.policy import blocking

    assert finding.severity == "warning" and blocking([finding]) and finding.suggestion is None
    within = ("SELECT DISTINCT p.drug FROM prescriptions p JOIN icustays i ON p.hadm_id = i.hadm_id WHERE p.subject_id = "
              "10000032 AND p.starttime BETWEEN i.intime AND i.outtime")
    assert "missing_icu_scope" not in checks_of(ctx, question, within)
    assert "missing_icu_scope" not in checks_of(ctx, "How many patients were admitted to the ICU?",
                                                "SELECT COUNT(DISTINCT subject_id) FROM icustays")
    # eICU's visits are ICU stays: every record is the ICU's
    assert "missing_icu_scope" not in checks_of(eicu_ctx, "What did the ICU stays cost?", "SELECT SUM(cost) FROM cost")


def test_one_visit_asked_and_the_tables_joined_on_the_patient_only(ctx):
    question = "What were the diagnoses of patient 10000032's first admission?"
    first = "(SELECT MIN(admittime) FROM admissions WHERE subject_id = 10000032)"
    wrong = ("SELECT d.long_title FROM diagnoses_icd di JOIN d_icd_diagnoses d ON di.icd_code = d.icd_code JOIN admissions a "
             f"ON di.subject_id = a.subject_id WHERE a.subject_id = 10000032 AND a.admittime = {first}")
    right = wrong.replace("di.subject_id = a.subject_id", "di.hadm_id = a.hadm_id")
    found_and_repaired(ctx, question, wrong, right, "coarse_join")
    [finding] = [f for f in run_checks(question, wrong, ctx).findings if f.check == "coarse_join"]
    from ehrguard.verify.offline.policy import blocking

    assert finding.severity == "warning" and blocking([finding])
    # a filter by the patient (IN) pairs no rows, and a question about every visit names no one visit
    semi = ("SELECT d.long_title FROM diagnoses_icd di JOIN d_icd_diagnoses d ON di.icd_code = d.icd_code WHERE di.subject_id IN "
            "(SELECT subject_id FROM admissions WHERE subject_id = 10000032)")
    assert "coarse_join" not in checks_of(ctx, question, semi)
    assert "coarse_join" not in checks_of(ctx, "What were all the diagnoses of patient 10000032?", wrong)


def test_codes_asked_for_or_a_name_returned_are_no_code_for_name(ctx):
    codes = ("SELECT DISTINCT d_icd_procedures.icd_code FROM d_icd_procedures WHERE d_icd_procedures.icd_code IN "
             "(SELECT procedures_icd.icd_code FROM procedures_icd WHERE procedures_icd.subject_id = 10007058)")
    assert "code_for_name" not in checks_of(ctx, "What are the ICD codes of the procedures of patient 10007058?", codes)
    assert "code_for_name" not in checks_of(ctx, "Which drugs did patient 10007058 get?",
                                            "SELECT DISTINCT drug FROM prescriptions WHERE subject_id = 10007058")
    # a table with no name column of its own (the events table): nothing to return instead
    assert "code_for_name" not in checks_of(ctx, "Which procedures were done on patient 10007058?",
                                            "SELECT icd_code FROM procedures_icd WHERE subject_id = 10007058")


def test_an_item_filter_inside_a_subquery_does_not_pick_the_outer_reads_items(ctx):
    question = "What was the last weight of patient 10007058?"
    inner = ("SELECT MAX(charttime) FROM chartevents WHERE subject_id = 10007058 AND itemid IN "
             "(SELECT itemid FROM d_items WHERE label = 'daily weight')")
    mixed = f"SELECT valuenum FROM chartevents WHERE subject_id = 10007058 AND charttime = ({inner})"
    assert "missing_item_filter" in checks_of(ctx, question, mixed)
    picked = mixed.replace("WHERE subject_id = 10007058 AND charttime", "WHERE itemid IN (SELECT itemid FROM d_items WHERE label = "
                           "'daily weight') AND subject_id = 10007058 AND charttime", 1)
    assert "missing_item_filter" not in checks_of(ctx, question, picked)


def test_a_count_of_occurrences_or_of_people_is_no_count_of_kinds(ctx):
    rows_asked = "SELECT COUNT(*) FROM prescriptions WHERE subject_id = 10007058"
    assert "count_not_distinct" not in checks_of(ctx, "How many prescriptions did patient 10007058 get?", rows_asked)
    # patients are the counting-people checks' to judge
    assert "count_not_distinct" not in checks_of(ctx, "How many different patients got heparin?",
                                                 "SELECT COUNT(subject_id) FROM prescriptions WHERE drug = 'heparin'")
    # kinds counted per group: the GROUP BY makes each count one group's
    per_drug = "SELECT drug, COUNT(*) FROM prescriptions GROUP BY drug"
    assert "count_not_distinct" not in checks_of(ctx, "How many different routes does each drug have?", per_drug)
    # the events table holds no names of its own: flagged, with nothing certain to count instead
    checked = run_checks("How many unique lab tests did patient 10007058 have?", "SELECT COUNT(*) FROM labevents WHERE subject_id = "
                         "10007058", ctx)
    assert [f.suggestion for f in checked.findings if f.check == "count_not_distinct"] == [None]


def test_a_dictionary_read_without_the_table_that_holds_its_items_is_no_missing_key_kind(ctx):
    # d_items.linksto says which events table holds an item; a label alone already picks the item
    sql = ("SELECT MAX(valuenum) FROM chartevents WHERE subject_id = 10007058 AND itemid IN (SELECT itemid FROM d_items "
           "WHERE label = 'heart rate')")
    assert not checks_of(ctx, "What was the highest heart rate of patient 10007058?", sql) & {"missing_key_kind", "wrong_key_kind"}


@pytest.mark.parametrize(("question", "sql"), [
    # the kind of a shared key naming another table than the one linked: a diagnosis's cost read for a drug's rows
    ("What did the drugs of patient 10007058 cost in total?",
     "SELECT SUM(c.cost) FROM cost c JOIN prescriptions p ON c.event_id = p.row_id WHERE p.subject_id = 10007058 "
     "AND c.event_type = 'diagnoses_icd'"),
    # charted values read with the items of another events table
    ("What was the highest heart rate of patient 10007058?",
     "SELECT MAX(valuenum) FROM chartevents WHERE subject_id = 10007058 AND itemid IN (SELECT itemid FROM d_items "
     "WHERE label = 'heart rate' AND linksto = 'inputevents')"),
])
def test_a_kind_column_naming_another_table_is_an_error_left_unrepaired(ctx, question, sql):
    # the kind or the table read may be the one meant: no repair
    finding = next(f for f in run_checks(question, sql, ctx).findings if f.check == "wrong_key_kind")
    assert finding.severity == "error" and finding.suggestion is None


@pytest.mark.parametrize(("question", "sql"), [
    # the kind stated in the join's ON, or as a one-value IN list
    ("What did the drugs of patient 10007058 cost?", "SELECT SUM(cost.cost) FROM cost JOIN prescriptions ON cost.event_id = "
     "prescriptions.row_id AND cost.event_type = 'prescriptions' WHERE prescriptions.subject_id = 10007058"),
    ("What did the drugs of patient 10007058 cost?", "SELECT SUM(cost.cost) FROM cost WHERE cost.event_type IN ('prescriptions') "
     "AND cost.event_id IN (SELECT row_id FROM prescriptions WHERE subject_id = 10007058)"),
    # "named" beside a value the query looks for; what is returned is no code
    ("Which patients got the drug named aspirin?", "SELECT DISTINCT subject_id FROM prescriptions WHERE drug = 'aspirin'"),
    ("When was the drug named aspirin first prescribed to patient 10007058?",
     "SELECT starttime FROM prescriptions WHERE subject_id = 10007058 AND drug = 'aspirin' ORDER BY starttime LIMIT 1"),
    # kinds counted over a table already one row per kind (grouped, DISTINCT in a CTE), or inside a condition
    ("How many different drugs did patient 10007058 get?",
     "SELECT COUNT(*) FROM (SELECT drug FROM prescriptions WHERE subject_id = 10007058 GROUP BY drug)"),
    ("How many different drugs did patient 10007058 get?",
     "WITH d AS (SELECT DISTINCT drug FROM prescriptions WHERE subject_id = 10007058) SELECT COUNT(*) FROM d"),
    ("How many different drugs were prescribed to patient 10007058 more than twice?",
     "SELECT COUNT(DISTINCT p.drug) FROM prescriptions p WHERE p.subject_id = 10007058 AND (SELECT COUNT(*) FROM prescriptions q "
     "WHERE q.drug = p.drug AND q.subject_id = 10007058) > 2"),
    # visits and occasions counted: one row each
    ("How many different hospital admissions did patient 10007058 have?", "SELECT COUNT(*) FROM admissions WHERE subject_id = 10007058"),
    ("How many separate times was aspirin prescribed to patient 10007058?",
     "SELECT COUNT(*) FROM prescriptions WHERE subject_id = 10007058 AND drug = 'aspirin'"),
    # an item filter inside an EXISTS correlated with the outer read picks its items
    ("What was the last heart rate of patient 10007058?",
     "SELECT c.valuenum FROM chartevents c WHERE c.subject_id = 10007058 AND EXISTS (SELECT 1 FROM d_items d WHERE d.itemid = "
     "c.itemid AND d.label = 'heart rate') ORDER BY c.charttime DESC LIMIT 1"),
])
def test_right_queries_the_session_19_checks_leave_alone(ctx, question, sql):
    assert not checks_of(ctx, question, sql) & {"missing_key_kind", "wrong_key_kind", "code_for_name", "count_not_distinct",
                                                "missing_item_filter"}


def test_a_narrower_output_is_found_but_not_repaired_to_every_output(ctx):
    """Urine is some of the outputs (foley, void, condom cath, ...): reading the whole output table would answer another
    question, so the intake query is refused as it is and not "repaired" to the sum of every drain and tube."""
    question = "What was the total urine output of patient 10000032?"
    checked = run_checks(question, "SELECT SUM(inputevents.totalamount) FROM inputevents WHERE inputevents.subject_id = 10000032", ctx)
    finding = next(f for f in checked.findings if f.check == "wrong_concept")
    assert finding.severity == "error" and finding.suggestion is None and repair(checked) is None
    # the plain word still gets its certain repair
    plain = run_checks("What was the total output of patient 10000032?",
                       "SELECT SUM(inputevents.totalamount) FROM inputevents WHERE inputevents.subject_id = 10000032", ctx)
    assert rows(ctx, repair(plain)) == rows(ctx, "SELECT SUM(value) FROM outputevents WHERE subject_id = 10000032")


@pytest.mark.parametrize(("db", "question", "wrong", "right"), [
    # "or older" keeps the number itself; ">" leaves the admissions of 70-year-olds out
    ("mimic_iv", "How many hospital admissions were of people aged 70 or older?", "SELECT COUNT(*) FROM admissions WHERE age > 70",
     "SELECT COUNT(*) FROM admissions WHERE age >= 70"),
    # "more than" leaves it out; the number written on the left is read the same way
    ("mimic_iv", "How many admissions had an age of more than 60?", "SELECT COUNT(*) FROM admissions WHERE 60 <= age",
     "SELECT COUNT(*) FROM admissions WHERE 60 < age"),
    ("eicu", "How many unit stays were of patients 80 and up?", "SELECT COUNT(*) FROM patient WHERE CAST(age AS INTEGER) > 80",
     "SELECT COUNT(*) FROM patient WHERE CAST(age AS INTEGER) >= 80"),
    ("eicu", "How many unit stays were of patients younger than 60?", "SELECT COUNT(*) FROM patient WHERE CAST(age AS INTEGER) <= 60",
     "SELECT COUNT(*) FROM patient WHERE CAST(age AS INTEGER) < 60"),
])
def test_a_bound_kept_or_left_out_as_the_question_says(ctx, eicu_ctx, db, question, wrong, right):
    found_and_repaired(ctx if db == "mimic_iv" else eicu_ctx, question, wrong, right, "wrong_bound")


@pytest.mark.parametrize("question", [
    "How many admissions lasted over 3 days?",  # "over N days" may be a period: not read
    "How many admissions were between 60 and 70 years old?",
    "How many admissions were older than 60, and how many exactly 60?",  # a number stated twice: which one is compared?
])
def test_bounds_stay_silent_where_the_phrase_says_no_side(ctx, question):
    assert "wrong_bound" not in checks_of(ctx, question, "SELECT COUNT(*) FROM admissions WHERE age <= 60 AND age >= 3")


def test_a_text_column_of_numbers_compared_with_a_number_is_cast(ctx):
    # '5' > '1000' as text: a comparison with the number written as text or as a number keeps the wrong doses
    question = "How many insulin orders were for more than 12 units?"
    for wrong in ("SELECT COUNT(*) FROM prescriptions WHERE drug = 'insulin' AND dose_val_rx > '12'",
                  "SELECT COUNT(*) FROM prescriptions WHERE drug = 'insulin' AND dose_val_rx > 12"):
        found_and_repaired(ctx, question, wrong, "SELECT COUNT(*) FROM prescriptions WHERE drug = 'insulin' AND "
                           "CAST(dose_val_rx AS REAL) > 12", "text_compared_as_text")


@pytest.mark.parametrize(("db", "question", "wrong", "right", "check"), [
    ("mimic_iv", "Show each patient's number of ICU stays, for the patients with more than one.",
     "SELECT hadm_id, COUNT(*) FROM icustays GROUP BY hadm_id HAVING COUNT(*) > 1",
     "SELECT subject_id, COUNT(*) FROM icustays GROUP BY subject_id HAVING COUNT(*) > 1", "wrong_group_key"),
    ("eicu", "Which patients had more than 2 unit stays?",
     "SELECT patienthealthsystemstayid FROM patient GROUP BY patienthealthsystemstayid HAVING COUNT(*) > 2",
     "SELECT uniquepid FROM patient GROUP BY uniquepid HAVING COUNT(*) > 2", "wrong_group_key"),
    # a visit named by its id, widened to every visit of its patient through a lookup
    ("mimic_iv", "What was the total cost of hospital admission 22595853?",
     "SELECT SUM(cost) FROM cost WHERE subject_id = (SELECT subject_id FROM admissions WHERE hadm_id = 22595853)",
     "SELECT SUM(cost) FROM cost WHERE hadm_id = 22595853", "widened_scope"),
    ("eicu", "What was the total cost of hospital stay 156432?",
     "SELECT SUM(c.cost) FROM cost c WHERE c.uniquepid IN (SELECT uniquepid FROM patient WHERE patienthealthsystemstayid = 156432)",
     "SELECT SUM(c.cost) FROM cost c WHERE c.patienthealthsystemstayid = 156432", "widened_scope"),
])
def test_patients_and_their_visits_kept_apart(ctx, eicu_ctx, db, question, wrong, right, check):
    found_and_repaired(ctx if db == "mimic_iv" else eicu_ctx, question, wrong, right, check)


def test_grouping_by_visit_is_right_where_the_question_asks_per_visit(ctx):
    assert "wrong_group_key" not in checks_of(ctx, "For each hospital admission, how many ICU stays were there?",
                                              "SELECT hadm_id, COUNT(*) FROM icustays GROUP BY hadm_id")


def test_counting_admissions_of_patients_is_not_counting_patients(ctx):
    """The phrase a count word starts says what is counted: "how many admissions were for patients aged ..." counts
    admissions; "how many diabetic patients" counts people."""
    from ehrguard.verify.checks.conventions import counts_people

    assert not counts_people("How many admissions were for patients aged 65 or over?")
    assert not counts_people("How many unit stays were of patients aged 75 and up?")
    assert counts_people("How many diabetic patients were admitted?") and counts_people("how many of the patients died?")
    assert counts_people("how many pts got vancomycin?")  # clinicians' shorthand counts people all the same
    assert "count_without_distinct" in checks_of(ctx, "how many pts got vancomycin?",
                                                 "SELECT COUNT(subject_id) FROM prescriptions WHERE drug = 'vancomycin'")
    sql = "SELECT COUNT(*) FROM admissions WHERE age >= 65"
    assert not checks_of(ctx, "How many admissions were for patients aged 65 or over?", sql) & {
        "counts_rows_not_patients", "count_without_distinct"}


def test_a_longer_value_holding_the_named_one_is_not_faulted(eicu_ctx):
    """'bedside glucose' where the question says "fingerstick glucose": people name the narrower item in their own words
    (forms, routes, salts, specimens: 'aspirin ec', 'docusate sodium', 'glucose, csf'), so a value holding the one the
    question names is not called a substitution (tried and taken out in session 20: it faulted right queries)."""
    sql = "SELECT labresult FROM lab WHERE patientunitstayid = 2893348 AND labname = 'bedside glucose' ORDER BY labresulttime LIMIT 1"
    assert "wrong_value" not in checks_of(eicu_ctx, "What was the first fingerstick glucose of unit stay 2893348?", sql)


def test_the_length_of_the_other_visit_returned_is_found(ctx):
    """A hospital length of stay answered from the ICU stay's own times (or the other way round) is the other visit;
    an attribute of the ICU stay (its care unit) or a question that names both visits is not."""
    icu_times = "SELECT julianday(outtime) - julianday(intime) FROM icustays WHERE subject_id = 10004235 ORDER BY intime LIMIT 1"
    hospital_times = ("SELECT julianday(dischtime) - julianday(admittime) FROM admissions WHERE subject_id = 10004235 "
                      "ORDER BY admittime LIMIT 1")
    assert rows(ctx, icu_times) != rows(ctx, hospital_times)
    assert "wrong_concept" in checks_of(ctx, "How many days was patient 10004235's first stay in the hospital?", icu_times)
    assert "wrong_concept" in checks_of(ctx, "How many days was patient 10004235's first ICU stay?", hospital_times)
    assert "wrong_concept" not in checks_of(ctx, "How many days was patient 10004235's first ICU stay?", icu_times)
    assert "wrong_concept" not in checks_of(ctx, "What was the first care unit of patient 10004235 in the hospital?",
                                            "SELECT first_careunit FROM icustays WHERE subject_id = 10004235 ORDER BY intime LIMIT 1")
    assert "wrong_concept" not in checks_of(ctx, "When did patient 10004235 first enter the ICU during a hospital stay?",
                                            "SELECT intime FROM icustays WHERE subject_id = 10004235 ORDER BY intime LIMIT 1")


def test_the_patient_of_a_visit_asked_for_is_no_widening(ctx):
    sql = "SELECT COUNT(*) FROM admissions WHERE subject_id = (SELECT subject_id FROM admissions WHERE hadm_id = 22595853)"
    assert "widened_scope" not in checks_of(ctx, "How many admissions has the patient of admission 22595853 had?", sql)


@pytest.mark.parametrize(("question", "sql"), [
    # an independent review's cases (session 20): two bounds side by side, negations, complements, NOT
    ("How many admissions were of patients older than 18 and younger than 65?",
     "SELECT COUNT(*) FROM admissions WHERE age > 18 AND age < 65"),
    ("How many admissions had an age under 30 or over 80?", "SELECT COUNT(*) FROM admissions WHERE age < 30 OR age > 80"),
    ("How many admissions had an age not below 60?", "SELECT COUNT(*) FROM admissions WHERE age >= 60"),
    ("How many admissions, excluding those under 40, were there?", "SELECT COUNT(*) FROM admissions WHERE age >= 40"),
    ("How many patients never had an admission age above 70?",
     "SELECT COUNT(*) FROM (SELECT subject_id FROM admissions GROUP BY subject_id HAVING MAX(age) <= 70)"),
    ("How many ICU stays lasted at least 2 days?", "SELECT COUNT(*) FROM icustays WHERE NOT (julianday(outtime) - julianday(intime) < 2)"),
])
def test_bounds_stay_silent_on_right_queries_the_review_found(ctx, question, sql):
    assert "wrong_bound" not in checks_of(ctx, question, sql)


def test_review_cases_of_grouping_scope_counting_and_text_numbers_stay_silent(ctx, eicu_ctx):
    from ehrguard.verify.checks.conventions import counts_people

    # a count kept within one visit is asked per visit, whoever is listed
    assert "wrong_group_key" not in checks_of(ctx, "Which patients had more than 20 prescriptions during one admission?",
                                              "SELECT subject_id FROM prescriptions GROUP BY hadm_id HAVING COUNT(*) > 20")
    # the person behind a visit asked about with a pronoun, or their visits counted: every visit is what is asked
    sql = ("SELECT COUNT(DISTINCT patienthealthsystemstayid) FROM patient WHERE uniquepid = "
           "(SELECT uniquepid FROM patient WHERE patientunitstayid = 141765)")
    assert "widened_scope" not in checks_of(eicu_ctx, "Unit stay 141765: how many hospital visits has she had in total?", sql)
    assert "widened_scope" not in checks_of(eicu_ctx, "How many hospital visits were there for unit stay 141765?", sql)
    # what is counted is the first plural noun after the count word; people named before the count are counted
    assert not counts_people("How many doses of insulin patients received in 2100?")
    assert counts_people("Among patients aged 65 or over, how many were admitted in 2100?")
    # a CTE's column of the same name, cast already, is no text column
    assert "text_compared_as_text" not in checks_of(ctx, "How many prescriptions were for at least 1000 units?",
                                                    "WITH d AS (SELECT CAST(dose_val_rx AS REAL) AS dose_val_rx FROM prescriptions) "
                                                    "SELECT COUNT(*) FROM d WHERE dose_val_rx >= 1000")
    # "the intensive care unit" is the ICU side of the visit contrast
    assert "wrong_concept" not in checks_of(ctx, "When did patient 10004235 first go to the intensive care unit in the hospital?",
                                            "SELECT intime FROM icustays WHERE subject_id = 10004235 ORDER BY intime LIMIT 1")


def test_a_single_stay_is_one_stay_not_a_marital_status(ctx):
    sql = "SELECT COUNT(*) FROM (SELECT subject_id FROM admissions GROUP BY subject_id HAVING COUNT(*) = 1)"
    assert "missing_group_filter" not in checks_of(ctx, "How many patients had a single hospital stay?", sql)
    assert "missing_group_filter" in checks_of(ctx, "How many single patients were admitted?",
                                               "SELECT COUNT(DISTINCT subject_id) FROM admissions")


def test_a_bin_edge_in_a_case_is_no_bound(ctx):
    """Bins the question lists ("under 65, 65-79, 80 and over") are edges of categories in a CASE: the bin below "80 and
    over" ends at "< 80", which is right, not a bound to flip."""
    sql = ("SELECT CASE WHEN age < 65 THEN 'under 65' WHEN age < 80 THEN '65-79' ELSE '80+' END AS band, COUNT(*) "
           "FROM admissions GROUP BY band")
    assert "wrong_bound" not in checks_of(ctx, "How many admissions fall in each age band: under 65, 65-79, 80 and over?", sql)


def test_a_number_stated_in_another_unit_of_measure_is_used_converted(eicu_ctx):
    """"220 lbs" against weights the records hold in kilograms: a query comparing with 99.8 (or 100) uses the stated
    number; it is never "repaired" to compare kilograms with 220. Temperatures convert by their formula."""
    question = "How many patients weighed more than 220 lbs at admission?"
    for converted in ("99.8", "100"):
        sql = f"SELECT COUNT(DISTINCT uniquepid) FROM patient WHERE admissionweight > {converted}"
        assert "missing_stated_number" not in checks_of(eicu_ctx, question, sql), converted
    other = run_checks(question, "SELECT COUNT(DISTINCT uniquepid) FROM patient WHERE admissionweight > 80", eicu_ctx)
    assert "missing_stated_number" in {f.check for f in other.findings} and repair(other) is None
    fever = "How many patients had a temperature above 101.3 °F?"
    assert "missing_stated_number" not in checks_of(eicu_ctx, fever, "SELECT COUNT(DISTINCT patientunitstayid) FROM "
                                                                     "vitalperiodic WHERE temperature > 38.5")


def test_a_number_stated_with_its_unit_is_not_put_where_the_records_keep_another(mimic_iv_raw_db):
    """MIMIC-IV keeps temperatures in °F and °C and weights in kg and lbs: a query comparing °F with 100 uses "38 °C";
    one comparing pounds with 200 does not use "100 kg", but the stated number is never written in its place."""
    from ehrguard.verify.api import database_context

    ctx = database_context(mimic_iv_raw_db)
    fahrenheit = "SELECT COUNT(DISTINCT subject_id) FROM mimiciv_icu.chartevents WHERE itemid = 223761 AND valuenum > 100"
    assert "missing_stated_number" not in checks_of(ctx, "How many patients had a temperature above 38 °C?", fahrenheit)
    pounds = run_checks("How many patients weighed more than 100 kg?", "SELECT COUNT(DISTINCT subject_id) FROM "
                        "mimiciv_icu.chartevents WHERE itemid = 226531 AND valuenum > 200", ctx)
    assert "missing_stated_number" in {f.check for f in pounds.findings} and repair(pounds) is None
