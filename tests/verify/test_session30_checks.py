"""Checks for mistakes seen in the blind sets' analysed halves, on the real MIMIC-IV and eICU demo databases: each one
finding its mistake and staying silent on the right query."""

from __future__ import annotations

from ehrguard.verify import verify
from ehrguard.verify.checks import repair, run_checks
from ehrguard.verify.offline.features import question_cues
from tests.verify.checking import assert_error_on_wrong_only, checks, rows


def test_a_stated_number_before_the_comparative_is_not_vague():
    for question in ("How many patients were 65 or older at their ICU stay?", "patients aged 80 years or older",
                     "children 12 and under", "patients with 2 or more admissions"):
        assert question_cues(question, assessing=True).vague == (), question
    assert question_cues("How many older patients had sepsis?", assessing=True).vague == ("older",)


def test_an_anti_join_counts_each_patient_once(ctx):
    question = "How many patients never had an ICU stay?"
    anti = "SELECT COUNT(*) FROM patients p LEFT JOIN icustays i ON i.subject_id = p.subject_id WHERE i.stay_id IS NULL"
    assert "counts_rows_not_patients" not in checks(ctx, question, anti)
    assert rows(ctx, anti) == rows(ctx, "SELECT COUNT(*) FROM patients WHERE subject_id NOT IN (SELECT subject_id FROM icustays)")
    # the matched rows of the same join repeat a patient once per stay
    matched = anti.replace("IS NULL", "IS NOT NULL")
    assert "counts_rows_not_patients" in checks(ctx, question.replace("never had", "had"), matched)


def test_a_returned_field_is_not_doubted_when_the_asked_one_is_returned_beside_it(ctx):
    question = "Any ICD procedures coded for patient 10039831's last admission?"
    both = ("SELECT p.icd_code, d.long_title FROM procedures_icd p JOIN d_icd_procedures d ON d.icd_code = p.icd_code "
            "WHERE p.subject_id = 10039831")
    assert "wrong_column" not in checks(ctx, question, both)
    # the table's own name says what is counted, not which field: "payer" is the insurance
    grouped = "SELECT insurance, COUNT(*) FROM admissions GROUP BY insurance"
    assert "wrong_column" not in checks(ctx, "Breakdown of admissions by payer category.", grouped)
    assert "admission_type" in checks(ctx, "Breakdown of admissions by admission type.", grouped)["wrong_column"].message
    assert "admittime" in checks(ctx, "What was the admission time of patient 10039831?",
                                 "SELECT dischtime FROM admissions WHERE subject_id = 10039831")["wrong_column"].message


def test_a_test_named_with_its_specimen_is_not_another_specimens_test(eicu_ctx):
    question = "Last serum glucose for unit stay 2893348?"
    bedside = ("SELECT labresult FROM lab WHERE patientunitstayid = 2893348 AND labname = 'bedside glucose' "
               "ORDER BY labresulttime DESC LIMIT 1")
    assert checks(eicu_ctx, question, bedside)["narrower_value"].severity == "warning"
    assert rows(eicu_ctx, bedside) != rows(eicu_ctx, bedside.replace("bedside glucose", "glucose"))
    assert "narrower_value" not in checks(eicu_ctx, question, bedside.replace("bedside glucose", "glucose"))
    assert "narrower_value" not in checks(eicu_ctx, question.replace("serum", "bedside"), bedside)


def test_a_drug_matched_by_one_exact_name_misses_its_other_names(ctx, eicu_ctx, mimic_iv_db):
    question = "How many aspirin orders does 10011398 have?"
    exact = "SELECT COUNT(*) FROM prescriptions WHERE subject_id = 10011398 AND drug = 'aspirin'"
    found = checks(ctx, question, exact)["missing_variants"]
    assert found.severity == "warning" and "'aspirin ec'" in found.message
    assert verify(question, exact, db=mimic_iv_db, db_id="mimic_iv").status != "verified"
    widened = "SELECT COUNT(*) FROM prescriptions WHERE subject_id = 10011398 AND drug LIKE 'aspirin%'"
    assert rows(ctx, exact) != rows(ctx, widened)
    assert "missing_variants" not in checks(ctx, question, widened)
    # the question names the longer name: nothing missed
    assert "missing_variants" not in checks(ctx, "How many aspirin ec orders does 10011398 have?",
                                            exact.replace("'aspirin'", "'aspirin ec'"))
    # eICU's medication names carry the dose and form
    found = checks(eicu_ctx, "How many patients received furosemide?",
                   "SELECT COUNT(DISTINCT p.uniquepid) FROM medication m JOIN patient p ON m.patientunitstayid = "
                   "p.patientunitstayid WHERE m.drugname = 'furosemide'")
    assert "missing_variants" in found


