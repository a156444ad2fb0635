"""The audit log records each answer's trust status and reason, and migrates a log written before they existed."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from ehrguard.audit import MIGRATIONS, AuditLog
from ehrguard.verify import Verdict


def test_a_log_from_before_the_status_columns_is_migrated_and_keeps_its_rows(tmp_path: Path):
    path = tmp_path / "audit.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied REAL NOT NULL)")
    for version, statement in enumerate(MIGRATIONS[:2], 1):  # the first release's schema
        con.execute(statement)
        con.execute("INSERT INTO schema_migrations VALUES (?, ?)", (version, time.time()))
    con.execute("INSERT INTO decisions (time, caller, interface, action) VALUES (?, 'cli', 'cli', 'preserve')", (time.time(),))
    con.commit()
    con.close()
    log = AuditLog(path, retention_days=0)
    old = log.entries()
    assert len(old) == 1 and old[0]["action"] == "preserve" and old[0]["status"] is None
    verdict = Verdict("preserve", sql="SELECT 1", status="unverified", reason="There is no patient 1 in the records.")
    log.record_verdict(verdict, caller="cli", interface="cli", db="mimic_iv", question="q", sql="SELECT 1", started=time.perf_counter())
    new = log.entries(limit=1)[0]
    assert (new["status"], new["reason"]) == ("unverified", "There is no patient 1 in the records.")
