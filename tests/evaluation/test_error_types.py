"""The error-type reading (SCARE Table 4's types) on hand-built pairs, and its agreement with the shipped hand labels."""

from __future__ import annotations

import pytest

from ehrguard.evaluation import ERROR_TYPES, classify_error

MIMIC = {"entity_tables": ["patients", "admissions", "icustays"], "entity_ids": ["subject_id", "hadm_id", "stay_id"]}
GOLD = ("SELECT COUNT(*) FROM prescriptions WHERE prescriptions.hadm_id IN ( SELECT admissions.hadm_id FROM admissions "
        "WHERE admissions.subject_id = 10004235 ) AND prescriptions.drug = 'heparin'")


@pytest.mark.parametrize(("pred", "expected"), [
    # a wrong value, nested like the gold and written as a join
    (GOLD.replace("'heparin'", "'heparin sodium'"), "PV"),
    ("SELECT COUNT(*) FROM prescriptions p JOIN admissions a ON p.hadm_id = a.hadm_id WHERE a.subject_id = 10004235 "
     "AND p.drug = 'insulin'", "PV"),
    (GOLD.replace("= 'heparin'", "LIKE '%hep%'"), "PV"),
    # a wrong column, a wrong table
    (GOLD.replace("prescriptions.drug", "prescriptions.route"), "TC"),
    ("SELECT COUNT(*) FROM inputevents WHERE inputevents.hadm_id IN ( SELECT admissions.hadm_id FROM admissions "
     "WHERE admissions.subject_id = 10004235 ) AND inputevents.label = 'heparin'", "TC"),
    # one clause otherwise: the aggregate, a condition missing
    (GOLD.replace("COUNT(*)", "COUNT(DISTINCT prescriptions.drug)"), "OL"),
    (GOLD.replace(" AND prescriptions.drug = 'heparin'", ""), "OL"),
    # the link: by subject instead of by admission, through a table the gold does not need
    ("SELECT COUNT(*) FROM prescriptions, labevents WHERE prescriptions.hadm_id = labevents.hadm_id AND "
     "prescriptions.subject_id = 10004235 AND prescriptions.drug = 'heparin'", "JG"),
    # several kinds at once, and SQL that does not parse
    ("SELECT MAX(p.starttime) FROM prescriptions p WHERE p.route = 'iv' AND p.dose_val_rx > 5", "OG"),
    ("SELEC COUNT(* FROM", "OG"),
    # the gold itself, written otherwise
    (GOLD.lower(), "none"),
])
def test_hand_built_pairs(pred: str, expected: str):
    assert classify_error(GOLD, pred, **MIMIC).type == expected


def test_group_by_and_ordering():
    gold = "SELECT drug, COUNT(*) FROM prescriptions GROUP BY drug ORDER BY COUNT(*) DESC LIMIT 3"
    assert classify_error(gold, gold.replace("GROUP BY drug", "GROUP BY route")).type == "JG"
    assert classify_error(gold, gold.replace("DESC", "ASC")).type == "OL"
    assert classify_error(gold, gold.replace("LIMIT 3", "LIMIT 5")).type == "OL"
    # ORDER BY ... LIMIT 1 and MAX ask the same: only the wrong value remains
    first = "SELECT MAX(charttime) FROM labevents WHERE subject_id = 1 AND itemid = 50912"
    other = "SELECT charttime FROM labevents WHERE subject_id = 1 AND itemid = 50931 ORDER BY charttime DESC LIMIT 1"
    assert classify_error(first, other).type == "PV"
    assert set(ERROR_TYPES) == {"TC", "JG", "PV", "OL", "OG"}


def test_the_reading_agrees_with_the_hand_labels(shared_data):
    from ehrguard.benchmarks import LABELS, agreement, load_scare, read_labels

    labels = read_labels(LABELS)
    assert len(labels) == 130 and {r["split"] for r in labels} == {"refine", "held-out"}
    result = agreement(load_scare([shared_data / "scare" / "mimic_iv_dev.json", shared_data / "scare" / "eicu_dev.json"]), labels)
    assert result["all"]["n"] == 130 - result["none_labels"]
    # docs/benchmarks.md reports the figures (held-out 54.7% when written); a change to the reading that lowers them
    # this far must say so there
    assert result["held-out"]["agreement"] >= 50.0 and result["held-out"]["kappa"] >= 0.2
    assert sum(sum(row.values()) for row in result["held-out"]["confusion"].values()) == result["held-out"]["n"]
