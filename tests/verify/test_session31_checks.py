"""Repairs that must be certain, and wording that must not be misread: a value the question names only inside a longer
name is no repair, a discharge said with its destination is not a stay still open, a place recorded at discharge is
not the moment of discharge. On the real MIMIC-IV and eICU demo databases."""

from __future__ import annotations

from ehrguard.verify import verify
from tests.verify.checking import assert_error_on_wrong_only, checks, repaired, rows


def test_a_value_inside_a_longer_name_the_literal_reads_is_no_mistake(ctx):
    # "nursing home": 'home' is one of the column's values, and 'skilled nursing facility' reads the whole name
    nursing = "SELECT COUNT(DISTINCT subject_id) FROM admissions WHERE discharge_location = 'skilled nursing facility'"
    assert "wrong_value" not in checks(ctx, "How many patients were discharged to a nursing home?", nursing)
    # a word inside a word of the literal: "flu" in 'influenza a/b by dfa'
    flu = "SELECT COUNT(*) > 0 FROM microbiologyevents WHERE subject_id = 10004733 AND spec_type_desc = 'influenza a/b by dfa'"
    assert "wrong_value" not in checks(ctx, "Did patient 10004733 have a flu swab?", flu)
    # a generic noun after the value is what it qualifies: "rehab facility" is not 'skilled nursing facility'; but the
    # literal says a word of the question ("facility"), so it may be the question's own reading: a mistake, no repair
    snf = "SELECT COUNT(DISTINCT subject_id) FROM admissions WHERE discharge_location = 'skilled nursing facility'"
    for question in ("How many patients were discharged to a rehab facility?", "How many patients were discharged to a hospice facility?"):
        found = checks(ctx, question, snf)["wrong_value"]
        assert found.severity == "error" and found.suggestion is None, question
    health = "SELECT COUNT(DISTINCT subject_id) FROM admissions WHERE discharge_location = 'home health care'"
    assert checks(ctx, "How many patients were discharged to hospice care?", health)["wrong_value"].suggestion is None
    # the value said on its own is still a mistake, and repaired
    rehab = "SELECT COUNT(DISTINCT subject_id) FROM admissions WHERE discharge_location = 'rehab'"
    found = checks(ctx, "How many patients were discharged home?", rehab)["wrong_value"]
    assert found.severity == "error" and found.suggestion == "'home'"
    assert "'home'" in repaired(ctx, "How many patients were discharged home?", rehab)


def test_a_value_that_is_only_part_of_a_longer_name_is_not_put_in(ctx):
    # "blood alcohol": 'blood' is a value of the labels, the test asked for is another one; a mistake, but no repair
    sql = ("SELECT labevents.valuenum FROM labevents JOIN d_labitems ON labevents.itemid = d_labitems.itemid "
           "WHERE labevents.subject_id = 10004733 AND d_labitems.label = 'ethanol'")
    found = checks(ctx, "What was the blood alcohol level of patient 10004733?", sql).get("wrong_value")
    assert found is None or found.suggestion is None
    assert "'blood'" not in (repaired(ctx, "What was the blood alcohol level of patient 10004733?", sql) or "")


def test_initials_and_abbreviations_in_parentheses_name_the_value(eicu_ctx):
    sdu = "SELECT COUNT(DISTINCT uniquepid) FROM patient WHERE hospitaladmitsource = 'step-down unit (sdu)'"
    assert "wrong_value" not in checks(eicu_ctx, "How many patients came to the ICU from a step-down unit?", sdu)
    # the word after a value names what the table records ("charges"): the value stands on its own, and is repaired
    charges = "SELECT SUM(cost) FROM cost WHERE patienthealthsystemstayid = 492414 AND eventtype = 'treatment'"
    found = checks(eicu_ctx, "What were the medication charges for hospital stay 492414?", charges)["wrong_value"]
    assert found.suggestion == "'medication'"
    # a value written in clinical shorthand is the value named: 'p.o.' for "oral"
    oral = ("SELECT SUM(cellvaluenumeric) FROM intakeoutput WHERE patientunitstayid = 141340 AND celllabel = 'p.o.'")
    assert "wrong_value" not in checks(eicu_ctx, "What was the total oral intake of unit stay 141340?", oral)
    floor = "SELECT COUNT(DISTINCT uniquepid) FROM patient WHERE hospitaladmitsource = 'floor'"
    found = checks(eicu_ctx, "How many patients came from the emergency department?", floor)["wrong_value"]
    assert found.suggestion == "'emergency department'"


