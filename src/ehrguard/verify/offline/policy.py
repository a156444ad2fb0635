"""The offline verifier's decision: a pure function of the evidence and a policy, with named operating points.

Nothing here reads a database, a model or a file: :func:`decide` maps an
:class:`~ehrguard.verify.offline.evidence.Evidence` to a :class:`~ehrguard.verify.verdict.Verdict`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ehrguard.verify.checks import summary
from ehrguard.verify.offline.calibration import PRESENTATION_ONLY, AnswerFeatures, Calibration
from ehrguard.verify.offline.evidence import Evidence, Outcome, Replacement
from ehrguard.verify.offline.question import QuestionAssessment
from ehrguard.verify.verdict import Finding, Status, Verdict


@dataclass(frozen=True)
class Policy:
    """When to abstain: the question classifier's probability of ambiguous/unanswerable must
    reach a threshold that depends on what the candidate SQL did. A query that returns rows is
    strong evidence the question is answerable; one that fails (or is missing) is none. An empty
    result sits apart: on a database that holds a sample of patients it is common for perfectly
    good questions, so it is not taken as evidence against the question either."""

    abstain_if_rows: float
    abstain_if_empty: float
    abstain_if_failed: float
    # The question fits a known answerable question word for word, and that form's SQL runs
    # cleanly with rows here: only a near-certain classifier overrides that.
    abstain_if_known_form: float = 0.97
    repair: bool = True
    # The status: an answer is shown as verified only when nothing blocks it and the classifier's probability that
    # the question is answerable reaches this bar (with a calibration too: its bar comes on top).
    verify_bar: float = 0.5
    # What becomes of an answer an unresolved error blocks: kept (the action SCARE scores stays preserve, the status
    # says it is not verified) or turned into an abstention with the reason.
    abstain_on_unresolved_error: bool = False
    # With a calibration: an answer is verified when also its calibrated probability of being right reaches the bar the
    # calibration chose for this target risk (at most this share wrong among verified answers on its fitting data).
    target_risk: float = 0.1
    calibration: Calibration | None = None

    def threshold(self, outcome: str) -> float:
        return {"rows": self.abstain_if_rows, "empty": self.abstain_if_empty}.get(outcome, self.abstain_if_failed)

    def refuses_whatever_the_sql(self, question: QuestionAssessment) -> bool:
        """Past the highest bar the question is refused whatever the SQL does: no need to look for a better SQL."""
        return question.category["ambiguous"] + question.category["unanswerable"] >= self.abstain_if_known_form


# The one place thresholds live. Chosen on the SCARE dev split by grouped cross-validation (docs/verifier.md).
OPERATING_POINTS = {
    "balanced": Policy(abstain_if_rows=0.85, abstain_if_empty=0.9, abstain_if_failed=0.3, target_risk=0.1),
    "safety-first": Policy(abstain_if_rows=0.6, abstain_if_empty=0.7, abstain_if_failed=0.3, verify_bar=0.7,
                           abstain_on_unresolved_error=True, target_risk=0.05),
    "preserve-first": Policy(abstain_if_rows=0.95, abstain_if_empty=0.95, abstain_if_failed=0.5, verify_bar=0.3, target_risk=0.2),
}

# Findings that keep an answer from being verified: every error, and counting rows where people are counted (a
# warning for the benchmarks' sake, but the count it gives is wrong whenever a patient has several rows).
BLOCKING_WARNINGS = frozenset({"count_without_distinct", "counts_rows_not_patients", "counts_visits_not_patients", "missing_current_filter",
                               "missing_death_filter", "missing_value_filter", "not_checked", "missing_stated_number",
                               "missing_group_filter", "missing_age_filter", "missing_route_filter", "unscoped_read", "wrong_column",
                               "missing_time_window", "kind_not_read", "tied_end", "missing_place", "missing_icu_scope", "coarse_join",
                               "code_for_name", "count_not_distinct", "missing_visit_scope", "missing_exclusion",
                               "unstated_visit", "unasked_ended", "unasked_filter", "pattern_matches_nothing",
                               "matches_no_record", "side_not_chosen", "mixed_specimens", "unhappened_events",
                               "death_outside_visit", "narrower_value", "missing_variants", "value_not_named",
                               "averaged_over_visits"})

# Blocking findings that doubt an answer without calling it a mistake: a pattern nothing in these records matches (a
# sample's gap, or another name), a visit the question leaves open. They keep it from being verified, but a known
# question that answers otherwise is not a correction of them.
DOUBTS = frozenset({"matches_no_record", "unstated_visit", "missing_variants"})

NO_QUERY = "The text-to-SQL model produced no query for this question. "

# The SCARE subtype of a refusal a check makes about the question itself.
REFUSAL_SUBTYPES = {"not_in_records": "missing-column", "asks_future": "infeasible-faq", "asks_judgement": "infeasible-faq"}


def clarifying_message(subtype: str, a: QuestionAssessment) -> str:
    cues = a.cues
    if subtype == "vague-word" and cues.vague:
        return f"What do you mean by '{cues.vague[0]}'? It has no agreed threshold; give a number, a range or a definition."
    if subtype == "ambiguous-reference" and cues.unresolved:
        return f"What does '{cues.unresolved[0]}' refer to? Please name the patient, drug, procedure, event or date you mean."
    if subtype == "ambiguous-reference" and cues.references:
        return f"Who or what does '{cues.references[0]}' refer to? Please name the patient, stay, drug or event you mean."
    if subtype == "vague-question":
        return "What exactly would you like to know: a value, a count, a date? For which patient and which period?"
    return "The question can be read in more than one way; please make it specific (patient, measure, period)."


# The reason of a refusal the question model makes on its reading of the whole question, with no word of it to name.
UNNAMED_REFUSAL = ("The question does not read like one these records can answer as asked, though no single word of it "
                   "says why; please ask it with the patient, the measure and the period you mean.")


def refusal_message(subtype: str, a: QuestionAssessment) -> str:
    """Why the records cannot answer, in the words of the class the question model chose, when the question holds a
    word of that class ("hello", "predict", a field no schema holds); otherwise a reason that says no word was found, not
    a cause the question never gave ("this is conversation" for "who are our oldest patients?")."""
    cues = a.cues
    if subtype == "small-talk" and cues.small_talk:
        return "This is conversation, not a question about the records; there is nothing to look up."
    if subtype == "out-of-scope" and cues.out_of_scope:
        return (f"This asks for an analysis ('{cues.out_of_scope[0]}') beyond what one database query can return (models, "
                "predictions, generated data).")
    if subtype == "missing-column" and cues.missing:
        return f"The database has no field for '{cues.missing[0]}'; the records cannot answer this."
    if subtype == "infeasible-faq" and cues.infeasible:
        return "This asks for information an EHR database does not hold (schedules, policies, future events, advice)."
    return UNNAMED_REFUSAL


_REPLACED = {
    "template": "Replaced by the SQL of a known question of the same form, which answers differently and runs cleanly.",
    "form": "Replaced by the SQL of a known question this one paraphrases, which answers differently and runs cleanly.",
}


def plain_reason(f: Finding) -> str:
    """A finding in words a clinician reads: what is wrong with the answer, never a check's name."""
    m = re.match(r"'(.*)' is not a value of (\w+)\.(\w+)(?:; nearest: '(.*)')?$", f.message)
    if f.check == "unknown_value" and m:
        value, table, column, nearest = m.groups()
        hint = f"; did you mean '{nearest}'?" if nearest else "."
        return f"'{value}' is not in the records ({table}.{column}){hint}"
    m = re.match(r"'(.*)' is not a value of (\w+)\.(\w+); the values holding it: (.*)$", f.message)
    if f.check == "unknown_value" and m:
        value, table, column, family = m.groups()
        return f"'{value}' is not in the records ({table}.{column}) as such; they write it in several ways ({family}): say which."
    m = re.match(r"No patient with (\w+) = (.*)\.$", f.message)
    if f.check == "unknown_patient" and m:
        return f"There is no patient {m.group(2)} in the records ({m.group(1)}), so the answer says nothing about such a patient."
    if f.check == "read_only":
        return "The query would change the database; only queries that read records can answer a question."
    if f.check == "wrong_now":
        return f"The query uses the computer's clock; in these records 'now' is {f.message.split(' is ', 1)[1].split(', not')[0]}."
    if f.check == "counts_visits_not_patients":
        return "The query counts hospital stays, not patients: a patient with several stays is counted more than once."
    if f.check in ("count_without_distinct", "counts_rows_not_patients"):
        return "The query counts rows, not patients: a patient with several records is counted several times."
    if f.check in ("unknown_table", "unknown_column"):
        return f"The query names something the database does not have: {f.message}"
    if f.check == "parse":
        return "The query cannot be read as SQL."
    m = re.match(r"The question asks for the ([a-z0-9, ]+) of an order", f.message)
    if f.check == "missing_place" and m:
        # what the query takes, as the finding says: the first, another place ("takes place 3"), or no place at all
        taken = re.search(r"the query takes place (\d+)", f.message)
        returned = f"returns place {taken.group(1)} of that order" if taken else \
            "takes no place of that order" if "takes no such place" in f.message else "returns the first"
        return f"The question asks for the {m.group(1)} of an order (the second most recent, ...), but the query {returned}."
    m = re.match(r"Records tie for the first place of the query's order (\(.*\)) with different answers (\(.*\)):", f.message)
    if f.check == "tied_end" and m:
        return (f"Several records share the first place of the query's order {m.group(1)} with different values {m.group(2)}; "
                "the query shows one of them, whichever the database meets first.")
    m = re.match(r"The query returns (\w+)\.(\w+); the question asks what it is called \((\w+)\.(\w+)\)", f.message)
    if f.check == "code_for_name" and m:
        return f"The query returns the {m.group(2)} column of {m.group(1)}, not the name the question asks for ({m.group(4)})."
    if f.check == "missing_kind":  # said in plain words by the check; what it added is for the SQL's reader
        return f.message.split(". Added ", 1)[0] + "."
    if f.check == "execution":
        return f.message.replace("The query fails on the database: ", "The query fails on the database (") + ")"
    return f.message


