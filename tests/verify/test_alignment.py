"""Question <-> SQL alignment, concept and grounding checks on the real MIMIC-IV and eICU demo databases.

Each check is shown finding the mistake it is for, proposing its repair where one is certain (the repaired query is
run and compared with the right one), and staying silent on the right query for the same question.
"""

from __future__ import annotations

import pytest

from ehrguard.verify import verify
from ehrguard.verify.checks import repair, run_checks

HR = ("chartevents.itemid IN (SELECT d_items.itemid FROM d_items WHERE d_items.label = 'heart rate') "
      "AND chartevents.stay_id IN (SELECT stay_id FROM icustays WHERE subject_id = 10000032)")
ADMISSIONS = "SELECT admissions.hadm_id FROM admissions WHERE admissions.subject_id = 10007795"


def findings(ctx, question, sql):
    checked = run_checks(question, sql, ctx)
    return checked, {f.check: f for f in checked.findings}


def answers(ctx, sql):
    return sorted(ctx.db.execute(sql).rows)


def assert_repaired_to(ctx, checked, right_sql):
    fixed = repair(checked)
    assert fixed is not None
    assert answers(ctx, fixed) == answers(ctx, right_sql)


@pytest.mark.parametrize(("question", "wrong", "right"), [
    ("What was the highest heart rate of patient 10000032?", f"SELECT MIN(valuenum) FROM chartevents WHERE {HR}",
     f"SELECT MAX(valuenum) FROM chartevents WHERE {HR}"),
    ("What was the latest heart rate of patient 10000032?",
     f"SELECT valuenum FROM chartevents WHERE {HR} ORDER BY charttime ASC LIMIT 1",
     f"SELECT valuenum FROM chartevents WHERE {HR} ORDER BY charttime DESC LIMIT 1"),
    ("What was the lowest heart rate of patient 10000032?",
     f"SELECT valuenum FROM chartevents WHERE {HR} ORDER BY valuenum DESC LIMIT 1",
     f"SELECT valuenum FROM chartevents WHERE {HR} ORDER BY valuenum ASC LIMIT 1"),
])
def test_the_other_end_of_an_order_is_found_and_flipped(ctx, question, wrong, right):
    checked, found = findings(ctx, question, wrong)
    assert found["wrong_direction"].severity == "error"
    assert_repaired_to(ctx, checked, right)
    assert "wrong_direction" not in findings(ctx, question, right)[1]


def test_latest_asked_and_highest_taken_is_repaired_only_where_one_time_column_orders_the_rows(ctx):
    # chartevents has one time column: the latest is by charttime
    checked, found = findings(ctx, "What was the last heart rate of patient 10000032?",
                              f"SELECT valuenum FROM chartevents WHERE {HR} ORDER BY valuenum DESC LIMIT 1")
    assert found["wrong_order_kind"].severity == "error" and "latest" in found["wrong_order_kind"].message
    assert found["wrong_order_kind"].suggestion == "ORDER BY charttime"
    # a stay has two (intime, outtime), but stays ordered by their own id are ordered by when they began (session 31)
    checked, found = findings(ctx, "What was the last ICU stay id of patient 10000032?",
                              "SELECT stay_id FROM icustays WHERE subject_id = 10000032 ORDER BY stay_id DESC LIMIT 1")
    assert found["wrong_order_kind"].suggestion == "ORDER BY intime"
    # rows of a table with two times ordered by another value: which time "the latest" means is a guess
    checked, found = findings(ctx, "What was the last insurance of patient 10000032?",
                              "SELECT insurance FROM admissions WHERE subject_id = 10000032 ORDER BY insurance DESC LIMIT 1")
    assert "wrong_order_kind" in found and not found["wrong_order_kind"].suggestion


def test_windows_and_bounds_are_not_ends_of_an_order(ctx):
    question = "How many times was the heart rate of patient 10000032 measured at least twice in the last 2 years?"
    _, found = findings(ctx, question, f"SELECT COUNT(*) FROM chartevents WHERE {HR} ORDER BY charttime DESC")
    assert "wrong_direction" not in found and "wrong_order_kind" not in found


def test_an_order_by_a_computed_value_is_left_alone(ctx):
    sql = ("SELECT t.subject_id FROM (SELECT subject_id, 1.0 - AVG(hospital_expire_flag) AS survival FROM admissions "
           "GROUP BY subject_id) AS t ORDER BY t.survival ASC LIMIT 3")
    _, found = findings(ctx, "Which three patients had the highest mortality?", sql)
    assert "wrong_direction" not in found


