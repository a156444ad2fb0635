"""Known forms matched through paraphrase: time filters, slots, meaning words, and the verifier's use of them."""

from __future__ import annotations

from pathlib import Path

import pytest

import ehrguard
from ehrguard.db.engine import open_database
from ehrguard.verify.methods import DatabaseContext
from ehrguard.verify.offline.forms import FormIndex, load_forms, make_form
from ehrguard.verify.offline.templates import reset_banks
from ehrguard.verify.offline.time_filters import find_time_filter

LAST_HEPARIN = (
    "When was the last time patient 10004235 was prescribed heparin this month?",
    ("SELECT prescriptions.starttime FROM prescriptions WHERE prescriptions.subject_id = 10004235 AND prescriptions.drug = 'heparin' "
    "AND datetime(prescriptions.starttime,'start of month') = datetime(current_time,'start of month','-0 month') "
    "ORDER BY prescriptions.starttime DESC LIMIT 1"),
)


@pytest.fixture(scope="module")
def context(mimic_iv_db: Path) -> DatabaseContext:
    return DatabaseContext(open_database(mimic_iv_db), "mimic_iv")


@pytest.mark.parametrize("phrase, column_sql", [
    ("since 3 years ago", "datetime(t.c) >= datetime('2100-12-31 23:59:00','-3 year')"),
    ("this year", "datetime(t.c,'start of year') = datetime('2100-12-31 23:59:00','start of year','-0 year')"),
    ("last month", "datetime(t.c,'start of month') = datetime('2100-12-31 23:59:00','start of month','-1 month')"),
    ("yesterday", "datetime(t.c,'start of day') = datetime('2100-12-31 23:59:00','start of day','-1 day')"),
    ("in 2100", "strftime('%Y',t.c) = '2100'"),
    ("since 3/2100", "strftime('%Y-%m',t.c) >= '2100-03'"),
    ("on 07/02/2100", "strftime('%Y-%m-%d',t.c) = '2100-07-02'"),
    ("on 06/13/this year", ("datetime(t.c,'start of year') = datetime('2100-12-31 23:59:00','start of year','-0 year') "
                           "AND strftime('%m-%d',t.c) = '06-13'")),
    ("in 11/last year", ("datetime(t.c,'start of year') = datetime('2100-12-31 23:59:00','start of year','-1 year') "
                        "AND strftime('%m',t.c) = '11'")),
    ("in august of last year", ("datetime(t.c,'start of year') = datetime('2100-12-31 23:59:00','start of year','-1 year') "
                               "AND strftime('%m',t.c) = '08'")),
    ("until 2 years ago", "datetime(t.c) <= datetime('2100-12-31 23:59:00','-2 year')"),
    ("until 2100", "strftime('%Y',t.c) <= '2100'"),
])
def test_a_stated_time_filter_renders_for_any_column(phrase, column_sql):
    found = find_time_filter(f"how many drugs were given {phrase}")
    assert found is not None
    assert found[0].render("t.c") == column_sql


def test_the_first_ehrsql_release_writes_the_same_filters_its_own_way():
    # '%y' for the year; "until" as <=; recognised so that its questions serve every filter too.
    form = make_form("What was the last ward of patient 010-12345 until 2104?",
                     "select patient.wardid from patient where patient.uniquepid = '010-12345' "
                     "and strftime('%y',patient.unitadmittime) <= '2104' order by patient.unitadmittime desc limit 1")
    assert form is not None and [s.kind for s in form.slots] == ["pid", "time"]
    assert "{ta}" in form.sql and "2104" not in form.sql


def test_two_time_filters_or_none_give_no_filter():
    assert find_time_filter("how many drugs were given in 2100 and since 1 year ago") is None
    assert find_time_filter("how many drugs were given on the last hospital visit") is None


def test_a_form_has_typed_slots_and_its_time_filter_as_a_slot():
    form = make_form(*LAST_HEPARIN)
    assert form is not None
    assert form.masked == "when was the last time patient <pid> was prescribed <prescriptions.drug> <time>"
    assert form.readable == "when was the last time patient [patient] was prescribed [prescriptions.drug] [period]"
    assert [(s.kind, s.column) for s in form.slots] == [("pid", ""), ("name", "prescriptions.drug"), ("time", "prescriptions.starttime")]
    assert {"last", "drug", "<time>", "<when>"} <= form.meaning