def test_a_drug_whose_other_names_change_nothing_is_not_doubted(ctx):
    # the patient's orders hold the drug under one name only: the exact match answers the same
    patient = ctx.db.execute("SELECT subject_id FROM prescriptions WHERE drug = 'aspirin' AND subject_id NOT IN "
                             "(SELECT subject_id FROM prescriptions WHERE drug LIKE 'aspirin %') LIMIT 1").rows[0][0]
    sql = f"SELECT COUNT(*) FROM prescriptions WHERE subject_id = {patient} AND drug = 'aspirin'"
    assert "missing_variants" not in checks(ctx, f"How many aspirin orders does {patient} have?", sql)


def test_a_period_of_the_icu_stay_is_counted_from_the_icu_arrival(ctx):
    question = "How many arterial systolic readings were charted in the first 6 hours of 10039831's ICU stay?"
    hospital = ("SELECT COUNT(*) FROM chartevents c JOIN admissions a ON c.hadm_id = a.hadm_id WHERE c.subject_id = 10039831 "
                "AND c.itemid = 220050 AND c.charttime <= datetime(a.admittime, '+6 hours')")
    icu = ("SELECT COUNT(*) FROM chartevents c JOIN icustays i ON c.stay_id = i.stay_id WHERE c.subject_id = 10039831 "
           "AND c.itemid = 220050 AND c.charttime <= datetime(i.intime, '+6 hours')")
    assert_error_on_wrong_only(ctx, "wrong_anchor", question, hospital, icu)
    # the other way round, and a period tied to no visit
    assert "wrong_anchor" in checks(ctx, "Lactate values within 24 hours of hospital admission for 10039831",
                                    "SELECT valuenum FROM labevents l JOIN icustays i ON l.hadm_id = i.hadm_id WHERE "
                                    "l.subject_id = 10039831 AND l.charttime <= datetime(i.intime, '+24 hours')")
    assert "wrong_anchor" not in checks(ctx, "How many readings in the first 6 hours of 2100?", hospital)


def test_a_distinct_count_of_stays_over_a_link_on_the_patient_is_still_coarse(ctx, mimic_iv_db):
    question = "How many ICU stays came from ew emer. admissions?"
    wrong = ("SELECT COUNT(*) FROM icustays i JOIN admissions a ON i.subject_id = a.subject_id "
             "WHERE a.admission_type = 'ew emer.'")
    right = wrong.replace("i.subject_id = a.subject_id", "i.hadm_id = a.hadm_id")
    # counting each stay once (the repair of the repeated rows) still counts the stays of every admission
    fixed = repair(run_checks(question, wrong, ctx))
    assert fixed is not None and rows(ctx, fixed) != rows(ctx, right)
    assert "coarse_join" in checks(ctx, question, fixed)
    verdict = verify(question, wrong, db=mimic_iv_db, db_id="mimic_iv")
    assert verdict.status != "verified" or rows(ctx, verdict.sql) == rows(ctx, right)
    assert "coarse_join" in checks(ctx, question, wrong.replace("COUNT(*)", "COUNT(DISTINCT i.stay_id)"))
    # the patients themselves are counted once whatever the link
    assert "coarse_join" not in checks(ctx, question, wrong.replace("COUNT(*)", "COUNT(DISTINCT i.subject_id)"))


def test_ionized_calcium_is_the_free_calcium_item_not_the_total(ctx):
    question = "Latest ionized calcium for 10039831?"
    total = "SELECT valuenum FROM labevents WHERE subject_id = 10039831 AND itemid = 50893 ORDER BY charttime DESC LIMIT 1"
    found = checks(ctx, question, total)
    assert found["wrong_code"].severity == "error" and "'free calcium'" in found["wrong_code"].message
    free = total.replace("50893", "50808")
    assert rows(ctx, total) != rows(ctx, free)
    assert {"wrong_code", "missing_value_filter"}.isdisjoint(checks(ctx, question, free))
    assert "wrong_code" not in checks(ctx, "Latest calcium for 10039831?", total)