def test_lactated_ringers_read_by_its_initials(ctx):
    sql = ("SELECT SUM(inputevents.totalamount) FROM inputevents JOIN d_items ON inputevents.itemid = d_items.itemid "
           "WHERE inputevents.subject_id = 10004733 AND d_items.label = 'lr'")
    assert "wrong_value" not in checks(ctx, "How much lactated ringers did patient 10004733 receive?", sql)


def test_not_discharged_with_a_destination_is_not_a_stay_still_open(ctx):
    sql = ("SELECT COUNT(DISTINCT subject_id) FROM admissions WHERE strftime('%Y', admittime) = '2100' "
           "AND discharge_location <> 'home'")
    for question in ("How many patients admitted in 2100 were not discharged home?",
                     "How many patients admitted in 2100 were not discharged to hospice?"):
        assert "missing_current_filter" not in checks(ctx, question, sql.replace("'home'", "'hospice'")), question
    # on its own it still is, and with a time it is still open at
    still = checks(ctx, "How many patients are not yet discharged?", "SELECT COUNT(DISTINCT subject_id) FROM admissions")
    assert still["missing_current_filter"].suggestion == "admissions.dischtime IS NULL"
    ended = "SELECT COUNT(DISTINCT subject_id) FROM admissions WHERE dischtime IS NOT NULL"
    assert checks(ctx, "How many patients have not been discharged until now?", ended)["discharged_not_current"].severity == "error"


def test_a_place_recorded_at_discharge_is_not_the_moment_of_discharge(ctx):
    sql = "SELECT COUNT(*) FROM admissions WHERE discharge_location IS NOT NULL AND strftime('%Y', admittime) = '2100'"
    assert "wrong_concept" not in checks(ctx, "How many admissions with a documented discharge location were there in 2100?", sql)
    wrong = "SELECT COUNT(DISTINCT subject_id) FROM admissions WHERE strftime('%Y', admittime) = '2100'"
    assert checks(ctx, "How many patients were discharged in 2100?", wrong)["wrong_concept"].severity == "error"


def test_the_first_day_of_the_icu_stay_counts_from_the_unit_without_a_number(ctx):
    question = "What was the highest heart rate of patient 10004733 during the first day of their ICU stay?"
    base = ("SELECT MAX(c.valuenum) FROM chartevents c JOIN d_items d ON c.itemid = d.itemid {join} "
            "WHERE c.subject_id = 10004733 AND d.label = 'heart rate' AND c.charttime BETWEEN {t} AND datetime({t}, '+1 day')")
    hospital = base.format(join="JOIN admissions a ON a.hadm_id = c.hadm_id", t="a.admittime")
    unit = base.format(join="JOIN icustays i ON i.stay_id = c.stay_id", t="i.intime")
    assert checks(ctx, question, hospital)["wrong_anchor"].severity == "error"
    assert "wrong_anchor" not in checks(ctx, question, unit)


def test_a_unit_negated_by_its_abbreviation_is_a_negation_of_people(ctx):
    question = "How many patients were never in the MICU?"
    wrong = "SELECT COUNT(DISTINCT subject_id) FROM icustays WHERE first_careunit <> 'medical intensive care unit (micu)'"
    right = ("SELECT COUNT(DISTINCT subject_id) FROM icustays WHERE subject_id NOT IN "
             "(SELECT subject_id FROM icustays WHERE first_careunit = 'medical intensive care unit (micu)')")
    assert_error_on_wrong_only(ctx, "row_negation", question, wrong, right)