def test_a_decade_refills_both_its_ends(context):
    # "in their 20s" -> BETWEEN 20 AND 29: the 29 follows from the slot, so it is a field derived from it.
    form = make_form("How many patients in their 20s were admitted?",
                     "SELECT COUNT(*) FROM admissions WHERE admissions.age BETWEEN 20 AND 29")
    assert form is not None and "BETWEEN {n0} AND {n0_end}" in form.sql
    readings = FormIndex([("How many patients in their 20s were admitted?",
                           "SELECT COUNT(*) FROM admissions WHERE admissions.age BETWEEN 20 AND 29")]).read(
        "How many patients in their 40s were admitted?", context)
    assert readings and readings[0].sql.endswith("BETWEEN 40 AND 49")


def test_forms_that_cannot_be_refilled_safely_are_left_out():
    # A number the SQL derives from a slot in a way no rule knows (20 -> 35) would not follow a new value.
    assert make_form("How many patients in their 20s were admitted?",
                     "SELECT COUNT(*) FROM admissions WHERE admissions.age BETWEEN 20 AND 35") is None
    # The question asks for a name, the SQL returns a time.
    assert make_form("What was the last drug patient 10004235 was prescribed?",
                     "SELECT prescriptions.starttime FROM prescriptions WHERE prescriptions.subject_id = 10004235 "
                     "ORDER BY prescriptions.starttime DESC LIMIT 1") is None
    # A yes/no query for a question not asked as one.
    assert make_form("Patient 10004235 was admitted in 2100",
                     "SELECT COUNT(*)>0 FROM admissions WHERE admissions.subject_id = 10004235"
                     " AND strftime('%Y',admissions.admittime) = '2100'") is None


def test_a_paraphrase_with_another_time_filter_and_values_is_read(context):
    index = FormIndex([LAST_HEPARIN])
    readings = index.read("Since 3 years ago, when was patient 10002495 last prescribed insulin?", context)
    assert [r.sql for r in readings] == [
        ("SELECT prescriptions.starttime FROM prescriptions WHERE prescriptions.subject_id = 10002495 AND prescriptions.drug = 'insulin' "
        "AND datetime(prescriptions.starttime) >= datetime('2100-12-31 23:59:00','-3 year') ORDER BY prescriptions.starttime DESC LIMIT 1")]
    readings = index.read("When was the last time patient 10002495 was prescribed insulin in 05/2100?", context)
    assert readings and "strftime('%Y-%m',prescriptions.starttime) = '2100-05'" in readings[0].sql


def test_a_question_that_differs_in_meaning_is_not_read(context):
    index = FormIndex([LAST_HEPARIN])
    assert index.read("When was the first time patient 10002495 was prescribed insulin since 3 years ago?", context) == []
    assert index.read("What was the last drug patient 10002495 was prescribed this month?", context) == []  # asks no time
    assert index.read("When was the last time patient 10002495 was prescribed insulin?", context) == []  # states no period
    # A second drug the form has no place for: the form would silently drop it.
    assert index.read("When was the last time patient 10002495 was prescribed insulin and heparin this month?", context) == []
    assert index.read("When was the last time a patient was prescribed insulin this month?", context) == []  # no patient


