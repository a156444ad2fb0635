"""One interface to language models: hosted APIs, any OpenAI-compatible server, a local GGUF model, scripted replies."""

from ehrguard.llm.cache import ResponseCache, cache_key
from ehrguard.llm.client import LLM, CallLog, parse_model
from ehrguard.llm.providers import scripted
from ehrguard.llm.types import Completion, GenerateConfig, Message
from ehrguard.llm.usage import UsageTracker

__all__ = ["LLM", "CallLog", "Completion", "GenerateConfig", "Message", "ResponseCache", "UsageTracker", "cache_key", "parse_model", "scripted"]
