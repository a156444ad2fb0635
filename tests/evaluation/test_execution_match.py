"""The execution-match rule, case by case, on a real SQLite database."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from ehrguard.db import open_database
from ehrguard.evaluation.execution_match import (
    align_distinct,
    answers_match,
    canonical_answer,
    canonical_value,
    execution_match,
    is_abstention,
    label_category,
    normalize_gold,
    normalize_prediction,
    parse_answer,
)


@pytest.fixture()
def db(tmp_path: Path):
    path = tmp_path / "t.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript(
        """
        CREATE TABLE p (id INT, name TEXT, age INT, died INT, t TEXT);
        INSERT INTO p VALUES (1, 'ann', 70, 1, '2100-12-30 10:00:00'), (2, 'bob', 50, 0, '2100-06-01 00:00:00'),
                             (3, 'cy', 50, 0, '2101-01-01 00:00:00'), (4, NULL, 61, 1, '2099-01-01 00:00:00');
        CREATE TABLE v (id INT, hr REAL);
        INSERT INTO v VALUES (1, 55.0), (1, 80.0), (2, 120.0);
        """
    )
    conn.commit()
    conn.close()
    return open_database(path)


def test_prediction_normalisation_rules():
    assert normalize_prediction("```sql\nSELECT  a\nFROM t```") == "SELECT a FROM t"
    assert (normalize_prediction("SELECT a FROM t WHERE x > = 1 AND y < = 2 AND z ! = 3")
            == "SELECT a FROM t WHERE x >= 1 AND y <= 2 AND z != 3")
    assert normalize_prediction('SELECT a FROM t WHERE n = "ann"') == "SELECT a FROM t WHERE n = 'ann'"
    now = "'2100-12-31 23:59:00'"
    assert normalize_prediction("SELECT current_time") == f"SELECT {now}"
    assert normalize_prediction("SELECT datetime('now')") == f"SELECT datetime({now})"
    assert normalize_prediction("SELECT NOW()") == f"SELECT {now}"
    assert normalize_prediction("SELECT CURDATE(), CURTIME()") == "SELECT '2100-12-31', '23:59:00'"
    assert normalize_prediction("SELECT strftime('%y-%j', t) FROM p") == "SELECT strftime('%Y-%J', t) FROM p"
    # Labels are not SQL: left alone.
    assert normalize_prediction("ambiguous") == "ambiguous"


@pytest.mark.parametrize(
    ("vital", "low", "high"),
    [("temperature", 35.5, 38.1), ("sao2", 95.0, 100.0), ("heart_rate", 60.0, 100.0), ("respiration", 12.0, 18.0),
     ("systolic_bp", 90.0, 120.0), ("diastolic_bp", 60.0, 90.0), ("mean_bp", 60.0, 110.0)],
)
def test_vital_placeholders_become_normal_ranges(vital, low, high):
    sql = f"SELECT x FROM v WHERE hr BETWEEN {vital}_lower AND {vital}_upper"
    expected = f"SELECT x FROM v WHERE hr BETWEEN {low} AND {high}"
    assert normalize_gold(sql) == expected
    assert normalize_prediction(sql) == expected


def test_unknown_or_mixed_vital_placeholders_are_left_alone():
    assert normalize_gold("SELECT 1 WHERE a > pulse_lower AND a < pulse_upper") == "SELECT 1 WHERE a > pulse_lower AND a < pulse_upper"
    mixed = "SELECT 1 WHERE a > sao2_lower AND a < mean_bp_upper"
    assert normalize_gold(mixed) == mixed


def test_gold_gets_time_and_format_normalisation_only():
    gold = 'SELECT strftime(\'%y\', current_time) FROM t WHERE a = "x"'
    assert normalize_gold(gold) == "SELECT strftime('%Y', '2100-12-31 23:59:00') FROM t WHERE a = \"x\""


def test_distinct_alignment():
    assert align_distinct("SELECT a FROM t", "SELECT DISTINCT a FROM t") == "SELECT DISTINCT a FROM t"
    assert align_distinct("select distinct a from t", "SELECT a FROM t") == "SELECT a from t"
    assert align_distinct("SELECT DISTINCT a FROM t", "SELECT DISTINCT b FROM t") == "SELECT DISTINCT a FROM t"
    assert align_distinct("null", "SELECT DISTINCT a FROM t") == "null"


def test_canonical_values_round_to_three_decimals_and_stringify():
    assert canonical_value(1) == "1.0"
    assert canonical_value(2.34567) == "2.346"
    assert canonical_value("7") == "7.0"  # numeric-looking text is a number to the scorers
    assert canonical_value(None) == "None"
    assert canonical_value("ann") == "ann"


def test_canonical_answer_sorts_and_keeps_first_100():
    rows = [(i,) for i in range(150, 0, -1)]
    answer = canonical_answer(rows)
    assert len(answer) == 100
    assert answer == sorted(answer)
    assert ["1.0"] in answer and ["99.0"] not in answer  # string order: '1.0' < '10.0' < ... ; '99.0' is past the cut


def test_both_empty_match_and_empty_prediction_does_not():
    assert answers_match([], [], "SELECT 1", "mimic_iv")
    assert not answers_match([], [["1.0"]], "SELECT 1", "mimic_iv")
    assert not answers_match([["1.0"]], [], "SELECT 1", "mimic_iv")


def test_single_column_needs_exact_list_equality():
    assert answers_match([["a"], ["b"]], [["a"], ["b"]], "SELECT x", "eicu")
    assert not answers_match([["a"]], [["a"], ["b"]], "SELECT x", "eicu")


def test_survival_rate_percentages_are_scaled():
    gold_sql = "SELECT AVG(CASE WHEN x THEN 1 ELSE 0 END) FROM t"
    assert answers_match([["50.0"]], [["0.5"]], gold_sql, "mimic_iv")
    assert not answers_match([["50.0"]], [["0.5"]], "SELECT AVG(x) FROM t", "mimic_iv")
    assert answers_match([["0.5"]], [["0.5"]], gold_sql, "mimic_iv")


def test_multi_column_prediction_matches_on_any_column_set():
    gold = [["ann"], ["bob"]]
    assert answers_match([["1.0", "ann"], ["2.0", "bob"], ["3.0", "None"]], gold, "SELECT name", "mimic_iv")
    assert not answers_match([["1.0", "ann"], ["2.0", "cy"]], gold, "SELECT name", "mimic_iv")


def test_mimicsql_compares_row_sets_positionally():
    gold = [["ann", "70.0"], ["bob", "50.0"]]
    assert answers_match([["70.0", "ann"], ["50.0", "bob"]], gold, "SELECT", "mimicsql")
    assert not answers_match([["50.0", "bob"], ["70.0", "ann"]], gold, "SELECT", "mimicsql")
    assert not answers_match([["70.0", "ann"]], gold, "SELECT", "mimicsql")


def test_labels_are_recognised_and_mapped():
    assert is_abstention("ambiguous") and is_abstention(" Vague-Word ") and is_abstention("null")
    assert not is_abstention("SELECT 1")
    assert label_category("small-talk") == "unanswerable"
    assert label_category("ambiguous-reference") == "ambiguous"
    assert label_category("SELECT 1") is None


def test_execution_match_end_to_end(db):
    gold = "SELECT DISTINCT name FROM p WHERE age = 50"
    assert execution_match(db, "select name from p where age = 50", gold, db_id="mimic_iv").match
    assert not execution_match(db, "SELECT name FROM p WHERE age = 70", gold, db_id="mimic_iv").match
    # "now" anchors, percent scaling and precomputed gold answers all flow through
    gold_now = "SELECT COUNT(*) FROM p WHERE t <= current_time"
    assert execution_match(db, "SELECT COUNT(*) FROM p WHERE t <= datetime('now')", gold_now, db_id="mimic_iv").match
    r = execution_match(db, "SELECT 100.0 * AVG(CASE WHEN died = 1 THEN 1 ELSE 0 END) FROM p",
                        "SELECT AVG(CASE WHEN died = 1 THEN 1 ELSE 0 END) FROM p", db_id="mimic_iv")
    assert r.match and r.gold_answer == [["0.5"]]


def test_errors_never_match_and_labels_are_never_executed(db):
    r = execution_match(db, "SELECT nope FROM p", "SELECT nope FROM p", db_id="mimic_iv")
    assert not r.match and r.pred_error and r.gold_error
    r = execution_match(db, "unanswerable", "SELECT name FROM p", db_id="mimic_iv")
    assert not r.match and r.pred_answer is None and r.pred_error is None


def test_published_answer_strings_parse_back():
    assert parse_answer("[['7.42']]") == [["7.42"]]
    assert parse_answer("[[1, 'x'], [0.12345, None]]") == [["0.123", "None"], ["1.0", "x"]]
    assert parse_answer("null") is None
    with pytest.raises(ValueError):
        parse_answer("[Error] no such table")