def test_a_recorded_field_named_by_initials_or_by_the_part_that_tells_it(ctx):
    assert_error_on_wrong_only(ctx, "missing_presence", "How many patients have a recorded date of death?",
                               "SELECT COUNT(DISTINCT subject_id) FROM patients",
                               "SELECT COUNT(DISTINCT subject_id) FROM patients WHERE dod IS NOT NULL")
    cultures = "SELECT COUNT(*) FROM microbiologyevents WHERE subject_id = 10004733 AND spec_type_desc = 'blood culture'"
    found = checks(ctx, "How many blood cultures of patient 10004733 have a recorded organism?", cultures)["missing_presence"]
    assert found.suggestion == "org_name IS NOT NULL"
    # initials only where no name is spelt out: "date of discharge" is the discharge time, not dod
    question = "How many female patients with a recorded date of discharge were admitted in 2100?"
    joined = ("SELECT COUNT(DISTINCT p.subject_id) FROM patients p JOIN admissions a ON a.subject_id = p.subject_id "
              "WHERE p.gender = 'f' AND strftime('%Y', a.admittime) = '2100'")
    assert checks(ctx, question, joined)["missing_presence"].suggestion == "a.dischtime IS NOT NULL"
    assert "missing_presence" not in checks(ctx, question, joined + " AND a.dischtime IS NOT NULL")


def test_a_table_of_several_kinds_is_read_for_the_kind_asked(ctx, eicu_ctx):
    # MIMIC-IV's cost rows name their kind by the table the event is in ('diagnoses_icd'); eICU's by a word ('medication')
    assert_error_on_wrong_only(ctx, "missing_kind", "What was the total cost of diagnoses coded for admission 22595853?",
                               "SELECT SUM(cost) FROM cost WHERE hadm_id = 22595853",
                               "SELECT SUM(cost) FROM cost WHERE hadm_id = 22595853 AND event_type = 'diagnoses_icd'")
    question = "What were the medication charges for hospital stay 492414?"
    found = checks(eicu_ctx, question, "SELECT SUM(cost) FROM cost WHERE patienthealthsystemstayid = 492414")["missing_kind"]
    assert found.suggestion == "eventtype = 'medication'"
    assert "'medication'" in repaired(eicu_ctx, question, "SELECT SUM(cost) FROM cost WHERE patienthealthsystemstayid = 492414")
    # a kind's word that is not what is paid for, or is left out, or starts another word, is no kind asked
    total = "SELECT SUM(cost) FROM cost WHERE patienthealthsystemstayid = 789245"
    for other in ("What was the total hospital cost of stay 789245 in the medical ICU?",
                  "What was the total cost of hospital stay 789245 for the patient treated with antibiotics?",
                  "What was the total hospital cost of the stay with the cardiac arrest diagnosis, stay 789245?"):
        assert "missing_kind" not in checks(eicu_ctx, other, total), other
    assert checks(eicu_ctx, "What was the total cost of labs for hospital stay 789245?", total)["missing_kind"].suggestion \
        == "eventtype = 'lab'"
    # a kind left out is left out, never kept
    excluding = checks(eicu_ctx, "What was the total cost of hospital stay 789245, excluding medications?", total)
    assert excluding["missing_kind"].suggestion == "eventtype <> 'medication'"
    # other words for a kind: drugs are MIMIC-IV's prescriptions
    assert checks(ctx, "How much was charged for drugs during admission 22595853?",
                  "SELECT SUM(cost) FROM cost WHERE hadm_id = 22595853")["missing_kind"].suggestion == "event_type = 'prescriptions'"
    # joined to the kind's events by their id, the kind is still to be chosen (event ids repeat across kinds)
    by_id = ("SELECT SUM(c.cost) FROM cost c JOIN medication m ON c.eventid = m.medicationid "
             "WHERE c.patienthealthsystemstayid = 789245")
    assert "missing_kind" in checks(eicu_ctx, "What were the medication charges for hospital stay 789245?", by_id)
    # no kind named, or the kind's own table read to choose the visits: nothing to add
    assert "missing_kind" not in checks(ctx, "What was the total cost of admission 22595853?",
                                        "SELECT SUM(cost) FROM cost WHERE hadm_id = 22595853")
    assert "missing_kind" not in checks(ctx, "What was the total cost of the diagnoses of patient 10004733?",
                                        "SELECT SUM(cost) FROM cost WHERE event_id IN (SELECT row_id FROM diagnoses_icd "
                                        "WHERE subject_id = 10004733)")