def blocking(findings: tuple[Finding, ...] | list[Finding]) -> list[Finding]:
    """The findings that keep an answer from being verified."""
    return [f for f in findings if f.severity == "error" or f.check in BLOCKING_WARNINGS]


def corrects(fix: Replacement | None) -> bool:
    """Is the answer a correction of what the candidate says (not only of how it is shown)?"""
    return fix is not None and not (fix.kind == "repair" and fix.answers and set(fix.answers) <= PRESENTATION_ONLY)


def answer_features(evidence: Evidence, fix: Replacement | None) -> AnswerFeatures:
    """What the calibrated probability of an answer rests on (the candidate's findings, as the run records keep them)."""
    return AnswerFeatures(evidence.question.category["answerable"], evidence.final_outcome() == "empty", corrects(fix),
                          evidence.known_label is not None, sum(f.severity == "warning" for f in evidence.findings),
                          bool(blocking(evidence.findings)), corrects(fix) and fix is not None and fix.kind == "repair",
                          frozenset(f.check for f in evidence.findings))


def answer_probability(evidence: Evidence, policy: Policy, fix: Replacement | None) -> float:
    """The probability that the answer is right: calibrated when the policy has a calibration, else the classifier's
    probability that the question is answerable. Where that probability is below the policy's answerable bar (the
    answer is not verified for it), no more than it: an answer is right only if the question can be answered, and a
    calibration fitted where every question could be (ClinSQL's) would otherwise show 0.91 beside "may not be
    answerable"."""
    if evidence.final_outcome() == "failed" and fix is None:
        return 0.0  # the SQL we would return gives no answer at all: none that could be right
    answerable = evidence.question.category["answerable"]
    if policy.calibration is None:
        return answerable
    p = policy.calibration.probability(answer_features(evidence, fix))
    return min(p, answerable) if answerable < policy.verify_bar else p


