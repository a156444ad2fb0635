"""``ehrguard llm``: talk to the configured models (ping, usage of a call log, serve a local model)."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import click
from rich.table import Table

from ehrguard.cli.options import console, echo_json, json_option
from ehrguard.errors import ConfigError, DatasetError


@click.group("llm")
def llm_group() -> None:
    """Language-model providers: openai/<model> (any OpenAI-compatible base URL), local/<gguf>, scripted/<name>."""


@llm_group.command("ping")
@click.option("--model", required=True, help="provider/model, e.g. openai/gpt-4o-mini or local/smollm2.")
@click.option("--base-url", default=None, help="OpenAI-compatible server (env EHRGUARD_LLM_BASE_URL).")
@click.option("--structured", is_flag=True, help="Also ask for a JSON-schema-constrained reply.")
@json_option
def ping_command(model: str, base_url: str | None, structured: bool, as_json: bool) -> None:
    """Send one small request and report the reply, latency and token usage (not cached)."""
    from ehrguard.labels import ACTIONS
    from ehrguard.llm import LLM, GenerateConfig

    llm = LLM(model, base_url=base_url, cache="off", retries=1)
    schema = {"type": "object", "properties": {"action": {"type": "string", "enum": list(ACTIONS)}},
              "required": ["action"]} if structured else None
    messages = [{"role": "user", "content": "Reply with one short sentence: are you there?" if not structured else
                 "Question: how many patients are there? SQL: SELECT COUNT(*) FROM patients. Pick an action for this SQL."}]
    c = llm.complete(messages, GenerateConfig(max_tokens=48, response_schema=schema))
    out = {"model": c.model, **llm.describe(), "reply": c.text, "parsed": c.parsed,
           "latency_ms": round(c.latency_s * 1000, 1), "usage": c.usage}
    if as_json:
        echo_json(out)
    else:
        console.print(f"[green]OK[/green] {llm.describe()['provider']} {c.model} at {llm.describe()['base_url'] or '-'}: "
                      f"{out['latency_ms']} ms, {c.usage.get('prompt_tokens', 0)}+{c.usage.get('completion_tokens', 0)} tokens")
        click.echo(c.text)


@llm_group.command("usage")
@click.argument("log_file", type=click.Path(exists=True, dir_okay=False))
@click.option("--prices", default=None, type=click.Path(exists=True, dir_okay=False), help="Price table JSON (env EHRGUARD_LLM_PRICES).")
@json_option
def usage_command(log_file: str, prices: str | None, as_json: bool) -> None:
    """Summarise a call log (JSON lines written by a run): calls, cache hits, errors, tokens, latency, cost."""
    from ehrguard.config import setting
    from ehrguard.llm import UsageTracker, load_prices

    tracker = UsageTracker(load_prices(prices or setting("llm_prices") or None))
    for n, line in enumerate(Path(log_file).read_text().splitlines(), 1):
        try:
            e = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DatasetError(f"{log_file} line {n} is not JSON: {exc}") from exc
        tracker.record(e["model"], usage=e.get("usage"), latency_s=e.get("latency_s", 0.0), cached=bool(e.get("cached")),
                       failed_attempt="error" in e)
    summary = tracker.summary()
    if as_json:
        echo_json(summary)
        return
    t = Table("model", "calls", "cache hits", "failed calls", "prompt tok", "completion tok", "p50 ms", "p99 ms", "est. cost $")
    for name, s in summary.items():
        t.add_row(name, str(s["calls"]), str(s["cache_hits"]), str(s["failed_attempts"]), str(s["prompt_tokens"]),
                  str(s["completion_tokens"]), str(s["latency_ms"]["p50"]), str(s["latency_ms"]["p99"]),
                  "-" if s["estimated_cost_usd"] is None else f"{s['estimated_cost_usd']:.4f}")
    console.print(t)


@llm_group.command("bench")
@click.option("--model", required=True, help="provider/model to measure against.")
@click.option("--base-url", default=None, help="OpenAI-compatible server.")
@click.option("--calls", type=int, default=100, show_default=True)
@click.option("--concurrency", type=int, default=8, show_default=True)
@click.option("--out", default=None, type=click.Path(dir_okay=False), help="Also write the numbers as JSON here.")
@json_option
def bench_command(model: str, base_url: str | None, calls: int, concurrency: int, out: str | None, as_json: bool) -> None:
    """Measure the layer: a cached replay of CALLS calls (network calls made), the speed-up of
    CONCURRENCY calls in flight, and the per-call overhead of the layer itself."""
    from ehrguard.llm import measure

    numbers = measure(model, base_url=base_url, calls=calls, concurrency=concurrency)
    if out:
        Path(out).write_text(json.dumps(numbers, indent=2))
    if as_json:
        echo_json(numbers)
        return
    console.print(f"{calls} calls to {model}: first run {numbers['first_run']['seconds']} s "
                  f"({numbers['first_run']['provider_calls']} provider calls); "
                  f"replay-only {numbers['replay']['seconds']} s ({numbers['replay']['provider_calls']} provider calls)")
    c = numbers["concurrency"]
    console.print(f"concurrency {c['n']}: {c['sequential_s']} s sequential vs {c['parallel_s']} s in parallel, speed-up x{c['speedup']}")
    console.print(f"overhead of the layer per call: {numbers['overhead_ms_per_call']}")


@llm_group.command("serve")
@click.option("--model", required=True, help="local/<file.gguf> or local/smollm2.")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", type=int, default=8080, show_default=True)
@click.option("--n-ctx", type=int, default=4096, show_default=True, help="Context length.")
def serve_command(model: str, host: str, port: int, n_ctx: int) -> None:
    """Serve a local GGUF model as an OpenAI-compatible server (llama.cpp); use it as openai/<name> with --base-url.

    Example: ehrguard llm serve --model local/smollm2 --port 8080, then
    ehrguard llm ping --model openai/smollm2 --base-url http://127.0.0.1:8080/v1
    """
    from ehrguard.llm import parse_model, resolve_gguf

    provider, name = parse_model(model)
    if provider != "local":
        raise ConfigError("serve takes a local/ model (a GGUF file, or local/smollm2).")
    try:
        import llama_cpp.server  # noqa: F401
    except ImportError:
        raise ConfigError("Serving needs llama-cpp-python with its server: pip install 'ehrguard[local]'.") from None
    path = resolve_gguf(name)
    console.print(f"Serving {path.name} on http://{host}:{port}/v1 (Ctrl-C to stop) at {time.strftime('%H:%M:%S')}")
    args = [sys.executable, "-m", "llama_cpp.server", "--model", str(path), "--host", host, "--port", str(port), "--n_ctx", str(n_ctx)]
    os.execv(sys.executable, args)
