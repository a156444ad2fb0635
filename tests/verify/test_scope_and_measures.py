"""Session 21 checks, on the real MIMIC-IV and eICU demo databases: the visit a question keeps to, the unit of an
amount, a code no dictionary row defines, the kind of visit counted, a stated exclusion, a recurring time, a join on
the patient that pairs every visit's rows, and what the records cannot say (payments, relatives, staff, what an image
showed, advice).

Each check is shown finding its mistake (and repairing it where the fix is certain, checked by running both), and
staying silent on the right query for the same question.
"""

from __future__ import annotations

import pytest

from ehrguard.verify import verify
from ehrguard.verify.checks import run_checks
from ehrguard.verify.offline.features import question_cues
from ehrguard.verify.offline.training import shorthand, shorthand_questions
from tests.verify.checking import checks_of, found_and_repaired, found_not_repaired

# --- the visit the question keeps to -------------------------------------------------------------------------------

def test_events_of_every_admission_where_one_is_named_by_its_place(ctx, eicu_ctx):
    # grouped by the visit: an answer for every admission, not the first
    assert "missing_visit_scope" in checks_of(ctx, "What was the lowest glucose of patient 10000032 during the first hospital "
                                              "admission?", "SELECT hadm_id, MIN(valuenum) FROM labevents WHERE subject_id = "
                                              "10000032 AND itemid = 50931 GROUP BY hadm_id")
    found_not_repaired(ctx, "How many lab tests were done during patient 10000032's first admission?",
                       "SELECT COUNT(*) FROM labevents WHERE subject_id = 10000032",
                       "SELECT COUNT(*) FROM labevents WHERE hadm_id = (SELECT hadm_id FROM admissions WHERE subject_id = 10000032 "
                       "ORDER BY admittime ASC LIMIT 1)", "missing_visit_scope")
    # eICU: the hospital stay is patienthealthsystemstayid; a join on the unit stay's id says nothing of which one
    found_not_repaired(eicu_ctx, "Lowest potassium during 021-104948's most recent hospitalization?",
                       "SELECT MIN(l.labresult) FROM lab l JOIN patient p ON l.patientunitstayid = p.patientunitstayid "
                       "WHERE p.uniquepid = '021-104948' AND l.labname = 'potassium'",
                       "SELECT MIN(l.labresult) FROM lab l JOIN patient p ON l.patientunitstayid = p.patientunitstayid WHERE "
                       "p.patienthealthsystemstayid = (SELECT patienthealthsystemstayid FROM patient WHERE uniquepid = '021-104948' "
                       "ORDER BY hospitaladmittime DESC LIMIT 1) AND l.labname = 'potassium'", "missing_visit_scope")


@pytest.mark.parametrize(("question", "sql"), [
    # the visit's own table: about the visits themselves, left to the order checks
    ("What was the admission type of patient 10000032's first admission?",
     "SELECT admission_type FROM admissions WHERE subject_id = 10000032 ORDER BY admittime LIMIT 1"),
    # the visit named by its id
    ("How many lab tests were done during patient 10000032's current admission 22595853?",
     "SELECT COUNT(*) FROM labevents WHERE hadm_id = 22595853"),
    # kept to the visit by the visit's times
    ("How many lab tests were done during patient 10000032's first admission?",
     "SELECT COUNT(*) FROM labevents l WHERE l.subject_id = 10000032 AND l.charttime BETWEEN (SELECT MIN(admittime) FROM "
     "admissions WHERE subject_id = 10000032) AND (SELECT dischtime FROM admissions WHERE subject_id = 10000032 ORDER BY "
     "admittime LIMIT 1)"),
    # no visit named by its place
    ("How many lab tests has patient 10000032 had?", "SELECT COUNT(*) FROM labevents WHERE subject_id = 10000032"),
    # a visit as the start of a span: the whole history since
    ("Since his first hospital visit, how many microbiology tests has patient 10000032 had?",
     "SELECT COUNT(*) FROM microbiologyevents WHERE subject_id = 10000032"),
])
def test_the_visit_scope_is_silent_where_the_query_says_which_visit(ctx, question, sql):
    assert "missing_visit_scope" not in checks_of(ctx, question, sql)


