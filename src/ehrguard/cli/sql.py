"""``ehrguard sql``: run SQL safely."""

from __future__ import annotations

import csv
import io
import json
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ehrguard.benchmarks import jsonable
from ehrguard.cli.options import db_option, json_option, setting_option
from ehrguard.db import Result, connect_database
from ehrguard.errors import ConfigError, QueryExecutionError

FORMATS = ("table", "json", "csv", "parquet")


@click.group("sql")
def sql_group() -> None:
    """Run SQL on an EHR database, read-only, with a time limit and a row cap."""


@sql_group.command("run")
@db_option
@click.argument("sql", required=False)
@click.option("--file", "sql_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Read the SQL from this file (or pass - as SQL to read standard input).")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default=None,
              help="table (default on a terminal), json, csv or parquet (parquet needs --out).")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None, help="Write the result here, not to stdout.")
@setting_option("--timeout", "query_timeout", "Wall-clock limit")
@setting_option("--max-rows", "max_rows", "Row cap; a capped result is marked truncated")
@json_option
def run_command(db_path: str, sql: str | None, sql_file: Path | None, fmt: str | None, out: Path | None, timeout: float,
                max_rows: int, as_json: bool) -> None:
    """Execute one SELECT statement (SQL, --file FILE, or - for standard input); anything that could write is refused.

    The result goes to standard output or --out, as a table, JSON, CSV or Parquet; the row count and time go to
    standard error, so that `ehrguard sql run ... --format csv > rows.csv` holds the rows only.
    """
    text = _read_sql(sql, sql_file)
    fmt = "json" if as_json else fmt or "table"
    if fmt == "parquet" and out is None:
        raise ConfigError("Parquet is binary: pass --out FILE.parquet (or choose --format csv or json for standard output).")
    try:
        result = connect_database(db_path).execute(text, timeout_s=timeout, max_rows=max_rows)
    except QueryExecutionError as exc:
        if re.search(r"no such (?:table|column)|does not exist|not found|unknown (?:table|column)", str(exc), re.IGNORECASE):
            raise QueryExecutionError(f"{exc} (ehrguard db schema --db {db_path} lists its tables and columns)") from None
        raise
    if fmt == "parquet":
        assert out is not None
        write_parquet(result, out)
    elif fmt == "table" and out is None:
        _print_table(result)
    else:
        rendered = json.dumps(jsonable(result.to_dict()), indent=2, default=str, ensure_ascii=False) + "\n" if fmt == "json" else (
            render_csv(result) if fmt == "csv" else _table_text(result))
        if out is None:
            sys.stdout.write(rendered)
        else:
            out.write_text(rendered, encoding="utf-8")
    more = f" (truncated: {result.truncated_reason})" if result.truncated else ""
    where = f" written to {out}" if out is not None else ""
    click.echo(f"{len(result.rows)} row(s){more}{where}, {result.elapsed_s * 1000:.1f} ms", err=True)


def _read_sql(sql: str | None, sql_file: Path | None) -> str:
    if sql is not None and sql_file is not None:
        raise ConfigError("Give the SQL once: as an argument, - for standard input, or --file FILE.")
    if sql_file is not None:
        try:
            return sql_file.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"Cannot read the SQL file {sql_file}: {exc.strerror}.") from None
        except UnicodeDecodeError:
            raise ConfigError(f"{sql_file} is not UTF-8 text: save the SQL as UTF-8.") from None
    if sql == "-":
        return sys.stdin.read()
    if sql is None:
        raise ConfigError('No SQL: pass it as an argument ("SELECT ..."), - to read standard input, or --file FILE.')
    return sql


def _cell(value: Any) -> str:
    return "NULL" if value is None else f"<blob of {len(value):,} bytes>" if isinstance(value, bytes) else str(value)


def _print_table(result: Result) -> None:
    """The rows as a table on standard output (values and names printed as they are: '[b]' is text, not a style)."""
    t = Table(*(escape(c) for c in result.columns))
    for row in result.rows[:200]:
        t.add_row(*(escape(_cell(v)) for v in row))
    Console(width=None if sys.stdout.isatty() else 200).print(t)
    if len(result.rows) > 200:
        click.echo(f"showing the first 200 of {len(result.rows)} rows (--format csv or --out for all)", err=True)


def _table_text(result: Result) -> str:
    """The rows as aligned plain text (a table written to a file)."""
    cells = [list(result.columns)] + [[_cell(v) for v in row] for row in result.rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(result.columns))]
    return "".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() + "\n" for r in cells)


def render_csv(result: Result) -> str:
    """The columns and rows as CSV (RFC 4180 quoting; NULL as an empty field, a blob as hex)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(result.columns)
    for row in result.rows:
        w.writerow(["" if v is None else v.hex() if isinstance(v, bytes) else v for v in row])
    return buf.getvalue()


def write_parquet(result: Result, out: Path) -> None:
    """The rows as a Parquet file, written by DuckDB (column types inferred from the values; repeated column names get
    a suffix, as Parquet needs unique ones)."""
    import duckdb

    names: list[str] = []
    for c in result.columns:
        name, n = c, 1
        while name in names:
            n += 1
            name = f"{c}_{n}"
        names.append(name)
    with tempfile.TemporaryDirectory() as tmp:
        lines = Path(tmp) / "rows.jsonl"
        lines.write_text("".join(json.dumps(dict(zip(names, (v.hex() if isinstance(v, bytes) else v for v in row), strict=True)),
                                            default=str) + "\n" for row in result.rows), encoding="utf-8")
        con = duckdb.connect()
        try:
            columns = ", ".join(f"'{n.replace(chr(39), chr(39) * 2)}': 'VARCHAR'" for n in names)
            source = (f"read_json_auto('{lines}', format='newline_delimited')" if result.rows else
                      f"(SELECT * FROM read_json('{lines}', format='newline_delimited', columns={{{columns}}}))")
            con.execute(f"COPY (SELECT * FROM {source}) TO '{str(out).replace(chr(39), chr(39) * 2)}' (FORMAT parquet)")
        except duckdb.Error as exc:
            raise ConfigError(f"Cannot write {out} as Parquet: {exc}") from None
        finally:
            con.close()