def test_the_verifier_corrects_a_candidate_by_the_form_a_question_paraphrases(shared_data, mimic_iv_db, monkeypatch):
    monkeypatch.setenv("EHRGUARD_DATA_DIR", str(shared_data))
    monkeypatch.setenv("EHRGUARD_TEMPLATE_BANK", "on")
    reset_banks()
    index = load_forms("mimic_iv")
    assert index is not None and len(index) > 3000
    # Not an EHRSQL question word for word: a paraphrase with our own time filter.
    question = "How many times was patient 10004235 prescribed heparin since 2 years ago?"
    right = ("SELECT COUNT(*) FROM prescriptions WHERE prescriptions.hadm_id IN ( SELECT admissions.hadm_id FROM admissions "
             "WHERE admissions.subject_id = 10004235 ) AND prescriptions.drug = 'heparin' "
             "AND datetime(prescriptions.starttime) >= datetime('2100-12-31 23:59:00','-2 year')")
    wrong = "SELECT COUNT(*) FROM prescriptions WHERE subject_id = 10004235 AND drug = 'heparin' AND starttime >= '2100-12-01'"
    db = ehrguard.open_database(mimic_iv_db)
    assert db.execute(right).rows != db.execute(wrong).rows  # the wrong window counts differently
    verdict = ehrguard.verify(question, wrong, db=mimic_iv_db, db_id="mimic_iv")
    assert verdict.action == "correct" and verdict.details["repair"]["fixed"] == "form", verdict
    assert "[prescriptions.drug]" in verdict.details["repair"]["known_question"]  # which known question, traceably
    assert db.execute(verdict.sql).rows == db.execute(right).rows
    assert ehrguard.verify(question, right, db=mimic_iv_db, db_id="mimic_iv").action == "preserve"
    # without the form bank no known question corrects it; the period check repairs the window itself
    without = ehrguard.verify(question, wrong, db=mimic_iv_db, db_id="mimic_iv", forms="off")
    assert without.details["repair"]["fixed"] == "wrong_time_window"
    assert db.execute(without.sql).rows == db.execute(right).rows
    reset_banks()


def test_words_that_vary_between_paraphrases_of_one_sql_do_not_block_a_reading(context):
    # Two paraphrases of one query, one saying "currently" and one "admitted": together they show that neither
    # word changes the query, so a third wording with both is read; a form's own wording is marked exact.
    sql = "SELECT COUNT( DISTINCT admissions.subject_id ) FROM admissions WHERE admissions.dischtime IS NULL AND admissions.age >= 30"
    index = FormIndex([("How many patients aged 30 or above are there currently?", sql),
                       ("How many patients aged 30 or above are admitted?", sql)])
    readings = index.read("How many patients aged 60 or above are currently admitted?", context)
    assert readings and readings[0].sql.endswith(">= 60") and not readings[0].exact
    exact = index.read("How many patients aged 60 or above are admitted?", context)
    assert exact and exact[0].exact
    # A word no paraphrase of the query uses still changes the meaning: no reading.
    assert index.read("How many female patients aged 60 or above are admitted?", context) == []


def test_one_of_a_list_of_values_is_a_slot_each(context):
    # "insulin, heparin, or ondansetron": column IN ( ... ), each value a slot of that column, refilled in order.
    known = ("Has patient 10004235 been prescribed insulin, heparin, or ondansetron?",
             "SELECT COUNT(*)>0 FROM prescriptions WHERE prescriptions.subject_id = 10004235 "
             "AND prescriptions.drug IN ( 'insulin', 'heparin', 'ondansetron' )")
    form = make_form(*known)
    assert form is not None and [s.column for s in form.slots if s.kind == "name"] == ["prescriptions.drug"] * 3
    readings = FormIndex([known]).read("Has patient 10002495 been prescribed furosemide, heparin, or insulin?", context)
    assert readings and "IN ( 'furosemide', 'heparin', 'insulin' )" in readings[0].sql and "10002495" in readings[0].sql


def test_numbers_fill_the_slots_their_neighbouring_words_name(context):
    # The form says "top five ... aged 60"; the question "aged 40 ... top three": 40 is the age, 3 the rank.
    known = ("What are the top five diagnoses of patients aged 60 or above?",
             "SELECT d_icd_diagnoses.long_title FROM d_icd_diagnoses WHERE d_icd_diagnoses.icd_code IN ( SELECT T1.icd_code FROM "
             "( SELECT diagnoses_icd.icd_code, DENSE_RANK() OVER ( ORDER BY COUNT(*) DESC ) AS C1 FROM diagnoses_icd WHERE "
             "diagnoses_icd.hadm_id IN ( SELECT admissions.hadm_id FROM admissions WHERE admissions.age >= 60 ) "
             "GROUP BY diagnoses_icd.icd_code ) AS T1 WHERE T1.C1 <= 5 )")
    readings = FormIndex([known]).read("Among patients aged 40 or above, what are the top three diagnoses?", context)
    assert readings and "admissions.age >= 40" in readings[0].sql and "T1.C1 <= 3" in readings[0].sql


