#!/usr/bin/env python3
"""Validate the cases of the ehrguard safety benchmark (`ehrguard bench safety`).

Checks every line of src/ehrguard/benchmarks/safety_data/<db>.jsonl:

* the record schema (keys, types, id format, kind, kebab-case category,
  gold_sql present for correct/wrong and null for unanswerable/ambiguous);
* ids unique over all files, no duplicate cases;
* the minimum number of cases per kind (and wrong cases on eICU);
* the databases are the builds the cases were written on (row-count fingerprint);
* every SQL statement compiles on its database (EXPLAIN, never executed when
  it is not a SELECT/WITH);
* correct/wrong candidate and gold SQL are read-only and execute without error
  within a time limit; read-only candidates of unanswerable/ambiguous cases
  execute as well;
* a wrong case's candidate answers differently from its gold (multiset of rows,
  floats rounded to 3 decimals then str(); additionally the rows must still
  differ when numeric-looking strings are read as numbers, so that '40' vs 40.0
  never counts as a difference);
* a correct case's candidate answers like its gold (same multiset).

Prints the counts per database x kind x category and exits non-zero on any
problem.  Standard library only; databases are opened read-only
(file:...?mode=ro URIs with PRAGMA query_only).

Usage:
  python scripts/validate_safety_cases.py --db-dir /tmp/safety-dbs
  (the directory holds mimic_iv.sqlite and eicu.sqlite, as built by
   `ehrguard db build mimic_iv|eicu --out ...`)
"""
from __future__ import annotations

import argparse
import collections
import json
import re
import sqlite3
import sys
import time
from pathlib import Path

DATABASES = ("mimic_iv", "eicu")
ID_PREFIX = {"mimic_iv": "mimic", "eicu": "eicu"}
KINDS = ("correct", "wrong", "unanswerable", "ambiguous")
KEYS = ("id", "db", "kind", "category", "question", "candidate_sql", "gold_sql", "note")
MINIMUM = {"correct": 100, "wrong": 120, "unanswerable": 45, "ambiguous": 30}
MINIMUM_TOTAL = 320
MINIMUM_WRONG_EICU = 40
CATEGORY_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
READ_ONLY_RE = re.compile(r"^\s*(select|with)\b", re.IGNORECASE)
NUMBER_RE = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")

# Row counts of the databases the cases were written and checked on (built by
# `ehrguard db build mimic_iv|eicu` from the PhysioNet demos); another build
# would make the expected answers meaningless.
FINGERPRINT = {
    "mimic_iv": {"patients": 94, "admissions": 119, "icustays": 88, "prescriptions": 5354,
                 "labevents": 26426, "chartevents": 31926, "inputevents": 9000, "outputevents": 5292},
    "eicu": {"patient": 1168, "medication": 17649, "lab": 14441, "allergy": 1012,
             "intakeoutput": 42323, "diagnosis": 9774, "treatment": 11783},
}

DEFAULT_DATA_DIR = Path(__file__).resolve().parent.parent / "src" / "ehrguard" / "benchmarks" / "safety_data"


class Timeout(Exception):
    pass


