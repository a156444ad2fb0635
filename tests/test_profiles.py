"""Database profiles: the built-in ones match their databases; a profile from TOML drives the checks on a new schema."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import pytest

from ehrguard.db import build_database, open_database, read_schema
from ehrguard.errors import ConfigError
from ehrguard.profiles import EHRSQL_NOW, PROFILES, get_profile, known_profile, load_profile, profile_for_file, profile_from_dict
from ehrguard.verify.checks import repair, run_checks
from ehrguard.verify.methods import DatabaseContext

FIXTURE = Path(__file__).parent / "fixtures" / "st_marys.toml"


@pytest.fixture(scope="module")
def eicu_db(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("eicu") / "eicu.sqlite"
    build_database("eicu", source=shared_data / "eicu-demo-2.0.1", out=out)
    return out


@pytest.mark.demo_data  # the database fixture is looked up by name, so conftest cannot see it
@pytest.mark.parametrize("db_id", ["mimic_iv", "eicu"])
def test_every_column_a_built_in_profile_names_exists_in_its_database(db_id, request):
    path = request.getfixturevalue(f"{db_id}_db")
    schema = read_schema(open_database(path))
    profile = PROFILES[db_id]
    named = [*profile.time_columns, *profile.value_columns, *(f"{e.table}.{e.id_column}" for e in profile.entities)]
    missing = []
    for qualified in named:
        table, column = qualified.rsplit(".", 1)
        info = schema.table(table)
        if info is None or info.column(column) is None:
            missing.append(qualified)
    assert not missing and named
    assert all(c in {c.name for t in schema.tables for c in t.columns} for c in profile.person_ids)
    assert profile.now == EHRSQL_NOW and profile_for_file(path) is profile and path.name == profile.file_name


def test_names_resolve_to_profiles_and_unknown_ones_say_what_is_known():
    assert profile_for_file("/x/mimic_iv_copy.sqlite").db_id == "mimic_iv"
    assert get_profile("somewhere_else").db_id == "somewhere_else" and get_profile("somewhere_else").now is None
    with pytest.raises(ConfigError, match="Did you mean 'mimic_iv'"):
        known_profile("mimic_vi")
    assert get_profile("mimicsql").answer_rule == "mimicsql" and get_profile("eicu").answer_rule == "ehrsql"


@pytest.fixture(scope="module")
def st_marys(tmp_path_factory: pytest.TempPathFactory) -> DatabaseContext:
    """A small seeded hospital database in a schema of its own, opened with the profile from TOML."""
    path = tmp_path_factory.mktemp("st_marys") / "st_marys.sqlite"
    rng = random.Random(7)
    con = sqlite3.connect(path)
    con.executescript("""
        CREATE TABLE people (mrn INTEGER PRIMARY KEY, sex TEXT, birth_date TEXT);
        CREATE TABLE encounters (enc_id INTEGER PRIMARY KEY, mrn INTEGER, start_time TEXT, end_time TEXT);
        CREATE TABLE labs (lab_id INTEGER PRIMARY KEY, enc_id INTEGER, test_name TEXT, value REAL, taken_at TEXT);
        CREATE TABLE meds (med_id INTEGER PRIMARY KEY, mrn INTEGER, drug TEXT, given_at TEXT);
    """)
    for mrn in range(100, 140):
        con.execute("INSERT INTO people VALUES (?, ?, ?)", (mrn, rng.choice("fm"), f"19{rng.randint(40, 99)}-01-01"))
        for k in range(3):
            enc = mrn * 10 + k
            con.execute("INSERT INTO encounters VALUES (?, ?, ?, ?)",
                        (enc, mrn, f"2031-0{k + 1}-05 08:00:00", f"2031-0{k + 1}-09 08:00:00"))
            for test in ("potassium", "sodium"):
                con.execute("INSERT INTO labs (enc_id, test_name, value, taken_at) VALUES (?, ?, ?, ?)",
                            (enc, test, round(rng.uniform(3, 140), 1), f"2031-0{k + 1}-06 09:00:00"))
        con.execute("INSERT INTO meds (mrn, drug, given_at) VALUES (?, ?, ?)",
                    (mrn, rng.choice(["heparin", "furosemide"]), "2031-02-01 10:00:00"))
    con.commit()
    con.close()
    return DatabaseContext(open_database(path), "st_marys", path, profile=load_profile(FIXTURE))


def findings(ctx: DatabaseContext, question: str, sql: str):
    checked = run_checks(question, sql, ctx)
    return checked, {f.check: f for f in checked.findings}


def test_a_toml_profile_loads_with_its_entities_and_clock():
    p = load_profile(FIXTURE)
    assert p.db_id == "st_marys" and p.now == "2031-06-30 12:00:00" and p.entity("patient").table == "people"
    assert p.person_ids == ("mrn",) and p.value_columns_by_table() == {"labs": ("test_name",), "meds": ("drug",)}


def test_the_checks_follow_the_profile_of_a_schema_never_seen(st_marys):
    _, found = findings(st_marys, "How many patients had a potassium test?",
                        "SELECT COUNT(people.mrn) FROM people JOIN encounters ON encounters.mrn = people.mrn "
                        "JOIN labs ON labs.enc_id = encounters.enc_id WHERE labs.test_name = 'potassium'")
    assert "count_without_distinct" in found  # mrn identifies people in this hospital's profile
    _, found = findings(st_marys, "What is the sex of patient 999?", "SELECT sex FROM people WHERE mrn = 999")
    assert "unknown_patient" in found and "999" in found["unknown_patient"].message
    _, found = findings(st_marys, "What is the sex of patient 101?", "SELECT sex FROM people WHERE mrn = 101")
    assert found == {}
    checked, found = findings(st_marys, "How many potassium tests in the last year?",
                              "SELECT COUNT(*) FROM labs WHERE test_name = 'potasium' AND taken_at >= datetime('now', '-1 year')")
    assert found["wrong_now"].message.startswith("'now' in this database is 2031-06-30 12:00:00")
    assert found["unknown_value"].suggestion == "'potassium'"
    fixed = repair(checked)
    assert "'2031-06-30 12:00:00'" in fixed and "'potassium'" in fixed
    assert st_marys.db.execute(fixed).rows[0][0] == 120
    # the period check reads "the last 30 days" from this hospital's own now, and repairs with it
    checked, found = findings(st_marys, "How many potassium tests in the last 30 days?",
                              "SELECT COUNT(*) FROM labs WHERE test_name = 'potassium' "
                              "AND taken_at >= datetime('2031-06-30 12:00:00', '-3 day')")
    assert "wrong_time_window" in found
    assert "'2031-05-31 12:00:00'" in repair(checked)


def test_a_profile_on_the_real_clock_leaves_now_alone(st_marys):
    clock = DatabaseContext(st_marys.db, "st_marys", st_marys.path, profile=profile_from_dict({"db_id": "st_marys", "now": "clock"}))
    _, found = findings(clock, "How many potassium tests in the last year?",
                        "SELECT COUNT(*) FROM labs WHERE taken_at >= datetime('now', '-1 year')")
    assert "wrong_now" not in found


@pytest.mark.parametrize(("data", "message"), [
    ({"db_id": "x", "entites": []}, "unknown field 'entites' (did you mean 'entities'?)"),
    ({"db_id": "x", "now": "tomorrow"}, "now is \"clock\" or a fixed instant"),
    ({"db_id": "x", "entities": [{"name": "ward", "table": "t", "id_column": "c"}]}, "entities[0] needs exactly name"),
    ({"db_id": "x", "time_columns": ["start_time"]}, "time_columns entries are \"table.column\""),
    ({"dialect": "sqlite"}, "db_id"),
    ({"db_id": "x", "answer_rule": "fuzzy"}, "answer_rule is ehrsql or mimicsql"),
])
def test_a_bad_profile_is_one_clear_error(data, message):
    with pytest.raises(ConfigError) as info:
        profile_from_dict(data, where="st_marys.toml")
    assert message in str(info.value) and str(info.value).startswith("st_marys.toml")


def test_a_profile_file_that_is_not_toml(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("db_id = \n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_profile(bad)
    with pytest.raises(ConfigError, match="Cannot read the profile"):
        load_profile(tmp_path / "missing.toml")
