"""The adversarial corpus on both engines: every case ends as its engine must, nothing changes, nothing is written."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ehrguard.benchmarks.hostile import CORPUS, case_sql, classify, duckdb_copy, load_corpus, run_hostile
from ehrguard.db import open_database
from ehrguard.errors import QueryTimeoutError, QueryTooLargeError


@pytest.fixture(scope="module")
def targets(synthetic_db: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("hostile")
    sqlite_path = folder / "target.sqlite"
    shutil.copy(synthetic_db, sqlite_path)
    return {"sqlite": sqlite_path, "duckdb": duckdb_copy(sqlite_path, folder / "target.duckdb")}


def test_the_corpus_is_large_and_covers_both_engines():
    for engine in ("sqlite", "duckdb"):
        cases = load_corpus(engine)
        assert len(cases) >= 300 and len({c.id for c in cases}) == len(cases)
        assert {"write", "file_access", "runaway", "too_large", "big_result", "odd_input", "harmless"} <= {c.category for c in cases}
    assert CORPUS.stat().st_size < 200_000  # huge SQL is stored as parts


@pytest.mark.parametrize("engine", ["sqlite", "duckdb"])
def test_every_hostile_case_ends_as_expected_and_nothing_changes(targets: dict[str, Path], engine: str, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # the working folder is watched for new files too
    report = run_hostile(open_database(targets[engine]), timeout_s=1.0)
    failures = [(f.id, f.outcome, f.expected, f.message[:100]) for f in report.failures]
    assert not failures, failures
    assert report.file_unchanged and report.new_files == []
    assert not any(o.outcome.startswith("crash") for o in report.outcomes)
    # the limits held: a stopped query came back within the hard deadline, allowing for a worker's restart on a busy machine
    assert report.stop_ratios()["max"] < 4.0, report.stop_ratios()


def test_classify_and_parts():
    assert classify(QueryTooLargeError("x")) == "too_large" and classify(QueryTimeoutError("x")) == "stopped"
    assert classify(ValueError("x")) == "crash (ValueError)"
    assert case_sql({"sql_parts": {"head": "SELECT ", "repeat": "{i}", "times": 3, "join": " + ", "tail": ";"}}) == "SELECT 0 + 1 + 2;"
