"""Answer receipts: made by every interface, stored in the audit log, checked by `ehrguard audit verify-receipt`."""

from __future__ import annotations

import copy
import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from ehrguard import answer
from ehrguard.audit import AuditLog
from ehrguard.cli import cli
from ehrguard.db import lexicon_path, open_database
from ehrguard.errors import ConfigError
from ehrguard.receipt import check_receipt, key_id, result_fingerprint
from ehrguard.server.app import create_app

QUESTION = "What is the gender of patient 10004235?"
SQL = "SELECT gender FROM patients WHERE subject_id = 10004235"
KEY = "a-long-random-deployment-secret"


@pytest.fixture
def db_copy(mimic_iv_db: Path, tmp_path: Path, monkeypatch) -> Path:
    """A database of its own (the tests change it), in a folder of built databases, with the key configured."""
    dbs = tmp_path / "dbs"
    dbs.mkdir()
    path = dbs / "mimic_iv.sqlite"
    shutil.copy(mimic_iv_db, path)
    if lexicon_path(mimic_iv_db).is_file():  # the copy's lexicon is current (same bytes): not rebuilt for each test
        shutil.copy(lexicon_path(mimic_iv_db), lexicon_path(path))
    monkeypatch.setenv("EHRGUARD_DB_DIR", str(dbs))
    monkeypatch.setenv("EHRGUARD_AUDIT_PATH", str(tmp_path / "audit.sqlite"))
    monkeypatch.setenv("EHRGUARD_RECEIPT_KEY", KEY)
    return path


def test_a_receipt_records_the_decision_and_checks_out(db_copy: Path, tmp_path: Path):
    log = AuditLog(tmp_path / "audit.sqlite")
    reply = answer(QUESTION, db=db_copy, sql=SQL.replace("gender", "gendr"), audit=log, interface="cli")
    receipt = reply.receipt
    assert receipt is not None and reply.verdict is not None and reply.result is not None
    assert receipt["question"] == QUESTION and receipt["candidate_sql"] == SQL.replace("gender", "gendr")
    assert receipt["final_sql"] == reply.verdict.sql and receipt["verdict"]["action"] == reply.verdict.action == "correct"
    assert receipt["verdict"]["status"] == reply.verdict.status and receipt["verdict"]["findings"]
    assert receipt["database"]["profile"] == "mimic_iv" and len(receipt["database"]["sha256"]) == 64
    assert receipt["knowledge"]["question model minilm"] and receipt["knowledge"]["calibration"]
    assert receipt["result"]["fingerprint"] == result_fingerprint(reply.result.columns, reply.result.rows)
    assert receipt["result"]["row_count"] == 1 and reply.result.rows == [("m",)]
    assert "'m'" not in json.dumps(receipt["result"]) and '"m"' not in json.dumps(receipt["result"])  # no values, their fingerprint
    assert receipt["signature"]["key_id"] == key_id(KEY.encode())
    assert log.receipt(reply.audit_id) == receipt  # the audit log stores it with the entry

    db = open_database(db_copy)
    found = check_receipt(receipt, KEY.encode(), db)
    assert found.ok and len(found.passed) == 4, found
    assert not check_receipt(receipt, b"another key").ok

    changed = copy.deepcopy(receipt)
    changed["verdict"]["action"] = "preserve"
    found = check_receipt(changed, KEY.encode())
    assert not found.ok and any("digest" in p for p in found.problems) and any("signature" in p for p in found.problems)


def test_a_receipt_tells_a_changed_database(db_copy: Path, tmp_path: Path):
    receipt = answer(QUESTION, db=db_copy, sql=SQL).receipt
    assert receipt is not None
    with sqlite3.connect(db_copy) as conn:
        conn.execute("UPDATE patients SET gender = 'f' WHERE subject_id = 10004235")
    found = check_receipt(receipt, KEY.encode(), open_database(db_copy))
    assert not found.ok
    assert any("database is not the one" in p for p in found.problems) and any("different rows" in p for p in found.problems)


