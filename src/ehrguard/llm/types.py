"""The one call shape: chat messages in, a :class:`Completion` out."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

Message = dict[str, str]  # {"role": "system" | "user" | "assistant", "content": "..."}


@dataclass(frozen=True)
class GenerateConfig:
    """What changes a reply (all of it is part of the cache key), plus the time limit (which is not)."""

    temperature: float = 0.0
    seed: int | None = 0
    max_tokens: int = 1024
    stop: tuple[str, ...] = ()
    response_schema: dict[str, Any] | None = None  # a JSON schema the reply must satisfy
    timeout_s: float | None = None

    def cache_fields(self) -> dict[str, Any]:
        return {"temperature": self.temperature, "seed": self.seed, "max_tokens": self.max_tokens,
                "stop": list(self.stop), "response_schema": self.response_schema}


@dataclass
class Completion:
    text: str
    model: str
    finish_reason: str | None = None
    usage: dict[str, int] = field(default_factory=dict)  # prompt_tokens, completion_tokens
    latency_s: float = 0.0
    cached: bool = False
    raw: Any = None  # the server's response, kept for the call log
    parsed: Any = None  # the JSON value, when a response schema was given
    call_id: str = ""  # this exchange's id in the call log (a cache hit gets a new id)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
