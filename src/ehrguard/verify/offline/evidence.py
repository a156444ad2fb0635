"""What the offline verifier gathers about one case, as typed objects: the input of its decision.

:meth:`~ehrguard.verify.offline.verifier.OfflineVerifier.gather` fills an :class:`Evidence`
(it reads the database, the question models and the banks); :func:`~ehrguard.verify.offline.policy.decide`
turns it into a verdict without touching anything else, so every rule of the policy can be
tested from a table of evidence.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from ehrguard.verify.checks import summary
from ehrguard.verify.offline.question import QuestionAssessment
from ehrguard.verify.verdict import Finding

Outcome = Literal["rows", "empty", "failed"]
"""What a SQL did on the database: returned rows, ran with nothing (or only NULL), did not run (or there was no query)."""

FixKind = Literal["template", "form", "repair"]
"""Where a replacement SQL comes from: a known question of the same form word for word (the template bank), a known
question the question paraphrases (the form bank), or local repair of what the checks found."""

KnownSource = Literal["template", "form"]


@dataclass(frozen=True)
class KnownQuestion:
    """A known, checked question the question fits, whose SQL runs cleanly with rows here.

    ``agrees``: the candidate answers as that SQL does (evidence the candidate is right), else the
    known SQL is a correction, when it ``overrules`` the candidate; a disagreement that does not
    (a loose paraphrase against a candidate no check faults) only keeps the candidate from being
    verified. ``readable``: for a paraphrased form, the known question as people read it, with how
    close the wording is.
    """

    source: KnownSource
    agrees: bool
    sql: str
    findings: tuple[Finding, ...]
    readable: str = ""
    overrules: bool = True
    loose: bool = False  # a paraphrase, not the known question word for word: a certain local repair comes first
    note: str = ""  # how it reads a phrase people read otherwise ("last year": the calendar year), said with a correction

    @property
    def disputes(self) -> bool:
        """It answers otherwise but may not replace the candidate: two readings disagree and neither is checked wrong."""
        return not self.agrees and not self.overrules


@dataclass(frozen=True)
class Repair:
    """The candidate with the edits the checks proposed: it runs cleanly with rows and answers differently."""

    sql: str
    findings: tuple[Finding, ...]
    answers: tuple[str, ...]  # the checks whose findings it answers


@dataclass(frozen=True)
class Replacement:
    """The SQL the verifier would return instead of the candidate, and where it comes from."""

    kind: FixKind
    sql: str
    findings: tuple[Finding, ...]
    readable: str = ""  # "form": the known question it paraphrases
    answers: tuple[str, ...] = ()  # "repair": the checks it answers
    note: str = ""  # a known question's reading of the question, in words (KnownQuestion.note)

    @property
    def label(self) -> str:
        """How the verdict names the fix: the source, or for a repair the checks it answers."""
        return ", ".join(self.answers) if self.kind == "repair" else self.kind


@dataclass(frozen=True)
class Evidence:
    """Everything the offline decision rests on.

    ``candidate``: the SQL under review. ``question``: the classifier's assessment. ``findings`` and ``outcome``: what the checks found
    and what the candidate did. ``no_query``: the upstream model returned no SQL. ``known``: the
    known question the question fits, if any (the template bank's before the form bank's).
    ``repair``: a local repair, when it was looked for and one works. ``searched``: whether known
    questions and repairs were looked for at all (not when the question is refused whatever the SQL).
    """

    candidate: str
    question: QuestionAssessment
    findings: tuple[Finding, ...]
    outcome: Outcome
    no_query: bool = False
    known: KnownQuestion | None = None
    repair: Repair | None = None
    searched: bool = True

    @property
    def replacement(self) -> Replacement | None:
        """The SQL to return instead of the candidate: a known question's that answers differently and overrules it (a
        paraphrase only when no certain local repair of the candidate exists), else a repair."""
        if self.known is not None and not self.known.agrees and self.known.overrules and not (self.known.loose and self.repair):
            return Replacement(self.known.source, self.known.sql, self.known.findings, readable=self.known.readable,
                               note=self.known.note)
        if self.repair is not None:
            return Replacement("repair", self.repair.sql, self.repair.findings, answers=self.repair.answers)
        return None

    @property
    def vouches_answerable(self) -> bool:
        """A known question stands behind answering: a word-for-word template fit whether or not the candidate agrees
        with it, a paraphrased form only when the candidate answers as it does."""
        return self.known is not None and (self.known.source == "template" or self.known.agrees)

    @property
    def known_label(self) -> str | None:
        """The verdict's ``known_form`` detail: ``template`` (a template correction), ``agrees`` (the candidate answers
        as its template), ``form-agrees`` (as the form it paraphrases), or None."""
        if not self.vouches_answerable:
            return None
        assert self.known is not None
        if self.known.source == "template":
            return "agrees" if self.known.agrees else "template"
        return "form-agrees"

    def final_outcome(self) -> Outcome:
        """What the SQL we would return does: a replacement always runs with rows; no query is a failure."""
        if self.no_query:
            return "failed"
        return "rows" if self.replacement is not None else self.outcome

    def details(self, threshold: float) -> dict[str, Any]:
        """The verdict's ``details`` (what the REST API, the web app and run records show)."""
        a = self.question
        return {
            "question": {"category": a.category, "model": a.model, "cues": {k: v for k, v in a.cues.__dict__.items() if v}},
            "sql": {**summary(self.findings), "outcome": self.final_outcome()}, "threshold": threshold,
            "known_form": self.known_label,
            **({"disputed_by": self.known.readable} if self.known is not None and self.known.disputes else {}),
        }
