"""Every SQL check on hand-written candidates against the real MIMIC-IV demo database."""

from __future__ import annotations

from pathlib import Path

import pytest

from ehrguard.db import open_database
from ehrguard.verify.checks import repair, run_checks
from ehrguard.verify.methods import DatabaseContext


@pytest.fixture(scope="module")
def ctx(mimic_iv_db: Path) -> DatabaseContext:
    return DatabaseContext(open_database(mimic_iv_db), "mimic_iv", mimic_iv_db)


def checks(ctx, sql, question="What is it?"):
    checked = run_checks(question, sql, ctx)
    return checked, {f.check: f for f in checked.findings}


@pytest.mark.parametrize("sql", ["null", "", "  ", "N/A"])
def test_a_missing_query_is_reported_and_nothing_else(ctx, sql):
    _, found = checks(ctx, sql)
    assert list(found) == ["abstained"]


def test_a_write_is_refused_and_never_executed(ctx):
    _, found = checks(ctx, "DELETE FROM patients")
    assert list(found) == ["read_only"]
    assert ctx.db.execute("SELECT COUNT(*) FROM patients").rows[0][0] > 0


def test_unknown_table_and_column_get_the_nearest_name_and_a_repair(ctx):
    sql = "SELECT gendr FROM patient WHERE subject_id = 10004235"
    sql_ctx, found = checks(ctx, sql)
    assert found["unknown_table"].suggestion == "patients" and found["unknown_column"].suggestion == "gender"
    assert sql[slice(*found["unknown_column"].span)] == "gendr"
    assert "execution" in found
    fixed = repair(sql_ctx)
    assert fixed == "SELECT gender FROM patients WHERE subject_id = 10004235"
    assert ctx.db.execute(fixed).rows


def test_columns_of_aliases_ctes_and_subqueries_are_not_flagged(ctx):
    sql = ("WITH t AS (SELECT subject_id AS sid, gender FROM patients) "
           "SELECT p.gender, COUNT(*) AS n FROM t p JOIN admissions a ON a.subject_id = p.sid GROUP BY p.gender ORDER BY n")
    _, found = checks(ctx, sql)
    assert "unknown_column" not in found and "unknown_table" not in found and "execution" not in found


def test_an_unqualified_column_of_an_in_subquery_is_read_against_the_subquery(ctx):
    # sqlglot also lists the subquery's unqualified columns under the outer query (they could be correlated): 'label' is
    # d_labitems', not labevents', and the query is right.
    sql = ("SELECT valuenum FROM labevents WHERE subject_id = 10000032 AND itemid IN "
           "(SELECT itemid FROM d_labitems WHERE label = 'glucose') ORDER BY charttime DESC LIMIT 1")
    _, found = checks(ctx, sql, "What was the last glucose value of patient 10000032?")
    assert "unknown_column" not in found and "execution" not in found
    # A name neither scope has is still found, with the subquery's nearest name.
    _, found = checks(ctx, sql.replace("WHERE label", "WHERE labell"), "What was the last glucose value of patient 10000032?")
    assert found["unknown_column"].suggestion == "label"


def test_engine_errors_empty_and_null_results(ctx):
    _, found = checks(ctx, "SELECT no_such_function(1)")
    assert "execution" in found and "no_such_function" in found["execution"].message
    _, found = checks(ctx, "SELECT * FROM patients WHERE subject_id = 1")
    assert "empty_result" in found and "unknown_patient" in found
    _, found = checks(ctx, "SELECT MAX(dod) FROM patients WHERE subject_id = 1")
    assert "null_result" in found


def test_now_is_the_database_now(ctx):
    sql = "SELECT COUNT(*) FROM admissions WHERE admittime >= datetime('now', '-1 year')"
    sql_ctx, found = checks(ctx, sql)
    assert "wrong_now" in found
    fixed = repair(sql_ctx)
    assert "2100-12-31 23:59:00" in fixed and "'now'" not in fixed


