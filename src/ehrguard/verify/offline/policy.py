"""The offline verifier's decision: a pure function of the evidence and a policy, with named operating points.

Nothing here reads a database, a model or a file: :func:`decide` maps an
:class:`~ehrguard.verify.offline.evidence.Evidence` to a :class:`~ehrguard.verify.verdict.Verdict`.
"""

from __future__ import annotations

from dataclasses import dataclass

from ehrguard.verify.checks import summary
from ehrguard.verify.offline.evidence import Evidence, Outcome
from ehrguard.verify.offline.question import QuestionAssessment
from ehrguard.verify.verdict import Verdict


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

    def threshold(self, outcome: str) -> float:
        return {"rows": self.abstain_if_rows, "empty": self.abstain_if_empty}.get(outcome, self.abstain_if_failed)

    def refuses_whatever_the_sql(self, question: QuestionAssessment) -> bool:
        """Past the highest bar the question is refused whatever the SQL does: no need to look for a better SQL."""
        return question.category["ambiguous"] + question.category["unanswerable"] >= self.abstain_if_known_form


# The one place thresholds live. Chosen on the SCARE dev split by grouped cross-validation (docs/verifier.md).
OPERATING_POINTS = {
    "balanced": Policy(abstain_if_rows=0.85, abstain_if_empty=0.9, abstain_if_failed=0.3),
    "safety-first": Policy(abstain_if_rows=0.6, abstain_if_empty=0.7, abstain_if_failed=0.3),
    "preserve-first": Policy(abstain_if_rows=0.95, abstain_if_empty=0.95, abstain_if_failed=0.5),
}

NO_QUERY = "The text-to-SQL model produced no query for this question. "


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


def refusal_message(subtype: str, a: QuestionAssessment) -> str:
    cues = a.cues
    if subtype == "small-talk":
        return "This is conversation, not a question about the records; there is nothing to look up."
    if subtype == "out-of-scope":
        what = f" ('{cues.out_of_scope[0]}')" if cues.out_of_scope else ""
        return f"This asks for an analysis{what} beyond what one database query can return (models, predictions, generated data)."
    if subtype == "missing-column":
        what = f" '{cues.missing[0]}'" if cues.missing else " that"
        return f"The database has no field for{what}; the records cannot answer this."
    if subtype == "infeasible-faq":
        return "This asks for information an EHR database does not hold (schedules, policies, future events, advice)."
    return "The records cannot answer this question."


_REPLACED = {
    "template": "Replaced by the SQL of a known question of the same form, which answers differently and runs cleanly.",
    "form": "Replaced by the SQL of a known question this one paraphrases, which answers differently and runs cleanly.",
}


def abstain_threshold(evidence: Evidence, policy: Policy) -> float:
    """The probability of ambiguous + unanswerable at which the verdict abstains."""
    outcome: Outcome = evidence.final_outcome()
    threshold = policy.threshold(outcome)
    if evidence.vouches_answerable:
        threshold = max(threshold, policy.abstain_if_known_form)
    return threshold


def decide(evidence: Evidence, policy: Policy) -> Verdict:
    """The verdict for the evidence's candidate SQL: abstain when the question is likely not answerable
    (past the policy's threshold for what the SQL did), refuse when there is no query, else correct with the
    replacement if there is one, else preserve."""
    a = evidence.question
    findings = list(evidence.findings)
    threshold = abstain_threshold(evidence, policy)
    details = evidence.details(threshold)
    amb, una = a.category["ambiguous"], a.category["unanswerable"]
    if amb + una >= threshold:  # not answerable, then the likelier of the two
        category = "unanswerable" if una >= amb else "ambiguous"
        subtype = a.best_subtype(category)
        message = refusal_message(subtype, a) if category == "unanswerable" else clarifying_message(subtype, a)
        if evidence.no_query:
            message = NO_QUERY + message
        return Verdict(category, subtype=subtype, message=message, findings=findings, confidence=round(amb + una, 4), details=details,
                       evidence=evidence)
    if evidence.no_query:
        subtype = a.best_subtype("unanswerable")
        return Verdict("unanswerable", subtype=subtype, findings=findings, confidence=round(una, 4), details=details,
                       message=NO_QUERY + refusal_message(subtype, a), evidence=evidence)
    confidence = round(a.category["answerable"], 4)
    fix = evidence.replacement
    if fix is not None:
        details["repair"] = {"fixed": fix.label, "remaining": summary(fix.findings)}
        if fix.readable:
            details["repair"]["known_question"] = fix.readable
        message = _REPLACED.get(fix.kind, f"Corrected ({fix.label}).")
        return Verdict("correct", sql=fix.sql, message=message, findings=findings, confidence=confidence,
                       details=details, evidence=evidence)
    message = "No problem found." if not findings else "Kept; the checks raised: " + "; ".join(f.message for f in findings[:3])
    return Verdict("preserve", sql=evidence.candidate, message=message, findings=findings, confidence=confidence, details=details,
                   evidence=evidence)
