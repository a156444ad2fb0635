"""Choosing the confidence threshold for RS(c): on hand-made decisions, on a bench scare run, on EHRSQL-2024 splits."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ehrguard.cli import cli
from ehrguard.evaluation.threshold import Decision, apply, choose

RIGHT, WRONG = Decision(True, True, True, 0.9), Decision(True, True, False, 0.4)
ANSWERED_UNANSWERABLE, ABSTAINED = Decision(False, True, False, 0.3), Decision(False, False, confidence=0.8)


def test_the_threshold_withholds_answers_below_it_and_the_best_one_depends_on_the_penalty():
    items = [RIGHT, WRONG, ANSWERED_UNANSWERABLE, ABSTAINED]
    # every answer kept: +1, -c, -c, +1
    assert apply(items, 0.0, 10).rs == pytest.approx(100 * (1 - 10 - 10 + 1) / 4)
    assert apply(items, 0.0, 10).answered == 75.0
    # above 0.4 only the right answer is left: +1, 0, +1, +1
    assert apply(items, 0.5, 10).rs == pytest.approx(75.0) and apply(items, 0.5, 10).answered == 25.0
    assert choose(items, 10).value == 0.9 and choose(items, 10).rs == pytest.approx(75.0)
    # with no penalty a wrong answer costs nothing: withholding it gains nothing, withholding the unanswerable one does
    assert choose(items, 0).value == 0.4 and choose(items, 0).rs == pytest.approx(75.0)


def test_an_error_is_a_wrong_answer_at_every_threshold_never_a_correct_abstention():
    failed = Decision(answerable=False, answered=False, error=True)
    for t in (0.0, 0.5, 2.0):
        assert apply([failed], t, 10).rs == -1000.0
    assert choose([failed, RIGHT], 10).value == 0.0  # nothing to gain by withholding the right answer


def test_ties_choose_the_lowest_threshold_and_no_answers_still_has_one():
    assert choose([RIGHT, Decision(True, True, True, 0.5)], 10).value == 0.0
    assert choose([ABSTAINED], 10).value == 0.0 and choose([], 5).rs != choose([], 5).rs  # nan: nothing to score


def test_bench_threshold_chooses_on_one_fold_and_reports_on_another(shared_data: Path, mimic_iv_db: Path, tmp_path: Path):
    (tmp_path / "mimic_iv.sqlite").symlink_to(mimic_iv_db)
    data = str(shared_data / "scare" / "mimic_iv_dev.json")
    for fold in (0, 1):
        r = CliRunner().invoke(cli, ["bench", "scare", "--data", data, "--db-dir", str(tmp_path), "--method", "offline",
                                     "--fold", f"{fold}/5", "--limit", "30", "--out", str(tmp_path / f"fold{fold}"), "--no-report"])
        assert r.exit_code == 0, r.output
    r = CliRunner().invoke(cli, ["bench", "threshold", "--fit", str(tmp_path / "fold0"), "--on", str(tmp_path / "fold1"),
                                 "--penalty", "0", "--penalty", "10", "--out", str(tmp_path / "thr"), "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout[r.stdout.index("{"):])
    assert out["config"]["n_fit"] == 30 and out["config"]["n_on"] == 30
    zero, ten = out["rows"]
    assert zero["penalty"] == 0 and ten["penalty"] == 10
    assert ten["threshold"] >= zero["threshold"]  # a dearer mistake never lowers the bar
    assert ten["fit"]["rs"] >= ten["keep_all"]["rs"] - 1e-9 or ten["fit"]["threshold"] == 0  # chosen on fold 0, not fold 1
    assert ten["hindsight"]["rs"] >= ten["chosen"]["rs"] - 1e-9
    assert "RS at the threshold" in (tmp_path / "thr" / "threshold.md").read_text()
    # the same items on both sides are refused, with what to do
    r = CliRunner().invoke(cli, ["bench", "threshold", "--fit", str(tmp_path / "fold0"), "--on", str(tmp_path / "fold0")])
    assert r.exit_code != 0 and "in both the --fit and the --on runs" in str(r.exception)
    r = CliRunner().invoke(cli, ["bench", "threshold", "--fit", str(tmp_path / "fold0"), "--on", str(tmp_path / "fold1"),
                                 "--on-db", "eicu"])
    assert r.exit_code != 0 and "No records for database 'eicu'" in str(r.exception)


def _small_split(source: Path, target: Path, ids: list[str]) -> Path:
    target.mkdir()
    data = json.loads((source / "data.json").read_text())
    (target / "data.json").write_text(json.dumps({**data, "data": [d for d in data["data"] if d["id"] in ids]}))
    for name in ("label.json", "answer.json"):
        whole = json.loads((source / name).read_text())
        (target / name).write_text(json.dumps({i: whole[i] for i in ids}))
    return target


def test_bench_ehrsql_chooses_the_threshold_on_another_split(shared_data: Path, mimic_iv_db: Path, tmp_path: Path):
    valid = shared_data / "ehrsql-2024" / "mimic_iv" / "valid"
    labels = json.loads((valid / "label.json").read_text())
    answerable = [i for i, sql in labels.items() if sql != "null"][:40]
    unanswerable = [i for i, sql in labels.items() if sql == "null"][:10]
    fit_ids, on_ids = answerable[:20] + unanswerable[:5], answerable[20:] + unanswerable[5:]
    fit, on = _small_split(valid, tmp_path / "fit", fit_ids), _small_split(valid, tmp_path / "on", on_ids)

    def system(ids: list[str]) -> dict[str, dict[str, object]]:
        # sure and right on the answerable ones but three (unsure and wrong); unsure answers to the unanswerable ones
        out: dict[str, dict[str, object]] = {}
        for n, i in enumerate(ids):
            if labels[i] == "null":
                out[i] = {"sql": "SELECT 1", "confidence": 0.2}
            else:
                out[i] = {"sql": labels[i], "confidence": 0.9} if n >= 3 else {"sql": "SELECT 1", "confidence": 0.3}
        return out

    (tmp_path / "fit.json").write_text(json.dumps(system(fit_ids)))
    (tmp_path / "on.json").write_text(json.dumps(system(on_ids)))
    r = CliRunner().invoke(cli, ["bench", "ehrsql", "--split", str(on), "--db", str(mimic_iv_db), "--predictions",
                                 str(tmp_path / "on.json"), "--fit-split", str(fit), "--fit-predictions", str(tmp_path / "fit.json"),
                                 "--penalty", "10", "--json"])
    assert r.exit_code == 0, r.output
    scores = json.loads(r.stdout)
    # every answer kept: 17 right, 3 wrong and 5 unanswerable answered, each -10
    assert scores["rs_10"] == pytest.approx(100 * (17 - 10 * 8) / 25)
    (row,) = scores["thresholds"]
    assert row["threshold"] == 0.9  # chosen on the fit split: withhold everything unsure
    assert row["chosen"]["rs"] == pytest.approx(100 * (17 + 5) / 25) and row["chosen"]["answered"] == pytest.approx(68.0)
    r = CliRunner().invoke(cli, ["bench", "ehrsql", "--split", str(on), "--db", str(mimic_iv_db), "--predictions",
                                 str(tmp_path / "on.json"), "--fit-split", str(fit)])
    assert r.exit_code != 0 and "--fit-split and --fit-predictions go together" in str(r.exception)
    (tmp_path / "bad.json").write_text(json.dumps({on_ids[0]: {"sql": "SELECT 1", "confidence": "high"}}))
    r = CliRunner().invoke(cli, ["bench", "ehrsql", "--split", str(on), "--db", str(mimic_iv_db),
                                 "--predictions", str(tmp_path / "bad.json")])
    assert r.exit_code != 0 and '"confidence": 0-1' in str(r.exception)
