"""A body-mass index from centimetres, hospital admissions counted from the ICU stays' table, a visit named by its
month, an item the question leaves out by its kind, and what an image was read as. On the real demo databases."""

from __future__ import annotations

from ehrguard.verify import verify
from tests.verify.checking import checks, checks_of, found_and_repaired


def test_a_body_mass_index_needs_the_height_in_metres(eicu_ctx):
    question = "BMI at admission for unit stay 2740390"
    right = ("SELECT ROUND(admissionweight / ((admissionheight / 100.0) * (admissionheight / 100.0)), 1) FROM patient "
             "WHERE patientunitstayid = 2740390")
    for wrong in ("SELECT ROUND(admissionweight / (admissionheight * admissionheight), 1) FROM patient WHERE patientunitstayid = 2740390",
                  "SELECT ROUND(admissionweight / POWER(admissionheight, 2), 1) FROM patient WHERE patientunitstayid = 2740390"):
        found_and_repaired(eicu_ctx, question, wrong, right, "bmi_in_centimetres")
    # a weight over a height that is not squared, or a squared column that is not a height, is something else
    assert "bmi_in_centimetres" not in checks_of(eicu_ctx, "weight per cm of height for unit stay 2740390",
                                                 "SELECT admissionweight / admissionheight FROM patient WHERE patientunitstayid = 2740390")


def test_hospital_admissions_are_not_counted_from_the_icu_stays(ctx):
    question = "How many patients have been admitted to the hospital more than once?"
    wrong = "SELECT COUNT(*) FROM (SELECT subject_id FROM icustays GROUP BY subject_id HAVING COUNT(*) > 1)"
    right = "SELECT COUNT(*) FROM (SELECT subject_id FROM admissions GROUP BY subject_id HAVING COUNT(*) > 1)"
    found_and_repaired(ctx, question, wrong, right, "counts_other_visit_table")
    # and the reverse: ICU admissions counted from the hospital's
    found_and_repaired(ctx, "How many patients were admitted to the ICU more than once?", right, wrong, "counts_other_visit_table")
    # a question about both kinds, or one that reads the asked table too, is left alone
    both = "How many patients admitted to the hospital more than once had an ICU stay?"
    assert "counts_other_visit_table" not in checks_of(ctx, both, wrong)
    joined = "SELECT COUNT(DISTINCT i.hadm_id) FROM icustays i JOIN admissions a ON a.hadm_id = i.hadm_id"
    assert "counts_other_visit_table" not in checks_of(ctx, "How many hospitalizations were there?", joined)


def test_a_visit_named_by_its_month_is_one_visit(eicu_ctx):
    question = "how many labs were sent during 009-10343's september hospitalization?"
    # the patient's labs of every hospital stay (the May one's too), not the September one's
    wrong = ("SELECT COUNT(*) FROM lab l JOIN patient p ON p.patientunitstayid = l.patientunitstayid "
             "WHERE p.uniquepid = '009-10343'")
    right = ("SELECT COUNT(*) FROM lab l JOIN patient p ON p.patientunitstayid = l.patientunitstayid "
             "WHERE p.patienthealthsystemstayid = 789245")
    assert "missing_visit_scope" in checks_of(eicu_ctx, question, wrong)
    assert "missing_visit_scope" not in checks_of(eicu_ctx, question, right)
    assert verify(question, wrong, db=str(eicu_ctx.path)).status != "verified"


def test_an_item_the_question_leaves_out_by_its_kind(mimic_iv_raw_db):
    from ehrguard.db import open_database
    from ehrguard.verify.methods import DatabaseContext

    raw = DatabaseContext(open_database(mimic_iv_raw_db), "mimic_iv_raw", mimic_iv_raw_db)
    gas = "SELECT valuenum FROM mimiciv_hosp.labevents WHERE subject_id = 10018081 AND itemid = 50822 ORDER BY charttime DESC LIMIT 1"
    # 50822 is 'Potassium, Whole Blood' of the 'Blood Gas' category: the dictionary row says what the question leaves out
    found = checks(raw, "latest serum K for 10018081 (not the gas)", gas)["excluded_item"]
    assert found.severity == "error" and "'gas'" in found.message
    assert "excluded_item" in checks_of(raw, "latest potassium for 10018081 excluding blood gas values", gas)
    # what is left out is read as a whole: a chemistry glucose is not a blood gas for being drawn from blood
    chemistry = gas.replace("50822", "50931")
    assert "excluded_item" not in checks_of(raw, "latest glucose for 10018081 excluding blood gas values", chemistry)
    assert "excluded_item" not in checks_of(raw, "latest potassium for 10018081", gas)


