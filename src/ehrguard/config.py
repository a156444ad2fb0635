"""Settings: one table of name, default and help that drives the CLI, the environment and the docs.

Every setting can come from a command-line flag, an ``EHRGUARD_<NAME>`` environment
variable, the config file (TOML, ``name = value``; see :func:`config_file`), or its default,
in that order of precedence.

Each setting has a type (text, path, int, float, on/off switch, choice) and, for numbers,
bounds. Values are parsed and checked in one place, :meth:`Setting.parse`, wherever they
come from: the environment or the file (:func:`setting_value` and the typed accessors
:func:`int_setting`, :func:`float_setting`, :func:`switch_setting`, :func:`path_setting`),
or a flag or argument that overrides a setting (:func:`parse_setting`). A bad value is a
one-line :class:`~ehrguard.errors.ConfigError` naming the setting, its source and the fix.
"""

from __future__ import annotations

import difflib
import math
import os
from dataclasses import dataclass
from numbers import Integral, Real
from pathlib import Path
from typing import Literal, cast

from ehrguard.errors import ConfigError


def _user_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ehrguard"


def cache_dir() -> Path:
    """ehrguard's cache folder (``$XDG_CACHE_HOME/ehrguard``, else ``~/.cache/ehrguard``): the default home of built
    databases, the LLM cache and the audit log, and of files derived once from installed ones."""
    return _user_cache_dir()