def test_the_first_hospital_visit_is_the_earliest_admission(ctx):
    question = "What was the last drug prescribed to patient 10007795 on the first hospital visit?"
    visit = "SELECT hadm_id FROM admissions WHERE subject_id = 10007795 AND dischtime IS NOT NULL ORDER BY admittime {} LIMIT 1"
    sql = "SELECT drug FROM prescriptions WHERE hadm_id IN ({}) ORDER BY starttime DESC LIMIT 1"
    wrong, right = sql.format(visit.format("DESC")), sql.format(visit.format("ASC"))
    assert answers(ctx, wrong) != answers(ctx, right)
    checked, found = findings(ctx, question, wrong)
    assert found["wrong_visit"].severity == "error" and "wrong_direction" not in found
    assert_repaired_to(ctx, checked, right)
    assert "wrong_visit" not in findings(ctx, question, right)[1]
    # with one end named, the order in time is the direction check's: one flip, not two
    alone = "SELECT admission_type FROM admissions WHERE subject_id = 10007795 ORDER BY admittime DESC LIMIT 1"
    checked, found = findings(ctx, "What was the admission type of patient 10007795 on the first hospital visit?", alone)
    assert "wrong_direction" in found and "wrong_visit" not in found
    assert_repaired_to(ctx, checked, alone.replace("DESC", "ASC"))


def test_average_and_total_are_not_swapped(ctx):
    base = "FROM prescriptions WHERE subject_id = 10000032 AND drug = 'furosemide'"
    checked, found = findings(ctx, "What was the total dose of furosemide for patient 10000032?", f"SELECT AVG(dose_val_rx) {base}")
    assert found["wrong_aggregate"].suggestion == "SUM"
    assert_repaired_to(ctx, checked, f"SELECT SUM(dose_val_rx) {base}")
    checked, found = findings(ctx, "What was the average dose of furosemide for patient 10000032?", f"SELECT SUM(dose_val_rx) {base}")
    assert found["wrong_aggregate"].suggestion == "AVG"
    # "total" inside a name the SQL looks for is not a total asked for
    _, found = findings(ctx, "What is the average bilirubin, total of patient 10000032?",
                        "SELECT AVG(valuenum) FROM labevents WHERE subject_id = 10000032 AND itemid IN "
                        "(SELECT itemid FROM d_labitems WHERE label = 'bilirubin, total')")
    assert "wrong_aggregate" not in found


def test_numbers_kept_as_text_are_compared_as_numbers(ctx):
    sql = "SELECT MAX(dose_val_rx) FROM prescriptions WHERE drug = '0.9% sodium chloride'"
    checked, found = findings(ctx, "What is the largest dose of 0.9% sodium chloride ever prescribed?", sql)
    assert found["text_compared_as_text"].severity == "error"
    assert answers(ctx, sql) == [("500",)]
    fixed = repair(checked)
    assert fixed is not None and ctx.db.execute(fixed).rows == [(1000.0,)]


def test_still_in_hospital_needs_an_open_stay(ctx):
    question = "How many patients are currently admitted?"
    wrong = "SELECT COUNT(DISTINCT subject_id) FROM admissions WHERE dischtime IS NOT NULL"
    right = "SELECT COUNT(DISTINCT subject_id) FROM admissions WHERE dischtime IS NULL"
    checked, found = findings(ctx, question, wrong)
    assert found["discharged_not_current"].severity == "error"
    assert_repaired_to(ctx, checked, right)
    checked, found = findings(ctx, question, "SELECT COUNT(DISTINCT subject_id) FROM admissions")
    assert found["missing_current_filter"].severity == "warning"
    assert_repaired_to(ctx, checked, right)  # one table, one discharge time: the open stays are certain
    assert not {"discharged_not_current", "missing_current_filter"} & set(findings(ctx, question, right)[1])
    checked, found = findings(ctx, "How many patients are in the ICU right now?", "SELECT COUNT(DISTINCT subject_id) FROM icustays")
    assert_repaired_to(ctx, checked, "SELECT COUNT(DISTINCT subject_id) FROM icustays WHERE outtime IS NULL")
    # a join, or a table with two ends (eICU's unit and hospital discharge): reported, not repaired
    checked, found = findings(ctx, question, "SELECT COUNT(DISTINCT a.subject_id) FROM admissions a JOIN patients p "
                                             "ON a.subject_id = p.subject_id WHERE p.gender = 'f'")
    assert "missing_current_filter" in found and repair(checked) is None


def test_an_ended_visit_must_not_be_an_open_one(ctx):
    question = "What was the admission type of patient 10007795 on the last hospital visit?"
    wrong = "SELECT admission_type FROM admissions WHERE subject_id = 10007795 AND dischtime IS NULL ORDER BY admittime DESC LIMIT 1"
    checked, found = findings(ctx, question, wrong)
    assert found["current_not_asked"].suggestion == "IS NOT NULL"
    assert_repaired_to(ctx, checked, wrong.replace("IS NULL", "IS NOT NULL"))
    # "since the admission" implies an open stay: no finding
    _, found = findings(ctx, "How many days have passed since patient 10007795 was admitted to the hospital?",
                        "SELECT julianday('2100-12-31 23:59:00') - julianday(admittime) FROM admissions "
                        "WHERE subject_id = 10007795 AND dischtime IS NULL")
    assert "current_not_asked" not in found


