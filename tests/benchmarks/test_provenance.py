"""The in-sample warning: a run over the files the question models were trained on says so, a held-out fold does not."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
from click.testing import CliRunner

from ehrguard.benchmarks.provenance import in_sample
from ehrguard.benchmarks.rundir import file_sha256
from ehrguard.cli import cli
from ehrguard.verify.offline import CLASSES, MODEL_FILES, QuestionModel


def _model(path: Path, trained_on: dict) -> Path:
    QuestionModel(np.zeros((3, len(CLASSES)), np.float32), np.zeros(len(CLASSES), np.float32), False, trained_on).save(path)
    return path


def test_a_model_records_what_it_was_trained_on_and_older_models_load_without(tmp_path: Path):
    data = tmp_path / "mimic_iv_dev.json"
    data.write_text("[]")
    record = {"scare": {data.name: file_sha256(data)}, "excluded_fold": "2/5"}
    assert QuestionModel.load(_model(tmp_path / "m.npz", record)).trained_on == record
    np.savez_compressed(tmp_path / "old.npz", weights=np.zeros((3, len(CLASSES)), np.float32),
                        bias=np.zeros(len(CLASSES), np.float32), uses_embeddings=np.array(False), classes=np.array(CLASSES))
    assert QuestionModel.load(tmp_path / "old.npz").trained_on == {}


def test_in_sample_names_the_models_that_saw_the_runs_files_unless_the_run_is_their_held_out_fold(tmp_path: Path):
    seen, other = tmp_path / "mimic_iv_dev.json", tmp_path / "other.json"
    seen.write_text("[1]")
    other.write_text("[2]")
    whole = _model(tmp_path / "whole.npz", {"scare": {seen.name: file_sha256(seen)}, "excluded_fold": None})
    fold = _model(tmp_path / "fold.npz", {"scare": {seen.name: file_sha256(seen)}, "excluded_fold": "1/5"})
    options = {"question_model": str(whole), "lexical_model": str(fold)}
    lines = in_sample("offline", options, [seen, other])
    assert lines == ["The question model (whole.npz) was trained on the questions of mimic_iv_dev.json.",
                     "The lexical question model (fold.npz) was trained on the questions of mimic_iv_dev.json (all but fold "
                     "1/5, and this run is not that fold)."]
    assert in_sample("offline", options, [seen, other], fold="1/5") == [lines[0]]  # the held-out fold is honest
    assert in_sample("offline", options, [other]) == []  # other data: nothing overlaps
    assert in_sample("preserve_all", options, [seen]) == []  # no question models
    assert in_sample("offline", {"question_model": str(tmp_path / "missing.npz"), "lexical_model": str(fold)}, [seen],
                     fold="1/5") == []


def test_the_shipped_models_make_a_dev_run_in_sample_and_its_report_says_so(shared_data: Path, mimic_iv_db: Path, tmp_path: Path):
    assert QuestionModel.load(MODEL_FILES["minilm"]).trained_on["scare"]  # the shipped model saw the dev split
    (tmp_path / "mimic_iv.sqlite").symlink_to(mimic_iv_db)
    r = CliRunner().invoke(cli, ["bench", "scare", "--data", str(shared_data / "scare" / "mimic_iv_dev.json"), "--db-dir", str(tmp_path),
                                 "--method", "offline", "--sample", "8", "--out", str(tmp_path / "run")])
    assert r.exit_code == 0, r.output
    config = json.loads((tmp_path / "run" / "run.json").read_text())
    assert any("was trained on the questions of mimic_iv_dev.json" in line for line in config["in_sample"])
    assert "**IN-SAMPLE.**" in (tmp_path / "run" / "report.md").read_text()
    r = CliRunner().invoke(cli, ["bench", "scare", "--data", str(shared_data / "scare" / "mimic_iv_dev.json"), "--db-dir", str(tmp_path),
                                 "--method", "preserve_all", "--sample", "8", "--out", str(tmp_path / "keep")])
    assert r.exit_code == 0, r.output
    assert json.loads((tmp_path / "keep" / "run.json").read_text())["in_sample"] == []
    assert "IN-SAMPLE" not in (tmp_path / "keep" / "report.md").read_text()
    from ehrguard.benchmarks.compare import compare_runs

    rows = compare_runs([tmp_path / "run", tmp_path / "keep"], names=["offline, shipped models", "keep"])["runs"]
    assert rows[0]["name"] == "offline, shipped models (IN-SAMPLE)" and rows[0]["in_sample"] and rows[1]["name"] == "keep"



def test_the_calibration_and_the_banks_say_what_they_were_built_from(shared_data: Path, tmp_path: Path):
    from ehrguard.benchmarks.provenance import knowledge
    from ehrguard.verify.offline import SHIPPED_CALIBRATION, load_calibration, save_calibration

    dev = shared_data / "scare" / "mimic_iv_dev.json"
    shipped = load_calibration(SHIPPED_CALIBRATION)
    assert shipped is not None and shipped.trained_on["scare"]["mimic_iv_dev.json"] == file_sha256(dev)
    record = knowledge("offline", {})
    assert record["calibration"]["trained_on"] == shipped.trained_on and record["calibration"]["sha256"]
    banks = [k for k in record if k.startswith("question bank")]
    assert banks and all(record[k]["trained_on"]["ehrsql"] for k in banks)  # the EHRSQL files, by checksum
    assert knowledge("preserve_all", {}) == {}
    # a calibration fitted on runs over a file makes a run over that file in-sample, whatever the fold
    data = tmp_path / "eicu_dev.json"
    data.write_text("[3]")
    mine = tmp_path / "calibration.json"
    save_calibration(replace(shipped, trained_on={"scare": {data.name: file_sha256(data)}}), mine)
    lines = in_sample("offline", {"calibration": str(mine)}, [data], fold="2/5")
    assert lines == ["The calibration (calibration.json) was fitted on runs over eicu_dev.json."]
    assert in_sample("offline", {"calibration": "off"}, [data]) == []
