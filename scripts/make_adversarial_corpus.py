"""Write the corpus of `ehrguard bench hostile`: hostile and odd SQL with the outcome each engine must give.

The file is src/ehrguard/benchmarks/hostile_data/adversarial.json.

Outcomes: ``ok`` (rows, whole), ``truncated`` (rows, cut by a cap, with the reason), ``read_only``
(the read-only guard refused it), ``refused`` (refused before running: not one query, a syntax
error at the first word), ``too_large`` (the SQL is over a size bound), ``stopped`` (a time or
memory limit stopped it: timeout or resource error), ``error`` (the engine rejected it). A list
means any of them. The cases are written from the engines' documentation of what writes, reaches
files or grows without bound, not from runs of ehrguard; tables are those of the synthetic database
(patients, admissions, labevents), copied into DuckDB by the test.

Run: python scripts/make_adversarial_corpus.py
"""

from __future__ import annotations

import json
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "src" / "ehrguard" / "benchmarks" / "hostile_data" / "adversarial.json"
BOTH = ("sqlite", "duckdb")
cases: list[dict[str, object]] = []


def add(category: str, sql: str | dict[str, object], sqlite: str | list[str] | None, duckdb: str | list[str] | None) -> None:
    """One case; ``sql`` is the text, or ``{"head", "repeat", "times", "join", "tail"}`` for SQL too long to store."""
    expect = {engine: outcome for engine, outcome in (("sqlite", sqlite), ("duckdb", duckdb)) if outcome is not None}
    key = "sql" if isinstance(sql, str) else "sql_parts"
    cases.append({"id": f"{category}-{sum(c['category'] == category for c in cases) + 1:03d}", "category": category, key: sql,
                  "expect": expect})


def parts(head: str, repeat: str, times: int, tail: str = "", join: str = "") -> dict[str, object]:
    """SQL written as ``head + join.join([repeat] * times) + tail``; ``{i}`` in ``repeat`` is the repetition's number."""
    return {"head": head, "repeat": repeat, "times": times, "join": join, "tail": tail}


WRITES = [
    "DELETE FROM patients",
    "DELETE FROM patients WHERE subject_id > 0",
    "INSERT INTO patients (subject_id) VALUES (1)",
    "INSERT INTO patients SELECT * FROM patients",
    "UPDATE patients SET gender = 'x'",
    "UPDATE admissions SET hadm_id = hadm_id + 1",
    "REPLACE INTO patients (subject_id) VALUES (1)",
    "DROP TABLE patients",
    "DROP VIEW IF EXISTS v",
    "CREATE TABLE stolen AS SELECT * FROM patients",
    "CREATE VIEW v AS SELECT 1",
    "CREATE INDEX i ON patients(subject_id)",
    "CREATE TEMP TABLE t AS SELECT 1",
    "ALTER TABLE patients ADD COLUMN x INT",
    "ALTER TABLE patients RENAME TO p2",
    "TRUNCATE patients",
    "DELETE FROM admissions WHERE hadm_id IN (SELECT hadm_id FROM admissions LIMIT 1)",
    "INSERT OR REPLACE INTO labevents SELECT * FROM labevents LIMIT 1",
    "UPDATE labevents SET valuenum = 0 WHERE itemid = 50912",
    "DROP TABLE IF EXISTS labevents",
]
# Each write, dressed the ways a filter on the first word could be fooled.
DRESSINGS = [
    ("{}", "read_only"),
    ("{}".lower(), "read_only"),
    ("-- a comment first\n{}", "read_only"),
    ("/* a block comment */ {}", "read_only"),
    ("\n\t  {};", "read_only"),
]
for write in WRITES:
    for dressing, outcome in DRESSINGS:
        sql = dressing.format(write)
        add("write", sql.lower() if dressing == "{}".lower() else sql, outcome, outcome)
    # behind a query: refused as more than one statement
    # DuckDB has no REPLACE INTO: its parser rejects the pair before counting statements
    duck_multi = ["refused", "error"] if write.startswith(("REPLACE", "INSERT OR")) else "refused"
    add("multiple_statements", f"SELECT 1; {write}", "refused", duck_multi)
    add("multiple_statements", f"SELECT count(*) FROM patients;\n{write};", "refused", duck_multi)
    # behind WITH: the first word is a query's, the engine's own guard must refuse (SQLite may reject it as a syntax error)
    add("write_behind_with", f"WITH x AS (SELECT 1) {write}", ["read_only", "error"], ["read_only", "error"])