def test_a_short_value_is_a_slot_only_as_a_word_of_its_own(context):
    # 'pr' (a route) is in "prescribed" too; as a word it is once in the question, so it is a slot, refilled with 'po'.
    known = ("What was the last time patient 10004235 was prescribed a drug via the pr route?",
             "SELECT prescriptions.starttime FROM prescriptions WHERE prescriptions.subject_id = 10004235 "
             "AND prescriptions.route = 'pr' ORDER BY prescriptions.starttime DESC LIMIT 1")
    form = make_form(*known)
    assert form is not None and ("name", "prescriptions.route") in [(s.kind, s.column) for s in form.slots]
    assert "<when>" in form.meaning  # "what was the last time ..." asks for a moment
    readings = FormIndex([known]).read("What was the last time patient 10002495 was prescribed a drug via the po route?", context)
    assert readings and "prescriptions.route = 'po'" in readings[0].sql


def test_what_kind_of_answer_is_asked_is_never_pooled_from_another_paraphrase(context):
    # Two paraphrases of one SQL: one yes/no after a lead-in ("tell me, was ..."), one not. A question of the one kind
    # is not read as the form of the other, however much else they share.
    sql = ("SELECT COUNT(*)>0 FROM prescriptions WHERE prescriptions.subject_id = 10004235 AND prescriptions.drug = 'insulin'")
    yes_no = make_form("Tell me, was insulin prescribed to patient 10004235?", sql)
    assert yes_no is not None and "<yes/no>" in yes_no.meaning
    index = FormIndex([("Tell me, was insulin prescribed to patient 10004235?", sql)])
    assert index.read("Tell me, was heparin prescribed to patient 10002495?", context)
    assert index.read("Tell me the amount of heparin prescribed to patient 10002495.", context) == []


def _vital_pairs(label: str, phrase: str, patients: list[str]) -> list[tuple[str, str]]:
    return [(f"What was the maximum {phrase} of patient {p} today?",
             "SELECT MAX(chartevents.valuenum) FROM chartevents WHERE chartevents.subject_id = " + p + " AND chartevents.itemid IN "
             f"( SELECT d_items.itemid FROM d_items WHERE d_items.label = '{label}' ) AND datetime(chartevents.charttime,'start of day') "
             "= datetime(current_time,'start of day','-0 day')") for p in patients]


def test_a_value_the_questions_call_by_another_name_is_learned_as_an_alias(context):
    # Our own wording: three questions call the chart item 'arterial blood pressure systolic' "upper pressure"; one names
    # 'heart rate' as the data does. The alias is learned from the pairs, so the form of every one of them has the
    # item as a slot, and a question about "upper pressure" fills it with the item's own name.
    pairs = _vital_pairs("arterial blood pressure systolic", "upper pressure", ["10000032", "10001217", "10001725"])
    pairs += _vital_pairs("heart rate", "heart rate", ["10002495"])
    index = FormIndex(pairs)
    assert index.aliases == {"upper pressure": "arterial blood pressure systolic"}
    assert len({f.masked for f in index.forms}) == 1  # one form: the item is a slot in all of them
    readings = index.read("What was the maximum upper pressure of patient 10005817 today?", context)
    assert readings and "d_items.label = 'arterial blood pressure systolic'" in readings[0].sql and "10005817" in readings[0].sql
    assert index.read("What was the maximum heart rate of patient 10005817 today?", context)[0].sql.count("'heart rate'") == 1


def test_an_alias_inside_a_longer_value_the_question_states_is_left_alone(context):
    # "weight" names 'daily weight' for these questions, but "feeding weight" is an item of its own: a question about
    # it keeps its own value, not 'feeding daily weight'.
    pairs = _vital_pairs("daily weight", "weight", ["10000032", "10001217", "10001725"])
    pairs += _vital_pairs("heart rate", "heart rate", ["10002495"])  # the item label is a slot of these forms
    index = FormIndex(pairs)
    assert index.aliases == {"weight": "daily weight"}
    own = index.read("What was the maximum feeding weight of patient 10005817 today?", context)
    assert own and "d_items.label = 'feeding weight'" in own[0].sql
    plain = index.read("What was the maximum weight of patient 10005817 today?", context)
    assert plain and "d_items.label = 'daily weight'" in plain[0].sql