def test_an_item_chosen_by_number_is_moved_to_the_side_asked(ctx):
    # 220051 is 'arterial blood pressure diastolic'; its systolic sibling in d_items is 220050
    question = "lowest arterial systolic on 10018081 today"
    wrong = ("SELECT MIN(valuenum) FROM chartevents WHERE subject_id = 10018081 AND itemid = 220051 "
             "AND date(charttime) = '2100-12-31'")
    assert checks(ctx, question, wrong)["wrong_concept"].severity == "error"
    assert "itemid = 220050" in repaired(ctx, question, wrong)
    assert "wrong_concept" not in checks(ctx, question, wrong.replace("220051", "220050"))


def test_a_value_of_a_family_the_question_says_in_full_is_the_repair(ctx):
    question = "number of blood cultures sent on 10021487"
    wrong = "SELECT COUNT(*) FROM microbiologyevents WHERE subject_id = 10021487 AND spec_type_desc = 'blood'"
    found = checks(ctx, question, wrong)["unknown_value"]
    assert found.suggestion == "'blood culture'"
    assert "'blood culture'" in repaired(ctx, question, wrong)
    # said only in part: which of the family was meant is the asker's
    assert checks(ctx, "number of blood specimens sent on 10021487", wrong)["unknown_value"].suggestion is None


def test_a_code_without_its_code_system_is_the_code_the_records_write(ctx):
    question = "How many times is essential hypertension (ICD-9 401.9) coded?"
    bare = "SELECT COUNT(*) FROM diagnoses_icd WHERE icd_code = '4019'"
    found = checks(ctx, question, bare)
    assert found["unknown_value"].suggestion == "'icd9|4019'"
    fixed = repaired(ctx, question, bare)
    assert "'icd9|4019'" in fixed and rows(ctx, fixed) != rows(ctx, bare)
    # the stated 401.9 is the code written without its dot: no number is missing from the repaired query
    assert not {"missing_stated_number", "unknown_value"} & set(checks(ctx, question, fixed))


def test_a_code_named_in_full_inside_a_longer_name_is_repaired(ctx):
    question = "Latest ionized calcium for 10039831?"
    total = "SELECT valuenum FROM labevents WHERE subject_id = 10039831 AND itemid = 50893 ORDER BY charttime DESC LIMIT 1"
    assert "itemid = 50808" in repaired(ctx, question, total)


def test_visits_ordered_by_their_id_are_ordered_by_their_start(eicu_ctx):
    question = "What was the first unit stay of 006-100716's current hospitalization?"
    by_id = ("SELECT patientunitstayid FROM patient WHERE uniquepid = '006-100716' AND hospitaldischargetime IS NULL "
             "ORDER BY patientunitstayid LIMIT 1")
    assert checks(eicu_ctx, question, by_id)["wrong_order_kind"].suggestion == "ORDER BY unitadmittime"
    fixed = repaired(eicu_ctx, question, by_id)
    assert rows(eicu_ctx, fixed) == rows(eicu_ctx, by_id.replace("ORDER BY patientunitstayid", "ORDER BY unitadmittime"))


