"""``ehrguard bench hostile``: the adversarial SQL corpus against a database, with the outcome each engine must give.

The corpus (``benchmarks/hostile_data/adversarial.json``, written by
``scripts/make_adversarial_corpus.py``) holds writes in every dressing, statements that change
settings or reach files, runaway work and values grown without bound, results too big to hold,
SQL too large to parse, odd input, and harmless reads a filter could refuse by mistake. Each case
runs through :meth:`~ehrguard.db.Database.execute` (the path every query takes) and its outcome
is classified (:data:`OUTCOMES`); a case passes when the outcome is one the corpus expects for the
engine. The run also checks that the database file is byte for byte unchanged, that no file
appeared beside it or in the working folder, and that no path the corpus tries to write exists
afterwards; and it reports how long the stopped queries took against their limit.
"""

from __future__ import annotations

import json
import time
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ehrguard.db.engine import Database, Result
from ehrguard.errors import (
    DatabaseError,
    QueryRefusedError,
    QueryResourceError,
    QueryTimeoutError,
    QueryTooLargeError,
    ReadOnlyViolationError,
)
from ehrguard.evaluation.stats import percent
from ehrguard.runtime import file_sha256

CORPUS = Path(__file__).parent / "hostile_data" / "adversarial.json"
OUTCOMES = ("ok", "truncated", "read_only", "refused", "too_large", "stopped", "error")
# Paths cases try to create; none may exist after a run (unless it did before).
WRITTEN_PATHS = ("/tmp/evil.db", "/tmp/copy.db", "/tmp/out.txt", "/tmp/patients.csv", "/tmp/p.parquet", "/tmp/dump")


@dataclass(frozen=True)
class HostileCase:
    id: str
    category: str
    sql: str
    expect: tuple[str, ...]


@dataclass
class CaseOutcome:
    id: str
    category: str
    outcome: str
    expected: tuple[str, ...]
    elapsed_s: float
    message: str

    @property
    def passed(self) -> bool:
        return self.outcome in self.expected


@dataclass
class HostileReport:
    engine: str
    timeout_s: float
    outcomes: list[CaseOutcome] = field(default_factory=list)
    file_unchanged: bool = True
    new_files: list[str] = field(default_factory=list)

    @property
    def failures(self) -> list[CaseOutcome]:
        return [o for o in self.outcomes if not o.passed]

    @property
    def ok(self) -> bool:
        return not self.failures and self.file_unchanged and not self.new_files

    def by_category(self) -> dict[str, dict[str, Any]]:
        """Per category: cases, passed, and how many ended in each outcome."""
        table: dict[str, dict[str, Any]] = defaultdict(lambda: {"cases": 0, "passed": 0, "outcomes": Counter()})
        for o in self.outcomes:
            row = table[o.category]
            row["cases"] += 1
            row["passed"] += o.passed
            row["outcomes"][o.outcome] += 1
        return {k: {**v, "outcomes": dict(v["outcomes"])} for k, v in table.items()}

    def stop_ratios(self) -> dict[str, float]:
        """How long stopped queries took, as a multiple of their limit: p50, p99, max."""
        ratios = sorted(o.elapsed_s / self.timeout_s for o in self.outcomes if o.outcome == "stopped")
        if not ratios:
            return {}

        def quantile(q: float) -> float:
            return round(ratios[min(len(ratios) - 1, int(q * len(ratios)))], 3)

        return {"n": len(ratios), "p50": quantile(0.5), "p99": quantile(0.99), "max": round(ratios[-1], 3)}

    def to_dict(self) -> dict[str, Any]:
        return {"engine": self.engine, "timeout_s": self.timeout_s, "cases": len(self.outcomes),
                "passed": len(self.outcomes) - len(self.failures), "pass_rate": percent(len(self.outcomes) - len(self.failures),
                                                                                        len(self.outcomes)),
                "file_unchanged": self.file_unchanged, "new_files": self.new_files, "stop_ratios": self.stop_ratios(),
                "by_category": self.by_category(), "failures": [asdict(o) for o in self.failures]}


def case_sql(case: dict[str, Any]) -> str:
    """A case's SQL: its text, or its parts (``head + join.join(repeat * times) + tail``) for SQL too long to store."""
    if "sql" in case:
        return str(case["sql"])
    p = case["sql_parts"]
    body = str(p["join"]).join(str(p["repeat"]).replace("{i}", str(i)) for i in range(int(p["times"])))
    return f"{p['head']}{body}{p['tail']}"


# An engine the corpus has no expectations for (PostgreSQL) is held to what the others' say, in two classes: a case
# they all refuse, stop or fail must not run here either; a case that runs on one of them may run, fail or be stopped
# here (the dialects differ), but never crash.
_NOT_RUN = ("read_only", "refused", "too_large", "stopped", "error")
_RUNS = ("ok", "truncated", "error", "stopped", "refused", "read_only", "too_large")


def _derived(expect: dict[str, str | list[str]]) -> tuple[str, ...]:
    expected = [e for v in expect.values() for e in ([v] if isinstance(v, str) else v)]
    return _RUNS if any(e in ("ok", "truncated") for e in expected) else _NOT_RUN


def load_corpus(engine: str, path: Path = CORPUS) -> list[HostileCase]:
    """The corpus's cases for ``engine`` (``sqlite`` or ``duckdb``; ``postgres`` by the rule above)."""
    data = json.loads(path.read_text())
    out = []
    for case in data["cases"]:
        expected = case["expect"].get(engine)
        if expected is None and engine == "postgres" and case["expect"]:
            out.append(HostileCase(case["id"], case["category"], case_sql(case), _derived(case["expect"])))
            continue
        if expected is None:
            continue
        out.append(HostileCase(case["id"], case["category"], case_sql(case), tuple([expected] if isinstance(expected, str) else expected)))
    return out


