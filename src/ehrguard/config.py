"""Settings: one table of name, default and help that drives the CLI, the environment and the docs.

Every setting can come from a command-line flag, an ``EHRGUARD_<NAME>`` environment
variable, the config file (TOML, ``name = value``; see :func:`config_file`), or its default,
in that order of precedence.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


def _user_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ehrguard"


def config_file() -> Path:
    """``$EHRGUARD_CONFIG``, or ``~/.config/ehrguard/config.toml``."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(os.environ.get("EHRGUARD_CONFIG") or Path(base) / "ehrguard" / "config.toml")


_PARSED: dict[tuple[str, int], dict[str, str]] = {}  # (path, mtime) -> values: settings are read per item


def _file_values() -> dict[str, str]:
    path = config_file()
    try:
        if not path.is_file():
            return {}
        key = (str(path), path.stat().st_mtime_ns)
    except OSError:
        return {}
    if key not in _PARSED:
        import tomllib

        try:
            data = tomllib.loads(path.read_text())
        except (OSError, tomllib.TOMLDecodeError) as exc:
            from ehrguard.errors import ConfigError

            raise ConfigError(f"Cannot read the config file {path}: {exc}") from exc
        _PARSED.clear()
        _PARSED[key] = {str(k): str(v) for k, v in data.items()}
    return _PARSED[key]


@dataclass(frozen=True)
class Setting:
    name: str
    default: str
    help: str
    secret: bool = False  # never printed or logged

    @property
    def env(self) -> str:
        return "EHRGUARD_" + self.name.upper()

    def value(self) -> str:
        return os.environ.get(self.env) or _file_values().get(self.name) or self.default


SETTINGS: dict[str, Setting] = {
    s.name: s
    for s in (
        Setting(
            "data_dir",
            str(_user_cache_dir() / "data"),
            "Where source datasets live (the demos from PhysioNet, EHRSQL, SCARE, ClinSQL).",
        ),
        Setting(
            "db_dir",
            str(_user_cache_dir() / "databases"),
            "Where built databases are written and looked up by name (mimic_iv.sqlite, ...).",
        ),
        Setting(
            "query_timeout",
            "60",
            "Wall-clock limit of one query in seconds (SCARE and EHRSQL use 60).",
        ),
        Setting("max_rows", "10000", "Row cap of one query result; a capped result is flagged truncated."),
        Setting("llm_base_url", "", "Base URL of an OpenAI-compatible server (vLLM, Ollama, llama.cpp, ...); empty = api.openai.com."),
        Setting("llm_api_key", "", "API key for openai/ models (falls back to OPENAI_API_KEY); never logged.", secret=True),
        Setting("llm_timeout", "120", "Seconds to wait for one model reply."),
        Setting("llm_retries", "4", "Retries of a failed call (429, 5xx, timeouts), with exponential backoff and jitter."),
        Setting("llm_concurrency", "8", "Calls in flight at once, per model."),
        Setting("llm_cache", "on", "Response cache: on, off, or replay-only (a miss is an error: exact reproduction)."),
        Setting("llm_cache_path", str(_user_cache_dir() / "llm_cache.sqlite"), "The response cache (SQLite)."),
        Setting("llm_prices", "", "JSON file of prices per million tokens: {model: {input: $, output: $}} (cost estimates)."),
        Setting("template_bank", "on", "off: the offline verifier does not use the EHRSQL template bank (from the data dir)."),
        Setting("audit_path", str(_user_cache_dir() / "audit.sqlite"), "The audit log of every decision (SQLite)."),
        Setting("audit_retention_days", "365", "Audit entries older than this are deleted (0 keeps everything)."),
        Setting("audit_store_values", "off", "on: also store result rows in the audit log (they can hold patient data)."),
        Setting("api_tokens", "", "Comma-separated bearer tokens the REST API accepts; never logged.", secret=True),
        Setting("api_rate_limit", "120", "Requests per minute per token (REST API)."),
        Setting("api_sql", "on", "off: disable POST /v1/sql (raw safe execution) in the REST API."),
    )
}


def setting(name: str) -> str:
    """Return the effective value of a setting (environment first, then the config file, then the default)."""
    return SETTINGS[name].value()


def data_dir() -> Path:
    return Path(setting("data_dir")).expanduser()


def db_dir() -> Path:
    return Path(setting("db_dir")).expanduser()


# Folder names of the public sources inside the data directory, as PhysioNet and the
# benchmark repositories name them.
SOURCE_FOLDERS = {
    "mimic_iv": "mimic-iv-demo-2.2",
    "mimic_iv_raw": "mimic-iv-demo-2.2",
    "eicu": "eicu-demo-2.0.1",
    "mimicsql": "mimic-iii-demo-1.4",
}