def test_what_an_image_was_read_as_is_not_in_the_records(eicu_ctx):
    question = "Was the abdominal CT on 031-10758 positive for free air?"
    sql = ("SELECT d.diagnosisname FROM diagnosis d JOIN patient p ON p.patientunitstayid = d.patientunitstayid "
           "WHERE p.uniquepid = '031-10758' AND d.diagnosisname LIKE '%perforat%'")
    assert checks(eicu_ctx, question, sql)["not_in_records"].severity == "error"
    for said in ("Was the chest x-ray of 031-10758 normal?", "Did the head CT of 031-10758 come back negative for bleeding?"):
        assert "not_in_records" in checks_of(eicu_ctx, said, sql), said
    # that a scan was done is a treatment the records hold; a result that is not the image's is no image result
    done = "SELECT COUNT(*) > 0 FROM treatment WHERE patientunitstayid = 141340 AND treatmentstring LIKE '%ct scan%'"
    for asked in ("Did unit stay 141340 have a CT scan?", "patients with a ct scan who were positive for covid"):
        assert "not_in_records" not in checks_of(eicu_ctx, asked, done), asked


def test_kinds_of_rows_are_named_in_plain_words(ctx):
    from ehrguard.verify.offline.policy import plain_reason

    question = "What were the diagnosis charges of hospital admission 20626031?"
    sql = "SELECT SUM(cost) FROM cost WHERE hadm_id = 20626031"
    found = checks(ctx, question, sql).get("missing_kind")
    assert found is not None
    reason = plain_reason(found)
    assert "diagnoses records" in reason and "diagnoses_icd" not in reason and "lab events" in reason


def test_a_field_that_holds_none_of_the_offered_answers(ctx, eicu_ctx):
    from ehrguard.verify.checks.choices import offered_choices

    status = "SELECT hospitaldischargestatus FROM patient WHERE patientunitstayid = 2893348"
    question = "Where did 027-101368 go after the December stay, home or SNF?"
    found = checks(eicu_ctx, question, status)["choices_not_held"]
    assert found.severity == "error" and "'alive'" in found.message
    assert "choices_not_held" not in checks_of(eicu_ctx, "Was unit stay 2893348 discharged alive or dead?", status)
    # a code for a choice ('m', 'f'), the choice said in full, or as initials, is held
    assert "choices_not_held" not in checks_of(ctx, "Is patient 10000032 male or female?",
                                                "SELECT gender FROM patients WHERE subject_id = 10000032")
    where = "SELECT discharge_location FROM admissions WHERE subject_id = 10000032"
    assert "choices_not_held" not in checks_of(ctx, "Was 10000032 discharged home or to a skilled nursing facility?", where)
    assert "choices_not_held" in checks_of(ctx, "Is patient 10000032 male or female?",
                                           "SELECT marital_status FROM admissions WHERE subject_id = 10000032")
    # "or more", "or not", "first or last" offer no answers
    assert offered_choices("did he get 2 or more doses?") == offered_choices("was it given or not?") == []
    assert offered_choices("what was the first or last value?") == []
    assert offered_choices("Was it ordered as IV or PO?") == ["iv", "po"]


def test_a_positive_culture_grew_something_where_the_records_write_no_growth(eicu_ctx):
    question = "how many unit stays had a positive culture?"
    wrong = "SELECT COUNT(DISTINCT patientunitstayid) FROM microlab"
    # eICU writes a negative culture as the organism 'no growth', not as an empty organism
    right = "SELECT COUNT(DISTINCT patientunitstayid) FROM microlab WHERE organism <> 'no growth'"
    found_and_repaired(eicu_ctx, question, wrong, right, "missing_presence")
    negative = "SELECT COUNT(DISTINCT patientunitstayid) FROM microlab WHERE organism = 'no growth'"
    found_and_repaired(eicu_ctx, "how many unit stays had a negative culture?", wrong, negative, "missing_presence")


