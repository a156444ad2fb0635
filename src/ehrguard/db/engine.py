"""Safe, read-only execution on SQLite and DuckDB: the one path every query takes.

Safety is enforced by the engines themselves, not by inspecting SQL text:

* SQLite opens the file with a ``mode=ro`` URI and installs an authorizer that allows
  only reads; ATTACH, PRAGMA, writes, schema changes and ``load_extension`` are denied.
  A progress handler stops a query at its wall-clock limit (datasette's
  ``sqlite_timelimit`` technique).
* DuckDB opens with ``read_only=True`` and external access disabled (no files, no
  HTTP, no extensions, no spilling to disk), a memory limit, then locks its configuration;
  a timer calls ``interrupt()``. One connection per file is shared by every handle in the
  process (a DuckDB file cannot be opened twice in one process), with a cursor per query.

A query must be a single ``SELECT``/``WITH`` statement (DuckDB also takes ``FROM t``), of
bounded size (:func:`~ehrguard.db.limits.check_sql_size`). Anything else raises a
:class:`~ehrguard.errors.QueryRefusedError` before the engine runs it. Results are bounded in
rows and bytes while they are fetched (:mod:`ehrguard.db.limits`).

By default (``EHRGUARD_QUERY_ISOLATION=process``) a query runs in a worker process
(:mod:`ehrguard.db.worker`) whose memory is capped, and which is killed and replaced when the
query overruns its deadline: a limit holds even where an engine cannot be interrupted (a parse
step, one huge value).
"""

from __future__ import annotations

import os
import re
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ehrguard.config import SETTINGS, int_setting, setting
from ehrguard.db.limits import ENGINE_VALUE_BYTES, QueryLimits, check_sql_size, fetch_bounded, statement_body
from ehrguard.errors import (
    DatabaseError,
    DatabaseNameError,
    DatabaseNotFoundError,
    QueryExecutionError,
    QueryRefusedError,
    QueryResourceError,
    QueryTimeoutError,
    ReadOnlyViolationError,
)

# The built-in defaults, from the settings table. ``execute`` falls back to the settings
# themselves (EHRGUARD_QUERY_TIMEOUT, EHRGUARD_MAX_ROWS), which default to these.
DEFAULT_TIMEOUT_S = float(SETTINGS["query_timeout"].default)
DEFAULT_MAX_ROWS = int(SETTINGS["max_rows"].default)


def query_limits(timeout_s: float | None, max_rows: int | None) -> tuple[float, int]:
    """The time limit and row cap of one query: the arguments, checked against the settings' bounds,
    or the settings ``query_timeout`` / ``max_rows`` where an argument is None.

    Raises:
        ConfigError: a limit is not finite, not positive, or above its cap (3600 s, 1,000,000 rows).
    """
    limits = QueryLimits.resolve(timeout_s, max_rows)
    return limits.timeout_s, limits.max_rows


@dataclass
class Result:
    """Rows of one executed query, with the column names and whether a cap cut it (``truncated_reason`` says which)."""

    columns: list[str]
    rows: list[tuple[Any, ...]]
    truncated: bool = False
    elapsed_s: float = 0.0
    truncated_reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "columns": self.columns,
            "rows": [list(r) if not any(isinstance(v, bytes) for v in r) else [_shown(v) for v in r] for r in self.rows],
            "row_count": len(self.rows),
            "truncated": self.truncated,
            "truncated_reason": self.truncated_reason,
            "elapsed_s": round(self.elapsed_s, 6),
        }


def _shown(value: Any) -> Any:
    """A value as JSON can carry it: blobs as hex text."""
    return value.hex() if isinstance(value, bytes) else value


class Database(Protocol):
    """What every database backend offers."""

    name: str
    dialect: str

    @property
    def path(self) -> Path | None:
        """The database file; None when it is not a file (a PostgreSQL server)."""

    def execute(self, sql: str, *, timeout_s: float | None = None, max_rows: int | None = None) -> Result: ...

    def close(self) -> None: ...


_LEADING_COMMENTS = re.compile(r"^\s*(?:(?:--[^\n]*\n?)|(?:/\*.*?\*/)|\s)*", re.DOTALL)