def test_a_pattern_that_matches_none_of_the_kept_rows_but_in_another_column(eicu_ctx):
    question = "Total recorded intake (mL) over unit stay 603254"
    label = ("SELECT SUM(cellvaluenumeric) FROM intakeoutput WHERE patientunitstayid = 603254 "
             "AND celllabel LIKE '%intake%'")
    found = checks(eicu_ctx, question, label)["pattern_matches_nothing"]
    assert "cellpath" in found.message
    assert rows(eicu_ctx, label) == [(None,)]
    # on the column that holds it, or where the query answers, nothing to say
    assert "pattern_matches_nothing" not in checks(eicu_ctx, question, label.replace("celllabel", "cellpath"))
    assert "pattern_matches_nothing" not in checks(eicu_ctx, "Total oral intake over unit stay 603254",
                                                   label.replace("'%intake%'", "'%oral%'"))


def test_a_cast_that_stops_at_a_thousands_separator(eicu_ctx):
    question = "biggest single ancef dose on stay 2501548 (mg)?"
    cut = "SELECT MAX(CAST(dosage AS REAL)) FROM medication WHERE patientunitstayid = 2501548 AND drugname = 'ancef'"
    assert checks(eicu_ctx, question, cut)["comma_cut_number"].severity == "error"
    fixed = repaired(eicu_ctx, question, cut)
    assert rows(eicu_ctx, fixed) == [(2000.0,)] and rows(eicu_ctx, cut) == [(2.0,)]
    assert "comma_cut_number" not in checks(eicu_ctx, question, fixed)


def test_a_positive_culture_is_one_where_an_organism_grew(ctx):
    question = "How many pts had a positive urine cx?"
    assert_error_on_wrong_only(ctx, "missing_presence", question,
                               "SELECT COUNT(DISTINCT subject_id) FROM microbiologyevents WHERE spec_type_desc = 'urine'",
                               "SELECT COUNT(DISTINCT subject_id) FROM microbiologyevents WHERE spec_type_desc = 'urine' "
                               "AND org_name IS NOT NULL")


def test_where_patients_live_is_not_in_the_records(eicu_ctx):
    verdict = verify("how many of our ICU pts are from out of state?",
                     "SELECT COUNT(DISTINCT uniquepid) FROM patient WHERE hospitaladmitsource = 'other hospital'", db=eicu_ctx.path)
    assert verdict.action == "unanswerable" and verdict.status == "abstained"


def test_a_length_of_stay_in_days_is_no_difference_of_days_of_the_month(ctx):
    question = "LOS in days for 10007795's first admission"
    sql = ("SELECT CAST(strftime('%d', dischtime) AS INTEGER) - CAST(strftime('%d', admittime) AS INTEGER) FROM admissions "
           "WHERE subject_id = 10007795 ORDER BY admittime LIMIT 1")
    assert checks(ctx, question, sql)["field_difference"].severity == "error"


def test_an_average_over_patients_counts_each_patient_once(ctx, eicu_ctx):
    found = checks(eicu_ctx, "Mean age of the patients who died in hospital",
                   "SELECT AVG(CAST(age AS INTEGER)) FROM patient WHERE hospitaldischargestatus = 'expired'")
    assert found["averaged_over_visits"].severity == "warning"
    # over the visits themselves, or each patient once: nothing to say
    assert "averaged_over_visits" not in checks(ctx, "Mean age over all admissions of patients who died",
                                                "SELECT AVG(age) FROM admissions WHERE discharge_location = 'died'")
    assert "averaged_over_visits" not in checks(ctx, "What is the average age of patients?",
                                                "SELECT AVG(age) FROM (SELECT DISTINCT subject_id, age FROM admissions)")