def config_file() -> Path:
    """``$EHRGUARD_CONFIG``, or ``~/.config/ehrguard/config.toml``."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(os.environ.get("EHRGUARD_CONFIG") or Path(base) / "ehrguard" / "config.toml")


_PARSED: dict[tuple[str, int], dict[str, str]] = {}  # (path, mtime) -> values: settings are read per item


def _file_values() -> dict[str, str]:
    path = config_file()
    try:
        if not path.is_file():
            if os.environ.get("EHRGUARD_CONFIG"):  # named on purpose: a typo must not fall back to defaults unseen
                raise ConfigError(f"EHRGUARD_CONFIG names {path}, which is not a file: create it, or unset EHRGUARD_CONFIG "
                                  "to use ~/.config/ehrguard/config.toml.")
            return {}
        key = (str(path), path.stat().st_mtime_ns)
    except OSError:
        return {}
    if key not in _PARSED:
        import tomllib

        try:
            data = tomllib.loads(path.read_text())
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"Cannot read the config file {path}: {exc}") from exc
        _PARSED.clear()
        _PARSED[key] = {str(k): str(v) for k, v in data.items()}
    return _PARSED[key]


Kind = Literal["text", "path", "int", "float", "switch", "choice"]
SettingValue = str | int | float | bool | Path | None

# How on/off settings may be spelled (a TOML ``true`` arrives as "True"); "on"/"off" is canonical.
_SWITCH_WORDS = {"on": True, "true": True, "yes": True, "1": True, "off": False, "false": False, "no": False, "0": False}


@dataclass(frozen=True)
class _Origin:
    """Where a value came from and how to fix it there: the two halves of a one-line ConfigError."""

    where: str
    fix: str


@dataclass(frozen=True)
class Setting:
    """One setting: its name, the values it takes, its default and its help (the README table's row).

    ``default`` is text, as it would be written in the environment. It may name ``{cache}``
    (``$XDG_CACHE_HOME/ehrguard``) or ``{data_dir}`` (the effective data directory); both are
    resolved when the setting is read. Numbers must be finite and lie in ``minimum``..``maximum``
    (``minimum`` itself excluded when ``above_minimum``); ``unit`` says what they count.
    """

    name: str
    default: str
    help: str
    kind: Kind = "text"
    minimum: float | None = None
    maximum: float | None = None
    above_minimum: bool = False
    unit: str = ""
    choices: tuple[str, ...] = ()
    secret: bool = False  # never printed or logged

    @property
    def env(self) -> str:
        return "EHRGUARD_" + self.name.upper()

    def default_value(self) -> str:
        """The default, with ``{cache}`` and ``{data_dir}`` resolved on this machine."""
        text = self.default
        if "{cache}" in text:
            text = text.replace("{cache}", str(_user_cache_dir()))
        if "{data_dir}" in text:
            text = text.replace("{data_dir}", str(data_dir()))
        return text

    def documented_default(self) -> str:
        """The default as the README and ``--help`` show it: the same on every machine, empty for secrets."""
        if self.secret:
            return ""
        return self.default.replace("{cache}", "~/.cache/ehrguard").replace("{data_dir}", "$EHRGUARD_DATA_DIR")

    def accepts(self) -> str:
        """The valid values in words, e.g. ``a whole number of rows from 1 to 1000000``."""
        if self.kind in ("int", "float"):
            number = "a whole number" if self.kind == "int" else "a finite number"
            return f"{number} of {self.unit} {self._range()}" if self.unit else f"{number} {self._range()}"
        if self.kind == "switch":
            return "on or off"
        if self.kind == "choice":
            return "one of " + ", ".join(self.choices)
        return "a path" if self.kind == "path" else "text"

    def doc(self) -> str:
        """The README's meaning column: the help, and the range of a number."""
        return f"{self.help}; {self._range()}" if self.kind in ("int", "float") else self.help

    def _range(self) -> str:
        low, high = _number(self.minimum), _number(self.maximum)
        if self.above_minimum:
            return f"above {low} and at most {high}"
        return f"from {low} to {high}"

    def lookup(self) -> tuple[str, _Origin]:
        """The raw text of the effective value and where it came from: environment, then config file, then default."""
        if os.environ.get(self.env):
            return os.environ[self.env], _Origin(
                f"the environment variable {self.env}",
                f"Set {self.env} to such a value, or unset it to use the default ({self.documented_default()})",
            )
        from_file = _file_values().get(self.name)
        if from_file:
            path = config_file()
            return from_file, _Origin(f"the config file {path}", f"Fix {self.name} in {path}, or remove it to use the default")
        return self.default_value(), _Origin("the built-in default", "This is a bug in ehrguard's settings table (config.py)")

    def given(self, source: str) -> _Origin:
        """The origin of a value passed as a flag (``--timeout``) or as an argument (``timeout_s``)."""
        if source.startswith("-"):
            default = self.documented_default()
            return _Origin(f"the flag {source}", f"Pass {source} with such a value (default {default}, or set {self.env})")
        return _Origin(f"the argument {source}", f"Pass such a value, or {source}=None to use the setting {self.env}")

    def parse(self, value: object, origin: _Origin) -> SettingValue:
        """The typed value: int, float, bool (switches), Path (None when empty), or str.

        Raises:
            ConfigError: the value is not of this setting's type or is out of its range.
        """
        if self.kind in ("int", "float"):
            return self._parse_number(value, origin)
        if self.kind == "switch":
            if isinstance(value, bool):
                return value
            word = str(value).strip().lower()
            if word not in _SWITCH_WORDS:
                raise self._error(value, origin)
            return _SWITCH_WORDS[word]
        if self.kind == "choice":
            word = str(value).strip().lower()
            if word not in self.choices:
                close = difflib.get_close_matches(word, self.choices, n=1)
                raise self._error(value, origin, f" Did you mean {close[0]!r}?" if close else "")
            return word
        if self.kind == "path":
            text = str(value).strip()
            return Path(text).expanduser() if text else None
        return str(value)

    def _parse_number(self, value: object, origin: _Origin) -> int | float:
        number: int | float | None = None
        if isinstance(value, bool):
            number = None
        elif self.kind == "int" and isinstance(value, Integral):
            number = int(value)
        elif self.kind == "float" and isinstance(value, Real):
            number = float(value)
        elif isinstance(value, str):
            try:
                number = int(value.strip()) if self.kind == "int" else float(value.strip())
            except ValueError:
                number = None
        if number is None or not math.isfinite(number) or not self._in_range(number):
            raise self._error(value, origin)
        return number

    def _in_range(self, number: float) -> bool:
        if self.minimum is not None and (number < self.minimum or (self.above_minimum and number == self.minimum)):
            return False
        return self.maximum is None or number <= self.maximum

    def _error(self, value: object, origin: _Origin, hint: str = "") -> ConfigError:
        shown = "(hidden)" if self.secret else repr(value) if isinstance(value, str) else str(value)
        return ConfigError(f"Bad {self.name} {shown} from {origin.where}: expected {self.accepts()}.{hint} {origin.fix}.")

    def value(self) -> str:
        """The effective value as text, validated; switches read ``on``/``off`` and choices their canonical spelling."""
        raw, origin = self.lookup()
        parsed = self.parse(raw, origin)
        if self.kind == "switch":
            return "on" if parsed else "off"
        if self.kind == "choice":
            return str(parsed)
        return raw.strip() if self.kind in ("int", "float") else raw


def _number(x: float | None) -> str:
    if x is None:
        return "any"
    return str(int(x)) if float(x).is_integer() else repr(float(x))


SETTINGS: dict[str, Setting] = {
    s.name: s
    for s in (
        Setting(
            "data_dir",
            "{cache}/data",
            "where the source datasets live (`mimic-iv-demo-2.2/`, `eicu-demo-2.0.1/`, `mimic-iii-demo-1.4/`, `ehrsql-2024/`, "
            "`scare/`, ...)",
            kind="path",
        ),
        Setting("db_dir", "{cache}/databases", "where built databases go and are found by name (`mimic_iv.sqlite`, ...)", kind="path"),
        # SCARE and EHRSQL execute each query with a 60 s limit; an hour is more than any benchmark query needs.
        Setting("query_timeout", "60", "seconds per query, enforced by the engine (SCARE and EHRSQL use 60)",
                kind="float", minimum=0, above_minimum=True, maximum=3600, unit="seconds"),
        # execution_match reads up to a million rows to compare result sets; no answer needs more.
        Setting("max_rows", "10000", "row cap per query result; a capped result is flagged truncated",
                kind="int", minimum=1, maximum=1_000_000, unit="rows"),
        # A result is bounded in bytes as well as rows: 200 rows of 5 MB blobs must not exhaust a server.
        Setting("max_result_bytes", "16777216", "byte cap per query result, counted while fetching; a capped result is flagged "
                "truncated with the reason", kind="int", minimum=1024, maximum=1 << 30, unit="bytes"),
        Setting("max_value_bytes", "1048576", "longest text or blob value kept in a result; a longer one is cut and the result flagged "
                "truncated", kind="int", minimum=64, maximum=1 << 30, unit="bytes"),
        Setting("query_memory", "2048", "memory for query execution: SQLite's heap limit and DuckDB's memory_limit; a query that needs "
                "more fails with a memory error", kind="int", minimum=64, maximum=1 << 20, unit="MiB"),
        Setting("max_sql_chars", "100000", "longest SQL text that is parsed, checked or run; longer SQL is refused before the engine "
                "sees it", kind="int", minimum=100, maximum=10_000_000, unit="characters"),
        Setting("query_isolation", "process", "`process`: each query runs in a worker process that is killed and replaced at its "
                "deadline, with its memory capped; `off`: in this process (faster to start, limits enforced by the engine only)",
                kind="choice", choices=("process", "off")),
        Setting("max_concurrent_queries", "4", "requests running SQL at once in a server (`POST /v1/sql`, offline `/v1/verify` and "
                "`/v1/ask`), at most half per token (all with auth off); more wait up to a second, then get a busy error (query "
                "workers per database: twice this)",
                kind="int", minimum=1, maximum=256, unit="queries"),
        Setting("llm_base_url", "", "an OpenAI-compatible server: vLLM, Ollama `http://localhost:11434/v1`, llama.cpp, LM Studio, ...; "
                "empty: api.openai.com"),
        Setting("llm_api_key", "", "the key for `openai/` models (falls back to `$OPENAI_API_KEY`); never logged or cached", secret=True),
        Setting("llm_timeout", "120", "seconds to wait for one model reply",
                kind="float", minimum=0, above_minimum=True, maximum=3600, unit="seconds"),
        Setting("llm_retries", "4", "retries of a failed call (429, 5xx, timeouts), with exponential backoff and jitter",
                kind="int", minimum=0, maximum=20, unit="retries"),
        Setting("llm_concurrency", "8", "calls in flight at once, per model", kind="int", minimum=1, maximum=1024, unit="calls"),
        Setting("llm_cache", "on", "response cache: `on`, `off`, `replay-only` (reproduce a run exactly; a miss is an error)",
                kind="choice", choices=("on", "off", "replay-only")),
        Setting("llm_cache_path", "{cache}/llm_cache.sqlite", "the response cache (SQLite)", kind="path"),
        Setting("llm_prices", "", "JSON price table for cost estimates: `{model: {input: $, output: $}}` per million tokens", kind="path"),
        Setting("calibration", "auto", "the offline verifier's calibrated confidence: `auto` (the shipped fit; the one a database's "
                "profile names, for the mimic-code layout), `default` (the SCARE-fitted one for every database), `off` (the "
                "uncalibrated bar on the answerable probability) or the path of a fit from `ehrguard train calibration`"),
        Setting("template_bank", "on", "`off`: the offline verifier ignores the known-question banks (compiled from EHRSQL, shipped)",
                kind="switch"),
        Setting("tokenizer", "", "another MiniLM tokenizer file; empty: the copy shipped with ehrguard (without any tokenizer the "
                "offline verifier uses its lexical model)", kind="path"),
        Setting("audit_path", "{cache}/audit.sqlite", "the audit log of every decision (SQLite)", kind="path"),
        Setting("audit_retention_days", "365", "audit entries older than this many days are deleted; 0 keeps everything",
                kind="float", minimum=0, maximum=36_500, unit="days"),
        Setting("audit_store_values", "off", "`on`: also store result rows in the audit log (they can hold patient data)", kind="switch"),
        Setting("receipt_key", "", "the secret that signs answer receipts (HMAC-SHA256); empty: receipts carry a digest but no "
                "signature", secret=True),
        Setting("receipt_key_file", "", "a file holding the receipt key (used when `receipt_key` is empty)", kind="path"),
        Setting("api_tokens", "", "comma-separated bearer tokens the REST API accepts; never logged", secret=True),
        Setting("api_rate_limit", "120", "REST API requests per minute per token",
                kind="int", minimum=1, maximum=100_000, unit="requests per minute"),
        Setting("api_sql", "on", "`off`: disable `POST /v1/sql` (raw safe execution) in the REST API", kind="switch"),
        Setting("api_models", "", "comma-separated `provider/model` names REST callers may choose for LLM methods and `ask`; "
                "empty: any served model (never `local/`), up to 16 different names per server run"),
    )
}


def _get(name: str, kind: Kind | None = None) -> Setting:
    if name not in SETTINGS:
        close = difflib.get_close_matches(name, SETTINGS, n=1)
        raise KeyError(f"No setting {name!r}." + (f" Did you mean {close[0]!r}?" if close else ""))
    s = SETTINGS[name]
    if kind is not None and s.kind != kind:
        raise TypeError(f"{name} is a {s.kind} setting, not {kind}.")
    return s


def setting(name: str) -> str:
    """The effective value of a setting as validated text (environment first, then the config file, then the default).

    Raises:
        ConfigError: the value is not valid for the setting; the message names where it came from.
    """
    return _get(name).value()


def setting_value(name: str) -> SettingValue:
    """The effective value of a setting, parsed: int, float, bool (on/off), Path (None when empty) or str.

    Raises:
        ConfigError: the value is not valid for the setting; the message names where it came from.
    """
    s = _get(name)
    return s.parse(*s.lookup())


def parse_setting(name: str, value: object, *, source: str) -> SettingValue:
    """Check a value that overrides a setting, by the setting's own type and bounds (the one validator).

    Args:
        name: the setting, e.g. ``query_timeout``.
        value: the value as given (text from a flag, or a number from a caller).
        source: where it was given: a flag (``--timeout``) or an argument name (``timeout_s``).

    Raises:
        ConfigError: one line naming the setting, the source, what is accepted and what to do.

    Examples:
        >>> parse_setting("query_timeout", "30", source="--timeout")
        30.0
    """
    s = _get(name)
    return s.parse(value, s.given(source))


def int_setting(name: str, value: int | None = None, *, source: str | None = None) -> int:
    """The effective value of an integer setting, or ``value`` (given as ``source``) checked against its bounds."""
    s = _get(name, "int")
    return cast(int, s.parse(*s.lookup()) if value is None else s.parse(value, s.given(source or name)))


def float_setting(name: str, value: float | None = None, *, source: str | None = None) -> float:
    """The effective value of a number setting, or ``value`` (given as ``source``) checked against its bounds."""
    s = _get(name, "float")
    return cast(float, s.parse(*s.lookup()) if value is None else s.parse(value, s.given(source or name)))


def switch_setting(name: str) -> bool:
    """The effective value of an on/off setting."""
    s = _get(name, "switch")
    return cast(bool, s.parse(*s.lookup()))


def path_setting(name: str) -> Path:
    """The effective value of a path setting, with ``~`` expanded.

    Raises:
        ConfigError: the setting is empty (only optional paths, such as ``llm_prices``, can be).
    """
    s = _get(name, "path")
    path = s.parse(*s.lookup())
    if path is None:
        raise ConfigError(f"{name} is not set: set {s.env} to a path.")
    return cast(Path, path)


def check_settings() -> None:
    """Every setting given in the environment or the config file, checked now: a bad value stops every command with one
    line naming it, not only the commands that happen to read it (``EHRGUARD_QUERY_TIMEOUT=-1`` is wrong for ``verify``
    too).

    Raises:
        ConfigError: the first bad value, where it came from and how to fix it there.
    """
    given = _file_values()
    for s in SETTINGS.values():
        if os.environ.get(s.env) or given.get(s.name):
            s.value()


def settings_markdown() -> str:
    """The README's settings table, rendered from :data:`SETTINGS` (tests/test_config.py keeps the README equal to it)."""
    lines = ["| environment | default | meaning |", "|---|---|---|"]
    for s in SETTINGS.values():
        default = f"`{s.documented_default()}`" if s.documented_default() else ""
        lines.append(f"| `{s.env}` | {default} | {s.doc()} |")
    return "\n".join(lines)


def data_dir() -> Path:
    return path_setting("data_dir")


def db_dir() -> Path:
    return path_setting("db_dir")