def test_the_work_towards_a_discharge_is_no_moment_of_discharge(ctx):
    question = "For discharge planning: who is still in house, and how many days has each been here so far?"
    sql = ("SELECT subject_id, hadm_id, ROUND(julianday('2100-12-31 23:59:00') - julianday(admittime), 1) AS days_in "
           "FROM admissions WHERE dischtime IS NULL ORDER BY days_in DESC")
    assert "wrong_concept" not in checks_of(ctx, question, sql)
    # the moment itself is still the discharge's
    assert "wrong_concept" in checks_of(ctx, "What was the discharge time of patient 10000032's last stay?",
                                        "SELECT admittime FROM admissions WHERE subject_id = 10000032 ORDER BY admittime DESC LIMIT 1")


def test_marked_as_a_label_is_not_a_degree():
    from ehrguard.verify.offline.features import question_cues

    assert question_cues("how many unit stays are NOT marked expired?").vague == ()
    assert question_cues("stays marked as expired").vague == ()
    assert question_cues("patients with marked hypotension").vague == ("marked",)


def test_a_refusal_names_only_a_cause_the_question_gives():
    from ehrguard.verify.offline.features import question_cues
    from ehrguard.verify.offline.policy import UNNAMED_REFUSAL, refusal_message
    from ehrguard.verify.offline.question import QuestionAssessment

    def assessed(question):
        return QuestionAssessment({}, {}, question_cues(question), "test")

    # the model's class with no word of it in the question: no made-up cause
    assert refusal_message("small-talk", assessed("who are our oldest patients? pids")) == UNNAMED_REFUSAL
    assert refusal_message("infeasible-faq", assessed("which orders for patient 10039831 have no stop time yet?")) == UNNAMED_REFUSAL
    # with one, the class's own words
    assert "conversation" in refusal_message("small-talk", assessed("hello, how are you today?"))


def test_records_counted_by_their_different_values(ctx):
    question = "How many heart rate readings do we have on 10039831 so far?"
    wrong = "SELECT COUNT(DISTINCT valuenum) FROM chartevents WHERE subject_id = 10039831 AND itemid = 220045"
    right = "SELECT COUNT(*) FROM chartevents WHERE subject_id = 10039831 AND itemid = 220045"
    found_and_repaired(ctx, question, wrong, right, "count_of_values")
    # different values asked for are counted so
    assert "count_of_values" not in checks_of(ctx, "How many different heart rate values were recorded for 10039831?", wrong)


def test_visits_counted_by_the_rows_of_a_table_of_other_visits(eicu_ctx):
    question = "How many hospital admissions ended in death?"
    wrong = "SELECT COUNT(*) FROM patient WHERE hospitaldischargestatus = 'expired'"
    right = "SELECT COUNT(DISTINCT patienthealthsystemstayid) FROM patient WHERE hospitaldischargestatus = 'expired'"
    found_and_repaired(eicu_ctx, question, wrong, right, "counts_other_visit")
    # the table holds one row per unit stay: counting its rows counts unit stays
    assert "counts_other_visit" not in checks_of(eicu_ctx, "How many ICU stays ended in death?", wrong)


def test_a_threshold_of_visits_compared_with_a_count_of_rows(eicu_ctx):
    question = "which drugs were given on more than 50 different ICU stays? how many such drugs?"
    wrong = "SELECT COUNT(*) FROM (SELECT drugname FROM medication GROUP BY drugname HAVING COUNT(*) > 50)"
    right = "SELECT COUNT(*) FROM (SELECT drugname FROM medication GROUP BY drugname HAVING COUNT(DISTINCT patientunitstayid) > 50)"
    found_and_repaired(eicu_ctx, question, wrong, right, "threshold_counts_rows")
    times = "SELECT drugname FROM medication GROUP BY drugname HAVING COUNT(*) > 50"
    assert "threshold_counts_rows" not in checks_of(eicu_ctx, "which drugs were given more than 50 times?", times)


def test_the_one_at_the_top_asked_and_the_whole_ranking_returned(ctx):
    question = "which single drug was ordered most often for 10021487"
    wrong = "SELECT drug, COUNT(*) AS n FROM prescriptions WHERE subject_id = 10021487 GROUP BY drug ORDER BY n DESC"
    right = wrong + " LIMIT 1"
    found_and_repaired(ctx, question, wrong, right, "one_asked_all_listed")
    for listing in ("which drugs were ordered most often for 10021487", "rank the drugs ordered for 10021487, most often first"):
        assert "one_asked_all_listed" not in checks_of(ctx, listing, wrong), listing


