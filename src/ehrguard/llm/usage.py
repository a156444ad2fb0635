"""Usage accounting: calls, tokens, cache hits, latency percentiles and estimated cost per model."""

from __future__ import annotations

import json
import threading
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ehrguard.errors import ConfigError
from ehrguard.evaluation.stats import percentile


def load_prices(path: str | Path | None) -> dict[str, dict[str, float]]:
    """``{model: {"input": $ per 1M tokens, "output": $ per 1M tokens}}`` from a user-editable JSON file."""
    if not path:
        return {}
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfigError(f"Cannot read the price table {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the price table maps model names to {{input, output}} prices per million tokens.")
    return data


@dataclass
class ModelUsage:
    calls: int = 0
    cache_hits: int = 0
    failed_attempts: int = 0  # calls that failed (some were retried)
    errors: int = 0  # requests that failed for good
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latencies: list[float] = field(default_factory=list)


class UsageTracker:
    def __init__(self, prices: dict[str, dict[str, float]] | None = None) -> None:
        self.prices = prices or {}
        self.models: dict[str, ModelUsage] = defaultdict(ModelUsage)
        self._lock = threading.Lock()

    def record(self, model: str, *, usage: dict[str, int] | None = None, latency_s: float = 0.0, cached: bool = False,
               error: bool = False, failed_attempt: bool = False) -> None:
        """One call (an answer, a cache hit, or a failed attempt), or with ``error`` a request that failed for good."""
        with self._lock:
            m = self.models[model]
            m.calls += not error  # a final failure was already counted as its attempts
            m.cache_hits += cached
            m.errors += error
            m.failed_attempts += failed_attempt
            if error or failed_attempt:
                return
            if usage and not cached:
                m.prompt_tokens += usage.get("prompt_tokens", 0)
                m.completion_tokens += usage.get("completion_tokens", 0)
            if not cached:
                m.latencies.append(latency_s)

    def summary(self) -> dict[str, Any]:
        out = {}
        with self._lock:
            for name, m in sorted(self.models.items()):
                lat = sorted(m.latencies)

                def q(p: float, lat: list[float] = lat) -> float | None:
                    return round(percentile(lat, p) * 1000, 1) if lat else None

                price = self.prices.get(name) or self.prices.get(name.split("/", 1)[-1])
                cost = None
                if price:
                    cost = round(m.prompt_tokens / 1e6 * price.get("input", 0) + m.completion_tokens / 1e6 * price.get("output", 0), 6)
                out[name] = {"calls": m.calls, "cache_hits": m.cache_hits, "failed_attempts": m.failed_attempts, "errors": m.errors,
                             "prompt_tokens": m.prompt_tokens, "completion_tokens": m.completion_tokens,
                             "latency_ms": {"p50": q(0.5), "p90": q(0.9), "p99": q(0.99)}, "estimated_cost_usd": cost}
        return out
