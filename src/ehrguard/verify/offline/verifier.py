"""The offline verifier: SQL checks against the database, the question classifier, known question forms, local repair,
and a decision policy with named operating points. No LLM; milliseconds per item.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ehrguard.db.engine import Result
from ehrguard.errors import ConfigError
from ehrguard.evaluation.execution_match import MatchResult, canonical_answer, execution_match
from ehrguard.verify.methods import Case, DatabaseContext, register_method
from ehrguard.verify.offline.checks import SqlContext, repair, run_checks, summary
from ehrguard.verify.offline.forms import load_forms
from ehrguard.verify.offline.question import QuestionAssessment, shared_classifier
from ehrguard.verify.offline.templates import load_bank
from ehrguard.verify.verdict import Finding, Verdict


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


# The one place thresholds live. Chosen on the SCARE dev split by grouped cross-validation (docs/verifier.md).
OPERATING_POINTS = {
    "balanced": Policy(abstain_if_rows=0.85, abstain_if_empty=0.9, abstain_if_failed=0.3),
    "safety-first": Policy(abstain_if_rows=0.6, abstain_if_empty=0.7, abstain_if_failed=0.3),
    "preserve-first": Policy(abstain_if_rows=0.95, abstain_if_empty=0.95, abstain_if_failed=0.5),
}


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


@dataclass(frozen=True)
class Fix:
    """A candidate replacement SQL: from the template bank ("template"), from a known form the question
    paraphrases ("form"), or from local repair (the names of the checks it answers); or the SQL of a known
    question the candidate answers like ("agrees", "form-agrees"), which is evidence, not a replacement."""

    sql: str
    findings: list[Finding]
    how: str
    source: str = ""  # for "form": the known question (masked) it paraphrases, and how close


def _outcome(ctx: SqlContext) -> str:
    """rows / empty (ran, nothing or only NULL) / failed (did not run, or no query)."""
    if _has_rows(ctx):
        return "rows"
    return "empty" if isinstance(ctx.execution, Result) else "failed"


def _has_rows(ctx: SqlContext) -> bool:
    result = ctx.execution
    return isinstance(result, Result) and bool(result.rows) and not all(v is None for r in result.rows for v in r)


def _answers_like(sql: str, other: SqlContext) -> MatchResult:
    """Does ``sql`` answer as ``other`` (already executed by its checks) does? Scored as the benchmark scores."""
    result = other.execution
    known = canonical_answer(result.rows) if isinstance(result, Result) and not result.truncated else None
    return execution_match(other.db.db, sql, other.sql, db_id=other.db.db_id, gold_answer=known)


def _clean_run(question: str, sql: str, db: DatabaseContext) -> tuple[SqlContext, list[Finding]] | None:
    """A replacement SQL's checks, when it runs with rows and no check finds an error; else None."""
    new_ctx, findings = run_checks(question, sql, db)
    if any(f.severity == "error" for f in findings) or not _has_rows(new_ctx):
        return None
    return new_ctx, findings


def _nested(a: list[list[str]] | None, b: list[list[str]] | None) -> bool:
    """One answer's rows all among the other's: the two queries differ only in how they break ties
    (the last event vs every event at the last time), not a wrong answer to correct."""
    if not a or not b:
        return False
    rows_a, rows_b = {tuple(r) for r in a}, {tuple(r) for r in b}
    return rows_a <= rows_b or rows_b <= rows_a