SESSION = [
    ("ATTACH DATABASE ':memory:' AS other", "read_only", "read_only"),
    ("ATTACH '/tmp/evil.db' AS evil", "read_only", "read_only"),
    ("DETACH DATABASE main", "read_only", "read_only"),
    ("PRAGMA writable_schema = 1", "read_only", "read_only"),
    ("PRAGMA query_only = 0", "read_only", "read_only"),
    ("PRAGMA journal_mode = DELETE", "read_only", "read_only"),
    ("PRAGMA table_info(patients)", "read_only", "read_only"),
    ("VACUUM", "read_only", "read_only"),
    ("VACUUM INTO '/tmp/copy.db'", "read_only", "read_only"),
    ("REINDEX", "read_only", "read_only"),
    ("ANALYZE", "read_only", "read_only"),
    ("BEGIN", "read_only", "read_only"),
    ("BEGIN IMMEDIATE", "read_only", "read_only"),
    ("COMMIT", "read_only", "read_only"),
    ("ROLLBACK", "read_only", "read_only"),
    ("SAVEPOINT a", "read_only", "read_only"),
    ("RELEASE a", "read_only", "read_only"),
    ("SET enable_external_access = true", "read_only", "read_only"),
    ("SET memory_limit = '100GB'", "read_only", "read_only"),
    ("RESET memory_limit", "read_only", "read_only"),
    ("INSTALL httpfs", "read_only", "read_only"),
    ("LOAD httpfs", "read_only", "read_only"),
    ("FORCE INSTALL httpfs", "read_only", "read_only"),
    ("CHECKPOINT", "read_only", "read_only"),
    ("EXPORT DATABASE '/tmp/dump'", "read_only", "read_only"),
    ("IMPORT DATABASE '/tmp/dump'", "read_only", "read_only"),
    ("COPY patients TO '/tmp/patients.csv'", "read_only", "read_only"),
    ("COPY (SELECT * FROM patients) TO '/tmp/p.parquet' (FORMAT parquet)", "read_only", "read_only"),
    ("COPY patients FROM '/etc/passwd'", "read_only", "read_only"),
    ("CALL pragma_version()", "read_only", "read_only"),
    ("USE memory", "read_only", "read_only"),
    ("PREPARE p AS SELECT 1", "read_only", "read_only"),
    ("EXECUTE p", "read_only", "read_only"),
    ("EXPLAIN SELECT 1", "refused", "refused"),
    ("DESCRIBE patients", "refused", "refused"),
    ("SHOW TABLES", "refused", "refused"),
    ("SUMMARIZE patients", "refused", "refused"),
    ("PIVOT patients ON gender USING count(*)", "refused", "refused"),
]
for sql, s, d in SESSION:
    add("session_and_settings", sql, s, d)

FILES_SQLITE = [
    "SELECT load_extension('/tmp/evil.so')",
    "SELECT load_extension('libc.so.6', 'system')",
    "SELECT readfile('/etc/passwd')",
    "SELECT writefile('/tmp/out.txt', 'x')",
    "SELECT edit('x', 'vi')",
    "SELECT fts3_tokenizer('simple')",
    "SELECT * FROM pragma_database_list",
    "SELECT file FROM pragma_database_list",
    "SELECT * FROM pragma_compile_options",
]
for sql in FILES_SQLITE:
    outcome = "read_only" if "pragma_" in sql or "load_extension" in sql else ["read_only", "error"]
    # DuckDB's pragma_database_list answers with the database's own path (a known disclosure, docs/reliability.md)
    add("file_access", sql, outcome, ["read_only", "error", "ok"] if "database_list" in sql else ["read_only", "error"])
