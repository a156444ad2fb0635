"""The template bank: skeletons of hand-written pairs, and the bank built from EHRSQL-2024 on the real database."""

from __future__ import annotations

from pathlib import Path

import pytest

import ehrguard
from ehrguard.verify.offline.templates import TemplateBank, abstract, load_bank, reset_banks


def test_names_ids_and_numbers_become_slots_in_question_and_sql():
    t = abstract("When was patient 10004235 last prescribed heparin within 3 days?",
                 "SELECT MAX(starttime) FROM prescriptions WHERE subject_id = 10004235 AND drug = 'heparin'"
                 " AND x >= datetime(current_time, '-3 day')")
    assert t is not None
    m = t.pattern.fullmatch("when was patient 10001217 last prescribed insulin glargine within 5 days")
    assert m is not None
    sql = t.fill(m)
    assert "subject_id = 10001217" in sql and "drug = 'insulin glargine'" in sql and "'-5 day'" in sql
    assert "current_time" not in sql  # normalised to the database's now
    assert t.pattern.fullmatch("when was patient 10001217 first prescribed insulin within 5 days") is None


def test_ambiguous_placements_are_not_abstracted():
    # The name occurs twice in the question: which one the SQL uses cannot be told.
    assert abstract("Was heparin given after heparin?", "SELECT 1 FROM prescriptions WHERE drug = 'heparin'") is None
    assert abstract("How many patients are there?", "SELECT COUNT(*) FROM patients") is None  # nothing to fill


def test_a_quote_in_a_filled_value_is_escaped():
    bank = TemplateBank([("What is the route of heparin?", "SELECT route FROM prescriptions WHERE drug = 'heparin'")])
    assert bank.candidates("What is the route of o'brien's mix?") == ["SELECT route FROM prescriptions WHERE drug = 'o''brien''s mix'"]


def test_the_ehrsql_bank_answers_a_new_question_of_a_known_form(shared_data: Path, mimic_iv_db: Path, monkeypatch):
    monkeypatch.setenv("EHRGUARD_TEMPLATE_BANK", "on")
    bank = load_bank("mimic_iv", str(shared_data))
    assert bank is not None and len(bank) > 3000
    drug = ehrguard.open_database(mimic_iv_db).execute("SELECT drug FROM prescriptions WHERE drug = 'trazodone' LIMIT 1").rows
    assert drug
    found = bank.candidates("What are the consumption methods of trazodone?")
    assert any("prescriptions.drug = 'trazodone'" in sql for sql in found)


def test_the_verifier_replaces_a_wrong_candidate_by_the_known_form(shared_data, mimic_iv_db, monkeypatch):
    monkeypatch.setenv("EHRGUARD_DATA_DIR", str(shared_data))
    monkeypatch.setenv("EHRGUARD_TEMPLATE_BANK", "on")
    reset_banks()
    question = "What are the consumption methods of trazodone?"
    wrong = "SELECT DISTINCT route FROM prescriptions WHERE drug = 'heparin'"  # answers differently (SC, IV)
    verdict = ehrguard.verify(question, wrong, db=mimic_iv_db, db_id="mimic_iv")
    assert verdict.action == "correct" and "'trazodone'" in verdict.sql and verdict.details["repair"]["fixed"] == "template"
    right = "SELECT DISTINCT prescriptions.route FROM prescriptions WHERE prescriptions.drug = 'trazodone'"
    assert ehrguard.verify(question, right, db=mimic_iv_db, db_id="mimic_iv").action == "preserve"
    off = ehrguard.verify(question, wrong, db=mimic_iv_db, db_id="mimic_iv", templates="off", forms="off")
    # no bank, no correction by a known form (the checks' own repair of the drug's name may still answer)
    assert off.action != "correct" or off.details["repair"]["fixed"] not in ("template", "form")
    monkeypatch.setenv("EHRGUARD_TEMPLATE_BANK", "off")
    assert load_bank("mimic_iv") is None


def test_paraphrases_of_a_known_form_match_it():
    bank = TemplateBank([("Count the number of patients who stayed in ward 12 since 2100.",
                          "SELECT COUNT(DISTINCT subject_id) FROM transfers WHERE careunit = 'ward 12' AND x >= '2100'")])
    for asked in ("What number of patients who stayed in ward 14 since 2100?", "How many patients who stayed in ward 14 since 2100?",
                  "Could you tell me the number of patients who stayed in ward 14 since 2100?"):
        found = bank.candidates(asked)
        assert found == ["SELECT COUNT(DISTINCT subject_id) FROM transfers WHERE careunit = 'ward 14' AND x >= '2100'"], asked
    # the year is a number slot here (it appears once in the SQL)
    assert bank.candidates("How many patients who stayed in ward 14 since 2101?") == [
        "SELECT COUNT(DISTINCT subject_id) FROM transfers WHERE careunit = 'ward 14' AND x >= '2101'"]
    assert bank.candidates("How many patients were moved to ward 14 since 2101?") == []  # another form


@pytest.mark.subprocess
def test_skeletons_do_not_depend_on_string_hashing():
    import os
    import subprocess
    import sys

    code = ("from ehrguard.verify.offline.templates import abstract; "
            "print(abstract('Was heparin or insulin given to patient 10004235?', "
            "\"SELECT 1 FROM prescriptions WHERE subject_id = 10004235 AND (drug = 'heparin' OR drug = 'insulin')\").pattern.pattern)")
    seen = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONHASHSEED": str(seed)}).stdout for seed in (1, 2, 3, 4)}
    assert len(seen) == 1


def test_a_fitting_skeleton_is_found_among_many_that_share_its_words():
    # Sixty skeletons hold every word of the question (and one more); only the last one fits it.
    extra = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"]
    decoys = [(f"What is the route of heparin for patient 10004235 today by {a} {b}?",
               "SELECT route FROM prescriptions WHERE subject_id = 10004235 AND drug = 'heparin' AND 1 = 1")
              for a in extra for b in extra[:6]]
    target = ("What is the route of heparin for patient 10004235 today?",
              "SELECT route FROM prescriptions WHERE subject_id = 10004235 AND drug = 'heparin'")
    bank = TemplateBank([*decoys, target])
    assert len(bank) == 61
    assert bank.candidates("What is the route of insulin for patient 10001217 today?") == [
        "SELECT route FROM prescriptions WHERE subject_id = 10001217 AND drug = 'insulin'"]
