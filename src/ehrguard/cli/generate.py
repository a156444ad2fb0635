"""``ehrguard generate``: cohort text-to-SQL with execution-guided refinement (ClinSQL)."""

from __future__ import annotations

from pathlib import Path

import click
from rich.table import Table

from ehrguard.cli.options import console, db_option, echo_json, json_option


@click.command("generate")
@db_option(help="The DuckDB MIMIC-IV (`ehrguard db build mimic_iv_raw`), a file or a name.")
@click.option("--question", "-q", required=True, help="The cohort question.")
@click.option("--model", required=True, help="provider/model.")
@click.option("--mode", type=click.Choice(["direct", "cot"]), default="cot", show_default=True, help="Direct answer or chain of thought.")
@click.option("--refine", type=int, default=2, show_default=True, help="Refinement rounds fed by execution errors.")
@click.option("--dialect", type=click.Choice(["duckdb", "bigquery"]), default="duckdb", show_default=True,
              help="The SQL the model writes (BigQuery is transpiled to run here).")
@click.option("--schema-hints", type=click.Path(exists=True, dir_okay=False), default=None,
              help="A text file of hints added to the prompt.")
@json_option
def generate_command(db_path: str, question: str, model: str, mode: str, refine: int, dialect: str,
                     schema_hints: str | None, as_json: bool) -> None:
    """Write SQL for a question, run it, and repair it from execution errors (every attempt is shown)."""
    from ehrguard.clinsql import generate
    from ehrguard.db import connect_database
    from ehrguard.llm import LLM

    db = connect_database(db_path)
    hints = Path(schema_hints).read_text() if schema_hints else ""
    gen = generate(question, db, LLM(model), mode=mode, refine=refine, dialect=dialect, hints=hints)
    if as_json:
        out = gen.to_dict()
        out["rows"] = gen.result.rows[:50] if gen.result else None
        echo_json(out)
        return
    for i, a in enumerate(gen.attempts, 1):
        console.print(f"[bold]Attempt {i}[/bold]: "
                      + (f"[green]ran[/green], {a.rows} rows" if a.error is None else f"[red]{a.error}[/red]"))
    if gen.final_sql:
        click.echo(gen.final_sql)
    if gen.result is not None:
        t = Table(*gen.result.columns)
        for row in gen.result.rows[:20]:
            t.add_row(*("NULL" if v is None else str(v) for v in row))
        console.print(t)