def test_never_having_a_drug_is_not_having_another_one(ctx, eicu_ctx):
    question = "How many patients never received aspirin?"
    rows_dropped = "SELECT COUNT(DISTINCT subject_id) FROM prescriptions WHERE drug <> 'aspirin'"
    people_left_out = ("SELECT COUNT(DISTINCT subject_id) FROM prescriptions WHERE subject_id NOT IN "
                       "(SELECT subject_id FROM prescriptions WHERE drug = 'aspirin')")
    assert_error_on_wrong_only(ctx, "row_negation", question, rows_dropped, people_left_out)
    assert "row_negation" in checks(ctx, "Which patients did not get vancomycin?",
                                    "SELECT DISTINCT p.subject_id FROM prescriptions p WHERE p.drug NOT LIKE '%vancomycin%'")
    # the stays of eICU, and a negation of something else than the value the query drops
    assert "row_negation" in checks(eicu_ctx, "How many ICU stays had no heparin order?",
                                    "SELECT COUNT(DISTINCT patientunitstayid) FROM medication WHERE drugname <> 'heparin'")
    assert "row_negation" not in checks(ctx, "How many patients with no ICU stay had a non-elective admission?",
                                        "SELECT COUNT(DISTINCT subject_id) FROM admissions WHERE admission_type <> 'elective' "
                                        "AND subject_id NOT IN (SELECT subject_id FROM icustays)")
    # the drugs themselves asked for, not people
    assert "row_negation" not in checks(ctx, "Which drugs other than aspirin did patient 10011398 receive, not counting flushes?",
                                        "SELECT DISTINCT drug FROM prescriptions WHERE subject_id = 10011398 AND drug <> 'aspirin'")


def test_the_place_before_the_last_in_other_words(ctx):
    skipped_two = ("SELECT valuenum FROM chartevents WHERE subject_id = 10000032 AND itemid = 220045 "
                   "ORDER BY charttime DESC LIMIT 1 OFFSET 2")
    for question in ("What was the next-to-last heart rate of patient 10000032?",
                     "What was the penultimate heart rate of patient 10000032?"):
        checked = run_checks(question, skipped_two, ctx)
        assert {f.check for f in checked.findings} >= {"missing_place"}
        assert rows(ctx, repair(checked)) == rows(ctx, skipped_two.replace("OFFSET 2", "OFFSET 1"))
        assert "missing_place" not in checks(ctx, question, skipped_two.replace("OFFSET 2", "OFFSET 1"))


def test_a_field_said_to_be_recorded_is_tested_for_a_value(ctx, eicu_ctx):
    question = "How many admissions have a documented discharge location?"
    every = "SELECT COUNT(*) FROM admissions"
    checked = run_checks(question, every, ctx)
    found = {f.check: f for f in checked.findings}
    assert found["missing_presence"].severity == "error" and "IS NOT NULL" in found["missing_presence"].message
    right = "SELECT COUNT(*) FROM admissions WHERE discharge_location IS NOT NULL"
    assert rows(ctx, repair(checked)) == rows(ctx, right) != rows(ctx, every)
    assert "missing_presence" not in checks(ctx, question, right)
    checked = run_checks("How many admissions without a recorded discharge location?", every, ctx)
    assert rows(ctx, repair(checked)) == rows(ctx, "SELECT COUNT(*) FROM admissions WHERE discharge_location IS NULL")
    assert "missing_presence" not in checks(ctx, "How many admissions were there?", every)
    # eICU: the field's words inside one name, not its neighbour's (admissionheight)
    found = checks(eicu_ctx, "How many stays have a recorded admission weight?", "SELECT COUNT(*) FROM patient")
    assert "admissionweight" in found["missing_presence"].message


def test_a_long_drug_name_after_the_negation_is_read_to_its_end(eicu_ctx):
    drug = "morphine sulfate 2 mg/ml ij soln"
    assert "row_negation" in checks(eicu_ctx, f"How many ICU stays were not given {drug}?",
                                    f"SELECT COUNT(DISTINCT patientunitstayid) FROM medication WHERE drugname <> '{drug}'")


def test_a_field_never_empty_and_a_recorded_end_asked_for(ctx):
    # no admission lacks a language here: "no recorded language" is none of them, not all
    checked = run_checks("How many admissions have no recorded language?", "SELECT COUNT(*) FROM admissions", ctx)
    assert rows(ctx, repair(checked)) == [(0,)]
    # the question asks for stays whose out time is recorded: testing it is no unasked filter
    assert "unasked_ended" not in checks(ctx, "How many ICU stays have a recorded ICU out time?",
                                         "SELECT COUNT(*) FROM icustays WHERE outtime IS NOT NULL")