def test_a_join_on_the_patient_pairs_every_visits_rows_with_the_visit_kept(ctx):
    question = "What was the total cost of patient 10000032's admission that started on 2100-08-12?"
    wrong = ("SELECT SUM(cost.cost) FROM cost JOIN admissions ON cost.subject_id = admissions.subject_id "
             "WHERE admissions.subject_id = 10000032 AND date(admissions.admittime) = '2100-08-12'")
    found_not_repaired(ctx, question, wrong, wrong.replace("cost.subject_id = admissions.subject_id", "cost.hadm_id = admissions.hadm_id"),
                       "coarse_join")
    assert all(f.suggestion is None for f in run_checks(question, wrong, ctx).findings if f.check == "coarse_join")
    # a link on the patient on purpose (any of their admissions; counted once per patient; other visits): left alone
    for question, sql in (
            ("Among patients with an emergency admission, how many have ever been diagnosed with hypertension, in any of their "
             "admissions?", "SELECT COUNT(DISTINCT a.subject_id) FROM admissions a JOIN diagnoses_icd d ON a.subject_id = d.subject_id "
             "WHERE a.admission_type = 'ew emer.' AND d.icd_code IN ('icd9|4019', 'icd10|i10')"),
            ("For patients admitted on 2100-08-25, how many diagnoses did they have in their earlier admissions?",
             "SELECT COUNT(*) FROM admissions a JOIN diagnoses_icd d ON a.subject_id = d.subject_id "
             "WHERE date(a.admittime) = '2100-08-25' AND d.hadm_id <> a.hadm_id")):
        assert "coarse_join" not in checks_of(ctx, question, sql), question


def test_the_kind_of_visit_counted(eicu_ctx):
    found_and_repaired(eicu_ctx, "How many unit stays did patient 006-100497 have?",
                       "SELECT COUNT(DISTINCT patienthealthsystemstayid) FROM patient WHERE uniquepid = '006-100497'",
                       "SELECT COUNT(DISTINCT patientunitstayid) FROM patient WHERE uniquepid = '006-100497'", "counts_other_visit")
    found_and_repaired(eicu_ctx, "How many hospital stays did patient 006-100497 have?",
                       "SELECT COUNT(DISTINCT patientunitstayid) FROM patient WHERE uniquepid = '006-100497'",
                       "SELECT COUNT(DISTINCT patienthealthsystemstayid) FROM patient WHERE uniquepid = '006-100497'",
                       "counts_other_visit")
    # "admissions to the ICU" are ICU stays
    assert "counts_other_visit" not in checks_of(eicu_ctx, "How many admissions to the ICU did patient 002-10148 have?",
                                                 "SELECT COUNT(DISTINCT patientunitstayid) FROM patient WHERE uniquepid = '002-10148'")
    # "stays" alone says neither
    by_hospital_stay = "SELECT COUNT(DISTINCT patienthealthsystemstayid) FROM patient WHERE uniquepid = '006-100497'"
    assert "counts_other_visit" not in checks_of(eicu_ctx, "How many stays did patient 006-100497 have?", by_hospital_stay)


# --- amounts in the unit asked --------------------------------------------------------------------------------------

