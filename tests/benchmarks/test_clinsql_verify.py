"""`bench clinsql-verify`: the separation figures (AUROC, precision at a recall) and a run over the published models'
SQL on the DuckDB MIMIC-IV demo."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ehrguard.benchmarks.clinsql_verify import (
    auroc,
    clinsql_verify_metrics,
    precision_at_recall,
    run_clinsql_verify,
    suspicion,
)
from ehrguard.cli import cli
from ehrguard.db import open_database
from ehrguard.errors import ConfigError, LLMError


def test_auroc_and_precision_at_recall_on_known_rankings():
    assert auroc([0.9, 0.8, 0.2, 0.1], [True, True, False, False]) == 1.0
    assert auroc([0.1, 0.2, 0.8, 0.9], [True, True, False, False]) == 0.0
    assert auroc([0.5, 0.5, 0.5, 0.5], [True, False, True, False]) == 0.5  # ties count half
    assert auroc([0.9, 0.4, 0.6, 0.1], [True, True, False, False]) == 0.75
    assert auroc([0.3], [True]) is None
    # flag from the top until 90% of positives are found, with every query tied at that score
    assert precision_at_recall([0.9, 0.8, 0.7, 0.1], [True, False, True, False], 0.9) == pytest.approx(2 / 3)
    assert precision_at_recall([0.9, 0.9, 0.1], [True, False, False], 0.5) == 0.5
    assert precision_at_recall([0.2], [False]) is None
    assert suspicion("preserve", 0.8) == pytest.approx(0.2) and suspicion("ambiguous", 0.8) == 0.8


def test_a_verifier_error_is_recorded_and_never_scored(shared_data: Path, mimic_iv_raw_db: Path):
    def failing(question: str, sql: str):
        raise LLMError("the endpoint timed out")

    db = open_database(mimic_iv_raw_db)
    records = run_clinsql_verify(shared_data / "clinsql", db, failing, models=["gpt-5-mini"], limit=3)
    assert len(records) == 6 and all(r["outcome"] == "verifier error" and r["suspicion"] is None for r in records)
    metrics = clinsql_verify_metrics(records)
    assert metrics["verifier_errors"] == 6 and metrics["graded"]["n"] == 0 and metrics["gold"]["kept"] == 0


def test_a_corrected_gold_query_is_counted_apart_with_the_checks_behind_it():
    gold = [{"model": "gold", "action": "preserve", "checks": []},
            {"model": "gold", "action": "correct", "checks": ["unknown_value", "value_not_in_data"]},
            {"model": "gold", "action": "ambiguous", "checks": [], "reason": "What do you mean by 'high'?"}]
    metrics = clinsql_verify_metrics(gold)["gold"]
    assert (metrics["kept"], metrics["answered"], metrics["abstained"], metrics["corrected"]) == (
        1, 2, {"ambiguous": 1}, {"unknown_value, value_not_in_data": 1})


def test_the_cli_measures_the_published_models_sql_on_the_demo(shared_data: Path, mimic_iv_raw_db: Path, tmp_path: Path):
    out = tmp_path / "report"
    r = CliRunner().invoke(cli, ["bench", "clinsql-verify", "--db", str(mimic_iv_raw_db), "--data", str(shared_data / "clinsql"),
                                 "--model", "gpt-5-mini", "--model", "SQLCoder-7B-2", "--limit", "12", "--out", str(out), "--json"])
    assert r.exit_code == 0, r.output
    metrics = json.loads(r.stdout)["metrics"]
    assert metrics["gold"]["n"] == 12 and metrics["gold"]["runs"] == 12
    assert metrics["graded"]["n"] == 24 and set(metrics["by_model"]) == {"gpt-5-mini", "SQLCoder-7B-2"}
    assert metrics["graded"]["auroc"] is not None and 0.0 <= metrics["graded"]["auroc"] <= 1.0
    records = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]
    assert len(records) == 36 and all("results_score" in rec and "action" in rec for rec in records)
    report = (out / "report.md").read_text()
    assert "| graded (all models) | 24 |" in report
    # the mimic-code layout's calibration was fitted on these gradings: the report says its figures are in sample
    config = json.loads((out / "report.json").read_text())["config"]
    assert config["calibration_in_sample"] == "calibration_mimic_code.json" and "**In sample**" in report
    assert all(r["details"]["sql"]["checks"] == sorted(r["checks"]) for r in records if r["action"] in ("preserve", "correct"))
    from ehrguard.benchmarks.clinsql_verify import calibration_in_sample
    from ehrguard.verify import database_context

    context = database_context(mimic_iv_raw_db)
    assert calibration_in_sample(context, "default", config["gradings"]) is None
    assert calibration_in_sample(context, "auto", {"gpt-5-mini": "0" * 64}) is None  # other gradings: not in sample
    r = CliRunner().invoke(cli, ["bench", "clinsql-verify", "--db", str(mimic_iv_raw_db), "--data", str(tmp_path)])
    assert isinstance(r.exception, ConfigError) and "No ClinSQL validation split" in str(r.exception)