def test_a_literal_that_is_not_in_the_column_is_found_and_repaired_only_when_clear(ctx):
    label = ctx.db.execute("SELECT label FROM d_labitems WHERE label = 'glucose' LIMIT 1").rows
    assert label, "the demo's d_labitems holds 'glucose'"
    sql = "SELECT COUNT(*) FROM labevents WHERE itemid IN (SELECT itemid FROM d_labitems WHERE label = 'glucse')"
    sql_ctx, found = checks(ctx, sql, "How many glucose tests were done?")
    assert found["unknown_value"].suggestion == "'glucose'"
    assert "'glucose'" in repair(sql_ctx)
    # The same literal, stated word for word in the question: the user asked for it; not a typo to "fix".
    sql_ctx, found = checks(ctx, sql, "How many glucse tests were done?")
    assert "unknown_value" in found and found["unknown_value"].suggestion is None


def test_identifiers_are_never_fuzzy_repaired(ctx):
    sql = "SELECT gender FROM patients WHERE subject_id = 10004236"
    sql_ctx, found = checks(ctx, sql, "What is the gender of patient 10004236?")
    assert "unknown_patient" in found and found["unknown_patient"].suggestion is None
    assert repair(sql_ctx) is None


def test_counting_people_without_distinct(ctx):
    sql = "SELECT COUNT(subject_id) FROM admissions WHERE admission_type = 'urgent'"
    sql_ctx, found = checks(ctx, sql, "How many patients were admitted urgently?")
    assert "count_without_distinct" in found
    fixed = repair(sql_ctx)
    assert fixed == "SELECT COUNT(DISTINCT subject_id) FROM admissions WHERE admission_type = 'urgent'"
    _, found = checks(ctx, sql, "How many admissions were urgent?")  # counting rows is right here
    assert "count_without_distinct" not in found


def test_a_clean_query_has_no_findings(ctx):
    _, found = checks(ctx, "SELECT gender FROM patients WHERE subject_id = 10004235", "What is the gender of patient 10004235?")
    assert found == {}


def test_repair_edits_a_copy_and_leaves_the_checked_tree_as_parsed(ctx):
    sql = "SELECT gendr FROM patient WHERE subject_id = 10004235"
    checked, _ = checks(ctx, sql)
    before = checked.ctx.tree.sql()
    assert repair(checked) == "SELECT gender FROM patients WHERE subject_id = 10004235"
    assert checked.ctx.tree.sql() == before and "gendr" in before
    assert repair(checked) == "SELECT gender FROM patients WHERE subject_id = 10004235"  # repeatable: nothing was consumed


def test_checks_are_pure_functions_that_stop_only_where_marked():
    from ehrguard.verify.checks import CHECKS

    assert [c.name for c in CHECKS if c.stops] == ["abstained", "read_only"]
    assert len({c.name for c in CHECKS}) == len(CHECKS)


def test_unknown_tables_are_listed_in_the_order_the_query_names_them(ctx):
    # Once iterated from a set, their order followed the process's string hashing.
    sql = "SELECT * FROM zeta_things JOIN alpha_things ON zeta_things.id = alpha_things.id JOIN mid_things ON 1 = 1"
    checked = run_checks("What is it?", sql, ctx)
    tables = [f.message for f in checked.findings if f.check == "unknown_table"]
    assert tables == ["No table 'zeta_things'.", "No table 'alpha_things'.", "No table 'mid_things'."]


def test_a_query_stopped_by_a_limit_is_not_checked_rather_than_wrong(ctx, monkeypatch):
    from ehrguard.verify import verify
    from ehrguard.verify.checks import base

    monkeypatch.setattr(base, "EXECUTION_TIMEOUT_S", 0.5)
    endless = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"
    findings = run_checks("How many numbers are there?", endless, ctx).findings
    assert [f.check for f in findings if f.check in ("not_checked", "execution")] == ["not_checked"]
    verdict = verify("How many patients are there?", endless, db=ctx)
    assert verdict.status != "verified" and verdict.action != "correct"
    if verdict.action == "preserve":
        assert "could not be checked" in verdict.reason


