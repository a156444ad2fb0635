"""The rehearsal of a server's first requests: it goes through the real app and MCP server, leaves the audit log as it
was, and says what failed instead of failing the start."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from ehrguard.audit import AuditLog
from ehrguard.server.app import create_app
from ehrguard.server.mcp import build_server
from ehrguard.server.rehearsal import QUESTION, rehearse_app, rehearse_mcp


@pytest.fixture
def dbs(mimic_iv_db: Path, tmp_path: Path, monkeypatch) -> Path:
    folder = tmp_path / "dbs"
    folder.mkdir()
    (folder / "mimic_iv.sqlite").symlink_to(mimic_iv_db)
    monkeypatch.setenv("EHRGUARD_DB_DIR", str(folder))
    monkeypatch.setenv("EHRGUARD_CALIBRATION", "off")
    return folder


def test_the_app_rehearses_behind_its_tokens_and_writes_nothing_to_the_audit_log(dbs: Path, tmp_path: Path):
    audit = AuditLog(tmp_path / "audit.sqlite")
    app = create_app(tokens=["test-token"], audit=audit, rate_limit=2)
    assert rehearse_app(app) == []
    assert audit.entries() == [] and app.dependency_overrides == {}
    # The app is as it was: tokens required, the rate limit untouched by the rehearsal, the real log written.
    client = TestClient(app)
    body = {"db": "mimic_iv", "question": "How many patients are there?", "sql": "SELECT COUNT(*) FROM patients"}
    assert client.post("/v1/verify", json=body).status_code == 401
    for _ in range(2):
        assert client.post("/v1/verify", json=body, headers={"Authorization": "Bearer test-token"}).status_code == 200
    assert client.post("/v1/verify", json=body, headers={"Authorization": "Bearer test-token"}).status_code == 429
    assert [e["question"] for e in audit.entries()] == [body["question"]] * 2


def test_a_failing_rehearsal_is_reported_in_a_line_and_the_app_still_answers(dbs: Path, tmp_path: Path):
    # A file that is not a database, named so that it is the first built database the rehearsal verifies on.
    (dbs / "aaa.sqlite").write_bytes(b"not a database" * 100)
    app = create_app(auth=False, audit=AuditLog(tmp_path / "audit.sqlite"))
    problems = rehearse_app(app)
    assert len(problems) == 1 and problems[0].startswith("rehearsal POST /v1/verify answered ") and "\n" not in problems[0]
    assert TestClient(app).get("/healthz").status_code == 200


def test_the_mcp_server_rehearses_a_whole_session_and_keeps_its_audit_log(dbs: Path, tmp_path: Path):
    audit = AuditLog(tmp_path / "audit.sqlite")
    server = build_server(audit=audit)
    assert rehearse_mcp(server) == [] and rehearse_mcp(server, verify=False) == []
    assert server.audit is audit and audit.entries() == []

    async def verify() -> bool:
        return bool(await server.call_tool("verify_sql", {"db": "mimic_iv", "question": "How many patients are there?",
                                                           "sql": "SELECT COUNT(*) FROM patients"}))

    assert asyncio.run(verify())
    entries = audit.entries()
    assert len(entries) == 1 and entries[0]["question"] != QUESTION and entries[0]["caller"] == "mcp"


def test_a_failing_mcp_rehearsal_is_reported_in_a_line(dbs: Path, tmp_path: Path):
    (dbs / "aaa.sqlite").write_bytes(b"not a database" * 100)
    problems = rehearse_mcp(build_server(audit=AuditLog(tmp_path / "audit.sqlite")))
    assert len(problems) == 1 and problems[0].startswith("rehearsal verify_sql: ") and "\n" not in problems[0]