def classify(outcome: Result | Exception) -> str:
    """One of :data:`OUTCOMES` for a result or the error a query raised."""
    if isinstance(outcome, Result):
        return "truncated" if outcome.truncated else "ok"
    if isinstance(outcome, QueryTooLargeError):
        return "too_large"
    if isinstance(outcome, ReadOnlyViolationError):
        return "read_only"
    if isinstance(outcome, QueryRefusedError):
        return "refused"
    if isinstance(outcome, (QueryTimeoutError, QueryResourceError)):
        return "stopped"
    return "error" if isinstance(outcome, DatabaseError) else f"crash ({type(outcome).__name__})"


def _listing(*folders: Path) -> set[str]:
    return {str(p) for folder in folders for p in folder.iterdir()}


def run_hostile(db: Database, *, timeout_s: float = 1.0, categories: tuple[str, ...] = (), corpus: Path = CORPUS) -> HostileReport:
    """Run the corpus for ``db``'s engine, each case under ``timeout_s``, and check that nothing changed."""
    cases = [c for c in load_corpus(db.dialect, corpus) if not categories or c.category in categories]
    folders = (db.path.parent, Path.cwd()) if db.path is not None else (Path.cwd(),)
    before, listed, existing = _fingerprint(db), _listing(*folders), {p for p in WRITTEN_PATHS if Path(p).exists()}
    report = HostileReport(engine=db.dialect, timeout_s=timeout_s)
    for case in cases:
        started = time.perf_counter()
        try:
            result: Result | Exception = db.execute(case.sql, timeout_s=timeout_s)
        except Exception as exc:  # noqa: BLE001 - an untyped error is an outcome of its own ("crash"), and fails the case
            result = exc
        elapsed = time.perf_counter() - started
        message = result.truncated_reason if isinstance(result, Result) else str(result)
        report.outcomes.append(CaseOutcome(case.id, case.category, classify(result), case.expect, round(elapsed, 4), message[:300]))
    report.file_unchanged = _fingerprint(db) == before
    appeared = (_listing(*folders) - listed) | ({p for p in WRITTEN_PATHS if Path(p).exists()} - existing)
    report.new_files = sorted(appeared)
    return report


def _fingerprint(db: Database) -> str:
    """What must not change: the file's SHA-256, or for a server (PostgreSQL) every table's name and row count and the
    hash of its rows, read through the database's own read-only queries."""
    if db.path is not None:
        return file_sha256(db.path)
    import hashlib

    from ehrguard.db.schema import read_schema

    h = hashlib.sha256()
    for t in read_schema(db).tables:
        rows = db.execute(f"SELECT md5(string_agg(md5(x::text), '' ORDER BY md5(x::text))), count(*) FROM {t.qualified_name} x",
                          timeout_s=120).rows
        h.update(f"{t.qualified_name}:{rows[0]}\n".encode())
    return h.hexdigest()


def duckdb_copy(sqlite_path: Path, out: Path) -> Path:
    """The tables of a SQLite database in a new DuckDB file at ``out`` (declared types read by SQLite's affinity rules),
    so the corpus runs on both engines over the same rows."""
    import sqlite3

    import duckdb

    def duck_type(declared: str) -> str:
        t = declared.upper()
        return "BIGINT" if "INT" in t else "DOUBLE" if any(k in t for k in ("REAL", "FLOA", "DOUB", "NUM", "DEC")) else "VARCHAR"

    src, dst = sqlite3.connect(f"file:{sqlite_path}?mode=ro", uri=True), duckdb.connect(str(out))
    try:
        for (table,) in src.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
            cols = src.execute(f"SELECT name, type FROM pragma_table_info('{table}')").fetchall()
            dst.execute(f'CREATE TABLE "{table}" (' + ", ".join(f'"{n}" {duck_type(t)}' for n, t in cols) + ")")
            rows = src.execute(f'SELECT * FROM "{table}"').fetchall()
            if rows:
                dst.executemany(f'INSERT INTO "{table}" VALUES ({", ".join("?" * len(cols))})', rows)
    finally:
        src.close()
        dst.close()
    return out


def render_markdown(reports: list[HostileReport]) -> str:
    """The report's tables: outcomes per category and engine, stop times, and every failed case."""
    lines = ["# Hostile SQL corpus", "", "| engine | category | cases | passed | outcomes |", "|---|---|---|---|---|"]
    for r in reports:
        for category, row in sorted(r.by_category().items()):
            outcomes = ", ".join(f"{k} {v}" for k, v in sorted(row["outcomes"].items()))
            lines.append(f"| {r.engine} | {category} | {row['cases']} | {row['passed']} | {outcomes} |")
    lines += ["", "| engine | cases | passed | file unchanged | new files | stopped: n, p50 / p99 / max of the limit |",
              "|---|---|---|---|---|---|"]
    for r in reports:
        s = r.stop_ratios()
        stops = f"{s['n']}, {s['p50']} / {s['p99']} / {s['max']}" if s else "none"
        lines.append(f"| {r.engine} | {len(r.outcomes)} | {len(r.outcomes) - len(r.failures)} | {'yes' if r.file_unchanged else 'NO'} | "
                     f"{len(r.new_files)} | {stops} |")
    failures = [(r.engine, f) for r in reports for f in r.failures]
    if failures:
        lines += ["", "## Failed cases", "", "| engine | case | outcome | expected | message |", "|---|---|---|---|---|"]
        lines += [f"| {e} | {f.id} | {f.outcome} | {', '.join(f.expected)} | {f.message[:120].replace('|', '/')} |" for e, f in failures]
    return "\n".join(lines) + "\n"
