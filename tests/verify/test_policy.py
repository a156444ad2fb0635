"""The offline decision from tables of evidence: no database, no model, no file."""

from __future__ import annotations

import pytest

from ehrguard.verify.offline.classifier import CATEGORY_OF, CLASSES
from ehrguard.verify.offline.evidence import Evidence, KnownQuestion, Repair
from ehrguard.verify.offline.features import QuestionCues
from ehrguard.verify.offline.policy import OPERATING_POINTS, decide
from ehrguard.verify.offline.question import QuestionAssessment
from ehrguard.verify.verdict import Finding

BALANCED = OPERATING_POINTS["balanced"]
CANDIDATE = "SELECT gender FROM patients WHERE subject_id = 1"
FIXED = "SELECT gender FROM patients WHERE subject_id = 2"


def assessment(answerable: float, leaning: str = "vague-word", **cues: object) -> QuestionAssessment:
    """A question the classifier finds answerable with probability ``answerable``; the rest goes to ``leaning``."""
    probs = {c: 0.0 for c in CLASSES}
    probs["answerable"] = answerable
    probs[leaning] = 1.0 - answerable
    category = {"answerable": 0.0, "ambiguous": 0.0, "unanswerable": 0.0}
    for c, p in probs.items():
        category[CATEGORY_OF[c]] += p
    base = dict(words=8, patient_id=False, vague=(), references=(), out_of_scope=(), small_talk=(), infeasible=(), missing=(), numbers=0)
    return QuestionAssessment(probs, category, QuestionCues(**{**base, **cues}), "test")


def evidence(answerable: float = 0.95, outcome: str = "rows", *, leaning: str = "vague-word", findings=(), known=None, repair=None,
             no_query: bool = False, **cues: object) -> Evidence:
    return Evidence(CANDIDATE, assessment(answerable, leaning, **cues), tuple(findings), outcome, no_query=no_query, known=known,
                    repair=repair)


TEMPLATE_DIFFERS = KnownQuestion("template", False, FIXED, ())
TEMPLATE_AGREES = KnownQuestion("template", True, CANDIDATE, ())
FORM_DIFFERS = KnownQuestion("form", False, FIXED, (), readable="what is the gender of [patient] (similarity 0.91)")
FORM_AGREES = KnownQuestion("form", True, CANDIDATE, (), readable="what is the gender of [patient] (similarity 0.93)")
A_REPAIR = Repair(FIXED, (), ("unknown_column", "unknown_table"))
EMPTY = Finding("empty_result", "warning", "The query returns no rows.")

UNKNOWN_PATIENT = Finding("unknown_patient", "error", "No patient with subject_id = 99999999.", (45, 53))
WRITE = Finding("read_only", "error", "Only SELECT/WITH queries may run here, not DROP. ehrguard databases are read-only.")
MISSPELT = Finding("unknown_value", "error", "'furosemid' is not a value of prescriptions.drug; nearest: 'furosemide'", (60, 71),
                   clarify="'furosemid' is not in the records (prescriptions.drug); did you mean 'furosemide'?")
ROWS_NOT_PATIENTS = Finding("count_without_distinct", "warning", "Counting patients without DISTINCT counts rows, not people.", (7, 30),
                            "COUNT(DISTINCT subject_id)")
NOT_HELD = Finding("not_in_records", "error", "The database has no allergy records ('allergic').",
                   refuse="These records hold no allergy records, so they cannot answer this question.")

