"""``ehrguard sql``: run SQL safely."""

from __future__ import annotations

import click
from rich.table import Table

from ehrguard.cli.options import console, db_option, echo_json, json_option, setting_option
from ehrguard.db import locate_database, open_database


@click.group("sql")
def sql_group() -> None:
    """Run SQL on an EHR database, read-only, with a time limit and a row cap."""


@sql_group.command("run")
@db_option
@click.argument("sql")
@setting_option("--timeout", "query_timeout", "Wall-clock limit")
@setting_option("--max-rows", "max_rows", "Row cap; a capped result is marked truncated")
@json_option
def run_command(db_path: str, sql: str, timeout: float, max_rows: int, as_json: bool) -> None:
    """Execute one SELECT statement; anything that could write is refused."""
    result = open_database(locate_database(db_path)).execute(sql, timeout_s=timeout, max_rows=max_rows)
    if as_json:
        echo_json(result.to_dict())
        return
    t = Table(*result.columns)
    for row in result.rows[:200]:
        t.add_row(*("NULL" if v is None else f"<blob of {len(v):,} bytes>" if isinstance(v, bytes) else str(v) for v in row))
    console.print(t)
    shown = min(len(result.rows), 200)
    more = f" (truncated: {result.truncated_reason})" if result.truncated else ""
    click.echo(f"{len(result.rows)} row(s){more}, {result.elapsed_s * 1000:.1f} ms"
               + (f"; showing {shown}" if shown < len(result.rows) else ""))
