"""Schema introspection (tables, columns, types, keys) and renderers for prompts and people."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ehrguard.db.engine import DuckDBDatabase, SQLiteDatabase
from ehrguard.errors import SchemaLookupError


@dataclass(frozen=True)
class ColumnInfo:
    name: str
    type: str
    not_null: bool = False
    primary_key: bool = False


@dataclass(frozen=True)
class ForeignKey:
    column: str
    ref_table: str
    ref_column: str


@dataclass
class TableInfo:
    name: str
    columns: list[ColumnInfo]
    foreign_keys: list[ForeignKey] = field(default_factory=list)
    ddl: str = ""
    namespace: str = ""  # DuckDB schema (mimiciv_hosp, ...); empty for SQLite

    @property
    def qualified_name(self) -> str:
        return f"{self.namespace}.{self.name}" if self.namespace else self.name

    def column(self, name: str) -> ColumnInfo | None:
        lowered = name.lower()
        return next((c for c in self.columns if c.name.lower() == lowered), None)


@dataclass
class Schema:
    dialect: str
    tables: list[TableInfo]

    def table(self, name: str) -> TableInfo | None:
        lowered = name.lower()
        return next((t for t in self.tables if t.name.lower() == lowered or t.qualified_name.lower() == lowered), None)

    def require_table(self, name: str) -> TableInfo:
        """The table ``name``; a table the database lacks is a SchemaLookupError naming the closest ones."""
        found = self.table(name)
        if found is None:
            raise SchemaLookupError(f"No table {name!r} in this database.{_closest(name, [t.qualified_name for t in self.tables])} "
                                    "List them with: ehrguard db schema --db DB")
        return found

    def require_column(self, table: str, column: str) -> tuple[TableInfo, ColumnInfo]:
        """The table and its column; either missing is a SchemaLookupError naming the closest ones."""
        found = self.require_table(table)
        col = found.column(column)
        if col is None:
            hint = _closest(column, [c.name for c in found.columns])
            raise SchemaLookupError(f"No column {column!r} in {found.qualified_name}.{hint} "
                                    f"Its columns: ehrguard db schema --db DB --table {found.qualified_name}")
        return found, col

    def with_keys(self, keys: Iterable[tuple[tuple[str, str], tuple[str, str]]]) -> Schema:
        """This schema with the foreign keys ``keys`` (((table, column), (referred table, column)) each: a profile's
        ``key_pairs()``) added where the database does not declare them; a key naming a table or column this database
        lacks is passed over."""
        out = Schema(self.dialect, [TableInfo(t.name, t.columns, list(t.foreign_keys), t.ddl, t.namespace) for t in self.tables])
        for source, target in keys:
            table, ref = out.table(source[0]), out.table(target[0])
            if table is None or ref is None or table.column(source[1]) is None or ref.column(target[1]) is None:
                continue
            fk = ForeignKey(source[1], ref.name, target[1])
            if not any((f.column.lower(), f.ref_table.lower(), f.ref_column.lower()) ==
                       (fk.column.lower(), fk.ref_table.lower(), fk.ref_column.lower()) for f in table.foreign_keys):
                table.foreign_keys.append(fk)
        return out

    def only(self, table: str) -> Schema:
        """This schema with one table only (a SchemaLookupError when it has no such table)."""
        return Schema(dialect=self.dialect, tables=[self.require_table(table)])

    def to_dict(self) -> dict[str, Any]:
        return {
            "dialect": self.dialect,
            "tables": [
                {
                    "name": t.qualified_name,
                    "columns": [c.__dict__ for c in t.columns],
                    "foreign_keys": [{**fk.__dict__, "ref_table": self._qualified(fk.ref_table)} for fk in t.foreign_keys],
                }
                for t in self.tables
            ],
        }

    def render_ddl(self) -> str:
        """``CREATE TABLE`` statements, as a text-to-SQL prompt usually shows a schema."""
        parts = []
        for t in self.tables:
            if t.ddl:
                parts.append(t.ddl.strip().rstrip(";") + ";")
                continue
            lines = [f"    {c.name} {c.type}{' NOT NULL' if c.not_null else ''}" for c in t.columns]
            lines += [f"    FOREIGN KEY({fk.column}) REFERENCES {self._qualified(fk.ref_table)}({fk.ref_column})" for fk in t.foreign_keys]
            parts.append(f"CREATE TABLE {t.qualified_name}\n(\n" + ",\n".join(lines) + "\n);")
        return "\n\n".join(parts)

    def _qualified(self, table: str) -> str:
        """A table's name as a query must write it (with its schema where it has one)."""
        info = self.table(table)
        return info.qualified_name if info is not None else table

    def render_compact(self, types: bool = False) -> str:
        """One line per table: ``table(col, col, ...)``, or ``table(col TYPE, ...)`` with ``types``."""
        def column(c: ColumnInfo) -> str:
            return f"{c.name} {c.type}" if types else c.name

        return "\n".join(f"{t.qualified_name}({', '.join(column(c) for c in t.columns)})" for t in self.tables)


