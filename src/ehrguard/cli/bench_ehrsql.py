"""``ehrguard bench ehrsql``: score a system's EHRSQL-2024 predictions, or let the offline reader write them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
from rich.table import Table

from ehrguard.cli.options import console, db_option, echo_json, json_option
from ehrguard.errors import ConfigError


@click.command("ehrsql")
@click.option("--split", "split_dir", required=True,
              help="EHRSQL-2024 split folder (data.json, label.json, answer.json); with --method offline-ask, "
                   "'ehrsql-eicu' cross-validates over the EHRSQL eICU questions instead.")
@db_option(help="The database (file, or a name in $EHRGUARD_DB_DIR).")
@click.option("--method", type=click.Choice(["predictions", "offline-ask"]), default="predictions", show_default=True,
              help="predictions: score --predictions. offline-ask: the offline reader writes them, no LLM.")
@click.option("--predictions", default=None, type=click.Path(exists=True, dir_okay=False),
              help='JSON {id: sql | "null"}, or {id: {"sql": ..., "confidence": 0-1}} (--method predictions).')
@click.option("--fit-split", default=None, type=click.Path(exists=True, file_okay=False),
              help="Another split (e.g. train) to choose a confidence threshold on, for each --penalty.")
@click.option("--fit-predictions", default=None, type=click.Path(exists=True, dir_okay=False),
              help="The same system's predictions (with confidences) for --fit-split.")
@click.option("--penalty", "penalties", multiple=True, type=float, default=(0.0, 5.0, 10.0), show_default=True,
              help="The penalties c whose RS(c) a threshold maximises (repeatable); offline-ask's --out holds the largest's.")
@click.option("--train", "train_dirs", multiple=True, type=click.Path(exists=True, file_okay=False),
              help="offline-ask: the split(s) the forms, confidence and bars are fitted on, repeatable (train and valid "
                   "for a test split) [default: $EHRGUARD_DATA_DIR/ehrsql-2024/mimic_iv/train].")
@click.option("--folds", type=int, default=5, show_default=True, help="offline-ask: folds of the out-of-fold fitting.")
@click.option("--verifier/--no-verifier", default=True, show_default=True,
              help="offline-ask: the offline verifier may veto a reading (as `ehrguard ask` does).")
@click.option("--out", default=None, type=click.Path(dir_okay=False, path_type=Path),
              help='offline-ask: write the predictions ({id: sql | "null"}, the shared task\'s format) here.')
@click.option("--report", default=None, type=click.Path(dir_okay=False, path_type=Path),
              help="offline-ask: write the Markdown report here.")
@json_option
def ehrsql_command(split_dir: str, db_path: str, method: str, predictions: str | None, fit_split: str | None,
                   fit_predictions: str | None, penalties: tuple[float, ...], train_dirs: tuple[str, ...], folds: int, verifier: bool,
                   out: Path | None, report: Path | None, as_json: bool) -> None:
    """Score a text-to-SQL system's predictions: RS(0/5/10/N), execution accuracy, abstention P/R; with --fit-split,
    also RS(c) with the confidence threshold chosen on that split. --method offline-ask: ehrguard's own reader
    writes the predictions, with no LLM, and abstains below the bar chosen on --train for each penalty."""
    from ehrguard.benchmarks import ehrsql_decisions, fmt, jsonable, read_predictions, score_decisions, threshold_report
    from ehrguard.db import connect_database

    if method == "offline-ask":
        _offline_ask(split_dir, db_path, penalties, train_dirs, folds, verifier, out, report, as_json)
        return
    if predictions is None:
        raise ConfigError("Pass --predictions FILE (the system's {id: sql | \"null\"}), or --method offline-ask.")
    if not Path(split_dir).is_dir():
        raise ConfigError(f"No split folder at {split_dir}: pass an EHRSQL-2024 split (data.json, label.json, answer.json).")
    if (fit_split is None) != (fit_predictions is None):
        raise ConfigError("--fit-split and --fit-predictions go together: the split to choose the threshold on and the "
                          "system's predictions for it.")
    db = connect_database(db_path)
    try:
        sqls, confidences = read_predictions(predictions)
        decisions = ehrsql_decisions(split_dir, db, sqls, confidences)
        fitted = ehrsql_decisions(fit_split, db, *read_predictions(fit_predictions)) if fit_split and fit_predictions else None
    finally:
        db.close()
    scores: dict[str, Any] = score_decisions(decisions, predicted=len(sqls))
    if fitted is not None:
        scores["thresholds"] = threshold_report(fitted, decisions, penalties)
    if as_json:
        echo_json(jsonable(scores))
        return
    t = Table("RS(0)", "RS(5)", "RS(10)", "RS(N)", "exec acc (answerable)", "abstention P", "abstention R",
              title=f"EHRSQL-2024, {scores['n']} items")
    t.add_row(*(fmt(scores[k]) for k in ("rs_0", "rs_5", "rs_10", "rs_N", "exec_acc_answerable",
                                         "abstention_precision", "abstention_recall")))
    console.print(t)
    if fitted is not None:
        t = Table("c", "threshold (chosen on the fit split)", "RS fit (in-sample)", "RS all kept", "RS at threshold", "answered %",
                  title=f"RS(c) with a threshold chosen on {fit_split}")
        for r in scores["thresholds"]:
            t.add_row(f"{r['penalty']:g}", f"{r['threshold']:.4f}", fmt(r["fit"]["rs"]), fmt(r["keep_all"]["rs"]),
                      fmt(r["chosen"]["rs"]), fmt(r["chosen"]["answered"]))
        console.print(t)


EICU_QUESTIONS = "ehrsql-eicu"


def _offline_ask(split_dir: str, db_path: str, penalties: tuple[float, ...], train_dirs: tuple[str, ...], folds: int, verifier: bool,
                 out: Path | None, report: Path | None, as_json: bool) -> None:
    """``bench ehrsql --method offline-ask``: read, fit on the training split, score, write predictions and report."""
    from ehrguard.benchmarks import fmt, jsonable, render_offline_ask, run_offline_ask
    from ehrguard.config import data_dir
    from ehrguard.db import connect_database
    from ehrguard.verify import database_context

    if folds < 2:
        raise ConfigError("--folds must be at least 2: the bars are chosen out of fold.")
    eicu = split_dir == EICU_QUESTIONS
    if not eicu and not Path(split_dir).is_dir():
        raise ConfigError(f"No split folder at {split_dir}: pass an EHRSQL-2024 split, or '{EICU_QUESTIONS}'.")
    train: list[str | Path] | None = None if eicu else (list(train_dirs) or [data_dir() / "ehrsql-2024" / "mimic_iv" / "train"])
    db = connect_database(db_path)
    try:
        context = database_context(db)
        from ehrguard.cli.bench import _progress

        with _progress() as bar:
            task = bar.add_task("reading (out-of-fold fitting, then scoring)", total=None)
            result = run_offline_ask(context, split=None if eicu else split_dir, train=train, folds=folds, verifier=verifier,
                                     penalties=penalties, progress=lambda n: bar.update(task, completed=n))
    finally:
        db.close()
    if out is not None:
        out.write_text(json.dumps(result["predictions"][f"{max(penalties):g}"], indent=1) + "\n")
    if report is not None:
        report.write_text(render_offline_ask(result))
    if as_json:
        echo_json(jsonable({k: v for k, v in result.items() if k != "predictions"}))
        return
    t = Table("c", "RS(0)", "RS(5)", "RS(10)", "RS(N)", "answered %", "precision %", "p50 ms", "p99 ms",
              title=f"Offline ask, bars chosen for each c ({result['design']})")
    for s in result["summaries"]:
        t.add_row(f"{s['penalty']:g}", *(fmt(s["rs"][k]) for k in ("rs_0", "rs_5", "rs_10", "rs_N")), fmt(s["coverage"]),
                  fmt(s["precision"]), str(s["read_ms_p50"]), str(s["read_ms_p99"]))
    console.print(t)
    if out is not None:
        console.print(f"predictions (c = {max(penalties):g}): {out}")
