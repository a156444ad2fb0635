"""The SCARE runner on the real dev split and a real MIMIC-IV demo database: scores, resume, crashes, reports."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ehrguard.benchmarks.compare import compare_runs, write_comparison
from ehrguard.benchmarks.report import write_scare_report
from ehrguard.benchmarks.rundir import RunDir
from ehrguard.benchmarks.scare import load_scare
from ehrguard.benchmarks.scare_run import run_scare, score_records
from ehrguard.errors import DatabaseNotFoundError, DatasetError, RunError
from ehrguard.verify.methods import get_method
from ehrguard.verify.verdict import Verdict

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def db_dir(mimic_iv_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("dbs")
    (d / "mimic_iv.sqlite").symlink_to(mimic_iv_db)
    return d


@pytest.fixture(scope="module")
def mimic_file(shared_data: Path) -> Path:
    return shared_data / "scare" / "mimic_iv_dev.json"


@pytest.fixture(scope="module")
def sample(mimic_file: Path):
    """80 items spanning all four categories (the file is grouped by category)."""
    items = load_scare(mimic_file)
    by_cat: dict[str, list] = {}
    for it in items:
        by_cat.setdefault(it.sampled_category, []).append(it)
    return [it for cat in sorted(by_cat) for it in by_cat[cat][:20]]


def _run(sample, method, db_dir, out, mimic_file, **kw):
    return run_scare(sample, get_method(method) if isinstance(method, str) else method, db_dir=db_dir, out=out,
                     data_files=[mimic_file], **kw)


def test_sanity_baselines_score_as_expected(sample, db_dir, mimic_file, tmp_path):
    # On MIMIC-IV every published exec_acc is reproduced (docs/databases.md), so preserve_all is exact.
    m = _run(sample, "preserve_all", db_dir, tmp_path / "p", mimic_file).metrics
    assert (m["pr"], m["cr"], m["cov_correct"], m["cov_incorrect"]) == (100.0, 0.0, 100.0, 100.0)
    assert m["amb_r"] == 0.0 and m["unans_r"] == 0.0
    assert m["amb_p"] != m["amb_p"] and m["unans_f1"] != m["unans_f1"]  # NaN: nothing was labelled
    m = _run(sample, "abstain_all", db_dir, tmp_path / "a", mimic_file).metrics
    assert (m["pr"], m["cr"], m["cov_correct"], m["unans_r"], m["unans_p"]) == (0.0, 0.0, 0.0, 100.0, 25.0)
    m = _run(sample, "oracle", db_dir, tmp_path / "o", mimic_file, concurrency=4).metrics
    assert all(m[k] == 100.0 for k in ("pr", "cr", "amb_p", "amb_r", "amb_f1", "unans_p", "unans_r", "unans_f1"))
    assert m["confusion"]["ambiguous"]["ambiguous"] == 20 and m["errors"] == []
    records = [json.loads(line) for line in (tmp_path / "o" / "predictions.jsonl").read_text().splitlines()]
    # a baseline checks nothing: its answers are never "verified", and each record says so
    assert all(r["status"] == ("abstained" if r["action"] in ("ambiguous", "unanswerable") else "unverified") for r in records)
    assert all(r["reason"].startswith("Not checked") for r in records if r["status"] == "unverified")


def test_resume_skips_finished_items_and_refuses_another_config(sample, db_dir, mimic_file, tmp_path):
    out = tmp_path / "run"
    first = _run(sample[:30], "preserve_all", db_dir, out, mimic_file)
    assert (first.skipped, first.ran) == (0, 30)
    second = _run(sample, "preserve_all", db_dir, out, mimic_file)
    assert (second.skipped, second.ran) == (30, 50)
    keys = [json.loads(line)["key"] for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert len(keys) == len(set(keys)) == 80
    with pytest.raises(RunError, match="differs in: method"):
        _run(sample, "abstain_all", db_dir, out, mimic_file)
    log = [json.loads(line)["event"] for line in (out / "run.log").read_text().splitlines()]
    assert log == ["start", "stop", "resume", "stop"]
    run = json.loads((out / "run.json").read_text())
    assert run["identity"]["databases"]["mimic_iv"] and run["value_lexicons"] == {"mimic_iv": "ok"}  # db build wrote it


def test_a_torn_last_line_is_dropped_and_the_item_rerun(sample, db_dir, mimic_file, tmp_path):
    out = tmp_path / "run"
    _run(sample[:10], "preserve_all", db_dir, out, mimic_file)
    pred = out / "predictions.jsonl"
    lines = pred.read_text().splitlines(keepends=True)
    pred.write_text("".join(lines[:9]) + lines[9][: len(lines[9]) // 2])  # a crash in the middle of a write
    again = _run(sample[:10], "preserve_all", db_dir, out, mimic_file)
    assert (again.skipped, again.ran) == (9, 1)
    assert len(RunDir(out).records()) == 10
    assert "truncated" in (out / "run.log").read_text()


class _Flaky:
    name = "flaky"

    def describe(self):
        return {"method": "flaky"}

    def verify(self, case):
        if case.expected.sampled_category == "answerable_correct" and case.expected.id.endswith(("0", "1", "2", "3")):
            raise RuntimeError("model endpoint returned 500")
        return Verdict("preserve", sql=case.sql)


def test_method_errors_are_recorded_listed_and_count_as_failures(sample, db_dir, mimic_file, tmp_path):
    summary = _run(sample, _Flaky(), db_dir, tmp_path / "f", mimic_file)
    failed = [it for it in sample if it.sampled_category == "answerable_correct" and it.id.endswith(("0", "1", "2", "3"))]
    assert failed, "the sample should contain items the flaky method fails on"
    m = summary.metrics
    assert summary.errors == len(failed) and len(m["errors"]) == len(failed)
    assert m["pr"] == pytest.approx(100.0 * (20 - len(failed)) / 20)
    assert m["confusion"]["answerable_correct"]["error"] == len(failed)
    record = next(r for r in RunDir(tmp_path / "f").records() if r["error"])
    assert record["output"] is None and "500" in record["error"] and record["final_exec_acc"] is None
    # --retry-errors runs exactly those again
    again = _run(sample, _Flaky(), db_dir, tmp_path / "f", mimic_file, retry_errors=True)
    assert again.ran == len(failed)


def test_missing_database_names_the_build_command(sample, mimic_file, tmp_path):
    with pytest.raises(DatabaseNotFoundError, match="ehrguard db build mimic_iv"):
        _run(sample, "preserve_all", tmp_path, tmp_path / "r", mimic_file)


@pytest.mark.subprocess
def test_kill_9_loses_no_finished_item(mimic_file, db_dir, tmp_path):
    out = tmp_path / "run"
    cmd = [sys.executable, str(ROOT / "tests" / "benchmarks" / "slow_method.py"), "bench", "scare", "--data", str(mimic_file),
           "--db-dir", str(db_dir), "--method", "slow_preserve", "--out", str(out), "--no-report"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT)
    pred = out / "predictions.jsonl"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if pred.exists() and pred.read_bytes().count(b"\n") >= 40:
            break
        time.sleep(0.005)
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait(timeout=10) == -signal.SIGKILL, "the run must still be going when it is killed"
    before = RunDir(out).records()
    assert 40 <= len(before) < 699
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    records = RunDir(out).records()
    keys = [r["key"] for r in records]
    assert len(keys) == len(set(keys)) == 699
    assert {r["key"]: r for r in records if r["key"] in {b["key"] for b in before}} == {b["key"]: b for b in before}
    m = score_records(records)
    assert (m["pr"], m["cr"]) == (100.0, 0.0)


def test_reports_contain_the_figures_and_compare_puts_runs_side_by_side(sample, db_dir, mimic_file, tmp_path):
    for method in ("preserve_all", "oracle"):
        _run(sample, method, db_dir, tmp_path / method, mimic_file)
        rd = RunDir(tmp_path / method)
        records = rd.records()
        paths = write_scare_report(tmp_path / method, score_records(records), rd.config(), records)
        page = paths["html"].read_text()
        assert page.count("data:image/png;base64,") == 5
        md = paths["markdown"].read_text()
        assert "| PR |" in md and "## Confusion" in md and "vague-word" in md
        assert json.loads(paths["metrics"].read_text())["amb_p"] is None or method == "oracle"  # NaN becomes null
        # SCARE's Tables 4, 5 and 7, and what each figure means
        assert "## Correction rate by error type (SCARE Table 4)" in md and "| items |" in md
        assert "SCARE Table 5 layout" in md and "SCARE Table 7 layout" in md and "## What the figures mean" in md
        assert "**NaN**" in md and "<strong>NaN</strong>" in page and "<li>" in page
        # each answerable-incorrect item carries its error type; preserve_all corrects none of them
        wrong = [r for r in records if r["sampled_category"] == "answerable_incorrect"]
        assert wrong and all(r["error_type"] in ("TC", "JG", "PV", "OL", "OG", "none") for r in wrong)
        table = score_records(records)["by_error_type"]
        assert sum(row["n"] for row in table.values()) == len(wrong)
        if method == "preserve_all":
            assert all(row["cr"] == 0.0 for row in table.values() if row["n"])
    comparison = compare_runs([tmp_path / "preserve_all", tmp_path / "oracle"])
    assert [r["name"] for r in comparison["runs"]] == ["preserve_all — preserve_all", "oracle — oracle"]
    paths = write_comparison(comparison, tmp_path / "cmp")
    md = paths["markdown"].read_text()
    assert "| preserve_all — preserve_all | 80 |" in md and "GPT-5-mini" in md
    assert "data:image/png;base64," in paths["html"].read_text()
    # the same items, paired: the oracle is right wherever keeping the candidate is, and on every other item too
    (pair,) = comparison["paired"]
    by = pair["by"]
    assert by["all"]["n"] == 80 and by["all"]["a_only"] == 0 and by["all"]["b_only"] > 0 and by["all"]["p"] < 0.05
    assert by["answerable_correct"]["a_only"] == by["answerable_correct"]["b_only"] == 0 and by["answerable_correct"]["p"] == 1.0
    assert "## Paired tests (the same items)" in md and "McNemar" in md
    assert "SCARE Table 4 layout" in md and "## What the figures mean" in md and "could not be checked offline" in md
    named = compare_runs([tmp_path / "preserve_all", tmp_path / "oracle"], names=["keep", "gold"])
    assert [r["name"] for r in named["runs"]] == ["keep", "gold"] and named["paired"][0]["b"] == "gold"
    with pytest.raises(DatasetError, match="1 --name for 2 runs"):
        compare_runs([tmp_path / "preserve_all", tmp_path / "oracle"], names=["keep"])


def test_a_run_from_before_error_types_gets_them_when_rescored(sample, db_dir, mimic_file, tmp_path):
    from ehrguard.benchmarks.scare_run import rescore_runs

    _run(sample, "preserve_all", db_dir, tmp_path / "old", mimic_file)
    pred = tmp_path / "old" / "predictions.jsonl"
    lines = [json.loads(line) for line in pred.read_text().splitlines()]
    for r in lines:
        r.pop("error_type", None)
    pred.write_text("".join(json.dumps(r) + "\n" for r in lines))
    metrics, _ = rescore_runs([str(tmp_path / "old")])
    assert sum(row["n"] for row in metrics["by_error_type"].values()) == sum(
        r["sampled_category"] == "answerable_incorrect" for r in lines)


def test_merged_runs_make_a_run_folder_that_compare_reads(sample, db_dir, mimic_file, tmp_path):
    from ehrguard.benchmarks.scare_run import rescore_runs

    _run(sample[:40], "preserve_all", db_dir, tmp_path / "a", mimic_file)
    _run(sample[40:], "preserve_all", db_dir, tmp_path / "b", mimic_file)
    metrics, _ = rescore_runs([str(tmp_path / "a"), str(tmp_path / "b")], str(tmp_path / "ab"))
    assert metrics["n"] == 80 and len(RunDir(tmp_path / "ab").records()) == 80
    assert RunDir(tmp_path / "ab").config()["merged_from"] == [str(tmp_path / "a"), str(tmp_path / "b")]
    rows = compare_runs([tmp_path / "ab", tmp_path / "a"])["runs"]
    assert rows[0]["n"] == 80 and rows[0]["pr"] == 100.0
    with pytest.raises(RunError, match="holds a run of its own"):
        rescore_runs([str(tmp_path / "a"), str(tmp_path / "b")], str(tmp_path / "a"))


@pytest.mark.subprocess
def test_ctrl_c_says_how_to_resume(mimic_file, db_dir, tmp_path):
    out = tmp_path / "run"
    cmd = [sys.executable, str(ROOT / "tests" / "benchmarks" / "slow_method.py"), "bench", "scare", "--data", str(mimic_file),
           "--db-dir", str(db_dir), "--method", "slow_preserve", "--sample", "150", "--out", str(out), "--no-report"]
    # A CI job started in the background inherits SIGINT ignored, and Python keeps an ignored SIGINT ignored: give the
    # run the default disposition, as a terminal would, so that Ctrl+C reaches it.
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                            env={**os.environ, "COLUMNS": "400"}, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    pred = out / "predictions.jsonl"
    deadline = time.monotonic() + 180  # generous: on a loaded CI machine the first items can take a while
    while time.monotonic() < deadline and not (pred.exists() and pred.read_bytes().count(b"\n") >= 20):
        time.sleep(0.005)
    assert pred.exists() and pred.read_bytes().count(b"\n") >= 20, "the run saved no 20 items in 180 s"
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 130, stderr
    kept, said = len(RunDir(out).records()), stdout + stderr
    assert f"Stopped: {kept} of 150 items are saved in {out}/predictions.jsonl" in said, said
    assert "Resume with:" in said and f"--out {out}" in said and "Traceback" not in said
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=300, check=False)
    assert done.returncode == 0, (done.returncode, (done.stdout + done.stderr)[-3000:])
    assert f"150 items: {kept} from before" in done.stdout + done.stderr, (kept, done.stdout + done.stderr)


def test_mcnemar_matches_the_binomial_test_by_hand():
    from ehrguard.evaluation.scare_metrics import mcnemar_p

    # 9 discordant pairs split 8:1 -> two-sided 2 * P(X <= 1), X ~ Bin(9, 0.5) = 2 * 10 / 512
    assert mcnemar_p(8, 1) == pytest.approx(20 / 512) and mcnemar_p(1, 8) == mcnemar_p(8, 1)
    assert mcnemar_p(0, 0) == 1.0 and mcnemar_p(5, 5) == 1.0