FILES_DUCKDB = [
    "SELECT * FROM read_csv('/etc/passwd')",
    "SELECT * FROM read_csv_auto('/etc/passwd')",
    "SELECT * FROM read_csv('/etc/passwd', header = false, columns = {'line': 'VARCHAR'})",
    "SELECT * FROM read_text('/etc/hostname')",
    "SELECT * FROM read_blob('/etc/hostname')",
    "SELECT * FROM read_json('/etc/passwd')",
    "SELECT * FROM read_json_auto('/tmp/x.json')",
    "SELECT * FROM read_parquet('/tmp/x.parquet')",
    "SELECT * FROM parquet_scan('/tmp/x.parquet')",
    "SELECT * FROM glob('/etc/*')",
    "SELECT * FROM glob('/root/**')",
    "SELECT * FROM '/etc/passwd'",
    "SELECT * FROM 'https://example.com/data.csv'",
    "SELECT * FROM read_csv('https://example.com/data.csv')",
    "SELECT * FROM sqlite_scan('/tmp/other.db', 'patients')",
    "SELECT * FROM duckdb_extensions()",
    "FROM read_csv('/etc/shadow')",
    "WITH f AS (SELECT * FROM read_text('/etc/passwd')) SELECT * FROM f",
    "SELECT (SELECT content FROM read_text('/etc/hostname')) AS leaked",
    "SELECT * FROM patients WHERE subject_id IN (SELECT 1 FROM read_csv('/etc/passwd'))",
]
for sql in FILES_DUCKDB:
    sqlite_outcome: str | list[str] = "refused" if sql.startswith("FROM") else "error"
    # with external access off, DuckDB no longer knows a file as a table, or an extension's function: an error, not a read
    duck_outcome: str | list[str] = ["read_only", "error"] if sql.startswith("SELECT * FROM '") or "sqlite_scan" in sql else "read_only"
    add("file_access", sql, sqlite_outcome, duck_outcome)

# Runaway work and values grown without bound: stopped by a limit, or cut by the caps.
RUNAWAY_BOTH = [
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c",
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT max(x) FROM c",
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000000000) SELECT sum(x) FROM c",
    "SELECT count(*) FROM labevents a, labevents b, labevents c, labevents d",
    "SELECT count(*) FROM chartevents a, chartevents b, chartevents c WHERE a.valuenum + b.valuenum + c.valuenum = -1",
    "SELECT count(*) FROM cost a CROSS JOIN cost b CROSS JOIN cost c",
]
for sql in RUNAWAY_BOTH:
    # DuckDB may count a join by arithmetic, or finish it in its vectorised loops within the limit
    add("runaway", sql, "stopped", "stopped" if "RECURSIVE" in sql else ["stopped", "ok"])
add("runaway", "SELECT randomblob(1000000000)", "stopped", "error")
add("runaway", "SELECT zeroblob(1000000000)", "stopped", "error")
add("runaway", "SELECT length(zeroblob(100000000))", "stopped", "error")
add("runaway", "SELECT length(printf('%.*c', 1000000000, 'x'))", "stopped", "error")
add("runaway", "SELECT length(replace(hex(zeroblob(50000000)), '0', '00'))", "stopped", "error")
add("runaway", "SELECT group_concat(hex(randomblob(100000))) FROM labevents a, labevents b", "stopped", "error")
add("runaway", "SELECT length(repeat('x', 1000000000))", "error", "stopped")
add("runaway", "SELECT list_sum(range(200000000))", "error", "stopped")
add("runaway", "SELECT range(100000000)", "error", "stopped")
add("runaway", "SELECT repeat('x', 5000000) FROM labevents", "error", ["stopped", "truncated"])
add("runaway", "SELECT string_agg(repeat('x', 100000), ',') FROM labevents a, labevents b", "error", "stopped")
add("runaway", "SELECT count(*) FROM range(100000000000) a, range(100000) b WHERE a.range * b.range = -1", "error", "stopped")
add("runaway", "SELECT sum(x) FROM generate_series(1, 100000000000) t(x)", ["error", "stopped"], "stopped")
# Big results: cut by the row or byte cap, with the reason, never a crash.
add("big_result", "SELECT zeroblob(5000000) FROM labevents", "truncated", "error")
add("big_result", "SELECT zeroblob(2000000), zeroblob(2000000) FROM labevents", "truncated", "error")
add("big_result", "SELECT hex(zeroblob(3000000)) FROM labevents", "truncated", "error")
add("big_result", "SELECT repeat('x', 3000000) FROM labevents", "error", ["truncated", "stopped"])
add("big_result", "SELECT * FROM chartevents a, chartevents b LIMIT 20000", "truncated", "truncated")
add("big_result", "SELECT a.*, b.* FROM labevents a, labevents b", ["truncated", "stopped"], ["truncated", "stopped"])
add("big_result", "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 50000) SELECT x FROM c", "truncated",
    "truncated")