def test_a_phrase_used_for_more_than_one_value_is_no_alias():
    # "pressure" is used for two items: it names neither, and only phrases used at least three times count.
    pairs = _vital_pairs("arterial blood pressure systolic", "pressure", ["10000032", "10001217", "10001725"])
    pairs += _vital_pairs("arterial blood pressure mean", "pressure", ["10002495", "10004235", "10005817"])
    pairs += _vital_pairs("arterial blood pressure diastolic", "low pressure", ["10000032", "10001217"])
    assert FormIndex(pairs).aliases == {}


def test_a_value_with_a_small_number_spelt_out_is_found_from_its_digits(context):
    # The data writes 'closed fracture of two ribs'; questions write "2 ribs" as often as "two ribs".
    known = ("How many patients were diagnosed with closed fracture of two ribs?",
             "SELECT COUNT( DISTINCT admissions.subject_id ) FROM admissions WHERE admissions.hadm_id IN ( SELECT diagnoses_icd.hadm_id "
             "FROM diagnoses_icd WHERE diagnoses_icd.icd_code = ( SELECT d_icd_diagnoses.icd_code FROM d_icd_diagnoses WHERE "
             "d_icd_diagnoses.long_title = 'closed fracture of two ribs' ) )")
    form = make_form(*known)
    assert form is not None and [s.column for s in form.slots] == ["d_icd_diagnoses.long_title"]
    readings = FormIndex([known, ("How many patients were diagnosed with hypertension?", known[1].replace(
        "closed fracture of two ribs", "hypertension"))]).read("How many patients were diagnosed with closed fracture of 2 ribs?", context)
    assert readings and "long_title = 'closed fracture of two ribs'" in readings[0].sql
    assert context.db.execute(readings[0].sql).rows == context.db.execute(known[1]).rows


_LAB = ("SELECT labevents.valuenum FROM labevents WHERE labevents.subject_id = {p} AND labevents.itemid IN ( SELECT d_labitems.itemid "
        "FROM d_labitems WHERE d_labitems.label = '{lab}' ) ORDER BY labevents.charttime {order} LIMIT 1")
_LAB_TIME = ("SELECT labevents.charttime FROM labevents WHERE labevents.subject_id = {p} AND labevents.itemid IN ( SELECT "
             "d_labitems.itemid FROM d_labitems WHERE d_labitems.label = '{lab}' ) ORDER BY labevents.charttime {order} LIMIT 1")
_CHART_TIME = ("SELECT chartevents.charttime FROM chartevents WHERE chartevents.subject_id = {p} AND chartevents.itemid IN ( SELECT "
               "d_items.itemid FROM d_items WHERE d_items.label = '{lab}' ) ORDER BY chartevents.charttime {order} LIMIT 1")
_CULTURE_TIME = ("SELECT microbiologyevents.charttime FROM microbiologyevents WHERE microbiologyevents.subject_id = {p} AND "
                 "microbiologyevents.spec_type_desc = '{lab}' ORDER BY microbiologyevents.charttime {order} LIMIT 1")
_TIMES = (
    (_LAB_TIME, "glucose", "When was the first time patient {p} had a {lab} test?", "When was the last time patient {p} had a {lab} test?"),
    (_CHART_TIME, "heart rate", "When was the {lab} of patient {p} first measured?", "When was the {lab} of patient {p} last measured?"),
    (_CULTURE_TIME, "blood culture", "When did patient {p} first have a {lab} taken?", "When did patient {p} last have a {lab} taken?"),
)


def _first_and_last(times: tuple[tuple[str, str, str, str], ...]) -> list[tuple[str, str]]:
    pairs = []
    for template, value, first, last in times:
        pairs.append((first.format(p="10000032", lab=value), template.format(p="10000032", lab=value, order="ASC")))
        pairs.append((last.format(p="10000032", lab=value), template.format(p="10000032", lab=value, order="DESC")))
    pairs.append(("What was the first glucose value of patient 10000032?", _LAB.format(p="10000032", lab="glucose", order="ASC")))
    return pairs


