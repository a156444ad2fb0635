"""Safe, read-only execution on SQLite and DuckDB: the one path every query takes.

Safety is enforced by the engines themselves, not by inspecting SQL text:

* SQLite opens the file with a ``mode=ro`` URI and installs an authorizer that allows
  only reads; ATTACH, PRAGMA, writes, schema changes and ``load_extension`` are denied.
  A progress handler stops a query at its wall-clock limit (datasette's
  ``sqlite_timelimit`` technique).
* DuckDB opens with ``read_only=True`` and external access disabled (no files, no
  HTTP, no extensions), then locks its configuration; a timer calls ``interrupt()``.

A query must be a single ``SELECT``/``WITH`` statement. Anything else raises a
:class:`~ehrguard.errors.QueryRefusedError` before the engine runs it.
"""

from __future__ import annotations

import re
import sqlite3
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ehrguard.config import SETTINGS, float_setting, int_setting
from ehrguard.errors import (
    DatabaseError,
    DatabaseNameError,
    DatabaseNotFoundError,
    QueryExecutionError,
    QueryRefusedError,
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
    return (float_setting("query_timeout", timeout_s, source="timeout_s"), int_setting("max_rows", max_rows, source="max_rows"))


@dataclass
class Result:
    """Rows of one executed query, with the column names and whether the row cap cut it."""

    columns: list[str]
    rows: list[tuple[Any, ...]]
    truncated: bool = False
    elapsed_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "columns": self.columns,
            "rows": [list(r) for r in self.rows],
            "row_count": len(self.rows),
            "truncated": self.truncated,
            "elapsed_s": round(self.elapsed_s, 6),
        }


class Database(Protocol):
    """What every database backend offers."""

    name: str
    path: Path
    dialect: str

    def execute(self, sql: str, *, timeout_s: float | None = None, max_rows: int | None = None) -> Result: ...

    def close(self) -> None: ...


_LEADING_COMMENTS = re.compile(r"^\s*(?:(?:--[^\n]*\n?)|(?:/\*.*?\*/)|\s)*", re.DOTALL)


def statement_keyword(sql: str) -> str:
    """The first keyword of a statement, after comments and opening parentheses."""
    rest = _LEADING_COMMENTS.sub("", sql).lstrip("( \t\r\n")
    match = re.match(r"[A-Za-z]+", rest)
    return match.group(0).upper() if match else ""


def check_select_only(sql: str) -> None:
    """Refuse anything that is not a single SELECT or WITH statement.

    Raises:
        QueryRefusedError: the statement is empty, several statements, or not a query.
    """
    if not sql or not sql.strip():
        raise QueryRefusedError("Empty SQL: pass one SELECT statement.")
    keyword = statement_keyword(sql)
    if keyword not in {"SELECT", "WITH", "VALUES"}:
        raise ReadOnlyViolationError(
            f"Only SELECT/WITH queries may run here, not {keyword or 'this statement'}. "
            "ehrguard databases are read-only."
        )


# ---------------------------------------------------------------------------- SQLite

_SQLITE_ALLOWED = {
    sqlite3.SQLITE_SELECT,
    sqlite3.SQLITE_READ,
    sqlite3.SQLITE_FUNCTION,
    getattr(sqlite3, "SQLITE_RECURSIVE", 33),
}
_SQLITE_DENIED_FUNCTIONS = {"load_extension", "readfile", "writefile", "edit", "fts3_tokenizer"}
_SQLITE_ACTION_NAMES = {
    getattr(sqlite3, name): name[len("SQLITE_") :].lower()
    for name in dir(sqlite3)
    if name.startswith("SQLITE_") and isinstance(getattr(sqlite3, name), int) and name != "SQLITE_OK"
}


