"""What `ehrguard bench scare` / `bench report` call besides the runner: item selection, method wiring, rescoring."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from ehrguard.benchmarks.scare import ScareItem
from ehrguard.benchmarks.scare_run import method_for_run, record_llm_usage, rescore_runs, select_items
from ehrguard.errors import ConfigError, RunError
from ehrguard.verify.offline.training import fold_of

ITEM = ScareItem(db_id="mimic_iv", id="1", type="easy", template="", question="", gt_sql="SELECT 1", pred_sql="SELECT 1",
                 gt_exe="", pred_exe="", exec_acc=True, generator_name="g", sampled_category="answerable_correct")


def test_select_items_keeps_one_fold_then_the_limit() -> None:
    items = [replace(ITEM, id=str(i), question=f"question number {i}") for i in range(60)]
    fold = [it for it in items if fold_of(it.question, 3) == 1]
    assert 0 < len(fold) < len(items)
    assert select_items(items, fold="1/3") == fold
    assert select_items(items, fold="1/3", limit=2) == fold[:2]
    assert select_items(items, limit=5) == items[:5] and select_items(items) == items
    with pytest.raises(ConfigError, match="A fold is I/K"):
        select_items(items, fold="3/3")


def test_a_sample_is_stratified_by_database_and_category_seeded_and_in_file_order(shared_data: Path) -> None:
    from collections import Counter

    from ehrguard.benchmarks.scare import load_scare

    items = load_scare([shared_data / "scare" / "mimic_iv_dev.json", shared_data / "scare" / "eicu_dev.json"])
    assert not any(it.answerable for it in items[:100])  # why --limit 100 alone gives NaN PR/CR
    sample = select_items(items, sample=100, seed=3)
    strata = Counter((it.db_id, it.sampled_category) for it in items)
    got = Counter((it.db_id, it.sampled_category) for it in sample)
    assert len(sample) == 100 and set(got) == set(strata)
    for key, size in strata.items():  # each stratum in proportion, within the rounding
        assert abs(got[key] - 100 * size / len(items)) < 1
    positions = [items.index(it) for it in sample]
    assert positions == sorted(positions)
    assert select_items(items, sample=100, seed=3) == sample and select_items(items, sample=100, seed=4) != sample
    assert select_items(items, sample=100, seed=3, limit=10) == sample[:10]
    assert select_items(items, sample=len(items) + 5) == items
    with pytest.raises(ConfigError, match="--sample takes a number of items of at least 1"):
        select_items(items, sample=0)


def test_method_for_run_gives_llm_methods_the_runs_call_log(tmp_path: Path) -> None:
    method = method_for_run("single_turn", tmp_path, model="scripted/run-helpers", options={"max_tokens": "64"})
    assert method.llm.log.path == tmp_path / "calls.jsonl" and method.max_tokens == 64  # type: ignore[attr-defined]
    assert record_llm_usage({}, method) is not None
    baseline = method_for_run("preserve_all", tmp_path)
    metrics: dict[str, object] = {}
    assert record_llm_usage(metrics, baseline) is None and metrics == {}
    with pytest.raises(ConfigError, match="offline uses no LLM"):
        method_for_run("offline", tmp_path, model="scripted/run-helpers")


def test_rescore_runs_needs_out_for_several_runs(tmp_path: Path) -> None:
    with pytest.raises(RunError, match="pass --out"):
        rescore_runs([str(tmp_path / "a"), str(tmp_path / "b")])