def test_a_code_the_dictionary_defines_is_absent_here_not_unknown(mimic_iv_raw_db):
    """A coded value the database's dictionary holds but no row has is said to be absent from this database (the
    demo is a sample), not unknown; a code written with a dot is rewritten as the database writes it."""
    from ehrguard import verify

    absent = verify("How many diagnoses of cholera are there?",
                    "SELECT COUNT(*) FROM mimiciv_hosp.diagnoses_icd WHERE icd_code = 'A000'", db=mimic_iv_raw_db)
    assert [f.check for f in absent.findings if f.check.startswith(("unknown", "value_not"))] == ["value_not_in_data"]
    assert absent.action == "preserve" and "the full records may hold it" in absent.findings[0].message
    dotted = verify("How many diagnoses with code 995.92 are there?",
                    "SELECT COUNT(*) FROM mimiciv_hosp.diagnoses_icd WHERE icd_code = '995.92'", db=mimic_iv_raw_db)
    assert dotted.action == "correct" and "'99592'" in (dotted.sql or "")
    unknown = verify("How many diagnoses are there with code ZZZ99?",
                     "SELECT COUNT(*) FROM mimiciv_hosp.diagnoses_icd WHERE icd_code = 'ZZZ99'", db=mimic_iv_raw_db)
    assert any(f.check == "unknown_value" and f.severity == "error" for f in unknown.findings)


def test_long_sql_is_checked_in_time_and_past_the_budget_not_verified(ctx, monkeypatch):
    import sys
    import time

    from ehrguard.verify.checks import run_checks

    conditions = " AND ".join(["dod = dod"] * 800)  # 8,000 characters: once 21 s (a tree walk per column), now about 1 s
    sql = f"SELECT COUNT(*) FROM patients WHERE {conditions}"
    start = time.monotonic()
    checked = run_checks("How many patients are there?", sql, ctx)
    assert time.monotonic() - start < 15 and "not_checked" not in {f.check for f in checked.findings}
    monkeypatch.setattr(sys.modules["ehrguard.verify.checks"], "CHECK_BUDGET_S", 0.0)
    checked = run_checks("How many patients are there?", "SELECT COUNT(DISTINCT subject_id) FROM patients", ctx)
    assert [f.check for f in checked.findings] == ["not_checked"]
    from ehrguard.verify.offline.policy import blocking

    assert blocking(checked.findings)  # an answer whose checks did not run is never verified


def test_a_word_the_records_split_into_several_values_is_not_one_nearest_value(mimic_iv_raw_db):
    from ehrguard.db import open_database
    from ehrguard.verify.methods import DatabaseContext
    from ehrguard.verify.offline.policy import plain_reason

    raw = DatabaseContext(open_database(mimic_iv_raw_db), "mimic_iv_raw", mimic_iv_raw_db)
    checked = run_checks("How many Hispanic patients were admitted?",
                         "SELECT COUNT(DISTINCT subject_id) FROM mimiciv_hosp.admissions WHERE race = 'Hispanic'", raw)
    found = next(f for f in checked.findings if f.check == "unknown_value")
    # the records write it four ways, the most frequent first; none is the nearest to guess
    assert "the values holding it: 'HISPANIC/LATINO - CUBAN', 'HISPANIC/LATINO - SALVADORAN'" in found.message, found.message
    assert found.suggestion is None
    assert "they write it in several ways" in plain_reason(found)


