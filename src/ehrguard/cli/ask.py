"""``ehrguard ask``: a question in plain language, a checked answer back (with no model: the offline reader)."""

from __future__ import annotations

from typing import Any

import click
from rich.markup import escape
from rich.table import Table

from ehrguard.cli.options import console, db_option, echo_json, exit_without_teardown, json_option, known_db_id
from ehrguard.cli.verify import _COLORS, _STATUS_COLORS

_ROWS_SHOWN = 20


@click.command("ask")
@db_option
@click.option("--question", "-q", required=True, help="The question, in plain language.")
@click.option("--model", default=None,
              help="provider/model to write the SQL; without one, the offline reader writes it from the known question "
                   "it paraphrases (and with one, its reading is a second opinion).")
@click.option("--penalty", type=click.FloatRange(min=0, max=1000), default=None,
              help="How much worse a wrong answer is than none (EHRSQL-2024's c): the offline reader answers only above "
                   "the bar chosen for it [default: 10].")
@click.option("--db-id", default=None, callback=known_db_id,
              help="Database conventions (mimic_iv, eicu, ...); guessed from the file name.")
@click.option("--max-rows", type=click.IntRange(1, 100_000), default=1000, show_default=True, help="Row cap of the answer.")
@json_option
def ask_command(db_path: str, question: str, model: str | None, penalty: float | None, db_id: str | None, max_rows: int,
                as_json: bool) -> None:
    """Answer a question over an EHR database: the SQL is written (offline, or by --model), verified, and run only as
    the verifier allows. Prints the answer with its trust status and the known question it read, or the clarifying
    question, or why it was not answered."""
    from ehrguard.verify import prefetch

    prefetch([db_path])
    exit_without_teardown()
    from ehrguard import answer
    from ehrguard.audit import AuditLog

    reply = answer(question, db=db_path, model=model, penalty=penalty, db_id=db_id, max_rows=max_rows, audit=AuditLog(),
                   caller="cli", interface="cli-ask")
    if reply.error is not None and reply.verdict is None:
        raise reply.error
    if as_json:
        echo_json({**reply.to_dict(), "error": str(reply.error) if reply.error else None})
        return
    _print(reply)


def _print(reply: Any) -> None:
    verdict, reading = reply.verdict, reply.reading
    if verdict is None:
        console.print("[bold magenta]NOT ANSWERED[/bold magenta]: " + escape(reply.message), highlight=False)
        if reading is not None and reading.known_question:
            console.print(f"Nearest known question: {escape(reading.known_question)}", highlight=False)
        console.print("Rephrase it like a known question (see the web app's examples), or pass --model provider/model.")
        return
    color = _COLORS[verdict.action]
    status_color = _STATUS_COLORS.get(verdict.status or "", "white")
    kind = f" ({verdict.subtype})" if verdict.subtype else ""
    console.print(f"[bold {color}]{verdict.action.upper()}[/bold {color}]{kind} · "
                  f"[bold {status_color}]{(verdict.status or '').upper()}[/bold {status_color}]: {escape(verdict.reason)}", highlight=False)
    if verdict.action not in ("preserve", "correct"):
        if verdict.message and verdict.message != verdict.reason:
            console.print(escape(verdict.message), highlight=False)
        return
    if reading is not None and reading.sql is not None and reply.generation is None:
        how = "a variant of the known question (one meaning word changed)" if reading.derived else "the known question"
        console.print(f"Read as {how}: {escape(reading.known_question or '')} "
                      f"(confidence {reading.confidence:.2f}, needs {reading.bar:.2f})", highlight=False)
    if reply.second_opinion is not None:
        agree = "agrees" if reply.second_opinion["agrees"] else "[bold yellow]answers differently[/bold yellow]"
        console.print(f"Second opinion, the known question {escape(str(reply.second_opinion['known_question']))}: {agree}", highlight=False)
    if reply.result is not None:
        t = Table(*reply.result.columns, title="Answer")
        for row in reply.result.rows[:_ROWS_SHOWN]:
            t.add_row(*("NULL" if v is None else escape(str(v)) for v in row))
        console.print(t)
        more = len(reply.result.rows) - _ROWS_SHOWN
        if more > 0 or reply.result.truncated:
            console.print(f"... {max(more, 0)} more rows" + (" (capped)" if reply.result.truncated else ""))
    elif reply.error is not None:
        console.print(f"[bold red]The query did not run:[/bold red] {escape(str(reply.error))}")
    console.print("[bold]SQL:[/bold]")
    click.echo(verdict.sql)
