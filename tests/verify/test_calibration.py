"""Calibrated confidence: the fit, the reliability table, the bars for target risks, and the verifier using them."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from ehrguard.cli import cli
from ehrguard.errors import ConfigError, DatasetError
from ehrguard.verify import verify
from ehrguard.verify.offline.calibration import (
    FEATURES,
    AnswerFeatures,
    Calibration,
    choose_bars,
    features_from_record,
    fit_calibration,
    fit_logistic,
    load_calibration,
    reliability,
    save_calibration,
)
from ehrguard.verify.offline.policy import BLOCKING_WARNINGS


def test_logistic_fit_recovers_the_weights_it_was_drawn_from():
    rng = np.random.default_rng(0)
    x = np.column_stack([np.ones(20000), rng.normal(size=20000), rng.integers(0, 2, 20000)])
    true = np.array([-0.5, 2.0, -1.0])
    y = (rng.random(20000) < 1 / (1 + np.exp(-(x @ true)))).astype(float)
    assert np.allclose(fit_logistic(x, y, l2=0.0), true, atol=0.1)


def test_reliability_table_and_expected_calibration_error():
    ece, table = reliability([0.05, 0.05, 0.95, 0.95], [False, False, True, False])
    assert [b["n"] for b in table] == [2, 2]
    assert table[1]["right"] == 0.5 and math.isclose(ece, 0.5 * 0.05 + 0.5 * 0.45, abs_tol=1e-4)
    assert math.isnan(reliability([], [])[0])


def test_bars_keep_the_wrong_share_under_the_target_with_enough_support():
    rng = random.Random(0)
    p = [rng.random() for _ in range(2000)]
    y = [rng.random() < q for q in p]  # calibrated by construction
    bars = choose_bars(p, y, [True] * len(p))
    for risk, bar in bars.items():
        above = [right for q, right in zip(p, y, strict=True) if q >= bar]
        if bar < 1.0:
            assert len(above) >= 30 and 1 - sum(above) / len(above) <= float(risk) + 1e-9
    assert bars["0.05"] >= bars["0.2"]  # a smaller risk needs a higher bar


def _record(answerable, right, *, action="preserve", outcome="rows", checks=(), kind="easy"):
    return {"action": action, "type": kind, "final_exec_acc": right,
            "details": {"question": {"category": {"answerable": answerable}}, "known_form": None,
                        "sql": {"errors": 0, "warnings": len(checks), "checks": list(checks), "outcome": outcome}}}


def test_fit_from_run_records_and_round_trip(tmp_path):
    rng = random.Random(1)
    records = [_record(a, rng.random() < a) for a in (rng.random() for _ in range(600))]
    records += [_record(0.9, True, kind="unanswerable") for _ in range(40)]  # an answer to an unanswerable question is wrong
    records += [{"action": "unanswerable", "type": "easy"}]  # abstentions are not answers
    cal = fit_calibration(records, BLOCKING_WARNINGS, fitted_on="test")
    assert cal.n == 640 and cal.weights[1] > 0  # the answerable probability raises the probability of being right
    path = tmp_path / "cal.json"
    save_calibration(cal, path)
    again = load_calibration(path)
    assert again is not None and again.weights == cal.weights and again.bars == cal.bars
    f = AnswerFeatures(0.95, False, False, False, 0, False)
    assert again.probability(f) > again.probability(AnswerFeatures(0.2, False, False, False, 0, False))
    with pytest.raises(DatasetError, match="at least"):
        fit_calibration(records[:10], BLOCKING_WARNINGS, fitted_on="test")


def test_a_broken_calibration_file_is_one_clear_error(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"features": ["x"], "weights": [1], "bars": {}}))
    with pytest.raises(ConfigError, match="ehrguard train calibration"):
        load_calibration(bad)
    assert load_calibration(tmp_path / "missing.json") is None


def _calibration(tmp_path: Path, bar: float) -> Path:
    weights = (0.0, 1.0) + (0.0,) * (len(FEATURES) - 2)  # p = the answerable probability
    path = tmp_path / f"cal_{bar}.json"
    save_calibration(Calibration(weights, {"0.1": bar, "0.05": bar, "0.2": bar}, "test", 100), path)
    return path


def test_the_verifier_shows_an_answer_as_verified_only_from_the_calibrated_bar(mimic_iv_db, tmp_path):
    question, sql = "What is the gender of patient 10004235?", "SELECT gender FROM patients WHERE subject_id = 10004235"
    low = verify(question, sql, db=mimic_iv_db, db_id="mimic_iv", calibration=str(_calibration(tmp_path, 0.01)))
    assert low.status == "verified" and 0 < low.confidence < 1
    high = verify(question, sql, db=mimic_iv_db, db_id="mimic_iv", calibration=str(_calibration(tmp_path, 0.9999)))
    assert high.action == "preserve" and high.status == "unverified" and "cannot confirm this answer" in high.reason
    assert high.confidence == low.confidence
    with pytest.raises(ConfigError, match="No calibration file"):
        verify(question, sql, db=mimic_iv_db, db_id="mimic_iv", calibration=str(tmp_path / "none.json"))


def test_train_calibration_from_run_folders(tmp_path):
    run = tmp_path / "fold0"
    run.mkdir()
    rng = random.Random(2)
    rows = [_record(a, rng.random() < a) for a in (rng.random() for _ in range(300))]
    (run / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "cal.json"
    result = CliRunner().invoke(cli, ["train", "calibration", str(run), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert load_calibration(out) is not None and "bars by target risk" in result.output
    empty = tmp_path / "empty"
    empty.mkdir()
    result = CliRunner().invoke(cli, ["train", "calibration", str(empty)])  # the console entry point prints it in one line
    assert isinstance(result.exception, DatasetError) and "No predictions.jsonl" in str(result.exception)


def test_bars_written_with_other_spellings_load(tmp_path):
    path = tmp_path / "cal.json"
    path.write_text(json.dumps({"features": list(FEATURES), "weights": [0.0] * len(FEATURES), "bars": {"0.10": 0.7, "0.050": 0.9}}))
    cal = load_calibration(path)
    assert cal is not None and cal.bar(0.1) == 0.7 and cal.bar(0.05) == 0.9 and cal.bar(0.01) == 1.0


def test_a_correction_is_judged_by_what_remains_on_the_corrected_sql():
    from ehrguard.verify.offline.calibration import _shown, features_from_record

    fixed = _record(0.9, True, action="correct", checks=("unknown_column",))
    fixed["details"]["sql"]["errors"] = 1  # the candidate had an error: the correction answered it
    fixed["details"]["repair"] = {"remaining": {"errors": 0, "warnings": 0, "checks": []}}
    f = features_from_record(fixed, BLOCKING_WARNINGS)
    assert f is not None and f.blocked and _shown(fixed, f, BLOCKING_WARNINGS)
    fixed["details"]["repair"]["remaining"] = {"errors": 1, "warnings": 0, "checks": ["unknown_patient"]}
    assert not _shown(fixed, f, BLOCKING_WARNINGS)


def test_train_calibration_from_safety_runs_and_the_in_sample_note(tmp_path):
    """`bench safety` records fit a calibration too (a correct or wrong candidate answered like the gold is right;
    an unanswerable or ambiguous question answered is wrong), and the fit names the case files it saw."""
    from ehrguard.benchmarks.provenance import in_sample
    from ehrguard.verify.offline.calibration import answer_right

    assert answer_right({"kind": "wrong", "answers_like_gold": True}) and not answer_right({"kind": "ambiguous", "answers_like_gold": True})
    cases = tmp_path / "cases.jsonl"
    cases.write_text('{"id": "x"}\n')
    run = tmp_path / "safety"
    run.mkdir()
    rng = random.Random(4)
    rows = []
    for a in (rng.random() for _ in range(300)):
        record = _record(a, False)
        record.pop("type"), record.pop("final_exec_acc")
        record.update(kind="correct" if rng.random() < 0.8 else "unanswerable", answers_like_gold=rng.random() < a)
        rows.append(record)
    (run / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    from ehrguard.benchmarks import file_sha256

    (run / "metrics.json").write_text(json.dumps({"config": {"cases": {cases.name: file_sha256(cases)}}}))
    out = tmp_path / "cal.json"
    result = CliRunner().invoke(cli, ["train", "calibration", str(run), "--out", str(out)])
    assert result.exit_code == 0, result.output
    cal = load_calibration(out)
    assert cal is not None and cal.fitted_on.startswith("1 bench safety run")
    assert cal.trained_on["safety"] == {cases.name: file_sha256(cases)}
    assert in_sample("offline", {"calibration": str(out)}, [cases]) and not in_sample("offline", {"calibration": str(out)}, [out])


def test_a_repair_by_the_checks_is_weighed_apart_from_a_known_questions_correction():
    """A correction's record says what made it: a known question ('template', 'form') or the checks that wrote the
    repair. The features keep the two apart, and the shipped fit gives a repair less weight than a known question's
    SQL (on SCARE's dev split the repairs were right far less often)."""
    def record(fixed: str) -> dict:
        return {"action": "correct", "details": {"question": {"category": {"answerable": 0.95}}, "known_form": None,
                                                 "sql": {"errors": 0, "warnings": 1, "checks": ["wrong_code"], "outcome": "rows"},
                                                 "repair": {"fixed": fixed, "remaining": {"errors": 0, "checks": []}}}}

    repaired = features_from_record(record("wrong_code"), BLOCKING_WARNINGS)
    known = features_from_record(record("form"), BLOCKING_WARNINGS)
    assert repaired is not None and known is not None
    assert repaired.corrected and repaired.repaired and known.corrected and not known.repaired
    shipped = load_calibration()
    assert shipped is not None and shipped.probability(repaired) < shipped.probability(known)


def _graded(task: int, score: float, checks: tuple[str, ...], answerable: float = 0.9) -> dict:
    """A `bench clinsql-verify` record of one model's query for one task."""
    record = _record(answerable, False, checks=checks)
    record.pop("type"), record.pop("final_exec_acc")
    record.update(model="m", task=f"t{task}", results_score=score, runs=True, suspicion=0.5, confidence=0.5)
    return record


def test_a_layout_calibration_weighs_each_check_and_is_measured_out_of_fold_by_whole_tasks(tmp_path):
    """Fitted per check (ClinSQL's graded queries over the mimic-code layout): a check that fires on bad queries gets a
    weight of its own that lowers the probability; a check seen too seldom gets none; the weights round-trip; and
    the out-of-fold probabilities come, task by task, from fits that never saw the task."""
    from ehrguard.verify.offline.calibration import MIN_CHECK_ANSWERS, out_of_fold

    assert MIN_CHECK_ANSWERS > 3  # 'rare' below fires on 3 answers

    rng = random.Random(5)
    records = []
    for task in range(200):
        bad = rng.random() < 0.4
        checks = ("missing_filter",) if bad and rng.random() < 0.8 or not bad and rng.random() < 0.05 else ()
        records += [_graded(task, 0.0 if bad else 1.0, checks + (("rare",) if task < 3 and copy == 0 else ())) for copy in range(3)]
    cal = fit_calibration(records, frozenset(), fitted_on="test", by_check=True)
    assert set(cal.check_weights) == {"missing_filter"} and cal.check_weights["missing_filter"] < -1
    flagged = AnswerFeatures(0.9, False, False, False, 1, False, checks=frozenset({"missing_filter"}))
    clean = AnswerFeatures(0.9, False, False, False, 0, False)
    assert cal.probability(flagged) < 0.3 < 0.7 < cal.probability(clean)
    path = tmp_path / "layout.json"
    save_calibration(cal, path)
    again = load_calibration(path)
    assert again is not None and again.check_weights == cal.check_weights and again.probability(flagged) == cal.probability(flagged)
    assert not fit_calibration(records, frozenset(), fitted_on="test").check_weights  # by default, no check weighs alone

    seen: dict[str, set[float]] = {}
    for record, p in out_of_fold(records, frozenset(), lambda r: r["task"], by_check=True):
        assert 0 < p < 1
        seen.setdefault(record["task"], set()).add(round(p, 9))
    assert len(seen) == 200 and all(len(ps) <= 2 for ps in seen.values())  # a task's copies share a fold (and so a fit)
    # a probability computed for a task does not change when the task's own grades are flipped: it was not fitted on them
    flipped = [dict(r, results_score=1.0 - r["results_score"]) if r["task"] == "t7" else r for r in records]
    again7 = {round(p, 9) for r, p in out_of_fold(flipped, frozenset(), lambda r: r["task"], by_check=True) if r["task"] == "t7"}
    assert again7 == seen["t7"]


def test_train_calibration_from_clinsql_runs_fits_the_layouts_calibration(tmp_path):
    """`train calibration` on a `bench clinsql-verify` folder: the graded model queries only (gold left out), a weight
    per check, the out-of-fold AUROC printed; mixing it with SCARE runs is refused in one line."""
    run = tmp_path / "clinsql"
    run.mkdir()
    rng = random.Random(6)
    rows = [dict(_graded(t, 0.0, ("missing_filter",)) if rng.random() < 0.4 else _graded(t, 1.0, ())) for t in range(120)]
    rows += [dict(_graded(500, 1.0, ()), model="gold")]
    (run / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "layout.json"
    result = CliRunner().invoke(cli, ["train", "calibration", str(run), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "Out of fold (5 folds of whole tasks), AUROC for bad queries: all 1.000" in " ".join(result.output.split())
    cal = load_calibration(out)
    assert cal is not None and cal.n == 120 and cal.fitted_on.startswith("1 bench clinsql-verify run")
    assert cal.check_weights["missing_filter"] < 0
    scare = tmp_path / "fold0"
    scare.mkdir()
    (scare / "predictions.jsonl").write_text(json.dumps(_record(0.9, True)) + "\n")
    result = CliRunner().invoke(cli, ["train", "calibration", str(run), str(scare), "--out", str(out)])
    assert isinstance(result.exception, ConfigError) and "their layout's own calibration" in str(result.exception)


def test_the_mimic_code_layout_uses_the_calibration_its_profile_names(mimic_iv_raw_db, tmp_path):
    """The mimic-code profiles name the shipped `mimic_code` calibration (fitted on ClinSQL's graded queries); `auto`
    uses it there, `default` the SCARE-fitted one; the SQLite EHRSQL profiles keep the default; a profile naming a
    calibration that is not there is one clear error."""
    from dataclasses import replace

    from ehrguard.profiles import PROFILES
    from ehrguard.verify import database_context
    from ehrguard.verify.offline.calibration import calibration_path
    from ehrguard.verify.offline.verifier import OfflineVerifier

    assert {PROFILES[p].calibration for p in ("mimic_iv_raw", "mimic_iv_postgres", "mimic_iv_bigquery")} == {"mimic_code"}
    assert not PROFILES["mimic_iv"].calibration and not PROFILES["eicu"].calibration
    layout = load_calibration(calibration_path("mimic_code"))
    assert layout is not None and layout.check_weights and "clinsql-verify" in layout.trained_on
    question = "How many patients are in the database?"
    sql = "SELECT COUNT(DISTINCT subject_id) FROM mimiciv_hosp.patients"
    auto = verify(question, sql, db=str(mimic_iv_raw_db))
    default = verify(question, sql, db=str(mimic_iv_raw_db), calibration="default")
    assert auto.action == default.action == "preserve" and auto.confidence != default.confidence
    context = database_context(mimic_iv_raw_db)
    assert OfflineVerifier().policy_for(context.profile).calibration == layout
    assert OfflineVerifier(calibration="default").policy_for(context.profile).calibration == load_calibration()
    missing = replace(context.profile, calibration=str(tmp_path / "none.json"))
    with pytest.raises(ConfigError, match="names the calibration .* no file at"):
        OfflineVerifier().policy_for(missing)


def test_a_layout_calibration_does_not_verify_a_question_the_model_doubts(mimic_iv_raw_db):
    """The mimic-code calibration was fitted where every question was answerable, so it gives the question model's
    doubt almost no weight: the answerable bar of the operating point still applies on top of it."""
    doubted = verify("Was patient 10004235 satisfied with their hospital stay?",
                     "SELECT COUNT(*) > 0 FROM mimiciv_hosp.admissions WHERE subject_id = 10004235", db=str(mimic_iv_raw_db))
    assert doubted.status != "verified" and "may not be answerable" in doubted.reason
    # ... and the confidence shown beside that reason is no more than the probability that the question is answerable
    answerable = doubted.details["question"]["category"]["answerable"]
    assert doubted.confidence is not None and doubted.confidence <= round(answerable, 4) < 0.5
    # a kind of record named only by an id column ("admit_provider_id") is not taken as held: the question stays refused
    named = verify("What is the name of the attending physician of patient 10004235?",
                   "SELECT admit_provider_id FROM mimiciv_hosp.admissions WHERE subject_id = 10004235", db=str(mimic_iv_raw_db))
    assert named.action == "unanswerable"


def test_a_profile_file_names_its_calibration_beside_it_and_a_bad_one_fails_as_it_loads(tmp_path, monkeypatch):
    from ehrguard.profiles import load_profile
    from ehrguard.verify.offline.calibration import calibration_path

    folder = tmp_path / "hospital"
    folder.mkdir()
    save_calibration(Calibration((0.0,) * len(FEATURES), {"0.1": 0.5}, "test", 100), folder / "ours.json")
    toml = folder / "st_marys.toml"
    toml.write_text('db_id = "st_marys"\ncalibration = "ours.json"\n\n[[entities]]\nname = "patient"\ntable = "people"\n'
                    'id_column = "mrn"\n')
    monkeypatch.chdir(tmp_path)  # not the profile's folder: the file is found beside the profile all the same
    profile = load_profile(toml)
    assert Path(profile.calibration) == folder / "ours.json" and load_calibration(calibration_path(profile.calibration)) is not None
    toml.write_text(toml.read_text().replace("ours.json", "default"))
    assert load_profile(toml).calibration == ""
    home = tmp_path / "home"
    (home / "fits").mkdir(parents=True)
    save_calibration(Calibration((0.0,) * len(FEATURES), {"0.1": 0.5}, "test", 100), home / "fits" / "mine.json")
    monkeypatch.setenv("HOME", str(home))  # ~ is the user's home, not a folder named "~" beside the profile
    toml.write_text(toml.read_text().replace('"default"', '"~/fits/mine.json"'))
    assert Path(load_profile(toml).calibration) == home / "fits" / "mine.json"
    toml.write_text(toml.read_text().replace('"~/fits/mine.json"', '"missing.json"'))
    with pytest.raises(ConfigError, match=r"st_marys.toml: calibration '.*hospital/missing.json' is not a file"):
        load_profile(toml)


def test_the_receipt_names_the_calibration_the_decision_used(mimic_iv_raw_db, mimic_iv_db):
    from ehrguard import answer
    from ehrguard.benchmarks import file_sha256
    from ehrguard.verify.offline.calibration import DEFAULT_PATH, calibration_path

    question, sql = "How many patients are in the database?", "SELECT COUNT(DISTINCT subject_id) FROM mimiciv_hosp.patients"
    raw = answer(question, db=str(mimic_iv_raw_db), sql=sql)
    assert raw.receipt is not None and raw.receipt["knowledge"]["calibration"] == file_sha256(calibration_path("mimic_code"))
    sqlite = answer("How many patients are there?", db=str(mimic_iv_db), sql="SELECT COUNT(DISTINCT subject_id) FROM patients")
    assert sqlite.receipt is not None and sqlite.receipt["knowledge"]["calibration"] == file_sha256(DEFAULT_PATH)
