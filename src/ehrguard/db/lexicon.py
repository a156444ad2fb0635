"""A database's value lexicon: the distinct values of its name columns, indexed once and kept next to the file.

The checks ask which drug names, lab and item labels or diagnosis titles (~200,000 values on
the MIMIC-IV demo) a question names. Reading them all from the database costs seconds, and
holding them in memory costs tens of megabytes. ``ehrguard db build`` (or ``ehrguard db lexicon
--db FILE`` for a database built elsewhere) writes them to ``<file>.lexicon`` beside the
database: a small SQLite file with every value, in the order the database returns them, and two
64-bit hashes of it (of its :func:`normal_form` and of its lower-cased text), each indexed. A
check looks up the phrases of one question (a few hundred) instead of loading the values, so
the first verification reads a few pages, not the whole lexicon.

The file records the database's fingerprint (size, modification time and SHA-256); a lexicon
whose fingerprint does not match its database is stale and ignored: the values are then
queried from the database as before, and ``ehrguard doctor`` says how to rebuild it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sqlite3
import tempfile
import threading
from collections.abc import Collection, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ehrguard.db.engine import LINK_SUFFIX
from ehrguard.errors import DatabaseError
from ehrguard.runtime import file_sha256

FORMAT = 3
SUFFIX = ".lexicon"
MAX_DISTINCT = 500_000  # as the value index: a column with more distinct values is free text, not names
_BATCH = 500  # hashes per lookup query (below SQLite's smallest limit on bound parameters)
# The lexicon is read through a memory map: its pages come from the operating system's file cache, shared by every
# connection and process, so a new server's first lookups are as fast as a running one's (through SQLite's own page
# cache, each connection starts cold: 11 ms more on the first question measured on the demo MIMIC-IV). Safe here as
# it is not for a database in general: a lexicon is only ever replaced whole (os.replace), never changed in place.
_MAP_BYTES = 1 << 30

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE columns (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, distinct_values INTEGER NOT NULL,
                      complete INTEGER NOT NULL);
CREATE TABLE vals (col INTEGER NOT NULL, pos INTEGER NOT NULL, value TEXT NOT NULL, normal_key INTEGER NOT NULL,
                   lower_key INTEGER NOT NULL, PRIMARY KEY (col, pos)) WITHOUT ROWID;
"""
_INDEXES = """
CREATE INDEX vals_by_normal ON vals (normal_key);
CREATE INDEX vals_by_lower ON vals (lower_key);
"""

# Every ASCII character that is not a lower-case letter or a digit, as a space: normal_form by str.translate.
_SPACES = str.maketrans({chr(i): " " for i in range(128) if not (chr(i).isdigit() or "a" <= chr(i) <= "z")})
_WORD = re.compile(r"[a-z0-9]+")


def normal_form(text: str) -> str:
    """A value or a phrase as its lower-case words and digits, one space apart: ``'Heparin (Porcine)'`` -> ``'heparin porcine'``."""
    return " ".join(_WORD.findall(text.lower()))


def normal_forms(values: Iterable[str]) -> list[str]:
    """:func:`normal_form` of every value (a column can hold 100,000 names): by translation, and by the regular
    expression only for the few values with characters beyond ASCII."""
    out = []
    for v in values:
        low = v.lower()
        out.append(" ".join(low.translate(_SPACES).split()) if low.isascii() else normal_form(v))
    return out


def lower_form(value: str) -> str:
    """A value as the forms compare it: lower case, without surrounding spaces."""
    return value.lower().strip()


def phrase_key(text: str) -> int:
    """The 64-bit key the lexicon indexes a normal or lower form under (a hash; hits are compared in full)."""
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big", signed=True)


def lexicon_path(db_path: str | Path) -> Path:
    """Beside the database file (a symbolic link's target: the lexicon belongs to the file, not to one of its names)."""
    p = Path(db_path).resolve()
    return p.with_name(p.name + SUFFIX)