def test_a_question_about_death_needs_a_death_record(ctx):
    _, found = findings(ctx, "How many patients died?", "SELECT COUNT(DISTINCT subject_id) FROM patients")
    assert found["missing_death_filter"].severity == "warning"
    _, found = findings(ctx, "How many patients died?", "SELECT COUNT(DISTINCT subject_id) FROM patients WHERE dod IS NOT NULL")
    assert "missing_death_filter" not in found


@pytest.mark.parametrize("question", [
    "How many patients died in the hospital?", "What is the in-hospital mortality of emergency admissions?",
    "How many patients died during their admission?", "Count the patients who did not survive their hospitalization.",
])
def test_a_death_in_hospital_is_not_read_from_the_date_of_death(ctx, mimic_iv_db, question):
    # patients.dod also records deaths after discharge: 13 patients have one, 6 died during a stay
    wrong = "SELECT COUNT(DISTINCT subject_id) FROM patients WHERE dod IS NOT NULL"
    _, found = findings(ctx, question, wrong)
    assert found["death_outside_visit"].severity == "warning"
    assert "admissions.discharge_location" in found["death_outside_visit"].message
    assert answers(ctx, wrong) != answers(ctx, "SELECT COUNT(DISTINCT subject_id) FROM admissions WHERE discharge_location = 'died'")
    assert verify(question, wrong, db=mimic_iv_db, db_id="mimic_iv").status != "verified"


def test_a_death_in_hospital_read_from_the_stay_or_timed_by_it_is_kept(ctx, eicu_ctx):
    question = "How many patients died in the hospital?"
    for sql in ("SELECT COUNT(DISTINCT subject_id) FROM admissions WHERE discharge_location = 'died'",
                "SELECT COUNT(DISTINCT patients.subject_id) FROM patients JOIN admissions ON admissions.subject_id = "
                "patients.subject_id WHERE patients.dod <= admissions.dischtime"):
        assert "death_outside_visit" not in findings(ctx, question, sql)[1]
    # death with no place: the date of death is the whole record
    assert "death_outside_visit" not in findings(ctx, "How many patients died?",
                                                 "SELECT COUNT(DISTINCT subject_id) FROM patients WHERE dod IS NOT NULL")[1]
    # eICU's discharge status is the stay's own record, on its patient table
    assert "death_outside_visit" not in findings(
        eicu_ctx, question, "SELECT COUNT(DISTINCT uniquepid) FROM patient WHERE hospitaldischargestatus = 'expired'")[1]


def test_a_death_after_discharge_is_not_read_from_the_stay(ctx):
    question = "How many patients died within 30 days of discharge?"
    _, found = findings(ctx, question, "SELECT COUNT(DISTINCT subject_id) FROM admissions WHERE discharge_location = 'died'")
    assert "patients.dod" in found["death_outside_visit"].message
    right = ("SELECT COUNT(DISTINCT patients.subject_id) FROM patients JOIN admissions ON admissions.subject_id = "
             "patients.subject_id WHERE julianday(patients.dod) - julianday(admissions.dischtime) BETWEEN 0 AND 30")
    assert "death_outside_visit" not in findings(ctx, question, right)[1]


def test_a_time_window_other_than_the_stated_one_is_rewritten(ctx):
    question = "How many patients were admitted in 2100?"
    wrong = "SELECT COUNT(DISTINCT subject_id) FROM admissions WHERE strftime('%Y', admittime) = '2099'"
    right = "SELECT COUNT(DISTINCT subject_id) FROM admissions WHERE strftime('%Y', admittime) = '2100'"
    checked, found = findings(ctx, question, wrong)
    assert found["wrong_time_window"].severity == "error"
    assert_repaired_to(ctx, checked, right)
    assert "wrong_time_window" not in findings(ctx, question, right)[1]
    # a finer window inside the stated one is not a contradiction
    finer = "SELECT COUNT(DISTINCT subject_id) FROM admissions WHERE strftime('%Y-%m', admittime) = '2100-03'"
    assert "wrong_time_window" not in findings(ctx, "How many patients were admitted in March in 2100?", finer)[1]


def test_a_limit_that_cuts_the_answer(ctx):
    question = "Which drugs were prescribed to patient 10000032?"
    wrong = "SELECT DISTINCT drug FROM prescriptions WHERE subject_id = 10000032 LIMIT 1"
    checked, found = findings(ctx, question, wrong)
    assert found["limit_cuts_answer"].severity == "error"
    assert_repaired_to(ctx, checked, wrong.replace(" LIMIT 1", ""))
    ordered = "SELECT drug FROM prescriptions WHERE subject_id = 10000032 ORDER BY starttime DESC LIMIT 1"
    assert "limit_cuts_answer" not in findings(ctx, "What was the last drug prescribed to patient 10000032?", ordered)[1]
    # things asked in the plural, with no end and no number of them named: an order does not make LIMIT 1 the answer
    checked, found = findings(ctx, question, ordered)
    assert found["limit_cuts_answer"].severity == "error"
    # the rows, uncut, repeat drugs (one per order): "which drugs" is answered with each drug once (session 21)
    assert_repaired_to(ctx, checked, "SELECT DISTINCT drug FROM prescriptions WHERE subject_id = 10000032")
    for other in ("What drugs did patient 10000032 get most recently?", "What drug was prescribed to patient 10000032?",
                  "What are the last 3 drugs prescribed to patient 10000032?"):
        assert "limit_cuts_answer" not in findings(ctx, other, ordered)[1], other