def test_an_amount_in_another_unit_than_the_one_asked(ctx):
    found_and_repaired(ctx, "How many liters of D5W did patient 10018081 get in ICU stay 37293400?",
                       "SELECT SUM(totalamount) FROM inputevents WHERE stay_id = 37293400 AND itemid = 220949",
                       "SELECT SUM(totalamount) / 1000.0 FROM inputevents WHERE stay_id = 37293400 AND itemid = 220949",
                       "wrong_measure_unit")
    found_and_repaired(ctx, "What was the last daily weight of patient 10001725 in lbs?",
                       "SELECT valuenum FROM chartevents WHERE subject_id = 10001725 AND itemid = 224639 ORDER BY charttime DESC LIMIT 1",
                       "SELECT valuenum * 2.204623 FROM chartevents WHERE subject_id = 10001725 AND itemid = 224639 "
                       "ORDER BY charttime DESC LIMIT 1", "wrong_measure_unit")
    # the factor exactly: 152 cm is 59.84 inches, not 60.8
    height = "FROM chartevents WHERE subject_id = 10000032 AND itemid = 226730 ORDER BY charttime DESC LIMIT 1"
    found_and_repaired(ctx, "How tall is patient 10000032 in inches?", f"SELECT valuenum {height}", f"SELECT valuenum / 2.54 {height}",
                       "wrong_measure_unit")
    # temperatures have no factor: found, not repaired
    checked = run_checks("What was the last temperature of patient 10004720 in fahrenheit?", "SELECT valuenum FROM chartevents "
                         "WHERE subject_id = 10004720 AND itemid = 223762 ORDER BY charttime DESC LIMIT 1", ctx)
    assert [f.suggestion for f in checked.findings if f.check == "wrong_measure_unit"] == [None]


@pytest.mark.parametrize(("question", "sql"), [
    ("How many mL of D5W did ICU stay 37293400 get?",
     "SELECT SUM(totalamount) FROM inputevents WHERE stay_id = 37293400 AND itemid = 220949"),
    ("What was the last daily weight of patient 10001725 in kg?",
     "SELECT valuenum FROM chartevents WHERE subject_id = 10001725 AND itemid = 224639 ORDER BY charttime DESC LIMIT 1"),
    # a unit after a number states a value, not the unit of the answer
    ("How many orders of 10 mg morphine were there?", "SELECT COUNT(*) FROM prescriptions WHERE dose_val_rx = '10'"),
])
def test_the_measure_unit_is_silent_where_the_units_agree(ctx, question, sql):
    assert "wrong_measure_unit" not in checks_of(ctx, question, sql)


# --- codes and exclusions -------------------------------------------------------------------------------------------

def test_a_code_no_dictionary_row_defines(ctx):
    question = "What was patient 10000032's latest heart rate?"
    found_and_repaired(ctx, question,
                       "SELECT valuenum FROM labevents WHERE subject_id = 10000032 AND itemid = 220045 ORDER BY charttime DESC LIMIT 1",
                       "SELECT valuenum FROM chartevents WHERE subject_id = 10000032 AND itemid = 220045 ORDER BY charttime DESC LIMIT 1",
                       "unknown_code")
    # the question names something else than the other dictionary's label: which was meant is open, no repair
    checked = run_checks("What was patient 10000032's latest potassium?", "SELECT valuenum FROM labevents WHERE subject_id = "
                         "10000032 AND itemid = 220045 ORDER BY charttime DESC LIMIT 1", ctx)
    finding = next(f for f in checked.findings if f.check == "unknown_code")
    assert finding.suggestion is None and "heart rate" in finding.message
    # a list that holds a lab item too would lose it if the table changed: found, not moved
    checked = run_checks("What were the glucose and heart rate values of patient 10000032 on 2100-08-12?",
                         "SELECT itemid, valuenum FROM labevents WHERE subject_id = 10000032 AND itemid IN (50931, 220045) "
                         "AND date(charttime) = '2100-08-12'", ctx)
    assert [f.suggestion for f in checked.findings if f.check == "unknown_code"] == [None]


