"""Safe execution: read-only at the engine level, time limits, row caps, typed errors."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import duckdb
import pytest

from ehrguard.db import open_database
from ehrguard.db.engine import DuckDBDatabase, SQLiteDatabase, locate_database
from ehrguard.db.worker import DEADLINE_FACTOR, DEADLINE_SLACK_S, stop_workers
from ehrguard.errors import (
    DatabaseError,
    DatabaseNotFoundError,
    QueryExecutionError,
    QueryRefusedError,
    QueryResourceError,
    QueryTimeoutError,
    QueryTooLargeError,
    ReadOnlyViolationError,
)


@pytest.fixture()
def sqlite_path(tmp_path: Path) -> Path:
    path = tmp_path / "t.sqlite"
    conn = sqlite3.connect(path)
    # one transaction: in autocommit each INSERT is its own fsync (about 1 s per fixture on a busy disk)
    inserts = " ".join(f"INSERT INTO t VALUES ({i}, 'v{i}');" for i in range(50))
    conn.executescript(f"CREATE TABLE t (a INT, b TEXT); BEGIN; {inserts} COMMIT;")
    conn.commit()
    conn.close()
    return path


@pytest.fixture()
def duck_path(tmp_path: Path) -> Path:
    path = tmp_path / "t.duckdb"
    conn = duckdb.connect(str(path))
    conn.execute("CREATE SCHEMA mimiciv_hosp; CREATE TABLE mimiciv_hosp.t AS SELECT range AS a, 'v' || range AS b FROM range(50)")
    conn.close()
    return path


def _count(path: Path) -> int:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT count(*) FROM t").fetchone()[0]
    finally:
        conn.close()


@pytest.mark.parametrize(
    "sql",
    [
        "DELETE FROM t",
        "INSERT INTO t VALUES (1, 'x')",
        "UPDATE t SET a = 0",
        "DROP TABLE t",
        "CREATE TABLE u (x INT)",
        "ATTACH DATABASE ':memory:' AS other",
        "PRAGMA writable_schema = 1",
        "SELECT 1; DELETE FROM t",
        "WITH x AS (SELECT 1) DELETE FROM t",
        "SELECT load_extension('/tmp/evil')",
        "-- comment first\nDELETE FROM t",
        "",
    ],
)
def test_sqlite_refuses_anything_but_one_select(sqlite_path: Path, sql: str):
    db = open_database(sqlite_path)
    with pytest.raises(QueryRefusedError):
        db.execute(sql)
    assert _count(sqlite_path) == 50  # nothing changed


def test_sqlite_is_read_only_even_past_the_keyword_check(sqlite_path: Path):
    db = SQLiteDatabase(sqlite_path)
    # Reach the engine directly: the authorizer and mode=ro still refuse.
    conn = db._connection()
    with pytest.raises(sqlite3.DatabaseError):
        conn.execute("DELETE FROM t")
    assert _count(sqlite_path) == 50


def test_sqlite_time_limit_interrupts_inside_the_engine(sqlite_path: Path):
    db = open_database(sqlite_path)
    endless = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"
    with pytest.raises(QueryTimeoutError) as info:
        db.execute(endless, timeout_s=0.3)
    assert "0.3 s" in str(info.value)
    # the connection still works afterwards
    assert db.execute("SELECT count(*) FROM t").rows == [(50,)]


def test_sqlite_row_cap_marks_truncated(sqlite_path: Path):
    db = open_database(sqlite_path)
    r = db.execute("SELECT a FROM t ORDER BY a", max_rows=10)
    assert len(r.rows) == 10 and r.truncated and r.columns == ["a"]
    r = db.execute("SELECT a FROM t", max_rows=50)
    assert len(r.rows) == 50 and not r.truncated


def test_sqlite_engine_errors_keep_the_message(sqlite_path: Path):
    db = open_database(sqlite_path)
    with pytest.raises(QueryExecutionError, match="no such column: nope"):
        db.execute("SELECT nope FROM t")
    with pytest.raises(QueryExecutionError, match="no such function"):
        db.execute("SELECT median(a) FROM t")


@pytest.mark.parametrize(
    "sql",
    ["DELETE FROM mimiciv_hosp.t", "CREATE TABLE x (a INT)", "COPY mimiciv_hosp.t TO '/tmp/out.csv'", "SELECT 1; SELECT 2",
     "INSTALL httpfs", "SET enable_external_access = true", "ATTACH ':memory:' AS m"],
)
def test_duckdb_refuses_anything_but_one_select(duck_path: Path, sql: str):
    db = open_database(duck_path)
    assert isinstance(db, DuckDBDatabase)
    with pytest.raises(QueryRefusedError):
        db.execute(sql)


def test_duckdb_blocks_external_file_access(duck_path: Path, tmp_path: Path):
    secret = tmp_path / "secret.csv"
    secret.write_text("a\n1\n")
    db = open_database(duck_path)
    with pytest.raises(DatabaseError):
        db.execute(f"SELECT * FROM read_csv('{secret}')")


def test_duckdb_time_limit_and_row_cap(duck_path: Path):
    db = open_database(duck_path)
    with pytest.raises(QueryTimeoutError):
        db.execute("SELECT count(*) FROM range(100000000000) a, range(100000) b WHERE a.range * b.range = -1", timeout_s=0.5)
    r = db.execute("SELECT a FROM mimiciv_hosp.t ORDER BY a", max_rows=5)
    assert r.rows == [(0,), (1,), (2,), (3,), (4,)] and r.truncated


def test_missing_and_foreign_files_are_clear_errors(tmp_path: Path):
    with pytest.raises(DatabaseNotFoundError, match="ehrguard db build"):
        open_database(tmp_path / "nope.sqlite")
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"not a database at all")
    with pytest.raises(DatabaseError):
        open_database(junk)


def test_locate_database_by_name(monkeypatch: pytest.MonkeyPatch, sqlite_path: Path, tmp_path: Path):
    monkeypatch.setenv("EHRGUARD_DB_DIR", str(sqlite_path.parent))
    assert locate_database("t") == sqlite_path
    with pytest.raises(DatabaseNotFoundError, match="db build"):
        locate_database("absent")


def test_results_are_capped_in_bytes_and_values_while_fetching(sqlite_path: Path, monkeypatch):
    monkeypatch.setenv("EHRGUARD_MAX_RESULT_BYTES", str(1 << 20))
    monkeypatch.setenv("EHRGUARD_MAX_VALUE_BYTES", "100000")
    db = open_database(sqlite_path)
    r = db.execute("SELECT zeroblob(300000), a FROM t", max_rows=50)  # 15 MB asked for: 50 values of 300 kB
    assert r.truncated and "larger than 1 MiB" in r.truncated_reason and "EHRGUARD_MAX_RESULT_BYTES" in r.truncated_reason
    assert "values longer than 100,000 bytes were cut" in r.truncated_reason and all(len(row[0]) == 100_000 for row in r.rows)
    assert len(r.rows) == 5  # five values of 100 kB fit in 1 MiB, each sent as 200 kB of hex text
    # counted as sent: a control character goes out as \u0001 (6 bytes), so 100,000 of them are 600 kB, not 100 kB
    r = db.execute("SELECT replace(hex(zeroblob(50000)), '0', char(1)) FROM t", max_rows=50)
    assert r.truncated and "larger than 1 MiB" in r.truncated_reason and len(r.rows) == 1
    r = db.execute("SELECT zeroblob(300000), a FROM t LIMIT 5", max_rows=50)
    assert r.truncated and r.truncated_reason.startswith("values longer than") and len(r.rows) == 5
    r = db.execute("SELECT a FROM t", max_rows=10)
    assert r.truncated and "row cap" in r.truncated_reason
    assert db.execute("SELECT a FROM t").truncated_reason == ""


@pytest.mark.parametrize("isolated", [True, False])
def test_one_huge_value_is_a_typed_error_not_a_crash(sqlite_path: Path, isolated: bool):
    db = SQLiteDatabase(sqlite_path, isolated=isolated)
    with pytest.raises(QueryResourceError, match="grew past"):
        db.execute("SELECT randomblob(1000000000)")
    assert db.execute("SELECT count(*) FROM t").rows == [(50,)]


def test_the_hard_deadline_holds_where_the_engine_cannot_be_interrupted(duck_path: Path):
    db = open_database(duck_path)
    assert db.isolated  # the default: queries run in worker processes
    db.execute("SELECT 1")  # a worker is running: its start-up is not part of the deadline
    started = time.perf_counter()
    with pytest.raises(QueryTimeoutError, match="raise the limit"):
        db.execute("SELECT length(repeat('x', 1000000000)) + list_sum(range(300000000))", timeout_s=1.0)
    assert time.perf_counter() - started < 1.0 * DEADLINE_FACTOR + DEADLINE_SLACK_S + 0.5
    assert db.execute("SELECT count(*) FROM mimiciv_hosp.t").rows == [(50,)]  # a fresh worker answers


def test_a_duckdb_file_opens_many_times_in_one_process(duck_path: Path):
    first = DuckDBDatabase(duck_path, isolated=False)
    second = open_database(duck_path, isolated=False)
    assert first.execute("SELECT count(*) FROM mimiciv_hosp.t").rows == second.execute("FROM mimiciv_hosp.t SELECT count(*)").rows
    first.close()
    assert second.execute("SELECT 1").rows == [(1,)]  # the shared connection stays open for the other handle
    second.close()


@pytest.mark.parametrize("sql, error, words", [
    ("SELECT * FROM pragma_database_list", ReadOnlyViolationError, "(pragma database_list)"),
    ("SELECT load_extension('x')", ReadOnlyViolationError, "function load_extension()"),
    ("SELEC * FROM t", QueryRefusedError, "Syntax error at line 1, column 1: 'SELEC'"),
    ("\n  SLECT 1", QueryRefusedError, "line 2, column 3"),
    ("SELECT 1; SELECT 2", QueryRefusedError, "send the statements one by one"),
    ("SELECT ?", QueryRefusedError, "nothing binds them"),
    ("SELECT 'a\x00'", QueryRefusedError, "NUL character"),
    ("SELECT " + "(" * 60 + "1" + ")" * 60, QueryTooLargeError, "nests parentheses 60 deep"),
])
def test_messages_say_what_happened(sqlite_path: Path, sql: str, error: type, words: str):
    with pytest.raises(error) as info:
        open_database(sqlite_path).execute(sql)
    assert words in str(info.value) and "\n" not in str(info.value)
    assert "Only one statement may run at a time: You can only" not in str(info.value)


def test_harmless_table_functions_run(sqlite_path: Path, duck_path: Path):
    db = open_database(sqlite_path)
    assert [r[1] for r in db.execute("SELECT * FROM pragma_table_info('t')").rows] == ["a", "b"]
    assert db.execute("SELECT value FROM json_each('[1,2,3]')").rows == [(1,), (2,), (3,)]
    assert open_database(duck_path).execute("FROM mimiciv_hosp.t SELECT count(*)").rows == [(50,)]


def test_duckdb_file_access_is_a_read_only_refusal_and_its_timeout_says_how_to_raise_it(duck_path: Path):
    db = open_database(duck_path)
    with pytest.raises(ReadOnlyViolationError, match="read-only guard"):
        db.execute("SELECT * FROM read_text('/etc/hostname')")
    with pytest.raises(QueryTimeoutError, match="EHRGUARD_QUERY_TIMEOUT"):
        db.execute("SELECT count(*) FROM range(100000000000) a, range(100000) b WHERE a.range * b.range = -1", timeout_s=0.5)


def test_the_memory_limit_stops_a_query_with_a_typed_error(sqlite_path: Path, duck_path: Path, monkeypatch):
    monkeypatch.setenv("EHRGUARD_QUERY_MEMORY", "64")  # MiB: read by each new worker
    from ehrguard.db.worker import stop_workers

    stop_workers()  # workers started under another limit
    try:
        with pytest.raises(QueryResourceError, match="EHRGUARD_QUERY_MEMORY|grew past"):
            open_database(sqlite_path).execute("SELECT length(group_concat(hex(randomblob(1000000)))) FROM t a, t b", timeout_s=20)
        with pytest.raises(QueryResourceError, match="more memory than the limit \\(64 MiB\\)"):
            open_database(duck_path).execute("SELECT count(DISTINCT range) FROM range(50000000)", timeout_s=20)
    finally:
        stop_workers()


def test_the_value_lexicon_is_read_instead_of_the_database_and_goes_stale_with_it(sqlite_path: Path, monkeypatch):
    from ehrguard.db import ValueIndex, build_lexicon, lexicon_state
    from ehrguard.db.lexicon import lexicon_path

    assert lexicon_state(sqlite_path) == "missing"
    db = open_database(sqlite_path, isolated=False)
    out = build_lexicon(db, [("t", "b")])
    assert out == lexicon_path(sqlite_path) and lexicon_state(sqlite_path) == "ok"
    queried = ValueIndex(open_database(sqlite_path, isolated=False)).values("t", "b")
    calls: list[str] = []
    reader = open_database(sqlite_path, isolated=False)
    monkeypatch.setattr(reader, "execute", lambda sql, **kw: calls.append(sql))
    assert ValueIndex(reader).values("t", "b") == queried and calls == []  # from the lexicon, in the query's order
    conn = sqlite3.connect(sqlite_path)
    conn.execute("INSERT INTO t VALUES (99, 'new')")
    conn.commit()
    conn.close()
    assert lexicon_state(sqlite_path) == "stale"
    assert "new" in ValueIndex(open_database(sqlite_path, isolated=False)).values("t", "b")  # stale: queried again
    build_lexicon(open_database(sqlite_path, isolated=False), [("t", "b")])
    assert lexicon_state(sqlite_path) == "ok"
    lexicon_path(sqlite_path).write_bytes(b"\x1f\x8b an older, gzip-compressed lexicon")  # not an SQLite file
    assert lexicon_state(sqlite_path) == "stale"
    fresh = ValueIndex(open_database(sqlite_path, isolated=False))
    assert "new" in fresh.values("t", "b") and fresh.find([("t", "b")], {"new"}, by="lower") == {("t", "b"): {"new": "new"}}


def test_an_open_lexicon_keeps_answering_from_its_file_while_a_new_one_replaces_it(sqlite_path: Path):
    # The lexicon is read through a memory map; a rebuild replaces the file whole, so the reader's map stays valid.
    from ehrguard.db import build_lexicon
    from ehrguard.db.lexicon import lexicon_path, load_lexicon

    build_lexicon(open_database(sqlite_path, isolated=False), [("t", "b")])
    reader = load_lexicon(sqlite_path)
    assert reader is not None
    before = reader.values("t.b")
    conn = sqlite3.connect(sqlite_path)
    conn.execute("INSERT INTO t VALUES (99, 'new')")
    conn.commit()
    conn.close()
    old_inode = lexicon_path(sqlite_path).stat().st_ino
    build_lexicon(open_database(sqlite_path, isolated=False), [("t", "b")])
    assert lexicon_path(sqlite_path).stat().st_ino != old_inode
    assert reader.values("t.b") == before and "new" not in before  # the old file, read to the end
    assert reader.find(["t.b"], {before[0].lower()}, by="lower") == {"t.b": {before[0].lower(): before[0]}}
    fresh = load_lexicon(sqlite_path)
    assert fresh is not None and "new" in fresh.values("t.b")


def test_prefetch_starts_a_query_worker_in_the_background_and_never_raises(sqlite_path: Path, tmp_path: Path):
    from ehrguard.db import worker
    from ehrguard.verify.api import prefetch

    try:
        prefetch([sqlite_path, tmp_path / "no-such.sqlite", "no_such_database"], method="preserve_all")
        pool = worker._pool(sqlite_path)
        deadline = time.monotonic() + 30
        while not pool.idle and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(pool.idle) == 1 and pool.count == 1  # started, ready, and the first query takes it
        assert open_database(sqlite_path).execute("SELECT count(*) FROM t").rows == [(50,)]
        assert pool.count == 1
    finally:
        stop_workers()


def test_a_worker_that_cannot_start_is_a_typed_error_and_nothing_waits_for_it(sqlite_path: Path):
    from ehrguard.errors import QueryWorkerError

    db = open_database(sqlite_path)
    assert db.execute("SELECT count(*) FROM t").rows == [(50,)]
    sqlite_path.write_bytes(b"this is no longer a database" * 100)  # a new version of the file, unreadable by a new worker
    for _ in range(2):  # the second call must not wait for a replacement that never comes
        started = time.perf_counter()
        with pytest.raises(QueryWorkerError, match="Could not start a query worker"):
            db.execute("SELECT 1")
        assert time.perf_counter() - started < 30


def test_duckdb_results_with_blobs_and_a_comment_after_the_semicolon(duck_path: Path):
    db = open_database(duck_path)
    assert db.execute("SELECT 'ab'::BLOB AS b, 'x' AS s").rows == [(b"ab", "x")]
    assert db.execute("SELECT 'a' AS s; -- a comment after the statement").rows == [("a",)]
    assert db.execute("SELECT b FROM mimiciv_hosp.t ORDER BY a DESC LIMIT 2 /* trailing */ ;").rows == [("v49",), ("v48",)]


def test_a_missing_or_stale_lexicon_is_written_anew_on_first_use_where_the_folder_allows(tmp_path: Path, monkeypatch, capsys):
    from ehrguard.db import lexicon_state
    from ehrguard.db import values as values_module
    from ehrguard.verify.methods import DatabaseContext

    path = tmp_path / "mimic_iv.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE prescriptions (subject_id INTEGER, drug TEXT)")
    conn.executemany("INSERT INTO prescriptions VALUES (?, ?)", [(1, "Furosemide"), (2, "Heparin (Porcine)"), (3, "Aspirin")])
    conn.commit()
    conn.close()

    def drugs() -> dict[str, str]:
        ctx = DatabaseContext(open_database(path, isolated=False), "mimic_iv")
        return ctx.values.find([("prescriptions", "drug")], {"furosemide", "heparin porcine", "insulin"})[("prescriptions", "drug")]

    assert lexicon_state(path) == "missing"
    assert drugs() == {"furosemide": "Furosemide", "heparin porcine": "Heparin (Porcine)"}
    assert lexicon_state(path) == "ok" and "was missing: written anew" in capsys.readouterr().err
    conn = sqlite3.connect(path)
    conn.execute("INSERT INTO prescriptions VALUES (4, 'Insulin')")
    conn.commit()
    conn.close()
    assert lexicon_state(path) == "stale"
    assert drugs()["insulin"] == "Insulin" and lexicon_state(path) == "ok"
    assert "was stale (the database changed)" in capsys.readouterr().err
    # A folder it may not write to: the values come from the database, and nothing is written.
    conn = sqlite3.connect(path)
    conn.execute("INSERT INTO prescriptions VALUES (5, 'Vancomycin')")
    conn.commit()
    conn.close()
    monkeypatch.setattr(values_module.os, "access", lambda *a: False)
    found = DatabaseContext(open_database(path, isolated=False), "mimic_iv").values.find([("prescriptions", "drug")], {"vancomycin"})
    assert found == {("prescriptions", "drug"): {"vancomycin": "Vancomycin"}} and lexicon_state(path) == "stale"
    assert capsys.readouterr().err == ""


def test_a_damaged_lexicon_is_set_aside_once_and_the_values_come_from_the_database(sqlite_path: Path, capsys):
    from ehrguard.db import ValueIndex, build_lexicon
    from ehrguard.db.lexicon import lexicon_path

    build_lexicon(open_database(sqlite_path, isolated=False), [("t", "b")])
    expected = ValueIndex(open_database(sqlite_path, isolated=False)).values("t", "b")
    index = ValueIndex(open_database(sqlite_path, isolated=False))
    assert index.distinct_count("t", "b") == len(expected)  # opened: its header (meta, columns) reads fine
    data = bytearray(lexicon_path(sqlite_path).read_bytes())
    data[4096:] = b"\xff" * (len(data) - 4096)  # every page past the first overwritten
    lexicon_path(sqlite_path).write_bytes(bytes(data))
    some = expected[0]
    assert index.find([("t", "b")], {some}, by="lower") == {("t", "b"): {some.lower().strip(): some}}
    assert index.values("t", "b") == expected
    err = capsys.readouterr().err
    assert err.count("cannot be read") == 1 and "ehrguard db lexicon --db" in err and "Traceback" not in err


def test_a_worker_left_holding_a_large_querys_memory_is_replaced_not_kept_idle(mimic_iv_raw_db: Path, monkeypatch):
    from ehrguard.db import worker

    stop_workers()
    monkeypatch.setenv("EHRGUARD_QUERY_MEMORY", "512")  # MiB: a worker past 256 MiB after a query is replaced
    db = open_database(mimic_iv_raw_db, isolated=True)
    db.execute("SELECT 1")
    pool = worker._pool(mimic_iv_raw_db)
    first = {w.proc.pid for w in pool.idle}
    db.execute("SELECT len(list_reverse_sort(x)) FROM (SELECT list(i) AS x FROM range(6000000) t(i))")  # ~300 MiB held
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not pool.idle:  # its successor starts in the background
        time.sleep(0.1)
    assert pool.idle and not first & {w.proc.pid for w in pool.idle}
    assert all(worker._resident_mib(w.proc.pid) < 256 for w in pool.idle)
    assert db.execute("SELECT 1").rows == [(1,)]
    stop_workers()


def test_duckdb_keeps_the_servers_files_and_settings_to_itself(mimic_iv_raw_db: Path):
    db = open_database(mimic_iv_raw_db, isolated=False)
    for sql in ("SELECT name, value FROM duckdb_settings() WHERE value LIKE '%/%'", "SELECT current_setting('secret_directory')"):
        with pytest.raises(QueryRefusedError, match="settings are not readable"):
            db.execute(sql)
    assert db.execute("SELECT 'see current_setting(x) in the docs'").rows  # named inside a text, nothing is read
    with pytest.raises(DatabaseError) as refused:
        db.execute("SELECT * FROM duckdb_secrets()")  # its error named the server's home folder
    assert str(Path.home()) not in str(refused.value) and "~/.duckdb" in str(refused.value)