@pytest.mark.parametrize(("question", "plural"), [
    ("Which drugs was patient 1 prescribed?", True), ("What lab tests were done?", True),
    ("What are the allergies of patient 1?", True), ("What IV medications did he receive?", True),
    ("What was the last heart rate?", False), ("What is the diagnosis of patient 1?", False),
    ("What status does he have?", False), ("What drug was given?", False), ("what was his sepsis status", False),
])
def test_things_asked_in_the_plural(question, plural):
    from ehrguard.verify.checks.alignment import asks_plural

    assert asks_plural(question) is plural


@pytest.mark.parametrize("question", ["List the five patients admitted last.", "List 5 of the patients admitted last.",
                                      "Name five patients who were admitted."])
def test_a_limit_the_question_states_is_asked_for(ctx, question):
    sql = "SELECT subject_id FROM admissions ORDER BY admittime DESC LIMIT 5"
    assert "limit_cuts_answer" not in findings(ctx, question, sql)[1]
    assert "limit_cuts_answer" not in findings(ctx, question, sql.replace(" ORDER BY admittime DESC", ""))[1]
    assert "limit_cuts_answer" in findings(ctx, "List all the patients.", sql.replace(" ORDER BY admittime DESC", ""))[1]


def test_a_measurement_needs_its_item(ctx):
    question = "What was the highest heart rate of patient 10000032?"
    mixed = "SELECT MAX(valuenum) FROM chartevents WHERE stay_id IN (SELECT stay_id FROM icustays WHERE subject_id = 10000032)"
    assert findings(ctx, question, mixed)[1]["missing_item_filter"].severity == "error"
    assert "missing_item_filter" not in findings(ctx, question, f"SELECT MAX(valuenum) FROM chartevents WHERE {HR}")[1]
    total = "SELECT SUM(value) FROM outputevents WHERE stay_id IN (SELECT stay_id FROM icustays WHERE subject_id = 10000032)"
    assert "missing_item_filter" not in findings(ctx, "What was the total output of patient 10000032?", total)[1]


def test_another_value_of_the_same_column_is_replaced_by_the_one_named(ctx):
    question = "What was the highest heart rate of patient 10000032?"
    wrong = f"SELECT MAX(valuenum) FROM chartevents WHERE {HR.replace('heart rate', 'respiratory rate')}"
    checked, found = findings(ctx, question, wrong)
    assert found["wrong_value"].suggestion == "'heart rate'"
    assert_repaired_to(ctx, checked, f"SELECT MAX(valuenum) FROM chartevents WHERE {HR}")


def test_a_name_said_in_another_word_order_is_named(ctx):
    # records write the head word first ('protein, total'); people say "total protein"
    question = "What was the last total protein value of patient 10014729?"
    wrong = ("SELECT valuenum FROM labevents WHERE subject_id = 10014729 AND itemid IN (SELECT itemid FROM d_labitems "
             "WHERE label = 'c-reactive protein') ORDER BY charttime DESC LIMIT 1")
    checked, found = findings(ctx, question, wrong)
    assert found["wrong_value"].suggestion == "'protein, total'"
    right = wrong.replace("c-reactive protein", "protein, total")
    assert_repaired_to(ctx, checked, right)
    assert "wrong_value" not in findings(ctx, question, right)[1]


def test_a_longer_value_than_the_one_named_is_doubted(ctx, mimic_iv_db):
    question = "How many times was acetaminophen prescribed to patient 10002495?"
    narrower = "SELECT COUNT(*) FROM prescriptions WHERE subject_id = 10002495 AND drug = 'acetaminophen iv'"
    _, found = findings(ctx, question, narrower)
    assert found["narrower_value"].severity == "warning"
    assert "'acetaminophen'" in found["narrower_value"].message
    assert verify(question, narrower, db=mimic_iv_db, db_id="mimic_iv").status != "verified"
    assert answers(ctx, narrower) != answers(ctx, narrower.replace("acetaminophen iv", "acetaminophen"))
    # the value named, the longer one named in full, or a word of the question beside the name: no doubt
    assert "narrower_value" not in findings(ctx, question, narrower.replace("acetaminophen iv", "acetaminophen"))[1]
    assert "narrower_value" not in findings(ctx, question.replace("acetaminophen", "IV acetaminophen"), narrower)[1]
    assert "narrower_value" not in findings(ctx, question.replace("acetaminophen", "intravenous acetaminophen"), narrower)[1]
    assert "narrower_value" not in findings(ctx, question.replace("acetaminophen", "bolus acetaminophen"), narrower)[1]