def test_a_stated_exclusion_the_query_never_makes(ctx):
    question = "How many patients were prescribed heparin (not flushes)?"
    found_not_repaired(ctx, question, "SELECT COUNT(DISTINCT subject_id) FROM prescriptions WHERE drug LIKE '%heparin%'",
                       "SELECT COUNT(DISTINCT subject_id) FROM prescriptions WHERE drug LIKE '%heparin%' AND drug NOT LIKE '%flush%'",
                       "missing_exclusion")
    assert "missing_exclusion" in checks_of(ctx, "How many heparin prescriptions (not flushes) did patient 10007795 get?",
                                            "SELECT COUNT(*) FROM prescriptions WHERE subject_id = 10007795 AND drug LIKE '%heparin%'")


@pytest.mark.parametrize(("question", "sql"), [
    # a bound excluded by a comparison is the bound checks' business
    ("How many patients, excluding those under 18, were admitted?", "SELECT COUNT(DISTINCT subject_id) FROM admissions WHERE age >= 18"),
    # an exclusion made another way: repeats by DISTINCT, the rest by a positive list or item, the current one by OFFSET
    ("How many distinct drugs was patient 10000032 prescribed, not counting repeat prescriptions?",
     "SELECT COUNT(DISTINCT drug) FROM prescriptions WHERE subject_id = 10000032"),
    ("How many admissions were there, excluding elective ones?",
     "SELECT COUNT(*) FROM admissions WHERE admission_type IN ('ew emer.', 'urgent', 'eu observation', 'observation admit')"),
    ("When was patient 10000032 last discharged, excluding the current admission?",
     "SELECT dischtime FROM admissions WHERE subject_id = 10000032 ORDER BY admittime DESC LIMIT 1 OFFSET 1"),
])
def test_an_exclusion_made_without_negation_is_no_finding(ctx, question, sql):
    assert "missing_exclusion" not in checks_of(ctx, question, sql)


def test_the_value_a_question_excludes_is_not_substituted(ctx):
    """"excluding elective ones": 'elective' is named to be left out, not the value the query should look for."""
    checked = run_checks("How many admissions were there, excluding elective ones?",
                         "SELECT COUNT(*) FROM admissions WHERE admission_type IN ('ew emer.', 'urgent')", ctx)
    assert "wrong_value" not in {f.check for f in checked.findings}


def test_a_time_of_year_with_no_time_read(ctx):
    found_not_repaired(ctx, "How many patients had a lactate measured in December?",
                       "SELECT COUNT(DISTINCT subject_id) FROM labevents WHERE itemid = 50813",
                       "SELECT COUNT(DISTINCT subject_id) FROM labevents WHERE itemid = 50813 AND strftime('%m', charttime) = '12'",
                       "missing_time_window")


# --- what the question says, read with general English ------------------------------------------------------------

def test_plain_words_name_fields_and_sides(ctx, eicu_ctx):
    # "sex" is recorded as gender: no wrong column; "how tall" asks for a height
    assert "wrong_column" not in checks_of(eicu_ctx, "age and sex of 016-10197?",
                                           "SELECT DISTINCT age, gender FROM patient WHERE uniquepid = '016-10197'")
    assert "wrong_column" in checks_of(eicu_ctx, "How tall is patient 009-10343?",
                                       "SELECT DISTINCT admissionweight FROM patient WHERE uniquepid = '009-10343'")
    # a drug discontinued has stopped, a treatment begun has started: the other end's time is the wrong field
    last = "FROM prescriptions WHERE subject_id = 10000032 AND drug = 'furosemide' ORDER BY starttime DESC LIMIT 1"
    for question in ("When was furosemide discontinued for patient 10000032 the last time?",
                     "What was the end time of the last furosemide prescription of patient 10000032?"):
        assert "wrong_column" in checks_of(ctx, question, f"SELECT starttime {last}")
        assert "wrong_column" not in checks_of(ctx, question, f"SELECT stoptime {last}")
    assert "wrong_column" in checks_of(ctx, "When was furosemide initiated for patient 10000032?",
                                       f"SELECT stoptime {last.replace('starttime', 'stoptime')}")
    # "take in" is intake
    found_and_repaired(ctx, "How much fluid did patient 10027602 take in on 2100-12-04?",
                       "SELECT SUM(value) FROM outputevents WHERE subject_id = 10027602 AND date(charttime) = '2100-12-04'",
                       "SELECT SUM(totalamount) FROM inputevents WHERE subject_id = 10027602 AND date(starttime) = '2100-12-04'",
                       "wrong_concept")
    # a table the query reads names the thing: "transfer events" read from transfers
    assert "missing_value_filter" not in checks_of(ctx, "How many transfer events are logged for admission 28998349?",
                                                   "SELECT COUNT(*) FROM transfers WHERE hadm_id = 28998349")


