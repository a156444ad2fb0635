"""Can these records answer the question at all? Grounding the question's subject in the database's schema.

An EHR database holds what was recorded about stays: demographics, diagnoses, procedures, medications, labs,
vitals, inputs and outputs, costs. Some questions ask about a kind of record that a given database does not hold,
whatever the SQL: allergies (eICU has an allergy table, the EHRSQL MIMIC-IV schema has none), immunizations, family
or social history, contact details, the staff who treated a patient, appointments. Others ask what no record holds:
events after the database's "now", advice, or a judgement of whether a treatment worked.

The kinds of record are the resource kinds of an EHR interchange model (HL7 FHIR: AllergyIntolerance, Immunization,
FamilyMemberHistory, Patient.telecom/address, Practitioner, Appointment, DocumentReference), each with the words a
question names it by and the names a schema would give its table or column. A kind counts as held when a table or
column name carries one of those names (a diagnosis code for "allergy status" is a diagnosis, not an allergy
record). General English and EHR knowledge; nothing here was taken from a benchmark's questions.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from sqlglot import exp

from ehrguard.db.schema import Schema
from ehrguard.verify.checks.base import CheckResult, SqlContext, found
from ehrguard.verify.offline.lexicon import RECORD_KINDS, RecordKind, cue
from ehrguard.verify.verdict import Finding

if TYPE_CHECKING:
    from ehrguard.verify.methods import DatabaseContext

# After the records end: the database's "now" is the last moment anything was recorded.
# "Will you show me ..." is a request, not the future.
_FUTURE = cue(r"(?<!\bi )(?<!\bwe )\bwill (?!you\b|u\b)(?:\w+ ){0,3}?(?:be|get|need|have|require|develop|return|die|"
              r"survive|come|go|stay|receive|undergo|recover|improve|leave)\b|\bgoing to (?:be|get|need|have|die|develop|return)\b"
              r"|\btomorrow\b|\bnext (?:week|month|year)\b|\bupcoming\b"
              r"|\bin the (?:near )?future\b|\bfrom now on\b")
# Advice and judgement: what should be done, whether a treatment worked, how the patient is doing.
_ADVICE = cue(r"\bshould (?:i|we|you|he|she|they|the (?:patient|doctor|team|nurse))\b|\bought (?:i|we|he|she) to\b|\bought to\b"
              r"|\bshould (?:the )?patient(?: \d+)? (?:be|get|receive|start|stop|continue|have|go)\b"
              r"|\bis (?:the )?patient(?: [\d-]+)? (?:getting (?:better|worse)|improving|deteriorating|recovering)\b"
              r"|\bis it (?:safe|ok|okay|advisable|wise|appropriate|reasonable|necessary) to\b"
              r"|\b(?:would|do|can|could) you (?:recommend|suggest|advise)\b|\bwhat (?:do|would) you (?:recommend|suggest|advise)\b"
              r"|\bdid (?:the|this|that|his|her|their) (?:\w+ ){0,3}(?:work|help)\b|\bwas (?:the|this|that|his|her) (?:[\w-]+ ){0,5}"
              r"(?:effective|successful|worth it|the right (?:choice|decision|call|thing|treatment))\b"
              r"|\bhow (?:is|are|was|were)(?: [\w'-]+){1,6} doing\b|\bprognosis\b"
              # what should be given: "what dose should unit stay 1063405 get", "should be started on"
              r"|\bshould (?:[\w'-]+ ){1,4}?(?:get|receive|be given|be started|be switched|be stopped|start|stop|continue|take)\b"
              r"|\bshould be (?:given|started|stopped|used|administered|prescribed|increased|decreased|reduced|changed)\b"
              r"|\bbest (?:treatment|course of action|option)\b")


def held_kinds(db: DatabaseContext) -> frozenset[str]:
    """The kinds of record this database's schema holds (a table or column name carries one of the names a kind is
    kept under), read once per open database."""

    def read() -> frozenset[str]:
        names = _names(db.schema)
        return frozenset(kind.name for kind in RECORD_KINDS if any(s in n for s in kind.schema for n in names))

    return db.derived("held_record_kinds", read)


def _held(ctx: SqlContext, kind: RecordKind) -> bool:
    return kind.name in held_kinds(ctx.db)


def check_grounding(ctx: SqlContext) -> CheckResult:
    """The kind of record the question asks about exists in this database; the question is about the records at all.
    The names the SQL looks for are masked first ("influenza vaccine" as a drug is a prescription, not an immunization
    record)."""
    from ehrguard.verify.checks.alignment import masked_question

    question = masked_question(ctx)
    m = _ADVICE.search(question)
    if m:
        return found(Finding("asks_judgement", "error", f"The question asks for advice or a judgement ('{m.group(0)}').",
                             refuse="This asks for advice or a judgement; the records hold what was done and measured, "
                                    "not what should be done or whether it worked."))
    m = _FUTURE.search(question)
    if m:
        now = ctx.db.profile.now
        until = f" (they end at {now})" if now else ""
        return found(Finding("asks_future", "error", f"The question asks about the future ('{m.group(0)}').",
                             refuse=f"This asks about the future; the records hold only what has already happened{until}."))
    unread = []
    for kind in RECORD_KINDS:
        hit = kind.cue.search(question if kind.masked else ctx.question)
        if hit and _looked_up(ctx, hit.group(0)):
            continue  # the query looks the word up as a value ("smoking cessation" a treatment, "anaphylaxis" a diagnosis)
        if hit and not _held(ctx, kind):
            return found(Finding("not_in_records", "error", f"The database has no {kind.name} ('{hit.group(0)}').",
                                 refuse=f"These records hold no {kind.name}, so they cannot answer this question."))
        if hit and ctx.tree is not None and not _reads(ctx, kind):
            where = sorted(n for n in _names(ctx.db.schema) if any(s in n for s in kind.schema))
            unread.append(Finding("kind_not_read", "warning", f"The question asks about {kind.name} ('{hit.group(0)}'); the query "
                                  f"never reads them ({', '.join(where[:3])})."))
    return found(*unread)


def _names(schema: Schema) -> list[str]:
    """Every table and column name of the schema, in lower case."""
    return [t.name.lower() for t in schema.tables] + [c.name.lower() for t in schema.tables for c in t.columns]


def _looked_up(ctx: SqlContext, phrase: str) -> bool:
    """A word of the phrase (four letters or more) is inside a text the query compares with."""
    if ctx.tree is None:
        return False
    texts = [lit.this.lower() for lit in ctx.tree.find_all(exp.Literal) if lit.is_string]
    words = [w[:6] for w in re.findall(r"[a-z]{4,}", phrase.lower())]
    return any(w in t for w in words for t in texts)


def _reads(ctx: SqlContext, kind: RecordKind) -> bool:
    """The query reads a table or column named for the kind of record (``allergy``, ``insurance``)."""
    assert ctx.tree is not None
    names = [t.name.lower() for t in ctx.tree.find_all(exp.Table)] + [c.name.lower() for c in ctx.tree.find_all(exp.Column)]
    return any(s in n for s in kind.schema for n in names)