class SQLiteDatabase:
    """A read-only SQLite database file.

    Connections are per thread, so one object can serve a thread pool.
    """

    dialect = "sqlite"

    def __init__(self, path: str | Path, *, name: str | None = None) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise DatabaseNotFoundError(
                f"No database file at {self.path}. Build one with: ehrguard db build NAME --out {self.path}"
            )
        self.name = name or self.path.stem
        self._local = threading.local()
        self._denied: list[str] = []
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
            conn.set_authorizer(self._authorize)
            self._local.conn = conn
        return conn

    def _authorize(self, action: int, arg1: Any, arg2: Any, dbname: Any, source: Any) -> int:
        if action in _SQLITE_ALLOWED:
            if action == sqlite3.SQLITE_FUNCTION and str(arg2).lower() in _SQLITE_DENIED_FUNCTIONS:
                self._denied.append(f"function {arg2}()")
                return sqlite3.SQLITE_DENY
            return sqlite3.SQLITE_OK
        self._denied.append(_SQLITE_ACTION_NAMES.get(action, str(action)))
        return sqlite3.SQLITE_DENY

    def execute(self, sql: str, *, timeout_s: float | None = None, max_rows: int | None = None) -> Result:
        """Run one SELECT under a time limit and row cap.

        Raises:
            QueryRefusedError: not a single read-only statement.
            ConfigError: ``timeout_s`` or ``max_rows`` (or the setting used in its place) is out of bounds.
            QueryTimeoutError: ran past ``timeout_s`` (default: the setting ``query_timeout``).
            QueryExecutionError: the engine's own error (message kept).
        """
        check_select_only(sql)
        timeout_s, max_rows = query_limits(timeout_s, max_rows)
        conn = self._connection()
        deadline = time.monotonic() + timeout_s
        conn.set_progress_handler(lambda: 1 if time.monotonic() > deadline else 0, 1000)
        self._denied = []
        started = time.perf_counter()
        try:
            cursor = conn.execute(sql)
            rows = cursor.fetchmany(max_rows + 1)
            columns = [d[0] for d in cursor.description or ()]
            cursor.close()
        except sqlite3.Warning as exc:  # "You can only execute one statement at a time."
            raise QueryRefusedError(f"Only one statement may run at a time: {exc}") from exc
        except sqlite3.ProgrammingError as exc:
            raise QueryRefusedError(f"Only one statement may run at a time: {exc}") from exc
        except sqlite3.DatabaseError as exc:
            message = str(exc)
            if message == "interrupted" and time.monotonic() > deadline:
                raise QueryTimeoutError(
                    f"Query ran longer than {timeout_s:g} s and was stopped. "
                    "Narrow it or raise the limit (--timeout / EHRGUARD_QUERY_TIMEOUT)."
                ) from exc
            if "not authorized" in message or "prohibited" in message or "readonly" in message:
                what = ", ".join(dict.fromkeys(self._denied)) or "a write"
                raise ReadOnlyViolationError(f"Refused by the read-only guard ({what}): {message}") from exc
            raise QueryExecutionError(message) from exc
        finally:
            conn.set_progress_handler(None, 0)
        elapsed = time.perf_counter() - started
        truncated = len(rows) > max_rows
        return Result(columns=columns, rows=rows[:max_rows], truncated=truncated, elapsed_s=elapsed)

    def internal_connection(self) -> sqlite3.Connection:
        """A fresh read-only connection without the authorizer, for schema introspection only."""
        uri = f"file:{self.path.resolve().as_posix()}?mode=ro"
        return sqlite3.connect(uri, uri=True)

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None


# ---------------------------------------------------------------------------- DuckDB