# Statements that write, change settings or reach outside the database, in SQLite, DuckDB or PostgreSQL.
_WRITES = frozenset(
    "INSERT UPDATE DELETE REPLACE UPSERT MERGE CREATE DROP ALTER TRUNCATE ATTACH DETACH PRAGMA VACUUM REINDEX ANALYZE BEGIN "
    "COMMIT ROLLBACK END SAVEPOINT RELEASE COPY INSTALL LOAD FORCE SET RESET CALL EXPORT IMPORT CHECKPOINT USE PREPARE EXECUTE "
    "DEALLOCATE GRANT REVOKE COMMENT LOCK UNLISTEN LISTEN NOTIFY DO CLUSTER REFRESH SECURITY".split()
)
# Read-only statements that are not queries: refused, with their own reason.
_NOT_QUERIES = frozenset("EXPLAIN DESCRIBE DESC SHOW SUMMARIZE PIVOT UNPIVOT".split())


def statement_keyword(sql: str) -> str:
    """The first keyword of a statement, after comments and opening parentheses."""
    rest = _LEADING_COMMENTS.sub("", sql).lstrip("( \t\r\n")
    match = re.match(r"[A-Za-z]+", rest)
    return match.group(0).upper() if match else ""


def _position(sql: str, word: str) -> str:
    at = sql.upper().find(word) if word else len(sql) - len(sql.lstrip())
    line = sql.count("\n", 0, max(at, 0)) + 1
    column = max(at, 0) - (sql.rfind("\n", 0, max(at, 0)) + 1) + 1
    return f"line {line}, column {column}"


def check_select_only(sql: str, dialect: str = "sqlite") -> None:
    """Refuse anything that is not a single SELECT or WITH statement of bounded size.

    DuckDB's ``FROM t`` shorthand is a query there. A first word that begins no statement is a
    syntax error with its position.

    Raises:
        QueryRefusedError: the statement is empty, too large (:class:`~ehrguard.errors.QueryTooLargeError`), or a
            syntax error at its first word.
        ReadOnlyViolationError: the statement writes, changes a setting or reaches outside the database.
    """
    if not sql or not sql.strip():
        raise QueryRefusedError("Empty SQL: pass one SELECT statement.")
    check_sql_size(sql)
    keyword = statement_keyword(sql)
    queries = {"SELECT", "WITH", "VALUES"} | ({"FROM"} if dialect == "duckdb" else set())
    if keyword in queries:
        return
    if keyword in _WRITES:
        raise ReadOnlyViolationError(
            f"Only SELECT/WITH queries may run here, not {keyword}: ehrguard databases are read-only."
        )
    if keyword in _NOT_QUERIES:
        raise QueryRefusedError(f"Only SELECT/WITH queries may run here, not {keyword}. Write it as a SELECT.")
    shown = keyword or sql.strip()[:20]
    raise QueryRefusedError(
        f"Syntax error at {_position(sql, keyword)}: {shown!r} does not begin a query. A query begins with SELECT or WITH."
    )


def isolation_default() -> bool:
    """Whether queries run in worker processes: the setting ``query_isolation``."""
    return setting("query_isolation") == "process"


class _Engine:
    """What the two engines share: the checks before a query runs, and where it runs (a worker or here)."""

    name: str
    path: Path
    dialect: str
    isolated: bool

    def execute(self, sql: str, *, timeout_s: float | None = None, max_rows: int | None = None) -> Result:
        """Run one SELECT under a time limit, a row cap and a byte cap.

        Raises:
            QueryRefusedError: not a single read-only statement, or too large.
            ConfigError: ``timeout_s`` or ``max_rows`` (or the setting used in its place) is out of bounds.
            QueryTimeoutError: ran past ``timeout_s`` (default: the setting ``query_timeout``).
            QueryResourceError: needed more memory than ``query_memory``.
            QueryExecutionError: the engine's own error (message kept).
        """
        check_select_only(sql, self.dialect)
        limits = QueryLimits.resolve(timeout_s, max_rows)
        if self.isolated:
            from ehrguard.db.worker import run_in_worker

            return run_in_worker(self.path, sql, limits)
        return self.execute_here(sql, limits)

    def execute_here(self, sql: str, limits: QueryLimits) -> Result:
        raise NotImplementedError


# ---------------------------------------------------------------------------- SQLite

