"""Recompute ClinSQL task scores from recorded leaf decisions, and aggregate them as the paper does."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from ehrguard.clinsql.data import DIFFICULTIES, Task, load_gradings, load_split, task_key
from ehrguard.clinsql.rubric import score_tree
from ehrguard.errors import DatasetError


def rescore(gradings: str | Path, split_dir: str | Path, variant: str = "clinsql") -> dict[str, Any]:
    """Every graded task's ``sql_score`` and ``results_score`` from its leaf decisions and the split's trees.

    The summary averages over the graded tasks (a task the model produced no output for is
    not graded and not counted, as in the published ``validation_scoring_results.json``),
    overall, by difficulty and by scenario; ``missing`` lists the split's ungraded tasks.
    """
    tasks = load_split(split_dir)
    rows = []
    for e in load_gradings(gradings):
        key = task_key(e["sample_path"])
        if key not in tasks:
            raise DatasetError(f"{gradings}: graded task {key} is not in {split_dir}.")
        task: Task = tasks[key]
        sql = score_tree(task.sql_tree(), {k: v["score"] for k, v in e["sql_evaluations"].items()}, variant)
        res = score_tree(task.results_tree(), {k: v["score"] for k, v in e["results_evaluations"].items()}, variant)
        rows.append({"task": key, "scenario": task.scenario, "difficulty": task.difficulty, "sql_score": sql, "results_score": res})
    graded = {r["task"] for r in rows}
    return {"tasks": rows, "summary": summarize(rows), "missing": sorted(set(tasks) - graded)}


def _avg(rows: list[dict[str, Any]], key: str) -> float:
    return sum(r[key] for r in rows) / len(rows) if rows else float("nan")


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    by: dict[str, dict[str, list[dict[str, Any]]]] = {"difficulty": defaultdict(list), "scenario": defaultdict(list)}
    for r in rows:
        by["difficulty"][r["difficulty"]].append(r)
        by["scenario"][r["scenario"]].append(r)
    out: dict[str, Any] = {"total_samples": len(rows), "average_sql_score": _avg(rows, "sql_score"),
                           "average_results_score": _avg(rows, "results_score")}
    out["difficulty_breakdown"] = {d: {"total_samples": len(by["difficulty"][d]),
                                       "average_sql_score": _avg(by["difficulty"][d], "sql_score"),
                                       "average_results_score": _avg(by["difficulty"][d], "results_score")} for d in DIFFICULTIES}
    out["scenario_breakdown"] = {s: {"total_samples": len(g), "average_sql_score": _avg(g, "sql_score"),
                                     "average_results_score": _avg(g, "results_score")} for s, g in sorted(by["scenario"].items())}
    return out


def compare_with_published(rescored: dict[str, Any], published_path: str | Path) -> dict[str, Any]:
    """Max |difference| between our per-task scores and a published ``*_scoring_results.json``."""
    import json

    published = json.loads(Path(published_path).read_text())
    theirs = {task_key(s["sample_path"]): s for s in published["samples"]}
    ours = {r["task"]: r for r in rescored["tasks"]}
    if set(theirs) != set(ours):
        raise DatasetError(f"{published_path}: its tasks differ from the gradings' ({len(theirs)} vs {len(ours)}).")
    deltas = {k: max(abs(ours[k]["sql_score"] - theirs[k]["sql_score"]), abs(ours[k]["results_score"] - theirs[k]["results_score"]))
              for k in ours}
    worst = max(deltas, key=deltas.__getitem__) if deltas else None
    summary = published.get("summary", {})
    return {"tasks": len(deltas), "max_abs_delta": deltas[worst] if worst else 0.0, "worst_task": worst,
            "summary_delta_sql": abs(rescored["summary"]["average_sql_score"] - summary.get("average_sql_score", float("nan"))),
            "summary_delta_results": abs(rescored["summary"]["average_results_score"] - summary.get("average_results_score", float("nan")))}
