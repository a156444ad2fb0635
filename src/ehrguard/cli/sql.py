"""``ehrguard sql``: run SQL safely."""

from __future__ import annotations

import click
from rich.table import Table

from ehrguard.cli.options import console, db_option, echo_json, json_option
from ehrguard.config import setting
from ehrguard.db import locate_database, open_database


@click.group("sql")
def sql_group() -> None:
    """Run SQL on an EHR database, read-only, with a time limit and a row cap."""


@sql_group.command("run")
@db_option
@click.argument("sql")
@click.option("--timeout", type=float, default=lambda: float(setting("query_timeout")), show_default="60",
              help="Wall-clock limit in seconds (env EHRGUARD_QUERY_TIMEOUT).")
@click.option("--max-rows", type=int, default=lambda: int(setting("max_rows")), show_default="10000",
              help="Row cap; a capped result is marked truncated (env EHRGUARD_MAX_ROWS).")
@json_option
def run_command(db_path: str, sql: str, timeout: float, max_rows: int, as_json: bool) -> None:
    """Execute one SELECT statement; anything that could write is refused."""
    result = open_database(locate_database(db_path)).execute(sql, timeout_s=timeout, max_rows=max_rows)
    if as_json:
        echo_json(result.to_dict())
        return
    t = Table(*result.columns)
    for row in result.rows[:200]:
        t.add_row(*("NULL" if v is None else str(v) for v in row))
    console.print(t)
    shown = min(len(result.rows), 200)
    more = " (truncated at the row cap)" if result.truncated else ""
    click.echo(f"{len(result.rows)} row(s){more}, {result.elapsed_s * 1000:.1f} ms" + (f"; showing {shown}" if shown < len(result.rows) else ""))
