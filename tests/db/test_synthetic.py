from __future__ import annotations

from pathlib import Path

from ehrguard.db import open_database
from tests.helpers import assert_rebuild_identical


def test_synthetic_database_is_labelled_deterministic_and_queryable(synthetic_db: Path, tmp_path: Path):
    db = open_database(synthetic_db)
    assert "SYNTHETIC" in db.execute("SELECT notice FROM synthetic_notice").rows[0][0]
    assert db.execute("SELECT count(*) FROM patients").rows[0][0] == 24
    assert db.execute("SELECT count(*) FROM admissions WHERE dischtime IS NULL").rows[0][0] >= 2
    assert db.execute("SELECT count(*) FROM chartevents WHERE charttime > '2100-12-31 23:59:00'").rows[0][0] == 0
    assert assert_rebuild_identical("synthetic", synthetic_db, tmp_path).synthetic