@dataclass
class DuckDBDatabase:
    """A read-only DuckDB database file with external access disabled."""

    path: Path
    name: str = ""
    dialect: str = "duckdb"
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _conn: Any = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.path = Path(self.path)
        if not self.path.is_file():
            raise DatabaseNotFoundError(
                f"No database file at {self.path}. Build one with: ehrguard db build mimic_iv_raw --out {self.path}"
            )
        self.name = self.name or self.path.stem
        import duckdb

        try:
            conn = duckdb.connect(
                str(self.path), read_only=True, config={"enable_external_access": False, "autoinstall_known_extensions": False}
            )
            conn.execute("SET lock_configuration = true")
        except duckdb.Error as exc:
            raise DatabaseError(f"{self.path} is not a readable DuckDB database: {exc}") from exc
        self._conn = conn

    def execute(self, sql: str, *, timeout_s: float | None = None, max_rows: int | None = None) -> Result:
        """Run one SELECT under a time limit and row cap (see :meth:`SQLiteDatabase.execute`)."""
        import duckdb

        check_select_only(sql)
        timeout_s, max_rows = query_limits(timeout_s, max_rows)
        with self._lock:
            conn = self._conn.cursor()
            try:
                statements = conn.extract_statements(sql)
            except duckdb.Error as exc:
                raise QueryExecutionError(str(exc)) from exc
            if len(statements) != 1:
                raise QueryRefusedError(f"Only one statement may run at a time; got {len(statements)}.")
            kind = statements[0].type
            if kind != duckdb.StatementType.SELECT:
                raise ReadOnlyViolationError(f"Only SELECT queries may run here, not {kind.name}.")
            timed_out = threading.Event()

            def stop() -> None:
                timed_out.set()
                conn.interrupt()

            timer = threading.Timer(timeout_s, stop)
            started = time.perf_counter()
            timer.start()
            try:
                conn.execute(sql)
                columns = [d[0] for d in conn.description or ()]
                rows = conn.fetchmany(max_rows + 1)
            except duckdb.Error as exc:
                if timed_out.is_set():
                    raise QueryTimeoutError(f"Query ran longer than {timeout_s:g} s and was stopped.") from exc
                message = str(exc)
                if "read-only" in message.lower() or "external access" in message.lower():
                    raise ReadOnlyViolationError(message) from exc
                raise QueryExecutionError(message) from exc
            finally:
                timer.cancel()
                conn.close()
        elapsed = time.perf_counter() - started
        return Result(columns=columns, rows=[tuple(r) for r in rows[:max_rows]], truncated=len(rows) > max_rows, elapsed_s=elapsed)

    def internal_connection(self) -> Any:
        return self._conn.cursor()

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def open_database(path: str | Path, *, name: str | None = None) -> SQLiteDatabase | DuckDBDatabase:
    """Open a built database read-only, choosing the engine from the file's header.

    Examples:
        >>> db = open_database("mimic_iv.sqlite")  # doctest: +SKIP
        >>> db.execute("SELECT count(*) FROM patients").rows  # doctest: +SKIP
        [(100,)]
    """
    p = Path(path)
    if not p.is_file():
        raise DatabaseNotFoundError(f"No database file at {p}. Build one with: ehrguard db build NAME --out {p}")
    with p.open("rb") as fh:
        header = fh.read(16)
    if header.startswith(b"SQLite format 3"):
        return SQLiteDatabase(p, name=name)
    if p.suffix in {".duckdb", ".ddb"} or b"DUCK" in _duckdb_magic(p):
        return DuckDBDatabase(p, name=name or p.stem)
    raise DatabaseError(f"{p} is neither a SQLite nor a DuckDB database file.")


def _duckdb_magic(p: Path) -> bytes:
    with p.open("rb") as fh:
        fh.seek(8)
        return fh.read(4)


def locate_database(name_or_path: str | Path) -> Path:
    """A database file from a path, or from a name looked up in ``$EHRGUARD_DB_DIR``.

    Raises:
        DatabaseNotFoundError: neither a file nor a built database of that name.
    """
    from ehrguard.config import db_dir

    p = Path(name_or_path).expanduser()
    if p.is_file():
        return p
    built = _built(str(name_or_path))
    if built is not None:
        return built
    raise DatabaseNotFoundError(
        f"No database {str(name_or_path)!r}: not a file, and not built in {db_dir()}. "
        f"Build it with: ehrguard db build {p.stem} --out {db_dir() / (p.stem + '.sqlite')}"
    )


DB_SUFFIXES = (".sqlite", ".duckdb")


def _built(name: str) -> Path | None:
    from ehrguard.config import db_dir

    for suffix in DB_SUFFIXES:
        candidate = db_dir() / f"{name}{suffix}"
        if candidate.is_file():
            return candidate
    return None


def built_databases() -> list[Path]:
    """The database files in ``$EHRGUARD_DB_DIR``, by name."""
    from ehrguard.config import db_dir

    folder = db_dir()
    return sorted(p for p in folder.glob("*") if p.suffix in DB_SUFFIXES) if folder.is_dir() else []


def named_database(name: str) -> Path:
    """A built database by its name only, for callers over a network (REST, MCP), who never name a server file.

    Raises:
        DatabaseNameError: ``name`` looks like a path.
        DatabaseNotFoundError: no built database of that name.
    """
    if not name or any(c in name for c in "/\\") or name.startswith("."):
        raise DatabaseNameError(f"Name a built database (see the list of databases), not a path: {name!r}.")
    path = _built(name)
    if path is None:
        raise DatabaseNotFoundError(f"No database named {name!r} on this server (see the list of databases).")
    return path