# evidence -> (action, sql, message start, details["known_form"], details["threshold"], status)
TABLE = [
    (evidence(), ("preserve", CANDIDATE, "No problem found.", None, 0.85, "verified")),
    (evidence(findings=[EMPTY], outcome="empty"),
     ("preserve", CANDIDATE, "Kept; the checks raised: The query returns no rows", None, 0.9, "verified")),
    # rows are strong evidence of an answerable question; a failure is none
    (evidence(0.12, "rows", vague=("enough",)), ("ambiguous", None, "What do you mean by 'enough'?", None, 0.85, "abstained")),
    (evidence(0.16, "rows"), ("preserve", CANDIDATE, "Not verified: The question may not be answerable", None, 0.85, "unverified")),
    (evidence(0.69, "failed"), ("ambiguous", None, "The question can be read", None, 0.3, "abstained")),
    # a known question corrects, or vouches for the answer
    (evidence(known=TEMPLATE_DIFFERS),
     ("correct", FIXED, "Replaced by the SQL of a known question of the same form", "template", 0.97, "verified")),
    (evidence(known=FORM_DIFFERS),
     ("correct", FIXED, "Replaced by the SQL of a known question this one paraphrases", None, 0.85, "verified")),
    (evidence(0.05, "rows", known=TEMPLATE_AGREES), ("preserve", CANDIDATE, "Not verified", "agrees", 0.97, "unverified")),
    (evidence(0.55, "rows", known=FORM_AGREES), ("preserve", CANDIDATE, "No problem found.", "form-agrees", 0.97, "verified")),
    (evidence(0.01, "rows", known=TEMPLATE_AGREES), ("ambiguous", None, "The question can be read", "agrees", 0.97, "abstained")),
    # a repair makes the outcome "rows": the threshold of the SQL we would return
    (evidence(0.5, "failed", repair=A_REPAIR), ("correct", FIXED, "Corrected.", None, 0.85, "verified")),
    (evidence(known=TEMPLATE_AGREES, repair=A_REPAIR),
     ("correct", FIXED, "Corrected.", "agrees", 0.97, "verified")),
    # no query: refused, with the reason when the question reads as one the records cannot answer ...
    (evidence(0.1, "failed", no_query=True, leaning="infeasible-faq", infeasible=("visiting hours",)),
     ("unanswerable", None, "The text-to-SQL model produced no query for this question. This asks for information", None, 0.3,
      "abstained")),
    # ... and no made-up cause when the question holds no word of the class the model chose
    (evidence(0.1, "failed", no_query=True, leaning="infeasible-faq"),
     ("unanswerable", None, "The text-to-SQL model produced no query for this question. The question does not read like one", None,
      0.3, "abstained")),
    (evidence(0.4, "failed", no_query=True, leaning="out-of-scope", out_of_scope=("predict",)),
     ("unanswerable", None, "The text-to-SQL model produced no query for this question. This asks for an analysis ('predict')", None, 0.3,
      "abstained")),
    # ... and a question that reads as answerable is not said to be one the records cannot answer: there is just no query
    (evidence(0.9, "failed", no_query=True, leaning="missing-column"),
     ("unanswerable", None, "The text-to-SQL model produced no query for this question. There is no answer to check", None, 0.3,
      "abstained")),
    # the verifier's own errors never make a verified answer; a write is never kept; a value the records lack is asked about
    (evidence(findings=[UNKNOWN_PATIENT, EMPTY], outcome="empty"),
     ("preserve", CANDIDATE, "Not verified: There is no patient 99999999 in the records", None, 0.9, "unverified")),
    (evidence(findings=[ROWS_NOT_PATIENTS]), ("preserve", CANDIDATE, "Not verified: The query counts rows, not patients", None, 0.85,
                                              "unverified")),
    (evidence(findings=[WRITE], outcome="failed"),
     ("unanswerable", None, "The query would change the database", None, 0.3, "abstained")),
    (evidence(findings=[WRITE], outcome="failed", known=FORM_DIFFERS),
     ("correct", FIXED, "Replaced by the SQL of a known question this one paraphrases", None, 0.85, "verified")),
    (evidence(findings=[MISSPELT, EMPTY], outcome="empty"),
     ("ambiguous", None, "'furosemid' is not in the records (prescriptions.drug); did you mean 'furosemide'?", None, 0.9, "abstained")),
    # a vague word or an unresolved reference leaves any answer a guess, however answerable the model finds the question
    (evidence(0.9, vague=("abnormal",)), ("preserve", CANDIDATE, "Not verified: 'abnormal' has no agreed threshold", None, 0.85,
                                         "unverified")),
    (evidence(0.9, unresolved=("the drug",)), ("preserve", CANDIDATE, "Not verified: What does 'the drug' refer to?", None, 0.85,
                                               "unverified")),
    (evidence(known=FORM_DIFFERS, vague=("high",)), ("correct", FIXED, "Replaced by the SQL", None, 0.85, "unverified")),
    # the model refuses; what this schema lacks is the reason given
    (evidence(0.05, leaning="infeasible-faq", findings=[NOT_HELD]),
     ("unanswerable", None, "These records hold no allergy records", None, 0.85, "abstained")),
]


@pytest.mark.parametrize(("ev", "expected"), TABLE)
def test_the_decision_from_a_table_of_evidence(ev, expected):
    action, sql, message, known_form, threshold, status = expected
    v = decide(ev, BALANCED)
    assert (v.action, v.sql, v.status) == (action, sql, status)
    assert v.message.startswith(message), v.message
    assert v.details["known_form"] == known_form and v.details["threshold"] == threshold
    assert v.evidence is ev and v.reason and "_" not in v.reason.split("(")[0]  # a sentence, not a check's name


def test_safety_first_turns_an_unresolved_error_into_an_abstention_with_its_reason():
    v = decide(evidence(findings=[UNKNOWN_PATIENT, EMPTY], outcome="empty"), OPERATING_POINTS["safety-first"])
    assert (v.action, v.status) == ("unanswerable", "abstained") and v.message.startswith("There is no patient 99999999")
    assert decide(evidence(findings=[EMPTY], outcome="empty"), OPERATING_POINTS["safety-first"]).status == "verified"


