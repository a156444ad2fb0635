from __future__ import annotations

import sqlite3
from pathlib import Path

from ehrguard.db import build_database, open_database


def test_synthetic_database_is_labelled_deterministic_and_queryable(synthetic_db: Path, tmp_path: Path):
    db = open_database(synthetic_db)
    assert "SYNTHETIC" in db.execute("SELECT notice FROM synthetic_notice").rows[0][0]
    assert db.execute("SELECT count(*) FROM patients").rows[0][0] == 24
    assert db.execute("SELECT count(*) FROM admissions WHERE dischtime IS NULL").rows[0][0] >= 2
    assert db.execute("SELECT count(*) FROM chartevents WHERE charttime > '2100-12-31 23:59:00'").rows[0][0] == 0
    again = tmp_path / "again.sqlite"
    report = build_database("synthetic", out=again)
    assert report.synthetic
    dump = lambda p: list(sqlite3.connect(p).iterdump())  # noqa: E731
    assert dump(again) == dump(synthetic_db)
