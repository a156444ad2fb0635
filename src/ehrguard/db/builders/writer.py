"""Table definitions and atomic output shared by the builders."""

from __future__ import annotations

import os
import sqlite3
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ehrguard.errors import BuildError


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    not_null: bool = False
    primary_key: bool = False
    unique: bool = False

    def ddl(self) -> str:
        parts = [f"    {self.name} {self.type}"]
        if self.not_null:
            parts.append("NOT NULL")
        if self.primary_key:
            parts.append("PRIMARY KEY")
        if self.unique:
            parts.append("UNIQUE")
        return " ".join(parts)


@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[Column, ...]
    foreign_keys: tuple[tuple[str, str, str], ...] = field(default=())

    @property
    def column_names(self) -> list[str]:
        return [c.name for c in self.columns]

    def ddl(self) -> str:
        lines = [c.ddl() for c in self.columns]
        lines += [f"    FOREIGN KEY({col}) REFERENCES {table}({ref})" for col, table, ref in self.foreign_keys]
        return f"CREATE TABLE {self.name}\n(\n" + ",\n".join(lines) + "\n)"


def col(spec: str) -> Column:
    """Parse a compact column spec: ``"row_id INT pk"``, ``"label VARCHAR(200) nn"``, ``"hadm_id INT nn uq"``."""
    name, type_, *flags = spec.split()
    return Column(name, type_, not_null="nn" in flags or "pk" in flags, primary_key="pk" in flags, unique="uq" in flags)


def table(name: str, specs: Sequence[str], fks: Sequence[str] = ()) -> Table:
    """Build a :class:`Table` from column specs and ``"col -> table.col"`` foreign keys."""
    foreign = []
    for fk in fks:
        left, right = (s.strip() for s in fk.split("->"))
        ref_table, ref_col = right.split(".")
        foreign.append((left, ref_table, ref_col))
    return Table(name, tuple(col(s) for s in specs), tuple(foreign))


@contextmanager
def atomic_output(out: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside ``out``; move it into place only if the block succeeds.

    A failed or interrupted build leaves no file at ``out`` (and an existing one untouched).
    The block must close its own connection to the temporary file before it ends.
    """
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".building", dir=out.parent)
    os.close(fd)
    tmp = Path(name)
    tmp.unlink()  # the engine creates the file itself
    try:
        yield tmp
    except BaseException:
        for leftover in (tmp, Path(f"{tmp}.wal"), Path(f"{tmp}-journal")):
            leftover.unlink(missing_ok=True)
        raise
    os.replace(tmp, out)


def write_sqlite(
    out: str | Path,
    tables: Sequence[Table],
    rows: Mapping[str, Iterable[Mapping[str, Any]]],
) -> dict[str, int]:
    """Create ``tables`` in a new SQLite file at ``out`` and insert ``rows[name]`` into each, atomically.

    Tables are filled in the order of ``rows`` (the order rows were inserted in the original
    builds, which only affects the on-disk order). Returns the row count per table.
    """
    by_name = {t.name: t for t in tables}
    counts: dict[str, int] = {}
    with atomic_output(out) as tmp:
        conn = sqlite3.connect(tmp)
        try:
            conn.execute("PRAGMA journal_mode = OFF")
            conn.execute("PRAGMA synchronous = OFF")
            for t in tables:
                conn.execute(t.ddl())
            for name, table_rows in rows.items():
                t = by_name[name]
                names = t.column_names
                sql = f"INSERT INTO {t.name} ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})"
                values = [tuple(r.get(n) for n in names) for r in table_rows]
                try:
                    conn.executemany(sql, values)
                except sqlite3.Error as exc:
                    raise BuildError(f"Writing table {t.name} failed: {exc}") from exc
                counts[name] = len(values)
            conn.commit()
            conn.execute("VACUUM")
        finally:
            conn.close()
    return counts