def test_a_plural_name_negated_in_the_singular_and_a_test_the_question_rules_out(eicu_ctx):
    assert_error_on_wrong_only(eicu_ctx, "row_negation", "How many unit stays never received any vasopressor?",
                               "SELECT COUNT(DISTINCT patientunitstayid) FROM treatment WHERE treatmentname NOT LIKE 'vasopressors%'",
                               "SELECT COUNT(*) FROM patient WHERE patientunitstayid NOT IN (SELECT patientunitstayid FROM "
                               "treatment WHERE treatmentname LIKE 'vasopressors%')")
    question = "last serum glucose (lab, not fingerstick) for stay 1063405"
    bedside = ("SELECT labresult FROM lab WHERE patientunitstayid = 1063405 AND labname = 'bedside glucose' "
               "ORDER BY labresulttime DESC LIMIT 1")
    assert "narrower_value" in checks(eicu_ctx, question, bedside)
    assert "narrower_value" not in checks(eicu_ctx, question, bedside.replace("'bedside glucose'", "'glucose'"))
    assert "narrower_value" not in checks(eicu_ctx, "last fingerstick glucose for stay 1063405", bedside)


def test_visits_counted_over_a_link_on_the_patient_are_linked_on_the_visit(ctx):
    question = "How many hospital admissions included an ICU stay?"
    coarse = "SELECT COUNT(DISTINCT a.hadm_id) FROM admissions a JOIN icustays i ON a.subject_id = i.subject_id"
    assert_error_on_wrong_only(ctx, "coarse_join", question, coarse, coarse.replace("subject_id", "hadm_id"))
    assert "a.hadm_id = i.hadm_id" in repaired(ctx, question, coarse)
    # a question about the patients' admissions asks for the link on the patient
    assert "coarse_join" not in checks(ctx, "How many admissions belong to patients who ever had an ICU stay?", coarse)


def test_an_empty_text_where_the_records_leave_the_field_null(eicu_ctx):
    question = "how many unit stays have no hospital discharge status recorded"
    blank = "SELECT COUNT(*) FROM patient WHERE hospitaldischargestatus = ''"
    assert_error_on_wrong_only(eicu_ctx, "empty_for_null", question, blank,
                               "SELECT COUNT(*) FROM patient WHERE hospitaldischargestatus IS NULL")
    assert "IS NULL" in repaired(eicu_ctx, question, blank)
    # <> '' already drops the NULLs (NULL <> '' is not true): nothing to say
    assert "empty_for_null" not in checks(eicu_ctx, question, blank.replace("=", "<>"))


def test_a_value_with_other_punctuation_is_the_value_named(eicu_ctx):
    found = checks(eicu_ctx, "How many African-American pts?",
                   "SELECT COUNT(DISTINCT uniquepid) FROM patient WHERE ethnicity = 'african-american'")["unknown_value"]
    assert found.suggestion == "'african american'" and found.clarify is None


def test_an_id_column_returned_where_the_question_names_another(eicu_ctx):
    question = "how many different hospitals are in the data"
    assert_error_on_wrong_only(eicu_ctx, "wrong_column", question, "SELECT COUNT(DISTINCT wardid) FROM patient",
                               "SELECT COUNT(DISTINCT hospitalid) FROM patient")
    assert "hospitalid" in repaired(eicu_ctx, question, "SELECT COUNT(DISTINCT wardid) FROM patient")
    assert "wrong_column" not in checks(eicu_ctx, "which ward was unit stay 141340 in",
                                        "SELECT wardid FROM patient WHERE patientunitstayid = 141340")