def trust(evidence: Evidence, policy: Policy, fix: Replacement | None) -> tuple[Status, str]:
    """The status of an answer (preserve / correct) and why, in one sentence."""
    remaining = blocking(fix.findings if fix is not None else evidence.findings)
    if remaining:
        return "unverified", plain_reason(remaining[0])
    outcome = "rows" if fix is not None else evidence.outcome
    if outcome == "failed":
        return "unverified", "The query did not run on the database."
    unclear = _unclear(evidence.question)
    if unclear:  # whatever else the question says, a word with no agreed meaning leaves the answer a guess
        return "unverified", unclear
    if fix is None and evidence.known is not None and evidence.known.disputes:
        known = re.sub(r" \(similarity [\d.]+\)$", "", evidence.known.readable)
        return "unverified", (f"A known question close to this one ('{known}') answers differently; "
                              "no check found a problem in the query, but which reading is meant is not confirmed.")
    answerable = evidence.question.category["answerable"]
    # Whatever a calibration says: one fitted where every question was answerable (ClinSQL's, for the mimic-code layout)
    # learnt nothing of a question the model doubts, so the doubt keeps its own bar.
    if answerable < policy.verify_bar:
        return "unverified", (f"The question may not be answerable as asked (probability it is answerable "
                              f"{answerable:.2f}, below {policy.verify_bar:.2f}).")
    odds = ""  # what "verified" promises, in numbers: how often answers like it were right where the calibration was fitted
    if policy.calibration is not None:
        p, bar = answer_probability(evidence, policy, fix), policy.calibration.bar(policy.target_risk)
        odds = f" Answers like it were right about {p:.0%} of the time in our tests."
        if p < bar and fix is not None:  # a check found the mistake: "no problem found" would say otherwise
            return "unverified", (f"The query was corrected, but the correction cannot be confirmed: corrections like it were right "
                                  f"{p:.0%} of the time in our tests (verified needs {bar:.0%}).")
        if p < bar:
            return "unverified", (f"No check found a problem, but the checks cannot confirm this answer: answers like it were right "
                                  f"{p:.0%} of the time in our tests (verified needs {bar:.0%}).")
    if fix is not None:
        return "verified", "Verified after a correction: the corrected query runs cleanly on the database." + odds
    empty = " It returns no rows: nothing in the records matches." if outcome == "empty" else ""
    return "verified", "Verified: the query runs cleanly on the database and no check found a problem." + empty + odds