def test_a_swap_of_first_and_last_learned_from_known_pairs_reads_a_query_no_question_asks(context):
    # Three queries are known in both their first and their last versions (charttime ASC / DESC); a fourth only with
    # "first". The pairs show what "last" changes, so "the last glucose value" is read as the fourth query with DESC,
    # marked as derived, and it answers like that query written by hand.
    pairs = _first_and_last(_TIMES)
    index = FormIndex(pairs)
    assert any(s.before == "first" and s.after == "last" and (s.old, s.new) == ("ASC", "DESC") for s in index.swaps)
    readings = index.read("What was the last creatinine value of patient 10001217?", context)
    assert readings and readings[0].derived
    right = _LAB.format(p="10001217", lab="creatinine", order="DESC")
    assert readings[0].sql == right
    assert context.db.execute(readings[0].sql).rows == context.db.execute(right).rows != \
        context.db.execute(_LAB.format(p="10001217", lab="creatinine", order="ASC")).rows
    # The known question itself is read as known, not derived.
    assert not index.read("What was the first creatinine value of patient 10001217?", context)[0].derived


def test_a_swap_two_pairs_show_is_not_learned(context):
    index = FormIndex(_first_and_last(_TIMES[:2]))
    assert index.swaps == ()
    assert index.read("What was the last creatinine value of patient 10001217?", context) == []


def test_the_verifier_lets_a_derived_reading_vouch_but_never_replace(mimic_iv_db, monkeypatch):
    # The reading of "the last creatinine value" comes from a swap (no known question asks it): a candidate that answers
    # as it does is vouched for; one that answers otherwise is not replaced by it.
    from ehrguard.verify.offline import verifier as offline_verifier

    index = FormIndex(_first_and_last(_TIMES))
    monkeypatch.setattr(offline_verifier, "load_forms", lambda db_id: index)
    question = "What was the last creatinine value of patient 10001217?"
    last = _LAB.format(p="10001217", lab="creatinine", order="DESC")
    second = last.replace("LIMIT 1", "LIMIT 1 OFFSET 1")  # the one before the last: answers otherwise
    agrees = ehrguard.verify(question, last, db=mimic_iv_db, db_id="mimic_iv", templates="off")
    assert agrees.action == "preserve" and agrees.details["known_form"] == "form-agrees"
    differs = ehrguard.verify(question, second, db=mimic_iv_db, db_id="mimic_iv", templates="off")
    assert differs.action != "correct" and differs.details["known_form"] is None


def test_no_query_is_derived_for_meaning_words_a_known_query_already_reads(context):
    # A known query reads "the last ... value" already (written its own way): the swap's twin of the "first" query would
    # compete with it for the same questions, so it is not derived, and the known one is what is read.
    own_way = _LAB.format(p="10000032", lab="glucose", order="DESC").replace("SELECT labevents", "SELECT DISTINCT labevents")
    index = FormIndex(_first_and_last(_TIMES) + [("What was the last glucose value of patient 10000032?", own_way)])
    assert index.swaps
    readings = index.read("What was the last creatinine value of patient 10001217?", context)
    assert readings and not any(r.derived for r in readings) and readings[0].sql.startswith("SELECT DISTINCT")


@pytest.mark.parametrize("candidate, known, otherwise", [
    # the same value from another column: ordered (prescriptions) vs given (the ICU inputs)
    ("SELECT COUNT(DISTINCT subject_id) FROM prescriptions WHERE drug = 'potassium chloride'",
     "SELECT COUNT(*) FROM inputevents WHERE itemid IN (SELECT itemid FROM d_items WHERE d_items.label = 'potassium chloride')", True),
    # the value and its variants through a pattern
    ("SELECT COUNT(*) FROM diagnosis WHERE diagnosisname LIKE 'septic shock%'",
     "SELECT COUNT(*) FROM diagnosis WHERE diagnosis.diagnosisname = 'septic shock'", True),
    # the same column, another value, or the value misspelt: a mistake a known question may repair
    ("SELECT COUNT(*) FROM diagnosis WHERE diagnosisname = 'sepsis'",
     "SELECT COUNT(*) FROM diagnosis WHERE diagnosis.diagnosisname = 'septic shock'", False),
    ("SELECT COUNT(*) FROM diagnosis WHERE diagnosisname LIKE 'septic shok%'",
     "SELECT COUNT(*) FROM diagnosis WHERE diagnosis.diagnosisname = 'septic shock'", False),
    ("SELECT COUNT(*) FROM diagnosis WHERE diagnosisname = 'septic shock'",
     "SELECT COUNT(*) FROM diagnosis WHERE diagnosis.diagnosisname = 'septic shock' AND diagnosis.diagnosistime > '2100-01-01'", False),
])
def test_a_value_read_another_way_is_told_from_a_mistake(candidate, known, otherwise):
    import sqlglot

    from ehrguard.verify.offline.verifier import reads_value_otherwise

    assert reads_value_otherwise(sqlglot.parse_one(candidate, read="sqlite"), sqlglot.parse_one(known, read="sqlite")) is otherwise


