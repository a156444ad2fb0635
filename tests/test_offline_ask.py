"""Asking with no LLM: the offline reader writes the SQL from the known question a question paraphrases, the verifier
checks it, and the answer carries its status and the known question; the EHRSQL-2024 benchmark of it, fitted on one
split and scored on another. All on the real MIMIC-IV demo with the shipped question banks."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from ehrguard import answer
from ehrguard.cli import cli
from ehrguard.db import open_database
from ehrguard.errors import ConfigError
from ehrguard.generation.offline import SHIPPED_READER, OfflineWriter, load_reader_model
from ehrguard.llm import scripted
from ehrguard.verify import database_context
from ehrguard.verify.offline.templates import reset_banks

GENDER = "What is the gender of patient 10004235?"
# Answerable, and read as answerable by the question classifier, but phrased like no known question.
QUESTION_NO_FORM_FITS = "What was the average length of stay, in days, of patient 10000032's hospital admissions?"
GENDER_SQL = "SELECT patients.gender FROM patients WHERE patients.subject_id = 10004235"


def _rows(path: Path, sql: str) -> list:
    db = open_database(path)
    try:
        return db.execute(sql).rows
    finally:
        db.close()


@pytest.fixture
def banks(monkeypatch, shared_data):
    monkeypatch.setenv("EHRGUARD_TEMPLATE_BANK", "on")
    monkeypatch.setenv("EHRGUARD_DATA_DIR", str(shared_data))
    reset_banks()
    yield
    reset_banks()


def test_a_known_question_is_answered_with_the_form_it_read(banks, mimic_iv_db):
    reply = answer(GENDER, db=mimic_iv_db)
    assert reply.error is None and reply.generation is None
    assert reply.reading is not None and reply.reading.known_question == "the gender of patient [patient]"
    assert reply.reading.confidence is not None and reply.reading.confidence >= reply.reading.bar
    assert reply.verdict is not None and reply.verdict.action == "preserve" and reply.verdict.sql == reply.reading.sql
    expected = _rows(mimic_iv_db, GENDER_SQL)
    assert reply.answered and reply.result is not None and reply.result.rows == expected
    assert reply.to_dict()["reading"]["known_question"] == "the gender of patient [patient]"


def test_a_paraphrase_with_other_values_and_period_is_answered(banks, mimic_iv_db):
    reply = answer("How many times was ondansetron prescribed to patient 10018501 last year?", db=mimic_iv_db)
    assert reply.answered, reply.message
    assert "prescriptions.drug = 'ondansetron'" in reply.verdict.sql and "10018501" in reply.verdict.sql
    assert "'-1 year'" in reply.verdict.sql


def test_an_ambiguous_question_gets_its_clarifying_question_not_an_answer(banks, mimic_iv_db):
    reply = answer("Which patients are very sick?", db=mimic_iv_db)
    assert reply.verdict is not None and reply.verdict.action == "ambiguous" and reply.result is None
    assert "'very'" in reply.message and not reply.message.startswith("The text-to-SQL model")
    assert not reply.answered


def test_a_question_no_known_form_fits_is_not_answered_and_says_why(banks, mimic_iv_db, tmp_path):
    from ehrguard.audit import AuditLog

    log = AuditLog(tmp_path / "audit.sqlite")
    reply = answer(QUESTION_NO_FORM_FITS, db=mimic_iv_db, audit=log, caller="tester")
    assert reply.error is None and reply.verdict is None and reply.result is None and not reply.answered
    assert reply.reading is not None and reply.reading.sql is None and reply.message == reply.reading.reason
    assert reply.to_dict()["answered"] is False
    # Nothing asked is lost: the question is in the audit log, not answered, with why.
    entry = log.entries(caller="tester")[0]
    assert reply.audit_id == entry["id"] and entry["question"] == QUESTION_NO_FORM_FITS
    assert entry["status"] == "abstained" and entry["reason"] == reply.reading.reason and entry["action"] is None


def test_without_banks_the_reader_says_asking_needs_a_question_set(monkeypatch, mimic_iv_db):
    monkeypatch.setenv("EHRGUARD_TEMPLATE_BANK", "off")
    reset_banks()
    reply = answer(GENDER, db=mimic_iv_db)
    assert reply.verdict is None and "No known questions" in reply.message and "--model" in reply.message


def test_the_bar_rises_with_the_penalty_and_a_high_one_abstains_more(banks, mimic_iv_db):
    model = load_reader_model()
    bars = [model.bar(c) for c in (0, 1, 5, 10, 100, 1000)]
    assert bars == sorted(bars) and bars[-1] >= 1000 / 1001
    writer = OfflineWriter()
    context = database_context(mimic_iv_db)
    question = "what was the last heart rate of patient 10004235 on their first icu stay?"
    low, high = writer.write(question, context, penalty=0), writer.write(question, context, penalty=1e6)
    assert low.sql is not None and high.sql is None and high.confidence == low.confidence
    assert "penalty of 1e+06" in (high.reason or "") and high.known_question == low.known_question


def test_a_broken_reader_model_is_one_clear_error(tmp_path):
    bad = tmp_path / "reader.json"
    bad.write_text('{"features": ["bias"], "weights": [1]}')
    with pytest.raises(ConfigError, match="not an offline reader model of this version"):
        load_reader_model(bad)
    with pytest.raises(ConfigError, match="ehrguard train offline-reader"):
        load_reader_model(tmp_path / "missing.json")
    assert load_reader_model(SHIPPED_READER).fitted_on["splits"]  # the shipped one says what it was fitted on


def test_with_a_model_the_offline_reading_is_a_second_opinion(banks, mimic_iv_db):
    scripted("ask-agree").enqueue(f"```sql\n{GENDER_SQL}\n```")
    agree = answer(GENDER, db=mimic_iv_db, model="scripted/ask-agree")
    assert agree.generated_sql == GENDER_SQL and agree.second_opinion is not None and agree.second_opinion["agrees"]
    assert agree.verdict.status == "verified" and agree.to_dict()["second_opinion"]["agrees"]


def test_a_second_opinion_that_answers_otherwise_withdraws_the_verification(banks, mimic_iv_db):
    from ehrguard.answer import second_opinion
    from ehrguard.verify import verify

    # The model's SQL returns the admission before the last one (OFFSET 1); no check reads an offset, and a verifier
    # that does not read known questions itself (forms and templates off) preserves it. (A discharge time returned for
    # an admission, this test's first example, is now found by the visit-side contrast.)
    question = "When was the last time patient 10000032 was admitted to the hospital?"
    wrong = ("SELECT admissions.admittime FROM admissions WHERE admissions.subject_id = 10000032 ORDER BY admissions.admittime DESC "
             "LIMIT 1 OFFSET 1")
    context = database_context(mimic_iv_db)
    verdict = verify(question, wrong, db=context, forms="off", templates="off")
    assert verdict.action == "preserve" and verdict.confidence is not None
    reading = OfflineWriter().write(question, context, penalty=0)
    assert reading.sql is not None and _rows(mimic_iv_db, reading.sql) != _rows(mimic_iv_db, wrong)
    checked, opinion = second_opinion(verdict, reading, context)
    assert opinion is not None and not opinion["agrees"] and opinion["known_question"] == reading.known_question
    assert checked.confidence is not None and checked.confidence < verdict.confidence
    # Had the checks verified it, the disagreement withdraws the verification, and says with which known question.
    withdrawn, _ = second_opinion(replace(verdict, status="verified"), reading, context)
    assert withdrawn.status == "unverified" and "answers differently" in withdrawn.reason and reading.known_question in withdrawn.reason
    # The same reading beside the right SQL agrees and raises the confidence.
    right = verify(question, reading.sql, db=context, forms="off", templates="off")
    raised, opinion = second_opinion(right, reading, context)
    assert opinion is not None and opinion["agrees"] and raised.confidence >= (right.confidence or 0)


def test_cli_ask_prints_the_answer_the_known_question_and_the_sql(banks, mimic_iv_db):
    r = CliRunner().invoke(cli, ["ask", "-q", GENDER, "--db", str(mimic_iv_db)])
    assert r.exit_code == 0, r.output
    assert "PRESERVE" in r.output and "Read as the known question: the gender of patient [patient]" in r.output
    assert GENDER_SQL in r.output
    r = CliRunner().invoke(cli, ["ask", "-q", "What is the ratio of female to male patients admitted each year?",
                                 "--db", str(mimic_iv_db), "--json"])
    assert r.exit_code == 0, r.output
    body = json.loads(r.output)
    assert body["answered"] is False and body["verdict"] is None and body["message"]


def test_cli_ask_on_a_missing_database_is_one_line(banks, tmp_path):
    r = CliRunner().invoke(cli, ["ask", "-q", GENDER, "--db", str(tmp_path / "nope.sqlite")])
    assert r.exit_code != 0 and "Traceback" not in r.output


def _split(folder: Path, items: list[tuple[str, str, str]]) -> Path:
    folder.mkdir()
    (folder / "data.json").write_text(json.dumps({"data": [{"id": i, "question": q} for i, q, _ in items]}))
    (folder / "label.json").write_text(json.dumps({i: sql for i, _, sql in items}))
    (folder / "answer.json").write_text(json.dumps({i: "" for i, _, _ in items}))
    return folder


def test_bench_offline_ask_fits_on_train_scores_the_split_and_writes_shared_task_predictions(shared_data, mimic_iv_db, tmp_path):
    from ehrguard.benchmarks.offline_ask import split_items

    items = split_items(shared_data / "ehrsql-2024" / "mimic_iv" / "train")
    # Two training splits (as train + valid for a test split), one scored split none of them holds.
    train, more, scored = (_split(tmp_path / "train", items[:500]), _split(tmp_path / "more", items[500:900]),
                           _split(tmp_path / "scored", items[900:1000]))
    out, report = tmp_path / "pred.json", tmp_path / "report.md"
    r = CliRunner().invoke(cli, ["bench", "ehrsql", "--method", "offline-ask", "--split", str(scored), "--train", str(train),
                                 "--train", str(more),
                                 "--db", str(mimic_iv_db), "--penalty", "10", "--no-verifier", "--out", str(out),
                                 "--report", str(report), "--json"])
    assert r.exit_code == 0, r.output
    result = json.loads(r.output)
    s = result["summaries"][0]
    assert s["n"] == 100 and 0 < s["answered"] <= s["read"] and s["penalty"] == 10
    assert result["models"][0]["fitted_on"]["train"] == [str(train), str(more)] and result["models"][0]["fitted_on"]["questions"] == 900
    predictions = json.loads(out.read_text())
    assert set(predictions) == {i for i, _, _ in items[900:1000]}
    assert sum(v != "null" for v in predictions.values()) == s["answered"]
    # The shared task's scorer, on the written file, gives the same RS(10).
    r = CliRunner().invoke(cli, ["bench", "ehrsql", "--split", str(scored), "--db", str(mimic_iv_db), "--predictions", str(out),
                                 "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["rs_10"] == pytest.approx(s["rs"]["rs_10"])
    assert "| 10 |" in report.read_text()
    # Fitting on the scored split is refused.
    r = CliRunner().invoke(cli, ["bench", "ehrsql", "--method", "offline-ask", "--split", str(scored), "--train", str(scored),
                                 "--db", str(mimic_iv_db)])
    assert r.exit_code != 0 and "scored split" in str(r.exception)


def test_api_and_mcp_ask_with_no_model_use_the_offline_reader(banks, mimic_iv_db, tmp_path, monkeypatch):
    from fastapi.testclient import TestClient

    from ehrguard.audit import AuditLog
    from ehrguard.server.app import create_app

    dbs = tmp_path / "dbs"
    dbs.mkdir()
    (dbs / "mimic_iv.sqlite").symlink_to(mimic_iv_db)
    monkeypatch.setenv("EHRGUARD_DB_DIR", str(dbs))
    client = TestClient(create_app(tokens=["t"], audit=AuditLog(tmp_path / "audit.sqlite"), rate_limit=1000))
    r = client.post("/v1/ask", json={"db": "mimic_iv", "question": GENDER}, headers={"Authorization": "Bearer t"})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["answered"] and body["reading"]["known_question"] == "the gender of patient [patient]"
    assert body["verdict"]["action"] == "preserve" and body["result"]["rows"]
    r = client.post("/v1/ask", json={"db": "mimic_iv", "question": GENDER, "penalty": -1}, headers={"Authorization": "Bearer t"})
    assert r.status_code == 422


def test_a_reader_model_fits_when_every_reading_was_right():
    # A small question set (EHRSQL eICU's folds) can give readings all right: the fit still converges, the
    # confidence stays below 1, and the bars are chosen.
    from ehrguard.evaluation.threshold import Decision
    from ehrguard.generation.offline import ReadingFeatures, fit_reader_model

    features = [ReadingFeatures(0.5 + i / 100, 0.1, True, False, False, 2, 3, True) for i in range(40)]
    model = fit_reader_model(features, [True] * 40, lambda ps: [Decision(True, True, True, float(p)) for p in ps], {})
    assert all(0 < model.confidence(f) < 1 for f in features) and set(model.bars) == {"0", "5", "10"}