def test_the_module_layout_checks_the_names_a_question_states(mimic_iv_raw_db):
    """On MIMIC-IV in its module layout (mimic-code's schemas) the profile indexes the same kinds of names as on the
    EHRSQL schema: a drug or a diagnosis the question names and the query never looks for keeps the answer from being
    verified; a diagnosis looked for by its codes (a prefix, a list, a cut of the code) is looked for."""
    from ehrguard import verify

    dropped = verify("How many patients received heparin?", "SELECT COUNT(*) FROM mimiciv_hosp.patients", db=mimic_iv_raw_db)
    assert "missing_value_filter" in {f.check for f in dropped.findings} and dropped.status != "verified"
    assert "heparin" in dropped.reason.lower()
    for by_code in ("icd_code LIKE 'A41%' OR icd_code IN ('99591', '99592')", "SUBSTR(icd_code, 1, 3) = 'A41'",
                    "icd_code IN ('995.91', '995.92')"):
        kept = verify("How many patients with sepsis were there?",
                      f"SELECT COUNT(DISTINCT subject_id) FROM mimiciv_hosp.diagnoses_icd WHERE {by_code}", db=mimic_iv_raw_db)
        assert "missing_value_filter" not in {f.check for f in kept.findings}, by_code
    other = verify("How many patients with sepsis were there?",
                   "SELECT COUNT(DISTINCT subject_id) FROM mimiciv_hosp.diagnoses_icd WHERE icd_code LIKE 'I50%'",
                   db=mimic_iv_raw_db)
    assert "missing_value_filter" in {f.check for f in other.findings} and other.status != "verified"
    # one finding per value, naming every column that holds it
    both = verify("How many patients with sepsis received heparin?", "SELECT COUNT(*) FROM mimiciv_hosp.patients",
                  db=mimic_iv_raw_db)
    named = [f.message for f in both.findings if f.check == "missing_value_filter"]
    assert len(named) == 2 and "mimiciv_hosp.prescriptions.drug" in named[0] + named[1]


def test_a_name_the_query_reads_another_way_is_looked_for(mimic_iv_raw_db):
    """Items named by their numbers in a table of definitions, a condition named for a measure out of its range when
    the query reads the measure, a readmission (another admission, which the schema models): none is a dropped value."""
    from ehrguard.verify.api import database_context

    ctx = database_context(mimic_iv_raw_db)

    def dropped(question: str, sql: str) -> bool:
        return "missing_value_filter" in {f.check for f in run_checks(question, sql, ctx).findings}

    definitions = ("WITH defs AS (SELECT 50971 AS itemid UNION ALL SELECT 50983) SELECT COUNT(DISTINCT l.subject_id) "
                   "FROM mimiciv_hosp.labevents l JOIN defs d ON l.itemid = d.itemid WHERE l.valuenum > 5")
    assert not dropped("How many patients had a potassium or a sodium measured?", definitions)
    assert dropped("How many patients had a potassium or a creatinine measured?", definitions)  # 50912 is not there
    pressure = ("SELECT COUNT(DISTINCT c.subject_id) FROM mimiciv_icu.chartevents c JOIN mimiciv_icu.d_items d "
                "ON c.itemid = d.itemid WHERE d.label = 'Arterial Blood Pressure mean' AND c.valuenum < 65")
    assert not dropped("How many ICU patients had hypotension?", pressure)
    assert dropped("How many ICU patients had hypothermia?", pressure)
    readmitted = ("SELECT COUNT(DISTINCT a.subject_id) FROM mimiciv_hosp.admissions a JOIN mimiciv_hosp.admissions b "
                  "ON a.subject_id = b.subject_id AND b.admittime > a.dischtime")
    assert not dropped("How many patients had a readmission?", readmitted)
    from ehrguard.verify.checks.concepts import _names_a_field

    # only a visit's or a person's name takes the prefix: prealbumin is a test, though some table has an albumin column
    assert _names_a_field("Readmission", {"albumin"}, {"admission", "admissions"})
    assert not _names_a_field("Prealbumin", {"albumin"}, {"admission", "admissions"})
    # found by a review: a drug holding a measure's word is no reading of the measure; a code's prefix shared by other
    # dictionaries (HCPCS J1815 is insulin) names nothing; an item or a code the query keeps out is not looked for
    assert dropped("How many hypokalemia patients received potassium chloride?",
                   "SELECT COUNT(DISTINCT subject_id) FROM mimiciv_hosp.prescriptions WHERE drug = 'Potassium Chloride'")
    assert dropped("How many pneumonia patients received insulin?",
                   "SELECT COUNT(DISTINCT subject_id) FROM mimiciv_hosp.diagnoses_icd WHERE icd_code LIKE 'J18%'")
    assert dropped("How many patients had a creatinine measured?",
                   "SELECT COUNT(DISTINCT subject_id) FROM mimiciv_hosp.labevents WHERE itemid <> 50912")