@pytest.mark.parametrize(("question", "sql", "kind"), [
    ("How much did the hospital get paid for patient 030-10040's stay in May?",
     "SELECT SUM(cost) FROM cost WHERE uniquepid = '030-10040' AND strftime('%m', chargetime) = '05'", "not_in_records"),
    ("Who ordered the lasix for patient 021-104948?",
     "SELECT drugstarttime FROM medication JOIN patient ON medication.patientunitstayid = patient.patientunitstayid "
     "WHERE patient.uniquepid = '021-104948' AND medication.drugname = 'lasix'", "not_in_records"),
    ("Name of the intensivist covering unit stay 733082?", "SELECT wardid FROM patient WHERE patientunitstayid = 733082",
     "not_in_records"),
    ("Did any of patient 027-101368's siblings have heart attacks?",
     "SELECT diagnosisname FROM diagnosis JOIN patient ON diagnosis.patientunitstayid = patient.patientunitstayid "
     "WHERE patient.uniquepid = '027-101368'", "not_in_records"),
    # the query looking up the x-ray as a treatment says it was done, not what it showed
    ("What did patient 003-11972's chest x-ray show?",
     "SELECT treatmentname, treatmenttime FROM treatment JOIN patient ON treatment.patientunitstayid = patient.patientunitstayid "
     "WHERE patient.uniquepid = '003-11972' AND treatment.treatmentname = 'chest x-ray'", "not_in_records"),
    ("What potassium replacement dose should unit stay 1063405 get?",
     "SELECT labresult FROM lab WHERE patientunitstayid = 1063405 AND labname = 'potassium' ORDER BY labresulttime DESC LIMIT 1",
     "asks_judgement"),
    ("How is the patient in unit stay 2859392 doing today?",
     "SELECT * FROM intakeoutput WHERE patientunitstayid = 2859392 ORDER BY intakeoutputtime DESC LIMIT 5", "asks_judgement"),
])
def test_what_the_records_cannot_say_is_refused(eicu_ctx, question, sql, kind):
    assert kind in checks_of(eicu_ctx, question, sql)
    assert verify(question, sql, db=eicu_ctx.path).status == "abstained"


@pytest.mark.parametrize(("question", "sql"), [
    ("Which patients received the drug the doctor ordered for 021-104948?",  # patients who received: not staff
     "SELECT DISTINCT drugname FROM medication JOIN patient ON medication.patientunitstayid = patient.patientunitstayid "
     "WHERE patient.uniquepid = '021-104948'"),
    ("How many patients who discontinued their heparin were later readmitted?",  # a patient's own doing, not staff's
     "SELECT COUNT(DISTINCT uniquepid) FROM medication JOIN patient ON medication.patientunitstayid = patient.patientunitstayid "
     "WHERE drugname LIKE '%heparin%'"),
    ("How many patients were given a chest x-ray?",
     "SELECT COUNT(DISTINCT patientunitstayid) FROM treatment WHERE treatmentname = 'chest x-ray'"),
    ("What was the total cost of patient 030-10040's stays?", "SELECT SUM(cost) FROM cost WHERE uniquepid = '030-10040'"),
])
def test_ordinary_questions_about_the_same_things_are_not_refused(eicu_ctx, question, sql):
    assert not checks_of(eicu_ctx, question, sql) & {"not_in_records", "asks_judgement"}