_SQLITE_ALLOWED = {
    sqlite3.SQLITE_SELECT,
    sqlite3.SQLITE_READ,
    sqlite3.SQLITE_FUNCTION,
    getattr(sqlite3, "SQLITE_RECURSIVE", 33),
}
_SQLITE_DENIED_FUNCTIONS = {"load_extension", "readfile", "writefile", "edit", "fts3_tokenizer"}
# Pragmas that only describe the schema may be read as table-valued functions (pragma_table_info('t')).
# Others (database_list names server files) stay denied.
_SQLITE_SCHEMA_PRAGMAS = {"table_info", "table_xinfo", "table_list", "index_list", "index_info", "index_xinfo", "foreign_key_list"}
# The authorizer's action codes by name (only those: sqlite3's other constants share their numbers).
_SQLITE_ACTIONS = (
    "CREATE_INDEX CREATE_TABLE CREATE_TEMP_INDEX CREATE_TEMP_TABLE CREATE_TEMP_TRIGGER CREATE_TEMP_VIEW CREATE_TRIGGER CREATE_VIEW "
    "DELETE DROP_INDEX DROP_TABLE DROP_TEMP_INDEX DROP_TEMP_TABLE DROP_TEMP_TRIGGER DROP_TEMP_VIEW DROP_TRIGGER DROP_VIEW INSERT "
    "PRAGMA READ SELECT TRANSACTION UPDATE ATTACH DETACH ALTER_TABLE REINDEX ANALYZE CREATE_VTABLE DROP_VTABLE FUNCTION SAVEPOINT "
    "RECURSIVE"
).split()
_SQLITE_ACTION_NAMES = {getattr(sqlite3, f"SQLITE_{name}"): name.lower().replace("_", " ") for name in _SQLITE_ACTIONS
                        if hasattr(sqlite3, f"SQLITE_{name}")}
_SCHEMA_TABLES = {"sqlite_master", "sqlite_schema", "sqlite_temp_master"}


def _sqlite_heap_limit() -> None:
    """Cap SQLite's heap for the whole process at ``query_memory`` (a worker process only: the limit is global)."""
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute(f"PRAGMA hard_heap_limit = {int_setting('query_memory') << 20}")
    finally:
        conn.close()


