"""The offline verifier: SQL checks against the database, the question classifier, known question forms, local repair,
and a decision policy with named operating points. No LLM; milliseconds per item.

:meth:`OfflineVerifier.gather` collects the :class:`~ehrguard.verify.offline.evidence.Evidence` (it reads the
database, the models and the banks); :func:`~ehrguard.verify.offline.policy.decide` turns it into the verdict.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from sqlglot import exp

from ehrguard.config import setting, switch_setting
from ehrguard.db.engine import Result
from ehrguard.errors import ConfigError, DatabaseError
from ehrguard.evaluation.execution_match import answers_match, canonical_answer
from ehrguard.profiles import DatabaseProfile
from ehrguard.verify.checks import Checked, repair, run_checks
from ehrguard.verify.checks.base import EXECUTION_MAX_ROWS, EXECUTION_TIMEOUT_S
from ehrguard.verify.checks.grounding import held_kinds
from ehrguard.verify.checks.values import literal_comparisons
from ehrguard.verify.methods import Case, DatabaseContext, register_method
from ehrguard.verify.offline.calibration import calibration_file, load_calibration
from ehrguard.verify.offline.evidence import Evidence, KnownQuestion, Outcome, Repair
from ehrguard.verify.offline.forms import YES_NO_SQL, load_forms, stated_time_phrase
from ehrguard.verify.offline.policy import DOUBTS, OPERATING_POINTS, Policy, blocking, clarifying_message, decide, refusal_message
from ehrguard.verify.offline.question import shared_classifier
from ehrguard.verify.offline.templates import load_bank
from ehrguard.verify.verdict import Verdict

__all__ = ["OPERATING_POINTS", "OfflineVerifier", "Policy", "clarifying_message", "decide", "refusal_message"]


@dataclass(frozen=True)
class Comparison:
    """Whether one query answers as another, from what each returns as written (canonical rows)."""

    match: bool
    answer: list[list[str]] | None
    other: list[list[str]] | None


def _as_written(result: Result | DatabaseError) -> list[list[str]] | None:
    return canonical_answer(result.rows) if isinstance(result, Result) and not result.truncated else None


def _answers_like(run: Result | DatabaseError, other: Checked) -> Comparison:
    """Does a query that returned ``run`` answer as ``other`` (already executed by its checks) does?

    Both are compared as written: no DISTINCT is added to either (the benchmarks' DISTINCT alignment is for
    scoring against a gold query; here it would change what a query returns, e.g. break an ORDER BY on a column
    not selected). The rows are compared with the answer rule of the database's profile.
    """
    mine, theirs = _as_written(run), _as_written(other.ctx.execution)
    if mine is None or theirs is None:
        return Comparison(False, mine, theirs)
    return Comparison(answers_match(mine, theirs, other.ctx.sql, other.ctx.db.db_id), mine, theirs)


def _run(sql: str, db: DatabaseContext) -> Result | DatabaseError:
    try:
        return db.db.execute(sql, timeout_s=EXECUTION_TIMEOUT_S, max_rows=EXECUTION_MAX_ROWS)
    except DatabaseError as exc:
        return exc


def _clean_run(question: str, sql: str, db: DatabaseContext) -> Checked | None:
    """A replacement SQL's checks, when it runs with rows and no check finds an error; else None."""
    checked = run_checks(question, sql, db)
    if any(f.severity == "error" for f in checked.findings) or not checked.has_rows:
        return None
    return checked


def _nested(a: list[list[str]] | None, b: list[list[str]] | None) -> bool:
    """One answer's rows all among the other's: the two queries differ only in how they break ties
    (the last event vs every event at the last time), not a wrong answer to correct."""
    if not a or not b:
        return False
    rows_a, rows_b = {tuple(r) for r in a}, {tuple(r) for r in b}
    return rows_a <= rows_b or rows_b <= rows_a