def fingerprint(db_path: Path) -> dict[str, Any]:
    st = db_path.stat()
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": file_sha256(db_path)}


def build_lexicon(db: Any, columns: list[tuple[str, str]], *, timeout_s: float = 600) -> Path:
    """Write the lexicon of ``columns`` (table, column) of the open database ``db`` beside its file, atomically
    (``timeout_s``: for reading each column)."""
    from ehrguard.db.schema import read_schema

    schema = read_schema(db)
    out = lexicon_path(db.path)
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", dir=out.parent)
    os.close(fd)
    try:
        conn = sqlite3.connect(tmp)
        try:
            conn.execute("PRAGMA journal_mode = OFF")
            conn.executescript(_SCHEMA)
            for table, column in columns:
                t = schema.table(table)
                c = t.column(column) if t else None
                if t is None or c is None:
                    continue
                result = db.execute(f'SELECT DISTINCT CAST("{c.name}" AS TEXT) FROM {t.qualified_name} WHERE "{c.name}" IS NOT NULL',
                                    max_rows=MAX_DISTINCT, timeout_s=timeout_s)
                found = [] if result.truncated else [r[0] for r in result.rows]
                cur = conn.execute("INSERT INTO columns (name, distinct_values, complete) VALUES (?, ?, ?)",
                                   (f"{table.lower()}.{column.lower()}", len(found), int(not result.truncated)))
                conn.executemany("INSERT INTO vals VALUES (?, ?, ?, ?, ?)",
                                 ((cur.lastrowid, i, v, phrase_key(n), phrase_key(lower_form(v)))
                                  for i, (v, n) in enumerate(zip(found, normal_forms(found), strict=True))))
            conn.executescript(_INDEXES)
            conn.executemany("INSERT INTO meta VALUES (?, ?)",
                             [("format", str(FORMAT)), ("database", json.dumps(fingerprint(db.path), sort_keys=True))])
            conn.commit()
        finally:
            conn.close()
        os.chmod(tmp, db.path.stat().st_mode & 0o666)  # readable by whoever may read the database (mkstemp makes it 0600)
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return out


class Lexicon:
    """An open, current lexicon file, read-only. Thread-safe (one connection behind a lock; lookups take microseconds)."""

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self._conn = conn
        self.path = path
        self._lock = threading.Lock()
        self._columns: dict[str, tuple[int, int, bool]] = {
            name: (cid, n, bool(complete)) for cid, name, n, complete in
            conn.execute("SELECT id, name, distinct_values, complete FROM columns")}

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def has(self, name: str) -> bool:
        """Does the lexicon hold ``table.column`` (lower case)?"""
        return name in self._columns

    def complete(self, name: str) -> bool:
        """Were all of the column's values kept (False: it has too many to be names)?"""
        return self._columns[name][2]

    def distinct_count(self, name: str) -> int:
        return self._columns[name][1] if self.complete(name) else 0

    def _damaged(self, exc: sqlite3.Error) -> DatabaseError:
        db = self.path.with_name(self.path.name.removesuffix(SUFFIX))
        return DatabaseError(f"The value lexicon {self.path} cannot be read ({exc}); the values are read from the database. "
                             f"Rebuild it: ehrguard db lexicon --db {db}")

    def values(self, name: str) -> list[str]:
        """Every value of a column the lexicon holds, in the order the database returned them.

        Raises:
            DatabaseError: the file cannot be read (damaged).
        """
        with self._lock, _reading(self):
            return [v for (v,) in self._conn.execute("SELECT value FROM vals WHERE col = ? ORDER BY pos", (self._columns[name][0],))]

    def find(self, names: Collection[str], keys: Collection[str], *, by: str) -> dict[str, dict[str, str]]:
        """For each column of ``names`` the lexicon holds: the ``keys`` some of its values have, with the first such
        value; ``by`` is ``"normal"`` (keys are :func:`normal_form`) or ``"lower"`` (keys are :func:`lower_form`).

        Raises:
            DatabaseError: the file cannot be read (damaged).
        """
        ids = {self._columns[n][0]: n for n in names if n in self._columns}
        out: dict[str, dict[str, str]] = {n: {} for n in ids.values()}
        wanted: dict[int, set[str]] = {}
        for k in keys:
            wanted.setdefault(phrase_key(k), set()).add(k)
        if not ids or not wanted:
            return out
        column, form = ("normal_key", lambda v: normal_forms((v,))[0]) if by == "normal" else ("lower_key", lower_form)
        hashes = list(wanted)
        rows = []
        with self._lock, _reading(self):
            for start in range(0, len(hashes), _BATCH):
                batch = hashes[start : start + _BATCH]
                # "+col": look rows up by their hash; an index on the column would make SQLite read all of its rows
                rows += self._conn.execute(
                    f"SELECT col, pos, value, {column} FROM vals WHERE {column} IN ({', '.join('?' * len(batch))})"
                    f" AND +col IN ({', '.join('?' * len(ids))})", (*batch, *ids)).fetchall()
        for col, _, value, h in sorted(rows, key=lambda r: (r[0], r[1])):
            k = form(value)
            if k in wanted[h]:  # the same text, not another one with the same hash
                out[ids[col]].setdefault(k, value)
        return out


