"""``ehrguard clinsql``: ClinSQL evaluation (rubric-tree rescoring)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click
from rich.table import Table

from ehrguard.benchmarks import jsonable
from ehrguard.cli.options import console, db_option, echo_json, json_option

if TYPE_CHECKING:
    from ehrguard.db import BigQueryDatabase, Database


@click.group("clinsql")
def clinsql_group() -> None:
    """ClinSQL: patient-similarity cohort questions over MIMIC-IV and their rubric-tree evaluation."""


@clinsql_group.command("rescore")
@click.option("--gradings", required=True, type=click.Path(exists=True, dir_okay=False), help="A *_detailed_grading.json (leaf decisions).")
@click.option("--split", "split_dir", required=True, type=click.Path(exists=True, file_okay=False),
              help="The split's task folders (rubric trees).")
@click.option("--published", default=None, type=click.Path(exists=True, dir_okay=False),
              help="A *_scoring_results.json to compare with (max |difference| per task).")
@click.option("--variant", type=click.Choice(["clinsql", "mind2web2"]), default="clinsql", show_default=True,
              help="Sequential nodes divide by the weights visited (clinsql) or by all (mind2web2: skipped children count 0).")
@json_option
def rescore_command(gradings: str, split_dir: str, published: str | None, variant: str, as_json: bool) -> None:
    """Recompute every task's sql_score and results_score from the recorded leaf decisions."""
    from ehrguard.clinsql import compare_with_published, rescore

    result = rescore(gradings, split_dir, variant)
    out = {"tasks": [{k: r[k] for k in ("task", "sql_score", "results_score")} for r in result["tasks"]],
           "summary": result["summary"], "missing": result["missing"]}
    if published:
        out["comparison"] = compare_with_published(result, published)
    if as_json:
        echo_json(jsonable(out))
        return
    s = result["summary"]
    t = Table("group", "tasks", "SQL score", "results score", title=f"ClinSQL rescored ({variant})")
    t.add_row("all", str(s["total_samples"]), f"{100 * s['average_sql_score']:.2f}", f"{100 * s['average_results_score']:.2f}")
    for name, g in list(s["difficulty_breakdown"].items()) + list(s["scenario_breakdown"].items()):
        t.add_row(name, str(g["total_samples"]), f"{100 * g['average_sql_score']:.2f}", f"{100 * g['average_results_score']:.2f}")
    console.print(t)
    if result["missing"]:
        console.print(f"{len(result['missing'])} task(s) of the split have no grading (no model output): "
                      f"{', '.join(result['missing'][:5])}")
    if published:
        c = out["comparison"]
        console.print(f"vs published: {c['tasks']} tasks, max |delta| {c['max_abs_delta']:.2e}")


@clinsql_group.command("execcheck")
@click.option("--split", "split_dir", required=True, type=click.Path(exists=True, file_okay=False), help="The split's task folders.")
@db_option(help="The DuckDB MIMIC-IV from `ehrguard db build mimic_iv_raw` (file or name), or bigquery:PROJECT to run the SQL as written.")
@click.option("--max-bytes-billed", type=int, default=10 * 1024**3, show_default=True, help="BigQuery: the cap per query.")
@click.option("--sql-from", default="gold", show_default=True,
              help="gold, or a model's outputs folder in the published layout (<Scenario>/<level>/<id>/sql_<id>.sql).")