def _says_yes(rows: list[list[str]]) -> bool:
    """What rows say to a yes/no question: yes when some row's first value is there and is not 0 (a list of procedures
    says yes; no rows, NULL or a count of 0 say no)."""
    return any(row and row[0] not in ("", "0", "0.0", "None", "null", "false", "False") for row in rows)


def _same_yes_no(comparison: Comparison, known_sql: str) -> bool:
    """A known yes/no query (``COUNT(*)>0``) and the candidate say the same when the candidate's rows do: "has the
    patient undergone any procedure?" answered by the (empty) list of them is "no", as the known query's 0 is."""
    if comparison.answer is None or comparison.other is None or not YES_NO_SQL.match(known_sql):
        return False
    return _says_yes(comparison.answer) == _says_yes(comparison.other)


def _string_comparisons(tree: exp.Expression | None) -> list[tuple[str, str, bool]]:
    """(column name, string, is a LIKE pattern) of each comparison of a column with a string in a parse tree."""
    if tree is None:
        return []
    found = literal_comparisons(tree, {}, (exp.EQ, exp.Like, exp.ILike, exp.In))
    return [(column, literal.this.lower(), isinstance(literal.parent, (exp.Like, exp.ILike))) for _, column, literal in found]


def _like(pattern: str, value: str) -> bool:
    regex = "".join(".*" if c == "%" else "." if c == "_" else re.escape(c) for c in pattern)
    return re.fullmatch(regex, value, re.DOTALL) is not None


def reads_value_otherwise(candidate: exp.Expression | None, known: exp.Expression | None) -> bool:
    """Does the candidate read a value the known query compares in another way: the same string from another column
    (a drug the known query takes from the ICU inputs, the candidate from the prescriptions), or through a pattern
    that takes it and its variants (``LIKE 'septic shock%'`` for ``= 'septic shock'``)? Then the two answer
    differently because they read the question differently, not because the candidate made a mistake a known question
    can repair. Both are parse trees (each query's own, as its checks read it)."""
    compared = [(column, value) for column, value, like in _string_comparisons(known) if not like]
    if not compared:
        return False
    for column, text, like in _string_comparisons(candidate):
        for known_column, value in compared:
            if like and text != value and _like(text, value):
                return True
            if not like and text == value and column != known_column:
                return True
    return False