def test_the_same_thing_repeated_is_no_unresolved_reference():
    """"the same drug in more than one admission" says one thing, repeated (a rule reading "the same X" with nothing
    named before it as a reference was tried in session 21 and taken out: this use is common)."""
    for fine in ("How many times did patient 10007795 receive the same medication during hospital stay 20285402?",
                 "Was patient 10000032 prescribed the same drug in more than one admission?",
                 "What drug was given on the same day as the diagnosis?", "Which patients had the same diagnosis as patient 10000032?"):
        assert not question_cues(fine).unresolved, fine


def test_shorthand_keeps_labels_and_the_cues_they_rest_on():
    import random

    rng = random.Random(3)
    q = "What was the average heart rate of patient 10021487 in the intensive care unit?"
    variants = {shorthand(rng, q) for _ in range(40)}
    assert len(variants) > 5 and all("10021487" in v for v in variants)
    assert any("HR" in v or "hr" in v.split() for v in variants) and any("patient 10021487" not in v for v in variants)
    examples = [("How many patients had a very long stay?", "vague-word"), ("What was given after that?", "ambiguous-reference")] * 40
    short = shorthand_questions(examples, seed=0, share=1.0)
    assert {label for _, label in short} == {"vague-word", "ambiguous-reference"}
    assert all(("long" in s.lower()) == (label == "vague-word") for s, label in short)
    assert all(question_cues(s).vague for s, label in short if label == "vague-word")


def test_a_visit_named_by_its_place_names_no_field(ctx):
    """"after the last admission" says which visit: the discharge location is asked, not the admission's."""
    question = "Where was patient 10016742 discharged to after the last admission?"
    assert "wrong_column" in checks_of(ctx, question, "SELECT admission_location FROM admissions WHERE subject_id = 10016742 "
                                                      "ORDER BY admittime DESC LIMIT 1")
    assert "wrong_column" not in checks_of(ctx, question, "SELECT discharge_location FROM admissions WHERE subject_id = 10016742 "
                                                          "ORDER BY admittime DESC LIMIT 1")
    assert "wrong_column" not in checks_of(ctx, "Where was patient 10016742 admitted from on the last admission?",
                                           "SELECT admission_location FROM admissions WHERE subject_id = 10016742 "
                                           "ORDER BY admittime DESC LIMIT 1")


def test_a_list_cut_to_one_row_is_repaired_to_every_name_once(eicu_ctx):
    # the diagnoses repeat once per record: a list of names gives each once
    found_and_repaired(eicu_ctx, "List the diagnoses of unit stay 3067309.",
                       "SELECT diagnosisname FROM diagnosis WHERE patientunitstayid = 3067309 ORDER BY diagnosistime DESC LIMIT 1",
                       "SELECT DISTINCT diagnosisname FROM diagnosis WHERE patientunitstayid = 3067309", "limit_cuts_answer")
    found_and_repaired(eicu_ctx, "What are all the allergies of patient 003-10799?",
                       "SELECT allergy.allergyname FROM allergy JOIN patient ON allergy.patientunitstayid = patient.patientunitstayid "
                       "WHERE patient.uniquepid = '003-10799' LIMIT 1",
                       "SELECT DISTINCT allergy.allergyname FROM allergy JOIN patient ON allergy.patientunitstayid = "
                       "patient.patientunitstayid WHERE patient.uniquepid = '003-10799'", "limit_cuts_answer")


def test_a_range_that_says_its_year_once(ctx):
    """"between Dec 1 and Dec 7 2100": the year is said once for both dates, and Dec 7 is in the range."""
    found_and_repaired(ctx, "Number of admissions between Dec 1 and Dec 7 2100 (inclusive)",
                       "SELECT COUNT(*) FROM admissions WHERE admittime >= '2100-12-01' AND admittime < '2100-12-07'",
                       "SELECT COUNT(*) FROM admissions WHERE admittime >= '2100-12-01' AND admittime < '2100-12-08'",
                       "wrong_time_window")


