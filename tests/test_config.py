"""The settings table: typed values, one validator, precedence, the README table, and limits that reach the engine."""

from __future__ import annotations

import math
import re
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from ehrguard import config
from ehrguard.cli import cli
from ehrguard.config import SETTINGS, float_setting, int_setting, parse_setting, setting, setting_value, switch_setting
from ehrguard.db import open_database
from ehrguard.db.engine import DEFAULT_MAX_ROWS, DEFAULT_TIMEOUT_S
from ehrguard.errors import ConfigError, QueryTimeoutError

ROOT = Path(__file__).resolve().parents[1]
ENDLESS = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"


@pytest.fixture()
def clean_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No setting in the environment, and an empty config file of the test's own."""
    for s in SETTINGS.values():
        monkeypatch.delenv(s.env, raising=False)
    path = tmp_path / "config.toml"
    path.write_text("")
    monkeypatch.setenv("EHRGUARD_CONFIG", str(path))
    return path


def test_every_setting_parses_its_default(clean_env: Path):
    types = {"text": str, "path": (Path, type(None)), "int": int, "float": float, "switch": bool, "choice": str}
    for name, s in SETTINGS.items():
        value = setting_value(name)
        assert isinstance(value, types[s.kind]), (name, value)
        assert setting(name) == s.value()
        if s.kind in ("int", "float"):
            assert s.minimum is not None and s.maximum is not None, f"{name} needs bounds"
        if s.kind == "choice":
            assert s.default in s.choices
        assert "|" not in s.help, f"{name}: a | would break the README table"
    assert setting_value("tokenizer") is None  # empty: the tokenizer shipped with ehrguard
    assert (float_setting("query_timeout"), int_setting("max_rows")) == (60.0, 10_000) == (DEFAULT_TIMEOUT_S, DEFAULT_MAX_ROWS)


def test_environment_overrides_file_overrides_default(clean_env: Path, monkeypatch: pytest.MonkeyPatch):
    assert float_setting("query_timeout") == 60.0 and switch_setting("api_sql") is True
    clean_env.write_text("query_timeout = 30\nmax_rows = 500\napi_sql = false\nllm_cache = 'replay-only'\n")
    assert float_setting("query_timeout") == 30.0
    assert int_setting("max_rows") == 500
    assert switch_setting("api_sql") is False and setting("api_sql") == "off"
    assert setting("llm_cache") == "replay-only"
    monkeypatch.setenv("EHRGUARD_QUERY_TIMEOUT", "5")
    monkeypatch.setenv("EHRGUARD_API_SQL", "ON")
    assert float_setting("query_timeout") == 5.0
    assert int_setting("max_rows") == 500
    assert setting("api_sql") == "on"