class OfflineVerifier:
    """Decide preserve / correct / ambiguous / unanswerable without an LLM."""

    name = "offline"

    def __init__(self, operating_point: str = "balanced", question_model: str | None = None, embeddings: str = "auto",
                 templates: str = "on", lexical_model: str | None = None, cascade: float | str = 0.9,
                 forms: str = "on", calibration: str | None = None) -> None:
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
        calibration = calibration or setting("calibration") or "auto"
        # "default": the SCARE-fitted calibration whatever the database's profile names (auto: the profile's, if any)
        self._calibration_choice = calibration
        base = calibration_file(calibration)
        self.calibration = None if base is None else load_calibration(base)
        if calibration not in ("auto", "off", "default") and self.calibration is None:
            raise ConfigError(f"No calibration file at {calibration}; fit one with: "
                              f"ehrguard train calibration RUN_DIR ... --out {calibration}")
        self.calibration_source = "off" if calibration == "off" else (calibration if calibration != "auto" else "shipped")
        self.policy = replace(OPERATING_POINTS[operating_point], calibration=self.calibration)
        self._layout_policies: dict[Path, Policy] = {}  # a profile's calibration file -> the policy with it
        try:
            cascade = float(cascade)
        except ValueError:
            raise ConfigError(f"cascade is a probability between 0.5 and 1 (1 = always use MiniLM); got {cascade!r}.") from None
        self.classifier = shared_classifier(question_model, embeddings, lexical_model, cascade)

    def describe(self) -> dict[str, Any]:
        policy = {k: v for k, v in self.policy.__dict__.items() if k != "calibration"}
        calibration = None if self.calibration is None else {"source": self.calibration_source, "fitted_on": self.calibration.fitted_on,
                                                             "bar": self.calibration.bar(self.policy.target_risk)}
        return {"method": self.name, "operating_point": self.operating_point, "policy": policy, "calibration": calibration,
                "question_model": str(self.classifier.path), "question_model_sha256": self.classifier.sha256,
                "features": self.classifier.name, "templates": self.use_templates, "cascade": self.classifier.cascade,
                "forms": self.use_forms, "banks": self._banks()}

    def _banks(self) -> dict[str, str] | str:
        """The compiled question banks this verifier reads, by checksum ("missing" or "altered" when a file is not as
        shipped; "off" when known questions are not used): a run records what it ran with, not a flag."""
        if not (self.use_templates or self.use_forms) or not switch_setting("template_bank"):
            return "off"
        from ehrguard.verify.offline.artifacts import bank_status

        return {name: entry["sha256"] if entry["state"] == "ok" else entry["state"] for name, entry in bank_status().items()}

    def verify(self, case: Case) -> Verdict:
        return decide(self.gather(case), self.policy_for(case.context.profile))

    def policy_for(self, profile: DatabaseProfile) -> Policy:
        """The policy for a database: with the calibration its profile names (fitted for its layout), unless this
        verifier was given one (a file, or off)."""
        path = calibration_file(self._calibration_choice, profile.calibration)
        if path is None or path == calibration_file(self._calibration_choice):
            return self.policy
        if path not in self._layout_policies:
            fitted = load_calibration(path)
            if fitted is None:
                raise ConfigError(f"The profile {profile.db_id!r} names the calibration {profile.calibration!r}, but there is no "
                                  f"file at {path}; fit one with: ehrguard train calibration RUN_DIR ... --out {path}")
            self._layout_policies[path] = replace(self.policy, calibration=fitted)
        return self._layout_policies[path]

    def gather(self, case: Case) -> Evidence:
        """The evidence about one case: the question's assessment, the candidate's checks, the known question it
        fits (template bank first, then the form bank) and a local repair, each looked for only when it can matter."""
        assessment = self.classifier.assess(case.question, case.sql, held_kinds(case.context))
        checked = run_checks(case.question, case.sql, case.context)
        no_query = any(f.check == "abstained" for f in checked.findings)
        search = not no_query and not self.policy.refuses_whatever_the_sql(assessment)
        known = self._template_opinion(checked) if self.use_templates and search else None
        if known is None and self.use_forms and search:
            known = self._form_opinion(checked)
        found_repair = None
        wants_repair = known is None or known.agrees or known.disputes or known.loose
        if wants_repair and self.policy.repair and search and any(f.suggestion for f in checked.findings):
            found_repair = self._repair(checked)
        outcome: Outcome = "failed" if no_query else checked.outcome  # type: ignore[assignment]
        return Evidence(case.sql, assessment, tuple(checked.findings), outcome, no_query=no_query, known=known,
                        repair=found_repair, searched=search)

    @staticmethod
    def _repair(checked: Checked) -> Repair | None:
        """Keep a repair only if it executes, returns rows, passes the checks and changes the answer."""
        sql = repair(checked)
        if sql is None:
            return None
        clean = _clean_run(checked.ctx.question, sql, checked.ctx.db)
        if clean is None:
            return None
        old, new = checked.ctx.execution, clean.ctx.execution
        if isinstance(old, Result) and isinstance(new, Result) and old.rows == new.rows:
            return None
        return Repair(sql, tuple(clean.findings), tuple(sorted({f.check for f in checked.findings if f.suggestion})))

    @staticmethod
    def _form_opinion(checked: Checked) -> KnownQuestion | None:
        """The known form the question paraphrases, when its SQL runs cleanly with rows and the next-best form
        (if as close) answers the same; it agrees when the candidate answers the same or differs only in tie handling.
        A derived reading (:class:`~ehrguard.verify.offline.forms.Swap`) is heard only when no known question fits,
        and only when it agrees."""
        ctx = checked.ctx
        index = load_forms(ctx.db.db_id)
        readings = index.read(ctx.question, ctx.db, top=3) if index is not None else []
        # Known questions speak first; a derived reading (a swap of one meaning word) only when no known one fits.
        readings = [r for r in readings if not r.derived][:2] or readings[:1]
        if not readings:
            return None
        best = readings[0]
        clean = _clean_run(ctx.question, best.sql, ctx.db)
        if clean is None:
            return None
        close = len(readings) > 1 and readings[1].similarity >= best.similarity - 0.05
        if close and not _answers_like(_run(readings[1].sql, ctx.db), clean).match:
            return None  # two forms fit about equally and disagree: no opinion
        same = _answers_like(ctx.execution, clean)
        agrees = same.match or _nested(same.answer, same.other)
        if not agrees and (best.derived or reads_value_otherwise(ctx.tree, clean.ctx.tree) or _same_yes_no(same, best.sql)):
            # a query no known question asks (a swap of one meaning word) may vouch, never replace; nor may a known
            # query that reads the question's value otherwise than the candidate does (a choice, not a mistake); rows
            # that say what a known yes/no query says are no mistake either, but too cheap an agreement to vouch
            return None
        # A paraphrase overrules only a candidate the checks fault, or as the known question word for word (values aside):
        # against a candidate nothing faults, a loosely similar question ("how many patients were hospitalized this
        # year" for "... had a head CT this year") is a second reading that disagrees, not a correction.
        # A looser one overrules a faulted candidate only when its own SQL clears the candidate's faults (the same missing
        # route filter in both is no correction), and a certain local repair of the candidate comes first (Evidence).
        faults = {f.check for f in blocking(checked.findings)} - DOUBTS
        exact = best.similarity >= 1.0
        overrules = agrees or exact or (bool(faults) and not faults & {f.check for f in blocking(clean.findings)})
        return KnownQuestion("form", agrees, best.sql, tuple(clean.findings), f"{best.form.readable} (similarity {best.similarity:.2f})",
                             overrules=overrules, loose=not exact, note=time_reading(ctx.question))

    @staticmethod
    def _template_opinion(checked: Checked) -> KnownQuestion | None:
        """The template bank's opinion: None when the question fits no known form (or several that disagree);
        else the form's SQL and its findings, agreeing when the candidate answers the same."""
        ctx = checked.ctx
        bank = load_bank(ctx.db.db_id)
        if bank is None:
            return None
        runs = [run for run in (_clean_run(ctx.question, sql, ctx.db) for sql in bank.candidates(ctx.question)) if run]
        if len(runs) != 1:
            return None
        fit = runs[0]
        same = _answers_like(ctx.execution, fit)
        if not same.match and (reads_value_otherwise(ctx.tree, fit.ctx.tree) or _same_yes_no(same, fit.ctx.sql)):
            return None
        return KnownQuestion("template", same.match, fit.ctx.sql, tuple(fit.findings), note=time_reading(ctx.question))


def time_reading(question: str) -> str:
    """How the known questions read a period people also read otherwise: "last year" (or month, week) is the calendar
    period before the database's "now" in the EHRSQL conventions, where many would mean the past 12 months."""
    stated = stated_time_phrase(question)
    if stated is None or stated[0].kind != "calendar" or stated[0].amount != 1:
        return ""
    unit = stated[0].unit
    return (f"It reads '{stated[1]}' as the calendar {unit} before this database's 'now' (its convention), not the {unit} "
            f"up to now; ask for 'the past {unit}' or a date range if that is what you mean.")


@register_method("offline", "no LLM: SQL checks on the database + question classifier + local repair",
                 options=("operating_point", "question_model", "embeddings", "templates", "lexical_model", "cascade", "forms",
                          "calibration"),
                 refuse_model="offline uses no LLM; drop --model (use --method hybrid for an LLM on the hard cases).")
def _make_offline(model: str | None = None, **options: Any) -> OfflineVerifier:
    return OfflineVerifier(**options)
