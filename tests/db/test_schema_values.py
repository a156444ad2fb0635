from __future__ import annotations

from pathlib import Path

from ehrguard.db import ValueIndex, open_database, read_schema


def test_schema_introspection_and_renderers(synthetic_db: Path):
    schema = read_schema(open_database(synthetic_db))
    labevents = schema.table("labevents")
    assert labevents is not None
    assert [c.name for c in labevents.columns][:3] == ["row_id", "subject_id", "hadm_id"]
    assert labevents.column("row_id").primary_key
    assert ("itemid", "d_labitems", "itemid") in [(f.column, f.ref_table, f.ref_column) for f in labevents.foreign_keys]
    assert "CREATE TABLE labevents" in schema.render_ddl()
    assert "labevents(row_id, subject_id, hadm_id, itemid, charttime, valuenum, valueuom)" in schema.render_compact()


def test_value_index_exact_and_fuzzy(synthetic_db: Path):
    index = ValueIndex(open_database(synthetic_db))
    assert index.lookup("d_labitems", "label", "creatinine").exists
    miss = index.lookup("d_labitems", "label", "creatinin")
    assert not miss.exists and miss.nearest[0].value == "creatinine" and miss.nearest[0].score > 0.9
    words = index.lookup("d_icd_procedures", "long_title", "venous catheterization")
    assert words.nearest[0].value.startswith("venous catheterization")
    assert not index.lookup("nope", "label", "x").indexed
    assert index.find_column("furosemide") == [("prescriptions", "drug")]


def test_value_index_on_the_real_dictionary(mimic_iv_db: Path):
    lookup = ValueIndex(open_database(mimic_iv_db)).lookup("d_icd_procedures", "long_title", "single vessel")
    assert not lookup.exists
    assert lookup.nearest[0].value == "procedure on single vessel"


def test_db_build_writes_the_value_lexicon_and_it_answers_as_the_database_does(mimic_iv_db):
    from ehrguard.db import ValueIndex, lexicon_state, open_database
    from ehrguard.db.lexicon import load_lexicon, lower_form, normal_form

    assert lexicon_state(mimic_iv_db) == "ok"
    lexicon = load_lexicon(mimic_iv_db)
    assert lexicon is not None
    db = open_database(mimic_iv_db, isolated=False)
    queried, from_lexicon = ValueIndex(open_database(mimic_iv_db, isolated=False)), ValueIndex(db)
    from_lexicon._lexicon = lexicon
    queried._lexicon = None  # as a database without a lexicon: every column read from the database
    rows = db.execute("SELECT DISTINCT CAST(drug AS TEXT) FROM prescriptions WHERE drug IS NOT NULL", max_rows=500_000).rows
    assert from_lexicon.values("prescriptions", "drug") == [r[0] for r in rows]
    titles = queried.values("d_icd_diagnoses", "long_title")
    assert len(titles) > 10_000 and from_lexicon.distinct_count("d_icd_diagnoses", "long_title") == len(titles)
    # Looking phrases up in the lexicon finds what the values read whole find, the first value of each form included.
    columns = [("d_icd_diagnoses", "long_title"), ("prescriptions", "drug"), ("d_labitems", "label")]
    for by, form in (("normal", normal_form), ("lower", lower_form)):
        keys = {form(v) for t, c in columns for v in queried.values(t, c)[::7]} | {"no such value at all", "heparin"}
        assert from_lexicon.find(columns, keys, by=by) == queried.find(columns, keys, by=by)
        found = from_lexicon.find(columns, keys, by=by)[("prescriptions", "drug")]
        assert found and all(form(v) == k for k, v in found.items())
    assert from_lexicon.find(columns, {"no such value at all"}) == {c: {} for c in columns}

