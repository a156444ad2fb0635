"""The LLM client every model-using part of ehrguard calls.

``LLM("openai/gpt-4o-mini").complete(messages, GenerateConfig(...))`` adds to a provider:
a per-model limit on calls in flight, retries with exponential backoff and jitter on
429/5xx/timeouts/connection errors (bounded), the response cache, structured output (the
server's JSON-schema support where it has one; the reply is always validated, and asked
for once more when it does not conform), usage accounting and a call log. ``acomplete``
is the async form. A failure raises an :class:`~ehrguard.errors.LLMError`.
"""

from __future__ import annotations

import asyncio
import json
import random
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from ehrguard.config import float_setting, int_setting, setting
from ehrguard.errors import ConfigError, LLMError, LLMTimeoutError, ProviderError, StructuredOutputError
from ehrguard.llm.cache import ResponseCache, cache_key
from ehrguard.llm.providers import LocalLlama, OpenAICompatible, Provider, scripted
from ehrguard.llm.schema import parse_json_reply, problems
from ehrguard.llm.types import Completion, GenerateConfig, Message
from ehrguard.llm.usage import UsageTracker, load_prices
from ehrguard.registry import Registry


def parse_model(model: str) -> tuple[str, str]:
    """``"openai/gpt-4o-mini"`` -> ("openai", "gpt-4o-mini")."""
    if "/" not in model:
        raise ConfigError(f"A model is provider/model (e.g. openai/gpt-4o-mini, local/smollm2, scripted/test); got {model!r}.")
    provider, name = model.split("/", 1)
    if provider not in PROVIDERS:
        raise ConfigError(f"Unknown provider {provider!r} in {model!r}; use one of {', '.join(PROVIDERS)}.")
    if not name:
        raise ConfigError(f"{model!r} names no model after the provider.")
    return provider, name


def _openai(name: str, *, base_url: str | None, api_key: str | None, timeout_s: float, structured: str) -> Provider:
    import os

    key = api_key or setting("llm_api_key") or os.environ.get("OPENAI_API_KEY", "")
    return OpenAICompatible(name, base_url or setting("llm_base_url") or None, key, timeout_s, structured)


def _local(name: str, **_: Any) -> Provider:
    """One loaded model per GGUF name for the whole runtime (loading takes seconds and memory)."""
    from ehrguard.runtime import runtime

    return runtime().memo("local_models", name, lambda: LocalLlama(name))


def _scripted(name: str, **_: Any) -> Provider:
    return scripted(name)


ProviderFactory = Callable[..., Provider]  # (name, *, base_url, api_key, timeout_s, structured) -> Provider
PROVIDERS: Registry[ProviderFactory] = Registry("provider")
PROVIDERS.register("openai", _openai, description="OpenAI or any OpenAI-compatible server (vLLM, Ollama, LM Studio, llama.cpp) at base_url")
PROVIDERS.register("local", _local, description="a GGUF model in this process through llama-cpp-python")
PROVIDERS.register("scripted", _scripted, description="replies queued by a test; records every call")


def make_provider(model: str, *, base_url: str | None = None, api_key: str | None = None, timeout_s: float = 120.0,
                  structured: str = "json_schema") -> Provider:
    provider, name = parse_model(model)
    return PROVIDERS.get(provider)(name, base_url=base_url, api_key=api_key, timeout_s=timeout_s, structured=structured)


