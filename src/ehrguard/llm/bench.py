"""Measurements of the LLM layer itself: cache replay, concurrency speed-up, per-call overhead."""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from ehrguard.llm.cache import ResponseCache
from ehrguard.llm.client import LLM
from ehrguard.llm.providers import scripted
from ehrguard.llm.types import Completion, GenerateConfig, Message


class _Counting:
    """Counts the calls that reach the provider (the network, for openai/ models)."""

    def __init__(self, llm: LLM) -> None:
        self.calls = 0
        inner = llm.provider.call

        def call(messages: list[Message], config: GenerateConfig) -> Completion:
            self.calls += 1
            return inner(messages, config)

        llm.provider.call = call  # type: ignore[method-assign]


def _messages(i: int) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"Reply with the word ok. Request {i}."}]


def measure(model: str, *, base_url: str | None = None, calls: int = 100, concurrency: int = 8, max_tokens: int = 8) -> dict[str, Any]:
    """Run the three measurements against ``model``; returns the numbers."""
    config = GenerateConfig(max_tokens=max_tokens)
    out: dict[str, Any] = {"model": model, "base_url": base_url, "calls": calls}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "cache.sqlite"
        record = LLM(model, base_url=base_url, cache=ResponseCache(path, "on"), concurrency=concurrency)
        counter = _Counting(record)
        start = time.perf_counter()
        for i in range(calls):
            record.complete(_messages(i), config)
        out["first_run"] = {"seconds": round(time.perf_counter() - start, 3), "provider_calls": counter.calls}
        replay = LLM(model, base_url=base_url, cache=ResponseCache(path, "replay-only"))
        counter = _Counting(replay)
        start = time.perf_counter()
        for i in range(calls):
            assert replay.complete(_messages(i), config).cached
        out["replay"] = {"seconds": round(time.perf_counter() - start, 3), "provider_calls": counter.calls}

    def timed(limit: int) -> float:
        llm = LLM(model, base_url=base_url, cache="off", concurrency=limit, shared_limit=False)

        async def run() -> None:
            await asyncio.gather(*(llm.acomplete(_messages(10_000 + i), config) for i in range(calls)))

        start = time.perf_counter()
        asyncio.run(run())
        return time.perf_counter() - start

    sequential, parallel = timed(1), timed(concurrency)
    out["concurrency"] = {"n": concurrency, "sequential_s": round(sequential, 3), "parallel_s": round(parallel, 3),
                          "speedup": round(sequential / parallel, 2)}
    out["overhead_ms_per_call"] = overhead_ms()
    return out


def overhead_ms(calls: int = 2000) -> dict[str, float]:
    """Time the layer adds to a call, measured with the scripted provider (no model, no network)."""
    s = scripted("__overhead__")
    s.replies.clear()
    s.enqueue(*(["ok"] * calls * 2))
    samples = {}
    for mode in ("off", "on"):
        with tempfile.TemporaryDirectory() as tmp:
            llm = LLM("scripted/__overhead__", cache=ResponseCache(Path(tmp) / "c.sqlite", mode))
            times = []
            for i in range(calls):
                start = time.perf_counter()
                llm.complete(_messages(i))
                times.append(time.perf_counter() - start)
            samples[f"cache_{mode}_p50"] = round(statistics.median(times) * 1000, 4)
    s.history.clear()
    return samples