class SQLiteDatabase(_Engine):
    """A read-only SQLite database file.

    Connections are per thread, so one object can serve a thread pool.
    """

    dialect = "sqlite"

    def __init__(self, path: str | Path, *, name: str | None = None, isolated: bool | None = None) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise DatabaseNotFoundError(
                f"No database file at {self.path}. Build one with: ehrguard db build NAME --out {self.path}"
            )
        self.name = name or self.path.stem
        self.isolated = isolation_default() if isolated is None else isolated
        self._local = threading.local()
        # Fail early and clearly on a file that is not SQLite.
        try:
            self._connection().execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.DatabaseError as exc:
            raise DatabaseError(f"{self.path} is not a readable SQLite database: {exc}") from exc

    def _connection(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            uri = f"file:{self.path.resolve().as_posix()}?mode=ro"
            conn = sqlite3.connect(uri, uri=True, check_same_thread=False)
            # The reference scorers decode text leniently; a bad byte must not fail a query.
            conn.text_factory = lambda b: b.decode(errors="ignore")
            conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, ENGINE_VALUE_BYTES)
            conn.setlimit(sqlite3.SQLITE_LIMIT_SQL_LENGTH, max(int_setting("max_sql_chars") * 4, 1 << 20))
            self._local.denied = []
            conn.set_authorizer(self._authorize)
            self._local.conn = conn
        return conn

    def _authorize(self, action: int, arg1: Any, arg2: Any, dbname: Any, source: Any) -> int:
        denied: list[str] = self._local.denied
        if action in _SQLITE_ALLOWED:
            if action == sqlite3.SQLITE_FUNCTION and str(arg2).lower() in _SQLITE_DENIED_FUNCTIONS:
                denied.append(f"function {arg2}()")
                return sqlite3.SQLITE_DENY
            return sqlite3.SQLITE_OK
        if action == sqlite3.SQLITE_PRAGMA and str(arg1).lower() in _SQLITE_SCHEMA_PRAGMAS:
            return sqlite3.SQLITE_OK
        # Reading a table-valued function (json_each) first loads its entry into the schema: no write
        # is possible on a mode=ro file, and every other update is denied.
        if action == sqlite3.SQLITE_UPDATE and str(arg1).lower() in _SCHEMA_TABLES and source is None and dbname == "main":
            return sqlite3.SQLITE_OK
        what = _SQLITE_ACTION_NAMES.get(action, f"action {action}")
        denied.append(f"{what} {arg1}" if action == sqlite3.SQLITE_PRAGMA else what)
        return sqlite3.SQLITE_DENY

    def execute_here(self, sql: str, limits: QueryLimits) -> Result:
        """Run one checked SELECT in this process (see :meth:`_Engine.execute`)."""
        conn = self._connection()
        deadline = time.monotonic() + limits.timeout_s
        conn.set_progress_handler(lambda: 1 if time.monotonic() > deadline else 0, 1000)
        self._local.denied = []
        started = time.perf_counter()
        try:
            cursor = conn.execute(sql)
            columns = [d[0] for d in cursor.description or ()]
            rows, reason = fetch_bounded(cursor.fetchmany, limits)
            cursor.close()
        except sqlite3.Warning as exc:  # "You can only execute one statement at a time."
            raise QueryRefusedError("Only one statement may run at a time; send the statements one by one.") from exc
        except sqlite3.ProgrammingError as exc:
            raise _sqlite_misuse(exc) from exc
        except MemoryError as exc:
            raise _memory_error() from exc
        except sqlite3.DatabaseError as exc:
            raise self._error(exc, deadline, limits) from exc
        finally:
            conn.set_progress_handler(None, 0)
        elapsed = time.perf_counter() - started
        return Result(columns=columns, rows=rows, truncated=bool(reason), elapsed_s=elapsed, truncated_reason=reason)

    def _error(self, exc: sqlite3.DatabaseError, deadline: float, limits: QueryLimits) -> DatabaseError:
        message = str(exc)
        if message == "interrupted" and time.monotonic() > deadline:
            return _timeout_error(limits.timeout_s)
        if "not authorized" in message or "prohibited" in message or "readonly" in message:
            what = ", ".join(dict.fromkeys(self._local.denied)) or "a write"
            return ReadOnlyViolationError(f"Refused by the read-only guard ({what}): {message}")
        code = getattr(exc, "sqlite_errorname", "")
        if code == "SQLITE_NOMEM" or (not code and "out of memory" in message):
            return _memory_error()
        if code == "SQLITE_TOOBIG" or (not code and "too big" in message):
            return QueryResourceError(
                f"A value in the query grew past {ENGINE_VALUE_BYTES >> 20} MiB and was stopped ({message}). Narrow the query."
            )
        return QueryExecutionError(message)

    def internal_connection(self) -> sqlite3.Connection:
        """A fresh read-only connection without the authorizer, for schema introspection only."""
        uri = f"file:{self.path.resolve().as_posix()}?mode=ro"
        return sqlite3.connect(uri, uri=True)

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None


def _sqlite_misuse(exc: sqlite3.ProgrammingError) -> QueryRefusedError:
    message = str(exc)
    if "null character" in message:
        return QueryRefusedError("The SQL contains a NUL character; remove it.")
    if "binding" in message:
        return QueryRefusedError("The query has parameters (?, :name, $1) and nothing binds them here: write the values into it.")
    if "one statement" in message:
        return QueryRefusedError("Only one statement may run at a time; send the statements one by one.")
    return QueryRefusedError(message)


def _timeout_error(timeout_s: float) -> QueryTimeoutError:
    return QueryTimeoutError(
        f"Query ran longer than {timeout_s:g} s and was stopped. Narrow it or raise the limit (--timeout / EHRGUARD_QUERY_TIMEOUT)."
    )


def _memory_error() -> QueryResourceError:
    return QueryResourceError(
        f"The query needed more memory than the limit ({int_setting('query_memory')} MiB) and was stopped. "
        "Narrow it or raise EHRGUARD_QUERY_MEMORY."
    )


# ---------------------------------------------------------------------------- DuckDB