def test_the_module_layout_knows_its_keys_and_its_times(mimic_iv_raw_db):
    """mimic-code's layout declares no foreign keys and names its tables with their schema: the profile's keys and time
    columns, read as queries name the tables, give it the checks the EHRSQL schema has: an item read for another the
    question names, visits kept only when they have ended."""
    from ehrguard import verify

    wrong_item = verify("What was the last heart rate of patient 10000032?",
                        "SELECT valuenum FROM mimiciv_icu.chartevents WHERE subject_id = 10000032 AND itemid = 220210 "
                        "ORDER BY charttime DESC LIMIT 1", db=mimic_iv_raw_db)
    assert "wrong_code" in {f.check for f in wrong_item.findings} and "itemid = 220045" in wrong_item.sql
    ended = verify("How many ICU stays were there in 2150?",
                   "SELECT COUNT(*) FROM mimiciv_icu.icustays WHERE outtime IS NOT NULL AND EXTRACT(YEAR FROM intime) = 2150",
                   db=mimic_iv_raw_db)
    assert "unasked_ended" in {f.check for f in ended.findings} and ended.status != "verified"
    nobody = verify("How many lab tests did patient 99999999 have?",
                    "SELECT COUNT(*) FROM mimiciv_hosp.labevents WHERE subject_id = 99999999", db=mimic_iv_raw_db)
    assert "unknown_patient" in {f.check for f in nobody.findings} and nobody.status != "verified"
    # 'Glucose' names items of blood and of urine here (the EHRSQL builds' label equality is their own convention)
    glucose = ("SELECT AVG(l.valuenum) FROM mimiciv_hosp.labevents l JOIN mimiciv_hosp.d_labitems d ON l.itemid = d.itemid "
               "WHERE l.subject_id = 10000032 AND d.label = 'Glucose'")
    mixed = verify("What was the average glucose of patient 10000032?", glucose, db=mimic_iv_raw_db)
    assert "mixed_specimens" in {f.check for f in mixed.findings} and mixed.status != "verified"
    blood = verify("What was the average glucose of patient 10000032?", glucose + " AND d.fluid = 'Blood'", db=mimic_iv_raw_db)
    assert "mixed_specimens" not in {f.check for f in blood.findings}
    apart = verify("What was the average glucose of patient 10000032?", glucose.replace("SELECT AVG", "SELECT d.fluid, AVG")
                   + " GROUP BY d.fluid", db=mimic_iv_raw_db)
    assert "mixed_specimens" not in {f.check for f in apart.findings}
    right = verify("What was the last heart rate of patient 10000032?",
                   "SELECT valuenum FROM mimiciv_icu.chartevents WHERE subject_id = 10000032 AND itemid = 220045 "
                   "ORDER BY charttime DESC LIMIT 1", db=mimic_iv_raw_db)
    assert right.action == "preserve" and not [f for f in right.findings if f.severity == "error"]