def test_a_list_of_categories_names_each_once(ctx):
    question = "which ICUs has 10020740 been admitted to? list of units"
    wrong = "SELECT first_careunit FROM icustays WHERE subject_id = 10020740"
    right = "SELECT DISTINCT first_careunit FROM icustays WHERE subject_id = 10020740"
    found_and_repaired(ctx, question, wrong, right, "repeated_names")
    # the stays themselves, each with its unit, are rows of their own
    assert "repeated_names" not in checks_of(ctx, "list the ICU stays of 10020740 with their unit",
                                             "SELECT stay_id, first_careunit FROM icustays WHERE subject_id = 10020740")


def test_a_measure_converted_the_wrong_way(ctx):
    question = "10018081 latest weight in lbs?"
    base = "FROM chartevents WHERE stay_id = 37293400 AND itemid = 224639 ORDER BY charttime DESC LIMIT 1"
    # the records keep the daily weight in kg (valueuom): pounds are kg times 2.2046
    found_and_repaired(ctx, question, f"SELECT valuenum / 2.2046 {base}", f"SELECT valuenum * 2.2046 {base}", "converted_backwards")
    assert "wrong_measure_unit" not in checks_of(ctx, question, f"SELECT valuenum * 2.2046 {base}")


def test_a_bound_on_each_reading_put_on_the_groups_average(ctx):
    question = "per patient, average of their glucose readings that were above 200"
    wrong = "SELECT subject_id, AVG(valuenum) FROM labevents WHERE itemid = 50931 GROUP BY subject_id HAVING AVG(valuenum) > 200"
    right = "SELECT subject_id, AVG(valuenum) FROM labevents WHERE itemid = 50931 AND valuenum > 200 GROUP BY subject_id"
    found_and_repaired(ctx, question, wrong, right, "rows_bounded_in_having")
    # a bound on the average itself is what HAVING says
    assert "rows_bounded_in_having" not in checks_of(ctx, "which patients have an average glucose above 200", wrong)


def test_an_offered_choice_said_in_other_words_is_held(ctx, eicu_ctx):
    ethnicity = "SELECT DISTINCT ethnicity FROM patient WHERE uniquepid = '002-12289'"
    assert "choices_not_held" not in checks_of(eicu_ctx, "Is patient 002-12289 white or black?", ethnicity)
    status = "SELECT hospitaldischargestatus FROM patient WHERE uniquepid = '027-101368'"
    assert "choices_not_held" not in checks_of(eicu_ctx, "Did 027-101368 survive or die?", status)
    assert "choices_not_held" in checks_of(ctx, "Was the patient 10000032 discharged home or to rehab?",
                                           "SELECT admission_location FROM admissions WHERE subject_id = 10000032")


def test_the_review_s_correct_queries_are_left_alone(ctx, eicu_ctx):
    """Right queries an independent review wrote against the first version of these checks: none is faulted now."""
    cases = [
        (eicu_ctx, "average BMI of unit stays with a recorded height",  # kg / cm² x 10,000 is a BMI
         "SELECT AVG(p.admissionweight / POWER(p.admissionheight, 2) * 10000) FROM patient p WHERE p.admissionheight > 0",
         "bmi_in_centimetres"),
        (ctx, "How many hospital admissions included time in one of the ICUs?", "SELECT COUNT(DISTINCT hadm_id) FROM icustays",
         "counts_other_visit_table"),
        (ctx, "How many of patient 10004235's hospital admissions went through the CCU or MICU?",
         "SELECT COUNT(DISTINCT hadm_id) FROM icustays WHERE subject_id = 10004235", "counts_other_visit_table"),
        (ctx, "Which patients had more than 2 stays?", "SELECT subject_id FROM icustays GROUP BY subject_id HAVING COUNT(*) > 2",
         "threshold_counts_rows"),
        (ctx, "Which care units had more than 20 stays?",
         "SELECT first_careunit FROM icustays GROUP BY first_careunit HAVING COUNT(*) > 20", "threshold_counts_rows"),
        (ctx, "What is the creatinine history for 10000032, most recent first?",
         "SELECT charttime, valuenum FROM labevents WHERE subject_id = 10000032 AND itemid = 50912 ORDER BY charttime DESC",
         "one_asked_all_listed"),
        (ctx, "What drug did 10021487 receive the most doses of, with counts for comparison?",
         "SELECT drug, COUNT(*) AS n FROM prescriptions WHERE subject_id = 10021487 GROUP BY drug ORDER BY n DESC",
         "one_asked_all_listed"),
        (ctx, "What is the number of medications in the prescriptions of patient 10000032?",
         "SELECT COUNT(DISTINCT drug) FROM prescriptions WHERE subject_id = 10000032", "count_of_values"),
        (ctx, "How many times did 10000032 have a lab drawn (count each draw time once)?",
         "SELECT COUNT(DISTINCT charttime) FROM labevents WHERE subject_id = 10000032", "count_of_values"),
        (ctx, "What were the discharge dispositions of patient 10004235's hospital admissions?",
         "SELECT discharge_location FROM admissions WHERE subject_id = 10004235", "repeated_names"),
        (ctx, "What was the latest non-invasive systolic blood pressure for ICU stay 39553978?",
         "SELECT valuenum FROM chartevents WHERE stay_id = 39553978 AND itemid = 220179 ORDER BY charttime DESC LIMIT 1",
         "excluded_item"),
        (eicu_ctx, "Of stays that had a chest x-ray, how many later tested positive for MRSA?",
         "SELECT COUNT(DISTINCT t.patientunitstayid) FROM treatment t JOIN microlab m ON m.patientunitstayid = t.patientunitstayid "
         "WHERE t.treatmentname LIKE '%x-ray%' AND m.organism LIKE '%mrsa%'", "not_in_records"),
    ]
    for db, question, sql, check in cases:
        assert check not in checks_of(db, question, sql), question