def test_the_reviews_right_queries_are_left_alone(ctx, eicu_ctx):
    # a negation inside a clause about a record filters rows, as the query does
    for question, sql in [
        ("How many patients had an ICU stay not in the coronary care unit (ccu)?",
         "SELECT COUNT(DISTINCT subject_id) FROM icustays WHERE first_careunit <> 'coronary care unit (ccu)'"),
        ("Which patients received a prescription that was not given po?",
         "SELECT DISTINCT subject_id FROM prescriptions WHERE route <> 'po'"),
        ("How many patients were prescribed a drug that was not aspirin?",
         "SELECT COUNT(DISTINCT subject_id) FROM prescriptions WHERE drug <> 'aspirin'"),
        ("For each patient, how many prescriptions were not for aspirin?",
         "SELECT subject_id, COUNT(*) FROM prescriptions WHERE drug <> 'aspirin' GROUP BY subject_id"),
    ]:
        assert "row_negation" not in checks(ctx, question, sql), question
    # a period after the stay's end, and a stay's start read only as a filter
    readmitted = ("SELECT COUNT(DISTINCT i.subject_id) FROM icustays i JOIN admissions a ON a.subject_id = i.subject_id "
                  "WHERE a.admittime > i.outtime AND a.admittime <= datetime(i.outtime, '+30 days')")
    assert "wrong_anchor" not in checks(ctx, "How many patients were readmitted within 30 days after their ICU stay?", readmitted)
    # a bedside glucose is a blood glucose
    assert "narrower_value" not in checks(eicu_ctx, "Last blood glucose for unit stay 2893348?",
                                          "SELECT labresult FROM lab WHERE patientunitstayid = 2893348 AND labname = 'bedside glucose' "
                                          "ORDER BY labresulttime DESC LIMIT 1")
    # stays of patients who ever had such an admission: the link on the patient is asked for
    stays = ("SELECT COUNT(DISTINCT i.stay_id) FROM icustays i JOIN admissions a ON i.subject_id = a.subject_id "
             "WHERE a.admission_type = 'urgent'")
    assert "coarse_join" not in checks(ctx, "How many ICU stays belong to patients who have ever had an urgent admission?", stays)
    # the name as written, forms left out, a route the longer names do not share
    exact = "SELECT COUNT(*) FROM prescriptions WHERE subject_id = 10011398 AND drug = 'aspirin'"
    for question in ("How many orders were for plain aspirin, not the enteric-coated or buffered forms?",
                     "How many prescriptions list the drug name exactly as 'aspirin'?"):
        assert "missing_variants" not in checks(ctx, question, exact), question
    # "the penultimate day" is reached by date arithmetic, not by a place in the stays' order
    day = ("SELECT AVG(c.valuenum) FROM chartevents c JOIN icustays i ON c.stay_id = i.stay_id WHERE c.itemid = 220045 "
           "AND i.stay_id = (SELECT stay_id FROM icustays WHERE subject_id = 10020740 ORDER BY intime DESC LIMIT 1) "
           "AND date(c.charttime) = date(i.outtime, '-1 day')")
    question = "The average heart rate of patient 10020740 on the penultimate day of the last ICU stay?"
    assert "missing_place" not in checks(ctx, question, day)


def test_the_reviews_wrong_queries_are_found(ctx):
    never = "How many patients never received aspirin?"
    for sql in ("SELECT COUNT(DISTINCT subject_id) FROM prescriptions WHERE NOT (drug = 'aspirin')",
                "SELECT COUNT(DISTINCT subject_id) FROM prescriptions WHERE 'aspirin' <> drug",
                "SELECT COUNT(DISTINCT subject_id) FROM prescriptions WHERE LOWER(drug) <> 'aspirin'"):
        assert "row_negation" in checks(ctx, never, sql), sql
    orders = "How many aspirin orders does 10011398 have?"
    for sql in ("SELECT COUNT(*) FROM prescriptions WHERE subject_id = 10011398 AND LOWER(drug) = 'aspirin'",
                "SELECT COUNT(*) FROM prescriptions WHERE subject_id = 10011398 AND 'aspirin' = drug",
                "SELECT COUNT(*) FROM prescriptions WHERE subject_id = 10011398 AND drug IN ('aspirin')"):
        assert "missing_variants" in checks(ctx, orders, sql), sql
    # an OR beside the empty side of a LEFT JOIN keeps matched rows: patients repeat
    assert "counts_rows_not_patients" in checks(ctx, "How many patients had no ICU stay or an ICU stay in a micu?",
                                                "SELECT COUNT(*) FROM patients p LEFT JOIN icustays i ON i.subject_id = p.subject_id "
                                                "WHERE i.stay_id IS NULL OR i.first_careunit LIKE '%micu%'")
    assert "counts_rows_not_patients" in checks(ctx, "How many patients had an admission without a discharge location, or no admission?",
                                                "SELECT COUNT(*) FROM patients p LEFT JOIN admissions a ON a.subject_id = p.subject_id "
                                                "WHERE a.discharge_location IS NULL")