def test_a_profile_adds_the_keys_a_schema_does_not_declare(mimic_iv_raw_db):
    raw = DatabaseContext(open_database(mimic_iv_raw_db), "mimic_iv_raw", mimic_iv_raw_db)
    keys = {(fk.column, fk.ref_table, fk.ref_column) for fk in raw.schema.require_table("mimiciv_icu.chartevents").foreign_keys}
    assert {("itemid", "d_items", "itemid"), ("stay_id", "icustays", "stay_id")} <= keys
    # a key to a table or column this database lacks is passed over; one it declares is not added twice
    from ehrguard.profiles import DatabaseProfile

    schema = raw.schema.with_keys(DatabaseProfile("keys", foreign_keys=(
        "mimiciv_icu.chartevents.itemid -> mimiciv_icu.d_items.itemid", "mimiciv_hosp.nowhere.itemid -> mimiciv_icu.d_items.itemid",
        "mimiciv_icu.chartevents.nothing -> mimiciv_icu.d_items.itemid")).key_pairs())
    assert schema.require_table("chartevents").foreign_keys == raw.schema.require_table("chartevents").foreign_keys
    # the keys are shown as a query must write them, with their schema
    assert "FOREIGN KEY(itemid) REFERENCES mimiciv_icu.d_items(itemid)" in raw.schema.render_ddl()
    # ... and the checks that read what a dictionary's items are kept in (d_items.linksto) reach this layout
    from ehrguard.verify.checks.base import SqlContext
    from ehrguard.verify.checks.keys import kind_columns

    assert kind_columns(SqlContext("q", "SELECT 1", raw))[("d_items", "itemid")][0] == "linksto"


def test_a_repair_of_literals_keeps_the_query_as_written(ctx):
    """A value's spelling repaired in the user's own text: comments, layout and letter case stay, and nothing of the
    query passes through the SQL writer (whose rendering of another construct could otherwise lose the repair)."""
    sql = "select count(*)  -- every one of them\nfrom patients\nwhere gender = 'F'"
    checked = run_checks("How many female patients are there?", sql, ctx)
    assert "unknown_value" in {f.check for f in checked.findings}
    assert repair(checked) == sql.replace("'F'", "'f'")
    # an edit of more than literals is written from the tree
    widened = run_checks("How many patients are there?", "select count(subject_id) from admissions", ctx)
    fixed = repair(widened)
    assert fixed is not None and "DISTINCT" in fixed.upper()


def test_a_lab_label_named_whole_is_the_ehrsql_builds_own_test_under_any_profile(mimic_iv_db, tmp_path):
    """The EHRSQL builds' dictionary keeps no fluid: ``label = 'glucose'`` is their way of naming the test, also in a
    copy of such a file that ehrguard does not recognise by name (read with the generic profile)."""
    import shutil

    from ehrguard import verify

    copy = tmp_path / "hospital.sqlite"
    shutil.copy(mimic_iv_db, copy)
    sql = ("SELECT AVG(labevents.valuenum) FROM labevents WHERE labevents.subject_id = 10000032 AND labevents.itemid IN "
           "(SELECT itemid FROM d_labitems WHERE label = 'glucose')")
    for db in (mimic_iv_db, copy):
        assert "mixed_specimens" not in {f.check for f in verify("What was the average glucose of patient 10000032?", sql, db=db).findings}


def test_a_table_two_schemas_share_is_read_where_the_profile_says(tmp_path):
    """A database holding ``archive.admissions`` beside ``mimic.admissions``: the checks name the profile's tables without
    their schema, and every probe of one (and the columns read of it) goes to the profile's schema."""
    import duckdb

    from ehrguard.profiles import DatabaseProfile, Entity
    from ehrguard.verify.checks.base import SqlContext, stored_info, stored_table

    path = tmp_path / "two.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE SCHEMA archive; CREATE SCHEMA mimic; CREATE TABLE archive.admissions (hadm_id INTEGER, note TEXT); "
                "CREATE TABLE mimic.admissions (hadm_id INTEGER, subject_id INTEGER); INSERT INTO mimic.admissions VALUES (1, 7)")
    con.close()
    profile = DatabaseProfile("two", dialect="duckdb", entities=(Entity("admission", "mimic.admissions", "hadm_id"),))
    ctx = SqlContext("q", "SELECT 1", DatabaseContext(open_database(path), "two", path, profile=profile))
    assert ctx.profile.entities[0].table == "admissions"
    assert ctx.db.schema.table("admissions").namespace == "archive"  # the first of the two by name alone
    assert stored_table(ctx, "admissions").sql(dialect="duckdb") == "mimic.admissions"
    info = stored_info(ctx, "admissions")
    assert info is not None and info.column("subject_id") is not None and info.column("note") is None
