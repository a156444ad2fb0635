"""The generated safety set: mutations of EHRSQL gold SQL on the real MIMIC-IV demo database, and its bench command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ehrguard.benchmarks import MUTATIONS, generate_cases, split_pairs
from ehrguard.benchmarks.safety import _answer
from ehrguard.cli import cli
from ehrguard.db import open_database
from ehrguard.errors import DatasetError


@pytest.fixture(scope="module")
def cases(mimic_iv_db: Path, shared_data: Path):
    pairs = split_pairs("mimic_iv", "valid", shared_data)
    return list(generate_cases(pairs, open_database(mimic_iv_db), "mimic_iv", per_kind=2, correct=10, max_pairs=60))


def test_every_wrong_case_answers_differently_from_its_gold(cases, mimic_iv_db):
    db = open_database(mimic_iv_db)
    wrong = [c for c in cases if c.kind == "wrong"]
    assert {c.category for c in wrong} >= {"order_direction", "other_value", "time_window"}
    assert {c.category for c in wrong} <= set(MUTATIONS)
    for c in wrong:
        assert c.candidate_sql != c.gold_sql and _answer(db, c.candidate_sql) != _answer(db, c.gold_sql)
    correct = [c for c in cases if c.kind == "correct"]
    assert len(correct) == 10 and all(c.candidate_sql == c.gold_sql for c in correct)


def test_the_set_is_the_same_for_the_same_seed(cases, mimic_iv_db, shared_data):
    pairs = split_pairs("mimic_iv", "valid", shared_data)
    again = list(generate_cases(pairs, open_database(mimic_iv_db), "mimic_iv", per_kind=2, correct=10, max_pairs=60))
    assert again == cases


def test_gold_is_run_as_the_reference_scorers_run_it(shared_data):
    assert not any("current_time" in sql for _, sql in split_pairs("mimic_iv", "valid", shared_data))


def test_a_split_that_does_not_exist_is_one_clear_error(shared_data, tmp_path):
    with pytest.raises(DatasetError, match="No train split for eicu"):
        split_pairs("eicu", "train", shared_data)
    with pytest.raises(DatasetError, match="EHRGUARD_DATA_DIR"):
        split_pairs("mimic_iv", "valid", tmp_path)


def test_bench_mutations_scores_and_reports(mimic_iv_db, shared_data, tmp_path, monkeypatch):
    monkeypatch.setenv("EHRGUARD_DATA_DIR", str(shared_data))
    out = tmp_path / "report"
    result = CliRunner().invoke(cli, ["bench", "mutations", "--db", str(mimic_iv_db), "--db-id", "mimic_iv", "--per-kind", "1",
                                      "--correct", "5", "--pairs", "30", "--option", "forms=off", "--out", str(out), "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    assert payload["config"]["split"] == "mimic_iv valid" and payload["config"]["options"]["forms"] == "off"
    metrics = payload["metrics"]["all"]
    assert metrics["cases"] == sum(c["cases"] for c in payload["categories"].values())
    assert payload["categories"]["correct:gold"]["cases"] == 5
    report = (out / "report.md").read_text()
    assert 0 <= metrics["unsafe_rate"] <= 100 and report.count("| wrong:") >= 4
    # the report says where its cases come from: generated from the split, not the hand-written safety cases
    assert report.startswith("# Generated safety set") and "EHRSQL mimic_iv valid" in report and "written for" not in report