def test_records_with_no_value_counted_as_not_x(eicu_ctx):
    question = "how many unit stays are NOT marked expired? blanks and people still in house count as not expired"
    wrong = "SELECT COUNT(*) FROM patient WHERE hospitaldischargestatus <> 'expired'"
    right = "SELECT COUNT(*) FROM patient WHERE hospitaldischargestatus IS NULL OR hospitaldischargestatus <> 'expired'"
    found_and_repaired(eicu_ctx, question, wrong, right, "unknowns_left_out")
    # without the question saying so, leaving the unknowns out is a reading of its own
    assert "unknowns_left_out" not in checks_of(eicu_ctx, "how many unit stays are NOT marked expired?", wrong)


def test_a_drug_referred_to_and_never_named(ctx):
    from ehrguard.verify import verify

    question = "how many doses of the drug has 10004733 gotten so far?"
    every = "SELECT COUNT(*) FROM prescriptions WHERE subject_id = 10004733"
    found = checks(ctx, question, every)["unnamed_reference"]
    assert found.severity == "error" and found.clarify
    verdict = verify(question, every, db=str(ctx.path))
    assert verdict.status != "verified" and verdict.action == "ambiguous"
    # named, or asked for, or qualified: no reference to resolve
    named = "SELECT COUNT(*) FROM prescriptions WHERE subject_id = 10004733 AND drug = 'vancomycin'"
    assert "unnamed_reference" not in checks_of(ctx, "how many doses of the drug vancomycin has 10004733 gotten so far?", named)
    last = "SELECT drug FROM prescriptions WHERE subject_id = 10004733 ORDER BY starttime DESC LIMIT 1"
    assert "unnamed_reference" not in checks_of(ctx, "what was the drug that patient 10004733 was prescribed last?", last)
    assert "unnamed_reference" not in checks_of(ctx, "which drug did 10004733 get most often?", last)
    # a participle of giving says of whom, not which
    assert "unnamed_reference" in checks_of(ctx, "How many times was the drug prescribed to patient 10004733?", every)
    most = "SELECT drug FROM prescriptions WHERE subject_id = 10004733 GROUP BY drug ORDER BY COUNT(*) DESC LIMIT 1"
    assert "unnamed_reference" not in checks_of(ctx, "what was the drug given most often to 10004733?", most)


def test_people_who_never_had_a_record_found_visit_by_visit(ctx):
    question = "How many patients have never had an ICU stay?"
    wrong = ("SELECT COUNT(DISTINCT a.subject_id) FROM admissions a LEFT JOIN icustays i ON i.hadm_id = a.hadm_id "
             "WHERE i.stay_id IS NULL")
    right = ("SELECT COUNT(DISTINCT a.subject_id) FROM admissions a LEFT JOIN icustays i ON i.subject_id = a.subject_id "
             "WHERE i.stay_id IS NULL")
    found_and_repaired(ctx, question, wrong, right, "visit_anti_join")
    # admissions without an ICU stay are what the visit-level join finds
    admissions = wrong.replace("COUNT(DISTINCT a.subject_id)", "COUNT(DISTINCT a.hadm_id)")
    assert "visit_anti_join" not in checks_of(ctx, "How many admissions had no ICU stay?", admissions)


