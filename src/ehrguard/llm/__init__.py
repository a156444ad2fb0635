"""One interface to language models: hosted APIs, any OpenAI-compatible server, a local GGUF model, scripted replies.

The names below are the API (``from ehrguard.llm import LLM, GenerateConfig``). The modules are
internal: :mod:`.client` (the client: retries, concurrency, caching, accounting), :mod:`.providers`
(who answers a call), :mod:`.cache`, :mod:`.usage`, :mod:`.types`, :mod:`.schema` (the check of
structured replies) and :mod:`.bench` (measurements of the layer itself). The optional
llama-cpp-python is imported only when a local model is loaded.
"""

from ehrguard.llm.bench import measure
from ehrguard.llm.cache import ResponseCache, cache_key
from ehrguard.llm.client import LLM, CallLog, parse_model
from ehrguard.llm.providers import resolve_gguf, scripted, scripted_ready
from ehrguard.llm.types import Completion, GenerateConfig, Message
from ehrguard.llm.usage import UsageTracker, load_prices

__all__ = ["LLM", "CallLog", "Completion", "GenerateConfig", "Message", "ResponseCache", "UsageTracker", "cache_key",
           "load_prices", "measure", "parse_model", "resolve_gguf", "scripted", "scripted_ready"]