def test_a_name_said_only_as_part_of_the_records_values(ctx):
    question = "How many microbiology tests were positive for staph aureus?"
    other = "SELECT COUNT(*) FROM microbiologyevents WHERE org_name = 'escherichia coli'"
    found = checks(ctx, question, other)["value_not_named"]
    assert "'staph aureus coag +'" in found.message
    right = "SELECT COUNT(*) FROM microbiologyevents WHERE org_name = 'staph aureus coag +'"
    assert rows(ctx, other) != rows(ctx, right)
    assert "value_not_named" not in checks(ctx, question, right)
    assert "value_not_named" not in checks(ctx, question, "SELECT COUNT(*) FROM microbiologyevents WHERE org_name LIKE '%staph aureus%'")


def test_never_through_a_join_and_after_a_description(ctx, eicu_ctx):
    # eICU's medication names the unit stay; the patients are read through the patient table
    joined = ("SELECT COUNT(DISTINCT p.uniquepid) FROM patient p JOIN medication m ON m.patientunitstayid = p.patientunitstayid "
              "WHERE m.drugname <> 'aspirin'")
    assert "row_negation" in checks(eicu_ctx, "How many patients never received aspirin?", joined)
    left_out = ("SELECT COUNT(DISTINCT p.uniquepid) FROM patient p WHERE p.uniquepid NOT IN (SELECT p2.uniquepid FROM patient p2 "
                "JOIN medication m ON m.patientunitstayid = p2.patientunitstayid WHERE m.drugname = 'aspirin')")
    assert "row_negation" not in checks(eicu_ctx, "How many patients never received aspirin?", left_out)
    assert "row_negation" in checks(ctx, "How many patients with an ICU stay never received aspirin?",
                                    "SELECT COUNT(DISTINCT i.subject_id) FROM icustays i JOIN prescriptions r ON r.hadm_id = i.hadm_id "
                                    "WHERE r.drug != 'aspirin'")


def test_hours_between_two_moments_are_asked_in_hours(ctx):
    days = ("SELECT julianday(i.intime) - julianday(a.admittime) FROM icustays i JOIN admissions a ON a.hadm_id = i.hadm_id "
            "WHERE i.stay_id = 39553978")
    question = "Hours between admission and ICU arrival for stay 39553978?"
    checked = run_checks(question, days, ctx)
    assert {f.check for f in checked.findings} >= {"wrong_duration_unit"}
    hours = days.replace("julianday(i.intime) - julianday(a.admittime)", "(julianday(i.intime) - julianday(a.admittime)) * 24")
    assert rows(ctx, repair(checked)) == rows(ctx, hours)
    assert "wrong_duration_unit" not in checks(ctx, question, hours)


def test_the_second_reviews_right_names_are_not_doubted(ctx):
    # the query's own name says the phrase in another number or order, in the records' words, or it names a form
    for question, sql in [
        ("What was the last white blood cell count of patient 10004235?",
         "SELECT valuenum FROM labevents WHERE subject_id = 10004235 AND itemid IN (SELECT itemid FROM d_labitems "
         "WHERE label = 'white blood cells') ORDER BY charttime DESC LIMIT 1"),
        ("Was a blood culture drawn for fungus for patient 10004235?",
         "SELECT COUNT(*) FROM microbiologyevents WHERE subject_id = 10004235 AND test_name = 'blood/fungal culture'"),
        ("How many patients got extended release metoprolol?",
         "SELECT COUNT(DISTINCT subject_id) FROM prescriptions WHERE drug = 'metoprolol succinate xl'"),
        ("What was the lowest oxygen saturation of patient 10004235?",
         "SELECT MIN(valuenum) FROM chartevents WHERE subject_id = 10004235 AND itemid IN (SELECT itemid FROM d_items "
         "WHERE label = 'o2 saturation pulseoxymetry')"),
    ]:
        assert "value_not_named" not in checks(ctx, question, sql), question