# One connection per open DuckDB file in this process, shared by every handle: DuckDB refuses a
# second connection to a file with another configuration. Counted, closed with the last handle.
_DUCKDB: dict[Path, tuple[Any, int]] = {}
_DUCKDB_LOCK = threading.Lock()
_NESTED_TYPES = {"list", "struct", "map", "array", "union"}


def _duckdb_connect(path: Path) -> Any:
    import duckdb

    key = path.resolve()
    with _DUCKDB_LOCK:
        if key in _DUCKDB:
            conn, count = _DUCKDB[key]
            _DUCKDB[key] = (conn, count + 1)
            return conn
        try:
            conn = duckdb.connect(str(key), read_only=True, config={
                "enable_external_access": False, "autoinstall_known_extensions": False, "autoload_known_extensions": False,
                "memory_limit": f"{int_setting('query_memory')}MiB", "temp_directory": "",
                "threads": max(1, min(4, os.cpu_count() or 1)),
            })
            conn.execute("SET enable_progress_bar = false")  # it would print to stderr on every long query
            conn.execute("SET lock_configuration = true")
        except duckdb.Error as exc:
            raise DatabaseError(f"{path} is not a readable DuckDB database: {exc}") from exc
        _DUCKDB[key] = (conn, 1)
        return conn


def _duckdb_release(path: Path) -> None:
    key = path.resolve()
    with _DUCKDB_LOCK:
        if key not in _DUCKDB:
            return
        conn, count = _DUCKDB[key]
        if count > 1:
            _DUCKDB[key] = (conn, count - 1)
        else:
            del _DUCKDB[key]
            conn.close()


class DuckDBDatabase(_Engine):
    """A read-only DuckDB database file with external access disabled; handles of one file share one connection."""

    dialect = "duckdb"

    def __init__(self, path: str | Path, name: str = "", *, isolated: bool | None = None) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise DatabaseNotFoundError(
                f"No database file at {self.path}. Build one with: ehrguard db build mimic_iv_raw --out {self.path}"
            )
        self.name = name or self.path.stem
        self.isolated = isolation_default() if isolated is None else isolated
        self._conn: Any = _duckdb_connect(self.path)

    def execute_here(self, sql: str, limits: QueryLimits) -> Result:
        """Run one checked SELECT in this process (see :meth:`_Engine.execute`), on a cursor of the shared connection."""
        import duckdb

        if self._conn is None:
            raise DatabaseError(f"The database {self.path} is closed.")
        conn = self._conn.cursor()
        timed_out = threading.Event()

        def stop() -> None:
            timed_out.set()
            conn.interrupt()

        timer = threading.Timer(limits.timeout_s, stop)
        started = time.perf_counter()
        timer.start()
        try:
            statements = conn.extract_statements(sql)
            if len(statements) != 1:
                raise QueryRefusedError(f"Only one statement may run at a time; got {len(statements)}. Send them one by one.")
            if _DUCKDB_SETTINGS.search(re.sub(r"'(?:[^']|'')*'", "''", sql)):  # the engine's configuration names the server's files
                raise QueryRefusedError("The engine's settings are not readable here; query the records.")
            if statements[0].type != duckdb.StatementType.SELECT:
                raise ReadOnlyViolationError(f"Only SELECT queries may run here, not {statements[0].type.name}.")
            relation = conn.sql(sql)  # binds the query (no rows yet): its columns and their types
            columns = list(relation.columns)
            conn.execute(_bounded_columns(sql, relation.types, limits))
            rows, reason = fetch_bounded(conn.fetchmany, limits)
        except MemoryError as exc:
            raise _memory_error() from exc
        except duckdb.Error as exc:
            raise _duckdb_error(exc, timed_out.is_set(), limits) from exc
        finally:
            timer.cancel()
            conn.close()
        elapsed = time.perf_counter() - started
        return Result(columns=columns, rows=rows, truncated=bool(reason), elapsed_s=elapsed, truncated_reason=reason)

    def internal_connection(self) -> Any:
        if self._conn is None:
            raise DatabaseError(f"The database {self.path} is closed.")
        return self._conn.cursor()

    def close(self) -> None:
        if self._conn is not None:
            self._conn = None
            _duckdb_release(self.path)


