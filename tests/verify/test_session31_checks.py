"""Repairs that must be certain, and wording that must not be misread: a value the question names only inside a longer
name is no repair, a discharge said with its destination is not a stay still open, a place recorded at discharge is
not the moment of discharge. On the real MIMIC-IV and eICU demo databases."""

from __future__ import annotations

from ehrguard.verify.checks import repair, run_checks


def checks(ctx, question, sql):
    return {f.check: f for f in run_checks(question, sql, ctx).findings}


def repaired(ctx, question, sql):
    return repair(run_checks(question, sql, ctx))


def test_a_value_inside_a_longer_name_the_literal_reads_is_no_mistake(ctx):
    # "nursing home": 'home' is one of the column's values, and 'skilled nursing facility' reads the whole name
    nursing = "SELECT COUNT(DISTINCT subject_id) FROM admissions WHERE discharge_location = 'skilled nursing facility'"
    assert "wrong_value" not in checks(ctx, "How many patients were discharged to a nursing home?", nursing)
    # a word inside a word of the literal: "flu" in 'influenza a/b by dfa'
    flu = "SELECT COUNT(*) > 0 FROM microbiologyevents WHERE subject_id = 10004733 AND spec_type_desc = 'influenza a/b by dfa'"
    assert "wrong_value" not in checks(ctx, "Did patient 10004733 have a flu swab?", flu)
    # the value said on its own is still a mistake, and repaired
    rehab = "SELECT COUNT(DISTINCT subject_id) FROM admissions WHERE discharge_location = 'rehab'"
    found = checks(ctx, "How many patients were discharged home?", rehab)["wrong_value"]
    assert found.severity == "error" and found.suggestion == "'home'"
    assert "'home'" in repaired(ctx, "How many patients were discharged home?", rehab)


def test_a_value_that_is_only_part_of_a_longer_name_is_not_put_in(ctx):
    # "blood alcohol": 'blood' is a value of the labels, the test asked for is another one; a mistake, but no repair
    sql = ("SELECT labevents.valuenum FROM labevents JOIN d_labitems ON labevents.itemid = d_labitems.itemid "
           "WHERE labevents.subject_id = 10004733 AND d_labitems.label = 'ethanol'")
    found = checks(ctx, "What was the blood alcohol level of patient 10004733?", sql).get("wrong_value")
    assert found is None or found.suggestion is None
    assert "'blood'" not in (repaired(ctx, "What was the blood alcohol level of patient 10004733?", sql) or "")


def test_initials_and_abbreviations_in_parentheses_name_the_value(eicu_ctx):
    sdu = "SELECT COUNT(DISTINCT uniquepid) FROM patient WHERE hospitaladmitsource = 'step-down unit (sdu)'"
    assert "wrong_value" not in checks(eicu_ctx, "How many patients came to the ICU from a step-down unit?", sdu)
    floor = "SELECT COUNT(DISTINCT uniquepid) FROM patient WHERE hospitaladmitsource = 'floor'"
    found = checks(eicu_ctx, "How many patients came from the emergency department?", floor)["wrong_value"]
    assert found.suggestion == "'emergency department'"


def test_lactated_ringers_read_by_its_initials(ctx):
    sql = ("SELECT SUM(inputevents.totalamount) FROM inputevents JOIN d_items ON inputevents.itemid = d_items.itemid "
           "WHERE inputevents.subject_id = 10004733 AND d_items.label = 'lr'")
    assert "wrong_value" not in checks(ctx, "How much lactated ringers did patient 10004733 receive?", sql)


def test_not_discharged_with_a_destination_is_not_a_stay_still_open(ctx):
    sql = ("SELECT COUNT(DISTINCT subject_id) FROM admissions WHERE strftime('%Y', admittime) = '2100' "
           "AND discharge_location <> 'home'")
    for question in ("How many patients admitted in 2100 were not discharged home?",
                     "How many patients admitted in 2100 were not discharged to hospice?"):
        assert "missing_current_filter" not in checks(ctx, question, sql.replace("'home'", "'hospice'")), question
    # on its own it still is
    still = checks(ctx, "How many patients are not yet discharged?", "SELECT COUNT(DISTINCT subject_id) FROM admissions")
    assert still["missing_current_filter"].suggestion == "admissions.dischtime IS NULL"


def test_a_place_recorded_at_discharge_is_not_the_moment_of_discharge(ctx):
    sql = "SELECT COUNT(*) FROM admissions WHERE discharge_location IS NOT NULL AND strftime('%Y', admittime) = '2100'"
    assert "wrong_concept" not in checks(ctx, "How many admissions with a documented discharge location were there in 2100?", sql)
    wrong = "SELECT COUNT(DISTINCT subject_id) FROM admissions WHERE strftime('%Y', admittime) = '2100'"
    assert checks(ctx, "How many patients were discharged in 2100?", wrong)["wrong_concept"].severity == "error"