def test_a_range_of_months_that_says_its_year_once(eicu_ctx):
    """"from July to December 2100" is the six months, not December alone (it was read as December, and a right query
    was "repaired" to December)."""
    right = "SELECT COUNT(*) FROM patient WHERE unitadmittime >= '2100-07-01' AND unitadmittime < '2101-01-01'"
    for question in ("How many unit stays began from July through December 2100?", "Unit stays started between Jul and Dec 2100",
                     "How many unit stays began from July to December 2100?"):
        assert "wrong_time_window" not in checks_of(eicu_ctx, question, right), question
    found_and_repaired(eicu_ctx, "How many unit stays began between July and December 2100?",
                       "SELECT COUNT(*) FROM patient WHERE unitadmittime >= '2100-12-01' AND unitadmittime < '2101-01-01'", right,
                       "wrong_time_window")
    # a month the period does not place (its year nowhere) leaves the window unread rather than misread
    assert "wrong_time_window" not in checks_of(eicu_ctx, "Unit stays from July and those in December 2100",
                                                "SELECT COUNT(*) FROM patient WHERE unitadmittime >= '2100-12-01'")


def test_the_current_admission_named_by_its_id_is_current(ctx):
    """"this admission" answered by the admission's id: the records say whether that admission is still open."""
    question = "Avg sodium for 10004733 this admission"
    assert "missing_current_filter" not in checks_of(ctx, question, "SELECT AVG(valuenum) FROM labevents WHERE hadm_id = 27411876 "
                                                                    "AND itemid = 50983")
    assert "missing_current_filter" in checks_of(ctx, question, "SELECT AVG(valuenum) FROM labevents WHERE hadm_id = 22595853 "
                                                                "AND itemid = 50983")  # an admission that has ended


def test_a_row_number_joined_to_an_entitys_id(ctx, eicu_ctx):
    """``medication.medicationid = patient.patientunitstayid``: a row's own number is no stay's id (an empty, or
    unrelated, answer); repaired to the stay id the schema declares between the two tables."""
    found_and_repaired(eicu_ctx, "What medications did patient 009-10343 receive?",
                       "SELECT DISTINCT medication.drugname FROM medication JOIN patient ON medication.medicationid = "
                       "patient.patientunitstayid WHERE patient.uniquepid = '009-10343'",
                       "SELECT DISTINCT medication.drugname FROM medication JOIN patient ON medication.patientunitstayid = "
                       "patient.patientunitstayid WHERE patient.uniquepid = '009-10343'", "row_key_join")
    drugs = "SELECT DISTINCT p.drug FROM prescriptions p JOIN admissions a ON p.{} = a.hadm_id WHERE a.subject_id = 10000032"
    found_and_repaired(ctx, "What drugs did patient 10000032 get?", drugs.format("row_id"), drugs.format("hadm_id"), "row_key_join")
    # a key that refers to the row (a cost's event is a prescription's row) is a link, not a mistake
    assert "row_key_join" not in checks_of(ctx, "What did patient 10000032's prescriptions cost?",
                                           "SELECT SUM(c.cost) FROM cost c JOIN prescriptions p ON c.event_id = p.row_id "
                                           "WHERE c.event_type = 'prescriptions' AND p.subject_id = 10000032")


def test_an_exclusion_inside_a_name_the_query_looks_for_is_a_name(ctx):
    """"non-icu intake", "other than motorcycle" inside a title the query compares with are parts of a name."""
    sql = ("SELECT COUNT(*) FROM inputevents WHERE itemid IN (SELECT itemid FROM d_items WHERE label = 'pre-admission/non-icu intake')")
    assert "missing_exclusion" not in checks_of(ctx, "How many pre-admission/non-icu intake inputs were recorded?", sql)