def _known_only(monkeypatch, pairs):
    from ehrguard.verify.offline import verifier as offline_verifier

    index = FormIndex(pairs)
    monkeypatch.setattr(offline_verifier, "load_forms", lambda db_id: index)


def test_a_list_answers_a_yes_no_question_as_the_known_count_does(mimic_iv_db, monkeypatch):
    # "Has patient ... undergone any procedure?" answered by the list of procedures: no rows is "no", as the known
    # COUNT(*)>0 is 0; some rows is "yes". Neither is replaced by the known yes/no query, nor vouched for by it (an
    # empty list and a 0 agree too cheaply for that).
    _known_only(monkeypatch, [("Has patient 10000032 undergone any procedure?",
                               "SELECT COUNT(*)>0 FROM procedures_icd WHERE procedures_icd.subject_id = 10000032")])
    for patient in ("10002428", "10001217"):  # no procedure coded; three
        question = f"Has patient {patient} undergone any procedure?"
        listing = f"SELECT icd_code FROM procedures_icd WHERE subject_id = {patient}"
        verdict = ehrguard.verify(question, listing, db=mimic_iv_db, db_id="mimic_iv", templates="off")
        assert verdict.action == "preserve" and verdict.details["known_form"] is None, (patient, verdict)


def test_a_known_question_that_reads_the_value_from_another_table_does_not_replace_the_candidate(mimic_iv_db, monkeypatch):
    # The known question counts patients given potassium chloride in the ICU (inputevents); the candidate counts those it
    # was ordered for, matching its variants. They answer differently (38 and 23 on the demo), by reading the question
    # otherwise: not a correction. The same candidate with a misspelt value would be one.
    known = ("How many patients were given potassium chloride?",
             "SELECT COUNT( DISTINCT admissions.subject_id ) FROM admissions WHERE admissions.hadm_id IN ( SELECT icustays.hadm_id "
             "FROM icustays WHERE icustays.stay_id IN ( SELECT inputevents.stay_id FROM inputevents WHERE inputevents.itemid IN "
             "( SELECT d_items.itemid FROM d_items WHERE d_items.label = 'potassium chloride' ) ) )")
    _known_only(monkeypatch, [known, (known[0].replace("potassium chloride", "heparin sodium"),
                                      known[1].replace("potassium chloride", "heparin sodium"))])
    ordered = "SELECT COUNT(DISTINCT subject_id) FROM prescriptions WHERE drug LIKE 'potassium chloride%'"
    db = ehrguard.open_database(mimic_iv_db)
    assert db.execute(ordered).rows != db.execute(known[1]).rows
    verdict = ehrguard.verify(known[0], ordered, db=mimic_iv_db, db_id="mimic_iv", templates="off")
    assert verdict.action == "preserve" and verdict.details["known_form"] is None, verdict
    wrong_count = "SELECT COUNT(*) FROM inputevents WHERE itemid IN (SELECT itemid FROM d_items WHERE label = 'potassium chloride')"
    corrected = ehrguard.verify(known[0], wrong_count, db=mimic_iv_db, db_id="mimic_iv", templates="off")
    assert corrected.action == "correct" and db.execute(corrected.sql).rows == db.execute(known[1]).rows, corrected


def test_the_offline_reader_says_when_it_read_a_derived_query(context):
    # what `ehrguard ask`, the API and the web page show: "a variant of the known question", not "the known question"
    from ehrguard.generation.offline import OfflineWriter

    writer = OfflineWriter(index=FormIndex(_first_and_last(_TIMES)))
    derived = writer.write("What was the last creatinine value of patient 10001217?", context)
    known = writer.write("What was the first creatinine value of patient 10001217?", context)
    assert derived.derived and derived.to_dict()["derived"] is True
    assert not known.derived and known.to_dict()["derived"] is False
