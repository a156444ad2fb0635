"""The real commands through click's runner."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from ehrguard.cli import cli


def _commands(group: click.Group, prefix: tuple[str, ...] = ()):
    ctx = click.Context(group)
    for name in group.list_commands(ctx):  # the top level imports its commands by name, on first use
        cmd = group.get_command(ctx, name)
        assert cmd is not None, name
        yield (*prefix, name), cmd
        if isinstance(cmd, click.Group):
            yield from _commands(cmd, (*prefix, name))


def test_the_command_line_lists_every_command_and_loads_only_the_one_it_runs():
    import subprocess
    import sys

    assert len(list(_commands(cli))) > 30
    names = {path[0] for path, _ in _commands(cli)}
    assert {"db", "bench", "verify", "serve", "mcp", "doctor", "train", "sql"} <= names
    code = ("import sys; from ehrguard.cli import cli; from click.testing import CliRunner; "
            "r = CliRunner().invoke(cli, ['sql', '--help']); assert r.exit_code == 0, r.output; "
            "print(sorted(m for m in sys.modules if m.startswith(('ehrguard.cli.', 'fastapi', 'mcp', 'matplotlib', 'onnxruntime'))))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True).stdout
    assert "ehrguard.cli.sql" in loaded and "ehrguard.cli.options" in loaded
    for heavy in ("ehrguard.cli.bench", "ehrguard.cli.serve", "fastapi", "mcp", "matplotlib", "onnxruntime"):
        assert f"'{heavy}" not in loaded, (heavy, loaded)


def test_every_command_has_help_text():
    runner = CliRunner()
    for path, cmd in _commands(cli):
        assert cmd.help, f"ehrguard {' '.join(path)} has no help text"
        result = runner.invoke(cli, [*path, "-h"])
        assert result.exit_code == 0, (path, result.output)
        assert "Usage:" in result.output


def test_sql_run_json_and_refusal(synthetic_db: Path):
    runner = CliRunner()
    result = runner.invoke(cli, ["sql", "run", "--db", str(synthetic_db), "SELECT count(*) AS n FROM patients", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["rows"] == [[24]]
    result = runner.invoke(cli, ["sql", "run", "--db", str(synthetic_db), "DELETE FROM patients"])
    assert result.exit_code != 0


@pytest.mark.subprocess
def test_main_turns_errors_into_one_message(synthetic_db: Path):
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "ehrguard", "sql", "run", "--db", str(synthetic_db), "DROP TABLE patients"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 1
    assert "Error: Only SELECT/WITH queries may run here, not DROP" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_db_build_and_schema_and_values(tmp_path: Path):
    runner = CliRunner()
    out = tmp_path / "s.sqlite"
    result = runner.invoke(cli, ["db", "build", "synthetic", "--out", str(out), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["synthetic"] is True and report["tables"]["patients"] == 24
    result = runner.invoke(cli, ["db", "schema", "--db", str(out), "--format", "json"])
    assert json.loads(result.output)["dialect"] == "sqlite"
    assert json.loads(runner.invoke(cli, ["db", "schema", "--db", str(out), "--json"]).output) == json.loads(result.output)
    ddl = runner.invoke(cli, ["db", "schema", "--db", str(out), "--format", "ddl"]).output
    assert "CREATE TABLE patients" in ddl
    result = runner.invoke(cli, ["db", "values", "--db", str(out), "d_labitems", "label", "glucos", "--json"])
    assert json.loads(result.output)["nearest"][0]["value"] == "glucose"


def test_demo_falls_back_to_synthetic_without_data(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("EHRGUARD_DATA_DIR", str(tmp_path / "empty"))
    runner = CliRunner()
    result = runner.invoke(cli, ["demo", "--out-dir", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout[result.stdout.index("{"):])
    assert summary["synthetic"] is True and summary["unsafe_refused"] is True


def test_db_check_prints_fidelity(mimic_iv_db: Path, shared_data: Path):
    runner = CliRunner()
    split = shared_data / "ehrsql-2024" / "mimic_iv" / "valid"
    result = runner.invoke(cli, ["db", "check", "mimic_iv", "--db", str(mimic_iv_db), "--ehrsql", str(split), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["total"] == 931 and data["share"] >= 0.95 and "chartevents" in data["per_table"]


def test_serve_on_a_busy_port_fails_at_once_in_one_line():
    import socket
    import time

    from ehrguard.errors import ConfigError

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        started = time.perf_counter()
        r = CliRunner().invoke(cli, ["serve", "--port", str(port), "--no-auth"])
    assert isinstance(r.exception, ConfigError) and f"127.0.0.1:{port}" in str(r.exception) and "--port" in str(r.exception)
    assert time.perf_counter() - started < 5  # before the models and banks load


@pytest.mark.subprocess
def test_serve_without_tokens_fails_in_one_line_without_waiting_for_its_warm_up(mimic_iv_db: Path, tmp_path: Path):
    import os
    import socket
    import subprocess
    import sys

    dbs = tmp_path / "dbs"
    dbs.mkdir()
    (dbs / "mimic_iv.sqlite").symlink_to(mimic_iv_db)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**{k: v for k, v in os.environ.items() if k != "EHRGUARD_API_TOKENS"}, "EHRGUARD_DB_DIR": str(dbs)}
    proc = subprocess.run([sys.executable, "-m", "ehrguard", "serve", "--port", str(port)], capture_output=True, text=True,
                          timeout=120, check=False, env=env)
    assert proc.returncode == 1 and "EHRGUARD_API_TOKENS" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert "ready:" not in proc.stdout  # it ended before the warm-up it had started in the background


def _cmdline(proc: Path) -> str:
    try:
        return (proc / "cmdline").read_bytes().decode(errors="replace")
    except OSError:  # gone meanwhile
        return ""


@pytest.mark.subprocess
def test_a_one_shot_verify_ends_without_teardown_and_loses_nothing(synthetic_db: Path, tmp_path: Path):
    """``ehrguard verify`` skips the interpreter's teardown (os._exit after the exit handlers): its output and the
    audit record must still be complete, and its query worker gone."""
    import os
    import shutil
    import sqlite3
    import subprocess
    import sys
    import time

    db = tmp_path / "synthetic.sqlite"  # a file of its own: no other test's workers read it
    shutil.copy(synthetic_db, db)
    audit = tmp_path / "audit.sqlite"
    env = {**os.environ, "EHRGUARD_AUDIT_PATH": str(audit)}
    question, sql = "How many patients are there?", "SELECT COUNT(DISTINCT subject_id) FROM patients"
    proc = subprocess.run([sys.executable, "-m", "ehrguard", "verify", "--db", str(db), "-q", question, "-s", sql, "--json"],
                          capture_output=True, text=True, timeout=120, check=False, env=env)
    assert proc.returncode == 0, proc.stderr
    verdict = json.loads(proc.stdout)  # the whole document, flushed
    assert verdict["action"] in ("preserve", "correct", "ambiguous", "unanswerable")
    with sqlite3.connect(audit) as conn:
        rows = conn.execute("SELECT interface, question, candidate_sql, action FROM decisions").fetchall()
    assert rows == [("cli", question, sql, verdict["action"])]
    time.sleep(0.5)  # a killed worker takes a moment to go
    alive = [p for p in Path("/proc").iterdir() if p.name.isdigit() and f"ehrguard.db.worker\0{db}" in _cmdline(p)]
    assert alive == [], "a query worker outlived the command"


@pytest.mark.subprocess
def test_a_verification_loads_no_server_plotting_or_llm_library(synthetic_db: Path):
    import subprocess
    import sys

    code = ("import sys; from ehrguard.cli import cli; from click.testing import CliRunner; "
            f"r = CliRunner().invoke(cli, ['verify', '--db', {str(synthetic_db)!r}, '-q', 'How many patients are there?', "
            "'-s', 'SELECT COUNT(*) FROM patients']); assert r.exit_code == 0, r.output; "
            "print(sorted({m.split('.')[0] for m in sys.modules}))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True).stdout
    assert "'onnxruntime'" in loaded and "'sqlglot'" in loaded  # what it does need, so the list is the real one
    for heavy in ("fastapi", "starlette", "uvicorn", "mcp", "matplotlib", "llama_cpp", "httpx", "openai"):
        assert f"'{heavy}'" not in loaded, heavy
