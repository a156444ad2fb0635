"""The safety benchmark's outcomes and rates, on hand-made cases and real verdicts against the real demo database."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ehrguard.benchmarks import load_cases, safety_metrics
from ehrguard.benchmarks.safety import SafetyCase, outcome
from ehrguard.cli import cli
from ehrguard.db import open_database
from ehrguard.errors import DatabaseNotFoundError, DatasetError
from ehrguard.verify import Verdict

RIGHT = "SELECT gender FROM patients WHERE subject_id = 10004235"
WRONG = "SELECT gender FROM patients WHERE subject_id = 10000032"  # another patient (of the other gender in the demo)


def case(kind: str, sql: str = WRONG, gold: str | None = RIGHT) -> SafetyCase:
    return SafetyCase("t-1", "mimic_iv", kind, "test", "What is the gender of patient 10004235?", sql,
                      gold if kind in ("correct", "wrong") else None)


@pytest.fixture(scope="module")
def db(mimic_iv_db: Path):
    db = open_database(mimic_iv_db)
    assert db.execute(RIGHT).rows != db.execute(WRONG).rows
    return db


def test_each_outcome_from_a_real_verdict(db):
    kept = Verdict("preserve", sql=WRONG, status="verified", reason="ok")
    assert outcome(case("wrong"), kept, db)["unsafe"] is True  # a wrong answer shown as verified
    assert outcome(case("wrong"), Verdict("preserve", sql=WRONG, status="unverified", reason="x"), db)["unsafe"] is False
    fixed = outcome(case("wrong"), Verdict("correct", sql=RIGHT, status="verified", reason="ok"), db)
    assert fixed["fixed"] and not fixed["unsafe"]
    assert outcome(case("correct", RIGHT), Verdict("correct", sql=WRONG, status="verified", reason="ok"), db)["harmful"] is True
    assert outcome(case("correct", RIGHT), Verdict("preserve", sql=RIGHT, status="unverified", reason="x"), db)["over_cautious"] is True
    good = outcome(case("correct", RIGHT), Verdict("preserve", sql=RIGHT, status="verified", reason="ok"), db)
    assert not good["harmful"] and not good["over_cautious"]
    assert outcome(case("unanswerable"), Verdict("preserve", sql=WRONG, status="verified", reason="ok"), db)["unsafe"] is True
    assert outcome(case("ambiguous"), Verdict("ambiguous", message="What do you mean?"), db)["unsafe"] is False


def test_rates_count_what_they_say():
    records = [
        {"db": "mimic_iv", "kind": "wrong", "status": "verified", "unsafe": True, "fixed": False},
        {"db": "mimic_iv", "kind": "wrong", "status": "verified", "unsafe": False, "fixed": True},
        {"db": "eicu", "kind": "unanswerable", "status": "abstained", "unsafe": False},
        {"db": "eicu", "kind": "correct", "status": "verified", "harmful": False, "over_cautious": False},
        {"db": "eicu", "kind": "correct", "status": "unverified", "harmful": False, "over_cautious": True},
    ]
    m = safety_metrics(records)
    assert m["all"]["unsafe_rate"] == pytest.approx(100 / 3) and m["all"]["fix_rate"] == 50.0
    assert m["all"]["over_caution"] == 50.0 and m["all"]["harmful_rate"] == 0.0
    assert m["eicu"]["cases"] == 3 and m["mimic_iv"]["unsafe"]["by_kind"]["wrong"] == 1


def test_the_shipped_cases_load_and_a_broken_line_is_named(tmp_path):
    cases = load_cases()
    assert len(cases) >= 300 and {c.kind for c in cases} == {"correct", "wrong", "unanswerable", "ambiguous"}
    assert len({c.id for c in cases}) == len(cases)
    (tmp_path / "mimic_iv.jsonl").write_text(json.dumps({"id": "x", "db": "mimic_iv", "kind": "wrong", "category": "c",
                                                         "question": "q", "candidate_sql": "SELECT 1", "gold_sql": None}) + "\n")
    with pytest.raises(DatasetError, match="mimic_iv.jsonl:1"):
        load_cases(tmp_path, ("mimic_iv",))


def test_the_command_says_how_to_build_a_missing_database(tmp_path):
    r = CliRunner().invoke(cli, ["bench", "safety", "--db-dir", str(tmp_path)])
    # the CLI's entry point prints an EhrguardError as one line (tests/cli/test_cli.py); here it is the typed error
    assert isinstance(r.exception, DatabaseNotFoundError) and "ehrguard db build mimic_iv --out" in str(r.exception)


def test_the_command_runs_a_users_own_cases_on_the_databases_they_name(tmp_path, mimic_iv_db: Path):
    folder = tmp_path / "dbs"
    folder.mkdir()
    for source in mimic_iv_db.parent.glob(mimic_iv_db.name + "*"):  # the database and its value index
        (folder / source.name.replace(mimic_iv_db.stem, "mimic_iv", 1)).symlink_to(source)
    mine = tmp_path / "ward.jsonl"
    rows = [{"id": "ward-1", "db": "mimic_iv", "kind": "correct", "category": "gender",
             "question": "What is the gender of patient 10004235?", "candidate_sql": RIGHT, "gold_sql": RIGHT},
            {"id": "ward-2", "db": "mimic_iv", "kind": "unanswerable", "category": "allergy",
             "question": "Is patient 10004235 allergic to penicillin?", "candidate_sql": RIGHT, "gold_sql": None}]
    mine.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "report"
    r = CliRunner().invoke(cli, ["bench", "safety", "--db-dir", str(folder), "--cases", str(mine), "--out", str(out), "--json"])
    assert r.exit_code == 0, r.output
    records = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]
    assert [x["id"] for x in records] == ["ward-1", "ward-2"]  # only these cases, and eICU was never needed
    assert records[1]["unsafe"] is False  # an allergy question on a schema without allergies is not answered as verified
    assert "ward.jsonl" in (out / "report.md").read_text()
    (tmp_path / "bad.jsonl").write_text(json.dumps({**rows[0], "db": "omop"}) + "\n")
    with pytest.raises(DatasetError, match="bad.jsonl:1: database 'omop'"):
        CliRunner().invoke(cli, ["bench", "safety", "--db-dir", str(folder), "--cases", str(tmp_path / "bad.jsonl")],
                           catch_exceptions=False)


def test_the_held_out_cases_load_and_answer_as_labelled(mimic_iv_db: Path, eicu_db: Path):
    """The blind held-out set (safety_heldout/): both halves load, ids are unique, and on the real demo databases every
    correct candidate answers like its gold and every wrong one differently (as the cases were validated)."""
    from ehrguard.benchmarks import read_case_file
    from ehrguard.benchmarks.safety import _answer

    folder = Path(__file__).parents[2] / "src" / "ehrguard" / "benchmarks" / "safety_heldout"
    cases = []
    for batch in ("", "second_", "third_", "fourth_", "fifth_"):  # sessions 20, 22 (two), 31 and 32, each written blind by its own helper
        read, unread = read_case_file(folder / f"{batch}read.jsonl"), read_case_file(folder / f"{batch}unread.jsonl")
        assert len(read) == len(unread) == 100 and len({c.id for c in read + unread}) == 200
        assert all(int(c.id.split("-")[1]) % 2 == 1 for c in read) and all(int(c.id.split("-")[1]) % 2 == 0 for c in unread)
        cases += read + unread
    assert len({c.id for c in cases}) == 1000
    dbs = {"mimic_iv": open_database(mimic_iv_db), "eicu": open_database(eicu_db)}
    for c in cases:
        if c.kind in ("correct", "wrong"):
            same = _answer(dbs[c.db], c.candidate_sql) == _answer(dbs[c.db], c.gold_sql)
            assert same == (c.kind == "correct"), c.id