def _bounded_columns(sql: str, types: list[Any], limits: QueryLimits) -> str:
    """The query with text and blob columns cut past the value cap and nested values read as capped text,
    so no value larger than the cap is copied out of DuckDB (the plain query when no column needs it)."""
    keep = limits.max_value_bytes + 1
    exprs = []
    for i, kind in enumerate(types):
        ref = f"#{i + 1}"
        if kind.id in _NESTED_TYPES:
            exprs.append(f"left(CAST({ref} AS VARCHAR), {keep})")
        elif kind.id == "varchar":
            exprs.append(f"left({ref}, {keep})")
        else:  # numbers, dates, blobs (cut when fetched: DuckDB has no substring of a blob)
            exprs.append(ref)
    if all(e.startswith("#") for e in exprs):
        return sql
    return f"SELECT {', '.join(exprs)} FROM (\n{statement_body(sql)}\n) AS bounded"


_DUCKDB_SETTINGS = re.compile(r"\b(?:duckdb_settings|current_setting)\s*\(", re.IGNORECASE)


def _duckdb_error(exc: Exception, timed_out: bool, limits: QueryLimits) -> DatabaseError:
    import duckdb

    message = str(exc).replace(str(Path.home()), "~")  # the server's home (and whose it is) is none of the caller's business
    lowered = message.lower()
    if timed_out:
        return _timeout_error(limits.timeout_s)
    if isinstance(exc, duckdb.OutOfMemoryException) or "out of memory" in lowered:
        return _memory_error()
    if "read-only" in lowered or "external access" in lowered or "permission error" in lowered or "disabled by configuration" in lowered:
        return ReadOnlyViolationError(f"Refused by the read-only guard: {message}")
    return QueryExecutionError(message)


def open_database(path: str | Path, *, name: str | None = None, isolated: bool | None = None) -> Database:
    """Open a built database read-only, choosing the engine from the file's header (a ``.postgres`` link file:
    the PostgreSQL database it names, see :func:`write_link`).

    ``isolated``: run queries in worker processes (None: the setting ``query_isolation``).

    Examples:
        >>> db = open_database("mimic_iv.sqlite")  # doctest: +SKIP
        >>> db.execute("SELECT count(*) FROM patients").rows  # doctest: +SKIP
        [(100,)]
    """
    p = Path(path)
    if not p.is_file():
        raise DatabaseNotFoundError(f"No database file at {p}. Build one with: ehrguard db build NAME --out {p}")
    if p.suffix == LINK_SUFFIX:
        from ehrguard.db.postgres import PostgresDatabase

        return PostgresDatabase(read_link(p).url, name=name or p.stem)
    with p.open("rb") as fh:
        header = fh.read(16)
    if header.startswith(b"SQLite format 3"):
        return SQLiteDatabase(p, name=name, isolated=isolated)
    if p.suffix in {".duckdb", ".ddb"} or b"DUCK" in _duckdb_magic(p):
        return DuckDBDatabase(p, name=name or p.stem, isolated=isolated)
    raise DatabaseError(f"{p} is neither a SQLite nor a DuckDB database file.")


def _duckdb_magic(p: Path) -> bytes:
    with p.open("rb") as fh:
        fh.seek(8)
        return fh.read(4)


def connect_database(target: str | Path, *, isolated: bool | None = None) -> Database:
    """An open database from a ``postgresql://`` URL, a file, or the name of a built database."""
    from ehrguard.db.postgres import PostgresDatabase, is_postgres_url

    if is_postgres_url(target):
        return PostgresDatabase(str(target))
    return open_database(locate_database(target), isolated=isolated)


def locate_database(name_or_path: str | Path) -> Path:
    """A database file from a path, or from a name looked up in ``$EHRGUARD_DB_DIR``.

    Raises:
        DatabaseNotFoundError: neither a file nor a built database of that name.
    """
    from ehrguard.config import db_dir

    p = Path(name_or_path).expanduser()
    if _is_file(p):
        return p
    built = _built(str(name_or_path))
    if built is not None:
        return built
    raise DatabaseNotFoundError(f"No database {str(name_or_path)!r}: {_missing_why(p)}, and not built in {db_dir()}. {_build_hint(p)}")


def _missing_why(p: Path) -> str:
    return "a folder, not a database file" if p.is_dir() and str(p) not in ("", ".") else "not a file"


