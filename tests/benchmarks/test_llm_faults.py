"""Faults of a model server during `ehrguard bench scare` with an LLM method, over real HTTP: every failure is recorded as
an error (never scored as an answer), the run resumes, and the usage accounting matches what the server saw."""

from __future__ import annotations

import json

from click.testing import CliRunner

from ehrguard.cli import cli
from tests.llm.fake_server import FakeOpenAI, ok

REPLY = json.dumps({"reasoning": "r", "action": "unanswerable", "sql": "", "subtype": "small-talk", "message": "m"})


def test_faults_during_a_bench_run_are_errors_and_the_run_resumes(shared_data, mimic_iv_db, tmp_path, monkeypatch):
    (tmp_path / "mimic_iv.sqlite").symlink_to(mimic_iv_db)
    waits: list[float] = []
    monkeypatch.setattr("ehrguard.llm.client.time.sleep", waits.append)  # backoff is recorded, not waited
    good = ok(REPLY, prompt_tokens=100, completion_tokens=7)
    script = [
        good,                                                                      # 1 answers
        {"status": 429, "body": {"error": "slow down"}, "headers": {"Retry-After": "7"}}, good,  # 2 rate limited, then answers
        {"status": 500, "body": {"error": "boom"}}, {"status": 503, "body": {}}, good,  # 3 two server errors, then answers
        {"fault": "reset"}, {"fault": "reset"}, {"fault": "reset"},               # 4 connection reset on every try: fails
        {"fault": "truncate", **good}, good,                                      # 5 reply cut off mid-body, then answers
        {"status": 200, "body": b"{not json"}, good,                              # 6 invalid JSON, then answers
        ok("I think it is fine."), ok("Still no JSON here."),                     # 7 violates the schema twice: fails
        {"fault": "stall", "delay": 3, **good}, good,                             # 8 stalls mid-body past the timeout, then answers
    ]
    with FakeOpenAI() as server:
        server.script.extend(script)
        monkeypatch.setenv("EHRGUARD_LLM_BASE_URL", server.base_url)
        monkeypatch.setenv("EHRGUARD_LLM_API_KEY", "test-key")
        monkeypatch.setenv("EHRGUARD_LLM_CACHE", "off")
        monkeypatch.setenv("EHRGUARD_LLM_RETRIES", "2")
        monkeypatch.setenv("EHRGUARD_LLM_TIMEOUT", "1")
        args = ["bench", "scare", "--data", str(shared_data / "scare" / "mimic_iv_dev.json"), "--db-dir", str(tmp_path),
                "--method", "single_turn", "--model", "openai/fake-model", "--out", str(tmp_path / "run"), "--limit", "8", "--json"]
        first = CliRunner().invoke(cli, args)
        assert first.exit_code == 0, first.output
        metrics = json.loads(first.stdout)
        seen = len(server.requests)
        assert not server.script and seen == len(script)  # every scripted reply was asked for, no call more
        records = [json.loads(x) for x in (tmp_path / "run" / "predictions.jsonl").read_text().splitlines()]
        assert len(records) == 8
        failed = [r for r in records if r["error"]]
        assert len(failed) == 2 and len(metrics["errors"]) == 2
        assert all(r["output"] is None and r["action"] is None and r.get("final_exec_acc") is None for r in failed)  # never scored
        assert any("Connection" in r["error"] for r in failed) and any("JSON" in r["error"] for r in failed)
        assert 7.0 in waits  # Retry-After was honoured
        usage = metrics["llm_usage"]["openai/fake-model"]
        answered = sum(1 for step in script if step.get("status", 200) == 200 and "fault" not in step and isinstance(step["body"], dict))
        assert usage["calls"] == seen and usage["prompt_tokens"] == 100 * 6 + 10 * 2  # six good replies, two off-schema ones
        assert answered == 8

        # resume: the failed items run again, the others are kept
        server.default = good
        again = CliRunner().invoke(cli, [*args, "--retry-errors"])
        assert again.exit_code == 0, again.output
        assert len(server.requests) == seen + 2
        records = [json.loads(x) for x in (tmp_path / "run" / "predictions.jsonl").read_text().splitlines()]
        latest = {r["key"]: r for r in records}
        assert len(latest) == 8 and not any(r["error"] for r in latest.values())
        assert json.loads(again.stdout)["errors"] == []
