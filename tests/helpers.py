"""Helpers shared by the builder tests."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from ehrguard.db import BuildReport, build_database


def sqlite_dump(path: Path) -> list[str]:
    conn = sqlite3.connect(path)
    try:
        return list(conn.iterdump())
    finally:
        conn.close()


def assert_rebuild_identical(name: str, first: Path, tmp_path: Path, source: Path | None = None) -> BuildReport:
    """Build ``name`` again and require the same SQL dump as ``first`` (determinism); returns the new build's report."""
    again = tmp_path / f"again-{name}.sqlite"
    report = build_database(name, source=source, out=again)
    assert sqlite_dump(again) == sqlite_dump(first)
    return report
