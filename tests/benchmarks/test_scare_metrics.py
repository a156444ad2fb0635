"""SCARE metrics on hand-built item sets with known answers, and the loader's validation."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from ehrguard.benchmarks.scare import load_scare
from ehrguard.errors import DatasetError
from ehrguard.evaluation.scare_metrics import ScoredItem, compute_metrics


def item(i, type_, *, correct=False, output="SELECT 1", acc=False, db="mimic_iv", gen="g1", error=None):
    return ScoredItem(id=str(i), db_id=db, type=type_, candidate_correct=correct, output=output, final_exec_acc=acc,
                      generator=gen, error=error)


def test_main_metrics_worked_example():
    items = [
        # answerable_correct: 4 items; 2 preserved, 1 broken by a "correction", 1 abstained (ambiguous)
        item(1, "easy", correct=True, acc=True), item(2, "medium", correct=True, acc=True),
        item(3, "hard", correct=True, acc=False), item(4, "easy", correct=True, output="ambiguous"),
        # answerable_incorrect: 2 items; 1 corrected, 1 labelled unanswerable
        item(5, "easy", acc=True), item(6, "hard", output="unanswerable"),
        # ambiguous: 3 items; 2 flagged (one via a subtype label), 1 answered
        item(7, "vague-word", output="ambiguous"), item(8, "vague-question", output="vague-question"), item(9, "ambiguous-reference"),
        # unanswerable: 2 items; 1 flagged, 1 errored
        item(10, "small-talk", output="unanswerable"), item(11, "out-of-scope", output=None, error="ProviderError: 500"),
    ]
    m = compute_metrics(items)
    assert m["pr"] == 50.0 and m["cov_correct"] == 75.0
    assert m["cr"] == 50.0 and m["cov_incorrect"] == 50.0
    # ambiguous precision: labelled ambiguous = items 4, 7, 8 -> 2 right
    assert m["amb_p"] == pytest.approx(200 / 3) and m["amb_r"] == pytest.approx(200 / 3)
    assert m["amb_f1"] == pytest.approx(200 / 3)
    # unanswerable: labelled = items 6, 10 -> 1 right; recall 1/2
    assert m["unans_p"] == 50.0 and m["unans_r"] == 50.0 and m["unans_f1"] == 50.0
    assert m["errors"] == ["11"]
    assert m["confusion"]["unanswerable"] == {"answer": 0, "ambiguous": 0, "unanswerable": 1, "error": 1}
    assert m["confusion"]["answerable_correct"]["ambiguous"] == 1
    assert m["by_subtype"]["vague-question"] == {"n": 1, "recall": 100.0, "subtype_recall": 100.0, "label_precision": 100.0,
                                                 "labelled": 1}
    assert m["by_subtype"]["out-of-scope"]["recall"] == 0.0
    assert m["by_difficulty"]["easy"]["pr"] == 50.0 and m["by_difficulty"]["easy"]["cr"] == 100.0
    assert m["counts"] == {"answerable_correct": 4, "answerable_incorrect": 2, "ambiguous": 3, "unanswerable": 2}


def test_nan_when_denominators_are_zero():
    m = compute_metrics([item(1, "easy", correct=True, acc=True)])
    assert m["pr"] == 100.0 and math.isnan(m["cr"])
    assert math.isnan(m["amb_p"]) and math.isnan(m["amb_r"]) and math.isnan(m["amb_f1"])
    # labels emitted but no true items of the class: precision 0, recall NaN, F1 NaN
    m = compute_metrics([item(1, "easy", correct=True, output="unanswerable")])
    assert m["unans_p"] == 0.0 and math.isnan(m["unans_r"]) and math.isnan(m["unans_f1"])


def test_f1_is_zero_when_precision_and_recall_are_zero():
    m = compute_metrics([item(1, "small-talk", output="ambiguous"), item(2, "vague-word", output="unanswerable")])
    assert m["amb_p"] == 0.0 and m["amb_r"] == 0.0 and m["amb_f1"] == 0.0


def test_breakdowns_by_db_and_generator():
    items = [item(1, "easy", correct=True, acc=True, db="eicu", gen="a"), item(2, "easy", correct=True, acc=False, db="mimic_iv", gen="b")]
    m = compute_metrics(items)
    assert m["by_db"]["eicu"]["pr"] == 100.0 and m["by_db"]["mimic_iv"]["pr"] == 0.0
    assert m["by_generator"]["a"]["pr"] == 100.0 and m["by_generator"]["b"]["pr"] == 0.0


def _raw(**over):
    base = {"db_id": "mimic_iv", "id": "x1", "type": "easy", "template": "t", "question": "q", "gt_sql": "SELECT 1", "pred_sql": "SELECT 1",
            "gt_exe": "[['1']]", "pred_exe": "[['1']]", "exec_acc": True, "generator_name": "g", "sampled_category": "answerable_correct"}
    base.update(over)
    return base


@pytest.mark.parametrize(
    ("bad", "message"),
    [({"db_id": "mimic_v"}, "db_id"), ({"type": "trivial"}, "type"), ({"exec_acc": "yes"}, "exec_acc"),
     ({"sampled_category": "other"}, "sampled_category"), ({"gt_sql": "null"}, "does not agree")],
)
def test_loader_rejects_malformed_items(tmp_path: Path, bad, message):
    path = tmp_path / "s.json"
    path.write_text(json.dumps([_raw(), _raw(id="x2", **bad)]))
    with pytest.raises(DatasetError, match=message) as info:
        load_scare(path)
    assert "item 1" in str(info.value)


def test_loader_rejects_missing_fields_duplicates_and_non_lists(tmp_path: Path):
    path = tmp_path / "s.json"
    raw = _raw()
    del raw["pred_sql"]
    path.write_text(json.dumps([raw]))
    with pytest.raises(DatasetError, match="pred_sql"):
        load_scare(path)
    path.write_text(json.dumps([_raw(), _raw()]))
    with pytest.raises(DatasetError, match="duplicate"):
        load_scare(path)
    path.write_text(json.dumps({"items": []}))
    with pytest.raises(DatasetError, match="JSON list"):
        load_scare(path)
    path.write_text("{not json")
    with pytest.raises(DatasetError, match="not valid JSON"):
        load_scare(path)


def test_loader_reads_the_dev_split(shared_data: Path):
    items = load_scare([shared_data / "scare" / "mimic_iv_dev.json", shared_data / "scare" / "eicu_dev.json"])
    assert len(items) == 1399  # the shared dev split holds 699 MIMIC-IV + 700 eICU items
    assert {i.sampled_category for i in items} == {"answerable_correct", "answerable_incorrect", "ambiguous", "unanswerable"}


def test_the_subtype_table_counts_the_subtype_a_method_named_beside_its_label():
    def labelled(i, type_, output, subtype):
        return ScoredItem(id=str(i), db_id="mimic_iv", type=type_, candidate_correct=False, output=output, subtype=subtype)

    items = [
        labelled(1, "vague-word", "ambiguous", "vague-word"),  # right category, right subtype
        labelled(2, "vague-word", "ambiguous", "ambiguous-reference"),  # right category, another subtype
        labelled(3, "vague-word", "unanswerable", "out-of-scope"),  # wrong category
        labelled(4, "ambiguous-reference", "ambiguous", "ambiguous-reference"),
        labelled(5, "small-talk", "small-talk", None),  # a method whose output is the subtype label itself
        labelled(6, "out-of-scope", "SELECT 1", "out-of-scope"),  # answered: a subtype beside an answer names nothing
        item(7, "easy", output="ambiguous"),  # an answerable item labelled ambiguous, with no subtype
        ScoredItem(id="8", db_id="mimic_iv", type="vague-word", candidate_correct=False, output=None, error="boom", subtype="vague-word"),
    ]
    table = compute_metrics(items)["by_subtype"]
    assert table["vague-word"] == {"n": 4, "recall": 50.0, "subtype_recall": 25.0, "label_precision": 100.0, "labelled": 1}
    assert table["ambiguous-reference"]["labelled"] == 2 and table["ambiguous-reference"]["label_precision"] == 50.0
    assert table["ambiguous-reference"]["subtype_recall"] == 100.0
    assert table["small-talk"]["labelled"] == 1 and table["small-talk"]["label_precision"] == 100.0
    # item 6 answered; item 3 (a vague-word question) was the one named out-of-scope
    assert table["out-of-scope"] == {"n": 1, "recall": 0.0, "subtype_recall": 0.0, "label_precision": 0.0, "labelled": 1}
    assert math.isnan(table["missing-column"]["label_precision"]) and table["missing-column"]["labelled"] == 0


def test_bootstrap_intervals_resample_whole_questions_and_hold_the_estimate():
    from ehrguard.evaluation.scare_metrics import bootstrap_intervals, question_of

    assert question_of(ScoredItem("mimic_iv:codes:q1", "mimic_iv", "easy", True, "SELECT 1")) == "mimic_iv:q1"
    # 30 questions with two candidates each, from two generators; a third of the questions' candidates are broken
    items = [ScoredItem(f"mimic_iv:{gen}:q{i}", "mimic_iv", "easy", True, "SELECT 1", final_exec_acc=i % 3 != 0)
             for i in range(30) for gen in ("a", "b")]
    items += [item(100 + i, "vague-word", output="ambiguous" if i % 2 else "SELECT 1") for i in range(20)]
    m = compute_metrics(items)
    ci = bootstrap_intervals(items, resamples=300, seed=1)
    assert ci["pr"][0] < m["pr"] < ci["pr"][1] and ci["amb_r"][0] < m["amb_r"] < ci["amb_r"][1]
    assert ci == bootstrap_intervals(items, resamples=300, seed=1)  # seeded
    # a question's candidates move together: with identical outcomes per question the interval is that of 30
    # questions, not of 60 independent items (narrower); the same outcomes as 60 questions give a narrower one
    single = [ScoredItem(f"mimic_iv:a:q{i}", "mimic_iv", "easy", True, "SELECT 1", final_exec_acc=(i // 2) % 3 != 0)
              for i in range(60)]
    grouped_width = ci["pr"][1] - ci["pr"][0]
    single_ci = bootstrap_intervals(single, resamples=300, seed=1)["pr"]
    assert single_ci[1] - single_ci[0] < grouped_width
    # nothing answerable: PR is undefined, and so is its interval; an outcome without variance has none
    assert all(math.isnan(b) for b in bootstrap_intervals(items[60:], resamples=50)["pr"])
    assert bootstrap_intervals([item(1, "easy", correct=True, acc=True)], resamples=50)["pr"] == [100.0, 100.0]


def test_correction_rate_by_error_type_and_execution_by_generator():
    def wrong(i, kind, *, answered=True, right=False, gen="g1"):
        return ScoredItem(id=str(i), db_id="mimic_iv", type="medium", candidate_correct=False,
                          output="SELECT 1" if answered else "ambiguous", final_exec_acc=right, generator=gen, error_type=kind)

    items = [wrong(1, "PV", right=True), wrong(2, "PV"), wrong(3, "PV", answered=False), wrong(4, "OG", right=True, gen="g2"),
             wrong(5, None), item(6, "easy", correct=True, acc=True, gen="g2"), item(7, "easy", correct=True, acc=False)]
    metrics = compute_metrics(items)
    table = metrics["by_error_type"]
    assert table["PV"] == {"n": 3, "cr": pytest.approx(100 / 3), "cov": pytest.approx(200 / 3)}
    assert table["OG"] == {"n": 1, "cr": 100.0, "cov": 100.0}
    assert table["TC"]["n"] == 0 and math.isnan(table["TC"]["cr"])
    # an item with no reading (a run from before error types, its data file gone) is in no column
    assert sum(row["n"] for row in table.values()) == 4
    execution = metrics["execution_by_generator"]
    assert execution["g1"] == {"n": 5, "candidate": 20.0, "final": 20.0}  # items 1, 2, 3, 5, 7: item 7's candidate was right
    assert execution["g2"] == {"n": 2, "candidate": 50.0, "final": 100.0}