def test_a_named_drug_the_query_never_looks_for(ctx):
    question = "How many times was furosemide prescribed to patient 10000032?"
    _, found = findings(ctx, question, "SELECT COUNT(*) FROM prescriptions WHERE subject_id = 10000032")
    assert "furosemide" in found["missing_value_filter"].message
    _, found = findings(ctx, question, "SELECT COUNT(*) FROM prescriptions WHERE subject_id = 10000032 AND drug = 'furosemide'")
    assert "missing_value_filter" not in found
    # a field's name ("gender") is not a value to look for, though d_items has such an item
    assert "missing_value_filter" not in findings(ctx, "What is the gender of patient 10000032?",
                                                  "SELECT gender FROM patients WHERE subject_id = 10000032")[1]


def test_an_item_named_by_number_counts_as_looked_for(ctx):
    item = ctx.db.execute("SELECT itemid FROM d_items WHERE label = 'heart rate'").rows[0][0]
    sql = f"SELECT MAX(valuenum) FROM chartevents WHERE itemid = {item} AND subject_id = 10000032"
    assert "missing_value_filter" not in findings(ctx, "What was the highest heart rate of patient 10000032?", sql)[1]


@pytest.mark.parametrize("question", ["Is patient 10000032 allergic to penicillin?", "Which vaccines did patient 10000032 get?",
                                      "What is the home address of patient 10000032?",
                                      "Who was the attending physician of patient 10000032?",
                                      "What did the discharge summary of patient 10000032 say?",
                                      "What did the chest x-ray of patient 10000032 show?",
                                      "How many cigarettes a day did patient 10000032 smoke?",
                                      "What was the insurance claim amount submitted for patient 10000032?",
                                      "Did patient 10000032's mother have heart disease?"])
def test_records_this_database_does_not_hold_are_refused_with_the_reason(ctx, mimic_iv_db, question):
    sql = "SELECT * FROM prescriptions WHERE subject_id = 10000032"
    _, found = findings(ctx, question, sql)
    assert found["not_in_records"].refuse.startswith("These records hold no")
    verdict = verify(question, sql, db=mimic_iv_db, db_id="mimic_iv")
    assert verdict.action == "unanswerable" and verdict.status == "abstained"  # the classifier may give its own reason first


def test_insurance_is_held_in_mimic_iv_but_not_in_eicu(ctx, eicu_ctx):
    question = "Which insurance did the patient have?"
    assert "not_in_records" not in findings(ctx, question, "SELECT insurance FROM admissions WHERE subject_id = 10000032")[1]
    _, found = findings(eicu_ctx, question, "SELECT * FROM patient WHERE patientunitstayid = 141340")
    assert "insurance" in found["not_in_records"].refuse


def test_allergies_are_answerable_where_the_schema_holds_them(eicu_ctx, eicu_db, mimic_iv_db):
    sql = "SELECT allergyname FROM allergy WHERE patientunitstayid = 141340"
    assert "not_in_records" not in findings(eicu_ctx, "Is the patient in stay 141340 allergic to penicillin?", sql)[1]
    # nor does the question model count the word against the question where the schema holds allergies
    question = "Which allergies were recorded for patient 003-11756?"
    sql = ("SELECT DISTINCT allergy.allergyname FROM allergy JOIN patient ON allergy.patientunitstayid = patient.patientunitstayid "
           "WHERE patient.uniquepid = '003-11756'")
    assert verify(question, sql, db=eicu_db, db_id="eicu").action == "preserve"
    refused = verify("Which allergies were recorded for patient 10000032?", "SELECT drug FROM prescriptions WHERE subject_id = 10000032",
                     db=mimic_iv_db, db_id="mimic_iv")
    assert refused.action == "unanswerable" and refused.reason.startswith("These records hold no allergy records")
    # ... in any wording: the words naming a kind of record this schema holds are masked before the model reads them
    sql = ("SELECT COUNT(*) > 0 FROM allergy WHERE patientunitstayid IN (SELECT patientunitstayid FROM patient "
           "WHERE uniquepid = '003-11756') AND allergyname = 'penicillins'")
    for question in ("Does patient 003-11756 have a penicillin allergy?", "Is patient 003-11756 allergic to penicillin?"):
        assert verify(question, sql, db=eicu_db, db_id="eicu").action == "preserve", question
    refused = verify("Does patient 10000032 have a penicillin allergy?", "SELECT drug FROM prescriptions WHERE subject_id = 10000032",
                     db=mimic_iv_db, db_id="mimic_iv")
    assert refused.action == "unanswerable"