def test_a_form_correction_names_the_known_question_and_what_remains():
    v = decide(evidence(known=FORM_DIFFERS), BALANCED)
    assert v.details["repair"] == {"fixed": "form", "remaining": {"errors": 0, "warnings": 0, "checks": []},
                                   "known_question": FORM_DIFFERS.readable}
    assert v.details["sql"]["outcome"] == "rows"


def test_operating_points_move_only_the_thresholds():
    ev = evidence(0.3, "rows")  # 0.7 not answerable
    assert decide(ev, OPERATING_POINTS["balanced"]).action == "preserve"
    assert decide(ev, OPERATING_POINTS["safety-first"]).action == "ambiguous"
    assert decide(ev, OPERATING_POINTS["preserve-first"]).action == "preserve"


def test_the_verdict_serialises_without_its_typed_evidence():
    d = decide(evidence(known=FORM_DIFFERS), BALANCED).to_dict()
    assert "evidence" not in d and d["output"] == FIXED
    assert list(d) == ["action", "sql", "subtype", "message", "status", "reason", "findings", "confidence", "trace", "details", "output"]


@pytest.mark.parametrize(("finding", "reason"), [
    (Finding("wrong_now", "error", "'now' in this database is 2100-12-31 23:59:00, not the machine clock."),
     "The query uses the computer's clock; in these records 'now' is 2100-12-31 23:59:00."),
    (Finding("execution", "error", "The query fails on the database: no such column: amount"),
     "The query fails on the database (no such column: amount)"),
    (Finding("unknown_value", "error", "'glucse' is not a value of d_labitems.label"),
     "'glucse' is not in the records (d_labitems.label)."),
    (Finding("parse", "error", "The SQL does not parse as a single statement."), "The query cannot be read as SQL."),
    # the place the query takes, as the finding says it
    (Finding("missing_place", "error", "The question asks for the second of an order; the query takes only the first (LIMIT 1 "
             "with no OFFSET)."),
     "The question asks for the second of an order (the second most recent, ...), but the query returns the first."),
    (Finding("missing_place", "error", "The question asks for the second of an order; the query takes place 3 (OFFSET 2)."),
     "The question asks for the second of an order (the second most recent, ...), but the query returns place 3 of that order."),
    (Finding("missing_place", "warning", "The question asks for the third of an order; the query takes no such place (no OFFSET, "
             "no rank)."),
     "The question asks for the third of an order (the second most recent, ...), but the query takes no place of that order."),
])
def test_every_reason_is_a_sentence_without_check_names(finding, reason):
    from ehrguard.verify.offline.policy import plain_reason

    assert plain_reason(finding) == reason


def test_a_loose_paraphrase_disputes_a_candidate_no_check_faults_and_does_not_replace_it():
    disputing = KnownQuestion("form", False, FIXED, (), readable="how many patients who have been hospitalized [period] (similarity 0.40)",
                              overrules=False)
    v = decide(evidence(known=disputing), BALANCED)
    assert (v.action, v.sql, v.status) == ("preserve", CANDIDATE, "unverified")
    assert "how many patients who have been hospitalized [period]" in v.reason and "similarity" not in v.reason
    assert v.details["disputed_by"] == disputing.readable and v.details["known_form"] is None
    assert decide(evidence(known=FORM_DIFFERS), BALANCED).action == "correct"  # one that overrules still corrects


def test_an_unconfirmed_correction_does_not_say_no_problem_was_found():
    from dataclasses import replace

    from ehrguard.verify.offline.calibration import FEATURES, Calibration

    doubtful = Calibration((0.0,) * len(FEATURES), {"0.1": 0.9}, "test", 100)  # every answer 0.5, below the bar
    policy = replace(BALANCED, calibration=doubtful)
    corrected = decide(evidence(repair=A_REPAIR, findings=[ROWS_NOT_PATIENTS]), policy)
    assert corrected.action == "correct" and corrected.status == "unverified"
    assert corrected.reason.startswith("The query was corrected, but the correction cannot be confirmed")
    kept = decide(evidence(), policy)
    assert kept.status == "unverified" and kept.reason.startswith("No check found a problem")


def test_a_verified_answer_says_how_often_answers_like_it_were_right():
    from dataclasses import replace

    from ehrguard.verify.offline.calibration import FEATURES, Calibration

    generous = Calibration((3.0,) + (0.0,) * (len(FEATURES) - 1), {"0.1": 0.9}, "test", 100)  # every answer 0.95
    verdict = decide(evidence(), replace(BALANCED, calibration=generous))
    assert verdict.status == "verified" and verdict.reason.endswith("Answers like it were right about 95% of the time in our tests.")
    assert decide(evidence(), replace(BALANCED, calibration=None)).reason.endswith("no check found a problem.")