class OfflineVerifier:
    """Decide preserve / correct / ambiguous / unanswerable without an LLM."""

    name = "offline"

    def __init__(self, operating_point: str = "balanced", question_model: str | None = None, embeddings: str = "auto",
                 templates: str = "on", lexical_model: str | None = None, cascade: float | str = 0.9,
                 forms: str = "on") -> None:
        if operating_point not in OPERATING_POINTS:
            raise ConfigError(f"Unknown operating point {operating_point!r}; choose one of {', '.join(OPERATING_POINTS)}.")
        if embeddings not in ("auto", "on", "off"):
            raise ConfigError("embeddings must be auto, on or off.")
        if templates not in ("on", "off"):
            raise ConfigError("templates must be on or off.")
        if forms not in ("on", "off"):
            raise ConfigError("forms must be on or off.")
        self.use_templates = templates == "on"
        self.use_forms = forms == "on"
        self.operating_point = operating_point
        self.policy = OPERATING_POINTS[operating_point]
        try:
            cascade = float(cascade)
        except ValueError:
            raise ConfigError(f"cascade is a probability between 0.5 and 1 (1 = always use MiniLM); got {cascade!r}.") from None
        self.classifier = shared_classifier(question_model, embeddings, lexical_model, cascade)

    def describe(self) -> dict[str, Any]:
        return {"method": self.name, "operating_point": self.operating_point, "policy": self.policy.__dict__,
                "question_model": str(self.classifier.path), "question_model_sha256": self.classifier.sha256,
                "features": self.classifier.name, "templates": self.use_templates, "cascade": self.classifier.cascade,
                "forms": self.use_forms}

    def verify(self, case: Case) -> Verdict:
        assessment = self.classifier.assess(case.question, case.sql)
        ctx, findings = run_checks(case.question, case.sql, case.context)
        abstained = any(f.check == "abstained" for f in findings)
        # Past the highest bar the question is refused whatever the SQL does: no need to look for a better SQL.
        refused = assessment.category["ambiguous"] + assessment.category["unanswerable"] >= self.policy.abstain_if_known_form
        search = not abstained and not refused
        known = self._known_form(ctx) if self.use_templates and search else None
        fixed = known if known is not None and known.how == "template" else None
        if fixed is None and known is None and self.use_forms and search:
            reading = self._paraphrased_form(ctx)
            if reading is not None and reading.how == "form":
                fixed = reading
            elif reading is not None:
                known = reading  # the candidate answers as the known form it paraphrases: evidence it is answerable
        if fixed is None and self.policy.repair and search and any(f.suggestion for f in findings):
            fixed = self._try_repair(ctx)
        # The evidence is what the SQL we would return does: the repaired one when there is one.
        outcome = "failed" if abstained else ("rows" if fixed else _outcome(ctx))
        threshold = self.policy.threshold(outcome)
        if known is not None:
            threshold = max(threshold, self.policy.abstain_if_known_form)
        amb, una = assessment.category["ambiguous"], assessment.category["unanswerable"]
        details: dict[str, Any] = {
            "question": {"category": assessment.category, "model": assessment.model,
                         "cues": {k: v for k, v in assessment.cues.__dict__.items() if v}},
            "sql": {**summary(findings), "outcome": outcome}, "threshold": threshold,
            "known_form": None if known is None else known.how,
        }
        if amb + una >= threshold:  # not answerable, then the likelier of the two
            category = "unanswerable" if una >= amb else "ambiguous"
            subtype = assessment.best_subtype(category)
            message = refusal_message(subtype, assessment) if category == "unanswerable" else clarifying_message(subtype, assessment)
            if abstained:
                message = "The text-to-SQL model produced no query for this question. " + message
            return Verdict(category, subtype=subtype, message=message, findings=findings, confidence=round(amb + una, 4), details=details)
        if abstained:
            subtype = assessment.best_subtype("unanswerable")
            return Verdict("unanswerable", subtype=subtype, findings=findings, confidence=round(una, 4), details=details,
                           message="The text-to-SQL model produced no query for this question. " + refusal_message(subtype, assessment))
        confidence = round(assessment.category["answerable"], 4)
        if fixed is not None:
            details["repair"] = {"fixed": fixed.how, "remaining": summary(fixed.findings)}
            if fixed.source:
                details["repair"]["known_question"] = fixed.source
            if fixed.how == "template":
                message = "Replaced by the SQL of a known question of the same form, which answers differently and runs cleanly."
            elif fixed.how == "form":
                message = "Replaced by the SQL of a known question this one paraphrases, which answers differently and runs cleanly."
            else:
                message = f"Corrected ({fixed.how})."
            return Verdict("correct", sql=fixed.sql, message=message, findings=findings, confidence=confidence, details=details)
        message = "No problem found." if not findings else "Kept; the checks raised: " + "; ".join(f.message for f in findings[:3])
        return Verdict("preserve", sql=case.sql, message=message, findings=findings, confidence=confidence, details=details)

    @staticmethod
    def _try_repair(ctx: SqlContext) -> Fix | None:
        """Keep a repair only if it executes, returns rows, passes the checks and changes the answer."""
        sql = repair(ctx)
        if sql is None:
            return None
        clean = _clean_run(ctx.question, sql, ctx.db)
        if clean is None:
            return None
        new_ctx, new_findings = clean
        old = ctx.execution
        if isinstance(old, Result) and isinstance(new_ctx.execution, Result) and old.rows == new_ctx.execution.rows:
            return None
        return Fix(sql, new_findings, ", ".join(sorted({f.check for f in ctx.findings if f.suggestion})))

    def _paraphrased_form(self, ctx: SqlContext) -> Fix | None:
        """The known form the question paraphrases, when its SQL runs cleanly with rows and the next-best form
        (if as close) answers the same: ``"form"`` (a correction) when the candidate answers differently,
        ``"form-agrees"`` when it answers the same or differs only in tie handling."""
        index = load_forms(ctx.db.db_id)
        readings = index.read(ctx.question, ctx.db, top=2) if index is not None else []
        if not readings:
            return None
        best = readings[0]
        clean = _clean_run(ctx.question, best.sql, ctx.db)
        if clean is None:
            return None
        f_ctx, f_findings = clean
        close = len(readings) > 1 and readings[1].similarity >= best.similarity - 0.05
        if close and not _answers_like(readings[1].sql, f_ctx).match:
            return None  # two forms fit about equally and disagree: no opinion
        source = f"{best.form.readable} (similarity {best.similarity:.2f})"
        same = _answers_like(ctx.sql, f_ctx)
        if same.match or _nested(same.pred_answer, same.gold_answer):
            return Fix(best.sql, f_findings, "form-agrees", source)
        return Fix(best.sql, f_findings, "form", source)

    @staticmethod
    def _known_form(ctx: SqlContext) -> Fix | None:
        """The template bank's opinion: None when the question fits no known form (or several that disagree);
        else the form's SQL and its findings, with ``"template"`` when the candidate answers differently
        (a correction) or ``"agrees"`` when it answers the same."""
        bank = load_bank(ctx.db.db_id)
        if bank is None:
            return None
        runs = [run for run in (_clean_run(ctx.question, sql, ctx.db) for sql in bank.candidates(ctx.question)) if run]
        if len(runs) != 1:
            return None
        t_ctx, t_findings = runs[0]
        if _answers_like(ctx.sql, t_ctx).match:
            return Fix(t_ctx.sql, t_findings, "agrees")
        return Fix(t_ctx.sql, t_findings, "template")


@register_method("offline", "no LLM: SQL checks on the database + question classifier + local repair")
def _make_offline(model: str | None = None, **options: Any) -> OfflineVerifier:
    if model:
        raise ConfigError("offline uses no LLM; drop --model (use --method hybrid for an LLM on the hard cases).")
    allowed = {"operating_point", "question_model", "embeddings", "templates", "lexical_model", "cascade", "forms"}
    unknown = set(options) - allowed
    if unknown:
        raise ConfigError(f"offline options are {', '.join(sorted(allowed))}; got {', '.join(sorted(unknown))}.")
    return OfflineVerifier(**options)
