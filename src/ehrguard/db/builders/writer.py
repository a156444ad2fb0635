"""Table definitions and an atomic SQLite writer shared by the builders."""

from __future__ import annotations

import os
import sqlite3
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
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


class SQLiteWriter:
    """Write a SQLite database to a temporary file and move it into place only on success.

    A failed or interrupted build leaves no file at ``out`` (and an existing one untouched).
    """

    def __init__(self, out: str | Path) -> None:
        self.out = Path(out)
        self.out.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{self.out.name}.", suffix=".building", dir=self.out.parent)
        os.close(fd)
        self.tmp = Path(tmp)
        self.conn = sqlite3.connect(self.tmp)
        self.conn.execute("PRAGMA journal_mode = OFF")
        self.conn.execute("PRAGMA synchronous = OFF")

    def __enter__(self) -> SQLiteWriter:
        return self

    def create(self, tables: Iterable[Table]) -> None:
        for t in tables:
            self.conn.execute(t.ddl())

    def insert(self, t: Table, rows: Iterable[Mapping[str, Any]]) -> int:
        names = t.column_names
        sql = f"INSERT INTO {t.name} ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})"
        values = [tuple(r.get(n) for n in names) for r in rows]
        try:
            self.conn.executemany(sql, values)
        except sqlite3.Error as exc:
            raise BuildError(f"Writing table {t.name} failed: {exc}") from exc
        return len(values)

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if exc_type is None:
            self.conn.commit()
            self.conn.execute("VACUUM")
            self.conn.close()
            os.replace(self.tmp, self.out)
        else:
            self.conn.close()
            self.tmp.unlink(missing_ok=True)
