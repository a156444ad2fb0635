"""The two column models: a builder's spec (writer.Column) and what introspection reads back (schema.ColumnInfo).

They stay two types on purpose: the spec is what a builder declares, UNIQUE
included; the introspected column is what the engine reports, and it is the `Schema.to_dict()` shape
of the API. This pins that they agree on the fields they share.
"""

from __future__ import annotations

from pathlib import Path

from ehrguard.db import open_database, read_schema
from ehrguard.db.builders.writer import table, write_sqlite

SPEC = table("admissions",
             ["row_id INT pk", "subject_id INT nn", "hadm_id INT nn uq", "admittime TIMESTAMP(0) nn", "dischtime TIMESTAMP(0)"])


def test_a_built_table_reads_back_as_its_spec(tmp_path: Path) -> None:
    out = tmp_path / "t.sqlite"
    write_sqlite(out, (SPEC,), {"admissions": [{"row_id": 1, "subject_id": 2, "hadm_id": 3, "admittime": "2100-01-01 00:00:00"}]})
    db = open_database(out)
    try:
        (read,) = read_schema(db).tables
    finally:
        db.close()
    assert [(c.name, c.type, c.not_null, c.primary_key) for c in read.columns] == [
        (c.name, c.type, c.not_null, c.primary_key) for c in SPEC.columns
    ]
    # UNIQUE is declared by the spec and enforced by the engine, but not part of what introspection reports.
    assert [c.name for c in SPEC.columns if c.unique] == ["hadm_id"]
    assert not hasattr(read.columns[2], "unique")
