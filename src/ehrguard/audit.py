"""The audit log: every decision ehrguard makes for a caller, in SQLite.

One row per request (REST API, web app, MCP, ``ehrguard verify``): time, caller (a token's
id, never the token), interface, database, question, candidate SQL, verdict with its
findings, the SQL executed and its row count, duration, and the ids of the LLM exchanges.
Result values are stored only when ``audit_store_values`` is on (rows can hold patient data).
The schema is versioned (``schema_migrations``); entries older than the retention are pruned.
"""

from __future__ import annotations

import csv
import io
import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from ehrguard.config import float_setting, path_setting, switch_setting
from ehrguard.errors import ConfigError

MIGRATIONS = [
    """CREATE TABLE decisions (
        id INTEGER PRIMARY KEY,
        time REAL NOT NULL,
        caller TEXT,
        interface TEXT NOT NULL,
        db TEXT,
        question TEXT,
        candidate_sql TEXT,
        action TEXT,
        subtype TEXT,
        message TEXT,
        findings TEXT,
        executed_sql TEXT,
        row_count INTEGER,
        duration_ms REAL,
        llm_exchanges TEXT,
        result_values TEXT,
        error TEXT
    )""",
    "CREATE INDEX decisions_time ON decisions(time)",
    # The trust status of the answer (verified / unverified / abstained) and why, as the person was told.
    "ALTER TABLE decisions ADD COLUMN status TEXT",
    "ALTER TABLE decisions ADD COLUMN reason TEXT",
    # The answer's receipt (ehrguard.receipt), as the person could export it.
    "ALTER TABLE decisions ADD COLUMN receipt TEXT",
]
FIELDS = ("time", "caller", "interface", "db", "question", "candidate_sql", "action", "subtype", "message", "findings",
          "executed_sql", "row_count", "duration_ms", "llm_exchanges", "result_values", "error", "status", "reason", "receipt")


class AuditLog:
    def __init__(self, path: str | Path | None = None, *, retention_days: float | None = None, store_values: bool | None = None) -> None:
        self.path = Path(path) if path else path_setting("audit_path")
        self.retention_days = float_setting("audit_retention_days", retention_days, source="retention_days")
        self.store_values = store_values if store_values is not None else switch_setting("audit_store_values")
        self._lock = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._migrate()
        except (OSError, sqlite3.Error) as exc:
            raise ConfigError(f"Cannot open the audit log at {self.path} ({exc}); set EHRGUARD_AUDIT_PATH to a file in a folder "
                              "you may write.") from None

    def _migrate(self) -> None:
        with self._lock:
            self._conn.execute("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied REAL NOT NULL)")
            done = {r[0] for r in self._conn.execute("SELECT version FROM schema_migrations")}
            for version, statement in enumerate(MIGRATIONS, 1):
                if version not in done:
                    self._conn.execute(statement)
                    self._conn.execute("INSERT INTO schema_migrations VALUES (?, ?)", (version, time.time()))

    def record(self, **entry: Any) -> int:
        """Store one decision; returns its id. Unknown keys are refused (a typo must not lose data silently)."""
        unknown = set(entry) - set(FIELDS)
        if unknown:
            raise ValueError(f"Unknown audit fields: {', '.join(sorted(unknown))}")
        entry.setdefault("time", time.time())
        if not self.store_values:
            entry.pop("result_values", None)
        for key in ("findings", "llm_exchanges", "result_values", "receipt"):
            if key in entry and not isinstance(entry[key], str) and entry[key] is not None:
                entry[key] = json.dumps(entry[key], default=str)
        cols = [k for k in FIELDS if k in entry]
        with self._lock:
            cur = self._conn.execute(f"INSERT INTO decisions ({', '.join(cols)}) VALUES ({', '.join('?' for _ in cols)})",
                                     [entry[k] for k in cols])
            if self.retention_days > 0:
                self._conn.execute("DELETE FROM decisions WHERE time < ?", (time.time() - self.retention_days * 86400,))
            return int(cur.lastrowid or 0)

    def record_verdict(self, verdict: Any, *, caller: str, interface: str, db: str, question: str, sql: str, started: float) -> int:
        """Store one verification: the verdict, its findings and LLM exchange ids, timed from ``started`` (a perf_counter)."""
        return self.record(caller=caller, interface=interface, db=db, question=question, candidate_sql=sql, action=verdict.action,
                           subtype=verdict.subtype, message=verdict.message, findings=[f.__dict__ for f in verdict.findings],
                           duration_ms=round(1000 * (time.perf_counter() - started), 3), llm_exchanges=[ex.call_id for ex in verdict.trace],
                           status=verdict.status, reason=verdict.reason)

    def attach_receipt(self, entry_id: int, receipt: dict[str, Any]) -> None:
        """Store an answer's receipt in its entry (written once the answer is complete: after its query ran)."""
        with self._lock:
            self._conn.execute("UPDATE decisions SET receipt = ? WHERE id = ?", (json.dumps(receipt, ensure_ascii=False), entry_id))

    def receipt(self, entry_id: int) -> dict[str, Any] | None:
        """The receipt stored with an entry, or None (no such entry, or it has none: an error, a raw SQL run)."""
        with self._lock:
            row = self._conn.execute("SELECT receipt FROM decisions WHERE id = ?", (entry_id,)).fetchone()
        return json.loads(row[0]) if row and row[0] else None

    def caller_of(self, entry_id: int) -> str | None:
        """Who made an entry (None: no such entry)."""
        with self._lock:
            row = self._conn.execute("SELECT caller FROM decisions WHERE id = ?", (entry_id,)).fetchone()
        return row[0] if row else None

    def entries(self, since: float | None = None, limit: int | None = None, *, caller: str | None = None) -> list[dict[str, Any]]:
        """The newest entries first: all, or those since a time, or one caller's."""
        where: list[str] = []
        args: list[float | str] = []
        if since:
            where.append("time >= ?")
            args.append(since)
        if caller is not None:
            where.append("caller = ?")
            args.append(caller)
        sql = f"SELECT {', '.join(('id',) + FIELDS)} FROM decisions"
        sql += (" WHERE " + " AND ".join(where) if where else "") + " ORDER BY id DESC"
        if limit:
            sql += f" LIMIT {int(limit)}"
        with self._lock:
            rows = self._conn.execute(sql, args).fetchall()
        return [dict(zip(("id",) + FIELDS, r, strict=True)) for r in rows]

    def export(self, fmt: str = "jsonl", since: float | None = None) -> str:
        rows = list(reversed(self.entries(since)))
        if fmt == "jsonl":
            return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=("id",) + FIELDS)
        w.writeheader()
        w.writerows(rows)
        return buf.getvalue()

    def close(self) -> None:
        self._conn.close()