@pytest.mark.parametrize(("question", "check"), [
    ("How many patients will be admitted next month?", "asks_future"),
    ("Will patient 10000032 need dialysis?", "asks_future"),
    ("Should I give patient 10000032 more heparin?", "asks_judgement"),
    ("Did the furosemide work for patient 10000032?", "asks_judgement"),
    ("Should patient 10000032 be started on anticoagulation?", "asks_judgement"),
    ("Was the treatment of patient 10000032 successful?", "asks_judgement"),
    ("Is patient 10000032 getting better?", "asks_judgement"),
    # kinds of record this schema lacks (session 18): what an image showed, a relative's health, billing codes, race
    ("What did the radiologist say about patient 10000032's abdominal ultrasound?", "not_in_records"),
    ("Was there a pneumothorax on patient 10000032's last chest film?", "not_in_records"),
    ("Has anyone in patient 10000032's family had a stroke?", "not_in_records"),
    ("What CPT codes were billed for patient 10000032?", "not_in_records"),
    ("What was the DRG payment for the admission of patient 10000032?", "not_in_records"),
    ("What race is patient 10000032?", "not_in_records"),
])
def test_the_future_and_advice_are_not_in_the_records(ctx, question, check):
    _, found = findings(ctx, question, "SELECT COUNT(*) FROM admissions")
    assert found[check].refuse


@pytest.mark.parametrize("question", ["Will you show me the gender of patient 10000032?",
                                      "What was the last heart rate of patient 10000032?",
                                      "How many patients were admitted last month?"])
def test_ordinary_questions_are_not_refused(ctx, question):
    _, found = findings(ctx, question, "SELECT gender FROM patients WHERE subject_id = 10000032")
    assert not {"asks_future", "asks_judgement", "not_in_records"} & set(found)


@pytest.mark.parametrize("now_call", ["strftime('%Y','now')", "julianday('now')", "CURRENT_DATE", "datetime('now', '-1 year')",
                                      "strftime('%J', 'now')"])
def test_every_form_of_the_machine_clock_is_found(ctx, now_call):
    _, found = findings(ctx, "How many admissions?", f"SELECT COUNT(*) FROM admissions WHERE admittime <= {now_call}")
    assert "wrong_now" in found


# Found in review: ordinary questions that must not be flagged, and repairs that must compose.
@pytest.mark.parametrize("question", [
    "I will need the last heart rate of patient 10000032.",
    "Did the next admission of patient 10000032 start within 30 days of discharge?",
    "Was the biopsy on the right lung of patient 10000032 done in 2100?",
    "Which drugs were given to address the hypotension of patient 10000032?",
    "What procedures were employed to treat patient 10000032?",
    "Which procedures did patient 10000032 undergo, and when were they done?",
    "What was the total cost of the hospital stay of patient 10000032?",
    "Did patient 10000032 have a ct scan of the chest during the stay?",
    "How many patients were diagnosed with tobacco use disorder?",
    "Which drugs were given on the day of the ct scan of patient 10000032?",
    "Was patient 10000032's ultrasound done in 2100?",
    "What was the cost of the stay of patient 10000032 in the family medicine service?",
])
def test_ordinary_phrasing_is_not_a_refusal(ctx, question):
    _, found = findings(ctx, question, "SELECT drug FROM prescriptions WHERE subject_id = 10000032")
    assert not {"asks_future", "asks_judgement", "not_in_records"} & set(found)


def test_a_drug_named_vaccine_is_a_prescription_not_an_immunization_record(ctx):
    _, found = findings(ctx, "How many patients were prescribed influenza vaccine?",
                        "SELECT COUNT(DISTINCT subject_id) FROM prescriptions WHERE drug = 'influenza vaccine'")
    assert "not_in_records" not in found


def test_this_patient_is_not_a_current_stay(ctx):
    sql = "SELECT admittime FROM admissions WHERE subject_id = 10007795 AND dischtime IS NOT NULL ORDER BY admittime LIMIT 1"
    _, found = findings(ctx, "When was this patient's first hospital stay? The patient is 10007795.", sql)
    assert not {"discharged_not_current", "missing_current_filter"} & set(found)


def test_mean_arterial_pressure_is_a_measurement_and_sum_over_count_an_average(ctx):
    _, found = findings(ctx, "What was the total of mean arterial pressure readings of patient 10000032?",
                        "SELECT SUM(valuenum) FROM chartevents WHERE subject_id = 10000032")
    assert "wrong_aggregate" not in found
    _, found = findings(ctx, "What is the average daily number of prescriptions of patient 10000032?",
                        "SELECT SUM(1) * 1.0 / COUNT(DISTINCT date(starttime)) FROM prescriptions WHERE subject_id = 10000032")
    assert "wrong_aggregate" not in found


def test_a_limit_that_cuts_nothing_is_not_flagged(ctx):
    _, found = findings(ctx, "What is the gender of patient 10000032?", "SELECT gender FROM patients WHERE subject_id = 10000032 LIMIT 1")
    assert "limit_cuts_answer" not in found