def open_read_only(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    conn.execute("PRAGMA query_only = ON")
    return conn


def run(conn: sqlite3.Connection, sql: str, limit_s: float) -> tuple[list[tuple], float]:
    """Execute a read-only statement with a wall-clock limit."""
    start = time.monotonic()

    def check() -> int:
        return 1 if time.monotonic() - start > limit_s else 0

    conn.set_progress_handler(check, 10_000)
    try:
        rows = conn.execute(sql).fetchall()
    except sqlite3.OperationalError as exc:
        if "interrupted" in str(exc):
            raise Timeout(f"took longer than {limit_s:g}s") from exc
        raise
    finally:
        conn.set_progress_handler(None, 0)
    return rows, time.monotonic() - start


def norm_value(value: object) -> str:
    if isinstance(value, float):
        return str(round(value, 3))
    return str(value)


def norm_value_numeric(value: object) -> str:
    """Stricter view: numbers and numeric-looking strings compare as numbers."""
    if isinstance(value, bool):
        value = int(value)
    if isinstance(value, (int, float)):
        return repr(round(float(value), 3))
    if isinstance(value, str) and NUMBER_RE.match(value.strip()):
        return repr(round(float(value.strip()), 3))
    return str(value)


def multiset(rows: list[tuple], norm=norm_value) -> collections.Counter:
    return collections.Counter(tuple(norm(v) for v in row) for row in rows)


def check_record(rec: object, db: str, lineno: int) -> list[str]:
    where = f"{db}.jsonl:{lineno}"
    if not isinstance(rec, dict):
        return [f"{where}: not a JSON object"]
    problems = []
    keys = tuple(rec.keys())
    if set(keys) != set(KEYS):
        missing = sorted(set(KEYS) - set(keys))
        extra = sorted(set(keys) - set(KEYS))
        problems.append(f"{where}: keys wrong (missing {missing}, unexpected {extra})")
        return problems
    cid = rec["id"]
    if not isinstance(cid, str) or not re.fullmatch(rf"{ID_PREFIX[db]}-\d{{4}}", cid):
        problems.append(f"{where}: id {cid!r} is not '{ID_PREFIX[db]}-NNNN'")
    if rec["db"] != db:
        problems.append(f"{where} ({cid}): db {rec['db']!r} does not match the file")
    if rec["kind"] not in KINDS:
        problems.append(f"{where} ({cid}): kind {rec['kind']!r} not one of {KINDS}")
    if not isinstance(rec["category"], str) or not CATEGORY_RE.match(rec["category"]):
        problems.append(f"{where} ({cid}): category {rec['category']!r} is not kebab-case")
    for key in ("question", "candidate_sql", "note"):
        if not isinstance(rec[key], str) or not rec[key].strip():
            problems.append(f"{where} ({cid}): {key} must be a non-empty string")
    if isinstance(rec["note"], str) and "\n" in rec["note"]:
        problems.append(f"{where} ({cid}): note must be one line")
    if rec["kind"] in ("correct", "wrong"):
        if not isinstance(rec["gold_sql"], str) or not rec["gold_sql"].strip():
            problems.append(f"{where} ({cid}): {rec['kind']} case needs gold_sql")
    elif rec["kind"] in ("unanswerable", "ambiguous") and rec["gold_sql"] is not None:
        problems.append(f"{where} ({cid}): {rec['kind']} case must have gold_sql null")
    return problems


def load_cases(data_dir: Path, problems: list[str]) -> dict[str, list[dict]]:
    """Read and schema-check both case files; only well-formed records are returned."""
    cases: dict[str, list[dict]] = {}
    for db in DATABASES:
        path = data_dir / f"{db}.jsonl"
        if not path.exists():
            problems.append(f"missing case file {path}")
            continue
        cases[db] = []
        for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                problems.append(f"{db}.jsonl:{lineno}: empty line")
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                problems.append(f"{db}.jsonl:{lineno}: invalid JSON ({exc})")
                continue
            found = check_record(rec, db, lineno)
            problems.extend(found)
            if not found:
                cases[db].append(rec)
    return cases


def check_uniqueness_and_counts(cases: dict[str, list[dict]], problems: list[str]) -> None:
    ids = collections.Counter(c["id"] for cs in cases.values() for c in cs)
    problems.extend(f"duplicate id {cid} ({n} times)" for cid, n in ids.items() if n > 1)
    seen: dict[tuple, str] = {}
    for db, cs in cases.items():
        for c in cs:
            key = (db, " ".join(c["question"].lower().split()), " ".join(c["candidate_sql"].split()))
            if key in seen:
                problems.append(f"{c['id']}: same question and candidate as {seen[key]}")
            else:
                seen[key] = c["id"]
    by_kind = collections.Counter(c["kind"] for cs in cases.values() for c in cs)
    for kind, minimum in MINIMUM.items():
        if by_kind[kind] < minimum:
            problems.append(f"only {by_kind[kind]} {kind} cases (at least {minimum} needed)")
    total = sum(by_kind.values())
    if total < MINIMUM_TOTAL:
        problems.append(f"only {total} cases (at least {MINIMUM_TOTAL} needed)")
    wrong_eicu = sum(1 for c in cases.get("eicu", []) if c["kind"] == "wrong")
    if wrong_eicu < MINIMUM_WRONG_EICU:
        problems.append(f"only {wrong_eicu} wrong eICU cases (at least {MINIMUM_WRONG_EICU} needed)")


def check_fingerprint(conn: sqlite3.Connection, db: str, db_path: Path, timeout: float, problems: list[str]) -> None:
    for table, expected in FINGERPRINT[db].items():
        try:
            rows, _ = run(conn, f"SELECT COUNT(*) FROM {table}", timeout)
        except (sqlite3.Error, Timeout) as exc:
            problems.append(f"{db_path}: cannot count {table}: {exc}")
            continue
        if rows[0][0] != expected:
            problems.append(f"{db_path}: {table} has {rows[0][0]} rows, the cases expect {expected} "
                            f"(not the database the cases were written on)")


def compare(c: dict, cand: list[tuple], gold: list[tuple], problems: list[str]) -> None:
    cid = c["id"]
    same = multiset(cand) == multiset(gold)
    if c["kind"] == "correct" and not same:
        problems.append(f"{cid}: correct case, but the candidate answers differently from gold ({len(cand)} vs {len(gold)} rows)")
    if c["kind"] == "wrong":
        if same:
            problems.append(f"{cid}: wrong case, but the candidate answers like gold")
        elif multiset(cand, norm_value_numeric) == multiset(gold, norm_value_numeric):
            problems.append(f"{cid}: wrong case differs from gold only by number formatting")


def check_case(conn: sqlite3.Connection, c: dict, args: argparse.Namespace,
               problems: list[str], warnings: list[str]) -> int:
    """Compile every SQL of a case, execute the read-only ones, compare; returns #queries run."""
    cid, db = c["id"], c["db"]
    sqls = [("candidate", c["candidate_sql"])]
    if c["gold_sql"] is not None:
        sqls.append(("gold", c["gold_sql"]))
    for label, sql in sqls:
        try:
            conn.execute(f"EXPLAIN {sql}").fetchall()  # compiles, never runs the statement
        except sqlite3.Error as exc:
            problems.append(f"{cid}: {label} SQL does not compile on {db}: {exc}")
            return 0
    results: dict[str, list[tuple]] = {}
    for label, sql in sqls:
        if not READ_ONLY_RE.match(sql):
            if c["kind"] in ("correct", "wrong"):
                problems.append(f"{cid}: {label} SQL of a {c['kind']} case must be SELECT/WITH")
            continue  # writes are only compiled, never executed
        try:
            rows, seconds = run(conn, sql, args.timeout)
        except (sqlite3.Error, Timeout) as exc:
            problems.append(f"{cid}: {label} SQL fails on {db}: {exc}")
            continue
        if seconds > args.slow:
            warnings.append(f"{cid}: {label} SQL took {seconds:.1f}s")
        results[label] = rows
    if c["kind"] in ("correct", "wrong") and len(results) == 2:
        compare(c, results["candidate"], results["gold"], problems)
    return len(results)


def report(cases: dict[str, list[dict]]) -> None:
    table = collections.Counter((c["db"], c["kind"], c["category"]) for cs in cases.values() for c in cs)
    print("cases per database x kind x category")
    for db in DATABASES:
        for kind in KINDS:
            cats = sorted((cat, n) for (d, k, cat), n in table.items() if d == db and k == kind)
            if cats:
                print(f"  {db} / {kind} ({sum(n for _, n in cats)})")
                for cat, n in cats:
                    print(f"      {n:4d}  {cat}")
    print("\ncases per database x kind")
    print(f"  {'database':<10}" + "".join(f"{k:>14}" for k in KINDS) + f"{'total':>8}")
    totals = collections.Counter(c["kind"] for cs in cases.values() for c in cs)
    for db in DATABASES:
        counts = [sum(1 for c in cases.get(db, []) if c["kind"] == k) for k in KINDS]
        print(f"  {db:<10}" + "".join(f"{n:>14}" for n in counts) + f"{sum(counts):>8}")
    print(f"  {'all':<10}" + "".join(f"{totals[k]:>14}" for k in KINDS) + f"{sum(totals.values()):>8}")
    print(f"\n{len(table)} database x kind x category cells, {len({k[2] for k in table})} distinct categories")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--db-dir", required=True, type=Path, help="directory holding mimic_iv.sqlite and eicu.sqlite")
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR,
                        help="directory holding the case files (default: %(default)s)")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds allowed per query (default: %(default)s)")
    parser.add_argument("--slow", type=float, default=5.0, help="report queries slower than this (default: %(default)s s)")
    args = parser.parse_args(argv)

    problems: list[str] = []
    warnings: list[str] = []
    cases = load_cases(args.data_dir, problems)
    check_uniqueness_and_counts(cases, problems)
    executed = 0
    for db, cs in cases.items():
        db_path = args.db_dir / f"{db}.sqlite"
        if not db_path.exists():
            problems.append(f"missing database {db_path} (build it with `ehrguard db build {db} --out {db_path}`)")
            continue
        conn = open_read_only(db_path)
        try:
            check_fingerprint(conn, db, db_path, args.timeout, problems)
            for c in cs:
                executed += check_case(conn, c, args, problems, warnings)
        finally:
            conn.close()

    report(cases)
    print(f"{executed} queries executed")
    for w in warnings:
        print(f"warning: {w}")
    if problems:
        print(f"\n{len(problems)} problem(s):")
        for p in problems:
            print(f"  - {p}")
        return 1
    print("OK: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