def read_schema(db: Any) -> Schema:
    """Introspect an open database (see :func:`ehrguard.db.open_database`)."""
    if isinstance(db, SQLiteDatabase):
        return _sqlite_schema(db)
    if isinstance(db, DuckDBDatabase):
        return _duckdb_schema(db)
    if getattr(db, "dialect", None) == "postgres":
        return _postgres_schema(db)
    raise TypeError(f"Cannot read the schema of {type(db).__name__}.")


def _sqlite_schema(db: SQLiteDatabase) -> Schema:
    conn = db.internal_connection()
    try:
        tables = []
        for name, ddl in conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY rowid"
        ).fetchall():
            cols = [
                ColumnInfo(name=r[1], type=r[2], not_null=bool(r[3]), primary_key=bool(r[5]))
                for r in conn.execute(f"PRAGMA table_info({_quote(name)})").fetchall()
            ]
            fks = [ForeignKey(column=r[3], ref_table=r[2], ref_column=r[4])
                   for r in conn.execute(f"PRAGMA foreign_key_list({_quote(name)})").fetchall()]
            fks.reverse()  # PRAGMA lists them last-declared first
            tables.append(TableInfo(name=name, columns=cols, foreign_keys=fks, ddl=ddl or ""))
        return Schema(dialect="sqlite", tables=tables)
    finally:
        conn.close()


def _duckdb_schema(db: DuckDBDatabase) -> Schema:
    cur = db.internal_connection()
    try:
        rows = cur.execute(
            """SELECT schema_name, table_name, column_name, data_type, NOT is_nullable
               FROM duckdb_columns() WHERE NOT internal AND database_name = current_database()
               ORDER BY schema_name, table_name, column_index"""
        ).fetchall()
    finally:
        cur.close()
    tables: dict[tuple[str, str], TableInfo] = {}
    for schema_name, table_name, column_name, data_type, not_null in rows:
        key = (schema_name, table_name)
        if key not in tables:
            tables[key] = TableInfo(name=table_name, columns=[], namespace="" if schema_name == "main" else schema_name)
        tables[key].columns.append(ColumnInfo(name=column_name, type=data_type, not_null=bool(not_null)))
    return Schema(dialect="duckdb", tables=list(tables.values()))


def _postgres_schema(db: Any) -> Schema:
    """Every table and view outside PostgreSQL's own schemas; ``public`` tables unqualified, the others (``mimiciv_hosp``,
    ...) under their schema's name."""
    conn = db.internal_connection()
    try:
        rows = conn.execute(
            """SELECT c.table_schema, c.table_name, c.column_name, c.data_type, c.is_nullable = 'NO'
               FROM information_schema.columns c
               JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
               WHERE c.table_schema NOT IN ('pg_catalog', 'information_schema') AND c.table_schema NOT LIKE 'pg_toast%'
               ORDER BY c.table_schema, c.table_name, c.ordinal_position""").fetchall()
    finally:
        db.release_internal(conn)
    tables: dict[tuple[str, str], TableInfo] = {}
    for schema_name, table_name, column_name, data_type, not_null in rows:
        key = (schema_name, table_name)
        if key not in tables:
            tables[key] = TableInfo(name=table_name, columns=[], namespace="" if schema_name == "public" else schema_name)
        tables[key].columns.append(ColumnInfo(name=column_name, type=data_type.upper(), not_null=bool(not_null)))
    return Schema(dialect="postgres", tables=list(tables.values()))


def _closest(name: str, names: list[str]) -> str:
    close = difflib.get_close_matches(name.lower(), [n.lower() for n in names], n=3, cutoff=0.6)
    by_lower = {n.lower(): n for n in names}
    return f" Did you mean {', '.join(repr(by_lower[c]) for c in close)}?" if close else ""


def _quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'
