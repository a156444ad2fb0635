"""The offline verifier end to end: question types, repairs, the policy, the API and the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import ehrguard
from ehrguard.cli import cli
from ehrguard.errors import ConfigError
from ehrguard.runtime import runtime
from ehrguard.verify.offline.classifier import CATEGORY_OF, CLASSES
from ehrguard.verify.offline.embedding import load_embedder
from ehrguard.verify.offline.verifier import OPERATING_POINTS

CLEAN = "SELECT gender FROM patients WHERE subject_id = 10004235"

# Hand-written questions of every type (none taken from a benchmark).
QUESTIONS = {
    "answerable": ["What is the gender of patient 10004235?", "How many patients were admitted in 2100?",
                   "What was the last heart rate of patient 10004235 on the current icu visit?"],
    "vague-question": ["Labs?", "Potassium?", "Vitals and meds?"],
    "vague-word": ["Which patients had a significantly long stay in the icu?", "List the drugs given in unusually high doses since 2100."],
    "ambiguous-reference": ["What was their last glucose value?", "When was that drug first prescribed to them?"],
    "small-talk": ["Good morning! How was your weekend?", "Do you prefer coffee or tea on a night shift?"],
    "out-of-scope": ["Train a neural network to predict sepsis from vital signs.", "Cluster the patients by their lab trajectories."],
    "missing-column": ["What is the home address of patient 10004235?", "What was the blood type of patient 10004235?"],
    "infeasible-faq": ["What are the visiting hours of the cardiology ward?", "When are Dr. Smith's rounds tomorrow?"],
}


@pytest.fixture(scope="module", params=["on", "off"])
def embeddings(request, shared_data: Path, monkeypatch_module) -> str:
    if request.param == "on":
        monkeypatch_module.setenv("EHRGUARD_TOKENIZER", str(shared_data / "models" / "minilm-tokenizer.json"))
        runtime().forget("embedder", "question_classifier")
        assert load_embedder() is not None
    return request.param


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


def v(question, sql, db, **kw):
    return ehrguard.verify(question, sql, db=db, db_id="mimic_iv", **kw)


@pytest.mark.parametrize("expected", list(QUESTIONS))
def test_every_question_type_gets_its_category(expected, embeddings, mimic_iv_db):
    category = CATEGORY_OF[expected]
    for q in QUESTIONS[expected]:
        verdict = v(q, CLEAN, mimic_iv_db, embeddings=embeddings)
        got = "answerable" if verdict.action in ("preserve", "correct") else verdict.action
        assert got == category, (q, verdict.action, verdict.subtype, verdict.details["question"])
        if category != "answerable":
            assert verdict.subtype in CLASSES and CATEGORY_OF[verdict.subtype] == category
            assert verdict.message and verdict.sql is None and verdict.output == category


@pytest.mark.parametrize("question, phrase", [
    ("How many patients underwent this in 2100?", "underwent this"),
    ("What was the cost of the lab test associated with that?", "with that"),
    ("Which drugs were prescribed most often since then?", "since then"),
    ("When did patient 10004235 have an input for the first time since that day?", "that day"),
])
def test_a_question_pointing_back_at_nothing_is_ambiguous_whatever_the_model_says(question, phrase, mimic_iv_db):
    verdict = v(question, CLEAN, mimic_iv_db)
    assert (verdict.action, verdict.subtype) == ("ambiguous", "ambiguous-reference"), verdict.details["question"]
    assert f"'{phrase}'" in verdict.message and verdict.details["question"]["model"] == "rule: unresolved reference"


@pytest.mark.parametrize("question", [
    "How many patients were admitted this year?",  # a calendar anchor, not a reference
    "What drugs were prescribed to patient 10004235 at the same time as heparin?",
    "What is the name of the drug that was prescribed to patient 10004235 on the last hospital visit?",  # relative "that"
])
def test_anchored_time_and_relative_pronouns_are_not_unresolved_references(question):
    from ehrguard.verify.offline.features import question_cues

    assert question_cues(question).unresolved == ()


@pytest.mark.parametrize("question, points_outside", [
    # the antecedent is in the question: the same noun, a group it described, a criterion with its number
    ("How many patients got heparin, and how many of these patients bled within a week?", False),
    ("For adults older than 65 admitted with sepsis, what was the mortality of this cohort?", False),
    ("What share of patients with a lactate above 4 mmol/L stayed above this threshold for a day?", False),
    ("Consider all ICU admissions. Among these admissions, how many lasted over a week?", False),
    # nothing before it: the demonstrative points outside the question
    ("What is the dose of this drug?", True),
    ("How many patients in this cohort died?", True),  # the phrase's own noun describes no group
    ("How many patients are there in this cohort?", True),  # nor in the same clause
    ("What share of patients stayed above this threshold for a day?", True),  # no number stated
    ("What was the value of this test for patient 10000032?", True),
    # an earlier word that is no antecedent: other things, another number, a year, an age, a count
    ("Compared to other antibiotics, how often was this antibiotic prescribed in 2100?", True),
    ("Of all patients in the ICU, how long did this patient stay?", True),
    ("How many patients were admitted in 2100, and what was the last heart rate of this patient?", True),
    ("Between 2100 and 2105, how many patients had a glucose above this limit?", True),
    ("Among patients older than 65, how many had a creatinine above this cutoff?", True),
    ("How many patients had at least 2 admissions and a lactate above this threshold?", True),
])
def test_a_demonstrative_is_a_reference_only_when_the_question_gives_no_antecedent(question, points_outside):
    from ehrguard.verify.offline.features import question_cues

    assert bool(question_cues(question, assessing=True).references) is points_outside


def test_a_clean_candidate_is_preserved_with_no_findings(mimic_iv_db):
    verdict = v("What is the gender of patient 10004235?", CLEAN, mimic_iv_db)
    assert verdict.action == "preserve" and verdict.sql == CLEAN and verdict.findings == []
    assert 0.0 < verdict.confidence < 1.0  # the calibrated probability that the answer is right
    uncalibrated = ehrguard.verify("What is the gender of patient 10004235?", CLEAN, db=mimic_iv_db, db_id="mimic_iv", calibration="off")
    assert uncalibrated.status == "verified" and 0.5 < uncalibrated.confidence <= 1.0  # the answerable probability


def test_repairs_become_corrections_only_when_the_repaired_sql_is_clean(mimic_iv_db):
    verdict = v("What is the gender of patient 10004235?", "SELECT gendr FROM patient WHERE subject_id = 10004235", mimic_iv_db)
    assert verdict.action == "correct" and verdict.sql == CLEAN
    assert {"unknown_table", "unknown_column"} <= {f.check for f in verdict.findings}
    verdict = v("How many patients were admitted urgently?",
                "SELECT COUNT(subject_id) FROM admissions WHERE admission_type = 'urgent'", mimic_iv_db)
    assert verdict.action == "correct" and "COUNT(DISTINCT subject_id)" in verdict.sql
    # A fix that leaves another error in place is not a correction.
    verdict = v("How many patients were admitted urgently?",
                "SELECT COUNT(subject_id) FROM admissions WHERE admission_type = 'urgent' AND no_such_column = 1", mimic_iv_db)
    assert verdict.action != "correct" and "execution" in {f.check for f in verdict.findings}


def test_a_missing_candidate_becomes_unanswerable_with_a_reason(mimic_iv_db):
    verdict = v("What is the gender of patient 10004235?", "null", mimic_iv_db)
    assert verdict.action == "unanswerable" and "no query" in verdict.message


def test_operating_points_are_ordered_and_validated(mimic_iv_db):
    for outcome in ("rows", "empty", "failed"):  # safety-first abstains soonest, preserve-first last
        t = [OPERATING_POINTS[p].threshold(outcome) for p in ("safety-first", "balanced", "preserve-first")]
        assert t == sorted(t)
    with pytest.raises(ConfigError, match="operating point"):
        v("Labs?", CLEAN, mimic_iv_db, operating_point="reckless")
    with pytest.raises(ConfigError, match="drop --model"):
        v("Labs?", CLEAN, mimic_iv_db, model="openai/gpt-4o")


def test_cli_verify_prints_the_verdict_and_underlines_findings(mimic_iv_db):
    r = CliRunner().invoke(cli, ["verify", "--db", str(mimic_iv_db), "--db-id", "mimic_iv", "-q", "What is the gender of patient 10004235?",
                                 "-s", "SELECT gendr FROM patient WHERE subject_id = 10004235"])
    assert r.exit_code == 0, r.output
    assert "CORRECT" in r.output and CLEAN in r.output and "^^^^^" in r.output and "did you mean 'gender'" in r.output
    r = CliRunner().invoke(cli, ["verify", "--db", str(mimic_iv_db), "-q", "Labs?", "-s", "SELECT 1", "--json"])
    out = json.loads(r.stdout)
    assert out["action"] == "ambiguous" and out["output"] == "ambiguous" and out["subtype"] == "vague-question"


def test_warm_up_loads_each_database_once_and_reports_one_that_cannot_be_read(mimic_iv_db, tmp_path):
    from ehrguard.verify.api import warm_up

    broken = tmp_path / "broken.sqlite"
    broken.write_text("not a database")
    took = warm_up([mimic_iv_db, broken])
    assert isinstance(took[mimic_iv_db.stem], float)
    ready = [ctx.path.resolve() for ctx in runtime().open_contexts() if ctx.path]
    assert mimic_iv_db.resolve() in ready  # the context the first request will use is ready
    assert isinstance(took["broken"], str) and "Error" in took["broken"]
    # The value check ran once too: a literal the data lacks was looked up, fuzzily, in the profile's first value column.
    from ehrguard.verify import database_context

    column = database_context(mimic_iv_db).values._columns[("d_labitems", "label")]
    assert column is not None and column._grams is not None


@pytest.mark.parametrize("question, vague", [
    ("How long was the stay of patient 10004235?", ()),  # a duration asked for
    ("What was the most recent heart rate of patient 10004235?", ()),  # a superlative
    ("Which drug was the most frequently prescribed in 2100?", ()),
    ("How old was patient 10004235 at the first admission?", ()),
    ("How many patients got normal saline in 2100?", ()),  # a name
    ("Did patient 10004235 get enough fluids?", ("enough",)),  # evaluative: enough for what?
    ("Which patients had a lot of unusually high potassium values?", ("a lot", "unusually", "high")),
    ("Was the stay longer than usual?", ("than usual",)),
    # a measure phrase or a number gives the degree; typographic dashes read as hyphens
    ("For my 68-year-old male patient, what is his mean creatinine?", ()),
    ("For my 68\u2011year\u2011old male patient, what is his mean creatinine?", ()),
    ("How many patients aged 63\u201373 years old had a stay longer than 3 days?", ()),
    ("How many patients older than 65 got heparin?", ()),
    ("How many old patients got heparin?", ("old",)),
    ("Was the stay of patient 10004235 long?", ("long",)),
    # a threshold stated a few words on gives the degree; a duration after "over" is no threshold
    ("How many patients had low potassium below 3.5 in 2100?", ()),
    ("Did patient 10004235 have a high heart rate (> 100) today?", ()),
    ("How many patients had a high fever over 2 days?", ("high",)),
    ("How many patients had a high fever over 20 days?", ("high",)),  # the whole number, not its first digit
    ("How many patients had low potassium below 3.5.", ()),
    # ... and so does a definition the question gives: a definitional phrase with a number, or a parenthesis that
    # states a bound or a range; a number elsewhere, a year or an age is no definition
    ("Among patients with critical hypotension, defined as a mean arterial pressure below 65 mmHg, what is the mortality?", ()),
    ("For patients with high creatinine (defined as creatinine above 2 mg/dL), what is the mean stay?", ()),
    ("How many patients had abnormal potassium, i.e. potassium outside 3.5 to 5.0?", ()),
    ("Which patients had a critical lactate level, meaning a value of at least 4?", ()),
    ("How many patients had low hemoglobin, using a cutoff of 7 g/dL?", ()),
    ("How many patients had severe hypoxemia where the PaO2/FiO2 ratio was under 100?", ()),
    ("How many patients had low sodium (125-130)?", ()),
    ("How many patients with high lactate where age is over 60 years?", ("high",)),
    ("How many patients had a high heart rate (since 2100)?", ("high",)),
    ("What is the number of patients with a high heart rate, i.e. the tachycardic ones, in 2100?", ("high",)),
    ("How many patients had an elevated creatinine, and what is the threshold for that?", ("elevated",)),
    # found by a review: a relative clause, an age, a time, rows, ranks or an id bound nothing of the measure; only the
    # nearest word is defined
    ("How many patients had elevated troponin that is recorded within 48 hours of admission?", ("elevated",)),
    ("How many patients had high creatinine, i.e. patients older than 65?", ("high",)),
    ("How many patients had high creatinine where the age was over 65?", ("high",)),
    ("How many patients had high creatinine (age over 65)?", ("high",)),
    ("How many patients had high lactate (measured between 2 and 6 hours after admission)?", ("high",)),
    ("Show high lactate values with a limit of 10 rows", ("high",)),
    ("Show high lactate values, namely patient 10004235", ("high",)),
    ("Show high lactate values, i.e. the first 5 results", ("high",)),
    ("How many patients had recent high lactate, defined as above 4?", ("recent",)),
    # the name of a condition (the ICD dictionaries' titles) names, it does not grade; a grade of a measured quantity
    # stays a grade
    ("How many patients were diagnosed with severe sepsis?", ()),
    ("How many patients had low back pain or unstable angina?", ()),
    ("How many patients had an elevated white blood cell count?", ("elevated",)),
    # a laboratory's critical values are a term of art whatever noun follows; a critical potassium is a grade
    ("What was the critical lab rate among female patients admitted in 2150?", ()),
    ("How many critical laboratory results did patient 10004235 have?", ()),
    ("How many patients had a critical potassium in 2150?", ("critical",)),
])
def test_vague_expressions_are_the_grammars_classes_outside_fixed_phrases(question, vague):
    from ehrguard.verify.offline.features import question_cues

    assert question_cues(question).vague == vague
    assert question_cues(question, assessing=True).vague == vague  # the reading the verifier assesses with agrees


@pytest.mark.parametrize("question, vague", [
    # a bound by the laboratory's reference range defines the word as a number does
    ("How many patients had abnormal creatinine (above the upper reference limit)?", ()),
    ("How many patients had an abnormal ALT, above the ULN?", ()),
    ("Which patients had low sodium, defined as below the lower limit of normal?", ()),
    # an abbreviation or a ratio's name between the word and its bound; an hour counts time only after a number
    ("How many patients had a high heart rate (HR > 100 bpm) during their ICU stay?", ()),
    ("How many patients had severe hypoxemia (PaO2/FiO2 ratio below 100)?", ()),
    ("How many patients had high lactate (measured between 2 and 6 hours)?", ("high",)),
    ("How many patients had high lactate (over six hours)?", ("high",)),
    ("How many patients had high lactate (creatinine above the ULN)?", ("high",)),
    # after a comma, another measure's number ("high lactate, heart rate over 100"); the bound itself may follow one
    ("How many patients had high lactate, heart rate over 100?", ("high",)),
    ("How many patients had high lactate, above 4?", ()),
    ("How many elderly patients over 80 had sepsis?", ()),  # a word of age keeps its own nouns
    # a number after a preposition, a person or an age bounds them, not the measure
    ("How many patients had high lactate in patients over 60?", ("high",)),
    ("How many patients had high creatinine in those over 65?", ("high",)),
    ("How many patients had high lactate, age over 60?", ("high",)),
])
def test_the_assessed_reading_of_a_bound_reads_references_abbreviations_and_attachment(question, vague):
    """The reading a question is assessed with is ahead of the one the shipped question models learnt from."""
    from ehrguard.verify.offline.features import question_cues

    assert question_cues(question, assessing=True).vague == vague


def test_the_question_model_reads_clinical_names_with_a_degree_word_as_names(mimic_iv_db):
    """"critical lab", "critically ill", "high-flow", "severe sepsis": the models learnt "critical", "high" and "severe"
    as vague words, so these names reach them masked, as the names the query looks for do."""
    from ehrguard.verify.offline.features import mask_terms_of_art

    assert (mask_terms_of_art("Critically ill patients on HIGH\u2011FLOW oxygen with severe sepsis: critical lab rates?")
            == "X patients on X oxygen with X: X rates?")
    assert mask_terms_of_art("How many patients had high potassium?") == "How many patients had high potassium?"
    verdict = v("What was the critical lab rate among female patients admitted in 2150?", "SELECT COUNT(*) FROM patients",
                mimic_iv_db)
    assert verdict.action != "ambiguous" and "critical" not in verdict.reason


def test_kinds_of_record_schemas_often_lack_are_fhirs_and_the_rule_reads_only_the_first_clause():
    from ehrguard.verify.offline.features import question_cues

    assert question_cues("Is patient 10004235 allergic to penicillin?").missing == ("allergy records",)
    assert question_cues("What was the blood type of patient 10004235?").missing == ("blood type",)
    assert question_cues("What is the gender of patient 10004235?").missing == ()
    # an earlier clause may name what a later pronoun points at
    assert question_cues("Of the drugs patient 10004235 got, which was the first dose of it?").unresolved == ()
    assert question_cues("Which was the first dose of it?").unresolved == ("of it",)
    assert question_cues("List the tests mentioned above.").unresolved == ("mentioned above",)
    assert question_cues("What was the first drug given on that day when patient 10004235 was admitted?").unresolved == ()


def test_the_shipped_condition_names_are_what_the_icd_dictionaries_give(shared_data):
    # scripts/derive_condition_names.py wrote the shipped list from the demo's dictionaries; it must not drift from them
    import csv
    import gzip
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location("derive", Path(__file__).parents[2] / "scripts/derive_condition_names.py")
    derive = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(derive)
    titles = []
    for name in derive.DICTIONARIES:
        with gzip.open(shared_data / "mimic-iv-demo-2.2" / name, "rt", newline="") as f:
            titles += [row["long_title"] for row in csv.DictReader(f)]
    names = derive.condition_names(titles)
    shipped = [line for line in derive.OUT.read_text().splitlines() if line and not line.startswith("#")]
    assert names == shipped
    assert "severe sepsis" in names and "low back pain" in names
    # headings with qualifiers and grades of measured quantities are not names
    assert "abnormal findings" not in names and "elevated white blood cell count" not in names


def test_a_correction_by_a_known_question_says_how_it_reads_last_year(mimic_iv_db, monkeypatch):
    """EHRSQL's known questions read "last year" as the calendar year before the database's "now"; many people mean the
    past twelve months. A correction that brings that reading says so, in the message the user reads."""
    from ehrguard.verify import verify
    from ehrguard.verify.offline.verifier import time_reading

    monkeypatch.setenv("EHRGUARD_TEMPLATE_BANK", "on")  # the shipped, compiled known questions
    question = "How many patients were prescribed furosemide in the last year?"
    rolling = ("SELECT COUNT(DISTINCT subject_id) FROM prescriptions WHERE drug = 'furosemide' "
               "AND starttime >= datetime('now', '-1 year')")
    verdict = verify(question, rolling, db=mimic_iv_db, db_id="mimic_iv")
    assert verdict.action == "correct" and "'last year' as the calendar year before this database's 'now'" in verdict.message
    month = time_reading("How many patients were prescribed furosemide last month?")
    assert month.startswith("It reads 'last month' as the calendar month")
    assert time_reading("How many patients were prescribed furosemide this year?") == ""  # no other reading to warn of
    assert time_reading("How many patients were prescribed furosemide?") == ""


def test_high_and_abnormal_read_by_the_records_reference_ranges_are_no_guess(mimic_iv_raw_db):
    """"High potassium" has no threshold the question states; a query that compares each result with the laboratory's
    own reference range (or its abnormal flag) reads the word as the records define it, and is not asked back. A
    threshold of the query's own choosing is still a guess."""
    from ehrguard import verify
    from ehrguard.verify.offline.question import QuestionClassifier

    classifier = QuestionClassifier()
    question = "How many patients had an abnormally high potassium?"
    base = ("SELECT COUNT(DISTINCT l.subject_id) FROM mimiciv_hosp.labevents l JOIN mimiciv_hosp.d_labitems d "
            "ON l.itemid = d.itemid WHERE d.label = 'Potassium' AND ")
    ranged = classifier.assess(question, base + "l.valuenum > l.ref_range_upper")
    flagged = classifier.assess(question, base + "l.flag = 'abnormal'")
    guessed = classifier.assess(question, base + "l.valuenum > 5.0")
    assert ranged.cues.vague == flagged.cues.vague == () and guessed.cues.vague
    assert ranged.category["ambiguous"] < guessed.category["ambiguous"]
    assert verify(question, base + "l.valuenum > l.ref_range_upper", db=mimic_iv_raw_db).action != "ambiguous"
    # only a comparison with a measured value reads the range: selecting it, or testing it is there, defines nothing
    shown = classifier.assess(question, base.replace("COUNT(DISTINCT l.subject_id)", "l.ref_range_upper") + "l.valuenum > 5.0")
    assert shown.cues.vague == guessed.cues.vague
    present = classifier.assess(question, base + "l.ref_range_upper IS NOT NULL AND l.valuenum > 5.0")
    assert present.cues.vague == guessed.cues.vague
    # a threshold the query chose for another measure may be what another degree word asks: nothing is masked
    both = classifier.assess("How many patients had an abnormal potassium and a high heart rate?",
                             base + "l.valuenum > l.ref_range_upper AND c.valuenum > 100")
    assert set(both.cues.vague) >= {"abnormal", "high"}
    from ehrguard.verify.offline.question import _reads_reference_ranges

    # the flag set, a count of such results, a diagnosis' sequence number beside the range: still read by the range
    assert _reads_reference_ranges("SELECT COUNT(*) FROM labevents WHERE itemid = 50971 AND flag IS NOT NULL")
    assert _reads_reference_ranges(base + "l.valuenum > l.ref_range_upper GROUP BY l.subject_id HAVING COUNT(*) >= 3")
    assert _reads_reference_ranges(base + "l.valuenum > l.ref_range_upper AND d.seq_num = 1")
    assert not _reads_reference_ranges("SELECT COUNT(*) FROM admissions WHERE hospital_expire_flag = 1")
    from ehrguard.verify.offline.features import mask_range_words

    assert (mask_range_words("Low-dose aspirin, normal saline or high blood pressure with an abnormal HIGH sodium?")
            == "Low-dose aspirin, normal saline or high blood pressure with an X X sodium?")