def _unclear(a: QuestionAssessment) -> str | None:
    """What in the question no SQL can settle: a vague word or a reference to something it never names."""
    if a.cues.vague:
        return (f"'{a.cues.vague[0]}' has no agreed threshold, so the answer depends on how it is read; "
                "give a number, a range or a definition.")
    if a.cues.unresolved:
        return clarifying_message("ambiguous-reference", a)
    return None


def abstain_threshold(evidence: Evidence, policy: Policy) -> float:
    """The probability of ambiguous + unanswerable at which the verdict abstains."""
    outcome: Outcome = evidence.final_outcome()
    threshold = policy.threshold(outcome)
    if evidence.vouches_answerable:
        threshold = max(threshold, policy.abstain_if_known_form)
    return threshold


def decide(evidence: Evidence, policy: Policy) -> Verdict:
    """The verdict for the evidence's candidate SQL: abstain when the question is likely not answerable
    (past the policy's threshold for what the SQL did), refuse when there is no query or the query could write,
    else correct with the replacement if there is one, else preserve; each with its trust status and reason."""
    a = evidence.question
    findings = list(evidence.findings)
    threshold = abstain_threshold(evidence, policy)
    details = evidence.details(threshold)
    amb, una = a.category["ambiguous"], a.category["unanswerable"]
    if amb + una >= threshold:  # not answerable, then the likelier of the two
        category = "unanswerable" if una >= amb else "ambiguous"
        subtype = a.best_subtype(category)
        message = refusal_message(subtype, a) if category == "unanswerable" else clarifying_message(subtype, a)
        lacking = next((f.refuse for f in findings if f.refuse), None)
        if category == "unanswerable" and lacking:  # what the records lack, named from this schema, says more than the model's class
            message = lacking
        if evidence.no_query:
            message = NO_QUERY + message
        return Verdict(category, subtype=subtype, message=message, status="abstained", reason=message, findings=findings,
                       confidence=round(amb + una, 4), details=details, evidence=evidence)
    if evidence.no_query:  # the question reads as answerable: say only that there is nothing to check, not why it could not be
        subtype = a.best_subtype("unanswerable")
        message = NO_QUERY + "There is no answer to check: ask again, or write the query."
        return Verdict("unanswerable", subtype=subtype, findings=findings, confidence=round(una, 4), details=details,
                       message=message, status="abstained", reason=message, evidence=evidence)
    confidence = round(a.category["answerable"], 4)  # of a refusal: 1 - this
    refused = next((f for f in findings if f.refuse), None)
    # The records cannot answer this, whatever the SQL returns; unless a known question stands behind answering it.
    if refused is not None and refused.refuse is not None and not evidence.vouches_answerable:
        return _refusal(refused.refuse, findings, confidence, details, evidence, subtype=REFUSAL_SUBTYPES.get(refused.check))
    fix = evidence.replacement
    writes = next((f for f in findings if f.check == "read_only"), None)
    if writes is not None and fix is None:  # a statement that could write is never a kept answer
        return _refusal(plain_reason(writes), findings, confidence, details, evidence)
    ask = next((f.clarify for f in findings if f.clarify), None)
    if ask is not None and fix is None:  # the question names something the records do not hold: ask back, never guess
        return _refusal(ask, findings, confidence, details, evidence, category="ambiguous")
    status, reason = trust(evidence, policy, fix)
    if status == "unverified" and policy.abstain_on_unresolved_error and blocking(fix.findings if fix else findings):
        return _refusal(reason, findings, confidence, details, evidence)
    if fix is not None:
        details["repair"] = {"fixed": fix.label, "remaining": summary(fix.findings)}
        if fix.readable:
            details["repair"]["known_question"] = fix.readable
        message = _REPLACED.get(fix.kind) or _repaired(fix, findings)
        if fix.note:
            message += " " + fix.note
        return Verdict("correct", sql=fix.sql, message=message, status=status, reason=reason, findings=findings,
                       confidence=round(answer_probability(evidence, policy, fix), 4), details=details, evidence=evidence)
    if status == "verified":
        message = "No problem found." if not findings else "Kept; the checks raised: " + "; ".join(f.message for f in findings[:3])
    else:
        message = "Not verified: " + reason
    return Verdict("preserve", sql=evidence.candidate, message=message, status=status, reason=reason, findings=findings,
                   confidence=round(answer_probability(evidence, policy, None), 4), details=details, evidence=evidence)


def _repaired(fix: Replacement, findings: list[Finding]) -> str:
    """What a local repair fixed, in words: each problem it answers, then that the query was changed to fix them."""
    # what was wrong, without the instruction a finding gives when no one has acted on it yet ("Add a condition on it.")
    fixed = list(dict.fromkeys(re.sub(r"\s*Add a condition on it\.$", "", plain_reason(f)) for f in findings if f.check in fix.answers))
    return "Corrected. " + " ".join(fixed) + " The query was changed to fix this; the corrected query is shown."


def _refusal(reason: str, findings: list[Finding], answerable: float, details: dict[str, object], evidence: Evidence, *,
             category: str = "unanswerable", subtype: str | None = None) -> Verdict:
    """No answer: the candidate cannot stand and nothing replaces it; the reason (or the question back) is what the user reads."""
    reason = reason[:1].upper() + reason[1:]
    return Verdict(category, subtype=subtype, message=reason, status="abstained", reason=reason, findings=findings,
                   confidence=round(1.0 - answerable, 4), details=dict(details), evidence=evidence)
