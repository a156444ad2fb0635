"""``ehrguard demo``: the main job on the embedded default (SQLite, no API key, no network)."""

from __future__ import annotations

from pathlib import Path

import click

from ehrguard.cli.options import console, echo_json, json_option, status
from ehrguard.config import data_dir, db_dir
from ehrguard.db import Progress, build_database, check_fidelity, open_database
from ehrguard.errors import QueryRefusedError

SAMPLE_QUESTION = "How many patients are currently admitted to the hospital?"
SAMPLE_SQL = "SELECT COUNT(DISTINCT admissions.subject_id) FROM admissions WHERE admissions.dischtime IS NULL"
UNSAFE_SQL = "DELETE FROM patients"


@click.command("demo")
@click.option("--out-dir", type=click.Path(path_type=Path), help="Where to put the database (default: $EHRGUARD_DB_DIR).")
@click.option("--rebuild", is_flag=True, help="Rebuild the database even if it exists.")
@json_option
def demo_command(out_dir: Path | None, rebuild: bool, as_json: bool) -> None:
    """Build the MIMIC-IV database (or a SYNTHETIC one when no demo source is found), prove it
    against the published EHRSQL answers, show safe execution, and verify four candidate
    queries with the offline verifier."""
    out_dir = out_dir or db_dir()
    source = data_dir() / "mimic-iv-demo-2.2"
    name = "mimic_iv" if source.is_dir() else "synthetic"
    out = out_dir / f"{name}.sqlite"
    summary: dict = {"database": name, "path": str(out), "synthetic": name == "synthetic"}
    if name == "synthetic":
        console.print(f"[bold yellow]No MIMIC-IV demo at {source}[/bold yellow]: using a SYNTHETIC database "
                      "(set EHRGUARD_DATA_DIR, or: ehrguard db build mimic_iv --download).")
    if rebuild or not out.is_file():
        with status(f"Building {name}", quiet=as_json) as step:
            report = build_database(name, source=source if name == "mimic_iv" else None, out=out,
                                    progress=Progress(on_step=step, on_warning=lambda m: console.print(f"[yellow]WARNING[/yellow] {m}")))
        summary["build_seconds"] = round(report.seconds, 2)
        summary["tables"] = report.tables
    db = open_database(out)
    result = db.execute(SAMPLE_SQL)
    summary["sample"] = {"question": SAMPLE_QUESTION, "sql": SAMPLE_SQL, "answer": result.rows}
    try:
        db.execute(UNSAFE_SQL)
        summary["unsafe_refused"] = False
    except QueryRefusedError as exc:
        summary["unsafe_refused"] = True
        summary["unsafe_message"] = str(exc)
    summary["verification"] = _verify_examples(out)
    summary["asked"] = _ask_examples(out)
    split = data_dir() / "ehrsql-2024" / "mimic_iv" / "valid"
    if name == "mimic_iv" and split.is_dir():
        fidelity = check_fidelity(db, split)
        summary["fidelity"] = {"split": "ehrsql-2024 valid", "reproduced": fidelity.reproduced, "total": fidelity.total,
                               "share": round(fidelity.share, 4)}
    if as_json:
        echo_json(summary)
        return
    label = " [SYNTHETIC]" if summary["synthetic"] else ""
    click.echo(f"Database{label}: {out}")
    click.echo(f"Q: {SAMPLE_QUESTION}\nSQL: {SAMPLE_SQL}\nA: {result.rows[0][0]}")
    click.echo(f"Unsafe statement {UNSAFE_SQL!r} refused: {summary['unsafe_refused']}")
    if "fidelity" in summary:
        f = summary["fidelity"]
        click.echo(f"EHRSQL-2024 valid answers reproduced: {f['reproduced']}/{f['total']} ({100 * f['share']:.2f}%)")
    click.echo("\nThe offline verifier (no LLM) on four candidates:")
    for v in summary["verification"]:
        click.echo(f"- Q: {v['question']}\n  SQL: {v['sql']}\n  -> {v['action'].upper()}" + (f" ({v['subtype']})" if v["subtype"] else "")
                   + f", {v['status']}, {v['ms']} ms: {v['message']}" + (f"\n  corrected: {v['corrected']}" if v["corrected"] else ""))
    click.echo("\nAsked with no SQL and no model (the offline reader writes the SQL, the verifier checks it):")
    for a in summary["asked"]:
        click.echo(f"- Q: {a['question']}\n  -> " + (f"{a['answer']} ({a['status']}; read as: {a['known_question']})" if a["answered"]
                                                    else f"not answered: {a['message']}"))
    click.echo("\nNext: ehrguard ask --db mimic_iv -q '...'   |   ehrguard verify --db mimic_iv -q '...' -s '...'   |   "
               "ehrguard bench scare --help")


def _verify_examples(db_path: Path) -> list[dict]:
    """Four hand-written candidates, one per kind of verdict."""
    import time

    from ehrguard.verify import verify

    pid = open_database(db_path).execute("SELECT MIN(subject_id) FROM patients").rows[0][0]
    cases = [
        (SAMPLE_QUESTION, SAMPLE_SQL),
        (f"What is the gender of patient {pid}?", f"SELECT gendr FROM patient WHERE subject_id = {pid}"),
        ("Labs?", "SELECT * FROM labevents LIMIT 10"),
        ("Train a neural network to predict in-hospital mortality.", "SELECT hospital_expire_flag FROM admissions"),
    ]
    out = []
    for question, sql in cases:
        start = time.perf_counter()
        verdict = verify(question, sql, db=db_path, db_id="mimic_iv")
        out.append({"question": question, "sql": sql, "action": verdict.action, "subtype": verdict.subtype, "message": verdict.message,
                    "status": verdict.status,
                    "corrected": verdict.sql if verdict.action == "correct" else None,
                    "ms": round(1000 * (time.perf_counter() - start), 1)})
    return out


def _ask_examples(db_path: Path) -> list[dict]:
    """Two questions asked with nothing else: one a known question answers, one none fits."""
    from ehrguard import answer

    pid = open_database(db_path).execute("SELECT MIN(subject_id) FROM patients").rows[0][0]
    out = []
    for question in (f"What is the gender of patient {pid}?", f"Summarise the hospital course of patient {pid} in plain words."):
        reply = answer(question, db=db_path, db_id="mimic_iv")
        value = reply.result.rows[0][0] if reply.answered and reply.result is not None and reply.result.rows else None
        out.append({"question": question, "answered": reply.answered, "answer": value,
                    "status": reply.verdict.status if reply.verdict else None,
                    "known_question": reply.reading.known_question if reply.reading else None, "message": reply.message})
    return out
