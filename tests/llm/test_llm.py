"""The LLM layer against a real HTTP server with injected faults, the scripted provider, the cache and accounting."""

from __future__ import annotations

import asyncio
import json

import pytest
from click.testing import CliRunner

from ehrguard.cli import cli
from ehrguard.errors import CacheMissError, ConfigError, LLMTimeoutError, ProviderError, StructuredOutputError
from ehrguard.llm import LLM, GenerateConfig, ResponseCache, UsageTracker, cache_key, parse_model, scripted
from tests.llm.fake_server import FakeOpenAI, ok

MSG = [{"role": "user", "content": "Is SELECT 1 fine?"}]
SCHEMA = {"type": "object", "properties": {"action": {"type": "string", "enum": ["preserve", "correct", "ambiguous", "unanswerable"]}},
          "required": ["action"], "additionalProperties": False}


@pytest.fixture
def server():
    with FakeOpenAI() as s:
        yield s


def make(server, tmp_path, **kw):
    kw.setdefault("cache", ResponseCache(tmp_path / "cache.sqlite", "off"))
    kw.setdefault("backoff_s", 0.01)
    return LLM("openai/fake-model", base_url=server.base_url, api_key="sk-secret-test", **kw)


def test_model_strings_and_missing_key_errors(monkeypatch):
    assert parse_model("openai/gpt-4o-mini") == ("openai", "gpt-4o-mini")
    assert parse_model("local/models/x.gguf") == ("local", "models/x.gguf")
    for bad in ("gpt-4o", "azure/x", "openai/"):
        with pytest.raises(ConfigError):
            parse_model(bad)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("EHRGUARD_LLM_API_KEY", raising=False)
    monkeypatch.delenv("EHRGUARD_LLM_BASE_URL", raising=False)
    with pytest.raises(ConfigError, match="EHRGUARD_LLM_API_KEY"):
        LLM("openai/gpt-4o-mini", cache="off")
    with pytest.raises(ConfigError, match="GGUF|llama-cpp"):
        LLM("local/does-not-exist.gguf", cache="off")


def test_a_round_trip_sends_the_settings_and_returns_a_completion(server, tmp_path):
    server.script.append(ok("fine", 12, 3))
    c = make(server, tmp_path).complete(MSG, GenerateConfig(temperature=0.2, seed=7, max_tokens=50, stop=("\n\n",)))
    assert (c.text, c.finish_reason, c.usage) == ("fine", "stop", {"prompt_tokens": 12, "completion_tokens": 3})
    req = server.requests[0]
    assert req["path"] == "/v1/chat/completions" and req["auth"] == "Bearer sk-secret-test"
    assert {k: req["body"][k] for k in ("temperature", "seed", "max_tokens", "stop")} == {"temperature": 0.2, "seed": 7,
                                                                                          "max_tokens": 50, "stop": ["\n\n"]}


def test_retries_on_500_and_429_then_succeeds(server, tmp_path):
    server.script.extend([{"status": 500, "body": {"error": "boom"}}, {"status": 429, "body": {"error": "slow down"},
                                                                       "headers": {"Retry-After": "0.01"}},
                          {"status": 200, "body": b"{not json"}, ok("third time lucky")])
    usage = UsageTracker()
    c = make(server, tmp_path, retries=4, usage=usage).complete(MSG)
    assert c.text == "third time lucky" and len(server.requests) == 4


def test_retries_are_bounded_and_the_failure_is_a_typed_error(server, tmp_path):
    server.default = {"status": 503, "body": {"error": "down"}}
    usage = UsageTracker()
    with pytest.raises(ProviderError, match="after 3 attempts") as info:
        make(server, tmp_path, retries=2, usage=usage).complete(MSG)
    assert info.value.status == 503 and len(server.requests) == 3
    assert usage.summary()["openai/fake-model"]["errors"] == 1


def test_client_errors_are_not_retried(server, tmp_path):
    server.script.append({"status": 401, "body": {"error": "bad key"}})
    with pytest.raises(ProviderError, match="API key"):
        make(server, tmp_path, retries=3).complete(MSG)
    assert len(server.requests) == 1


def test_timeouts_are_retried_then_raised(server, tmp_path):
    server.default = {"status": 200, "body": ok("late")["body"], "delay": 1.0}
    with pytest.raises(LLMTimeoutError):
        make(server, tmp_path, retries=1, timeout_s=0.2).complete(MSG)
    assert len(server.requests) == 2


def test_structured_output_validates_and_asks_once_more(server, tmp_path):
    server.script.extend([ok("I think it is fine"), ok('{"action": "preserve"}')])
    c = make(server, tmp_path).complete(MSG, GenerateConfig(response_schema=SCHEMA))
    assert c.parsed == {"action": "preserve"}
    assert server.requests[0]["body"]["response_format"]["type"] == "json_schema"
    assert "does not match the required JSON schema" in server.requests[1]["body"]["messages"][-1]["content"]
    server.script.extend([ok('{"action": "maybe"}'), ok('{"verdict": "preserve"}')])
    with pytest.raises(StructuredOutputError):
        make(server, tmp_path).complete(MSG, GenerateConfig(response_schema=SCHEMA))


def test_a_server_without_json_schema_support_gets_json_mode_with_the_schema(server, tmp_path):
    server.script.extend([{"status": 500, "body": {"error": "response_format.type should be 'text' or 'json_object'"}},
                          ok('{"action": "correct"}')])
    llm = make(server, tmp_path, retries=0)
    assert llm.complete(MSG, GenerateConfig(response_schema=SCHEMA)).parsed == {"action": "correct"}
    assert server.requests[1]["body"]["response_format"] == {"type": "json_object", "schema": SCHEMA}