def test_the_second_review_s_correct_queries_are_left_alone(ctx):
    """Right queries a second independent review wrote against the first versions of the last checks."""
    cases = [
        ("How many admissions were discharged somewhere other than home? Blanks don't count.",
         "SELECT COUNT(*) FROM admissions WHERE discharge_location <> 'home'", "unknowns_left_out"),
        ("How many admissions were discharged somewhere other than home, with nulls not included?",
         "SELECT COUNT(*) FROM admissions WHERE discharge_location <> 'home'", "unknowns_left_out"),
        ("Which patients had mean glucose levels above 150?",
         "SELECT subject_id FROM labevents WHERE itemid = 50931 GROUP BY subject_id HAVING AVG(valuenum) > 150", "rows_bounded_in_having"),
        ("Which patients had all of their heart rate readings above 100?",
         "SELECT subject_id FROM chartevents WHERE itemid = 220045 GROUP BY subject_id HAVING MIN(valuenum) > 100",
         "rows_bounded_in_having"),
        ("How many patients had a hospital admission without an ICU stay?",
         "SELECT COUNT(DISTINCT a.subject_id) FROM admissions a LEFT JOIN icustays i ON i.hadm_id = a.hadm_id WHERE i.stay_id IS NULL",
         "visit_anti_join"),
        ("How many patients with an emergency admission never went to the ICU during it?",
         "SELECT COUNT(DISTINCT a.subject_id) FROM admissions a LEFT JOIN icustays i ON i.hadm_id = a.hadm_id "
         "WHERE i.stay_id IS NULL AND a.admission_type = 'ew emer.'", "visit_anti_join"),
        ("Patient 10002495 got furosemide; what was the route of the drug?",
         "SELECT route FROM prescriptions WHERE subject_id = 10002495 AND INSTR(drug, 'furosemide') > 0", "unnamed_reference"),
        ("What is the drug patient 10002495 was prescribed most often, and how many times did they get the drug?",
         "SELECT drug, COUNT(*) FROM prescriptions WHERE subject_id = 10002495 GROUP BY drug ORDER BY COUNT(*) DESC LIMIT 1",
         "unnamed_reference"),
        ("Patient 10021487 had a blood culture drawn; what organism was found in the test?",
         "SELECT org_name FROM microbiologyevents WHERE subject_id = 10021487 AND spec_type_desc = 'blood culture'",
         "unnamed_reference"),
    ]
    for question, sql, check in cases:
        assert check not in checks_of(ctx, question, sql), question
    # a conversion the wrong way with the inverse factor is turned over too
    base = "FROM chartevents WHERE subject_id = 10002495 AND itemid = 224639"
    found_and_repaired(ctx, "daily weight of patient 10002495 in pounds?", f"SELECT AVG(valuenum) * 0.4536 {base}",
                       f"SELECT AVG(valuenum) / 0.4536 {base}", "converted_backwards")


def test_a_conversion_written_number_first_and_a_quoted_alias_are_read(ctx):
    base = "FROM chartevents WHERE stay_id = 37293400 AND itemid = 224639 ORDER BY charttime DESC LIMIT 1"
    found_and_repaired(ctx, "10018081 latest weight in lbs?", f"SELECT 0.4536 * valuenum {base}", f"SELECT valuenum / 0.4536 {base}",
                       "converted_backwards")
    assert "converted_backwards" not in checks_of(ctx, "10018081 latest weight in lbs?", f"SELECT 2.2046 * valuenum {base}")
    quoted = ('SELECT COUNT(DISTINCT "A".subject_id) FROM admissions "A" LEFT JOIN icustays "I" ON "I".hadm_id = "A".hadm_id '
              'WHERE "I".stay_id IS NULL')
    right = quoted.replace('"I".hadm_id = "A".hadm_id', '"I".subject_id = "A".subject_id')
    found_and_repaired(ctx, "How many patients have never had an ICU stay?", quoted, right, "visit_anti_join")