@contextmanager
def _reading(lexicon: Lexicon) -> Iterator[None]:
    try:
        yield
    except sqlite3.Error as exc:
        raise lexicon._damaged(exc) from exc


def load_lexicon(db_path: str | Path) -> Lexicon | None:
    """The database's lexicon, open; None when there is none for this version of the file (or it cannot be read)."""
    db = Path(db_path)
    path = lexicon_path(db)
    if not path.is_file():
        return None
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, check_same_thread=False)
        conn.execute(f"PRAGMA mmap_size = {_MAP_BYTES}")
    except sqlite3.Error:
        return None
    try:
        meta, recorded = _database_record(conn)
        st = db.stat()
        current = (meta.get("format") == str(FORMAT) and recorded["size"] == st.st_size
                   # the modification time vouches for the checksum; a copied or touched file is checked in full
                   and (recorded["mtime_ns"] == st.st_mtime_ns or recorded["sha256"] == file_sha256(db)))
        if current:
            return Lexicon(conn, path)
    except (sqlite3.Error, OSError, KeyError, TypeError, ValueError):
        pass
    conn.close()
    return None


def _database_record(conn: sqlite3.Connection) -> tuple[dict[str, Any], dict[str, Any]]:
    """A lexicon's meta table, and in it the record of the database file it was built from (size, mtime_ns, sha256)."""
    meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
    return meta, json.loads(meta["database"])


def recorded_checksum(db_path: str | Path) -> str | None:
    """The database file's SHA-256 as its lexicon recorded it, when the file's size and modification time still match
    (hashing a full MIMIC-IV file anew takes tens of seconds); None otherwise."""
    path = lexicon_path(db_path)
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error:
        return None
    try:
        _, recorded = _database_record(conn)
        st = Path(db_path).stat()
        if recorded["size"] == st.st_size and recorded["mtime_ns"] == st.st_mtime_ns:
            return str(recorded["sha256"])
    except (sqlite3.Error, OSError, KeyError, TypeError, ValueError):
        pass
    finally:
        conn.close()
    return None


def lexicon_state(db_path: str | Path, value_columns: Collection[str] | None = None) -> str:
    """``ok``, ``missing`` or ``stale`` (built for another version of the file, or unreadable); ``not needed`` when
    ``value_columns`` (the database profile's) is given and empty; ``in memory`` for a PostgreSQL link."""
    if Path(db_path).suffix == LINK_SUFFIX:
        return "in memory"  # a PostgreSQL server's values are indexed when first needed, not from a file
    if value_columns is not None and not value_columns:
        return "not needed"
    lexicon = load_lexicon(db_path)
    if lexicon is not None:
        lexicon.close()
        return "ok"
    return "missing" if not lexicon_path(db_path).is_file() else "stale"