def test_cache_key_covers_what_changes_a_reply_and_nothing_else():
    base = cache_key("openai", "m", "http://h/v1", MSG, GenerateConfig())
    assert base == cache_key("openai", "m", "http://h/v1/", MSG, GenerateConfig(timeout_s=5))
    for other in (cache_key("openai", "m2", "http://h/v1", MSG, GenerateConfig()), cache_key("openai", "m",
                                                                                             "http://g/v1", MSG, GenerateConfig()),
                  cache_key("openai", "m", "http://h/v1", MSG, GenerateConfig(temperature=0.7)),
                  cache_key("openai", "m", "http://h/v1", MSG, GenerateConfig(seed=1)),
                  cache_key("openai", "m", "http://h/v1", MSG, GenerateConfig(max_tokens=10)),
                  cache_key("openai", "m", "http://h/v1", MSG, GenerateConfig(response_schema=SCHEMA)),
                  cache_key("openai", "m", "http://h/v1", [{"role": "user", "content": "other"}], GenerateConfig())):
        assert other != base


def test_cache_replays_without_calls_never_stores_errors_and_replay_only_fails_on_a_miss(server, tmp_path):
    path = tmp_path / "cache.sqlite"
    server.script.extend([{"status": 400, "body": {"error": "bad"}}, ok("answer")])
    llm = make(server, tmp_path, cache=ResponseCache(path, "on"), retries=0)
    with pytest.raises(ProviderError):
        llm.complete(MSG)  # errors are not cached...
    assert llm.complete(MSG).text == "answer"  # ...so this goes to the server
    replay = make(server, tmp_path, cache=ResponseCache(path, "replay-only"), concurrency=2, timeout_s=9)
    hit = replay.complete(MSG)
    assert hit.text == "answer" and hit.cached and len(server.requests) == 2
    assert replay.usage.summary()["openai/fake-model"]["cache_hits"] == 1
    with pytest.raises(CacheMissError):
        replay.complete([{"role": "user", "content": "never asked"}])
    assert len(server.requests) == 2


def test_concurrency_is_limited_per_model(server, tmp_path):
    server.default = {**ok("x"), "delay": 0.15}
    llm = LLM("openai/limited-model", base_url=server.base_url, api_key="k", cache=ResponseCache(tmp_path / "c", "off"), concurrency=3)

    async def many():
        return await asyncio.gather(*(llm.acomplete([{"role": "user", "content": str(i)}]) for i in range(9)))

    replies = asyncio.run(many())
    assert len(replies) == 9 and server.peak == 3


def test_usage_prices_and_the_call_log_hold_no_credentials(server, tmp_path):
    log = tmp_path / "calls.jsonl"
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"fake-model": {"input": 1.0, "output": 2.0}}))
    from ehrguard.llm.usage import load_prices

    usage = UsageTracker(load_prices(prices))
    server.script.extend([ok("a", 1000, 500), ok("b", 2000, 500)])
    llm = make(server, tmp_path, usage=usage, log=log)
    llm.complete(MSG)
    llm.complete([{"role": "user", "content": "again"}])
    s = usage.summary()["openai/fake-model"]
    assert (s["calls"], s["prompt_tokens"], s["completion_tokens"]) == (2, 3000, 1000)
    assert s["estimated_cost_usd"] == pytest.approx(3000 / 1e6 * 1.0 + 1000 / 1e6 * 2.0)
    text = log.read_text()
    assert "sk-secret-test" not in text and len(text.splitlines()) == 2
    r = CliRunner().invoke(cli, ["llm", "usage", str(log), "--prices", str(prices), "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["openai/fake-model"]["completion_tokens"] == 1000


def test_scripted_provider_through_the_registry():
    s = scripted("unit-test").enqueue('{"action": "ambiguous"}', RuntimeError("boom"))
    llm = LLM("scripted/unit-test", cache="off")
    assert llm.complete(MSG, GenerateConfig(response_schema=SCHEMA)).parsed == {"action": "ambiguous"}
    with pytest.raises(RuntimeError):
        llm.complete(MSG)
    with pytest.raises(ProviderError, match="no reply queued"):
        llm.complete(MSG)
    assert len(s.history) == 3 and s.history[0] == MSG


def test_cli_ping(server):
    server.script.append(ok("I am here"))
    r = CliRunner().invoke(cli, ["llm", "ping", "--model", "openai/fake-model", "--base-url", server.base_url, "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["reply"] == "I am here"


def test_config_file_is_read(tmp_path, monkeypatch):
    from ehrguard.config import setting

    cfg = tmp_path / "config.toml"
    cfg.write_text('llm_timeout = 33\nllm_base_url = "http://example.invalid/v1"\n')
    monkeypatch.setenv("EHRGUARD_CONFIG", str(cfg))
    monkeypatch.delenv("EHRGUARD_LLM_TIMEOUT", raising=False)
    assert setting("llm_timeout") == "33"
    monkeypatch.setenv("EHRGUARD_LLM_TIMEOUT", "7")
    assert setting("llm_timeout") == "7"  # the environment wins over the file
    cfg.write_text("llm_timeout = [")
    with pytest.raises(ConfigError, match="config file"):
        setting("llm_base_url")


