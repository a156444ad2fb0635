"""Atomic output: a failed build leaves neither a file nor a temporary behind, and keeps an old file."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from ehrguard.db.builders.writer import table, write_sqlite
from ehrguard.errors import BuildError

T = table("t", ["row_id INT pk", "label TEXT nn"])


def test_write_sqlite_writes_tables_in_the_given_order(tmp_path: Path):
    out = tmp_path / "a.sqlite"
    counts = write_sqlite(out, (T,), {"t": [{"row_id": 0, "label": "x"}, {"row_id": 1, "label": "y"}]})
    assert counts == {"t": 2}
    assert sqlite3.connect(out).execute("SELECT label FROM t ORDER BY row_id").fetchall() == [("x",), ("y",)]


def test_failed_write_leaves_no_trace_and_keeps_the_old_file(tmp_path: Path):
    out = tmp_path / "a.sqlite"
    write_sqlite(out, (T,), {"t": [{"row_id": 0, "label": "old"}]})
    with pytest.raises(BuildError, match="Writing table t failed"):
        write_sqlite(out, (T,), {"t": [{"row_id": 0, "label": None}]})  # violates NOT NULL
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.sqlite"]
    assert sqlite3.connect(out).execute("SELECT label FROM t").fetchall() == [("old",)]