def test_a_flip_and_a_cast_on_one_aggregate_both_apply(ctx):
    sql = "SELECT MIN(dose_val_rx) FROM prescriptions WHERE drug = '0.9% sodium chloride'"
    checked, found = findings(ctx, "What is the largest dose of 0.9% sodium chloride ever prescribed?", sql)
    assert {"wrong_direction", "text_compared_as_text"} <= set(found)
    fixed = repair(checked)
    assert fixed is not None and ctx.db.execute(fixed).rows == [(1000.0,)]


def test_the_window_repair_survives_an_earlier_text_edit(ctx):
    sql = ("SELECT COUNT(*) FROM prescriptions WHERE subject_id = 10000032 AND strftime('%J','now') > 0 AND "
           "datetime(starttime,'start of year') = datetime('2100-12-31 23:59:00','start of year','-0 year')")
    checked, found = findings(ctx, "How many prescriptions did patient 10000032 get last year?", sql)
    assert {"wrong_now", "wrong_time_window"} <= set(found)
    fixed = repair(checked)
    assert fixed is not None and "'-1 year'" in fixed and "'now'" not in fixed.lower()
    ctx.db.execute(fixed)  # well-formed SQL


def test_ethnicity_is_held_in_eicu_and_not_in_the_ehrsql_mimic_iv_schema(ctx, eicu_ctx):
    _, found = findings(eicu_ctx, "What is the ethnicity of patient 002-12289?",
                        "SELECT ethnicity FROM patient WHERE uniquepid = '002-12289'")
    assert "not_in_records" not in found
    _, found = findings(ctx, "What is the ethnicity of patient 10000032?", "SELECT language FROM admissions WHERE subject_id = 10000032")
    assert "not_in_records" in found


def test_one_arbitrary_name_lifted_to_each_name_once_whatever_the_number_the_question_uses(eicu_ctx):
    # stay 243097 has 8 allergy rows naming 2 allergies: LIMIT 1 in no order shows one of them; the answer is both, once each
    sql = "SELECT allergyname FROM allergy WHERE patientunitstayid = 243097 LIMIT 1"
    for question in ("What is the patient of unit stay 243097 allergic to?", "Which allergies does unit stay 243097 have?"):
        checked, found = findings(eicu_ctx, question, sql)
        assert "limit_cuts_answer" in found, question
        assert_repaired_to(eicu_ctx, checked, "SELECT DISTINCT allergyname FROM allergy WHERE patientunitstayid = 243097")
    # a single value in no order, not names: the limit alone goes (the values are not made distinct)
    checked, found = findings(eicu_ctx, "What was the creatinine of unit stay 210641?",
                              "SELECT labresult FROM lab WHERE patientunitstayid = 210641 AND labname = 'creatinine' LIMIT 1")
    assert "limit_cuts_answer" in found
    assert "DISTINCT" not in (repair(checked) or "DISTINCT").upper()


def test_a_condition_named_by_its_adjective_must_be_looked_for(ctx, eicu_ctx):
    # "hypertensive patients" are patients with hypertension (a diagnosis name here); a count of everyone is another answer
    sql = ("SELECT COUNT(DISTINCT patient.uniquepid) FROM medication JOIN patient ON medication.patientunitstayid = "
           "patient.patientunitstayid WHERE medication.drugname LIKE '%labetalol%'")
    assert "missing_value_filter" in findings(eicu_ctx, "How many hypertensive patients received labetalol?", sql)[1]
    right = (sql + " AND medication.patientunitstayid IN (SELECT patientunitstayid FROM diagnosis WHERE diagnosisname = "
             "'hypertension')")
    assert "missing_value_filter" not in findings(eicu_ctx, "How many hypertensive patients received labetalol?", right)[1]
    # a condition named with its adjective ("septic shock") is left as it is, and so is an adjective of no condition
    from ehrguard.verify.checks.concepts import condition_nouns

    assert condition_nouns("How many septic shock patients died?") == "how many septic shock patients died?"
    assert condition_nouns("How many anemic women and hypokalemic pts?") == "how many anemia women and hypokalemia pts?"


def test_an_order_to_show_a_list_in_is_not_an_end_of_it(ctx):
    dead = "SELECT subject_id FROM patients WHERE dod IS NOT NULL ORDER BY dod DESC"
    for question in ("List every patient with a recorded date of death, newest first.",
                     "Show all patients who have a date of death, sorted by date of death",
                     "Give all patients with a date of death in descending order"):
        checked, found = findings(ctx, question, f"{dead} LIMIT 5")
        assert "limit_cuts_answer" in found, question
        assert_repaired_to(ctx, checked, dead)
    # an end of the order asked for, or the number kept stated: the LIMIT is the answer
    for question in ("Which patient died most recently?", "List the 5 most recent deaths, newest first"):
        assert "limit_cuts_answer" not in findings(ctx, question, f"{dead} LIMIT 5")[1], question