def test_tokenizer_is_a_setting(clean_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from ehrguard.verify.offline import embedding
    from ehrguard.verify.offline.embedding import SHIPPED_TOKENIZER, tokenizer_path

    monkeypatch.setenv("EHRGUARD_DATA_DIR", str(tmp_path / "data"))
    assert tokenizer_path() == SHIPPED_TOKENIZER and SHIPPED_TOKENIZER.is_file()  # no data dir needed
    own = tmp_path / "tok.json"
    own.write_text("{}")
    clean_env.write_text(f"tokenizer = '{own}'\n")
    assert tokenizer_path() == own
    monkeypatch.setenv("EHRGUARD_TOKENIZER", str(tmp_path / "missing.json"))
    assert tokenizer_path() == SHIPPED_TOKENIZER  # a path that points nowhere falls back to the shipped copy
    default = tmp_path / "data" / "models" / "minilm-tokenizer.json"
    default.parent.mkdir(parents=True)
    default.write_text("{}")
    monkeypatch.setattr(embedding, "SHIPPED_TOKENIZER", tmp_path / "gone.json")
    assert tokenizer_path() == default  # then to the data dir's copy


BAD = [
    ("query_timeout", "nan"),
    ("query_timeout", "inf"),
    ("query_timeout", "-inf"),
    ("query_timeout", "-1"),
    ("query_timeout", "0"),
    ("query_timeout", "abc"),
    ("query_timeout", "3601"),
    ("max_rows", "0"),
    ("max_rows", "-1"),
    ("max_rows", "1.5"),
    ("max_rows", "nan"),
    ("max_rows", "1000001"),
    ("llm_timeout", "0"),
    ("llm_timeout", "nan"),
    ("llm_retries", "-1"),
    ("llm_retries", "21"),
    ("llm_concurrency", "0"),
    ("api_rate_limit", "0"),
    ("api_rate_limit", "1e3"),
    ("audit_retention_days", "-1"),
    ("audit_retention_days", "inf"),
    ("llm_cache", "replay"),
    ("template_bank", "maybe"),
]


@pytest.mark.parametrize(("name", "value"), BAD)
def test_bad_values_are_one_line_errors_naming_the_setting_and_source(name: str, value: str, clean_env: Path,
                                                                     monkeypatch: pytest.MonkeyPatch):
    env = SETTINGS[name].env
    monkeypatch.setenv(env, value)
    with pytest.raises(ConfigError) as info:
        setting_value(name)
    message = str(info.value)
    assert name in message and f"environment variable {env}" in message and "\n" not in message
    with pytest.raises(ConfigError):
        setting(name)  # the text accessor the older call sites use validates too
    monkeypatch.delenv(env)
    clean_env.write_text(f"{name} = '{value}'\n")
    with pytest.raises(ConfigError, match=re.escape(str(clean_env))):
        setting_value(name)
    with pytest.raises(ConfigError, match=f"{name} .* from the flag --flag:"):
        parse_setting(name, value, source="--flag")


def test_numbers_from_callers_are_checked_the_same_way():
    for bad in (math.nan, math.inf, -1.0, 0, 3601):
        with pytest.raises(ConfigError, match="from the argument timeout_s"):
            float_setting("query_timeout", bad, source="timeout_s")
    with pytest.raises(ConfigError):
        int_setting("max_rows", True, source="max_rows")  # type: ignore[arg-type]
    assert float_setting("query_timeout", 3600, source="timeout_s") == 3600.0
    assert int_setting("max_rows", 1_000_000, source="max_rows") == 1_000_000
    assert int_setting("llm_retries", 0, source="retries") == 0  # no retries is meaningful
    assert float_setting("audit_retention_days", 0, source="retention_days") == 0.0  # 0 keeps everything
    with pytest.raises(ConfigError, match="Did you mean 'replay-only'"):
        parse_setting("llm_cache", "replay_only", source="--cache")


def test_readme_settings_table_is_the_settings_table():
    readme = (ROOT / "README.md").read_text()
    start = readme.index("| environment | default | meaning |")
    end = readme.index("\n\n", start)
    assert readme[start:end] == config.settings_markdown(), (
        "README.md's table is rendered from config.SETTINGS: paste config.settings_markdown()")
    for s in SETTINGS.values():
        if s.secret:
            assert f"| `{s.env}` |  |" in readme, f"{s.env} is secret: no default is shown"


@pytest.mark.parametrize("args", [["--timeout", "nan"], ["--timeout", "-1"], ["--timeout", "inf"], ["--max-rows", "0"]])
def test_sql_run_refuses_bad_limits_in_one_line(args: list[str], synthetic_db: Path, clean_env: Path):
    result = CliRunner().invoke(cli, ["sql", "run", "--db", str(synthetic_db), "SELECT 1", *args])
    assert result.exit_code != 0
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: Bad "), result.output
    assert f"from the flag {args[0]}" in lines[0]
    assert "Traceback" not in result.output and isinstance(result.exception, SystemExit)


def test_sql_run_reads_its_defaults_from_the_settings(synthetic_db: Path, clean_env: Path, monkeypatch: pytest.MonkeyPatch):
    runner = CliRunner()
    help_text = runner.invoke(cli, ["sql", "run", "-h"]).output
    assert re.search(r"default: \(?60\)?\]", help_text) and re.search(r"default: \(?10000\)?\]", help_text), help_text
    monkeypatch.setenv("EHRGUARD_MAX_ROWS", "3")
    result = runner.invoke(cli, ["sql", "run", "--db", str(synthetic_db), "SELECT subject_id FROM patients", "--json"])
    assert result.exit_code == 0, result.output
    assert '"truncated": true' in result.output and '"row_count": 3' in result.output
    monkeypatch.setenv("EHRGUARD_QUERY_TIMEOUT", "nan")
    result = runner.invoke(cli, ["sql", "run", "--db", str(synthetic_db), "SELECT 1"])
    assert result.exit_code != 0
    assert result.output.strip().splitlines() == [result.output.strip()]
    assert "environment variable EHRGUARD_QUERY_TIMEOUT" in result.output


def test_engine_stops_a_query_at_the_timeout_setting(synthetic_db: Path, clean_env: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("EHRGUARD_QUERY_TIMEOUT", "1")
    db = open_database(synthetic_db)
    started = time.monotonic()
    with pytest.raises(QueryTimeoutError, match="longer than 1 s"):
        db.execute(ENDLESS)
    assert 0.9 <= time.monotonic() - started < 3.0
    assert db.execute("SELECT count(*) FROM patients").rows == [(24,)]


def test_engine_uses_the_row_cap_setting_and_checks_its_arguments(synthetic_db: Path, clean_env: Path,
                                                                   monkeypatch: pytest.MonkeyPatch):
    db = open_database(synthetic_db)
    assert not db.execute("SELECT subject_id FROM patients").truncated
    monkeypatch.setenv("EHRGUARD_MAX_ROWS", "5")
    result = db.execute("SELECT subject_id FROM patients")
    assert len(result.rows) == 5 and result.truncated
    assert len(db.execute("SELECT subject_id FROM patients", max_rows=10).rows) == 10
    for kwargs in ({"timeout_s": math.nan}, {"timeout_s": -1}, {"max_rows": 0}, {"max_rows": 1_000_001}):
        with pytest.raises(ConfigError, match=f"from the argument {next(iter(kwargs))}"):
            db.execute("SELECT 1", **kwargs)


def test_a_config_file_named_but_missing_is_a_one_line_error(synthetic_db: Path, clean_env: Path, monkeypatch: pytest.MonkeyPatch):
    missing = clean_env.with_name("confg.toml")  # a typo in EHRGUARD_CONFIG must not quietly mean "all defaults"
    monkeypatch.setenv("EHRGUARD_CONFIG", str(missing))
    with pytest.raises(ConfigError, match="EHRGUARD_CONFIG names .*confg.toml, which is not a file"):
        setting("query_timeout")
    result = CliRunner().invoke(cli, ["sql", "run", "--db", str(synthetic_db), "SELECT 1"])
    lines = result.output.strip().splitlines()
    assert result.exit_code != 0 and len(lines) == 1 and "unset EHRGUARD_CONFIG" in lines[0], result.output
    monkeypatch.delenv("EHRGUARD_CONFIG")  # the default place may be missing: then there is no file, and no error
    monkeypatch.setenv("XDG_CONFIG_HOME", str(clean_env.parent / "nowhere"))
    assert setting("query_timeout") == "60"


def test_a_bad_setting_stops_every_command_not_only_those_that_read_it(synthetic_db: Path, clean_env: Path,
                                                                      monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("EHRGUARD_QUERY_TIMEOUT", "-1")
    for args in (["verify", "-q", "How many patients are there?", "--sql", "SELECT 1", "--db", str(synthetic_db)],
                 ["db", "list"]):
        result = CliRunner().invoke(cli, args)
        assert result.exit_code != 0 and isinstance(result.exception, SystemExit), (args, result.output)
        assert "EHRGUARD_QUERY_TIMEOUT" in result.output and "Traceback" not in result.output, result.output
    monkeypatch.delenv("EHRGUARD_QUERY_TIMEOUT")
    clean_env.write_text("max_rows = 0\n")  # the config file's values are checked the same way
    result = CliRunner().invoke(cli, ["db", "list"])
    assert result.exit_code != 0 and "max_rows" in result.output and str(clean_env) in result.output, result.output