add("big_result", "SELECT range FROM range(50000)", "error", "truncated")

# SQL too large to parse or plan in bounded time: refused before any engine sees it.
add("too_large", parts("SELECT ", "(", 5000, "1" + ")" * 5000), "too_large", "too_large")
add("too_large", "SELECT " + "(" * 40 + "1" + ")" * 40, "too_large", "too_large")
add("too_large", parts("SELECT 1 FROM patients WHERE subject_id IN ", "(SELECT subject_id FROM patients WHERE subject_id IN ", 40,
                       "(1)" + ")" * 40), "too_large", "too_large")
add("too_large", parts("SELECT 1 ", "UNION ALL SELECT 1 ", 600), "too_large", "too_large")
add("too_large", parts("SELECT 1 ", "UNION SELECT 1 ", 200000), "too_large", "too_large")
add("too_large", parts("SELECT 1 FROM patients WHERE ", "subject_id = {i}", 20000, join=" OR "), "too_large", "too_large")
add("too_large", parts("SELECT 1 FROM patients WHERE subject_id IN (", "{i}", 30000, ")", join=", "), "too_large", "too_large")
add("too_large", parts("SELECT '", "x", 200000, "'"), "too_large", "too_large")
add("too_large", parts("SELECT 1 -- ", "x", 200000), "too_large", "too_large")
add("too_large", parts("SELECT ", "1", 30000, join=" + "), "too_large", "too_large")
add("too_large", parts("SELECT ", "[", 100, "1" + "]" * 100), ["too_large", "error"], ["too_large", "stopped", "error", "ok"])
add("too_large", parts("SELECT ", "CASE WHEN 1 THEN ", 60, "1" + " END" * 60), ["ok", "error", "too_large"], ["ok", "error", "too_large"])

# Odd input: empty, comments only, syntax errors, NUL bytes, unknown names. A clear refusal or engine error.
ODD = [
    ("", "refused", "refused"),
    ("   \n\t ", "refused", "refused"),
    ("-- only a comment", "refused", "refused"),
    ("/* only a comment */", "refused", "refused"),
    ("SELEC * FROM patients", "refused", "refused"),
    ("SLECT 1", "refused", "refused"),
    ("patients", "refused", "refused"),
    ("42", "refused", "refused"),
    ("'; DROP TABLE patients; --", "refused", "refused"),
    ("SELECT", "error", "error"),
    ("SELECT * FROM", "error", "error"),
    ("SELECT * FROM nope", "error", "error"),
    ("SELECT nope FROM patients", "error", "error"),
    ("SELECT * FROM patients WHERE", "error", "error"),
    ("SELECT 1 +", "error", "error"),
    ("SELECT * FROM patients WHERE gender = 'f", "error", "error"),
    ("SELECT \"unclosed FROM patients", "error", "error"),
    ("SELECT 1\x00; DELETE FROM patients", ["refused", "error"], ["refused", "error"]),
    ("SELECT '\x00'", ["ok", "refused"], ["ok", "error"]),
    ("SELECT 'ünïcödé ✓', '日本語'", "ok", "ok"),
    ("SELECT * FROM pätients", "error", "error"),
    ("SELECT 1/0", "ok", ["ok", "error"]),
    ("SELECT CAST('x' AS INTEGER)", "ok", "error"),
    ("SELECT abs(-9223372036854775807 - 1)", "error", "error"),
    ("SELECT 9223372036854775807 + 1", ["ok", "error"], "error"),
    ("SELECT * FROM patients ORDER BY 99", "error", "error"),
    # parameters: nothing binds them here
    ("SELECT ?", "refused", "error"),
    ("SELECT :name", "refused", "error"),
    ("SELECT $1", "refused", "error"),
]
for sql, s, d in ODD:
    add("odd_input", sql, s, d)

