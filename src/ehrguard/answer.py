"""``ehrguard.answer()``: one question through the whole safety layer, the one pipeline every interface uses.

    question, with a candidate SQL, a model to write one, or neither
      -> generation    (:mod:`ehrguard.generation`, only when no SQL is given: with no model, the offline
                        reader writes it from the known question it paraphrases, or abstains with its reason;
                        with a model, the model writes it and the offline reading is a second opinion)
      -> verification  (:func:`ehrguard.verify`: preserve, correct, ambiguous or unanswerable)
      -> execution     (the verdict's SQL, read-only and row-capped, only for preserve / correct)
      -> audit entry   (:class:`ehrguard.audit.AuditLog`, one row per verification)
      -> receipt       (:mod:`ehrguard.receipt`: the decision, signed, stored in its audit entry)

The REST API (``/v1/verify``, ``/v1/ask``, so the web app too), the MCP tools and ``ehrguard verify``
call :func:`answer` and only map the :class:`Answer` to their response shapes.

A failure is part of the answer, not an exception: ``error`` holds the :class:`EhrguardError`
that stopped the pipeline, and the steps after it did not run (what is set shows how far it
got). :meth:`Answer.raise_for_error` raises it for callers that want the exception.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ehrguard.audit import AuditLog
from ehrguard.db import Result, is_postgres_url, named_database
from ehrguard.db.engine import Database
from ehrguard.db.postgres import redact_url
from ehrguard.errors import ConfigError, EhrguardError, LLMError
from ehrguard.receipt import make_receipt
from ehrguard.verify import Verdict, check_question_size, database_context, verify
from ehrguard.verify.methods import DatabaseContext

if TYPE_CHECKING:
    from ehrguard.generation import Generation, OfflineSql

# The verdicts whose SQL answers the question as it stands (the others ask back or refuse).
EXECUTED_ACTIONS = ("preserve", "correct")


@dataclass
class Answer:
    """What ehrguard did with one question.

    Attributes:
        question: the question, as asked.
        generation: the model's attempts at writing the SQL, when no SQL was given.
        verdict: the verifier's decision on the candidate SQL (given or generated).
        result: the rows of the verdict's SQL, when it was preserved or corrected and executed.
        audit_id: the id of the verification's audit entry, when an audit log was given.
        receipt: the signed record of the decision (:mod:`ehrguard.receipt`), for every answer with a verdict.
        error: what stopped the pipeline; the steps after it did not run.
        reading: the offline reader's reading of the question (the known question it read, its SQL and
            confidence, or why it abstained): the SQL's source when neither SQL nor a model was given, a
            second opinion on the model's SQL when a model wrote it.
        second_opinion: with a model, whether the offline reading answers as the model's SQL does
            (``agrees``, with the reading's known question and SQL); None when there was no reading to compare.
    """

    question: str
    generation: Generation | None = None
    verdict: Verdict | None = None
    result: Result | None = None
    audit_id: int | None = None
    receipt: dict[str, Any] | None = None
    error: EhrguardError | None = None
    reading: OfflineSql | None = None
    second_opinion: dict[str, Any] | None = None

    @property
    def generated_sql(self) -> str | None:
        """The SQL the model wrote (its last attempt), or None when SQL was given or none was written."""
        return self.generation.final_sql if self.generation is not None else None

    def raise_for_error(self) -> Answer:
        """This answer, or its error raised (as httpx's ``raise_for_status``)."""
        if self.error is not None:
            raise self.error
        return self

    def verdict_dict(self) -> dict[str, Any]:
        """The verdict in full, as the REST API returns it: every field, ``output``, the LLM usage and the audit entry's id."""
        verdict = self.require_verdict()
        out = verdict.to_dict()
        out["usage"] = {"llm_calls": verdict.llm_calls, "tokens": verdict.tokens}
        out["audit_id"] = self.audit_id
        out["receipt"] = self.receipt
        return out

    def verdict_summary(self) -> dict[str, Any]:
        """The verdict in brief, for agents (MCP): action, SQL, subtype, message and each finding's check, severity and message."""
        verdict = self.require_verdict()
        return {"action": verdict.action, "sql": verdict.sql, "subtype": verdict.subtype, "message": verdict.message,
                "status": verdict.status, "reason": verdict.reason,
                "findings": [{"check": f.check, "severity": f.severity, "message": f.message} for f in verdict.findings],
                "receipt": self.receipt}

    def result_dict(self) -> dict[str, Any] | None:
        """The executed rows (``columns``, ``rows``, ``truncated``), or None when nothing ran."""
        if self.result is None:
            return None
        return {"columns": self.result.columns, "rows": self.result.rows, "truncated": self.result.truncated}

    def to_dict(self) -> dict[str, Any]:
        """The SQL the model wrote, the verdict in full and the rows (the REST API's ``/v1/ask``). The error is not
        in it: check ``error`` (or call :meth:`raise_for_error`) first."""
        verdict = self.verdict_dict() if self.verdict is not None else None
        return {"generated_sql": self.generated_sql, "verdict": verdict, "result": self.result_dict(),
                "reading": self.reading.to_dict() if self.reading is not None else None, "second_opinion": self.second_opinion,
                "answered": self.answered, "message": self.message}

    @property
    def answered(self) -> bool:
        """The question got an answer to show: a preserved or corrected SQL that ran."""
        return self.verdict is not None and self.verdict.action in EXECUTED_ACTIONS and self.result is not None

    @property
    def message(self) -> str:
        """What the person reads first: the verdict's reason or clarifying question, or why nothing was answered."""
        if self.error is not None:
            return str(self.error).splitlines()[0] if str(self.error) else type(self.error).__name__
        if self.verdict is not None:
            return self.verdict.message or self.verdict.reason
        if self.reading is not None and self.reading.reason:
            return self.reading.reason
        return ""

    def require_verdict(self) -> Verdict:
        """The verdict; without one, the error that kept the verifier from deciding is raised."""
        if self.verdict is None:
            raise self.error or ValueError("This answer has no verdict.")
        return self.verdict


def answer(question: str, *, db: str | Path | Database | DatabaseContext, sql: str | None = None, model: str | None = None,
           method: str = "offline", verifier_model: str | None = None, operating_point: str | None = None,
           db_id: str | None = None, names_only: bool = False, execute: bool = True, max_rows: int = 1000,
           audit: AuditLog | None = None, caller: str = "local", interface: str = "python", audit_errors: bool = True,
           audit_execution: str | None = None, penalty: float | None = None) -> Answer:
    """Answer a question over an EHR database: write the SQL if none is given, verify it, run what the verifier allows.

    Args:
        question: the user's question, in plain language.
        db: a database file, the name of a built database in ``$EHRGUARD_DB_DIR``, or an open database.
        sql: the candidate SQL from any text-to-SQL model; without it, ``model`` writes it.
        model: ``provider/model`` that writes the SQL when none is given; with neither, the offline reader writes it
            (:mod:`ehrguard.generation.offline`) or abstains.
        method: the verification method (``offline``, ...; see ``ehrguard bench methods``).
        verifier_model: ``provider/model`` for LLM verification methods.
        operating_point: offline: ``balanced`` (default), ``safety-first`` or ``preserve-first``.
        db_id: the database's conventions (``mimic_iv``, ``eicu``, ``mimicsql``); guessed from the file name.
        names_only: ``db`` must be the name of a built database, never a path (network callers never name server files).
        execute: run the verdict's SQL when it is preserved or corrected; False verifies only.
        max_rows: the row cap of that execution.
        audit: where the audit entries go; None writes none.
        caller: who asked, for the audit log (a token's id, never the token).
        interface: the interface asking, for the audit log (``api``, ``mcp``, ``cli``, ...).
        audit_errors: also record a verification that could not run, with its error.
        audit_execution: the interface name of an own audit entry for each executed query (the MCP
            server writes ``mcp-run``); None records executions in no entry of their own.
        penalty: how much worse a wrong answer is than none (EHRSQL-2024's c): the offline reader answers only above
            the bar chosen for it (default 10).

    Returns:
        An :class:`Answer`. A failure before there is SQL to verify (the database cannot be opened,
        a model call fails, the model writes no SQL) is returned and not audited; a candidate SQL
        that could not be verified is audited with its error (unless ``audit_errors`` is False).

    Examples:
        >>> a = answer("What is the gender of patient 10004235?", db="mimic_iv",
        ...            sql="SELECT gendr FROM patient WHERE subject_id = 10004235")  # doctest: +SKIP
        >>> a.verdict.action, a.result.rows  # doctest: +SKIP
        ('correct', [('F',)])
    """
    options = {"operating_point": operating_point} if operating_point else {}
    log = _Entries(audit, caller, interface, _label(db), question, audit_errors, audit_execution)
    started = time.perf_counter()
    try:
        check_question_size(question)
        target = _target(db, names_only, db_id)
    except EhrguardError as exc:
        if sql is not None:  # a candidate SQL that could not be verified is recorded; a question without one is not
            log.unverified(sql, exc, started)
        return Answer(question, error=exc)
    generation = reading = second = None
    if sql is None:
        written = _write(question, target, db_id, model, penalty, log, started, options)
        if isinstance(written, Answer):
            return written
        sql, generation, reading = written
        started = time.perf_counter()
    try:
        verdict = verify(question, sql, db=target, method=method, model=verifier_model, db_id=db_id, **options)
    except EhrguardError as exc:
        log.unverified(sql, exc, started)
        return Answer(question, generation, error=exc, reading=reading)
    if generation is not None and reading is not None:
        verdict, second = second_opinion(verdict, reading, database_context(target, db_id))
    done = Answer(question, generation, verdict, audit_id=log.verified(sql, verdict, started), reading=reading, second_opinion=second)
    context = database_context(target, db_id)
    database = context.db
    if execute and verdict.action in EXECUTED_ACTIONS:
        assert verdict.sql is not None  # a preserve / correct verdict always carries its SQL
        try:
            done.result = database.execute(verdict.sql, max_rows=max_rows)
        except EhrguardError as exc:
            done.error = exc
        else:
            log.executed(sql, verdict, done.result)
    try:
        done.receipt = make_receipt(done, candidate_sql=sql, database=database, db_id=context.db_id, method=method,
                                    interface=interface, options=options)
    except EhrguardError as exc:  # the deployment's receipt key cannot be read
        done.error = done.error or exc
    else:
        log.receipt(done)
    return done


@dataclass(frozen=True)
class _Entries:
    """The audit entries of one call, all in one place (with no log, none are written)."""

    log: AuditLog | None
    caller: str
    interface: str
    db: str
    question: str
    errors: bool  # record a verification that could not run
    execution: str | None  # the interface name of an executed query's own entry

    def verified(self, sql: str, verdict: Verdict, started: float) -> int | None:
        if self.log is None:
            return None
        return self.log.record_verdict(verdict, caller=self.caller, interface=self.interface, db=self.db, question=self.question,
                                       sql=sql, started=started)

    def unverified(self, sql: str, exc: EhrguardError, started: float) -> None:
        if self.log is not None and self.errors:
            self.log.record(caller=self.caller, interface=self.interface, db=self.db, question=self.question, candidate_sql=sql,
                            error=f"{type(exc).__name__}: {exc}", duration_ms=1000 * (time.perf_counter() - started))

    def not_read(self, reading: OfflineSql, started: float) -> int | None:
        """A question the offline reader did not answer: recorded too, with why (nothing asked is lost)."""
        if self.log is None:
            return None
        return self.log.record(caller=self.caller, interface=self.interface, db=self.db, question=self.question, status="abstained",
                               reason=reading.reason, message=reading.reason, duration_ms=1000 * (time.perf_counter() - started))

    def receipt(self, done: Answer) -> None:
        if self.log is not None and done.audit_id is not None and done.receipt is not None:
            self.log.attach_receipt(done.audit_id, done.receipt)

    def executed(self, sql: str, verdict: Verdict, result: Result) -> None:
        if self.log is not None and self.execution is not None:
            self.log.record(caller=self.caller, interface=self.execution, db=self.db, question=self.question, candidate_sql=sql,
                            executed_sql=verdict.sql, action=verdict.action, row_count=len(result.rows), result_values=result.rows)


def _target(db: str | Path | Database | DatabaseContext, names_only: bool, db_id: str | None) -> str | Path | DatabaseContext:
    """What to verify against: a built database's file (by name only, for network callers), a file, or one context
    for an open database (so that its schema and value index are built once for every step)."""
    if names_only:
        if not isinstance(db, str):
            raise TypeError("names_only takes the name of a built database.")
        return named_database(db)
    if isinstance(db, (str, Path)):
        return db
    return database_context(db, db_id)


def _label(db: str | Path | Database | DatabaseContext) -> str:
    """The database as the audit log names it: as the caller gave it (a URL without its password), or an open database's
    name."""
    if isinstance(db, (str, Path)):
        return redact_url(str(db)) if is_postgres_url(db) else str(db)
    return (db.db if isinstance(db, DatabaseContext) else db).name


def _generate(question: str, db: Database, model: str | None) -> Generation:
    """What the REST API and the MCP server have always asked of the model: one direct prompt, one refinement round."""
    if model is None:
        raise ConfigError("No model to write the SQL: pass sql=..., or model='provider/model'.")
    # Imported here: the model clients load asyncio and HTTP machinery that verification never needs.
    from ehrguard.generation import generate
    from ehrguard.llm import LLM

    return generate(question, db, LLM(model), mode="direct", refine=1, dialect=db.dialect)


def _write(question: str, target: str | Path | DatabaseContext, db_id: str | None, model: str | None, penalty: float | None,
           log: _Entries, started: float, options: dict[str, Any]) -> Answer | tuple[str, Generation | None, OfflineSql | None]:
    """The SQL to verify when none was given, with what wrote it; or the answer already (nothing to verify, or a failure).

    With no model, the offline reader writes it or abstains. With one, the model writes it and the offline reading
    (at no bar: every reading counts as an opinion) is kept for the second opinion; a reading that fails is no opinion."""
    if model is None:
        try:
            reading = _read_offline(question, target, db_id, penalty)
        except EhrguardError as exc:
            return Answer(question, error=exc)
        if reading.sql is None:
            return _not_read(question, reading, target, db_id, log, started, options)
        return reading.sql, None, reading
    try:
        opinion: OfflineSql | None = _read_offline(question, target, db_id, 0.0)
    except EhrguardError:
        opinion = None
    try:
        generation = _generate(question, database_context(target, db_id).db, model)
    except EhrguardError as exc:
        return Answer(question, error=exc, reading=opinion)
    if generation.final_sql is None:
        return Answer(question, generation, error=LLMError("The model wrote no SQL."), reading=opinion)
    return generation.final_sql, generation, opinion


def _read_offline(question: str, target: str | Path | DatabaseContext, db_id: str | None, penalty: float | None) -> OfflineSql:
    """The offline reader's reading of the question (one reader a process: its model is read once)."""
    from ehrguard.generation import DEFAULT_PENALTY, OfflineWriter
    from ehrguard.runtime import runtime

    writer = runtime().memo("offline_writer", None, OfflineWriter)
    return writer.write(question, database_context(target, db_id), penalty=DEFAULT_PENALTY if penalty is None else penalty)


def _not_read(question: str, reading: OfflineSql, target: str | Path | DatabaseContext, db_id: str | None, log: _Entries,
              started: float, options: dict[str, Any]) -> Answer:
    """No known question fits well enough: the verifier still reads the question alone, so an ambiguous question gets
    its clarifying question and an unanswerable one its reason; any other stays unanswered with the reader's reason."""
    from ehrguard.verify.offline.policy import NO_QUERY

    verdict = verify(question, "null", db=target, method="offline", db_id=db_id, **options)
    evidence = verdict.evidence
    category = evidence.question.category if evidence is not None else None
    if (category is None or verdict.action not in ("ambiguous", "unanswerable")
            or category["ambiguous"] + category["unanswerable"] < category["answerable"]):
        # refused only for the missing query: the question itself reads as answerable, and is not answered
        return Answer(question, reading=reading, audit_id=log.not_read(reading, started))
    message = verdict.message.removeprefix(NO_QUERY)
    verdict = replace(verdict, message=message, reason=verdict.reason.removeprefix(NO_QUERY))
    return Answer(question, verdict=verdict, audit_id=log.verified("null", verdict, started), reading=reading)


def second_opinion(verdict: Verdict, reading: OfflineSql, context: DatabaseContext) -> tuple[Verdict, dict[str, Any] | None]:
    """The offline reading beside the model's SQL: agreement raises the verdict's confidence; disagreement lowers it
    and, for a verified answer, withdraws the verification, with the known question that answers otherwise."""
    if reading.sql is None or reading.result is None or verdict.action not in EXECUTED_ACTIONS or verdict.sql is None:
        return verdict, None
    try:
        mine = context.db.execute(verdict.sql, max_rows=1000)
    except EhrguardError:
        return verdict, None
    from ehrguard.generation import same_answer

    agrees = same_answer(reading.result, mine, reading.sql, context.db_id)
    strength = reading.confidence or 0.0
    opinion = {"agrees": agrees, "known_question": reading.known_question, "sql": reading.sql, "confidence": round(strength, 4)}
    base = verdict.confidence if verdict.confidence is not None else 0.5
    if agrees:
        return replace(verdict, confidence=round(1 - (1 - base) * (1 - strength), 4)), opinion
    lowered = round(base * (1 - strength), 4)
    if verdict.status != "verified":
        return replace(verdict, confidence=lowered), opinion
    reason = (f"The offline reading of this question as the known question \"{reading.known_question}\" answers differently "
              f"(confidence {strength:.2f}): check which one is meant.")
    return replace(verdict, confidence=lowered, status="unverified", reason=reason), opinion