def test_what_the_list_current_and_condition_checks_leave_alone(ctx):
    """An independent review's probes, each once a harmful repair or a false alarm."""
    # a bare "as of now" anchors the question's time; it does not ask for stays still open
    checked, found = findings(ctx, "As of now, how many patients have been admitted to the hospital?",
                              "SELECT COUNT(DISTINCT subject_id) FROM admissions")
    assert repair(checked) is None
    # a list in an order with the number kept stated; an order asked for is kept when the LIMIT goes
    labs = ("SELECT d_labitems.label FROM labevents JOIN d_labitems ON labevents.itemid = d_labitems.itemid "
            "WHERE labevents.subject_id = 10004235 ORDER BY labevents.charttime LIMIT 10")
    for question in ("List all lab tests of patient 10004235 sorted by time limited to 10.",
                     "List all lab tests of patient 10004235 ordered by time and show only ten."):
        assert "limit_cuts_answer" not in findings(ctx, question, labs)[1], question
    checked, _ = findings(ctx, "List all drugs prescribed to patient 10004235 sorted by start time",
                          "SELECT drug FROM prescriptions WHERE subject_id = 10004235 ORDER BY starttime LIMIT 5")
    assert "ORDER BY" in (repair(checked) or "").upper() and "LIMIT" not in (repair(checked) or "LIMIT").upper()
    # a condition named by its adjective and chosen by its codes is looked for
    assert "missing_value_filter" not in findings(ctx, "how many diabetic patients were prescribed insulin?",
                                                  "SELECT COUNT(DISTINCT subject_id) FROM prescriptions WHERE drug LIKE '%insulin%' AND "
                                                  "subject_id IN (SELECT subject_id FROM diagnoses_icd WHERE icd_code LIKE 'E11%')")[1]


def test_a_query_taking_both_ends_is_named_so_the_same_in_every_process(ctx):
    # MIN and MAX where the question asks for the latest: the message named either end, by the process's string hashing
    _, found = findings(ctx, "What was the latest heart rate of patient 10000032?",
                        f"SELECT MIN(valuenum), MAX(valuenum) FROM chartevents WHERE {HR}")
    assert found["wrong_order_kind"].message.startswith("The query takes the lowest and the highest value;")


# An independent review's false alarms and harmful repairs of session 29's checks: each left alone now.
@pytest.mark.parametrize(("db", "question", "sql", "check"), [
    ("mimic_iv", "How many patients had at least two emergency admissions?",  # a sum per patient, compared: not the count
     "SELECT COUNT(*) FROM patients p WHERE (SELECT SUM(CASE WHEN a.admission_type LIKE '%emer%' THEN 1 ELSE 0 END) "
     "FROM admissions a WHERE a.subject_id = p.subject_id) >= 2", "counts_rows_not_patients"),
    ("mimic_iv", "How many patients were prescribed aspirin and how many prescriptions of aspirin were there?",
     "SELECT COUNT(DISTINCT CASE WHEN drug = 'aspirin' THEN subject_id END), SUM(CASE WHEN drug = 'aspirin' THEN 1 ELSE 0 END) "
     "FROM prescriptions", "counts_rows_not_patients"),
    ("mimic_iv", "How many patients who died received vancomycin during their ICU stay?",  # the stay is where the drug was
     "SELECT COUNT(DISTINCT p.subject_id) FROM patients p JOIN prescriptions r ON r.subject_id = p.subject_id "
     "WHERE p.dod IS NOT NULL AND r.drug = 'vancomycin'", "death_outside_visit"),
    ("eicu", "How many patients died after ICU discharge?",  # the unit's discharge, read against the hospital's record
     "SELECT COUNT(DISTINCT uniquepid) FROM patient WHERE hospitaldischargestatus = 'expired' "
     "AND hospitaldischargetime > unitdischargetime", "death_outside_visit"),
    ("mimic_iv", "Which drug was first prescribed to patient 10000032 by the end of 2100?",
     "SELECT drug FROM prescriptions WHERE subject_id = 10000032 ORDER BY starttime LIMIT 1", "wrong_column"),
    ("mimic_iv", "When was vancomycin first given to patient 10000032 during the hospital visit that ended most recently?",
     "SELECT starttime FROM prescriptions WHERE subject_id = 10000032 AND drug = 'vancomycin' ORDER BY starttime LIMIT 1",
     "wrong_column"),
    ("mimic_iv", "Was heparin given to patient 10004235 as a flush?",  # the question says what the longer name adds
     "SELECT COUNT(*) > 0 FROM prescriptions WHERE subject_id = 10004235 AND drug = 'heparin flush (10 units/ml)'", "narrower_value"),
    ("mimic_iv", "Was acetaminophen given intravenously to patient 10002495?",
     "SELECT COUNT(*) > 0 FROM prescriptions WHERE subject_id = 10002495 AND drug = 'acetaminophen iv'", "narrower_value"),
])
def test_the_reviews_right_queries_are_left_alone(ctx, eicu_ctx, db, question, sql, check):
    checked = run_checks(question, sql, ctx if db == "mimic_iv" else eicu_ctx)
    assert check not in {f.check for f in checked.findings}