# Harmless reads that a filter could refuse by mistake: they must run.
HARMLESS = [
    ("SELECT count(*) FROM patients", "ok", "ok"),
    ("select count(*) from patients", "ok", "ok"),
    ("  (SELECT count(*) FROM patients)", "error", "ok"),  # SQLite's grammar has no parenthesised statement
    ("-- count them\nSELECT count(*) FROM patients", "ok", "ok"),
    ("/* c */ SELECT count(*) FROM patients;", "ok", "ok"),
    ("SELECT count(*) FROM patients;   ", "ok", "ok"),
    ("WITH p AS (SELECT * FROM patients) SELECT count(*) FROM p", "ok", "ok"),
    ("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 10) SELECT sum(x) FROM c", "ok", "ok"),
    ("VALUES (1, 'a'), (2, 'b')", "ok", "ok"),
    ("SELECT subject_id, row_number() OVER (ORDER BY subject_id) FROM patients", "ok", "ok"),
    ("SELECT 'DELETE FROM patients' AS text", "ok", "ok"),
    ("SELECT 'DROP TABLE x; --' AS text, 1 AS n", "ok", "ok"),
    ("SELECT * FROM patients WHERE gender = 'insert'", "ok", "ok"),
    ("SELECT \"subject_id\" FROM \"patients\" LIMIT 1", "ok", "ok"),
    ("SELECT 1 UNION SELECT 2 EXCEPT SELECT 2", "ok", "ok"),
    ("SELECT " + "(" * 20 + "1" + ")" * 20, "ok", "ok"),
    ("SELECT name FROM sqlite_master WHERE type = 'table'", "ok", "ok"),
    ("SELECT * FROM pragma_table_info('patients')", "ok", ["ok", "error"]),
    ("SELECT * FROM json_each('[1,2,3]')", "ok", ["ok", "error"]),
    ("SELECT json_extract('{\"a\": 1}', '$.a')", "ok", "ok"),
    ("SELECT upper(gender), length(gender) FROM patients LIMIT 3", "ok", "ok"),
    ("SELECT strftime('%Y', '2100-01-01')", "ok", "error"),
    ("SELECT hex(randomblob(16))", "ok", "error"),
    ("SELECT zeroblob(1000)", "ok", "error"),
    ("FROM patients LIMIT 1", "refused", "ok"),
    ("FROM patients SELECT count(*)", "refused", "ok"),
    ("SELECT * FROM duckdb_settings() LIMIT 1", "error", "ok"),
    ("SELECT list_sum(range(1000))", "error", "ok"),
    ("SELECT repeat('ab', 3)", "error", "ok"),
    ("SELECT table_name FROM information_schema.tables", "error", "ok"),
    ("SELECT 'ab'::BLOB AS b, 'x' AS s", "error", "ok"),
    ("SELECT 'a' AS s; -- a comment after the statement", ["ok", "refused"], "ok"),
    ("SELECT gender FROM patients ORDER BY subject_id LIMIT 3 /* trailing */ ;", "ok", "ok"),
]
for sql, s, d in HARMLESS:
    add("harmless", sql, s, d)


def main() -> None:
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"about": __doc__.split("\n\n")[0], "cases": cases}, indent=1, ensure_ascii=False) + "\n")
    print(f"{len(cases)} cases -> {OUT}")


if __name__ == "__main__":
    main()
