"""Session 22 checks, on the real MIMIC-IV demo database: an item read by its code where the question names another
item of the same dictionary, and a list of names that repeats each name once per record.

Each check is shown finding its mistake (and repairing it where the fix is certain, checked by running both), and
staying silent on the right query for the same question.
"""

from __future__ import annotations

import pytest

from ehrguard.verify.checks import run_checks
from tests.verify.checking import checks_of, found_and_repaired

# --- the code of another item ---------------------------------------------------------------------------------------


def test_a_code_whose_name_is_not_the_one_asked_for_is_repaired_to_the_named_items_code(ctx):
    # 220210 is the respiratory rate; the heart rate is 220045 (d_items), and chartevents has rows of it
    found_and_repaired(ctx, "latest heart rate of patient 10018081",
                       "SELECT valuenum FROM chartevents WHERE subject_id = 10018081 AND itemid = 220210 ORDER BY charttime DESC LIMIT 1",
                       "SELECT valuenum FROM chartevents WHERE subject_id = 10018081 AND itemid = 220045 ORDER BY charttime DESC LIMIT 1",
                       "wrong_code")
    # a lab item: 51222 is hemoglobin, the question asks for the hematocrit (a name five lab items share: reported, not
    # repaired, since which of them was meant is not certain)
    checked = run_checks("Latest hematocrit on patient 10004733?",
                         "SELECT valuenum FROM labevents WHERE subject_id = 10004733 AND itemid = 51222 ORDER BY charttime DESC LIMIT 1",
                         ctx)
    finding = next(f for f in checked.findings if f.check == "wrong_code")
    assert "hemoglobin" in finding.message and "hematocrit" in finding.message


@pytest.mark.parametrize(("question", "sql"), [
    # the code's own name is in the question
    ("What was the last respiratory rate of patient 10018081?",
     "SELECT valuenum FROM chartevents WHERE subject_id = 10018081 AND itemid = 220210 ORDER BY charttime DESC LIMIT 1"),
    # two items, each named: the heart rate is read by the other comparison
    ("Heart rate of patient 10018081 when the respiratory rate was last charted",
     "SELECT valuenum FROM chartevents WHERE subject_id = 10018081 AND itemid IN (220045, 220210) ORDER BY charttime DESC LIMIT 2"),
    # a name the question gives in other words ("hr") names no item: nothing to compare
    ("latest hr of patient 10018081",
     "SELECT valuenum FROM chartevents WHERE subject_id = 10018081 AND itemid = 220045 ORDER BY charttime DESC LIMIT 1"),
])
def test_codes_whose_items_the_question_names_or_does_not_name_are_left_alone(ctx, question, sql):
    assert "wrong_code" not in checks_of(ctx, question, sql)


# --- each name once --------------------------------------------------------------------------------------------------

LAST_VISIT = "(SELECT hadm_id FROM admissions WHERE subject_id = 10018081 ORDER BY admittime DESC LIMIT 1)"


def test_a_list_of_names_read_once_per_record_is_repaired_to_each_name_once(ctx):
    found_and_repaired(ctx, "Which drugs were prescribed to patient 10018081 in their last hospital visit?",
                       f"SELECT drug FROM prescriptions WHERE hadm_id = {LAST_VISIT}",
                       f"SELECT DISTINCT drug FROM prescriptions WHERE hadm_id = {LAST_VISIT}", "repeated_names")


@pytest.mark.parametrize(("question", "sql"), [
    # how often: the repeats are the answer
    ("List each time a drug was prescribed to patient 10018081 in their last hospital visit",
     f"SELECT drug FROM prescriptions WHERE hadm_id = {LAST_VISIT}"),
    # not names: doses repeat because they were given again
    ("What doses of insulin were prescribed to patient 10018081 in their last hospital visit?",
     f"SELECT dose_val_rx FROM prescriptions WHERE hadm_id = {LAST_VISIT} AND drug = 'insulin'"),
    # the names with when they were given: rows, not a list of names
    ("Which drugs were prescribed to patient 10018081 in their last hospital visit, and when?",
     f"SELECT drug, starttime FROM prescriptions WHERE hadm_id = {LAST_VISIT}"),
])
def test_lists_whose_repeats_mean_something_are_left_alone(ctx, question, sql):
    assert "repeated_names" not in checks_of(ctx, question, sql)


# --- the specimen a lab value was measured in ----------------------------------------------------------------------


def test_a_lab_item_of_another_specimen_than_the_one_named_is_repaired_to_the_named_one(ctx):
    # 50809 is glucose from the blood gas analyser, 50931 the chemistry (serum) glucose: both labelled 'glucose'
    found_and_repaired(ctx, "Most recent serum glucose for 10018081?",
                       "SELECT valuenum FROM labevents WHERE subject_id = 10018081 AND itemid = 50809 ORDER BY charttime DESC LIMIT 1",
                       "SELECT valuenum FROM labevents WHERE subject_id = 10018081 AND itemid = 50931 ORDER BY charttime DESC LIMIT 1",
                       "wrong_specimen")
    found_and_repaired(ctx, "last abg glucose of patient 10018081",
                       "SELECT valuenum FROM labevents WHERE subject_id = 10018081 AND itemid = 50931 ORDER BY charttime DESC LIMIT 1",
                       "SELECT valuenum FROM labevents WHERE subject_id = 10018081 AND itemid = 50809 ORDER BY charttime DESC LIMIT 1",
                       "wrong_specimen")


def test_a_urine_item_where_no_specimen_is_named_is_reported(ctx):
    # 51981 is urine glucose; "glucose" alone is a blood value (three blood items: which one is not certain)
    assert "other_specimen" in checks_of(ctx, "last glucose of patient 10018081",
                                         "SELECT valuenum FROM labevents WHERE subject_id = 10018081 AND itemid = 51981")


@pytest.mark.parametrize(("question", "code"), [
    ("last glucose of patient 10018081", 50931),  # a blood item where none is named
    ("last blood glucose of patient 10018081", 50809),  # the blood gas item is a blood item too
    ("white blood cells of patient 10018081", 51301),  # "blood" inside the item's own name names no specimen
    ("last urine glucose of patient 10018081", 51981),
])
def test_items_measured_in_what_the_question_names_are_left_alone(ctx, question, code):
    sql = f"SELECT valuenum FROM labevents WHERE subject_id = 10018081 AND itemid = {code}"
    assert not {"wrong_specimen", "other_specimen"} & checks_of(ctx, question, sql)


def test_the_shipped_specimens_are_read_only_where_the_databases_dictionary_agrees(ctx, eicu_ctx):
    from ehrguard.verify.checks.specimens import lab_items

    assert lab_items()["50809"] == ("glucose", "blood", "blood gas")
    # eICU has no d_labitems: its numbers are never read as MIMIC-IV lab items
    assert "wrong_specimen" not in checks_of(eicu_ctx, "serum glucose of patient 002-34744",
                                             "SELECT labresult FROM lab WHERE labname = 'glucose' AND labid = 50809")