class CallLog:
    """Every exchange as one JSON line: prompt, reply, usage, timing, cache hit, error. No credentials."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()

    def write(self, entry: dict[str, Any]) -> None:
        line = json.dumps({"time": time.strftime("%Y-%m-%dT%H:%M:%S%z"), **entry}, ensure_ascii=False, default=str)
        with self._lock, open(self.path, "a", encoding="utf-8") as f:
            f.write(line + "\n")


class LLM:
    """One model, with everything a benchmark of tens of thousands of calls needs."""

    def __init__(self, model: str, *, base_url: str | None = None, api_key: str | None = None, timeout_s: float | None = None,
                 retries: int | None = None, concurrency: int | None = None, cache: ResponseCache | str | None = None,
                 usage: UsageTracker | None = None, log: CallLog | str | Path | None = None, structured: str = "json_schema",
                 backoff_s: float = 1.0, backoff_cap_s: float = 30.0, shared_limit: bool = True) -> None:
        self.model = model
        self.timeout_s = float_setting("llm_timeout", timeout_s)
        self.provider = make_provider(model, base_url=base_url, api_key=api_key, timeout_s=self.timeout_s, structured=structured)
        self.retries = int_setting("llm_retries", retries)
        limit = int_setting("llm_concurrency", concurrency)
        key = f"{model}@{self.provider.base_url}"
        if not shared_limit:  # a limit of its own (measurements), not the model's shared one
            self._limit = threading.BoundedSemaphore(max(1, limit))
            self._pool = ThreadPoolExecutor(max_workers=max(1, limit), thread_name_prefix="ehrguard-llm")
        else:  # one limit and one pool per model and server, shared by every client in the process (the runtime owns them)
            from ehrguard.runtime import runtime

            self._limit, self._pool = runtime().memo("llm_limits", key, lambda: (
                threading.BoundedSemaphore(max(1, limit)),
                ThreadPoolExecutor(max_workers=max(1, limit), thread_name_prefix="ehrguard-llm")),
                close=lambda held: held[1].shutdown(wait=False))
        if cache is None or isinstance(cache, str):
            mode = cache or setting("llm_cache")
            cache = ResponseCache(setting("llm_cache_path"), mode)
        self.cache = cache
        self.usage = usage or UsageTracker(load_prices(setting("llm_prices") or None))
        self.log = CallLog(log) if isinstance(log, (str, Path)) else log
        self.backoff_s, self.backoff_cap_s = backoff_s, backoff_cap_s

    def describe(self) -> dict[str, Any]:
        """For run logs: the model and where it is served (never the key)."""
        return {"model": self.model, "provider": self.provider.name, "base_url": self.provider.base_url}

    def complete(self, messages: list[Message], config: GenerateConfig | None = None) -> Completion:
        config = config or GenerateConfig()
        key = cache_key(self.provider.name, self.provider.model, self.provider.base_url, messages, config)
        hit = self.cache.get(key)
        if hit is not None:
            self.usage.record(self.model, usage=hit.usage, cached=True)
            self._log(messages, hit, None)
            return hit
        try:
            completion = self._call_with_retries(messages, config)
            if config.response_schema is not None:
                completion = self._structured(messages, config, completion)
        except LLMError:
            self.usage.record(self.model, error=True)  # each attempt is already in the call log
            raise
        self.cache.put(key, completion)
        return completion

    async def acomplete(self, messages: list[Message], config: GenerateConfig | None = None) -> Completion:
        # A pool as wide as the model's limit: asyncio's default pool (cores + 4 threads) would cap it lower.
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, self.complete, messages, config)

    def _structured(self, messages: list[Message], config: GenerateConfig, completion: Completion) -> Completion:
        assert config.response_schema is not None
        issues = _check(completion.text, config.response_schema)
        if not issues:
            completion.parsed = parse_json_reply(completion.text)
            return completion
        again = [*messages, {"role": "assistant", "content": completion.text},
                 {"role": "user", "content": "Your reply does not match the required JSON schema (" + "; ".join(issues[:5])
                  + "). Reply again with only one JSON object that matches it:\n" + json.dumps(config.response_schema)}]
        second = self._call_with_retries(again, config)
        issues = _check(second.text, config.response_schema)
        if issues:
            error = StructuredOutputError(f"{self.model} twice replied without the required JSON ({'; '.join(issues[:3])}).")
            self._log(again, None, error)
            raise error
        second.parsed = parse_json_reply(second.text)
        second.usage = {k: completion.usage.get(k, 0) + second.usage.get(k, 0) for k in ("prompt_tokens", "completion_tokens")}
        return second

    def _call_with_retries(self, messages: list[Message], config: GenerateConfig) -> Completion:
        attempt = 0
        while True:
            try:
                with self._limit:
                    try:
                        completion = self.provider.call(messages, config)
                    except TimeoutError as exc:  # a provider's own timeout: the typed error, retryable
                        raise LLMTimeoutError(f"{self.model}: {exc}") from exc
                    except ConnectionError as exc:
                        raise ProviderError(f"{self.model}: {exc}", retryable=True) from exc
                    except Exception as exc:
                        self._log(messages, None, exc, attempt=attempt)
                        raise
                self.usage.record(self.model, usage=completion.usage, latency_s=completion.latency_s)
                self._log(messages, completion, None)
                return completion
            except (ProviderError, LLMTimeoutError) as exc:
                retryable = isinstance(exc, LLMTimeoutError) or exc.retryable
                self.usage.record(self.model, failed_attempt=True)
                self._log(messages, None, exc, attempt=attempt)
                if not retryable or attempt >= self.retries:
                    if attempt:
                        exc.args = (f"{exc} (after {attempt + 1} attempts)",)
                    raise
                delay = getattr(exc, "retry_after", None) or min(self.backoff_cap_s, self.backoff_s * 2**attempt) * (0.5 + random.random())
                time.sleep(min(delay, self.backoff_cap_s))
                attempt += 1

    def _log(self, messages: list[Message], completion: Completion | None, error: Exception | None, attempt: int = 0) -> None:
        call_id = uuid.uuid4().hex[:16]
        if completion is not None:
            completion.call_id = call_id
        if self.log is None:
            return
        entry: dict[str, Any] = {"id": call_id, "model": self.model, "messages": messages, "attempt": attempt}
        if completion is not None:
            entry.update(reply=completion.text, usage=completion.usage, latency_s=round(completion.latency_s, 4), cached=completion.cached,
                         finish_reason=completion.finish_reason)
        if error is not None:
            entry["error"] = f"{type(error).__name__}: {error}"
        self.log.write(entry)


def _check(text: str, schema: dict[str, Any]) -> list[str]:
    try:
        value = parse_json_reply(text)
    except (ValueError, json.JSONDecodeError) as exc:
        return [f"not JSON: {exc}"]
    return problems(value, schema)
