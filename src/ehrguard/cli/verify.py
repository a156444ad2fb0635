"""``ehrguard verify``: check one candidate SQL for one question."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.markup import escape

from ehrguard.cli.options import console, db_option, echo_json, exit_without_teardown, json_option, known_db_id

_STATUS_COLORS = {"verified": "green", "unverified": "yellow", "abstained": "magenta"}
_COLORS = {"preserve": "green", "correct": "yellow", "ambiguous": "magenta", "unanswerable": "red"}


def underline(sql: str, span: tuple[int, int]) -> str:
    """The line of ``sql`` holding the span, with ``^`` under the span."""
    start, end = span
    line_start = sql.rfind("\n", 0, start) + 1
    line_end = sql.find("\n", start)
    line_end = len(sql) if line_end < 0 else line_end
    line = sql[line_start:line_end]
    return f"    {line}\n    {' ' * (start - line_start)}{'^' * max(1, min(end, line_end) - start)}"


@click.command("verify")
@db_option
@click.option("--question", "-q", required=True, help="The user's question.")
@click.option("--sql", "-s", required=True, help="The candidate SQL from the text-to-SQL model.")
@click.option("--method", default="offline", show_default=True, help="Verification method (see `ehrguard bench methods`).")
@click.option("--model", default=None, help="Model for LLM methods, as provider/model.")
@click.option("--operating-point", default=None, help="offline: balanced (default), safety-first or preserve-first.")
@click.option("--db-id", default=None, callback=known_db_id,
              help="Database conventions (mimic_iv, eicu, mimicsql, ...); guessed from the file name.")
@click.option("--receipt", "receipt_path", default=None, type=click.Path(dir_okay=False),
              help="Write the decision's signed receipt here (check it with `ehrguard audit verify-receipt`).")
@json_option
def verify_command(db_path: str, question: str, sql: str, method: str, model: str | None, operating_point: str | None,
                   db_id: str | None, receipt_path: str | None, as_json: bool) -> None:
    """Decide whether to preserve or correct a candidate SQL, or flag the question ambiguous or unanswerable.

    Prints the verdict, the message for the user, and every finding of the checks with the
    part of the SQL it points at underlined.
    """
    from ehrguard.verify import prefetch

    prefetch([db_path], method=method)
    exit_without_teardown()
    from ehrguard import answer
    from ehrguard.audit import AuditLog

    reply = answer(question, db=db_path, sql=sql, method=method, verifier_model=model, operating_point=operating_point, db_id=db_id,
                   execute=False, audit=AuditLog(), caller="cli", interface="cli", audit_errors=False)
    verdict = reply.require_verdict()
    if receipt_path:
        reply.raise_for_error()  # the receipt could not be made (the deployment's key cannot be read)
        Path(receipt_path).write_text(json.dumps(reply.receipt, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    if as_json:
        echo_json(verdict.to_dict())
        return
    color = _COLORS[verdict.action]
    kind = f" ({verdict.subtype})" if verdict.subtype else ""
    conf = f", confidence {verdict.confidence:.2f}" if verdict.confidence is not None else ""
    console.print(f"[bold {color}]{verdict.action.upper()}[/bold {color}]{kind}{conf}")
    status_color = _STATUS_COLORS.get(verdict.status or "", "white")
    console.print(f"[bold {status_color}]{(verdict.status or '').upper()}[/bold {status_color}]: {escape(verdict.reason)}", highlight=False)
    if verdict.message and verdict.message != verdict.reason and verdict.message != "Not verified: " + verdict.reason:
        console.print(escape(verdict.message))
    if verdict.action == "correct":
        fix = verdict.evidence.replacement if verdict.evidence is not None else None
        known = fix.readable if fix is not None else (verdict.details or {}).get("repair", {}).get("known_question")
        if known:
            console.print(f"Known question it paraphrases: {escape(known)}", highlight=False)
        console.print("[bold]Corrected SQL:[/bold]")
        click.echo(verdict.sql)
    for f in verdict.findings:
        console.print(f"- [bold]{f.check}[/bold] ({f.severity}): {escape(f.message)}")
        if f.span:
            console.print(escape(underline(sql, f.span)), highlight=False)