def test_the_second_reviews_right_queries_are_left_alone(ctx, eicu_ctx):
    """Right queries of the second review of session 31 that a first version faulted or changed."""
    mimic = [
        ("What is the total cost of all admissions, excluding admissions with a diagnosis of hypertension?",
         "SELECT SUM(cost) FROM cost WHERE hadm_id NOT IN (SELECT hadm_id FROM diagnoses_icd WHERE icd_code = 'icd9|4019')",
         "missing_kind"),
        ("What is the total cost of drug abuse admissions?",
         "SELECT SUM(cost) FROM cost WHERE hadm_id IN (SELECT hadm_id FROM diagnoses_icd WHERE icd_code LIKE 'icd9|304%')",
         "missing_kind"),
        ("How many hospital admissions had a hypertension diagnosis in an earlier admission?",
         "SELECT COUNT(DISTINCT a.hadm_id) FROM admissions a JOIN diagnoses_icd d ON a.subject_id = d.subject_id "
         "WHERE d.icd_code = 'icd9|4019' AND d.hadm_id <> a.hadm_id", "coarse_join"),
        ("How many admissions have a discharge location recorded?",
         "SELECT COUNT(*) FROM admissions WHERE discharge_location <> ''", "empty_for_null"),
        ("Patient 10007818 has diastolic heart failure; what was their peak arterial blood pressure reading in ICU stay "
         "32359580?", "SELECT MAX(valuenum) FROM chartevents WHERE stay_id = 32359580 AND itemid = 220050", "wrong_concept"),
        ("What is the average length of stay of patients admitted as urgent?",
         "SELECT AVG(julianday(dischtime) - julianday(admittime)) FROM admissions WHERE admission_type = 'urgent'",
         "averaged_over_visits"),
    ]
    for question, sql, check in mimic:
        assert check not in checks(ctx, question, sql), question
    eicu = [("Which unit in hospital 73 had the most ICU stays?",
             "SELECT wardid FROM patient WHERE hospitalid = 73 GROUP BY wardid ORDER BY COUNT(*) DESC LIMIT 1", "wrong_column")]
    for question, sql, check in eicu:
        assert check not in checks(eicu_ctx, question, sql), question


def test_the_second_reviews_repairs_keep_what_the_question_excludes_and_its_numbers(ctx, eicu_ctx):
    # a family member the question leaves out is no repair
    other = checks(ctx, "How many blood specimens other than blood cultures were sent for admission 22987108?",
                   "SELECT COUNT(*) FROM microbiologyevents WHERE hadm_id = 22987108 AND spec_type_desc = 'blood'")
    assert other["unknown_value"].suggestion is None
    # a stated 1.1 is not the month '2100-11'
    month = checks(ctx, "How many free calcium results below 1.1 were recorded in November 2100?",
                   "SELECT COUNT(*) FROM labevents WHERE itemid = 50808 AND strftime('%Y-%m', charttime) = '2100-11'")
    assert "missing_stated_number" in month
    # "unknown" ethnicity where the records hold an 'other/unknown' value: which was meant is not certain
    assert "empty_for_null" not in checks(eicu_ctx, "How many patients with unknown ethnicity were admitted?",
                                          "SELECT COUNT(DISTINCT uniquepid) FROM patient WHERE ethnicity = ''")


def test_an_age_at_admission_averaged_over_patients_is_still_over_patients(ctx):
    question = "What is the average age of the female patients at admission?"
    sql = ("SELECT AVG(admissions.age) FROM admissions JOIN patients ON admissions.subject_id = patients.subject_id "
           "WHERE patients.gender = 'f'")
    assert "averaged_over_visits" in checks(ctx, question, sql)
    assert "averaged_over_visits" not in checks(ctx, "mean age of patients at their admissions in 2100",
                                                "SELECT AVG(age) FROM admissions WHERE strftime('%Y', admittime) = '2100'")


def test_only_an_abbreviation_in_parentheses_is_left_out_of_a_name():
    from ehrguard.verify.checks.concepts import without_abbreviation

    assert without_abbreviation("step-down unit (sdu)").strip() == "step-down unit"
    assert without_abbreviation("neuro surgical intensive care unit (neuro sicu)").strip() == "neuro surgical intensive care unit"
    # a form or a kind in parentheses says more than the words before it
    assert without_abbreviation("acetaminophen (liquid)") == "acetaminophen (liquid)"