def _build_hint(p: Path) -> str:
    """How to get the database: its build command when the name is one a builder makes, else where databases come from."""
    from ehrguard.config import db_dir
    from ehrguard.db.builders import BUILDERS
    from ehrguard.profiles import PROFILES

    known = sorted(BUILDERS.names())
    if p.stem in known:
        built = PROFILES[p.stem].file_name if p.stem in PROFILES and PROFILES[p.stem].file_name else p.stem + ".sqlite"
        return f"Build it with: ehrguard db build {p.stem} --out {db_dir() / built}"
    return (f"Give the path of a SQLite or DuckDB file, a postgresql:// URL, or the name of a built database "
            f"(ehrguard db list; ehrguard db build NAME builds one of: {', '.join(known)}).")


LINK_SUFFIX = ".postgres"
DB_SUFFIXES = (".sqlite", ".duckdb", LINK_SUFFIX)
MAX_NAME = 128  # longer names cannot be files on most file systems


def _built(name: str) -> Path | None:
    from ehrguard.config import db_dir

    for suffix in DB_SUFFIXES:
        candidate = db_dir() / f"{name}{suffix}"
        if _is_file(candidate):
            return candidate
    return None


def _is_file(path: Path) -> bool:
    """Whether ``path`` is a file; False for a name the file system cannot hold (too long, a NUL byte)."""
    try:
        return path.is_file()
    except (OSError, ValueError):
        return False


def built_databases() -> list[Path]:
    """The database files in ``$EHRGUARD_DB_DIR``, by name."""
    from ehrguard.config import db_dir

    folder = db_dir()
    return sorted(p for p in folder.glob("*") if p.suffix in DB_SUFFIXES) if folder.is_dir() else []


def _looks_like_path(name: str) -> bool:
    return not name or any(c in name for c in "/\\") or name.startswith(".")


def _fits_a_file_name(name: str) -> bool:
    return len(name) <= MAX_NAME and name.isprintable()


def named_database(name: str) -> Path:
    """A built database by its name only, for callers over a network (REST, MCP), who never name a server file.

    Raises:
        DatabaseNameError: ``name`` looks like a path.
        DatabaseNotFoundError: no built database of that name.
    """
    if _looks_like_path(name):
        raise DatabaseNameError(f"Name a built database (see the list of databases), not a path: {name!r}.")
    if not _fits_a_file_name(name):
        raise DatabaseNameError(f"No database has a name like that ({len(name)} characters); see the list of databases.")
    path = _built(name)
    if path is None:
        raise DatabaseNotFoundError(f"No database named {name!r} on this server (see the list of databases).")
    return path


@dataclass(frozen=True)
class Link:
    """A PostgreSQL database named in ``$EHRGUARD_DB_DIR`` (``NAME.postgres``), so that the server, MCP, the benchmarks
    and every ``--db NAME`` reach it by name like a built file; ``profile`` fixes its conventions (None: detected)."""

    url: str
    profile: str | None = None


def read_link(path: str | Path) -> Link:
    """The link in a ``.postgres`` file (TOML: ``url = "postgresql://..."``, optional ``profile = "..."``).

    Raises:
        DatabaseError: the file is not a readable link.
    """
    import tomllib

    from ehrguard.db.postgres import is_postgres_url

    p = Path(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise DatabaseError(f"{p} is not a readable database link ({exc}); write it again with: ehrguard db link {p.stem} URL") from None
    url, profile = data.get("url"), data.get("profile")
    if not is_postgres_url(url) or not (profile is None or isinstance(profile, str)):
        raise DatabaseError(f"{p} names no postgresql:// URL; write it again with: ehrguard db link {p.stem} URL")
    return Link(str(url), profile)


def write_link(name: str, link: Link) -> Path:
    """Write ``$EHRGUARD_DB_DIR/NAME.postgres`` (readable by its owner only: the URL may carry a password)."""
    import json

    from ehrguard.config import db_dir

    if _looks_like_path(name) or not _fits_a_file_name(name):
        raise DatabaseNameError(f"A link's name is a plain name (letters, digits, '_'), not {name!r}.")
    folder = db_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}{LINK_SUFFIX}"
    lines = [f"url = {json.dumps(link.url)}"] + ([f"profile = {json.dumps(link.profile)}"] if link.profile else [])
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")
    os.chmod(path, 0o600)
    return path