@click.option("--timeout", type=float, default=120.0, show_default=True, help="Seconds per query.")
@json_option
def execcheck_command(split_dir: str, db_path: str, max_bytes_billed: int, sql_from: str, timeout: float, as_json: bool) -> None:
    """Transpile every task's BigQuery SQL to DuckDB and execute it (or send it as written to BigQuery); count successes and
    error classes."""
    from ehrguard.clinsql import execcheck
    from ehrguard.db import connect_database

    bigquery = db_path.startswith("bigquery:")
    db: Database | BigQueryDatabase
    if bigquery:
        from ehrguard.db import BigQueryDatabase

        db = BigQueryDatabase(db_path.split(":", 1)[1] or None, max_bytes_billed=max_bytes_billed)
    else:
        db = connect_database(db_path)
    try:
        result = execcheck(split_dir, db, None if sql_from == "gold" else sql_from, timeout_s=timeout, transpile=not bigquery)
    finally:
        db.close()
    if as_json:
        echo_json(result)
        return
    console.print(f"{result['executed']} / {result['n']} queries execute ({100 * result['executed'] / result['n']:.1f}%)")
    t = Table("error class", "queries")
    for cls, n in result["errors"].items():
        t.add_row(cls, str(n))
    console.print(t)


@clinsql_group.command("judge")
@click.option("--split", "split_dir", required=True, type=click.Path(exists=True, file_okay=False), help="The split's task folders.")
@click.option("--outputs", required=True, type=click.Path(exists=True, file_okay=False), help="A model's outputs (published layout).")
@click.option("--model", required=True, help="The judge, as provider/model.")
@click.option("--mode", type=click.Choice(["per-leaf", "per-tree"]), default="per-leaf", show_default=True)
@click.option("--no-skip", is_flag=True, help="Also judge leaves that cannot change the score (behind a failed sequential sibling).")
@click.option("--limit", type=int, default=None, help="Only the first N tasks.")
@click.option("--concurrency", type=int, default=4, show_default=True, help="Tasks judged at the same time.")
@click.option("--out", required=True, type=click.Path(dir_okay=False), help="Write the gradings JSON here (readable by `clinsql rescore`).")
def judge_command(split_dir: str, outputs: str, model: str, mode: str, no_skip: bool, limit: int | None,
                  concurrency: int, out: str) -> None:
    """Judge a model's SQL and result tables against the rubric trees with an LLM."""
    import json
    from pathlib import Path

    from ehrguard.clinsql import judge_outputs
    from ehrguard.llm import LLM

    llm = LLM(model, log=str(Path(out).with_suffix(".calls.jsonl")))
    result = judge_outputs(split_dir, outputs, llm, mode=mode, skip=not no_skip, limit=limit, concurrency=concurrency)
    Path(out).write_text(json.dumps(result, indent=1))
    s = result["summary"]
    console.print(f"Judged {s['judged']} task(s), {s['errors']} error(s); {s['calls']} calls, "
                  f"{s['prompt_tokens']}+{s['completion_tokens']} tokens. Wrote {out}")


@clinsql_group.command("resultcheck")
@click.option("--split", "split_dir", required=True, type=click.Path(exists=True, file_okay=False), help="The split (gold result CSVs).")
@click.option("--outputs", required=True, type=click.Path(exists=True, file_okay=False), help="A model's outputs (published layout).")
@click.option("--published", default=None, type=click.Path(exists=True, dir_okay=False),
              help="Its *_scoring_results.json, for the agreement.")
@click.option("--rel-tol", type=float, default=0.02, show_default=True, help="Relative tolerance of numeric cells.")
@json_option
def resultcheck_command(split_dir: str, outputs: str, published: str | None, rel_tol: float, as_json: bool) -> None:
    """Judge-free: the share of gold result cells each output table reproduces, and its agreement with the judge."""
    from ehrguard.clinsql import check_outputs

    result = check_outputs(split_dir, outputs, published, rel_tol)
    if as_json:
        echo_json(jsonable(result))
        return
    console.print(f"{result['n']} tables, mean share of gold cells reproduced {100 * result['mean_score']:.1f}%")
    if "agreement" in result:
        a = result["agreement"]
        console.print(f"vs the judge's results_score: Pearson r {a['pearson_r']:.3f}, mean |diff| {a['mean_abs_diff']:.3f}, "
                      f"pass/fail agreement {100 * a['pass_agreement']:.1f}% ({a['n']} tasks)")
