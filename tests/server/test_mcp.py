"""The MCP server through the SDK's own client over stdio, in a real subprocess."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def _payload(result) -> dict:
    if getattr(result, "structuredContent", None):
        sc = result.structuredContent
        return sc.get("result", sc) if isinstance(sc, dict) and set(sc) == {"result"} else sc
    return json.loads(result.content[0].text)


def test_tools_over_stdio(mimic_iv_db: Path, tmp_path: Path):
    dbs = tmp_path / "dbs"
    dbs.mkdir()
    (dbs / "mimic_iv.sqlite").symlink_to(mimic_iv_db)
    env = {**os.environ, "EHRGUARD_DB_DIR": str(dbs), "EHRGUARD_AUDIT_PATH": str(tmp_path / "audit.sqlite"),
           "EHRGUARD_CALIBRATION": "off", "EHRGUARD_RECEIPT_KEY": "mcp-test-key"}
    params = StdioServerParameters(command=sys.executable, args=["-m", "ehrguard", "mcp"], env=env)

    async def session() -> dict:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            tools = {t.name for t in (await s.list_tools()).tools}
            out = {"tools": tools}
            out["dbs"] = _payload(await s.call_tool("list_databases", {}))
            out["schema"] = (await s.call_tool("get_schema", {"db": "mimic_iv"})).content[0].text
            q = "What is the gender of patient 10004235?"
            out["fixed"] = _payload(await s.call_tool("run_sql", {"db": "mimic_iv", "question": q,
                                                                  "sql": "SELECT gendr FROM patient WHERE subject_id = 10004235"}))
            out["refused"] = _payload(await s.call_tool("run_sql", {"db": "mimic_iv", "question": "Train a model to predict sepsis.",
                                                                    "sql": "SELECT * FROM patients"}))
            out["verify"] = _payload(await s.call_tool("verify_sql", {"db": "mimic_iv", "question": "Labs?", "sql": "SELECT 1"}))
            nobody = {"db": "mimic_iv", "question": "What is the gender of patient 99999999?",
                      "sql": "SELECT gender FROM patients WHERE subject_id = 99999999"}
            out["unverified"] = _payload(await s.call_tool("run_sql", nobody))
            out["overridden"] = _payload(await s.call_tool("run_sql", {**nobody, "allow_unverified": True}))
            bad = {"path": {"db": "../x", "question": "q", "sql": "SELECT 1"},
                   "unknown": {"db": "nope", "question": "q", "sql": "SELECT 1"},
                   "long_name": {"db": "x" * 5000, "question": "q", "sql": "SELECT 1"},
                   "deep": {"db": "mimic_iv", "question": "q", "sql": "SELECT " + "(" * 5000 + "1" + ")" * 5000},
                   "no_sql": {"db": "mimic_iv", "question": "q"},
                   "huge": {"db": "mimic_iv", "question": "q", "sql": "SELECT 1 " + "AND 1 " * 4000},
                   "bad_type": {"db": "mimic_iv", "question": "q", "sql": "SELECT 1", "max_rows": "many"}}
            for name, arguments in bad.items():
                tool = "verify_sql" if name != "bad_type" else "run_sql"
                result = await s.call_tool(tool, arguments)
                out[name] = (result.isError, result.content[0].text)
            out["schema_error"] = (await s.call_tool("get_schema", {"db": "nope"})).isError
            out["alive"] = _payload(await s.call_tool("list_databases", {}))
            return out

    out = asyncio.run(asyncio.wait_for(session(), 120))
    assert out["tools"] == {"list_databases", "get_schema", "verify_sql", "run_sql", "ask"}
    assert out["dbs"] == {"databases": ["mimic_iv"]}
    assert "CREATE TABLE patients" in out["schema"]
    assert out["fixed"]["executed"] and out["fixed"]["verdict"]["action"] == "correct" and out["fixed"]["rows"][0][0] in ("f", "m")
    assert out["refused"]["executed"] is False and out["refused"]["verdict"]["action"] == "unanswerable" and out["refused"]["reason"]
    assert out["verify"]["action"] == "ambiguous" and out["verify"]["status"] == "abstained"
    assert out["fixed"]["verdict"]["status"] == "verified"
    # each decision carries its signed receipt, with the fingerprint of the rows the agent got
    from ehrguard.receipt import check_receipt, result_fingerprint

    receipt = out["fixed"]["verdict"]["receipt"]
    assert receipt["interface"] == "mcp" and check_receipt(receipt, b"mcp-test-key").ok
    assert receipt["result"]["fingerprint"] == result_fingerprint(out["fixed"]["columns"], out["fixed"]["rows"])
    # an answer the verifier cannot vouch for is not run unless the caller says so
    assert out["unverified"]["executed"] is False and "There is no patient 99999999" in out["unverified"]["reason"]
    assert "allow_unverified" in out["unverified"]["reason"] and out["unverified"]["verdict"]["status"] == "unverified"
    assert out["overridden"]["executed"] is True and out["overridden"]["rows"] == []
    # every bad input is a tool error with one line saying what to do, and the server stays up
    expected = {"path": "not a path", "unknown": "No database named 'nope'", "long_name": "5000 characters",
                "deep": "nests parentheses", "no_sql": "missing argument 'sql'", "bad_type": "argument 'max_rows'",
                "huge": "the limit is 20,000"}  # as over REST (it was the library's 100,000)
    for name, words in expected.items():
        is_error, text = out[name]
        assert is_error and words in text and "\n" not in text.strip(), (name, text)
    assert out["schema_error"] and out["alive"] == {"databases": ["mimic_iv"]}
    # the server rehearsed a session before it answered (ehrguard.server.rehearsal): the audit log holds only the calls above
    from ehrguard.audit import AuditLog
    from ehrguard.server.rehearsal import QUESTION

    questions = [e["question"] for e in AuditLog(tmp_path / "audit.sqlite").entries()]
    assert questions and QUESTION not in questions


def test_a_model_configured_with_the_offline_method_writes_sql_and_the_offline_verifier_checks_it(mimic_iv_db: Path, tmp_path: Path,
                                                                                                     monkeypatch):
    # It used to be handed to the offline verifier too, which refuses any model: every tool failed.
    from ehrguard.audit import AuditLog
    from ehrguard.llm import scripted
    from ehrguard.server.mcp import build_server

    dbs = tmp_path / "dbs"
    dbs.mkdir()
    (dbs / "mimic_iv.sqlite").symlink_to(mimic_iv_db)
    monkeypatch.setenv("EHRGUARD_DB_DIR", str(dbs))
    monkeypatch.setenv("EHRGUARD_LLM_CACHE", "off")
    monkeypatch.setenv("EHRGUARD_CALIBRATION", "off")
    scripted("mcp-offline").enqueue("```sql\nSELECT gender FROM patients WHERE subject_id = 10004235\n```")
    server = build_server(audit=AuditLog(tmp_path / "audit.sqlite"), model="scripted/mcp-offline")

    async def call(tool: str, arguments: dict) -> dict:
        _, structured = await server.call_tool(tool, arguments)  # in process: (content, structured result)
        return structured.get("result", structured)

    async def calls() -> tuple[dict, dict]:
        verified = await call("verify_sql", {"db": "mimic_iv", "question": "What is the gender of patient 10004235?",
                                             "sql": "SELECT gender FROM patients WHERE subject_id = 10004235"})
        asked = await call("ask", {"db": "mimic_iv", "question": "What is the gender of patient 10004235?"})
        return verified, asked

    verified, asked = asyncio.run(calls())
    assert verified["action"] == "preserve", verified
    assert asked["generated_sql"].startswith("SELECT gender") and asked["executed"] and asked["rows"][0][0] in ("f", "m"), asked


def test_ask_without_a_model_uses_the_offline_reader(mimic_iv_db: Path, shared_data: Path, tmp_path: Path, monkeypatch):
    from ehrguard.audit import AuditLog
    from ehrguard.server.mcp import build_server
    from ehrguard.verify.offline.templates import reset_banks

    dbs = tmp_path / "dbs"
    dbs.mkdir()
    (dbs / "mimic_iv.sqlite").symlink_to(mimic_iv_db)
    monkeypatch.setenv("EHRGUARD_DB_DIR", str(dbs))
    monkeypatch.setenv("EHRGUARD_TEMPLATE_BANK", "on")
    reset_banks()
    server = build_server(audit=AuditLog(tmp_path / "audit.sqlite"))

    async def call(tool: str, arguments: dict) -> dict:
        _, structured = await server.call_tool(tool, arguments)
        return structured.get("result", structured)

    async def calls() -> tuple[dict, dict]:
        known = await call("ask", {"db": "mimic_iv", "question": "What is the gender of patient 10004235?"})
        stay = "What was the average length of stay, in days, of patient 10000032's hospital admissions?"
        unknown = await call("ask", {"db": "mimic_iv", "question": stay})
        return known, unknown

    try:
        known, unknown = asyncio.run(calls())
    finally:
        reset_banks()
    assert known["executed"] and known["rows"][0][0] in ("f", "m") and known["generated_sql"] is None, known
    assert known["reading"]["known_question"] == "the gender of patient [patient]"
    assert not unknown["executed"] and unknown["answered"] is False and unknown["reason"], unknown