def test_without_a_key_a_receipt_is_unsigned(db_copy: Path, monkeypatch):
    monkeypatch.delenv("EHRGUARD_RECEIPT_KEY")
    receipt = answer(QUESTION, db=db_copy, sql=SQL).receipt
    assert receipt is not None and receipt["signature"] is None and receipt["digest"]
    found = check_receipt(receipt, None)
    assert not found.ok and found.passed == ["the digest matches the receipt's contents"] and "unsigned" in found.problems[0]


def test_the_cli_writes_exports_and_checks_receipts(db_copy: Path, tmp_path: Path):
    runner = CliRunner()
    out = tmp_path / "receipt.json"
    r = runner.invoke(cli, ["verify", "--db", str(db_copy), "-q", QUESTION, "-s", SQL, "--receipt", str(out), "--json"])
    assert r.exit_code == 0, r.output
    written = json.loads(out.read_text())
    assert written["interface"] == "cli" and written["verdict"]["action"] == "preserve" and written["result"] is None
    r = runner.invoke(cli, ["audit", "verify-receipt", str(out), "--db", str(db_copy)])
    assert r.exit_code == 0 and "VALID" in r.output and "no result was recorded" in r.output, r.output

    entry = AuditLog(tmp_path / "audit.sqlite").entries(limit=1)[0]
    r = runner.invoke(cli, ["audit", "receipt", str(entry["id"])])
    assert r.exit_code == 0 and json.loads(r.output) == written, r.output
    r = runner.invoke(cli, ["audit", "receipt", "999999"])  # main() prints an EhrguardError as one line
    assert isinstance(r.exception, ConfigError) and "has no receipt" in str(r.exception)

    forged = tmp_path / "forged.json"
    forged.write_text(out.read_text().replace('"preserve"', '"correct"'))
    r = runner.invoke(cli, ["audit", "verify-receipt", str(forged)])
    assert r.exit_code == 1 and "NOT VALID" in r.output and "FAIL" in r.output
    other_key = tmp_path / "other.key"
    other_key.write_text("some other secret\n")
    r = runner.invoke(cli, ["audit", "verify-receipt", str(out), "--key-file", str(other_key)])
    assert r.exit_code == 1 and "another key" in r.output
    notjson = tmp_path / "x.json"
    notjson.write_text("{not json")
    r = runner.invoke(cli, ["audit", "verify-receipt", str(notjson)])
    assert isinstance(r.exception, ConfigError) and "is not a receipt" in str(r.exception)


def test_the_rest_api_returns_and_serves_receipts(db_copy: Path, tmp_path: Path):
    client = TestClient(create_app(tokens=["t"], audit=AuditLog(tmp_path / "api-audit.sqlite"), rate_limit=1000))
    auth = {"Authorization": "Bearer t"}
    body = client.post("/v1/verify", headers=auth, json={"db": "mimic_iv", "question": QUESTION, "sql": SQL, "execute": True}).json()
    assert body["result"]["rows"] == [["m"]] and body["receipt"]["interface"] == "api"
    assert body["receipt"]["result"]["fingerprint"] == result_fingerprint(["gender"], [["m"]])
    assert check_receipt(body["receipt"], KEY.encode(), open_database(db_copy)).ok
    stored = client.get(f"/v1/audit/{body['audit_id']}/receipt", headers=auth)
    assert stored.status_code == 200 and stored.json() == body["receipt"]
    missing = client.get("/v1/audit/999999/receipt", headers=auth)
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "no_receipt"
    plain = client.post("/v1/verify", headers=auth, json={"db": "mimic_iv", "question": QUESTION, "sql": SQL}).json()
    assert "result" not in plain and plain["receipt"]["result"] is None


def test_an_unreadable_key_file_stops_the_server_start(db_copy: Path, tmp_path: Path, monkeypatch):
    monkeypatch.delenv("EHRGUARD_RECEIPT_KEY")
    monkeypatch.setenv("EHRGUARD_RECEIPT_KEY_FILE", str(tmp_path / "absent.key"))
    with pytest.raises(ConfigError, match="receipt key file"):
        create_app(tokens=["t"], audit=AuditLog(tmp_path / "a.sqlite"))
