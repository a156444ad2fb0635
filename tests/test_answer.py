"""``ehrguard.answer()`` on the real demo MIMIC-IV: generate, verify, execute what the verdict allows, audit."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from ehrguard import Answer, answer
from ehrguard.audit import AuditLog
from ehrguard.db import open_database
from ehrguard.errors import DatabaseNameError, LLMError, ProviderError
from ehrguard.llm import scripted

GENDER = "What is the gender of patient 10004235?"
GENDER_SQL = "SELECT gender FROM patients WHERE subject_id = 10004235"
COUNT_SQL = "SELECT COUNT(DISTINCT subject_id) FROM patients"
_names = itertools.count()


@pytest.fixture(autouse=True)
def no_cache(monkeypatch):
    monkeypatch.setenv("EHRGUARD_LLM_CACHE", "off")
    # The pipeline is tested with the uncalibrated bar, so that a clean answer is verified whatever the shipped fit
    # says about answers like it (tests/verify/test_calibration.py tests the calibrated status).
    monkeypatch.setenv("EHRGUARD_CALIBRATION", "off")


@pytest.fixture
def audit(tmp_path: Path) -> AuditLog:
    return AuditLog(tmp_path / "audit.sqlite")


def model(*replies) -> tuple[str, object]:
    """A fresh scripted model with these replies queued: its name and the provider (for its history)."""
    name = f"answer-{next(_names)}"
    return f"scripted/{name}", scripted(name).enqueue(*replies)


def test_a_preserved_query_runs_and_returns_its_rows(mimic_iv_db):
    a = answer(GENDER, db=mimic_iv_db, sql=GENDER_SQL)
    assert a.error is None and a.verdict is not None and a.verdict.action == "preserve"
    assert a.result is not None and a.result.rows == open_database(mimic_iv_db).execute(GENDER_SQL).rows
    assert a.result_dict() == {"columns": ["gender"], "rows": a.result.rows, "truncated": False}


def test_a_corrected_query_runs_in_its_corrected_form(mimic_iv_db):
    wrong = "SELECT gendr FROM patient WHERE subject_id = 10004235"  # runs nowhere: no such table or column
    a = answer(GENDER, db=mimic_iv_db, sql=wrong)
    assert a.verdict is not None and a.verdict.action == "correct" and a.verdict.sql != wrong and a.error is None
    assert a.result is not None and a.result.rows == open_database(mimic_iv_db).execute(GENDER_SQL).rows


@pytest.mark.parametrize("question, sql, action", [
    ("Labs?", "SELECT * FROM labevents", "ambiguous"),
    ("Train a neural network to predict sepsis.", "SELECT 1", "unanswerable"),
])
def test_ambiguous_and_unanswerable_questions_run_nothing(mimic_iv_db, question, sql, action):
    a = answer(question, db=mimic_iv_db, sql=sql)
    assert a.verdict is not None and a.verdict.action == action and a.verdict.message
    assert a.result is None and a.error is None and a.result_dict() is None


def test_execute_false_verifies_only(mimic_iv_db):
    a = answer(GENDER, db=mimic_iv_db, sql=GENDER_SQL, execute=False)
    assert a.verdict is not None and a.verdict.action == "preserve" and a.result is None


def test_one_audit_entry_per_verification_with_the_fields_of_a_verdict(mimic_iv_db, audit):
    a = answer(GENDER, db=mimic_iv_db, sql=GENDER_SQL, audit=audit, caller="abc", interface="api")
    b = answer("Labs?", db=mimic_iv_db, sql="SELECT * FROM labevents", audit=audit, caller="abc", interface="api")
    entries = audit.entries()
    assert [e["id"] for e in entries] == [b.audit_id, a.audit_id]
    first = entries[1]
    assert first["duration_ms"] > 0 and first["time"] > 0
    assert {k: first[k] for k in first if k not in ("id", "time", "duration_ms")} == {
        "caller": "abc", "interface": "api", "db": str(mimic_iv_db), "question": GENDER, "candidate_sql": GENDER_SQL,
        "action": "preserve", "subtype": None, "message": a.verdict.message, "findings": "[]", "executed_sql": None,
        "row_count": None, "llm_exchanges": "[]", "result_values": None, "error": None, "status": "verified",
        "reason": a.verdict.reason, "receipt": json.dumps(a.receipt, ensure_ascii=False)}
    assert entries[0]["action"] == "ambiguous" and entries[0]["subtype"] == b.verdict.subtype


def test_an_executed_query_can_have_an_entry_of_its_own(mimic_iv_db, audit):
    a = answer(GENDER, db=mimic_iv_db, sql=GENDER_SQL, audit=audit, caller="mcp", interface="mcp", audit_execution="mcp-run")
    run, verified = audit.entries()
    assert verified["id"] == a.audit_id and verified["interface"] == "mcp" and verified["executed_sql"] is None
    assert (run["interface"], run["candidate_sql"], run["executed_sql"], run["action"], run["row_count"]) == (
        "mcp-run", GENDER_SQL, GENDER_SQL, "preserve", 1)
    assert run["duration_ms"] is None and run["findings"] is None


def test_without_an_audit_log_nothing_is_recorded(mimic_iv_db):
    a = answer(GENDER, db=mimic_iv_db, sql=GENDER_SQL)
    assert a.audit_id is None and a.verdict_dict()["audit_id"] is None


def test_a_scripted_model_writes_the_sql_when_none_is_given(mimic_iv_db, audit):
    name, provider = model(f"```sql\n{COUNT_SQL}\n```")
    a = answer("How many patients are there?", db=mimic_iv_db, model=name, audit=audit, caller="abc", interface="api-ask")
    assert a.error is None and a.generated_sql == COUNT_SQL and a.generation is not None and a.generation.succeeded
    assert a.verdict is not None and a.verdict.action == "preserve" and a.result is not None and a.result.rows[0][0] > 0
    prompt = provider.history[0][0]["content"]
    assert len(provider.history) == 1 and "SQLite SQL" in prompt and "patients(" in prompt  # the direct prompt, with the schema
    (entry,) = audit.entries()
    assert entry["candidate_sql"] == COUNT_SQL and entry["interface"] == "api-ask" and entry["action"] == "preserve"
    out = a.to_dict()
    assert list(out) == ["generated_sql", "verdict", "result", "reading", "second_opinion", "answered", "message"]
    assert out["verdict"]["audit_id"] == entry["id"] and out["answered"] is True


def test_a_failed_model_call_is_an_error_not_an_answer(mimic_iv_db, audit):
    name, _ = model(ProviderError("the model server is down", status=503))
    a = answer("How many patients are there?", db=mimic_iv_db, model=name, audit=audit)
    assert isinstance(a.error, ProviderError) and a.verdict is None and a.result is None and a.generation is None
    assert audit.entries() == []  # nothing was verified
    with pytest.raises(ProviderError, match="down"):
        a.raise_for_error()
    with pytest.raises(ProviderError):
        a.verdict_dict()


def test_a_model_that_writes_no_sql_is_an_error_with_its_attempts(mimic_iv_db):
    name, _ = model("I cannot help with that.", "Still no query.")
    a = answer("How many patients are there?", db=mimic_iv_db, model=name)
    assert isinstance(a.error, LLMError) and str(a.error) == "The model wrote no SQL."
    assert a.generation is not None and len(a.generation.attempts) == 2 and a.generated_sql is None and a.verdict is None


def test_a_failed_llm_verification_is_recorded_as_an_error(mimic_iv_db, audit):
    name, _ = model(ProviderError("the model server is down", status=503))
    a = answer(GENDER, db=mimic_iv_db, sql=GENDER_SQL, method="single_turn", verifier_model=name, audit=audit, caller="abc",
               interface="api")
    assert isinstance(a.error, ProviderError) and a.verdict is None and a.result is None
    (entry,) = audit.entries()
    assert entry["error"] == "ProviderError: the model server is down" and entry["action"] is None
    assert (entry["candidate_sql"], entry["question"], entry["interface"]) == (GENDER_SQL, GENDER, "api") and entry["duration_ms"] > 0
    assert answer(GENDER, db=mimic_iv_db, sql=GENDER_SQL, method="single_turn", verifier_model=model(ProviderError("x"))[0],
                  audit=audit, audit_errors=False).error is not None
    assert len(audit.entries()) == 1  # audit_errors=False: the MCP server records verdicts only


def test_network_callers_name_databases_never_paths(mimic_iv_db, tmp_path, monkeypatch, audit):
    dbs = tmp_path / "dbs"
    dbs.mkdir()
    (dbs / "mimic_iv.sqlite").symlink_to(mimic_iv_db)
    monkeypatch.setenv("EHRGUARD_DB_DIR", str(dbs))
    assert answer(GENDER, db="mimic_iv", sql=GENDER_SQL, names_only=True).verdict is not None
    a = answer(GENDER, db=str(mimic_iv_db), sql=GENDER_SQL, names_only=True, audit=audit)
    assert isinstance(a.error, DatabaseNameError) and a.verdict is None
    assert json.loads(json.dumps(audit.entries()))[0]["error"].startswith("DatabaseNameError: ")  # the candidate SQL was refused


def test_the_serialisers(mimic_iv_db):
    a = answer(GENDER, db=mimic_iv_db, sql=GENDER_SQL)
    full = a.verdict_dict()
    assert a.receipt is not None and a.receipt["verdict"]["action"] == "preserve"
    assert full == {**a.verdict.to_dict(), "usage": {"llm_calls": 0, "tokens": {"prompt": 0, "completion": 0}}, "audit_id": None,
                    "receipt": a.receipt}
    assert list(full)[-3:] == ["usage", "audit_id", "receipt"]
    assert a.verdict_summary() == {"action": "preserve", "sql": GENDER_SQL, "subtype": None, "message": a.verdict.message,
                                   "status": "verified", "reason": a.verdict.reason, "findings": [], "receipt": a.receipt}
    assert a.to_dict() == {"generated_sql": None, "verdict": full, "result": a.result_dict(), "reading": None, "second_opinion": None,
                           "answered": True, "message": a.verdict.message}
    assert Answer("q").to_dict() == {"generated_sql": None, "verdict": None, "result": None, "reading": None, "second_opinion": None,
                                     "answered": False, "message": ""}
